"""Time budgets of a model server's pod: the rollout's deadlines against the declared cold start
(``rollout-deadlines-cover-cold-start``: a Deployment's progressDeadlineSeconds, the provider's await
timeout) and the shutdown against the grace period (``termination-grace-covers-drain``: preStop's sleep
plus vLLM's --shutdown-timeout within terminationGracePeriodSeconds).

Plain Python, no Pulumi and no pydantic import.
"""

from __future__ import annotations

import math

from core.judging.registry import Breach, declare_policy, rule

#: The await's margin over the declared cold start: a start this much slower than measured
#: (cold page cache of the weights on the PVC, a busy node) is still waited for.
AWAIT_SLOW_START_FACTOR = 1.5
#: Seconds added to every await for what happens before the cold start begins: the old pod's
#: termination under Recreate (terminationGracePeriodSeconds, 30 s by default), scheduling, the
#: pull of an unchanged moving tag (Always: a digest check), and the readiness probe's period
#: (10 s, coder.yaml).
AWAIT_ROLLOUT_SECONDS = 60


def await_timeout_seconds(cold_start_s: int) -> int:
    """Seconds ``pulumi up`` waits for a workload whose declared cold start is ``cold_start_s``
    seconds to become ready (the ``pulumi.com/timeoutSeconds`` annotation on the workload and on
    the Service in front of it): ``ceil(1.5 x cold start) + 60``. Prod: reasoning 600 s -> 960 s
    (the provider's default, 600 s, would fail it at its declared cold start), candle-vllm 300 s
    -> 510 s, clef-candle 180 s -> 330 s, clef-serve 240 s -> 420 s.

    Always above the cold start, so ``pulumi up`` does not fail a start that is on time; bounded,
    so a pod that never becomes ready fails the update instead of holding it for the default.
    """
    return math.ceil(cold_start_s * AWAIT_SLOW_START_FACTOR) + AWAIT_ROLLOUT_SECONDS


#: A Deployment's ``spec.progressDeadlineSeconds`` when it is not written (Kubernetes apps/v1 default).
DEFAULT_PROGRESS_DEADLINE_SECONDS = 600


def progress_deadline_seconds(cold_start_s: int) -> int | None:
    """The ``progressDeadlineSeconds`` a Deployment whose declared cold start is ``cold_start_s`` needs:
    None while Kubernetes' default (600 s) exceeds the cold start (nothing is written, prod's rendering
    stays as it was), else :func:`await_timeout_seconds` (past the deadline the Deployment reports
    ProgressDeadlineExceeded and the provider's await fails the deploy; rollout-deadlines-cover-cold-start)."""
    return None if cold_start_s < DEFAULT_PROGRESS_DEADLINE_SECONDS else await_timeout_seconds(cold_start_s)


DEADLINE_SOURCE = ("rh-aiservices-bu/ai-on-openshift PR #100 (large models time out against the 10 minute progress "
                   "deadline); kserve/kserve #3795 (large model deployment times out); Kubernetes Deployment "
                   "progressDeadlineSeconds (default 600); pulumi-kubernetes await (pulumi.com/timeoutSeconds)")
GRACE_SOURCE = ("kserve/kserve PR #5485 (a 15 s preStop sleep left 15 s of a 30 s grace to drain); vllm-project/vllm "
                "PR #43208 (terminationGracePeriodSeconds >= preStop sleep + --shutdown-timeout); llm-d/llm-d #927")


@rule("rollout-deadlines-cover-cold-start", "A Deployment's progress deadline and await timeout outlast its cold start.",
      DEADLINE_SOURCE, policy="rollout-deadlines-cover-cold-start")
def deadline_covers(deadline: str, seconds: int, cold_start: int) -> Breach | None:
    """``deadline``: which one, worded (``spec.progressDeadlineSeconds 600 (Kubernetes' default)``)."""
    if seconds > cold_start:
        return None
    return Breach(f"{deadline} is {seconds} s, but its declared cold start is {cold_start} s: every rollout is marked "
                  "failed (ProgressDeadlineExceeded, or the deploy's await times out) before the server can be ready",
                  f"set it above the cold start, e.g. {cold_start + max(60, cold_start // 2)}")


@rule("termination-grace-covers-drain", "preStop's sleep and vLLM's --shutdown-timeout end within the grace period.",
      GRACE_SOURCE, policy="termination-grace-covers-drain")
def grace_covers(grace: int, pre_stop: int, shutdown: int) -> Breach | None:
    """``pre_stop``: seconds the preStop hook sleeps; ``shutdown``: vLLM's --shutdown-timeout (0: aborts at SIGTERM)."""
    if pre_stop + shutdown < grace:
        return None
    parts = [f"preStop sleeps {pre_stop} s"] + ([f"--shutdown-timeout={shutdown}"] if shutdown else [])
    return Breach(f"{' and '.join(parts)} = {pre_stop + shutdown} s, but terminationGracePeriodSeconds is {grace}: the "
                  "kubelet kills the server before in-flight requests drain",
                  f"set terminationGracePeriodSeconds above {pre_stop + shutdown} (e.g. {pre_stop + shutdown + 15})")


declare_policy("rollout-deadlines-cover-cold-start",
                "A model server's Deployment progress deadline and the deploy's await timeout outlast its declared cold start.",
                "Set spec.progressDeadlineSeconds and pulumi.com/timeoutSeconds above the cold start.",
    kind="resource",
    level="mandatory",
    severity="high",
    doc="""rollout-deadlines-cover-cold-start: a model server's rollout deadlines outlast its declared cold start.

Rule: for a workload that declares its cold start (annotation ``facts.COLD_START_ANNOTATION``, whole
seconds): a Deployment's ``spec.progressDeadlineSeconds`` (Kubernetes default 600) and the deploy's
await timeout (annotation ``pulumi.com/timeoutSeconds``, where written) each exceed it. Past the
progress deadline the Deployment reports ProgressDeadlineExceeded, and ``kubectl rollout status`` and
the Pulumi provider's await fail the deploy while the server is still loading.

An undeclared cold start is not judged here (startup-probe-covers-cold-start assumes one for probes).
Source: rh-aiservices-bu/ai-on-openshift PR #100, kserve #3795. Judged and worded once, in
:mod:`core.rulebook.time_budgets`.
""",
)
declare_policy("termination-grace-covers-drain",
                "A model server's terminationGracePeriodSeconds outlasts its preStop sleep plus vLLM's --shutdown-timeout.",
                "Raise terminationGracePeriodSeconds above preStop's sleep plus --shutdown-timeout.",
    kind="resource",
    level="advisory",
    severity="medium",
    doc="""termination-grace-covers-drain: a model server's grace period outlasts its preStop sleep and drain.

Rule: for each model server container (vLLM or candle-vllm, or one holding cards) with a preStop hook
that sleeps (``lifecycle.preStop.sleep.seconds``, or an exec ``sleep N``) or a vLLM
``--shutdown-timeout``: the pod's ``terminationGracePeriodSeconds`` (default 30) exceeds the sleep plus
the shutdown timeout. The kubelet sends SIGKILL at the end of the grace period, preStop included, so a
shorter grace kills the server with its in-flight requests.

Advisory: only the requests in flight at a rollout or scale-down are lost.
Source: kserve PR #5485, vllm PR #43208, llm-d #927. Judged and worded once, in :mod:`core.rulebook.time_budgets`.
""",
)
