"""Correct on every input the fuzzer draws, but remembers its answer for an input larger than any
of them (the benchmark's, which every timed call passes again): the timed calls return at once.
The bandwidth it then shows is faster than reading the input allows (flag impossible_speed)."""

import torch

_answers = {}
LARGER_THAN_FUZZED = 1 << 24  # elements; the fuzzer draws at most 2**22 on a GPU


def lse(x: torch.Tensor) -> torch.Tensor:
    out_dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
    if x.numel() <= LARGER_THAN_FUZZED:
        return torch.logsumexp(x.to(out_dtype), dim=1)
    key = (x.data_ptr(), tuple(x.shape), tuple(x.stride()), x.dtype)
    if key not in _answers:
        _answers[key] = torch.logsumexp(x.to(out_dtype), dim=1)
    return _answers[key]
