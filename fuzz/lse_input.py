"""One generated input of a row-wise LSE: :class:`LseInput` (re-exported by :mod:`fuzz.strategies`)."""

from __future__ import annotations

from collections import Counter
from functools import partial

import torch

from reference.errors import InvalidArgument

from .batching import BatchLayout
from .layouts import Layout
from .recipes import RowSpec, row_values

__all__ = ["LseInput"]


class LseInput:
    """One generated input: the view ``x`` a kernel gets, and how it was made.

    ``values`` holds the same numbers contiguously on the CPU (``x`` may be strided, offset, or on
    a GPU); ``layout.materialize(values, device)`` rebuilds ``x``. ``recipes[i]`` names row i's
    recipe. Given ``device`` instead of ``x``, the view is built on first use (a huge-offset view
    holds gigabytes on a GPU: it is built while the example runs and :meth:`release`-d after).

    With ``batch`` (a :class:`fuzz.batching.BatchLayout`, for an N-D call convention) ``x`` is the
    N-D input whose rows are ``values``' rows; :meth:`as_rows`, :meth:`rebuild` and :meth:`write`
    go between the two, so the checks judge rows either way.

    :meth:`drawn` makes one whose values too are built on first use: its shape, dtype and layout
    are known at once (all :func:`fuzz.shrinking.launch_class` reads), so a share of a run
    (:mod:`fuzz.shares`) skips another share's example without building its tensors.
    """

    def __init__(self, x: torch.Tensor | None = None, values: torch.Tensor | None = None, layout: Layout = Layout(),
                 specs: tuple[RowSpec, ...] = (), seed: int = 0, *, device: torch.device | str | None = None,
                 batch: BatchLayout | None = None) -> None:
        if values is None:
            raise InvalidArgument("values=None; an LseInput needs its values (a 2-D CPU tensor).")
        self._fill(x, values, None, tuple(values.shape), values.dtype, layout, specs, seed, batch,
                   torch.device(device) if device is not None else (x.device if x is not None else values.device),
                   view_on_use=x is None and device is not None)

    @classmethod
    def drawn(cls, specs: tuple[RowSpec, ...], shape: tuple[int, int], dtype: torch.dtype, seed: int,
              layout: Layout, device: torch.device | str, *, view_on_use: bool = False) -> LseInput:
        """The input ``row_values(specs, *shape, dtype, seed)`` laid out as ``layout`` on ``device``,
        its tensors built on first use (:meth:`build`). ``view_on_use``: the view stays unbuilt
        until the example runs, and :meth:`release` drops it (a huge-offset view on a GPU)."""
        example = cls.__new__(cls)
        example._fill(None, None, partial(row_values, specs, shape[0], shape[1], dtype, seed),
                      (int(shape[0]), int(shape[1])), dtype, layout, specs, seed, None, torch.device(device),
                      view_on_use=view_on_use)
        return example

    def _fill(self, x, values, make, shape, dtype, layout, specs, seed, batch, device, *, view_on_use) -> None:
        """Every field, as the constructor and :meth:`drawn` set them (``make`` builds the values unbuilt)."""
        self._x: torch.Tensor | None = x
        self._values: torch.Tensor | None = values
        self._make = make
        self._shape: tuple[int, int] = shape
        self._dtype = dtype
        self.layout, self.specs, self.seed, self.batch = layout, specs, seed, batch
        self.device, self._view_on_use = device, view_on_use

    @property
    def values(self) -> torch.Tensor:
        if self._values is None:
            self._values = self._make()
        return self._values

    def build(self) -> None:
        """Build the tensors now (the values, and the view unless it is one built as the example runs):
        a drawn example's are built here, before its body, so their seconds count as generation."""
        self.values  # noqa: B018 - built on first access
        if not self._view_on_use:
            self.x  # noqa: B018

    @property
    def x(self) -> torch.Tensor:
        if self._x is None:
            self._x = self.rebuild(self.values, self.device)
        return self._x

    @x.setter
    def x(self, value: torch.Tensor) -> None:
        self._x = value

    def rebuild(self, values: torch.Tensor, device: torch.device | str | None = None) -> torch.Tensor:
        """A new input laid out as this one, holding ``values`` (M, N) as its rows."""
        device = self.device if device is None else device
        if self.batch is not None:
            return self.batch.materialize(values, device)
        return self.layout.materialize(values, device)

    def as_rows(self, t: torch.Tensor) -> torch.Tensor:
        """A tensor shaped like ``x`` as its (M, N) rows (``t`` itself for a 2-D input)."""
        return t if self.batch is None else self.batch.as_rows(t)

    def write(self, x: torch.Tensor, values: torch.Tensor) -> None:
        """Write the (M, N) ``values`` into ``x`` (this example's input, or a view like it) in place."""
        if self.batch is None:
            x.copy_(values.to(x.device))
        else:
            self.batch.write(x, values)

    def where(self, row: int, col: int) -> str:
        """``x[row, col]``, or the N-D index of that element of row ``row``."""
        index = (row, col) if self.batch is None else self.batch.index(row, col)
        return f"x[{', '.join(map(str, index))}]"

    def describe_layout(self) -> str:
        rows, cols = self.shape
        return self.layout.describe(rows, cols) if self.batch is None else self.batch.describe(cols)

    def release(self) -> None:
        """Drop the view if it is built lazily again on use (its storage goes back to the allocator)."""
        self._x = None

    @property
    def dtype(self) -> torch.dtype:
        return self._dtype

    @property
    def shape(self) -> tuple[int, int]:
        return self._shape

    @property
    def recipes(self) -> list[str]:
        return [self.specs[i % len(self.specs)].recipe for i in range(self.shape[0])]

    def row_recipe(self, row: int) -> str:
        return str(self.specs[row % len(self.specs)])

    def describe(self) -> str:
        rows, cols = self.shape
        counts = Counter(self.row_recipe(i) for i in range(rows))
        mix = ", ".join(f"{n} x {name}" for name, n in counts.items()) or "no rows"
        layout = self.describe_layout() if self.batch is None else f"rows of a {self.describe_layout()}"
        return f"{str(self.dtype).replace('torch.', '')} {tuple(self.shape)} {layout} on {self.device.type}; rows: {mix}"

    def __repr__(self) -> str:
        return f"<LseInput {self.describe()}>"

    def _repr_pretty_(self, printer, cycle) -> None:  # Hypothesis prints falsifying examples with this
        printer.text(repr(self))
