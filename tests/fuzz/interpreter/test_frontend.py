"""fuzz.interpreter.frontend: in the interpreter, a kernel Triton's compiler refuses is refused too.

The fault that made the module: a float16 accumulator a float32 value is added to in a loop. Triton's
code generator refuses the loop-carried type change (CompilationError on a GPU); Triton's interpreter
alone runs it (a fresh process shows it). The rest hold the module to no false alarm: every Triton
kernel of the correct corpus and the reference kernel pass the front end on every specialization
they launch, and what the check cannot run (an option only the interpreter accepts, a language the
interpreter left patched with no record of Triton's own) skips it instead of failing the kernel.
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from reference._device import ensure_interpreter, interpreting

ensure_interpreter()  # before anything imports triton (fuzz.interpreter.autotune does): Triton's library is built for it

from fuzz.interpreter import autotune, frontend  # noqa: E402
from fuzz.failures import exception_chain  # noqa: E402
from fuzz.outcomes import MutantStatus, Verdict, mutant_status  # noqa: E402
from fuzz.target import load_target  # noqa: E402

import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.compiler.errors import CompilationError  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
CORPUS = ROOT / "tests" / "implementations" / "correct"
TRITON_CORPUS = sorted(path for path in CORPUS.glob("*.py") if "@triton.jit" in path.read_text())
SLOW = {"reduce_combine"}  # the interpreter runs its custom combine once per element: a minute here

# Installed at collection, before any test launches a kernel: the module records Triton's language
# before the interpreter patches it.
frontend.install()
pytestmark = pytest.mark.skipif(not interpreting(), reason="Triton's interpreter only (no GPU here)")


@triton.jit
def _half_accumulator(x_ptr, out_ptr, N, BLOCK: tl.constexpr):
    acc = tl.zeros([BLOCK], tl.float16)
    for start in range(0, N, BLOCK):
        acc = acc + tl.load(x_ptr + start + tl.arange(0, BLOCK)).to(tl.float32)
    tl.store(out_ptr + tl.arange(0, BLOCK), acc)


@triton.jit
def _add(a, b):
    return a + b


@triton.jit
def _float_accumulator(x_ptr, out_ptr, N, BLOCK: tl.constexpr):
    acc = tl.zeros([BLOCK], tl.float32)
    for start in range(0, N, BLOCK):
        acc = _add(acc, tl.load(x_ptr + start + tl.arange(0, BLOCK)).to(tl.float32))
    tl.store(out_ptr + tl.arange(0, BLOCK), tl.max(acc[None, :], axis=0))


def _launch(kernel, n: int = 64, block: int = 16, **options) -> torch.Tensor:
    x = torch.arange(n, dtype=torch.float32)
    out = torch.empty(block)
    kernel[(1,)](x, out, n, BLOCK=block, **options)
    return out


def _expected(n: int = 64, block: int = 16) -> torch.Tensor:
    return torch.arange(n, dtype=torch.float32).reshape(-1, block).sum(0)


def test_a_loop_carried_dtype_change_is_refused_as_a_gpu_refuses_it():
    with pytest.raises(CompilationError, match="Loop-carried variable acc has initial type .*fp16.* re-assigned to .*fp32"
                       ) as raised:
        _launch(_half_accumulator)
    # What a GPU's launch raises, so the fuzzer files it as a GPU run does: a compile error.
    assert mutant_status(Verdict.ERROR, exception_chain(raised.value)) is MutantStatus.COMPILE_ERROR


def test_the_check_runs_where_triton_has_no_float_sanitizer_knob(monkeypatch):
    # Triton 3.6 (a GPU host's) has no knobs.compilation.fpsan_homomorphic_casts: reading it made
    # every launch's binding fail, so the check was skipped for every kernel and nothing was refused.
    class OlderKnobs:
        def __getattr__(self, name):
            if name == "fpsan_homomorphic_casts":
                raise AttributeError(name)
            return getattr(knobs, name)

    knobs = triton.knobs.compilation
    monkeypatch.setattr(triton.knobs, "compilation", OlderKnobs())
    before = frontend.stats()
    with pytest.raises(CompilationError, match="Loop-carried variable acc"):
        _launch(triton.jit(_half_accumulator.fn))  # a kernel of its own: the front end has not seen it
    after = frontend.stats()
    assert after["runs"] == before["runs"] + 1 and after["skipped"] == before["skipped"]


_ALONE = """
    import os, sys
    os.environ["TRITON_INTERPRET"] = "1"
    sys.path.insert(0, {root!r})
    import torch, triton, triton.language as tl
    {install}

    @triton.jit
    def kernel(x_ptr, out_ptr, N, BLOCK: tl.constexpr):
        acc = tl.zeros([BLOCK], tl.float16)
        for start in range(0, N, BLOCK):
            acc = acc + tl.load(x_ptr + start + tl.arange(0, BLOCK)).to(tl.float32)
        tl.store(out_ptr + tl.arange(0, BLOCK), acc)

    out = torch.empty(16)
    try:
        kernel[(1,)](torch.ones(64), out, 64, BLOCK=16)
        print("ran", out[0].item())
    except Exception as error:
        print("refused", type(error).__name__)
"""


def _run_alone(path: Path, template: str, **fields) -> list[str]:
    """The stdout lines of ``template`` run as a script of its own, in a fresh process (a file:
    Triton's front end reads a kernel's source from it), on a CPU whatever the machine has."""
    path.write_text(textwrap.dedent(template.format(root=str(ROOT), **fields)))
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip().splitlines()


@pytest.mark.parametrize("install, outcome", [("", "ran 4.0"),
                                              ("from fuzz.interpreter import frontend; frontend.install()",
                                               "refused CompilationError")], ids=["interpreter-alone", "installed"])
def test_triton_s_interpreter_alone_runs_the_kernel_its_compiler_refuses(install, outcome, tmp_path):
    lines = _run_alone(tmp_path / "kernel.py", _ALONE, install=install)
    assert lines[-1] == outcome, lines


def test_a_correct_kernel_with_helpers_and_library_functions_compiles_and_runs():
    before = frontend.stats()
    assert torch.equal(_launch(_float_accumulator, n=96), _expected(96))
    after = frontend.stats()
    assert after["rejected"] == before["rejected"] and after["skipped"] == before["skipped"]
    # Triton's language is as the interpreter left it: the front end's swaps are undone.
    assert type(tl.max).__name__ == "InterpretedFunction"


def test_the_front_end_runs_once_per_specialization():
    runs = lambda: frontend.stats()["runs"]  # noqa: E731
    start = runs()
    _launch(_float_accumulator, n=40, block=8)
    assert runs() == start + 1
    _launch(_float_accumulator, n=40, block=8)
    _launch(_float_accumulator, n=48, block=8)  # divisible by 16: an annotation only, the same front end
    assert runs() == start + 1
    _launch(_float_accumulator, n=8, block=4)  # a new constexpr: a new specialization
    assert runs() == start + 2
    _launch(_float_accumulator, n=8, block=4, num_warps=2)  # a new launch option: a new compile on a GPU too
    assert runs() == start + 3
    # A refused specialization raises again on every launch, without running the front end again.
    for _ in range(2):
        with pytest.raises(CompilationError):
            _launch(_half_accumulator, n=32, block=32)
    assert runs() == start + 4


def test_an_option_only_the_interpreter_accepts_skips_the_check(caplog):
    # A GPU launch refuses an unknown keyword (a KeyError, no compile error); the interpreter drops
    # it. Not the front end's question: it skips, and the kernel runs as before, though it is refused.
    skipped = frontend.stats()["skipped"]
    with caplog.at_level(logging.DEBUG, logger="fuzz.interpreter.frontend"):
        out = _launch(_half_accumulator, n=16, block=16, no_such_option=1)
    assert out.dtype == torch.float32 and frontend.stats()["skipped"] == skipped + 1
    assert "KeyError: 'Keyword argument no_such_option was specified but unrecognised'" in caplog.text


_LEFT_PATCHED = """
    import os, sys
    os.environ["TRITON_INTERPRET"] = "1"
    sys.path.insert(0, {root!r})
    import torch, triton, triton.language as tl
    from fuzz.interpreter import frontend
    frontend.install()

    @triton.jit
    def _add(a, b):
        return a + b

    @triton.jit
    def helper_user(x_ptr, out_ptr, N, BLOCK: tl.constexpr):
        acc = tl.zeros([BLOCK], tl.float32)
        for start in range(0, N, BLOCK):
            acc = _add(acc, tl.load(x_ptr + start + tl.arange(0, BLOCK)))
        tl.store(out_ptr + tl.arange(0, BLOCK), acc)

    @triton.jit
    def half_accumulator(x_ptr, out_ptr, N, BLOCK: tl.constexpr):
        acc = tl.zeros([BLOCK], tl.float16)
        for start in range(0, N, BLOCK):
            acc = acc + tl.load(x_ptr + start + tl.arange(0, BLOCK)).to(tl.float32)
        tl.store(out_ptr + tl.arange(0, BLOCK), acc)

    helper_user[(1,)](torch.ones(64), torch.empty(16), 64, BLOCK=16)
    print("leaked", tl.core.load.__qualname__ == "_patch_attr.<locals>.<lambda>" and tl.core.range is not tl.range)
    frontend._state["pristine"] = {{}}  # no record of Triton's own, as after a late install
    try:
        half_accumulator[(1,)](torch.ones(16), torch.empty(64), 16, BLOCK=64)
        print("ran")
    except Exception as error:
        print("refused", type(error).__name__)
"""


def test_the_language_left_patched_by_a_launch_is_triton_s_own_for_the_front_end(tmp_path):
    # A launch that calls a helper leaves tl.core's builtins and tl.core.range patched by the
    # interpreter; its own tl.range is restored. Without the record install() took, the front end
    # still sees Triton's own and judges the kernel. In a fresh process: what earlier tests of a
    # worker launched changes what the language holds, and this is about one known history.
    lines = _run_alone(tmp_path / "left_patched.py", _LEFT_PATCHED)
    assert lines[-2:] == ["leaked True", "refused CompilationError"], lines


def test_a_patched_language_it_cannot_restore_skips_the_check(monkeypatch, caplog):
    # Patched in tl and in tl.core, with no record of Triton's own: the front end would meet the
    # interpreter's version, so it must not judge the kernel. It skips; the kernel runs.
    def _new_range(*args, **kwargs):  # as the interpreter's own replacement of tl.static_range is named
        raise AssertionError("the front end must not call the interpreter's version")

    _new_range.__module__ = "triton.runtime.interpreter"
    monkeypatch.setattr(tl, "static_range", _new_range)
    monkeypatch.setattr(tl.core, "static_range", _new_range)
    monkeypatch.setitem(frontend._state, "pristine", {})
    skipped = frontend.stats()["skipped"]
    with caplog.at_level(logging.DEBUG, logger="fuzz.interpreter.frontend"):
        out = _launch(_half_accumulator, n=128, block=128)  # a new specialization, refused on a GPU: it runs
    assert out.dtype == torch.float32 and frontend.stats()["skipped"] == skipped + 1
    assert re.search(r"skipped: _Unknown: triton\.language(\.core)?\.static_range", caplog.text), caplog.text


def _compilation_error_raised_through(filename: str) -> CompilationError:
    # As the code generator wraps an error: "raise CompilationError(...) from None" keeps it as context.
    try:
        try:
            exec(compile("raise RuntimeError('inside')", filename, "exec"))
        except RuntimeError:
            raise CompilationError("def kernel(): pass", None, "RuntimeError('inside')") from None
    except CompilationError as error:
        return error


def test_an_error_that_passed_through_the_interpreter_is_not_the_kernel_s():
    from fuzz.interpreter import specialization

    # Every run counts its launches through a wrapper of the interpreter's run (fuzz.interpreter.specialization):
    # a frame of fuzz above the front end's own call, which says nothing about the error.
    specialization.install()
    from_emulation = frontend._from_emulation
    assert from_emulation(_compilation_error_raised_through(str(Path(triton.__file__).parent / "runtime" /
                                                                 "interpreter.py")))
    assert not from_emulation(_compilation_error_raised_through(str(ROOT / "kernel.py")))
    assert from_emulation(CompilationError("def kernel(): pass", None,
                                           "Unsupported function referenced: <...InterpretedFunction object>"))
    with pytest.raises(CompilationError) as raised:  # the kernel's own fault
        _launch(_half_accumulator)
    assert not from_emulation(raised.value)


def test_install_is_idempotent():
    from triton.runtime.interpreter import InterpretedFunction

    run = InterpretedFunction.run
    assert frontend.install() and frontend.installed()
    assert InterpretedFunction.run is run


def _inputs(path: Path):
    if path.stem == "nd_middle_dim_triton":
        return [torch.randn(2, 1, 3), torch.randn(2, 300, 5)]
    return [torch.randn(1, 1), torch.randn(3, 17), torch.randn(2, 300)]


@pytest.mark.parametrize("target", [*(pytest.param(f"{path}:lse", id=path.stem,
                                                   marks=[pytest.mark.slow] if path.stem in SLOW else [])
                                      for path in TRITON_CORPUS), pytest.param("reference:lse", id="reference"),
                                    pytest.param("reference:lse_autograd@backward", id="reference-backward")])
def test_every_correct_triton_kernel_passes_the_front_end(target):
    # No false alarm, and the check ran: not one launch rejected or skipped, over four dtypes, a row
    # of one element (Triton specializes an integer equal to 1) and rows past one tile.
    impl = load_target(target)
    autotune.install()  # the interpreter runs an autotuned kernel's first config, as a worker does
    before = frontend.stats()
    for x in _inputs(Path(target.partition(":")[0])):  # (the reference's path is no file: 2-D inputs)
        for dtype in (torch.float32, torch.float16, torch.bfloat16, torch.float64):
            impl(x.to(dtype))
    after = frontend.stats()
    assert after["runs"] > before["runs"]
    assert (after["rejected"], after["skipped"]) == (before["rejected"], before["skipped"]), target


_HELPER_FAILS = """
    import os, sys
    os.environ["TRITON_INTERPRET"] = "1"
    sys.path.insert(0, {root!r})
    import torch, triton, triton.language as tl
    from fuzz.interpreter import frontend
    frontend.install()

    @triton.jit
    def helper(a):
        return tl.logsumexp_that_does_not_exist(a)

    @triton.jit
    def kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
        x = tl.load(x_ptr + tl.arange(0, BLOCK))
        tl.store(out_ptr + tl.arange(0, BLOCK), helper(x))

    try:
        kernel[(1,)](torch.ones(16), torch.empty(16), BLOCK=16)
        print("ran")
    except Exception as error:
        print(type(error).__name__, "|", str(error).replace(chr(10), " "))
"""


def test_a_helper_that_fails_to_compile_is_reported_where_it_fails_not_at_its_call_site(tmp_path):
    # Triton wraps the helper's error in one at the call site with no message: the report would say
    # "at the tl.store line" and not what failed. The innermost CompilationError is raised instead.
    lines = _run_alone(tmp_path / "helper_fails.py", _HELPER_FAILS)
    kind, _, message = lines[-1].partition(" | ")
    assert kind == "CompilationError" and "logsumexp_that_does_not_exist" in message, lines
    assert "tl.store" not in message, message
