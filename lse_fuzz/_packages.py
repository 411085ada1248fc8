"""Which ``fuzz``, ``reference`` and ``mutants`` an import gets: lse-fuzz's own, or someone else's.

The distribution installs those three top-level packages beside :mod:`lse_fuzz`, and unrelated
projects use the same names: a ``reference/`` folder in your repository (on ``sys.path`` under
``python -m pytest``, or through ``PYTHONPATH``), or another installed distribution whose files pip
wrote into the same folder. Either way ``import reference`` would get the other package and fail
far from the cause (``cannot import name 'lse' from 'reference'``). :func:`verify_packages` finds
out first, without importing anything: each name must resolve to the folder beside this package,
and its ``__init__.py`` must carry the line ``__distribution__ = "lse-fuzz"``.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from ._errors import LseFuzzError

__all__ = ["OWN_PACKAGES", "PackageClash", "verify_packages"]

OWN_PACKAGES = ("fuzz", "reference", "mutants")
MARKER = '__distribution__ = "lse-fuzz"'
HOME = Path(__file__).resolve().parent.parent  # the folder lse_fuzz and its three packages were installed into


class PackageClash(LseFuzzError, ImportError):
    """Another package answers to one of the names lse-fuzz installs; the message names both and the fix."""


def verify_packages() -> None:
    """Raise :class:`PackageClash` unless every name in :data:`OWN_PACKAGES` resolves to lse-fuzz's own."""
    for name in OWN_PACKAGES:
        problem = _problem(name)
        if problem is not None:
            raise PackageClash(
                f"import name {name!r} {problem}, not to lse-fuzz's own package {str(HOME / name)!r}. "
                f"Another package named {name!r} comes first: rename or move a {name!r} folder or module of your "
                f"project (or take it off PYTHONPATH), or install lse-fuzz in a virtual environment of its own if "
                f"another distribution installs {name!r} too. The documented import is `import lse_fuzz`."
            )


def _problem(name: str) -> str | None:
    """Why ``name`` is not lse-fuzz's package (None when it is)."""
    loaded = sys.modules.get(name)
    if loaded is not None:
        origin = getattr(loaded, "__file__", None)
    else:
        try:
            spec = importlib.util.find_spec(name)  # what `import name` would load; runs none of it
        except (ImportError, ValueError) as exc:
            return f"cannot be looked up ({exc})"
        if spec is None:
            return "resolves to nothing (the package is missing: reinstall lse-fuzz)"
        origin = spec.origin
    if origin is None:
        return "resolves to a namespace package (a folder without __init__.py)"
    found = Path(origin).resolve()
    if found != HOME / name / "__init__.py":
        return f"resolves to {str(found)!r}"
    try:
        text = found.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        return f"resolves to {str(found)!r}, which cannot be read ({exc.strerror})"
    if MARKER not in text:  # the right folder, but another distribution wrote its own __init__.py there
        return f"resolves to {str(found)!r}, which another distribution overwrote"
    return None
