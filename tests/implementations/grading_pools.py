"""A pool for the grading executor's tests (fuzz.grading.local_executor): it runs each job at once,
with the outcome its test names, and keeps the options each job was handed."""

from __future__ import annotations


class GraderKilled(Exception):
    """The grader SIGKILLed: nothing more is written."""


class InstantPool:
    """``outcomes[key]``: "pass" (the default), "attack" (found in its run: it crashes, having
    killed the fork server) or "kills" (the grader dies as the job starts). ``handed``: each job's
    key and the options it was handed, in order."""

    def __init__(self, by_key: dict, options, outcomes: dict[str, str] | None = None) -> None:
        self.by_key, self.options, self.outcomes, self.handed = by_key, options, dict(outcomes or {}), []

    def wait_until_quiet(self) -> None:
        pass

    def in_flight(self, since=None) -> tuple[str, ...]:
        return ()

    def run(self, jobs):
        from fuzz.grading.evaluate import base_record
        from fuzz.grading.options import GradeOptions
        from fuzz.isolation import JobResult
        from fuzz.outcomes import Outcome, Verdict

        for job in jobs:
            outcome = self.outcomes.get(job.key, "pass")
            if outcome == "kills":
                raise GraderKilled(job.key)
            if "options" in job.payload:
                self.handed.append((job.key, GradeOptions.from_wire(job.payload["options"])))
            if outcome == "attack":
                yield JobResult(job, Outcome.CRASHED, None, 1.0, detail="it killed the fork server",
                                killed_fork_server=True)
                continue
            record = base_record(self.by_key[job.key], self.options)
            record.verdict, record.reason = Verdict.PASS, "passed"
            yield JobResult(job, Outcome.RETURNED, record.to_json(), 1.0)
