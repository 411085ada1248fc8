"""A cold mutation analysis with the first pass in the catalog's order or memory mutants first
(tree of 2026-12-06, evening: the last examples of a shared run go to their groups' shares, four
gate shares at -j 14, memory mutants first on a GPU: ``fuzz.mutation.judge.ordered``).

    python bench/experiments/2026-12-06-gate-shares-and-order.py VARIANT [bench/mutants_timeline.py's options]

VARIANT: ``T`` the tree; ``C`` the tree with the first pass in the catalog's order (the memory
mutants last, as before). Runs ``bench/mutants_timeline.py`` with the rest of the arguments
(``--gate-shares N`` for another split of the gate). On a GPU host, from an empty Triton cache:
``TRITON_CACHE_DIR=EMPTY python THIS T --device cuda -j 14``.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import bench.mutants_timeline as timeline  # noqa: E402 - starts the fork server first, as the CLI does
import fuzz.mutation.judge as judge  # noqa: E402

VARIANTS = ("T", "C")


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in VARIANTS:
        print(f"usage: {Path(__file__).name} {{{','.join(VARIANTS)}}} [mutants_timeline options]", file=sys.stderr)
        return 2
    if argv[0] == "C":
        judge.ordered = lambda jobs, mutants, options: jobs
    return timeline.main(argv[1:])


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
