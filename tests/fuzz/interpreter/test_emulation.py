"""fuzz.interpreter.emulation: only the emulator may say the CPU cannot run a construct. A refusal raised by its
code while a kernel runs in Triton's interpreter is recognised; one a candidate raises itself, one
compiled under the emulator's file name, and the emulator's refusing function called outside a
kernel are the candidate's own exceptions (an ``error`` verdict, never ``unsupported``)."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
import torch

from fuzz.interpreter import unsupported
from fuzz.interpreter.emulation import EmulationUnsupported, raised_by_emulator
from fuzz.target import load_target

ROOT = Path(__file__).resolve().parents[3]
INLINE_ASM = ROOT / "tests" / "implementations" / "candidates" / "inline_asm.py"


def _raised(call) -> BaseException:
    with pytest.raises(Exception) as info:
        call()
    return info.value


def test_the_refusal_names_the_construct_and_the_way_out():
    refusal = EmulationUnsupported("libdevice.erfcinv", "no faithful CPU version")
    assert str(refusal) == ("the CPU's emulation of Triton cannot run libdevice.erfcinv as a GPU does (no faithful "
                            "CPU version); run with --device cuda for a verdict")
    copy = pickle.loads(pickle.dumps(refusal))  # it crosses a worker's pipe as itself
    assert (type(copy), copy.construct, copy.reason, str(copy)) == (EmulationUnsupported, refusal.construct,
                                                                    refusal.reason, str(refusal))


def test_the_emulators_refusal_inside_a_kernel_is_recognised_through_the_interpreters_wrapping():
    lse = load_target(f"{INLINE_ASM}:lse")  # installs the interpreter's repairs, this one included
    raised = _raised(lambda: lse(torch.zeros(2, 3)))
    assert type(raised).__name__ == "InterpreterError"  # Triton wraps what a kernel raised
    refusal = raised_by_emulator(raised)
    assert refusal is not None and refusal.construct == unsupported.INLINE_ASM


def _own_raise():
    raise EmulationUnsupported("libdevice.erfcinv", "said by the candidate")


def _raise_compiled_under_the_emulators_name():
    code = compile("raise EmulationUnsupported('libdevice.erfcinv')", unsupported.__file__, "exec")
    exec(code, {"EmulationUnsupported": EmulationUnsupported})


def _emulators_function_outside_a_kernel():
    unsupported.install()
    from triton.runtime import interpreter

    interpreter.InterpreterBuilder.create_inline_asm(None, "", "", [], None, True, 1)


FORGERIES = {
    "raised by the candidate": _own_raise,
    "compiled under the emulator's file name": _raise_compiled_under_the_emulators_name,
    "the emulator's function called outside a kernel": _emulators_function_outside_a_kernel,
}


@pytest.mark.parametrize("forge", FORGERIES.values(), ids=list(FORGERIES))
def test_a_refusal_the_emulator_did_not_make_is_not_recognised(forge):
    raised = _raised(forge)
    assert isinstance(raised, EmulationUnsupported)
    assert raised_by_emulator(raised) is None
    try:
        raise RuntimeError("wrapped") from raised
    except RuntimeError as wrapped:
        assert raised_by_emulator(wrapped) is None


def test_anything_else_is_not_a_refusal():
    assert raised_by_emulator(None) is None
    assert raised_by_emulator(ValueError("boom")) is None
    assert raised_by_emulator(EmulationUnsupported("tl.inline_asm_elementwise")) is None  # never raised at all
