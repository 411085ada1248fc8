"""Experiment of 2026-11-30 (kept as it ran, on tree af2ab80): variants of the v5 kernel (quarter
loads) as text edits of reference/, timed on the benchmark shapes of a CUDA GPU; results in
bench/results/2026-11-30-h200-kernel-variants-v5.txt. It ran as build/exp/variants6.py (two
folders below the root, so ROOT resolves) and writes each variant to build/exp/exp6_NAME/.

Variants:
  base    today's kernel
  pmax    the max of the four quarters taken in the input dtype (bfloat16x2/half2 max instructions
          where the compiler packs them), converted to float32 after; the exp terms convert as before
  pf      register double-buffering in the full-tile loop: tile k+1 is loaded before tile k is folded
  pfpmax  both
Policy: today's launch_config, optionally with warps for rows that fill the widest tile overridden
("auto", "w4", "w8", "w16").
"""
import argparse, dataclasses, importlib, shutil, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
import torch
from bench._common import SHAPES, DTYPES, copy_bandwidth_gbs, lse_bytes, median_ms

UPD_OLD = """    new_max = tl.maximum(run_max, tl.max(tl.maximum(tl.maximum(x0, x1), tl.maximum(x2, x3)), axis=1))
"""
UPD_PMAX = """    quarter_max = tl.maximum(tl.maximum(x0, x1), tl.maximum(x2, x3))
    new_max = tl.maximum(run_max, tl.max(quarter_max.to(run_max.dtype), axis=1))
    x0 = x0.to(run_max.dtype)
    x1 = x1.to(run_max.dtype)
    x2 = x2.to(run_max.dtype)
    x3 = x3.to(run_max.dtype)
"""
TILE_DTYPE_OLD = "    dtype = run_sum.dtype\n    cols = _cols(start, BLOCK_N // 4, INT64)\n"
TILE_DTYPE_PMAX = "    dtype = row_ptrs.dtype.element_ty\n    cols = _cols(start, BLOCK_N // 4, INT64)\n"
LOOP_OLD = """    for tile in range(0, full_tiles):
        start = col_begin + tile * BLOCK_N
        run_max, run_sum = _tile(run_max, run_sum, row_ptrs, start, col_end, stride_col, BLOCK_N, INT64, False)
"""
LOOP_PF = """    if full_tiles > 0:
        ld = LOAD_DTYPE
        cols = _cols(col_begin, BLOCK_N // 4, INT64)
        x0 = _load(row_ptrs, cols, stride_col, col_end, False, ld)
        x1 = _load(row_ptrs, cols + BLOCK_N // 4, stride_col, col_end, False, ld)
        x2 = _load(row_ptrs, cols + 2 * (BLOCK_N // 4), stride_col, col_end, False, ld)
        x3 = _load(row_ptrs, cols + 3 * (BLOCK_N // 4), stride_col, col_end, False, ld)
        for tile in range(1, full_tiles):
            cols = _cols(col_begin + tile * BLOCK_N, BLOCK_N // 4, INT64)
            n0 = _load(row_ptrs, cols, stride_col, col_end, False, ld)
            n1 = _load(row_ptrs, cols + BLOCK_N // 4, stride_col, col_end, False, ld)
            n2 = _load(row_ptrs, cols + 2 * (BLOCK_N // 4), stride_col, col_end, False, ld)
            n3 = _load(row_ptrs, cols + 3 * (BLOCK_N // 4), stride_col, col_end, False, ld)
            run_max, run_sum = _update(run_max, run_sum, x0, x1, x2, x3)
            x0 = n0
            x1 = n1
            x2 = n2
            x3 = n3
        run_max, run_sum = _update(run_max, run_sum, x0, x1, x2, x3)
"""
EDITS = {
    "base": [],
    "pmax": [(UPD_OLD, UPD_PMAX), (TILE_DTYPE_OLD, TILE_DTYPE_PMAX)],
    "pf": [(LOOP_OLD, LOOP_PF.replace("LOAD_DTYPE", "dtype"))],
    "pfpmax": [(UPD_OLD, UPD_PMAX), (TILE_DTYPE_OLD, TILE_DTYPE_PMAX),
               (LOOP_OLD, LOOP_PF.replace("LOAD_DTYPE", "x_ptr.dtype.element_ty"))],
}


def build(name):
    dst = ROOT / "build" / "exp" / f"exp6_{name}"
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(ROOT / "reference", dst, ignore=shutil.ignore_patterns("__pycache__"))
    path = dst / "_lse_kernel.py"
    text = path.read_text()
    for old, new in EDITS[name]:
        assert text.count(old) == 1, (name, old)
        text = text.replace(old, new)
    path.write_text(text)
    if str(ROOT / "build" / "exp") not in sys.path:
        sys.path.insert(0, str(ROOT / "build" / "exp"))
    pkg = importlib.import_module(f"exp6_{name}")
    return importlib.import_module(f"exp6_{name}._lse_kernel"), importlib.import_module(f"exp6_{name}._launch")


def config(launch, x, sms, policy):
    cfg = launch.launch_config(x, interpreter=False, multiprocessors=sms)
    if policy != "auto" and cfg.block_n == launch._GPU_MAX_BLOCK_N:
        cfg = dataclasses.replace(cfg, num_warps=int(policy[1:]))
    return cfg


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--variants", default="base,pmax,pf,pfpmax")
    p.add_argument("--policies", default="auto")
    p.add_argument("--dtypes", default="bfloat16,float32")
    p.add_argument("--shapes", default="")
    p.add_argument("--check-dtypes", default="float16,float64", help="correctness only, one shape each")
    args = p.parse_args()
    import reference
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    copy = copy_bandwidth_gbs()
    print(f"copy {copy:.0f} GB/s, {torch.cuda.get_device_name()}", flush=True)
    mods = {name: build(name) for name in args.variants.split(",")}
    shapes = SHAPES if not args.shapes else [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")]
    # Correctness of each variant beyond the timed dtypes: float16 and float64, edge rows included.
    for dname in [d for d in args.check_dtypes.split(",") if d]:
        dt = getattr(torch, dname)
        for shape in [(64, 4096 * 3 + 17), (300, 4096 * 2), (1000, 130)]:
            torch.manual_seed(1)
            x = (torch.randn(shape, device="cuda", dtype=torch.float32) * 30).to(dt)
            x[1] = -float("inf")
            x[2, 5] = float("inf")
            x[3, 7] = float("nan")
            x[4, -1] = 60000 if dt == torch.float16 else 1e30
            for name, (kmod, launch) in mods.items():
                got = kmod._launch(x, config(launch, x, sms, "auto"), torch.float64 if dt == torch.float64 else torch.float32)
                res = reference.compare(x, got)
                if not res.ok:
                    print(f"WRONG {name} {dname} {shape}: {res}", flush=True)
    print("edge checks done", flush=True)
    pols = args.policies.split(",")
    for dname in args.dtypes.split(","):
        for shape in shapes:
            torch.manual_seed(0)
            x = (torch.randn(shape, device="cuda") * 4).to(DTYPES[dname])
            line = [f"{shape[0]}x{shape[1]} {dname}"]
            for name, (kmod, launch) in mods.items():
                cells = []
                for pol in pols:
                    cfg = config(launch, x, sms, pol)
                    try:
                        got = kmod._launch(x, cfg, torch.float32)
                        ok = reference.compare(x, got).ok
                        ms = median_ms(lambda: kmod._launch(x, cfg, torch.float32), rep_ms=100)
                        cells.append(f"{100 * lse_bytes(x) / (ms * 1e-3) / 1e9 / copy:.1f}{'' if ok else '!'}")
                    except Exception as e:
                        cells.append("ERR:" + type(e).__name__)
                        print(name, pol, repr(e)[:300], flush=True)
                line.append(f"{name} " + "/".join(cells))
            print(" | ".join(line), flush=True)
            del x


if __name__ == "__main__":
    main()
