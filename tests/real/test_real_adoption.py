"""Taking over ArgoCD's live objects with the first ``pulumi up``, on the
loopback cluster with this provider build (pulumi-kubernetes f47bc2d6f199, plugin
4.25.0, the v4.25.0 tag).

The cluster is seeded with the user's ArgoCD-era objects that prod keeps (``tests/reference/``:
the candle-vllm and clef-candle Deployments, the coder-predictor and reasoning-long-predictor
Services) the way ArgoCD applies them: ``kubectl apply --server-side --field-manager
argocd-controller``. Then a fresh prod stack (no state) runs ``pulumi up`` without any import.

Creating an existing object is reported to fail with AlreadyExists "since 4.29" unless the
provider sets ``upsertExistingObjects``. This build predates that: it has no
``upsertExistingObjects`` option, and under server-side apply (its default) a create is an apply
PATCH (``provider/pkg/await/await.go``: "we always send a PATCH request during creates with SSA
enabled. This means that we currently always upsert the object"), without force
(``patchForce``: no live object passed on create, so only the ``pulumi.com/patchForce``
annotation or ``PULUMI_K8S_ENABLE_PATCH_FORCE`` force it). What that means is checked here.

Found here: the first ``pulumi up`` of a fresh stack previews every seeded object as a
``create`` (the engine has no state for them; the preview cannot list field changes) and then
applies onto them in place: the same UIDs and ClusterIPs, ``argocd-controller`` and a
per-resource ``pulumi-kubernetes-<hash>`` manager both ``Apply`` owners, fields of equal value
shared. Only a field whose live value differs fails: seed 002's NetworkPolicy (gateway ports 80
and 8000, ArgoCD's) against prod's 80, 8000, 8080 is "Server-Side Apply field conflict", and
nothing else stops. ``llm-serving:adopt: true`` (``pulumi.com/patchForce`` on every object but the
InferenceService) forces it: the NetworkPolicy keeps its UID, gets 8080, and ``spec.ingress`` moves to Pulumi's manager.

Bad input: before the first ``up``, ``pulumi up`` without ``--yes`` (no terminal, as in CI)
stops with "must be passed in to proceed when running in non-interactive mode" and no seeded
object's version or field managers move. Every difference it would make is listed beforehand by
``kubectl diff --server-side --force-conflicts`` of the rendered directory
(``tests/real/test_real_render_argocd.py``); objects that already equal the program's restart no
pod (``tests/real/test_real_adoption_rendered.py``).

Drift: after adoption (the ``adopted`` fixture, so the test also passes alone), ArgoCD re-applying seed 002's NetworkPolicy (forcing: Pulumi now owns
``spec.ingress``) is invisible to a plain ``pulumi preview`` (``same``: the engine diffs against
its state) and an ``update`` of that object alone in ``pulumi preview --refresh``.

The coder InferenceService left alone (seeded by ``argocd-controller``, stopped with KServe's
``serving.kserve.io/stop`` so its 2-card predictor does not hold prod's awaits) is
``tests/real/test_real_left_alone.py``. Not covered (not done): the ``argocd`` commands of
README's runbook (no ArgoCD here). The render-mode no-op is ``tests/real/test_real_render_argocd.py``.
"""

from __future__ import annotations

import json

import pytest
import yaml

from tests.real.realpath import ROOT, CliResult, RealProject, kubectl, kubectl_json

pytestmark = pytest.mark.real

STACK = "prod"
NS = "llm-serving"
SEEDED = {"Deployment": ("candle-vllm", "clef-candle"), "Service": ("coder-predictor", "reasoning-long-predictor")}
REFERENCE = ("coder-14b-fp16.yaml", "clef-candle.yaml", "coder-service.yaml", "reasoning-long-service.yaml")


def _identity(cluster) -> dict[tuple[str, str], tuple[str, str]]:
    """(kind, name) -> (UID, clusterIP or "") of the seeded objects."""
    out = {}
    for kind, names in SEEDED.items():
        for name in names:
            obj = kubectl_json(cluster, "get", kind.lower(), name, "-n", NS)
            out[(kind, name)] = (obj["metadata"]["uid"], obj["spec"].get("clusterIP", ""))
    return out


def _versions(cluster) -> dict[tuple[str, str], tuple[str, str]]:
    """(kind, name) -> (resourceVersion, field managers) of every seeded object; a Deployment's
    spec generation stands for its resourceVersion (its controller writes status)."""
    out = {}
    for kind, names in {**SEEDED, "NetworkPolicy": ("llm-serving-ingress",)}.items():
        for name in names:
            obj = kubectl_json(cluster, "get", kind.lower(), name, "-n", NS, "--show-managed-fields")
            meta = obj["metadata"]
            version = str(meta["generation"]) if kind == "Deployment" else meta["resourceVersion"]
            out[(kind, name)] = (version, ",".join(sorted(m["manager"] for m in meta.get("managedFields") or [])))
    return out


def _managers(cluster, kind: str, name: str) -> dict[str, str]:
    obj = kubectl_json(cluster, "get", kind.lower(), name, "-n", NS, "--show-managed-fields")
    return {m["manager"]: m["operation"] for m in obj["metadata"].get("managedFields") or []}


#: Seed 002's NetworkPolicy as ArgoCD applied it (gateway ports 80 and 8000; prod adds 8080): the
#: one seeded object whose live value differs from the program's. Our fixture of that form.
SEED_002_NETPOL = ROOT / "policies" / "fixtures" / "network-ingress-for-clients" / "disallowed" / "seed-002-gateway-ports.yaml"


def _seed_netpol(cluster) -> None:
    docs = [d for d in yaml.safe_load_all(SEED_002_NETPOL.read_text()) if d and d.get("kind") == "NetworkPolicy"]
    path = cluster.parent / "seed-002-netpol.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    kubectl(cluster, "apply", "--server-side", "--field-manager", "argocd-controller", "-f", str(path))


@pytest.fixture(scope="module")
def seeded(cluster) -> dict:
    for f in REFERENCE:
        kubectl(cluster, "apply", "--server-side", "--field-manager", "argocd-controller", "-f", str(ROOT / "tests" / "reference" / f))
    _seed_netpol(cluster)
    return _identity(cluster)


def _owns(cluster, kind: str, name: str, manager_prefix: str, field: str) -> bool:
    obj = kubectl_json(cluster, "get", kind.lower(), name, "-n", NS, "--show-managed-fields")
    return any(m["manager"].startswith(manager_prefix) and field in json.dumps(m.get("fieldsV1") or {})
               for m in obj["metadata"].get("managedFields") or [])


def test_the_first_up_takes_the_argocd_objects_over_in_place(project: RealProject, stack, cluster, seeded):
    preview = project.preview(STACK, policy_pack=False)
    assert preview.code == 0, preview
    ops = {(e["resourcePreEvent"]["metadata"]["type"].rsplit(":", 1)[-1], e["resourcePreEvent"]["metadata"]["urn"].rsplit("::", 1)[-1]):
           e["resourcePreEvent"]["metadata"]["op"] for e in preview.events if e.get("resourcePreEvent")}
    # The engine has no state for them: the seeded objects preview as creates, not as field diffs.
    for kind, names in SEEDED.items():
        for name in names:
            assert ops[(kind, name)] == "create", ops
    # Bad input: the objects differ from the program's, and `pulumi up` without --yes, as a user
    # or CI job runs it without a terminal, stops before anything changes.
    before = _versions(cluster)
    res = project.run("up", "--stack", STACK, confirm=True)
    assert res.code != 0 and "must be passed in to proceed when running in non-interactive mode" in res.output, res
    assert _versions(cluster) == before
    res = project.up(STACK, policy_pack=False)
    # Without adopt: the objects whose fields equal the program's are taken over; the
    # NetworkPolicy, whose spec.ingress ArgoCD owns with another value, is a field conflict.
    assert res.code != 0, res
    assert "Server-Side Apply field conflict" in res.output and "llm-serving-ingress" in res.output, res
    netpol = kubectl_json(cluster, "get", "networkpolicy", "llm-serving-ingress", "-n", NS)
    assert [p["port"] for p in netpol["spec"]["ingress"][0]["ports"]] == [80, 8000]  # unchanged
    assert _identity(cluster) == seeded

    # Adoption mode: every object carries pulumi.com/patchForce; the conflict is forced.
    project.config_set(STACK, "llm-serving:adopt", "true")
    res = project.up(STACK, policy_pack=False)
    assert res.code == 0, res
    netpol_after = kubectl_json(cluster, "get", "networkpolicy", "llm-serving-ingress", "-n", NS)
    assert netpol_after["metadata"]["uid"] == netpol["metadata"]["uid"]
    assert [p["port"] for p in netpol_after["spec"]["ingress"][0]["ports"]] == [80, 8000, 8080]
    assert _owns(cluster, "NetworkPolicy", "llm-serving-ingress", "pulumi-kubernetes", "f:ingress")
    assert not _owns(cluster, "NetworkPolicy", "llm-serving-ingress", "argocd-controller", "f:ingress")
    # The same objects: no Service deleted and re-created (same UID and ClusterIP), nor Deployment.
    assert _identity(cluster) == seeded
    for kind, names in SEEDED.items():
        for name in names:
            managers = _managers(cluster, kind, name)
            assert managers.get("argocd-controller") == "Apply", managers
            pulumi_managers = [m for m in managers if m.startswith("pulumi")]
            assert pulumi_managers and all(managers[m] == "Apply" for m in pulumi_managers), managers


def _op(res, kind: str, name: str) -> str:
    """The step the preview plans for the object (after its refresh step), ``same`` when none."""
    for e in res.events:
        meta = (e.get("resourcePreEvent") or {}).get("metadata")
        if meta and meta["type"].endswith(f":{kind}") and meta["urn"].rsplit("::", 1)[-1] == name \
                and meta["op"] not in ("refresh", "read"):
            return meta["op"]
    return "same"


@pytest.fixture(scope="module")
def adopted(project: RealProject, stack: str, seeded) -> CliResult:
    """The seeded objects taken over in adoption mode: what the test above ends with (then this
    ``up`` changes nothing), or, alone, this ``up`` itself."""
    project.config_set(stack, "llm-serving:adopt", "true")
    res = project.up(stack, policy_pack=False)
    assert res.code == 0, res
    return res


def test_a_later_change_by_argocd_is_drift_in_a_refreshed_preview(project: RealProject, adopted, cluster, seeded):
    """ArgoCD's selfHeal re-applies seed 002's NetworkPolicy (forcing, since Pulumi now owns
    spec.ingress): ``pulumi preview --refresh`` shows the update that restores the program's form."""
    path = cluster.parent / "seed-002-netpol.yaml"
    kubectl(cluster, "apply", "--server-side", "--force-conflicts", "--field-manager", "argocd-controller", "-f", str(path))
    live = kubectl_json(cluster, "get", "networkpolicy", "llm-serving-ingress", "-n", NS)
    assert [p["port"] for p in live["spec"]["ingress"][0]["ports"]] == [80, 8000]
    # Without a refresh the engine diffs against its state, which still holds the program's form.
    plain = project.preview(STACK, policy_pack=False)
    assert plain.code == 0, plain
    assert _op(plain, "NetworkPolicy", "llm-serving-ingress") == "same", plain
    refreshed = project.preview(STACK, policy_pack=False, extra=("--refresh",))
    assert refreshed.code == 0, refreshed
    assert _op(refreshed, "NetworkPolicy", "llm-serving-ingress") == "update", refreshed
    # Nothing else drifted.
    others = {(e["resourcePreEvent"]["metadata"]["urn"].rsplit("::", 1)[-1], e["resourcePreEvent"]["metadata"]["op"])
              for e in refreshed.events if e.get("resourcePreEvent")
              and e["resourcePreEvent"]["metadata"]["type"].startswith("kubernetes:")
              and e["resourcePreEvent"]["metadata"]["op"] not in ("same", "refresh", "read")}
    assert others == {("llm-serving-ingress", "update")}, others
