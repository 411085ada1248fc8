"""bench/interpreter_diff.py: a CPU run's file, the classification of lanes, malformed input.

The GPU half is a run of the same script on a GPU; here only what a CPU can show.
"""

from __future__ import annotations

import importlib.util
import json
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "interpreter_diff.py"
COMMITTED = ROOT / "bench" / "results" / "interpreter-diff-cpu.json.gz"


def _load():
    spec = importlib.util.spec_from_file_location("interpreter_diff", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["interpreter_diff"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


diff = _load()


def _f32(value: float) -> int:
    return struct.unpack("<I", struct.pack("<f", value))[0]


def _run_file(cases: list[dict], device: str) -> dict:
    return {"format": diff.FORMAT, "metadata": {"device": device}, "cases": cases}


def _case(case_id: str, lanes: list[str], patterns: list[int], dtype: str = "float32", **extra) -> dict:
    bits = b"".join(p.to_bytes(diff.WIDTH[dtype] // 8, "little") for p in patterns).hex()
    return {"id": case_id, "status": "ok", "dtype": dtype, "out_dtype": dtype, "lanes": lanes, "bits": bits,
            "tolerance_ulps": 1, **extra}


def test_a_cpu_run_records_results_errors_and_absent_apis_in_well_formed_json(tmp_path):
    only = ["unary/neg/bfloat16", "binary/maximum_nan_all/float32", "cast/to_bfloat16/float32",
            "reduce/argmax/float32/all_nan", "reduce/max/float16/nan_lanes", "unary/fast_expf/float32",
            "sweep/log2/float32"]
    out = tmp_path / "cpu.json"
    run = subprocess.run([sys.executable, str(SCRIPT), "run", "--device", "cpu", "--out", str(out),
                          *(arg for case_id in only for arg in ("--only", case_id))],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    data = diff.load_result(out)
    meta = data["metadata"]
    assert meta["interpreter"] is True and meta["bfloat16_fix"] is True and meta["cases"] == len(only)
    assert {"date", "device", "torch", "triton", "python"} <= set(meta)
    cases = {case["id"]: case for case in data["cases"]}
    assert sorted(cases) == sorted(only)
    # numpy's nanargmax refuses an all-NaN row: recorded as the case's error, and the run went on.
    assert cases["reduce/argmax/float32/all_nan"]["status"] == "error"
    assert cases["reduce/argmax/float32/all_nan"]["error"] == "ValueError: All-NaN slice encountered"
    fast_expf = cases["unary/fast_expf/float32"]
    assert fast_expf["status"] == ("absent" if "not in triton" in fast_expf.get("error", "") else "ok")
    neg = cases["unary/neg/bfloat16"]
    assert len(neg["bits"]) == 4 * len(neg["lanes"]) == 4 * len(neg["values"])
    assert neg["lanes"][10] == "1.0" and neg["values"][10] == "-1.0"  # bfloat16 negated on the value
    assert "reference" in cases["sweep/log2/float32"] and "reference" not in neg
    assert cases["reduce/max/float16/nan_lanes"]["lanes"][0] == "NaN at lane 0"


def test_compare_classes_identical_rounding_and_value_class_lanes(tmp_path, capsys):
    lanes = ["1.0", "nan", "-0.0"]
    gpu = [_case("identical", lanes, [_f32(1.0), 0x7FC00000, 0x80000000]),
           _case("rounding", lanes, [_f32(1.0) + 1, 0x7FC00000, 0x80000000]),
           _case("nan_vs_number", lanes, [_f32(1.0), _f32(2.0), 0x80000000]),
           _case("signed_zero", lanes, [_f32(1.0), 0x7FC00000, 0x00000000]),
           _case("payload", lanes, [_f32(1.0), 0x7FFFFFFF, 0x80000000]),
           _case("too_far", lanes, [_f32(1.0) + 3, 0x7FC00000, 0x80000000]),
           {"id": "gpu_error", "status": "error", "dtype": "float32", "out_dtype": "float32", "error": "boom"}]
    cpu = [_case(case["id"], lanes, [_f32(1.0), 0x7FC00000, 0x80000000]) for case in gpu]
    (tmp_path / "cpu.json").write_text(json.dumps(_run_file(cpu, "CPU")))
    (tmp_path / "gpu.json").write_text(json.dumps(_run_file(gpu, "GPU")))
    assert diff.main(["compare", str(tmp_path / "cpu.json"), str(tmp_path / "gpu.json"),
                      "--out", str(tmp_path / "table.md")]) == 0
    rows = {line.split(" | ")[0].strip("| "): line for line in (tmp_path / "table.md").read_text().splitlines()
            if line.startswith("| ") and not line.startswith("| case")}
    assert rows["identical"].endswith("| 0 of 3 |  | bit-identical |")
    assert rows["rounding"].endswith("| 1 of 3 | 1.0: 1.0 vs 1.0000001 (1 ulp) | differs within rounding |")
    assert rows["nan_vs_number"].endswith("| 1 of 3 | nan: nan vs 2.0 (NaN vs normal) | differs in value class |")
    assert rows["signed_zero"].endswith("| -0.0: -0.0 vs 0.0 (-0 vs +0) | differs in value class |")
    assert rows["payload"].endswith("| NaN payload differs |")
    assert rows["too_far"].endswith("(3 ulp) | differs in value |")
    assert "GPU: error (boom)" in rows["gpu_error"] and rows["gpu_error"].endswith("| not compared |")
    assert capsys.readouterr().out.startswith("**7 cases, interpreter vs GPU:** 1 bit-identical, 1 NaN payload")


@pytest.mark.parametrize("a, b, dtype, verdict, note", [
    (0x3C00, 0x3C01, "float16", "ROUNDING", "1 ulp"),
    (0x0001, 0x0000, "float16", "CLASS", "subnormal vs +0"),  # a flush to zero
    (0x03FF, 0x0400, "float16", "ROUNDING", "1 ulp"),  # largest subnormal, smallest normal: one step apart
    (0x7F80, 0x7F7F, "bfloat16", "CLASS", "+inf vs normal"),
    (0x7FFFFFFF, 0x80000000, "int32", "CLASS", "sign differs"),  # a wrap
    (3, 7, "int32", "VALUE", "+4"),  # another index
    (0, 1, "int8", "CLASS", "true vs false"),
], ids=["ulp", "flush", "subnormal-normal", "overflow", "wrap", "index", "bool"])
def test_each_lane_is_classed_by_what_a_verdict_would_see(a, b, dtype, verdict, note):
    assert diff.classify_lane(a, b, dtype, 1)[:2] == (diff.Verdict[verdict], note)


@pytest.mark.parametrize("content, message", [
    ("{not json", "not a readable JSON file"),
    (json.dumps({"format": "something else", "metadata": {}, "cases": []}), "not an interpreter_diff result"),
    (json.dumps({"format": "lse-fuzz interpreter-diff 1", "cases": []}), "needs a 'metadata' object"),
    (json.dumps(_run_file([{"id": "x", "status": "ok"}], "CPU")), "cases[0]: needs id, status, dtype and out_dtype"),
    (json.dumps(_run_file([_case("x", ["1.0"], [1]) | {"bits": "zz"}], "CPU")), "cases[0] (x): unreadable result"),
    (json.dumps(_run_file([_case("x", ["1.0", "2.0"], [1])], "CPU")), "do not hold one float32 per lane"),
], ids=["not-json", "format", "no-metadata", "case-keys", "bits-not-hex", "lane-count"])
def test_malformed_input_is_refused_in_one_line(tmp_path, capsys, content, message):
    broken = tmp_path / "broken.json"
    broken.write_text(content)
    good = tmp_path / "good.json"
    good.write_text(json.dumps(_run_file([], "GPU")))
    assert diff.main(["compare", str(broken), str(good)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"interpreter_diff compare: {broken}: ") and message in err and err.count("\n") == 1


def test_the_committed_cpu_results_are_of_this_suite():
    data = diff.load_result(COMMITTED)
    assert [case["id"] for case in data["cases"]] == [case.id for case in diff.all_cases()]
    assert data["metadata"]["interpreter"] is True and data["metadata"]["bfloat16_fix"] is True


def test_the_libdevice_alias_and_half_sum_cases_run_on_the_cpu_as_the_fuzzer_runs_them(tmp_path):
    # Each ran into an error of the interpreter before: libdevice (None from its stubs), the aliases
    # ("Did you forget to add @triton.jit"), a scalar comparison broadcast against a mask (TypeError).
    out = tmp_path / "cpu.json"
    only = ["unary/ld_*", "sweep/ld_*", "*/names", "unary/sum_scalar_flag/*", "reduce/sum*/long_row"]
    run = subprocess.run([sys.executable, str(SCRIPT), "run", "--device", "cpu", "--out", str(out),
                          *(arg for glob in only for arg in ("--only", glob))],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    data = diff.load_result(out)
    assert "libdevice" in data["metadata"]["repairs"] and "kernel_globals" in data["metadata"]["repairs"]
    cases = {case["id"]: case for case in data["cases"]}
    assert len(cases) >= 40 and all(case["status"] == "ok" for case in cases.values()), \
        [(case["id"], case.get("error")) for case in cases.values() if case["status"] != "ok"]
    log1p = cases["unary/ld_log1p/float32/libdevice"]
    assert log1p["values"][log1p["lanes"].index("1.0")] == str(np.float32(np.log(2.0)))
    assert cases["unary/log1p_module_alias/float32/names"]["bits"] == cases["unary/log1p_function_alias/float32/names"]["bits"]
    assert "reference" in cases["sweep/ld_expm1/float32"]
