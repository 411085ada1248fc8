"""Grading candidates: one verdict per implementation, for ``lse-fuzz check`` and ``lse-fuzz grade``.

* :mod:`.options`: :class:`GradeOptions`, everything that decides a verdict;
* :mod:`.candidates`: which files a batch holds (:func:`discover`) and their order (:func:`schedule`);
* :mod:`.evaluate`: one candidate -> one record (:func:`evaluate`), also as a pool job;
* :mod:`.record`: that record, :class:`GradeRecord`, and its JSON (the reports' lines, read back by ``--resume``);
* :mod:`.batch`: a batch on the worker pool (:func:`grade`), resumable;
* :mod:`.reports`: JSONL, CSV, the terminal table, Markdown;
* :mod:`.bench` and :mod:`.gpu_lock`: bandwidth on CUDA, and a GPU shared by several drivers.
"""

from __future__ import annotations

from .batch import GradeRun, grade
from .candidates import Candidate, discover, schedule
from .evaluate import evaluate, evaluate_replay
from .options import GradeOptions
from .record import GradeRecord, MalformedRecord
from .reports import format_record, render_markdown, render_table

__all__ = ["Candidate", "GradeOptions", "GradeRecord", "GradeRun", "MalformedRecord", "discover", "evaluate",
           "evaluate_replay", "format_record", "grade", "render_markdown", "render_table", "schedule"]
