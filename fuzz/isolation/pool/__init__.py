"""The one worker pool: jobs run in grading drivers forked from the fork server.

* :mod:`.pool`: :class:`~.pool.Pool`, :class:`~.pool.Job`, :class:`~.pool.JobResult`;
* :mod:`.driver`: the driver process, which runs one job at a time;
* :mod:`.gpus`: which GPUs a pool spreads its drivers over.
"""
