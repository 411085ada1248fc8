"""The declared contract: what an implementation says it supports, so the fuzzer generates only that.

Real kernels support less than everything: float32 only, contiguous rows only, rows of at most
8192 columns, finite inputs. A :class:`Contract` says so, every strategy draws only inputs inside
it, the output contract check holds the implementation to its declared output dtype, and every
report states the contract that was checked. The default is the full contract, that of
``torch.logsumexp``.

    Contract()                                   # everything: the default
    Contract(values="finite", dtypes=("float32", "bfloat16"), layouts="rows", output_dtype="input", max_n=8192)
    Contract.parse("finite")                     # a values policy alone, as ``--contract finite`` gives
    Contract(call=CallConvention(ndim=3, dim=1, keepdim=True, args="x,dim,keepdim", result=1))

``call`` is how the implementation is called (:mod:`fuzz.calls`): by default the 2-D ``lse(x)``
returning the (M,) LSE; otherwise an N-D input reduced over a declared dim, the dim and keepdim
passed or fixed, the LSE at a declared place of the result. It appears in ``to_dict()`` and
``describe()`` only when it is not the default, so a 2-D contract reads and serializes as before.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import ClassVar

import torch

from reference.errors import InvalidArgument
from reference.merge_oracle import check_base

from . import validate
from .calls import CallConvention
from .layouts import LayoutKind

__all__ = ["DTYPES", "Contract", "Layouts", "OutputDtype", "Values", "dtype_name", "parse_dtypes", "parse_lse_base"]

DTYPES: tuple[torch.dtype, ...] = (torch.float32, torch.float16, torch.bfloat16, torch.float64)
"""Input dtypes, float32 first: shrinking ends there."""

_DTYPE_NAMES = {dtype: str(dtype).replace("torch.", "") for dtype in DTYPES}


def dtype_name(dtype: torch.dtype) -> str:
    return _DTYPE_NAMES.get(dtype, str(dtype).replace("torch.", ""))


class Values(str, enum.Enum):
    """Which values may appear in the input."""

    STRICT = "strict"  # everything torch.logsumexp handles, NaN and +inf included
    FINITE = "finite"  # no NaN and no +inf; -inf (masked entries, all -inf rows) stays in


class Layouts(str, enum.Enum):
    """Which memory layouts the input may have."""

    CONTIGUOUS = "contiguous"  # contiguous rows, possibly at a storage offset (x.is_contiguous())
    ROWS = "rows"  # any row stride (padding, element offsets past 2**31), column stride 1
    ANY = "any"  # any strides: also column-major and column steps

    @property
    def kinds(self) -> tuple[LayoutKind, ...]:
        contiguous = (LayoutKind.CONTIGUOUS, LayoutKind.OFFSET)
        rows = contiguous + (LayoutKind.PADDED, LayoutKind.HUGE_OFFSET)
        return {Layouts.CONTIGUOUS: contiguous, Layouts.ROWS: rows, Layouts.ANY: tuple(LayoutKind)}[self]


class OutputDtype(str, enum.Enum):
    """Which dtype the result may have."""

    FLOAT32 = "float32"  # always float32
    INPUT = "input"  # the input's dtype
    EITHER = "either"  # float32 or the input's dtype

    def allowed(self, input_dtype: torch.dtype) -> tuple[torch.dtype, ...]:
        if self is OutputDtype.FLOAT32:
            return (torch.float32,)
        if self is OutputDtype.INPUT:
            return (input_dtype,)
        return (torch.float32,) if input_dtype == torch.float32 else (torch.float32, input_dtype)

    def describe(self) -> str:
        return {OutputDtype.FLOAT32: "float32", OutputDtype.INPUT: "the input's dtype",
                OutputDtype.EITHER: "float32 or the input's dtype"}[self]


def _enum(kind: type[enum.Enum], value: object, name: str):
    try:
        return kind(value.value if isinstance(value, enum.Enum) else value)
    except ValueError:
        options = ", ".join(repr(member.value) for member in kind)
        raise InvalidArgument(f"{name}={value!r}; expected one of {options}.") from None


def _dtypes(value: object, name: str) -> tuple[torch.dtype, ...]:
    by_name = {dtype_name(dtype): dtype for dtype in DTYPES}
    if isinstance(value, torch.dtype):
        value = [value]
    if isinstance(value, str):
        value = [part.strip() for part in value.split(",") if part.strip()]
    try:
        names = [dtype_name(v) if isinstance(v, torch.dtype) else str(v) for v in value]  # type: ignore[union-attr]
    except TypeError:
        raise InvalidArgument(f"{name}={value!r}; expected dtype names from {', '.join(by_name)}.") from None
    chosen = validate.names(names, name=name, choices=by_name)
    return tuple(by_name[n] for n in chosen)


def parse_lse_base(value: object, *, flag: str = "lse_base") -> str | int:
    """"e" or 2 (the text "2" too, as a command line gives it); InvalidArgument naming both otherwise."""
    try:
        return check_base(2 if value == "2" else value)
    except InvalidArgument:
        raise InvalidArgument(f"{flag}={value!r}; choose e (natural-log LSEs: vLLM, SGLang, FlashAttention) or 2 "
                              "(base-2 LSEs: FlashInfer, TensorRT-LLM).") from None


@dataclass(frozen=True)
class Contract:
    """What an implementation promises to handle (see the module docstring).

    ``values``: :class:`Values`; ``dtypes``: the input dtypes it accepts; ``layouts``:
    :class:`Layouts`; ``output_dtype``: :class:`OutputDtype`; ``max_n``: the longest row it
    accepts (None: any); ``call``: :class:`fuzz.calls.CallConvention`, how it is called;
    ``lse_base``: the base of the LSE it returns, "e" or 2 (log2(sum_j e^x_j), FlashInfer's and
    TensorRT-LLM's). Strings are accepted wherever an enum or a dtype is expected.
    """

    values: Values = Values.STRICT
    dtypes: tuple[torch.dtype, ...] = DTYPES
    layouts: Layouts = Layouts.ANY
    output_dtype: OutputDtype = OutputDtype.EITHER
    max_n: int | None = None
    call: CallConvention = CallConvention()
    lse_base: str | int = "e"

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "values", Values(getattr(self.values, "value", self.values)))
        except ValueError:
            raise InvalidArgument(f"contract={self.values!r}; expected 'strict' (every input, NaN and +inf "
                                  "included) or 'finite' (no NaN or +inf inputs).") from None
        object.__setattr__(self, "dtypes", _dtypes(self.dtypes, "dtypes"))
        object.__setattr__(self, "layouts", _enum(Layouts, self.layouts, "layouts"))
        object.__setattr__(self, "output_dtype", _enum(OutputDtype, self.output_dtype, "output_dtype"))
        if self.max_n is not None:
            validate.integer(self.max_n, name="max_n", low=1)
        if isinstance(self.call, dict):
            object.__setattr__(self, "call", CallConvention.from_dict(self.call))
        if not isinstance(self.call, CallConvention):
            raise InvalidArgument(f"call={self.call!r}; expected a fuzz.calls.CallConvention or its to_dict().")
        object.__setattr__(self, "lse_base", parse_lse_base(self.lse_base))

    STRICT: ClassVar[Contract]  # the full contract (assigned below)
    FINITE: ClassVar[Contract]  # the full contract without NaN and +inf inputs

    @classmethod
    def parse(cls, value: object) -> Contract:
        """A Contract as given: a Contract, a values policy ("strict"/"finite"), or a to_dict() dict."""
        if isinstance(value, Contract):
            return value
        if isinstance(value, dict):
            return cls.from_dict(value)
        return cls(values=value)  # type: ignore[arg-type]

    def with_options(self, **options: object) -> Contract:
        """This contract with the fields given (None leaves a field as it is)."""
        given = {name: value for name, value in options.items() if value is not None}
        return replace(self, **given) if given else self

    @property
    def value(self) -> str:
        """The values policy's name ("strict" or "finite"), what ``--contract`` takes."""
        return self.values.value

    @property
    def is_full(self) -> bool:
        return self.dtypes == DTYPES and self.layouts is Layouts.ANY and self.max_n is None \
            and self.output_dtype is OutputDtype.EITHER and self.call.is_default and self.lse_base == "e"

    def describe(self) -> str:
        """One line for reports, e.g. ``strict; dtypes float32, float16; rows layouts; output float32; N <= 8192``."""
        parts = [self.values.value, "dtypes " + ", ".join(dtype_name(d) for d in self.dtypes),
                 f"{self.layouts.value} layouts", f"output {self.output_dtype.describe()}",
                 "any N" if self.max_n is None else f"N <= {self.max_n}"]
        if not self.call.is_default:
            parts.append(self.call.describe())
        if self.lse_base != "e":
            parts.append(f"LSE base {self.lse_base}")
        return "; ".join(parts)

    def to_dict(self) -> dict[str, object]:
        data: dict[str, object] = {"values": self.values.value, "dtypes": [dtype_name(d) for d in self.dtypes],
                                   "layouts": self.layouts.value, "output_dtype": self.output_dtype.value,
                                   "max_n": self.max_n}
        if not self.call.is_default:
            data["call"] = self.call.to_dict()
        if self.lse_base != "e":  # absent: base e, as in every file written before the option
            data["lse_base"] = str(self.lse_base)
        return data

    @classmethod
    def from_dict(cls, data: dict) -> Contract:
        unknown = set(data) - {"values", "dtypes", "layouts", "output_dtype", "max_n", "call", "lse_base"}
        if unknown:
            raise InvalidArgument(f"contract has unknown keys {sorted(unknown)!r}.")
        return cls(**data)


Contract.STRICT = Contract()
Contract.FINITE = Contract(values=Values.FINITE)


def parse_dtypes(value: Iterable[str] | str, *, name: str = "dtypes") -> tuple[torch.dtype, ...]:
    """Dtype names (``float32,bfloat16``) as torch dtypes, validated."""
    return _dtypes(value, name)
