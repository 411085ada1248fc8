"""Mutants: the correct LSE kernel with exactly one realistic bug each, one file per pitfall.

Each ``mutants/<name>.py`` is a copy of ``reference/_lse_kernel.py`` (or of the combine kernel in
``reference/_lse_combine.py``) whose docstring says the pitfall, where the field documents it,
which check should kill it and a minimal input that exposes it; a ``# BUG:`` comment sits on the
line above the bug. Each file has the launcher ``lse(x)`` and ``minimal_input()``.

    from mutants import MUTANTS
    mutant = MUTANTS["no_max_added"]
    mutant.target                      # "mutants.no_max_added:lse", for lse-fuzz and the workers
    mutant.load()(mutant.minimal_input())

The registry imports no kernel: a mutant's module is imported by :meth:`Mutant.load` (in the
mutation harness, inside the worker process that tests it).
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

__all__ = ["MUTANTS", "Mutant"]

BUG_MARKER = "# BUG:"


@dataclass(frozen=True)
class Mutant:
    """One planted bug: what it is, where it is documented, and the check that should catch it.

    ``target`` is ``"module:function"`` or ``"path/to/file.py:function"`` (what ``lse-fuzz``
    loads); ``expected_check`` is the name in :data:`fuzz.checks.CHECKS` that fires first when
    the whole suite runs.
    """

    name: str
    pitfall: str
    source: str
    expected_check: str
    target: str

    @property
    def module(self) -> str:
        return self.target.rpartition(":")[0]

    @property
    def path(self) -> Path:
        """The file that holds the mutant (found without importing it)."""
        location = self.module
        if location.endswith(".py") or "/" in location:
            return Path(location).resolve()
        spec = importlib.util.find_spec(location)
        if spec is None or spec.origin is None:
            raise ModuleNotFoundError(f"mutant {self.name!r}: module {location!r} not found")
        return Path(spec.origin)

    @property
    def source_text(self) -> str:
        return self.path.read_text()

    def bug_location(self) -> tuple[int, int, int, int]:
        """(line, column, end_line, end_column) of the buggy line, 1-based, end exclusive.

        The buggy line is the first code line after the ``# BUG:`` comment.
        """
        lines = self.source_text.splitlines()
        markers = [i for i, line in enumerate(lines) if line.strip().startswith(BUG_MARKER)]
        if not markers:
            return (1, 1, 1, 1)
        index = markers[0] + 1
        while index < len(lines) and (not lines[index].strip() or lines[index].strip().startswith("#")):
            index += 1
        if index >= len(lines):
            index = markers[0]
        line = lines[index]
        start = len(line) - len(line.lstrip()) + 1
        return (index + 1, start, index + 1, len(line) + 1)

    def load(self):
        """The mutant's ``lse`` callable (imports the module, which defines its kernels)."""
        from fuzz._target import load_target

        return load_target(self.target)

    def minimal_input(self):
        """The documented input that exposes the bug (a torch.Tensor; see the module docstring)."""
        from fuzz._target import load_target

        return load_target(f"{self.module}:minimal_input")()


def _mutant(name: str, pitfall: str, source: str, expected_check: str) -> Mutant:
    return Mutant(name=name, pitfall=pitfall, source=source, expected_check=expected_check,
                  target=f"mutants.{name}:lse")


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
            "log taken per lane before the reduction instead of once on the row sum",
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
            "32-bit row offsets wrap past 2**31 elements (the INT64 path removed)",
            "triton-lang/triton#832 and #6748; databricks/megablocks#185; fla-org/flash-linear-attention#1080",
            "agreement"),
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
