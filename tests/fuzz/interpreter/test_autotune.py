"""fuzz.interpreter.autotune: autotuned kernels run in the interpreter, every config is reachable by a choice,
the one buggy config is the one that fails, and pins never outlive their block.

The kernels are in tests/implementations/tuned/; each writes the BLOCK_N it was compiled with into
a side channel (``_rows.launched_block_n()``), so "which config ran" is read from the kernel, not
from the autotuner. On a CUDA machine the same tests compile each pinned config.
"""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest
import torch

import lse_fuzz
import reference
from fuzz.interpreter import autotune, bounds
from fuzz.interpreter.autotune import combinations, config_text, describe, discover, pinned
from reference._device import interpreting

_IMPLEMENTATIONS = Path(__file__).resolve().parents[2] / "implementations"
if str(_IMPLEMENTATIONS) not in sys.path:
    sys.path.insert(0, str(_IMPLEMENTATIONS))

from tuned import (  # noqa: E402
    _rows,
    autotune_over_heuristics,
    autotuned,
    heuristics_over_autotune,
    pruned,
    restored,
    tail_bug_32,
)

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)  # warmup/rep: deprecated by Triton, on purpose
    from tuned import hooks  # noqa: E402

DEVICE = "cpu" if interpreting() else "cuda"
_ROOT = Path(__file__).resolve().parents[3]

# Every kernel that is correct for all of its configs, by how it is decorated.
CORRECT = {
    "autotune": autotuned,
    "heuristics_over_autotune": heuristics_over_autotune,
    "autotune_over_heuristics": autotune_over_heuristics,
    "hooks": hooks,
    "restore_value": restored,
}


def _inputs() -> list[torch.Tensor]:
    """A tail in every tile width (N = 200), no tail in any (N = 256), a strided view, float16."""
    gen = torch.Generator().manual_seed(0)
    padded = torch.randn(4, 300, generator=gen)[:, :201]
    return [
        torch.randn(3, 200, generator=gen).to(DEVICE),
        (torch.randn(2, 256, generator=gen) * 30).to(DEVICE),
        padded.to(DEVICE),
        torch.randn(5, 64, generator=gen).t().to(DEVICE),  # column stride 5: no unit-stride path
        torch.randn(2, 97, generator=gen).to(torch.float16).to(DEVICE),
    ]


def _assert_agrees(x: torch.Tensor, out: torch.Tensor, what: str) -> None:
    comparison = reference.compare(x, out)
    assert comparison.ok, (f"{what}: {comparison.mismatches} rows outside the tolerance, first row "
                           f"{comparison.first_mismatch()}: expected {comparison.expected.tolist()}, "
                           f"got {comparison.got.tolist()}")


def _block_n(launch_line: str) -> int:
    return int(launch_line.split("BLOCK_N=")[1].split(",")[0])


# ---------------------------------------------------------------------------------------------
# The interpreter: broken without this module, working with it


@pytest.mark.skipif(not interpreting(), reason="on a GPU the autotuner has a timer and runs as is")
def test_autotuned_kernel_raises_in_the_interpreter_until_installed():
    # A fresh process: this one has install() in effect already.
    script = textwrap.dedent("""
        import json, sys, torch
        sys.path.insert(0, sys.argv[1])
        from tuned import autotuned, _rows
        x = torch.randn(2, 40)
        try:
            autotuned.lse(x)
            before = "ran"
        except RuntimeError as exc:
            before = str(exc)
        from fuzz.interpreter import autotune
        autotune.install()
        out = autotuned.lse(x)
        print(json.dumps({"before": before, "after": _rows.launched_block_n(),
                          "error": (out - torch.logsumexp(x, 1)).abs().max().item()}))
    """)
    done = subprocess.run([sys.executable, "-c", script, str(_IMPLEMENTATIONS)], capture_output=True, text=True,
                          timeout=120, check=False, cwd=_ROOT, env={**os.environ, "PYTHONPATH": str(_ROOT)})
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert "0 active drivers" in result["before"]
    assert result["after"] == 32  # the first config, not a benchmark
    assert result["error"] < 1e-5


def test_install_is_idempotent():
    autotune.install()
    first = autotune.Autotuner.__dict__["run"]
    autotune.install()
    assert autotune.installed() and autotune.Autotuner.__dict__["run"] is first
    x = torch.randn(2, 40, device=DEVICE)
    _assert_agrees(x, autotuned.lse(x), "after installing twice")  # no dispatch loop, no double wrap


@pytest.mark.skipif(not interpreting(), reason="on a GPU nothing pinned means the autotuner tunes")
def test_nothing_pinned_runs_the_first_config_left_after_pruning_in_the_interpreter():
    autotune.install()
    x = torch.randn(2, 1000, device=DEVICE)
    with pinned(discover(pruned.lse), None) as pinning:
        _assert_agrees(x, pruned.lse(x), "unpinned")
    # The pruner keeps 256 and 128 for N = 1000, fewest tiles first: 32, the first config, is gone.
    assert _rows.launched_block_n() == 256
    assert pinning.lines() == ["_lse_kernel: BLOCK_N=256, BLOCK_M=16, num_warps=4, num_stages=3 "
                               "(first, config 1 of 2)"]
    assert list(discover(pruned.lse)[0].cache) == []  # nothing was "tuned" into Triton's cache


@pytest.mark.gpu
def test_nothing_pinned_on_a_gpu_lets_the_autotuner_tune_and_records_its_pick():
    if interpreting():
        pytest.skip("needs compiled kernels: a CUDA device and TRITON_INTERPRET unset")
    (tuner,) = tuners = discover(autotuned.lse)
    x = torch.randn(8, 1000, device=DEVICE)
    with pinned(tuners, None) as pinning:
        _assert_agrees(x, autotuned.lse(x), "tuned")
    assert [launch.how for launch in pinning.launches] == [autotune.How.TUNED]
    assert _block_n(pinning.lines()[0]) == _rows.launched_block_n() == tuner.best_config.kwargs["BLOCK_N"]
    assert any(key[0] == 1000 for key in tuner.cache)  # tuned and cached by Triton, as without this module


# ---------------------------------------------------------------------------------------------
# Pinning reaches every config


@pytest.mark.parametrize("module", CORRECT.values(), ids=CORRECT.keys())
def test_choices_run_every_config_and_each_is_correct(module):
    tuners = discover(module.lse)
    assert len(tuners) == 1 and combinations(tuners) == len(_rows.TILE_WIDTHS)
    for x in _inputs():
        launched = []
        for choice in range(combinations(tuners)):
            with pinned(tuners, choice) as pinning:
                out = module.lse(x)
            block_n = _rows.launched_block_n()  # what the compiled kernel says it is
            config = config_text(tuners[0].configs[choice])
            assert pinning.lines() == [f"_lse_kernel: {config} (pinned, config {choice + 1} of 4)"]
            assert _block_n(pinning.lines()[0]) == block_n
            _assert_agrees(x, out, f"{module.__name__} BLOCK_N={block_n} on {tuple(x.shape)}")
            launched.append(block_n)
        assert launched == list(_rows.TILE_WIDTHS)


def test_config_hooks_run_with_the_pinned_config_and_benchmark_hooks_do_not():
    tuners = discover(hooks.lse)
    x = torch.randn(2, 70, device=DEVICE)
    hooks.CALLS.clear()
    for choice in range(4):
        with pinned(tuners, choice):
            hooks.lse(x)
    # The autotuner-level pre/post hooks wrap benchmark runs only; a pinned launch is not one.
    assert hooks.CALLS == [("config", width) for width in _rows.TILE_WIDTHS]


def test_pruned_configs_are_never_pinned():
    tuners = discover(pruned.lse)
    for columns, survivors in ((40, {32, 64}), (1000, {128, 256})):
        x = torch.randn(2, columns, device=DEVICE)
        launched = set()
        for choice in range(combinations(tuners)):  # 4 choices over the 2 survivors: each twice
            with pinned(tuners, choice) as pinning:
                _assert_agrees(x, pruned.lse(x), f"pruned, N={columns}, choice {choice}")
            launched.add(_rows.launched_block_n())
            assert pinning.launches[0].candidates == 2
        assert launched == survivors


def test_a_pruner_that_keeps_nothing_is_named_in_the_error(monkeypatch):
    (tuner,) = discover(pruned.lse)
    monkeypatch.setattr(tuner, "early_config_prune", lambda configs, nargs, **kwargs: [])
    x = torch.randn(1, 40, device=DEVICE)
    with (
        pytest.raises(Exception, match="No valid autotuner configs|no config left") as raised,
        pinned((tuner,), 0),
    ):
        pruned.lse(x)
    assert type(raised.value).__name__ == "AutotunerError"


def test_two_tuners_do_not_move_in_lockstep():
    tuners = discover(functools.partial(_two_kernels, autotuned.lse, heuristics_over_autotune.lse))
    assert [t.base_fn.__module__ for t in tuners] == ["tuned.autotuned", "tuned.heuristics_over_autotune"]
    x = torch.randn(1, 40, device=DEVICE)
    pairs = []
    for choice in range(combinations(tuners)):
        with pinned(tuners, choice) as pinning:
            _two_kernels(autotuned.lse, heuristics_over_autotune.lse, x)
        pairs.append(tuple(_block_n(line) for line in pinning.lines()))
    # Two kernels of one name: the lines name their modules.
    assert pinning.lines()[0].startswith("tuned.autotuned._lse_kernel: BLOCK_N=256")
    # Mixed radix: the first tuner cycles fastest, and all 16 pairs run once.
    assert pairs[:5] == [(32, 32), (64, 32), (128, 32), (256, 32), (32, 64)]
    assert len(set(pairs)) == 16


def _two_kernels(first, second, x):
    return first(x), second(x)


# ---------------------------------------------------------------------------------------------
# A bug in one config


def test_only_the_buggy_config_gives_a_wrong_answer():
    # Zeros in the first 33 columns, 100.0 just past them: the BLOCK_N = 32 tail reads it.
    storage = torch.full((2, 40), 100.0)
    storage[:, :33] = 0.0
    x = storage.to(DEVICE)[:, :33]
    tuners = discover(tail_bug_32.lse)
    wrong = {}
    for choice in range(combinations(tuners)):
        # The values the GPU computes: the extra lane is read, not stopped (fuzz.interpreter.bounds,
        # installed in this process by another test module, would stop it as memory_bounds).
        with pinned(tuners, choice), bounds.judging(False):
            out = tail_bug_32.lse(x)
        block_n = _rows.launched_block_n()
        wrong[block_n] = not reference.compare(x, out).ok
        if block_n == 32:
            # The padding's 100 dominates: 100 + log(1 + 33 e^-100), not log 33 = 3.4965.
            assert out.cpu().tolist() == pytest.approx([100.0, 100.0])
    assert wrong == {32: True, 64: False, 128: False, 256: False}


# ---------------------------------------------------------------------------------------------
# Pins do not outlive their block


def test_nested_blocks_restore_the_outer_pin_and_the_original_cache():
    (tuner,) = tuners = discover(autotuned.lse)
    cache, tuned = tuner.cache, dict(tuner.cache)  # empty, unless a GPU test let Triton tune
    x = torch.randn(1, 40, device=DEVICE)
    with pinned(tuners, 1):
        with pinned(tuners, 2):
            autotuned.lse(x)
            assert _rows.launched_block_n() == 128
        autotuned.lse(x)
        assert _rows.launched_block_n() == 64
    assert tuner.cache is cache and cache == tuned


class _LaunchFailed(Exception):
    pass


def _fail(nargs):
    raise _LaunchFailed(f"BLOCK_N={nargs['BLOCK_N']}")


def test_pin_is_lifted_when_the_launch_raises(monkeypatch):
    (tuner,) = tuners = discover(autotuned.lse)
    cache = tuner.cache
    # A config pre_hook runs inside Triton's run(), after the pinned config took the cache's place.
    monkeypatch.setattr(tuner.configs[3], "pre_hook", _fail)
    x = torch.randn(1, 40, device=DEVICE)
    with pytest.raises(_LaunchFailed, match="BLOCK_N=256"), pinned(tuners, 3) as pinning:
        autotuned.lse(x)
    assert pinning.lines() == [f"_lse_kernel: {config_text(tuner.configs[3])} (pinned, config 4 of 4)"]
    assert tuner.cache is cache
    with pinned(tuners, 1):
        autotuned.lse(x)
    assert _rows.launched_block_n() == 64  # the 256 pin is gone
    assert len(pinning.launches) == 1  # and the old record took no new launches


@pytest.mark.parametrize("tuners, choice, message", [
    ((autotuned.lse,), 0, "tuners[0]=<function lse"),
    ((), -1, "choice=-1"),
    ((), True, "choice=True"),
    ((), 1.5, "choice=1.5"),
], ids=["not_a_tuner", "negative", "bool", "float"])
def test_bad_arguments_are_named(tuners, choice, message):
    with pytest.raises((TypeError, ValueError), match=re.escape(message)), pinned(tuners, choice):
        pass


# ---------------------------------------------------------------------------------------------
# Discovery


def _namespace_function(source: str, **names):
    """``impl`` from ``source``, with globals of exactly ``names`` and no module: discover() then
    sees only what impl reaches, not a whole test module's globals."""
    namespace = {"__name__": "user_code_not_in_sys_modules", **names}
    exec(source, namespace)  # noqa: S102  (test-local source)
    return namespace["impl"]


def test_discover_unwraps_heuristics_in_either_order():
    for module in (heuristics_over_autotune, autotune_over_heuristics):
        (tuner,) = discover(module.lse)
        assert tuner.base_fn.__module__ == module.__name__ and tuner.base_fn.__name__ == "_lse_kernel"


def test_discover_follows_module_attributes_closures_partials_and_objects():
    via_attribute = _namespace_function("def impl(x):\n    return launch(kernels._lse_kernel, x)\n",
                                        kernels=pruned, launch=_rows.launch)
    assert discover(via_attribute) == (pruned._lse_kernel,)

    closure = _namespace_function("def make(kernel):\n    return lambda x: launch(kernel, x)\n"
                                  "impl = make(kernel)\ndel kernel\n", launch=_rows.launch,
                                  kernel=restored._lse_kernel)
    assert discover(closure) == (restored._lse_kernel,)
    assert discover(functools.partial(_rows.launch, hooks._lse_kernel)) == (hooks._lse_kernel,)
    launcher = _namespace_function(
        "class Launcher:\n"
        "    def __init__(self, kernel):\n        self.kernel = kernel\n"
        "    def __call__(self, x):\n        return launch(self.kernel, x)\n"
        "impl = Launcher(kernel)\ndel kernel\n", launch=_rows.launch, kernel=autotuned._lse_kernel)
    assert discover(launcher) == (autotuned._lse_kernel,)
    nothing = _namespace_function("def impl(x):\n    return x.logsumexp(1)\n")
    assert discover(nothing) == ()


def test_discover_order_is_by_name_whatever_the_reference_order():
    source = "def impl(x):\n    return first(x), second(x)\n"
    one = _namespace_function(source, first=pruned.lse, second=autotuned.lse)
    other = _namespace_function(source, first=autotuned.lse, second=pruned.lse)
    # Both are named _lse_kernel: their modules break the tie. The plain @triton.jit row_lse
    # reached through _rows is no tuner and is not listed.
    assert discover(one) == discover(other) == (autotuned._lse_kernel, pruned._lse_kernel)


def test_describe_counts_configs_and_names_the_pruning():
    lines = describe(discover(pruned.lse) + discover(autotuned.lse))
    assert lines[0].startswith("_lse_kernel: 4 configs, key=['N'], pruned by early_config_prune and "
                               "perf_model top_k=2: BLOCK_N=32, BLOCK_M=64, num_warps=1, num_stages=3 | "
                               "BLOCK_N=64, BLOCK_M=32,")
    assert lines[1].startswith("_lse_kernel: 4 configs, key=['N']: BLOCK_N=32")


# ---------------------------------------------------------------------------------------------
# Under the fuzzer, and lightness


# None: config 0 in the interpreter, the autotuner's pick on a GPU. 2-4 s each on the CPU.
@pytest.mark.parametrize("choice", [None, 0, 1, 2, 3])
def test_the_fuzzer_passes_every_pinned_config_of_a_correct_kernel(choice, tmp_path):
    tuners = discover(heuristics_over_autotune.lse)

    def impl(x):
        # The in-process integration in miniature: one choice for every call of an example.
        with pinned(tuners, choice):
            return heuristics_over_autotune.lse(x)

    # Small inputs: the interpreter's cost is per program, and a BLOCK_M of 16 makes many.
    result = lse_fuzz.check(impl, budget=25, seed=choice or 0, reproducer_dir=tmp_path, max_elements=2048)
    assert result.passed, result.summary()


def test_the_module_imports_nothing_from_reference_or_the_rest_of_fuzz():
    script = ("import sys, fuzz.interpreter.autotune; "
              "print(sorted(m for m in sys.modules if m.partition('.')[0] in ('fuzz', 'reference')))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          check=False, cwd=_ROOT, env={**os.environ, "PYTHONPATH": str(_ROOT)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["['fuzz',", "'fuzz.interpreter',", "'fuzz.interpreter.autotune']"]


# ---------------------------------------------------------------------------------------------
# Wired into the runner and the isolated worker: one configuration drawn per example




def test_the_runner_draws_a_config_per_example_and_the_report_names_the_one_that_failed(tmp_path):
    from tuned import autotuned, tail_bug_32

    correct = lse_fuzz.check(autotuned.lse, budget=40, seed=0, reproducer_dir=tmp_path, max_elements=2048)
    assert correct.passed, correct.summary()
    assert correct.tuning and "4 configs" in correct.tuning[0]
    buggy = lse_fuzz.check(tail_bug_32.lse, budget=200, seed=0, reproducer_dir=tmp_path, max_elements=2048)
    assert buggy.status is lse_fuzz.Status.FAILED, buggy.summary()
    assert "config:   _lse_kernel: BLOCK_N=32" in buggy.failure.message()
    assert buggy.plan.config is not None  # the reproducer pins the same config
    assert lse_fuzz.replay(buggy.reproducer, tail_bug_32.lse).status is lse_fuzz.Status.FAILED


def test_an_isolated_autotuned_kernel_is_pinned_in_its_worker(tmp_path):
    from fuzz.isolation import IsolatedImpl

    with IsolatedImpl("tuned.tail_bug_32:lse") as impl:  # tests/implementations is on the import path
        combinations, description = impl.tuning()
        assert combinations == 4 and "BLOCK_N=32" in description[0]
        result = lse_fuzz.check(impl, budget=200, seed=0, reproducer_dir=tmp_path, max_elements=2048)
    assert result.status is lse_fuzz.Status.FAILED, result.summary()
    assert "config:   _lse_kernel: BLOCK_N=32" in result.failure.message()
