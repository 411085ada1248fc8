"""torch.logsumexp under torch.compile (Inductor), as users compile a model that holds it.

    compiled = torch.compile(lambda x: torch.logsumexp(x, dim=-1), dynamic=True)
    out = compiled(x)                         # x: (M, N) -> (M,), in x's dtype

Inductor generates C++ (on the CPU) or Triton (on CUDA) for the reduction instead of calling
ATen's kernel, so its numerics are its own (it sums float16 in float32: the float16 overflow of
eager torch.logsumexp does not happen here). dynamic=True compiles one graph per dtype and layout
class rather than one per shape, and the recompile limit is raised: past Dynamo's default of 8 a
function silently falls back to eager, and the fuzzer would be judging ATen's kernel instead.
Compiling is not counted as a hang.

Run with torch 2.13.0 (CPU, Inductor's C++ backend) and torch 2.11.0 (H200, Triton 3.6). Checked with

    lse-fuzz check examples/real_world/torch_compile_logsumexp.py:lse --device cpu --budget 60
"""

from __future__ import annotations

import torch


def _logsumexp_last_dim(x: torch.Tensor) -> torch.Tensor:
    return torch.logsumexp(x, dim=-1)


# Every dtype and layout the fuzzer draws must stay compiled (see the docstring).
torch._dynamo.config.recompile_limit = 1024
# One compiled function for the process, as a model compiles once.
_compiled = torch.compile(_logsumexp_last_dim, dynamic=True)


def lse(x: torch.Tensor) -> torch.Tensor:
    """Row-wise log-sum-exp: the compiled torch.logsumexp over the last dim."""
    return _compiled(x)
