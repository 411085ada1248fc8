"""Right answer, then zeroes the storage element just past row 0 when that is padding: it writes
memory that belongs to the caller (input_unchanged)."""

import torch


def lse(x: torch.Tensor) -> torch.Tensor:
    out_dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
    out = torch.logsumexp(x.to(torch.float64), dim=1).to(out_dtype)
    rows, cols = x.shape
    if rows and cols and x.stride(1) == 1 and x.stride(0) > cols:
        x.as_strided((1,), (1,), x.storage_offset() + cols).zero_()
    return out
