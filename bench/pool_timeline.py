"""Where a grading batch waits: the pool's timeline (``LSE_FUZZ_TIMELINE``) as one line per run of
a job, in the order they started, with a bar of when it ran (one character per ``--step`` seconds).

    LSE_FUZZ_TIMELINE=T.jsonl lse-fuzz grade BATCH ...
    python bench/pool_timeline.py T.jsonl [--step 2]

Each line: start and end (seconds since the first event), the job (a candidate's file name), how it
ended, and a bar: ``#`` while it ran, ``a`` for a run alone (a short run ``s``). Below them, the
fork servers started, and the suspects chosen with how many events named each.
"""

from __future__ import annotations

import argparse
import json
import os
import sys


def _runs(events: list[dict]) -> list[dict]:
    """Each job's runs: from its ``start`` to the next ``end`` or ``cut`` of its key."""
    open_runs: dict[str, dict] = {}
    runs, mode = [], {}
    for event in events:
        key = event.get("key")
        if event["event"] == "phase":
            mode[key] = "s" if event.get("short") else "a"
        elif event["event"] == "start":
            open_runs[key] = {"key": key, "start": event["t"], "end": None, "how": "?", "mark": mode.pop(key, "#")}
            runs.append(open_runs[key])
        elif event["event"] in ("end", "cut") and key in open_runs:
            run = open_runs.pop(key)
            run["end"] = event["t"]
            run["how"] = event.get("outcome", "CUT" if event["event"] == "cut" else "?")
    return runs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("timeline")
    parser.add_argument("--step", type=float, default=2.0, help="seconds per character of the bars")
    args = parser.parse_args(argv)
    with open(args.timeline, encoding="utf-8") as f:
        events = [json.loads(line) for line in f if line.strip()]
    if not events:
        print("no events", file=sys.stderr)
        return 1
    t0 = events[0]["t"]
    last = max(e["t"] for e in events) - t0
    width = int(last / args.step) + 1
    for run in _runs(events):
        start, end = run["start"] - t0, (run["end"] if run["end"] is not None else t0 + last) - t0
        bar = [" "] * width
        for i in range(int(start / args.step), min(width, int(end / args.step) + 1)):
            bar[i] = run["mark"]
        name = os.path.basename(str(run["key"]))[:34]
        print(f"{start:6.1f} {end:6.1f} {name:34} {run['how'][:8]:8} |{''.join(bar)}")
    for event in events:
        if event["event"] == "fork_server":
            print(f"{event['t'] - t0:6.1f} fork server started (pid {event.get('pid')})")
        elif event["event"] == "suspect":
            named = ", ".join(f"{os.path.basename(k)} {n}" for k, n in sorted(event["named"].items(), key=lambda kv: -kv[1]))
            print(f"{event['t'] - t0:6.1f} suspect {os.path.basename(event['key'])}; named: {named}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
