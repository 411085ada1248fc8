"""What a compiled kernel computes with a Python number's constant (tree 224d519 and after).

    python bench/experiments/2026-12-07-kernel-constants.py [cuda|cpu]

For a bfloat16 ``x`` of ones, stores ``x * C`` (C a ``tl.constexpr``), ``x * c`` (c a float
argument of the launch) and ``tl.full(..., C, tl.bfloat16)`` for 19 values of C, and prints their
bits beside the rule of :func:`fuzz.interpreter.constants.bfloat16_bits` and torch's float32 value
rounded once; then ``tl.full([], v, dtype)`` of five integer and float16 values. On a GPU this shows
what Triton's code generator made; on the CPU (``TRITON_INTERPRET=1``, with
``fuzz.interpreter.repairs.install()`` run first) what the interpreter makes. Results of an H100:
``bench/results/2026-12-07-h100-constants-order-checks.md``.
"""
import os, sys, json
import torch, triton, triton.language as tl
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from fuzz.interpreter.constants import bfloat16_bits

@triton.jit
def full_typed(y, C: tl.constexpr, DT: tl.constexpr):
    tl.store(y, tl.full([], C, DT))

@triton.jit
def mul(x, y, C: tl.constexpr, N: tl.constexpr):
    o = tl.arange(0, N)
    tl.store(y + o, tl.load(x + o) * C)

@triton.jit
def mul_arg(x, y, c, N: tl.constexpr):
    o = tl.arange(0, N)
    tl.store(y + o, tl.load(x + o) * c)

@triton.jit
def full(y, C: tl.constexpr, N: tl.constexpr):
    o = tl.arange(0, N)
    tl.store(y + o, tl.full((N,), C, tl.bfloat16))

VALUES = [1.5, 0.1, 1e-7, -2.5e-8, 3.14159e-5, 1.2345678e-3, 1.00390625, 1.0039062500000009,
          1.4426950408889634, 0.6931471805599453, 65504.5, 1e30, 3e38, 3.4e38, 1e-38, 5e-7, 4.9e-7,
          123456.789, -0.000123456]
dev = sys.argv[1] if len(sys.argv) > 1 else "cuda"
x = torch.ones(8, dtype=torch.bfloat16, device=dev)
out = {}
for v in VALUES:
    row = {}
    for name, run in (("mul", lambda y: mul[(1,)](x, y, v, 8)), ("mul_arg", lambda y: mul_arg[(1,)](x, y, v, 8)),
                      ("full", lambda y: full[(1,)](y, v, 8))):
        y = torch.empty_like(x)
        try:
            run(y)
            row[name] = hex(int(y.view(torch.int16)[0].item()) & 0xFFFF)
        except Exception as e:
            row[name] = type(e).__name__ + ": " + str(e)[:120]
    row["rule"] = hex(bfloat16_bits(v))
    row["torch"] = hex(int(torch.tensor([v], dtype=torch.float64).to(torch.bfloat16).view(torch.int16)[0]) & 0xFFFF)
    out[repr(v)] = row
    print(repr(v), row, flush=True)
for dt, tdt, v in ((tl.int8, torch.int8, 300), (tl.int8, torch.int8, -129), (tl.int32, torch.int32, 2**31),
                   (tl.float16, torch.float16, 65519.999), (tl.float16, torch.float16, 1 + 2.0**-11 + 2.0**-30)):
    y = torch.zeros(1, dtype=tdt, device=dev)
    try:
        full_typed[(1,)](y, v, dt)
        got = y.item()
    except Exception as e:
        got = type(e).__name__ + ": " + str(e)[:120]
    print("full", dt, repr(v), "->", got, flush=True)
    out[f"full {dt} {v!r}"] = str(got)
print(json.dumps(out))
