"""A model server's probes: a readiness probe, a startup probe at all, and a declared cold start
the startup budget is judged against (the budget itself: :func:`core.rulebook.servers.startup_budget`).
The components render every probe; these rules judge hand-written manifests and what a stack
file leaves to them.

Plain Python, no Pulumi and no pydantic import.
"""

from __future__ import annotations

from core.base import facts
from core.engines.settings import S
from core.judging.registry import MANIFEST, STACK, Breach, declare_policy, only, rule


@rule("model-server-readiness", "Every model server has a readiness probe.",
      "coder.yaml (readiness on /health every 10 s); checkov CKV_K8S_9", policy="model-server-readiness")
def readiness(has_probe: bool, port: int | None) -> Breach | None:
    """``port``: the container's first containerPort (8080 assumed when it declares none)."""
    if has_probe:
        return None
    return Breach(
        "it has no readinessProbe, so it is Ready (and gets Service traffic) before the model is loaded",
        only(MANIFEST, f"add readinessProbe: {{httpGet: {{path: <health route>, port: {port or 8080}}}, "
                       f"periodSeconds: {facts.READINESS_PERIOD_SECONDS}}}")
        + only(STACK, "preview again: the components add the readiness probe (an older rendering lacks it)"),
    )


@rule("startup-probe-present", "A model server has a startup probe.",
      "seed 002 (clef-serve about 4 min), coder.yaml (vLLM TP=2 at 256K about 10 min, 120 x 15 s)",
      policy="startup-probe-covers-cold-start")
def startup_probe_present(has_probe: bool, cold_start: str, liveness: str = "") -> Breach | None:
    """``cold_start``: the cold start judged, worded (``declared cold start of 600 s``);
    ``liveness``: what its liveness probe does to a loading server, when it has one."""
    if has_probe:
        return None
    return Breach(
        f"it has no startupProbe{liveness}",
        only(MANIFEST, "add a startupProbe on the health endpoint whose periodSeconds x failureThreshold exceeds "
                       f"the {cold_start} (coder.yaml: 120 x 15 s)")
        + only(STACK, f"set {S.cold_start}; the component derives the startup probe"),
    )


@rule("cold-start-declared", "A declared cold start is whole seconds above 0.",
      "seed 002 (clef-serve about 4 min), coder.yaml (vLLM TP=2 at 256K about 10 min, 120 x 15 s)",
      policy="startup-probe-covers-cold-start")
def cold_start_declared(raw: str, seconds: int | None) -> Breach | None:
    """``raw``: the annotation's text; ``seconds``: it read as whole seconds (None: not a number)."""
    if seconds is not None and seconds > 0:
        return None
    return Breach(f"annotation {facts.COLD_START_ANNOTATION} is {raw!r}, not whole seconds above 0",
                  f'declare {S.cold_start} as whole seconds above 0, e.g. "600"')


API_KEY_SOURCE = ("vllm-project/production-stack #150: with --api-key every /v1 path answers 401 without the bearer "
                  "token, so probes on /v1/models never pass; vLLM's /health needs none")


@rule("probes-skip-api-key", "A server that requires an API key is probed on a route that needs none.",
      API_KEY_SOURCE, policy="probes-skip-api-key")
def probe_needs_no_key(probe: str, path: str, key_from: str) -> Breach | None:
    """``probe``: startupProbe / readinessProbe / livenessProbe; ``path``: its httpGet path (one under
    /v1 without an Authorization header); ``key_from``: how the key is given (``env VLLM_API_KEY``)."""
    if not path.startswith("/v1"):
        return None
    return Breach(f"the server requires an API key ({key_from}) and its {probe} gets {path}, which answers 401 "
                  "without the bearer token, so the probe never passes",
                  f"probe /health instead (it needs no key), or send the token in the {probe}'s httpGet.httpHeaders")


#: A liveness probe's least timeout and failure window on a model server, seconds: a server busy
#: with long prompts answers /health late; the components render 10 s and 4 x 30 s (prod).
LIVENESS_MIN_TIMEOUT_SECONDS = 5
LIVENESS_MIN_WINDOW_SECONDS = 60
LIVENESS_SOURCE = ("scaleapi/llm-engine PR #255, llm-d-benchmark PR #1734 (a saturated server restarted by its "
                   "liveness probe, each restart a cold start); kube-score 'Pod Probes Identical'")


@rule("liveness-probe-window", "A model server's liveness probe has a failure window of 60 s or more and fails later "
      "than readiness.",
      LIVENESS_SOURCE, policy="liveness-probe-window")
def liveness_window(timeout: int, period: int, threshold: int, same_as_readiness: bool) -> Breach | None:
    """The liveness probe's ``timeoutSeconds`` (default 1), ``periodSeconds`` (default 10) and
    ``failureThreshold`` (default 3); ``same_as_readiness``: the readiness probe checks the same
    route and fails no later (so a busy server is restarted when it should only leave the Service)."""
    window = period * threshold
    if window >= LIVENESS_MIN_WINDOW_SECONDS and not same_as_readiness:
        return None  # a long window rides out slow answers, even at the 1 s default timeout
    problems = []
    if window < LIVENESS_MIN_WINDOW_SECONDS:
        problems.append(f"a failure window of {period} s x {threshold} = {window} s (below {LIVENESS_MIN_WINDOW_SECONDS} s)")
    if timeout < LIVENESS_MIN_TIMEOUT_SECONDS:
        problems.append(f"timeoutSeconds {timeout} (below {LIVENESS_MIN_TIMEOUT_SECONDS} s)")
    if same_as_readiness:
        problems.append("the same route and timing as the readiness probe, so it fails as soon as readiness does")
    return Breach("its livenessProbe has " + "; ".join(problems) + ": a server saturated by long requests answers "
                  "late and is restarted, each restart a full cold start",
                  f"give the livenessProbe timeoutSeconds of {LIVENESS_MIN_TIMEOUT_SECONDS * 2} or more and "
                  f"periodSeconds x failureThreshold of {LIVENESS_MIN_WINDOW_SECONDS * 2} s or more (the components: "
                  "10 s, 30 s x 4), longer than the readiness probe's")


# --- the pack's policies: one record each ------------------------------------------------------------

declare_policy(
    "model-server-readiness",
    "Every model server container (vLLM, candle-vllm, or holding cards) has a readinessProbe.",
    (
        "Add a readinessProbe on the server's health route (candle-vllm: GET /v1/models; vLLM: GET /health) every 10 s; the "
        "components add it with the startup and liveness probes."
    ),
    kind="resource",
    level="mandatory",
    severity="medium",
    doc="""model-server-readiness: every model server has a readiness probe.

Rule: each container of a Deployment, StatefulSet or InferenceService that serves a model (it
runs vLLM or candle-vllm, or holds nvidia.com/gpu cards) has a ``readinessProbe``. Without one a
pod is Ready as soon as its process starts, so a Service sends clients to a server still
loading its weights, and keeps sending them to one that stopped answering until the liveness
probe restarts it.

Source: coder.yaml (vLLM readiness on /health every 10 s); checkov CKV_K8S_9 failed on prod's
three Deployments before the components added a readiness probe to every model server.
""",
)


declare_policy(
    'probes-skip-api-key',
    'A vLLM server given an API key is not probed under /v1 without the bearer token.',
    (
        "Probe GET /health (vLLM answers it without a key), or send the token in the probe's httpGet.httpHead"
        'ers (Authorization: Bearer <key>).'
    ),
    kind="resource",
    level="mandatory",
    severity="high",
    doc="""probes-skip-api-key: a vLLM server that requires an API key is probed on a route that needs none.

Rule: a vLLM container given an API key (``--api-key``, or env ``VLLM_API_KEY`` with a value or
from a Secret, ConfigMap or field: the server's endpoint, :attr:`core.k8s.manifests.Container.endpoint`)
has no startup, readiness or liveness probe whose ``httpGet.path`` is under ``/v1`` without an
``Authorization`` header: vLLM answers 401 on every /v1 route without the bearer token, so the
probe never passes (the pod never becomes Ready, or is restarted forever). ``/health`` needs no
key. A ``VLLM_API_KEY`` only an ``envFrom`` source may set is not judged.

Source: vllm-project/production-stack #150. Judged and worded once, in :mod:`core.rulebook.probes`.
""",
)


declare_policy(
    'liveness-probe-window',
    "A model server's liveness probe has a failure window of 60 s or more and fails later than readiness.",
    (
        'Give the livenessProbe timeoutSeconds: 10, periodSeconds: 30 and failureThreshold: 4 (the components'
        "' values), longer than the readiness probe's, so a busy server leaves the Service before it is resta"
        'rted.'
    ),
    kind="resource",
    level="advisory",
    severity="medium",
    doc="""liveness-probe-window: a model server's liveness probe tolerates a busy server.

Rule: the livenessProbe of a model server container (it runs a server the pack knows, or holds
cards) has a failure window (``periodSeconds`` x ``failureThreshold``, defaults 10 x 3) of at least
60 s, and does not check the readiness probe's route with a window and timeout no longer than
readiness's (then a busy server is restarted as soon as it leaves the Service, each restart a full
cold start). A short window's message also names a ``timeoutSeconds`` below 5 (the kubelet's default
is 1); a window of 60 s or more passes at any timeout (four 1 s misses in a row over two minutes
is a server that stopped, the hand-written TP=2 Deployment's 30 s x 4).

Advisory: judgement of timing; a server that is never saturated is not restarted.
Source: scaleapi/llm-engine PR #255, llm-d-benchmark PR #1734; kube-score "Pod Probes Identical".
Judged and worded once, in :mod:`core.rulebook.probes`.
""",
)
