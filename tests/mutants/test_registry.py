"""The registry matches the files, and every mutant file documents its one bug the same way."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import mutants
from fuzz.checks import CHECKS
from mutants import MUTANTS, Mutant

MUTANT_DIR = Path(mutants.__file__).parent
SECTIONS = ("Bug:", "Pitfall:", "Documented:", "Killed by:", "Minimal input:")
REQUIRED = {"no_max_added", "masked_lanes_zero", "log_per_lane", "hardcoded_row_stride", "no_max_shift",
            "int32_offsets", "neg_inf_rows_nan", "one_tile_per_row", "online_no_rescale"}


def test_public_api_is_listed():
    assert sorted(mutants.__all__) == ["MUTANTS", "Mutant"]


def test_at_least_fourteen_mutants_including_the_required_pitfalls():
    assert len(MUTANTS) >= 14
    assert REQUIRED <= set(MUTANTS)


def test_every_mutant_file_is_registered_and_every_entry_has_a_file():
    files = {p.stem for p in MUTANT_DIR.glob("*.py") if not p.name.startswith("_")}
    assert files == set(MUTANTS)
    for name, mutant in MUTANTS.items():
        assert mutant.name == name
        assert mutant.target == f"mutants.{name}:lse"
        assert mutant.path == MUTANT_DIR / f"{name}.py"


@pytest.mark.parametrize("name", list(MUTANTS))
def test_the_expected_check_exists_and_the_docstring_names_it(name):
    mutant = MUTANTS[name]
    assert mutant.expected_check in CHECKS
    doc = ast.get_docstring(ast.parse(mutant.source_text))
    assert doc.startswith("Mutant: ")
    positions = [doc.find(section) for section in SECTIONS]
    assert all(p >= 0 for p in positions), f"{name}: missing one of {SECTIONS}"
    assert positions == sorted(positions), f"{name}: sections out of order"
    killed_by = doc[doc.find("Killed by:"):doc.find("Minimal input:")]
    assert f"``{mutant.expected_check}``" in killed_by
    assert mutant.pitfall and mutant.source


@pytest.mark.parametrize("name", list(MUTANTS))
def test_one_bug_marker_pointing_at_a_code_line(name):
    mutant = MUTANTS[name]
    lines = mutant.source_text.splitlines()
    markers = [i for i, line in enumerate(lines) if "# BUG:" in line]
    assert len(markers) == 1, f"{name}: expected exactly one '# BUG:' marker, found {len(markers)}"
    line, column, end_line, end_column = mutant.bug_location()
    code = lines[line - 1]
    assert line > markers[0] + 1 and code.strip() and not code.strip().startswith("#")
    assert column == len(code) - len(code.lstrip()) + 1 and end_line == line and end_column == len(code) + 1


@pytest.mark.parametrize("name", list(MUTANTS))
def test_each_file_has_its_kernel_its_launcher_and_its_minimal_input(name):
    tree = ast.parse(MUTANTS[name].source_text)
    functions = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
    assert "lse" in functions and "minimal_input" in functions
    kernels = [f for f in functions.values()
               if any(ast.unparse(d) == "triton.jit" for d in f.decorator_list) and f.name.endswith("_kernel")]
    if name == "empty_rows_wrong_shape":  # the bug is in the launcher; the kernel is the reference's
        assert not kernels
    else:
        assert len(kernels) == 1, f"{name}: one @triton.jit kernel per file"


def test_the_registry_imports_no_kernel():
    import subprocess
    import sys

    code = "import sys, mutants; print(any(m.startswith('mutants.') and m != 'mutants' for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=MUTANT_DIR.parent)
    assert out.stdout.strip() == "False"


def test_a_file_target_mutant_finds_its_file_and_input(tmp_path):
    path = tmp_path / "my_mutant.py"
    path.write_text("import torch\n\ndef lse(x):\n    # BUG: nothing\n    return x.sum(1)\n\n"
                    "def minimal_input():\n    return torch.ones(1, 2)\n")
    mutant = Mutant("mine", "sums", "nowhere", "agreement", f"{path}:lse")
    assert mutant.path == path.resolve()
    assert mutant.bug_location() == (5, 5, 5, 20)
    assert mutant.minimal_input().tolist() == [[1.0, 1.0]]
    assert mutant.load()(mutant.minimal_input()).tolist() == [2.0]


def test_sources_cite_something_checkable():
    # A paper with its year, an issue as owner/repo#number, a named tutorial or a quoted title.
    pattern = re.compile(r"(\d{4})|([\w.-]+/[\w.-]+#\d+)|(tutorial)|('[^']+')", re.IGNORECASE)
    for mutant in MUTANTS.values():
        assert pattern.search(mutant.source), mutant.name
