"""One TARGET grammar for every command: parsed, resolved without running anything, loaded, described."""

from __future__ import annotations

from pathlib import Path

import doubles
import pytest

from fuzz.target import describe_target, load_target, parse_target, resolve_target
from reference.errors import InvalidArgument

CANDIDATES = Path(__file__).resolve().parents[1] / "implementations" / "candidates"

PARSED = [
    ("kernel.py", ("kernel.py", "lse", True)),
    ("kernel.py:my_lse", ("kernel.py", "my_lse", True)),
    ("dir/kernel:lse", ("dir/kernel", "lse", True)),
    ("pkg.module", ("pkg.module", "lse", False)),
    ("pkg.module:Class.method", ("pkg.module", "Class.method", False)),
    ("/abs/path/k.py:f", ("/abs/path/k.py", "f", True)),
]


@pytest.mark.parametrize(("text", "parts"), PARSED, ids=[p[0] for p in PARSED])
def test_the_grammar_splits_location_and_function_and_defaults_to_lse(text, parts):
    target = parse_target(text)
    assert (target.location, target.function, target.is_file) == parts


RESOLVE_FAILURES = [
    ("no/such/kernel.py", "no such file"),
    (str(CANDIDATES), "is a directory, not a .py file"),
    (f"{CANDIDATES / 'syntax_error.py'}:lse", "syntax_error.py, line 4: SyntaxError: expected ':'"),
    (f"{CANDIDATES / 'torch_float64.py'}:not-a-name", "is not a function name"),
    ("not a module:lse", "neither a .py file nor a dotted module name"),
    ("", "expected 'path/to/file.py[:func]'"),
    ("doubles:", "target='doubles:': '' is not a function name."),
]


@pytest.mark.parametrize(("spec", "text"), RESOLVE_FAILURES,
                         ids=["missing_file", "directory", "syntax_error", "bad_function", "bad_module", "empty",
                              "empty_function"])
def test_a_target_is_checked_before_anything_runs(spec, text):
    with pytest.raises(InvalidArgument) as info:
        resolve_target(spec)
    assert text in str(info.value) and "\n" not in str(info.value)


def test_the_name_in_the_message_is_the_one_the_user_typed():
    with pytest.raises(InvalidArgument, match="^--impl='no/such.py': no such file"):
        resolve_target("no/such.py", name="--impl")


def test_resolve_target_defaults_the_function_and_makes_paths_absolute(monkeypatch):
    monkeypatch.chdir(CANDIDATES)
    assert resolve_target("torch_float64.py") == f"{CANDIDATES / 'torch_float64.py'}:lse"
    assert resolve_target("pkg.module") == "pkg.module:lse"
    assert resolve_target("pkg.module:my_lse") == "pkg.module:my_lse"


def test_load_target_reads_files_and_modules(tmp_path):
    (tmp_path / "mine.py").write_text("def lse(x):\n    return x\n\nclass Box:\n    @staticmethod\n    def run(x):\n"
                                      "        return x\n")
    from_file = load_target(f"{tmp_path / 'mine.py'}:lse")
    assert from_file(3) == 3
    assert describe_target(from_file) == f"{tmp_path / 'mine.py'}:lse"
    assert load_target(f"{tmp_path / 'mine.py'}:Box.run")(4) == 4
    assert load_target(str(tmp_path / "mine.py"))(5) == 5  # the function defaults to lse
    assert load_target("doubles:off_by_max") is doubles.off_by_max
    assert describe_target(doubles.off_by_max) == "doubles:off_by_max"
    assert describe_target(lambda x: x) == "<module:function>"


BAD_TARGETS = {
    "not_callable": ("doubles:CORRECT", "doubles:CORRECT': CORRECT is a dict, not a callable."),
    "no_module": ("no_such_module_here:lse", "cannot import 'no_such_module_here'"),
    "no_attribute": ("doubles:not_there", "has no attribute 'not_there'"),
}


@pytest.mark.parametrize("case", BAD_TARGETS)
def test_bad_targets_name_the_problem(case):
    target, text = BAD_TARGETS[case]
    with pytest.raises(InvalidArgument) as info:
        load_target(target)
    assert text in str(info.value)


def test_a_file_inside_a_package_keeps_its_relative_imports(tmp_path):
    # A library's kernel file imports its helpers relatively; loaded by path as a bare file it raised
    # "attempted relative import with no known parent package".
    package = tmp_path / "lse_pkg_relative" / "ops"
    package.mkdir(parents=True)
    (tmp_path / "lse_pkg_relative" / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "_helpers.py").write_text("def double(x):\n    return 2 * x\n")
    (package / "kernel.py").write_text("from ._helpers import double\n\ndef lse(x):\n    return double(x)\n")
    loaded = load_target(f"{package / 'kernel.py'}:lse")
    assert loaded(3) == 6
    assert loaded.__module__ == "lse_pkg_relative.ops.kernel"
    assert describe_target(loaded) == f"{package / 'kernel.py'}:lse"  # replayable by its path


def test_a_package_file_whose_package_name_is_taken_loads_as_a_bare_file(tmp_path):
    (tmp_path / "doubles").mkdir()  # the suite's own `doubles` package is imported already
    (tmp_path / "doubles" / "__init__.py").write_text("")
    (tmp_path / "doubles" / "mine.py").write_text("def lse(x):\n    return x + 1\n")
    loaded = load_target(f"{tmp_path / 'doubles' / 'mine.py'}:lse")
    assert loaded(1) == 2 and loaded.__module__.startswith("_lse_target_")  # not the suite's doubles.mine
