"""fuzz.stream: a seed draws the same examples whatever local modules the process has imported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis.internal.conjecture import providers

from fuzz.stream import local_pool, own_stream

ROOT = Path(__file__).resolve().parents[2]

# One process: the streams of inputs (shapes, layouts, values) checks of a torch LSE call with at
# seeds 0 and 1, with own_stream in the run ("fixed") and taken out of it ("unfixed", the premise),
# before and after importing a local module full of constants Hypothesis could draw.
STREAMS = r"""
import contextlib, hashlib, json, sys
import torch
import lse_fuzz, fuzz.run, fuzz.stream
seen = []
def lse(x):
    seen.append(repr((tuple(x.shape), str(x.dtype), x.stride(), x.storage_offset(), float(x.double().sum()))))
    return torch.logsumexp(x.double(), dim=1).float()
def stream(mode, seed):
    fuzz.run.own_stream = fuzz.stream.own_stream if mode == "fixed" else contextlib.nullcontext
    seen.clear()
    lse_fuzz.check(lse, device="cpu", budget=int(sys.argv[2]), seed=seed, huge_offsets=False)
    return hashlib.sha256("\n".join(seen).encode()).hexdigest()
runs = [(mode, seed) for mode in ("fixed", "unfixed") for seed in (0, 1)]
digests = {f"{mode} {seed}": [stream(mode, seed)] for mode, seed in runs}
sys.path.insert(0, sys.argv[1])
import many_constants  # noqa: F401
for mode, seed in runs:
    digests[f"{mode} {seed}"].append(stream(mode, seed))
print(json.dumps(digests))
"""

# Integers and floats of the ranges the strategies draw (sizes, strides, values), none of them
# lse-fuzz's own.
_DRAW = __import__("random").Random(5)
CONSTANTS = (f"INTEGERS = {sorted({_DRAW.randrange(3, 70000) for _ in range(300)})}\n"
             f"FLOATS = {[round(_DRAW.uniform(-90.0, 90.0), 3) for _ in range(100)]}\n")


@pytest.fixture(scope="module")
def streams(tmp_path_factory) -> dict[str, list[str]]:
    """{"fixed 0": [before, after], ..., "unfixed 1": [...]}: the digests of the streams, 40 examples
    each. Few of a check's draws can take a constant (Hypothesis pools no integer under 100: the
    values' seeds and the longer sizes take them), so a stream of 40 may take none: two seeds."""
    where = tmp_path_factory.mktemp("stream")
    (where / "many_constants.py").write_text(CONSTANTS)
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", STREAMS, str(where), "40"], cwd=where, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_this_hypothesis_draws_from_a_pool_of_local_constants():
    """The premise: the internals fuzz.stream empties exist in the Hypothesis the suite pins."""
    assert local_pool()


@pytest.mark.xdist_group("stream")  # one worker, one process for both tests' four streams
def test_a_seed_draws_the_same_examples_after_a_local_module_is_imported(streams):
    for seed in (0, 1):
        before, after = streams[f"fixed {seed}"]
        assert before == after, f"seed {seed}"


@pytest.mark.xdist_group("stream")
def test_without_own_stream_a_local_module_changes_the_examples_of_a_seed(streams):
    assert any(streams[f"unfixed {seed}"][0] != streams[f"unfixed {seed}"][1] for seed in (0, 1))


def test_own_stream_empties_the_pool_and_restores_it_nested():
    original = providers._get_local_constants
    providers.CONSTANTS_CACHE[("integer", "a key of the test")] = ((), (7,))
    with own_stream():
        assert ("integer", "a key of the test") not in providers.CONSTANTS_CACHE  # no entry made outside serves
        empty = providers._get_local_constants()
        assert not any(empty.set_for_type(kind) for kind in ("integer", "float", "bytes", "string"))
        with own_stream():
            assert not providers._get_local_constants().set_for_type("integer")
        assert providers._get_local_constants is not original  # the inner block restored the outer one's
        providers.CONSTANTS_CACHE[("integer", "made inside")] = ((), ())
    assert providers._get_local_constants is original
    assert ("integer", "made inside") not in providers.CONSTANTS_CACHE


def test_own_stream_restores_the_pool_when_the_block_raises():
    original = providers._get_local_constants
    with pytest.raises(RuntimeError), own_stream():
        raise RuntimeError("the run failed")
    assert providers._get_local_constants is original
