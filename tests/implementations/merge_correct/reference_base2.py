"""The project's Triton merge and combine kernels asked for base-2 LSEs (``--lse-base 2``)."""

import reference


def merge_state(v_a, s_a, v_b, s_b):
    return reference.merge_state(v_a, s_a, v_b, s_b, base=2)


def combine(v, s):
    return reference.combine(v, s, base=2)
