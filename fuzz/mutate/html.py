"""The HTML report: one self-contained file that opens offline.

It is the Stryker JSON shown by the ``mutation-testing-elements`` web component (the viewer Stryker
itself ships; Apache-2.0, its license beside it in ``assets/``), whose script is inlined from the
copy shipped with this package: no network, no server, each mutant on the kernel's source, its
status, the check that killed it and the edit.
"""

from __future__ import annotations

import html
import json
from functools import lru_cache
from pathlib import Path

__all__ = ["ELEMENTS_VERSION", "elements_script", "html_report"]

ASSETS = Path(__file__).parent / "assets"
ELEMENTS_SCRIPT = ASSETS / "mutation-test-elements.js"
ELEMENTS_VERSION = "3.9.0"
"""The npm package mutation-testing-elements whose browser bundle is shipped (pinned)."""


@lru_cache(maxsize=1)
def elements_script() -> str:
    return ELEMENTS_SCRIPT.read_text(encoding="utf-8")


def _json_in_script(data: dict) -> str:
    """JSON that cannot close the <script> element it sits in (``<\\/`` is ``</`` in a JSON string)."""
    return json.dumps(data).replace("</", "<\\/").replace("<!--", "<\\u0021--")


def _script(text: str) -> str:
    # The bundle is inlined as is (escaping code would change its regular expressions): it must not
    # hold a closing script tag, which a test checks for the shipped version.
    assert "</script" not in text.lower(), "the web component bundle cannot be inlined"
    return text


def html_report(data: dict, *, title: str = "lse-fuzz mutate") -> str:
    """The page for a mutation-testing-report dict."""
    report = _json_in_script(data)
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(title)}</title>
<script>{_script(elements_script())}</script>
</head>
<body>
<mutation-test-report-app title-postfix="{html.escape(title, quote=True)}">
  Your browser does not run the report's script (JavaScript is off?); mutation.json and mutation.md hold the same
  results.
</mutation-test-report-app>
<script>
  document.querySelector("mutation-test-report-app").report = {report};
</script>
</body>
</html>
"""
