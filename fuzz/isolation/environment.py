"""What a child of the fork server sees: a scrubbed environment, an import path, resource limits
(and, once a worker ran into one, the limit named with its value: :func:`breached`)."""

from __future__ import annotations

import ctypes
import os
import resource
import sys
from pathlib import Path

from ..outcomes import Limit, Outcome, describe_limit

FILE_SIZE_LIMIT = 256 << 20
"""RLIMIT_FSIZE of a worker: a candidate printing in a loop cannot fill the disk."""

RUN_ENV = "LSE_FUZZ_RUN"
"""A grading run's token, in every process of the run: what they leave behind is found by it."""

_ENV_KEEP = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "TZ", "LD_LIBRARY_PATH", "CC", "CXX",
             "OMP_NUM_THREADS", "MKL_NUM_THREADS", "LSE_FUZZ_VARIANTS", RUN_ENV)
_ENV_KEEP_PREFIXES = ("TRITON_", "CUDA_", "NVIDIA_", "LC_", "ROCR_", "HIP_")


def project_root() -> str:
    """The directory holding the ``fuzz`` and ``reference`` packages."""
    return str(Path(__file__).resolve().parents[2])


def worker_environment(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The scrubbed environment of a worker: what running Python, torch, triton and CUDA needs.

    Kept: PATH, HOME, USER, locale, LD_LIBRARY_PATH, CC/CXX (Triton builds a launcher stub on
    GPUs), thread counts, LSE_FUZZ_VARIANTS (:mod:`fuzz.interpreter.specialization`), and every TRITON_*,
    CUDA_*, NVIDIA_* variable. Dropped: everything
    else (tokens, proxies, cloud credentials, CI variables). PYTHONPATH is rebuilt so the
    project and the caller's import path resolve; PYTHONHASHSEED is fixed.
    """
    environ = dict(os.environ if environ is None else environ)
    env = {k: v for k, v in environ.items() if k in _ENV_KEEP or k.startswith(_ENV_KEEP_PREFIXES)}
    env.setdefault("PATH", os.defpath)
    env["PYTHONHASHSEED"] = "0"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PYTHONPATH"] = os.pathsep.join(worker_sys_path(environ))
    return env


def worker_sys_path(environ: dict[str, str] | None = None) -> list[str]:
    """Import path entries a worker adds: the project, then this process's own entries.

    Module targets (``pkg.module:func``) then resolve in the worker as they would here.
    """
    environ = os.environ if environ is None else environ
    entries = [project_root()]
    entries += [p for p in environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    entries += [os.getcwd() if p in ("", ".") else p for p in sys.path]
    seen, result = set(), []
    for entry in entries:
        entry = os.path.abspath(entry)
        if entry not in seen and os.path.exists(entry):
            seen.add(entry)
            result.append(entry)
    return result


INPUT_RESERVE = 18 << 30
"""Address space a worker holds for its input besides the candidate's own memory: a huge-offset
input is a lazily allocated storage of about 2**32 elements of at most 4 bytes (16 GiB, almost all
of it never touched), and RLIMIT_AS counts address space, touched or not."""


MEMORY_CAP = 16 << 30
MEMORY_FLOOR = 4 << 30


def default_memory_limit(device: str, *, jobs: int = 1, total: int | None = None) -> int | None:
    """Memory (bytes) a CPU worker's candidate may use: half the machine's memory (``total``, read
    from the system when None) shared among ``jobs`` workers, at most :data:`MEMORY_CAP` and at
    least :data:`MEMORY_FLOOR`. Half, so that candidates together cannot take the memory the
    grader and the system need; capped, as a correct candidate on the CPU's inputs (at most 65536
    elements, plus the views of lazily allocated storage that only the reserve below counts) needs
    a few GiB at most. None on a GPU: CUDA reserves large address ranges and breaks under
    RLIMIT_AS. The worker's address-space limit is this plus :data:`INPUT_RESERVE`."""
    if not device.startswith("cpu"):
        return None
    if total is None:
        try:
            total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError):
            total = 16 << 30
    return max(MEMORY_FLOOR, min(MEMORY_CAP, total // (2 * max(1, jobs))))


def breached(outcome: Outcome, *, memory_limit: int | None, printed: int) -> str:
    """The resource limit of a worker that ``outcome`` is the breach of, with its value and how it
    was met ('the worker exceeded the output-file-size limit of 256 MiB (...)'); "" when it is none
    of them (or, out of memory, when the worker has no address-space limit: a GPU's). The worker had
    ``memory_limit`` bytes for the candidate and ``printed`` as many bytes to its larger stream."""
    limit = outcome.limit
    if limit is Limit.FILE_SIZE:
        return describe_limit(limit, FILE_SIZE_LIMIT, how="it printed past it: its stdout and stderr are captured "
                              "to files" if printed >= FILE_SIZE_LIMIT else "it wrote a file past it")
    if limit is Limit.ADDRESS_SPACE and memory_limit:
        return describe_limit(limit, memory_limit + INPUT_RESERVE, how=(
            f"the candidate's memory limit of {memory_limit / (1 << 30):.3g} GiB, --memory-limit, and "
            f"{INPUT_RESERVE >> 30} GiB kept for its inputs, above what the worker mapped at its start"))
    if limit is Limit.CPU_TIME:
        inherited, _ = resource.getrlimit(resource.RLIMIT_CPU)  # the workers have the grader's own
        if inherited != resource.RLIM_INFINITY:
            return describe_limit(limit, inherited, how="inherited from the process that started the grader: "
                                  "ulimit -t; killed by SIGXCPU")
        return describe_limit(limit, None, how="one the candidate set itself: the grader sets none; killed by SIGXCPU")
    return ""


def fork_server_environment(env: dict[str, str]) -> dict[str, str]:
    """A pool's workers' environment ``env`` without the run's token: one fork server serves every
    run of a process (the token goes to each run's drivers and workers, not into the server)."""
    return {k: v for k, v in env.items() if k != RUN_ENV}


def expected_worker_environment() -> dict[str, str]:
    """The environment a pool's fork server will get (:func:`worker_environment`, without the run's
    token), known before torch is imported: importing the project's kernels turns on Triton's
    interpreter where torch sees no CUDA device (``reference._device.ensure_interpreter``), which
    this foresees from the CUDA driver alone. A wrong guess costs only the time of an early start."""
    env = fork_server_environment(worker_environment())
    if "TRITON_INTERPRET" not in os.environ and not _cuda_device_present():
        env["TRITON_INTERPRET"] = "1"
    if env.get("TRITON_INTERPRET") == "1":
        env["CUDA_VISIBLE_DEVICES"] = ""  # a CPU run's drivers and workers see no GPU (grading.options)
    return env


def _cuda_device_present() -> bool:
    """Whether the CUDA driver sees a device (what torch.cuda.is_available() asks it), in milliseconds."""
    try:
        driver = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    count = ctypes.c_int(0)
    return driver.cuInit(0) == 0 and driver.cuDeviceGetCount(ctypes.byref(count)) == 0 and count.value > 0
