"""The shipped test module: what ``pytest --lse-impl TARGET`` collects in any repository (see :mod:`fuzz.plugin`).

A folder of its own, so that pytest names the items after the module (``test_lse_fuzz.py::...``)
wherever the package is installed.
"""
