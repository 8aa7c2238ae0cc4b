"""Conversions and narrow integer arithmetic at their edges: NaN, infinities and out-of-range
floats converted to every integer type, and 8- and 16-bit integers wrapping, each widened to 64
bits afterwards, checked against the language's rules (docs/language.md): a float converts to an
integer by truncating toward zero and saturating, NaN gives 0; integers wrap at their width.

These are where a GPU's instructions and a reading of the PTX manual part ways, so
`PTXPY_TEST_DEVICE=gpu` runs the same kernels on a real GPU (kernel_harness.py).
"""
import math

import ml_dtypes
import numpy as np
import pytest

from kernel_harness import Out, run

INTS = ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"]
NUMPY = {"i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64, "u8": np.uint8,
         "u16": np.uint16, "u32": np.uint32, "u64": np.uint64, "f16": np.float16,
         "bf16": ml_dtypes.bfloat16, "f32": np.float32, "f64": np.float64}
HEADER = """
import ptxpy
from ptxpy import Array, i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64
"""
SPECIAL = [math.nan, -math.nan, math.inf, -math.inf, 0.0, -0.0, 0.75, -0.75, 3.5, -3.5, 127.9,
           128.5, -128.5, -129.0, 255.5, 256.0, 300.0, -300.0, 32767.5, 32768.0, -32769.0,
           65535.9, 65536.0, 1e9, -1e9, 2.2e9, 4.3e9, -4.3e9, 1e19, -1e19, 2e19, 1e30, -1e30]


def float_to_int(x: float, ty: str) -> int:
    if x != x:
        return 0
    info = np.iinfo(NUMPY[ty])
    if math.isinf(x):
        return int(info.max) if x > 0 else int(info.min)
    return min(max(math.trunc(x), int(info.min)), int(info.max))


@pytest.mark.parametrize("src", ["f16", "bf16", "f32", "f64"])
def test_floats_convert_to_every_integer_type(src):
    """`T(x)`: truncation toward zero, saturation, NaN -> 0; stored as i64/u64 so that the
    narrow result's extension is checked too."""
    lines = [f"    o_{t}[i] = {'u64' if t.startswith('u') else 'i64'}({t}(x[i]))" for t in INTS]
    params = ", ".join(f"o_{t}: Array[{'u64' if t.startswith('u') else 'i64'}]" for t in INTS)
    source = HEADER + f"""
@ptxpy.jit
def convert(x: Array[{src}], {params}):
    i = ptxpy.global_id(0)
""" + "\n".join(lines) + "\n"
    with np.errstate(over="ignore"):
        x = np.array(SPECIAL, dtype=NUMPY[src])     # too large for f16: inf
    n = len(x)
    outs = run(source, "convert", [x] + [Out(n, np.uint64 if t.startswith("u") else np.int64)
                                         for t in INTS], grid=1, block=n)
    wrong = {}
    for t, got in zip(INTS, outs):
        expected = [float_to_int(float(v), t) for v in x]
        bad = [(float(v), e, g) for v, e, g in zip(x, expected, got.tolist()) if e != g]
        if bad:
            wrong[t] = bad
    assert not wrong, (src, wrong)


NARROW = {"i8": [-128, -127, -1, 0, 1, 100, 127], "i16": [-32768, -32767, -1, 0, 1, 300, 32767],
          "u8": [0, 1, 100, 200, 255], "u16": [0, 1, 300, 40000, 65535]}


@pytest.mark.parametrize("t", list(NARROW))
def test_narrow_integer_arithmetic_wraps_at_its_width(t):
    """Every operator on 8- and 16-bit operands gives a result of their width (wrapped) before
    it is widened: `i64(abs(x))` of the most negative i16 is -32768, not 32768."""
    ops = {"add": "x[i] + y[i]", "sub": "x[i] - y[i]", "mul": "x[i] * y[i]", "neg": "-x[i]",
           "abs": "abs(x[i])", "shl": "x[i] << 3", "shr": "x[i] >> 1", "inv": "~x[i]",
           "min": "min(x[i], y[i])", "max": "max(x[i], y[i])",
           "zero_sub": "(x[i] - x[i]) - y[i]", "div": f"x[i] // ({t}(y[i] | 1))",
           "rem": f"x[i] % ({t}(y[i] | 1))", "div_m1": "x[i] // -1", "rem_m1": "x[i] % -1"}
    wide = "u64" if t.startswith("u") else "i64"
    lines = "\n".join(f"    o_{name}[i] = {wide}({t}({expr}))" for name, expr in ops.items())
    params = ", ".join(f"o_{name}: Array[{wide}]" for name in ops)
    source = HEADER + f"""
@ptxpy.jit
def narrow(x: Array[{t}], y: Array[{t}], {params}):
    i = ptxpy.global_id(0)
{lines}
"""
    values = NARROW[t]
    pairs = [(a, b) for a in values for b in values]
    dtype = NUMPY[t]
    x = np.array([a for a, _ in pairs], dtype=dtype)
    y = np.array([b for _, b in pairs], dtype=dtype)
    n = len(pairs)
    outs = run(source, "narrow", [x, y] + [Out(n, NUMPY[wide]) for _ in ops], grid=1, block=n)
    odd = [b | 1 for b in y.tolist()]
    with np.errstate(over="ignore"):
        expected = {"add": x + y, "sub": x - y, "mul": x * y, "neg": -x,
                    "abs": np.where(x < 0, -x, x).astype(dtype),
                    "shl": (x.astype(np.int64) << 3).astype(dtype), "shr": x >> 1, "inv": ~x,
                    "min": np.minimum(x, y), "max": np.maximum(x, y), "zero_sub": -y,
                    "div": _wrapped([a // b for a, b in zip(x.tolist(), odd)], dtype),
                    "rem": _wrapped([a % b for a, b in zip(x.tolist(), odd)], dtype),
                    "div_m1": _wrapped([a // -1 for a in x.tolist()], dtype),
                    "rem_m1": _wrapped([a % -1 for a in x.tolist()], dtype)}
    wrong = {}
    for (name, _), got in zip(ops.items(), outs):
        want = expected[name].astype(NUMPY[wide])
        bad = [(int(a), int(b), int(e), int(g)) for a, b, e, g in zip(x, y, want, got) if e != g]
        if bad:
            wrong[name] = bad[:4]
    assert not wrong, (t, wrong)


def _wrapped(values: list, dtype) -> np.ndarray:
    """Python integers wrapped to `dtype`'s width, as the kernel's integers wrap."""
    info = np.iinfo(dtype)
    span = 1 << info.bits
    return np.array([(v - int(info.min)) % span + int(info.min) for v in values], dtype)


@pytest.mark.parametrize("t", ["i8", "i16", "i32", "i64"])
def test_abs_of_the_most_negative_value_is_itself_in_what_follows(t):
    """abs(MIN) wraps to MIN; code after it that depends on its sign (a floor division, a
    remainder, a widening) sees a negative value. ptxas takes `abs.s32` as never negative, so the
    backend must not hand it one."""
    source = HEADER + f"""
@ptxpy.jit
def after_abs(x: Array[{t}], d: Array[{t}], q: Array[i64], r: Array[i64], w: Array[i64]):
    i = ptxpy.global_id(0)
    a = abs(x[i])
    q[i] = i64(a // d[i])
    r[i] = i64(a % d[i])
    w[i] = i64(a)
"""
    info = np.iinfo(NUMPY[t])
    values = [int(info.min), int(info.min) + 1, -7, 0, 7, int(info.max)]
    divisors = [-6, -1, 5]
    pairs = [(v, d) for v in values for d in divisors]
    x = np.array([v for v, _ in pairs], NUMPY[t])
    d = np.array([dv for _, dv in pairs], NUMPY[t])
    n = len(pairs)
    q, r, w = run(source, "after_abs", [x, d] + [Out(n, np.int64)] * 3, grid=1, block=n)

    def wrapped(v):
        span = 1 << info.bits
        return (v - int(info.min)) % span + int(info.min)

    magnitudes = [wrapped(abs(v)) for v in x.tolist()]
    expected_q = [wrapped(a // dv) for a, dv in zip(magnitudes, d.tolist())]
    expected_r = [wrapped(a % dv) for a, dv in zip(magnitudes, d.tolist())]
    assert w.tolist() == magnitudes
    assert q.tolist() == expected_q
    assert r.tolist() == expected_r
