"""A mutant is a patch: each bundled mutant is the reference with exactly one anchored edit, provably.

Every patch applies exactly once to today's source (and a doctored source shows the error a
reference edit would cause); the empty patch loads a kernel that is the reference bit for bit; a
patched shadow package differs from the reference by its patch and nothing else; diffs are small;
locations point at the anchor; and the shadow packages are content-addressed, shared and written
atomically.
"""

from __future__ import annotations

import importlib
import inspect
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import reference
from fuzz.mutation import Patch, PatchError, catalog
from fuzz.mutation import patch as _patch
from mutants import UNMUTATED_TARGET

ROOT = Path(reference.__file__).resolve().parents[1]
SOURCES = _patch.reference_sources()
MUTANTS = catalog()
NO_MAX_ADDED = MUTANTS["no_max_added"]


def _resolve(target: str):
    """What a TARGET string names: ``module:attribute`` through importlib and getattr, as the
    harness's loader does (fuzz's loader is not used here: it is internal to fuzz)."""
    module, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module), attribute)


@pytest.mark.parametrize("name", list(MUTANTS))
def test_every_patch_applies_exactly_once_to_todays_source(name):
    # If someone edits the reference so that this anchor no longer matches (or matches twice),
    # this fails with the mutant, the file and the count in the message.
    mutant = MUTANTS[name]
    patched = _patch.apply(mutant.patch, name=name)
    assert set(patched) == set(SOURCES) and patched[mutant.patch.path] != SOURCES[mutant.patch.path]
    assert SOURCES[mutant.patch.path].count(mutant.patch.anchor) == 1


def test_the_sources_are_the_reference_package_files():
    files = sorted(p.name for p in Path(reference.__file__).parent.glob("*.py"))
    assert sorted(SOURCES) == [f"reference/{name}" for name in files]
    assert SOURCES["reference/_lse_kernel.py"] == (ROOT / "reference/_lse_kernel.py").read_text()


def _doctored(times: int) -> dict[str, str]:
    """Today's sources with no_max_added's anchor rewritten (0) or written twice (2)."""
    patch = NO_MAX_ADDED.patch
    text = SOURCES[patch.path]
    if times == 0:
        text = text.replace(patch.anchor, "tl.log(row_sum) + row_max")
    else:
        text += f"\n# a second copy: {patch.anchor}\n"
    return {**SOURCES, patch.path: text}


@pytest.mark.parametrize(("times", "found", "hint"), [
    (0, "not found", "the kernel changed there: update the anchor (and the replacement) to today's source"),
    (2, "found 2 times", "extend the anchor with neighbouring text until it is unique"),
], ids=["absent", "twice"])
def test_an_anchor_that_does_not_occur_exactly_once_names_the_mutant_and_the_file(times, found, hint):
    sources = _doctored(times)
    for call in (_patch.apply, _patch.diff):
        with pytest.raises(PatchError) as error:
            call(NO_MAX_ADDED.patch, name="no_max_added", sources=sources)
        message = str(error.value)
        assert message.startswith(f"mutant 'no_max_added': the anchor is {found} in reference/_lse_combine.py "
                                  "(it must occur exactly once)"), message
        assert hint in message and repr(NO_MAX_ADDED.patch.anchor) in message


def test_overlapping_occurrences_count_as_two():
    sources = {**SOURCES, "reference/errors.py": "x = aaa\n"}
    with pytest.raises(PatchError, match="the anchor is found 2 times in reference/errors.py"):
        _patch.apply(Patch("reference/errors.py", "aa", "b"), sources=sources)


BAD_PATCHES = [
    ("a file outside the package", Patch("fuzz/checks.py", "x", "y"),
     "mutant 'bad': path='fuzz/checks.py' is not a file of the kernel; choose one of reference/"),
    ("an empty anchor", Patch("reference/_lse_kernel.py", "", "y"),
     "mutant 'bad': anchor=''; expected non-empty source text of reference/_lse_kernel.py."),
    ("a replacement equal to the anchor", Patch("reference/_lse_kernel.py", "full_tiles", "full_tiles"),
     "mutant 'bad': replacement='full_tiles'; expected source text that differs from the anchor"),
    ("not a Patch", ("reference/_lse_kernel.py", "a", "b"),
     "mutant 'bad': patch=('reference/_lse_kernel.py', 'a', 'b'); "
     "expected a Patch(path, anchor, replacement)."),
]


@pytest.mark.parametrize(("patch", "message"), [case[1:] for case in BAD_PATCHES],
                         ids=[case[0] for case in BAD_PATCHES])
def test_bad_patches_are_refused_with_the_fix(patch, message):
    with pytest.raises(PatchError) as error:
        _patch.apply(patch, name="bad")
    assert str(error.value).startswith(message), str(error.value)
    assert isinstance(error.value, ValueError)


def test_the_empty_patch_is_the_gates_kernel():
    package = _patch.load(None)
    unmutated = _resolve(UNMUTATED_TARGET)
    assert unmutated is package.lse and unmutated is not reference.lse
    # Its kernel is read from a copy of reference/_lse_kernel.py, character for character, and
    # every other file of the package is copied as it is too: a mutant differs from it by its patch only.
    assert inspect.getsource(inspect.getmodule(unmutated)) == SOURCES["reference/_lse_kernel.py"]
    shadow = Path(inspect.getsourcefile(unmutated)).parent
    assert shadow != Path(reference.__file__).parent
    assert {f"reference/{f.name}": f.read_text() for f in shadow.glob("*.py")} == SOURCES
    torch.manual_seed(0)
    padded = torch.full((5, 40), float("nan"))[:, :33]
    padded.copy_(torch.randn(5, 33))
    inputs = {
        "short rows": torch.randn(7, 100) * 10,
        "a split row": torch.randn(1, 3000) * 30,
        "edge rows": torch.tensor([[-float("inf")] * 3, [float("inf"), 0.0, 1.0], [float("nan"), 1.0, 2.0]]),
        "float16, transposed": (torch.randn(300, 9) * 4).half().t(),
        "padded": padded,
        "no columns": torch.empty(3, 0),
    }
    for label, x in inputs.items():
        expected, got = reference.lse(x), unmutated(x)
        assert got.dtype == expected.dtype and got.shape == expected.shape, label
        assert torch.equal(got.view(torch.int32), expected.view(torch.int32)), label  # bit for bit, NaN included


@pytest.mark.parametrize("name", list(MUTANTS))
def test_each_mutant_differs_from_the_reference_by_exactly_its_patch(name):
    mutant = MUTANTS[name]
    package = _patch.load(mutant.patch, name=name)
    shadow = Path(package.__file__).parent
    assert package.__name__.startswith("_lse_reference_") and shadow.parent == _patch.cache_dir() / "shadow"
    files = {f"reference/{p.name}": p.read_text() for p in shadow.glob("*.py")}
    expected = dict(SOURCES)
    original = SOURCES[mutant.patch.path]
    expected[mutant.patch.path] = original.replace(mutant.patch.anchor, mutant.patch.replacement)
    assert files == expected
    # The launcher the target serves is the shadow package's, whose kernel is the patched file.
    lse = _resolve(mutant.target)
    assert lse is mutant.load() is package.lse
    assert Path(inspect.getsourcefile(lse)) == shadow / "_lse_kernel.py"


@pytest.mark.parametrize("name", list(MUTANTS))
def test_each_diff_is_one_small_hunk(name):
    """One hunk of at most two lines out and two lines in.

    A pitfall is one mistake: one changed expression, one added line, or two adjacent statements of
    one function (neg_inf_rows_nan drops both guards of the online update). The frozen kernel copies
    these patches replace differed from the reference by 23 to 33 lines, most of them drift.
    """
    text = MUTANTS[name].diff()
    lines = text.splitlines()
    assert lines[0] == f"--- a/{MUTANTS[name].patch.path}" and lines[1] == f"+++ b/{MUTANTS[name].patch.path}"
    assert sum(line.startswith("@@ ") for line in lines) == 1, text
    removed = [line for line in lines[2:] if line.startswith("-")]
    added = [line for line in lines[2:] if line.startswith("+")]
    assert len(removed) <= 2 and 1 <= len(added) <= 2, text


@pytest.mark.parametrize("name", list(MUTANTS))
def test_the_location_is_the_anchor_in_the_original_file(name):
    mutant = MUTANTS[name]
    path, line, column, end_line, end_column = mutant.location()
    assert path == mutant.patch.path
    lines = (ROOT / path).read_text().splitlines(keepends=True)
    start = sum(len(text) for text in lines[:line - 1]) + column - 1
    end = sum(len(text) for text in lines[:end_line - 1]) + end_column - 1
    assert "".join(lines)[start:end] == mutant.patch.anchor
    assert (end_line - line) == mutant.patch.anchor.count("\n")


def test_positions_count_from_one_and_the_end_lies_past_the_anchor():
    text = "ab\ncd anchor\nef"
    start = text.index("anchor")
    assert (_patch.position(text, start), _patch.position(text, start + len("anchor"))) == ((2, 4), (2, 10))
    start = text.index("b\ncd")
    assert (_patch.position(text, start), _patch.position(text, start + 4)) == ((1, 2), (2, 3))


def test_the_patched_launcher_raises_the_projects_exception():
    with pytest.raises(reference.InvalidArgument, match=r"x.shape=\(3,\); expected a 2-D"):
        NO_MAX_ADDED.load()(torch.zeros(3))


def test_targets_resolve_by_name_and_unknown_names_are_attribute_errors():
    from mutants import patched

    assert patched.no_max_added is NO_MAX_ADDED.load()
    assert {"unmutated", *MUTANTS} <= set(dir(patched))
    with pytest.raises(AttributeError, match="has no attribute 'nope'; choose 'unmutated' or a mutant: no_max_added"):
        patched.nope  # noqa: B018
    assert not hasattr(patched, "__path__")  # a module, not a package: dunder lookups load nothing


def test_the_same_patch_is_one_cached_package():
    first = _patch.load(NO_MAX_ADDED.patch, name="no_max_added")
    again = _patch.load(Patch(**vars(NO_MAX_ADDED.patch)))
    assert first is again and sys.modules[first.__name__] is first
    assert _patch.load(None) is not first


def test_the_cache_directory_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("LSE_FUZZ_CACHE", str(tmp_path / "explicit"))
    assert _patch.cache_dir() == tmp_path / "explicit"
    monkeypatch.delenv("LSE_FUZZ_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert _patch.cache_dir() == tmp_path / "xdg" / "lse-fuzz"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert _patch.cache_dir() == tmp_path / "home" / ".cache" / "lse-fuzz"


def test_a_damaged_shadow_copy_is_rewritten(monkeypatch, tmp_path):
    monkeypatch.setenv("LSE_FUZZ_CACHE", str(tmp_path))
    texts = _patch.apply(NO_MAX_ADDED.patch)
    files = {path.rpartition("/")[2]: text for path, text in texts.items()}
    directory = _patch._write_shadow("_lse_reference_test", files, "no_max_added")
    (directory / "_lse_combine.py").write_text("# damaged\n")
    assert _patch._write_shadow("_lse_reference_test", files, "no_max_added") == directory
    assert (directory / "_lse_combine.py").read_text() == texts["reference/_lse_combine.py"]
    assert [p.name for p in (tmp_path / "shadow").iterdir()] == ["_lse_reference_test"]


def test_an_unwritable_cache_is_a_patch_error_with_the_fix(monkeypatch, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("LSE_FUZZ_CACHE", str(blocker))
    with pytest.raises(PatchError, match="mutant 'no_max_added': cannot write the patched reference package under "
                                         ".*; set LSE_FUZZ_CACHE to a writable directory"):
        _patch._write_shadow("_lse_reference_test", {"__init__.py": ""}, "no_max_added")


LOAD_SCRIPT = """
import sys
from mutants.patched import split_no_rescale as lse
print(sys.modules[lse.__module__].__file__)
"""


def test_processes_loading_the_same_mutant_at_once_share_one_shadow_copy(tmp_path):
    # Three processes race to write the same content-addressed package: each gets a complete
    # copy (the write is a rename of a finished directory), and one copy is left.
    env = {**os.environ, "LSE_FUZZ_CACHE": str(tmp_path),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    procs = [subprocess.Popen([sys.executable, "-c", LOAD_SCRIPT], env=env, cwd=tmp_path, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(3)]
    outputs = [proc.communicate(timeout=180) for proc in procs]
    assert all(proc.returncode == 0 for proc in procs), [err[-2000:] for _, err in outputs]
    files = {out.strip() for out, _ in outputs}
    assert len(files) == 1
    assert [p.name for p in (tmp_path / "shadow").iterdir()] == [Path(files.pop()).parent.name]


def test_the_catalog_data_and_the_patch_module_import_no_kernel():
    """What a worker imports to load a mutant, before the patched package itself (Triton's mode is
    fixed when a kernel module is imported, so these must not import one)."""
    code = ("import sys, mutants, mutants.patched, fuzz.mutation.patch; "
            "print(sorted(m for m in sys.modules if m == 'triton' or m.startswith(('reference', '_lse_reference'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"
