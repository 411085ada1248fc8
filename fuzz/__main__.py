"""``python -m fuzz``: the ``lse-fuzz`` command without its check that ``fuzz``, ``reference`` and
``mutants`` are lse-fuzz's own (:mod:`lse_fuzz.cli`). Internal (the tests, the benchmarks): users,
and every line lse-fuzz prints, say ``lse-fuzz``."""

import sys

from .isolation import hold_signals, scrub_early

# First of all, before the imports below take their second: the private seed off /proc.
scrub_early(sys.argv)

# Before torch is imported (it starts a thread): every thread inherits the blocked mask, so only
# the grader's guard thread ever takes those signals; fuzz.cli.main lets them through again for
# the commands that do not guard them.
hold_signals()

from .cli import main  # noqa: E402

raise SystemExit(main())
