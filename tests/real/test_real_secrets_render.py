"""Secrets and render mode through the real CLI, on the loopback cluster (docs/secrets.md).

1. A token planted with ``pulumi config set --secret --path
   'llm-serving:workloads.reasoning.secret_env.HF_TOKEN'`` on a render-mode stack: ``pulumi up``
   writes the directory ArgoCD applies without the Secret, without the token and without any
   placeholder, while the Secret reaches the cluster holding the token (applied by the program's
   ``cluster-secrets`` provider); no CLI output, the stack file or the exported state shows it,
   and neither does the offline preview of the same stack file.
2. The same ``--secret`` on an env value (not ``secret_env``) is refused by the real program with
   the key path, and neither the token nor its ciphertext is printed; so is
   ``kubernetes:enableServerSideApply false``.
3. Render mode switched on for a stack that already applied prod: the real plan replaces every
   object (each moves to the ``render-yaml`` provider), and ``python3 dev.py plan`` refuses it.
"""

from __future__ import annotations

import base64
import io
import json
import shutil

import pytest
import yaml

from tests.real.realpath import RealProject, kubectl_json
from tools import plan, preview

pytestmark = pytest.mark.real

TOKEN = "hf_PLANTEDreal7c1d9e"
SECRET_KEY = "llm-serving:workloads.reasoning.secret_env.HF_TOKEN"


def _stack(project: RealProject, stack: str) -> None:
    shutil.copy2(project.dir / "Pulumi.prod.yaml", project.dir / f"Pulumi.{stack}.yaml")
    project.stack_init(stack)


def _set_secret(project: RealProject, stack: str, path: str) -> str:
    """Set ``path`` to the token with --secret; returns its ciphertext as the stack file holds it."""
    res = project.run("config", "set", "--stack", stack, "--secret", "--path", path, TOKEN)
    assert res.code == 0, res
    assert TOKEN not in res.stdout + res.stderr
    node = yaml.safe_load((project.dir / f"Pulumi.{stack}.yaml").read_text())["config"]
    key, *rest = path.split(".")
    node = node[key]
    for part in rest:
        node = node[part]
    return node["secure"].removeprefix("v1:")


def test_render_mode_writes_no_secret_and_the_cluster_gets_it(project: RealProject, cluster, tmp_path):
    stack = "secrets-render"
    _stack(project, stack)
    cipher = _set_secret(project, stack, SECRET_KEY)
    rendered = project.dir / "rendered-secrets"  # inside the project, as the stack file must name it
    project.config_set(stack, "llm-serving:render_yaml_to_directory", rendered.name)
    res = project.up(stack, policy_pack=False)
    assert res.code == 0, res

    files = {p.relative_to(rendered).as_posix(): p.read_text() for p in sorted(rendered.rglob("*")) if p.is_file()}
    assert "1-manifest/serving.kserve.io_v1beta1-inferenceservice-llm-serving-reasoning.yaml" in files
    assert not [name for name in files if "secret" in name]
    for name, text in files.items():
        assert TOKEN not in text and cipher not in text and "[secret]" not in text, name
    isvc = yaml.safe_load(files["1-manifest/serving.kserve.io_v1beta1-inferenceservice-llm-serving-reasoning.yaml"])
    assert isvc["spec"]["predictor"]["containers"][0]["env"][-1] == {
        "name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "reasoning-env", "key": "HF_TOKEN"}}}

    secret = kubectl_json(cluster, "-n", "llm-serving", "get", "secret", "reasoning-env")
    assert base64.b64decode(secret["data"]["HF_TOKEN"]).decode() == TOKEN
    assert kubectl_json(cluster, "-n", "llm-serving", "get", "inferenceservices")["items"] == []  # rendered, not applied

    exported = project.run("stack", "export", "--stack", stack)
    assert exported.code == 0, exported
    outputs = {"up": res.output, "export": exported.stdout, "stack file": (project.dir / f"Pulumi.{stack}.yaml").read_text(),
               # every CLI output logged, but the `config set` commands' own argv (which holds the token)
               "CLI logs": "".join(t for p in sorted(project.logs.iterdir())
                                   if not (t := p.read_text()).startswith("pulumi config set"))}
    assert {k: TOKEN in v for k, v in outputs.items()} == {k: False for k in outputs}

    offline = tmp_path / "offline"
    out, err = io.StringIO(), io.StringIO()
    code = preview.main(["--stack-file", str(project.dir / f"Pulumi.{stack}.yaml"), "--out", str(offline)], stdout=out, stderr=err)
    assert code == 0, out.getvalue() + err.getvalue()
    offline_text = "".join(p.read_text() for p in offline.rglob("*.yaml"))
    assert sorted(p.relative_to(offline).as_posix() for p in offline.rglob("*.yaml")) == sorted(files)
    for text in (offline_text, out.getvalue(), err.getvalue()):
        assert TOKEN not in text and cipher not in text
    assert "[secret]" not in offline_text


def test_a_secret_outside_secret_env_and_server_side_apply_off_are_refused(project: RealProject):
    stack = "secure-env"
    _stack(project, stack)
    cipher = _set_secret(project, stack, "llm-serving:workloads.reasoning.env.HF_HOME")
    res = project.preview(stack, policy_pack=False)
    assert res.code != 0, res
    text = res.output
    assert "llm-serving:workloads.reasoning.env.HF_HOME" in text, res
    assert "accepted only under llm-serving:workloads.<workload>.secret_env.<NAME>" in text, res
    assert TOKEN not in text and cipher not in text
    assert "Traceback" not in text

    ssa = "no-ssa"
    _stack(project, ssa)
    project.config_set(ssa, "kubernetes:enableServerSideApply", "false")
    res = project.preview(ssa, policy_pack=False)
    assert res.code != 0, res
    assert "kubernetes:enableServerSideApply is false: taking over the live objects ArgoCD applied needs server-side apply" in res.output, res


def test_render_mode_switched_on_an_applied_stack_is_replaced_and_refused(project: RealProject, tmp_path):
    stack = "applied"
    _stack(project, stack)
    res = project.up(stack, policy_pack=False)
    assert res.code == 0, res
    project.config_set(stack, "llm-serving:render_yaml_to_directory", "rendered-applied")
    res = project.run("preview", "--stack", stack, "--show-sames", "--show-replacement-steps", events=True, streaming=False)
    doc = json.loads(res.stdout)
    errors = [d.get("message", "") for d in doc.get("diagnostics") or [] if d.get("severity") == "error"]
    # The engine itself refuses to replace the protected Services; the plan still lists every step.
    assert res.code == 0 or (res.code == 1 and any("protect" in m for m in errors)
                             and all("protect" in m or m.strip() == "error: preview failed" for m in errors)), (res, errors)
    objects = {s["urn"] for s in doc["steps"] if (s.get("newState") or {}).get("type", "").startswith("kubernetes:")}
    replaced = {s["urn"] for s in doc["steps"] if s["op"] in ("replace", "create-replacement")
                and s["newState"]["type"].startswith("kubernetes:")}
    assert objects and replaced == objects, sorted(objects - replaced)
    # Found here: this provider writes the directory already in a preview (the render-mode "replacements"
    # are rendered), so even the PR's preview of such a switch changes the files ArgoCD may be reading.
    written = sorted(p.name for p in (project.dir / "rendered-applied").rglob("*.yaml"))
    assert len(written) == len(objects) and not [n for n in written if "secret" in n], written
    path = tmp_path / "plan.json"
    path.write_text(res.stdout)
    out = io.StringIO()
    assert plan.main([str(path)], stdout=out, stderr=out) == plan.EXIT_REFUSED, out.getvalue()
    [line] = [ln for ln in out.getvalue().splitlines() if ln.startswith("REFUSED: provider")]
    assert f"-> render-yaml: the plan moves {len(objects)} Kubernetes object(s)" in line
    assert "render from a separate render-only stack" in line
