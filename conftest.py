"""Registers the project's pytest plugin when the package is not installed (a plain checkout)."""

import importlib.metadata

if not any(ep.name == "lse_fuzz" for ep in importlib.metadata.entry_points(group="pytest11")):
    pytest_plugins = ["lse_fuzz.plugin"]
