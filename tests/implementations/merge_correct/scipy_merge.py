"""A merge with scipy.special.logsumexp on NumPy arrays, its weights from the same call's
``return_sign``-free form: how an analysis script checks a kernel. Natural-log LSEs."""

import numpy as np
import torch
from scipy.special import logsumexp


def merge_state(v_a, s_a, v_b, s_b):
    lses = np.stack([s_a.detach().cpu().double().numpy(), s_b.detach().cpu().double().numpy()])
    with np.errstate(invalid="ignore", divide="ignore"):
        s = logsumexp(lses, axis=0)
        weights = np.where(np.isneginf(lses), 0.0, np.exp(lses - np.where(np.isneginf(s), 0.0, s)))
    values = np.stack([v_a.detach().cpu().double().numpy(), v_b.detach().cpu().double().numpy()])
    v = (weights[..., None] * values).sum(axis=0)
    return (torch.from_numpy(v).to(device=v_a.device, dtype=v_a.dtype),
            torch.from_numpy(s).to(device=v_a.device, dtype=torch.float32))
