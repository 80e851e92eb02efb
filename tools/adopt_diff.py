"""What the first ``pulumi up`` with ``llm-serving:adopt`` will change on the live objects, field by
field, before anything changes.

``pulumi preview`` of a stack without state shows every live object as a ``create``: the engine
has no old inputs to diff. The provider's create is a server-side apply of the manifest onto the
live object (forced under adopt: ``pulumi.com/patchForce``, on every object but an
InferenceService), so the API server can say what it will do: for each object of the stack's
rendering (:func:`stackfile.build.render_manifests`, with ``adopt`` on, as Pulumi will send it),
this runs ``kubectl apply --server-side --dry-run=server`` (``--force-conflicts`` where the object
is forced) and diffs the result against the live object (``kubectl get``), with the preview's
field diff (:func:`tools.offline.treediff.diff_trees`), whose cost lines say which server restarts
(a changed InferenceService label or annotation rolls its predictor: ``core.k8s.manifests.transition_cost``). Under server-side apply this provider adds
no label of its own (``provider.go`` sets ``app.kubernetes.io/managed-by`` for client-side apply
only), so the dry run is what the provider applies; ``tests/real/test_real_adopt_diff.py`` checks
on the loopback cluster that the listed fields are exactly the fields ``pulumi up`` then changed.

Left out of both sides, because the API server or a controller writes them: ``status``,
``metadata`` ``uid``, ``resourceVersion``, ``generation``, ``creationTimestamp``,
``managedFields``, and the Deployment controller's ``deployment.kubernetes.io/revision``
annotation. A Secret's values are never printed: each shows as a digest, so a changed key shows.
A field the preview's diff marks as forcing a replacement (e.g. a Service's ``type``) is changed
in place here, or refused by the API server (an immutable field: exit 2 naming the object), as
the adopting ``pulumi up``'s create is an apply onto the live object, not a replacement.

    python3 dev.py adopt-diff [--stack prod | --stack-file PATH] [--kubeconfig FILE]

Exit codes: 0 nothing would change; 1 the list of changes (as ``kubectl diff``: differences
found); 2 bad input: the stack file's problems (each with its key path, value, rule and fix), or
kubectl missing, unable to reach the cluster, or refusing an object (one line).
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any, TextIO

from core.base import facts
from core.judging.problems import ConfigError
from stackfile import load_stack_config
from stackfile.build import render_manifests
from tools import cli, kubectl
from tools.offline import render, treediff
from tools.offline.manifests import InputError, load_stack_file

ROOT = Path(__file__).resolve().parent.parent
EXIT_SAME, EXIT_CHANGES, EXIT_INPUT = cli.OK, cli.VERDICT, cli.BAD_INPUT
#: Metadata the API server writes, never an apply.
SERVER_METADATA = ("uid", "resourceVersion", "generation", "creationTimestamp", "managedFields")
#: Annotations a controller writes (the Deployment controller's rollout revision).
CONTROLLER_ANNOTATIONS = ("deployment.kubernetes.io/revision",)
REDACTED = "(a Secret's value)"


class AdoptDiffError(Exception):
    """kubectl failed for a reason other than a missing object; the message says which and why."""


def comparable(obj: dict[str, Any] | None) -> dict[str, Any] | None:
    """``obj`` without what the API server and controllers write (see the module docstring)."""
    if obj is None:
        return None
    out = {k: v for k, v in obj.items() if k != "status"}
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in SERVER_METADATA}
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k not in CONTROLLER_ANNOTATIONS}
    if annotations:
        meta["annotations"] = annotations
    else:
        meta.pop("annotations", None)
    out["metadata"] = meta
    if obj.get("kind") == "Secret":
        for key in ("data", "stringData"):
            if isinstance(out.get(key), dict):
                out[key] = {k: f"{REDACTED} sha256:{hashlib.sha256(str(v).encode()).hexdigest()[:12]}"
                            for k, v in out[key].items()}
    return out


def _kubectl(kubeconfig: Path | None, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    try:
        return kubectl.run(kubeconfig, *args, stdin=stdin)
    except FileNotFoundError:
        raise AdoptDiffError("kubectl is not on PATH; fix: install it (Debian's kubernetes-client, or "
                             "`python3 dev.py toolchain`, whose bin/ has it)") from None
    except subprocess.TimeoutExpired:
        raise AdoptDiffError(f"kubectl {' '.join(args[:3])} did not answer in {kubectl.TIMEOUT_S} s; fix: check that "
                             "the cluster in the kubeconfig is reachable (kubectl get nodes)") from None


def live(obj: dict[str, Any], kubeconfig: Path | None) -> dict[str, Any] | None:
    """The live object of ``obj``'s kind, namespace and name, or None when there is none."""
    meta = obj["metadata"]
    kind = f"{obj['kind'].lower()}.{obj['apiVersion'].split('/')[0]}" if "/" in obj["apiVersion"] else obj["kind"].lower()
    args = ["get", kind, meta["name"], "-o", "json", "--show-managed-fields=false"]
    if meta.get("namespace"):
        args += ["-n", meta["namespace"]]
    proc = _kubectl(kubeconfig, *args)
    if proc.returncode != 0:
        if "NotFound" in proc.stderr:
            return None
        last = (proc.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise AdoptDiffError(f"kubectl get {kind} {meta['name']} failed: {last}")
    return kubectl.json_object(proc, f"get {kind} {meta['name']}")


def planned(obj: dict[str, Any], kubeconfig: Path | None) -> dict[str, Any]:
    """What the server-side apply of ``obj`` would leave (``--dry-run=server``): forced when ``obj``
    carries ``pulumi.com/patchForce`` (every adopted object but an InferenceService, whose takeover
    is unforced: :func:`stackfile.build.adopt_object`), as the provider applies it."""
    forced = ((obj.get("metadata") or {}).get("annotations") or {}).get(facts.PATCH_FORCE_ANNOTATION) == "true"
    proc = _kubectl(kubeconfig, "apply", "--server-side", "--dry-run=server", *(["--force-conflicts"] if forced else []),
                    "--field-manager", "llm-serving-adopt-diff", "-o", "json", "-f", "-", stdin=json.dumps(obj))
    if proc.returncode != 0:
        fix = "" if forced else ("; to force it, run that one `pulumi up` with PULUMI_K8S_ENABLE_PATCH_FORCE=true "
                                 "(the diff then lists what it changes, and whether the predictor rolls)")
        raise AdoptDiffError(f"the API server refuses {render.render_path(obj)} (kubectl apply --server-side "
                             f"--dry-run=server): {proc.stderr.strip()}; pulumi up would fail on it the same way{fix}")
    return kubectl.json_object(proc, f"apply --dry-run=server ({render.render_path(obj)})")


def live_tree(objects: list[dict[str, Any]], kubeconfig: Path | None) -> dict[str, dict[str, Any]]:
    """Render path -> :func:`comparable` live object, for each of ``objects`` that is live."""
    out = {}
    for obj in objects:
        current = comparable(live(obj, kubeconfig))
        if current is not None:
            out[render.render_path(obj)] = current
    return out


def adoption_diff(objects: list[dict[str, Any]], kubeconfig: Path | None) -> treediff.TreeDiff:
    """The field-level diff from the live objects to what the adopting ``pulumi up`` leaves: an
    ``add`` for an object that is not live, an ``update`` with its fields for one that changes."""
    before = live_tree(objects, kubeconfig)
    after: dict[str, dict] = {}
    for obj in objects:
        path = render.render_path(obj)
        after[path] = comparable(planned(obj, kubeconfig) if path in before else obj)  # type: ignore[assignment]
    return treediff.diff_trees(before, after)


def stack_objects(stack_file: Path) -> list[dict[str, Any]]:
    """The stack's objects as the adopting ``pulumi up`` sends them (``llm-serving:adopt`` on)."""
    config = dict(load_stack_file(stack_file))
    config["llm-serving:adopt"] = True
    return render_manifests(load_stack_config(config, base_dir=ROOT, source=str(stack_file)))


def main(argv: list[str] | None = None, stdout: TextIO = sys.stdout, stderr: TextIO = sys.stderr) -> int:  # noqa: D103
    ap = cli.parser("python3 dev.py adopt-diff", __doc__)
    src = ap.add_mutually_exclusive_group()
    src.add_argument("--stack", default=None, type=cli.stack_name, help="Pulumi.<STACK>.yaml (default: prod)")
    src.add_argument("--stack-file", type=Path, help="this stack file")
    ap.add_argument("--kubeconfig", type=Path, default=None, help="default: $KUBECONFIG or ~/.kube/config, as kubectl")
    args = ap.parse_args(argv)
    stack_file = args.stack_file or ROOT / f"Pulumi.{args.stack or 'prod'}.yaml"
    try:
        objects = stack_objects(stack_file)
        diff = adoption_diff(objects, args.kubeconfig)
    except (ConfigError, InputError, AdoptDiffError, kubectl.KubectlOutputError) as err:
        return cli.fail("adopt-diff", err, stderr)
    stdout.write(f"what the first `pulumi up` with llm-serving:adopt changes on the live objects of {stack_file.name} "
                 f"({len(objects)} objects; from a server-side dry run, nothing changed):\n")
    stdout.write(diff.render())
    return EXIT_CHANGES if diff.objects else EXIT_SAME


if __name__ == "__main__":
    cli.run(main, "adopt-diff")
