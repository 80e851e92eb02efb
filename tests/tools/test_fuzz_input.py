"""Fuzzing the stack file and the manifests (hypothesis), bounded in time for a
2-core machine (about 20 s together; ``deadline=None`` because the first preview imports the
program, the rest are counted by ``max_examples``).

Stack files: prod's, with values replaced at random key paths (wrong types, booleans, huge and
negative numbers, odd text, nested junk), keys deleted, and text-level damage (a repeated block,
a tag, a date, an anchor, a tab, a stray character). Each goes through the preview's command
line (``tools.preview.main``, policy pack off: its verdicts are the pack's own tests'): the exit
code is 0 or 2, never a traceback or 3, and on 2 nothing is written; a stack file the preview
accepts renders manifests every mandatory resource policy of the pack judges without a crash (the
engine, card and capacity rules are the pack's alone; ``tests/stackfile/test_loader_accepts_renders.py``
holds the rendering over generated stack files).

The text-level damage includes the figures a user may write beyond what they measure (a measured
KV pool no card holds, an impossible date, a rope factor of 1e300), a YAML integer of 4,400 digits,
server-side apply off through a secret and an env value over execve's limit. Secrets: a ``secure:``
value planted at a random key path, or a token under ``secret_env`` in any wrong form, is in no output.

Manifests: prod's rendering, damaged the same way, read as a ``--manifests`` directory: either
refused as bad input (:class:`tools.offline.manifests.InputError`, exit 2) or judged by every policy of
the pack without an exception (a policy crash is a bug, not a verdict).
"""

from __future__ import annotations

import copy
import io
import os
import tempfile
from pathlib import Path

import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pulumi_policy import EnforcementLevel, ResourceValidationPolicy

from policylib.pack import policies
from stackfile import load_stack_config
from stackfile.build import render_manifests
from tests.paths import PROD_STACK_FILE, ROOT
from tests.policy_harness import DEFAULT_STACK_FILE, run_policy, use_stack_config
from tools import preview
from tools.offline.manifests import InputError, load_stack_file, read_manifests, resources_from_documents

PROD_TEXT = PROD_STACK_FILE.read_text()
PROD = yaml.safe_load(PROD_TEXT)
PROD_MANIFESTS = render_manifests(load_stack_config(PROD["config"]))
MANDATORY = [p for p in policies()
             if isinstance(p, ResourceValidationPolicy) and p.enforcement_level == EnforcementLevel.MANDATORY]
#: ``FUZZ_EXAMPLES=500`` (and ``FUZZ_RANDOM=1``) for a longer hunt than the suite's 40 derandomized examples.
FUZZ = settings(max_examples=int(os.environ.get("FUZZ_EXAMPLES", "40")), deadline=None,
                derandomize=not os.environ.get("FUZZ_RANDOM"),
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

JUNK = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=True),
              st.sampled_from(["", " ", "worker-1", "Worker_1", "12Gi", "-1", "0x10", "true", "~", "a,b", "é", "\x00",
                               "{", "[1, 2]", "secure", "v1:abc", "x" * 300])),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(
        ["a", "name", "cards", "secure", "server", "kind", "metadata", "image", "env"]), inner, max_size=3)),
    max_leaves=6,
)


def paths(value, prefix=()):
    """Every key path of a parsed document (maps and lists)."""
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from paths(v, prefix + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from paths(v, prefix + (i,))


def damaged(data, draw) -> object:
    """``data`` with one to three values replaced or keys deleted at random key paths."""
    data = copy.deepcopy(data)
    for _ in range(draw(st.integers(1, 3))):
        targets = [p for p in paths(data) if p]
        if not targets:
            break
        path = draw(st.sampled_from(targets))
        parent = data
        for part in path[:-1]:
            parent = parent[part]
        if isinstance(parent, dict) and draw(st.booleans()):
            del parent[path[-1]]
        else:
            parent[path[-1]] = draw(JUNK)
    return data


TEXT_DAMAGE = [
    lambda t: t.replace("  llm-serving:services:", "    candle-vllm:\n      server: pytorch\n      image: x:1\n"
                        "      node: worker-1\n      cards: 1\n      cold_start_seconds: 9\n\n  llm-serving:services:"),
    lambda t: t.replace("cold_start_seconds: 180", "cold_start_seconds: 2024-01-01"),
    lambda t: t.replace("cards: 2", "cards: !!binary aGk="),
    lambda t: t.replace("kv_fraction: 0.85", "kv_fraction: &k 0.85\n      max_num_seqs: *k"),
    lambda t: t.replace("      dtype: f16\n", "\tdtype: f16\n", 1),
    lambda t: t.replace("node: worker-1", "node: worker-1: x", 1),
    lambda t: t + "\n---\nconfig: {}\n",
    lambda t: t.replace("config:", "config: !!set", 1),
    # Figures beyond what they measure, values the kernel refuses (the kinds of tests/tools/test_hostile_input.py).
    lambda t: t.replace("kv_tokens: 137000", "kv_tokens: 1000000000000").replace("max_model_len: 65536", "max_model_len: 655360"),
    lambda t: t.replace("kv_gib: 11.362", "kv_gib: 900"),
    lambda t: t.replace('source: "seed 002', 'date: "2026-13-45"\n        source: "seed 002'),
    lambda t: t.replace("hbm_bandwidth_gb_s: 900", "hbm_bandwidth_gb_s: 900\n          cuda_total_mib: 9000000"),
    lambda t: t.replace("factor: 2.0,", "factor: 1.0e300,"),
    lambda t: t.replace("cards: 2", "cards: " + "7" * 4400, 1),
    lambda t: t.replace("  llm-serving:namespace: llm-serving", "  llm-serving:namespace: llm-serving\n"
                        "  kubernetes:enableServerSideApply: {secure: v1:AAAAfuzz}"),
    lambda t: t.replace('limits: {cpu: "8", memory: 36Gi}', 'limits: {cpu: "8", memory: 36Gi}\n      env: {BIG: "'
                        + "x" * 140_000 + '"}', 1),
]


@st.composite
def stack_files(draw) -> str:
    if draw(st.booleans()):
        return draw(st.sampled_from(TEXT_DAMAGE))(PROD_TEXT)
    data = damaged(PROD, draw)
    try:
        return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    except yaml.YAMLError:
        return PROD_TEXT


@FUZZ
@given(text=stack_files())
def test_a_damaged_stack_file_is_exit_0_or_2_never_a_traceback(text):
    with tempfile.TemporaryDirectory() as tmp:
        stack = Path(tmp) / "Pulumi.fuzz.yaml"
        stack.write_text(text)
        out_dir = Path(tmp) / "out"
        out, err = io.StringIO(), io.StringIO()
        code = preview.main(["--stack-file", str(stack), "--out", str(out_dir), "--no-policy"], stdout=out, stderr=err)
        shown = out.getvalue() + err.getvalue()
        assert code in (0, 2), shown
        assert "Traceback" not in shown
        if code == 2:
            assert not out_dir.exists()
            return
        config = load_stack_config(load_stack_file(stack))
        use_stack_config(load_stack_file(DEFAULT_STACK_FILE) | {k: v for k, v in load_stack_file(stack).items()
                                                                 if k in ("llm-serving:cluster", "llm-serving:models")})
        resources = resources_from_documents(render_manifests(config), stack="fuzz")
        for policy in MANDATORY:  # judged without a crash; a finding is the pack's verdict, judged once there
            run_policy(policy, resources)


@st.composite
def manifest_sets(draw) -> list:
    docs = [damaged(m, draw) if draw(st.booleans()) else m for m in PROD_MANIFESTS]
    if draw(st.booleans()):
        docs.append(draw(JUNK))
    return docs


@FUZZ
@given(docs=manifest_sets(), as_json=st.booleans())
def test_damaged_manifests_are_bad_input_or_judged_without_a_crash(docs, as_json):
    import json

    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        for i, doc in enumerate(docs):
            if as_json:
                (d / f"m{i}.json").write_text(json.dumps(doc, default=str))
            else:
                (d / f"m{i}.yaml").write_text(yaml.safe_dump(doc, allow_unicode=True))
        try:
            found = read_manifests(d, "fuzz", "llm-serving")
        except InputError as err:
            assert str(d) in str(err) or str(d.resolve()) in str(err), err  # names the file  # noqa: PT017
            return
        use_stack_config(load_stack_file(DEFAULT_STACK_FILE))
        for policy in policies():
            run_policy(policy, found.resources)  # raises on a policy crash


@settings(max_examples=5, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(text=stack_files())
@example(text=PROD_TEXT)  # exit 0
@example(text=(ROOT / "tests" / "stacks" / "after-001.yaml").read_text())  # exit 1: 6 of 4 cards
def test_with_the_policy_pack_the_exit_code_is_0_1_or_2(text):
    """A few damaged stack files through the whole preview, the pack included (a pack process
    each: about 1.5 s), so exit 1 is among the outcomes."""
    with tempfile.TemporaryDirectory() as tmp:
        stack = Path(tmp) / "Pulumi.fuzz.yaml"
        stack.write_text(text)
        out, err = io.StringIO(), io.StringIO()
        code = preview.main(["--stack-file", str(stack), "--out", str(Path(tmp) / "out")], stdout=out, stderr=err)
        shown = out.getvalue() + err.getvalue()
        assert code in (0, 1, 2) and "Traceback" not in shown, shown
        # A policy that raised is reported as an analyzer failure: not a verdict (review finding).
        assert "Exception calling application" not in shown and "(UNKNOWN)" not in shown, shown
        assert (code == 2) is not (Path(tmp) / "out").exists()


#: Planted where a secret may be written by mistake: neither may appear in any output.
TOKEN = "hf_FUZZplantedToken42"
CIPHER = "v1:AAAAFUZZplantedCiphertext"
SECRET_FORMS = [f"{{secure: {CIPHER}}}", f"!!binary {TOKEN}", f"!vault {TOKEN}", f"[{TOKEN}]", f"{{secure: {CIPHER}, x: 1}}",
                f"{{valeu: {TOKEN}}}", TOKEN]


@FUZZ
@given(data=st.data())
def test_a_secret_written_anywhere_is_never_printed(data):
    """A ``secure:`` value planted at a random key path of prod's stack file, or a token under a
    ``secret_env`` in any wrong form: whatever the preview answers, the ciphertext is in no output,
    nor the token under ``secret_env``, and no traceback."""
    text = PROD_TEXT
    form = data.draw(st.sampled_from(SECRET_FORMS))
    under_secret_env = data.draw(st.booleans())
    if under_secret_env:
        at = data.draw(st.sampled_from(['limits: {cpu: "8", memory: 36Gi}', "cold_start_seconds: 180", "node: worker-1"]))
        text = text.replace(at, at + f"\n      secret_env: {{HF_TOKEN: {form}}}", 1)
    else:
        lines = PROD_TEXT.splitlines()
        candidates = [i for i, ln in enumerate(lines) if ": " in ln and not ln.lstrip().startswith(("#", "-"))]
        i = data.draw(st.sampled_from(candidates))
        key = lines[i].split(": ", 1)[0]
        lines[i] = f"{key}: {form}"
        text = "\n".join(lines) + "\n"
    with tempfile.TemporaryDirectory() as tmp:
        stack = Path(tmp) / "Pulumi.fuzz.yaml"
        stack.write_text(text)
        out, err = io.StringIO(), io.StringIO()
        code = preview.main(["--stack-file", str(stack), "--out", str(Path(tmp) / "out"), "--no-policy"],
                            stdout=out, stderr=err)
        shown = out.getvalue() + err.getvalue()
        rendered = "".join(p.read_text() for p in (Path(tmp) / "out").rglob("*.yaml"))
    assert code in (0, 2) and "Traceback" not in shown, shown[-2000:]
    assert CIPHER not in shown + rendered, (form, shown[-2000:])  # a secure: value, anywhere
    if under_secret_env:  # under a key that holds secrets, every form (a plain key's value is plain text)
        assert TOKEN not in shown + rendered, (form, shown[-2000:])
