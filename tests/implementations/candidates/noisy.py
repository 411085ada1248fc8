"""Correct, but prints to stdout and stderr on every call (noise is tolerated and reported)."""

import sys

import torch


def lse(x: torch.Tensor) -> torch.Tensor:
    print(f"lse called on {tuple(x.shape)}")
    print("debug: computing", file=sys.stderr)
    out_dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
    return torch.logsumexp(x.to(torch.float64), dim=1).to(out_dtype)
