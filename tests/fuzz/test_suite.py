"""The fuzz suite: every check against the implementation under test.

By default that is the project's kernel, reference.lse; point it at yours with

    pytest tests/fuzz/test_suite.py --lse-impl path/to/file.py:lse [--lse-contract finite]

Options (--lse-budget, --lse-seed, --lse-profile, --lse-device, ...) come from the pytest
plugin fuzz.plugin; a failure prints the check, the row, expected vs got and a replay command.
"""

import pytest

from fuzz.checks import CHECKS

pytestmark = pytest.mark.lse_fuzz


@pytest.mark.parametrize("check", list(CHECKS))
def test_check_holds(lse_fuzz, check):
    result = lse_fuzz(checks=[check])
    assert result.passed, result.summary()


def test_all_checks_together(lse_fuzz):
    result = lse_fuzz()
    assert result.passed, result.summary()
