"""fuzz.interpreter.kernel_globals: a kernel's globals mean in the interpreter what they mean to Triton's compiler.

Triton's code generator reads a kernel's globals by rules of its own: a module the backend maps
(``triton.language.extra.libdevice`` is CUDA's libdevice on a GPU), a function of such a module
(``log1p = libdevice.log1p``), a Triton builtin under another name (``to_dtype = tl.cast``),
a JITFunction, a dtype, a constexpr. Triton's interpreter reads them as Python: the library's
stubs returned None, a builtin called without the code generator raised "Did you forget to add
@triton.jit". Each form here compiles on a GPU (the front end shows it) and ran in the interpreter
only once the module was installed. A global the compiler refuses stays refused, with its message.
"""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from reference._device import ensure_interpreter, interpreting

ensure_interpreter()  # before anything imports triton: Triton's library is built for the mode

from fuzz.interpreter import frontend, kernel_globals, libdevice as interpreter_libdevice, pace  # noqa: E402
from fuzz.interpreter.autotune import discover, pinned  # noqa: E402

import triton  # noqa: E402  (after reference: the interpreter is on where no GPU is)
import triton.language as tl  # noqa: E402
import triton.language.extra.libdevice  # noqa: E402  (the chain triton.language.extra.libdevice.f)
from triton.language.extra import libdevice  # noqa: E402
from triton.language.extra import libdevice as tl_libdevice  # noqa: E402
from triton.language.extra.cuda import libdevice as cuda_libdevice  # noqa: E402
from triton.language.extra.libdevice import expm1 as imported_expm1  # noqa: E402
from triton.compiler.errors import CompilationError  # noqa: E402

pytestmark = pytest.mark.skipif(not interpreting(), reason="Triton's interpreter only (no GPU here)")
pace.install()  # in the order fuzz.target installs them
frontend.install()
interpreter_libdevice.install()
kernel_globals.install()

log1p = libdevice.log1p  # a function alias, as merge and cross-entropy kernels write them
to_dtype = tl.cast  # a builtin under another name (a training library's triton_cast)
exp = tl.exp
exp2 = tl_libdevice.exp2
tanh = cuda_libdevice.tanh
SCALE = 2.0  # a plain global: the compiler refuses it


@triton.jit
def _forms(x_ptr, out_ptr, FORM: tl.constexpr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets)
    # A constexpr chooses one form; the compiler prunes the others, as the interpreter skips them.
    if FORM == "module":
        y = libdevice.log1p(x)
    elif FORM == "module_alias":
        y = tl_libdevice.log1p(x)
    elif FORM == "function_alias":
        y = log1p(x)
    elif FORM == "from_import":
        y = imported_expm1(x)
    elif FORM == "chain":
        y = triton.language.extra.libdevice.log1p(x)
    elif FORM == "cuda_module":
        y = cuda_libdevice.log1p(x)
    elif FORM == "cast_alias":
        y = to_dtype(to_dtype(x, tl.float64) * 2.0, tl.float32)
    elif FORM == "builtin_alias":
        y = exp(x)
    elif FORM == "exp2_alias":
        y = exp2(x)
    else:
        y = tanh(x)
    tl.store(out_ptr + offsets, y)


X = torch.tensor([0.0, 1e-8, 0.5, 1.0, 2.0, -0.5, 10.0, 3.0])
EXPECTED = {"module": torch.log1p, "module_alias": torch.log1p, "function_alias": torch.log1p,
            "from_import": torch.expm1, "chain": torch.log1p, "cuda_module": torch.log1p,
            "cast_alias": lambda x: x * 2, "builtin_alias": torch.exp, "exp2_alias": torch.exp2,
            "tanh_alias": torch.tanh}


@pytest.mark.parametrize("form", list(EXPECTED))
def test_each_form_of_a_global_runs_as_the_compiler_reads_it(form):
    before = frontend.stats()
    out = torch.empty(8)
    _forms[(1,)](X, out, FORM=form, BLOCK=8)
    torch.testing.assert_close(out, EXPECTED[form](X.double()).float(), rtol=2e-7, atol=0)
    after = frontend.stats()
    assert (after["rejected"], after["skipped"]) == (before["rejected"], before["skipped"])  # the GPU compiles it


def test_the_globals_are_as_they_were_after_a_launch():
    names = ("libdevice", "tl_libdevice", "log1p", "to_dtype", "exp", "exp2", "tanh", "cuda_libdevice")
    before = {name: globals()[name] for name in names}
    stub_log1p, cuda_log1p = libdevice.log1p, cuda_libdevice.log1p
    _forms[(1,)](X, torch.empty(8), FORM="module_alias", BLOCK=8)
    assert {name: globals()[name] for name in names} == before
    assert (libdevice.log1p, cuda_libdevice.log1p) == (stub_log1p, cuda_log1p)


@triton.jit
def _plain_global(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets) * SCALE)


def test_a_global_the_compiler_refuses_is_refused_with_its_message():
    with pytest.raises(CompilationError) as raised:
        _plain_global[(1,)](X, torch.empty(8), BLOCK=8)
    assert "Cannot access global variable SCALE" in str(raised.value)


HELPERS = '''
import triton
import triton.language as tl
from triton.language.extra import libdevice as tl_libdevice

to_dtype = tl.cast


@triton.jit
def logaddexp(a, b):
    low, high = tl.minimum(a, b), tl.maximum(a, b)
    return high + tl_libdevice.log1p(tl.exp(to_dtype(low - high, tl.float32)))
'''


def test_a_helper_in_another_module_reads_its_own_module_s_globals(tmp_path):
    path = tmp_path / "lse_helpers_for_globals_test.py"
    path.write_text(textwrap.dedent(HELPERS))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    helpers = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = helpers
    spec.loader.exec_module(helpers)
    globals()["_helpers"] = helpers  # the kernel reaches it as a module attribute, as a package's kernels do

    @triton.jit
    def merge(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr):
        offsets = tl.arange(0, BLOCK)
        tl.store(out_ptr + offsets, _helpers.logaddexp(tl.load(x_ptr + offsets), tl.load(y_ptr + offsets)))

    y, out = X.flip(0), torch.empty(8)
    merge[(1,)](X, y, out, BLOCK=8)
    torch.testing.assert_close(out, torch.logaddexp(X.double(), y.double()).float())
    assert helpers.to_dtype is tl.cast and helpers.tl_libdevice is libdevice  # restored


@triton.jit
def _cast_only(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, to_dtype(tl.load(x_ptr + offsets), tl.float64) * 2.0)


def test_an_alias_taken_while_the_language_was_patched_still_compiles(monkeypatch):
    # A module imported while a launch had the language patched holds the interpreter's wrapper
    # of a builtin; to the compiler it is the builtin.
    from triton.runtime import interpreter
    holder = type("Holder", (), {})()
    interpreter._patch_attr(holder, "cast", tl.cast, None, interpreter._LangPatchScope())
    monkeypatch.setitem(globals(), "to_dtype", holder.cast)
    before = frontend.stats()
    out = torch.empty(8, dtype=torch.float64)
    _cast_only[(1,)](X, out, BLOCK=8)
    assert frontend.stats()["rejected"] == before["rejected"]
    assert frontend.stats()["skipped"] == before["skipped"]
    torch.testing.assert_close(out, X.double() * 2)


def test_install_is_idempotent():
    assert kernel_globals.install() and kernel_globals.install()
    assert kernel_globals.installed()


def test_what_it_remembers_leads_autotune_s_discovery_to_no_other_module_s_kernels():
    # The interpreter copies its globals (this module's wrapper of _patch_lang among them) into a
    # kernel's module; fuzz.interpreter.autotune.discover walks what that module reaches. A cache that held
    # other modules' globals led it to their autotuners: two found where the module has one.
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "implementations"))
    from tuned import autotuned, pruned

    for module in (pruned, autotuned):
        with pinned(discover(module.lse), 0):
            module.lse(torch.randn(2, 40))
    assert len(discover(autotuned.lse)) == len(discover(pruned.lse)) == 1
