"""Hypothesis settings profiles for fuzzing LSE implementations.

``lse-ci`` is quick (pull requests, a few seconds per check on a CPU), ``lse-thorough`` runs long
overnight-style campaigns, ``lse-gpu`` is for compiled kernels on a GPU where a call costs
microseconds instead of milliseconds. All of them turn off deadlines (an interpreted kernel takes
milliseconds) and the health checks about slow or large data (large inputs are the point), and
keep no example database unless one is asked for: a database replays old failures first, which
makes runs depend on history rather than on their seed.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, Phase, Verbosity, settings
from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase

from reference.errors import InvalidArgument

__all__ = ["DEFAULT_PROFILE", "PROFILES", "database_for", "profile_settings"]

PROFILES: dict[str, int] = {"lse-ci": 50, "lse-thorough": 2000, "lse-gpu": 1000}
"""Profile name -> max_examples."""

DEFAULT_PROFILE = "lse-ci"

_COMMON = dict(
    deadline=None,
    database=None,
    derandomize=False,  # the runner seeds every run explicitly instead
    report_multiple_bugs=False,  # stop at the first failing check and shrink that one
    print_blob=False,
    verbosity=Verbosity.quiet,
    # The explain phase re-runs the failing example many times to guess which parts matter:
    # costly with a slow kernel and not needed, the failure message already says which row.
    phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink),
    suppress_health_check=list(HealthCheck),
)

for _name, _examples in PROFILES.items():
    settings.register_profile(_name, max_examples=_examples, **_COMMON)


def profile_settings(name: str | None) -> settings:
    """The registered profile ``name`` (default ``lse-ci``)."""
    name = DEFAULT_PROFILE if name is None else name
    if name not in PROFILES:
        raise InvalidArgument(f"profile={name!r}; expected one of {', '.join(PROFILES)}.")
    return settings.get_profile(name)


def database_for(database: ExampleDatabase | Path | str | None) -> ExampleDatabase | None:
    """An example database from a directory path (or an ExampleDatabase as is); None for none."""
    if database is None or isinstance(database, ExampleDatabase):
        return database
    if isinstance(database, (str, Path)):
        return DirectoryBasedExampleDatabase(str(database))
    raise InvalidArgument(f"database={database!r}; expected a directory path, an ExampleDatabase or None.")
