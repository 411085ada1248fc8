"""Every operator applies where its pattern occurs, one site per mutant, as a minimal readable edit;
discovery finds the kernels and the launcher; bad targets get one clear message.

Each operator is shown on a small kernel (its diff here); that the fuzzer kills it is shown by
``test_run.py`` (a few, fast) and ``test_every_operator_is_killed_somewhere`` (all, slow).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fuzz.mutation import OPERATORS, discover, generate
from reference.errors import InvalidArgument

TINY = Path(__file__).parents[2] / "implementations" / "mutate" / "tiny_lse.py"

EXP2_KERNEL = '''
import triton
import triton.language as tl

LOG2E = 1.4426950408889634
LN2 = 0.6931471805599453


@triton.jit
def _k(x_ptr, out_ptr, N, stride_row, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride_row + cols, mask=cols < N, other=-float("inf"))
    m = tl.max(x, axis=0)
    s = tl.sum(tl.exp2((x - m) * LOG2E), axis=0)
    tl.store(out_ptr + row, m + tl.log2(s) * LN2)


def lse(x):
    out = x.new_empty(x.shape[0])
    _k[(x.shape[0],)](x, out, x.shape[1], x.stride(0), BLOCK=triton.next_power_of_2(x.shape[1]))
    return out
'''

HOST_KERNEL = '''
import triton
import triton.language as tl


@triton.jit
def _k(x_ptr, out_ptr, M, N, stride_row, stride_col, BLOCK_M: tl.constexpr, INT64: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    tl.store(out_ptr + rows, tl.zeros([BLOCK_M], tl.float32), mask=rows < M)


def _config(x):
    return dict(int64=x.numel() >= 2**31, block_m=4)


def lse(x):
    cfg = _config(x)
    out = x.new_empty(x.shape[0])
    _k[(triton.cdiv(x.shape[0], 4),)](x, out, x.shape[0], x.shape[1], x.stride(0), x.stride(1), BLOCK_M=4,
                                     INT64=cfg["int64"])
    return out
'''


def _mutants(tmp_path, source: str, operator: str):
    path = tmp_path / "kernel.py"
    path.write_text(source)
    return generate(discover(f"{path}:lse"), [operator])


def _edit(mutant) -> tuple[str, str]:
    return mutant.original, mutant.replacement


# (operator, kernel source or None for tiny_lse.py, expected (original, replacement) edits)
CASES = [
    ("mask_off_by_one", None, [("<", "<=")] * 2),
    ("fill_value_zero", None, [('-float("inf")', "0.0")] * 2),
    ("max_shift_removed", None, [(" - shift", "")] * 2),
    ("max_shift_removed", EXP2_KERNEL, [(" - m", "")]),
    ("max_not_added_back", None, [("row_max + ", "")]),
    ("reduction_swapped", None, [("max", "min"), ("sum", "max"), ("sum", "max")]),
    ("exp2_unscaled", None, [("exp", "exp2")] * 2),
    ("exp2_unscaled", EXP2_KERNEL, [("(x - m) * LOG2E", "x - m")]),
    ("log2_unscaled", None, [("log", "log2")]),
    ("log2_unscaled", EXP2_KERNEL, [(" * LN2", "")]),
    ("accumulator_half", None, [("float32", "float16")] * 4),
    ("int64_promotion_removed", None, [(".to(tl.int64)", "")] * 3),
    ("int64_promotion_removed", HOST_KERNEL, [("x.numel() >= 2**31", "False"), ('cfg["int64"]', "False")]),
    ("row_stride_as_length", None, [("stride_row", "N"), ("stride(0)", "shape[1]")]),
    ("column_stride_dropped", None, [(" * stride_col", "")] * 2 + [("x.stride(1)", "1")]),
    ("loop_bound_short", None, [("tl.static_range(ROWS", "tl.static_range(ROWS - 1"), ("N", "N - BLOCK"),
                                ("N", "N - BLOCK")]),
    ("where_negated", None, [('row_max == -float("inf"', '~(row_max == -float("inf")')]),
    ("cdiv_floored", None, [("triton.cdiv(rows, ROWS)", "rows // ROWS")]),
    ("cdiv_floored", HOST_KERNEL, [("triton.cdiv(x.shape[0], 4)", "x.shape[0] // 4")]),
    ("special_case_removed", None, [('tl.where(row_max == -float("inf"), 0.0, row_max)', "row_max")]),
]


@pytest.mark.parametrize("operator, source, edits", CASES,
                         ids=[f"{op}-{'tiny' if src is None else 'exp2' if src is EXP2_KERNEL else 'host'}"
                              for op, src, _ in CASES])
def test_operator_applies_at_each_site_as_a_minimal_edit(tmp_path, operator, source, edits):
    mutants = _mutants(tmp_path, TINY.read_text() if source is None else source, operator)
    assert [_edit(m) for m in mutants] == edits
    for mutant in mutants:
        diff = mutant.diff()
        removed = [line for line in diff.splitlines() if line.startswith("-") and not line.startswith("---")]
        added = [line for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++")]
        assert len(removed) == len(added) == 1  # one line changed, the rest of the file untouched
        line, column = removed[0][1:], mutant.column - 1
        assert line[column:column + len(mutant.original)] == mutant.original
        assert line[:column] + mutant.replacement + line[column + len(mutant.original):] == added[0][1:]
        text = mutant.mutated_sources()[mutant.file]
        assert text[:mutant.start] == mutant.sources[mutant.file][:mutant.start]


def test_every_operator_has_a_case_and_a_documented_pitfall():
    assert {op for op, _, _ in CASES} == set(OPERATORS)
    assert len(OPERATORS) >= 14
    for operator in OPERATORS.values():
        assert operator.pitfall and operator.documented


def test_the_special_case_operator_drops_an_if_guard(tmp_path):
    source = TINY.read_text().replace("            shift = tl.where(row_max == -float(\"inf\"), 0.0, row_max)\n",
                                      "            shift = row_max\n            if row_max == -float(\"inf\"):\n"
                                      "                shift = 0.0\n")
    mutants = _mutants(tmp_path, source, "special_case_removed")
    assert [_edit(m) for m in mutants] == [('row_max == -float("inf")', "False")]


def test_discovery_follows_the_launcher_across_the_reference_package():
    kernel = discover("reference:lse")
    names = {entry.rpartition(":")[2] for entry in kernel.kernels}
    assert names == {"_lse_kernel", "_tile", "_load", "_update", "_exp", "_cols", "_shift", "_rescale", "_finish",
                     "_lse_combine_kernel"}
    assert "reference/_launch.py:launch_config" in kernel.launcher
    mutants = generate(kernel)
    assert {m.operator for m in mutants} == set(OPERATORS)
    assert len({m.name for m in mutants}) == len(mutants)
    fill = [m for m in mutants if m.operator == "fill_value_zero" and m.file == "reference/_lse_kernel.py"]
    assert len(fill) == 1 and '-other=-float("inf")' not in fill[0].diff()  # anchored, one edit


@pytest.mark.parametrize("target, message", [
    ("no/such/kernel.py", "no such file"),
    (str(Path(__file__).parents[2] / "implementations" / "correct" / "torch_native.py"),
     "no @triton.jit function is reached from 'lse'"),
    (f"{TINY}:nope", "no function 'nope' is defined in tiny_lse.py"),
    ("numpy:lse", "a module target is supported for the reference package only"),
], ids=["missing-file", "no-kernel", "no-function", "other-module"])
def test_bad_targets_get_one_clear_message(target, message):
    with pytest.raises(InvalidArgument, match=message):
        discover(target)


def test_unknown_operator_is_named():
    with pytest.raises(InvalidArgument, match="operators='nope': no such operator"):
        generate(discover(str(TINY)), ["nope"])
