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
