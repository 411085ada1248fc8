"""Planted crash: the process aborts (SIGABRT) on the first call. Expected status: RuntimeError."""

import os


def lse(x):
    os.abort()
