"""A cold mutation analysis in variants of the memory phase and the job order (tree of 2026-12-06,
the one whose `fuzz.mutation.judge.mutant_options` starts only a memory mutant's own tool beside it).

    python bench/experiments/2026-12-06-mutants-variants.py VARIANT [bench/mutants_timeline.py's options]

VARIANT: ``A`` both compute-sanitizer tools beside each memory mutant's run (the tree before),
``O`` only the tool of its documented check (the tree), ``OB`` as O with the memory mutants first
in the first pass (instead of the catalog's order, which lists them last). Runs
``bench/mutants_timeline.py`` with the rest of the arguments; wrap it in ``bench/cpu_by_process.py``
to see whose CPU time it is. On a GPU host, from an empty Triton cache:
``TRITON_CACHE_DIR=EMPTY python bench/cpu_by_process.py -- python THIS A --device cuda -j 14``.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import bench.mutants_timeline as timeline  # noqa: E402 - starts the fork server first, as the CLI does
import fuzz.mutation.judge as judge  # noqa: E402

VARIANTS = ("A", "O", "OB")


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in VARIANTS:
        print(f"usage: {Path(__file__).name} {{{','.join(VARIANTS)}}} [mutants_timeline options]", file=sys.stderr)
        return 2
    variant = argv[0]
    if variant == "A":
        own_tool = judge.mutant_options
        judge.mutant_options = lambda options, mutant: replace(own_tool(options, mutant), memory_checks=None)
    if variant == "OB":
        first_pass = judge._first_pass_jobs

        def memory_first(run, mutants, *rest):
            jobs, survivors, timed_out = first_pass(run, mutants, *rest)
            probed = {m.name for m in mutants if m.expected_check in judge.MEMORY_CHECKS}
            return sorted(jobs, key=lambda job: job.key.partition(":")[2] not in probed), survivors, timed_out

        judge._first_pass_jobs = memory_first
    return timeline.main(argv[1:])


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
