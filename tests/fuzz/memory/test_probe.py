"""fuzz.memory.probe: the probe process's own settings (its calls are tested through the phase)."""

from __future__ import annotations

import inspect

import pytest

from reference._device import ensure_interpreter

ensure_interpreter()  # before Triton's first import: the interpreter is on where no GPU is

from fuzz.memory import probe  # noqa: E402

import triton.testing  # noqa: E402
from triton.runtime import driver  # noqa: E402


class _Driver:
    """A driver whose benchmark buffers are counted (each a new object, as Triton's are)."""

    def __init__(self) -> None:
        self.made = 0

    def get_empty_cache_for_benchmark(self):
        self.made += 1
        return object()


def test_benchmarks_under_the_tools_reuse_one_flush_buffer(monkeypatch):
    fake = _Driver()
    monkeypatch.setattr(driver, "_active", fake)
    probe.one_flush_buffer()
    buffers = {id(driver.active.get_empty_cache_for_benchmark()) for _ in range(5)}
    assert len(buffers) == 1 and fake.made == 1


def test_a_triton_without_the_hook_is_left_as_it_is(monkeypatch):
    bare = object()
    monkeypatch.setattr(driver, "_active", bare)
    probe.one_flush_buffer()  # no error
    assert not hasattr(bare, "get_empty_cache_for_benchmark")


@pytest.mark.parametrize("bench", [triton.testing.do_bench])
def test_the_hook_is_the_one_tritons_benchmarks_take_their_buffer_from(bench):
    # If Triton renames it, the probes' memory grows again under the tools: this says so first.
    assert "driver.active.get_empty_cache_for_benchmark()" in inspect.getsource(bench)
