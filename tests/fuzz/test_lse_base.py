"""``--lse-base 2`` for the row LSE: a kernel that returns log2(sum_j e^x_j) passes declared so and
fails without it, the failure names the base, the reproducer keeps it, and the tolerance model in
base 2 accepts every correct base-2 computation and rejects the natural-log answer."""

from __future__ import annotations

import math

import pytest
import torch

import lse_fuzz
from fuzz.contract import Contract
from fuzz.target import load_target
from reference import compare
from reference.errors import InvalidArgument

BASE2 = "tests/implementations/base2"


def _natural(x):
    return torch.logsumexp(x.double(), dim=1).float()


@pytest.mark.parametrize("name", ["exp2_online", "torch_scaled"])
def test_a_base2_kernel_passes_declared_and_fails_undeclared(name, tmp_path):
    target = f"{BASE2}/{name}.py:lse"
    impl = load_target(target)
    declared = lse_fuzz.check(impl, lse_base=2, budget=20, seed=1, target=target, reproducer_dir=tmp_path)
    assert declared.passed, declared.summary()
    assert "LSE base 2" in declared.summary()
    undeclared = lse_fuzz.check(impl, budget=30, seed=1, target=target, reproducer_dir=tmp_path)
    assert not undeclared.passed


def test_the_agreement_failure_names_the_base_both_ways(tmp_path):
    scaled = load_target(f"{BASE2}/torch_scaled.py:lse")
    found = lse_fuzz.check(scaled, checks=["agreement"], budget=30, reproducer_dir=tmp_path)
    assert "the result agrees with the reference in base 2: the kernel's LSE is base 2" in found.summary()
    found = lse_fuzz.check(_natural, lse_base=2, checks=["agreement"], budget=30, reproducer_dir=tmp_path)
    assert "declared in base 2 (--lse-base 2); the result agrees with the reference in base e" in found.summary()
    # A bug of its own in either base: the line names the declared base only where it is not e.
    plain = lse_fuzz.check(lambda x: _natural(x) + 1, checks=["agreement"], budget=10, reproducer_dir=tmp_path)
    assert not plain.passed and "base:" not in plain.summary()


def test_the_reproducer_keeps_the_base(tmp_path):
    found = lse_fuzz.check(_natural, lse_base=2, checks=["agreement"], budget=30, reproducer_dir=tmp_path)
    again = lse_fuzz.replay(found.reproducer, _natural)
    assert again.contract.lse_base == 2 and again.check == "agreement"
    assert lse_fuzz.replay(found.reproducer, load_target(f"{BASE2}/torch_scaled.py:lse")).passed


def test_the_contract_carries_the_base():
    contract = Contract(lse_base="2")
    assert contract.lse_base == 2 and not contract.is_full and contract.describe().endswith("LSE base 2")
    assert Contract.from_dict(contract.to_dict()) == contract and "lse_base" not in Contract().to_dict()
    with pytest.raises(InvalidArgument, match="lse_base=10; choose e"):
        Contract(lse_base=10)
    with pytest.raises(InvalidArgument, match="--backward judges the gradient of a natural-log LSE"):
        lse_fuzz.check(_natural, lse_base=2, backward=True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_the_base2_tolerance_accepts_correct_roundings_and_rejects_the_other_base(dtype):
    gen = torch.Generator().manual_seed(0)
    top = min(30.0, math.log10(torch.finfo(dtype).max) - 1)  # magnitudes up to 1e30, finite in the dtype
    x = (torch.randn(64, 300, generator=gen) * torch.logspace(-2, top, 64).unsqueeze(1)).to(dtype)
    exact = torch.logsumexp(x.double(), dim=1)
    base2 = exact / math.log(2)
    for out in (torch.float32, dtype):
        assert compare(x, base2.to(out), base=2).ok
        # A float32 kernel that scales its max by log2(e) and adds log2 of the sum, as exp2 kernels do.
        m = x.float().amax(dim=1)
        kernel = m * (1 / math.log(2)) + torch.log2(torch.exp2((x.float() - m[:, None]) * (1 / math.log(2))).sum(1))
        assert compare(x, kernel.to(out), base=2).ok
    assert not compare(x, exact.float(), base=2).ok
    assert not compare(x, base2.float()).ok
