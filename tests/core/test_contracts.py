"""The engine's contract per release (core/data/vllm_releases.json, core/engines/contracts.py): the
committed schema is what the type generates, every entry validates against it, each fact names
the release's file it came from, and the facts read from the releases hold what their sources
say (each value below was checked against the release's own file, named beside it)."""

from __future__ import annotations

import json

import jsonschema

from core.engines import contracts


def _raw() -> list[dict]:
    return json.loads(contracts.VLLM_FILE.path.read_text(encoding="utf-8"))


def test_the_committed_schema_is_what_the_type_generates():
    assert contracts.VLLM_FILE.schema_path.read_text(encoding="utf-8") == contracts.VLLM_FILE.schema_text(), (
        "core/data/vllm_releases.schema.json is stale; regenerate: python3 dev.py contract")


def test_every_release_validates_against_the_schema_and_names_its_package():
    schema = contracts.VLLM_FILE.schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.Draft202012Validator(schema).validate(_raw())
    for rel in contracts.releases():
        assert rel.source.package == f"vllm-{rel.release}.tar.gz"
        assert rel.source.index == "https://pypi.org/simple/vllm/"
        assert all(f.file.startswith("vllm/") for f in rel.flags)
        assert all(e.file == "vllm/envs.py" for e in rel.env)


def test_prod_release_one_older_and_one_newer_are_covered():
    versions = [r.version for r in contracts.releases()]
    assert (0, 11, 0) in versions
    assert min(versions) < (0, 11, 0) < max(versions)


def test_v0_11_0_flags_as_its_arg_utils_declares_them():
    rel = contracts.release("0.11.0")
    assert rel is not None
    tp = rel.flag("-tp")
    assert tp is not None and tp.name == "--tensor-parallel-size" and tp.type == "int" and tp.default == 1
    mml = rel.flag("--max-model-len")
    assert mml is not None and mml.type == "human-int"  # arg_utils._compute_kwargs: human_readable_int
    dtype = rel.flag("--dtype")
    assert dtype is not None and dtype.choices == ("auto", "half", "float16", "bfloat16", "float", "float32")
    assert dtype.default == "auto"
    epc = rel.flag("--no-enable-prefix-caching")
    assert epc is not None and epc.name == "--enable-prefix-caching" and epc.kind == "boolean"
    quant = rel.flag("-q")
    assert quant is not None and "gptq" in quant.choices and "None" in quant.choices and "marlin" not in quant.choices
    assert rel.flag("--swap-space").default == 4 and rel.flag("--cpu-offload-gb").default == 0
    assert rel.flag("--task").deprecated
    assert rel.flag("--headless").kind == "switch"


def test_a_flag_removed_between_covered_releases_names_both():
    newest = contracts.releases()[-1]
    hit = contracts.removed_in(newest, "--swap-space")
    assert hit is not None
    last, first_without = hit
    assert last.release == "0.14.1" and first_without.release == "0.19.1"
    assert contracts.removed_in(newest, "--max-model-len") is None


def test_env_value_rules_and_parsers_of_v0_11_0():
    rel = contracts.release("0.11.0")
    assert "VLLM_USE_FLASHINFER_SAMPLER" in rel.env_names and "VLLM_ATTENTION_BACKEND" in rel.env_names
    assert rel.dtype_rule("bfloat16").min_capability == 80  # vllm/platforms/cuda.py check_if_supports_dtype
    assert rel.quantization_method("gptq").min_capability == 60  # quantization/gptq.py get_min_capability
    assert rel.quantization_method("awq").min_capability == 75
    assert "qwen3" in rel.parsers_of("reasoning").names and "hermes" in rel.parsers_of("tool_call").names


def test_image_builds_carry_the_capabilities_of_their_dockerfile_and_cmake():
    # 0.11.0: CUDA 12.8.1, torch_cuda_arch_list '7.0 7.5 8.0 8.9 9.0 10.0 12.0' (docker/Dockerfile)
    build = contracts.release("0.11.0").image_builds[0]
    assert (build.cuda, build.torch) == ("12.8.1", "2.8.0")
    assert build.capabilities == (70, 75, 80, 89, 90, 100, 120)
    # 0.19.1: CUDA 12.9.1, so CMakeLists.txt's 12.8 branch (7.0 kept), not the 13.0 one (from 7.5)
    newest = contracts.release("0.19.1").image_builds[0]
    assert (newest.cuda, newest.torch) == ("12.9.1", "2.10.0") and newest.capabilities[0] == 70


def test_the_sampler_of_each_release_as_topk_topp_sampler_says():
    on = contracts.release("0.11.0").sampler
    assert on.flashinfer_by_default is True and on.flashinfer_on_unsupported_card == "not checked"
    assert on.sort_free_from_rows is None
    off = contracts.release("0.19.1").sampler
    assert off.flashinfer_by_default is False and off.flashinfer_on_unsupported_card == "raises"
    assert off.sort_free_from_rows == 8


def test_an_image_tag_names_its_release_or_none():
    assert contracts.release_of_image("docker.io/vllm/vllm-openai:v0.11.0@sha256:" + "a" * 64).release == "0.11.0"
    assert contracts.release_of_image("vllm/vllm-openai:latest") is None
    assert contracts.release_of_image("vllm/vllm-openai:v0.9.2") is None


def test_candle_vllm_flags_as_its_main_rs_declares_them():
    """core/data/candle_vllm_commits.json, read from a checkout of EricLBuehler/candle-vllm
    (src/main.rs, clap Args): the flags the stack renders are there with clap's types."""
    schema = contracts.CANDLE_FILE.schema()
    jsonschema.Draft202012Validator(schema).validate(json.loads(contracts.CANDLE_FILE.path.read_text(encoding="utf-8")))
    assert contracts.CANDLE_FILE.schema_path.read_text(encoding="utf-8") == contracts.CANDLE_FILE.schema_text()
    (commit,) = contracts.candle_commits()
    assert len(commit.release) == 40 and commit.source.index == "https://github.com/EricLBuehler/candle-vllm"
    for spelling in ("--w", "--d", "--dtype", "--p", "--max-num-seqs", "--kv-fraction", "--prefill-chunk-size"):
        assert commit.flag(spelling) is not None, spelling
    assert commit.flag("--d").type == "int-list" and commit.flag("--p").default == 2000
    assert commit.flag("--multithread").kind == "switch"
    assert contracts.candle_commit_of_image(f"registry.local/candle-vllm:sm70-{commit.release[:9]}") == commit
    assert contracts.candle_commit_of_image("forgejo.riotpiao.com/riotpiao-poimen/candle-vllm:sm70") is None


def test_dtype_resolution_as_each_release_checks_it_at_start():
    # 0.10.1.1 checks bfloat16 in its V1 GPU worker, 0.11.0 on in the CUDA platform (both: sm_80)
    old, prod = contracts.release("0.10.1.1"), contracts.release("0.11.0")
    assert (old.dtype_rule("bfloat16").file, old.dtype_rule("bfloat16").function) == (
        "vllm/v1/worker/gpu_worker.py", "_check_if_gpu_supports_dtype")
    assert prod.dtype_rule("bfloat16").function == "check_if_supports_dtype"
    # CudaPlatformBase.supported_dtypes: bf16 from sm_80, fp16 from sm_60; auto falls back
    assert prod.dtype.supported(75) == ("float16", "float32") and prod.dtype.supported(80)[0] == "bfloat16"
    assert prod.dtype.spellings["half"] == "float16" and prod.dtype.auto_falls_back is True
    assert prod.dtype.resolve(None, "bfloat16", 75) == "float16"
    assert prod.dtype.resolve("bfloat16", "float16", 75) == "bfloat16"
    # _FLOAT16_NOT_SUPPORTED_MODELS: gemma3_text appears in 0.11.0, not in 0.10.1.1
    refused = {(r.model_type, r.dtype) for r in prod.dtype.refused_by_model_type}
    assert ("gemma2", "float16") in refused and ("gemma3_text", "float16") in refused
    assert "gemma3_text" not in {r.model_type for r in old.dtype.refused_by_model_type}


def test_quantization_act_dtypes_and_overrides_of_v0_11_0():
    rel = contracts.release("0.11.0")
    assert rel.quantization_method("gptq").act_dtypes == ("float16",)  # GPTQConfig: [torch.half]
    assert rel.quantization_method("gptq_marlin").act_dtypes == ("float16", "bfloat16")
    marlin = rel.quantization_method("gptq_marlin").override
    assert marlin.reads == ("gptq",) and set(marlin.accepts) == {None, "gptq_marlin", "marlin"} and marlin.cuda
    assert rel.quantization_method("ipex").override.cuda is False  # CPU and XPU only
    assert rel.quantization_method("gptq").override is None
    rule = rel.quantization_checkpoint
    assert rule.normalize("COMPRESSED_TENSORS") == "compressed-tensors"
    assert rule.override_order[:3] == ("bitblas", "gptq_marlin_24", "gptq_marlin")
    # 0.14.1 rewrites the checkpoint's name in the config convertor, not in _verify_quantization
    newer = contracts.release("0.14.1").quantization_checkpoint
    assert newer.normalized_in.startswith("vllm/transformers_utils/model_arch_config_convertor.py")
