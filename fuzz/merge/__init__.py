"""The attention-state merge under the fuzzer: what inputs exist (:mod:`.strategies`) and what must
hold (:mod:`.checks`) for ``merge_state(v_a, s_a, v_b, s_b) -> (v, s)``.

The oracle and the tolerance model are :mod:`reference.merge_oracle` and
:mod:`reference.merge_tolerance`. Not wired to the runner, the CLI or the plugin yet: these are the
pieces ``--op merge_state`` will drive.
"""

from .checks import MERGE_CHECKS, MergeFailure, run_merge_checks
from .strategies import STATE_KINDS, MergeInput, merge_inputs

__all__ = ["MERGE_CHECKS", "STATE_KINDS", "MergeFailure", "MergeInput", "merge_inputs", "run_merge_checks"]
