"""Each package's ``__all__`` is exactly its public surface, both ways: every listed name resolves,
and every public name the package holds (besides its submodules) is listed. ``lse_fuzz`` is the one
public face: ``fuzz`` is lse-fuzz's implementation and lists nothing."""

from __future__ import annotations

import ast
import importlib
import inspect
import subprocess
import sys
import types

import pytest

PACKAGES = ["lse_fuzz", "reference", "mutants", "fuzz", "fuzz.suite", "fuzz.checks", "fuzz.isolation", "fuzz.grading",
            "fuzz.mutation", "fuzz.strategies", "fuzz.contract", "fuzz.outcomes", "fuzz.validate", "fuzz.target", "fuzz.interpreter.autotune",
            "fuzz.calls", "fuzz.batching", "fuzz.recipes"]


def _public(module: types.ModuleType) -> set[str]:
    """The public names a module defines (functions, classes, constants at its top level) and, for a
    package, the names its ``__init__`` imports from its own submodules: what a reader of it sees.
    Read from the source, so a helper imported from elsewhere is not counted."""
    tree = ast.parse(inspect.getsource(module))
    is_package = hasattr(module, "__path__")
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.ImportFrom) and is_package and node.level == 1 and node.module:
            names.update(alias.asname or alias.name for alias in node.names)
    return {name for name in names if not name.startswith("_")}


@pytest.mark.parametrize("name", PACKAGES)
def test_all_is_the_public_surface_both_ways(name):
    module = importlib.import_module(name)
    listed = set(module.__all__)
    assert len(module.__all__) == len(listed), "a name is listed twice"
    missing = {n for n in listed if not hasattr(module, n)}
    assert not missing, f"listed but not there: {sorted(missing)}"
    unlisted = _public(module) - listed
    assert not unlisted, f"public but not in __all__: {sorted(unlisted)}"


def test_lse_fuzz_resolves_every_name_to_its_definition():
    import lse_fuzz
    import fuzz.runner
    import fuzz.strategies
    import fuzz.suite
    import reference

    assert lse_fuzz.check is fuzz.runner.check and lse_fuzz.lse_suite is fuzz.suite.lse_suite
    assert lse_fuzz.lse_inputs is fuzz.strategies.lse_inputs and lse_fuzz.strategies is fuzz.strategies
    assert lse_fuzz.lse is reference.lse and lse_fuzz.compare is reference.compare
    assert lse_fuzz.InvalidArgument is reference.InvalidArgument
    with pytest.raises(AttributeError, match="module 'lse_fuzz' has no attribute 'chekc'"):
        lse_fuzz.chekc  # noqa: B018


def test_importing_lse_fuzz_imports_nothing_heavy():
    """pytest imports it in every run (the plugin's entry point): no torch, triton, hypothesis or fuzz."""
    code = ("import sys, lse_fuzz, lse_fuzz.plugin\n"
            "print(sorted(m for m in ('torch', 'triton', 'hypothesis', 'reference') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_fuzz_is_internal_and_exports_nothing():
    """lse_fuzz is the one public face: ``fuzz``, lse-fuzz's implementation, holds no public name
    besides its submodules (and its dunder attributes), so nobody's code comes to depend on it."""
    import fuzz
    import fuzz.runner  # noqa: F401  (an imported submodule is an attribute of the package: allowed)
    import lse_fuzz

    assert fuzz.__all__ == []
    exported = sorted(name for name in dir(fuzz)
                      if not name.startswith("_") and not isinstance(getattr(fuzz, name), types.ModuleType))
    assert not exported, f"fuzz exports {exported}: export them from lse_fuzz (or import them from their module)"
    through_fuzz = sorted(name for name in lse_fuzz.__all__ if hasattr(fuzz, name)
                          and not isinstance(getattr(fuzz, name), types.ModuleType))
    assert not through_fuzz, f"reachable as fuzz.NAME: {through_fuzz}; the one spelling is lse_fuzz.NAME"
    with pytest.raises(AttributeError, match=r"has no attribute 'check' \(fuzz is lse-fuzz's internal"):
        fuzz.check  # noqa: B018
    # A fresh `import fuzz` holds nothing public at all (not even a submodule: it imports none).
    code = "import fuzz; print(sorted(n for n in dir(fuzz) if not n.startswith('_')))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
