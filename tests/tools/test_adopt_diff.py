"""``python3 dev.py adopt-diff`` without a cluster: what is compared, and bad input (the
comparison with ``pulumi up`` is ``tests/real/test_real_adopt_diff.py``)."""

from __future__ import annotations

import io

from tests.paths import PROD_STACK_FILE
from tools import adopt_diff


def test_what_the_server_and_controllers_write_is_left_out():
    live = {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "candle-vllm", "uid": "u", "resourceVersion": "7", "generation": 3,
                         "creationTimestamp": "t", "managedFields": [{}],
                         "annotations": {"deployment.kubernetes.io/revision": "2", "pulumi.com/timeoutSeconds": "510"}},
            "spec": {"replicas": 1}, "status": {"readyReplicas": 1}}
    assert adopt_diff.comparable(live) == {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "candle-vllm", "annotations": {"pulumi.com/timeoutSeconds": "510"}},
        "spec": {"replicas": 1}}
    assert adopt_diff.comparable(None) is None


def test_a_secrets_values_are_digests_that_still_differ():
    def secret(value: str) -> dict:
        return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": {"TOKEN": value}}
    a, b = adopt_diff.comparable(secret("c2VjcmV0")), adopt_diff.comparable(secret("b3RoZXI="))
    assert a is not None and b is not None
    assert "c2VjcmV0" not in str(a) and a["data"]["TOKEN"].startswith("(a Secret's value) sha256:")
    assert a != b


def test_the_adopting_rendering_carries_patch_force_on_every_object_but_the_inference_service():
    objects = adopt_diff.stack_objects(PROD_STACK_FILE)
    assert len(objects) == 8
    forced = {o["kind"]: o["metadata"]["annotations"].get("pulumi.com/patchForce") for o in objects}
    assert forced.pop("InferenceService") is None  # KServe would copy it into the predictor: a roll
    assert set(forced.values()) == {"true"}


def test_a_bad_stack_file_lists_its_problems_and_a_missing_kubectl_is_one_line(tmp_path, monkeypatch):
    bad = tmp_path / "Pulumi.bad.yaml"
    bad.write_text("config:\n  llm-serving:workloads: 3\n")
    out, err = io.StringIO(), io.StringIO()
    assert adopt_diff.main(["--stack-file", str(bad)], stdout=out, stderr=err) == adopt_diff.EXIT_INPUT
    assert err.getvalue().startswith("adopt-diff: ") and "llm-serving:workloads" in err.getvalue() and out.getvalue() == ""
    monkeypatch.setenv("PATH", str(tmp_path))
    err = io.StringIO()
    assert adopt_diff.main(["--stack-file", str(PROD_STACK_FILE)], stdout=io.StringIO(), stderr=err) == adopt_diff.EXIT_INPUT
    assert err.getvalue() == ("adopt-diff: kubectl is not on PATH; fix: install it (Debian's kubernetes-client, or "
                              "`python3 dev.py toolchain`, whose bin/ has it)\n")
