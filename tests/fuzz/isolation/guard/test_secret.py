"""fuzz.isolation.guard.secret: the private seed is wiped from what /proc shows of the grader, as the
command's first step (before torch is imported)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

SECRET = "hunter2-secret-module-0xFEED"

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc is Linux's")


def _run(code: str, *argv: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *argv], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=60)


# The probe's code is in its own command line: it spells the secret backwards, so that only the
# secret the test puts there is found.
PROBE = """
    import sys
    from fuzz.isolation import scrub_early
    scrub_early(sys.argv)
    needle = %r[::-1].encode()
    environ = open("/proc/self/environ", "rb").read()
    cmdline = open("/proc/self/cmdline", "rb").read()
    print(needle in environ, needle in cmdline, "torch" in sys.modules)
""" % SECRET[::-1]


@pytest.mark.parametrize("argv, env", [
    (["--private-seed", "env:LSE_TEST_SEED"], {"LSE_TEST_SEED": SECRET}),
    (["--private-seed=env:LSE_TEST_SEED"], {"LSE_TEST_SEED": SECRET}),
    (["grade", "x", "--private-seed", SECRET], {}),
    ([f"--private-seed={SECRET}"], {"UNRELATED": SECRET}),  # a literal one: wherever it appears
])
def test_the_secret_is_gone_from_proc_before_torch_is_imported(argv, env):
    done = _run(PROBE, *argv, env=env)
    assert done.stdout.split() == ["False", "False", "False"], done.stderr


def test_without_the_option_nothing_is_touched():
    done = _run(PROBE, "--seed", "3", env={"LSE_TEST_SEED": SECRET})
    assert done.stdout.split() == ["True", "False", "False"], done.stderr


def test_a_file_or_a_missing_variable_is_left_to_the_options_check():
    for argv in (["--private-seed", "file:/no/such"], ["--private-seed", "env:LSE_UNSET_0"], ["--private-seed"]):
        done = _run(PROBE, *argv)
        assert done.returncode == 0 and done.stdout.split() == ["False", "False", "False"], done.stderr


def test_the_command_wipes_it_first(tmp_path):
    """``python -m fuzz`` with the secret in its environment: by the time anything heavy is imported
    /proc no longer shows it (a stand-in ``torch`` module looks, and ends the command)."""
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "torch.py").write_text(textwrap.dedent("""
        environ = open("/proc/self/environ", "rb").read()
        raise SystemExit("SEEN" if %r.encode() in environ else "WIPED")
    """ % SECRET))
    done = subprocess.run([sys.executable, "-m", "fuzz", "check", "x.py", "--private-seed", "env:LSE_TEST_SEED"],
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "LSE_TEST_SEED": SECRET,
                               "PYTHONPATH": os.pathsep.join([str(hook), os.environ.get("PYTHONPATH", ""), os.getcwd()])})
    assert "WIPED" in done.stderr, done.stderr[-2000:]
