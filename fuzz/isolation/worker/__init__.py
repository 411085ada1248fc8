"""The worker: the process that runs the implementation under test, and its proxy in the fuzzer.

* :mod:`.process`: the worker process (loads the target, serves calls, rebuilds inputs);
* :mod:`.proxy`: :class:`~.proxy.IsolatedImpl`, the callable that ships each call to it;
  :mod:`.restarting`: one that comes back after a crash (``pytest --lse-isolate``);
* both sides of a call: :mod:`.codec` (tensors across the boundary), :mod:`.shared_input` (a
  CPU input's memory, shared), :mod:`.held_outputs` (outputs the caller still holds),
  :mod:`.compile_watch` / :mod:`.compile_clock` (compiling is not hanging), :mod:`.raised`
  (what its failures become here), :mod:`.bench` / :mod:`.bench_input` (the bandwidth benchmark);
* what the worker does to itself: :mod:`.op_record` (the operators a call ran), :mod:`.appearance`
  (it looks like any ``python3``); and what it printed: :mod:`.noise`.
"""
