"""Triton 3.6's conversion of a kernel's scalar tensor to a Python int (``int(self.handle.data)``),
put back into whatever Triton runs the tests: the start of a script run in a fresh process (the
interpreter's patches are process-wide) by the tests of the NumPy 2.5 repair
(``reference._numpy_index``, ``fuzz.interpreter.numpy_compat``)."""

PRELUDE = """
import os, sys
os.environ["TRITON_INTERPRET"] = "1"
import numpy as np
import torch, triton, triton.language as tl
from triton.runtime import interpreter

original = interpreter._patch_lang_tensor

def triton_3_6(tensor, scope):  # Triton 3.6's line, on whatever Triton this is
    original(tensor, scope)
    scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data))

interpreter._patch_lang_tensor = triton_3_6
"""
