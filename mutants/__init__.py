"""Mutants: the correct LSE kernel with exactly one realistic bug each, one file per pitfall.

A mutant is an *anchored edit* of today's reference package, not a copy of it: each
``mutants/<name>.py`` holds only its docstring (the pitfall, where the field documents it, which
check should kill it, a minimal input that exposes it, and what the patch changes), ``PATCH``, a
:class:`Patch` (a file of ``reference/``, an anchor that must occur exactly once in it, and its
replacement), and ``minimal_input()``. The patched kernel is loaded from a shadow copy of the
reference package (see :mod:`mutants._patch`), so it launches through the reference's own
launcher and launch policy: the only difference between a mutant and ``reference.lse`` is the
patch, and a reference edit that breaks an anchor fails loudly instead of letting the mutant drift.

    from mutants import MUTANTS
    mutant = MUTANTS["no_max_added"]
    print(mutant.diff())               # the one edit, as a unified diff
    mutant.location()                  # ("reference/_lse_combine.py", 36, 42, 36, 67)
    mutant.target                      # "mutants.patched:no_max_added", for lse-fuzz and the workers
    mutant.load()(mutant.minimal_input())

:data:`UNMUTATED_TARGET` (``"mutants.patched:unmutated"``) is the empty patch loaded the same way:
the mutation gate's kernel. Importing this registry imports no kernel and not Triton; the mutant
modules import only torch and :mod:`mutants._patch`. A kernel is loaded by :meth:`Mutant.load`
(in the mutation harness, inside the worker process that tests it).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

import torch

from . import _patch
from ._patch import Patch, PatchError

__distribution__ = "lse-fuzz"  # read by lse_fuzz: a package of another distribution under this name lacks it

__all__ = ["MUTANTS", "UNMUTATED_TARGET", "Mutant", "Patch", "PatchError"]

UNMUTATED_TARGET = "mutants.patched:unmutated"
"""TARGET of the reference kernel loaded the way mutants are (the empty patch): the gate's kernel."""


@dataclass(frozen=True)
class Mutant:
    """One planted bug: what it is, where it is documented, the check that should catch it, and
    the patch that plants it.

    ``expected_check`` is the name in :data:`fuzz.checks.CHECKS` that reports the (shrunk)
    counterexample when the whole suite runs; ``patch`` is the module's ``PATCH``.
    """

    name: str
    pitfall: str
    source: str
    expected_check: str
    patch: Patch

    @property
    def target(self) -> str:
        """``"mutants.patched:<name>"``: what ``lse-fuzz`` and the worker processes load."""
        return f"mutants.patched:{self.name}"

    @property
    def module(self) -> str:
        """The module that holds the mutant's docstring, patch and minimal input."""
        return f"{__name__}.{self.name}"

    def diff(self) -> str:
        """The patch as a unified diff of the reference file it edits."""
        return _patch.diff(self.patch, name=self.name)

    def location(self) -> tuple[str, int, int, int, int]:
        """(path, line, column, end_line, end_column) of the anchor in the reference file;
        1-based, end exclusive (a Stryker report's location)."""
        return _patch.location(self.patch, name=self.name)

    def load(self):
        """The mutant's ``lse``: the launcher of the reference package with the patch applied."""
        return _patch.load(self.patch, name=self.name).lse

    def minimal_input(self) -> torch.Tensor:
        """The documented input that exposes the bug, on the device the kernels run on."""
        return importlib.import_module(self.module).minimal_input()


def _mutant(name: str, pitfall: str, source: str, expected_check: str) -> Mutant:
    patch = importlib.import_module(f"{__name__}.{name}").PATCH
    return Mutant(name=name, pitfall=pitfall, source=source, expected_check=expected_check, patch=patch)


_MUTANT_LIST = (
    _mutant("no_max_added",
            "forgets to add the row max back: returns log(sum(exp(x - m)))",
            "V. Guerra, 'Triton: Row-Wise LogSumExp', pitfalls; Blanchard, Higham & Higham 2021, sec. 2",
            "shift_invariance"),
    _mutant("masked_lanes_zero",
            "masked lanes of the tail tile load 0.0 instead of -inf",
            "Triton tutorial 02-fused-softmax (other=-float('inf')); V. Guerra, 'Triton: Row-Wise LogSumExp'",
            "agreement"),
    _mutant("log_per_lane",
            "log taken per lane, before the reduction",
            "V. Guerra, 'Triton: Row-Wise LogSumExp', pitfalls ('nonlinear op after the combine')",
            "agreement"),
    _mutant("hardcoded_row_stride",
            "row offset computed as row * N instead of row * stride_row",
            "V. Guerra, 'Triton: Row-Wise LogSumExp', pitfalls; Triton tutorial 02 passes x.stride(0)",
            "agreement"),
    _mutant("no_max_shift",
            "no max shift at all: log(sum(exp(x))) overflows above ~88.7 in float32",
            "Blanchard, Higham & Higham 2021, 'Accurately computing the log-sum-exp and softmax functions'",
            "agreement"),
    _mutant("int32_offsets",
            "32-bit row offsets wrap past 2**31 elements (64-bit index math never chosen)",
            "triton-lang/triton#832 and #6748; databricks/megablocks#185; fla-org/flash-linear-attention#1080",
            "shift_invariance"),
    _mutant("neg_inf_rows_nan",
            "all -inf rows give NaN: -inf - (-inf) with the shift and rescale guards removed",
            "rmcgibbo/logsumexp#2; tensorflow/tensorflow#11692; pytorch/pytorch#41508",
            "agreement"),
    _mutant("one_tile_per_row",
            "long rows silently truncated to their first tile (no loop over tiles)",
            "Triton tutorial 02-fused-softmax (BLOCK_SIZE = next_power_of_2(n_cols): one tile per row)",
            "agreement"),
    _mutant("online_no_rescale",
            "online loop does not rescale the running sum when the running max grows",
            "Milakov & Gimelshein 2018, 'Online normalizer calculation for softmax', alg. 3; Dao et al. 2022",
            "agreement"),
    _mutant("input_dtype_accumulation",
            "running sum kept in the input dtype (float16/bfloat16) instead of float32",
            "Micikevicius et al. 2018, 'Mixed Precision Training' (accumulate in float32)",
            "agreement"),
    _mutant("nan_ignored",
            "NaN treated as a masked lane: the result is finite instead of NaN",
            "triton-lang/triton#1566 and #10291 (tl.max ignores NaN); rusty1s/pytorch_scatter#369",
            "agreement"),
    _mutant("pos_inf_nan",
            "+inf rows give NaN: inf - inf, the shift guarded for -inf only",
            "pytorch/pytorch#6864 and #49724; bdusell/semiring-einsum#13",
            "agreement"),
    _mutant("column_stride_ignored",
            "column stride assumed to be 1 (transposed and strided views read the wrong elements)",
            "Triton tutorial 02-fused-softmax passes only the row stride; torch.Tensor.stride docs",
            "agreement"),
    _mutant("tail_mask_off_by_one",
            "tail mask cols <= N: one element past the row is read",
            "triton-lang/triton#10336 (masked loads past a view's end); CWE-193 off-by-one",
            "agreement"),
    _mutant("split_no_rescale",
            "split-row combine adds the partial sums without rescaling them to the row max",
            "Dao et al. 2023, 'Flash-Decoding for long-context inference' (rescale each split); "
            "Dao-AILab/flash-attention#949",
            "agreement"),
    _mutant("input_as_scratch",
            "writes the shifted tile back into the input (scratch space), corrupting the caller's tensor",
            "unslothai/unsloth#5002; linkedin/Liger-Kernel#1251 (cross-entropy kernels overwrite logits)",
            "input_unchanged"),
    _mutant("empty_rows_wrong_shape",
            "an (M, 0) input returns shape (0,) instead of M values of -inf",
            "pydata/numexpr#229; scipy/scipy#20399; pytorch/pytorch#9825 (empty reductions)",
            "output_contract"),
)

MUTANTS: dict[str, Mutant] = {mutant.name: mutant for mutant in _MUTANT_LIST}
"""Every mutant by name, in the order reports list them."""
