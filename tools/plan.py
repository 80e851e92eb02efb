"""The real CLI's plan read back: cards per node at the update's peak, from ``pulumi preview --json``.

The policy pack judges the new state only, so the real ``pulumi preview --policy-pack policies``
cannot see that a rename on a full node needs a fifth card for a moment. The engine's plan can:
its steps name each object's old and new inputs and, in order, whether an old object goes before
or after its replacement. This reads that plan and counts it with the offline ``--base`` preview's
counter (:func:`tools.offline.transition.count`), so both report the same peak:

- alive at the peak: every object the plan keeps or creates (its new inputs), every object it
  deletes (``delete``: Pulumi deletes removed objects at the end of the update), and the old side
  of a replacement whose ``delete-replaced`` step does not come before its ``create-replacement``
  (create-first: the old object is deleted at the end). An old object deleted first
  (``deleteBeforeReplace``, or the provider's own delete-first for a kept name) is not alive then;
- the inventory is the stack's own ``llm-serving:cluster``, from the plan's config (the prelude
  event, or the document's ``config``): no second copy of the cluster's facts.

    pulumi preview --stack prod --json --show-sames --show-replacement-steps > plan.json
    python3 dev.py plan plan.json          # or: ... | python3 dev.py plan -

Both forms of ``--json`` are read: the default document (``{"config", "steps": [{"op", "oldState",
"newState"}], "changeSummary"}``) and the engine's event stream
(``PULUMI_ENABLE_STREAMING_JSON_PREVIEW=true``: ``resourcePreEvent`` objects, every step). The
document leaves out the objects the plan keeps unless ``--show-sames`` (their cards count too;
checked against its ``changeSummary``), and a replacement's ``create-replacement`` and
``delete-replaced`` steps unless ``--show-replacement-steps`` (their order says whether the old
object is alive at the peak; checked: a ``replace`` step without its ``create-replacement``); a
document missing either is refused as input.

Before the peak, each Kubernetes object the plan changes is listed with its cost
(:func:`costs`, the offline ``--base`` diff's model, :mod:`core.k8s.manifests.transition_cost`): the model
servers it restarts and for how long ("update in place" only when none restarts), what it deletes
or replaces. A plan that deletes a workload or a Service the stack file's ``llm-serving:retire``
does not list is refused (the offline ``--base`` preview refuses the same deletion).

A plan that deletes or replaces a resource whose state is protected (the state's ``protect``, in
either form of the plan) is refused, as the engine refuses it at ``pulumi up``; a deletion's message
gives the way through in order: ``llm-serving:retire``, then ``pulumi state unprotect`` with the
plan's own URN. After the peak come the ``OUTAGE:`` lines (a server left at 0 replicas, a Service
left without a running backend, with the clients that lose it), and the last line is the verdict.

A plan that deletes an object the stack file lists under ``llm-serving:left_alone`` is refused
too: the program registers nothing for it, but the stack's state still held it (an earlier update
created or adopted it), so Pulumi would delete the live object the entry says it leaves alone.

Exit codes: 0 the peak fits every node; 1 refused: a node over its cards at the peak (the message
names the old objects holding them and the rename or the cards to free first), a left-alone
object deleted, a workload or Service deleted without ``llm-serving:retire``, a protected resource
deleted or replaced, or a provider change
(render mode switched on a stack with state, server-side apply off: :mod:`tools.provider_change`);
2 bad input, one line naming the line of the input and the reason: anything but exactly what
``pulumi preview --json`` writes (one document, or one engine event a line), a document missing
steps or its changeSummary or followed by more JSON, a count that is not a whole number, a ``same``
count other than the sames listed, an event stream without its summary, with two preludes or a
line that is no event, a summary of a preview that failed, a step without an operation, no
inventory in its config. Every line printed is one line (``cli.one_line``): a name cannot forge one.
"""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from pydantic import TypeAdapter, ValidationError

from core.base.inputs import MAX_INPUT_BYTES, InputFileError, read_text
from core.capacity.inventory import ClusterInventory
from core.judging.problems import HIDDEN, Finding, is_secret
from core.k8s.manifests import transition_cost
from stackfile.objects import LeftAlone, ObjectRef
from stackfile.schema import StackConfig
from tools import cli, provider_change
from tools.offline import render, summary, transition, treediff

EXIT_OK, EXIT_REFUSED, EXIT_INPUT = cli.OK, cli.VERDICT, cli.BAD_INPUT
#: The preview command whose ``--json`` document this reads whole.
PREVIEW = "pulumi preview --json --show-sames --show-replacement-steps"
#: Steps whose new inputs are alive after the update.
KEEPS = frozenset({"same", "create", "update", "replace", "create-replacement", "import", "import-replacement"})


class PlanError(Exception):
    """The input is not a ``pulumi preview --json`` plan this can read; the message says why."""


@dataclass(frozen=True)
class State:
    """One side of a step: the resource's URN, type token, inputs and provider reference."""

    urn: str
    type: str
    inputs: dict[str, Any]
    provider: str = ""
    #: The state's ``protect`` flag: the engine refuses to delete or replace the resource.
    protect: bool = False


@dataclass(frozen=True)
class Step:
    """One engine step, in the plan's order: ``op`` (``same``, ``create``, ``update``, ``delete``,
    ``replace``, ``create-replacement``, ``delete-replaced``, ...), its old and new state."""

    op: str
    old: State | None
    new: State | None


def read_events(text: str) -> tuple[dict, ...]:
    """The engine events (objects with a ``sequence``) among the JSON values of ``text`` (the CLI
    may print other lines between them)."""
    dec = json.JSONDecoder()
    out, i = [], 0
    while i < len(text):
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            break
        try:
            value, i = dec.raw_decode(text, i)
        except (json.JSONDecodeError, RecursionError):
            nl = text.find("\n", i)
            i = len(text) if nl < 0 else nl + 1
            continue
        if isinstance(value, dict) and "sequence" in value:
            out.append(value)
    return tuple(out)


def _state(raw: Any) -> State | None:
    if not isinstance(raw, dict) or not raw.get("urn"):
        return None
    inputs = raw.get("inputs")
    return State(str(raw["urn"]), str(raw.get("type", "")), inputs if isinstance(inputs, dict) else {},
                 str(raw.get("provider") or ""), raw.get("protect") is True)


#: The keys of the engine's summary event (sdk/go/common/apitype events.go ``SummaryEvent``, and the
#: ``isPreview`` / ``result`` the CLI adds): any other is not a preview's.
SUMMARY_KEYS = frozenset({"maybeCorrupt", "durationSeconds", "resourceChanges", "PolicyPacks", "isPreview", "result"})


def read_plan(text: str, failed: list[str] | None = None) -> tuple[dict[str, Any], list[Step]]:
    """(the stack's config, the steps in order) of a ``pulumi preview --json`` output, either
    form, exactly as the CLI writes it: one document, or one engine event a line. Raises
    :class:`PlanError` naming the line and the reason for anything else (a document followed by more
    JSON, a cut document, a line that is no event, a failed or corrupt preview's summary, a count
    that is not a whole number). ``failed``: a list that takes the error diagnostics of a document
    whose preview failed (the engine refused steps, as it refuses a protected replacement) and its
    steps are read as listed; None: such a document raises."""
    if not text.strip():
        raise PlanError(_NO_PLAN)
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as err:
        doc = _first_value(text)
        if isinstance(doc, dict) and "steps" in doc:
            raise PlanError(f"line {err.lineno}: more JSON after the plan document ({err.msg}: a document followed by "
                            "an event stream, or two plans joined), so which plan to count is unknown; fix: pass one "
                            f"preview's whole output (`{PREVIEW} > plan.json`)") from None
        return _read_stream(text, err)
    except ValueError as err:  # a number of more than 4,300 digits (Python's int conversion limit)
        raise PlanError(f"the plan holds a number no preview writes ({cli.printable(str(err))[:120]}); fix: run "
                        f"`{PREVIEW}` again and pass its whole output") from None
    except RecursionError:
        raise PlanError("the plan document nests deeper than Python's JSON reader goes (a `pulumi preview --json` "
                        f"document nests about 15 levels); fix: run `{PREVIEW}` again and pass its whole output") from None
    if isinstance(doc, dict) and "sequence" in doc:
        return _read_stream(text, None)
    if not isinstance(doc, dict) or not isinstance(doc.get("steps"), list):
        what = "a document without a steps list" if isinstance(doc, dict) else f"a JSON {type(doc).__name__}"
        raise PlanError(f"line 1: the input is {what}, not a `pulumi preview --json` plan; fix: pass the output of "
                        f"`{PREVIEW}`")
    return _read_document(doc, failed)


_NO_PLAN = ("no plan in the input: expected the output of `pulumi preview --json` (its document, or its event "
            "stream)")


def _first_value(text: str) -> Any:
    try:
        return json.JSONDecoder().raw_decode(text.lstrip())[0]
    except (ValueError, RecursionError):
        return None


def _counts(summary_: Any, where: str) -> dict[str, int]:
    """A change summary's op -> count, each a whole number of at least 0 (not a boolean, a fraction or text)."""
    if not isinstance(summary_, dict):
        raise PlanError(f"{where} is {type(summary_).__name__}, not a map of step counts; fix: run `{PREVIEW}` again "
                        "and pass its whole output")
    for op, n in summary_.items():
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise PlanError(f"{where}: {cli.printable(str(op))} is {json.dumps(n)[:40]}, not a count of steps "
                            f"(`pulumi preview --json` writes whole numbers), so what the plan leaves out cannot be "
                            f"checked; fix: run `{PREVIEW}` again and pass its whole output")
    return summary_


def _check_sames(steps: list[Step], kept: dict[str, int], where: str) -> None:
    listed = sum(1 for s in steps if s.op == "same")
    same = kept.get("same", 0)
    if same > listed:
        raise PlanError(f"the plan lists {listed} of the {same} resources it keeps unchanged (`pulumi preview --json` "
                        "leaves them out of its document), and their cards count at the peak; fix: run "
                        f"`{PREVIEW}`")
    if same < listed:
        raise PlanError(f"{where} counts {same} resources kept unchanged ({'no same count' if 'same' not in kept else 'same'}) "
                        f"but the plan lists {listed}: it was edited or joined from two previews; fix: run `{PREVIEW}` "
                        "again and pass its whole output")
    if steps and not any(s.new is not None and s.new.type == "pulumi:pulumi:Stack" or
                         s.old is not None and s.old.type == "pulumi:pulumi:Stack" for s in steps):
        raise PlanError("the plan has no step for the stack itself (pulumi:pulumi:Stack), which every preview plans, so "
                        f"steps were left out; fix: run `{PREVIEW}` again and pass its whole output")


def _read_document(doc: dict[str, Any], errors: list[str] | None = None) -> tuple[dict[str, Any], list[Step]]:
    if "changeSummary" not in doc:
        raise PlanError("the plan document has no changeSummary (a `pulumi preview --json` document always ends with "
                        "one; this one was cut or written by hand), so what it leaves out cannot be checked; fix: "
                        f"run `{PREVIEW}` again and pass its whole output")
    kept = _counts(doc["changeSummary"], "the plan document's changeSummary")
    failed = [d for d in doc.get("diagnostics") or [] if isinstance(d, dict) and d.get("severity") == "error"]
    if failed and errors is not None:
        errors += [" ".join(str(d.get("message", "")).split()) for d in failed]
    elif failed:
        raise PlanError(f"the preview failed ({len(failed)} error diagnostic(s) in the document), so its steps are not "
                        "the update's; fix: correct what the preview reports and run it again")
    steps = [_step(i, s, "op", "oldState", "newState") for i, s in enumerate(doc["steps"])]
    _check_sames(steps, kept, "the plan document's changeSummary")
    created = {s.new.urn for s in steps if s.op == "create-replacement" and s.new is not None}
    hidden = sorted(s.new.urn.rsplit("::", 1)[-1] for s in steps
                    if s.op == "replace" and s.new is not None and s.new.urn not in created)
    if hidden:
        raise PlanError(f"the plan replaces {', '.join(hidden)} but leaves out its create-replacement and "
                        "delete-replaced steps (`pulumi preview --json` does without --show-replacement-steps), "
                        "whose order says whether the old object is alive at the peak; fix: run "
                        f"`{PREVIEW}`")
    config = doc.get("config")
    return dict(config if isinstance(config, dict) else {}), steps


def _read_stream(text: str, err: json.JSONDecodeError | None) -> tuple[dict[str, Any], list[Step]]:
    """The event stream: one engine event (a JSON object with a ``sequence``) a non-blank line."""
    events: list[tuple[int, dict]] = []
    bad: tuple[int, str] | None = None
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except (ValueError, RecursionError) as e:
            bad = bad or (n, f"not JSON ({getattr(e, 'msg', None) or str(e)[:80] or 'nested too deeply'})")
            continue
        if isinstance(value, dict) and "sequence" in value:
            events.append((n, value))
        else:
            bad = bad or (n, "JSON that is not an engine event (no sequence)")
    if not events:
        if err is not None and text.lstrip().startswith("{"):
            raise PlanError(f"line {err.lineno}, column {err.colno}: the plan document is cut or damaged ({err.msg}); "
                            f"fix: run `{PREVIEW}` again and pass its whole output")
        raise PlanError(_NO_PLAN)
    if bad is not None:
        raise PlanError(f"line {bad[0]}: {bad[1]}, in an event stream of {len(events)} events (a stream holds one event "
                        "a line and nothing else); fix: pass one preview's whole output, unedited")
    preludes = [e["preludeEvent"] for _, e in events if isinstance(e.get("preludeEvent"), dict)]
    if len(preludes) != 1:
        raise PlanError(f"the event stream has {len(preludes)} prelude events where one preview has exactly one "
                        "(two previews' output joined, or a cut stream); fix: pass one preview's whole output")
    summaries = [(n, e["summaryEvent"]) for n, e in events if isinstance(e.get("summaryEvent"), dict)]
    if not summaries:
        raise PlanError("the event stream ends before its summary event: the preview did not finish (it failed or "
                        "was cut), so steps may be missing; fix: run the preview again until it prints its summary")
    n, summ = summaries[-1]
    unknown = sorted(set(summ) - SUMMARY_KEYS)
    if unknown or summ.get("result", "succeeded") != "succeeded" or summ.get("maybeCorrupt") is True:
        why = (f"result {json.dumps(summ.get('result'))[:40]}" if summ.get("result", "succeeded") != "succeeded" else
               "maybeCorrupt true" if summ.get("maybeCorrupt") is True else f"the key {cli.printable(unknown[0])[:40]}, "
               "which no preview writes")
        raise PlanError(f"line {n}: the summary event has {why}: the preview did not succeed, so its steps are not the "
                        "update's; fix: correct what the preview reports and run it again")
    metas = [e["resourcePreEvent"].get("metadata") for _, e in events if isinstance(e.get("resourcePreEvent"), dict)]
    steps = [_step(i, m, "op", "old", "new") for i, m in enumerate(metas)]
    _check_sames(steps, _counts(summ.get("resourceChanges") or {}, f"line {n}: the summary event's resourceChanges"),
                 f"line {n}: the summary event's resourceChanges")
    config = preludes[0].get("config")
    return dict(config if isinstance(config, dict) else {}), steps


def _step(i: int, raw: Any, op: str, old: str, new: str) -> Step:
    """Step ``i`` of the plan; one without an operation is refused, not dropped from the count."""
    if not isinstance(raw, dict) or not isinstance(raw.get(op), str) or not raw[op]:
        raise PlanError(f"step {i} of the plan has no {op!r} (what the engine does to the resource), so its cards "
                        f"cannot be counted; fix: pass the whole output of `{PREVIEW}`")
    return Step(raw[op], _state(raw.get(old)), _state(raw.get(new)))


def _is_object(state: State | None) -> bool:
    """A Kubernetes object's state (the provider resource's type is ``pulumi:providers:kubernetes``)."""
    return state is not None and state.type.startswith("kubernetes:") and bool(state.inputs.get("kind"))


def _path(obj: dict[str, Any]) -> str:
    try:
        return render.render_path(obj)
    except render.RenderError:  # an auto-named object (no metadata.name in the plan): its URN names it
        return f"{obj.get('apiVersion')}-{obj.get('kind')}-unnamed"


@dataclass(frozen=True)
class PlanPeak:
    """The plan counted: ``peak`` (cards per node with the old objects still alive) and ``added``
    (render path -> object of each object the plan creates: the candidates of a rename)."""

    peak: transition.Peak
    added: dict[str, dict[str, Any]]

    def refusals(self) -> list[str]:
        return transition.over_capacity(self.peak, self.added)


def count(steps: Iterable[Step], inventory: ClusterInventory) -> PlanPeak:
    """Cards per node at the plan's peak (see the module docstring for what is alive then)."""
    steps = list(steps)
    new: dict[str, dict] = {}
    added: dict[str, dict] = {}
    alive_old: dict[str, dict] = {}
    deleted_first: set[str] = set()
    for s in steps:
        if s.op == "delete-replaced" and _is_object(s.old):
            assert s.old is not None
            deleted_first.add(s.old.urn)
        elif s.op == "create-replacement" and _is_object(s.old) and s.old is not None and s.old.urn not in deleted_first:
            alive_old[_path(s.old.inputs)] = s.old.inputs  # deleted at the end: alive with its replacement
        elif s.op == "delete" and _is_object(s.old):
            assert s.old is not None
            alive_old[_path(s.old.inputs)] = s.old.inputs
        if s.op in KEEPS and _is_object(s.new):
            assert s.new is not None
            new[_path(s.new.inputs)] = s.new.inputs
            if s.op in ("create", "create-replacement"):
                added[_path(s.new.inputs)] = s.new.inputs
    return PlanPeak(transition.count(new, alive_old, inventory), added)


#: Why a left-alone object must not be deleted.
LEFT_ALONE_SOURCE = "llm-serving:left_alone (seed 000: prod stops managing the coder InferenceService, and ArgoCD left it live)"


def left_alone_deleted(steps: Iterable[Step], config: dict[str, Any]) -> list[str]:
    """One message per ``delete`` or ``delete-replaced`` step of an object the plan's config lists
    under ``llm-serving:left_alone`` (namespace default: the stack's ``llm-serving:namespace``).
    Raises :class:`PlanError` when that config key is not a list of left-alone entries."""
    raw = summary.config_value(config, "llm-serving:left_alone") or []
    try:
        entries = TypeAdapter(list[LeftAlone]).validate_python(raw)
    except ValidationError as err:
        raise PlanError(f"the plan's llm-serving:left_alone is not a list of left-alone entries "
                        f"({err.error_count()} problem(s)); fix: preview a stack whose stack file the program accepts") from None
    namespace = str(summary.config_value(config, "llm-serving:namespace") or StackConfig.model_fields["namespace"].default)
    why = {e.ref(namespace): e.why for e in entries}
    out: list[str] = []
    for s in steps:
        if s.op not in ("delete", "delete-replaced") or not _is_object(s.old) or s.old is None:
            continue
        meta = s.old.inputs.get("metadata") or {}
        ref = ObjectRef(str(s.old.inputs.get("kind")), str(meta.get("namespace") or namespace), str(meta.get("name", "")))
        if ref in why:
            out.append(Finding(
                str(ref),
                f"the plan deletes it ({s.op}), but llm-serving:left_alone lists it (\"{why[ref]}\"): the stack's state "
                "still holds it from an earlier update, so registering nothing for it makes Pulumi delete the live object",
                f"to keep the live object, drop it from the state first with `pulumi state delete {shlex.quote(s.old.urn)}` (Pulumi "
                "forgets it and the object stays), then preview again; or remove its left_alone entry to delete it on purpose",
                LEFT_ALONE_SOURCE).render())
    return out


#: Plan operation -> the diff's action (:func:`core.k8s.manifests.transition_cost.object_cost`); the
#: ``create-replacement`` / ``delete-replaced`` halves of a replacement are its ``replace`` step.
ACTIONS = {"create": "add", "update": "update", "replace": "replace", "delete": "remove"}


def costs(steps: Iterable[Step]) -> list[tuple[str, str, transition_cost.ObjectCost]]:
    """(title, action, cost) of each Kubernetes object the plan changes, in plan order: the one
    cost model of the offline ``--base`` diff (:func:`core.k8s.manifests.transition_cost.object_cost`), on the
    field paths that differ between the step's old and new inputs (:func:`tools.offline.treediff.field_changes`)."""
    out = []
    for s in steps:
        action = ACTIONS.get(s.op)
        if action is None or not (_is_object(s.old) or _is_object(s.new)):
            continue
        old = s.old.inputs if s.old is not None and _is_object(s.old) else None
        new = s.new.inputs if s.new is not None and _is_object(s.new) else None
        paths = [c.path for c in treediff.field_changes(old, new)] if old is not None and new is not None else []
        obj = new if new is not None else old
        assert obj is not None
        protected = s.old.protect if s.old is not None and _is_object(s.old) else None
        out.append((treediff.title(obj), action, transition_cost.object_cost(action, old, new, paths, protected)))
    return out


def render_costs(costed: list[tuple[str, str, transition_cost.ObjectCost]]) -> list[str]:
    """The plan's objects as the offline diff labels them ("update in place" only when no server
    restarts), each with its cost lines, then the update's one-line cost summary."""
    lines = []
    for title, action, cost in costed:
        lines.append(f"{title} ({transition_cost.label(action, cost)})")
        lines.extend(f"      {line}" for line in cost.lines())
    return lines + transition_cost.summary(c for _, _, c in costed)


def unintended_deletions(steps: Iterable[Step], config: dict[str, Any]) -> list[str]:
    """:func:`core.k8s.manifests.transition_cost.unintended_deletions` of the plan's ``delete`` steps, against the
    plan's ``llm-serving:retire``."""
    deleted = [s.old.inputs for s in steps if s.op == "delete" and s.old is not None and _is_object(s.old)]
    return transition_cost.unintended_deletions(deleted, transition_cost.retired(summary.config_value(config, "llm-serving:retire")))


def protected_steps(steps: Iterable[Step], config: dict[str, Any]) -> list[str]:
    """One message per ``delete`` or ``replace`` step of a resource whose state is protected: the
    engine refuses it, so ``pulumi up`` would stop there. A delete gets the way through in order
    (:func:`core.k8s.manifests.transition_cost.protected_deletion`: ``llm-serving:retire``, then the state command
    with this URN); a replacement, the field to keep (or the same state command, deliberately)."""
    retire = transition_cost.retired(summary.config_value(config, "llm-serving:retire"))
    out: list[str] = []
    for s in steps:
        if s.op not in ("delete", "replace") or s.old is None or not s.old.protect or not _is_object(s.old):
            continue
        if s.op == "delete":
            out.append(transition_cost.protected_deletion(s.old.inputs, s.old.urn, retire))
        else:
            out.append(Finding(
                treediff.title(s.old.inputs),
                "the plan replaces it (a field that forces a replacement changed), and the engine refuses to replace "
                "a resource its state marks protected, so pulumi up stops there",
                "put back the field the diff marks [forces replacement] (for a Service: its name, namespace and "
                "clusterIP); to replace it deliberately, first `" + transition_cost.unprotect_command(s.old.urn) + "`",
                transition_cost.PROTECT_SOURCE).render())
    return out


def outages(steps: Iterable[Step]) -> list[str]:
    """:func:`core.k8s.manifests.transition_cost.outages` of the plan: its old inputs against its new ones."""
    old: dict[str, dict] = {}
    new: dict[str, dict] = {}
    for s in steps:
        if s.op in ("create-replacement", "delete-replaced"):
            continue
        if _is_object(s.old) and s.old is not None:
            old[_path(s.old.inputs)] = s.old.inputs
        elif s.op == "same" and _is_object(s.new) and s.new is not None:
            old[_path(s.new.inputs)] = s.new.inputs
        if s.op in KEEPS and _is_object(s.new) and s.new is not None:
            new[_path(s.new.inputs)] = s.new.inputs
    return transition_cost.outages(old, new)


def verdict(refused: list[str], outage_lines: list[str]) -> str:
    """The last line: the command's verdict (REFUSED with exit 1, else PASS) and what it found."""
    n = len(refused)
    if refused:
        return f"REFUSED: the plan cannot run as it stands ({n} reason{'s' if n != 1 else ''}, the REFUSED lines above)"
    extra = f"; {len(outage_lines)} outage(s), the OUTAGE lines above" if outage_lines else ""
    return f"PASS: the plan fits every node at its peak and nothing in it is refused{extra}"


def _stdin() -> str:
    text = sys.stdin.read(MAX_INPUT_BYTES + 1)
    if len(text) > MAX_INPUT_BYTES:
        raise PlanError(f"standard input is above the {MAX_INPUT_BYTES:,}-byte limit; fix: pipe one preview's --json")
    return text


def preview_failed(errors: list[str]) -> list[str]:
    """The refusal of a preview that failed: ``pulumi up`` stops at the same errors (its steps, read
    as the engine listed them, are judged beside it); [] when it did not fail."""
    shown = [e for e in errors if e and e != "error: preview failed"] or errors
    if not errors:
        return []
    return [f"the preview failed with {len(errors)} error diagnostic(s), so pulumi up fails the same way (first: "
            f"{cli.printable(shown[0])[:300]}); fix: correct what the preview reports, then preview again"]


def main(argv: list[str] | None = None, stdout: TextIO = sys.stdout, stderr: TextIO = sys.stderr) -> int:  # noqa: D103
    ap = cli.parser("python3 dev.py plan", __doc__)
    ap.add_argument("plan", help="the output of `pulumi preview --json` (a file, or - for standard input)")
    args = ap.parse_args(argv)
    try:
        text = _stdin() if args.plan == "-" else read_text(Path(args.plan), "plan")
        failed: list[str] = []
        config, steps = read_plan(text, failed)
        inventory = summary.inventory_of(config)
        cluster = config.get("llm-serving:cluster")
        if inventory is None and cluster is not None and (is_secret(cluster) or cluster == HIDDEN or (
                isinstance(cluster, str) and cluster.strip().startswith(("{\"secure\"", "[secret]")))):
            raise PlanError("the plan's llm-serving:cluster is a secret (the preview shows it encrypted), so its nodes "
                            "cannot be read and no card is counted; fix: keep the inventory in plain text "
                            "(pulumi config set --path llm-serving:cluster... without --secret: it holds no secret)")
        if inventory is None:
            raise PlanError("the plan's stack config has no valid llm-serving:cluster inventory, so there are no "
                            "nodes to count cards on; preview a stack whose stack file declares its cluster")
        deleted = left_alone_deleted(steps, config)
    except (PlanError, InputFileError) as err:
        return cli.fail("plan", err, stderr)
    counted = count(steps, inventory)
    stdout.write("\n".join(map(cli.one_line, render_costs(costs(steps)))) + "\n\n")
    stdout.write("\n".join(map(cli.one_line, counted.peak.render())) + "\n")
    outage_lines = outages(steps)
    for line in outage_lines:
        stdout.write(cli.one_line(line) + "\n")
    refused = (counted.refusals() + deleted + unintended_deletions(steps, config) + protected_steps(steps, config)
               + provider_change.refusals(steps) + preview_failed(failed))
    for reason in refused:  # each on its line: a name in the plan cannot forge another (ANSI, a newline)
        stdout.write(f"REFUSED: {cli.one_line(reason)}\n")
    stdout.write(cli.one_line(verdict(refused, outage_lines)) + "\n")
    return EXIT_REFUSED if refused else EXIT_OK


if __name__ == "__main__":
    cli.run(main, "plan")
