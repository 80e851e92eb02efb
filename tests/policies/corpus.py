"""The pack on the public corpus (``tests/corpus/``): every finding on every case, and the counts
docs/failure-kinds.md publishes.

``tests/corpus/cases/*.yaml`` are public GPU-serving manifests, each as its source has it
(trimmed to the serving objects, or rendered from a Helm chart), with a header::

    # Source: https://github.com/<owner>/<repo>/blob/<commit>/<path>
    # Commit: <commit>
    # Licence: <SPDX id>
    # Inventory: <name of tests/corpus/inventories/<name>.yaml, the cluster it was written for>

``tests/corpus/findings.yaml`` annotates each finding the pack gives (mandatory or advisory):
``case`` (file stem), ``object`` (``Kind name``, ``node <name>`` for a node total, ``file`` when
the file is refused), ``policy``, ``verdict`` (true: a real problem; false: the manifest works)
and ``why`` (the consequence, or why it works). ``tests/policies/test_corpus.py`` keeps the two
in step.

    .venv/bin/python -m tests.policies.corpus      # prints the counts (every finding with --list,
                                                   # docs/corpus.md's tables with --markdown)
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from pulumi_policy import EnforcementLevel

from policylib.pack import policies
from tests.paths import ROOT
from tests.policy_harness import run_policy, use_stack_config
from tools.offline.manifests import InputError, load_manifest_dir, load_stack_file

CORPUS = ROOT / "tests" / "corpus"
CASES = sorted((CORPUS / "cases").glob("*.yaml"))
INVENTORIES = CORPUS / "inventories"
ANNOTATIONS = CORPUS / "findings.yaml"
#: The pseudo-policy of a file the loader refuses as a whole (exit 2: nothing in it is judged).
REFUSED = "input-refused"
HEADER_KEYS = ("Source", "Commit", "Licence", "Inventory")


@dataclass(frozen=True)
class Finding:
    case: str
    object: str
    policy: str
    mandatory: bool
    message: str

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.case, self.object, self.policy)


def header(path: Path) -> dict[str, str]:
    """The ``# Key: value`` lines before the first line that is not a comment."""
    out: dict[str, str] = {}
    for line in path.read_text().splitlines():
        if not line.startswith("#"):
            break
        m = re.match(r"# (\w+): (.*)$", line)
        if m and m.group(1) in HEADER_KEYS and m.group(1) not in out:
            out[m.group(1)] = m.group(2).strip()
    return out


def repository(path: Path) -> str:
    """``owner/name`` of the case's source."""
    m = re.match(r"https://github\.com/([^/]+/[^/]+)/", header(path).get("Source", ""))
    return m.group(1) if m else ""


@cache
def _config(inventory: str) -> str:
    return json.dumps(load_stack_file(INVENTORIES / f"{inventory}.yaml", "inventory"))


def _object(urn: str, message: str) -> str:
    """``Kind name`` from a URN (``...::kubernetes:apps/v1:Deployment::name``; ``Service name port N`` when
    the message is about one port of a Service), or ``node <name>`` for a stack-level node total (the
    message starts with the node's name)."""
    if urn:
        type_, name = urn.split("::")[-2:]
        port = re.match(r"Service \S+ port (\d+)", message)
        return f"{type_.split(':')[-1]} {name}" + (f" port {port.group(1)}" if port else "")
    return "node " + message.split(":", 1)[0]


def findings(path: Path) -> list[Finding]:
    """Every finding of every pack policy on one case, judged with the case's inventory."""
    case = path.stem
    use_stack_config(json.loads(_config(header(path)["Inventory"])))
    try:
        resources = load_manifest_dir(path, stack="corpus")
    except InputError as err:
        return [Finding(case, "file", REFUSED, True, str(err))]
    out = []
    for p in policies():
        mandatory = p.enforcement_level == EnforcementLevel.MANDATORY
        out += [Finding(case, _object(v.urn, v.message), p.name, mandatory, v.message) for v in run_policy(p, resources)]
    return out


def all_findings() -> list[Finding]:
    return [f for path in CASES for f in findings(path)]


def annotations() -> dict[tuple[str, str, str], dict[str, Any]]:
    """The annotations by ``(case, object, policy)``; each key once."""
    rows = yaml.safe_load(ANNOTATIONS.read_text()) or []
    out: dict[tuple[str, str, str], dict[str, Any]] = {}
    for row in rows:
        key = (row["case"], row["object"], row["policy"])
        if key in out:
            raise ValueError(f"{ANNOTATIONS.name}: {key} is annotated twice")
        out[key] = row
    return out


@dataclass(frozen=True)
class Counts:
    cases: int
    repositories: int
    findings: int
    mandatory: int
    advisory: int
    false_mandatory: int
    false_advisory: int
    true_caught: int
    true_mandatory: int


def counts(found: list[Finding], notes: dict[tuple[str, str, str], dict[str, Any]]) -> Counts:
    """The published counts: annotated findings by level and verdict (a key found several times counts once)."""
    keys = {f.key: f.mandatory for f in found}
    verdict = {k: bool(notes[k]["verdict"]) for k in keys if k in notes}
    return Counts(
        cases=len(CASES),
        repositories=len({repository(p) for p in CASES}),
        findings=len(keys),
        mandatory=sum(keys.values()),
        advisory=sum(not m for m in keys.values()),
        false_mandatory=sum(1 for k, m in keys.items() if m and verdict.get(k) is False),
        false_advisory=sum(1 for k, m in keys.items() if not m and verdict.get(k) is False),
        true_caught=sum(1 for k in keys if verdict.get(k) is True),
        true_mandatory=sum(1 for k, m in keys.items() if m and verdict.get(k) is True),
    )


def markdown(found: list[Finding], notes: dict[tuple[str, str, str], dict[str, Any]]) -> str:
    """The tables docs/corpus.md carries between its ``<!-- corpus:begin -->`` / ``<!-- corpus:end -->`` marks:
    the cases by repository, then every finding with its level, verdict and reason."""
    by_repo: dict[str, list[Path]] = {}
    for p in CASES:
        by_repo.setdefault(repository(p), []).append(p)
    lines = ["| repository | licence | cases (inventory) |", "| --- | --- | --- |"]
    for repo in sorted(by_repo, key=str.lower):
        paths = by_repo[repo]
        cases = ", ".join(f"`{p.stem}` ({header(p)['Inventory']})" for p in paths)
        lines.append(f"| {repo} | {header(paths[0])['Licence']} | {cases} |")
    lines += ["", "| case | object | policy | level | verdict | why |", "| --- | --- | --- | --- | --- | --- |"]
    keys = {f.key: f for f in found}
    for key in sorted(keys):
        f, note = keys[key], notes.get(key, {})
        verdict = {True: "true", False: "false"}.get(note.get("verdict"), "?")
        why = " ".join(str(note.get("why", "")).split()).replace("|", "\\|")
        lines.append(f"| `{f.case}` | {f.object} | {f.policy} | {'mandatory' if f.mandatory else 'advisory'} | {verdict} | {why} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    found = all_findings()
    notes = annotations()
    if "--markdown" in argv:
        print(markdown(found, notes), end="")
        return 0
    c = counts(found, notes)
    if "--list" in argv:
        for f in found:
            note = notes.get(f.key)
            mark = "?" if note is None else ("true" if note["verdict"] else "false")
            text = " ".join(f.message.split())[:160]
            print(f"{f.case}\t{f.object}\t{f.policy}\t{'mandatory' if f.mandatory else 'advisory'}\t{mark}\t{text}")
    by_policy = Counter((f.policy, bool(notes.get(f.key, {}).get("verdict"))) for f in {f.key: f for f in found}.values())
    print(f"corpus: {c.cases} cases from {c.repositories} repositories; {c.findings} findings "
          f"({c.mandatory} mandatory, {c.advisory} advisory)")
    print(f"false mandatory: {c.false_mandatory}; false advisory: {c.false_advisory}; "
          f"true caught: {c.true_caught} ({c.true_mandatory} mandatory)")
    print(f"unannotated: {len({f.key for f in found} - set(notes))}; annotations no longer found: "
          f"{len(set(notes) - {f.key for f in found})}")
    if "--by-policy" in argv:
        for (policy, verdict), n in sorted(by_policy.items()):
            print(f"  {policy} {'true' if verdict else 'false'}: {n}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
