"""Run one job of a workflow under nektos/act in host mode, with local stand-ins for its actions.

``run_job(...)`` runs ``act EVENT -W FILE -j JOB -P ubuntu-latest=-self-hosted`` in a checkout:
no container, the steps run on this machine in the checkout itself. Every ``uses:`` action is
given to act with ``--local-repository OWNER/REPO@REF=testbed/actions/...`` (:data:`STANDINS`), so
act never clones from github.com (it clones every action at "Set up job", even one behind a false
``if:``); each stand-in says in its first line what it leaves untested. Secrets come from the
environment (``-s NAME``), the event from a JSON file, ``github.api_url`` and ``github.repository``
from ``--env`` (act lets them be overridden). The job runs under its own HOME (a step writes
``$HOME/.kube/config``), with the toolchain on PATH and the machine's pip, uv and Go caches.

Returns an :class:`ActRun`: act's exit code, its log, the wall time, and each step's outcome read
from act's ``Success - Main NAME`` / ``Failure - Main NAME`` lines. Source: nektos/act v0.2.89
(``cmd/root.go`` flags, ``pkg/runner/local_repository_cache.go``, ``pkg/runner/run_context.go``).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from testbed import toolchain

ACTIONS = Path(__file__).resolve().parent / "actions"
#: ``uses:`` (owner/repo@ref, a sub-path dropped) -> the stand-in's folder under testbed/actions/.
STANDINS = {
    "actions/checkout@v4": "checkout",
    "actions/setup-python@v5": "setup-python",
    "actions/setup-go@v5": "setup-go",
    "actions/cache@v4": "cache",
    "actions/upload-artifact@v3": "upload-artifact",
    "actions/upload-artifact@v4": "upload-artifact",
    "pulumi/actions@v6": "pulumi-actions",
    "github/codeql-action@v3": "codeql-action",
}
#: act's platform mapping for host mode: ``runs-on: ubuntu-latest`` runs on this machine.
HOST_MODE = "ubuntu-latest=-self-hosted"
_STEP = re.compile(r"^\[[^\]]+\]\s+(?:✅|❌)\s+(Success|Failure) - Main (.*?)(?: \[(?:\d+h)?(?:\d+m)?[\d.]+(?:ms|µs|ns|s)\])?$")


def repository_of(uses: str) -> str:
    """``owner/repo@ref`` of a ``uses:`` value (``github/codeql-action/upload-sarif@v3`` ->
    ``github/codeql-action@v3``); ValueError for a local (``./``) or docker action."""
    name, _, ref = uses.partition("@")
    parts = name.split("/")
    if uses.startswith(("./", "docker://")) or len(parts) < 2 or not ref:
        raise ValueError(f"uses: {uses!r} is not owner/repo[/path]@ref")
    return f"{parts[0]}/{parts[1]}@{ref}"


def actions_used(workflow: Path) -> set[str]:
    """Every ``owner/repo@ref`` a workflow's steps use, in any job."""
    wf = yaml.safe_load(workflow.read_text())
    return {repository_of(step["uses"]) for job in wf["jobs"].values() for step in job["steps"] if "uses" in step}


def local_repositories() -> list[str]:
    """The ``--local-repository`` arguments of act for every stand-in."""
    out = []
    for uses, folder in sorted(STANDINS.items()):
        out += ["--local-repository", f"{uses}={ACTIONS / folder}"]
    return out


@dataclass
class ActRun:
    code: int
    log: str
    seconds: float
    steps: list[tuple[str, str]] = field(default_factory=list)  # (step name, "Success" | "Failure")

    def failed(self) -> list[str]:
        return [name for name, outcome in self.steps if outcome != "Success"]


def steps_of(log: str) -> list[tuple[str, str]]:
    """(name, Success | Failure) of each step act ran, in order, from its log (its ``Main NAME``
    lines), the stand-ins' own inner steps (named ``stand-in ...``) left out."""
    out = []
    for line in log.splitlines():
        m = _STEP.match(line.strip())
        if m and not m.group(2).startswith("stand-in "):
            out.append((m.group(2), m.group(1)))
    return out


def dotenv_quote(value: str) -> str:
    """``value`` inside a double-quoted dotenv value (act reads ``--secret-file`` with godotenv:
    backslash escapes, backslash-n a newline, ``$`` expanded unless escaped)."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$").replace("\n", "\\n")


def run_job(work: Path, workflow: str, job: str, event_name: str, event: dict, *, home: Path,
            secrets: dict[str, str], env: dict[str, str], artifacts: Path, timeout: float = 3600) -> ActRun:
    """Run ``job`` of ``workflow`` (a path relative to ``work``) under act in host mode (see the
    module docstring); ``env`` values become act's ``--env`` (the github context's overrides among
    them: GITHUB_API_URL, GITHUB_REPOSITORY). Never raises for a failed job: read ``code``."""
    home.mkdir(parents=True, exist_ok=True)
    artifacts.mkdir(parents=True, exist_ok=True)
    event_file = home / "event.json"
    event_file.write_text(json.dumps(event))
    (home / ".actrc").write_text(f"-P {HOST_MODE}\n")  # no first-run question about images
    real_home = Path.home()
    proc_env = {k: v for k, v in os.environ.items() if not k.startswith(("PULUMI_", "GITHUB_", "KUBECONFIG", "ACT"))}
    proc_env.update(toolchain.environment())
    proc_env.update({
        "HOME": str(home), "NO_COLOR": "1", "CI": "true", "ACT_ARTIFACTS": str(artifacts),
        "PIP_CACHE_DIR": os.environ.get("PIP_CACHE_DIR", str(real_home / ".cache" / "pip")),
        "UV_CACHE_DIR": os.environ.get("UV_CACHE_DIR", str(real_home / ".cache" / "uv")),
        "GOMODCACHE": os.environ.get("GOMODCACHE", str(real_home / "go" / "pkg" / "mod")),
        "GOCACHE": os.environ.get("GOCACHE", str(real_home / ".cache" / "go-build")),
        "LLM_SERVING_CACHE": str(toolchain.cache_dir()),
        "XDG_CACHE_HOME": str(home / ".cache"),
    })
    # The job's own PULUMI_HOME (its `pulumi login` writes there), with the toolchain's plugins.
    pulumi_home = home / "pulumi-home"
    pulumi_home.mkdir(exist_ok=True)
    if not (pulumi_home / "plugins").is_symlink():
        (pulumi_home / "plugins").symlink_to(Path(proc_env["PULUMI_HOME"]) / "plugins")
    proc_env["PULUMI_HOME"] = str(pulumi_home)
    # Secrets from a file, never the command line nor act's own environment (host mode hands
    # that to every step, so a secret the workflow forgot to map would still reach it).
    secret_file = home / "secrets.env"
    secret_file.write_text("".join(f'{k}="{dotenv_quote(v)}"\n' for k, v in sorted(secrets.items())))
    secret_file.chmod(0o600)
    cmd = ["act", event_name, "-W", workflow, "-j", job, "-P", HOST_MODE, "-e", str(event_file),
           "--secret-file", str(secret_file), "--action-offline-mode", *local_repositories()]
    for key, value in sorted(env.items()):
        cmd += ["--env", f"{key}={value}"]
    started = time.monotonic()
    proc = subprocess.run(cmd, cwd=work, env=proc_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=timeout)
    seconds = time.monotonic() - started
    (home / f"act-{job}.log").write_text(proc.stdout)
    return ActRun(proc.returncode, proc.stdout, seconds, steps_of(proc.stdout))
