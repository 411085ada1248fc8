"""The call convention (fuzz.calls): validation, the result's structure, the N-D result's shape."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from fuzz.calls import CallArgs, CallConvention, CallMismatch, ConventionError
from fuzz.contract import Contract
from reference.errors import InvalidArgument


@pytest.mark.parametrize(("options", "message"), [
    pytest.param({"ndim": 3, "dim": 3}, "dim=3 is out of range for 3-D inputs (ndim=3): expected -3 <= dim <= 2",
                 id="dim-too-large"),
    pytest.param({"ndim": 2, "dim": -3}, "dim=-3 is out of range for 2-D inputs", id="dim-too-negative"),
    pytest.param({"ndim": 0}, "ndim=0; expected the input's rank, 1 to 6", id="ndim-zero"),
    pytest.param({"args": "x,keepdim"}, "args='x,keepdim'; expected one of 'x', 'x,dim', 'x,dim,keepdim'",
                 id="args"),
    pytest.param({"keepdim": "maybe"}, "keepdim='maybe'; expected True or False", id="keepdim"),
    pytest.param({"result": ""}, "result=''; expected a tuple index", id="result-empty"),
])
def test_bad_conventions_name_the_value_and_the_fix(options, message):
    with pytest.raises(InvalidArgument) as info:
        CallConvention(**options)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_the_default_is_the_2d_call_and_leaves_the_contract_as_it_was():
    assert CallConvention().is_default
    assert "call" not in Contract().to_dict()
    assert "called as" not in Contract().describe()
    call = CallConvention(ndim=3, dim=1, keepdim=True, args="x,dim,keepdim", result="1")
    assert call.result == 1 and call.args is CallArgs.DIM_KEEPDIM and not call.is_default
    contract = Contract(call=call)
    assert Contract.from_dict(contract.to_dict()) == contract
    assert "called as lse(x, dim=1, keepdim=True)[1] on 3-D inputs" in contract.describe()
    assert call.cli_args() == "--ndim 3 --dim 1 --keepdim --call-args x,dim,keepdim --result 1"
    assert CallConvention.from_suffix(call.suffix()[1:]) == call


def _selecting(result):
    return CallConvention(ndim=3, dim=1, result=result)


@pytest.mark.parametrize(("result", "out", "message"), [
    pytest.param(None, (torch.zeros(2), torch.zeros(2)), "returned a tuple of 2 (Tensor, Tensor), not a tensor: "
                 "pass --result", id="tuple-without-result"),
    pytest.param(1, torch.zeros(2), "result=1 names item 1 of a returned tuple, but the implementation returned a "
                 "tensor of shape (2,)", id="index-of-a-tensor"),
    pytest.param(2, (torch.zeros(2), torch.zeros(2)), "result=2, but the implementation returned a tuple of 2 "
                 "(Tensor, Tensor); pass --result between 0 and 1", id="index-out-of-range"),
    pytest.param("lse", {"out": torch.zeros(2)}, "result='lse', but the returned dict has no key 'lse' (keys: 'out')",
                 id="missing-key"),
    pytest.param("lse", SimpleNamespace(out=torch.zeros(2)), "result='lse', but the implementation returned a "
                 "SimpleNamespace with no attribute 'lse' (it has: out)", id="missing-attribute"),
])
def test_a_result_of_another_structure_is_a_convention_error(result, out, message):
    with pytest.raises(ConventionError) as info:
        _selecting(result).select(out)
    assert message in str(info.value)
    assert isinstance(info.value, InvalidArgument)


@pytest.mark.parametrize(("result", "out"), [
    (1, (torch.zeros(1), torch.ones(1))), (-1, [torch.zeros(1), torch.ones(1)]),
    ("lse", {"lse": torch.ones(1)}), ("lse", SimpleNamespace(lse=torch.ones(1))), (None, torch.ones(1)),
])
def test_the_lse_is_found_at_its_place(result, out):
    assert torch.equal(_selecting(result).select(out), torch.ones(1))


def test_the_result_shape_is_the_batch_shape_with_or_without_the_kept_dim():
    x = torch.zeros(2, 5, 3)
    dropped, kept = CallConvention(ndim=3, dim=1), CallConvention(ndim=3, dim=1, keepdim=True)
    assert dropped.output_shape(x) == (2, 3) and kept.output_shape(x) == (2, 1, 3)
    rows = dropped.lse_rows(torch.arange(6.0).reshape(2, 3), x)
    assert torch.equal(rows, torch.arange(6.0))
    assert torch.equal(kept.lse_rows(torch.arange(6.0).reshape(2, 1, 3), x), torch.arange(6.0))
    wrong = dropped.lse_rows(torch.zeros(2, 1, 3), x)
    assert isinstance(wrong, CallMismatch) and "returned shape (2, 1, 3), expected (2, 3)" in wrong.text
    shared = dropped.lse_rows(torch.zeros(1, 3).expand(2, 3), x)
    assert isinstance(shared, CallMismatch) and "a stride of 0" in shared.text


def test_the_carrier_is_the_input_under_a_stride_0_dim_and_the_worker_call_gets_it_back():
    x = torch.randn(4, 2, 3).transpose(0, 2)  # (3, 2, 4), not contiguous
    call = CallConvention(ndim=3, dim=1, args="x,dim")
    carrier = call.carrier(x, call.rows(x))
    assert carrier.shape == (12, 3, 2, 4) and carrier.stride()[0] == 0
    seen = []
    rows = call.worker_call(lambda t, dim: seen.append(t) or torch.logsumexp(t, dim=dim))(carrier)
    assert seen[0].stride() == x.stride() and torch.equal(seen[0], x)
    assert torch.allclose(rows, torch.logsumexp(x, dim=1).reshape(-1))


def test_grade_options_name_the_call_only_when_one_is_declared():
    from fuzz.grading import GradeOptions

    plain = GradeOptions().validated()
    assert "ndim" not in plain.public() and plain.worker_target("k.py:lse") == "k.py:lse"
    declared = GradeOptions.of(ndim=3, dim=1, call_args="x,dim", result="1").validated(cli=True)
    assert declared.public()["ndim"] == 3 and declared.convention().result == 1
    assert declared.worker_target("k.py:lse") == "k.py:lse@ndim=3,dim=1,keepdim=0,args=dim,result=1"
    assert declared.worker_target("k.py") == "k.py:lse@ndim=3,dim=1,keepdim=0,args=dim,result=1"
    assert GradeOptions.from_wire(declared.to_wire()) == declared
    with pytest.raises(InvalidArgument, match="pass such a --dim"):
        GradeOptions.of(ndim=2, dim=2, cli=True)


def test_a_target_carries_the_call_to_a_worker(tmp_path):
    from fuzz.target import describe_target, load_target, parse_target

    file = tmp_path / "k.py"
    file.write_text("import torch\n\ndef lse(x, dim):\n    return torch.logsumexp(x, dim=dim)\n")
    call = CallConvention(ndim=3, dim=1, args="x,dim")
    target = f"{file}:lse{call.suffix()}"
    assert parse_target(target).call == call.suffix()[1:]
    worker = load_target(target)
    x = torch.randn(2, 3, 4)
    assert torch.allclose(worker(call.carrier(x, 8)), torch.logsumexp(x, dim=1).reshape(-1))
    assert describe_target(type("Isolated", (), {"target": target})()) == f"{file}:lse"
    with pytest.raises(InvalidArgument, match="unknown keys"):
        parse_target(f"{file}:lse@depth=3")
