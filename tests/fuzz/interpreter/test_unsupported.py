"""fuzz.interpreter.unsupported: Triton's interpreter refuses inline GPU assembly by name (an
EmulationUnsupported naming ``tl.inline_asm_elementwise``), where it raised a NotImplementedError
that read as the kernel's error."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from triton.runtime import interpreter

from fuzz.interpreter import unsupported
from fuzz.interpreter.emulation import EmulationUnsupported
from fuzz.target import load_target

INLINE_ASM = Path(__file__).resolve().parents[2] / "implementations" / "candidates" / "inline_asm.py"


def test_install_is_idempotent_and_seen():
    assert unsupported.install() and unsupported.installed()
    assert unsupported.install() and unsupported.installed()


def test_a_kernel_with_inline_assembly_is_refused_by_name():
    lse = load_target(f"{INLINE_ASM}:lse")
    with pytest.raises(interpreter.InterpreterError) as info:
        lse(torch.randn(3, 5))
    refusal = info.value.__cause__
    assert isinstance(refusal, EmulationUnsupported)
    assert (refusal.construct, refusal.reason) == ("tl.inline_asm_elementwise", "inline GPU assembly has no CPU meaning")
    assert "run with --device cuda" in str(refusal)
