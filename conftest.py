"""Registers the project's pytest plugin when the package is not installed (a plain checkout)."""

import importlib.metadata

if not any(ep.value == "fuzz.plugin" for ep in importlib.metadata.entry_points(group="pytest11")):
    pytest_plugins = ["fuzz.plugin"]
