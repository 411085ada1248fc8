"""Planted runtime error: the launcher raises what a failed launch raises on a GPU.
Expected status: RuntimeError (an exception, but not a compilation error)."""


def lse(x):
    raise RuntimeError("CUDA error: an illegal memory access was encountered")
