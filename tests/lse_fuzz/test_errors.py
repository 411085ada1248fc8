"""Every exception lse-fuzz raises on purpose derives from :class:`lse_fuzz.LseFuzzError`, and keeps
the built-in kind it had (a caller's ``except ValueError`` still catches bad input).

The exception classes are found in the source (every top-level public class whose base is an
exception), so a new one that forgets the base fails here by name."""

from __future__ import annotations

import ast
import builtins
import importlib
from pathlib import Path

import pytest

import lse_fuzz

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("reference", "mutants", "fuzz", "lse_fuzz")

# Outside the family on purpose (class -> why).
EXEMPT = {
    "fuzz.outcomes.ImplLost": "a BaseException so that no `except Exception` swallows the loss of the worker",
    "fuzz.isolation.worker.raised.CandidateRaised": "stands for the implementation's own exception, re-raised here",
}
_BUILTIN_EXCEPTIONS = {name for name, value in vars(builtins).items()
                       if isinstance(value, type) and issubclass(value, BaseException)}


def _base_name(node: ast.expr) -> str:
    return node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")


def exception_classes(sources: dict[str, str]) -> list[str]:
    """``module.Class`` of each public top-level class in ``sources`` (module -> text) whose bases
    include a built-in exception, a name ending in Error or Exception, or another such class."""
    classes = {(module, node.name): [_base_name(base) for base in node.bases]
               for module, text in sources.items() for node in ast.parse(text).body
               if isinstance(node, ast.ClassDef) and not node.name.startswith("_")}
    found: set[str] = set()
    while True:
        known = _BUILTIN_EXCEPTIONS | {name.rpartition(".")[2] for name in found}
        more = {f"{module}.{name}" for (module, name), bases in classes.items()
                if any(b in known or b.endswith(("Error", "Exception")) for b in bases)} - found
        if not more:
            return sorted(found)
        found |= more


def _sources() -> dict[str, str]:
    sources = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            sources[".".join(parts)] = path.read_text()
    return sources


EXCEPTIONS = exception_classes(_sources())


def test_the_search_finds_the_known_exceptions():
    assert {"reference.errors.InvalidArgument", "fuzz.failures.CheckFailure", "fuzz.calls.ConventionError",
            "fuzz.gradient.NotDifferentiable", "lse_fuzz._packages.PackageClash", *EXEMPT} <= set(EXCEPTIONS)


@pytest.mark.parametrize("qualname", EXCEPTIONS)
def test_every_project_exception_derives_from_the_base(qualname):
    module, _, name = qualname.rpartition(".")
    cls = getattr(importlib.import_module(module), name)
    assert issubclass(cls, BaseException), f"{qualname} was taken for an exception class"
    if qualname in EXEMPT:
        assert not issubclass(cls, lse_fuzz.LseFuzzError), f"{qualname} is no longer exempt: drop it from EXEMPT"
        return
    assert issubclass(cls, lse_fuzz.LseFuzzError), f"{qualname} must derive from lse_fuzz.LseFuzzError"


def test_the_search_sees_a_class_that_forgets_the_base():
    planted = {"pkg.a": "class Bad(KeyError):\n    pass\nclass Worse(Bad):\n    pass\nclass _Private(Exception):\n"
                        "    pass\nclass Plain:\n    pass\n", "pkg.b": "class Far(torch.OutOfMemoryError):\n    pass\n"}
    assert exception_classes(planted) == ["pkg.a.Bad", "pkg.a.Worse", "pkg.b.Far"]


@pytest.mark.parametrize("name, kind", [("InvalidArgument", ValueError), ("ConventionError", ValueError),
                                        ("CheckFailure", AssertionError), ("PackageClash", ImportError)])
def test_each_keeps_its_builtin_kind(name, kind):
    assert issubclass(getattr(lse_fuzz, name), kind) and issubclass(getattr(lse_fuzz, name), lse_fuzz.LseFuzzError)


def test_one_except_catches_bad_input_from_the_public_api():
    with pytest.raises(lse_fuzz.LseFuzzError, match="budget"):
        lse_fuzz.check(lambda x: x, budget=-1)
