"""Verdicts of two grades of the same batch, side by side: a CPU-only machine against
``grade --device cpu`` on a CUDA machine (``bench/gpu_parity.sh``), or any two runs.

    python bench/parity_grades.py A.jsonl [B.jsonl ...]

Prints one line per candidate with its verdict in each file, then the differences and the
``internal_error`` records with their reasons. Exit 0 when every candidate has the same verdict in
every file and none is ``internal_error``, 1 otherwise, 2 on a file that cannot be read.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def verdicts(path: Path) -> dict[str, dict]:
    """Candidate file name -> its grading record (the last one, as a resumed grade appends)."""
    records = {}
    for line in path.read_text().splitlines():
        if line.strip():
            record = json.loads(line)
            records[Path(record["candidate"]).name] = record
    return records


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    try:
        runs = [verdicts(Path(arg)) for arg in argv]
    except (OSError, ValueError, KeyError) as exc:
        print(f"parity_grades: cannot read the grades: {exc}", file=sys.stderr)
        return 2
    names = sorted(set().union(*runs))
    width = max(map(len, names), default=9)
    differ, internal = [], []
    for name in names:
        seen = [run.get(name, {}).get("verdict", "-") for run in runs]
        print(f"{name:<{width}}  " + "  ".join(f"{v:<14}" for v in seen))
        if len(set(seen)) > 1:
            differ.append(name)
        for run in runs:
            if run.get(name, {}).get("verdict") == "internal_error":
                internal.append(f"{name}: {run[name].get('reason')}")
    print(f"{len(names)} candidates in {len(runs)} grade(s): {len(differ)} with differing verdicts"
          + (f" ({', '.join(differ)})" if differ else "") + f", {len(internal)} internal_error")
    for line in internal:
        print(f"  internal_error {line}")
    return 1 if differ or internal else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
