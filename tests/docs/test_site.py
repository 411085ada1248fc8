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


@pytest.mark.parametrize("edit, message", [
    ("[a page](no-such-page.md)", "no-such-page.md"),
    ("[a script](../bench/no_such_script.py)", "no_such_script.py"),
    ("[an anchor](oracle.md#no-such-heading)", "no-such-heading"),
], ids=["page", "repository file", "anchor"])
def test_a_broken_link_fails_the_build(tmp_path, edit, message, caplog):
    config = site_copy(tmp_path)
    glossary = tmp_path / "docs" / "glossary.md"
    glossary.write_text(glossary.read_text() + f"\n{edit}\n")
    with pytest.raises(Abort):
        build(config, tmp_path / "site")
    assert message in caplog.text


def test_a_page_left_out_of_the_navigation_fails_the_build(tmp_path, caplog):
    config = site_copy(tmp_path)
    (tmp_path / "docs" / "orphan.md").write_text("# Orphan\n")
    with pytest.raises(Abort):
        build(config, tmp_path / "site")
    assert "orphan.md" in caplog.text


def test_repository_files_link_to_the_repository_once_its_address_is_known(tmp_path):
    config = site_copy(tmp_path)
    config.write_text(config.read_text() + "repo_url: https://example.org/lse-fuzz\n")
    build(config, tmp_path / "site")
    interpreter = (tmp_path / "site" / "interpreter" / "index.html").read_text()
    assert 'href="https://example.org/lse-fuzz/blob/main/bench/results/interpreter-diff.md"' in interpreter
