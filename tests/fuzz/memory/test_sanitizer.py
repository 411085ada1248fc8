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
