"""lse-fuzz as a user gets it: a wheel built from this checkout, installed in a fresh virtual environment.

The ``installed`` fixture builds the wheel from a copy of the checkout (nothing is written into
it) with the setuptools already installed, and installs it into a virtual environment that sees
the running interpreter's site-packages for torch, triton and the test tools. Nothing is downloaded:
``--no-build-isolation``, ``--no-index``, ``--no-deps``. Commands then run from a directory
outside the checkout, without PYTHONPATH, with the environment's ``bin`` first on PATH, as in a
shell where it is activated. Built once per test session and shared by the xdist workers.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import site
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
IMPLEMENTATIONS = ROOT / "tests" / "implementations"
CORRECT = IMPLEMENTATIONS / "correct" / "torch_float32.py"  # fast in the interpreter: keeps these tests short

# What the machine or the test run set that a user's shell would not have: the checkout on the
# import path, Triton's mode chosen for the package, pytest's and xdist's own variables.
_DROPPED = ("PYTHONPATH", "TRITON_INTERPRET", "PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT",
            "PYTEST_XDIST_TESTRUNUID", "PYTEST_CURRENT_TEST", "VIRTUAL_ENV", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL")


@dataclass(frozen=True)
class Installed:
    wheel: Path
    venv: Path

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    @property
    def site_packages(self) -> Path:
        return next((self.venv / "lib").glob("python3*/site-packages"))

    def env(self, **extra: str) -> dict[str, str]:
        """The environment of a shell where the virtual environment is activated; pip stays offline
        (the wheel's folder is its only source) and git and pre-commit keep to the test's folders."""
        env = {name: value for name, value in os.environ.items() if name not in _DROPPED}
        env.update(PATH=f"{self.venv / 'bin'}{os.pathsep}{env.get('PATH', '')}", VIRTUAL_ENV=str(self.venv),
                   PIP_NO_INDEX="1", PIP_NO_DEPS="1", PIP_FIND_LINKS=str(self.wheel.parent),
                   PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1",
                   GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1",
                   GIT_AUTHOR_NAME="lse", GIT_AUTHOR_EMAIL="lse@example.invalid",
                   GIT_COMMITTER_NAME="lse", GIT_COMMITTER_EMAIL="lse@example.invalid")
        env.update(extra)
        return env

    def run(self, command: str | list[str], cwd: Path, *, timeout: float = 300, **extra: str) -> subprocess.CompletedProcess:
        """``command`` (a shell line, or an argv) in ``cwd``, outside the checkout; stdout and stderr together."""
        assert ROOT not in cwd.resolve().parents, f"{cwd} is inside the checkout"
        shell = isinstance(command, str)
        argv = ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", command] if shell else command
        return subprocess.run(argv, cwd=cwd, env=self.env(**extra), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=timeout)


def _build(out: Path) -> Installed:
    source = out / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".git", "__pycache__", "*.egg-info", "build", "dist", ".hypothesis", ".lse-fuzz", "lse-fuzz-report"))
    dist = out / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                    "--wheel-dir", str(dist), str(source)], check=True, capture_output=True, timeout=300)
    wheel = next(dist.glob("lse_fuzz-*.whl"))
    venv = out / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True,
                   capture_output=True, timeout=300)
    if sys.prefix != sys.base_prefix:
        # The tests themselves run in a virtual environment: --system-site-packages reaches only the
        # base interpreter's packages, so torch and the test tools of this one are added by a .pth.
        site_packages = next((venv / "lib").glob("python3*/site-packages"))
        (site_packages / "outer-environment.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    # This interpreter may have lse-fuzz installed too (editable): pip leaves that one alone (it is
    # outside the environment) and the environment's own copy comes first on its sys.path.
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--no-deps", "--no-index",
                    "--disable-pip-version-check", str(wheel)], check=True, capture_output=True, timeout=300)
    return Installed(wheel=wheel, venv=venv)


@pytest.fixture(scope="session")
def installed(tmp_path_factory) -> Installed:
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # the run's folder, common to its workers
    out = shared / "installed-wheel"
    with open(shared / "installed-wheel.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (out / "done").exists():
            shutil.rmtree(out, ignore_errors=True)
            out.mkdir()
            _build(out)
            (out / "done").touch()
    return Installed(wheel=next((out / "dist").glob("lse_fuzz-*.whl")), venv=out / "venv")


@pytest.fixture
def project(tmp_path) -> Path:
    """A user's repository outside the checkout, with a correct kernel at kernels/mylse.py."""
    (tmp_path / "kernels").mkdir()
    shutil.copy(CORRECT, tmp_path / "kernels" / "mylse.py")
    return tmp_path
