"""Autotuned kernels under the fuzzer: every config exercised, none benchmarked, no change to user code.

``@triton.autotune`` picks one config per tuning key by timing them all. That hides bugs from a
fuzzer twice over: in Triton's interpreter there is no GPU timer, so the first launch raises
``RuntimeError: 0 active drivers``; on a GPU the fastest config wins every key, so a bug that
lives in another config (say the BLOCK_N=32 path mishandles the tail) never runs. This module
finds the autotuned kernels an implementation can reach and, per call, tells each one which
config to run::

    tuners = discover(impl)                    # once per implementation
    with pinned(tuners, choice) as pinning:    # one choice per example, drawn by the fuzzer
        out = impl(x)
    pinning.lines()    # ["_lse_kernel: BLOCK_N=64, num_warps=2, num_stages=3 (pinned, config 2 of 4)"]

How a config is chosen. ``choice`` is read as a mixed-radix number whose digits are the
tuners' config counts, in :func:`discover`'s order: tuner 0 runs config ``choice % n0``, tuner
1 config ``(choice // n0) % n1``, and so on. So choices ``0 .. combinations(tuners) - 1`` run
every combination once, the first ``n0`` choices already run every config of tuner 0, two
tuners never move in lockstep, and Hypothesis shrinking ``choice`` towards 0 shrinks towards
every kernel's first config. The digit is taken modulo the number of configs left after
``prune_configs_by`` (``early_config_prune``, then ``perf_model``/``top_k``), evaluated on the
launch's own arguments: a config the pruner removes is one the real kernel never runs.

How it runs one config. The launch goes through Triton's own ``Autotuner.run`` with the tuning
cache answering "already tuned: this config" for every key, so the config's ``pre_hook``, the
kernel's arguments and everything else a real post-tuning launch does happen as in production;
only the benchmarking is skipped (and with it the autotuner-level ``pre_hook``/``post_hook``
and ``reset_to_zero``/``restore_value``, which exist only to undo the benchmark runs' side
effects). The real cache is untouched and put back after every launch, also when it raises.
A kernel with a single config runs it through Triton's own single-config path.

``choice=None`` pins nothing: on a GPU the autotuner tunes as usual (what ran is still
recorded); in the interpreter, where tuning cannot work, the first config left after pruning
runs. :func:`install` makes that interpreter default hold for every autotuned kernel, pinned or
not, from any moment on: it replaces ``Autotuner.run`` on the class, which launches look up at
call time, so it may run before or after the candidate's module is imported. ``pinned`` calls
it, so a caller that wraps every call in ``pinned`` needs nothing else.

Triton 3.6 and 3.9 (both read): this relies on Autotuner's ``configs``, ``arg_names``,
``cache``, ``nargs``, ``fn``, ``base_fn``, ``best_config``, ``prune_configs(kwargs)`` and
``run(*args, **kwargs)``, and on Config's ``kwargs``, ``num_warps``, ``num_stages``,
``num_ctas``, ``maxnreg``, ``ir_override`` and ``all_kwargs()``: the same in both. What differs
(none of it on the path used here): 3.9 validates ``key``/``reset_to_zero``/``restore_value``
names at decoration and initialises ``restore_copies``; 3.9 skips benchmarking when pruning
leaves one config and calls ``knobs.autotuning.listener``; a float ``top_k`` is
``max(1, int(len(pruned) * top_k))`` in 3.9 but ``int(len(configs) * top_k)`` in 3.6, which can
prune to nothing (reported here as an AutotunerError naming the kernel); 3.6's ``Config.__str__``
omits ``ir_override``. ``Heuristics`` is identical in both and works in the interpreter as is.

Light on purpose: it runs inside the isolated worker process, so it imports only the standard
library and Triton, never ``reference`` or the rest of ``fuzz``.
"""

from __future__ import annotations

import contextlib
import enum
import functools
import math
import sys
import types
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from triton.runtime.autotuner import Autotuner, Config
from triton.runtime.errors import AutotunerError
from triton.runtime.jit import KernelInterface

__all__ = [
    "How",
    "Launch",
    "Pinning",
    "combinations",
    "config_text",
    "describe",
    "discover",
    "install",
    "installed",
    "pinned",
    "tuning",
]

# Modules whose objects are never the user's kernels: discovery does not walk into them (walking
# torch's globals would take seconds and find nothing).
_LIBRARY_ROOTS = frozenset({"torch", "triton", "numpy", "hypothesis", "builtins"}) | frozenset(
    getattr(sys, "stdlib_module_names", ())
)


# --------------------------------------------------------------------------------------------
# What ran


class How(str, enum.Enum):
    """How the config of a launch was chosen."""

    PINNED = "pinned"  # by the choice
    FIRST = "first"  # nothing pinned, interpreter: the first config left after pruning
    TUNED = "tuned"  # nothing pinned, GPU: the autotuner's own pick


@dataclass(frozen=True)
class Launch:
    """One launch of an autotuned kernel: which config ran and how it was chosen."""

    kernel: str
    config: str  # config_text() of the config that ran
    how: How
    index: int | None = None  # 0-based, among the configs left after pruning (None when tuned)
    candidates: int | None = None  # how many configs were left after pruning

    def __str__(self) -> str:
        if self.index is None:
            return f"{self.kernel}: {self.config} ({self.how.value})"
        return f"{self.kernel}: {self.config} ({self.how.value}, config {self.index + 1} of {self.candidates})"


@dataclass
class Pinning:
    """What one :func:`pinned` block chose: the choice, and every launch made under it."""

    choice: int | None
    tuners: tuple[Autotuner, ...]
    launches: list[Launch] = field(default_factory=list)

    def lines(self) -> list[str]:
        """One line per distinct (kernel, config) that ran, in launch order: for failure reports."""
        return list(dict.fromkeys(str(launch) for launch in self.launches))


def config_text(config: Config) -> str:
    """``BLOCK_N=64, num_warps=4, num_stages=3``: the config's kwargs, then the launch options
    that differ from Triton's defaults or always matter (warps, stages)."""
    parts = [f"{name}={value!r}" if isinstance(value, str) else f"{name}={value}"
             for name, value in config.kwargs.items()]
    parts.append(f"num_warps={config.num_warps}")
    parts.append(f"num_stages={config.num_stages}")
    if getattr(config, "num_ctas", 1) not in (None, 1):
        parts.append(f"num_ctas={config.num_ctas}")
    for option in ("maxnreg", "ir_override"):  # ir_override: Triton >= 3.4
        if getattr(config, option, None) is not None:
            parts.append(f"{option}={getattr(config, option)}")
    return ", ".join(parts)


def _name(tuner: Autotuner) -> str:
    return tuner.base_fn.__name__


# --------------------------------------------------------------------------------------------
# Finding the autotuned kernels


def discover(impl: Callable) -> tuple[Autotuner, ...]:
    """The autotuned kernels ``impl`` can reach, sorted by name (so a choice means the same
    kernel-to-digit assignment on every run).

    Looked through: ``impl`` itself (a function, bound method, functools.partial or callable
    object), the globals of its module, and transitively every non-library function it reaches
    through the names its code uses (globals, attributes of modules it uses, closure cells,
    defaults). Each Triton kernel found is unwrapped through its ``.fn`` chain, so
    ``@triton.heuristics`` over ``@triton.autotune`` and the reverse order are both found.
    Call it once per implementation: it walks code, which costs milliseconds, not microseconds.
    """
    found: dict[int, Autotuner] = {}
    # id -> object: holding the object keeps its id from being reused by a later one (bound methods
    # and cell contents are made on the fly and would otherwise be freed once looked at).
    seen: dict[int, object] = {}
    pending: list[object] = [impl]
    module = sys.modules.get(getattr(impl, "__module__", None) or "")
    if module is not None and not _is_library(module.__name__):
        pending.extend(vars(module).values())
    while pending:
        obj = pending.pop()
        if id(obj) in seen:
            continue
        seen[id(obj)] = obj
        if isinstance(obj, KernelInterface):
            for layer in _layers(obj):
                if isinstance(layer, Autotuner):
                    found[id(layer)] = layer
            continue
        pending.extend(_references(obj))
    return tuple(sorted(found.values(), key=_sort_key))


def _sort_key(tuner: Autotuner) -> tuple:
    base = tuner.base_fn
    # Name first (the documented order); module and configs break ties between two tuners of one
    # function so the order never depends on dictionary iteration.
    return (base.__name__, base.__module__ or "", base.__qualname__, [config_text(c) for c in tuner.configs])


def _layers(kernel: KernelInterface) -> Iterator[KernelInterface]:
    """The kernel and every KernelInterface it wraps (Heuristics / Autotuner / jit), outside in."""
    layer: object = kernel
    while isinstance(layer, KernelInterface):
        yield layer
        layer = getattr(layer, "fn", None)


def _is_library(module_name: str | None) -> bool:
    # No module name: code made by exec() or a notebook cell, which is the user's.
    return bool(module_name) and module_name.partition(".")[0] in _LIBRARY_ROOTS


def _references(obj: object) -> list[object]:
    """The objects ``obj`` can call or launch through, without walking into libraries."""
    if isinstance(obj, types.MethodType):
        return [obj.__func__, obj.__self__]
    if isinstance(obj, functools.partial):
        return [obj.func, *obj.args, *obj.keywords.values()]
    if isinstance(obj, types.FunctionType):
        if _is_library(obj.__module__):
            return []
        return _function_references(obj)
    if isinstance(obj, (staticmethod, classmethod)):
        return [obj.__func__]
    if isinstance(obj, (list, tuple, set, frozenset)):
        return list(obj)
    if isinstance(obj, dict):
        return list(obj.values())
    if isinstance(obj, type):
        # A user class (e.g. a torch.autograd.Function whose forward launches the kernel).
        return [] if _is_library(obj.__module__) else list(vars(obj).values())
    if isinstance(obj, (types.ModuleType, types.BuiltinFunctionType)) or not callable(obj):
        return []  # modules are reached by attribute, through the names a function uses
    if _is_library(type(obj).__module__):
        return []
    # A callable object: its __call__ and what it holds.
    return [type(obj).__call__, *getattr(obj, "__dict__", {}).values()]


def _function_references(function: types.FunctionType) -> list[object]:
    names = set(_code_names(function.__code__))
    refs: list[object] = []
    for name in names:
        value = function.__globals__.get(name)
        if isinstance(value, types.ModuleType):
            if not _is_library(value.__name__):
                # `kernels._lse_fwd[grid](...)` names both the module and the attribute.
                refs.extend(_attribute(value, attr) for attr in names)
        elif value is not None:
            refs.append(value)
    for cell in function.__closure__ or ():
        try:
            refs.append(cell.cell_contents)
        except ValueError:  # an empty cell: the variable is not bound yet
            pass
    refs.extend(function.__defaults__ or ())
    refs.extend((function.__kwdefaults__ or {}).values())
    return refs


def _attribute(module: types.ModuleType, name: str) -> object:
    try:
        return getattr(module, name, None)
    except Exception:  # a module __getattr__ that raises something else than AttributeError
        return None


def _code_names(code: types.CodeType) -> Iterator[str]:
    yield from code.co_names
    for const in code.co_consts:  # nested functions, lambdas, comprehensions
        if isinstance(const, types.CodeType):
            yield from _code_names(const)


# --------------------------------------------------------------------------------------------
# Reporting


def combinations(tuners: Sequence[Autotuner]) -> int:
    """How many choices run every combination of configs once (before pruning): the product of
    the config counts. Draw ``choice`` from ``range(combinations(tuners))``."""
    return math.prod(len(tuner.configs) for tuner in tuners)


def describe(tuners: Sequence[Autotuner]) -> list[str]:
    """One line per tuner for a run header: name, config count, key, pruning, the configs."""
    lines = []
    for tuner in tuners:
        pruning = []
        if getattr(tuner, "early_config_prune", None) is not None:
            pruning.append("early_config_prune")
        if getattr(tuner, "perf_model", None) is not None:
            pruning.append(f"perf_model top_k={tuner.configs_top_k}")
        pruned = f", pruned by {' and '.join(pruning)}" if pruning else ""
        configs = " | ".join(config_text(config) for config in tuner.configs)
        count = len(tuner.configs)
        lines.append(f"{_name(tuner)}: {count} config{'s' if count != 1 else ''}, "
                     f"key={list(tuner.keys)}{pruned}: {configs}")
    return lines


def tuning(impl: Callable) -> tuple[Callable[[int | None], Iterator[Pinning]] | None, int, list[str]]:
    """``(pin, count, description)`` of the autotuned kernels ``impl`` launches: ``pin(choice)``, a
    context that runs choice ``choice`` of the ``count`` combinations of their configs, and
    :func:`describe`'s lines; ``(None, 1, [])`` when it launches none."""
    tuners = discover(impl)
    if not tuners:
        return None, 1, []
    return (lambda choice: pinned(tuners, choice)), combinations(tuners), describe(tuners)


# --------------------------------------------------------------------------------------------
# Pinning


@dataclass
class _Pin:
    digit: int | None  # this tuner's digit of the choice; None: nothing pinned
    record: Pinning
    name: str  # the kernel's name in the record's lines


_PINS: dict[int, _Pin] = {}  # id(tuner) -> its innermost active pin
_ORIGINAL_RUN: Callable | None = None  # Autotuner.run as Triton defined it, kept by install()


def install() -> None:
    """Route every ``Autotuner.run`` through this module; idempotent.

    Afterwards an autotuned kernel in Triton's interpreter runs its first config left after
    pruning instead of raising "0 active drivers"; on a GPU nothing changes unless the kernel is
    pinned. Call it once per process, anywhere before the first launch (before or after the
    candidate module is imported: the class attribute is looked up at each launch).
    :func:`pinned` calls it. A subclass of Autotuner that overrides ``run`` is not reached.
    """
    global _ORIGINAL_RUN
    current = Autotuner.__dict__["run"]
    if current is _dispatch:
        return
    _ORIGINAL_RUN = current
    Autotuner.run = _dispatch


def installed() -> bool:
    return Autotuner.__dict__.get("run") is _dispatch


@contextlib.contextmanager
def pinned(tuners: Sequence[Autotuner], choice: int | None) -> Iterator[Pinning]:
    """Under this block each of ``tuners`` runs the one config ``choice`` selects (see the module
    docstring), with no benchmarking; the yielded :class:`Pinning` records every launch.

    Blocks nest (the inner pin wins, the outer one is back on exit); pins are lifted on exit,
    also when the block raises. Not thread-safe: pins are per process, not per thread.
    """
    tuners = tuple(tuners)
    for position, tuner in enumerate(tuners):
        if not isinstance(tuner, Autotuner):
            raise TypeError(f"tuners[{position}]={tuner!r} is not an autotuned kernel; "
                            "pass what discover(impl) returns.")
    if choice is not None and (isinstance(choice, bool) or not isinstance(choice, int) or choice < 0):
        raise ValueError(f"choice={choice!r}; expected None (nothing pinned) or an int >= 0.")
    install()
    record = Pinning(choice, tuners)
    outer = {id(tuner): _PINS.get(id(tuner)) for tuner in tuners}
    names = _display_names(tuners)
    radix = 1
    for tuner, name in zip(tuners, names):
        digit = None if choice is None else (choice // radix) % len(tuner.configs)
        radix *= len(tuner.configs)
        _PINS[id(tuner)] = _Pin(digit, record, name)
    try:
        yield record
    finally:
        for key, pin in outer.items():
            if pin is None:
                _PINS.pop(key, None)
            else:
                _PINS[key] = pin


def _display_names(tuners: Sequence[Autotuner]) -> list[str]:
    """Each kernel's name, qualified by its module where two pinned kernels share one."""
    names = [_name(tuner) for tuner in tuners]
    return [f"{tuner.base_fn.__module__}.{name}" if names.count(name) > 1 else name
            for tuner, name in zip(tuners, names)]


def _dispatch(self: Autotuner, *args, **kwargs):
    """Autotuner.run once installed: a pinned launch, the interpreter's default, or Triton's own."""
    assert _ORIGINAL_RUN is not None, "_dispatch is installed only by install()"
    pin = _PINS.get(id(self))
    digit = pin.digit if pin is not None else None
    if digit is None and not _interpreted(self):
        # Nothing pinned on a GPU: let the autotuner tune, and record what it picked.
        result = _ORIGINAL_RUN(self, *args, **kwargs)
        if pin is not None:
            pin.record.launches.append(Launch(pin.name, config_text(self.best_config), How.TUNED))
        return result
    how = How.FIRST if digit is None else How.PINNED
    if len(self.configs) <= 1:
        # Triton runs a lone config without tuning (and without pruning): nothing to choose.
        if pin is not None:
            pin.record.launches.append(Launch(pin.name, config_text(self.configs[0]), how, 0, 1))
        return _ORIGINAL_RUN(self, *args, **kwargs)
    # Prune exactly as run() would: prune_configs reads the positional arguments from self.nargs.
    self.nargs = dict(zip(self.arg_names, args))
    candidates = list(self.prune_configs(kwargs))
    if not candidates:
        # Triton 3.6 prunes to nothing when a float top_k rounds down to 0; its run() then fails
        # on min() of an empty dict, far from the cause.
        raise AutotunerError(f"{_name(self)}: no config left after prune_configs_by; the pruner "
                             "(early_config_prune, or perf_model with top_k) must keep at least one.")
    index = (digit or 0) % len(candidates)
    config = candidates[index]
    if pin is not None:
        # Recorded before the launch: a launch that crashes still names the config it ran.
        pin.record.launches.append(Launch(pin.name, config_text(config), how, index, len(candidates)))
    tuned = self.cache
    self.cache = _Tuned(config)
    try:
        return _ORIGINAL_RUN(self, *args, **kwargs)
    finally:
        self.cache = tuned


class _Tuned(dict):
    """A tuning cache that holds ``config`` for every key: run() takes its already-tuned path."""

    def __init__(self, config: Config) -> None:
        super().__init__()
        self.config = config

    def __contains__(self, key: object) -> bool:
        return True

    def __getitem__(self, key: object) -> Config:
        return self.config

    def get(self, key: object, default: object = None) -> Config:
        return self.config


def _interpreted(tuner: Autotuner) -> bool:
    """Whether the kernel was decorated under TRITON_INTERPRET=1 (Triton decides then, not later)."""
    interpreter = sys.modules.get("triton.runtime.interpreter")
    if interpreter is None:
        return False  # nothing was ever interpreted in this process
    return any(isinstance(layer, interpreter.InterpretedFunction) for layer in _layers(tuner))
