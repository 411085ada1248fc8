"""Report records a candidate cannot forge: sealed with a key only the grader holds.

A report is a file of the user who runs the candidates, so a candidate can edit it while the batch
runs; the grader rewrites it from memory after every candidate and at the end, but a candidate
that edits it and then kills the grader with SIGKILL (which nothing blocks) leaves its edit for
``--resume`` to read. With a private seed, every record (and every journal entry) carries an HMAC
keyed by a digest of that seed, which never reaches a worker: ``--resume`` keeps only the records
whose seal holds and grades the others again. Without a private seed there is no key a candidate
could not read, so records are not sealed (README, threat model).
"""

from __future__ import annotations

import hashlib
import hmac
import json

__all__ = ["SEAL", "seal", "seal_key", "sealed"]

SEAL = "seal"


def seal_key(private_seed: str | None) -> bytes | None:
    if not private_seed:
        return None
    return hashlib.sha256(b"lse-fuzz report seal\0" + private_seed.encode()).digest()


def _digest(entry: dict, key: bytes) -> str:
    body = json.dumps({k: v for k, v in entry.items() if k != SEAL}, sort_keys=True, separators=(",", ":"))
    return hmac.new(key, body.encode(), hashlib.sha256).hexdigest()


def seal(entry: dict, key: bytes | None) -> dict:
    """``entry`` with its seal (unchanged without a key)."""
    if key is None:
        return entry
    return dict(entry, **{SEAL: _digest(entry, key)})


def sealed(entry: dict, key: bytes | None) -> bool:
    """Whether ``entry`` is as the grader wrote it (always, without a key)."""
    if key is None:
        return True
    given = entry.get(SEAL)
    return isinstance(given, str) and hmac.compare_digest(given, _digest(entry, key))
