"""A slice of the false-alarm campaign: every correct implementation of the corpus
(``tests/implementations/correct``, written in other styles than this project's kernel) passes the
fuzzer with its default options. The full campaign (many seeds, hundreds of examples each) is
``bench/campaign.py``; its results are in bench/RESULTS.md."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import lse_fuzz
from fuzz.target import load_target

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench.campaign import check_keywords, declared_contract  # noqa: E402  (the campaign's own reading of contracts.json)

CORPUS = sorted((Path(__file__).resolve().parents[1] / "implementations" / "correct").glob("*.py"))
SLICE_BUDGET = 25  # examples per implementation: a slice, on the 2-core CI machine
# Triton's interpreter runs a custom tl.reduce combine function once per element in Python: minutes
# for this slice on a CPU (a slow finding, not a false alarm); it runs with -m slow and on GPUs.
INTERPRETER_SLOW = {"reduce_combine"}


def test_the_corpus_has_every_style_the_campaign_promises():
    names = {path.stem for path in CORPUS}
    assert len(names) >= 14
    assert {"online_single_pass", "two_pass", "exp2_based", "multi_row", "split_row", "autotuned", "heuristics",
            "half_output", "float64_accumulate", "torch_native", "torch_float32", "torch_compiled",
            "scipy_wrapper", "native_dtype_max"} <= names


@pytest.mark.parametrize("path", [pytest.param(p, marks=pytest.mark.slow) if p.stem in INTERPRETER_SLOW else p
                                  for p in CORPUS], ids=[path.stem for path in CORPUS])
def test_a_correct_implementation_passes_with_default_options(path, tmp_path):
    impl = load_target(f"{path}:lse")
    result = lse_fuzz.check(impl, budget=SLICE_BUDGET, seed=0, reproducer_dir=tmp_path, target=f"{path}:lse",
                            **check_keywords(declared_contract(path)))
    assert result.passed, result.summary()


def test_a_declared_contract_is_what_the_campaign_checks():
    # torch.logsumexp overflows its float16 sum past 65504 columns: the one limit the corpus declares.
    assert declared_contract(CORPUS[0].parent / "torch_native.py") == {"max_n": 65504}
    assert declared_contract(CORPUS[0].parent / "two_pass.py") == {}


def test_the_torch_native_limit_is_real():
    # What contracts.json says, measured: past the limit eager torch returns inf for a finite answer.
    # Should a torch release fix it, this fails: then drop the declaration.
    import torch

    lse = load_target(f"{CORPUS[0].parent / 'torch_native.py'}:lse")
    assert torch.isinf(lse(torch.zeros(1, 65520, dtype=torch.float16))).all()
    assert torch.isfinite(lse(torch.zeros(1, 65504, dtype=torch.float16))).all()
