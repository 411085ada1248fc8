"""Calls sys.exit while being imported."""

import sys

sys.exit("no GPU, giving up")


def lse(x):
    return x
