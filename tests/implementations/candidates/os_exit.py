"""Exits the process with os._exit(7): no cleanup, no exception."""

import os


def lse(x):
    os._exit(7)
