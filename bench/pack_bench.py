"""Policy pack evaluation time at 1,000 .. 10,000 resources (a benchmark, not a test).

    python -m bench.pack_bench [--sizes 1000,5000,10000] [--runs 3] [--workers 1,2] [--pack-dir policies]
    python3 dev.py bench pack          (bench/__main__.py dispatches by name)

For each size it generates a realistic stack (:func:`generate`: candle-vllm Deployments and
vLLM InferenceServices, one Service per workload with a declared client, one NetworkPolicy,
100 8-card V100 nodes filled with model servers, CPU-only routers beyond the cards) and reports, as medians of ``--runs``:

(a) the whole analyzer run over gRPC (``tools.analyze.run_pack``: the pack process started,
    Handshake .. AnalyzeStack, stopped), with its phases from one run: start (process start
    to GetAnalyzerInfo), configure (+ building the request Structs), analyze (one pipelined
    Analyze per resource), analyze_stack; with ``--workers 1,2`` also the same run over 2 pack
    processes (``start_pack(workers=2)``: AnalyzeStack in the second beside the Analyze calls in
    the first; same report, another core);
(b) the policies' own evaluation in-process (``tests.policy_harness.run_policy`` over every
    policy of ``policylib.pack.policies()``), with the five slowest policies. run_policy
    copies and proxies the properties for every policy, as pulumi-policy's servicer does;
(c) the policy logic alone: the same validate calls on arguments built once per resource
    (one copy + proxy shared by all policies), so (b) - (c) is the per-policy property cost.

Targets (docs/benchmarks.md): 10,000 resources in at most 10 s, and doubling the resources at most
doubles the time. The "x per 2x" column is t(n) / t(previous n) scaled to a doubling
(t ratio ** (1 / log2(n ratio))); at most 2.0 meets the scaling target.
"""

from __future__ import annotations

import argparse
import copy
import math
import os
import resource
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

from tools.analyze import PACK_DIR, start_pack  # noqa: E402
from tools.offline.manifests import Resource, load_stack_file, resources_from_documents  # noqa: E402

NS = "llm-serving"
CARDS_PER_NODE = 8
#: The inventory's size: 100 nodes x 8 cards, as bench/genstack.py's large stack. Its JSON is
#: about 20 KB; PULUMI_CONFIG must stay under Linux's 128 KiB limit for one environment
#: variable (MAX_ARG_STRLEN), for the CLI as for this runner.
NODES = 100
PART_OF = {"app.kubernetes.io/part-of": NS}
ANN = "llm-serving.riotpiao.com/"


def _probe(failure_threshold: int, period: int = 15) -> dict[str, Any]:
    return {"httpGet": {"path": "/health", "port": 8080}, "periodSeconds": period, "failureThreshold": failure_threshold}


def _resources(cards: int, mem_request: str, mem_limit: str) -> dict[str, Any]:
    return {"requests": {"cpu": "4", "memory": mem_request, "nvidia.com/gpu": str(cards)},
            "limits": {"cpu": "8", "memory": mem_limit, "nvidia.com/gpu": str(cards)}}


def _volumes(cards: int) -> tuple[list[dict], list[dict]]:
    volumes = [{"name": "models", "persistentVolumeClaim": {"claimName": "llm-models"}}]
    mounts = [{"name": "models", "mountPath": "/mnt/models", "readOnly": True}]
    if cards > 1:
        volumes.append({"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "8Gi"}})
        mounts.append({"name": "shm", "mountPath": "/dev/shm"})
    return volumes, mounts


def candle_deployment(i: int, node: str | None) -> dict[str, Any]:
    """A candle-vllm Deployment like coder-14b-fp16.yaml (2 cards) or clef-candle.yaml (1)."""
    coder = i % 2 == 0
    cards = 2 if coder else 1
    name = f"candle-{i:05d}"
    volumes, mounts = _volumes(cards)
    weights = "/mnt/models/coder-14b-fp16" if coder else "/mnt/models/clef-flash"
    spec: dict[str, Any] = {
        "runtimeClassName": "nvidia",
        "containers": [{
            "name": "candle",
            "image": "forgejo.riotpiao.com/riotpiao-poimen/candle-vllm:sm70",
            "imagePullPolicy": "Always",
            "command": ["/usr/local/bin/candle-vllm"],
            "args": ["--w", weights, "--d", ",".join(str(d) for d in range(cards)), "--dtype", "f16",
                     "--p", "8080", "--max-num-seqs", "32" if coder else "4",
                     "--kv-fraction", "0.85" if coder else "0.30"],
            "ports": [{"containerPort": 8080}],
            "startupProbe": _probe(40),
            "livenessProbe": {"httpGet": {"path": "/health", "port": 8080}, "periodSeconds": 30},
            "resources": _resources(cards, "12Gi", "36Gi" if coder else "32Gi"),
            "volumeMounts": mounts,
        }],
        "volumes": volumes,
    }
    if node:
        spec["nodeSelector"] = {"kubernetes.io/hostname": node}
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": NS, "labels": {**PART_OF, "app": name},
                     "annotations": {ANN + "cold-start-seconds": "300"}},
        "spec": {"replicas": 1, "strategy": {"type": "Recreate"}, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {**PART_OF, "app": name}}, "spec": spec}},
    }


def vllm_isvc(i: int, node: str | None) -> dict[str, Any]:
    """A KServe InferenceService running vLLM on one card, like seed 002's reasoning."""
    name = f"vllm-{i:05d}"
    volumes, mounts = _volumes(1)
    predictor: dict[str, Any] = {
        "minReplicas": 1, "maxReplicas": 1, "deploymentStrategy": {"type": "Recreate"},
        "runtimeClassName": "nvidia",
        "containers": [{
            "name": "kserve-container",
            "image": "vllm/vllm-openai:v0.11.0@sha256:014a95f21c9edf6abe0aea6b07353f96baa4ec291c427bb1176dc7c93a85845c",
            "args": ["--model=Qwen/Qwen3-30B-A3B-GPTQ-Int4", "--served-model-name", name,
                     "--quantization=gptq", "--dtype=float16", "--kv-cache-dtype=auto", "--max-model-len=65536",
                     "--gpu-memory-utilization=0.90", "--max-num-seqs=8", "--host=0.0.0.0", "--port=8080"],
            "env": [{"name": "VLLM_USE_FLASHINFER_SAMPLER", "value": "0"},
                    {"name": "VLLM_ATTENTION_BACKEND", "value": "TRITON_ATTN"},
                    {"name": "HF_HOME", "value": "/mnt/models"}],
            "ports": [{"containerPort": 8080, "protocol": "TCP"}],
            "readinessProbe": {"httpGet": {"path": "/health", "port": 8080}, "periodSeconds": 10},
            "livenessProbe": {"httpGet": {"path": "/health", "port": 8080}, "periodSeconds": 30},
            "startupProbe": _probe(60),
            "resources": _resources(1, "12Gi", "32Gi"),
            "volumeMounts": mounts,
        }],
        "volumes": volumes,
    }
    if node:
        predictor["nodeSelector"] = {"kubernetes.io/hostname": node}
    return {
        "apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
        "metadata": {"name": name, "namespace": NS, "labels": {**PART_OF, "app.kubernetes.io/name": f"llm-{name}"},
                     "annotations": {"serving.kserve.io/deploymentMode": "RawDeployment",
                                     ANN + "cold-start-seconds": "600"}},
        "spec": {"predictor": predictor},
    }


def service(name: str, selector: dict[str, str]) -> dict[str, Any]:
    """A stable predictor Service (ports 80 and 8080 -> 8080) with one declared client."""
    return {
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": f"{name}-predictor", "namespace": NS, "labels": PART_OF,
                     "annotations": {ANN + "clients": '[{"name": "poimen-memory", "namespace": "poimen", "port": 8080}]'}},
        "spec": {"type": "ClusterIP", "selector": selector,
                 "ports": [{"name": "http", "protocol": "TCP", "port": 80, "targetPort": 8080},
                           {"name": "http-8080", "protocol": "TCP", "port": 8080, "targetPort": 8080}]},
    }


def network_policy() -> dict[str, Any]:
    return {
        "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
        "metadata": {"name": "llm-serving-ingress", "namespace": NS, "labels": PART_OF},
        "spec": {"podSelector": {"matchLabels": PART_OF}, "policyTypes": ["Ingress"], "ingress": [
            {"from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "gateway"}}}],
             "ports": [{"protocol": "TCP", "port": p} for p in (80, 8000, 8080)]},
            {"from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "poimen"}}}],
             "ports": [{"protocol": "TCP", "port": 8080}]},
            {"from": [{"podSelector": {}}]},
        ]},
    }


def cpu_deployment(i: int) -> dict[str, Any]:
    """A CPU-only Deployment (a request router in front of the model servers): no cards,
    RollingUpdate, image pinned by digest."""
    name = f"router-{i:05d}"
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": NS, "labels": {**PART_OF, "app": name}},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": name}},
                 "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
                 "template": {"metadata": {"labels": {**PART_OF, "app": name}}, "spec": {"containers": [{
                     "name": "router",
                     "image": "forgejo.riotpiao.com/riotpiao-poimen/router@sha256:" + "0" * 64,
                     "ports": [{"containerPort": 8080}],
                     "readinessProbe": {"httpGet": {"path": "/health", "port": 8080}, "periodSeconds": 10},
                     "resources": {"requests": {"cpu": "250m", "memory": "256Mi"},
                                   "limits": {"cpu": "1", "memory": "512Mi"}},
                 }]}}},
    }


def generate(n: int, nodes: int = NODES) -> tuple[list[Resource], dict[str, Any]]:
    """``n`` resources: workloads with one Service each, and one NetworkPolicy, on an inventory
    of ``nodes`` 8-card V100 nodes. Model servers fill the cards of all nodes but one (every
    10th a vLLM InferenceService on one card, the rest candle-vllm on 2 and 1 cards; even ones
    pinned to a node, odd ones not); the workloads beyond the cards are CPU-only routers."""
    workloads = (n - 1) // 2
    docs: list[dict[str, Any]] = []
    node_of, used = 0, 0
    for i in range(workloads):
        need = 1 if i % 10 == 9 else (2 if i % 2 == 0 else 1)
        if used + need > CARDS_PER_NODE:
            node_of, used = node_of + 1, 0
        if node_of >= nodes - 1:
            w = cpu_deployment(i)
            selector = {"app": w["metadata"]["name"]}
        else:
            used += need
            node = f"gpu-{node_of:04d}" if i % 2 == 0 else None
            if i % 10 == 9:
                w = vllm_isvc(i, node)
                selector = {"serving.kserve.io/inferenceservice": w["metadata"]["name"], "component": "predictor"}
            else:
                w = candle_deployment(i, node)
                selector = {"app": w["metadata"]["name"]}
        docs += [w, service(w["metadata"]["name"], selector)]
    docs.append(network_policy())
    while len(docs) < n:
        docs.append(service(f"spare-{len(docs)}", {"app": "candle-00000"}))
    config = copy.deepcopy(load_stack_file(ROOT / "policies" / "fixtures" / "Pulumi.fixture.yaml"))
    card = config["llm-serving:cluster"]["nodes"][0]["card"]
    config["llm-serving:cluster"] = {"nodes": [
        {"name": f"gpu-{k:04d}", "cards": CARDS_PER_NODE, "card": card, "allocatable_memory_mib": 1_000_000}
        for k in range(nodes)]}
    return resources_from_documents(docs, stack="bench"), config


def cpu_seconds() -> float:
    """User + system CPU seconds of this process and its waited-for children (the pack processes)."""
    me, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime


#: The CPU seconds (client and pack processes) of each run of the last :func:`median_of`.
LAST_CPU: list[float] = []


def median_of(runs: int, fn: Callable[[], Any]) -> tuple[float, float, float, Any]:
    """``(median, min, max)`` wall seconds of ``runs`` calls of ``fn``, and its last result; each
    run's CPU seconds in :data:`LAST_CPU` (on a shared machine the steadier figure)."""
    times, last = [], None
    LAST_CPU.clear()
    for _ in range(runs):
        t, c = time.perf_counter(), cpu_seconds()
        last = fn()
        times.append(time.perf_counter() - t)
        LAST_CPU.append(cpu_seconds() - c)
    return statistics.median(times), min(times), max(times), last


def grpc_run(resources: list[Resource], config: dict[str, Any], pack_dir: Path,
             workers: int = 1) -> tuple[Any, dict[str, float]]:
    with start_pack(config, stack="bench", pack_dir=pack_dir, workers=workers) as pack:
        report = pack.analyze(resources)
        return report, dict(pack.timings)


def in_process(resources: list[Resource], config: dict[str, Any]) -> dict[str, float]:
    from policylib.pack import policies
    from tests.policy_harness import run_policy, use_stack_config

    use_stack_config(config)
    per_policy = {}
    for policy in policies():
        t = time.perf_counter()
        run_policy(policy, resources)
        per_policy[policy.name] = time.perf_counter() - t
    return per_policy


def policy_logic(resources: list[Resource], config: dict[str, Any]) -> dict[str, float]:
    """(c): every policy's validate on arguments built once (see the module docstring)."""
    import json

    from pulumi_policy import ResourceValidationPolicy
    from pulumi_policy.policy import PolicyResource, ResourceValidationArgs, StackValidationArgs
    from pulumi_policy.proxy import unknown_checking_proxy

    from policylib.pack import policies
    from tests.policy_harness import _opts, use_stack_config

    use_stack_config(config)
    props = [unknown_checking_proxy(json.loads(json.dumps(r.props))) for r in resources]
    resource_args = [ResourceValidationArgs(r.type, p, r.urn, r.name, _opts(), None, None)
                     for r, p in zip(resources, props, strict=True)]
    stack_args = StackValidationArgs(
        [PolicyResource(r.type, p, r.urn, r.name, _opts(), None, None, [], {}) for r, p in zip(resources, props, strict=True)], None)
    per_policy = {}
    for policy in policies():
        t = time.perf_counter()
        if isinstance(policy, ResourceValidationPolicy):
            for args in resource_args:
                policy.validate(args, lambda message, urn=None: None)
        else:
            policy.validate(stack_args, lambda message, urn=None: None)
        per_policy[policy.name] = time.perf_counter() - t
    return per_policy


def _scaling(prev: tuple[int, float] | None, n: int, t: float) -> str:
    if prev is None or prev[1] <= 0 or n == prev[0]:
        return "-"
    return f"{(t / prev[1]) ** (1 / math.log2(n / prev[0])):.2f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.pack_bench", description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1000,5000,10000")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--pack-dir", type=Path, default=PACK_DIR)
    ap.add_argument("--workers", default="1", help="pack processes for (a), comma-separated, e.g. 1,2")
    ap.add_argument("--skip-grpc", action="store_true")
    ap.add_argument("--skip-in-process", action="store_true")
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"pack {args.pack_dir}; median of {args.runs} runs; times in seconds (cpu: user + system of the "
          f"client and the pack processes); load average {os.getloadavg()[0]:.2f}")
    print(f"{'resources':>9}  {'path':<11} {'median':>7} {'min':>7} {'max':>7} {'x per 2x':>8}  detail")
    workers = [int(w) for w in args.workers.split(",")]
    prev_g: dict[int, tuple[int, float]] = {}
    prev_i = prev_c = None
    for n in sizes:
        resources, config = generate(n)
        for w in [] if args.skip_grpc else workers:
            med, lo, hi, (report, phases) = median_of(args.runs, lambda resources=resources, config=config, w=w: grpc_run(resources, config, args.pack_dir, w))
            detail = " ".join(f"{k} {v:.2f}" for k, v in phases.items())
            c = report.counts()
            path = "(a) gRPC" if w == 1 else f"(a) gRPC x{w}"
            print(f"{n:>9}  {path:<11} {med:>7.2f} {lo:>7.2f} {hi:>7.2f} {_scaling(prev_g.get(w), n, med):>8}  "
                  f"cpu {statistics.median(LAST_CPU):.2f}; {detail}; {c['mandatory']} mandatory, {c['advisory']} advisory")
            prev_g[w] = (n, med)
        if not args.skip_in_process:
            med, lo, hi, per = median_of(args.runs, lambda resources=resources, config=config: in_process(resources, config))
            slow = sorted(per.items(), key=lambda kv: -kv[1])[:5]
            print(f"{n:>9}  {'(b) policies':<11} {med:>7.2f} {lo:>7.2f} {hi:>7.2f} {_scaling(prev_i, n, med):>8}  "
                  + ", ".join(f"{k} {v:.2f}" for k, v in slow))
            prev_i = (n, med)
            logic = [policy_logic(resources, config) for _ in range(args.runs)]
            totals = [sum(per.values()) for per in logic]
            med, lo, hi, per = statistics.median(totals), min(totals), max(totals), logic[-1]
            slow = sorted(per.items(), key=lambda kv: -kv[1])[:5]
            print(f"{n:>9}  {'(c) logic':<11} {med:>7.2f} {lo:>7.2f} {hi:>7.2f} {_scaling(prev_c, n, med):>8}  "
                  + ", ".join(f"{k} {v:.2f}" for k, v in slow))
            prev_c = (n, med)
        sys.stdout.flush()
    print(f"load average {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
