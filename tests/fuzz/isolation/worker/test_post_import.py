"""fuzz.isolation.worker.post_import, and what it is for: a worker imports torch's dynamo only for a
candidate that does, and still watches that candidate's compiles and keeps dynamo out of its
operator record (the interpreter's fork server no longer preloads dynamo: 1.7 s of every run's
start on a 2-core CPU)."""

from __future__ import annotations

import importlib
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from fuzz.isolation import IsolatedImpl
from fuzz.isolation.worker.post_import import when_imported

IMPLEMENTATIONS = Path(__file__).resolve().parents[3] / "implementations"


@pytest.fixture
def module_dir(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in [n for n in sys.modules if n.startswith("lse_fuzz_probe_")]:
        del sys.modules[name]


def test_an_imported_module_s_action_runs_at_once(module_dir):
    (module_dir / "lse_fuzz_probe_a.py").write_text("VALUE = 1\n")
    importlib.import_module("lse_fuzz_probe_a")

    seen = []
    when_imported("lse_fuzz_probe_a", lambda module: seen.append(module.VALUE))
    assert seen == [1]


def test_an_action_runs_once_right_after_the_first_import_ends(module_dir):
    (module_dir / "lse_fuzz_probe_b.py").write_text("VALUE = 2\nLATE = VALUE + 1\n")
    seen = []
    when_imported("lse_fuzz_probe_b", lambda module: seen.append(module.LATE))
    assert seen == []
    importlib.import_module("lse_fuzz_probe_b")

    assert seen == [3]  # the module's whole body had run
    del sys.modules["lse_fuzz_probe_b"]
    importlib.import_module("lse_fuzz_probe_b")

    assert seen == [3]


def test_a_failed_import_runs_nothing_and_a_later_one_runs_the_action(module_dir):
    path = module_dir / "lse_fuzz_probe_c.py"
    path.write_text("raise ImportError('not yet')\n")
    seen = []
    when_imported("lse_fuzz_probe_c", lambda module: seen.append(module.__name__))
    with pytest.raises(ImportError):
        importlib.import_module("lse_fuzz_probe_c")
    assert seen == []
    path.write_text("VALUE = 3\n")
    importlib.invalidate_caches()
    importlib.import_module("lse_fuzz_probe_c")

    assert seen == ["lse_fuzz_probe_c"]


def test_the_operator_record_is_kept_out_of_dynamo_once_it_is_imported_and_not_before():
    # A process of its own: this one may have imported dynamo already.
    script = textwrap.dedent("""
        import sys
        import torch
        from fuzz.isolation.worker import op_record
        op_record.keep_out_of_dynamo()
        record, removed = op_record.OpRecord(), [False]
        with op_record.recording(record, input_dtype=torch.float32, removed=removed):
            torch.zeros(3) + 1
        assert "torch._dynamo" not in sys.modules, "the first recorded operator imported dynamo"
        assert op_record.OpRecord.__dict__["__torch_dispatch__"] is op_record._DISPATCH
        import torch._dynamo
        wrapped = op_record.OpRecord.__dict__["__torch_dispatch__"]
        assert wrapped is not op_record._DISPATCH and wrapped.__wrapped__ is op_record._DISPATCH
        with op_record.recording(record, input_dtype=torch.float32, removed=removed):
            torch.ones(2).exp()
        assert {"add", "zeros", "ones", "exp"} <= record.ops and removed == [False]
        print("ok")
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).resolve().parents[4])
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_a_worker_imports_no_dynamo_for_a_candidate_that_does_not(tmp_path):
    candidate = tmp_path / "plain.py"
    candidate.write_text(textwrap.dedent("""
        import sys
        import torch

        def lse(x):
            if "torch._dynamo" in sys.modules:
                raise RuntimeError("the worker imported torch._dynamo")
            return torch.logsumexp(x.to(torch.float64), dim=1).to(torch.float32)
    """))
    x = torch.randn(3, 5)
    with IsolatedImpl(f"{candidate}:lse", calibrate=None) as impl:
        torch.testing.assert_close(impl(x), torch.logsumexp(x.double(), dim=1).float())
        assert impl.runtime_ops.get("runtime_library_lse") == {"aten.logsumexp"}


def test_a_compile_of_a_candidate_that_imports_dynamo_in_its_call_is_watched():
    # The import itself (1-4 s on a loaded machine) is the call's own time, as any import in a call
    # is; what must hold is that the compile after it is reported, so it stops the call's clock
    # (tests/fuzz/isolation/worker/test_compile.py: a reported compile is no hang).
    x = torch.randn(3, 5)
    with IsolatedImpl(f"{IMPLEMENTATIONS / 'compiling' / 'lazy_dynamo.py'}:lse", calibrate=None) as impl:
        torch.testing.assert_close(impl(x), torch.logsumexp(x.double(), dim=1).float())
        [done] = impl.compiles
        assert done.kind == "torch.compile" and done.call == 1 and done.seconds > 0.5
        impl(x)  # compiled already: no new compile
        assert len(impl.compiles) == 1
