"""TARGET: how every command names the implementation under test, and how it is loaded.

    TARGET   := LOCATION [":" FUNCTION ["@" CALL]]
    LOCATION := a file path (ends in .py or contains a path separator) | a dotted module name
    FUNCTION := a dotted attribute path in that module (``lse`` when omitted; ``Class.method`` works)
    CALL     := a call convention, key=value pairs (``fuzz.calls.CallConvention.suffix``) | "backward"

``@CALL`` is how the fuzzer hands an isolated worker an implementation with a call convention
(``--dim``, ``--result``, ...): the worker's callable then takes the convention's carrier and
returns the LSE rows (:meth:`fuzz.calls.CallConvention.worker_call`). ``@backward`` hands it the
implementation's gradient instead, ``x -> dx`` (:func:`fuzz.gradient.gradient_of`, for
``--backward``). Users give the options.

``path/to/file.py:func`` loads a file that need not be on ``sys.path``; ``pkg.module:func``
imports a module. :func:`resolve_target` checks a TARGET without running anything (the file
exists and parses); :func:`load_target` imports it and returns the callable. Triton's
interpreter is switched on first when no GPU is present, because a kernel file decides between
compiling and interpreting when its ``@triton.jit`` functions are decorated, at import.
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import importlib.util
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from reference._device import ensure_interpreter
from reference.errors import InvalidArgument

from .interpreter import repairs
from .calls import CallConvention
from .gradient import gradient_of

__all__ = ["BACKWARD", "DEFAULT_FUNCTION", "Target", "describe_target", "load_target", "parse_target", "resolve_target"]

DEFAULT_FUNCTION = "lse"

_FILE_MODULES: dict[str, str] = {}  # synthetic module name -> the file it was loaded from


BACKWARD = "backward"
"""The CALL that makes a worker load the implementation's gradient (``TARGET@backward``)."""


@dataclass(frozen=True)
class Target:
    location: str  # a file path or a dotted module name
    function: str  # a dotted attribute path
    is_file: bool
    call: str = ""  # the call convention's suffix without its "@" (empty: the plain lse(x))

    def __str__(self) -> str:
        return f"{self.location}:{self.function}" + (f"@{self.call}" if self.call else "")


def _is_path(location: str) -> bool:
    return location.endswith(".py") or "/" in location or os.sep in location


def parse_target(target: object, *, function: str = DEFAULT_FUNCTION, name: str = "target") -> Target:
    """Split a TARGET into location and function (``function`` when omitted); checks the grammar only."""
    if not isinstance(target, str) or not target.strip():
        raise InvalidArgument(f"{name}={target!r}; expected 'path/to/file.py[:func]' or 'pkg.module[:func]'.")
    location, _, func = target.rpartition(":")
    if not location:
        location, func = target, function
    func, _, call = func.partition("@")
    if not all(part.isidentifier() for part in func.split(".")):
        raise InvalidArgument(f"{name}={target!r}: {func!r} is not a function name.")
    if call and call != BACKWARD:
        CallConvention.from_suffix(call)  # InvalidArgument naming what is wrong
    if _is_path(location):
        return Target(location, func, True, call)
    if not all(part.isidentifier() for part in location.split(".")):
        raise InvalidArgument(f"{name}={target!r}: {location!r} is neither a .py file nor a dotted module name.")
    return Target(location, func, False, call)


def resolve_target(target: object, *, function: str = DEFAULT_FUNCTION, name: str = "target") -> str:
    """``target`` with the function made explicit and a file path made absolute.

    Checked here without running anything: the file exists and parses. Whether the module
    imports and has the function is for :func:`load_target` (or the isolated worker) to find
    out: importing runs the candidate's code.
    """
    parsed = parse_target(target, function=function, name=name)
    if not parsed.is_file:
        return str(parsed)
    path = Path(parsed.location).expanduser().resolve()
    if not path.exists():
        raise InvalidArgument(f"{name}={target!r}: no such file {str(path)!r}.")
    if not path.is_file():
        raise InvalidArgument(f"{name}={target!r}: {str(path)!r} is a directory, not a .py file.")
    _check_syntax(path, target, name)
    return str(Target(str(path), parsed.function, True, parsed.call))


def _check_syntax(path: Path, target: object, name: str) -> None:
    """InvalidArgument naming the line if ``path`` does not parse (nothing is executed)."""
    try:
        source = path.read_bytes()
    except OSError as exc:
        raise InvalidArgument(f"{name}={target!r}: cannot read {str(path)!r} ({exc.strerror}).") from None
    try:
        ast.parse(source, filename=str(path))
    except SyntaxError as exc:
        raise InvalidArgument(
            f"{name}={target!r}: {path.name}, line {exc.lineno}: {type(exc).__name__}: {exc.msg}."
        ) from None
    except ValueError as exc:  # null bytes
        raise InvalidArgument(f"{name}={target!r}: {path.name} is not Python source ({exc}).") from None


def load_target(target: object, *, function: str = DEFAULT_FUNCTION, name: str = "target") -> Callable:
    """The callable that ``target`` names; InvalidArgument with a one-line reason otherwise."""
    parsed = parse_target(target, function=function, name=name)
    if ensure_interpreter():
        # Before the kernels are defined: the interpreter made to compile and compute as a GPU does.
        repairs.install()
    module = _load_file(target, parsed.location, name) if parsed.is_file else _import(target, parsed.location, name)
    obj: object = module
    for part in parsed.function.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise InvalidArgument(
                f"{name}={target!r}: {parsed.location} has no attribute {parsed.function!r}.") from None
    if not callable(obj):
        raise InvalidArgument(f"{name}={target!r}: {parsed.function} is a {type(obj).__name__}, not a callable.")
    if parsed.call == BACKWARD:
        return gradient_of(obj)
    if parsed.call:
        return CallConvention.from_suffix(parsed.call).worker_call(obj)
    return obj


def _load_file(target: object, location: str, name: str):
    path = Path(location).expanduser().resolve()
    if not path.is_file():
        raise InvalidArgument(f"{name}={target!r}: no such file {str(path)!r}.")
    package = _package_name(path)
    if package is not None:
        return _load_package_file(target, path, *package, name)
    module_name = "_lse_target_" + hashlib.sha1(str(path).encode()).hexdigest()[:12]
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # Registered before executing: dataclasses and triton.jit look their module up by name.
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[module_name]
        raise InvalidArgument(
            f"{name}={target!r}: importing {path} raised {type(exc).__name__}: {exc}") from exc
    _FILE_MODULES[module_name] = str(path)
    return module


def _package_name(path: Path) -> tuple[Path, str] | None:
    """(the folder above the topmost package, the dotted name) of a file inside a package (its folder
    has ``__init__.py``); None for a bare file, or when another package of that top name is imported."""
    root, parts = path.parent, [path.stem]
    while (root / "__init__.py").is_file():
        parts.insert(0, root.name)
        root = root.parent
    if len(parts) == 1:
        return None
    imported = sys.modules.get(parts[0])
    if imported is not None and str(root / parts[0]) not in [str(Path(p).resolve()) for p in
                                                             getattr(imported, "__path__", [])]:
        return None  # e.g. a user's package named `tests` or `fuzz`: loaded as a bare file, as before
    return root, ".".join(parts)


def _load_package_file(target: object, path: Path, root: Path, dotted: str, name: str):
    """A file inside a package imported by its dotted name, as pytest's prepend import mode does: the
    folder above the topmost package goes first on sys.path, so the file's relative imports (``from
    ._rows import launch``) resolve as in its own project."""
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    try:
        module = importlib.import_module(dotted)
    except Exception as exc:
        raise InvalidArgument(
            f"{name}={target!r}: importing {path} as {dotted} raised {type(exc).__name__}: {exc}") from exc
    _FILE_MODULES[dotted] = str(path)
    return module


def _import(target: object, location: str, name: str):
    try:
        return importlib.import_module(location)
    except ImportError as exc:
        raise InvalidArgument(
            f"{name}={target!r}: cannot import {location!r} ({exc}); give a file path ending in .py "
            "or make the module importable (e.g. pip install -e . or PYTHONPATH)."
        ) from exc


def describe_target(impl: Callable) -> str:
    """A TARGET string that loads ``impl`` again, or a placeholder when there is none."""
    explicit = getattr(impl, "target", None)  # isolated implementations know theirs
    if isinstance(explicit, str):
        return explicit.partition("@")[0] if "@" in explicit.rpartition(":")[2] else explicit
    module = getattr(impl, "__module__", None)
    qualname = getattr(impl, "__qualname__", None)
    if module is None or qualname is None or "<locals>" in qualname or "<lambda>" in qualname:
        return "<module:function>"
    if module in _FILE_MODULES:
        return f"{_FILE_MODULES[module]}:{qualname}"
    if module == "__main__":
        path = getattr(sys.modules.get("__main__"), "__file__", None)
        return f"{path}:{qualname}" if path else "<module:function>"
    return f"{module}:{qualname}"
