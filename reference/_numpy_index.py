"""Triton's interpreter on NumPy 2.5: a tensor used as a Python index converts again.

Triton 3.6's interpreter makes a kernel's scalar tensor a Python int with ``int(handle.data)``,
where ``handle.data`` is a one-element array of one dimension. NumPy deprecated that conversion in
1.25 and refuses it from 2.5 ("only 0-dimensional arrays can be converted to Python scalars").
On such a machine every interpreted kernel that uses a scalar argument as a Python integer (the
bound of ``for start in range(0, N, BLOCK_N)``, an index) raises ``InterpreterError``: seen on an
H200 host (torch 2.11, Triton 3.6, NumPy 2.5.2), where ``--device cpu`` graded every such kernel
``error`` while the same kernel passed on the GPU and on a CPU machine with NumPy 2.4. Triton
re-attaches ``tensor.__index__`` at every launch (``_patch_lang_tensor``), so :func:`install`
wraps that function and attaches a conversion through ``.item()``, which every NumPy accepts;
anything that is not one element still raises as Triton's own would.

Installed by this package before its kernels run in the interpreter (:func:`reference._device.check_device`:
``lse(x)`` of a CPU tensor on such a machine raised before), and wherever the fuzzer runs a kernel in
the interpreter (``fuzz.interpreter.numpy_compat``, with its other repairs).
"""

from __future__ import annotations

__all__ = ["install", "installed"]

_PATCHED = "_lse_fuzz_numpy_index"


def _index(self) -> int:
    data = self.handle.data
    return int(data.item()) if getattr(data, "size", None) == 1 else int(data)


def install() -> bool:
    """Wrap the interpreter's ``_patch_lang_tensor``; idempotent. False (nothing changed) for a
    Triton whose interpreter has no such function (its layout differs: nothing to repair)."""
    try:
        from triton.runtime import interpreter
    except ImportError:
        return False
    original = getattr(interpreter, "_patch_lang_tensor", None)
    if original is None:
        return False
    if getattr(original, _PATCHED, False):
        return True

    def patch_lang_tensor(tensor, scope, *args, **kwargs):
        result = original(tensor, scope, *args, **kwargs)
        scope.set_attr(tensor, "__index__", _index)
        return result

    setattr(patch_lang_tensor, _PATCHED, True)
    interpreter._patch_lang_tensor = patch_lang_tensor
    return True


def installed() -> bool:
    try:
        from triton.runtime import interpreter
    except ImportError:
        return False
    return getattr(getattr(interpreter, "_patch_lang_tensor", None), _PATCHED, False)
