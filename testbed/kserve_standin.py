"""A stand-in for the KServe controller on the loopback test cluster: RawDeployment predictors.

Why: the KServe Go module is not served by the module proxy this project builds from, so the
test cluster has no KServe controller (``testbed/cluster/`` installs a CRD of our own for
``serving.kserve.io/v1beta1`` InferenceService). Without a controller an InferenceService
creates no pod, and then neither the scheduler's card count nor a Service's endpoints say
anything about it. This loop does the one part of KServe's RawDeployment reconciler that the
tests need: for each InferenceService it server-side-applies a Deployment
``<name>-predictor`` whose pod template is the ``spec.predictor`` pod spec, with the labels
KServe puts on predictor pods (the InferenceService's own labels and ``spec.predictor.labels``,
plus ``serving.kserve.io/inferenceservice: <name>``, ``component: predictor``,
``app: isvc.<name>-predictor``) and the annotations KServe copies (the InferenceService's own,
less :data:`core.k8s.manifests.transition_cost.KSERVE_NOT_COPIED`, and ``spec.predictor.annotations``): as
KServe's ``buildObjectMeta`` (kserve ``aaac4e2``,
``pkg/controller/v1beta1/inferenceservice/components/predictor.go``) and
``createRawDefaultDeployment`` (``reconcilers/deployment/deployment_reconciler.go``: the pod
template's metadata is that object meta), so a changed annotation or label of the
InferenceService rolls the predictor here as it does under KServe. ``replicas`` = ``minReplicas``
(default 1; 0 only with ``maxReplicas`` 0 too, as RawDeployment has no scale to zero: kserve
#3514), and ``deploymentStrategy`` as the rollout strategy. The Deployment is owned by the
InferenceService (ownerReferences), so the garbage collector removes it with its owner.

Status: KServe sets the InferenceService's ``Ready`` condition from its predictor; the stand-in
writes ``status.conditions`` ``[{type: Ready, status: "True"|"False"}]`` (and
``observedGeneration``) through the status subresource when it changes: True once the predictor
Deployment has observed its generation and every replica is updated and ready (0 of 0 for a
parked one, as KServe reports a predictor at zero replicas Ready), False before. That is what
``pulumi.com/waitFor: condition=Ready`` awaits (:func:`ready_status`).

Stopped InferenceServices: KServe (0.15 and later) reads the annotation
``serving.kserve.io/stop`` on an InferenceService; with the value ``"true"`` its reconciler
removes the predictor's workload (in RawDeployment mode the Deployment, with its Service and
autoscaler) and keeps the InferenceService itself, so a stopped model holds no card; with the
annotation removed or not ``"true"`` it creates them again. The stand-in does the part the tests
rely on: a stopped InferenceService gets no predictor Deployment, and the one it had is deleted
(:func:`is_stopped`); its status is left as it is. Assumed from KServe's documented behaviour, not checked against its code
here (the kserve module is not served): the value test (``"true"`` in any case, as Go's
``strings.EqualFold``), and that nothing else of the InferenceService changes. KServe also marks a stopped InferenceService in
its status (a ``Stopped`` condition, ``Ready`` false); the stand-in does not.

What it leaves untested (a real KServe does these): the predictor Service and
``<name>-predictor`` hostnames KServe creates, autoscaling between min and max replicas,
status conditions other than ``Ready`` and ``status.url``, storage initializers, and the KServe webhook's
defaulting and validation.

Usage: ``python -m testbed.kserve_standin --kubeconfig FILE [--interval SECONDS] [--once]
[--health-address 127.0.0.1:N] [--kubectl PATH]`` (``GET /healthz`` answers ok once the first pass ran);
``testbed.cluster`` runs it in the background with the rest of the cluster. Pure functions for
tests: :func:`predictor_deployment`, :func:`is_stopped`, :func:`ready_status`.
"""

from __future__ import annotations

import argparse
import http.server
import json
import subprocess
import sys
import threading
import time
from typing import Any

from core.k8s.manifests.pods import raw_deployment_min_replicas
from core.k8s.manifests.transition_cost import KSERVE_NOT_COPIED

#: Fields of ``spec.predictor`` that configure KServe itself, not the pod.
PREDICTOR_ONLY = {
    "minReplicas", "maxReplicas", "scaleTarget", "scaleMetric", "scaleMetricType", "autoScaling",
    "containerConcurrency", "timeout", "canaryTrafficPercent", "logger", "batcher", "labels",
    "annotations", "deploymentStrategy", "model", "workerSpec", "storageUri",
}
FIELD_MANAGER = "kserve-standin"
#: KServe's annotation that stops an InferenceService (``constants.StopAnnotationKey``, KServe 0.15+).
STOP_ANNOTATION = "serving.kserve.io/stop"
#: What ``applied`` records for a stopped InferenceService's predictor (deleted, not applied).
_STOPPED = "stopped"
#: The kubectl to run (``--kubectl``).
KUBECTL = "kubectl"


def predictor_deployment(isvc: dict[str, Any]) -> dict[str, Any]:
    """The Deployment KServe (RawDeployment mode) would create for ``isvc`` (a dict of the
    InferenceService object as the API server returns it)."""
    meta = isvc["metadata"]
    name = meta["name"]
    predictor = dict((isvc.get("spec") or {}).get("predictor") or {})
    pod_spec = {k: v for k, v in predictor.items() if k not in PREDICTOR_ONLY}
    labels = {
        **(meta.get("labels") or {}),
        **(predictor.get("labels") or {}),
        "serving.kserve.io/inferenceservice": name,
        "component": "predictor",
        "app": f"isvc.{name}-predictor",
    }
    annotations = {
        **{k: v for k, v in (meta.get("annotations") or {}).items() if k not in KSERVE_NOT_COPIED},
        **{k: v for k, v in (predictor.get("annotations") or {}).items() if k not in KSERVE_NOT_COPIED},
    }
    selector = {"app": f"isvc.{name}-predictor"}
    replicas = raw_deployment_min_replicas(predictor)
    deployment: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": f"{name}-predictor",
            "namespace": meta.get("namespace", "default"),
            "labels": labels,
            "annotations": annotations,
            "ownerReferences": [{
                "apiVersion": isvc.get("apiVersion", "serving.kserve.io/v1beta1"),
                "kind": "InferenceService", "name": name, "uid": meta["uid"],
                "controller": True, "blockOwnerDeletion": True,
            }],
        },
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": selector},
            "template": {
                "metadata": {"labels": labels, "annotations": annotations},
                "spec": pod_spec,
            },
        },
    }
    if predictor.get("deploymentStrategy"):
        deployment["spec"]["strategy"] = predictor["deploymentStrategy"]
    return deployment


def is_stopped(isvc: dict[str, Any]) -> bool:
    """True when ``isvc`` carries ``serving.kserve.io/stop: "true"``: KServe keeps no predictor
    for it (see the module docstring for what is assumed)."""
    value = ((isvc.get("metadata") or {}).get("annotations") or {}).get(STOP_ANNOTATION)
    return isinstance(value, str) and value.lower() == "true"


def ready_status(isvc: dict[str, Any], deployment: dict[str, Any] | None) -> dict[str, Any]:
    """The status the stand-in writes for ``isvc`` given its live predictor ``deployment`` (None when
    it does not exist yet): ``Ready`` True once the Deployment observed its generation and all its
    replicas are updated and ready (see the module docstring)."""
    ready = False
    if deployment is not None:
        spec, st = deployment.get("spec") or {}, deployment.get("status") or {}
        want = int(spec.get("replicas", 1))
        ready = (st.get("observedGeneration", 0) >= (deployment.get("metadata") or {}).get("generation", 0)
                 and int(st.get("updatedReplicas", 0) or 0) >= want and int(st.get("readyReplicas", 0) or 0) >= want
                 and int(st.get("replicas", 0) or 0) == want)
    return {"observedGeneration": (isvc.get("metadata") or {}).get("generation", 0),
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}


def _kubectl(kubeconfig: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([KUBECTL, "--kubeconfig", kubeconfig, *args], input=stdin, capture_output=True, text=True)


def reconcile_once(kubeconfig: str, applied: dict[str, str]) -> int:
    """Apply the predictor Deployment of every InferenceService whose desired state changed, and
    delete the one of a stopped InferenceService (:func:`is_stopped`). Returns the number applied
    or deleted. ``applied`` remembers what was done (key -> JSON, or ``"stopped"``)."""
    got = _kubectl(kubeconfig, "get", "inferenceservices.serving.kserve.io", "-A", "-o", "json")
    if got.returncode != 0:
        return 0
    n = 0
    for isvc in json.loads(got.stdout).get("items", []):
        dep = predictor_deployment(isvc)
        key = f"{dep['metadata']['namespace']}/{dep['metadata']['name']}"
        if is_stopped(isvc):
            if applied.get(key) != _STOPPED:
                n += _record(applied, key, _STOPPED, "delete", _kubectl(
                    kubeconfig, "delete", "deployment", dep["metadata"]["name"], "-n", dep["metadata"]["namespace"],
                    "--ignore-not-found", "--wait=false"))
            continue
        text = json.dumps(dep, sort_keys=True)
        if applied.get(key) != text:
            done = _record(applied, key, text, "apply", _kubectl(
                kubeconfig, "apply", "--server-side", "--force-conflicts", f"--field-manager={FIELD_MANAGER}", "-f", "-",
                stdin=text))
            n += done
            if not done:
                continue
        _write_status(kubeconfig, isvc, dep)
    return n


def _record(applied: dict[str, str], key: str, value: str, what: str, res: subprocess.CompletedProcess) -> int:
    """1 when the kubectl run ``res`` succeeded (``applied[key] = value``); else 0, its error printed."""
    if res.returncode == 0:
        applied[key] = value
        return 1
    print(f"kserve-standin: {what} {key} failed: {res.stderr.strip()}", file=sys.stderr, flush=True)
    return 0


def _write_status(kubeconfig: str, isvc: dict[str, Any], dep: dict[str, Any]) -> None:
    """Patch ``isvc``'s status with :func:`ready_status` of its live predictor, when it changed."""
    meta = dep["metadata"]
    got = _kubectl(kubeconfig, "get", "deployment", meta["name"], "-n", meta["namespace"], "-o", "json")
    live = json.loads(got.stdout) if got.returncode == 0 else None
    status = ready_status(isvc, live)
    current = isvc.get("status") or {}
    if current.get("conditions") == status["conditions"] and current.get("observedGeneration") == status["observedGeneration"]:
        return
    res = _kubectl(kubeconfig, "patch", "inferenceservices.serving.kserve.io", isvc["metadata"]["name"], "-n",
                   meta["namespace"], "--subresource=status", "--type=merge", f"--field-manager={FIELD_MANAGER}",
                   "-p", json.dumps({"status": status}))
    if res.returncode != 0:
        print(f"kserve-standin: status of {meta['namespace']}/{isvc['metadata']['name']} failed: {res.stderr.strip()}",
              file=sys.stderr, flush=True)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m testbed.kserve_standin", description=__doc__.split("\n\n")[0])
    ap.add_argument("--kubeconfig", required=True)
    ap.add_argument("--interval", type=float, default=1.0, help="seconds between passes (default 1)")
    ap.add_argument("--once", action="store_true", help="one pass, then exit")
    ap.add_argument("--health-address", default="", help="serve GET /healthz at HOST:PORT (loopback)")
    ap.add_argument("--kubectl", default="kubectl", help="the kubectl to run (default: from PATH)")
    args = ap.parse_args(argv)
    applied: dict[str, str] = {}
    passes = threading.Event()
    global KUBECTL
    KUBECTL = args.kubectl
    if args.health_address:
        host, port = args.health_address.rsplit(":", 1)
        _serve_health(host, int(port), passes)
    while True:
        reconcile_once(args.kubeconfig, applied)
        passes.set()
        if args.once:
            return 0
        time.sleep(args.interval)


def _serve_health(host: str, port: int, ready: threading.Event) -> None:
    class Health(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            ok = self.path == "/healthz" and ready.is_set()
            self.send_response(200 if ok else 503)
            self.end_headers()
            self.wfile.write(b"ok" if ok else b"not ready")

        def log_message(self, *args) -> None:
            pass

    server = http.server.ThreadingHTTPServer((host, port), Health)
    threading.Thread(target=server.serve_forever, daemon=True).start()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
