"""Finds the folder its grader was given (in the command line of one of its own ancestors, which
a grading process is) and appends a line to every other candidate file there: a neighbour graded
after it would then fail to load, or run whatever was appended. Its own file is left alone. It then
passes itself.

Only its own ancestors are searched, and only a folder that holds its own file (a name with
"tamper" in it) is touched: another grading run on the same machine (the test suite runs several
at once) is never reached. What it does to its own batch is what any search of the machine would."""

import os

import torch

SABOTAGE = b"\nraise ImportError('sabotaged by a neighbour')\n"


def _ancestors():
    pid = os.getppid()
    while pid > 1:
        yield pid
        try:
            with open(f"/proc/{pid}/stat") as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            return


def _batch_folders():
    for pid in _ancestors():
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
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
