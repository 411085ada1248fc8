"""The installed wheel does, outside the checkout, everything the page "pytest, CI and pre-commit"
(docs/ci.md, linked from the README's "pytest and CI") promises: ``lse-fuzz check`` and
``lse-fuzz mutants`` with their bundled data, the pytest suite under ``-n``, the page's snippets
and commands, the GitHub Actions workflow's steps, and the pre-commit hook, which blocks a commit of
a buggy kernel and lets a correct one through.

The page's code blocks are read from the page itself and run as they stand (only the hook
repository's URL is replaced, by a local clone: nothing is downloaded). See conftest.py for how the
wheel is built and installed.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import xml.etree.ElementTree as ElementTree
import zipfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
BUGGY = ROOT / "tests" / "implementations" / "candidates" / "buggy_no_max.py"  # Triton; forgets the row max
PAGE = ROOT / "docs" / "ci.md"  # using lse-fuzz from another repository: pytest, CI, pre-commit


def page_blocks() -> list[tuple[str, str]]:
    """(language, text) of each fenced code block of the page on using lse-fuzz elsewhere."""
    return re.findall(r"^```(\w+)\n(.*?)^```$", PAGE.read_text(), flags=re.S | re.M)


def block_named(name: str) -> str:
    """The block whose first line is the comment ``# name`` (a file the reader is to create)."""
    found = [body for _, body in page_blocks() if body.startswith(f"# {name}\n")]
    assert len(found) == 1, f"{PAGE.name}: {len(found)} blocks named {name}"
    return found[0]


def commands(language: str) -> list[str]:
    """The command lines of the page's blocks in ``language``, in order, without their comments."""
    return [line.split("  #")[0].strip() for lang, body in page_blocks() if lang == language
            for line in body.splitlines() if line.strip()]


def test_the_wheel_holds_the_four_packages_their_data_and_the_entry_points(installed):
    names = set(zipfile.ZipFile(installed.wheel).namelist())
    for package in ("lse_fuzz", "fuzz", "reference", "mutants"):
        assert f"{package}/__init__.py" in names
    assert "fuzz/pytest_suite/test_lse_fuzz.py" in names
    # Every file the packages read at run time (anything that is neither Python nor a README).
    data = {str(path.relative_to(ROOT)) for package in ("lse_fuzz", "fuzz", "reference", "mutants")
            for path in (ROOT / package).rglob("*")
            if path.is_file() and path.suffix not in (".py", ".pyc") and path.name != "README.md"}
    assert "fuzz/schemas/mutation-testing-report-schema.json" in data
    assert data <= names, f"not in the wheel: {sorted(data - names)}"
    assert not any(name.startswith(("tests/", "bench/")) for name in names)
    entry_points = next(name for name in names if name.endswith(".dist-info/entry_points.txt"))
    text = zipfile.ZipFile(installed.wheel).read(entry_points).decode()
    assert "lse-fuzz = lse_fuzz.cli:main" in text and "lse_fuzz = lse_fuzz.plugin" in text


def test_every_package_is_imported_from_the_environment_not_the_checkout(installed, project):
    done = installed.run(["python", "-c", "import lse_fuzz, fuzz, reference, mutants, fuzz.plugin\n"
                          "for m in (lse_fuzz, fuzz, reference, mutants, fuzz.plugin): print(m.__file__)\n"
                          "print(lse_fuzz.check, lse_fuzz.__version__)"], project)
    assert done.returncode == 0, done.stdout
    files = done.stdout.splitlines()[:5]
    assert all(Path(f).is_relative_to(installed.site_packages) for f in files), files


def test_mutants_from_the_wheel_patch_its_own_reference_and_validate_against_its_bundled_schema(installed, project):
    listed = installed.run("lse-fuzz mutants --list", project)
    assert listed.returncode == 0 and "no_max_added" in listed.stdout, listed.stdout
    done = installed.run("lse-fuzz mutants no_max_added --budget 30 -q --out-dir report", project)
    assert done.returncode == 0, done.stdout
    assert "mutation score 100.0%" in done.stdout
    validated = installed.run(["python", "-c", "import json, fuzz.mutation.report as report\n"
                               "report.validate_report(json.load(open('report/mutation.json')))\n"
                               "print(report.SCHEMA_PATH)"], project)
    assert validated.returncode == 0, validated.stdout
    assert Path(validated.stdout.strip()).is_relative_to(installed.site_packages)


def test_the_documented_ci_commands_are_the_workflows_and_pass_a_correct_kernel(installed, project):
    """Every step of the documented workflow passes on a correct kernel, run as GitHub runs it; the
    page's list of CI commands is the workflow's."""
    workflow = yaml.safe_load(block_named(".github/workflows/lse-fuzz.yml"))
    job = workflow["jobs"]["lse-fuzz"]
    steps = job["steps"]
    runs = [step["run"] for step in steps if "run" in step]
    assert commands("sh") == runs[:len(commands("sh"))], "the page's CI commands differ from its workflow's"
    used = [step["uses"].split("@")[0] for step in steps if "uses" in step]
    assert used == ["actions/checkout", "actions/setup-python", "actions/cache", "actions/upload-artifact"]
    upload = steps[-1]["with"]
    assert upload["include-hidden-files"] is True
    artifacts = upload["path"].split()

    summary = project / "step-summary.md"
    for command in runs:  # as GitHub's runner runs a step: bash -eo pipefail, the job's env
        done = installed.run(command, project, timeout=400, **{**job["env"], "LSE_FUZZ": str(installed.wheel),
                                                               "GITHUB_STEP_SUMMARY": str(summary)})
        assert done.returncode == 0, f"{command}\n{done.stdout}"

    assert json.loads((project / "lse-fuzz.json").read_text())["verdict"] == "pass"
    assert "lse-fuzz" in summary.read_text() and summary.read_text() == (project / "lse-fuzz.md").read_text()
    cases = ElementTree.parse(project / "lse-fuzz.xml").getroot().iter("testcase")
    names = sorted(case.get("name") for case in cases)
    assert len(names) == 12 and "test_lse_suite[agreement]" in names and "test_lse_suite[all]" in names
    assert all((project / path).exists() for path in artifacts if path != ".lse-fuzz/")  # none fails: no reproducer


def test_pytest_n_2_fails_a_buggy_kernel_with_its_counterexamples_and_replay_commands(installed, project):
    shutil.copy(BUGGY, project / "mylse.py")
    done = installed.run("python -m pytest -n 2 --lse-impl mylse.py:lse --junitxml lse-fuzz.xml", project,
                         timeout=400)
    assert done.returncode == 1, done.stdout
    assert "test_lse_fuzz.py::test_lse_suite[agreement]" in done.stdout
    assert "check 'agreement' failed" in done.stdout and "expected:" in done.stdout and "got:" in done.stdout
    assert "replay:   lse-fuzz replay .lse-fuzz/" in done.stdout and "--impl mylse.py:lse" in done.stdout
    assert "Traceback" not in done.stdout
    failures = [case.find("failure") for case in ElementTree.parse(project / "lse-fuzz.xml").getroot().iter("testcase")]
    messages = [failure.get("message", "") + (failure.text or "") for failure in failures if failure is not None]
    assert messages and all("replay:" in message for message in messages)


def test_the_documented_pytest_commands_and_own_tests_snippets_pass_as_written(installed, project):
    """The shipped suite alone in a fresh repository (one item per check), then the page's test
    modules, run with the page's commands."""
    suite, own_tests = [c for c in commands("bash") if c.startswith("python -m pytest")]
    done = installed.run(suite, project)
    assert done.returncode == 0, done.stdout
    assert "12 passed" in done.stdout  # -n auto: the suite's items spread over the workers

    (project / "tests").mkdir()
    for name in ("tests/test_mylse.py", "tests/test_mylse_properties.py"):
        (project / name).write_text(block_named(name))
    done = installed.run(own_tests, project)
    assert done.returncode == 0, done.stdout
    assert "14 passed" in done.stdout  # lse_suite's 12 items, the property, the fixture's test; not the suite


def test_the_pre_commit_hook_blocks_a_buggy_kernel_and_lets_a_correct_one_through(installed, project, tmp_path_factory):
    # The hook repository: this checkout's .pre-commit-hooks.yaml in a git repository of its own,
    # tagged as the page's config expects, so pre-commit clones it from disk.
    hooks = tmp_path_factory.mktemp("hooks-repository")
    shutil.copy(ROOT / ".pre-commit-hooks.yaml", hooks)
    config = block_named(".pre-commit-config.yaml")
    rev = yaml.safe_load(config)["repos"][0]["rev"]
    for command in ("git init -q", "git add .pre-commit-hooks.yaml", "git commit -qm hooks", f"git tag {rev}"):
        assert installed.run(command, hooks).returncode == 0
    config = re.sub(r"(?m)^(\s*- repo: )\S+", lambda m: m.group(1) + str(hooks), config)
    (project / ".pre-commit-config.yaml").write_text(config)

    cache = str(tmp_path_factory.mktemp("pre-commit-home"))
    git = lambda command: installed.run(command, project, PRE_COMMIT_HOME=cache)  # noqa: E731
    assert git("git init -q").returncode == 0
    [install] = [c for c in commands("bash") if c.startswith("pre-commit ")]
    assert git(install).returncode == 0

    good = git("git add . && git commit -qm 'a correct kernel'")
    assert good.returncode == 0, good.stdout
    assert "lse-fuzz check" in good.stdout and "Passed" in good.stdout

    shutil.copy(BUGGY, project / "kernels" / "mylse.py")
    bad = git("git add . && git commit -qm 'a buggy kernel'")
    assert bad.returncode == 1, bad.stdout
    assert "Failed" in bad.stdout and "check 'agreement' failed" in bad.stdout and "replay:" in bad.stdout
    log = git("git log --format=%s").stdout.split("\n")
    assert log[0] == "a correct kernel", log  # the buggy commit was not made


def test_a_fuzz_folder_of_the_repository_is_left_alone_until_lse_fuzz_is_asked_for(installed, project):
    """A repository with a ``fuzz`` package of its own: under ``python -m pytest`` it comes first on
    sys.path. Its own tests run as before; the moment an --lse-* option, the command (which sees it
    only through PYTHONPATH) or a fixture of lse-fuzz is used, one message names the clash and the fix."""
    (project / "fuzz").mkdir()
    (project / "fuzz" / "__init__.py").write_text('"""The repository\'s own fuzzing helpers."""\n')
    (project / "test_theirs.py").write_text("def test_theirs():\n    assert True\n")
    theirs = installed.run("python -m pytest -q test_theirs.py", project)
    assert theirs.returncode == 0 and "1 passed" in theirs.stdout, theirs.stdout
    clash = f"import name 'fuzz' resolves to {str(project / 'fuzz' / '__init__.py')!r}, not to lse-fuzz's own package"
    ours = installed.run("python -m pytest --lse-impl kernels/mylse.py:lse", project)
    assert ours.returncode == 4 and f"ERROR: {clash}" in ours.stdout, ours.stdout
    command = installed.run("PYTHONPATH=. lse-fuzz check kernels/mylse.py:lse", project)
    assert command.returncode == 2 and command.stdout == f"lse-fuzz: error: {clash}" + command.stdout.split(clash)[1]
    assert "Traceback" not in ours.stdout + command.stdout
    (project / "test_uses_the_fixture.py").write_text("def test_it(lse_fuzz):\n    assert lse_fuzz(checks=['agreement'])\n")
    fixture = installed.run("python -m pytest -q test_uses_the_fixture.py", project)
    assert fixture.returncode == 1 and "1 error" in fixture.stdout and f"PackageClash: {clash}" in fixture.stdout
