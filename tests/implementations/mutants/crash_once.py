"""Planted crash in the first worker only: the first call leaves a marker file in the worker's
working directory and aborts; a worker started after it finds the marker and answers correctly.
Used to check that the cells after a crash still run (in a fresh worker) and keep their own verdict."""

import os
from pathlib import Path


def lse(x):
    marker = Path("crash_once.marker")
    if not marker.exists():
        marker.touch()
        os.abort()
    import reference

    return reference.lse(x)
