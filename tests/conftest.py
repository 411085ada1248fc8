"""Shared by every test directory: the planted implementations are importable, one torch thread each.

``tests/implementations`` holds everything the tests plant: ``doubles`` (small implementations,
correct ones and one broken per check), ``candidates`` (files for ``check`` and ``grade``),
``mutants`` (planted mutants with known statuses), ``correct`` (the false-alarm corpus) and
``tuned`` (autotuned kernels). It is put on ``sys.path`` so that ``import doubles`` and targets like
``candidates.torch_float64:lse`` resolve whatever pytest's import mode is.
"""

import os
import sys
from pathlib import Path

import pytest

IMPLEMENTATIONS = Path(__file__).parent / "implementations"
if str(IMPLEMENTATIONS) not in sys.path:
    sys.path.insert(0, str(IMPLEMENTATIONS))

# Under pytest-xdist every worker would start one torch thread per core: on a small machine the
# workers then fight over the cores and run several times slower than one thread each.
if os.environ.get("PYTEST_XDIST_WORKER"):
    import torch

    torch.set_num_threads(1)


# --------------------------------------------------------------------------------------------
# The integration tier. `pytest -n auto` is the fast tier (a few minutes on two cores): the units,
# in-process checks and a short fuzz of each kind. The modules below run the grader, the CLI, worker
# pools, the catalog's mutation runs, a Ray cluster, a built wheel or whole scripts end to end,
# each for tens of seconds; they carry the `integration` mark, which `pytest -n auto` deselects and
# `pytest -n auto -m integration` (the second step of .ci/run) selects. Listed here, in one place,
# so the split is visible and changes in one line; `tests/test_tiers.py` holds it to the files.
INTEGRATION = (
    "bench/test_bench_fuzzer.py",  # the fuzzer benchmark's runs
    "bench/test_harness_comparison.py",  # the comparison script run end to end, every baseline fuzzed
    "bench/test_memory_bounds_cost.py",  # the script timing a kernel with the memory checks on and off
    "bench/test_scripts.py",  # the bench scripts, each run as a user runs it
    "docs/test_code_samples.py",  # every code sample of the docs, CLI runs included
    "examples/real_world/test_fla_cross_entropy.py",  # the real libraries' kernels fuzzed in the interpreter
    "examples/real_world/test_fla_logsumexp.py",
    "examples/real_world/test_flash_attn_cross_entropy.py",
    "examples/real_world/test_liger_cross_entropy.py",
    "examples/real_world/test_merge_adapters.py",  # vLLM's, SGLang's and FlashInfer's merge kernels fuzzed
    "examples/real_world/test_te_cross_entropy.py",
    "fuzz/cli/test_backward.py",  # `check --backward` through the CLI and isolated workers
    "fuzz/cli/test_check.py",  # `lse-fuzz check` as a subprocess, every exit path
    "fuzz/cli/test_check_op.py",  # `lse-fuzz check --op merge_state`: its child process, every exit path
    "fuzz/cli/test_cli.py",
    "fuzz/cli/test_device_cpu_on_gpu_host.py",  # a simulated CUDA host, grade and mutants included
    "fuzz/grading/test_fit.py",  # the shape fit, by grading
    "fuzz/grading/test_grade.py",  # every planted candidate graded
    "fuzz/grading/test_grade_signals.py",  # signals to the grader, stops of its processes
    "fuzz/grading/test_hostile_suite.py",  # every hostile candidate in one batch
    "fuzz/grading/test_parts.py",
    "fuzz/grading/test_ray_executor.py",  # a local Ray cluster
    "fuzz/grading/test_slow_once.py",
    "fuzz/isolation/pool/test_pool.py",
    "fuzz/memory/test_phase.py",  # the memory phase end to end: a stand-in compute-sanitizer runs the probes, 4-20 s a test
    "fuzz/mutation/test_catalog_run.py",  # the catalog's mutation run, gate and cache
    "fuzz/mutation/test_run.py",  # `lse-fuzz mutate` end to end
    "fuzz/mutation/test_static_branches.py",  # mutants of constexpr branches, each fuzzed
    "fuzz/interpreter/test_autotune.py",  # autotuned kernels fuzzed, every configuration run
    "fuzz/mutation/test_mutate_contract.py",  # `lse-fuzz mutate` of an N-D kernel and of a backward kernel
    "fuzz/test_calls_run.py",  # the N-D corpus and bugs fuzzed, through the CLI too
    "fuzz/test_false_alarms.py",  # the false-alarm campaign's slice: every corpus member fuzzed
    "fuzz/test_plugin.py",  # pytest run in a subprocess with the plugin, per option
    "fuzz/test_suite.py",  # the shipped fuzz suite run against reference.lse and others
    "lse_fuzz/test_installed.py",  # a wheel built and installed in a fresh virtual environment
    "mutants/test_mutants_killed.py",  # every bundled mutant fuzzed until killed
)


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by mark
def pytest_collection_modifyitems(config, items):
    root = Path(__file__).parent
    for item in items:
        path = Path(str(item.path))
        listed = path.is_relative_to(root) and path.relative_to(root).as_posix() in INTEGRATION
        # A slow or GPU test stays in its own tier: `-m integration` selects what .ci/run runs.
        if listed and not any(item.get_closest_marker(name) for name in ("slow", "gpu")):
            item.add_marker(pytest.mark.integration)
    # The `gpu` mark's promise (pyproject.toml): skipped when no CUDA device is present, whatever -m selects.
    gpu_items = [item for item in items if item.get_closest_marker("gpu")]
    if gpu_items:
        import torch

        if not torch.cuda.is_available():
            for item in gpu_items:
                item.add_marker(pytest.mark.skip(reason="needs a CUDA device"))


FAST_TIER = "not slow and not gpu and not integration"
"""The mark expression of the fast tier (pyproject.toml's addopts)."""


def _in_fast_tier(config) -> bool:
    # Compared with its whitespace collapsed: `-m "not slow and  not gpu ..."` is the same tier.
    return " ".join(str(config.option.markexpr).split()) == FAST_TIER


def pytest_xdist_auto_num_workers(config):
    # `-n auto` in the fast tier: one worker more than the CPUs. A quarter of its tests' time is
    # waiting (deadlines run out, stopped processes are continued, subprocesses start): on the 2-core
    # machine, 144 s of 502 s of test time with two workers; three kept the CPUs busy (4 min 15-17 s
    # against 4 min 32-49 s). Other tiers, or PYTEST_XDIST_AUTO_NUM_WORKERS set: xdist's own count.
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS") or not _in_fast_tier(config):
        return None
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return cpus + 1


def pytest_ignore_collect(collection_path, config):
    # Under the fast tier's expression every item of a listed module is deselected (it is
    # integration, slow or gpu): not importing those modules spares each worker their imports
    # (flash-linear-attention's alone takes 3 s) and their assertion rewriting.
    if not _in_fast_tier(config):
        return None
    root = Path(__file__).parent
    path = Path(str(collection_path))
    if path.is_relative_to(root) and path.relative_to(root).as_posix() in INTEGRATION:
        return True
    return None
