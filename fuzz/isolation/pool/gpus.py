"""Every GPU of a host: which GPUs a pool spreads its drivers over.

A pool given ``gpus`` starts each driver with ``CUDA_VISIBLE_DEVICES`` set to one of them, the one
with the fewest live drivers, so a job's device ``cuda`` (and its candidate worker's, which inherits
the variable) is that GPU. Only an unindexed ``cuda`` is spread: ``cuda:1`` means that GPU, for
every job. The parent reads the visible GPUs from ``CUDA_VISIBLE_DEVICES`` or counts them with
``torch.cuda.device_count``; that touches no driver, which every pool forks from a fork server
started as a fresh process that never initialises CUDA.
"""

from __future__ import annotations

import os

__all__ = ["spread_over"]

VISIBLE = "CUDA_VISIBLE_DEVICES"


def spread_over(device: str, environ: dict[str, str] | None = None) -> list[str]:
    """The GPUs (values for ``CUDA_VISIBLE_DEVICES``) to spread jobs on ``device`` over.

    Empty, meaning "leave every driver's environment as it is", unless ``device`` is an unindexed
    ``cuda`` and more than one GPU is visible.
    """
    if device != "cuda":
        return []
    environ = os.environ if environ is None else environ
    visible = environ.get(VISIBLE)
    if visible is not None:
        # CUDA stops at the first entry it cannot parse; an empty list hides every GPU.
        gpus = [part.strip() for part in visible.split(",") if part.strip()]
    else:
        import torch

        gpus = [str(index) for index in range(torch.cuda.device_count())]
    return gpus if len(gpus) > 1 else []
