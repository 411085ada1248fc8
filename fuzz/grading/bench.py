"""Bandwidth of a passing candidate on CUDA: achieved GB/s on a fixed shape, and speed against
``reference.lse`` and ``torch.logsumexp`` measured the same way.

**Impossible speed.** A row-wise LSE must read every element of its input once. The copy
bandwidth (``x.clone()`` of the same input, timed the same way: bytes read plus bytes written per
second) is about the most a GPU's memory moves, so a candidate that seems to read its input more
than :data:`IMPOSSIBLE` times faster than that did not read it: it skipped the work (an answer
cached across the timed calls, which all get the same tensor) or its timing is not what it seems.
Judged only on inputs more than twice the GPU's L2 cache, which repeated calls could otherwise
serve from the cache, legitimately.
"""

from __future__ import annotations

import time

import torch

import reference
from reference import compare, lse_reference

from ..isolation import seeded_input
from ..timing import best_per_call
from .options import GradeOptions

__all__ = ["IMPOSSIBLE", "bench_bytes", "bench_candidate", "bench_input", "impossible_speed", "measure_baselines",
           "time_in_process"]

IMPOSSIBLE = 1.5  # times the copy bandwidth; a kernel at the roofline reads at about 1x


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
                 "torch": time_in_process(lambda t: torch.logsumexp(t, dim=1), x),
                 "copy": time_in_process(torch.clone, x)}
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
    baselines = dict(baselines or {})
    copy = baselines.pop("copy", None)
    for name, base in baselines.items():
        result[f"{name}_gbps"] = round(nbytes / base / 1e9, 1)
        result[f"speedup_vs_{name}"] = round(base / seconds, 3)
    if copy is not None:
        input_bytes = x.numel() * x.element_size()
        result["copy_gbps"] = round(2 * input_bytes / copy / 1e9, 1)
        l2_bytes = getattr(torch.cuda.get_device_properties(x.device), "L2_cache_size", 0) if x.is_cuda else 0
        alarm = impossible_speed(input_bytes=input_bytes, seconds=seconds, copy_seconds=copy, l2_bytes=l2_bytes)
        if alarm:
            result["impossible"] = alarm
    return result


def impossible_speed(*, input_bytes: int, seconds: float, copy_seconds: float, l2_bytes: int) -> str | None:
    """Why a call of ``seconds`` on an input of ``input_bytes`` is faster than memory allows, given
    a copy of that input took ``copy_seconds``; None when it is not (or cannot be judged: an input
    that fits twice in the L2 cache)."""
    if input_bytes <= 2 * l2_bytes or seconds <= 0:
        return None
    read = input_bytes / seconds / 1e9
    copy = 2 * input_bytes / copy_seconds / 1e9
    if read <= IMPOSSIBLE * copy:
        return None
    return (f"read its {input_bytes / 2**20:.0f} MiB input at {read:.0f} GB/s, {read / copy:.1f}x the measured copy "
            f"bandwidth ({copy:.0f} GB/s), faster than memory allows: it skipped work (e.g. an answer cached across "
            "the timed calls) or its timing is not what it seems")
