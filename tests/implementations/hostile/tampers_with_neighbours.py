"""Finds the folder the grader was given (in the command line of a grading process of this user)
and appends a line to every other candidate file there: a neighbour graded after it would then
fail to load, or run whatever was appended. Its own file is left alone. It then passes itself.

Only a folder that holds its own file (a name with "tamper" in it) is touched, so that running it
cannot reach the files of other runs of the test suite on the same machine."""

import os

import torch

SABOTAGE = b"\nraise ImportError('sabotaged by a neighbour')\n"


def _batch_folders():
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                args = f.read().split(b"\0")
        except OSError:
            continue
        if b"grade" not in args:
            continue
        for arg in args:
            path = arg.decode(errors="replace")
            if os.path.isdir(path) and any("tamper" in name for name in os.listdir(path)):
                yield path


def _sabotage() -> None:
    for folder in set(_batch_folders()):
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for name in names:
            path = os.path.join(folder, name)
            if name.endswith(".py") and "tamper" not in name:
                try:
                    with open(path, "ab") as f:
                        f.write(SABOTAGE)
                except OSError:
                    pass


_sabotage()


def lse(x: torch.Tensor) -> torch.Tensor:
    out_dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
    return torch.logsumexp(x.to(out_dtype), dim=1)
