"""Option spellings that changed: the old one still works for one release, with a one-line notice.

The notice goes to stderr, once per spelling however often it is given, and names the new
spelling; the value lands where the new option's does, so the rest of the command never sees the
old name. The old spelling is left out of ``--help``: the glossary lists the renames.
"""

from __future__ import annotations

import argparse
import sys

__all__ = ["add_renamed"]

_NOTICED = "_renamed_noticed"  # the old spellings already announced, on the parsed namespace


class _Renamed(argparse.Action):
    """``--old VALUE`` (or the flag ``--old``) stored as ``--new`` would store it."""

    def __init__(self, option_strings, dest, *, new: str, **kwargs) -> None:
        self.new = new
        super().__init__(option_strings, dest, default=argparse.SUPPRESS, help=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        noticed = getattr(namespace, _NOTICED, set())
        if option_string not in noticed:
            print(f"lse-fuzz: {option_string} is now {self.new}; the old spelling goes away in the next release",
                  file=sys.stderr)
            setattr(namespace, _NOTICED, noticed | {option_string})
        setattr(namespace, self.dest, self.const if self.nargs == 0 else values)


def add_renamed(parser, old: str, new: str, *, dest: str, type=None, flag_value=None) -> None:
    """Accept ``old`` as the former spelling of ``new`` (whose parsed value is ``dest``). A flag
    (``flag_value`` given) stores that value; an option takes one argument converted by ``type``."""
    if flag_value is not None:
        parser.add_argument(old, dest=dest, action=_Renamed, new=new, nargs=0, const=flag_value)
    else:
        parser.add_argument(old, dest=dest, action=_Renamed, new=new, type=type)
