"""``python -m lse_fuzz`` is the ``lse-fuzz`` command."""

from .cli import main

raise SystemExit(main())
