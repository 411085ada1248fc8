"""The attention-state merge under the fuzzer: what inputs exist (:mod:`.strategies`) and what must
hold (:mod:`.checks`) for ``merge_state(v_a, s_a, v_b, s_b) -> (v, s)``, and the same for a split-K
``combine(v, s) -> (v_out, s_out)`` (:mod:`.combine_strategies`, :mod:`.combine_checks`).

The oracle and the tolerance model are :mod:`reference.merge_oracle` and
:mod:`reference.merge_tolerance`; :mod:`.ops` declares the ops ``--op`` selects, :mod:`.runner`
runs them (``lse_fuzz.check(fn, op="merge_state")``, ``lse-fuzz check TARGET --op merge_state``).
"""

from .checks import MERGE_CHECKS, MergeFailure, run_merge_checks
from .combine_checks import COMBINE_CHECKS, run_combine_checks
from .combine_strategies import COMBINE_KINDS, CombineInput, combine_inputs
from .result import OpResult
from .runner import check_op, replay_op
from .strategies import STATE_KINDS, MergeInput, merge_inputs

__all__ = ["COMBINE_CHECKS", "COMBINE_KINDS", "MERGE_CHECKS", "STATE_KINDS", "CombineInput", "MergeFailure",
           "MergeInput", "OpResult", "check_op", "combine_inputs", "merge_inputs", "replay_op", "run_combine_checks",
           "run_merge_checks"]
