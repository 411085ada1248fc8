"""fuzz.memory.sanitizer: compute-sanitizer's reports read as findings (real H200 reports, data/)."""

from __future__ import annotations

from pathlib import Path

from fuzz.memory.sanitizer import parse

DATA = Path(__file__).parent / "data"


def test_a_read_past_the_allocation_is_a_memory_bounds_finding_with_its_kernel_line_and_probe():
    finding = parse((DATA / "memcheck-read-past.txt").read_text(), "memcheck")
    assert finding is not None and finding.check == "memory_bounds" and finding.tool == "memcheck"
    assert finding.what == "Invalid __global__ read of size 4 bytes"
    assert finding.kernel == "_lse_kernel at _lse_kernel.py:72" and finding.probe == "1 x 1"
    assert finding.lines == ["at _lse_kernel+0x1ec0 in _lse_kernel.py:72", "by thread (65,0,0) in block (0,0,0)",
                             "Access to 0x7f24ae800004 is out of bounds",
                             "and is 1 bytes after the nearest allocation at 0x7f24ae800000 of size 4 bytes"]
    assert finding.errors == 98  # the summary's count, not the "were not printed" line's


def test_a_store_past_the_output_and_the_launch_failure_after_it():
    finding = parse((DATA / "memcheck-store-past.txt").read_text(), "memcheck")
    assert finding is not None and finding.what == "Invalid __global__ write of size 4 bytes"
    assert finding.kernel == "_lse_kernel at _lse_kernel.py:146"  # not the "Program hit cudaError..." block


def test_an_uninitialized_read_is_named_in_the_probe_it_happened_in():
    finding = parse((DATA / "initcheck-skipped-partial.txt").read_text(), "initcheck")
    assert finding is not None and finding.check == "uninitialized_read"
    assert finding.what == "Uninitialized __global__ memory read of size 4 bytes"
    assert finding.kernel == "_lse_combine_kernel at _lse_combine.py:51"
    assert finding.probe == "3 x 8192, row 1 all -inf, row 2's first half -inf"
    assert finding.lines[-1].startswith("Address 0x")


def test_a_clean_report_has_no_finding():
    assert parse((DATA / "memcheck-clean.txt").read_text(), "memcheck") is None
    assert parse("", "initcheck") is None


def test_an_uninitialized_read_after_the_result_line_is_the_results_unwritten_bytes():
    # The probe reads the result on the GPU after the call: the read is a torch kernel's, the bytes
    # the implementation's (a row it never wrote). Same block format as a kernel's own read.
    text = (DATA / "initcheck-skipped-partial.txt").read_text().replace(
        "lse-fuzz-probe 6 start 3 x 8192, row 1 all -inf, row 2's first half -inf\n",
        "lse-fuzz-probe 6 start 3 x 8192, row 1 all -inf, row 2's first half -inf\nlse-fuzz-probe 6 result\n")
    finding = parse(text, "initcheck")
    assert finding is not None and finding.in_result and finding.check == "uninitialized_read"
    assert finding.kernel.startswith("the implementation's result")
    assert not parse((DATA / "initcheck-skipped-partial.txt").read_text(), "initcheck").in_result
    # A result line of an earlier probe does not carry over to the next probe's call.
    carried = text.replace("lse-fuzz-probe 6 result\n", "").replace(
        "lse-fuzz-probe 5 done\n", "lse-fuzz-probe 5 result\nlse-fuzz-probe 5 done\n")
    assert not parse(carried, "initcheck").in_result
