"""The fuzz suite against ``--lse-impl``: one item per check, one for all of them together.

Collected by ``pytest --lse-impl TARGET`` when no test paths are named (:mod:`fuzz.plugin`), or by
naming it: ``pytest --pyargs fuzz.pytest_suite --lse-impl TARGET``. Without ``--lse-impl`` it
checks the project's kernel, reference.lse.
"""

from fuzz.suite import lse_suite

test_lse_suite = lse_suite()
