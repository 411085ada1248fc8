"""Right answer, then negates its input in place (callers reuse their input: input_unchanged)."""

import torch


def lse(x: torch.Tensor) -> torch.Tensor:
    out_dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
    out = torch.logsumexp(x.to(torch.float64), dim=1).to(out_dtype)
    x.neg_()
    return out
