"""The correctness checks people run on LSE kernels today, each as one function judging ``lse(x)``.

Used by ``bench/harness_comparison.py`` to set them beside lse-fuzz on the same implementations.
Each baseline reproduces the inputs, the reference and the comparison of a harness in use, written
from reading that harness (none of its code is copied), adapted to a row-wise ``lse(x) -> (M,)``
only where the harness tests another signature (what was adapted is said at each one):

* :func:`kernelbench`: KernelBench's ``run_and_check_correctness`` (``src/eval.py``): 5 trials, their
  seeds drawn from ``torch.manual_seed(42)``, each input ``torch.rand`` at one shape in float32, the
  output's shape compared first, then ``torch.allclose(out, ref, atol=1e-2, rtol=1e-2)`` against the
  PyTorch reference (``torch.logsumexp(x, dim=-1)`` here); an exception is a failed check.
* :func:`opinfo`: PyTorch's OpInfo samples for ``logsumexp`` (``sample_inputs_logsumexp`` in
  ``torch/testing/_internal/common_methods_invocations.py``): shapes () and (5, 5) reduced over dim 1,
  dim -2 and dims (0, 1), ``make_tensor``'s default range [-9, 9] and, for float32/float64 only, the
  ranges [1e3, 2e3] and [1e6, 2e6]; every floating dtype; ``torch.testing.assert_close`` with its
  default tolerances against ``torch.logsumexp`` on the same sample, as OpInfo's consistency tests
  compare a backend with eager PyTorch. Adapted to 2-D row-wise calls: dim 1 is ``lse(x)``, dim -2
  is ``lse(x.mT)`` (a transposed view), dims (0, 1) is ``lse(x.reshape(1, -1))``, shape () is a
  (1, 1) input; the keepdim variants give the same rows and are not repeated; ``check_dtype=False``
  (the contract allows a float32 result for 16-bit input; the tolerance is then the less precise
  dtype's, as assert_close picks it).
* :func:`liger_tests`: Liger-Kernel's cross-entropy tests (``test/transformers/test_cross_entropy.py``):
  ``torch.manual_seed(0)``, logits ``torch.randn(B * T, V) * 1.0``, float32 at atol 1e-8, rtol 1e-6 and
  bfloat16 at atol 1e-8, rtol 5e-2, ``torch.allclose`` against torch. Adapted: the LSE of each row is
  compared (Liger compares the reduced loss, which averages per-row errors away: this is stricter);
  shapes (B, T, V) = (2, 2, 8) and (9, 7, 41) as its functional test, and (2, 2, 32000) for its
  (2, 4096, 32000) llama shape, fewer rows for Triton's interpreter.
* :func:`fla_tests`: flash-linear-attention's fused cross-entropy test (``tests/modules/test_cross_entropy.py``):
  ``torch.manual_seed(42)``, logits ``torch.randn(B * T, V)`` cast to bfloat16, passed when the
  relative RMS error ``rms(ref - out) / rms(ref)`` is below 1e-2. Adapted: per-row LSE against
  ``torch.logsumexp``; V of 32000 and 100000 as there, B * T = 4 rows instead of 1024-2048.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

LseFn = Callable[[torch.Tensor], torch.Tensor]
DTYPES = {"float32": torch.float32, "float64": torch.float64, "float16": torch.float16, "bfloat16": torch.bfloat16}

KERNELBENCH_SHAPE = (128, 4096)   # a typical level-1 reduction size (batch 128, dim 4096)
KERNELBENCH_TRIALS = 5            # KernelBench's num_correct_trials
KERNELBENCH_SEED = 42             # the seed its trial seeds are drawn from
KERNELBENCH_TOLERANCE = 1e-2      # atol and rtol of its torch.allclose

OPINFO_S = 5                      # S of common_methods_invocations
OPINFO_SEED = 1234                # torch's TestCase seeds the RNG with SEED = 1234 before each test

LIGER_SHAPES = ((2, 2, 8), (9, 7, 41), (2, 2, 32000))
LIGER_TOLERANCES = {"float32": (1e-8, 1e-6), "bfloat16": (1e-8, 5e-2)}  # (atol, rtol)

FLA_SHAPES = ((2, 2, 32000), (2, 2, 100000))
FLA_RATIO = 1e-2


class Verdict(enum.Enum):
    """What one baseline says about one implementation."""

    PASS = "pass"
    FAIL = "fail"    # the check rejected the answer (values, shape)
    ERROR = "error"  # the implementation raised: every baseline counts it as not correct
    SKIP = "skip"    # the baseline cannot judge it (no dtype it tests is accepted)

    @property
    def flags(self) -> bool:
        """A rejection: a bug caught on a buggy implementation, a false alarm on a correct one."""
        return self in (Verdict.FAIL, Verdict.ERROR)


@dataclass(frozen=True)
class Outcome:
    verdict: Verdict
    reason: str = ""

    def as_json(self) -> dict:
        return {"verdict": self.verdict.value, "reason": self.reason}


def _call(lse: LseFn, x: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return lse(x)


def _describe(x: torch.Tensor) -> str:
    layout = "contiguous" if x.is_contiguous() else f"strides {tuple(x.stride())}"
    return f"{str(x.dtype).removeprefix('torch.')} {tuple(x.shape)} {layout}"


def _judged(harness: Callable[[LseFn, tuple[str, ...]], Outcome], lse: LseFn, dtypes: tuple[str, ...]) -> Outcome:
    """An exception of the implementation is a rejection (ERROR) in every one of these harnesses."""
    try:
        return harness(lse, dtypes)
    except Exception as error:  # noqa: BLE001 - what the harness reports, not a crash of the comparison
        first_line = str(error).splitlines()[0] if str(error) else ""
        return Outcome(Verdict.ERROR, f"{type(error).__name__}: {first_line}"[:300])


def _kernelbench(lse: LseFn, dtypes: tuple[str, ...], shape: tuple[int, int] = KERNELBENCH_SHAPE) -> Outcome:
    if "float32" not in dtypes:
        return Outcome(Verdict.SKIP, "KernelBench's inputs are float32")
    torch.manual_seed(KERNELBENCH_SEED)
    seeds = [int(torch.randint(0, 2**32 - 1, (1,)).item()) for _ in range(KERNELBENCH_TRIALS)]
    for trial, seed in enumerate(seeds):
        torch.manual_seed(seed)
        x = torch.rand(*shape)
        expected = torch.logsumexp(x, dim=-1)
        out = _call(lse, x)
        if out.shape != expected.shape:
            return Outcome(Verdict.FAIL,
                           f"trial {trial}: output shape {tuple(out.shape)}, expected {tuple(expected.shape)}")
        if not torch.allclose(out, expected, atol=KERNELBENCH_TOLERANCE, rtol=KERNELBENCH_TOLERANCE):
            diff = (out.double() - expected.double()).abs()
            return Outcome(Verdict.FAIL, f"trial {trial}: output mismatch on {_describe(x)}, max difference "
                                         f"{diff.nan_to_num(math.inf).max().item():.4g}")
    return Outcome(Verdict.PASS)


def kernelbench(lse: LseFn, dtypes: tuple[str, ...] = tuple(DTYPES), *,
                shape: tuple[int, int] = KERNELBENCH_SHAPE) -> Outcome:
    """KernelBench's correctness check of ``lse`` (module docstring)."""
    return _judged(lambda impl, accepted: _kernelbench(impl, accepted, shape), lse, dtypes)


def opinfo_samples(dtypes: tuple[str, ...] = tuple(DTYPES)):
    """(what, x, row-wise view, expected rows) for each OpInfo-like sample of the accepted dtypes."""
    torch.manual_seed(OPINFO_SEED)
    size = OPINFO_S
    for name in DTYPES:
        if name not in dtypes:
            continue
        dtype = DTYPES[name]
        lows = (None, 1e3, 1e6) if dtype in (torch.float32, torch.float64) else (None,)
        for low in lows:
            high = None if low is None else 2 * low
            for shape, dim in (((), 0), ((size, size), 1), ((size, size), -2), ((size, size), (0, 1))):
                x = torch.testing.make_tensor(shape, dtype=dtype, device="cpu", low=low, high=high)
                expected = torch.logsumexp(x, dim)
                if shape == ():
                    rows = x.reshape(1, 1)
                elif dim == 1:
                    rows = x
                elif dim == -2:
                    rows = x.mT                    # reduce dim 0 = the rows of the transposed view
                else:
                    rows = x.reshape(1, -1)
                what = f"{name} shape {shape} dim {dim} values in [{low or -9}, {high or 9}]"
                yield what, x, rows, expected.reshape(rows.shape[0])


def _opinfo(lse: LseFn, dtypes: tuple[str, ...]) -> Outcome:
    samples = list(opinfo_samples(dtypes))
    if not samples:
        return Outcome(Verdict.SKIP, "no floating dtype accepted")
    for what, _, rows, expected in samples:
        out = _call(lse, rows)
        try:
            torch.testing.assert_close(out, expected, check_dtype=False)
        except AssertionError as error:
            message = " ".join(str(error).split())
            return Outcome(Verdict.FAIL, f"{what} ({_describe(rows)}): {message}"[:400])
    return Outcome(Verdict.PASS)


def opinfo(lse: LseFn, dtypes: tuple[str, ...] = tuple(DTYPES)) -> Outcome:
    """torch.testing.assert_close on OpInfo's logsumexp samples (module docstring)."""
    return _judged(_opinfo, lse, dtypes)


def _liger(lse: LseFn, dtypes: tuple[str, ...], shapes=LIGER_SHAPES) -> Outcome:
    tested = [name for name in LIGER_TOLERANCES if name in dtypes]
    if not tested:
        return Outcome(Verdict.SKIP, "Liger's tests run float32 and bfloat16")
    for batch, time, vocab in shapes:
        for name in tested:
            atol, rtol = LIGER_TOLERANCES[name]
            torch.manual_seed(0)
            x = torch.randn(batch * time, vocab, dtype=DTYPES[name]) * 1.0
            expected = torch.logsumexp(x, dim=-1)
            out = _call(lse, x)
            if out.shape != expected.shape:
                return Outcome(Verdict.FAIL, f"{_describe(x)}: output shape {tuple(out.shape)}")
            if not torch.allclose(out.double(), expected.double(), atol=atol, rtol=rtol):
                diff = (out.double() - expected.double()).abs().nan_to_num(math.inf).max().item()
                return Outcome(Verdict.FAIL, f"{_describe(x)}: not allclose at atol {atol}, rtol {rtol}; "
                                             f"max difference {diff:.4g}")
    return Outcome(Verdict.PASS)


def liger_tests(lse: LseFn, dtypes: tuple[str, ...] = tuple(DTYPES), *, shapes=LIGER_SHAPES) -> Outcome:
    """Liger-Kernel's cross-entropy test recipe applied to the LSE (module docstring)."""
    return _judged(lambda impl, accepted: _liger(impl, accepted, shapes), lse, dtypes)


def _rms(values: torch.Tensor) -> float:
    return values.double().flatten().square().mean().sqrt().item()


def _fla(lse: LseFn, dtypes: tuple[str, ...], shapes=FLA_SHAPES) -> Outcome:
    if "bfloat16" not in dtypes:
        return Outcome(Verdict.SKIP, "fla's cross-entropy test runs bfloat16")
    for batch, time, vocab in shapes:
        torch.manual_seed(42)
        x = torch.randn(batch * time, vocab).to(torch.bfloat16)
        expected = torch.logsumexp(x, dim=-1)
        out = _call(lse, x)
        if out.shape != expected.shape:
            return Outcome(Verdict.FAIL, f"{_describe(x)}: output shape {tuple(out.shape)}")
        ratio = _rms(expected.double() - out.double()) / _rms(expected)
        if not ratio < FLA_RATIO:  # NaN fails, as fla's `assert error_rate < ratio` does
            return Outcome(Verdict.FAIL, f"{_describe(x)}: relative RMS error {ratio:.4g}, limit {FLA_RATIO}")
    return Outcome(Verdict.PASS)


def fla_tests(lse: LseFn, dtypes: tuple[str, ...] = tuple(DTYPES), *, shapes=FLA_SHAPES) -> Outcome:
    """flash-linear-attention's cross-entropy test recipe applied to the LSE (module docstring)."""
    return _judged(lambda impl, accepted: _fla(impl, accepted, shapes), lse, dtypes)


BASELINES = {"kernelbench": kernelbench, "opinfo": opinfo, "liger_tests": liger_tests, "fla_tests": fla_tests}
"""Every baseline by the name the table gives it."""
