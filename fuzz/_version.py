"""The project's version, read once from the installed distribution's metadata (pyproject.toml)."""

from __future__ import annotations

from importlib import metadata

__all__ = ["__version__"]

try:
    __version__ = metadata.version("lse-fuzz")
except metadata.PackageNotFoundError:  # a plain checkout on PYTHONPATH, not installed
    __version__ = "0+unknown"
