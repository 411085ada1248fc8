"""lse-fuzz's implementation: internal, not an API.

Users import :mod:`lse_fuzz` (``lse_fuzz.check``, ``lse_fuzz.replay``, ``lse_fuzz.lse_suite``, ...)
and run the ``lse-fuzz`` command; both check first that this package is lse-fuzz's own. This
package exports nothing: its modules (:mod:`fuzz.runner`, :mod:`fuzz.checks`, :mod:`fuzz.strategies`,
...) define the names, and lse-fuzz's own code and tests import them from there
(``from fuzz.runner import check``). Importing it imports nothing else, so ``lse-fuzz --help``
does not pay for torch, triton and Hypothesis.
"""

__distribution__ = "lse-fuzz"  # read by lse_fuzz: a package of another distribution under this name lacks it

__all__: list[str] = []  # internal: the public API is lse_fuzz's


def __getattr__(name: str):
    # Only for names the package does not hold (a submodule not imported yet is imported by `import
    # fuzz.NAME`, never looked up here): say where the public API lives instead of a bare AttributeError.
    hint = "" if name.startswith("__") else (
        " (fuzz is lse-fuzz's internal implementation and exports nothing: the public API is `import lse_fuzz`)")
    raise AttributeError(f"module 'fuzz' has no attribute {name!r}{hint}")
