"""The pack judging while the program runs (``PackProcess.stream``, what the preview uses).

Each resource is handed to the pack as it is registered, in whatever order registrations
complete; the report must be the same, byte for byte in every format, as the batch path
(``PackProcess.analyze``) over the same resources. An error of the pack is raised where the
batch path raises it, and no thread is left behind.
"""

from __future__ import annotations

import io
import random
import threading

import pytest

from tests.paths import PROD_STACK_FILE, ROOT
from tools.analyze import PolicyConfigError, run_pack, start_pack
from tools.offline import mockrun
from tools.offline.manifests import Resource, load_stack_file, resources_from_documents
from tools.offline.report import FORMATS
from tools.preview import main as preview_main
from tools.preview import pack_config

STANDIN = ROOT / "tests" / "manifests" / "standin-pack"
FIXTURE = load_stack_file(ROOT / "policies" / "fixtures" / "Pulumi.fixture.yaml")


def deployment(name: str, replicas: int, image: str) -> dict:
    return {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "llm-serving"},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"containers": [{"name": "c", "image": image}]}}},
    }


def streamed(resources: list[Resource], order: list[Resource], config: dict, **pack: object):
    """The report of the streaming path: ``order`` handed over one by one, then finished with ``resources``."""
    with start_pack(config, **pack) as p:  # type: ignore[arg-type]
        stream = p.stream()
        for r in order:
            stream.put(r)
        stream.ready()
        return stream.finish(resources)


def no_stream_thread() -> bool:
    return not any(t.name == "pack-stream" and t.is_alive() for t in threading.enumerate())


def test_any_registration_order_gives_the_batch_report_byte_for_byte():
    res = resources_from_documents([deployment(f"d{i}", i % 4 + 1, "x:latest" if i % 3 == 0 else f"x:1.{i}")
                                    for i in range(12)], stack="prod")
    batch = run_pack(res, FIXTURE, pack_dir=STANDIN)
    assert batch.counts()["mandatory"] == 4  # d0, d3, d6, d9 use :latest
    rng = random.Random(4)
    for _ in range(3):
        order = rng.sample(res, len(res))
        report = streamed(res, order, FIXTURE, pack_dir=STANDIN)
        for fmt in FORMATS:
            assert report.render(fmt) == batch.render(fmt), fmt
    assert no_stream_thread()


def test_prod_program_streamed_as_it_registers_gives_the_batch_report():
    config = load_stack_file(PROD_STACK_FILE)
    with start_pack(pack_config(config)) as p:
        stream = p.stream()
        run = mockrun.run_program(config, on_register=stream.put)
        stream.ready()
        report = stream.finish(run.resources)
    batch = run_pack(run.resources, pack_config(config))
    assert report.resources == len(run.resources) == batch.resources
    for fmt in FORMATS:
        assert report.render(fmt) == batch.render(fmt), fmt
    assert report.exit_code() == 0
    assert no_stream_thread()


def test_a_bad_policy_pack_config_is_raised_by_ready_and_the_thread_ends():
    with start_pack(FIXTURE, pack_dir=STANDIN) as p:
        stream = p.stream({"no-latest-tag": "loud"})
        with pytest.raises(PolicyConfigError, match="no-latest-tag.enforcementLevel"):
            stream.ready()
        stream.stop()
    stream.join()
    assert no_stream_thread()


def test_stopped_before_finish_the_thread_ends_once_the_pack_is_closed():
    res = resources_from_documents([deployment("a", 1, "x:1")], stack="prod")
    with start_pack(FIXTURE, pack_dir=STANDIN) as p:
        stream = p.stream()
        stream.put(res[0])
        stream.stop()  # the program failed: no finish
    stream.join()
    assert no_stream_thread()


@pytest.mark.parametrize("body, code, said", [
    ("raise pulumi.RunError('stop here')\n", 2, "preview: stop here"),  # its config error: exit 2
    ("{}['missing']\n", 3, "KeyError: 'missing'"),  # a crash: exit 3, with its traceback
])
def test_a_program_that_fails_exits_as_before_with_no_thread_left(tmp_path, body, code, said):
    program = tmp_path / "fail.py"
    program.write_text("import pulumi\npulumi.export('x', 1)\n" + body)
    out, err = io.StringIO(), io.StringIO()
    assert preview_main(["--program", str(program), "--out", str(tmp_path / "out")], out, err) == code
    assert said in err.getvalue()
    assert not (tmp_path / "out").exists()
    assert no_stream_thread()


def test_the_calls_are_streamed_and_a_remediating_pack_falls_back_to_the_batch_path():
    """The streaming path really sends the Analyze calls as resources come (its own lap), and a
    policy at level remediate (Remediate first, for every resource) takes the batch path with the
    batch report."""
    res = resources_from_documents([deployment(f"d{i}", 1, "x:latest" if i % 2 else "x:1") for i in range(6)],
                                   stack="prod")
    with start_pack(FIXTURE, pack_dir=STANDIN) as p:
        stream = p.stream()
        for r in res:
            stream.put(r)
        stream.ready()
        stream.finish(res)
    assert "analyze (streamed)" in p.timings, p.timings
    remediate = {"no-latest-tag": "remediate"}
    with start_pack(FIXTURE, pack_dir=STANDIN) as p:
        stream = p.stream(remediate)
        for r in res:
            stream.put(r)
        stream.ready()
        report = stream.finish(res)
    assert "analyze (streamed)" not in p.timings, p.timings
    batch = run_pack(res, FIXTURE, pack_dir=STANDIN, policy_pack_config=remediate)
    for fmt in FORMATS:
        assert report.render(fmt) == batch.render(fmt), fmt
    assert no_stream_thread()
