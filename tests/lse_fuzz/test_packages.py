"""A package of another project under one of the names lse-fuzz installs (``fuzz``, ``reference``,
``mutants``) stops ``import lse_fuzz``'s API, the ``lse-fuzz`` command and the pytest plugin with
one message naming it and the fix, instead of a confusing ImportError from inside the wrong one.

Each case runs a fresh interpreter in a folder that holds the other package: there it comes first
on ``sys.path`` (``python -c`` and ``python -m`` put the working directory there), as a folder of
the user's repository would under ``python -m pytest``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lse_fuzz._packages import MARKER, OWN_PACKAGES, PackageClash, verify_packages

ROOT = Path(__file__).resolve().parents[2]


def run(cwd: Path, *argv: str, pythonpath: Path = ROOT) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(pythonpath)}
    return subprocess.run([sys.executable, *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def test_this_checkouts_packages_are_its_own():
    verify_packages()
    assert OWN_PACKAGES == ("fuzz", "reference", "mutants")
    for name in OWN_PACKAGES:
        assert MARKER in (ROOT / name / "__init__.py").read_text()


# (id, files to create in the working directory, what the message must say; None: no clash)
CASES = [
    ("a reference package of the project", {"reference/__init__.py": "lse = None\n"}, "import name 'reference' resolves to"),
    ("a fuzz module of the project", {"fuzz.py": "x = 1\n"}, "import name 'fuzz' resolves to"),
    ("a mutants package of the project", {"mutants/__init__.py": ""}, "import name 'mutants' resolves to"),
    # A folder without __init__.py is a namespace package, which a regular package found later wins over.
    ("a reference folder without __init__", {"reference/notes.txt": "x"}, None),
]


@pytest.mark.parametrize(("files", "message"), [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_a_package_of_the_same_name_first_on_the_path_is_named_with_the_fix(tmp_path, files, message):
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    done = run(tmp_path, "-c", "import lse_fuzz; print(lse_fuzz.Contract)")
    if message is None:
        assert done.returncode == 0, done.stderr
        return
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("lse_fuzz._packages.PackageClash: " + message), last
    name = next(iter(files)).split("/")[0].removesuffix(".py")
    assert str(tmp_path / next(iter(files))) in last and f"not to lse-fuzz's own package {str(ROOT / name)!r}" in last
    assert "rename or move" in last and "virtual environment of its own" in last


def test_the_command_says_it_in_one_line_and_exits_2(tmp_path):
    (tmp_path / "reference").mkdir()
    (tmp_path / "reference" / "__init__.py").write_text("")
    done = run(tmp_path, "-m", "lse_fuzz", "check", "x.py:lse")
    assert done.returncode == 2
    assert done.stderr.startswith("lse-fuzz: error: import name 'reference' resolves to ") and done.stderr.count("\n") == 1
    assert "Traceback" not in done.stderr


def test_a_package_another_distribution_overwrote_is_told_apart_by_its_marker(tmp_path):
    """pip writes two distributions' ``fuzz/`` into one folder: the right place, the wrong __init__.py."""
    site = tmp_path / "site-packages"
    shutil.copytree(ROOT / "lse_fuzz", site / "lse_fuzz", ignore=shutil.ignore_patterns("__pycache__"))
    for name in OWN_PACKAGES:
        (site / name).mkdir()
        (site / name / "__init__.py").write_text("" if name == "fuzz" else f"{MARKER}\n")
    done = run(tmp_path, "-c", "from lse_fuzz._packages import verify_packages; verify_packages()", pythonpath=site)
    assert done.returncode == 1
    assert f"import name 'fuzz' resolves to {str(site / 'fuzz' / '__init__.py')!r}, which another distribution " \
           "overwrote" in done.stderr


def test_the_api_is_checked_before_it_is_imported(monkeypatch):
    import lse_fuzz

    def clash():
        raise PackageClash("import name 'fuzz' resolves to '/elsewhere/fuzz/__init__.py', ...")

    monkeypatch.setattr(lse_fuzz, "_verify_packages", clash)
    monkeypatch.delitem(vars(lse_fuzz), "lse_inputs", raising=False)
    with pytest.raises(PackageClash, match="resolves to '/elsewhere"):
        lse_fuzz.lse_inputs  # noqa: B018
    with pytest.raises(ImportError):  # a PackageClash is an ImportError: `from lse_fuzz import x` raises it as is
        from lse_fuzz import lse_inputs  # noqa: F401
