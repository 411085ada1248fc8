"""What ran on the host during a candidate's calls: the PyTorch operators, seen at run time.

The static scan (:mod:`fuzz.grading.static_scan`) reads source, and source can hide what it calls
(``getattr`` with a built name, a library that calls ``logsumexp`` for it). Every PyTorch operator
on tensors passes the dispatcher, so a ``TorchDispatchMode`` active around each call sees which
aten operators ran, whatever Python reached them. Triton launches do not pass the dispatcher (a
kernel gets pointers, and the interpreter runs it with numpy), so an honest Triton candidate
costs the mode a handful of small operators per call: the output's allocation and the like.
``torch.compile``d code runs compiled under it (``ignore_compile_internals``), unseen.

Findings are flags beside the verdict, as the static ones are: a correct wrapper of
``torch.logsumexp`` is correct, and ``check`` says so.

A candidate runs in the same process as the mode and can pop it off the stack: the worker checks
after each call that it is still there (:func:`recording`). One that disables the modes inside
its call and restores them before returning is not seen this way.
"""

from __future__ import annotations

import contextlib

import torch
from torch.utils._python_dispatch import TorchDispatchMode, _get_current_dispatch_mode_stack, _pop_mode

from .post_import import when_imported

__all__ = ["OpRecord", "keep_out_of_dynamo", "recording"]

LIBRARY_LSE = frozenset({"logsumexp", "special_logsumexp", "logcumsumexp", "_logcumsumexp", "logaddexp",
                         "logaddexp2"})
LIBRARY_SOFTMAX = frozenset({"softmax", "_softmax", "log_softmax", "_log_softmax", "special_softmax",
                             "special_log_softmax"})
HOST_MATH = frozenset({"exp", "exp_", "exp2", "exp2_", "expm1", "log", "log_", "log2", "log2_", "log1p",
                       "special_exp2", "special_expm1", "special_log1p"})
MOVES = frozenset({
    # Operators that allocate, move, cast or re-view data without computing with it: float64
    # tensors through these (a launcher casting for a float64 kernel) are not host compute.
    "_to_copy", "copy_", "clone", "contiguous", "detach", "alias", "lift_fresh", "empty", "empty_like",
    "empty_strided", "new_empty", "new_empty_strided", "zeros", "zeros_like", "ones", "ones_like", "full",
    "full_like", "new_zeros", "new_full", "fill_", "zero_", "view", "_unsafe_view", "reshape", "_reshape_alias",
    "as_strided", "t", "transpose", "permute", "expand", "unsqueeze", "squeeze", "select", "slice", "narrow",
    "split", "unbind", "set_", "resize_", "is_nonzero", "item", "_local_scalar_dense", "equal",
})
"""Operators whose float64 tensors do not count as float64 compute."""


class OpRecord(TorchDispatchMode):
    """Records the aten operators of the calls it is active around, by overload packet name."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: set[str] = set()
        self.float64_ops: set[str] = set()
        self.watch_float64 = False  # the input is not float64: float64 compute is the candidate's choice

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # torch wraps a mode's __torch_dispatch__ so dynamo never compiles it, and its wrapper imports
        # torch._dynamo on the first operator: seconds of every worker's first call. The same wrapper
        # is put on by keep_out_of_dynamo() once torch._dynamo is imported (dynamo cannot run before).
        return False

    @classmethod
    def ignore_compile_internals(cls) -> bool:
        # torch.compile'd code runs compiled, as it would without the record (the default makes
        # dynamo fall back to eager under any mode: another program than the one graded). Its
        # operators are then not seen here; the static scan still reads its source.
        return True

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func.overloadpacket.__name__
        self.ops.add(name)
        if self.watch_float64 and name not in MOVES and any(
                isinstance(a, torch.Tensor) and a.dtype == torch.float64
                for a in (*args, *(kwargs or {}).values())):
            self.float64_ops.add(name)
        return func(*args, **(kwargs or {}))

    def findings(self) -> dict[str, list[str]]:
        """Runtime flag -> the operators behind it (see ``RUNTIME_FLAGS`` in fuzz.grading.evaluate)."""
        found = {
            "runtime_library_lse": sorted(self.ops & LIBRARY_LSE),
            "runtime_library_softmax": sorted(self.ops & LIBRARY_SOFTMAX),
            "runtime_host_math": sorted(self.ops & HOST_MATH),
            "runtime_float64": sorted(self.float64_ops),
        }
        return {flag: [f"aten.{op}" for op in ops] for flag, ops in found.items() if ops}


_DISPATCH = OpRecord.__dict__["__torch_dispatch__"]


def keep_out_of_dynamo() -> None:
    """Once torch._dynamo is imported (by the candidate, at import or in a call), the record's
    ``__torch_dispatch__`` is wrapped as torch wraps every mode's: dynamo never compiles it."""

    def wrap(_dynamo) -> None:
        OpRecord.__torch_dispatch__ = torch._disable_dynamo(_DISPATCH, recursive=True)

    when_imported("torch._dynamo", wrap)


@contextlib.contextmanager
def recording(record: OpRecord, *, input_dtype: torch.dtype, removed: list[bool]):
    """Run the body under ``record``; ``removed[0]`` becomes True when the body took the mode off
    the stack (it is then left as the body left it)."""
    record.watch_float64 = input_dtype != torch.float64
    record.__enter__()
    try:
        yield record
    finally:
        if any(mode is record for mode in _get_current_dispatch_mode_stack()):
            while _get_current_dispatch_mode_stack()[-1] is not record:
                _pop_mode()  # modes the body pushed and left: they go with ours
            record.__exit__(None, None, None)
        else:
            removed[0] = True
