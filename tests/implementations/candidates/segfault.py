"""Crashes the process: reads address 0 (SIGSEGV)."""

import ctypes


def lse(x):
    ctypes.string_at(0)
