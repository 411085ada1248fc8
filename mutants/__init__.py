"""The bundled mutants: a correct reference kernel with exactly one realistic bug each, one file per pitfall.

This package is data. Each ``mutants/<name>.py`` holds its docstring (the pitfall on its first line,
what the patch changes, where the field documents the pitfall, which check should kill it, a minimal
input that exposes it), ``EXPECTED_CHECK``, the patch (``PATH``: a file of ``reference/``;
``ANCHOR``: text that must occur exactly once in it; ``REPLACEMENT``) and ``minimal_input(device)``.
A mutant is an anchored edit of today's reference package, not a copy of it: a reference edit that
breaks an anchor fails loudly instead of letting the mutant drift. The merge kernel's mutants
(:data:`MERGE_NAMES`) add ``FUNCTION`` and ``OP`` (``"merge_state"``), and their
``minimal_input(device)`` returns the call's four tensors ``(v_a, s_a, v_b, s_b)``.

The mutation engine (:mod:`fuzz.mutation`) reads them as one of its sources of mutants
(``lse-fuzz mutants``, or ``fuzz.mutation.catalog()``: the row-LSE mutants, :data:`NAMES`, only);
``mutants.patched:<name>`` is the TARGET of the reference package with mutant <name>'s patch, loaded
from a shadow copy of the package so that it launches through the reference's own launcher and
launch policy. Importing this package imports no kernel and not Triton.
"""

from __future__ import annotations

__distribution__ = "lse-fuzz"  # read by lse_fuzz: a package of another distribution under this name lacks it

__all__ = ["BACKWARD_NAMES", "MERGE_NAMES", "NAMES", "UNMUTATED_TARGET"]

NAMES = (
    "no_max_added",
    "masked_lanes_zero",
    "log_per_lane",
    "hardcoded_row_stride",
    "no_max_shift",
    "int32_offsets",
    "neg_inf_rows_nan",
    "one_tile_per_row",
    "online_no_rescale",
    "input_dtype_accumulation",
    "nan_ignored",
    "pos_inf_nan",
    "column_stride_ignored",
    "tail_mask_off_by_one",
    "split_no_rescale",
    "input_as_scratch",
    "empty_rows_wrong_shape",
    "half_tile_counted_twice",
    "max_only",
    "max_plus_log_n",
    "finite_sentinel",
    "unmasked_tail_load",
    "grid_without_row_guard",
    "store_past_output",
    "skipped_empty_partial",
)
"""Every mutant's module name, in the order reports list them."""

BACKWARD_NAMES = (
    "grad_no_max_shift",
    "grad_upstream_not_applied",
    "grad_over_input",
    "grad_wrong_row_stride",
)
"""The backward's mutants: edits of ``reference/_lse_backward_kernel.py``, judged through
``reference.lse_autograd`` (each file's ``FUNCTION``) with ``--backward`` (``BACKWARD = True``)."""

MERGE_NAMES = (
    "merge_no_empty_guard",
    "merge_finite_sentinel",
    "merge_exp2_on_natural_logs",
    "merge_weights_not_renormalized",
    "merge_lse_stride_ignored",
)
"""The attention-state merge's mutants: edits of ``reference/_merge_state_kernel.py``, judged through
``reference.merge_state`` (each file's ``FUNCTION``) with the merge_state op's checks
(:data:`fuzz.merge.MERGE_CHECKS`; each file's ``OP``)."""

UNMUTATED_TARGET = "mutants.patched:unmutated"
"""TARGET of the reference kernel loaded the way mutants are (the empty patch)."""
