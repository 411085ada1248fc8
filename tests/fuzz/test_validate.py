"""One validation module: each message names the value as the user typed it and says what is expected."""

from __future__ import annotations

import pytest
import torch

from fuzz import validate
from reference.errors import InvalidArgument

CASES = [
    ("integer below", lambda: validate.integer(0, name="--budget", low=1), "--budget=0; expected an int >= 1."),
    ("integer bool", lambda: validate.integer(True, name="seed"), "seed=True; expected an int >= 0."),
    ("integer range", lambda: validate.integer(9, name="n", low=0, high=4), "n=9; expected an int in [0, 4]."),
    ("number", lambda: validate.number(float("nan"), name="--mutant-timeout-floor", low=1),
     "--mutant-timeout-floor=nan; expected a number >= 1."),
    ("seconds", lambda: validate.seconds(0, name="--call-timeout"),
     "--call-timeout=0; expected a number of seconds > 0."),
    ("seconds inf", lambda: validate.seconds(float("inf"), name="timeout"),
     "timeout=inf; expected a number of seconds > 0."),
    ("choice", lambda: validate.choice("fast", name="--profile", choices=["lse-ci", "lse-thorough"]),
     "--profile='fast'; expected one of lse-ci, lse-thorough."),
    ("names unknown", lambda: validate.names("a,zz", name="--checks", choices=["a", "b"]),
     "--checks=['a', 'zz']: unknown 'zz'; choose from a, b."),
    ("names empty", lambda: validate.names([], name="checks", choices=["a", "b"]),
     "checks=[]: empty; choose from a, b."),
    ("device", lambda: validate.device("tpu", name="--device"),
     "--device='tpu'; expected auto, cpu, cuda or cuda:N."),
    ("shape", lambda: validate.shape("8192", name="--bench-shape"),
     "--bench-shape='8192'; expected MxN, e.g. 8192x8192."),
    ("shape zero", lambda: validate.shape("0x4", name="bench_shape"), "bench_shape='0x4'; expected M and N >= 1."),
]


@pytest.mark.parametrize(("call", "message"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_names_the_option_the_value_and_the_fix(call, message):
    with pytest.raises(InvalidArgument) as info:
        call()
    assert str(info.value) == message


def test_good_input_comes_back_normalised():
    assert validate.integer(3, name="n") == 3
    assert validate.seconds(2, name="t") == 2.0 and validate.seconds(None, name="t", optional=True) is None
    assert validate.names("b, a", name="c", choices=["a", "b", "c"]) == ("a", "b")
    assert validate.shape("64x8", name="s") == (64, 8) and validate.shape((2, 3), name="s") == (2, 3)
    assert validate.device("cpu") == torch.device("cpu")
    assert validate.device("auto").type == ("cuda" if torch.cuda.is_available() else "cpu")
