"""The model servers' settings, one model per engine: :class:`VllmConfig` and :class:`CandleConfig`.

Each flag is declared once, in :mod:`core.engines.flags`, and carried here as ``FLAGS``: the stack file's workload (``stackfile/schema.py``
``VllmWorkload`` / ``CandleWorkload``, whose keys stay flat in the stack file, as production-stack
keeps them under one ``vllmConfig``), the component args (``components/vllm.py`` ``VllmArgs``,
``components/workload.py`` ``CandleDeploymentArgs``) and the rendered argv
(:meth:`VllmConfig.argv`, :meth:`CandleConfig.argv`) all come from these models; the
composition (``stackfile/build.py``) hands a workload's settings to its component with
:func:`settings_of`, field by field nowhere. The other direction: ``read()`` takes an argv back
to the :class:`ServerSettings` the capacity estimator takes (``core.k8s.manifests.servers``).

Defaults and their sources are in each field's description. pydantic, no Pulumi.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from core.base import facts
from core.engines import flags, served_names
from core.judging.registry import STACK
from core.k8s.values import Image, Int, Real, rule_error


def custom_all_reduce_must_be_disabled(tp: int, nvlink: bool) -> bool:
    """VLLM's custom all-reduce deadlocked after CUDA graph capture at TP = 2 over PCIe
    (coder.yaml): it must be disabled when TP is 2 and the cards have no NVLink. Above two
    PCIe-only cards vLLM turns it off itself ("Custom allreduce is disabled because it's not
    supported on more than two PCIe-only GPUs", vllm/distributed/device_communicators/
    custom_all_reduce.py), so the flag is not needed there."""
    return tp == 2 and not nvlink


def parallel_matches_cards(tp: int, pp: int, cards: int, dp: int = 1) -> bool:
    """VLLM starts TP x PP x DP ranks, one a card: they must equal the pod's cards."""
    return tp * pp * dp == cards


# --- vLLM --gpu-memory-utilization ----------------------------------------------------------

#: The usual ceiling of vLLM's ``--gpu-memory-utilization``: above it vLLM leaves the card too
#: little room for what it allocates after the KV cache (CUDA graph capture, NCCL, the sampler);
#: 0.98 ran out of memory in CUDA-graph capture (vllm-project/vllm #15598). vLLM's own default
#: is 0.90 (coder.yaml's value). Lifted only by ``--enforce-eager`` (no CUDA graphs are captured)
#: or an explicit override (stack file ``gpu_memory_utilization_override``; manifests
#: ``facts.GMU_OVERRIDE_ANNOTATION``).
GPU_MEMORY_UTILIZATION_CEILING = 0.95
#: vLLM's own ``--gpu-memory-utilization`` when the flag is absent (vllm/engine/arg_utils.py; coder.yaml
#: writes it): the stack file's default, and what the estimate and the pack take for an argv without it.
GPU_MEMORY_UTILIZATION_DEFAULT = 0.90


def gpu_memory_utilization_ok(value: float, *, enforce_eager: bool = False, overridden: bool = False) -> bool:
    """True when ``value`` (a fraction of the card) is at most :data:`GPU_MEMORY_UTILIZATION_CEILING`,
    or above it with ``--enforce-eager`` or a declared override (vllm-project/vllm #15598)."""
    return value <= GPU_MEMORY_UTILIZATION_CEILING or enforce_eager or overridden


def gpu_memory_utilization_credited(value: float) -> float:
    """The utilization a capacity estimate may credit: ``value`` capped at the ceiling, so a
    value near 1 never shows more KV room than the bound allows."""
    return min(value, GPU_MEMORY_UTILIZATION_CEILING)


#: The candle-vllm binary in the image (coder-14b-fp16.yaml ``command``).
CANDLE_BINARY = "/usr/local/bin/candle-vllm"


def fraction_text(value: float) -> str:
    """A fraction as the references write it: two decimals when exact ("0.30", "0.90")."""
    return f"{value:.2f}" if round(value, 2) == value else repr(value)


def check_served_name(value: str) -> str:
    """A served model name is one argv item: no comma, no whitespace (002 reasoning.yaml;
    :func:`core.engines.served_names.served_name`, the rule the pack's vllm-served-model-names judges by)."""
    breach = served_names.served_name(value)
    if breach is not None:
        raise rule_error(*breach.render(STACK))
    return value


#: A served model name: one argv item (:func:`check_served_name`).
ServedName = Annotated[str, AfterValidator(check_served_name)]


_HUMAN_INT = re.compile(r"^([0-9]+(?:\.[0-9]+)?)([kKmMgG]?)$")
_MULT = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "K": 2**10, "M": 2**20, "G": 2**30}


def human_int(value: str | None) -> int | None:
    """An integer as vLLM's ``human_readable_int`` reads it (vllm/engine/arg_utils.py):
    ``"65536"`` -> 65536, ``"64k"`` -> 64,000, ``"64K"`` -> 65,536. None when absent or unparsable."""
    if value is None:
        return None
    match = _HUMAN_INT.match(value.strip())
    if not match:
        return None
    return int(float(match.group(1)) * _MULT[match.group(2)])


def number(value: str | None) -> float | None:
    """A float argument (``"0.90"`` -> 0.9); None when absent or not a number."""
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


#: An argv read back: each ``--flag`` to the values that followed it (``core.k8s.manifests.servers.ServerArgs.flags``).
Flags = Mapping[str, Sequence[str]]


def _last(flags: Flags, flag: str) -> str | None:
    values = flags.get(flag)
    return values[-1] if values else None


@dataclass(frozen=True)
class ServerSettings:
    """One server's engine settings as the capacity estimator takes them
    (:func:`core.capacity.estimator.estimate`), built from either side: a stack-file workload
    (:meth:`VllmConfig.settings`, :meth:`CandleConfig.settings`) or a manifest's argv
    (:meth:`VllmConfig.read`, :meth:`CandleConfig.read`). None: the engine's default (the
    estimator's, cited there). ``tp`` x ``pp``: the cards one replica uses; ``image``: the
    server's image (a vLLM release in its tag selects the estimator's profile); ``kv_cache_dtype``
    ``fp8`` for candle-vllm's ``--fp8-kvcache``; ``flashinfer_sampler``: ``VLLM_USE_FLASHINFER_SAMPLER``
    as the pod sets it (None: unset), for the sampler warm-up's path."""

    engine: Literal["vllm", "candle-vllm"]
    tp: int = 1
    pp: int = 1
    dtype: str | None = None
    kv_cache_dtype: str | None = None
    gpu_memory_utilization: float | None = None
    max_model_len: int | None = None
    max_num_batched_tokens: int | None = None
    max_num_seqs: int | None = None
    block_size: int | None = None
    kv_fraction: float | None = None
    mem_mib: int | None = None
    prefill_chunk_size: int | None = None
    mamba_fraction: float | None = None
    image: str | None = None
    flashinfer_sampler: str | None = None


class _Settings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RopeScaling(_Settings):
    """RoPE scaling for a context beyond the checkpoint's ``max_position_embeddings``, as the
    model card documents it (Qwen3: YaRN ``{"rope_type": "yarn", "factor": 4.0,
    "original_max_position_embeddings": 32768}``, factor 2.0 advised for about 65,536 tokens).
    Rendered as ``--hf-overrides={"rope_scaling": {...}}``: vLLM v0.11.0 also accepts
    ``--rope-scaling``, but it is deprecated there in favour of ``--hf-overrides`` (its warning
    says so) and removed later, while ``--hf-overrides`` works in every release since 0.6."""

    rope_type: Literal["yarn", "linear", "dynamic"] = Field(description="RoPE scaling type (yarn for Qwen3).")
    factor: Real = Field(gt=1, description="Context multiplier (Qwen3 card: 4.0 for 131,072; 2.0 for 65,536).")
    original_max_position_embeddings: Int | None = Field(
        default=None, gt=0, description="YaRN: the window the model was trained on (Qwen3: 32768)."
    )

    @model_validator(mode="after")
    def _window_within_int32(self) -> RopeScaling:
        window = self.factor * (self.original_max_position_embeddings or 1)
        if window > facts.MOST_TOKENS:
            raise ValueError(f"factor {self.factor:g} derives a window beyond {facts.MOST_TOKENS:,} tokens (vLLM's int32 "
                             "sequence lengths); use the factor the model card gives (Qwen3: 4.0 for 131,072)")
        return self

    def as_config(self) -> dict[str, Any]:
        """The config.json ``rope_scaling`` object (unset fields left out)."""
        return self.model_dump(exclude_none=True)


class Override(_Settings):
    """A rule lifted on purpose, with the reason (shown by the policy pack and the preview)."""

    reason: str = Field(min_length=1, description="Why the bound does not apply here (e.g. a measured run).")


class VllmConfig(_Settings):
    """vLLM's server settings (v0.11.0): its argv flags and ``HF_HOME``. Defaults as coder.yaml
    writes them; Errors: ``enable_auto_tool_choice`` without ``tool_call_parser``."""

    #: Each setting's flag (:data:`core.engines.flags.VLLM`): :meth:`argv` renders them, :meth:`read`
    #: reads them back (some are read only, as that table says).
    FLAGS: ClassVar[dict[str, str]] = flags.VLLM

    image: Image = Field(
        default=facts.VLLM_IMAGE,
        description="Pinned by digest; v0.15.0 failed on worker-1 (coder.yaml). Default: v0.11.0 by digest.",
    )
    served_model_names: list[ServedName] = Field(min_length=1, description="--served-model-name, each its own argv item (002).")
    quantization: Literal["gptq", "awq", "fp8", "marlin", "awq_marlin", "gptq_marlin", "compressed-tensors", "bitsandbytes"] | None = Field(
        default=None, description="--quantization (gptq for the GPTQ checkpoints here)."
    )
    dtype: Literal["auto", "half", "float16", "bfloat16", "float", "float32"] = Field(
        default="float16", description="--dtype; sm_70 needs a half dtype (coder.yaml)."
    )
    kv_cache_dtype: Literal["auto", "fp8", "fp8_e4m3", "fp8_e5m2"] = Field(
        default="auto", description="--kv-cache-dtype (coder.yaml: auto; sm_70 has no FP8)."
    )
    max_model_len: Int = Field(gt=0, description="--max-model-len in tokens (reasoning: 65536; coder.yaml: 262144).")
    tensor_parallel_size: Int | None = Field(default=None, ge=1, description="--tensor-parallel-size; default: cards / pipeline_parallel_size.")
    pipeline_parallel_size: Int = Field(default=1, ge=1, description="--pipeline-parallel-size.")
    gpu_memory_utilization: Real = Field(
        default=GPU_MEMORY_UTILIZATION_DEFAULT, gt=0, le=1,
        description=("--gpu-memory-utilization (coder.yaml: 0.90); at most 0.95 (core.engines.config.GPU_MEMORY_UTILIZATION_CEILING, "
                     "vllm-project/vllm #15598) unless enforce_eager or gpu_memory_utilization_override."),
    )
    gpu_memory_utilization_override: Override | None = Field(
        default=None,
        description="Lifts the 0.95 ceiling of gpu_memory_utilization, with the reason (written as an annotation for the pack).",
    )
    enforce_eager: bool = Field(default=False, description="--enforce-eager: no CUDA graphs (lifts the utilization ceiling).")
    rope_scaling: RopeScaling | None = Field(
        default=None,
        description="RoPE scaling (YaRN) for a max_model_len above the model's max_position_embeddings; --hf-overrides.",
    )
    max_num_seqs: Int | None = Field(default=None, ge=1, description="--max-num-seqs.")
    max_num_batched_tokens: Int | None = Field(default=None, ge=1, description="--max-num-batched-tokens.")
    long_prefill_token_threshold: Int | None = Field(default=None, ge=1, description="--long-prefill-token-threshold.")
    enable_chunked_prefill: bool = Field(default=False, description="--enable-chunked-prefill.")
    enable_prefix_caching: bool = Field(default=False, description="--enable-prefix-caching.")
    disable_custom_all_reduce: bool | None = Field(
        default=None,
        description="--disable-custom-all-reduce; default on when TP >= 2 without NVLink (coder.yaml: deadlock after graph capture).",
    )
    reasoning_parser: str | None = Field(default=None, description="--reasoning-parser, e.g. qwen3.")
    enable_auto_tool_choice: bool = Field(default=False, description="--enable-auto-tool-choice (needs tool_call_parser).")
    tool_call_parser: str | None = Field(default=None, description="--tool-call-parser, e.g. hermes.")
    hf_home: str = Field(default=facts.MODELS_MOUNT_PATH, description="HF_HOME (coder.yaml: /mnt/models).")

    @model_validator(mode="after")
    def _tool_parser(self) -> VllmConfig:
        if self.enable_auto_tool_choice and not self.tool_call_parser:
            raise rule_error(
                "enable_auto_tool_choice needs tool_call_parser (vLLM refuses to start without it)",
                "add tool_call_parser: hermes (coder.yaml) or set enable_auto_tool_choice: false",
            )
        return self

    def tp_for(self, cards: int) -> int:
        """The tensor parallel size: explicit, else ``cards`` / pipeline_parallel_size."""
        return self.tensor_parallel_size or max(1, cards // self.pipeline_parallel_size)

    def custom_all_reduce_disabled(self, tp: int, nvlink: bool) -> bool:
        """Explicit setting, else :func:`core.engines.config.custom_all_reduce_must_be_disabled` (coder.yaml)."""
        if self.disable_custom_all_reduce is not None:
            return self.disable_custom_all_reduce
        return custom_all_reduce_must_be_disabled(tp, nvlink)

    def hf_overrides_json(self) -> str:
        """``--hf-overrides`` as one argv item: ``{"rope_scaling": {...}}`` in compact JSON."""
        assert self.rope_scaling is not None
        return json.dumps({"rope_scaling": self.rope_scaling.as_config()}, separators=(",", ":"))

    def argv(self, model: str, *, tp: int, nvlink: bool, port: int) -> list[str]:
        """VLLM's argv in coder.yaml's order and form (``--flag=value``; served names as
        separate items after ``--served-model-name``; boolean flags bare; optional ones only
        when set). ``model``: ``--model`` (the Hugging Face id or a path on the PVC); ``tp``:
        the resolved tensor parallel size; ``nvlink``: the cards' NVLink, for the all-reduce
        default; ``port``: ``--port``."""
        f = self.FLAGS
        argv = [f"{f['model']}={model}", f["served_model_names"], *self.served_model_names]
        if self.quantization:
            argv.append(f"{f['quantization']}={self.quantization}")
        argv += [
            f"{f['dtype']}={self.dtype}",
            f"{f['kv_cache_dtype']}={self.kv_cache_dtype}",
            f"{f['max_model_len']}={self.max_model_len}",
            *([f"{f['hf_overrides']}={self.hf_overrides_json()}"] if self.rope_scaling else []),
            f"{f['tensor_parallel_size']}={tp}",
            f"{f['pipeline_parallel_size']}={self.pipeline_parallel_size}",
            f"{f['gpu_memory_utilization']}={fraction_text(self.gpu_memory_utilization)}",
        ]
        for name, value in (("max_num_seqs", self.max_num_seqs),
                            ("max_num_batched_tokens", self.max_num_batched_tokens),
                            ("long_prefill_token_threshold", self.long_prefill_token_threshold)):
            if value is not None:
                argv.append(f"{f[name]}={value}")
        for name, on in (("enable_chunked_prefill", self.enable_chunked_prefill),
                         ("enable_prefix_caching", self.enable_prefix_caching),
                         ("disable_custom_all_reduce", self.custom_all_reduce_disabled(tp, nvlink)),
                         ("enforce_eager", self.enforce_eager)):
            if on:
                argv.append(f[name])
        if self.reasoning_parser:
            argv.append(f"{f['reasoning_parser']}={self.reasoning_parser}")
        if self.enable_auto_tool_choice:
            argv.append(f["enable_auto_tool_choice"])
        if self.tool_call_parser:
            argv.append(f"{f['tool_call_parser']}={self.tool_call_parser}")
        argv += [f"{f['host']}=0.0.0.0", f"{f['port']}={port}"]
        return argv

    def settings(self, *, tp: int, flashinfer_sampler: str | None = None) -> ServerSettings:
        """What the estimator takes from this stack-file workload; ``tp``: the resolved tensor
        parallel size (:meth:`tp_for`); ``flashinfer_sampler``: ``VLLM_USE_FLASHINFER_SAMPLER`` as the
        component's env sets it (None: unset)."""
        return ServerSettings(
            "vllm", tp=tp, pp=self.pipeline_parallel_size, dtype=self.dtype, kv_cache_dtype=self.kv_cache_dtype,
            gpu_memory_utilization=self.gpu_memory_utilization, max_model_len=self.max_model_len,
            max_num_batched_tokens=self.max_num_batched_tokens, max_num_seqs=self.max_num_seqs, image=self.image,
            flashinfer_sampler=flashinfer_sampler,
        )

    @classmethod
    def read(cls, flags: Flags, *, tp: int, pp: int, image: str | None = None) -> ServerSettings:
        """The inverse of :meth:`argv` for what the estimator takes, tolerant: a flag that is
        absent or unreadable (``--max-model-len=lots``) is None, the engine's default; flags this
        model does not know are ignored. ``flags``: the argv read back, ``_`` already read as ``-``
        (``core.k8s.manifests.servers.parse_args``); ``tp`` / ``pp``: the parallel sizes it gives
        (``-tp`` / ``-pp`` too); ``image``: the container's. Token counts are read as vLLM's
        ``human_readable_int`` (:func:`human_int`)."""
        f = cls.FLAGS

        def get(name: str) -> str | None:
            return _last(flags, f[name])

        return ServerSettings(
            "vllm", tp=tp, pp=pp, dtype=get("dtype"), kv_cache_dtype=get("kv_cache_dtype"),
            gpu_memory_utilization=number(get("gpu_memory_utilization")), max_model_len=human_int(get("max_model_len")),
            max_num_batched_tokens=human_int(get("max_num_batched_tokens")), max_num_seqs=human_int(get("max_num_seqs")),
            block_size=human_int(get("block_size")), image=image,
        )


class CandleConfig(_Settings):
    """candle-vllm's server settings: its binary, image and argv flags. TP is the pod's cards
    (``--d 0,1,...``). Defaults: candle-vllm's own (src/main.rs) or the references'."""

    #: Each setting's flag (:data:`core.engines.flags.CANDLE`): :meth:`argv` renders them, :meth:`read`
    #: reads them back (some are read only, as that table says).
    FLAGS: ClassVar[dict[str, str]] = flags.CANDLE

    image: Image = Field(min_length=1, description="Image, e.g. forgejo.riotpiao.com/riotpiao-poimen/candle-vllm:sm70.")
    command: list[str] = Field(
        default_factory=lambda: [CANDLE_BINARY],
        min_length=1,
        description="Server binary; clef-candle.yaml runs the fixed one on the PVC (/mnt/models/bin/candle-vllm).",
    )
    dtype: Literal["f16", "bf16", "f32"] = Field(default="f16", description="--dtype; sm_70 has no bf16 (001).")
    port: Int = Field(default=facts.CONTAINER_PORT, ge=1, le=65535, description="--p, the container port (8080).")
    max_num_seqs: Int = Field(default=16, ge=1, description="--max-num-seqs (default 16, candle-vllm's own, src/main.rs).")
    kv_fraction: Real = Field(gt=0, le=1, description="--kv-fraction of free card memory for the KV cache (0.85, 0.30).")
    prefill_chunk_size: Int | None = Field(
        default=None, ge=1024, multiple_of=1024,
        description="--prefill-chunk-size in tokens; candle-vllm asserts a multiple of 1024 (src/main.rs).",
    )

    def argv(self, weights_path: str, *, cards: int) -> list[str]:
        """candle-vllm's argv in the references' order:
        ``--w --d --dtype --p --max-num-seqs --kv-fraction [--prefill-chunk-size]``;
        ``weights_path``: ``--w``; ``cards``: the devices ``--d 0,..,cards-1`` (001)."""
        f = self.FLAGS
        argv = [
            f["weights_path"], weights_path,
            f["devices"], ",".join(str(i) for i in range(cards)),
            f["dtype"], self.dtype,
            f["port"], str(self.port),
            f["max_num_seqs"], str(self.max_num_seqs),
            f["kv_fraction"], fraction_text(self.kv_fraction),
        ]
        if self.prefill_chunk_size is not None:
            argv += [f["prefill_chunk_size"], str(self.prefill_chunk_size)]
        return argv

    def settings(self, *, cards: int) -> ServerSettings:
        """What the estimator takes from this stack-file workload; ``cards``: its TP (``--d``)."""
        return ServerSettings(
            "candle-vllm", tp=cards, dtype=self.dtype, kv_fraction=self.kv_fraction,
            prefill_chunk_size=self.prefill_chunk_size, max_num_seqs=self.max_num_seqs,
        )

    @classmethod
    def read(cls, flags: Flags, *, tp: int) -> ServerSettings:
        """The inverse of :meth:`argv` for what the estimator takes, tolerant as
        :meth:`VllmConfig.read` (absent or unreadable: None, candle-vllm's default; unknown flags
        ignored). ``tp``: the devices ``--d`` names; ``--fp8-kvcache`` reads as ``kv_cache_dtype`` fp8."""
        f = cls.FLAGS

        def get(name: str) -> str | None:
            return _last(flags, f[name])

        return ServerSettings(
            "candle-vllm", tp=tp, kv_fraction=number(get("kv_fraction")), mem_mib=human_int(get("mem_mib")),
            dtype=get("dtype"), kv_cache_dtype="fp8" if f["fp8_kvcache"] in flags else get("kv_cache_dtype"),
            block_size=human_int(get("block_size")), prefill_chunk_size=human_int(get("prefill_chunk_size")),
            mamba_fraction=number(get("mamba_fraction")), max_num_seqs=human_int(get("max_num_seqs")),
        )


S = TypeVar("S", bound=_Settings)


def settings_of(model: type[S], source: Any) -> dict[str, Any]:
    """The fields of the settings ``model`` (:class:`VllmConfig`, :class:`CandleConfig`) as
    ``source`` (a workload or component args that extend it) holds them: what the composition
    passes from a stack-file workload to its component."""
    return {name: getattr(source, name) for name in model.model_fields}

