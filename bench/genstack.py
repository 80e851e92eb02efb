"""A generated large stack for the preview benchmark: 100 nodes x 8 cards, 1,000 workloads,
1,000 Services.

    python -m bench.genstack OUT.yaml [--nodes 100] [--cards 8] [--per-node 10]

Each node (``worker-001`` ..) gets ``per-node`` workloads in the prod stack's own forms
(Pulumi.prod.yaml), filling its 8 cards exactly:

* 1 candle-vllm Deployment of a Qwen2.5-Coder-14B fp16 fine-tune at TP=2 (2 cards; like
  candle-vllm),
* 3 candle-vllm Deployments of a clef-flash variant, one card each (hybrid GDN models run on
  one card; like clef-candle),
* 3 vLLM InferenceServices of Qwen3-30B-A3B-GPTQ-Int4, one card each (like reasoning),
* the rest parked (2 vLLM, 1 candle-vllm per node of 10), with a reason: they hold no card.

That is 2 + 3 + 3 = 8 cards a node, 7 running and 3 parked workloads a node: 700 running and
300 parked of 1,000, 800 of 800 cards. Every workload has one Service selecting it (parked
workloads' Services are declared parked), with one declared client from one of ten client
namespaces, which the NetworkPolicy admits on port 8080.

Every workload is pinned to its node: the stack config requires ``node`` (stackfile/,
``core.k8s.placement.Placement.node``), so an unpinned workload cannot be written in a stack file; unpinned pods
are covered by the policy pack's own benchmark (bench/pack_bench.py), which feeds manifests.

Each candle-vllm workload has its own model entry and weights path, because candle-vllm answers
with the basename of ``--w`` and one served model name must be answered by one server only
(policy served-model-name-unique); each vLLM workload has its own served model name. The coder
variants name the catalog entry; the clef-flash variants point at one ``config.json`` written
beside the stack file (absolute path), built from the prod stack's inline clef-flash facts:
inline facts repeated 400 times would put 165 KB of models into the config the policy pack
re-reads on every call.

Only the first node's workloads keep the prod workload's ``measured`` figures (a measurement
belongs to one server): the pack is handed every workload's ``measured`` (tools/preview.py
``pack_config``), and the prod figures copied into 1,000 workloads made ``PULUMI_CONFIG`` 456 KB,
over Linux's 128 KiB for one environment variable (MAX_ARG_STRLEN), so the pack could not start.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
PROD = ROOT / "Pulumi.prod.yaml"
CLIENT_NAMESPACES = 10
#: The node whose workloads keep the prod workloads' ``measured`` figures (module docstring).
FIRST_NODE = "worker-001"

#: The per-node plan: (kind, count, parked). Kinds are the prod workloads this copies.
PLAN = (("coder", 1, False), ("clef", 3, False), ("vllm", 3, False), ("vllm", 2, True), ("clef", 1, True))


def _prod_config(prod_file: Path = PROD) -> dict[str, Any]:
    return yaml.safe_load(Path(prod_file).read_text())["config"]


def _node(prod: dict[str, Any], name: str, cards: int) -> dict[str, Any]:
    node = copy.deepcopy(prod["llm-serving:cluster"]["nodes"][0])
    node.update(name=name, cards=cards, allocatable_memory_mib=1_031_000)
    return node


def clef_config_json(prod: dict[str, Any]) -> dict[str, Any]:
    """A Hugging Face config.json with the prod stack's clef-flash facts (hybrid: every 4th of
    32 layers full attention, 8 in all), so ``facts_from_config_json`` gives the same facts."""
    f = prod["llm-serving:models"]["clef-flash"]["facts"]
    every = f["num_hidden_layers"] // f["full_attention_layers"]
    return {
        "architectures": [f["architecture"]], "num_hidden_layers": f["num_hidden_layers"],
        "num_attention_heads": f["num_attention_heads"], "num_key_value_heads": f["num_key_value_heads"],
        "head_dim": f["head_dim"], "hidden_size": f["hidden_size"], "intermediate_size": f["intermediate_size"],
        "vocab_size": f["vocab_size"], "max_position_embeddings": f["max_position_embeddings"],
        "num_parameters": f["parameters"], "torch_dtype": f["torch_dtype"],
        "layer_types": ["full_attention" if i % every == every - 1 else "linear_attention" for i in range(f["num_hidden_layers"])],
    }


def _workload(prod: dict[str, Any], kind: str, name: str, node: str, models: dict[str, Any], parked: bool,
              clef_json: str) -> dict[str, Any]:
    wls = prod["llm-serving:workloads"]
    if kind == "vllm":
        wl = copy.deepcopy(wls["reasoning"])
        wl["served_model_names"] = [name]
        wl["labels"] = {"app.kubernetes.io/name": f"llm-{name}"}
    else:
        base = "candle-vllm" if kind == "coder" else "clef-candle"
        wl = copy.deepcopy(wls[base])
        if kind == "coder":
            entry = {"catalog": prod["llm-serving:models"]["coder-14b-fp16"]["catalog"]}
        else:
            entry = {"config_json": clef_json, "provisional": True}
        models[name] = {**entry, "weights_path": f"/mnt/models/{name}"}
        wl["model"] = name
    wl["node"] = node
    if node != FIRST_NODE:
        wl.pop("measured", None)
    if parked:
        wl["parked"] = {"reason": f"{name} is kept for a later experiment; {node} has no free card"}
    return wl


def generate(clef_json: Path, nodes: int = 100, cards: int = 8, per_node: int = 10, prod_file: Path = PROD) -> dict[str, Any]:
    """The ``config:`` map of the large stack, in the forms of the stack file ``prod_file``
    (default Pulumi.prod.yaml; the tests pass their frozen copy); the clef-flash variants' ``config_json`` is
    ``clef_json`` (an absolute path; :func:`write` writes the file). Raises ValueError when the
    plan does not fill ``cards`` cards with ``per_node`` workloads."""
    plan_cards = sum(count * (2 if kind == "coder" else 1) for kind, count, parked in PLAN if not parked)
    if plan_cards != cards or sum(count for _, count, _ in PLAN) != per_node:
        raise ValueError(f"the plan holds {plan_cards} cards with {sum(c for _, c, _ in PLAN)} workloads a node; "
                         f"asked for {cards} cards and {per_node} workloads")
    prod = _prod_config(prod_file)
    config = {k: copy.deepcopy(v) for k, v in prod.items() if k not in ("llm-serving:workloads", "llm-serving:services")}
    models = config["llm-serving:models"]
    config["llm-serving:cluster"] = {"nodes": [_node(prod, f"worker-{n + 1:03d}", cards) for n in range(nodes)]}
    workloads: dict[str, Any] = {}
    services: dict[str, Any] = {}
    for n in range(nodes):
        node = f"worker-{n + 1:03d}"
        i = 0
        for kind, count, parked in PLAN:
            for _ in range(count):
                name = f"{kind}-{n + 1:03d}-{i}"
                i += 1
                workloads[name] = _workload(prod, kind, name, node, models, parked, str(clef_json))
                svc: dict[str, Any] = {
                    "selects": name,
                    "clients": [{"name": f"app-{len(services) % 97}", "namespace": f"apps-{len(services) % CLIENT_NAMESPACES}", "port": 8080}],
                }
                if parked:
                    svc["parked"] = {"reason": f"selects {name}, which is parked"}
                services[f"{name}-predictor"] = svc
    config["llm-serving:workloads"] = workloads
    config["llm-serving:services"] = services
    netpol = config["llm-serving:network_policy"]
    netpol["clients"] = netpol.get("clients", []) + [{"namespace": f"apps-{k}", "ports": [8080]} for k in range(CLIENT_NAMESPACES)]
    return config


def write(path: Path, prod_file: Path = PROD, **kwargs: Any) -> Path:
    """Write the large stack (in the forms of the stack file ``prod_file``, default Pulumi.prod.yaml)
    as a stack file (``config:`` map) to ``path``, and the clef-flash ``config.json`` beside it;
    returns ``path``."""
    path = Path(path).absolute()
    clef_json = path.parent / "clef-flash-config.json"
    clef_json.write_text(json.dumps(clef_config_json(_prod_config(prod_file)), indent=1))
    config = generate(clef_json, prod_file=prod_file, **kwargs)
    path.write_text(yaml.dump({"config": config}, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), sort_keys=False))
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.genstack", description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path, help="the stack file to write, e.g. /tmp/Pulumi.large.yaml")
    ap.add_argument("--nodes", type=int, default=100)
    ap.add_argument("--cards", type=int, default=8)
    ap.add_argument("--per-node", type=int, default=10)
    args = ap.parse_args(argv)
    write(args.out, nodes=args.nodes, cards=args.cards, per_node=args.per_node)
    print(f"wrote {args.out}: {args.nodes} nodes x {args.cards} cards, {args.nodes * args.per_node} workloads and Services")
    return 0


if __name__ == "__main__":
    sys.exit(main())
