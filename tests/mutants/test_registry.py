"""The catalog's data: ``mutants.NAMES`` matches the files, and every mutant file is a docstring, its
expected check, a patch and a minimal input (and nothing else: no code). The pitfall and its sources
are read from the docstring, the one place they are written."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import mutants
from fuzz.checks import CHECKS
from fuzz.mutation import Mutant, catalog
from fuzz.mutation.bundled import kernel_device, minimal_input
from mutants import NAMES, UNMUTATED_TARGET

MUTANTS = catalog()

MUTANT_DIR = Path(mutants.__file__).parent
SECTIONS = ("Patch:", "Pitfall:", "Documented:", "Killed by:", "Minimal input:")
REQUIRED = {"no_max_added", "masked_lanes_zero", "log_per_lane", "hardcoded_row_stride", "no_max_shift",
            "int32_offsets", "neg_inf_rows_nan", "one_tile_per_row", "online_no_rescale"}


def test_public_api_is_listed():
    assert sorted(mutants.__all__) == ["BACKWARD_NAMES", "MERGE_NAMES", "NAMES", "UNMUTATED_TARGET"]
    assert UNMUTATED_TARGET == "mutants.patched:unmutated"


def test_at_least_fourteen_mutants_including_the_required_pitfalls():
    assert len(MUTANTS) >= 14
    assert REQUIRED <= set(MUTANTS)


def test_every_mutant_file_is_registered_and_every_entry_has_a_file():
    files = {p.stem for p in MUTANT_DIR.glob("*.py") if not p.name.startswith("_")} - {"patched"}
    # The catalog is the row-LSE kernel's mutants only: the mutation engine judges row-LSE kernels (the
    # backward's and the merge's mutants are judged through their own FUNCTION and checks).
    groups = (NAMES, mutants.BACKWARD_NAMES, mutants.MERGE_NAMES)
    assert files == set().union(*groups) and set(NAMES) == set(MUTANTS)
    assert sum(len(group) for group in groups) == len(files)  # no name twice, in a group or across two
    assert list(MUTANTS) == list(NAMES)  # the catalog keeps the data's order (the reports')
    for name, mutant in MUTANTS.items():
        data = __import__(mutant.module, fromlist=["PATH"])
        assert isinstance(mutant, Mutant) and mutant.name == name
        assert mutant.target == f"mutants.patched:{name}"
        assert mutant.module == f"mutants.{name}"
        assert (mutant.patch.path, mutant.patch.anchor, mutant.patch.replacement) == \
            (data.PATH, data.ANCHOR, data.REPLACEMENT)
        assert mutant.expected_check == data.EXPECTED_CHECK
        assert mutant.cpu_check == getattr(data, "CPU_CHECK", "")
        assert mutant.cpu_check in ("", *CHECKS) and mutant.expected_check in CHECKS
        assert data.__doc__.startswith(f"Mutant: {mutant.pitfall}")
        assert mutant.documented and " ".join(mutant.documented.split()[:3]) in " ".join(data.__doc__.split())


def _docstring(name: str) -> str:
    return ast.get_docstring(ast.parse((MUTANT_DIR / f"{name}.py").read_text()))


@pytest.mark.parametrize("name", list(MUTANTS))
def test_the_docstring_documents_the_pitfall_the_patch_and_the_expected_check(name):
    mutant = MUTANTS[name]
    assert mutant.expected_check in CHECKS
    doc = _docstring(name)
    assert doc.startswith("Mutant: ")
    positions = [doc.find(section) for section in SECTIONS]
    assert all(p >= 0 for p in positions), f"{name}: missing one of {SECTIONS}"
    assert positions == sorted(positions), f"{name}: sections out of order"
    killed_by = doc[doc.find("Killed by:"):doc.find("Minimal input:")]
    assert f"``{mutant.expected_check}``" in killed_by
    patch_section = doc[doc.find("Patch:"):doc.find("Pitfall:")]
    assert mutant.patch.path in patch_section, f"{name}: the Patch section names the file it edits"
    assert mutant.pitfall and mutant.documented
    assert "# BUG" not in (MUTANT_DIR / f"{name}.py").read_text()  # the patch locates the bug now


def _is_docstring(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


DATA = ["EXPECTED_CHECK", "PATH", "ANCHOR", "REPLACEMENT"]


@pytest.mark.parametrize("name", list(MUTANTS))
def test_each_file_is_only_data_and_a_minimal_input(name):
    tree = ast.parse((MUTANT_DIR / f"{name}.py").read_text())
    body = [node for node in tree.body if not _is_docstring(node)]
    imports = [node for node in body if isinstance(node, (ast.Import, ast.ImportFrom))]
    modules = {alias.name for node in imports if isinstance(node, ast.Import) for alias in node.names}
    modules |= {("." * node.level) + (node.module or "") for node in imports if isinstance(node, ast.ImportFrom)}
    assert modules <= {"__future__", "torch"}, f"{name}: data imports no kernel, no launcher and no engine"
    rest = [node for node in body if node not in imports]
    *data, function = rest
    names = [ast.unparse(node.targets[0]) for node in data if isinstance(node, ast.Assign)]
    assert names in (DATA, DATA[:1] + ["CPU_CHECK"] + DATA[1:]) and len(names) == len(data) \
        and isinstance(function, ast.FunctionDef), \
        f"{name}: {', '.join(DATA)} (CPU_CHECK after EXPECTED_CHECK, where the CPU kills it first by another) and " \
        "minimal_input"
    assert all(isinstance(node.value, ast.Constant) and isinstance(node.value.value, str) for node in data), \
        f"{name}: the data is literal text"
    assert function.name == "minimal_input" and [a.arg for a in function.args.args] == ["device"]


@pytest.mark.parametrize("name", list(MUTANTS))
def test_the_patch_is_a_patch_of_the_reference_package(name):
    patch = MUTANTS[name].patch
    assert patch.path in {"reference/_lse_kernel.py", "reference/_lse_combine.py", "reference/_launch.py"}
    assert patch.anchor != patch.replacement


def test_no_two_mutants_are_the_same_patch():
    patches = [(m.patch.path, m.patch.anchor, m.patch.replacement) for m in MUTANTS.values()]
    assert len(set(patches)) == len(patches)


def test_the_minimal_input_is_a_tensor_on_the_kernel_device():
    for mutant in MUTANTS.values():
        x = minimal_input(mutant)
        assert x.dim() == 2 and x.device.type == kernel_device().type, mutant.name


# What a source must name so a reader can find it: an issue (owner/repo#number), a paper (an
# author, maybe "et al." or "& Coauthor", and a plausible year), an article (its author and quoted
# title) or the Triton tutorial by number.
CITATION = re.compile(
    r"(?P<issue>\b[A-Za-z0-9][\w.-]*/[\w.-]+#\d+\b)"
    r"|(?P<article>\b[A-Z]\. [A-Z][a-z]+, (?:'[^']{8,}'|\"[^\"]{8,}\"))"
    r"|(?P<paper>\b[A-Z][a-z]+(?: et al\.|(?:,? (?:&|and) [A-Z][a-z]+)*)? \(?(?:19[5-9]\d|20[0-2]\d)\b)"
    r"|(?P<tutorial>\bTriton tutorial \d{2}\b)")


@pytest.mark.parametrize(("text", "cites"), [
    ("triton-lang/triton#832", True), ("Milakov & Gimelshein 2018, 'Online normalizer'", True),
    ("Dao et al. 2023", True), ("Blanchard, Higham & Higham 2021", True), ("Triton tutorial 02-fused-softmax", True),
    ("Blanchard, Higham and Higham (2021)", True), ('V. Guerra, "Triton: Row-Wise LogSumExp"', True), ("(2021)", False),
    ("see 1234 somewhere", False), ("an issue #42", False), ("Somebody 3021", False), ("the tutorial", False),
    ("'a quoted title'", False), ("V. Guerra, 'Triton: Row-Wise LogSumExp'", True), ("X. Y, 'z'", False),
])
def test_the_citation_pattern_tells_a_source_from_a_vague_pointer(text, cites):
    assert bool(CITATION.search(text)) is cites


def test_sources_cite_something_checkable():
    for mutant in MUTANTS.values():
        assert CITATION.search(mutant.documented), mutant.name


