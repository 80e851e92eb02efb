"""The engine's contract per release: what each vLLM release accepts and enforces, as data read
from the release itself (``core/data/vllm_releases.json``, written by ``python3 dev.py contract``
from the release's sdist on PyPI; schema ``vllm_releases.schema.json``).

A :class:`Release` holds every ``vllm serve`` flag (:class:`Flag`: name, aliases, kind, type,
choices, default, deprecated and its replacement), the environment variables ``vllm/envs.py``
reads, the dtype and quantization rules by compute capability, the parser names, the compute
capabilities of the published image build, and the top-k/top-p sampler's behaviour; each fact
names the file of the release it came from. :func:`release_of_image` gives the release an
image runs (its tag's version, :attr:`core.catalog.images.ImageRef.version`), or None when the data does
not hold it; :func:`removed_in` tells which covered release dropped a flag.

The file is read on first use (:func:`releases`), not at import. Plain Python and pydantic.
"""

from __future__ import annotations

import difflib
import functools
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from core.catalog import datafile, images
from core.catalog.cards import SM_AMPERE

#: The first vLLM releases that run the V1 engine by default: 0.8.0 (release notes); on cards
#: below sm_80 V1's oracle fell back to V0 ("Compute Capability < 8.0") until 0.10.0. The one
#: statement of this fact: the capacity figures (core.capacity.estimator) and the sampler rule use it.
VLLM_V1_FROM = (0, 8, 0)
VLLM_V1_PRE_AMPERE_FROM = (0, 10, 0)


def vllm_v1_by_default(version: tuple[int, ...], sm: int) -> bool:
    """Whether vLLM ``version`` runs its V1 engine by default on a card of compute capability
    ``sm`` (x10): from :data:`VLLM_V1_FROM`, below sm_80 from :data:`VLLM_V1_PRE_AMPERE_FROM`."""
    return tuple(version) >= (VLLM_V1_FROM if sm >= SM_AMPERE else VLLM_V1_PRE_AMPERE_FROM)


#: V1's TopKTopPSampler takes FlashInfer's sampling kernels whenever FlashInfer is installed (the
#: release images ship it) and ``VLLM_USE_FLASHINFER_SAMPLER`` is not ``0``
#: (vllm/v1/sample/ops/topk_topp_sampler.py); the V0 sampler used them only when the variable
#: was ``1``. Source: coder.yaml (v0.11.0 on sm_70: FlashInfer's check_cuda_arch raises).
def flashinfer_sampler_on_by_default(version: tuple[int, ...] | None, sm: int = SM_AMPERE,
                                     v1_disabled: bool = False) -> bool | None:
    """Whether vLLM ``version`` samples with FlashInfer unless told not to on a card of compute
    capability ``sm``: when it runs V1 by default there (:func:`vllm_v1_by_default`) and
    ``VLLM_USE_V1=0`` does not select V0; None when the version is unknown (a tag naming no
    release: callers take the newer, V1 behaviour and say the version is unknown)."""
    if version is None:
        return None
    return vllm_v1_by_default(version, sm) and not v1_disabled


class _Data(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Flag(_Data):
    """One command-line flag of a release, as its argparse parser declares it."""

    name: str = Field(pattern=r"^--?[A-Za-z0-9]", description="The flag (--max-model-len).")
    aliases: tuple[str, ...] = Field(description="Other spellings (-tp; --no-enable-prefix-caching of a boolean).")
    kind: Literal["value", "switch", "boolean", "count"] = Field(
        description="value: takes a value; switch: store_true/store_false, takes none; boolean: "
                    "BooleanOptionalAction (--x / --no-x), takes none; count: repeated.")
    type: str = Field(description="The value's type: int, float, str, bool, human-int (64k), json, json-or-str.")
    choices: tuple[Any, ...] | None = Field(description="The allowed values, or null when any value of the type (or "
                                                        "a list built at run time, not read).")
    nargs: int | str | None = Field(description="argparse nargs (+: one or more values), or null: one value.")
    accepts_none: bool = Field(default=False, description="The string None is accepted (an Optional field).")
    default: Any = Field(description="The default as a literal, or null (see default_expr).")
    default_expr: str | None = Field(description="The default's source text when it is not a literal.")
    deprecated: bool = Field(description="The release marks the flag deprecated (deprecated=True or its help says so).")
    replacement: str | None = Field(description="The flag the deprecation names instead, where its text names one.")
    file: str = Field(description="The release's file that declares the flag.")

    @property
    def takes_value(self) -> bool:
        return self.kind == "value"

    @property
    def spellings(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)


class EnvVar(_Data):
    """An environment variable the release reads (``vllm/envs.py`` ``environment_variables``)."""

    name: str
    default: str | None = Field(description="The default as the lambda's os.getenv literal, or null.")
    file: str


class DtypeRule(_Data):
    """A dtype the release refuses below a compute capability (``check_if_supports_dtype``)."""

    dtype: str = Field(description="torch dtype name (bfloat16).")
    min_capability: int = Field(description="Lowest compute capability x10 (80: sm_80).")
    file: str
    function: str = Field(description="The function that refuses it at start.")


class CapabilityDtypes(_Data):
    """The dtypes the CUDA platform supports from a compute capability on."""

    min_capability: int = Field(description="x10 (80: sm_80); 0: every card below the other entries.")
    dtypes: tuple[str, ...] = Field(description="torch dtype names, the platform's order (auto falls back to the first).")


class ModelTypeDtype(_Data):
    """A dtype the release refuses for a config.json ``model_type`` (``_check_valid_dtype``)."""

    model_type: str
    dtype: str
    reason: str | None


class DtypeResolution(_Data):
    """How ``--dtype`` becomes the model's dtype at start."""

    spellings: dict[str, str] = Field(description="--dtype value -> torch dtype name (half -> float16).")
    supported_by_capability: tuple[CapabilityDtypes, ...] = Field(description="Highest capability first.")
    auto_falls_back: bool = Field(description="auto takes the platform's first supported dtype when the "
                                              "checkpoint's torch_dtype is not supported on the card (no refusal).")
    refused_by_model_type: tuple[ModelTypeDtype, ...]
    files: dict[str, str] = Field(description="Each fact -> the release's file and function it came from.")

    def supported(self, sm: int) -> tuple[str, ...]:
        """The dtypes compute capability ``sm`` (x10) supports."""
        return next((e.dtypes for e in self.supported_by_capability if sm >= e.min_capability), ())

    def resolve(self, written: str | None, checkpoint: str | None, sm: int) -> str | None:
        """The torch dtype the release runs: ``written`` (a --dtype spelling) as it maps it, or for
        auto (None, ``auto``) the checkpoint's torch_dtype, float32 downcast to the first supported
        and one the card lacks replaced by it when :attr:`auto_falls_back`; None when not known."""
        if written and written != "auto":
            return self.spellings.get(written)
        if checkpoint is None:
            return None
        supported = self.supported(sm)
        if not supported:
            return None
        if checkpoint == "float32":
            return supported[0]
        return checkpoint if checkpoint in supported or not self.auto_falls_back else supported[0]


class Override(_Data):
    """What a method's ``override_quantization_method`` takes over."""

    accepts: tuple[str | None, ...] | None = Field(
        description="The --quantization values it overrides (null in the list: the flag not given); null: any.")
    reads: tuple[str, ...] | None = Field(description="The checkpoint quant_method values it compares with; null: "
                                                      "not read literally (a checkpoint_format or algorithm decides).")
    cuda: bool = Field(description="False when it applies on another platform only (CPU, XPU, ROCm).")


class QuantizationMethod(_Data):
    """A ``--quantization`` method and the lowest capability its config class accepts."""

    method: str
    config_class: str | None
    min_capability: int | None = Field(description="get_min_capability's literal (x10), or null when not a literal.")
    act_dtypes: tuple[str, ...] | None = Field(
        default=None, description="get_supported_act_dtypes' literal (torch dtype names), or null when not a literal.")
    override: Override | None = Field(default=None, description="Its override_quantization_method, or null: none.")
    file: str


class CheckpointRule(_Data):
    """How ``--quantization`` is matched with the checkpoint's ``quant_method`` (``_verify_quantization``):
    the written method must equal the checkpoint's unless an override (in ``override_order``) takes it."""

    lowercased: bool = Field(description="The checkpoint's quant_method is lower-cased first.")
    renames: dict[str, str] = Field(description="Names rewritten first (compressed_tensors -> compressed-tensors).")
    override_order: tuple[str, ...]
    file: str
    normalized_in: str = Field(description="The file and function that rewrites the checkpoint's name.")
    act_dtypes_checked: str | None = Field(description="Where the model's dtype is checked against the method's "
                                                       "get_supported_act_dtypes.")

    def normalize(self, quant_method: str) -> str:
        out = quant_method.lower() if self.lowercased else quant_method
        for old, new in self.renames.items():
            out = out.replace(old, new)
        return out


class Parsers(_Data):
    """The parser names the release registers, by kind (reasoning, tool_call)."""

    kind: Literal["reasoning", "tool_call"]
    names: tuple[str, ...]
    file: str


class ImageBuild(_Data):
    """A published image build: its CUDA, torch and the compute capabilities its kernels carry."""

    variant: str = Field(description="default: the image the release tag names (vllm/vllm-openai:vX).")
    cuda: str
    torch: str | None
    capabilities: tuple[int, ...] = Field(description="Compute capabilities x10 (70: sm_70) the build's kernels are compiled for.")
    files: tuple[str, ...]


class Sampler(_Data):
    """The V1 top-k/top-p sampler of the release (``vllm/v1/sample/ops/topk_topp_sampler.py``)."""

    flashinfer_by_default: bool | None = Field(
        description="FlashInfer's sampling kernels are taken when VLLM_USE_FLASHINFER_SAMPLER is unset (null: not read).")
    flashinfer_on_unsupported_card: Literal["raises", "falls back", "not checked"] = Field(
        description="With FlashInfer's sampler on a card it does not support: vLLM raises at start, falls back to the "
                    "PyTorch path, or does not check (FlashInfer's own check raises when it samples).")
    sort_free_from_rows: int | None = Field(
        description="Rows from which the PyTorch path masks top-k/top-p without a sort (Triton); null: always sorts.")
    file: str


class Source(_Data):
    """The published package the release's facts were read from."""

    package: str = Field(description="The sdist's file name (vllm-0.11.0.tar.gz).")
    index: str = Field(description="The package index it came from.")
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")


class Release(_Data):
    """One release's contract."""

    engine: Literal["vllm", "candle-vllm"]
    release: str = Field(description="The release (0.11.0) or, for candle-vllm, the commit.")
    source: Source
    flags: tuple[Flag, ...]
    env: tuple[EnvVar, ...] = ()
    dtype_rules: tuple[DtypeRule, ...] = ()
    dtype: DtypeResolution | None = None
    quantization: tuple[QuantizationMethod, ...] = ()
    quantization_checkpoint: CheckpointRule | None = None
    parsers: tuple[Parsers, ...] = ()
    image_builds: tuple[ImageBuild, ...] = ()
    sampler: Sampler | None = None

    @property
    def version(self) -> tuple[int, ...]:
        """The release as a tuple of ints (``0.11.0`` -> ``(0, 11, 0)``); a commit: ``()``."""
        return tuple(int(p) for p in self.release.split(".") if p.isdigit()) if self.engine == "vllm" else ()

    @functools.cached_property
    def by_spelling(self) -> dict[str, Flag]:
        """Each spelling (name and aliases) -> its flag."""
        return {s: f for f in self.flags for s in f.spellings}

    def flag(self, spelling: str) -> Flag | None:
        """The flag ``spelling`` names (``-tp`` -> ``--tensor-parallel-size``), or None."""
        return self.by_spelling.get(spelling)

    def suggest(self, spelling: str) -> str | None:
        """The closest flag name (difflib, cutoff 0.75), for "did you mean"."""
        hits = difflib.get_close_matches(spelling, list(self.by_spelling), n=1, cutoff=0.75)
        return hits[0] if hits else None

    @functools.cached_property
    def env_names(self) -> frozenset[str]:
        return frozenset(e.name for e in self.env)

    def parsers_of(self, kind: str) -> Parsers | None:
        return next((p for p in self.parsers if p.kind == kind), None)

    def quantization_method(self, method: str) -> QuantizationMethod | None:
        return next((q for q in self.quantization if q.method == method), None)

    def dtype_rule(self, dtype: str) -> DtypeRule | None:
        """The capability rule of ``dtype`` as ``--dtype`` spells it (bfloat16)."""
        return next((r for r in self.dtype_rules if r.dtype == dtype), None)

    @property
    def label(self) -> str:
        """``vLLM 0.11.0`` / ``candle-vllm 36fe5d9`` as messages name it."""
        return f"vLLM {self.release}" if self.engine == "vllm" else f"candle-vllm {self.release[:7]}"


#: The vLLM contract file, ``core/data/vllm_releases.json`` (generated: ``python3 dev.py contract``).
VLLM_FILE = datafile.Catalog(
    "vllm_releases", TypeAdapter(tuple[Release, ...]), "vLLM's contract per release (core/data/vllm_releases.json)",
    "Generated by `python3 dev.py contract` from each release's sdist on PyPI: flags, env, value rules, image "
    "builds, sampler; each fact with the release's file it came from.", name_key="release", suffix="json")


#: candle-vllm's contract per commit, ``core/data/candle_vllm_commits.json``: written by ``python3 dev.py
#: contract --candle DIR`` from a checkout (candle-vllm is on neither PyPI nor crates.io; CI cannot regenerate it).
CANDLE_FILE = datafile.Catalog(
    "candle_vllm_commits", TypeAdapter(tuple[Release, ...]), "candle-vllm's flags per commit (core/data/candle_vllm_commits.json)",
    "Generated by `python3 dev.py contract --candle DIR` from a checkout's src/main.rs (clap Args): each commit's flags.",
    name_key="release", suffix="json")


@functools.cache
def candle_commits() -> tuple[Release, ...]:
    """The candle-vllm commits the data covers (read once)."""
    return tuple(CANDLE_FILE.load())


def candle_commit_of_image(image: str) -> Release | None:
    """The covered candle-vllm commit an image's tag names by a prefix of 7 or more hex digits
    (``candle-vllm:36fe5d9``, ``candle-vllm:sm70-36fe5d951a``), or None (``sm70``, ``latest``)."""
    tag = images.parse_image(image).tag or ""
    words = [w for w in re.split(r"[^0-9a-f]+", tag.lower()) if len(w) >= 7]
    return next((c for c in candle_commits() for w in words if c.release.startswith(w)), None)


@functools.cache
def releases() -> tuple[Release, ...]:
    """The vLLM releases the data covers, oldest first (read once)."""
    return tuple(sorted(VLLM_FILE.load(), key=lambda r: r.version))


def release(version: tuple[int, ...] | str) -> Release | None:
    """The covered release ``version`` names (``(0, 11, 0)`` or ``"0.11.0"``), or None."""
    wanted = tuple(int(p) for p in version.split(".")) if isinstance(version, str) else tuple(version)
    return next((r for r in releases() if r.version == wanted), None)


def release_of_image(image: str) -> Release | None:
    """The covered vLLM release an image's tag names (``vllm/vllm-openai:v0.11.0``), or None when
    the tag names none (``latest``) or one the data does not cover."""
    version = images.parse_image(image).version
    return release(version) if version is not None else None


def covered() -> str:
    """The covered releases as messages list them: ``0.10.1.1, 0.11.0, 0.14.1, 0.19.1``."""
    return ", ".join(r.release for r in releases())


def removed_in(rel: Release, spelling: str) -> tuple[Release, Release] | None:
    """(the last covered release before ``rel`` that has ``spelling``, the first covered one after
    it that does not), when a covered older release had the flag and ``rel`` has not; else None."""
    if rel.engine != "vllm" or rel.flag(spelling) is not None:
        return None
    older = [r for r in releases() if r.version < rel.version and r.flag(spelling) is not None]
    if not older:
        return None
    last = older[-1]
    after = next(r for r in releases() if r.version > last.version and r.flag(spelling) is None)
    return last, after
