"""The reports of ``check`` and ``grade`` (fuzz.grading.reports) for a candidate the CPU could not
judge: its own verdict and count, the construct and ``--device cuda`` in its text, never counted as
a pass nor against the batch."""

from __future__ import annotations

import io
import json

from fuzz.grading import GradeRecord
from fuzz.grading.reports import format_record, read_records, render_markdown, render_table, summary_counts, write_reports
from fuzz.outcomes import ExitCode, Verdict, batch_exit_code

HEADLINE = ("UNSUPPORTED on the CPU: the kernel uses tl.inline_asm_elementwise, which the CPU's emulation of Triton "
            "cannot run as a GPU does (inline GPU assembly has no CPU meaning); run with --device cuda for a verdict")
REPLAY = "lse-fuzz replay .lse-fuzz/lse-fuzz-error-847e2c9706.pt --impl asm.py:lse --device cuda"


def _record(name: str, verdict: Verdict, **fields) -> GradeRecord:
    return GradeRecord(candidate=name, target=f"{name}:lse", sha256=None, key="k", verdict=verdict, examples=1,
                       calls=1, seconds=2.0, seed=0, options={"contract": "strict", "seed": 0}, **fields)


def _unsupported() -> GradeRecord:
    details = "\n".join([HEADLINE, "  during:   the first call", "  input:    float32 (1, 1) contiguous on cpu",
                         f"  replay:   {REPLAY}"])
    return _record("asm.py", Verdict.UNSUPPORTED, reason=HEADLINE, details=details, replay=REPLAY,
                   result={"status": "unsupported", "failure": {"construct": "tl.inline_asm_elementwise"}})


def test_the_check_report_names_the_construct_and_the_device_to_run_it_on():
    text = format_record(_unsupported())
    assert text.splitlines()[0] == "UNSUPPORTED asm.py:lse"
    assert f"  {HEADLINE}" in text.splitlines() and f"    replay:   {REPLAY}" in text.splitlines()
    assert "worker stderr" not in text  # the details are the report, not a crashed worker's output


def test_the_record_round_trips_through_the_json_lines_report(tmp_path):
    record = _unsupported()
    write_reports([record], tmp_path)
    (again,) = read_records(tmp_path / "grade.jsonl")
    assert again == record and again.verdict is Verdict.UNSUPPORTED and not again.passed
    assert json.loads((tmp_path / "grade.jsonl").read_text())["verdict"] == "unsupported"
    assert "asm.py,unsupported," in (tmp_path / "grade.csv").read_text()


def test_the_summaries_count_it_on_its_own_neither_as_a_pass_nor_against_the_batch():
    records = [_record("good.py", Verdict.PASS, reason="20 examples passed every check"), _unsupported()]
    assert summary_counts(records) == {"pass": 1, "unsupported": 1}
    table = io.StringIO()
    render_table(records, file=table)
    assert "2 candidates: 1 pass, 1 unsupported" in table.getvalue()
    assert "the kernel uses tl.inline_asm_elementwise" in table.getvalue()  # the reason column names it
    markdown = render_markdown(records, title="lse-fuzz grade")
    assert "**1** pass, **1** unsupported" in markdown and "asm.py</code>: unsupported" in markdown
    assert batch_exit_code(r.verdict for r in records) is ExitCode.UNSUPPORTED
    failed = _record("bad.py", Verdict.FAIL, check="agreement", reason="check 'agreement' failed")
    assert batch_exit_code(r.verdict for r in [*records, failed]) is ExitCode.FAILED
