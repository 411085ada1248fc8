"""Memory layouts: how an (M, N) input is laid out in storage, separately from its values.

A kernel that is right on contiguous rows can still be wrong on strided ones: a hard-coded row
stride (``row * N``), a column stride assumed to be 1, a forgotten storage offset, or 32-bit index
math that wraps once an element sits 2**31 elements past the base pointer. A :class:`Layout` names
one such arrangement; :meth:`Layout.materialize` builds a strided view holding given values, so an
input can be rebuilt in another process from ``(values, layout)`` alone (that is what reproducers
store).

Storage outside the view is filled with NaN ("poison"): a kernel that reads it, instead of the
row it was given, returns NaN for that row and the agreement check catches it.
"""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass

import torch

from reference.errors import InvalidArgument

from .gpu_memory import huge_storage

HUGE_OFFSET = 2**31
"""Element offsets at or past this value overflow 32-bit index math."""

_POISON = float("nan")

COLUMN_STEPS = (2, 3, 4, 16)
"""Column strides the fuzzer draws for ``column_step`` views. Triton specializes a kernel on each
integer argument being 1, divisible by 16 or neither (a different binary each), so 16 is here on
purpose: before it, only a transposed view whose M + pad happened to be a multiple of 16 gave a
column stride of that class, and the default run (seed 0) of every kernel surveyed never drew one."""

HUGE_MAX_ROWS = 64
"""A ``huge_offset`` view has at most this many rows (and at least 3), a ``huge_column_stride`` view
as many columns. Three already put the last row (column) past 2**31 with a stride that fits an
int32; each one more backs another page or two of the span, and at thousands the whole 8-16 GiB
would be backed."""

COLUMN_STEP_STORAGE = 4
"""A ``column_step`` view's storage holds at most this many times ``max_elements`` (its columns are
cut to fit; steps up to 4 never need it): with a step of 16 the storage is 16 times the view."""


class LayoutKind(str, enum.Enum):
    """The layouts the fuzzer draws; the first is where shrinking ends."""

    CONTIGUOUS = "contiguous"
    PADDED = "padded"  # row stride N + pad: rows do not touch
    TRANSPOSED = "transposed"  # column-major: stride (1, M + pad)
    COLUMN_STEP = "column_step"  # stride (N * step + pad, step): every step-th element of a wider row
    OFFSET = "offset"  # contiguous, but the view starts `offset` elements into its storage
    HUGE_OFFSET = "huge_offset"  # some element lies >= 2**31 elements from the storage start
    HUGE_COLUMN_STRIDE = "huge_column_stride"  # column-major, the last column >= 2**31 elements on


HUGE_KINDS = (LayoutKind.HUGE_OFFSET, LayoutKind.HUGE_COLUMN_STRIDE)
"""The kinds whose storage spans about 2**32 elements (:attr:`Layout.is_huge`)."""


@dataclass(frozen=True)
class Layout:
    """One storage arrangement of an (M, N) input.

    ``pad`` adds unused elements between rows (columns for ``transposed``), ``step`` is the column
    stride of ``column_step``, ``offset`` the storage offset of element [0, 0] (``offset`` and
    ``huge_offset``). Strides that depend on M and N are worked out in :meth:`strides`.
    """

    kind: LayoutKind = LayoutKind.CONTIGUOUS
    pad: int = 0
    step: int = 1
    offset: int = 0

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "kind", LayoutKind(self.kind))
        except ValueError:
            kinds = ", ".join(k.value for k in LayoutKind)
            raise InvalidArgument(f"kind={self.kind!r} is not a layout; use one of: {kinds}.") from None
        for name, low in (("pad", 0), ("step", 1), ("offset", 0)):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise InvalidArgument(f"{name}={value!r}; expected an int >= {low}.")

    @property
    def params(self) -> dict[str, int]:
        """The parameters that matter for this kind (for reports)."""
        return {k: v for k, v in asdict(self).items() if k != "kind" and v != Layout.__dataclass_fields__[k].default}

    @property
    def is_huge(self) -> bool:
        """A storage of about 2**32 elements, lazily backed (see :func:`fuzz.gpu_memory.huge_storage`)."""
        return self.kind in HUGE_KINDS

    def strides(self, rows: int, cols: int) -> tuple[tuple[int, int], int, int]:
        """((row_stride, col_stride), storage_offset, storage_size) for an (rows, cols) view."""
        kind = self.kind
        if kind is LayoutKind.TRANSPOSED:
            strides = (1, rows + self.pad)
        elif kind is LayoutKind.COLUMN_STEP:
            strides = (cols * self.step + self.pad, self.step)
        elif kind is LayoutKind.HUGE_OFFSET:
            # With two or more rows, a huge row stride puts the last row past 2**31, which is what
            # exposes `row * stride_row` computed in int32 (a storage offset alone is folded into
            # the base pointer by the caller and would hide that bug).
            row_stride = max(cols, -(-HUGE_OFFSET // (rows - 1))) + self.pad if rows > 1 else cols + self.pad
            strides = (row_stride, 1)
        elif kind is LayoutKind.HUGE_COLUMN_STRIDE:
            # The same for `col * stride_col`: with three columns or more the column stride fits
            # an int32 while the last column lies past 2**31. The rows of a column are adjacent,
            # so each column touches a page or two of the storage.
            column_stride = max(rows + self.pad, -(-HUGE_OFFSET // (cols - 1))) if cols > 1 else rows + self.pad
            strides = (1, column_stride)
        else:
            strides = (cols + self.pad, 1)
        offset = self.offset
        if self.is_huge:
            # The view starts 2**31 elements into its storage, so a row offset that wraps in 32-bit
            # math (to true - 2**32, at least -2**31) still lands inside the allocation: the buggy
            # kernel reads untouched pages (zeros) and fails a check instead of crashing.
            offset = max(offset, HUGE_OFFSET)
        if rows == 0 or cols == 0:
            return strides, offset, offset
        last = offset + (rows - 1) * strides[0] + (cols - 1) * strides[1]
        # The padding continues past the last row, so reading beyond it also hits poison.
        return strides, offset, last + 1 + self.pad

    def fit(self, rows: int, cols: int, max_elements: int) -> tuple[int, int]:
        """The drawn (rows, cols) cut to what this layout needs and affords.

        A huge row stride needs three rows or more: the row stride then fits an int32 kernel
        argument while the last row lies past 2**31, so 32-bit ``row * stride_row`` really wraps;
        at most :data:`HUGE_MAX_ROWS`, as only the pages the rows touch are backed. A huge column
        stride, the same with columns. A column step's storage stays within
        :data:`COLUMN_STEP_STORAGE` times ``max_elements``.
        """
        if self.kind is LayoutKind.HUGE_OFFSET:
            rows = min(max(rows, 3), HUGE_MAX_ROWS)
            cols = min(cols, max(1, max_elements // rows))
        elif self.kind is LayoutKind.HUGE_COLUMN_STRIDE:
            cols = min(max(cols, 3), HUGE_MAX_ROWS)
            rows = min(rows, max(1, max_elements // cols))
        elif self.kind is LayoutKind.COLUMN_STEP:
            cols = min(cols, max(1, COLUMN_STEP_STORAGE * max_elements // (max(rows, 1) * self.step)))
        return rows, cols

    def materialize(self, values: torch.Tensor, device: torch.device | str | None = None) -> torch.Tensor:
        """A view laid out like this holding ``values`` (M, N), on ``device`` (default: values').

        Storage outside the view holds NaN, except for the huge kinds: their storage comes from
        :func:`fuzz.gpu_memory.huge_storage` and only the view's elements are written, so the
        untouched gigabytes are never backed by memory (on a GPU that pages on demand; on
        any other GPU they are).
        """
        if values.dim() != 2:
            raise InvalidArgument(f"values.shape={tuple(values.shape)}; expected a 2-D (M, N) tensor.")
        device = values.device if device is None else torch.device(device)
        rows, cols = values.shape
        strides, offset, size = self.strides(rows, cols)
        if self.is_huge:
            storage = huge_storage(size, values.dtype, device)
        else:
            storage = torch.empty(size, dtype=values.dtype, device=device)
            storage.fill_(_POISON)
        view = storage.as_strided((rows, cols), strides, offset)
        view.copy_(values)
        return view

    def describe(self, rows: int | None = None, cols: int | None = None) -> str:
        """Short text, e.g. ``padded(pad=3)`` or with a shape ``padded(strides=(11, 1))``."""
        details = [f"{k}={v}" for k, v in self.params.items()]
        if rows is not None and cols is not None and self.kind is not LayoutKind.CONTIGUOUS:
            strides, offset, _ = self.strides(rows, cols)
            details = [f"strides={strides}"] + ([f"storage_offset={offset}"] if offset else [])
        return f"{self.kind.value}({', '.join(details)})" if details else self.kind.value

    def to_dict(self) -> dict[str, object]:
        return {"kind": self.kind.value, "pad": self.pad, "step": self.step, "offset": self.offset}

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> Layout:
        if not isinstance(data, dict) or "kind" not in data:
            raise InvalidArgument(f"layout={data!r}; expected a dict with a 'kind' key (Layout.to_dict()).")
        unknown = set(data) - {"kind", "pad", "step", "offset"}
        if unknown:
            raise InvalidArgument(f"layout has unknown keys {sorted(unknown)!r}; expected kind, pad, step, offset.")
        return cls(**data)  # type: ignore[arg-type]
