"""``python -m fuzz`` is the ``lse-fuzz`` command."""

from .isolation import signals

# Before torch is imported (it starts a thread): every thread inherits the blocked mask, so only
# the grader's guard thread ever takes those signals; fuzz.cli.main lets them through again for
# the commands that do not guard them.
signals.hold()

from .cli import main  # noqa: E402

raise SystemExit(main())
