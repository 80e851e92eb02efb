"""The engine contract's reader (tools/contract/vllm_source.py) on the shapes vLLM's files have:
a config field's type, choices and default as arg_utils._compute_kwargs derives them, CMake's
arch lists by CUDA version, and the sampler's FlashInfer test. Snippets written in the form of
vLLM's own files (vllm/config/cache.py, CMakeLists.txt, vllm/v1/sample/ops/topk_topp_sampler.py)."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

from tools.contract import vllm_source as vs

CONFIG = '''
from typing import Literal, Optional
BlockSize = Literal[1, 8, 16, 32, 64, 128]
CacheDType = Literal["auto", "fp8", "fp8_e4m3"]

@config
class CacheConfig:
    block_size: SkipValidation[BlockSize] = None
    """Size of a contiguous cache block in number of tokens."""
    gpu_memory_utilization: float = Field(default=0.9, gt=0, le=1)
    cache_dtype: CacheDType = "auto"
    enable_prefix_caching: Optional[bool] = None
    max_model_len: int | None = None
    cuda_graph_sizes: list[int] = field(default_factory=list)
'''


def _fields(tmp_path: Path) -> dict[str, dict]:
    (tmp_path / "vllm" / "config").mkdir(parents=True)
    (tmp_path / "vllm" / "config" / "cache.py").write_text(CONFIG)
    index = vs.Index(tmp_path, ["vllm/config/cache.py"])
    return {f[0]: vs.field_kwargs(index, *f) for f in index.fields("CacheConfig")}


def test_a_config_field_reads_as_compute_kwargs_derives_it(tmp_path):
    f = _fields(tmp_path)
    assert (f["block_size"]["type"], f["block_size"]["choices"]) == ("int", [1, 8, 16, 32, 64, 128])
    assert f["block_size"]["help"] == "Size of a contiguous cache block in number of tokens."
    assert (f["gpu_memory_utilization"]["type"], f["gpu_memory_utilization"]["default"]) == ("float", 0.9)
    assert f["cache_dtype"]["choices"] == ["auto", "fp8", "fp8_e4m3"]
    assert f["enable_prefix_caching"]["action"] == "boolean-optional"
    assert f["max_model_len"]["type"] == "human-int" and f["max_model_len"]["accepts_none"]
    assert (f["cuda_graph_sizes"]["nargs"], f["cuda_graph_sizes"]["default"]) == ("+", [])


def test_cmake_arch_lists_by_cuda_version(tmp_path):
    (tmp_path / "CMakeLists.txt").write_text(textwrap.dedent('''
        find_package(Torch REQUIRED)
        if(DEFINED CMAKE_CUDA_COMPILER_VERSION AND
           CMAKE_CUDA_COMPILER_VERSION VERSION_GREATER_EQUAL 13.0)
          set(CUDA_SUPPORTED_ARCHS "7.5;8.0;12.0")
        elseif(DEFINED CMAKE_CUDA_COMPILER_VERSION AND
           CMAKE_CUDA_COMPILER_VERSION VERSION_GREATER_EQUAL 12.8)
          set(CUDA_SUPPORTED_ARCHS "7.0;7.5;8.0;10.0;12.0")
        else()
          set(CUDA_SUPPORTED_ARCHS "7.0;7.5;8.0")
        endif()
        '''))
    assert vs.cmake_arch_branches(tmp_path) == [((13, 0), [75, 80, 120]), ((12, 8), [70, 75, 80, 100, 120]),
                                                (None, [70, 75, 80])]
    (tmp_path / "docker").mkdir()
    (tmp_path / "docker" / "Dockerfile").write_text("ARG CUDA_VERSION=12.9.1\nARG torch_cuda_arch_list='7.0 8.0 12.0'\n")
    assert vs.read_image_build(tmp_path)["capabilities"] == [70, 80, 120]
    (tmp_path / "docker" / "Dockerfile").write_text("ARG CUDA_VERSION=13.0.1\nARG torch_cuda_arch_list='7.0 8.0 12.0'\n")
    assert vs.read_image_build(tmp_path)["capabilities"] == [80, 120]


def _sampler(tmp_path: Path, test: str, body: str) -> dict:
    path = tmp_path / vs.SAMPLER
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(f'''
        class TopKTopPSampler:
            def __init__(self):
                if current_platform.is_cuda():
                    if {test}:
        {textwrap.indent(textwrap.dedent(body), " " * 24)}
                    else:
                        self.forward = self.forward_native
        '''))
    ast.parse(path.read_text())
    return vs.read_sampler(tmp_path)


def test_the_sampler_default_and_what_it_does_on_an_unsupported_card(tmp_path):
    on = _sampler(tmp_path, "envs.VLLM_USE_FLASHINFER_SAMPLER is not False", "self.forward = self.forward_cuda")
    assert (on["flashinfer_by_default"], on["flashinfer_on_unsupported_card"]) == (True, "not checked")
    raises = _sampler(tmp_path, "envs.VLLM_USE_FLASHINFER_SAMPLER", '''
        capability = current_platform.get_device_capability()
        if not FlashInferBackend.supports_compute_capability(capability):
            raise RuntimeError("FlashInfer does not support compute capability")
        self.forward = self.forward_cuda''')
    assert (raises["flashinfer_by_default"], raises["flashinfer_on_unsupported_card"]) == (False, "raises")
    falls = _sampler(tmp_path, "envs.VLLM_USE_FLASHINFER_SAMPLER", '''
        capability = current_platform.get_device_capability()
        if not FlashInferBackend.supports_compute_capability(capability):
            self.forward = self.forward_native
        else:
            self.forward = self.forward_cuda''')
    assert falls["flashinfer_on_unsupported_card"] == "falls back"


OVERRIDES = '''
class GPTQMarlinConfig(QuantizationConfig):
    @classmethod
    def get_supported_act_dtypes(cls):
        return [torch.half, torch.bfloat16]

    @classmethod
    def override_quantization_method(cls, hf_quant_cfg, user_quant):
        can_convert = cls.is_gptq_marlin_compatible(hf_quant_cfg)
        is_valid_user_quant = user_quant is None or user_quant == "marlin" or user_quant == "gptq_marlin"
        if can_convert and is_valid_user_quant:
            return cls.get_name()
        if can_convert and user_quant == "gptq":
            logger.info("forcing gptq")
        return None

    @classmethod
    def is_gptq_marlin_compatible(cls, quant_config):
        quant_method = quant_config.get("quant_method", "").lower()
        if quant_method != "gptq":
            return False
        return True


class RocmOnlyConfig(QuantizationConfig):
    @classmethod
    def override_quantization_method(cls, hf_quant_cfg, user_quant):
        if not current_platform.is_rocm():
            return None
        return cls.get_name()


class CpuAwqConfig(QuantizationConfig):
    @classmethod
    def override_quantization_method(cls, hf_quant_cfg, user_quant):
        quant_method = hf_quant_cfg.get("quant_method", "").lower()
        if current_platform.is_cpu() and quant_method == "awq":
            return cls.get_name()
        return None
'''


def test_an_override_reads_the_values_it_takes_over_not_the_ones_it_only_logs():
    tree = ast.parse(OVERRIDES)
    marlin = vs.read_override(tree, "GPTQMarlinConfig")
    # "gptq" is compared only in the branch that returns None: not taken over
    assert marlin == {"accepts": [None, "gptq_marlin", "marlin"], "reads": ["gptq"], "cuda": True}
    assert vs.read_override(tree, "RocmOnlyConfig") == {"accepts": None, "reads": None, "cuda": False}
    assert vs.read_override(tree, "CpuAwqConfig") == {"accepts": None, "reads": ["awq"], "cuda": False}
    act = vs._literal_return(vs._class_method(tree, "GPTQMarlinConfig", "get_supported_act_dtypes"))
    assert vs._torch_dtypes(act) == ["float16", "bfloat16"]


def test_supported_dtypes_read_through_an_elif_chain(tmp_path):
    (tmp_path / "vllm" / "platforms").mkdir(parents=True)
    (tmp_path / "vllm" / "config").mkdir(parents=True)
    (tmp_path / vs.CUDA_PLATFORM).write_text(textwrap.dedent('''
        class CudaPlatformBase(Platform):
            @property
            def supported_dtypes(self):
                if self.has_device_capability(80):
                    return [torch.bfloat16, torch.float16, torch.float32]
                elif (not self.has_device_capability(80)) and self.has_device_capability(60):
                    return [torch.float16, torch.float32]
                return [torch.float32]
        '''))
    (tmp_path / vs.MODEL_CONFIG).write_text(textwrap.dedent('''
        _STR_DTYPE_TO_TORCH_DTYPE = {"half": torch.float16, "bfloat16": torch.bfloat16}
        _FLOAT16_NOT_SUPPORTED_MODELS = {"gemma2": "Numerical instability."}
        def _check_valid_dtype(model_type, dtype):
            if model_type in _FLOAT16_NOT_SUPPORTED_MODELS and dtype == torch.float16:
                raise ValueError("no")
        def _resolve_auto_dtype(model_type, config_dtype):
            supported_dtypes = [d for d in current_platform.supported_dtypes]
            return supported_dtypes[0]
        '''))
    got = vs.read_dtype(tmp_path)
    assert [(e["min_capability"], e["dtypes"][0]) for e in got["supported_by_capability"]] == [
        (80, "bfloat16"), (60, "float16"), (0, "float32")]
    assert got["refused_by_model_type"] == [{"model_type": "gemma2", "dtype": "float16", "reason": "Numerical instability."}]
    assert got["spellings"] == {"half": "float16", "bfloat16": "bfloat16"} and got["auto_falls_back"] is True
