"""One result model for a policy pack run, and its renderers.

:class:`Report` holds what the analyzer protocol returned: the pack's policies (name,
description, enforcement level after the policy pack config, severity, remediation steps from
``GetAnalyzerInfo``) and the findings (one per ``AnalyzeDiagnostic``), sorted so that the
order of the resources never changes the output. Every format is rendered from it:

* ``table``    -- plain text for a terminal (:meth:`Report.render_table`);
* ``json``     -- :meth:`Report.to_dict` as JSON; :meth:`Report.from_dict` reads it back;
* ``sarif``    -- SARIF 2.1.0: one rule per policy, rule id = the policy name (stable), help
  text = the remediation steps, level mandatory -> ``error``, advisory -> ``warning``; a waived
  finding carries an ``inSource`` suppression with the waiver as its justification (SARIF 2.1.0
  section 3.27.23, ``suppressions``; section 3.35, the suppression object);
* ``junit``    -- JUnit XML: one ``testcase`` per policy; one ``failure`` per mandatory
  finding; advisory findings go to the testcase's ``system-out`` (the test passes: an
  advisory policy does not fail a review, and ``skipped`` would wrongly say it did not run);
  a disabled policy is ``skipped``; waived findings go to ``system-out`` too, with the waiver;
* ``markdown`` -- a summary for a PR comment.

What the pack did not judge (:attr:`Report.not_judged`) is in every format: ``not judged:``
lines in the table, ``not_judged`` in JSON, notifications of level ``note`` on the SARIF
invocation (and ``notJudged`` in the run's properties), ``not-judged`` properties and the
suite's ``system-out`` in JUnit, a list in markdown.

:meth:`Report.exit_code` is 1 when a mandatory policy is violated, else 0 (2 is reserved for
errors before any verdict, see :mod:`tools.analyze`).
"""

from __future__ import annotations

import hashlib
import json
import os
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from tools.cli import printable

MANDATORY, ADVISORY, DISABLED, REMEDIATE = "mandatory", "advisory", "disabled", "remediate"
#: A finding the object waives by annotation (``Finding.waiver``): shown, never counted as a violation.
WAIVED = "waived"
#: The pack policy that reports waived findings (``core.rulebook.waivers.NAME``).
WAIVERS_POLICY = "policy-waivers"
LEVEL_ORDER = {MANDATORY: 0, ADVISORY: 1, DISABLED: 2, WAIVED: 3}
#: SARIF ``level`` of a finding / a rule's default configuration.
SARIF_LEVEL = {MANDATORY: "error", ADVISORY: "warning", DISABLED: "none"}
SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
FORMATS = ("table", "json", "sarif", "junit", "markdown")


@dataclass(frozen=True)
class PolicySummary:
    """One policy of the pack: ``level`` is the enforcement level in force for this run
    (the pack's default, changed by the policy pack config); ``policy_type`` is ``resource``
    or ``stack``; ``config`` the properties it was configured with."""

    name: str
    description: str
    level: str
    severity: str = "unspecified"
    remediation: str = ""
    policy_type: str = "resource"
    display_name: str = ""
    tags: tuple[str, ...] = ()
    url: str = ""
    config: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Finding:
    """One violation. ``message`` is the policy's own message (pulumi-policy's
    ``"<description>\\n"`` prefix removed). ``object`` names the Kubernetes object
    (``Deployment llm-serving/candle-vllm``), the same in program and plain-manifest runs;
    ``urn`` and ``resource_name`` are Pulumi's and differ between the two. ``stage`` is
    ``resource`` (from Analyze) or ``stack`` (from AnalyzeStack). ``source`` is the manifest
    file when known, ``line`` the 1-based line there (the object's document, or the stack file's key of
    the object; 0: unknown). ``waiver`` (level ``waived``): the annotation that waives it and its reason,
    ``<annotation>: <reason>``."""  # noqa: D301

    policy: str
    level: str
    severity: str
    message: str
    urn: str = ""
    resource_type: str = ""
    resource_name: str = ""
    object: str = ""
    stage: str = "resource"
    source: str = ""
    waiver: str = ""
    line: int = 0

    def sort_key(self) -> tuple:
        return (LEVEL_ORDER.get(self.level, 9), self.policy, self.object, self.urn, self.message)

    @property
    def where(self) -> str:
        """The object, else the Pulumi resource, else ``(stack)``."""
        return self.object or self.resource_name or self.urn or "(stack)"


@dataclass(frozen=True)
class Report:
    """The outcome of one pack run over one set of resources (see the module docstring)."""

    pack: str
    pack_version: str
    project: str
    stack: str
    resources: int
    policies: tuple[PolicySummary, ...]
    findings: tuple[Finding, ...]
    plugin_version: str = ""
    notes: tuple[str, ...] = ()
    #: What the pack did not judge, and why (``policylib.coverage.not_judged``): said instead of a verdict.
    not_judged: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "policies", tuple(sorted(self.policies, key=lambda p: p.name)))
        object.__setattr__(self, "findings", tuple(sorted(self.findings, key=Finding.sort_key)))

    # --- verdict ---------------------------------------------------------------------------

    @property
    def mandatory(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.level == MANDATORY)

    @property
    def advisory(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.level == ADVISORY)

    @property
    def waived(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.level == WAIVED)

    def counts(self) -> dict[str, int]:
        """``mandatory`` / ``advisory`` / ``waived`` findings, ``policies``, ``policies_violated`` (with a
        mandatory finding), ``policies_disabled`` and ``resources``."""
        return {
            "mandatory": len(self.mandatory),
            "advisory": len(self.advisory),
            "waived": len(self.waived),
            "policies": len(self.policies),
            "policies_violated": len({f.policy for f in self.mandatory}),
            "policies_disabled": sum(1 for p in self.policies if p.level == DISABLED),
            "resources": self.resources,
        }

    def exit_code(self) -> int:
        """1 when a mandatory policy is violated, else 0."""
        return 1 if self.mandatory else 0

    def by_policy(self) -> dict[str, list[Finding]]:
        out: dict[str, list[Finding]] = {p.name: [] for p in self.policies}
        for f in self.findings:
            out.setdefault(f.policy, []).append(f)
        return out

    def verdicts(self) -> list[tuple[str, str, str, str]]:
        """(policy, level, object, message) of every finding, sorted: what a program run and
        a plain-manifest run of the same objects must agree on (URNs and Pulumi names differ)."""
        return sorted({(f.policy, f.level, f.object, f.message) for f in self.findings})

    # --- JSON --------------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["counts"] = self.counts()
        d["exit_code"] = self.exit_code()
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Report:
        policies = tuple(PolicySummary(**{**p, "tags": tuple(p.get("tags", ()))}) for p in d["policies"])
        findings = tuple(Finding(**f) for f in d["findings"])
        keep = {k: d[k] for k in ("pack", "pack_version", "project", "stack", "resources", "plugin_version") if k in d}
        return cls(policies=policies, findings=findings, notes=tuple(d.get("notes", ())),
                   not_judged=tuple(d.get("not_judged", ())), **keep)

    def render_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    # --- dispatch ------------------------------------------------------------------------------

    def render(self, fmt: str) -> str:
        """The report in ``fmt`` (one of :data:`FORMATS`); ValueError for another."""
        renderers = {
            "table": self.render_table, "json": self.render_json, "sarif": self.render_sarif,
            "junit": self.render_junit, "markdown": self.render_markdown,
        }
        if fmt not in renderers:
            raise ValueError(f"unknown report format {fmt!r}; use one of {', '.join(FORMATS)}")
        text = renderers[fmt]()
        # JSON and SARIF escape control characters themselves; the others are read by a terminal or
        # an XML parser (JUnit): a finding quoting a hostile value is escaped there.
        return text if fmt in ("json", "sarif") else printable(text)

    def headline(self) -> str:
        c = self.counts()
        if c["mandatory"]:
            verdict = (f"FAIL: {c['mandatory']} mandatory violation{'s' if c['mandatory'] != 1 else ''} "
                       f"of {c['policies_violated']} polic{'ies' if c['policies_violated'] != 1 else 'y'}")
        else:
            verdict = "PASS: no mandatory violation"
        waived = f", {c['waived']} waived" if c["waived"] else ""
        return f"{verdict}, {c['advisory']} advisory{waived} ({self.pack} on stack {self.stack}, {c['resources']} resources, {c['policies']} policies)"

    # --- table -------------------------------------------------------------------------------

    def render_table(self) -> str:
        """Plain text: one block per finding (level, policy, object; the message indented),
        then the fix (remediation steps) of each violated policy, once, and the policies the
        policy pack config disabled."""
        lines = [f"Policy pack {self.pack} {self.pack_version}: stack {self.stack}, "
                 f"{self.resources} resources, {len(self.policies)} policies"]
        width = max((len(f.policy) for f in self.findings), default=0)
        for f in self.findings:
            lines.append(f"{f.level.upper():<10} {f.policy:<{width}}  {f.where}")
            if f.waiver:
                lines.append(f"    waived by {f.waiver}")
            for part in (f.message or "(no message)").splitlines():
                lines.append(f"    {part}")
        violated = {f.policy for f in self.findings if f.level != WAIVED}
        for p in self.policies:
            if p.name in violated and p.remediation:
                lines.append(f"how to fix {p.name}:")
                lines.extend(f"    {part}" for part in p.remediation.strip().splitlines())
        disabled = [p.name for p in self.policies if p.level == DISABLED]
        if disabled:
            lines.append(f"disabled by the policy pack config: {', '.join(disabled)}")
        for note in self.notes:
            lines.append(f"note: {note}")
        for item in self.not_judged:
            lines.append(f"not judged: {item}")
        lines.append(self.headline())
        return "\n".join(lines) + "\n"

    # --- SARIF -------------------------------------------------------------------------------

    def render_sarif(self) -> str:
        return json.dumps(self.to_sarif(), indent=2, sort_keys=False) + "\n"

    def to_sarif(self) -> dict[str, Any]:
        """A SARIF 2.1.0 log: one run, the pack as the tool driver, one rule per policy."""
        index = {p.name: i for i, p in enumerate(self.policies)}
        rules = [_sarif_rule(p) for p in self.policies]
        results = [_sarif_result(f, index.get(f.policy), self) for f in self.findings]
        driver: dict[str, Any] = {"name": self.pack, "rules": rules}
        if self.pack_version:
            driver["version"] = self.pack_version
        invocation: dict[str, Any] = {"executionSuccessful": True, "exitCode": self.exit_code()}
        if self.not_judged:
            # SARIF 2.1.0 invocation.toolExecutionNotifications: what the tool did not analyse, level "note".
            invocation["toolExecutionNotifications"] = [
                {"descriptor": {"id": "not-judged"}, "level": "note", "message": {"text": item}} for item in self.not_judged]
        run = {
            "tool": {"driver": driver},
            "automationDetails": {"id": f"{self.project}/{self.stack}/"},
            "invocations": [invocation],
            "results": results,
            "properties": {"project": self.project, "stack": self.stack, "counts": self.counts(),
                           "notJudged": list(self.not_judged)},
        }
        return {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}

    # --- JUnit -------------------------------------------------------------------------------

    def render_junit(self) -> str:
        """JUnit XML (see the module docstring for the mapping)."""
        c = self.counts()
        suites = ET.Element("testsuites", name=self.pack, tests=str(c["policies"]),
                            failures=str(c["mandatory"]), errors="0")
        suite = ET.SubElement(suites, "testsuite", name=f"{self.pack} ({self.project}/{self.stack})",
                              tests=str(c["policies"]), failures=str(c["mandatory"]), errors="0",
                              skipped=str(c["policies_disabled"]))
        props = ET.SubElement(suite, "properties")
        for k, v in (("stack", self.stack), ("project", self.project), ("resources", str(self.resources))):
            ET.SubElement(props, "property", name=k, value=v)
        for item in self.not_judged:
            ET.SubElement(props, "property", name="not-judged", value=item)
        groups = self.by_policy()
        for p in self.policies:
            case = ET.SubElement(suite, "testcase", name=p.name, classname=f"{self.pack}.{p.policy_type}")
            if p.level == DISABLED:
                ET.SubElement(case, "skipped", message="disabled by the policy pack config")
                continue
            for f in groups.get(p.name, []):
                if f.level == MANDATORY:
                    el = ET.SubElement(case, "failure", message=_first_line(f.message) or p.description,
                                       type=f"{f.level}/{f.severity}")
                    el.text = f"{f.where}\n{f.urn}\n{f.message}"
            shown = [f for f in groups.get(p.name, []) if f.level in (ADVISORY, WAIVED)]
            if shown:
                out = ET.SubElement(case, "system-out")
                out.text = "\n".join(f"WAIVED {f.where} ({f.waiver}): {f.message}" if f.level == WAIVED
                                     else f"ADVISORY {f.where}: {f.message}" for f in shown)
        if self.not_judged:
            out = ET.SubElement(suite, "system-out")
            out.text = "\n".join(f"NOT JUDGED {item}" for item in self.not_judged)
        ET.indent(suites)
        return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"

    # --- markdown ----------------------------------------------------------------------------

    def render_markdown(self) -> str:
        """A PR comment: the verdict, the mandatory findings as a table, advisory ones folded."""
        out = [f"### Policy pack `{self.pack}` on stack `{self.stack}`", "", f"**{self.headline()}**", ""]
        if self.mandatory:
            out += _md_table(self.mandatory, self)
        if self.advisory:
            out += [f"<details><summary>{len(self.advisory)} advisory finding"
                    f"{'s' if len(self.advisory) != 1 else ''}</summary>", ""]
            out += _md_table(self.advisory, self)
            out += ["</details>", ""]
        if self.waived:
            out += [f"<details><summary>{len(self.waived)} waived finding"
                    f"{'s' if len(self.waived) != 1 else ''}</summary>", "",
                    "| policy | object | waived by | message |", "| --- | --- | --- | --- |"]
            out += [f"| `{f.policy}` | {_md_cell(f.where)} | {_md_cell(f.waiver)} | {_md_cell(f.message)} |"
                    for f in self.waived]
            out += ["", "</details>", ""]
        disabled = [p.name for p in self.policies if p.level == DISABLED]
        if disabled:
            out += [f"Disabled by the policy pack config: {', '.join(f'`{n}`' for n in disabled)}", ""]
        if self.not_judged:
            out += ["Not judged:", ""] + [f"- {_md_cell(item)}" for item in self.not_judged] + [""]
        return "\n".join(out)


# --- helpers -------------------------------------------------------------------------------------

def _first_line(text: str) -> str:
    return text.splitlines()[0] if text else ""


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", "<br>")


def _md_table(findings: tuple[Finding, ...], report: Report) -> list[str]:
    """The findings as a table, then each violated policy's fix once."""
    fixes = {p.name: p.remediation for p in report.policies}
    rows = ["| policy | object | message |", "| --- | --- | --- |"]
    for f in findings:
        rows.append(f"| `{f.policy}` | {_md_cell(f.where)} | {_md_cell(f.message)} |")
    rows += ["", "How to fix:", ""]
    for name in sorted({f.policy for f in findings}):
        rows.append(f"- `{name}`: {fixes.get(name) or '(no remediation steps)'}")
    return rows + [""]


def _sarif_rule(p: PolicySummary) -> dict[str, Any]:
    rule: dict[str, Any] = {
        "id": p.name,
        "name": "".join(part.capitalize() for part in p.name.split("-")),
        "shortDescription": {"text": _first_line(p.description) or p.name},
        "fullDescription": {"text": p.description or p.name},
        "help": {"text": p.remediation or p.description or p.name,
                 "markdown": f"**{p.name}** ({p.level}, severity {p.severity})\n\n{p.remediation or p.description}"},
        "defaultConfiguration": {"level": SARIF_LEVEL.get(p.level, "warning"), "enabled": p.level != DISABLED},
        "properties": {"enforcementLevel": p.level, "severity": p.severity, "policyType": p.policy_type,
                       "tags": list(p.tags)},
    }
    uri = p.url or policy_doc_uri(p.name)
    if uri:
        rule["helpUri"] = uri
    return rule


#: The policies' pages in the repository (``docs/gen.py`` writes them).
POLICY_DOCS = Path(__file__).resolve().parent.parent.parent / "docs" / "policies"


def policy_doc_uri(name: str) -> str:
    """The absolute URI of policy ``name``'s page, docs/policies/<name>.md: on the forge, at the commit
    under review, when a GitHub or Gitea Actions run says where (``GITHUB_SERVER_URL``,
    ``GITHUB_REPOSITORY``, ``GITHUB_SHA``; Gitea sets them too, and ``GITEA_ACTIONS``); else the
    page in this checkout as a ``file:`` URI; "" when there is no such page."""
    page = POLICY_DOCS / f"{name}.md"
    if not page.is_file():
        return ""
    server, repo, sha = (os.environ.get(k, "") for k in ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_SHA"))
    if server and repo and sha:
        at = "src/commit" if os.environ.get("GITEA_ACTIONS") == "true" else "blob"
        return f"{server.rstrip('/')}/{repo}/{at}/{sha}/docs/policies/{quote(name)}.md"
    return page.as_uri()


def _sarif_result(f: Finding, rule_index: int | None, report: Report) -> dict[str, Any]:
    fqn = f.urn or f"urn:pulumi:{report.stack}::{report.project}::pulumi:pulumi:Stack::{report.project}-{report.stack}"
    location: dict[str, Any] = {
        "logicalLocations": [{"name": f.where, "fullyQualifiedName": fqn, "kind": "resource" if f.urn else "stack"}]
    }
    if f.source:
        location["physicalLocation"] = {"artifactLocation": {"uri": f.source}}
        if f.line > 0:
            location["physicalLocation"]["region"] = {"startLine": f.line}
    level = f.level
    if level == WAIVED:  # shown at its policy's level, suppressed in source with the waiver's reason
        level = next((p.level for p in report.policies if p.name == f.policy), ADVISORY)
    result: dict[str, Any] = {
        "ruleId": f.policy,
        "level": SARIF_LEVEL.get(level, "warning"),
        "message": {"text": f.message or f.policy},
        "locations": [location],
        "partialFingerprints": {
            "llmServingPolicyFinding/v1": hashlib.sha256(
                f"{f.policy}\0{f.object or f.urn}\0{f.message}".encode()).hexdigest()
        },
        "properties": {"enforcementLevel": f.level, "severity": f.severity, "stage": f.stage,
                       "resourceType": f.resource_type},
    }
    if f.waiver:
        result["suppressions"] = [{"kind": "inSource", "status": "accepted", "justification": f.waiver}]
    if rule_index is not None:
        result["ruleIndex"] = rule_index
    return result
