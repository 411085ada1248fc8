"""The mutation gate's stream on a GPU, drawn on the CPU, and how fuzz.shares splits it.

With the fuzzer's runs leaving Hypothesis's pool of local constants out (``fuzz.stream``), a
seed's stream no longer depends on the process, so the GPU-sized stream the gate draws (the
``lse-fuzz check`` test of the unmutated kernel: default checks, the strict contract, seed 0, 250
examples of which the last 4 are the fixed ones) can be drawn here without a GPU and without
running anything. On 2026-12-07 (eighth, tree 630912f) it gave 68/73/52/53 drawn examples in the
four shares, the H100's 70/75/52/53 less the fixed examples (2 each to shares 0 and 1): the same
split. A way to try other ways of splitting without a GPU.

    python bench/experiments/2026-12-07-gate-stream.py [SEED] [SHARES]
"""
import collections
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import seed as hypothesis_seed  # noqa: E402

from fuzz.checks import validate_checks  # noqa: E402
from fuzz.profiles import profile_settings  # noqa: E402
from fuzz.runner import plans  # noqa: E402
from fuzz.shares import ShareSplit  # noqa: E402
from fuzz.shrinking import launch_class  # noqa: E402
from fuzz.stream import own_stream  # noqa: E402
from fuzz.strategies import Contract, lse_inputs  # noqa: E402


def stream(seed: int = 0, budget: int = 250, last: int = 4) -> list[tuple]:
    """The launch classes of the drawn examples, in order (the body runs nothing)."""
    inputs = lse_inputs(contract=Contract.parse("strict"), device=torch.device("cuda"), huge_offsets=True)
    drawn = []

    @settings(profile_settings(None), max_examples=budget - last, database=None)
    @hypothesis_seed(seed)
    @given(example=inputs, plan=plans(validate_checks(None), 1))
    def test(example, plan):
        drawn.append(launch_class(example))

    with own_stream():
        test()
    return drawn


def main() -> int:
    seed = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    shares = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    classes = stream(seed)
    split = ShareSplit(shares)
    owners = [split.owner(c) for c in classes]
    per = collections.defaultdict(set)
    for c, owner in zip(classes, owners):
        per[owner].add(c)
    counts = collections.Counter(owners)
    print(f"seed {seed}: {len(classes)} examples, {len(set(classes))} launch classes")
    for k in range(shares):
        groups = sorted({(c[0].rpartition('.')[2], c[1]) for c in per[k]}, key=lambda g: (g[0], g[1]))
        print(f"share {k}: {counts[k]} examples, {len(per[k])} classes; groups {groups}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
