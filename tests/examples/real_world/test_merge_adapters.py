"""The attention-state merge adapters (vLLM's, SGLang's and FlashInfer's Triton merges, vLLM's split-K
combine): each adapter's verdict as measured, and the bugs of docs/bugs-found.md (13 to 16)
reproduced by calling each library's kernel directly, against float64 torch (not lse-fuzz's oracle).

Each library is installed apart under build/ (examples/real_world/README.md), one folder per
version, so that two vLLM releases can be compared in one run; a test whose folder is absent is
skipped:

    pip install --no-deps --target build/vllm-0.25.0 vllm==0.25.0
    pip install --no-deps --target build/vllm-0.34.0 vllm==0.34.0
    pip install --no-deps --target build/sglang-0.5.23 sglang==0.5.23
    pip install --no-deps --target build/flashinfer-0.7.4 flashinfer-python==0.7.4
"""

from __future__ import annotations

import importlib
import importlib.util
import math
import sys
import types
from pathlib import Path

import pytest
import torch

import lse_fuzz
from fuzz.interpreter import bounds

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES, BUILD = ROOT / "examples" / "real_world", ROOT / "build"
PIP_NAMES = {"vllm": "vllm", "sglang": "sglang", "flashinfer": "flashinfer-python"}
_loaded: dict[tuple[str, str], types.ModuleType] = {}


def load(adapter: str, site: str) -> types.ModuleType:
    """The adapter ``examples/real_world/<adapter>.py`` loaded against the library installed in
    ``build/<site>`` (e.g. "vllm-0.25.0"), under a name of its own: one module per version."""
    if (adapter, site) not in _loaded:
        folder = BUILD / site
        library, version = site.rsplit("-", 1)
        if not folder.is_dir():
            pytest.skip(f"{site} is not installed: pip install --no-deps --target build/{site} "
                        f"{PIP_NAMES[library]}=={version}")
        name = f"_merge_adapter_{adapter}_{site.replace('.', '_').replace('-', '_')}"
        spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{adapter}.py")
        module = importlib.util.module_from_spec(spec)
        sys.path.insert(0, str(folder))  # the adapter finds its library on the path, as with PYTHONPATH
        importlib.invalidate_caches()
        try:
            sys.modules[name] = module
            spec.loader.exec_module(module)
        finally:
            sys.path.remove(str(folder))
        assert module.VERSION == version, (module.VERSION, version)
        _loaded[adapter, site] = module
    return _loaded[adapter, site]


def check(fn, tmp_path, **options):
    return lse_fuzz.check(fn, device="cpu", reproducer_dir=tmp_path, **options)


def answering_two_empty_states(merge_state):
    """``merge_state`` with every (t, h) whose two states are empty answered (0, -inf) here: the
    fuzzer then looks past bugs 13, 15 and 16 to what else the kernel does."""

    def merged(v_a, s_a, v_b, s_b):
        v, s = merge_state(v_a, s_a, v_b, s_b)
        both_empty = torch.isneginf(s_a) & torch.isneginf(s_b)
        return (torch.where(both_empty[..., None], torch.zeros((), dtype=v.dtype), v),
                torch.where(both_empty, torch.full((), -math.inf), s))

    return merged


def merged_float64(v_a, s_a, v_b, s_b, *, base="e"):
    """The merge in float64, LSEs (T, H) of the given base; two empty states give (0, -inf)."""
    to_natural = 1.0 if base == "e" else math.log(2)
    a, b = s_a.double()[..., None] * to_natural, s_b.double()[..., None] * to_natural
    s = torch.logaddexp(a, b)
    weight_a = torch.where(torch.isneginf(a), 0.0, torch.exp(a - s))
    weight_b = torch.where(torch.isneginf(b), 0.0, torch.exp(b - s))
    v = torch.where(torch.isneginf(s), 0.0, weight_a * v_a.double() + weight_b * v_b.double())
    return v, s[..., 0] / to_natural


def two_empty_states():
    v = torch.zeros(1, 1, 1)
    s = torch.full((1, 1), -math.inf)
    expected_v, expected_s = merged_float64(v, s, v, s)
    assert expected_v.item() == 0 and expected_s.item() == -math.inf
    return v, s


def vllm_merge(kernel_module, v_a, s_a, v_b, s_b):
    """vLLM's Triton merge_attn_states called directly; s_a, s_b in vLLM's (H, T) layout."""
    output = torch.empty(v_a.shape, dtype=v_a.dtype)
    output_lse = torch.empty(s_a.shape, dtype=torch.float32)
    kernel_module.merge_attn_states(output, v_a, s_a, v_b, s_b, output_lse=output_lse)
    return output, output_lse


# vLLM's Triton merge_attn_states --------------------------------------------------------------

def test_vllm_0_34_merge_passes_a_small_check(tmp_path):
    adapter = load("vllm_merge_attn_states", "vllm-0.34.0")
    result = check(adapter.merge_state, tmp_path, op="merge_state", budget=30, seed=0)
    assert result.passed, result.summary()


def test_vllm_0_25_the_fuzzer_finds_two_empty_states_give_nan(tmp_path):
    adapter = load("vllm_merge_attn_states", "vllm-0.25.0")
    result = check(adapter.merge_state, tmp_path, op="merge_state", budget=60, seed=0)
    assert not result.passed
    assert result.check == "empty_identity" and "got nan" in result.summary(), result.summary()
    assert result.counterexample.kinds == ("a_empty",)   # merged with an empty state: both empty


def test_vllm_0_25_the_fuzzer_finds_the_lse_read_as_contiguous(tmp_path):
    adapter = load("vllm_merge_attn_states", "vllm-0.25.0")
    result = check(answering_two_empty_states(adapter.merge_state), tmp_path, op="merge_state", budget=100, seed=0)
    assert result.check == "agreement", result.summary()
    # vLLM's (H, T) view of the fuzzer's (T, H) LSE is contiguous only for the "transposed" layout
    assert result.counterexample.layout in ("contiguous", "strided"), result.summary()


@pytest.mark.parametrize(("site", "expect_nan"), [("vllm-0.25.0", True), ("vllm-0.34.0", False)])
def test_vllm_two_empty_states_merge_to_nan_before_0_26(site, expect_nan):
    kernel = load("vllm_merge_attn_states", site).triton_merge_attn_states
    v, s = two_empty_states()
    got_v, got_s = vllm_merge(kernel, v, s.t(), v, s.t())
    if expect_nan:
        assert torch.isnan(got_v).all() and torch.isnan(got_s).all()
    else:
        assert got_v.item() == 0 and got_s.item() == -math.inf


@pytest.mark.parametrize(("site", "read_wrong"), [("vllm-0.25.0", True), ("vllm-0.34.0", False)])
def test_vllm_a_transposed_lse_is_read_as_contiguous_before_0_27(site, read_wrong):
    kernel = load("vllm_merge_attn_states", site).triton_merge_attn_states
    generator = torch.Generator().manual_seed(0)
    v_a, v_b = torch.randn(2, 2, 4, generator=generator), torch.randn(2, 2, 4, generator=generator)
    s_a = torch.tensor([[1.0, 2.0], [3.0, 4.0]])   # (T, H) storage; vLLM reads (H, T): pass the view .t()
    s_b = torch.tensor([[0.5, -1.0], [2.0, 6.0]])
    got_v, got_lse = vllm_merge(kernel, v_a, s_a.t(), v_b, s_b.t())
    expected_v, expected_s = merged_float64(v_a, s_a, v_b, s_b)
    v_error = (got_v.double() - expected_v).abs().max().item()
    if read_wrong:
        # Head h, token t is read from element h * T + t of the (T, H) storage: (0, 1) and (1, 0) swap.
        assert got_lse.t()[0, 1].item() == pytest.approx(expected_s[1, 0].item(), abs=1e-5)
        assert v_error > 0.5
    else:
        torch.testing.assert_close(got_lse.t().double(), expected_s, atol=1e-5, rtol=0)
        assert v_error < 1e-5


def test_vllm_a_head_major_v_is_read_past_the_tensor():
    """Not a bug (docs/bugs-found.md, "Not bugs"): the token stride is taken to be H times the head
    stride, which vLLM's callers' token-major outputs satisfy; a head-major v is read elsewhere."""
    kernel = load("vllm_merge_attn_states", "vllm-0.34.0").triton_merge_attn_states
    buffer_a, buffer_b = torch.arange(1.0, 17.0), torch.arange(101.0, 117.0)
    # (H, T, D) = (2, 2, 1) storages at the start of larger buffers, viewed as (T, H, D): the reads stay in memory
    v_a, v_b = (buffer[:4].view(2, 2, 1).transpose(0, 1) for buffer in (buffer_a, buffer_b))
    lse = torch.zeros(2, 2)
    with bounds.judging(False):  # as Triton's interpreter reads, unchecked (lse-fuzz's check stops the read)
        got_v, _ = vllm_merge(kernel, v_a, lse, v_b, lse)
    expected_v, _ = merged_float64(v_a, lse, v_b, lse)
    assert expected_v.flatten().tolist() == [51.0, 53.0, 52.0, 54.0]
    assert got_v.flatten().tolist() == [51.0, 53.0, 55.0, 57.0]   # token 1 read from elements 4 and 6


# SGLang's Triton merge_state ------------------------------------------------------------------

def test_sglang_the_fuzzer_finds_two_empty_states_give_nan(tmp_path):
    adapter = load("sglang_merge_state", "sglang-0.5.23")
    result = check(adapter.merge_state, tmp_path, op="merge_state", budget=60, seed=0)
    assert not result.passed
    assert result.check == "empty_identity" and "got nan" in result.summary(), result.summary()


def test_sglang_passes_a_small_check_past_two_empty_states(tmp_path):
    adapter = load("sglang_merge_state", "sglang-0.5.23")
    result = check(answering_two_empty_states(adapter.merge_state), tmp_path, op="merge_state", budget=30, seed=0)
    assert result.passed, result.summary()


def test_sglang_two_empty_states_merge_to_nan():
    kernel = load("sglang_merge_state", "sglang-0.5.23").sglang_merge_state
    v, s = two_empty_states()
    got_v, got_s = kernel.merge_state_triton(v, s, v, s)
    assert torch.isnan(got_v).all() and torch.isnan(got_s).all()


def test_sglang_a_transposed_lse_is_read_as_contiguous():
    """Not a bug (docs/bugs-found.md, "Not bugs"): SGLang's callers make the LSEs contiguous."""
    kernel = load("sglang_merge_state", "sglang-0.5.23").sglang_merge_state
    generator = torch.Generator().manual_seed(0)
    v_a, v_b = torch.randn(2, 2, 4, generator=generator), torch.randn(2, 2, 4, generator=generator)
    s_a = torch.tensor([[1.0, 3.0], [2.0, 4.0]]).t()   # (T, H) views of (H, T) storages
    s_b = torch.tensor([[0.5, 2.0], [-1.0, 6.0]]).t()
    got_v, _ = kernel.merge_state_triton(v_a, s_a, v_b, s_b)
    expected_v, _ = merged_float64(v_a, s_a, v_b, s_b)
    assert (got_v.double() - expected_v).abs().max().item() > 0.5
    got_v, _ = kernel.merge_state_triton(v_a, s_a.contiguous(), v_b, s_b.contiguous())
    torch.testing.assert_close(got_v.double(), expected_v, atol=1e-5, rtol=0)


# FlashInfer's Triton merge_state (base-2 LSEs) ------------------------------------------------

def test_flashinfer_the_fuzzer_finds_two_empty_states_give_nan(tmp_path):
    adapter = load("flashinfer_merge_state", "flashinfer-0.7.4")
    result = check(adapter.merge_state, tmp_path, op="merge_state", lse_base=2, budget=40, seed=0)
    assert not result.passed
    assert result.check == "empty_identity" and "got nan" in result.summary(), result.summary()


def test_flashinfer_two_empty_states_merge_to_nan():
    launcher = load("flashinfer_merge_state", "flashinfer-0.7.4").flashinfer_triton_cascade
    v, s = two_empty_states()
    got_v, got_s = launcher.merge_state(v, s, v, s)
    assert torch.isnan(got_v).all() and torch.isnan(got_s).all()


def test_flashinfer_a_finite_merge_is_base_2():
    launcher = load("flashinfer_merge_state", "flashinfer-0.7.4").flashinfer_triton_cascade
    v_a, v_b = torch.full((1, 1, 2), 1.0), torch.full((1, 1, 2), 4.0)
    s_a, s_b = torch.tensor([[1.0]]), torch.tensor([[3.0]])   # weights 2 and 8: v = (2 + 32) / 10
    got_v, got_s = launcher.merge_state(v_a, s_a, v_b, s_b)
    expected_v, expected_s = merged_float64(v_a, s_a, v_b, s_b, base=2)
    assert expected_v[0, 0, 0].item() == pytest.approx(3.4) and expected_s.item() == pytest.approx(math.log2(10))
    torch.testing.assert_close(got_v.double(), expected_v, atol=1e-6, rtol=0)
    torch.testing.assert_close(got_s.double(), expected_s, atol=1e-6, rtol=0)


# vLLM's split-K combine (stage 2 of its Triton decode attention) ------------------------------

def test_vllm_split_k_combine_passes_a_small_check(tmp_path):
    adapter = load("vllm_split_k_combine", "vllm-0.34.0")
    result = check(adapter.combine, tmp_path, op="combine", budget=15, seed=0)
    assert result.passed, result.summary()


def test_vllm_split_k_combine_of_a_request_with_no_keys_is_nan():
    """Not a bug (docs/bugs-found.md, "Not bugs"): a decode request always has a key; the adapter
    answers a (t, h) with no non-empty split itself."""
    decode = load("vllm_split_k_combine", "vllm-0.34.0").triton_decode_attention
    attn_logits = torch.zeros((1, 1, 4, 3))   # one request, one head, 4 splits, D = 2
    o, lse = torch.empty((1, 1, 2)), torch.empty((1, 1))
    decode._decode_softmax_reducev_fwd(attn_logits, o, o, lse, o, torch.tensor([0], dtype=torch.int32), 4)
    assert torch.isnan(o).all() and lse.item() == -math.inf   # 0 / 0, and -inf + log 0
