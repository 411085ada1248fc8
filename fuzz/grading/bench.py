"""Bandwidth of a passing candidate on CUDA: achieved GB/s on a fixed shape, and speed against
``reference.lse`` and ``torch.logsumexp`` measured the same way."""

from __future__ import annotations

import time

import torch

import reference
from reference import compare, lse_reference

from ..isolation.wire import seeded_input
from ..timing import best_per_call
from .options import GradeOptions

__all__ = ["bench_bytes", "bench_candidate", "bench_input", "measure_baselines", "time_in_process"]


def bench_input(options: GradeOptions) -> torch.Tensor:
    rows, cols = options.bench_shape
    return seeded_input(rows, cols, getattr(torch, options.bench_dtype), options.effective_seed, options.device)


def bench_bytes(options: GradeOptions) -> int:
    rows, cols = options.bench_shape
    return rows * cols * getattr(torch, options.bench_dtype).itemsize + 4 * rows


def time_in_process(fn, x, *, min_seconds: float = 0.2, repeats: int = 5) -> float:
    """Seconds per call of a trusted function, timed like the candidate (loops between syncs)."""
    for _ in range(3):
        fn(x)

    def timed(iters: int) -> float:
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(iters):
            fn(x)
        torch.cuda.synchronize()
        return time.perf_counter() - start

    return best_per_call(timed, min_seconds=min_seconds, repeats=repeats)


def measure_baselines(options: GradeOptions) -> dict[str, float]:
    """Seconds per call of reference.lse and torch.logsumexp on the benchmark input."""
    x = bench_input(options)
    baselines = {"reference": time_in_process(reference.lse, x),
                 "torch": time_in_process(lambda t: torch.logsumexp(t, dim=1), x)}
    del x
    torch.cuda.empty_cache()
    return baselines


_BENCH_EXPECTED: dict[tuple, tuple] = {}  # per driver: the benchmark input and its oracle


def bench_candidate(impl, options: GradeOptions, baselines: dict | None) -> dict[str, object]:
    """Achieved bandwidth (bytes = M*N*elem + 4M) and speed against the baselines.

    The output of the timed calls is checked against the oracle too (in its own dtype, as the
    agreement check does): a fast wrong answer (or one from a cache) is marked ``output_ok: false``.
    """
    seconds, out = impl.bench(shape=options.bench_shape, dtype=getattr(torch, options.bench_dtype),
                              seed=options.effective_seed)
    key = (options.bench_shape, options.bench_dtype, options.effective_seed, options.device)
    if key not in _BENCH_EXPECTED:
        x = bench_input(options)
        _BENCH_EXPECTED[key] = (x, lse_reference(x))
    x, expected = _BENCH_EXPECTED[key]
    output_ok = isinstance(out, torch.Tensor) and tuple(out.shape) == (x.shape[0],) and out.dtype.is_floating_point \
        and out.device.type != "meta" and compare(x, out.to(x.device), expected=expected).ok
    nbytes = bench_bytes(options)
    result: dict[str, object] = {
        "shape": list(options.bench_shape), "dtype": options.bench_dtype, "bytes": nbytes,
        "seconds": seconds, "gbps": round(nbytes / seconds / 1e9, 1), "output_ok": output_ok,
    }
    for name, base in (baselines or {}).items():
        result[f"{name}_gbps"] = round(nbytes / base / 1e9, 1)
        result[f"speedup_vs_{name}"] = round(base / seconds, 3)
    return result
