"""The call convention: how the implementation is called and where its result holds the LSE.

Real kernels reduce one dim of an N-D tensor and often return more than the LSE. A
:class:`CallConvention` declares it, as part of the :class:`fuzz.contract.Contract`:

* ``ndim``: the rank of the input (default 2); ``dim``: the dim reduced (default -1, negative
  counts from the end); every other dim is a batch dim, of any size (1 and 0 included) and any
  stride the declared layouts allow (see :mod:`fuzz.batching`);
* ``keepdim``: the result keeps the reduced dim with size 1 (default False: it drops it);
* ``args``: what is passed. :attr:`CallArgs.X` calls ``lse(x)`` (the implementation reduces
  ``dim`` and applies ``keepdim`` on its own: they are fixed, declared only so the fuzzer knows);
  :attr:`CallArgs.DIM` calls ``lse(x, dim=dim)``; :attr:`CallArgs.DIM_KEEPDIM` calls
  ``lse(x, dim=dim, keepdim=keepdim)``, as ``torch.logsumexp`` is called;
* ``result``: where the LSE is in what the call returns. None: the result is the LSE tensor; an
  int: item ``result`` of a returned tuple or list (``1`` for ``(out, lse)``); a name: the key of a
  returned dict, else the attribute of a returned object (``lse`` for ``Output(loss, lse)``).

The default, ``CallConvention()``, is today's 2-D ``lse(x)`` returning an (M,) tensor, and with it
nothing here runs. Otherwise the checks still judge rows: the N-D input is a view whose rows
(``x.movedim(dim, -1).reshape(M, N)``) are the 2-D example's, and the LSE is mapped back to (M,)
rows after its shape (the batch shape, with a 1 at ``dim`` under ``keepdim``) and strides (no
two elements at one address) were checked (:meth:`CallConvention.lse_rows`).

Bad input names the value and the fix: a ``dim`` out of range for ``ndim`` is refused when the
convention is built, and a result of another structure than declared (a tuple when ``result`` is
None, a missing index, key or attribute) raises :class:`ConventionError` on the first call.

An isolated worker sends back only an (M,) tensor for an input of M rows, so the worker applies the
convention itself (:meth:`CallConvention.worker_call`): the parent sends it a *carrier*, the N-D
input with a leading dim of M copies of stride 0 (no extra memory), and gets the LSE rows back.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import torch

from reference.errors import InvalidArgument

__all__ = ["MAX_NDIM", "CallArgs", "CallConvention", "CallMismatch", "ConventionError", "applies_call", "parse_result"]

MAX_NDIM = 6
"""The largest input rank drawn: past it, batch dims only multiply size-1 dims."""

_MISMATCH = "CallMismatch"
_STRUCTURE = "ConventionError"


class ConventionError(InvalidArgument):
    """The implementation's result does not have the declared structure (bad input: exit 2)."""


class CallArgs(str, enum.Enum):
    """What the implementation is passed besides the input."""

    X = "x"  # lse(x): dim and keepdim are the implementation's own (fixed)
    DIM = "x,dim"  # lse(x, dim=D)
    DIM_KEEPDIM = "x,dim,keepdim"  # lse(x, dim=D, keepdim=K)


class CallMismatch:
    """An LSE of the wrong shape or strides: what the checks get instead of rows, to fail on."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:  # what an isolated worker sends back for it
        return self.text


def parse_result(value: object, *, name: str = "result") -> int | str | None:
    """``result`` as given: None, an int (a tuple index) or a name; a digit string is an index."""
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    if isinstance(value, str) and value.strip():
        text = value.strip()
        return int(text) if text.lstrip("-").isdigit() else text
    raise InvalidArgument(f"{name}={value!r}; expected a tuple index (e.g. 1) or the name of a key or attribute "
                          "(e.g. lse) where the result holds the LSE.")


def _flag(value: object, name: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("1", "true", "yes", "0", "false", "no"):
        return value.lower() in ("1", "true", "yes")
    raise InvalidArgument(f"{name}={value!r}; expected True or False.")


def _int(value: object, name: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    raise InvalidArgument(f"{name}={value!r}; expected an integer.")


@dataclass(frozen=True)
class CallConvention:
    """How the implementation is called (see the module docstring). Strings are accepted for every field."""

    ndim: int = 2
    dim: int = -1
    keepdim: bool = False
    args: CallArgs = CallArgs.X
    result: int | str | None = None

    def __post_init__(self) -> None:
        ndim, dim = _int(self.ndim, "ndim"), _int(self.dim, "dim")
        if not 1 <= ndim <= MAX_NDIM:
            raise InvalidArgument(f"ndim={self.ndim!r}; expected the input's rank, 1 to {MAX_NDIM} (--ndim).")
        if not -ndim <= dim < ndim:
            raise InvalidArgument(f"dim={self.dim!r} is out of range for {ndim}-D inputs (ndim={ndim}): expected "
                                  f"{-ndim} <= dim <= {ndim - 1}; pass such a --dim, or the input's rank as --ndim.")
        object.__setattr__(self, "ndim", ndim)
        object.__setattr__(self, "dim", dim)
        object.__setattr__(self, "keepdim", _flag(self.keepdim, "keepdim"))
        try:
            object.__setattr__(self, "args", CallArgs(getattr(self.args, "value", self.args)))
        except ValueError:
            options = ", ".join(repr(a.value) for a in CallArgs)
            raise InvalidArgument(f"args={self.args!r}; expected one of {options} (--call-args).") from None
        object.__setattr__(self, "result", parse_result(self.result))

    @property
    def is_default(self) -> bool:
        """The 2-D ``lse(x)`` returning the (M,) LSE: the fuzzer calls the implementation as always."""
        return self == CallConvention()

    @property
    def reduced(self) -> int:
        """``dim`` as a non-negative index."""
        return self.dim % self.ndim

    def kwargs(self) -> dict[str, object]:
        if self.args is CallArgs.X:
            return {}
        if self.args is CallArgs.DIM:
            return {"dim": self.dim}
        return {"dim": self.dim, "keepdim": self.keepdim}

    def describe(self) -> str:
        """E.g. ``called as lse(x, dim=1, keepdim=True)[1] on 3-D inputs, reducing dim 1, keepdim``."""
        passed = "".join(f", {k}={v!r}" for k, v in self.kwargs().items())
        place = "" if self.result is None else f"[{self.result!r}]"
        shape = " keeping it (size 1)" if self.keepdim else ""
        return f"called as lse(x{passed}){place} on {self.ndim}-D inputs, reducing dim {self.dim}{shape}"

    def to_dict(self) -> dict[str, object]:
        return {"ndim": self.ndim, "dim": self.dim, "keepdim": self.keepdim, "args": self.args.value,
                "result": self.result}

    @classmethod
    def from_dict(cls, data: Mapping) -> CallConvention:
        unknown = set(data) - {"ndim", "dim", "keepdim", "args", "result"}
        if unknown:
            raise InvalidArgument(f"call has unknown keys {sorted(unknown)!r}; expected ndim, dim, keepdim, args, "
                                  "result.")
        return cls(**data)

    def cli_args(self) -> str:
        """The command-line options that declare this convention (empty for the default)."""
        default = CallConvention()
        parts = [f"--{name} {getattr(self, name)}" for name in ("ndim", "dim") if getattr(self, name) !=
                 getattr(default, name)]
        parts += ["--keepdim"] if self.keepdim else []
        parts += [f"--call-args {self.args.value}"] if self.args is not CallArgs.X else []
        parts += [f"--result {self.result}"] if self.result is not None else []
        return " ".join(parts)

    # -- the parent's side ----------------------------------------------------------------------

    def output_shape(self, x: torch.Tensor) -> tuple[int, ...]:
        """The LSE's expected shape for the N-D input ``x``."""
        shape = list(x.shape)
        if self.keepdim:
            shape[self.reduced] = 1
        else:
            del shape[self.reduced]
        return tuple(shape)

    def call(self, impl: Callable, x: torch.Tensor) -> object:
        return impl(x, **self.kwargs())

    def select(self, out: object) -> object:
        """The LSE in ``out`` at the declared place; ConventionError naming the fix when it is not there."""
        place = self.result
        if place is None:
            if isinstance(out, (tuple, list, dict)):
                raise ConventionError(f"the implementation returned a {_what(out)}, not a tensor: pass --result "
                                      "(result=) naming where the LSE is, an index such as --result 1 or a key such "
                                      "as --result lse.")
            return out
        if isinstance(place, int):
            if not isinstance(out, (tuple, list)):
                raise ConventionError(f"result={place!r} names item {place} of a returned tuple, but the "
                                      f"implementation returned a {_what(out)}; give the key or attribute name, or "
                                      "drop --result if it returns the LSE itself.")
            if not -len(out) <= place < len(out):
                raise ConventionError(f"result={place!r}, but the implementation returned a {_what(out)}; pass "
                                      f"--result between 0 and {len(out) - 1}.")
            return out[place]
        if isinstance(out, Mapping):
            if place not in out:
                raise ConventionError(f"result={place!r}, but the returned {type(out).__name__} has no key {place!r} "
                                      f"(keys: {', '.join(map(repr, list(out)[:8]))}); pass one of them as --result.")
            return out[place]
        if isinstance(out, torch.Tensor) or not hasattr(out, place):
            names = [n for n in dir(out) if not n.startswith("_")][:8] if not isinstance(out, torch.Tensor) else []
            hint = f" (it has: {', '.join(names)})" if names else ""
            raise ConventionError(f"result={place!r}, but the implementation returned a {_what(out)} with no "
                                  f"attribute {place!r}{hint}; pass the name or index where the LSE is as --result, "
                                  "or drop --result if it returns the LSE itself.")
        return getattr(out, place)

    def lse_rows(self, lse: object, x: torch.Tensor) -> object:
        """The LSE as (M,) rows in the order of ``x``'s rows, or a :class:`CallMismatch` saying why not.

        Anything that is not a dense tensor is returned as it is: the checks name what it is."""
        if not isinstance(lse, torch.Tensor) or lse.layout != torch.strided:
            return lse
        expected = self.output_shape(x)
        if tuple(lse.shape) != expected:
            keep = "keepdim: the reduced dim kept with size 1" if self.keepdim else "the reduced dim dropped"
            return CallMismatch(f"returned shape {tuple(lse.shape)}, expected {expected}: the input's shape "
                                f"{tuple(x.shape)} reduced over dim {self.dim} ({keep})")
        for size, stride in zip(lse.shape, lse.stride()):
            if size > 1 and stride == 0 and lse.numel() > 1:
                return CallMismatch(f"returned a result with strides {tuple(lse.stride())}: several of its elements "
                                    "share one address (a stride of 0), so writing one changes the others")
        return lse.reshape(-1)

    @staticmethod
    def carrier(x: torch.Tensor, rows: int) -> torch.Tensor:
        """``x`` under a leading dim of ``rows`` copies of stride 0 (no copy): what a worker is sent."""
        return x.as_strided((rows, *x.shape), (0, *x.stride()), x.storage_offset())

    def rows(self, x: torch.Tensor) -> int:
        """How many rows (LSE values) the N-D input ``x`` has."""
        return math.prod(size for d, size in enumerate(x.shape) if d != self.reduced)

    def as_rows(self, x: torch.Tensor) -> torch.Tensor:
        """The input's (M, N) rows (``x`` itself under the default convention)."""
        if self.is_default:
            return x
        return x.movedim(self.reduced, -1).reshape(self.rows(x), x.shape[self.reduced])

    def invoke(self, impl: Callable, x: torch.Tensor) -> object:
        """Call ``impl`` on ``x`` as declared. An implementation whose worker applies the convention
        (:func:`applies_call`) is sent the :meth:`carrier` instead and returns the rows; what it
        raised about the result's shape or structure comes back as a value for :meth:`settle`."""
        if self.is_default:
            return impl(x)
        if not applies_call(impl):
            return self.call(impl, x)
        try:
            return impl(self.carrier(x, self.rows(x)))
        except Exception as exc:
            kind = getattr(exc, "remote_type", None)  # what an isolated worker raised, by its type's name
            if kind == _MISMATCH:
                return CallMismatch(str(exc))
            if kind == _STRUCTURE:
                return _Structure(str(exc))
            raise

    def settle(self, impl: Callable, out: object, x: torch.Tensor) -> object:
        """What :meth:`invoke` returned, as the checks take it: the (M,) rows or what to fail on;
        ConventionError when the result has another structure than declared."""
        if self.is_default:
            return out
        if isinstance(out, _Structure):
            raise ConventionError(out.text)
        if applies_call(impl):
            return out
        return self.lse_rows(self.select(out), x)

    # -- the worker's side ----------------------------------------------------------------------

    def worker_call(self, impl: Callable) -> Callable[[torch.Tensor], object]:
        """The callable a worker runs: takes a :meth:`carrier`, returns the (M,) rows or a stand-in."""

        def call(carrier: torch.Tensor) -> object:
            x = carrier.as_strided(carrier.shape[1:], carrier.stride()[1:], carrier.storage_offset())
            out = self.lse_rows(self.select(self.call(impl, x)), x)  # a ConventionError goes back as it is
            if isinstance(out, CallMismatch):
                raise _RemoteMismatch(out.text)
            return out

        call.__name__ = getattr(impl, "__name__", "lse")
        # Autotuned kernels are found from the implementation's module (fuzz.interpreter.autotune.discover); no
        # __wrapped__: the worker checks this callable's own signature, call(carrier).
        call.__module__ = getattr(impl, "__module__", None) or __name__
        return call

    def suffix(self) -> str:
        """The convention as a TARGET suffix (``@ndim=3,dim=1,...``), for a worker to load it."""
        data = self.to_dict()
        data["args"] = self.args.name.lower()
        data["keepdim"] = int(self.keepdim)
        return "@" + ",".join(f"{key}={value}" for key, value in data.items() if value is not None)

    @classmethod
    def from_suffix(cls, text: str) -> CallConvention:
        try:
            data = dict(part.split("=", 1) for part in text.split(",") if part)
        except ValueError:
            raise InvalidArgument(f"call={text!r}; expected key=value pairs separated by commas.") from None
        if "args" in data:
            data["args"] = CallArgs[data["args"].upper()].value if data["args"].upper() in CallArgs.__members__ \
                else data["args"]
        return cls.from_dict(data)


class _Structure(CallMismatch):
    """A ConventionError a worker raised, held until the parent's checks raise it."""


class _RemoteMismatch(Exception):
    """A CallMismatch raised in a worker: its type's name travels, and the parent turns it back."""


_RemoteMismatch.__name__ = _MISMATCH


def applies_call(impl: Callable) -> bool:
    """Whether ``impl`` applies the call convention itself: an isolated implementation whose TARGET
    carries it (its worker loaded :meth:`CallConvention.worker_call`)."""
    target = getattr(impl, "target", None)
    return isinstance(target, str) and "@" in target.rpartition(":")[2]


def _what(out: object) -> str:
    if isinstance(out, (tuple, list)):
        kinds = ", ".join(type(item).__name__ for item in list(out)[:4]) + (", ..." if len(out) > 4 else "")
        return f"{type(out).__name__} of {len(out)} ({kinds})"
    if isinstance(out, dict):
        return f"dict with keys {', '.join(map(repr, list(out)[:8]))}"
    if isinstance(out, torch.Tensor):
        return f"tensor of shape {tuple(out.shape)}"
    return type(out).__name__
