"""The merge kernel's mutants (``mutants.MERGE_NAMES``): each file is data in the catalog's format,
its patch is one small anchored edit of reference/_merge_state_kernel.py that loads as
``mutants.patched:<name>``, its minimal input fails its expected merge check and passes every check
without the bug, and merge inputs drawn by Hypothesis find it by that check within the budget (the
counterexample passing every check on the unmutated kernel: it is the patch that was caught)."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, Phase, given, settings

import mutants
import mutants.patched
import reference
from fuzz.merge import MERGE_CHECKS, MergeFailure, MergeInput, merge_inputs, run_merge_checks
from fuzz.mutation import catalog
from fuzz.mutation.bundled import kernel_device
from fuzz.mutation.patch import Patch, apply, diff, load, reference_sources

MERGE_KERNEL = "reference/_merge_state_kernel.py"
MUTANT_DIR = Path(mutants.__file__).parent
SECTIONS = ("Patch:", "Pitfall:", "Documented:", "Killed by:", "Minimal input:")
DATA = ["EXPECTED_CHECK", "FUNCTION", "OP", "PATH", "ANCHOR", "REPLACEMENT"]
# A source a reader can look up: an issue or pull request (owner/repo#number) or a dated paper.
SOURCE = re.compile(r"\b[\w.-]+/[\w.-]+#\d+\b|\b[A-Z][a-z]+[^()]{0,60} \((?:19|20)\d\d\)")

BUDGET = 80  # drawn examples per mutant (the slowest to die took 26 over 30 seeds); small shapes: the interpreter
SEARCH = settings(max_examples=BUDGET, deadline=None, database=None, derandomize=True,
                  phases=[Phase.generate, Phase.shrink], report_multiple_bugs=False, suppress_health_check=list(HealthCheck))


def _data(name: str):
    return importlib.import_module(f"mutants.{name}")


def _layout(s: torch.Tensor) -> str:
    if s.is_contiguous():
        return "contiguous"
    return "transposed" if s.stride() == (1, s.shape[0]) else "strided"


def _example(tensors) -> MergeInput:
    """A mutant's minimal input, the call's four tensors, as the merge checks see it."""
    v_a, s_a, v_b, s_b = tensors
    return MergeInput(v_a, s_a, v_b, s_b, kinds=("given",) * s_a.numel(), layout=_layout(s_a))


def test_the_five_pitfalls_are_registered_apart_from_the_row_lse_catalog():
    assert mutants.MERGE_NAMES == ("merge_no_empty_guard", "merge_finite_sentinel", "merge_exp2_on_natural_logs",
                                   "merge_weights_not_renormalized", "merge_lse_stride_ignored")
    assert "MERGE_NAMES" in mutants.__all__ and set(mutants.MERGE_NAMES) <= set(dir(mutants.patched))
    assert set(mutants.MERGE_NAMES).isdisjoint(catalog())  # the engine mutates and judges row-LSE kernels


@pytest.mark.parametrize("name", mutants.MERGE_NAMES)
def test_each_file_is_only_data_and_a_minimal_input(name):
    tree = ast.parse((MUTANT_DIR / f"{name}.py").read_text())
    body = tree.body[1:] if ast.get_docstring(tree) else tree.body
    imports = [node for node in body if isinstance(node, (ast.Import, ast.ImportFrom))]
    modules = {alias.name for node in imports if isinstance(node, ast.Import) for alias in node.names}
    modules |= {node.module for node in imports if isinstance(node, ast.ImportFrom)}
    assert modules <= {"__future__", "torch"}, f"{name}: data imports no kernel, no launcher and no engine"
    *data, function = [node for node in body if node not in imports]
    assert [ast.unparse(node.targets[0]) for node in data if isinstance(node, ast.Assign)] == DATA
    assert len(data) == len(DATA) and all(isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
                                          for node in data), f"{name}: the data is literal text"
    assert isinstance(function, ast.FunctionDef) and function.name == "minimal_input"
    assert [a.arg for a in function.args.args] == ["device"]
    module = _data(name)
    assert module.EXPECTED_CHECK in MERGE_CHECKS and module.PATH == MERGE_KERNEL
    assert module.FUNCTION == module.OP == "merge_state"


@pytest.mark.parametrize("name", mutants.MERGE_NAMES)
def test_the_docstring_documents_the_pitfall_the_patch_and_the_expected_check(name):
    data = _data(name)
    doc = data.__doc__
    assert doc.startswith("Mutant: ") and doc.splitlines()[0].endswith(".")
    positions = [doc.find(f"\n{section}") for section in SECTIONS]
    assert all(p >= 0 for p in positions) and positions == sorted(positions), f"{name}: sections {SECTIONS}"
    section = dict(zip(SECTIONS, (doc[p:q] for p, q in zip(positions, [*positions[1:], len(doc)]))))
    assert data.PATH in section["Patch:"]
    assert f"``{data.EXPECTED_CHECK}``" in section["Killed by:"]
    assert SOURCE.search(" ".join(section["Documented:"].split())), f"{name}: cite an issue or a paper"


@pytest.mark.parametrize(("text", "cites"), [
    ("vllm-project/vllm#39148", True), ('Dao, Haziza, Massa and Sizov (2023), "Flash-Decoding"', True),
    ("vLLM PR 39148", False), ("the flash-decoding combine", False), ("(2023)", False),
])
def test_the_source_pattern_tells_a_source_from_a_vague_pointer(text, cites):
    assert bool(SOURCE.search(text)) is cites


@pytest.mark.parametrize("name", mutants.MERGE_NAMES)
def test_the_patch_is_one_small_edit_of_the_merge_kernel_and_loads(name):
    data = _data(name)
    patch = Patch(data.PATH, data.ANCHOR, data.REPLACEMENT)
    original = reference_sources()
    texts = apply(patch, name=name, sources=original)  # the anchor occurs exactly once, or PatchError
    assert [path for path in original if texts[path] != original[path]] == [MERGE_KERNEL]
    changed = [line for line in diff(patch, sources=original).splitlines()[2:] if line[:1] in "+-"]
    assert 2 <= len(changed) <= 4, f"{name}: one small edit (a line or two), got\n" + "\n".join(changed)
    merge = getattr(mutants.patched, name)
    assert callable(merge) and merge is not reference.merge_state
    assert merge.__name__ == "merge_state" and merge.__module__.endswith("._merge_state_kernel")
    assert merge.__module__ != reference.merge_state.__module__  # the shadow package's, patched


@pytest.mark.parametrize("name", mutants.MERGE_NAMES)
def test_the_minimal_input_fails_the_expected_check_and_passes_every_check_without_the_bug(name):
    data = _data(name)
    with pytest.raises(MergeFailure) as failure:
        run_merge_checks(getattr(mutants.patched, name), _example(data.minimal_input(kernel_device())))
    assert failure.value.check == data.EXPECTED_CHECK, str(failure.value)
    # The input exposes the patch, not something else: the reference, and the unmutated package
    # loaded the way mutants are (the empty patch), pass every check on it.
    for merge in (reference.merge_state, load(None).merge_state):
        run_merge_checks(merge, _example(data.minimal_input(kernel_device())))


def _same(one: MergeInput, other: MergeInput) -> bool:
    """The same input: values, strides and how it was drawn (the checks may judge a copy)."""
    pairs = zip((one.v_a, one.s_a, one.v_b, one.s_b), (other.v_a, other.s_a, other.v_b, other.s_b))
    return (one.kinds, one.layout, one.base) == (other.kinds, other.layout, other.base) and all(
        a.dtype == b.dtype and a.stride() == b.stride() and torch.equal(a, b) for a, b in pairs)


def _search(merge, drawn: list[MergeInput]) -> None:
    """Every check on each drawn example, up to the budget: a kill raises its MergeFailure, shrunk as
    a run shrinks it (the check that kills the smallest input is the one a run reports); ``drawn``
    collects the examples in the order they ran."""

    @SEARCH
    @given(merge_inputs(max_tokens=3, max_heads=3, max_dim=8, device=kernel_device()))
    def search(example):
        drawn.append(example)
        run_merge_checks(merge, example)

    search()


@pytest.mark.parametrize("name", mutants.MERGE_NAMES)
def test_drawn_inputs_kill_the_mutant_by_its_expected_check(name):
    data = _data(name)
    drawn: list[MergeInput] = []
    with pytest.raises(MergeFailure) as failure:
        _search(getattr(mutants.patched, name), drawn)
    assert failure.value.check == data.EXPECTED_CHECK, str(failure.value)
    # Hypothesis runs the shrunk counterexample last; a metamorphic check's failure names its variant
    # of it (merge(a, empty), say), an agreement failure the drawn input itself.
    counterexample = drawn[-1]
    if failure.value.check == "agreement":
        assert _same(counterexample, failure.value.example)
    run_merge_checks(reference.merge_state, counterexample)


def test_the_unmutated_kernel_passes_the_same_search():
    """The kills above are the patches': the reference passes every drawn example of the budget."""
    drawn: list[MergeInput] = []
    _search(reference.merge_state, drawn)
    assert len(drawn) == BUDGET
