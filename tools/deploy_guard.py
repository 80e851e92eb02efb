"""Before the deploy job's ``pulumi up``: refuse an unreviewed first adoption (``.gitea/workflows/deploy.yaml``).

The first ``pulumi up`` of a stack whose state holds no Kubernetes object yet, or any ``up`` with
``llm-serving:adopt: true`` in its stack file, takes over the live objects ArgoCD applied (server-side
apply in place; ``patchForce`` overwrites conflicting fields): the README's "Taking over from
ArgoCD" runbook reviews it first with ``python3 dev.py adopt-diff``. On a merge it is refused; it
runs only when the workflow is started by hand with ``adopt_commit`` equal to the commit being
deployed (the reviewed one).

    pulumi stack export --stack prod > state.json
    python3 dev.py deploy-guard state.json --stack-file Pulumi.prod.yaml --adopt-commit "$ADOPT" --commit "$SHA"

Exit codes: 0 not an adoption, or a reviewed one; 1 refused (says why and how to run it);
2 bad input (the state or the stack file cannot be read).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, TextIO

from pydantic import TypeAdapter, ValidationError

from core.base.inputs import InputFileError, json_object, read_text
from core.judging.problems import shown
from tools import cli
from tools.offline import summary
from tools.offline.manifests import InputError, load_stack_file


def managed_objects(state: Any) -> int:
    """How many Kubernetes objects a ``pulumi stack export`` document's state holds (0 for ``{}``,
    the job's stand-in for a stack without state)."""
    deployment = state.get("deployment") if isinstance(state, dict) else None
    resources = deployment.get("resources") if isinstance(deployment, dict) else None
    return sum(1 for r in resources or [] if isinstance(r, dict) and str(r.get("type", "")).startswith("kubernetes:")
               and not str(r.get("type", "")).startswith("pulumi:providers:"))


def export_of(path: Path) -> dict[str, Any]:
    """The ``pulumi stack export`` document in ``path`` (``{}``: the job's stand-in for a stack without
    state). Raises :class:`core.base.inputs.InputFileError` for anything else (an empty file, an array, an
    object without ``deployment``, resources that are not a list): read as "no state", it would pass
    for a first adoption."""
    text = read_text(path, "state")
    fix = "fix: write `pulumi stack export --stack <stack> > state.json` again (or {} for a stack without state)"
    if not text.strip():
        raise InputFileError(f"{path}: the state file is empty, not a `pulumi stack export` document; {fix}")
    state = json_object(text, str(path))
    if state and not isinstance(state.get("deployment"), dict):
        raise InputFileError(f"{path}: the state has no deployment object, so it is not a `pulumi stack export` "
                             f"document; {fix}")
    resources = (state.get("deployment") or {}).get("resources")
    if resources is not None and not isinstance(resources, list):
        raise InputFileError(f"{path}: the state's deployment.resources is not a list; {fix}")
    return state


def refusal(objects: int, adopt: bool, adopt_commit: str, commit: str) -> str | None:
    """Why this ``up`` must not run, or None."""
    if objects and not adopt:
        return None
    if adopt_commit and adopt_commit == commit:
        return None
    why = ("the stack's state holds no Kubernetes object yet, so this first pulumi up takes over every live object "
           "ArgoCD applied" if not objects else "the stack file sets llm-serving:adopt: true, so this pulumi up forces "
           "the fields ArgoCD's objects hold (pulumi.com/patchForce)")
    return (f"deploy-guard: refused: {why}, and no one reviewed it for commit {commit or '(unknown)'}. "
            "Fix: run `python3 dev.py adopt-diff --stack prod` against the cluster and read every field it changes "
            "(docs/runbooks/ci.md), then start the deploy workflow by hand (Run workflow) with adopt_commit = "
            f"{commit or 'the commit to deploy'}")


def main(argv: list[str] | None = None, stdout: TextIO = sys.stdout, stderr: TextIO = sys.stderr) -> int:  # noqa: D103
    ap = cli.parser("python3 dev.py deploy-guard", __doc__)
    ap.add_argument("state", type=Path, help="the output of `pulumi stack export --stack prod` ({} for none)")
    ap.add_argument("--stack-file", type=Path, required=True, help="the stack file being deployed")
    ap.add_argument("--adopt-commit", default="", help="the commit whose adoption was reviewed ('' on a merge)")
    ap.add_argument("--commit", default="", help="the commit being deployed")
    args = ap.parse_args(argv)
    try:
        state = export_of(args.state)
        config = load_stack_file(args.stack_file)
    except (InputFileError, InputError, ValueError) as err:
        return cli.fail("deploy-guard", err, stderr)
    raw = summary.config_value(config, "llm-serving:adopt")
    try:  # read as the program reads it (pydantic's bool: "yes", "on", "True", 1 are true too)
        adopt = bool(TypeAdapter(bool).validate_python(raw)) if raw is not None else False
    except ValidationError:
        return cli.fail("deploy-guard", f"{args.stack_file}: llm-serving:adopt is {shown(raw, 'llm-serving:adopt')}, "
                        "not a boolean (a secret is never one: the program refuses it); fix: write true or false", stderr)
    objects = managed_objects(state)
    reason = refusal(objects, adopt, args.adopt_commit.strip(), args.commit.strip())
    if reason:
        stderr.write(reason + "\n")
        return cli.VERDICT
    stdout.write(f"deploy-guard: the state holds {objects} Kubernetes object(s)"
                 f"{', adoption reviewed for ' + args.commit if adopt or not objects else ''}: go on\n")
    return cli.OK


if __name__ == "__main__":
    cli.run(main, "deploy-guard")
