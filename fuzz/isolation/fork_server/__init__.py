"""The fork server every worker and grading driver is forked from.

* :mod:`.server`: the fork server process itself (standard library, numpy, torch and Triton
  preloaded; never CUDA, never the project's kernels);
* :mod:`.client`: this side of it: start one (or connect to a parent's), spawn, learn exit codes;
* :mod:`.child`: :class:`~.child.Child`, one process it started: spawn, tail its log, kill, wait.

Nothing is imported here: the fork server boots through this package and must stay light.
"""
