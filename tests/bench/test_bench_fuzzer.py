"""The fuzzer's benchmark (bench/bench_fuzzer.py) and the variant counter it relies on
(fuzz/interpreter/specialization.py): the counter puts launches in Triton's specialization classes, counts
each distinct key once, and refuses input it cannot read."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from fuzz.interpreter import specialization
from fuzz.interpreter.specialization import argument_class, class_text, count_variants, launch_key, summarize

ROOT = Path(__file__).resolve().parents[2]


def _load_bench():
    spec = importlib.util.spec_from_file_location("bench_fuzzer", ROOT / "bench" / "bench_fuzzer.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def kernel(x_ptr, out_ptr, N, stride_row, BLOCK_N: tl.constexpr, ACC: tl.constexpr = "fp32"):  # noqa: F821
    """A kernel's signature is all the counter reads (it is never run here; the annotations stay
    text, so this module need not import triton, which must come after the project's packages)."""


def _aligned(n: int, dtype=torch.float32) -> torch.Tensor:
    x = torch.empty(n + 16, dtype=dtype)
    skip = (-x.data_ptr() % 16) // x.element_size()
    return x[skip:skip + n]


ALIGNED = _aligned(64)
UNALIGNED = _aligned(64)[1:]  # 4 bytes past a 16-byte boundary

ARGUMENT_CLASSES = [
    pytest.param(16, ("i32", "D"), id="int-divisible-by-16"),
    pytest.param(0, ("i32", "D"), id="zero-is-divisible"),
    pytest.param(-32, ("i32", "D"), id="negative-divisible"),
    pytest.param(17, ("i32", ""), id="int-not-divisible"),
    pytest.param(1, ("constexpr", 1), id="one-is-a-constant"),
    pytest.param(2**31, ("i64", "D"), id="past-int32"),
    pytest.param(2**31 + 1, ("i64", ""), id="past-int32-odd"),
    pytest.param(True, ("u1", None), id="bool"),
    pytest.param(0.5, ("fp32", None), id="float"),
    pytest.param(None, ("constexpr", None), id="none"),
    pytest.param(ALIGNED, ("*fp32", "D"), id="aligned-pointer"),
    pytest.param(UNALIGNED, ("*fp32", ""), id="unaligned-pointer"),
    pytest.param(_aligned(8, torch.bfloat16), ("*bf16", "D"), id="bf16-pointer"),
    pytest.param(_aligned(8, torch.float64), ("*fp64", "D"), id="fp64-pointer"),
]


@pytest.mark.parametrize(("value", "expected"), ARGUMENT_CLASSES)
def test_an_argument_falls_in_its_specialization_class(value, expected):
    assert argument_class(value) == expected


@pytest.mark.parametrize(("value", "expected"), ARGUMENT_CLASSES)
def test_the_classes_agree_with_the_installed_tritons_own_specializer(value, expected):
    try:
        from triton.backends.compiler import BaseBackend
        from triton.runtime.jit import native_specialize_impl
    except ImportError:
        pytest.skip("this Triton has no native_specialize_impl (before 3.5)")
    for specialize, align in ((True, True), (True, False), (False, True)):
        assert argument_class(value, specialize=specialize, align=align) == \
            tuple(native_specialize_impl(BaseBackend, value, False, specialize, align)), (specialize, align)


def _launches(*launches: tuple) -> list[dict]:
    return [{"kernel": "k", "key": launch_key(kernel, args, kwargs)} for args, kwargs in launches]


def test_launches_in_one_class_are_one_variant_and_each_other_class_is_one_more():
    records = _launches(
        ((ALIGNED, ALIGNED, 32, 64), {"BLOCK_N": 32}),
        ((ALIGNED, ALIGNED, 48, 16), {"BLOCK_N": 32}),  # other values, the same classes: no new variant
        ((ALIGNED, ALIGNED, 33, 64), {"BLOCK_N": 32}),  # N not divisible by 16: +1
        ((ALIGNED, ALIGNED, 1, 64), {"BLOCK_N": 32}),  # N == 1: +1
        ((ALIGNED, ALIGNED, 32, 64), {"BLOCK_N": 64}),  # another BLOCK_N: +1
        ((UNALIGNED, ALIGNED, 32, 64), {"BLOCK_N": 32}),  # an unaligned input: +1
        ((ALIGNED, ALIGNED, 32, 64), {"BLOCK_N": 32, "num_warps": 8}),  # a launch option: +1
        ((ALIGNED, ALIGNED, 32, 64), {"BLOCK_N": 32, "ACC": "fp64"}),  # a defaulted constexpr given: +1
        ((ALIGNED, ALIGNED, 32, 64), {"BLOCK_N": 32, "ACC": "fp32"}),  # ... equal to its default: the first
    )
    assert count_variants(records) == 7
    assert count_variants(records + records) == 7  # every worker's file may repeat a key
    assert count_variants(records + [{**records[0], "kernel": "another"}]) == 8  # one per kernel
    summary = summarize(records + [{"kernel": "k", "error": "TypeError: ..."}])
    assert summary["variants"] == 7 and summary["errors"] == 1
    assert summary["classes"]["k"]["N"] == ["1", "i32", "i32/D"]
    assert summary["classes"]["k"]["BLOCK_N"] == ["32", "64"]
    assert "stride_row" not in summary["classes"]["k"]  # one class only: not a driver
    # Alone, the constexprs and options split 4 ways (BLOCK_N 32/64, num_warps, ACC fp64), the
    # pointers 2 (aligned or not), the integers 3 (N divisible, not, equal to 1).
    assert summary["drivers"] == {"constexprs and options": 4, "pointers (dtype, alignment)": 2,
                                  "integers (==1, %16, width)": 3}


def test_do_not_specialize_keeps_the_type_only():
    key = launch_key(kernel, (ALIGNED, UNALIGNED, 33, 1), {"BLOCK_N": 16},
                     do_not_specialize=["N", 3], do_not_specialize_on_alignment=["x_ptr"])
    assert key[:4] == [["x_ptr", "*fp32", ""], ["out_ptr", "*fp32", ""], ["N", "i32", None],
                       ["stride_row", "i32", None]]
    assert class_text(["i32", None]) == "i32" and class_text(["constexpr", 1]) == "1"


def test_the_counter_fails_loudly_on_what_it_cannot_read(tmp_path):
    with pytest.raises(TypeError):
        launch_key(kernel, (ALIGNED,), {"BLOCK_N": 16})  # a launch missing arguments has no key
    broken = tmp_path / "variants.jsonl"
    broken.write_text('{"kernel": "k", "key": [["N", "i32", "D"]]}\n{"kernel": "k", "ke\n')
    with pytest.raises(ValueError):
        specialization.read_records(broken)
    with pytest.raises(KeyError):
        count_variants([{"key": [["N", "i32", "D"]]}])  # a key without its kernel
    assert specialization.read_records(tmp_path / "missing.jsonl") == []


def test_a_checks_workers_record_the_keys_of_their_launches(tmp_path):
    variants = tmp_path / "variants.jsonl"
    env = {**os.environ, specialization.ENV: str(variants), "PYTHONPATH": str(ROOT)}
    run = subprocess.run([sys.executable, "-m", "fuzz", "check", "reference:lse", "--device", "cpu", "--budget", "5",
                          "--reproducers", str(tmp_path / "r")],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    records = specialization.read_records(variants)
    assert records and all("key" in r for r in records), records[:3]
    assert {r["kernel"].partition("@")[0] for r in records} <= {"_lse_kernel", "_lse_combine_kernel"}
    # Each worker writes a key once; the two parts of a check run in two workers, which share keys.
    assert 1 <= count_variants(records) <= len(records)


def test_the_benchmark_counts_compiles_and_examples_from_the_reports(tmp_path):
    bench = _load_bench()
    cache = tmp_path / "cache"
    for name in ("a1/__grp__k.json", "a1/k.cubin", "b2/__grp__k.json", "c3/cuda_utils.so"):
        (cache / name).parent.mkdir(parents=True, exist_ok=True)
        (cache / name).write_text("")
    assert bench.count_compiles(cache) == 2 and bench.count_compiles(tmp_path / "none") == 0
    (tmp_path / "check.json").write_text(json.dumps({"examples": 200}))
    (tmp_path / "mutants").mkdir()
    (tmp_path / "mutants" / "mutation.json").write_text(json.dumps({"config": {
        "gate": [{"examples": 250}, {"examples": 3}], "mutants": {"a": {"examples": 7}, "b": {"examples": 40}}}}))
    (tmp_path / "grade").mkdir()
    (tmp_path / "grade" / "grade.jsonl").write_text('{"examples": 200}\n{"examples": null}\n{"examples": 20}\n')
    assert [bench.examples_of(kind, tmp_path) for kind in ("check", "mutants", "grade")] == [200, 300, 220]
    assert bench.examples_of("check", tmp_path / "nothing") is None
    for quick in (True, False):
        for scenario in bench.scenarios("cpu", quick=quick, jobs=2):
            assert ("--device", "cpu") == tuple(scenario.argv[scenario.argv.index("--device"):][:2]), scenario


def test_the_quick_benchmark_writes_its_table_and_records(tmp_path):
    run = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_fuzzer.py"), "--device", "cpu", "--quick",
                          "--only", "check torch", "--out", str(tmp_path / "result"), "--work", str(tmp_path / "w")],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    records = [json.loads(line) for line in (tmp_path / "result.jsonl").read_text().splitlines()]
    assert [(r["scenario"], r["cache"]) for r in records] == [("check torch_float32", "cold"),
                                                              ("check torch_float32", "warm")]
    assert all(r["examples"] == 20 and r["variants"] == 0 and r["compiles"] == 0 for r in records)
    markdown = (tmp_path / "result.md").read_text()
    assert "| check torch_float32 | cold |" in markdown and "triton" in markdown.splitlines()[0]


COMPILE = """
import sys
import triton, triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

@triton.jit
def add_one(x_ptr, BLOCK: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, BLOCK), tl.load(x_ptr + tl.arange(0, BLOCK)) + 1)

for block in (128, 256, 128):  # two binaries; the third compile is a hit of the disk cache
    source = ASTSource(fn=add_one, signature={"x_ptr": "*fp32", "BLOCK": "constexpr"}, constexprs={"BLOCK": block})
    triton.compile(source, target=GPUTarget("cuda", 90, 32))
"""


def test_the_benchmark_counts_each_binary_triton_compiles_into_its_cache_once(tmp_path):
    # Triton compiles for a GPU target without a GPU (its bundled ptxas does the last stage).
    cache = tmp_path / "cache"
    env = {**os.environ, "TRITON_CACHE_DIR": str(cache), "TRITON_INTERPRET": "0"}
    script = tmp_path / "compile.py"  # @triton.jit needs its source in a file
    script.write_text(COMPILE)
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path,
                         env=env)
    if run.returncode != 0 and "ptxas" in run.stderr:
        pytest.skip("this Triton install has no ptxas to compile for sm_90 with")
    assert run.returncode == 0, run.stderr
    assert _load_bench().count_compiles(cache) == 2


def test_a_survey_reports_each_seeds_variants_the_new_ones_and_their_union(tmp_path):
    run = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_fuzzer.py"), "--device", "cpu", "--survey",
                          "reference:lse", "--seeds", "2", "--budget", "8", "--out", str(tmp_path / "survey"),
                          "--work", str(tmp_path / "w")], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    first, second, union = [json.loads(line) for line in (tmp_path / "survey.jsonl").read_text().splitlines()]
    assert [r["scenario"] for r in (first, second, union)] == ["reference:lse seed 0", "reference:lse seed 1",
                                                               "reference:lse seeds 0-1"]
    assert first["new_variants"] == first["variants"] > 0 and 0 <= second["new_variants"] <= second["variants"]
    assert union["variants"] == first["variants"] + second["new_variants"] and union["examples"] == 16


KERNEL_MODULE = '''
class Wrapped:  # what @triton.jit returns, as far as naming goes: the Python function as .fn
    def __init__(self, fn):
        self.fn = fn


def _helper(x):
    return x + {increment}


helper = Wrapped(_helper)


def kernel(x):
    return helper(x)
'''


def test_a_kernel_is_named_by_its_source_and_its_helpers_not_by_its_module(tmp_path):
    def load(name: str, increment: int):
        path = tmp_path / f"{name}.py"
        path.write_text(KERNEL_MODULE.format(increment=increment))
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module.kernel

    same, copy, edited = load("first", 1), load("second", 1), load("third", 2)
    assert specialization.kernel_name(same) == specialization.kernel_name(copy)  # a mutant's untouched kernel
    assert specialization.kernel_name(same) != specialization.kernel_name(edited)  # only a helper changed
    assert specialization.kernel_name(same).startswith("kernel@")


def test_install_records_the_launches_of_compiled_kernels_too(tmp_path, monkeypatch):
    # On a GPU the launches go through JITFunction.run; here its original is a stub (no driver).
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    launched = []
    monkeypatch.setattr(JITFunction, "run", lambda self, *args, grid, warmup, **kwargs: launched.append(grid))
    monkeypatch.setattr(InterpretedFunction, "run", InterpretedFunction.run)  # put back after the test
    compiled = JITFunction(kernel, do_not_specialize=["stride_row"])
    path = tmp_path / "variants.jsonl"
    specialization.install(path)
    specialization.install(path)  # a second install does not wrap twice
    for n in (32, 48, 33):
        compiled.run(ALIGNED, ALIGNED, n, 7, grid=(1,), warmup=False, BLOCK_N=32, num_warps=4)
    assert launched == [(1,)] * 3  # every launch went ahead
    records = specialization.read_records(path)
    assert len(records) == 2 and count_variants(records) == 2  # N divisible by 16 (twice), then not
    assert records[0]["kernel"].startswith("kernel@")
    assert ["stride_row", "i32", None] in records[0]["key"] and ["num_warps", "option", 4] in records[0]["key"]
