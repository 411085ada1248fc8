"""flash-linear-attention's logsumexp_fwd: the fuzzer finds its bugs from the adapter, and the three
bugs of docs/bugs-found.md are reproduced, each against an independent float64 computation (numpy)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import fuzz
import fuzz.interpreter.autotune
import lse_fuzz

fla_utils = pytest.importorskip("fla.ops.utils", reason="flash-linear-attention is not installed: "
                                "pip install -e '.[real-world]'")


@pytest.fixture(autouse=True)
def _interpreter_autotune():
    # logsumexp_fwd_kernel is autotuned; Triton's interpreter has no timer to tune with, so outside
    # the fuzzer (which pins configs itself) the first config runs.
    fuzz.interpreter.autotune.install()


def _float64_lse(x: torch.Tensor) -> np.ndarray:
    """log(sum(exp(x))) per row in float64 with numpy; the shift is 0 for a row with no finite maximum,
    so an all -inf row gives log(0) = -inf."""
    values = x.double().numpy()
    row_max = values.max(axis=1, keepdims=True)
    shift = np.where(np.isfinite(row_max), row_max, 0.0)
    with np.errstate(divide="ignore"):
        return shift[:, 0] + np.log(np.exp(values - shift).sum(axis=1))


def test_the_fuzzer_finds_the_ignored_row_stride(adapter, tmp_path):
    lse, _ = adapter("fla_logsumexp")

    def lse_with_empty_rows_answered(x: torch.Tensor) -> torch.Tensor:
        # An all -inf row (NaN from fla) is often the first failure drawn; answered here, so what is
        # left to find on small shapes is the stride alone.
        out = lse(x)
        return torch.where(torch.isneginf(x).all(dim=-1), -math.inf, out)

    result = lse_fuzz.check(lse_with_empty_rows_answered, budget=120, seed=0, device="cpu", contract="finite",
                            output_dtype="float32", reproducer_dir=tmp_path)
    assert result.check == "agreement", result.summary()
    assert not result.counterexample.x.is_contiguous()
    assert not torch.isneginf(result.counterexample.x).all(dim=1).any()


def test_the_fuzzer_finds_nan_for_an_all_neg_inf_row_in_contiguous_input(adapter, tmp_path):
    lse, target = adapter("fla_logsumexp")
    result = lse_fuzz.check(lse, budget=120, seed=0, device="cpu", contract="finite", layouts="contiguous",
                            output_dtype="float32", reproducer_dir=tmp_path, target=target)
    assert result.check == "agreement", result.summary()
    assert torch.isneginf(result.counterexample.x).all(dim=1).any()


@pytest.mark.slow
def test_padded_rows_are_read_as_if_contiguous():
    x = torch.arange(12, dtype=torch.float32).reshape(3, 4)[:, :3]   # row stride 4, 3 columns
    exact = _float64_lse(x)
    assert torch.allclose(torch.logsumexp(x, dim=-1).double(), torch.from_numpy(exact))
    got = fla_utils.logsumexp_fwd(x)
    assert got[0].item() == pytest.approx(exact[0], rel=1e-6)          # row 0 starts at the right place
    assert got[1].item() == pytest.approx(exact[1] - 1.0, rel=1e-6)    # the bug: row 1 read from x[0, 3:] + x[1, :2]
    assert abs(got[2].item() - exact[2]) > 1.0


@pytest.mark.slow
def test_a_chunk_of_all_neg_inf_gives_nan_for_a_finite_row():
    columns = 65536 + 8   # two chunks of B = 65536; the first holds only -inf
    x = torch.full((1, columns), -math.inf)
    x[0, 65536:] = torch.arange(8, dtype=torch.float32)
    exact = _float64_lse(x)
    assert exact[0] == pytest.approx(7.4583396, abs=1e-6)
    assert torch.logsumexp(x, dim=-1).item() == pytest.approx(exact[0], abs=1e-5)
    assert torch.isnan(fla_utils.logsumexp_fwd(x)).all()


@pytest.mark.slow
def test_an_all_neg_inf_row_gives_nan():
    x = torch.full((2, 4), -math.inf)
    x[1] = 0.0
    exact = _float64_lse(x)
    assert exact[0] == -math.inf and exact[1] == pytest.approx(math.log(4))
    got = fla_utils.logsumexp_fwd(x)
    assert torch.isnan(got[0]) and got[1].item() == pytest.approx(math.log(4), rel=1e-6)


@pytest.mark.slow
def test_an_empty_last_dim_raises():
    x = torch.empty(3, 0)
    assert torch.isneginf(torch.logsumexp(x, dim=-1)).all()
    with pytest.raises(RuntimeError, match="cannot reshape tensor of 0 elements"):
        fla_utils.logsumexp_fwd(x)
