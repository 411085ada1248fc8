"""Work a worker does only once a module is imported: ``when_imported(name, action)``.

torch's dynamo (``torch.compile``) takes 1-2 s to import on a quiet CPU and up to 3.6 s on a
loaded 16-CPU GPU host. The worker needs it only for a candidate that compiles with it (its
compiles reported, :mod:`.compile_watch`; its frames kept out of the operator record's dispatch,
:mod:`.op_record`), and dynamo cannot run before it is imported. So the fork server of Triton's
interpreter no longer preloads it (a GPU host's still does: see
:data:`fuzz.isolation.fork_server.server.GPU_PRELOAD`, where the action then runs at once), and
what needs it is done right after the first import of ``torch._dynamo`` completes,
whoever imports it and when: the candidate's module (``@torch.compile`` at import) or its first
call. An action runs once; a failing import runs none (a later import that succeeds does). The
worker registers its actions before the candidate's code runs, never from inside the import of the
module watched (whose loader is then already running: such an action would wait for an import
that does not come).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import threading
from collections.abc import Callable
from types import ModuleType

__all__ = ["when_imported"]

_pending: dict[str, list[Callable[[ModuleType], None]]] = {}
_lock = threading.Lock()


def when_imported(name: str, action: Callable[[ModuleType], None]) -> None:
    """Run ``action(module)`` now if ``name`` is imported, else right after its first import ends."""
    module = sys.modules.get(name)
    if module is not None and not _importing(module):
        action(module)
        return
    with _lock:
        first = name not in _pending
        _pending.setdefault(name, []).append(action)
        if first and not any(isinstance(f, _Finder) for f in sys.meta_path):
            sys.meta_path.insert(0, _Finder())


def _importing(module: ModuleType) -> bool:
    """Whether ``module``'s import is still running (it is in sys.modules from its start)."""
    spec = getattr(module, "__spec__", None)
    return bool(getattr(spec, "_initializing", False))


def _run(name: str, module: ModuleType) -> None:
    with _lock:
        actions = _pending.pop(name, [])
    for action in actions:
        action(module)


class _Loader(importlib.abc.Loader):
    """The module's own loader, and the actions after it executed the module."""

    def __init__(self, loader, name: str) -> None:
        self._loader, self._name = loader, name

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module) -> None:
        self._loader.exec_module(module)
        _run(self._name, module)

    def __getattr__(self, attribute):  # get_source, is_package, get_resource_reader, ...
        return getattr(self._loader, attribute)


class _Finder(importlib.abc.MetaPathFinder):
    """Finds nothing itself: for a watched name, the spec the other finders give, its loader wrapped."""

    def find_spec(self, fullname, path, target=None):
        if fullname not in _pending:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None:
                    spec.loader = _Loader(spec.loader, fullname)
                return spec
        return None
