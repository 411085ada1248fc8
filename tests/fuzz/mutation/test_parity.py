"""Parity of the one mutation engine with the two it replaced, through the command line (the one
interface both had): the bundled catalog's 17 mutants are each killed by the check its file names,
and ``lse-fuzz mutate`` gives the small kernel's 31 mutants the statuses they had before.

Both runs fuzz every mutant, so they are ``slow``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
TINY = ROOT / "tests" / "implementations" / "mutate" / "tiny_lse.py"

# The statuses of every mutant of tiny_lse.py under TINY_OPTIONS, and the check that killed each,
# from the run of `lse-fuzz mutate` before the two engines became one; since then (2026-12-04) the
# CPU's memory_bounds check kills five of them first, at their wrapped or one-past reads (one of
# them, int64_promotion_removed at 32:34, the old engine's survivor): marked "since memory_bounds".
TINY_OPTIONS = ["--contract", "finite", "--dtypes", "float32,float16,bfloat16", "--output-dtype", "float32",
                "--max-elements", "256", "--budget", "10", "--thorough-budget", "15", "-j", "2",
                "--mutant-timeout-floor", "60", "--no-cache"]
TINY_STATUSES = {
    "loop_bound_short@tiny_lse.py:29:14": ("Killed", ["determinism"]),
    "int64_promotion_removed@tiny_lse.py:32:34": ("Killed", ["memory_bounds"]),  # since memory_bounds
    "row_stride_as_length@tiny_lse.py:32:50": ("Killed", ["agreement"]),
    "accumulator_half@tiny_lse.py:33:53": ("CompileError", None),  # since the interpreter runs Triton's front end
    "loop_bound_short@tiny_lse.py:34:35": ("Killed", ["agreement"]),
    "int64_promotion_removed@tiny_lse.py:35:53": ("Killed", ["memory_bounds"]),  # since memory_bounds
    "column_stride_dropped@tiny_lse.py:36:43": ("Killed", ["agreement"]),
    "mask_off_by_one@tiny_lse.py:36:68": ("Killed", ["memory_bounds"]),  # since memory_bounds
    "fill_value_zero@tiny_lse.py:36:79": ("Killed", ["agreement"]),
    "accumulator_half@tiny_lse.py:36:100": ("Killed", ["agreement"]),
    "reduction_swapped@tiny_lse.py:37:50": ("Killed", ["agreement"]),
    "special_case_removed@tiny_lse.py:39:21": ("Killed", ["agreement"]),
    "where_negated@tiny_lse.py:39:30": ("Killed", ["shift_invariance"]),
    "accumulator_half@tiny_lse.py:40:39": ("CompileError", None),
    "loop_bound_short@tiny_lse.py:41:35": ("Killed", ["agreement"]),
    "int64_promotion_removed@tiny_lse.py:42:53": ("Killed", ["memory_bounds"]),  # since memory_bounds
    "column_stride_dropped@tiny_lse.py:43:43": ("Killed", ["agreement"]),
    "mask_off_by_one@tiny_lse.py:43:68": ("Killed", ["memory_bounds"]),  # since memory_bounds
    "fill_value_zero@tiny_lse.py:43:79": ("Killed", ["agreement"]),
    "accumulator_half@tiny_lse.py:43:100": ("Killed", ["shift_invariance"]),
    "reduction_swapped@tiny_lse.py:45:35": ("NoCoverage", None),
    "exp2_unscaled@tiny_lse.py:45:42": ("NoCoverage", None),
    "max_shift_removed@tiny_lse.py:45:47": ("NoCoverage", None),
    "reduction_swapped@tiny_lse.py:47:35": ("Killed", ["agreement"]),
    "exp2_unscaled@tiny_lse.py:47:42": ("Killed", ["agreement"]),
    "max_shift_removed@tiny_lse.py:47:47": ("Killed", ["shift_invariance"]),
    "max_not_added_back@tiny_lse.py:48:37": ("Killed", ["shift_invariance"]),
    "log2_unscaled@tiny_lse.py:48:50": ("Killed", ["agreement"]),
    "cdiv_floored@tiny_lse.py:56:13": ("Killed", ["determinism"]),
    "row_stride_as_length@tiny_lse.py:57:46": ("Killed", ["agreement"]),
    "column_stride_dropped@tiny_lse.py:57:57": ("Killed", ["agreement"]),
}
# Mutants that leave rows of the output unwritten (torch.empty): killed either way, but which check
# sees the garbage first depends on what the allocator hands out, which differs from run to run.
UNINITIALIZED = {"loop_bound_short@tiny_lse.py:29:14", "cdiv_floored@tiny_lse.py:56:13"}

# Each bundled mutant and the check that kills it (the README's table; each mutant's file says it).
CATALOG_KILLS = {
    "no_max_added": "shift_invariance",
    "masked_lanes_zero": "agreement",
    "log_per_lane": "agreement",
    "hardcoded_row_stride": "agreement",
    "no_max_shift": "agreement",
    "int32_offsets": "memory_bounds",  # its wrapped read lies before the view (the GPU's memory phase names it too)
    "neg_inf_rows_nan": "agreement",
    "one_tile_per_row": "agreement",
    "online_no_rescale": "agreement",
    "input_dtype_accumulation": "agreement",
    "nan_ignored": "agreement",
    "pos_inf_nan": "agreement",
    "column_stride_ignored": "agreement",
    "tail_mask_off_by_one": "memory_bounds",  # the last row's extra lane lies past the view
    "split_no_rescale": "agreement",
    "input_as_scratch": "input_unchanged",
    "empty_rows_wrong_shape": "output_contract",
    "half_tile_counted_twice": "agreement",
    "max_only": "agreement",
    "max_plus_log_n": "agreement",
    "finite_sentinel": "agreement",
    "unmasked_tail_load": "memory_bounds",
    "grid_without_row_guard": "memory_bounds",
    "store_past_output": "memory_bounds",
    "skipped_empty_partial": "uninitialized_read",
}


def _cli(*args: str, cwd: Path = ROOT, timeout: float = 1200) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "fuzz", *args], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=timeout)


def _mutants(report: Path) -> dict[str, dict]:
    data = json.loads(report.read_text())
    return {m["id"]: m for f in data["files"].values() for m in f["mutants"]}


@pytest.mark.slow
def test_every_bundled_mutant_is_killed_by_its_expected_check(tmp_path):
    result = _cli("mutants", "--out-dir", str(tmp_path), "-q", "-j", "2", "--no-cache")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    found = _mutants(tmp_path / "mutation.json")
    assert set(found) == set(CATALOG_KILLS)
    for name, m in found.items():
        checks = CATALOG_KILLS[name] if isinstance(CATALOG_KILLS[name], tuple) else (CATALOG_KILLS[name],)
        assert m["status"] == "Killed" and len(m["killedBy"]) == 1 and m["killedBy"][0] in checks, (name, m)


@pytest.mark.slow
def test_mutate_gives_the_small_kernel_the_statuses_it_had(tmp_path):
    result = _cli("mutate", str(TINY), *TINY_OPTIONS, "--out-dir", str(tmp_path), "-q", cwd=tmp_path)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    found = _mutants(tmp_path / "mutation.json")
    statuses = {name: (m["status"], None if name in UNINITIALIZED else m.get("killedBy"))
                for name, m in found.items()}
    assert statuses == {name: (status, None if name in UNINITIALIZED else checks)
                        for name, (status, checks) in TINY_STATUSES.items()}
