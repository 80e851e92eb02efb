"""After ``pulumi up``: wait until every Deployment of the stack has rolled out, each within its own
await bound (docs/known-gaps.md: the provider's Deployment await can end a Recreate rollout early).

The kubernetes provider's await starts once ``status.observedGeneration`` reaches the new
generation, but a Recreate rollout (every GPU workload's strategy) scales the old ReplicaSet down
before it creates the new one, so the await can take the old ReplicaSet for the rollout's and
report success before the new pod is Ready (``provider/pkg/await/deployment.go`` at the pinned
commit; seen once on the loopback cluster). ``kubectl rollout status`` waits for the Deployment
controller's own verdict (updated, available and no old replicas). This runs it on each
Deployment labelled ``app.kubernetes.io/part-of: llm-serving`` in the namespace (KServe's predictor
Deployments carry the InferenceService's labels), bounded by the Deployment's
``pulumi.com/timeoutSeconds`` (ceil(1.5 x declared cold start) + 60 s, ``core.rulebook``), or 600 s
(the provider's default) where it has none.

    python3 dev.py rollout [--namespace llm-serving] [--kubeconfig FILE]

Exit codes: 0 every rollout finished; 1 one did not (its name and kubectl's message); 2 kubectl
missing or the cluster unreachable.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import TextIO

from core.base import facts
from stackfile.schema import StackConfig
from tools import cli, kubectl

EXIT_OK, EXIT_NOT_ROLLED_OUT, EXIT_INPUT = cli.OK, cli.VERDICT, cli.BAD_INPUT
#: The provider's await when a Deployment sets no ``pulumi.com/timeoutSeconds`` (10 minutes).
DEFAULT_TIMEOUT_S = 600
SELECTOR = f"{facts.PART_OF_LABEL}={facts.PART_OF_VALUE}"


def deployments(namespace: str, kubeconfig: Path | None) -> dict[str, int]:
    """Name -> await bound in seconds of each Deployment of the stack in ``namespace``."""
    proc = kubectl.run(kubeconfig, "get", "deployments", "-n", namespace, "-l", SELECTOR, "-o", "json")
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr.strip() or "kubectl get deployments failed")
    out = {}
    for d in kubectl.json_object(proc, "get deployments", list_of_items=True)["items"]:
        out[str(d["metadata"].get("name"))] = await_bound(d["metadata"].get("annotations"))
    return out


def await_bound(annotations: object) -> int:
    """The await bound in seconds a Deployment's ``annotations`` declare
    (``pulumi.com/timeoutSeconds``, ASCII digits, as the provider parses it with Go's
    ``strconv.Atoi``), or :data:`DEFAULT_TIMEOUT_S` when it declares none or no such number
    (``"²"`` is a digit to Python's ``str.isdigit``, not to Go)."""
    raw = annotations.get(facts.AWAIT_TIMEOUT_ANNOTATION) if isinstance(annotations, dict) else None
    if isinstance(raw, str) and re.fullmatch(r"[0-9]{1,9}", raw):
        return int(raw)
    return DEFAULT_TIMEOUT_S


def main(argv: list[str] | None = None, stdout: TextIO = sys.stdout, stderr: TextIO = sys.stderr) -> int:  # noqa: D103
    ap = cli.parser("python3 dev.py rollout", __doc__)
    ap.add_argument("--namespace", default=StackConfig.model_fields["namespace"].default,
                    help="the stack's llm-serving:namespace (default: %(default)s)")
    ap.add_argument("--kubeconfig", type=Path, default=None, help="default: $KUBECONFIG or ~/.kube/config, as kubectl")
    args = ap.parse_args(argv)
    try:
        bounds = deployments(args.namespace, args.kubeconfig)
    except (FileNotFoundError, RuntimeError, subprocess.TimeoutExpired) as err:  # KubectlOutputError too
        return cli.fail("rollout", f"cannot list the Deployments of {args.namespace} ({err}); fix: check that kubectl is "
                        "installed and the kubeconfig's cluster is reachable (kubectl get nodes)", stderr)
    failed = []
    for name, seconds in sorted(bounds.items()):
        proc = kubectl.run(args.kubeconfig, "rollout", "status", f"deployment/{name}", "-n", args.namespace,
                        f"--timeout={seconds}s", timeout=seconds + 60)
        if proc.returncode == 0:
            stdout.write(f"rollout: {name} rolled out (within its {seconds} s bound)\n")
        else:
            message = (proc.stderr.strip() or proc.stdout.strip()).splitlines()[-1:] or ["(no message)"]
            stdout.write(f"rollout: {name} did not roll out within {seconds} s: {message[0]}\n")
            failed.append(name)
    return EXIT_NOT_ROLLED_OUT if failed else EXIT_OK


if __name__ == "__main__":
    cli.run(main, "rollout")
