"""Validation of user input, in one place: every entry point (the Python API, the CLI, the pytest
plugin, the bench scripts) checks its options with these functions.

Each takes the ``name`` the user typed (``budget`` from Python, ``--budget`` from the command
line), so the one-line message names what to fix: ``--budget=0; expected an int >= 1.``
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import torch

from reference.errors import InvalidArgument

__all__ = ["choice", "device", "integer", "names", "number", "seconds", "shape"]


def integer(value: object, *, name: str, low: int = 0, high: int | None = None) -> int:
    """An int in [low, high] (bools are not ints here)."""
    if not isinstance(value, int) or isinstance(value, bool) or value < low or (high is not None and value > high):
        bound = f">= {low}" if high is None else f"in [{low}, {high}]"
        raise InvalidArgument(f"{name}={value!r}; expected an int {bound}.")
    return value


def number(value: object, *, name: str, low: float) -> float:
    """A finite number >= low."""
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value) or value < low:
        raise InvalidArgument(f"{name}={value!r}; expected a number >= {low:g}.")
    return float(value)


def seconds(value: object, *, name: str, optional: bool = False, zero: bool = False) -> float | None:
    """A finite number of seconds > 0 (>= 0 with ``zero``; None allowed when ``optional``)."""
    if value is None and optional:
        return None
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value) or value < 0 \
            or (value == 0 and not zero):
        raise InvalidArgument(f"{name}={value!r}; expected a number of seconds {'>=' if zero else '>'} 0.")
    return float(value)


def choice(value: object, *, name: str, choices: Iterable[str]) -> str:
    """One of ``choices``."""
    options = list(choices)
    if value not in options:
        raise InvalidArgument(f"{name}={value!r}; expected one of {', '.join(options)}.")
    return str(value)


def names(value: object, *, name: str, choices: Iterable[str], allow_empty: bool = False) -> tuple[str, ...]:
    """A selection of ``choices`` from an iterable or a comma-separated string, in ``choices`` order."""
    options = list(choices)
    if isinstance(value, str):
        chosen = [part.strip() for part in value.split(",") if part.strip()]
    else:
        try:
            chosen = [str(part) for part in value]  # type: ignore[union-attr]
        except TypeError:
            raise InvalidArgument(f"{name}={value!r}; expected names from {', '.join(options)}.") from None
    unknown = [part for part in chosen if part not in options]
    if unknown or (not chosen and not allow_empty):
        problem = f"unknown {', '.join(map(repr, unknown))}" if unknown else "empty"
        raise InvalidArgument(f"{name}={chosen!r}: {problem}; choose from {', '.join(options)}.")
    return tuple(option for option in options if option in chosen)


def device(value: object, *, name: str = "device") -> torch.device:
    """'auto' or None (CUDA when present), 'cpu', 'cuda' or 'cuda:N', or a torch.device."""
    if value is None or value == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        resolved = torch.device(value)  # type: ignore[arg-type]
    except (RuntimeError, TypeError):
        raise InvalidArgument(f"{name}={value!r}; expected auto, cpu, cuda or cuda:N.") from None
    if resolved.type not in ("cpu", "cuda"):
        raise InvalidArgument(f"{name}={value!r}; expected auto, cpu, cuda or cuda:N.")
    if resolved.type == "cuda":
        if not torch.cuda.is_available():
            raise InvalidArgument(f"{name}={value!r}, but no CUDA device is available: use cpu instead.")
        if resolved.index is not None and resolved.index >= torch.cuda.device_count():
            raise InvalidArgument(f"{name}={value!r}, but only {torch.cuda.device_count()} CUDA device(s) exist.")
    return resolved


def shape(value: object, *, name: str) -> tuple[int, int]:
    """'MxN' (or a pair) with M, N >= 1."""
    try:
        if isinstance(value, str):
            rows, cols = (int(part) for part in value.lower().split("x"))
        else:
            rows, cols = (int(part) for part in value)  # type: ignore[union-attr]
    except (TypeError, ValueError):
        raise InvalidArgument(f"{name}={value!r}; expected MxN, e.g. 8192x8192.") from None
    if rows < 1 or cols < 1:
        raise InvalidArgument(f"{name}={value!r}; expected M and N >= 1.")
    return rows, cols
