"""FlashInfer's Triton merge_state: two attention states merged, with base-2 LSEs.

FlashInfer keeps an attention state as (v, s) with s the base-2 log-sum-exp of the scores, and
merges two with `merge_state(v_a, s_a, v_b, s_b) -> (v, s)` (cascade attention, shared-prefix
batches): per token t and head h,

    m = max(s_a, s_b),   d = 2^(s_a - m) + 2^(s_b - m),   v = (2^(s_a - m) v_a + 2^(s_b - m) v_b) / d,   s = m + log2 d

`flashinfer.merge_state` runs a CUDA kernel compiled on first use (NVIDIA GPUs only); FlashInfer
also ships the same operation in Triton, `flashinfer.triton.cascade.merge_state` (kernel
`merge_state_kernel` of flashinfer/triton/kernels/cascade.py), adapted here. Its launcher and
kernel run as published: on a CPU through Triton's interpreter.

Only two files are loaded, without running FlashInfer's `__init__` (which loads its JIT
machinery) nor `flashinfer.triton`'s (which probes for `ptxas` and imports its GEMMs): the
launcher flashinfer/triton/cascade.py and the kernels file it imports. Its other import,
`flashinfer.triton.utils` (argument checks), is stubbed, and only it: `check_dim` and
`check_shape` check as FlashInfer's do; `check_input` keeps FlashInfer's contiguity assertion but
not its `x.is_cuda` one, and `check_device` accepts any device (FlashInfer's demands a GPU of
compute capability 9, a Hopper): those two are what a CPU run cannot pass.

The adaptation: the shapes are the fuzzer's, v (T, H, D) and LSEs (T, H). The launcher asserts
that every input is contiguous (FlashInfer's `check_input`), so the adapter passes the four tensors
`.contiguous()`; the kernel reads them with contiguous offsets. LSEs are base 2: run with
`--lse-base 2`.

Run with flashinfer-python 0.7.4 (the pure-Python wheel; its CUDA parts are not needed), CPU
through Triton's interpreter, installed apart, its folder on PYTHONPATH for this adapter alone:

    pip install --no-deps --target build/flashinfer-0.7.4 flashinfer-python==0.7.4
    PYTHONPATH=build/flashinfer-0.7.4 lse-fuzz check examples/real_world/flashinfer_merge_state.py:merge_state \
        --op merge_state --lse-base 2 --device cpu
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import sys
import types
from pathlib import Path

import torch


def _flashinfer_package() -> Path:
    spec = importlib.util.find_spec("flashinfer")  # finds the package without importing it
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("flashinfer is not installed: pip install --no-deps --target DIR "
                          "flashinfer-python==0.7.4 and put DIR on PYTHONPATH")
    return Path(list(spec.submodule_search_locations)[0])


def _utils_stub(name: str) -> types.ModuleType:
    """flashinfer.triton.utils for a CPU: FlashInfer's checks less the CUDA and Hopper ones."""
    utils = types.ModuleType(name)

    def check_input(x: torch.Tensor) -> None:
        assert x.is_contiguous(), f"{x} must be contiguous"

    def check_dim(d: int, x: torch.Tensor) -> None:
        assert x.dim() == d, f"{x} must be a {d}D tensor"

    def check_shape(a: torch.Tensor, b: torch.Tensor) -> None:
        assert a.shape == b.shape, f"tensors shape mismatch, {a.size()} and {b.size()}"

    def check_device(tensors, major=None, minor=None) -> None:
        assert len({t.device for t in tensors}) == 1, "All tensors should be on the same device"

    utils.check_input, utils.check_dim, utils.check_shape, utils.check_device = (
        check_input, check_dim, check_shape, check_device)
    return utils


def _load_launcher(package: Path) -> types.ModuleType:
    """flashinfer/triton/cascade.py as ``<private package>.cascade``: its relative imports load the
    real kernels file under the private name, and find the stubbed utils there."""
    private = f"_flashinfer_{VERSION.replace('.', '_')}_triton"
    triton_package = types.ModuleType(private)
    triton_package.__path__ = [str(package / "triton")]
    sys.modules[private] = triton_package
    sys.modules[f"{private}.utils"] = _utils_stub(f"{private}.utils")
    spec = importlib.util.spec_from_file_location(f"{private}.cascade", package / "triton" / "cascade.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # triton.jit finds the kernel's module by name
    spec.loader.exec_module(module)
    return module


VERSION = importlib.metadata.version("flashinfer-python")
flashinfer_triton_cascade = _load_launcher(_flashinfer_package())


def merge_state(v_a: torch.Tensor, s_a: torch.Tensor, v_b: torch.Tensor, s_b: torch.Tensor):
    """(v, s) of the two states merged by FlashInfer's Triton kernel; s (T, H) float32, base 2."""
    return flashinfer_triton_cascade.merge_state(v_a.contiguous(), s_a.contiguous(), v_b.contiguous(),
                                                 s_b.contiguous())
