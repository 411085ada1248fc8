"""Coverage of compiled kernels: a GPU runs no Python lines of a kernel, so a site there counts as
reached unless it lies in a static branch (``if WIDE:``, ``if not WIDE:``, their ``else``) that no
launch of the gate's run took, which the launches' constexpr values show (fuzz.mutation.judge)."""

from __future__ import annotations

import json
from pathlib import Path

from fuzz.mutation import discover, generate, mutation_options, run_mutation
from fuzz.mutation.judge import covered, no_coverage_cell

TINY = Path(__file__).parents[2] / "implementations" / "mutate" / "tiny_lse.py"
OPTIONS = dict(options=mutation_options(contract="finite", dtypes=("float32",), output_dtype="float32",
                                        max_elements=256, budget=5),
               thorough_budget=0, jobs=1, timeout_floor=60)


def _by_name(target: str):
    return {m.name: m for m in generate(discover(target))}


def test_sites_know_the_static_branch_they_lie_in():
    tiny = _by_name(str(TINY))
    assert tiny["reduction_swapped@tiny_lse.py:45:35"].guards == (("WIDE", True),)
    assert tiny["reduction_swapped@tiny_lse.py:47:35"].guards == (("WIDE", False),)  # the else branch
    assert tiny["mask_off_by_one@tiny_lse.py:43:68"].guards == ()  # `if row < M` is not static
    assert tiny["cdiv_floored@tiny_lse.py:56:13"].guards == ()  # the launcher
    reference = _by_name("reference:lse")
    assert reference["mask_off_by_one@_lse_kernel.py:72:38"].guards == (("MASKED", True),)  # in a helper
    assert reference["mask_off_by_one@_lse_kernel.py:146:71"].guards == (("PARTIALS", False),)


def test_the_gates_launches_decide_coverage_of_a_compiled_kernel(tmp_path):
    cache = tmp_path / "verdicts"
    run_mutation(str(TINY), mutants=["mask_off_by_one@tiny_lse.py:43:68"], cache=cache, **OPTIONS)
    (gate,) = [v for v in map(json.loads, (f.read_text() for f in cache.rglob("*.json"))) if "launches" in v]
    launches = gate["launches"]
    assert {run["WIDE"] for run in launches["_tiny_kernel"]} == {False}  # small inputs only
    tiny = _by_name(str(TINY))
    wide, narrow = tiny["reduction_swapped@tiny_lse.py:45:35"], tiny["reduction_swapped@tiny_lse.py:47:35"]
    kernel = discover(str(TINY))
    assert not covered(wide, kernel.paths, {}, "cuda", launches)
    assert covered(narrow, kernel.paths, {}, "cuda", launches)
    assert covered(tiny["mask_off_by_one@tiny_lse.py:43:68"], kernel.paths, {}, "cuda", launches)
    assert covered(wide, kernel.paths, {}, "cuda", {})  # nothing recorded: unknown, so it runs
    assert "no launch of _tiny_kernel in the unmutated kernel's gate run had WIDE=True" in \
        no_coverage_cell(wide, "cuda").reason


def test_line_coverage_kept_from_the_same_kernel_at_another_place_counts():
    # A gate kept in the verdict cache may have run a clone of the kernel at another path (CI's
    # fresh clone): its lines still say what ran. Before, every newly judged mutant of such a run
    # was NoCoverage.
    kernel = discover("reference:lse")
    mutant = _by_name("reference:lse")["mask_off_by_one@_lse_kernel.py:72:38"]
    first, last = mutant.statement
    elsewhere = {"/elsewhere/clone/reference/_lse_kernel.py": set(range(first, last + 1))}
    assert covered(mutant, kernel.paths, elsewhere, "cpu")
    assert not covered(mutant, kernel.paths, {"/elsewhere/clone/reference/_lse_combine.py": {first}}, "cpu")
