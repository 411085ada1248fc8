"""A worker that comes back: :class:`RestartingImpl`, for test suites (``pytest --lse-isolate``)."""

from __future__ import annotations

import contextlib

import torch

from .proxy import IsolatedImpl

__all__ = ["RestartingImpl"]


class RestartingImpl:
    """An :class:`IsolatedImpl` that starts a new worker when the last one was lost.

    For test suites (``pytest --lse-isolate``): a crash or hang fails the test that caused it,
    and the next test gets a fresh worker instead of the same :class:`ImplLost` again.
    """

    relays_refusals = True  # what it raises is its IsolatedImpl's (see there)

    def __init__(self, target: str, **options) -> None:
        self.target = target
        self._options = options
        self._impl: IsolatedImpl | None = None
        self.memory_bounds = True  # passed to each worker's calls (IsolatedImpl.memory_bounds)
        self.uninitialized_read = True  # likewise (IsolatedImpl.uninitialized_read)

    def start(self) -> RestartingImpl:
        if self._impl is None or self._impl.lost is not None:
            self.close()
            self._impl = IsolatedImpl(self.target, **self._options).start()
        return self

    def __call__(self, x: torch.Tensor) -> object:
        self.start()
        assert self._impl is not None
        self._impl.memory_bounds = self.memory_bounds
        self._impl.uninitialized_read = self.uninitialized_read
        return self._impl(x)

    def tuning(self) -> tuple[int, list[str]]:
        self.start()
        assert self._impl is not None
        return self._impl.tuning()

    def release_input(self) -> None:
        if self._impl is not None:
            self._impl.release_input()

    @contextlib.contextmanager
    def pinned(self, choice: int | None):
        self.start()
        assert self._impl is not None
        with self._impl.pinned(choice) as pinning:
            yield pinning

    def close(self) -> None:
        if self._impl is not None:
            self._impl.close()
            self._impl = None

    def gradient(self) -> RestartingImpl:
        """The implementation's gradient (``--backward``) in workers of its own; the caller closes it."""
        return RestartingImpl(f"{self.target}@backward", **self._options)

    def __repr__(self) -> str:
        return f"RestartingImpl({self.target!r})"
