"""Loading the implementation under test from a ``TARGET`` string.

``path/to/file.py:func`` loads a file (it need not be on ``sys.path``); ``pkg.module:func``
imports a module. ``func`` may be dotted (``module:Class.method``). Triton's interpreter is
switched on first when no GPU is present, because a kernel file decides between compiling and
interpreting when its ``@triton.jit`` functions are decorated, at import.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path

from reference.errors import InvalidArgument

_FILE_MODULES: dict[str, str] = {}  # synthetic module name -> the file it was loaded from


def load_target(target: str) -> Callable:
    """The callable that ``target`` names; InvalidArgument with a one-line reason otherwise."""
    if not isinstance(target, str) or ":" not in target:
        raise InvalidArgument(
            f"target={target!r}; expected 'path/to/file.py:func' or 'pkg.module:func'."
        )
    location, _, attribute = target.rpartition(":")
    if not location or not attribute:
        raise InvalidArgument(f"target={target!r}; both the module (or file) and the function must be named.")
    from reference._device import ensure_interpreter

    ensure_interpreter()
    module = _load_file(target, location) if _is_path(location) else _import(target, location)
    obj: object = module
    for part in attribute.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise InvalidArgument(f"target={target!r}: {location} has no attribute {attribute!r}.") from None
    if not callable(obj):
        raise InvalidArgument(f"target={target!r}: {attribute} is a {type(obj).__name__}, not a callable.")
    return obj


def _is_path(location: str) -> bool:
    return location.endswith(".py") or "/" in location or "\\" in location


def _load_file(target: str, location: str):
    path = Path(location).expanduser().resolve()
    if not path.is_file():
        raise InvalidArgument(f"target={target!r}: no such file {str(path)!r}.")
    name = "_lse_target_" + hashlib.sha1(str(path).encode()).hexdigest()[:12]
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # Registered before executing: dataclasses and triton.jit look their module up by name.
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[name]
        raise InvalidArgument(f"target={target!r}: importing {path} raised {type(exc).__name__}: {exc}") from exc
    _FILE_MODULES[name] = str(path)
    return module


def _import(target: str, location: str):
    try:
        return importlib.import_module(location)
    except ImportError as exc:
        raise InvalidArgument(
            f"target={target!r}: cannot import {location!r} ({exc}); give a file path ending in .py "
            "or make the module importable (e.g. pip install -e . or PYTHONPATH)."
        ) from exc


def describe_target(impl: Callable) -> str:
    """A TARGET string that loads ``impl`` again, or a placeholder when there is none."""
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
