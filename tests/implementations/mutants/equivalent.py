"""Planted equivalent "mutant": exp(t) in place of exp2(t * log2(e)) in the reference kernel.

The two are the same function up to a rounding or two, which the tolerance model covers, so no
check can kill it: the harness must report it Survived, not Killed. It is a patch of today's
reference like every bundled mutant, loaded the same way (a shadow copy of the reference package).
"""

from __future__ import annotations

from mutants._patch import Patch, load

PATCH = Patch(
    path="reference/_lse_kernel.py",
    anchor="tl.exp2((x - shift[:, None]) * LOG2E)",
    replacement="tl.exp(x - shift[:, None])",
)

lse = load(PATCH, name="planted_equivalent").lse
