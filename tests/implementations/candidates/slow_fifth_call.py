"""Right answers, but its fifth call sleeps :data:`SLEEP_SECONDS` (a stall once, say a page-in or a
neighbour's burst on a loaded machine). Slow once is not wrong: with the default --call-timeout it
passes, with a slow finding; past a short --call-timeout and the second deadline after it, that
call is a hang (verdict timeout), and the run stops there: no replay makes it pass. On every host
alike (a GPU host once graded it internal_error: tests/fuzz/grading/test_slow_once.py). Tests
grade copies that sleep less or more (the constant below is the anchor of their edit)."""

import time

import torch

SLEEP_SECONDS = 10.0
SLOW_CALL = 5

_calls = 0


def lse(x: torch.Tensor) -> torch.Tensor:
    global _calls
    _calls += 1
    if _calls == SLOW_CALL:
        time.sleep(SLEEP_SECONDS)
    out_dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
    return torch.logsumexp(x.to(torch.float64), dim=1).to(out_dtype)
