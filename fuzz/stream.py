"""One seed, one stream of examples, whatever else the fuzzing process has imported.

Hypothesis (6.131 on) draws about one integer or float in twenty from a pool of constants: its
own, and those written in the source of every *local* module in ``sys.modules`` (a file outside the
standard library and site-packages, tests left out), gathered again whenever more modules are
loaded. The examples of one seed therefore depended on what the process had imported when each
was drawn:

* lse-fuzz's own modules when it runs from a checkout or an editable install, none from a wheel
  (so a seed's examples in CI were not a user's);
* the user's modules in a pytest session that calls the fuzzer, or the project around a script;
* a module imported part-way through a run, and in a process that runs jobs one after another
  (a grading driver) whatever the jobs before had loaded;
* on a host whose libraries are installed into a plain folder on PYTHONPATH (``pip --target``),
  those libraries: there the mutation gate's shares, which split one stream by the order its
  launch classes appear (:mod:`fuzz.shares`), split it otherwise once the fork server stopped
  importing ``torch._dynamo``, which imports mpmath through sympy
  (``bench/experiments/2026-12-07-local-constants.py`` shows it on the CPU).

:func:`own_stream` empties the local pool while a run's Hypothesis tests run, so a seed draws the
same examples everywhere (Hypothesis' own constants stay: the same in every process). The
fuzzer's strategies name the values that matter for an LSE themselves (powers of two and their
neighbours, float16's limit, the padded and huge views); the pool only added constants that
happened to be loaded. Hypothesis keeps the pool as an internal of ``hypothesis.internal.conjecture.providers``;
where a release has none, there is nothing to empty and the block runs as it is
(``tests/fuzz/test_stream.py`` then fails its checks of the pool).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from hypothesis.internal.conjecture import providers as _providers

__all__ = ["local_pool", "own_stream"]


def local_pool() -> bool:
    """Whether this Hypothesis draws from a pool of its process's local constants at all."""
    return all(hasattr(_providers, name) for name in ("_get_local_constants", "CONSTANTS_CACHE", "Constants"))


def _clear_cache() -> None:
    # Hypothesis caches the constants each kind of draw may take, local ones included, and clears
    # the cache only when the pool grows: entries made outside the block must not serve inside it,
    # nor those made inside serve a user's own tests after it.
    _providers.CONSTANTS_CACHE.cache.clear()


@contextlib.contextmanager
def own_stream() -> Iterator[None]:
    """Hypothesis draws no constant of the process's local modules while the block runs (see the
    module docstring). Nests; restores what was there before on the way out."""
    if not local_pool():
        yield
        return
    empty = _providers.Constants()
    before = _providers._get_local_constants
    _providers._get_local_constants = lambda *args, **kwargs: empty
    _clear_cache()
    try:
        yield
    finally:
        _providers._get_local_constants = before
        _clear_cache()
