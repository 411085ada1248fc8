"""reference.merge_state against the float64 merge oracle on one device: a grid of cases, one line each.

    python bench/merge_state_device.py [--device cuda]

Cases: float32/float16/bfloat16 values, D of 1, 3, 100 and 128, both LSE bases, states drawn at
scales 5 and 1e4 with some empty (s = -inf), both empty and far apart (|s_a - s_b| > 100), and the
LSE tensors transposed ((H, T) viewed as (T, H)). Prints the worst element's share of its allowance
per case and exits 1 if any case is outside the tolerance model (reference.check_merge).
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from reference import check_merge, merge_state  # noqa: E402


def _states(tokens, heads, dim, dtype, scale, device, gen):
    s = torch.randn(2, tokens, heads, generator=gen) * scale
    s[0, ::5] = -math.inf  # some empty states
    s[:, 1::7] = -math.inf  # some pairs of empty states
    s[1, 2::9] = s[0, 2::9] - 150.0  # far apart
    v = torch.randn(2, tokens, heads, dim, generator=gen).to(dtype)
    # LSE tensors stored (H, T), read as (T, H): the layout a kernel that assumes contiguity misreads.
    s_a, s_b = (x.t().contiguous().t() for x in s)
    return v[0].to(device), s_a.to(device), v[1].to(device), s_b.to(device)


def _share(error: torch.Tensor, allowance: torch.Tensor) -> float:
    """The largest error / allowance over elements with a finite nonzero allowance (0 where none)."""
    judged = torch.isfinite(error) & (allowance > 0)
    return float((error[judged] / allowance[judged]).max()) if bool(judged.any()) else 0.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    device = parser.parse_args().device
    name = torch.cuda.get_device_name() if device == "cuda" else "CPU (Triton interpreter)"
    print(f"# merge_state on {name}, torch {torch.__version__}")
    failed, gen = 0, torch.Generator().manual_seed(0)
    for dtype, dim, base, scale in itertools.product((torch.float32, torch.float16, torch.bfloat16),
                                                     (1, 3, 100, 128), ("e", 2), (5.0, 1e4)):
        v_a, s_a, v_b, s_b = _states(37, 6, dim, dtype, scale, device, gen)
        got_v, got_s = merge_state(v_a, s_a, v_b, s_b, base=base)
        comparison = check_merge(*(t.cpu() for t in (v_a, s_a, v_b, s_b, got_v, got_s)), base=base)
        share = max(_share(comparison.error_v, comparison.allowance_v), _share(comparison.error_s, comparison.allowance_s))
        failed += not comparison.ok
        print(f"{'ok  ' if comparison.ok else 'FAIL'} {str(dtype)[6:]:8} D={dim:<3} base={base} scale={scale:g}: "
              f"worst {share:.3f} of its allowance")
        if not comparison.ok:
            print(comparison.explain())
    print(f"{'FAILED' if failed else 'PASSED'}: {failed} of {3 * 4 * 2 * 2} cases outside the tolerance")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
