"""The grader against its candidates, which run as the same user and can reach its processes.

* :mod:`.signals`: a signal sent to the grader is obeyed from outside the run, ignored and
  recorded from a candidate's process tree (:class:`~.signals.SignalGuard`);
* :mod:`.stops`: a stopped process of the run is continued, and the stop is told;
* :mod:`.watchdog`: the grader itself stopped is continued by a process of its own;
* :mod:`.supervisor`: the grader killed (SIGKILL) is replaced by one that continues the batch;
* :mod:`.blame`: who could have stopped it: the jobs in flight then;
* :mod:`.secret`: the private seed wiped from what /proc shows of the grader.

Standard library only: the command line takes the
signals and wipes the seed before it imports torch.
"""
