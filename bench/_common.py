"""Shared pieces of the benchmark scripts: shapes, the copy-bandwidth ceiling, timing."""

from __future__ import annotations

import datetime
import os
import platform

import torch

SHAPES = [
    (1048576, 128),
    (131072, 1000),
    (16384, 4096),
    (8192, 8192),
    (4096, 32768),
    (1024, 131072),
    (256, 1048576),
]
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


def median_ms(fn, *, rep_ms: int = 200) -> float:
    import triton.testing

    return float(triton.testing.do_bench(fn, warmup=25, rep=rep_ms, return_mode="median"))


def copy_bandwidth_gbs(nbytes: int = 2 * 1024**3) -> float:
    """Device-to-device copy bandwidth, counting bytes read plus bytes written (the ceiling)."""
    src = torch.empty(nbytes // 4, dtype=torch.float32, device="cuda").uniform_()
    dst = torch.empty_like(src)
    ms = median_ms(lambda: dst.copy_(src))
    return 2 * nbytes / (ms * 1e-3) / 1e9


def lse_bytes(x: torch.Tensor) -> int:
    rows, cols = x.shape
    return rows * cols * x.element_size() + 4 * rows


def run_header(device: str) -> str:
    """'date, device, torch, triton, python, CPUs': what a committed result file must say it ran on."""
    import triton

    where = torch.cuda.get_device_name() if device.startswith("cuda") else "CPU"
    return (f"{datetime.date.today().isoformat()}, {where}, torch {torch.__version__}, triton {triton.__version__}, "
            f"python {platform.python_version()}, {os.cpu_count()} CPUs")
