"""The registry matches the files, and every mutant file is a docstring, a patch and an input."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import mutants
from fuzz import CHECKS
from mutants import MUTANTS, UNMUTATED_TARGET, Mutant, Patch

MUTANT_DIR = Path(mutants.__file__).parent
SECTIONS = ("Patch:", "Pitfall:", "Documented:", "Killed by:", "Minimal input:")
REQUIRED = {"no_max_added", "masked_lanes_zero", "log_per_lane", "hardcoded_row_stride", "no_max_shift",
            "int32_offsets", "neg_inf_rows_nan", "one_tile_per_row", "online_no_rescale"}


def test_public_api_is_listed():
    assert sorted(mutants.__all__) == ["MUTANTS", "Mutant", "Patch", "PatchError", "UNMUTATED_TARGET"]
    assert UNMUTATED_TARGET == "mutants.patched:unmutated"


def test_at_least_fourteen_mutants_including_the_required_pitfalls():
    assert len(MUTANTS) >= 14
    assert REQUIRED <= set(MUTANTS)


def test_every_mutant_file_is_registered_and_every_entry_has_a_file():
    files = {p.stem for p in MUTANT_DIR.glob("*.py") if not p.name.startswith("_")} - {"patched"}
    assert files == set(MUTANTS)
    for name, mutant in MUTANTS.items():
        assert isinstance(mutant, Mutant) and mutant.name == name
        assert mutant.target == f"mutants.patched:{name}"
        assert mutant.module == f"mutants.{name}"
        assert mutant.patch is __import__(mutant.module, fromlist=["PATCH"]).PATCH


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
    assert mutant.pitfall and mutant.source
    assert "# BUG" not in (MUTANT_DIR / f"{name}.py").read_text()  # the patch locates the bug now


def _is_docstring(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


@pytest.mark.parametrize("name", list(MUTANTS))
def test_each_file_is_only_a_docstring_a_patch_and_a_minimal_input(name):
    tree = ast.parse((MUTANT_DIR / f"{name}.py").read_text())
    body = [node for node in tree.body if not _is_docstring(node)]
    imports = [node for node in body if isinstance(node, (ast.Import, ast.ImportFrom))]
    modules = {alias.name for node in imports if isinstance(node, ast.Import) for alias in node.names}
    modules |= {("." * node.level) + (node.module or "") for node in imports if isinstance(node, ast.ImportFrom)}
    assert modules <= {"__future__", "torch", "._patch"}, f"{name}: imports no kernel and no launcher"
    rest = [node for node in body if node not in imports]
    assert [type(node) for node in rest] == [ast.Assign, ast.FunctionDef], f"{name}: PATCH = Patch(...), minimal_input"
    patch, function = rest
    assert [ast.unparse(t) for t in patch.targets] == ["PATCH"] and ast.unparse(patch.value.func) == "Patch"
    assert {k.arg for k in patch.value.keywords} == {"path", "anchor", "replacement"}
    assert all(not isinstance(n, ast.Name) for k in patch.value.keywords for n in ast.walk(k.value)), \
        f"{name}: the patch is literal text"
    assert function.name == "minimal_input" and not function.args.args


@pytest.mark.parametrize("name", list(MUTANTS))
def test_the_patch_is_a_patch_of_the_reference_package(name):
    patch = MUTANTS[name].patch
    assert isinstance(patch, Patch)
    assert patch.path in {"reference/_lse_kernel.py", "reference/_lse_combine.py", "reference/_launch.py"}
    assert patch.anchor != patch.replacement


def test_no_two_mutants_are_the_same_patch():
    patches = [(m.patch.path, m.patch.anchor, m.patch.replacement) for m in MUTANTS.values()]
    assert len(set(patches)) == len(patches)


def test_the_minimal_input_is_a_tensor_on_the_kernel_device():
    from mutants._patch import kernel_device

    for mutant in MUTANTS.values():
        x = mutant.minimal_input()
        assert x.dim() == 2 and x.device.type == kernel_device().type, mutant.name


# What a source must name so a reader can find it: an issue (owner/repo#number), a paper (an
# author, maybe "et al." or "& Coauthor", and a plausible year), an article (its author and quoted
# title) or the Triton tutorial by number.
CITATION = re.compile(
    r"(?P<issue>\b[A-Za-z0-9][\w.-]*/[\w.-]+#\d+\b)"
    r"|(?P<article>\b[A-Z]\. [A-Z][a-z]+, '[^']{8,}')"
    r"|(?P<paper>\b[A-Z][a-z]+(?: et al\.|(?:,? (?:&|and) [A-Z][a-z]+)*)? (?:19[5-9]\d|20[0-2]\d)\b)"
    r"|(?P<tutorial>\bTriton tutorial \d{2}\b)")


@pytest.mark.parametrize(("text", "cites"), [
    ("triton-lang/triton#832", True), ("Milakov & Gimelshein 2018, 'Online normalizer'", True),
    ("Dao et al. 2023", True), ("Blanchard, Higham & Higham 2021", True), ("Triton tutorial 02-fused-softmax", True),
    ("see 1234 somewhere", False), ("an issue #42", False), ("Somebody 3021", False), ("the tutorial", False),
    ("'a quoted title'", False), ("V. Guerra, 'Triton: Row-Wise LogSumExp'", True), ("X. Y, 'z'", False),
])
def test_the_citation_pattern_tells_a_source_from_a_vague_pointer(text, cites):
    assert bool(CITATION.search(text)) is cites


def test_sources_cite_something_checkable():
    for mutant in MUTANTS.values():
        assert CITATION.search(mutant.source), mutant.name


