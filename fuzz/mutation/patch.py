"""A mutant is a patch: one anchored edit of a kernel's source, and the patched package it loads.

A :class:`Patch` names one file, an anchor (exact source text that must occur exactly once in it)
and the text that replaces it. A mutant is then *the kernel with that one edit*, provably: nothing
else is copied or re-typed, and an anchor that stops matching (someone edited the kernel there)
fails loudly, naming the mutant, the file and the count, instead of letting a frozen copy drift.

    patch = Patch("reference/_lse_combine.py", "row_max + tl.log(row_sum)", "tl.log(row_sum)")
    apply(patch)["reference/_lse_combine.py"]   # the patched text (apply returns every file)
    print(diff(patch))                          # the edit as a unified diff
    lse = load(patch).lse                       # the patched reference package's launcher

:func:`load` writes a *shadow copy* of the reference package (every ``.py`` file, the one patched)
to a content-addressed directory of the cache and imports it under a name derived from the content
hash. It must be real files: Triton reads a kernel's source with ``inspect``, and the package's
relative imports then resolve inside the shadow, so the patched kernel launches through the
reference's own launcher and launch policy. ``load(None)`` is the unmutated package loaded the same
way. One module is shared, not copied: ``errors``, so that the patched launcher raises the project's
own ``reference.InvalidArgument``.

Everything written lives under :func:`cache_dir`: ``$LSE_FUZZ_CACHE``, else
``$XDG_CACHE_HOME/lse-fuzz``, else ``~/.cache/lse-fuzz``; files are written once (to a temporary
name, then renamed, since several workers may load the same mutant at once) and reused after that.
This module imports no kernel (the package is found with :func:`importlib.util.find_spec`).
"""

from __future__ import annotations

import difflib
import hashlib
import importlib.util
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from lse_fuzz._errors import LseFuzzError

__all__ = ["Patch", "PatchError", "apply", "cache_dir", "diff", "load", "package_dir", "position",
           "reference_sources", "span", "write_once"]

PACKAGE = "reference"
_SHADOW_PREFIX = "_lse_reference_"
_ERRORS = f"{PACKAGE}/errors.py"
_SHADOW_LAYOUT = "1"  # part of the content hash: bump it if the shadow package's layout changes


class PatchError(LseFuzzError, ValueError):
    """A patch cannot be applied or loaded; the message names the mutant, the file and the fix."""


@dataclass(frozen=True)
class Patch:
    """One anchored edit: ``path`` (a key of the kernel's sources, ``"reference/_lse_combine.py"``),
    ``anchor`` (exact text that occurs exactly once there, maybe several lines) and ``replacement``."""

    path: str
    anchor: str
    replacement: str


def package_dir() -> Path:
    spec = importlib.util.find_spec(PACKAGE)  # locates the package without importing it
    if spec is None or not spec.submodule_search_locations:
        raise PatchError(f"the {PACKAGE!r} package was not found; install the project (pip install -e .).")
    return Path(next(iter(spec.submodule_search_locations))).resolve()


def reference_sources() -> dict[str, str]:
    """Every ``.py`` file of the reference package: path relative to the project root -> text."""
    return {f"{PACKAGE}/{path.name}": path.read_text() for path in sorted(package_dir().glob("*.py"))}


def _describe(name: str | None) -> str:
    return f"mutant {name!r}" if name else "the patch"


def span(patch: Patch, sources: dict[str, str], name: str | None = None) -> tuple[str, int]:
    """The original text of the patched file and the anchor's offset in it (validated)."""
    if not isinstance(patch, Patch):
        raise PatchError(f"{_describe(name)}: patch={patch!r}; expected a Patch(path, anchor, replacement).")
    if patch.path not in sources:
        raise PatchError(f"{_describe(name)}: path={patch.path!r} is not a file of the kernel; "
                         f"choose one of {', '.join(sources)}.")
    if not isinstance(patch.anchor, str) or not patch.anchor:
        raise PatchError(f"{_describe(name)}: anchor={patch.anchor!r}; expected non-empty source text of {patch.path}.")
    if not isinstance(patch.replacement, str) or patch.replacement == patch.anchor:
        raise PatchError(f"{_describe(name)}: replacement={patch.replacement!r}; expected source text that differs "
                         "from the anchor (a patch that changes nothing is the kernel itself).")
    text = sources[patch.path]
    starts, start = [], text.find(patch.anchor)
    while start >= 0:  # overlapping occurrences included (str.count skips those)
        starts.append(start)
        start = text.find(patch.anchor, start + 1)
    if len(starts) != 1:
        found = "not found" if not starts else f"found {len(starts)} times"
        hint = ("the kernel changed there: update the anchor (and the replacement) to today's source"
                if not starts else "extend the anchor with neighbouring text until it is unique")
        raise PatchError(f"{_describe(name)}: the anchor is {found} in {patch.path} (it must occur exactly once); "
                         f"{hint}.\n  anchor: {patch.anchor!r}")
    return text, starts[0]


def apply(patch: Patch | None, *, name: str | None = None, sources: dict[str, str] | None = None) -> dict[str, str]:
    """The source texts (default: the reference package's) with ``patch`` applied (``None``: unchanged);
    ``name`` is the mutant a :class:`PatchError` names."""
    texts = dict(reference_sources() if sources is None else sources)
    if patch is None:
        return texts
    text, start = span(patch, texts, name)
    texts[patch.path] = text[:start] + patch.replacement + text[start + len(patch.anchor):]
    return texts


def diff(patch: Patch, *, name: str | None = None, sources: dict[str, str] | None = None) -> str:
    """The edit as a unified diff of the patched file (three lines of context)."""
    original = reference_sources() if sources is None else sources
    patched = apply(patch, name=name, sources=original)
    return "".join(difflib.unified_diff(
        original[patch.path].splitlines(keepends=True), patched[patch.path].splitlines(keepends=True),
        fromfile=f"a/{patch.path}", tofile=f"b/{patch.path}"))


def position(text: str, offset: int) -> tuple[int, int]:
    """1-based (line, column) of an offset in ``text``."""
    line_start = text.rfind("\n", 0, offset) + 1
    return text.count("\n", 0, offset) + 1, offset - line_start + 1


def cache_dir() -> Path:
    """``$LSE_FUZZ_CACHE``, else ``$XDG_CACHE_HOME/lse-fuzz``, else ``~/.cache/lse-fuzz``."""
    explicit = os.environ.get("LSE_FUZZ_CACHE")
    if explicit:
        return Path(explicit).expanduser().resolve()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return (Path(base).expanduser() / "lse-fuzz").resolve()


def write_once(name: str, text: str) -> Path:
    """``text`` as ``<cache>/mutate/<hash>/<name>``, written once (atomically): a file a worker loads."""
    directory = cache_dir() / "mutate" / hashlib.sha256(f"{name}\0{text}".encode()).hexdigest()[:24]
    path = directory / name
    if path.is_file() and path.read_text() == text:
        return path
    directory.mkdir(parents=True, exist_ok=True)
    fd, staging = tempfile.mkstemp(prefix=".", dir=directory)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    os.replace(staging, path)
    return path


# ----------------------------------------------------------------------------------------------
# The shadow package


_LOADED: dict[str, ModuleType] = {}  # package name -> the imported shadow package, per process


def load(patch: Patch | None, *, name: str | None = None) -> ModuleType:
    """The reference package with ``patch`` applied, imported from a shadow copy (cached): the same
    texts give the same package name, so a second call (or another process) reuses it."""
    original = reference_sources()
    texts = apply(patch, name=name, sources=original)
    digest = hashlib.sha256(_SHADOW_LAYOUT.encode())
    for path, text in sorted(texts.items()):
        digest.update(f"\0{path}\0{len(text)}\0".encode())
        digest.update(text.encode())
    package = _SHADOW_PREFIX + digest.hexdigest()[:20]
    if package not in _LOADED:
        directory = _write_shadow(package, {path.rpartition("/")[2]: text for path, text in texts.items()}, name)
        _LOADED[package] = _import_shadow(package, directory, shared_errors=texts[_ERRORS] == original[_ERRORS])
    return _LOADED[package]


def _matches(directory: Path, files: dict[str, str]) -> bool:
    present = {p.name for p in directory.glob("*.py")}
    return present == set(files) and all((directory / f).read_text() == text for f, text in files.items())


def _write_shadow(package: str, files: dict[str, str], name: str | None) -> Path:
    root = cache_dir() / "shadow"
    final = root / package
    try:
        if final.is_dir() and _matches(final, files):
            return final
        root.mkdir(parents=True, exist_ok=True)
        # Written in full under a temporary name, then renamed: a process that finds `final`
        # never sees a half-written package, and of two processes racing, one rename wins.
        staging = Path(tempfile.mkdtemp(prefix=f".{package}-", dir=root))
        for file, text in files.items():
            (staging / file).write_text(text)
        stale = None
        if final.exists():  # content-addressed, so only a damaged copy gets here: replace it
            stale = root / f".stale-{package}-{os.getpid()}"
            os.replace(final, stale)
        try:
            os.rename(staging, final)
        except OSError:
            if not (final.is_dir() and _matches(final, files)):
                raise
            shutil.rmtree(staging, ignore_errors=True)  # another process wrote the same package first
        if stale is not None:
            shutil.rmtree(stale, ignore_errors=True)
    except OSError as exc:
        raise PatchError(f"{_describe(name)}: cannot write the patched {PACKAGE} package under {root} ({exc}); "
                         "set LSE_FUZZ_CACHE to a writable directory.") from exc
    return final


def _import_shadow(package: str, directory: Path, *, shared_errors: bool) -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        package, directory / "__init__.py", submodule_search_locations=[str(directory)])
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # Registered before it runs: its relative imports (and dataclasses, and triton.jit) look the
    # package and its modules up in sys.modules by name.
    sys.modules[package] = module
    if shared_errors:
        # One exception class for bad input: `except reference.InvalidArgument` must catch what the
        # patched launcher raises too, so the shadow's `from .errors import ...` finds the real one.
        sys.modules[f"{package}.errors"] = importlib.import_module(f"{PACKAGE}.errors")
    try:
        spec.loader.exec_module(module)
    except BaseException:
        for key in [k for k in sys.modules if k == package or k.startswith(package + ".")]:
            del sys.modules[key]
        raise
    return module
