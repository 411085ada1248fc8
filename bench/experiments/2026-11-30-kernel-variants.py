"""Experiment of 2026-11-30 (kept as it ran): kernel variants as text edits of reference/, timed on the
benchmark shapes of a CUDA GPU; results in bench/results/2026-11-30-h200-kernel-variants*.txt.

The edits (EDITS) are anchored on the reference kernel of tree 1afe503, before the quarter-width
loads: run it from a checkout of that tree (``git worktree add /tmp/t 1afe503``), with the copy of
this file placed at the same depth (two folders below the root, so ROOT resolves). Variant "old"
reads a copy of an older reference from build/other/reference_other (see bench/compare_kernels.py),
and "base" is the tree's own reference, which is how the quarter-load kernel was timed. A policy is
TILE_BYTES:MAX_BLOCK_N:WARPS[:STAGES].
Each variant is written to build/exp/exp_NAME/ and imported from there.
"""
import argparse, importlib, math, shutil, sys, dataclasses
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
import torch
from bench._common import SHAPES, DTYPES, copy_bandwidth_gbs, lse_bytes, median_ms

UPD_OLD = '''    terms = tl.exp2((x - _shift(new_max)[:, None]) * LOG2E)
    return new_max, run_sum * _rescale(run_max, new_max) + tl.sum(terms, axis=1)'''
FMA_TERMS = '''    shift = _shift(new_max)
    if tl.max(tl.abs(shift), axis=0) < 1.0e38:
        terms = tl.exp2(tl.fma(x, LOG2E, (-(shift * LOG2E))[:, None]))
    else:
        terms = tl.exp2((x - shift[:, None]) * LOG2E)'''
EDITS = {
    "base": [],
    "old": [],
    "fma": [(UPD_OLD, FMA_TERMS + "\n    return new_max, run_sum * _rescale(run_max, new_max) + tl.sum(terms, axis=1)")],
    "acc": [(UPD_OLD, UPD_OLD.replace("run_sum * _rescale(run_max, new_max) + tl.sum(terms, axis=1)",
                                        "run_sum * _rescale(run_max, new_max)[:, None] + terms")),
            ("run_sum = tl.zeros([BLOCK_M], dtype)", "run_sum = tl.zeros([BLOCK_M, BLOCK_N], dtype)"),
            ("    tail = col_begin + full_tiles * BLOCK_N\n    if tail < col_end:",
             "    tail = col_begin + full_tiles * BLOCK_N\n    if tail < col_end:"),
            ("    if PARTIALS:\n        # Split row", "    run_sum = tl.sum(run_sum, axis=1)\n    if PARTIALS:\n        # Split row")],
    "nomath": [(UPD_OLD, "    terms = x - new_max[:, None]\n    return new_max, run_sum + tl.sum(terms, axis=1)")],
    "nomax": [(UPD_OLD, "    terms = tl.exp2((x - 1.0) * LOG2E)\n    return run_max, run_sum + tl.sum(terms, axis=1)")],
    "loadonly": [(UPD_OLD, "    return run_max, run_sum + tl.sum(x, axis=1)")],
}
FFMA_TERMS = '''    shift = _shift(new_max)
    huge = tl.abs(shift) >= 18446744073709551616.0
    scale = tl.where(huge, 1.0, LOG2E)
    terms = tl.exp2(tl.fma(x, scale[:, None], -(shift * scale)[:, None]))'''
EDITS["ffma"] = [(UPD_OLD, FFMA_TERMS + "\n    return new_max, run_sum * _rescale(run_max, new_max) + tl.sum(terms, axis=1)")]
LOOP_OLD = '''            cols = _cols(col_begin + tile * BLOCK_N, BLOCK_N, INT64)
            x = tl.load(row_ptrs + cols[None, :] * stride_col)
            run_max, run_sum = _update(run_max, run_sum, x.to(dtype))'''
LOOP_NEW = '''            c0 = _cols(col_begin + tile * BLOCK_N, BLOCK_N // 4, INT64)
            x0 = tl.load(row_ptrs + c0[None, :] * stride_col).to(dtype)
            x1 = tl.load(row_ptrs + (c0 + BLOCK_N // 4)[None, :] * stride_col).to(dtype)
            x2 = tl.load(row_ptrs + (c0 + 2 * (BLOCK_N // 4))[None, :] * stride_col).to(dtype)
            x3 = tl.load(row_ptrs + (c0 + 3 * (BLOCK_N // 4))[None, :] * stride_col).to(dtype)
            new_max = tl.maximum(run_max, tl.max(tl.maximum(tl.maximum(x0, x1), tl.maximum(x2, x3)), axis=1))
            shift = _shift(new_max)
            huge = tl.abs(shift) >= 18446744073709551616.0
            scale = tl.where(huge, 1.0, LOG2E)[:, None]
            c = -(shift[:, None] * scale)
            t = tl.exp2(tl.fma(x0, scale, c)) + tl.exp2(tl.fma(x1, scale, c)) + tl.exp2(tl.fma(x2, scale, c)) + tl.exp2(tl.fma(x3, scale, c))
            run_sum = run_sum * _rescale(run_max, new_max) + tl.sum(t, axis=1)
            run_max = new_max'''
EDITS["ffma4"] = EDITS["ffma"] + [(LOOP_OLD, LOOP_NEW)]
EDITS["accfma"] = [(UPD_OLD, FMA_TERMS + "\n    return new_max, run_sum * _rescale(run_max, new_max)[:, None] + terms")] + EDITS["acc"][1:]
EDITS["packmax"] = [("new_max = tl.maximum(run_max, tl.max(x, axis=1))",
                     "new_max = tl.maximum(run_max, tl.reduce(x, 1, _max2).to(run_max.dtype))\n    x = x.to(run_max.dtype)"),
                    ("@triton.jit\ndef _update(", "@triton.jit\ndef _max2(a, b):\n    return tl.maximum(a, b)\n\n\n@triton.jit\ndef _update("),
                    ]
# packmax: pass raw x into _update (convert inside)
PACK_CALLS = ("run_max, run_sum = _update(run_max, run_sum, x.to(dtype))", "run_max, run_sum = _update(run_max, run_sum, x)")
# nomax: leaves new_max unused
EDITS["nomax"].append(("    new_max = tl.maximum(run_max, tl.max(x, axis=1))\n", ""))


def build(name):
    src = ROOT / "build" / "other" / "reference_other" if name == "old" else ROOT / "reference"
    dst = ROOT / "build" / "exp" / f"exp_{name}"
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__"))
    path = dst / "_lse_kernel.py"
    text = path.read_text()
    edits = list(EDITS[name])
    if name == "packmax":
        text = text.replace(*PACK_CALLS)
    for old, new in edits:
        assert text.count(old) >= 1, (name, old)
        text = text.replace(old, new)
    path.write_text(text)
    sys.path.insert(0, str(ROOT / "build" / "exp"))
    return importlib.import_module(f"exp_{name}")


def policy(pkg, x, tile_bytes, max_bn, warps, sms, waves=2, stages=1):
    from reference._launch import _align, _next_pow2
    rows, cols = x.shape
    es = x.element_size()
    tile = tile_bytes // es
    block_n = min(max(_next_pow2(cols), 16), max_bn)
    block_m = max(1, tile // block_n)
    row_blocks = math.ceil(rows / block_m)
    tiles_per_row = math.ceil(cols / block_n)
    splits = 1
    if row_blocks < waves * sms and tiles_per_row > 1:
        splits = min(tiles_per_row, math.ceil(waves * sms / row_blocks), 1024)
    tps = math.ceil(tiles_per_row / splits)
    cps = tps * block_n
    splits = math.ceil(cols / cps)
    return pkg._launch_mod.LaunchConfig(block_m, block_n, splits, cps, warps, stages, False,
                        _align(x.stride(0), es), _align(math.gcd(cols, cps), es), row_blocks)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--variants", default="base,fma,acc,accfma,packmax,nomath,nomax,loadonly")
    p.add_argument("--policies", default="16384:4096:4,32768:8192:8,8192:4096:4,16384:4096:8")
    p.add_argument("--dtypes", default="bfloat16,float32")
    p.add_argument("--f32-shapes", default="1048576x128,16384x4096,8192x8192")
    p.add_argument("--bf16-shapes", default="")
    args = p.parse_args()
    import reference
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    copy = copy_bandwidth_gbs()
    print(f"copy {copy:.0f} GB/s, {torch.cuda.get_device_name()}", flush=True)
    pols = [tuple(int(v) for v in s.split(":")) for s in args.policies.split(",")]
    pkgs = {}
    for name in args.variants.split(","):
        pkg = build(name)
        pkg._launch_mod = importlib.import_module(f"exp_{name}._launch")
        pkg._kmod = importlib.import_module(f"exp_{name}._lse_kernel")
        pkgs[name] = pkg
    for dname in args.dtypes.split(","):
        shapes = (SHAPES if not args.bf16_shapes else [tuple(int(v) for v in s.split("x")) for s in args.bf16_shapes.split(",")]) if dname == "bfloat16" else [tuple(int(v) for v in s.split("x")) for s in args.f32_shapes.split(",")]
        for shape in shapes:
            torch.manual_seed(0)
            x = (torch.randn(shape, device="cuda") * 4).to(DTYPES[dname])
            dst = torch.empty_like(x)
            cms = median_ms(lambda: dst.copy_(x), rep_ms=100)
            line = [f"{shape[0]}x{shape[1]} {dname} samesizecopy {100 * 2 * x.numel() * x.element_size() / (cms * 1e-3) / 1e9 / copy:.0f}"]
            del dst
            for name, pkg in pkgs.items():
                cells = []
                for pol in pols:
                    tb, mbn, w = pol[:3]
                    cfg = policy(pkg, x, tb, mbn, w, sms, stages=pol[3] if len(pol) > 3 else 1)
                    try:
                        got = pkg._kmod._launch(x, cfg, torch.float32)
                        ok = reference.compare(x, got).ok
                        ms = median_ms(lambda: pkg._kmod._launch(x, cfg, torch.float32), rep_ms=100)
                        frac = lse_bytes(x) / (ms * 1e-3) / 1e9 / copy
                        cells.append(f"{100*frac:.0f}{'' if ok else '!'}")
                    except Exception as e:
                        cells.append("ERR:" + type(e).__name__)
                        print(name, pol, repr(e)[:300], flush=True)
                line.append(f"{name} " + "/".join(cells))
            print(" | ".join(line), flush=True)
            del x


if __name__ == "__main__":
    main()
