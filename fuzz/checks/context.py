"""What the checks of one example share: the plan, the first output, a snapshot of the input, the oracle."""

from __future__ import annotations

import contextlib
import time
import warnings
import zlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from reference import compare

from ..calls import CallMismatch
from ..contract import Contract
from ..costs import Costs
from ..interpreter import bounds
from ..interpreter.bounds import OutOfBounds, UninitializedRead, violation_in
from ..interpreter.emulation import EmulationUnsupported, raised_by_emulator
from ..failures import CheckFailure, ImplError, Unsupported
from ..gradient import NotDifferentiable
from ..outcomes import HarnessError
from ..strategies import LseInput
from ..timing import SLOW_FACTOR, SLOW_FLOOR, SlowCall, reference_seconds

Impl = Callable[[torch.Tensor], object]


@dataclass(frozen=True)
class Plan:
    """Which metamorphic check an example runs, the seed its transformation derives from, and
    (for an implementation with autotuned kernels) which configuration every call of the example
    pins (:func:`fuzz.interpreter.autotune.pinned`; None: the autotuner's own pick)."""

    metamorphic: str | None = None
    seed: int = 0
    config: int | None = None

    def to_dict(self) -> dict[str, object]:
        return {"metamorphic": self.metamorphic, "seed": self.seed, "config": self.config}

    @classmethod
    def from_dict(cls, data: dict) -> Plan:
        config = data.get("config")
        return cls(data.get("metamorphic"), int(data.get("seed", 0)), None if config is None else int(config))


Pin = Callable[[int | None], contextlib.AbstractContextManager]
"""pin(choice) -> a context manager under which the implementation's autotuned kernels run one config."""


class Snapshot:
    """Raw bits of the input before the first call: the view, and the whole storage when small.

    Bits, not values: NaN != NaN and -0.0 == 0.0 would hide changes a value comparison misses.
    """

    STORAGE_LIMIT = 1 << 28  # bytes; huge-offset storages are gigabytes and mostly unbacked

    def __init__(self, x: torch.Tensor) -> None:
        self.view = bits(x).clone()
        self.storage = None
        if x.untyped_storage().nbytes() <= self.STORAGE_LIMIT:
            self.storage = storage_bytes(x).clone()


def bits(t: torch.Tensor) -> torch.Tensor:
    """The tensor's raw bits as integers of the same width (a view; works for any strides)."""
    int_dtype = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()]
    return t.detach().view(int_dtype)


def storage_bytes(x: torch.Tensor) -> torch.Tensor:
    return torch.empty(0, dtype=torch.uint8, device=x.device).set_(x.untyped_storage())


def _compile_seconds(impl: Impl) -> float:
    return float(getattr(impl, "compile_seconds", 0.0) or 0.0)


def _refusal(exc: Exception, impl: Impl, example: LseInput) -> EmulationUnsupported | None:
    """The CPU emulator's refusal of a construct the call used, or None: ``exc`` is the
    implementation's error. Only on the CPU, and only the emulator's own (fuzz.interpreter.emulation): in this
    process, an EmulationUnsupported the emulator's code raised; from an isolated worker, what the
    worker found so (an implementation that says it relays them: fuzz.isolation's)."""
    if example.device.type != "cpu":
        return None
    relayed = getattr(exc, "emulation", None) if getattr(impl, "relays_refusals", False) else None
    return relayed if isinstance(relayed, EmulationUnsupported) else raised_by_emulator(exc)


def _violation(exc: Exception, impl: Impl, example: LseInput) -> OutOfBounds | None:
    """The out-of-bounds access the CPU's bounds checker stopped during the call (in this process,
    or as an isolated worker relays it), or None."""
    if example.device.type != "cpu":
        return None
    relayed = getattr(exc, "memory", None) if getattr(impl, "relays_refusals", False) else None
    return relayed if isinstance(relayed, OutOfBounds) else violation_in(exc)


def memory_failure(call: str, violation: OutOfBounds) -> CheckFailure:
    """The ``memory_bounds`` failure of a call whose kernel addressed memory outside its launch's tensors,
    or the ``uninitialized_read`` one of a call that read (or returned) memory it allocated and nothing wrote."""
    if isinstance(violation, UninitializedRead):
        if violation.access == "return":
            return CheckFailure("uninitialized_read", f"{call} returned memory nothing wrote", details=[
                f"result:   {violation.where}",
                "seen:     by the CPU's tracking of the call's torch.empty allocations (no kernel store, "
                "no PyTorch write reached those bytes)"])
        return CheckFailure("uninitialized_read", f"{violation.access} of memory nothing wrote during {call}",
                            details=_access_lines(violation, "stopped:  by the CPU's tracking of the call's "
                                                  "torch.empty allocations, before the access (the values are "
                                                  "whatever the allocator left there: often zeros, and right, "
                                                  "until they are not)"))
    return CheckFailure("memory_bounds", f"{violation.access} out of bounds during {call}", details=_access_lines(
        violation, "stopped:  by the CPU's bounds checker, before the access (Triton's interpreter would have "
                   "read or written that memory of the fuzzer's own process)"))


def _access_lines(violation: OutOfBounds, stopped: str) -> list[str]:
    more = f" ({violation.lanes} lanes {violation.what}, the first shown)" if violation.lanes > 1 else ""
    return [f"access:   {violation.where}{more}", f"kernel:   {violation.kernel} at {violation.line}",
            f"program:  {violation.program}", stopped]


def hex_bits(value: int, width: int) -> str:
    return f"0x{value & ((1 << (8 * width)) - 1):0{2 * width}x}"


class Context:
    """The state the checks of one example share."""

    def __init__(self, impl: Impl, example: LseInput, plan: Plan, contract: Contract = Contract.STRICT, *,
                 time_limit: float | None = None, on_slow: Callable[[SlowCall], None] | None = None,
                 pin: Pin | None = None, gradient_impl: Impl | None = None, costs: Costs | None = None) -> None:
        self.impl = impl
        self.costs = costs  # the run's: calls and their seconds are added to it
        self.gradient_impl = gradient_impl  # x -> dx (fuzz.gradient), with --backward
        self.dx: object = None
        self.example = example
        self.plan = plan
        self.contract = contract
        self.time_limit = time_limit
        self.on_slow = on_slow
        self.pin = pin
        self.configs: list[str] = []  # the autotune configs the last call ran (for the failure report)
        self.snapshot = Snapshot(example.x)
        self.judge_memory = True  # an access out of bounds fails memory_bounds (else it is the call's error)
        self.judge_init = True  # a read of memory the call allocated and nothing wrote fails uninitialized_read
        self.out: object = None
        self._comparison = None

    def call(self, x: torch.Tensor, call: str, *, impl: Impl | None = None) -> object:
        impl = self.impl if impl is None else impl
        # Compiling is not the call's time (an isolated worker reports it: fuzz.isolation.worker.compile_watch).
        compiled = _compile_seconds(impl)
        started = time.perf_counter()
        pinning = self.pin(self.plan.config) if self.pin is not None else contextlib.nullcontext()
        pinned = None
        convention = self.contract.call
        if hasattr(impl, "memory_bounds"):  # an isolated worker: it checks its kernels' accesses itself
            impl.memory_bounds = self.judge_memory
            impl.uninitialized_read = self.judge_init
        try:
            # Triton's interpreter evaluates masked lanes with numpy and warns about inf - inf;
            # those warnings say nothing about the implementation.
            # In this process only when the call runs here: an isolated worker tracks its own, and the
            # copies this process decodes its results into are not the candidate's allocations.
            judging_init = self.judge_init and self.example.device.type == "cpu" and not hasattr(impl, "memory_bounds")
            with warnings.catch_warnings(), pinning as pinned, \
                    bounds.judging(self.judge_memory, initialized=judging_init):
                warnings.simplefilter("ignore", RuntimeWarning)
                # The gradient (--backward) is a call of its own: x -> dx, with the default convention.
                out = convention.invoke(self.impl, x) if impl is self.impl else impl(x)
                bounds.judge_result(out)
        except (HarnessError, NotDifferentiable):  # no verdict on the implementation: ours, or bad input
            raise
        except Exception as exc:  # anything the implementation raises is its error, not ours
            if getattr(exc, "remote_type", None) == NotDifferentiable.__name__:  # said by an isolated worker
                raise NotDifferentiable(str(exc)) from None
            self.configs = _lines(pinned)
            refusal = _refusal(exc, impl, self.example)
            if refusal is not None:  # the emulator's, not the implementation's: no verdict on this device
                raise Unsupported(call, refusal) from None
            violation = _violation(exc, impl, self.example)
            if violation is not None and (self.judge_init if isinstance(violation, UninitializedRead)
                                          else self.judge_memory):
                raise memory_failure(call, violation) from None
            raise ImplError(call, exc) from None
        self.configs = _lines(pinned)
        elapsed = time.perf_counter() - started - (_compile_seconds(impl) - compiled)
        if self.costs is not None:
            self.costs.calls += 1
            self.costs.call_seconds += max(elapsed, 0.0)
        if elapsed > SLOW_FLOOR or (self.time_limit is not None and elapsed > self.time_limit):
            self._timed(x, call, elapsed)
        # The LSE at its declared place, as (M,) rows; a result of another structure than declared
        # is bad input (ConventionError), not a verdict on the implementation.
        return convention.settle(self.impl, out, x) if impl is self.impl else out

    def _timed(self, x: torch.Tensor, call: str, elapsed: float) -> None:
        """A slow call: a finding, or a failure when it is over the user's time limit."""
        rows = self.contract.call.as_rows(x)
        layout = self.example.describe_layout() if self.example.batch is not None else \
            self.example.layout.describe(*x.shape)
        slow = SlowCall.of(call, rows, layout, elapsed, reference_seconds(rows))
        if self.time_limit is not None and elapsed > self.time_limit:
            raise CheckFailure("time_limit", f"{call} took {elapsed:.2f} s, over the time limit of "
                               f"{self.time_limit:g} s", details=[f"timing:   {slow.describe()}"],
                               why="a time limit was asked for (--fail-slower-than): slow calls fail instead of "
                                   "being reported")
        if elapsed > SLOW_FLOOR and slow.ratio > SLOW_FACTOR and self.on_slow is not None:
            self.on_slow(slow)

    def comparison(self, check: str):
        """reference.compare of the first output against the oracle (computed once).

        An output that cannot be compared fails ``check``, the check that needed it.
        """
        if self._comparison is None:
            out = rows_of(check, self.out, self.example.shape[0], self.example.x.device)
            self._comparison = compare(self.on_device(self.example.values), out, base=self.contract.lse_base)
        return self._comparison

    def on_device(self, values: torch.Tensor) -> torch.Tensor:
        """``values`` where the input lives, so the float64 oracle runs on the GPU when there is one."""
        return values.to(self.example.x.device)

    def rng(self, check: str) -> np.random.Generator:
        return np.random.default_rng([self.plan.seed, zlib.crc32(check.encode())])


def _lines(pinned: object) -> list[str]:
    """What a pinning context reported (fuzz.interpreter.autotune.Pinning, or an isolated worker's lines)."""
    lines = getattr(pinned, "lines", None)
    return list(lines() if callable(lines) else lines or [])


def rows_of(check: str, out: object, rows: int, device: torch.device) -> torch.Tensor:
    """The output as a (rows,) tensor, or a failure of ``check`` saying why it cannot be judged.

    ``device`` is the input's: a result on the meta device holds no values to judge.
    """
    if isinstance(out, CallMismatch):  # an N-D result of the wrong shape or strides (fuzz.calls)
        raise CheckFailure(check, out.text)
    if not isinstance(out, torch.Tensor):
        what = getattr(out, "type_name", None) or type(out).__name__  # a stand-in from a worker names the real type
        raise CheckFailure(check, f"returned a {what}, not a torch.Tensor: there is nothing to compare")
    if out.layout != torch.strided:
        raise CheckFailure(check, f"returned a tensor with layout {out.layout}, not a dense (strided) tensor")
    if tuple(out.shape) != (rows,):
        raise CheckFailure(check, f"returned shape {tuple(out.shape)}, expected ({rows},): one value per row")
    if not (out.dtype.is_floating_point or out.dtype.is_complex):
        raise CheckFailure(check, f"returned dtype {out.dtype}, which cannot hold -inf, +inf or NaN")
    if out.device.type == "meta":
        raise CheckFailure(check, f"returned a tensor on meta, but the input is on {device}: it holds no values")
    return out.detach()
