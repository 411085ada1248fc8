"""Mutant: 32-bit row offsets that wrap past 2**31 elements (the INT64 path never taken).

Patch: the launch policy (reference/_launch.py) sets ``int64=False`` whatever the largest offset,
so the kernel never casts its row and column indices to int64 and computes
``safe_rows * stride_row`` in int32 even for views that reach 2**31 elements and more.

Pitfall: in Triton, int32 * int32 stays int32. A row stride that fits in int32 (say 2**30)
times a row index of 2 or more wraps to a negative offset, and the load reads before the row: an
illegal memory access on a GPU if that address is unmapped, silently wrong values if it is mapped.
Tests rarely build tensors with 2**31 elements, so the bug ships. (A stride >= 2**31 is passed as
an int64 argument and hides the bug: it takes a stride below 2**31 and three rows or more.)

Documented: triton-lang/triton#832 and #6748 (pointer offsets overflow int32);
databricks/megablocks#185 (offset * NUM_COLUMNS wraps negative, illegal memory access);
fla-org/flash-linear-attention#1080 (silent corruption past 2**31 elements).

Killed by: ``memory_bounds``, on both devices. The wrapped offset addresses memory before the
view. On the CPU the interpreter's bounds check stops that read on the fuzzer's ``huge_offset``
layouts (views of three rows or more whose row stride is below 2**31). On a GPU the fuzzer's huge
views start 2**31 elements into a lazily allocated storage, so the wrapped read lands inside the
allocation, reads untouched pages (zeros) and fails ``shift_invariance`` (``agreement`` on the first
example; Hypothesis shrinks to rows of zeros, which the wrapped read reproduces by chance); the
memory phase then runs views past 2**31 elements at the start of their own allocation under
compute-sanitizer's memcheck, where the wrapped address lies outside every allocation, and names
the read (the fuzzing's failure is kept below it). ``lse_fuzz.check`` on a GPU, which runs no
memory phase, reports ``shift_invariance``. Examples the fuzzer draws by default stay far below
2**31 elements.

Minimal input: 3 rows of ``[1.0, 1.0, 1.0, 1.0]`` (float16) at row stride 2**30 + 1 and storage
offset 2**31 (8 GiB of storage, untouched except for the 12 elements) -> expected
1 + log 4 = 2.3863 for every row, got log 4 = 1.3863 for row 2 (it read 4 zeros).
"""

from __future__ import annotations

import torch

EXPECTED_CHECK = "memory_bounds"

PATH = "reference/_launch.py"
ANCHOR = "int64=_largest_offset(rows, cols, stride_row, stride_col) >= 2**31 - 1,"
REPLACEMENT = "int64=False,"


def minimal_input(device: torch.device) -> torch.Tensor:
    rows, cols, row_stride, offset = 3, 4, 2**30 + 1, 2**31
    size = offset + (rows - 1) * row_stride + cols
    # torch.empty on a CPU maps pages lazily: the 8 GiB cost nothing until touched, and untouched
    # pages read as zeros. A GPU has no lazy pages; zero it so the wrapped read is deterministic.
    make = torch.empty if device.type == "cpu" else torch.zeros
    storage = make(size, dtype=torch.float16, device=device)
    x = storage.as_strided((rows, cols), (row_stride, 1), offset)
    x.fill_(1.0)
    return x
