"""Planted hang: the first call never returns. Expected status: Timeout."""

import time


def lse(x):
    while True:
        time.sleep(60)
