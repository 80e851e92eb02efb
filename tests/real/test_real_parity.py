"""The offline tools against the real ones: where they differ, the real one is right.

1. Verdicts: for prod and every stack in ``tests/stacks/``, ``pulumi preview --policy-pack
   policies`` (the real CLI starting the real pack) gives the same (policy, resource URN,
   enforcement level) set as the offline runner (``tools.analyze.analyze_program``) on the same
   stack file under the same stack name.
2. Manifests: the kubernetes provider's ``renderYamlToDirectory`` output equals the offline
   preview's files (``tools.preview``), name for name and field for field. This provider version
   (4.25.0, the v4.25.0 tag) has no ``alwaysRender`` option; it writes every object it creates,
   so each rendering is the first ``pulumi up`` of a fresh stack, which creates every object.
"""

from __future__ import annotations

import shutil

import pytest
import yaml

from tests.paths import PROD_STACK_FILE
from tests.real.realpath import STACKS, RealProject, offline_verdicts, policy_verdicts
from tools import preview

pytestmark = pytest.mark.real

STACK_FILES = {"prod": PROD_STACK_FILE, **{f.stem: f for f in sorted(STACKS.glob("*.yaml"))}}


@pytest.mark.parametrize("stack", sorted(STACK_FILES))
def test_real_pack_verdicts_equal_the_offline_runners(project: RealProject, stack):
    project.stack_init(stack)
    res = project.preview(stack)
    real = policy_verdicts(res.events)
    assert real == offline_verdicts(STACK_FILES[stack], stack), res
    mandatory = any(level == "mandatory" for _, _, level in real)
    assert (res.code != 0) == mandatory, res


def _tree(directory) -> dict[str, object]:
    return {p.relative_to(directory).as_posix(): yaml.safe_load(p.read_text())
            for p in sorted(directory.rglob("*.yaml"))}


@pytest.mark.parametrize("stack", sorted(STACK_FILES))
def test_provider_rendering_equals_the_offline_preview(project: RealProject, tmp_path, stack):
    render_stack = f"render-{stack}"
    shutil.copy2(project.dir / ("Pulumi.prod.yaml" if stack == "prod" else f"Pulumi.{stack}.yaml"),
                 project.dir / f"Pulumi.{render_stack}.yaml")
    project.stack_init(render_stack)
    # A directory inside the project (core.k8s.values.ProjectDirectory refuses any other).
    real_dir = project.dir / f"rendered-{stack}"
    project.config_set(render_stack, "llm-serving:render_yaml_to_directory", real_dir.name)
    res = project.up(render_stack, policy_pack=False)
    assert res.code == 0, res

    offline_dir = tmp_path / "offline"
    code = preview.main(["--stack-file", str(STACK_FILES[stack]), "--out", str(offline_dir), "--no-policy"])
    assert code in (0, 1)
    real, offline = _tree(real_dir), _tree(offline_dir)
    assert sorted(real) == sorted(offline)
    for name in real:
        assert real[name] == offline[name], name
