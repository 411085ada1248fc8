"""Small autotuned LSE kernels for tests/fuzz/interpreter/test_autotune.py: one file per way of decorating a
kernel (autotune over jit, heuristics over autotune, autotune over heuristics, pruning, hooks),
plus one that is wrong for exactly one of its configs.

All of them share the row loop and the launcher in ``_rows.py``, so they differ only in their
decorators (and the buggy one in its documented line). Every kernel also writes the BLOCK_N it was
compiled with into a side-channel buffer, so a test sees which config really ran
(``_rows.launched_block_n()``), not which one the autotuner says it chose. Import them as the
package ``tuned`` (with ``tests/implementations`` on ``sys.path``), or as a fuzz target
``tuned.autotuned:lse``.
"""
