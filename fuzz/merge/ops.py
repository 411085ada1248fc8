"""The operations besides the row LSE that ``--op`` selects, each declared once: how it is called,
its checks, the inputs drawn for it, and a probe input that shows a wrong signature or a result of
the wrong structure before any fuzzing (bad input: one line, exit 2).

    merge_state(v_a, s_a, v_b, s_b) -> (v, s)     two attention states merged (prefix + suffix)
    combine(v, s) -> (v_out, s_out)               S split states combined (split-K flash decoding)

An op's module is imported when the op is first used, so ``lse-fuzz --help`` and the row LSE's
runs pay nothing for the others.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass

import torch

from reference.errors import InvalidArgument

from ..contract import parse_lse_base
from .strategies import LAYOUTS

__all__ = ["OPS", "Op", "V_DTYPE_NAMES", "layouts", "lse_base", "op", "probe", "v_dtypes"]

V_DTYPE_NAMES = ("float32", "float16", "bfloat16")
"""The dtypes of v an op's kernels take; the LSEs are float32."""


@dataclass(frozen=True)
class Op:
    """One operation: ``module`` holds ``CHECKS`` (names), ``run_checks(fn, example, *, checks)``,
    ``inputs(*, dtypes, base, device)`` (a Hypothesis strategy) and ``probe_input(device, base)``."""

    name: str
    call: str  # how the implementation is called, as the reports spell it
    params: tuple[str, ...]  # the tensors passed, in order
    module: str

    @property
    def parts(self):
        return importlib.import_module(self.module)

    @property
    def checks(self) -> tuple[str, ...]:
        return self.parts.CHECKS


OPS: dict[str, Op] = {
    "merge_state": Op("merge_state", "merge_state(v_a, s_a, v_b, s_b) -> (v, s)", ("v_a", "s_a", "v_b", "s_b"),
                      "fuzz.merge.merge_op"),
    "combine": Op("combine", "combine(v, s) -> (v_out, s_out)", ("v", "s"), "fuzz.merge.combine_op"),
}


def op(name: object, *, flag: str = "op") -> Op:
    """The op called ``name``; :class:`InvalidArgument` naming the choices otherwise."""
    if isinstance(name, str) and name in OPS:
        return OPS[name]
    raise InvalidArgument(f"{flag}={name!r}; choose lse (the row-wise LSE, the default) or one of "
                          f"{', '.join(OPS)}.")


def lse_base(value: object, *, flag: str = "lse_base") -> str | int:
    """"e" or 2 (the text "2" too, as a command line gives it): :func:`fuzz.contract.parse_lse_base`."""
    return parse_lse_base(value, flag=flag)


def v_dtypes(names: object, *, flag: str = "dtypes") -> tuple[torch.dtype, ...]:
    """The dtypes of v to draw: comma-separated names (or a sequence) among :data:`V_DTYPE_NAMES`."""
    if names is None:
        return tuple(getattr(torch, name) for name in V_DTYPE_NAMES)
    parts = [p.strip() for p in names.split(",")] if isinstance(names, str) else list(names)
    parts = [str(p).replace("torch.", "") for p in parts if str(p)]
    unknown = [p for p in parts if p not in V_DTYPE_NAMES]
    if unknown or not parts:
        raise InvalidArgument(f"{flag}={names!r}; an op's v is one of {', '.join(V_DTYPE_NAMES)} (comma-separated).")
    return tuple(getattr(torch, p) for p in dict.fromkeys(parts))


def layouts(value: object, *, flag: str = "layouts") -> tuple[str, ...]:
    """The inputs' layouts an op's kernel declares it takes: "any" (default: contiguous, transposed
    LSEs and head-major v, strided) or "contiguous" (every tensor contiguous)."""
    if value is None or value == "any":
        return LAYOUTS
    if value == "contiguous":
        return ("contiguous",)
    raise InvalidArgument(f"{flag}={value!r}; an op's kernel takes any layouts (the default) or contiguous tensors "
                          "only (contiguous).")


def _bad(what: Op, target: str, text: str) -> InvalidArgument:
    return InvalidArgument(f"{target}: {text}; --op {what.name} calls {what.call}.")


def probe(fn: Callable, what: Op, *, target: str, device: torch.device, base) -> None:
    """Refuse, as bad input, an implementation that cannot be called as ``what`` says or whose
    result on an ordinary input has another structure (not a pair of tensors, other shapes or
    dtypes): that is a wrong --op or a wrong function, not a bug to shrink. What it raises on the
    probe is left to the run, which reports it as the implementation's error."""
    try:
        inspect.signature(fn).bind(*what.params)
    except TypeError as exc:
        raise _bad(what, target, f"its signature does not take {len(what.params)} tensors ({exc})") from None
    except ValueError:  # no signature to read (a builtin): the call itself will say
        pass
    example = what.parts.probe_input(device, base)
    try:
        result = fn(*example.named().values())
    except Exception:  # the implementation's error: the run meets it and reports it with its traceback
        return
    if not (isinstance(result, (tuple, list)) and len(result) == 2
            and all(isinstance(r, torch.Tensor) for r in result)):
        raise _bad(what, target, f"returned {type(result).__name__} on an ordinary input, not a pair of tensors")
    for name, got, (shape, dtype) in zip(("first", "second"), result, what.parts.expected_outputs(example)):
        if tuple(got.shape) != shape or got.dtype != dtype:
            raise _bad(what, target, f"its {name} result on an input of v {tuple(example.named()[what.params[0]].shape)} "
                                     f"has shape {tuple(got.shape)} and dtype {str(got.dtype).replace('torch.', '')}, "
                                     f"expected {shape} and {str(dtype).replace('torch.', '')}")
