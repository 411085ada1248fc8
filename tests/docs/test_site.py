"""The documentation site builds with ``mkdocs build --strict`` (no broken link or anchor, every page
in the navigation), and the hook that publishes README.md and bench/RESULTS.md resolves links as
GitHub does. Skipped where the ``docs`` extra is not installed (``pip install -e ".[docs]"``).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

mkdocs_build = pytest.importorskip("mkdocs.commands.build", reason="the docs extra (mkdocs) is not installed")
from mkdocs.config import load_config  # noqa: E402
from mkdocs.exceptions import Abort  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def build(config_file: Path, site: Path) -> None:
    mkdocs_build.build(load_config(str(config_file), strict=True, site_dir=str(site)))


def site_copy(tmp_path: Path) -> Path:
    """A copy of the site's sources (mkdocs.yml, the hook, every Markdown file and image of the
    repository, in their folders) in tmp_path, to break on purpose."""
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"],
                            capture_output=True, text=True, cwd=ROOT)
    paths = ([ROOT / line for line in listed.stdout.splitlines()] if listed.returncode == 0
             else [p for p in ROOT.rglob("*") if ".git" not in p.parts])
    for path in paths:
        relative = path.relative_to(ROOT)
        if path.is_file() and (path.suffix in (".md", ".png") or relative.parts[:2] == ("docs", "hooks")):
            (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, tmp_path / relative)
    shutil.copy(ROOT / "mkdocs.yml", tmp_path)
    return tmp_path / "mkdocs.yml"


def test_the_site_builds_strictly_with_readme_and_results_as_pages(tmp_path):
    build(ROOT / "mkdocs.yml", tmp_path / "site")
    home = (tmp_path / "site" / "index.html").read_text()
    assert "Check your kernel" in home and 'href="glossary/#time-limits"' in home  # README, links resolved
    assert 'href="results/"' in home  # bench/RESULTS.md, linked from the README, is a page
    assert "In short" in (tmp_path / "site" / "results" / "index.html").read_text()
    interpreter = (tmp_path / "site" / "interpreter" / "index.html").read_text()
    assert "<code>bench/results/interpreter-diff.md</code>" in interpreter  # a file the site does not serve


def test_each_broken_link_and_a_page_left_out_of_the_navigation_fail_the_build(tmp_path, caplog):
    config = site_copy(tmp_path)  # one build for every kind of breakage: each is named in the log
    glossary = tmp_path / "docs" / "glossary.md"
    glossary.write_text(glossary.read_text() + "\n[a page](no-such-page.md), [a script](../bench/no_such_script.py),"
                        " [an anchor](oracle.md#no-such-heading)\n")
    (tmp_path / "docs" / "orphan.md").write_text("# Orphan\n")
    with pytest.raises(Abort):
        build(config, tmp_path / "site")
    for name in ("no-such-page.md", "no_such_script.py", "no-such-heading", "orphan.md"):
        assert name in caplog.text, name


def test_repository_files_link_to_the_repository_once_its_address_is_known(tmp_path):
    config = site_copy(tmp_path)  # the intact copy builds: the failures above are their edits'
    config.write_text(config.read_text() + "repo_url: https://example.org/lse-fuzz\n")
    build(config, tmp_path / "site")
    interpreter = (tmp_path / "site" / "interpreter" / "index.html").read_text()
    assert 'href="https://example.org/lse-fuzz/blob/main/bench/results/interpreter-diff.md"' in interpreter
