"""The one worker pool: one outcome per job, a crash or a hang costs only its own job, and the
remaining jobs run on fresh drivers."""

from __future__ import annotations

import os
import signal
import time

import pytest

from fuzz.isolation import Job, Pool
from fuzz.isolation.pool.casualties import LOADED_YOUNG
from fuzz.outcomes import Outcome


def job(key: str, entry: str, **payload) -> Job:
    return Job(key, f"pool_jobs:{entry}", payload)


@pytest.fixture
def pool(tmp_path):
    with Pool(2, work_dir=tmp_path, timeout=lambda job: job.payload.get("limit", 60.0)) as pool:
        yield pool


def test_every_job_gets_one_outcome_and_a_crash_or_hang_costs_only_its_own(pool):
    jobs = [job("a", "echo", n=1), job("crash", "abort"), job("b", "echo", n=2),
            job("hang", "sleep", seconds=60, limit=1.0), job("raise", "fail"), job("c", "echo", n=3)]
    results = {r.job.key: r for r in pool.run(jobs)}
    assert set(results) == {j.key for j in jobs}
    assert {k: r.outcome for k, r in results.items()} == {
        "a": Outcome.RETURNED, "b": Outcome.RETURNED, "c": Outcome.RETURNED, "crash": Outcome.CRASHED,
        "hang": Outcome.TIMEOUT, "raise": Outcome.RAISED}
    assert [results[k].record["echo"]["n"] for k in "abc"] == [1, 2, 3]
    assert "SIGABRT" in results["crash"].detail
    assert "time limit of 1 s" in results["hang"].detail
    assert "job failed on purpose" in results["raise"].detail


def test_a_job_cut_short_has_its_driver_killed_at_once_and_the_others_run_on(pool):
    # A short run alone that has shown an attack (fuzz.grading.local_executor) needs no more time.
    cut = set()
    pool.cut = lambda running: running.key in cut
    results = {}
    for result in pool.run([job("cut", "sleep", seconds=60), job("kept", "echo", hold=1.0)]):
        results[result.job.key] = result
        cut.add("cut")  # once "kept" is over: "cut" is in flight, past its first check
    assert results["kept"].outcome is Outcome.RETURNED
    assert results["cut"].outcome is Outcome.TIMEOUT and results["cut"].seconds < 30
    assert results["cut"].detail.startswith("cut short: its driver was killed")


def test_drivers_are_reused_and_run_scrubbed_in_the_work_directory(pool, tmp_path, monkeypatch):
    monkeypatch.setenv("LSE_TEST_SECRET", "s3cret")
    records = [r.record for r in pool.run([job(str(i), "echo", n=i) for i in range(6)])]
    assert len({r["pid"] for r in records}) <= 2  # two drivers served six jobs
    assert all(r["cwd"] == str(tmp_path) and r["secret"] is None for r in records)
    assert all(r["pid"] != os.getpid() for r in records)


def test_closing_the_run_early_stops_what_still_runs(pool):
    run = pool.run([job("long", "sleep", seconds=60), job("short", "echo", n=1)])
    first = next(run)
    assert first.job.key == "short"
    run.close()  # the long job's driver is killed, not waited for
    assert not [d for d in pool._drivers if d.job is not None]


def test_drivers_are_spread_evenly_over_the_gpus_given(tmp_path):
    with Pool(4, work_dir=tmp_path, gpus=["3", "5"]) as pool:
        records = [r.record for r in pool.run([job(str(i), "echo", n=i, hold=0.5) for i in range(8)])]
    gpu_of_driver = {r["pid"]: r["gpu"] for r in records}
    assert len(gpu_of_driver) == 4  # four drivers at once ...
    assert sorted(gpu_of_driver.values()) == ["3", "3", "5", "5"]  # ... two on each GPU


def test_a_crashed_drivers_replacement_takes_its_gpu(tmp_path):
    # Drivers start on a, b, c; b's crashes while a and c are busy: its replacement must see b,
    # not the next GPU in turn (a), or the GPUs' loads drift apart over a long run.
    with Pool(3, work_dir=tmp_path, gpus=["a", "b", "c"]) as pool:
        jobs = [job("1", "echo", hold=2.0), job("crash", "abort"), job("3", "echo", hold=2.0), job("4", "echo")]
        results = {r.job.key: r for r in pool.run(jobs)}
    assert results["crash"].outcome is Outcome.CRASHED
    assert [results[k].record["gpu"] for k in ("1", "3", "4")] == ["a", "c", "b"]


def test_without_gpus_a_driver_keeps_the_callers_visible_devices(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "7")
    with Pool(1, work_dir=tmp_path) as pool:
        (result,) = pool.run([job("a", "echo")])
    assert result.record["gpu"] == "7"


def test_a_relative_work_directory_is_the_callers(tmp_path, monkeypatch):
    # `lse-fuzz grade . --out-dir report` passes report/.drivers: every driver failed to start there.
    monkeypatch.chdir(tmp_path)
    with Pool(1, work_dir="relative/work") as pool:
        (result,) = pool.run([job("a", "echo")])
    assert result.outcome is Outcome.RETURNED, result.detail
    assert result.record["cwd"] == str(tmp_path / "relative" / "work")


def test_a_job_that_kills_the_fork_server_is_named_and_its_neighbours_are_not_harmed(tmp_path):
    # The killer takes down the driver beside it (same parent): both are run again, alone, after
    # the rest; only the killer does it again.
    with Pool(2, work_dir=tmp_path) as pool:
        jobs = [job("neighbour", "echo", hold=1.0), job("killer", "kill_fork_server"), job("later", "echo", n=3)]
        results = {r.job.key: r for r in pool.run(jobs)}
    assert results["neighbour"].outcome is Outcome.RETURNED and results["later"].outcome is Outcome.RETURNED
    killer = results["killer"]
    assert killer.outcome is Outcome.CRASHED and killer.killed_fork_server
    assert "killed the fork server" in killer.detail
    assert not results["neighbour"].killed_fork_server


def test_once_the_killer_is_convicted_the_jobs_it_took_down_run_again_side_by_side(tmp_path):
    # All three drivers die with the fork server. The killer, handed last, died soonest after it
    # started: it runs again alone first, kills again and is convicted; what died beside it needs no
    # other culprit, so the two neighbours run again together, each on a driver of its own (one
    # after the other, alone, the second would get the first one's idle driver).
    with Pool(3, work_dir=tmp_path) as pool:
        jobs = [job("one", "echo", hold=1.0), job("two", "echo", hold=1.0), job("killer", "kill_fork_server")]
        results = {r.job.key: r for r in pool.run(jobs)}
    assert results["killer"].killed_fork_server
    assert results["one"].outcome is results["two"].outcome is Outcome.RETURNED
    assert results["one"].record["pid"] != results["two"].record["pid"]


def test_a_fork_server_killers_neighbour_runs_again_at_once_not_after_the_rest(tmp_path):
    # The killer (loaded just before the death) is held to run alone at the end; its neighbour
    # (loaded seconds before) runs again beside "long", which started after the death: its result
    # comes first. Held for the killer's proof instead, it ran only once "long" was over.
    with Pool(2, work_dir=tmp_path) as pool:
        jobs = [job("neighbour", "loads_then_echoes", hold=5.0),
                job("killer", "loads_then_kills_fork_server", before=LOADED_YOUNG + 1.5, after=0.1),
                job("long", "sleep", seconds=8)]
        order = [r.job.key for r in pool.run(jobs)]
    assert order == ["neighbour", "long", "killer"]


def test_a_killer_whose_candidate_had_loaded_is_held_before_a_newcomer_still_loading(tmp_path):
    # The newcomer started after the killer, but never loaded a candidate: the killer is held
    # (convicted alone at the end), the newcomer runs again at once and its result comes first.
    # Held instead (started last), it waited for the killer's proof, which came after a second death.
    with Pool(2, work_dir=tmp_path) as pool:
        jobs = [job("killer", "loads_then_kills_fork_server", after=1.0), job("newcomer", "echo", hold=2.0)]
        order = [(r.job.key, r.killed_fork_server) for r in pool.run(jobs)]
    assert order == [("newcomer", False), ("killer", True)]


def test_a_job_that_kills_the_drivers_beside_it_is_named_and_they_get_their_results(tmp_path):
    with Pool(3, work_dir=tmp_path) as pool:
        jobs = [job("one", "echo", hold=1.0), job("two", "echo", hold=1.0), job("killer", "kill_siblings")]
        results = {r.job.key: r for r in pool.run(jobs)}
    assert results["one"].outcome is Outcome.RETURNED and results["two"].outcome is Outcome.RETURNED
    killer = results["killer"]
    assert killer.killed_its_driver and not killer.killed_fork_server
    assert "its grading driver died while it ran, also when it ran again alone" in killer.detail


def test_a_driver_that_died_while_idle_costs_the_next_job_nothing(tmp_path):
    # Another job's process (or its fork server's death) can kill a driver between two jobs; the
    # next job must go to a live driver, not end the run with a broken pipe.
    with Pool(1, work_dir=tmp_path) as pool:
        (first,) = pool.run([job("first", "echo")])
        os.kill(first.record["pid"], signal.SIGKILL)
        deadline = time.monotonic() + 10
        while _alive(first.record["pid"]) and time.monotonic() < deadline:
            time.sleep(0.05)
        (second,) = pool.run([job("second", "echo")])
    assert second.outcome is Outcome.RETURNED, second.detail
    assert second.record["pid"] != first.record["pid"]


def test_a_casualty_run_again_after_a_fork_server_killer_still_gets_its_result(tmp_path):
    # The killer, run again alone, takes the fork server down with every idle driver; the
    # casualties after it still run (the batch once died here with a BrokenPipeError).
    with Pool(2, work_dir=tmp_path) as pool:
        # Both killers' drivers die in the first round; "later" and "later2" leave two idle drivers
        # behind; the first killer, run again alone on one, kills the other with the fork server.
        jobs = [job("killer", "kill_fork_server"), job("killer2", "kill_fork_server"),
                job("later", "echo", hold=0.5), job("later2", "echo", hold=0.5)]
        results = {r.job.key: r for r in pool.run(jobs)}
    assert set(results) == {"killer", "killer2", "later", "later2"}
    assert results["later"].outcome is Outcome.RETURNED and results["later2"].outcome is Outcome.RETURNED
    assert results["killer"].killed_fork_server and results["killer2"].killed_fork_server


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, IndexError):
        return False


def test_a_job_that_stops_the_fork_server_is_named_with_every_job_in_flight_then(tmp_path):
    # The pool's process continues the fork server (its drivers leave that to it), so it hears of
    # every stop: alone, the stopper is the one job named; beside another, both are.
    from fuzz.isolation.guard.signals import Stopped

    events = []
    with Pool(2, work_dir=tmp_path) as pool:
        pool.report_stop = events.append
        assert [r.outcome for r in pool.run([job("stopper", "stop_fork_server", hold=1.0)])] == [Outcome.RETURNED]
        alone = list(events)
        events.clear()
        pool.wait_until_quiet()
        results = list(pool.run([job("beside", "echo", hold=3.0), job("stopper", "stop_fork_server", wait=1.0, hold=1.0)]))
        assert [r.outcome for r in results] == [Outcome.RETURNED] * 2
    assert [(e.stopped, e.in_flight) for e in alone] == [(Stopped.FORK_SERVER, ("stopper",))]
    assert [(e.stopped, e.in_flight) for e in events] == [(Stopped.FORK_SERVER, ("beside", "stopper"))]


def test_a_driver_whose_worker_fork_server_stopped_answering_counts_as_lost(tmp_path):
    """Its job is run again alone at the end; losing it again there makes it the culprit."""
    with Pool(2, work_dir=tmp_path) as pool:
        results = {r.job.key: r for r in pool.run([job("lost", "lose_the_worker_fork_server"), job("a", "echo")])}
    assert results["a"].outcome is Outcome.RETURNED
    lost = results["lost"]
    assert lost.outcome is Outcome.CRASHED and lost.killed_its_driver, lost
    assert "worker fork server stopped answering" in lost.detail
