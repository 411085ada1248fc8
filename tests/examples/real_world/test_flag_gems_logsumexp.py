"""FlagGems' logsumexp (torch.logsumexp on FlagGems' kernels): GPU only, since ``import flag_gems``
raises without a device; skipped elsewhere and where flag-gems is not installed."""

from __future__ import annotations

import pytest
import torch

import fuzz

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="FlagGems needs a GPU at import")]


def test_the_adapter_runs_a_small_check(adapter, tmp_path):
    pytest.importorskip("flag_gems", reason="flag-gems is not installed: pip install -e '.[real-world]'")
    lse, target = adapter("flag_gems_logsumexp")
    result = fuzz.check(lse, budget=50, seed=0, device="cuda", dtypes=("float32", "float16", "bfloat16"),
                        reproducer_dir=tmp_path, target=target)
    # Verdicts on the H200 are recorded in docs/bugs-found.md; a pass or a check's failure is a
    # verdict, an internal error of the harness is not.
    assert result.passed or result.check is not None, result.summary()
