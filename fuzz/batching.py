"""N-D inputs: an (M, N) example laid out as a tensor reduced over one dim, with batch dims of any strides.

Under a :class:`fuzz.calls.CallConvention` of ``ndim`` dims reducing ``dim``, the example's M rows
become the batch dims (their product is M; sizes 1 and 0 included) and its N columns the reduced
dim. The rows of the N-D input, ``x.movedim(dim, -1).reshape(M, N)`` (batch dims in order, the
last fastest), are exactly the 2-D example's rows, so the oracle, the tolerance, the metamorphic
checks and shrinking judge them as they judge any rows.

A :class:`BatchLayout` says where each element lies: the dims' order in memory (``order``,
outermost first; the identity is a contiguous tensor), a gap added to each dim's stride
(``pads``: padding between batch rows, or for the innermost dim a step between its elements) and a
storage offset. Strides are worked out innermost first, each dim's stride at least the extent of
the dims inside it, so no two elements share an address. Storage outside the view holds NaN, as
for 2-D layouts: a kernel that ignores a batch stride reads it and the agreement check catches it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from hypothesis import strategies as st

from reference.errors import InvalidArgument

from .contract import Layouts

__all__ = ["BatchLayout", "batch_layouts"]

_POISON = float("nan")


@dataclass(frozen=True)
class BatchLayout:
    """One N-D arrangement of an (M, N) example (see the module docstring)."""

    batch: tuple[int, ...]  # the batch dims' sizes, in the input's dim order; their product is M
    dim: int  # where the reduced dim sits (non-negative)
    order: tuple[int, ...]  # the input's dims in memory order, outermost first
    pads: tuple[int, ...] = ()  # per input dim, added to its stride (none: all 0)
    offset: int = 0

    def __post_init__(self) -> None:
        ndim = len(self.batch) + 1
        object.__setattr__(self, "batch", tuple(int(b) for b in self.batch))
        object.__setattr__(self, "order", tuple(int(d) for d in self.order))
        object.__setattr__(self, "pads", tuple(int(p) for p in self.pads) or (0,) * ndim)
        if not 0 <= self.dim < ndim or sorted(self.order) != list(range(ndim)) or len(self.pads) != ndim:
            raise InvalidArgument(f"batch layout {self.to_dict()!r} is inconsistent: expected 0 <= dim < {ndim}, an "
                                  f"order that permutes range({ndim}) and {ndim} pads.")
        if any(b < 0 for b in self.batch) or any(p < 0 for p in self.pads) or self.offset < 0:
            raise InvalidArgument(f"batch layout {self.to_dict()!r} has a negative size, pad or offset.")

    @property
    def ndim(self) -> int:
        return len(self.batch) + 1

    @property
    def rows(self) -> int:
        return math.prod(self.batch)

    def shape(self, cols: int) -> tuple[int, ...]:
        return (*self.batch[:self.dim], cols, *self.batch[self.dim:])

    def strides(self, cols: int) -> tuple[tuple[int, ...], int]:
        """(strides, storage size) of the N-D view of an example with ``cols`` columns."""
        shape = self.shape(cols)
        strides = [0] * self.ndim
        extent = 1  # elements the dims inside the current one span
        for position, d in enumerate(reversed(self.order)):
            strides[d] = (1 + self.pads[d]) if position == 0 else extent + self.pads[d]
            extent = strides[d] * max(shape[d], 1)
        if 0 in shape:
            return tuple(strides), self.offset
        last = self.offset + sum((n - 1) * s for n, s in zip(shape, strides))
        return tuple(strides), last + 1 + max(self.pads)

    def materialize(self, values: torch.Tensor, device: torch.device | str | None = None) -> torch.Tensor:
        """The N-D view holding ``values`` (M, N) as its rows, on ``device`` (default: values')."""
        rows, cols = values.shape
        if rows != self.rows:
            raise InvalidArgument(f"values.shape={tuple(values.shape)}; the batch shape {self.batch} holds {self.rows} "
                                  "rows.")
        device = values.device if device is None else torch.device(device)
        strides, size = self.strides(cols)
        storage = torch.empty(size, dtype=values.dtype, device=device)
        storage.fill_(_POISON)
        x = storage.as_strided(self.shape(cols), strides, self.offset)
        x.movedim(self.dim, -1).copy_(values.reshape(*self.batch, cols))
        return x

    def as_rows(self, t: torch.Tensor) -> torch.Tensor:
        """A tensor shaped like the input, as its (M, N) rows (a copy where no view can be)."""
        return t.movedim(self.dim, -1).reshape(self.rows, t.shape[self.dim])

    def write(self, x: torch.Tensor, values: torch.Tensor) -> None:
        """Write the (M, N) ``values`` into the view ``x`` in place."""
        x.movedim(self.dim, -1).copy_(values.reshape(*self.batch, x.shape[self.dim]).to(x.device))

    def index(self, row: int, col: int) -> tuple[int, ...]:
        """The input index of element ``col`` of row ``row``."""
        where = []
        for size in reversed(self.batch):
            where.append(row % size if size else 0)
            row //= max(size, 1)
        batch = where[::-1]
        return (*batch[:self.dim], col, *batch[self.dim:])

    def leading(self) -> int | None:
        """The first batch dim's position in the input (None for a 1-D input): slicing it keeps whole rows."""
        if not self.batch:
            return None
        return 0 if self.dim != 0 else 1

    def sliced(self, count: int) -> BatchLayout:
        """A contiguous layout of ``count`` entries of the first batch dim (for a copy of some rows)."""
        return BatchLayout((count, *self.batch[1:]), self.dim, tuple(range(self.ndim)))

    def describe(self, cols: int) -> str:
        strides, _ = self.strides(cols)
        offset = f", storage_offset={self.offset}" if self.offset else ""
        return f"{self.ndim}-D {self.shape(cols)} reduced over dim {self.dim}, strides={strides}{offset}"

    def to_dict(self) -> dict[str, object]:
        return {"batch": list(self.batch), "dim": self.dim, "order": list(self.order), "pads": list(self.pads),
                "offset": self.offset}

    @classmethod
    def from_dict(cls, data: dict) -> BatchLayout:
        if not isinstance(data, dict) or set(data) != {"batch", "dim", "order", "pads", "offset"}:
            raise InvalidArgument(f"batch={data!r}; expected BatchLayout.to_dict()'s keys.")
        return cls(tuple(data["batch"]), int(data["dim"]), tuple(data["order"]), tuple(data["pads"]),
                   int(data["offset"]))


def _divisors(n: int) -> list[int]:
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


def _batch_shape(rows: int, dims: int) -> st.SearchStrategy[tuple[int, ...]]:
    """``dims`` sizes whose product is ``rows``: 1s first (shrinking), any divisors, a 0 for 0 rows."""
    if dims == 0:
        return st.just(())

    @st.composite
    def draw(draw_fn: st.DrawFn) -> tuple[int, ...]:
        sizes, left = [], rows
        for _ in range(dims - 1):
            size = draw_fn(st.sampled_from([1, 2, 3])) if left == 0 else draw_fn(st.sampled_from(_divisors(left)))
            sizes.append(size)
            left = left // size if left else 0
        sizes.append(left)
        # Where the remaining (usually largest) factor or the 0 lands.
        turn = draw_fn(st.integers(0, dims - 1))
        return tuple(sizes[turn:] + sizes[:turn])

    return draw()


def batch_layouts(rows: int, ndim: int, dim: int, layouts: Layouts = Layouts.ANY) -> st.SearchStrategy[BatchLayout]:
    """N-D layouts of ``rows`` rows reduced over ``dim`` (non-negative) of ``ndim`` dims, inside ``layouts``.

    ``contiguous``: the identity order, no gaps (a storage offset allowed); ``rows``: the dims in order,
    gaps between any of them but none within the innermost dim; ``any``: any order (the reduced dim
    outside, inside or between the batch dims in memory) and a step within the innermost dim.
    """
    identity = tuple(range(ndim))
    order = st.just(identity) if layouts is not Layouts.ANY else \
        st.one_of(st.just(identity), st.permutations(identity).map(tuple))

    @st.composite
    def draw(draw_fn: st.DrawFn) -> BatchLayout:
        batch = draw_fn(_batch_shape(rows, ndim - 1))
        chosen = draw_fn(order)
        pads = [0] * ndim
        if layouts is not Layouts.CONTIGUOUS:
            for d in chosen[:-1]:
                pads[d] = draw_fn(st.sampled_from([0, 0, 1, 3, 7]))
            if layouts is Layouts.ANY:
                pads[chosen[-1]] = draw_fn(st.sampled_from([0, 0, 1, 2, 3]))
        offset = draw_fn(st.one_of(st.just(0), st.integers(1, 131)))
        return BatchLayout(batch, dim, chosen, tuple(pads), offset)

    return draw()
