"""tools/offline/mockrun.py: the program under Pulumi's mock runtime, recorded the way the analyzer sees it.

Small stand-in programs (written to tmp_path) pin down the runner itself: what a registration
records, the stack outputs, config as the language host passes it, clean errors, and that
repeated runs in one process start clean. The real program on the prod stack is covered by
tests/tools/test_preview.py.
"""

from __future__ import annotations

import gc
import textwrap
from pathlib import Path

import pytest

from tools.offline.mockrun import STACK_TYPE, ProgramError, run_program

PROGRAM = """
import pulumi
import pulumi_kubernetes as k8s

cfg = pulumi.Config()
cluster = cfg.require_object("cluster")
count = int(cfg.get("count") or 2)


class Server(pulumi.ComponentResource):
    def __init__(self, name, opts=None):
        super().__init__("llm-serving:index:Server", name, None, opts)
        self.deployment = k8s.apps.v1.Deployment(
            name,
            metadata={"name": name, "namespace": "llm-serving"},
            spec={
                "replicas": 1,
                "selector": {"match_labels": {"app": name}},
                "template": {
                    "metadata": {"labels": {"app": name}},
                    "spec": {"containers": [{"name": "server", "image": "x@sha256:00",
                                             "resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
                },
            },
            opts=pulumi.ResourceOptions(parent=self, ignore_changes=["spec.replicas"], delete_before_replace=False),
        )
        self.register_outputs({})


servers = [Server(f"s{i}") for i in range(count)]
svc = k8s.core.v1.Service(
    "front",
    metadata={"name": "front", "namespace": "llm-serving"},
    spec={"selector": {"app": "s0"}, "ports": [{"port": 80, "target_port": 8080}]},
    opts=pulumi.ResourceOptions(protect=True, depends_on=[servers[0].deployment]),
)
pulumi.export("url", svc.metadata.apply(lambda m: f"http://{m['name']}.{m['namespace']}"))
pulumi.export("nodes", [n["name"] for n in cluster["nodes"]])
pulumi.export("dry_run", pulumi.runtime.is_dry_run())
"""

CONFIG = {
    "llm-serving:cluster": {"nodes": [{"name": "worker-1", "cards": 4}]},
    "llm-serving:namespace": "llm-serving",
}


def write(tmp_path: Path, text: str, name: str = "__main__.py") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def by_name(run, type_: str) -> dict:
    return {r.name: r for r in run.resources if r.type == type_}


def test_records_every_registration_with_its_options(tmp_path):
    run = run_program(CONFIG, write(tmp_path, PROGRAM))
    assert [r.type for r in run.resources].count("kubernetes:apps/v1:Deployment") == 2
    assert run.resources[0].type == STACK_TYPE
    assert run.resources[0].urn == "urn:pulumi:prod::llm-serving::pulumi:pulumi:Stack::llm-serving-prod"
    server = by_name(run, "llm-serving:index:Server")["s1"]
    assert server.custom is False
    assert server.parent == run.resources[0].urn
    dep = by_name(run, "kubernetes:apps/v1:Deployment")["s1"]
    assert dep.urn == "urn:pulumi:prod::llm-serving::llm-serving:index:Server$kubernetes:apps/v1:Deployment::s1"
    assert dep.parent == server.urn
    assert dep.custom is True and dep.protect is False
    assert dep.ignore_changes == ["spec.replicas"]
    assert dep.delete_before_replace is False
    svc = by_name(run, "kubernetes:core/v1:Service")["front"]
    assert svc.protect is True
    assert svc.delete_before_replace is None
    assert svc.dependencies == [by_name(run, "kubernetes:apps/v1:Deployment")["s0"].urn]


def test_inputs_are_the_manifest_in_wire_names_with_integers(tmp_path):
    run = run_program(CONFIG, write(tmp_path, PROGRAM))
    dep = by_name(run, "kubernetes:apps/v1:Deployment")["s0"].props
    assert dep["apiVersion"] == "apps/v1" and dep["kind"] == "Deployment"
    assert dep["spec"]["selector"] == {"matchLabels": {"app": "s0"}}
    assert dep["spec"]["replicas"] == 1 and isinstance(dep["spec"]["replicas"], int)
    svc = by_name(run, "kubernetes:core/v1:Service")["front"].props
    assert svc["spec"]["ports"] == [{"port": 80, "targetPort": 8080}]


def test_stack_outputs_and_config_as_the_language_host_passes_them(tmp_path):
    run = run_program({**CONFIG, "llm-serving:count": "3"}, write(tmp_path, PROGRAM))
    assert run.outputs == {"url": "http://front.llm-serving", "nodes": ["worker-1"], "dry_run": True}
    assert len(by_name(run, "kubernetes:apps/v1:Deployment")) == 3


def test_preview_flag_and_stack_name(tmp_path):
    run = run_program(CONFIG, write(tmp_path, PROGRAM), stack="staging", preview=False)
    assert run.outputs["dry_run"] is False
    assert run.resources[0].urn.startswith("urn:pulumi:staging::llm-serving::")


def test_run_error_is_a_clean_message(tmp_path):
    program = write(tmp_path, PROGRAM + "\nraise pulumi.RunError('llm-serving:workloads.x.cards: -1 is below 1')\n")
    with pytest.raises(ProgramError) as err:
        run_program(CONFIG, program)
    assert str(err.value) == "llm-serving:workloads.x.cards: -1 is below 1"
    assert err.value.__cause__ is None and err.value.__suppress_context__


def test_config_error_comes_out_rendered(tmp_path):
    program = write(tmp_path, """
        class ConfigError(Exception):
            def render(self):
                return "Cannot load the stack config: 1 problem.\\nllm-serving:services.x.selects\\n  value: nope"
        raise ConfigError("raw")
    """)
    with pytest.raises(ProgramError) as err:
        run_program(CONFIG, program)
    assert str(err.value).startswith("Cannot load the stack config: 1 problem.\nllm-serving:services.x.selects")


def test_a_bug_in_the_program_keeps_its_traceback(tmp_path):
    with pytest.raises(ZeroDivisionError):
        run_program(CONFIG, write(tmp_path, "x = 1 / 0\n"))


def test_repeated_runs_start_clean(tmp_path):
    big = write(tmp_path, PROGRAM)
    small = write(tmp_path, """
        import pulumi
        import pulumi_kubernetes as k8s
        k8s.core.v1.ConfigMap("only", metadata={"name": "only"}, data={"a": "b"})
        pulumi.export("n", 1)
    """, name="small.py")
    first = run_program({**CONFIG, "llm-serving:count": "4"}, big)
    with pytest.raises(ProgramError):
        run_program(CONFIG, write(tmp_path, "import pulumi\nraise pulumi.RunError('stop')\n", name="fail.py"))
    second = run_program(CONFIG, small)
    assert [r.name for r in second.resources] == ["llm-serving-prod", "only"]
    assert second.outputs == {"n": 1}
    third = run_program(CONFIG, big)
    assert sorted(by_name(first, "kubernetes:apps/v1:Deployment")) == ["s0", "s1", "s2", "s3"]
    assert sorted(by_name(third, "kubernetes:apps/v1:Deployment")) == ["s0", "s1"]  # count 2, the default
    assert len(third.resources) == 6  # Stack, 2 x (Server + Deployment), Service
    assert third.outputs["url"] == "http://front.llm-serving"


def test_collector_state_is_restored(tmp_path):
    assert gc.isenabled()
    run_program(CONFIG, write(tmp_path, PROGRAM))
    assert gc.isenabled()
    gc.disable()
    try:
        run_program(CONFIG, write(tmp_path, PROGRAM))
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_the_callers_runtime_config_is_left_alone(tmp_path):
    """The policy harness loads a stack's config into the runtime config; a program run in
    between must not replace it (each run has its own context)."""
    import pulumi.runtime

    pulumi.runtime.set_config("llm-serving:probe", "kept")
    run_program(CONFIG, write(tmp_path, PROGRAM))
    assert pulumi.runtime.get_config("llm-serving:probe") == "kept"
    assert pulumi.runtime.get_config("llm-serving:count") is None


def test_secrets_are_recorded_redacted(tmp_path):
    """A secret never reaches a record, so no rendering, diff or report holds it."""
    program = write(tmp_path, """
        import pulumi
        import pulumi_kubernetes as k8s
        k8s.core.v1.Secret("token", metadata={"name": "token", "namespace": "llm-serving"},
                           string_data={"token": pulumi.Output.secret("s3cret")})
        k8s.core.v1.ConfigMap("sizes", metadata={"name": "sizes"}, data={"ratio": "0.85"},
                              immutable=False)
    """)
    run = run_program(CONFIG, program)
    secret = by_name(run, "kubernetes:core/v1:Secret")["token"].props
    assert secret["stringData"] == {"token": "[secret]"}
    assert "s3cret" not in repr([r.props for r in run.resources])
    sizes = by_name(run, "kubernetes:core/v1:ConfigMap")["sizes"].props
    assert sizes["data"] == {"ratio": "0.85"} and sizes["immutable"] is False
