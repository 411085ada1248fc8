"""Grading on a Ray cluster: every candidate a Ray task, the verdicts streamed into the local report.

    lse-fuzz grade CANDIDATES --executor ray [--ray-address ADDRESS] [-j N]

Each candidate is one task that asks Ray for one GPU (``--device cuda``) or one CPU (``--device
cpu``), so the cluster's scheduler spreads a batch over every node and GPU it has. On its node the
task grades the candidate exactly as the local executor does, in a pool of one driver: a fork
server, a driver, the candidate's isolated worker, the same rlimits and timeouts. So a candidate
is no less isolated on a cluster than on one machine, and its verdict is the one the local
executor gives.

Nodes need share no file system: the candidate's file travels with its task, and its reproducers
come back with the verdict, into the local report's ``reproducers/``. The report, ``--resume``
and the exit codes are the local executor's. Every node must have lse-fuzz installed, at the
version of the submitting machine (a task on a node with another version fails with a message
saying so, and is graded again by ``--resume``).

What Ray does not change: a candidate runs as the user that runs Ray's worker processes on its
node, and can signal them as it could signal the local grader's (see the README's threat model).
"""

from __future__ import annotations

import json
import logging
import socket
import tempfile
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path

from reference.errors import InvalidArgument

from .._version import __version__
from ..failures import traceback_headline
from ..isolation import Pool
from ..outcomes import Verdict
from .bench import measure_baselines
from .candidates import Candidate
from .evaluate import base_record, grading_job, job_record
from .options import GradeOptions, driver_environment
from .record import GradeRecord
from .snapshot import encode, materialize, restore_paths

__all__ = ["grade_on_ray", "grade_remote"]

_BASELINES: dict[str, dict] = {}  # per Ray worker process: the references' bandwidth, measured once


def _ray():
    try:
        import ray
    except ImportError:
        raise InvalidArgument("--executor ray needs Ray on this machine and on every node of the cluster: "
                              "pip install 'lse-fuzz[ray]' (or pip install ray).") from None
    return ray


def grade_remote(payload: dict) -> dict:
    """A Ray task: grade one candidate on this node (see the module docstring). Returns the record
    with this node's paths, the reproducer files, and the paths to map back."""
    if payload["tool"] != __version__:
        raise RuntimeError(f"this node has lse-fuzz {__version__}, the grading machine {payload['tool']}: "
                           "install the same version on every node")
    options = GradeOptions.from_wire(payload["options"])
    candidate = Candidate(**payload["candidate"])
    with tempfile.TemporaryDirectory(prefix="lse-fuzz-ray-") as home:
        home_dir = Path(home)
        # The file, under its own name (tracebacks and reports show it); a module target must be
        # importable on every node, as the README says.
        here, originals = materialize(candidate, payload["source"], home_dir / "candidates")
        reproducers = home_dir / "reproducers"
        baselines = None
        if options.bench and options.device.startswith("cuda"):
            key = json.dumps(payload["options"], sort_keys=True)
            baselines = _BASELINES.setdefault(key, measure_baselines(options))
        job = grading_job(candidate.target, here, payload["options"], reproducers, baselines=baselines)
        with Pool(1, work_dir=home_dir / "drivers", timeout=payload["hard_limit"],
                  environ=driver_environment(options)) as pool:
            (result,) = list(pool.run([job]))  # a job whose driver died is run again alone: still one result
        record = restore_paths(job_record(result, here, options).to_json(), originals)
        files = {} if not reproducers.is_dir() else {
            str(path.relative_to(reproducers)): path.read_bytes() for path in reproducers.rglob("*") if path.is_file()}
    return {"record": record, "files": files, "node": socket.gethostname(), "reproducers": str(reproducers)}


def _brought_home(reply: dict, candidate: Candidate, reproducer_dir: Path) -> GradeRecord:
    """The remote record with this machine's paths, and its reproducer files written here."""
    record = restore_paths(reply["record"], {reply["reproducers"]: str(reproducer_dir)})
    for relative, data in reply["files"].items():
        path = (reproducer_dir / relative).resolve()
        if reproducer_dir.resolve() not in path.parents:  # a name the grader did not write
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    record.update(candidate=candidate.name, target=candidate.target, node=reply["node"])
    return GradeRecord.from_json(record)


def _failed(candidate: Candidate, options: GradeOptions, error: BaseException) -> GradeRecord:
    record = base_record(candidate, options)
    # A RayTaskError's message is the remote traceback: its exception, not its last line (a border).
    record.verdict, record.details = Verdict.INTERNAL_ERROR, str(error)
    record.reason = f"the Ray task failed ({type(error).__name__}): {traceback_headline(str(error))}"
    return record


def grade_on_ray(pending: list[Candidate], options: GradeOptions, *, reproducer_dir, hard_limit: float,
                 address: str | None = None, in_flight: int | None = None,
                 sources: dict[str, str | None] | None = None) -> Iterator[GradeRecord]:
    """Grade ``pending`` as Ray tasks; yield each record as its task finishes.

    ``address`` is Ray's (``auto``, ``ray://host:10001``, ...; None: ``RAY_ADDRESS`` or a Ray
    started on this machine for the run). ``in_flight`` bounds the tasks submitted at once (None:
    all of them; the cluster's resources decide how many run). ``reproducer_dir(candidate)`` is
    where a candidate's reproducers go. ``sources`` holds each file's bytes as the batch took them
    (:func:`.snapshot.take`; a file not in it is read when its task is submitted). Closing the
    iterator (or Ctrl-C) cancels the tasks left.
    """
    ray = _ray()
    if not ray.is_initialized():
        try:
            ray.init(address=address, include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR)
        except (ConnectionError, ValueError, RuntimeError) as exc:
            raise InvalidArgument(f"--ray-address={address!r}: cannot connect to a Ray cluster there ({exc}).") \
                from None
    resources = {"num_gpus": 1, "num_cpus": 1} if options.device.startswith("cuda") else {"num_cpus": 1}
    # No retries: a task that died once (its node lost, or the candidate killed Ray's worker) is
    # an internal_error in the report, graded again by --resume, not silently run twice.
    task = ray.remote(**resources, max_retries=0)(grade_remote)
    wire = options.to_wire()
    queue = list(pending)
    running: dict = {}
    try:
        while queue or running:
            while queue and (in_flight is None or len(running) < in_flight):
                candidate = queue.pop(0)
                running[task.remote({"candidate": asdict(candidate), "source": sources[candidate.target] if candidate.target in (sources or {}) else encode(candidate), "options": wire,
                                     "hard_limit": hard_limit, "tool": __version__})] = candidate
            done, _ = ray.wait(list(running), num_returns=1)
            for future in done:
                candidate = running.pop(future)
                try:
                    reply = ray.get(future)
                except Exception as exc:  # RayTaskError, a lost node, a worker killed: no verdict
                    yield _failed(candidate, options, exc)
                else:
                    yield _brought_home(reply, candidate, Path(reproducer_dir(candidate)))
    finally:
        for future in running:
            ray.cancel(future, force=True)
