"""``python3 dev.py rollout`` without a cluster (on the cluster: ``tests/real/test_real_awaits.py``)."""

from __future__ import annotations

import io

from tools import rollout


def test_without_kubectl_it_says_so_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    out, err = io.StringIO(), io.StringIO()
    assert rollout.main(["--namespace", "llm-serving"], stdout=out, stderr=err) == rollout.EXIT_INPUT
    assert out.getvalue() == "" and err.getvalue().count("\n") == 1
    assert err.getvalue().startswith("rollout: cannot list the Deployments of llm-serving (")
    assert "fix: check that kubectl is installed" in err.getvalue()

