"""FlagGems' logsumexp (torch.logsumexp on FlagGems' kernels): GPU only, since ``import flag_gems``
raises without a device; skipped elsewhere and where flag-gems is not installed. Bug 8 of
docs/bugs-found.md is reproduced against an independent float64 computation (numpy)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import lse_fuzz

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="FlagGems needs a GPU at import")]


def test_the_adapter_runs_a_small_check(adapter, tmp_path):
    pytest.importorskip("flag_gems", reason="flag-gems is not installed: pip install -e '.[real-world]'")
    lse, target = adapter("flag_gems_logsumexp")
    result = lse_fuzz.check(lse, budget=50, seed=0, device="cuda", dtypes=("float32", "float16", "bfloat16"),
                            reproducer_dir=tmp_path, target=target)
    # Verdicts on the H200 are recorded in docs/bugs-found.md; a pass, a check's failure or the
    # library's own exception (bug 8, on an empty row) is a verdict, an internal error of the harness
    # is not.
    library_raised = result.status is lse_fuzz.Status.ERROR and "ZeroDivisionError" in result.summary()
    assert result.passed or result.check is not None or library_raised, result.summary()


@pytest.mark.slow
def test_a_reduction_over_an_empty_last_dim_raises():
    """Bug 8: FlagGems' ``sum`` over a dim of size 0 divides by it, so torch.logsumexp of a row with
    no element raises under ``use_gems()``; the log of an empty sum is log 0 = -inf."""
    flag_gems = pytest.importorskip("flag_gems", reason="flag-gems is not installed: pip install -e '.[real-world]'")
    x = torch.empty(1, 0, device="cuda")
    independent = np.log(np.exp(np.empty((1, 0))).sum(axis=1))
    assert np.isneginf(independent).all()
    assert torch.isneginf(torch.logsumexp(x, dim=-1)).all()  # torch's own kernels agree
    with flag_gems.use_gems(), pytest.raises(ZeroDivisionError):
        torch.logsumexp(x, dim=-1)
    # The root cause alone: sum's out= variant, the one ATen's logsumexp writes its sum with, lacks the
    # empty-input guard that the plain variant has.
    with flag_gems.use_gems():
        assert torch.equal(torch.sum(x, dim=-1), torch.zeros(1, device="cuda"))
        with pytest.raises(ZeroDivisionError):
            torch.sum(x, dim=-1, out=torch.empty(1, device="cuda"))
