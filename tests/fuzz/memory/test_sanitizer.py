"""fuzz.memory.sanitizer: compute-sanitizer's reports read as findings (real H200 reports, data/)."""

from __future__ import annotations

from pathlib import Path

from fuzz.memory.sanitizer import Finding, parse, unjudged

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


def test_an_uninitialized_read_inside_a_librarys_kernel_is_not_the_implementations():
    # torch.logsumexp on a large transposed float64 input: PyTorch's own split reduction reads
    # scratch slots nobody stored. A correct wrapper; the CPU's check never judges a library's reads.
    text = (DATA / "initcheck-torch-reduce.txt").read_text()
    assert parse(text, "initcheck") is None
    others = unjudged(text, "initcheck")
    assert len(others) == 3 and all(o.in_library and not o.judged for o in others)
    assert others[0].kernel.startswith("void at::native::reduce_kernel<(int)512") and others[0].kernel.endswith("...")
    assert others[0].function == "at::native::reduce_kernel"  # the note's name: no template, no parameters
    assert others[0].probe.startswith("the largest input drawn, float64 (511, 8193)")


def test_a_librarys_read_of_the_result_after_the_call_is_still_judged():
    # The probe's own read of the result is a torch kernel too: there it is the result's unwritten bytes.
    text = (DATA / "initcheck-torch-reduce.txt").read_text().replace(
        "255 x near_limit/3\n", "255 x near_limit/3\nlse-fuzz-probe 8 result\n", 1)
    finding = parse(text, "initcheck")
    assert finding is not None and finding.in_result and finding.judged and finding.errors == 66
    assert unjudged(text, "initcheck") == []


def test_the_implementations_own_read_is_found_behind_a_librarys():
    library = (DATA / "initcheck-torch-reduce.txt").read_text().split("lse-fuzz-probe 8 result")[0]
    own = (DATA / "initcheck-skipped-partial.txt").read_text().split("lse-fuzz-probe 6 done")[0]
    own = own[own.index("lse-fuzz-probe 6 start"):]
    finding = parse(library + own + "========= ERROR SUMMARY: 75 errors\n", "initcheck")
    assert finding is not None and finding.kernel == "_lse_combine_kernel at _lse_combine.py:51"
    assert finding.errors == 3  # its own three printed; the summary counts the library's too


def test_memcheck_judges_a_librarys_kernel_too():
    # An access out of bounds is wrong whoever makes it; only initcheck's scratch reads are a library's own.
    text = (DATA / "initcheck-torch-reduce.txt").read_text().replace(
        "Uninitialized __global__ memory read of size 8 bytes", "Invalid __global__ read of size 8 bytes")
    finding = parse(text, "memcheck")
    assert finding is not None and finding.in_library and finding.judged and finding.errors == 66


def test_a_triton_kernel_without_line_info_is_the_implementations():
    finding = Finding("uninitialized_read", "initcheck", "Uninitialized __global__ memory read of size 4 bytes",
                      ["at _lse_combine_kernel+0x110", "by thread (2,0,0) in block (0,0,0)"])
    assert not finding.in_library and finding.judged and finding.kernel == "_lse_combine_kernel"


def test_a_kernels_function_is_its_name_alone():
    def at(line: str) -> Finding:
        return Finding("uninitialized_read", "initcheck", "Uninitialized __global__ memory read", lines=[line])

    assert at("at _lse_kernel+0x1a0 in /src/lse.py:72").function == "_lse_kernel"
    assert at("at void cub::DeviceReduceKernel<Policy<(int)1>, float *>(T1, int)+0x10").function == \
        "cub::DeviceReduceKernel"
    assert at("at void at::native::(anonymous namespace)::fill<float>(T1)+0x8").function == "at::native::{anonymous}::fill"
    assert Finding("memory_bounds", "memcheck", "Invalid __global__ read").function == ""
