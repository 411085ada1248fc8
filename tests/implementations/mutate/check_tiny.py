"""A user's own (deliberately small) test of tiny_lse, run by ``lse-fuzz mutate --tests``: exit 0 = pass."""

import sys

import torch

from tiny_lse import lse

for rows, cols in ((3, 17), (1, 5)):
    x = torch.linspace(-3.0, 3.0, rows * cols).reshape(rows, cols)
    if not torch.allclose(lse(x), torch.logsumexp(x, dim=1), atol=1e-5):
        sys.exit(f"lse differs from torch.logsumexp on a {rows}x{cols} input")
