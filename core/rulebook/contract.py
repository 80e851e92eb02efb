"""A vLLM server judged against the contract of the release its image runs
(:mod:`core.engines.contracts`, read from the release itself): every flag known to that release (a typo
says "did you mean", a flag a newer release dropped names both releases), each value of the
flag's type and among its choices, the ``VLLM_*`` environment variables the release reads, the
card's compute capability among those the image build carries, and CPU offload within the pod's
memory limit.

The flags and env come from the existing read model (:class:`core.k8s.manifests.servers.ServerArgs`:
``_`` already read as ``-``; the container's env as the kubelet sets it); nothing here parses
an argv. Release unknown to the data: nothing is judged here (the pack's coverage lists it).

Source: each release's ``vllm/engine/arg_utils.py``, ``vllm/entrypoints/openai/cli_args.py``,
``vllm/envs.py``, ``docker/Dockerfile`` and ``CMakeLists.txt`` (the file each fact names).
Plain Python, no Pulumi.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Iterable, Mapping
from typing import TYPE_CHECKING

from core.catalog import images
from core.catalog.cards import SM_AMPERE
from core.engines import contracts
from core.engines.config import human_int
from core.engines.contracts import Flag, QuantizationMethod, Release
from core.judging.registry import Breach, declare_policy, rule

if TYPE_CHECKING:
    from core.catalog.modelfacts import ModelFacts

#: ``--cpu-offload-gb``: GiB of weights each rank keeps in pinned CPU memory (CacheConfig /
#: UVAOffloadConfig ``cpu_offload_gb``, "per GPU").
CPU_OFFLOAD_FLAG = "--cpu-offload-gb"
MIB_PER_GIB = 1024
#: The repositories whose images are the release's published build (docker/Dockerfile, target vllm-openai).
OFFICIAL_IMAGES = frozenset({"vllm/vllm-openai"})
#: difflib cutoff for an env name: only a near miss of a name the release reads is a typo.
ENV_CUTOFF = 0.9


def _prefix_match(rel: Release, spelling: str) -> Flag | None:
    """A long option's unique prefix names it: argparse's ``allow_abbrev``, on by default."""
    if not spelling.startswith("--") or len(spelling) < 4:
        return None
    hits = {f.name for s, f in rel.by_spelling.items() if s.startswith(spelling)}
    return rel.flag(hits.pop()) if len(hits) == 1 else None


def resolve(rel: Release, spelling: str) -> Flag | None:
    """The flag ``spelling`` names in ``rel``: exact, a short option with its value attached
    (``-O3``), or a unique prefix of a long option."""
    found = rel.flag(spelling)
    if found is None and not spelling.startswith("--") and len(spelling) > 2:
        found = rel.flag(spelling[:2])
    return found or _prefix_match(rel, spelling)


@rule("vllm-flag-known", "Every flag is one the image's vLLM release declares.",
      "the release's vllm/engine/arg_utils.py and vllm/entrypoints/openai/cli_args.py (core/data/vllm_releases.json)",
      policy="engine-contract")
def flag_known(rel: Release, spelling: str) -> Breach | None:
    """``spelling`` is a flag of ``rel``; else the breach names the release, and either the
    covered release that still had it (and the replacement its deprecation named) or the closest
    flag of ``rel``."""
    if resolve(rel, spelling) is not None:
        return None
    gone = contracts.removed_in(rel, spelling)
    if gone is not None:
        last, first = gone
        old = last.flag(spelling)
        instead = f"; {last.label} named {old.replacement} instead" if old and old.replacement else ""
        fix = f"use {old.replacement}" if old and old.replacement else f"remove {spelling} (or run {last.label})"
        return Breach(f"flag {spelling} was removed from vLLM: {last.label} has it, {first.label} has not, and the "
                      f"image runs {rel.label}{instead}", fix)
    near = rel.suggest(spelling)
    hint = f"; did you mean {near}?" if near else ""
    refusal = ("vllm serve refuses to start: unrecognized arguments" if rel.engine == "vllm"
               else "candle-vllm refuses to start: unexpected argument")
    return Breach(f"flag {spelling} is not a flag of {rel.label} ({refusal}){hint}",
                  f"spell it {near}" if near else f"remove {spelling}")


def _value_ok(flag: Flag, value: str) -> bool:
    if flag.accepts_none and value == "None":
        return True
    if flag.choices is not None:
        return value in {str(c) for c in flag.choices}
    if flag.type.endswith("-list"):  # clap value_delimiter = ',': each item of the element type
        element = flag.model_copy(update={"type": flag.type.removesuffix("-list")})
        return all(_value_ok(element, item) for item in value.split(","))
    try:
        if flag.type == "int":
            int(value)
        elif flag.type == "float":
            float(value)
        elif flag.type == "human-int":
            return human_int(value) is not None or value.strip().lstrip("-").isdigit()
    except ValueError:
        return False
    return True


def _allowed(flag: Flag) -> str:
    if flag.choices is not None:
        return "one of " + ", ".join(str(c) for c in flag.choices)
    return {"int": "an integer", "float": "a number", "human-int": "an integer (64k and 64K allowed)",
            "int-list": "a comma-separated list of integers"}.get(flag.type, flag.type)


@rule("vllm-flag-value", "Each flag's value is of the type and among the choices its release declares.",
      "the release's config dataclasses as vllm/engine/arg_utils.py _compute_kwargs reads them (core/data/vllm_releases.json)",
      policy="engine-contract")
def flag_value(rel: Release, spelling: str, values: Iterable[str], with_equals: bool = False) -> Breach | None:
    """The values given to ``spelling``: a switch takes none (``--enforce-eager=true`` is refused
    by argparse: "ignored explicit argument"); a value flag's each value of its type and among its
    choices (an argument a switch left behind is the next positional, not judged here)."""
    flag = resolve(rel, spelling)
    if flag is None:
        return None
    if flag.kind in ("switch", "boolean"):
        if with_equals:
            return Breach(f"flag {spelling} of {rel.label} takes no value, but it is written with one ({spelling}=...)",
                          f"write {spelling} alone (or --no-{flag.name[2:]} to turn it off)"
                          if flag.kind == "boolean" else f"write {spelling} alone")
        return None
    bad = [v for v in values if "$(" not in v and not _value_ok(flag, v)]
    if not bad:
        return None
    return Breach(f"flag {spelling}={bad[0]}: {rel.label} takes {_allowed(flag)} ({flag.file})",
                  f"set {flag.name} to {_allowed(flag)}")


#: The flags that name a parser, by the kind the contract lists (:class:`core.engines.contracts.Parsers`), and
#: the flag that loads a plugin, whose parsers the release cannot list.
PARSER_FLAGS = {"--reasoning-parser": ("reasoning", "--reasoning-parser-plugin"),
                "--tool-call-parser": ("tool_call", "--tool-parser-plugin")}


@rule("vllm-parser-known", "A parser name is one the release registers (or a plugin may).",
      "the release's register_module names of vllm/reasoning/ and the tool parsers (core/data/vllm_releases.json)",
      policy="engine-contract")
def parser_known(rel: Release, flag: str, value: str, plugin: bool = False) -> Breach | None:
    """``value`` of ``--reasoning-parser`` / ``--tool-call-parser`` (``flag``) is a name ``rel``
    registers; with a plugin flag (``plugin``) or where the release lists none, anything goes."""
    kind = PARSER_FLAGS[flag][0]
    names = rel.parsers_of(kind)
    if plugin or names is None or not value or value in names.names or "$(" in value:
        return None
    near = difflib.get_close_matches(value, list(names.names), n=1, cutoff=0.6)
    hint = f"; did you mean {near[0]}?" if near else ""
    return Breach(f"{flag} {value}: {rel.label} registers no such parser (it refuses to start); its {kind.replace('_', '-')} "
                  f"parsers are {', '.join(names.names)} ({names.file}){hint}",
                  f"set {flag} to one of them" + (f" ({near[0]})" if near else "") +
                  f", or load the parser with {PARSER_FLAGS[flag][1]}")


@rule("vllm-env-known", "A VLLM_* variable that is a near miss of one the release reads is a typo.",
      "the release's vllm/envs.py environment_variables (core/data/vllm_releases.json)", policy="engine-contract")
def env_known(rel: Release, name: str) -> Breach | None:
    """``name`` (a container env name starting ``VLLM_``) is read by ``rel``, or is no near miss
    of a name it reads (difflib ratio :data:`ENV_CUTOFF`): other names may be a plugin's."""
    if not name.startswith("VLLM_") or name in rel.env_names:
        return None
    near = difflib.get_close_matches(name, sorted(rel.env_names), n=1, cutoff=ENV_CUTOFF)
    if not near:
        return None
    return Breach(f"env {name} is not read by {rel.label} (vllm/envs.py), so it has no effect; did you mean {near[0]}?",
                  f"rename the variable to {near[0]}")


def kernels_run_on(built: Collection[int], sm: int) -> bool:
    """Kernels compiled for capabilities ``built`` (x10) run on a card of capability ``sm`` (x10):
    a cubin for X.y runs on X.z with z >= y (NVIDIA's CUDA C++ Programming Guide, Binary
    Compatibility), so vLLM's sm_80 build serves an A10's sm_86."""
    return any(c // 10 == sm // 10 and c <= sm for c in built)


@rule("vllm-image-capability", "The image's build carries kernels for the card's compute capability.",
      "the release's docker/Dockerfile torch_cuda_arch_list within CMakeLists.txt CUDA_SUPPORTED_ARCHS",
      policy="engine-contract")
def image_capability(rel: Release, image: str, sm: int, card: str) -> Breach | None:
    """The default build of ``rel`` (the image its release tag names) carries kernels that run on
    compute capability ``sm`` (x10) of ``card``: one compiled for the same major capability at or
    below it (:func:`kernels_run_on`). Judged for the project's published images only
    (:data:`OFFICIAL_IMAGES`): an image built elsewhere from the same release may carry another
    arch list."""
    build = next((b for b in rel.image_builds if b.variant == "default"), None)
    if build is None or kernels_run_on(build.capabilities, sm) or images.repository_path(image) not in OFFICIAL_IMAGES:
        return None
    shown = ", ".join(f"sm_{c}" for c in build.capabilities)
    return Breach(f"image {image} ({rel.label}, CUDA {build.cuda}) is built for {shown}: no kernels for the {card}'s "
                  f"sm_{sm} ({', '.join(build.files[:2])})",
                  f"run a vLLM release whose image is built for sm_{sm} on this node, or schedule the server on a newer card")


def _taken_over(rel: Release, written: str | None, checkpoint: str | None) -> bool:
    """Whether an override method of ``rel`` that runs on CUDA may take ``written`` (the
    ``--quantization`` value, None: not given) for a checkpoint of ``checkpoint`` (its
    quant_method, None: not known): it accepts the value and reads that checkpoint (or reads none
    literally), so the release may run another method than the one named."""
    for m in rel.quantization:
        o = m.override
        if o is None or not o.cuda:
            continue
        if (o.accepts is None or written in o.accepts) and (o.reads is None or checkpoint is None or checkpoint in o.reads):
            return True
    return False


def _checkpoint_method(rel: Release, checkpoint: ModelFacts | None) -> str | None:
    """The checkpoint's config.json quant_method as ``rel`` normalizes it, or None (unquantized or not known)."""
    if checkpoint is None or checkpoint.quantization is None:
        return None
    rule_ = rel.quantization_checkpoint
    return rule_.normalize(checkpoint.quantization.method) if rule_ else checkpoint.quantization.method


@rule("vllm-card-capability", "The dtype and quantization method are ones the release runs on the card.",
      "the release's vllm/platforms/cuda.py check_if_supports_dtype and each quantization method's "
      "get_min_capability (core/data/vllm_releases.json)", policy="engine-contract")
def card_capability(rel: Release, dtype: str | None, quantization: str | None, sm: int, card: str,
                    checkpoint: ModelFacts | None = None) -> Breach | None:
    """``--dtype`` and ``--quantization`` as written (or, not written, the ``checkpoint``'s
    torch_dtype and quant_method, as the release resolves them), against the capability rules of
    ``rel`` for compute capability ``sm`` (x10) of ``card``: vLLM refuses a bfloat16 model below
    the dtype rule's capability (auto on a bfloat16 checkpoint falls back to float16 in the releases
    whose ``_resolve_auto_dtype`` reads the platform's dtypes: no refusal) and a method below its
    config class's ``get_min_capability`` (a checkpoint's own method only when no override may take it)."""
    resolution = rel.dtype
    written = dtype if dtype and dtype != "auto" else None
    torch_dtype = resolution.resolve(written, checkpoint.torch_dtype if checkpoint else None, sm) if resolution else written
    for rule_ in rel.dtype_rules:
        if torch_dtype == rule_.dtype and sm < rule_.min_capability:
            if written:  # the message as before the checkpoint was read
                return Breach(f"--dtype {dtype}: {rel.label} refuses it below sm_{rule_.min_capability} and the {card} "
                              f"is sm_{sm} ({rule_.file})", "set --dtype float16 (or half)")
            return Breach(f"--dtype auto on a checkpoint of torch_dtype {checkpoint.torch_dtype if checkpoint else '?'}: "
                          f"{rel.label} runs it as {torch_dtype}, which it refuses below sm_{rule_.min_capability}, and "
                          f"the {card} is sm_{sm} ({rule_.file} {rule_.function})", "set --dtype float16 (or half)")
    ckpt = _checkpoint_method(rel, checkpoint)
    name = quantization or (ckpt if ckpt and not _taken_over(rel, None, ckpt) else None)
    method = rel.quantization_method(name) if name else None
    if method is not None and method.min_capability is not None and 0 <= sm < method.min_capability:
        how = f"--quantization {quantization}" if quantization else f"the checkpoint's quant_method {name}"
        return Breach(f"{how}: {rel.label}'s {method.config_class} needs sm_{method.min_capability}, "
                      f"the {card} is sm_{sm} ({method.file})",
                      "use a checkpoint and method the card runs (gptq on this card, or float16 weights)")
    return None


@rule("vllm-model-type-dtype", "The dtype is not one the release refuses for the model's config.json model_type.",
      "the release's _check_valid_dtype (_FLOAT16_NOT_SUPPORTED_MODELS) and _resolve_auto_dtype "
      "(core/data/vllm_releases.json)", policy="engine-contract")
def model_type_dtype(rel: Release, dtype: str | None, checkpoint: ModelFacts | None, sm: int | None = None,
                     card: str | None = None) -> Breach | None:
    """``--dtype`` as written (float16, half) on a model whose config.json ``model_type`` ``rel``
    refuses that dtype for (gemma2, gemma3, glm4, plamo2): the release raises at start on any card.
    The fix depends on the card (``sm`` x10, ``card``; None: not known): bfloat16 from the release's
    bfloat16 rule on, else float32. Not judged: auto (every covered release's ``_resolve_auto_dtype``
    leaves the refused dtype out of the card's supported ones, so auto runs bfloat16 or float32),
    a model of unknown model_type."""
    resolution = rel.dtype
    model_type = checkpoint.model_type if checkpoint is not None else None
    if resolution is None or not model_type or not dtype or dtype == "auto" or "$(" in dtype:
        return None
    torch_dtype = resolution.spellings.get(dtype)
    refused = next((r for r in resolution.refused_by_model_type
                    if r.model_type == model_type and r.dtype == torch_dtype), None)
    if refused is None:
        return None
    bf16 = rel.dtype_rule("bfloat16")
    need = bf16.min_capability if bf16 is not None else SM_AMPERE
    reason = f" (\"{refused.reason}\")" if refused.reason else ""
    where = resolution.files.get("refused_by_model_type", "_check_valid_dtype")
    if sm is None:
        fix = (f"set --dtype bfloat16 on a card of sm_{need} or newer; below it {rel.label} runs this model in "
               "float32 only (--dtype float32, or auto), at twice float16's memory")
    elif sm >= need:
        fix = f"set --dtype bfloat16 (the {card} is sm_{sm})"
    else:
        fix = (f"the {card} is sm_{sm}, below bfloat16's sm_{need}: {rel.label} cannot run this model in 16 bits there; "
               f"set --dtype float32 (or auto) at twice float16's memory, or schedule the server on a card of sm_{need} or newer "
               "with --dtype bfloat16")
    return Breach(f"--dtype {dtype} on a model of model_type {model_type}: {rel.label} refuses {torch_dtype} for it at "
                  f"start{reason} ({where})", fix)


@rule("vllm-quantization-checkpoint", "--quantization names the method of the checkpoint, or one the release converts it to.",
      "the release's ModelConfig._verify_quantization and each method's override_quantization_method "
      "(core/data/vllm_releases.json)", policy="engine-contract")
def checkpoint_format(rel: Release, quantization: str | None, checkpoint: ModelFacts | None) -> Breach | None:
    """``--quantization`` as written against the quant_method of the checkpoint's config.json:
    ``rel`` refuses a method that is neither the checkpoint's (as it normalizes the name) nor one
    an override method running on CUDA takes for it (``awq_marlin`` for ``awq``, ``modelopt`` for
    any value). Not judged: no flag, no quantized checkpoint known, an unread override."""
    rule_ = rel.quantization_checkpoint
    ckpt = _checkpoint_method(rel, checkpoint)
    if rule_ is None or not quantization or ckpt is None or "$(" in quantization:
        return None
    written = quantization.lower()
    if written == ckpt or rel.quantization_method(written) is None or _taken_over(rel, written, ckpt):
        return None
    return Breach(f"--quantization {quantization}: the checkpoint's config.json says quant_method {ckpt}, and "
                  f"{rel.label} refuses a method that does not match it (\"Quantization method specified in the model "
                  f"config ({ckpt}) does not match the quantization method specified in the `quantization` argument "
                  f"({written})\", {rule_.file})",
                  f"remove --quantization ({rel.label} reads {ckpt} from config.json) or set it to {ckpt}")


def _act_dtypes_refuse(rel: Release, method: QuantizationMethod, torch_dtype: str) -> bool:
    return method.act_dtypes is not None and torch_dtype not in method.act_dtypes


@rule("vllm-quantization-dtype", "The model's dtype is one the quantization method runs activations in.",
      "the release's get_supported_act_dtypes of each quantization config class, checked in "
      "VllmConfig._get_quantization_config (core/data/vllm_releases.json)", policy="engine-contract")
def quantization_dtype(rel: Release, quantization: str | None, dtype: str | None,
                       checkpoint: ModelFacts | None = None) -> Breach | None:
    """``--quantization`` and ``--dtype`` as written: ``rel`` refuses a dtype the method's
    ``get_supported_act_dtypes`` lacks (gptq and awq: float16 only). Judged when both are written
    and no override method may take the written one (``gptq_marlin`` runs bfloat16) for the
    checkpoint (not known: taken to be of the written method, as the release requires)."""
    if not quantization or not dtype or dtype == "auto" or rel.dtype is None or "$(" in quantization + dtype:
        return None
    method = rel.quantization_method(quantization.lower())
    torch_dtype = rel.dtype.spellings.get(dtype)
    ckpt = _checkpoint_method(rel, checkpoint) or method.method if method is not None else None
    if method is None or torch_dtype is None or _taken_over(rel, method.method, ckpt):
        return None
    if not _act_dtypes_refuse(rel, method, torch_dtype):
        return None
    allowed = ", ".join(method.act_dtypes or ())
    checked = rel.quantization_checkpoint.act_dtypes_checked if rel.quantization_checkpoint else None
    return Breach(f"--quantization {quantization} with --dtype {dtype}: {rel.label}'s {method.config_class} runs "
                  f"{allowed} only, and the release refuses {torch_dtype} at start "
                  f"(\"torch.{torch_dtype} is not supported for quantization method {method.method}\", {checked or method.file})",
                  f"set --dtype {(method.act_dtypes or ('float16',))[0]}")


def catalog_model(model_arg: str | None) -> ModelFacts | None:
    """The built-in model catalog's facts (core/data/models.yaml) for a server's model argument
    by its hub id (``Qwen/Qwen3-14B``, ``hf://...``, a cache snapshot path), or None."""
    from core.catalog import modelfacts  # noqa: PLC0415 (the catalog loads on first use)

    hit = modelfacts.Models(entries={}, facts={}).find(model_arg)
    return hit[1] if hit else None


@rule("vllm-cpu-offload-memory", "CPU offload fits in the container's memory limit.",
      "the release's --cpu-offload-gb (GiB of weights a rank keeps in CPU memory, per GPU)", policy="engine-contract")
def cpu_offload(rel: Release, offload_gib: float | None, ranks: int, limit_mib: float | None) -> Breach | None:
    """``--cpu-offload-gb`` x the ranks of the pod (TP x PP) stays within the container's memory
    limit (MiB); nothing to judge without offload or without a limit."""
    if not offload_gib or offload_gib <= 0 or limit_mib is None:
        return None
    need_mib = offload_gib * MIB_PER_GIB * ranks
    if need_mib <= limit_mib:
        return None
    return Breach(f"--cpu-offload-gb {offload_gib:g} on {ranks} rank(s) keeps {need_mib / MIB_PER_GIB:g} GiB of weights "
                  f"in CPU memory, above the container's memory limit of {limit_mib / MIB_PER_GIB:g} GiB "
                  f"({rel.label}: the kernel OOM-kills the server while it loads)",
                  f"raise resources.limits.memory above {need_mib / MIB_PER_GIB:g}Gi plus the server's own, "
                  "or lower --cpu-offload-gb")


def flag_breaches(rel: Release, flags: Mapping[str, Iterable[str]], raw: Iterable[str],
                  checkpoint: ModelFacts | None = None) -> list[Breach]:
    """Every flag breach of one server's flags (:attr:`core.k8s.manifests.servers.ServerArgs.flags`)
    against ``rel``: unknown or removed flags, then values, then ``--quantization`` against the
    checkpoint (``checkpoint``; not given: the built-in catalog's model of the argv's model
    argument, :func:`catalog_model`) and against ``--dtype``."""
    raw = tuple(raw)
    written_eq = {t.partition("=")[0].replace("_", "-") if t.startswith("--") else t.partition("=")[0]
                  for t in raw if t.startswith("-") and "=" in t}
    out: list[Breach | None] = []
    for spelling, values in flags.items():
        if "$(" in spelling or "${" in spelling:
            continue
        known = flag_known(rel, spelling)
        out.append(known or flag_value(rel, spelling, tuple(values), spelling in written_eq))
        flag = resolve(rel, spelling)
        if flag is not None and flag.name in PARSER_FLAGS and values and rel.engine == "vllm":
            plugin = any((f := resolve(rel, s)) is not None and f.name == PARSER_FLAGS[flag.name][1] for s in flags)
            out.append(parser_known(rel, flag.name, tuple(values)[-1], plugin))
    if rel.engine == "vllm":
        quant = _last(rel, flags, "--quantization")
        if quant is not None:
            if checkpoint is None:
                from core.k8s.manifests.servers import parse_args  # noqa: PLC0415 (the read model imports the rulebook's users)

                checkpoint = catalog_model(parse_args("vllm", raw).model_arg)
            out.append(checkpoint_format(rel, quant, checkpoint))
            out.append(quantization_dtype(rel, quant, (_last(rel, flags, "--dtype") or "").lower() or None, checkpoint))
    return [b for b in out if b]


def _last(rel: Release, flags: Mapping[str, Iterable[str]], name: str) -> str | None:
    """The last value of the flag ``name`` as any spelling of ``rel`` gives it (``-q awq``), or None."""
    value = None
    for spelling, values in flags.items():
        found = resolve(rel, spelling)
        if found is not None and found.name == name and tuple(values):
            value = tuple(values)[-1]
    return value


def env_breaches(rel: Release, env: Iterable[str]) -> list[Breach]:
    """Every env typo of a container's env names against ``rel``."""
    return [b for b in (env_known(rel, name) for name in env) if b]


declare_policy(
    "engine-contract",
    "A vLLM server's flags, env, card and memory against the contract of the release its image runs.",
    (
        "Spell each flag as the image's vLLM release declares it (vllm serve --help of that release), give each the "
        "type and a value among its choices, name env variables the release reads, run an image built for the card's "
        "compute capability, and give CPU offload room in the memory limit."
    ),
    kind="resource",
    level="mandatory",
    severity="high",
    doc="""engine-contract: a model server against the contract of the release its image runs.

Applies to every vLLM container (any workload kind the read model knows) whose image tag names a
release the contract covers (``core/data/vllm_releases.json``, generated from each release's
sdist: ``python3 dev.py contract``). The release is the image's, not the one the catalog assumes.
One violation per problem (:mod:`core.rulebook.contract`):
  - a flag the release does not declare: "did you mean" the closest, or, for a flag a covered
    older release had, both releases and the replacement its deprecation named;
  - a value not of the flag's type or not among its choices; a switch written with ``=value``;
  - a parser name (``--reasoning-parser``, ``--tool-call-parser``) the release does not register,
    unless a parser plugin flag may register it;
  - a ``VLLM_*`` env name that is a near miss of one the release's ``vllm/envs.py`` reads;
  - on a pod that holds cards, a card whose compute capability the image build does not carry
    (the Dockerfile's ``torch_cuda_arch_list`` within CMakeLists.txt's supported list);
  - on a card of sm_75 or more (below it ``vllm-volta`` judges them), ``--dtype bfloat16`` below the
    release's dtype rule and a ``--quantization`` method below its config class's minimum capability;
  - ``--dtype float16`` (or ``half``) on a model whose config.json ``model_type`` the release refuses
    float16 for (``_check_valid_dtype``: gemma2, gemma3, glm4, plamo2), on any card; the fix names
    bfloat16 on a card of sm_80 or more, float32 below it;
  - ``--quantization`` that is neither the checkpoint's config.json ``quant_method`` (the stack's or
    the catalog's model of ``--model``) nor one an override of the release takes for it; a written
    ``--dtype`` the method's activation dtypes lack (awq, gptq: float16);
  - ``--cpu-offload-gb`` x the pod's ranks above the container's memory limit.

A candle-vllm server is judged the same way for its flags (unknown: "did you mean"; a value not
of the flag's type; a switch written with a value) when its image tag names a commit the data
covers by a prefix of 7 or more hex digits (``core/data/candle_vllm_commits.json``, read from
a checkout of candle-vllm's ``src/main.rs``).

Source: the release's own files, named in each message. Does not check: a tag that names no
covered release or commit (the coverage lines of ``analyze`` say so), JSON-valued flags'
contents, a flag set through a config file (``--config``), CPU for worker processes.
""",
)
