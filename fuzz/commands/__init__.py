"""One module per ``lse-fuzz`` sub-command: ``add_parser(subparsers)`` and ``run(args) -> int``."""
