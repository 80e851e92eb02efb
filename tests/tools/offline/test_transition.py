"""Updates on a full node, offline: the peak cards per node during an update,
the plan refused when the peak does not fit, and the components' safe defaults.

Renaming ``clef-candle`` to ``clef-flash`` on prod (worker-1 at 4 of 4): without ``former_names``
the engine creates the new Deployment and deletes the old one at the end of the update, so at the
peak worker-1 holds 5 cards' worth of pods; with ``former_names: [clef-candle]`` the object is
replaced under an alias, delete-first, and the peak stays 4 of 4. What the real provider does is
``tests/real/test_real_transitions.py``.
"""

from __future__ import annotations

import copy
import io
from pathlib import Path

import pytest

from stackfile import ConfigError, load_stack_config
from tests.paths import PROD_STACK_FILE
from tools import analyze, preview
from tools.offline.manifests import load_stack_file

PROD = load_stack_file(PROD_STACK_FILE)


def renamed(former: bool) -> dict:
    """Prod with clef-candle renamed clef-flash (and its Service pointed at the new name)."""
    cfg = copy.deepcopy(PROD)
    workloads = {}
    for name, wl in cfg["llm-serving:workloads"].items():
        if name == "clef-candle":
            name, wl = "clef-flash", {**wl, **({"former_names": ["clef-candle"]} if former else {})}
        workloads[name] = wl
    cfg["llm-serving:workloads"] = workloads
    cfg["llm-serving:services"]["clef-serve"]["selects"] = "clef-flash"
    return cfg


def write_stack(tmp_path: Path, name: str, config: dict) -> Path:
    import yaml

    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"config": config}, sort_keys=False))
    return path


def run_preview(*argv: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    code = preview.main([*argv, "--no-policy"], stdout=out, stderr=err)
    return code, out.getvalue() + err.getvalue()


def test_a_plain_rename_on_a_full_node_is_refused_with_the_peak(prod_base, tmp_path):
    stack = write_stack(tmp_path, "rename-plain", renamed(former=False))
    code, text = run_preview("--stack-file", str(stack), "--base", str(prod_base), "--out", str(tmp_path / "out"))
    assert code == 1, text
    # The end state fits (4 of 4); the peak does not: the old pod keeps its card until the end.
    assert "worker-1  4 / 4" in text  # the summary's card table (end state)
    peak = text[text.index("cards per node during the update"):]
    assert "worker-1  5 / 4  OVER by 1" in peak
    assert "clef-candle (old, deleted at the end of the update) 1" in peak and "clef-flash 1" in peak
    assert ("REFUSED: node worker-1: the update needs 5 of 4 cards at its peak (its end state needs 4): "
            "the old objects (clef-candle) hold their cards") in text
    assert "Fix: if clef-flash replaces clef-candle, set former_names: [clef-candle] under llm-serving:workloads.clef-flash" in text


def test_a_rename_with_former_names_is_replaced_delete_first_and_fits(prod_base, tmp_path):
    stack = write_stack(tmp_path, "rename-alias", renamed(former=True))
    code, text = run_preview("--stack-file", str(stack), "--base", str(prod_base), "--out", str(tmp_path / "out"))
    assert code == 0, text
    # Paired with its former self: one replacement, not an add and a remove.
    assert "+- apps/v1 Deployment llm-serving/clef-flash (REPLACE)" in text
    assert "(remove)" not in text
    peak = text[text.index("cards per node during the update"):]
    assert "worker-1  4 / 4" in peak and "(old, deleted" not in peak
    assert "REFUSED" not in text


def test_the_program_replaces_gpu_workloads_delete_first_when_the_node_has_no_room():
    resources = analyze.program_resources(renamed(former=True), "prod")
    dbr = {r.props["metadata"]["name"]: r.delete_before_replace for r in resources
           if r.type in ("kubernetes:apps/v1:Deployment", "kubernetes:serving.kserve.io/v1beta1:InferenceService")}
    # worker-1 is at 4 of 4: no running GPU workload has room for a second copy; parked clef-serve has no pod.
    assert dbr == {"candle-vllm": True, "clef-flash": True, "reasoning": True, "clef-serve": None}


def test_with_free_cards_a_replacement_keeps_serving_create_first():
    cfg = copy.deepcopy(PROD)
    cfg["llm-serving:workloads"]["candle-vllm"]["parked"] = {"reason": "cards lent to a benchmark"}
    cfg["llm-serving:services"]["coder-predictor"]["parked"] = {"reason": "candle-vllm is parked"}
    config = load_stack_config(cfg)
    # 2 cards free on worker-1: a second 1-card pod fits, so the provider's create-first order is kept.
    assert config.replace_delete_first("clef-candle") is False
    assert config.replace_delete_first("reasoning") is False
    assert config.replace_delete_first("candle-vllm") is False  # parked
    assert load_stack_config(PROD).replace_delete_first("clef-candle") is True


def test_former_names_may_not_name_a_current_workload():
    cfg = renamed(former=True)
    cfg["llm-serving:workloads"]["clef-flash"]["former_names"] = ["reasoning"]
    with pytest.raises(ConfigError) as err:
        load_stack_config(cfg)
    [problem] = err.value.problems
    assert problem.path == "llm-serving:workloads.clef-flash.former_names[0]"
    assert problem.value == "reasoning"
    assert "current workload" in problem.rule


def test_replacing_a_protected_service_is_refused_with_the_reason(prod_base, tmp_path):
    cfg = copy.deepcopy(PROD)
    cfg["llm-serving:namespace"] = "llm-serving-2"  # every object moves: a replacement
    stack = write_stack(tmp_path, "moved", cfg)
    code, text = run_preview("--stack-file", str(stack), "--base", str(prod_base), "--out", str(tmp_path / "out"))
    assert code == 1, text
    refused = [line for line in text.splitlines() if line.startswith("REFUSED: v1 Service")]
    assert len(refused) == 3, text  # coder-predictor, clef-serve, reasoning-long-predictor
    line = next(r for r in refused if "llm-serving-2/coder-predictor" in r)
    assert "metadata.namespace changes: the provider deletes Service llm-serving/coder-predictor" in line
    assert "pulumi up refuses to replace a protected resource" in line
    # The fix in stack-file terms: the object came from the stack file.
    urn = "urn:pulumi:moved::llm-serving::llm-serving:index:StablePredictorService$kubernetes:core/v1:Service::coder-predictor"
    assert ("Fix: keep the Service's key llm-serving:services.coder-predictor and change its selects: instead; or unprotect "
            f"it deliberately first: `pulumi state unprotect --stack moved --yes '{urn}'`.") in line


def _prod_tree() -> dict[str, dict]:
    from stackfile.build import render_manifests
    from tools.offline import render

    return {render.render_path(m): m for m in render_manifests(load_stack_config(PROD))}


def test_a_replacement_under_the_same_name_is_delete_first_by_the_provider():
    """The provider deletes first when the name and namespace stay (provider.go Diff): a selector
    change of clef-candle replaces it without a second copy, whatever the resource options."""
    from tools.offline import transition, treediff

    old = _prod_tree()
    new = copy.deepcopy(old)
    path = "1-manifest/apps_v1-deployment-llm-serving-clef-candle.yaml"
    new[path]["spec"]["selector"]["matchLabels"]["tier"] = "gpu"
    diff = treediff.diff_trees(old, new)
    assert [(o.action, o.new_path) for o in diff.objects] == [("replace", path)]
    inventory = load_stack_config(PROD).cluster
    pk = transition.peak(old, new, diff, inventory, delete_first=set())
    assert pk.old == {} and [r.used for r in pk.rows] == [4]
    assert transition.refusals(old, new, diff, pk, protected=set()) == []


def test_a_removed_workload_holds_its_cards_until_the_end():
    """Adding clef-flash while removing clef-candle in one update (no former_names): 5 of 4 at the peak."""
    from tools.offline import render, transition, treediff

    old = _prod_tree()
    new = copy.deepcopy(old)
    moved = new.pop("1-manifest/apps_v1-deployment-llm-serving-clef-candle.yaml")
    moved["metadata"]["name"] = "clef-flash"
    new[render.render_path(moved)] = moved
    diff = treediff.diff_trees(old, new)
    pk = transition.peak(old, new, diff, load_stack_config(PROD).cluster, delete_first=set())
    assert list(pk.old) == ["1-manifest/apps_v1-deployment-llm-serving-clef-candle.yaml"]
    [row] = pk.rows
    assert (row.used, row.capacity) == (5, 4)
