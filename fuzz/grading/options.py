"""The options that decide a verdict, validated once, with the seed policy and the thread policy."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
from dataclasses import dataclass, field, fields, replace
from enum import Enum
from pathlib import Path

import torch

from reference.errors import InvalidArgument

from .. import defaults, option_table, validate
from .._version import __version__
from ..checks import validate_checks
from ..profiles import PROFILES
from ..calls import CallConvention
from ..contract import DTYPES, Contract, Layouts, OutputDtype, parse_dtypes, parse_lse_base
from ..isolation import scrub_from_proc
from ..target import parse_target

__all__ = ["DEFAULT_BENCH_SHAPE", "DEFAULT_BUDGET", "GradeOptions", "MemoryPhase", "driver_environment",
           "torch_threads", "use_torch_threads"]

DEFAULT_BUDGET = defaults.CHECK_BUDGET
DEFAULT_BENCH_SHAPE = (8192, 8192)
BENCH_DTYPES = ("float32", "float16", "bfloat16", "float64")


CONTRACT_FIELDS = ("contract", "dtypes", "layouts", "output_dtype", "max_n", "lse_base")
"""The options that declare the contract (``contract``: its values policy; fuzz.contract)."""
CALL_FIELDS = ("ndim", "dim", "keepdim", "call_args", "result")
"""The options that declare the call convention (fuzz.calls)."""


class MemoryPhase(str, Enum):
    """When a GPU run's memory phase (:mod:`fuzz.grading.memory_phase`) starts, and which verdicts it
    may refine. Not an option of the command line: a mutation analysis picks it per job."""

    BESIDE = "beside"
    """Started with the run; it runs after a pass, after a value check's failure and after a kernel
    fault, so a check names the same failure on both devices (the CPU sees a stray access first)."""
    AFTER_PASS = "after_pass"
    """Started only once the fuzzing passed or the GPU reported a kernel fault: a value check's
    failure stands as the verdict. A mutant killed by a value check is killed whatever the phase
    would name; its two sanitizer processes would only rename the check."""
    OFF = "off"
    """Never: a part of a run (grading.parts.split), which probes once after its parts, or a share
    of the mutation gate's run, whose first share probes."""


@dataclass(frozen=True)
class GradeOptions:
    """Everything that decides a verdict, validated once (:meth:`validated`)."""

    budget: int = DEFAULT_BUDGET
    seed: int = 0
    private_seed: str | None = field(default=None, repr=False)  # never written to a report
    # The seed derived from it, which is all a grading driver receives (see to_wire): the secret
    # stays in the process that read it.
    derived_seed: int | None = field(default=None, repr=False)
    # The declared contract, its call convention (fuzz.calls) included: one validated Contract.
    # Built from the options' flat names (--contract, --dtypes, ..., --ndim, ...) by of()/updated().
    contract: Contract = Contract.STRICT
    backward: bool = False  # also judge the gradient (fuzz.gradient; the 2-D lse(x) only)
    checks: tuple[str, ...] | None = None
    device: str = "cpu"
    call_timeout: float = defaults.CALL_TIMEOUT
    compile_timeout: float = defaults.COMPILE_TIMEOUT  # seconds a call may spend compiling (not its time)
    timeout: float | None = None
    time_limit: float | None = None  # a call slower than this fails (check time_limit); None: slow is a finding
    memory_limit: int | None = None  # bytes; None: fuzz.isolation.default_memory_limit; 0: none
    threads: int | None = None
    jobs: int = 1  # workers running at once (shares the default memory limit); not part of the key
    huge_offsets: bool = True
    max_elements: int | None = None  # largest M * N drawn (default: the strategies' default for the device)
    fit_shapes: bool = True  # on the CPU, without max_elements: fit the cap to the candidate's cost (grading.fit)
    profile: str | None = None
    parts: int | None = None  # the examples' split into runs of derived seeds (grading.parts); None: the device's default
    shrink_seconds: float | None = None  # the budget of a failure's shrinking; None: the device's default (fuzz.shrinking)
    # Where the parts of one run side by side tell each other of a failure (grading.parts.PartSignal): not an option.
    stop_dir: str | None = field(default=None, repr=False)
    # (k, K): this job runs share k of the run's one stream of examples (a share is a set of launch
    # classes), the others drawn and skipped, so K jobs run exactly one run's examples and compile
    # apart (the mutation gate on a GPU host spreads its compiles so; fuzz.run.Run.skips). Not an option.
    share: tuple[int, int] | None = field(default=None, repr=False)
    bench: bool = False
    memory: MemoryPhase = field(default=MemoryPhase.BESIDE, repr=False)
    # The memory checks whose tools start beside the fuzzing (None: every one the run selected); the
    # others start only once the run passed or the GPU reported a kernel fault, as with AFTER_PASS.
    # Not an option: a mutation analysis starts only the tool of a memory mutant's documented check.
    memory_checks: tuple[str, ...] | None = field(default=None, repr=False)
    bench_shape: tuple[int, int] = DEFAULT_BENCH_SHAPE
    bench_dtype: str = "float32"

    def validated(self, *, cli: bool = False) -> GradeOptions:
        """The options checked and normalised; InvalidArgument naming the option otherwise
        (``--call-timeout`` when ``cli``, ``call_timeout`` from Python)."""

        def name(option: str) -> str:
            return option_table.cli_name(option) if cli else option

        validate.integer(self.budget, name=name("budget"), low=1)
        validate.integer(self.seed, name=name("seed"), low=0)
        if self.derived_seed is not None:
            validate.integer(self.derived_seed, name=name("derived_seed"), low=0)
        if self.max_elements is not None:
            validate.integer(self.max_elements, name=name("max_elements"), low=1)
        if not isinstance(self.fit_shapes, bool):
            raise InvalidArgument(f"{name('fit_shapes')}={self.fit_shapes!r}; expected True or False.")
        validate.seconds(self.call_timeout, name=name("call_timeout"))
        validate.seconds(self.compile_timeout, name=name("compile_timeout"))
        validate.seconds(self.timeout, name=name("timeout"), optional=True)
        validate.seconds(self.time_limit, name=name("time_limit"), optional=True)
        validate.seconds(self.shrink_seconds, name=name("shrink_seconds"), optional=True, zero=True)
        if self.private_seed is not None and not str(self.private_seed):
            raise InvalidArgument(f"{name('private_seed')}=''; give a non-empty secret, or leave the option out.")
        if self.parts is not None:
            validate.integer(self.parts, name=name("parts"), low=1)
        if self.memory_limit is not None:
            validate.integer(self.memory_limit, name=name("memory_limit"), low=0)
        if self.profile is not None:
            validate.choice(self.profile, name=name("profile"), choices=PROFILES)
        validate.choice(self.bench_dtype, name=name("bench_dtype"), choices=BENCH_DTYPES)
        checks = None if self.checks is None else validate_checks(self.checks, name=name("checks"))
        if not isinstance(self.contract, Contract):
            raise InvalidArgument(f"contract={self.contract!r}; expected a Contract: build the options with "
                                  "GradeOptions.of(contract='finite', dtypes=..., ...).")
        if not isinstance(self.backward, bool):
            raise InvalidArgument(f"{name('backward')}={self.backward!r}; expected True or False.")
        if self.backward and self.contract.lse_base != "e":
            raise InvalidArgument(f"{name('backward')} judges the gradient of a natural-log LSE: drop it, or the "
                                  "LSE base 2.")
        if self.backward and not self.contract.call.is_default:
            raise InvalidArgument(f"{name('backward')} judges the gradient of the 2-D lse(x): drop the call "
                                  "convention's options (ndim, dim, keepdim, call_args, result) or it.")
        return replace(self, checks=checks, device=str(validate.device(self.device, name=name("device"))),
                       bench_shape=validate.shape(self.bench_shape, name=name("bench_shape")))

    @classmethod
    def from_args(cls, args: argparse.Namespace, **fixed: object) -> GradeOptions:
        """The validated options of a parsed command line: every option of :data:`fuzz.option_table.OPTIONS`
        the command took that is a field here (a call convention option not given keeps the default),
        then ``fixed`` (what the command decides itself: ``bench``, ``jobs``, ...). InvalidArgument
        naming the flag otherwise."""
        names = {f.name for f in fields(cls)} | set(CONTRACT_FIELDS) | set(CALL_FIELDS)
        values = option_table.given(args, names)
        if values.get("memory_limit") is not None:
            gib = validate.number(values["memory_limit"], name="--memory-limit", low=0)
            values["memory_limit"] = int(gib * (1 << 30))
        if values.get("private_seed") is not None:
            values["private_seed"] = _read_secret(values["private_seed"])
        return cls.of(cli=True, **{**values, **fixed}).validated(cli=True)

    @classmethod
    def of(cls, *, cli: bool = False, **fields: object) -> GradeOptions:
        """Options from flat fields: those of this class, and the declared contract's and call
        convention's by their option names (``contract``: the values policy, or a whole Contract;
        ``dtypes``, ``layouts``, ``output_dtype``, ``max_n``; ``ndim``, ``dim``, ``keepdim``,
        ``call_args``, ``result``). Not validated beyond the contract (:meth:`validated`)."""
        return cls().updated(cli=cli, **fields)

    def updated(self, *, cli: bool = False, **fields: object) -> GradeOptions:
        """These options with ``fields`` given, named as :meth:`of` takes them (None: a contract or
        call convention field left as it is). InvalidArgument naming the option (``--dtypes`` when
        ``cli``) for a contract that cannot be used."""
        name = option_table.cli_name if cli else str
        policy = fields.pop("contract", None)
        declared = {key: fields.pop(key) for key in CONTRACT_FIELDS[1:] if key in fields}
        call = {key: fields.pop(key) for key in CALL_FIELDS if key in fields}
        contract = policy if isinstance(policy, Contract) else self.contract
        if policy is not None and not isinstance(policy, Contract):
            contract = replace(contract, values=validate.choice(policy, name=name("contract"),
                                                                choices=("strict", "finite")))
        if declared.get("dtypes") is not None:
            declared["dtypes"] = parse_dtypes(declared["dtypes"], name=name("dtypes"))
        for key, choices in (("layouts", Layouts), ("output_dtype", OutputDtype)):
            if declared.get(key) is not None:
                validate.choice(declared[key], name=name(key), choices=[v.value for v in choices])
        if declared.get("max_n") is not None:
            validate.integer(declared["max_n"], name=name("max_n"), low=1)
        if declared.get("lse_base") is not None:
            declared["lse_base"] = parse_lse_base(declared["lse_base"], flag=name("lse_base"))
        contract = contract.with_options(**declared)
        given = {"args" if key == "call_args" else key: value for key, value in call.items() if value is not None}
        if given:
            now = contract.call
            contract = replace(contract, call=CallConvention(**{"ndim": now.ndim, "dim": now.dim,
                                                                "keepdim": now.keepdim, "args": now.args,
                                                                "result": now.result, **given}))
        return replace(self, contract=contract, **fields)

    def declared(self) -> Contract:
        """The declared contract, its call convention included."""
        return self.contract

    def convention(self) -> CallConvention:
        """How the candidate is called (the default: the 2-D lse(x))."""
        return self.contract.call

    def worker_target(self, target: str) -> str:
        """The TARGET an isolated worker loads: ``target`` with the call convention, if any (fuzz.target)."""
        call = self.convention()
        return target if call.is_default else str(parse_target(target)) + call.suffix()

    @property
    def effective_seed(self) -> int:
        """The seed the fuzzer uses: the public seed, or a hash of it with the private seed."""
        if self.derived_seed is not None:
            return self.derived_seed
        if self.private_seed is None:
            return self.seed
        digest = hashlib.sha256(f"lse-fuzz\0{self.seed}\0{self.private_seed}".encode()).digest()
        return int.from_bytes(digest[:8], "big")

    @property
    def seed_id(self) -> str:
        """A fingerprint of the effective seed: equal runs are recognisable, the seed stays secret."""
        return hashlib.sha256(f"lse-fuzz-seed\0{self.effective_seed}".encode()).hexdigest()[:12]

    def public(self) -> dict[str, object]:
        """The options as written to reports: the private seed only as a yes/no."""
        data = self._plain()
        derived = data.pop("derived_seed")
        data.pop("stop_dir")
        data.pop("share")
        # Only a phase that changes a verdict's named check is the verdict's: not a part's or a share's
        # (their run probes once), not a check's or a grading's (their reports and keys as before).
        if self.memory is not MemoryPhase.AFTER_PASS:
            data.pop("memory")
        if self.memory_checks is None:
            data.pop("memory_checks")
        data["private_seed"] = self.private_seed is not None or derived is not None
        contract = data.pop("contract")
        # The contract flat, by its options' names, as the reports always gave it.
        data.update(contract=contract["values"], dtypes=None if self.contract.dtypes == DTYPES else contract["dtypes"],
                    layouts=contract["layouts"], output_dtype=contract["output_dtype"], max_n=contract["max_n"])
        data["seed_id"] = self.seed_id
        data["declared_contract"] = self.contract.describe()
        call = self.contract.call
        if not call.is_default:  # a 2-D run's report and key name no call convention
            data.update(ndim=call.ndim, dim=call.dim, keepdim=call.keepdim, call_args=call.args.value,
                        result=call.result)
        if not self.backward:  # likewise a forward-only run's
            data.pop("backward")
        return data

    def _plain(self) -> dict[str, object]:
        """The fields as JSON values (the contract as its to_dict())."""
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["contract"] = self.contract.to_dict()
        data["checks"] = None if self.checks is None else list(self.checks)
        data["bench_shape"] = list(self.bench_shape)
        data["share"] = None if self.share is None else list(self.share)
        data["memory"] = self.memory.value
        data["memory_checks"] = None if self.memory_checks is None else list(self.memory_checks)
        return data

    def key(self) -> str:
        """Identifies the options that decide verdicts: records with another key are re-graded."""
        data = self.public()
        for name in ("threads", "jobs"):  # speed, not verdicts
            data.pop(name)
        data["tool"] = __version__
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]

    def to_wire(self) -> dict[str, object]:
        """The options as a driver receives them: the private seed replaced by the seed derived from it."""
        data = self._plain()
        if self.private_seed is not None:
            data.update(private_seed=None, derived_seed=self.effective_seed)
        return data

    @classmethod
    def from_wire(cls, data: dict) -> GradeOptions:
        data = dict(data)
        data["checks"] = None if data["checks"] is None else tuple(data["checks"])
        data["contract"] = Contract.from_dict(data["contract"])
        data["bench_shape"] = tuple(data["bench_shape"])
        data["share"] = None if data.get("share") is None else tuple(data["share"])
        data["memory"] = MemoryPhase(data.get("memory", MemoryPhase.BESIDE.value))
        data["memory_checks"] = None if data.get("memory_checks") is None else tuple(data["memory_checks"])
        return cls(**data)


def _read_secret(private_seed: str) -> str:
    """``--private-seed``'s secret: the value, ``env:NAME``'s variable (taken out of the environment)
    or ``file:PATH``'s first line; scrubbed from this process's command line where it shows."""
    if private_seed.startswith("env:"):
        name = private_seed[4:]
        if name not in os.environ:
            raise InvalidArgument(f"--private-seed=env:{name}, but the environment variable {name} is not set.")
        private_seed = os.environ.pop(name)
    elif private_seed.startswith("file:"):
        path = private_seed[5:]
        try:
            private_seed = Path(path).read_text().strip()
        except OSError as exc:
            raise InvalidArgument(f"--private-seed=file:{path}: cannot read it ({exc.strerror}).") from None
    if private_seed:
        scrub_from_proc(private_seed)  # again: a value main() was given, not this process's argv
    return private_seed


def torch_threads(options: GradeOptions) -> int:
    """Torch intra-op threads for each process of a run: a driver (or ``check``) and its worker: one.

    An example holds at most a few hundred thousand elements, and on a GPU the oracle and the calls
    run there: an intra-op pool saves nothing on such sizes and costs much when processes share
    the cores (a run's parts, checks started together, grading -j N). Measured: 10x slower calls
    on 2 cores with an OpenMP pool per process; on a 16-core GPU host, 16 threads in each of 28
    processes cost about 2 s of host time per example.
    """
    del options
    return 1


def use_torch_threads(options: GradeOptions) -> None:
    """Give this (driving) process its :func:`torch_threads`."""
    torch.set_num_threads(torch_threads(options))


def driver_environment(options: GradeOptions, environ: dict[str, str] | None = None) -> dict[str, str] | None:
    """The environment of the drivers that grade under ``options`` (``environ``, default this
    process's): on the CPU, with Triton's interpreter on.

    A driver runs ``reference.lse`` on the candidate's inputs: to time a slow call against it
    (:mod:`fuzz.timing`: the second deadline, the slow finding) and to fit the shapes
    (:mod:`.fit`). On a host with a GPU, Triton would compile that kernel for CUDA there, and a
    compiled kernel refuses CPU tensors: timing a call that was slow once raised, and a correct
    candidate's run ended as an internal error. The worker runs the candidate in the interpreter
    on the CPU whatever the host (fuzz.isolation.worker.process); the drivers then run the reference as
    the worker runs the candidate, and a CPU run grades alike on every host. A CPU-only host has
    the interpreter on already: the same environment, the same fork server. The GPU is hidden
    (``CUDA_VISIBLE_DEVICES=""``): drivers and their workers see the host as a CPU-only one does."""
    if not options.device.startswith("cpu"):
        return environ
    return dict(os.environ if environ is None else environ, TRITON_INTERPRET="1", CUDA_VISIBLE_DEVICES="")
