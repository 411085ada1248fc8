"""Planted crash: a read through a wild pointer (SIGSEGV), as a bad kernel address does in
Triton's interpreter. Expected status: RuntimeError."""

import ctypes


def lse(x):
    return ctypes.c_char.from_address(16).value  # address 16 is never mapped: segmentation fault
