"""The one worker pool: jobs run in grading drivers forked from the fork server.

* :mod:`.pool`: :class:`~.pool.Pool`, :class:`~.pool.JobResult`; :mod:`.job`: :class:`~.job.Job`;
* :mod:`.casualties`: which jobs whose driver died run again at once, which alone at the end;
* :mod:`.driver`: the driver process, which runs one job at a time;
* :mod:`.gpus`: which GPUs a pool spreads its drivers over.
"""
