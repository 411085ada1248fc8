"""MkDocs hook: the site is the repository's own Markdown, its links written as GitHub resolves them.

README.md is the site's home page and bench/RESULTS.md its results page (``PUBLISHED``): one text,
read on GitHub or on the site. Every page writes its links relative to its own file on disk, as
GitHub resolves them, so a page outside docs/ (README.md) or a link out of docs/ (to a script or a
result file) has no page to point to until this hook says which. It rewrites each relative link:

* to a file of docs/ or a published file: a link to that page, relative to the page's place in
  the site;
* to any other file of the repository: a link to it in the repository (``repo_url`` in mkdocs.yml,
  on its ``edit_uri`` branch) when the site knows the repository's address, else the path in code
  (the site serves no such file);
* to nothing: left as it is, so ``mkdocs build --strict`` stops on the broken link.

Code (fenced blocks and inline spans) is left alone: a link written inside code is text.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

from mkdocs.structure.files import File

PUBLISHED = {"README.md": "index.md", "bench/RESULTS.md": "results.md"}  # repository file -> site page

LINK = re.compile(r"(!?)\[([^\]]*)\]\(([^)\s]+)\)")
FENCE = re.compile(r"^\s*(```|~~~)")
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")


def on_files(files, config):
    """Add the published repository files as pages of the site."""
    root = _root(config)
    for source, page in PUBLISHED.items():
        files.append(File.generated(config, page, abs_src_path=str(root / source)))
    return files


def on_page_markdown(markdown, page, config, files):
    """Rewrite the page's links from paths on disk to places in the site (see the module's docstring)."""
    root, source = _root(config), Path(page.file.abs_src_path)
    docs = Path(config["docs_dir"]).resolve()
    site_dir = posixpath.dirname(page.file.src_uri)
    repo = (config.get("repo_url") or "").rstrip("/")
    branch = (config.get("edit_uri") or "edit/main/").strip("/").split("/")[-1]

    def rewrite(match: re.Match) -> str:
        bang, text, target = match.groups()
        path, _, anchor = target.partition("#")
        if not path or re.match(r"^[a-z][a-z0-9+.-]*:", path) or path.startswith("/"):
            return match.group(0)  # an anchor of this page, a URL or an absolute link: MkDocs judges it
        resolved = (source.parent / path).resolve()
        if resolved.is_relative_to(docs):
            uri = resolved.relative_to(docs).as_posix()
        elif resolved.is_relative_to(root) and resolved.relative_to(root).as_posix() in PUBLISHED:
            uri = PUBLISHED[resolved.relative_to(root).as_posix()]
        elif resolved.is_relative_to(root) and resolved.exists():
            in_repository = resolved.relative_to(root).as_posix()
            if repo:
                return f"{bang}[{text}]({repo}/blob/{branch}/{in_repository}{'#' + anchor if anchor else ''})"
            return text if in_repository in text else f"{text} (`{in_repository}`)"
        else:
            return match.group(0)  # broken: left for MkDocs to report
        relative = posixpath.relpath(uri, site_dir or ".")
        return f"{bang}[{text}]({relative}{'#' + anchor if anchor else ''})"

    return "\n".join(_rewrite_outside_code(markdown.split("\n"), rewrite))


def _root(config) -> Path:
    """The repository: the folder of mkdocs.yml."""
    return Path(config.config_file_path).resolve().parent


def _rewrite_outside_code(lines: list[str], rewrite) -> list[str]:
    """The lines with ``rewrite`` applied to every link outside fenced blocks and code spans."""
    out, fence = [], None
    for line in lines:
        opening = FENCE.match(line)
        if fence is not None:
            fence = None if opening and opening.group(1) == fence else fence
            out.append(line)
        elif opening:
            fence = opening.group(1)
            out.append(line)
        else:
            spans = [span.span() for span in CODE_SPAN.finditer(line)]
            inside = lambda match: any(a <= match.start() < b for a, b in spans)  # noqa: E731
            out.append(LINK.sub(lambda match: match.group(0) if inside(match) else rewrite(match), line))
    return out
