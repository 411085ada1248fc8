"""What "right" means: the float64 oracle, the tolerance model, and the correct Triton LSE kernel.

On a machine without CUDA, importing this package turns on Triton's interpreter (TRITON_INTERPRET=1)
before any kernel is defined, so ``reference.lse`` runs on CPU tensors with no setup.
"""

from ._device import ensure_interpreter as _ensure_interpreter

__distribution__ = "lse-fuzz"  # read by lse_fuzz: a package of another distribution under this name lacks it

_ensure_interpreter()

from ._lse_backward_kernel import LseFunction, lse_autograd, lse_backward  # noqa: E402
from ._lse_kernel import lse  # noqa: E402
from ._combine_kernel import combine  # noqa: E402
from ._merge_state_kernel import merge_state  # noqa: E402
from .errors import InvalidArgument  # noqa: E402
from .gradient import GradientComparison, compare_gradient, lse_grad_reference  # noqa: E402
from .merge_oracle import combine_reference, merge_state_reference  # noqa: E402
from .merge_tolerance import (  # noqa: E402
    MergeComparison,
    MergeMismatch,
    check_combine,
    check_merge,
    combine_allowance,
    compare_merge,
    merge_allowance,
)
from .oracle import SUPPORTED_DTYPES, lse_reference  # noqa: E402
from .tolerance import (  # noqa: E402
    UNIT_ROUNDOFF,
    Comparison,
    acceptance_interval,
    allowed_error,
    compare,
    in_interval,
    is_close,
    pre_rounding_bound,
    round_to_dtype,
    ulp,
)

__all__ = [
    "SUPPORTED_DTYPES",
    "UNIT_ROUNDOFF",
    "Comparison",
    "GradientComparison",
    "InvalidArgument",
    "LseFunction",
    "MergeComparison",
    "MergeMismatch",
    "acceptance_interval",
    "allowed_error",
    "check_combine",
    "combine",
    "check_merge",
    "combine_allowance",
    "combine_reference",
    "compare",
    "compare_gradient",
    "compare_merge",
    "in_interval",
    "is_close",
    "lse",
    "lse_autograd",
    "lse_backward",
    "lse_grad_reference",
    "lse_reference",
    "merge_allowance",
    "merge_state",
    "merge_state_reference",
    "pre_rounding_bound",
    "round_to_dtype",
    "ulp",
]
