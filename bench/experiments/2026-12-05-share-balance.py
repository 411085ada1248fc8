"""How evenly the mutation gate's shares split one stream: launch classes and examples per share,
grouped by a hash of (dtype, N's power of two) as before 2026-12-05, and as fuzz.shares groups them
now (each new group to the share with the fewest classes). On the CPU's stream (Triton's shapes for
the CPU), with a torch implementation that passes every example, budget 250, three shares.

    python bench/experiments/2026-12-05-share-balance.py [SEED ...]
"""
import sys
import zlib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch  # noqa: E402

import lse_fuzz  # noqa: E402
from fuzz import run as run_module  # noqa: E402
from fuzz.shrinking import launch_class  # noqa: E402


def correct(x):
    return torch.logsumexp(x.double(), 1).to(torch.float64 if x.dtype == torch.float64 else torch.float32)


def per_share(share, hashed, seed):
    """(launch classes, examples) that share ``share`` runs of the stream of ``seed``."""
    classes, examples, own = set(), [0], run_module.Run.skips

    def skips(self, example):
        if hashed and self.share is not None and not self.shrink.shrinking:
            dtype, block = launch_class(example)[:2]
            skipped = zlib.crc32(f"{dtype}/{block}".encode()) % self.share[1] != self.share[0]
        else:
            skipped = own(self, example)
        if not skipped:
            classes.add(launch_class(example))
            examples[0] += 1
        return skipped

    run_module.Run.skips = skips
    try:
        result = lse_fuzz.check(correct, budget=250, seed=seed, device="cpu", share=share, huge_offsets=False)
        assert result.passed, result.summary()
    finally:
        run_module.Run.skips = own
    return len(classes), examples[0]


for seed in [int(s) for s in sys.argv[1:]] or [0, 1, 2]:
    for hashed in (True, False):
        print(f"seed {seed}, {'hash of the group' if hashed else 'fuzz.shares'}: (classes, examples) per share",
              [per_share((k, 3), hashed, seed) for k in range(3)])
