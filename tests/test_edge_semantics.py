"""Conversions and narrow integer arithmetic at their edges: NaN, infinities and out-of-range
floats converted to every integer type, and 8- and 16-bit integers wrapping, each widened to 64
bits afterwards, checked against the language's rules (docs/language.md): a float converts to an
integer by truncating toward zero and saturating, NaN gives 0; integers wrap at their width.

These are where a GPU's instructions and a reading of the PTX manual part ways, so
`PTXPY_TEST_DEVICE=gpu` runs the same kernels on a real GPU (kernel_harness.py).
"""
import math
import os

import ml_dtypes
import numpy as np
import pytest

import re

from kernel_harness import Out, compile_source, run

INTS = ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"]
NUMPY = {"i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64, "u8": np.uint8,
         "u16": np.uint16, "u32": np.uint32, "u64": np.uint64, "f16": np.float16,
         "bf16": ml_dtypes.bfloat16, "f32": np.float32, "f64": np.float64}
HERE = os.path.dirname(os.path.abspath(__file__))
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


BITS = {"i8": 8, "i16": 16, "i32": 32, "i64": 64, "u8": 8, "u16": 16, "u32": 32, "u64": 64}


@pytest.mark.parametrize("t", INTS)
@pytest.mark.parametrize("count", ["width", 66])
def test_constant_shifts_past_the_width(t, count):
    """A shift count of the type's width or more clears a value (`<<`, unsigned `>>`) or fills
    it with its sign (signed `>>`), also when only the low bits are kept: the H100 took
    `shl.b64 x, 66` as a shift by 2 when the result was stored as i16."""
    k = BITS[t] if count == "width" else count
    source = HEADER + f"""
@ptxpy.jit
def shifts(x: Array[{t}], left: Array[i64], right: Array[i64], low: Array[i16]):
    i = ptxpy.global_id(0)
    v = x[i]
    left[i] = i64(v << {k})
    right[i] = i64(v >> {k})
    low[i] = i16((v | 1) << {k})
"""
    info = np.iinfo(NUMPY[t])
    x = np.array([int(info.min), -3 if info.min else 3, 0, 1, 5, int(info.max)], NUMPY[t])
    n = len(x)
    left, right, low = run(source, "shifts", [x, Out(n, np.int64), Out(n, np.int64),
                                              Out(n, np.int16)], grid=1, block=n)
    assert left.tolist() == [0] * n
    assert right.tolist() == [-1 if v < 0 else 0 for v in x.tolist()]
    assert low.tolist() == [0] * n


@pytest.mark.parametrize("t", ["i64", "u64"])
def test_64_bit_shift_counts_are_not_cut_to_32_bits(t):
    """A 64-bit count of 2**32 or more shifts everything out, as any count of the width or more
    does (and as in Python and JAX); before session 31 it was cut to its low 32 bits, so
    `x << 2**32` left x as it was. A negative i64 count, read as unsigned, does the same."""
    source = HEADER + f"""
@ptxpy.jit
def shifts(x: Array[{t}], s: Array[{t}], left: Array[{t}], right: Array[{t}], fixed: Array[{t}]):
    i = ptxpy.global_id(0)
    left[i] = x[i] << s[i]
    right[i] = x[i] >> s[i]
    fixed[i] = x[i] << 4294967297
"""
    counts = [0, 3, 63, 64, 2**32, 2**32 + 1, 2**33 + 5, 2**63 - 1]
    values = [5, -3] if t == "i64" else [5, 2**64 - 3]
    if t == "u64":
        counts += [2**63, 2**64 - 1]
    else:
        counts += [-1, -2**32 + 2]
    dtype = NUMPY[t]
    x = np.array(values * (len(counts) // 2), dtype)
    n = len(counts)
    left, right, fixed = run(source, "shifts", [x, np.array(counts, dtype), Out(n, dtype),
                                                Out(n, dtype), Out(n, dtype)], grid=1, block=n)
    unsigned = [c % 2**64 for c in counts]
    width = 63 if t == "i64" else 64
    assert left.tolist() == _wrapped([v << c if c < 64 else 0 for v, c in zip(x.tolist(), unsigned)], dtype).tolist()
    assert right.tolist() == [v >> min(c, width) for v, c in zip(x.tolist(), unsigned)]
    assert fixed.tolist() == [0] * n


@pytest.mark.parametrize("t", ["i16", "i32", "i64"])
def test_three_way_min_and_max_with_a_negated_operand(t):
    """min(a, -b, c) is min(min(a, -b), c); ptxas fused the two into one three-way min and lost
    the negation when it was the inner min's second operand (and so for max, and abs's max)."""
    source = HEADER + f"""
@ptxpy.jit
def extremes(a: Array[{t}], b: Array[{t}], c: Array[{t}], lo: Array[{t}], hi: Array[{t}],
             lo2: Array[{t}], mag: Array[{t}]):
    i = ptxpy.global_id(0)
    lo[i] = min(a[i], -b[i], c[i])
    hi[i] = max(a[i], -b[i], c[i])
    lo2[i] = min(c[i], min(a[i], -b[i]))
    mag[i] = max(abs(b[i]), c[i])
"""
    dtype = NUMPY[t]
    info = np.iinfo(dtype)
    rng = np.random.default_rng(7)
    a, b, c = (np.concatenate([rng.integers(-100, 100, 120), [int(info.min), int(info.max), 0, 1]])
               .astype(dtype) for _ in range(3))
    n = len(a)
    lo, hi, lo2, mag = run(source, "extremes", [a, b, c] + [Out(n, dtype)] * 4, grid=1, block=n)
    with np.errstate(over="ignore"):
        minus_b = (-b.astype(np.int64)).astype(dtype) if t != "i64" else -b
        magnitude = np.abs(b)
    assert lo.tolist() == np.minimum(np.minimum(a, minus_b), c).tolist()
    assert hi.tolist() == np.maximum(np.maximum(a, minus_b), c).tolist()
    assert lo2.tolist() == lo.tolist()
    assert mag.tolist() == np.maximum(magnitude, c).tolist()


def test_a_16_bit_difference_wraps_before_it_is_compared():
    """`i8(f) - i16(g) <= i16(g)` compares the wrapped 16-bit difference; ptxas once compiled
    it as if the difference could not overflow (a loop around it, H100)."""
    source = HEADER + """
@ptxpy.jit
def compare(f: Array[f32], g: Array[f32], o: Array[f32]):
    i = ptxpy.global_id(0)
    y = i16(g[i])
    r: f32 = 1
    for k in range(2):
        if k == 1 and (i8(f[i]) - y) <= y:
            r = 7
    o[i] = r
"""
    pairs = [(f, g) for f in (-128.0, -5.0, 0.0, 5.0, 127.0) for g in (-32768.0, -200.0, -1.0, 0.0,
                                                                       1.0, 300.0, 32767.0)]
    f = np.array([p[0] for p in pairs], np.float32)
    g = np.array([p[1] for p in pairs], np.float32)
    (o,) = run(source, "compare", [f, g, Out(len(pairs), np.float32)], grid=1, block=len(pairs))
    diff = ((f.astype(np.int64) - g.astype(np.int64) + 2**15) % 2**16) - 2**15
    assert o.tolist() == np.where(diff <= g.astype(np.int64), 7.0, 1.0).tolist()


@pytest.mark.parametrize("src", ["f16", "bf16"])
def test_half_floats_to_16_bit_ints_in_a_branch(src):
    """u16(h) widened to i32, beside a select on it: the H100 merged a direct f16 -> u16
    conversion into a stale register and widened the upper garbage (u16(f16(0.0)) was -65536)."""
    source = HEADER + f"""
@ptxpy.jit
def narrow(x: Array[{src}], c: Array[f32], w: Array[i32], s: Array[u64], t: Array[i32]):
    i = ptxpy.global_id(0)
    h = x[i]
    w[i] = u16(h)
    s[i] = u64(0) if c[i] > 1.0 else (u32(0) if c[i] >= 0.5 else u16(h))
    t[i] = i8(h)
"""
    with np.errstate(over="ignore"):      # 70000 is inf in f16
        x = np.array([0.0, 1.5, 200.0, 65504.0, -3.0, 70000.0, 7.0, 300.0], NUMPY[src])
    c = np.array([0.0, 0.25, 2.0, 0.0, 0.0, 0.75, 0.0, 0.0], np.float32)
    n = len(x)
    w, s, t = run(source, "narrow", [x, c, Out(n, np.int32), Out(n, np.uint64), Out(n, np.int32)],
                  grid=1, block=n)
    as_u16 = [float_to_int(float(v), "u16") for v in x]
    assert w.tolist() == as_u16
    assert s.tolist() == [0 if ci > 1.0 else 0 if ci >= 0.5 else u for ci, u in zip(c, as_u16)]
    assert t.tolist() == [float_to_int(float(v), "i8") for v in x]


def test_a_bool_tested_before_a_loop_that_flips_it():
    """`if v: for k in range(6): v ^= True` leaves v as it was. The H100's ptxas took the
    predicate that the `if` tested as still true in the loop that writes it, and v came out
    False (benchmarks/probes/reduced/program-1141.py, which this is)."""
    source = HEADER + """
@ptxpy.jit
def flips(b: Array[f32], o: Array[bool], p: Array[f64]):
    i = ptxpy.global_id(0)
    v2: f64 = 1
    v3: f64 = i
    v5: bool = bool(v3)
    if v3 and b[i]:
        v2 = 0
    if v5:
        for k in range(6):
            v5 ^= True
    o[i] = v5
    p[i] = v2
"""
    b = np.tile(np.array([0.0, 1.5, np.nan, -2.0], np.float32), 16)
    n = len(b)
    o, p = run(source, "flips", [b, Out(n, np.bool_), Out(n, np.float64)], grid=1, block=n)
    assert o.tolist() == [i != 0 for i in range(n)]
    assert p.tolist() == [0.0 if i and b[i] else 1.0 for i in range(n)]


@pytest.mark.parametrize("first", [-11, 0, 5])
def test_a_bool_tested_before_a_loop_that_sets_it(first):
    """The same as a loop that sets the bool from itself (program-506.py, which this is):
    the card gave False where six trips of `v4 = not v4` leave True."""
    source = HEADER + """
@ptxpy.jit
def sets(a: Array[i32], o: Array[bool]):
    i = 0
    v4: bool = (bool(0) if (1 // u16(len(a))) else (a[i] <= 0))
    if v4:
        for k in range(6):
            if not v4:
                v4 |= (0 == 0)
            else:
                v4 = (0 > 0)
    o[i] = v4
"""
    a = np.full(64, first, np.int32)
    (o,) = run(source, "sets", [a, Out(1, np.bool_)], grid=1, block=64)
    assert o.tolist() == [first <= 0]


def test_a_bool_tested_through_not_before_a_loop_that_changes_it():
    """The branch tests `not v1`, from which ptxas can derive v1; the loop then copies v1 into
    v2 and sets v1 (program-1038.py, which this is: the card gave v2 False for thread 0)."""
    source = HEADER + """
@ptxpy.jit
def derived(a: Array[i32], o: Array[bool], p: Array[f64]):
    i = ptxpy.global_id(0)
    v1: bool = bool(i)
    v2: bool = (65535 < 0)
    v4: f64 = (1 % i64(len(a)))
    if 1:
        if (not v1):
            for k10 in range(2, 6, 1):
                v2 = v1
                v1 = bool(2)
    o[i] = v2
    p[i] = v4
"""
    a = np.zeros(64, np.int32)
    o, p = run(source, "derived", [a, Out(64, np.bool_), Out(64, np.float64)], grid=1, block=64)
    assert o.tolist() == [i == 0 for i in range(64)]
    assert p.tolist() == [1.0] * 64


@pytest.mark.parametrize("program", ["1141", "1038", "506", "2030"])
def test_loop_carried_predicates_have_registers_of_their_own(program):
    """The workaround behind the three tests above, in the PTX: no loop writes (with a `.pred`
    op) a register that a branch before it tested, nor one such a register was negated from;
    the value is copied into a register of its own before the loop. 2030 has its carried
    `bool` set on one path before the loop (the phi's value, not the tested one, enters)."""
    source = open(f"{HERE}/../benchmarks/probes/reduced/program-{program}.py").read()
    ptx = compile_source(source, "kern").ptx
    body = ptx[ptx.index("griddepcontrol.wait"):]
    labels = re.findall(r"^(\$BB\d+):", body, flags=re.M)
    headers = [label for label in labels if f"bra.uni {label};" in body.split(label + ":")[1]]
    all_carried = set()
    for header in headers:
        before, loop = body.split(header + ":")
        loop = loop[:loop.index(f"bra.uni {header};")]
        tested = set(re.findall(r"@!?(%p\d+) bra", before))
        tested |= set(re.findall(r"not\.pred %p\d+, (%p\d+);", before))
        staying = [part for part in re.split(r"^\$BB\d+:", loop, flags=re.M)
                   if not re.search(r"bra\.uni \$BB\d+;\s*$", part)]   # not the exits' copies
        carried = {reg for part in staying
                   for reg in re.findall(r"^\s*(?:mov|xor|not|and|or)\.pred (%p\d+)", part, re.M)}
        assert not carried & tested, (header, carried, tested)
        all_carried |= carried
    assert all_carried


def test_abs_of_a_nan_f32_compared_with_zero():
    """abs(NaN) is NaN and no ordered comparison holds for it; ptxas took abs.f32 as never NaN
    and made `abs(x) >= 0` (or `>= -1`) true for a NaN x (H100)."""
    source = HEADER + """
@ptxpy.jit
def compare(x: Array[f32], ge0: Array[bool], ge_minus: Array[bool], mag: Array[f32]):
    i = ptxpy.global_id(0)
    ge0[i] = abs(x[i]) >= 0
    ge_minus[i] = abs(x[i]) >= -1.0
    mag[i] = abs(x[i])
"""
    x = np.array([math.nan, -math.nan, math.inf, -math.inf, 0.0, -0.0, 1.5, -2.5, 1e-40],
                 np.float32)
    n = len(x)
    ge0, ge_minus, mag = run(source, "compare", [x, Out(n, np.bool_), Out(n, np.bool_),
                                                 Out(n, np.float32)], grid=1, block=n)
    assert ge0.tolist() == (~np.isnan(x)).tolist()
    assert ge_minus.tolist() == (~np.isnan(x)).tolist()
    assert mag.view(np.uint32).tolist() == (x.view(np.uint32) & 0x7FFFFFFF).tolist()


@pytest.mark.parametrize("t", ["i32", "u32", "i64", "u64"])
def test_a_constant_minus_a_value(t):
    """`c - x` wraps at the type's width (written ~x + (c + 1) since session 18)."""
    source = HEADER + f"""
@ptxpy.jit
def minus(x: Array[{t}], d: Array[{t}], e: Array[{t}]):
    i = ptxpy.global_id(0)
    d[i] = 5 - x[i]
    e[i] = (2 - x[i]) & x[i]
"""
    dtype = NUMPY[t]
    info = np.iinfo(dtype)
    x = np.array([0, 1, 5, 6, int(info.max), int(info.min), 2**31 - 1], dtype)
    n = len(x)
    d, e = run(source, "minus", [x, Out(n, dtype), Out(n, dtype)], grid=1, block=n)
    with np.errstate(over="ignore"):
        assert d.tolist() == (dtype(5) - x).tolist()
        assert e.tolist() == ((dtype(2) - x) & x).tolist()


@pytest.mark.parametrize("a0", [-59, -65536, 0, 5])
def test_a_bool_select_whose_other_arm_contains_its_condition(a0):
    """`v4 = v3 if v4 else (v4 | v3)` is v3 for every v4; ptxas made `!v4 & (v4 | v3)` false
    when the select was written (v4 & v3) | (!v4 & (v4 | v3)), and stored False for v3 True
    (H100; benchmarks/probes/reduced/program-564.py, which this is but for unused parameters)."""
    source = HEADER + """
@ptxpy.jit
def kern(a: Array[i32], o_bool: Array[bool, 2]):
    i = 0
    v1: f64 = 0
    v2: i16 = i16(a[(u64(v1)) & 63])
    v3: bool = (a[i] < 0)
    v4: bool = ((0 == 1) if v2 else v3)
    v4 = (v3 if v4 else (v4 | v3))
    o_bool[i, 1] = v4
"""
    a = np.full(64, a0, np.int32)
    (o,) = run(source, "kern", [a, Out((1, 2), np.bool_, False)], grid=1, block=1)
    assert o[0, 1] == (a0 < 0)


@pytest.mark.parametrize("b0, b1", [(6.1127754e10, 10593.912), (65504.0, 3.0), (65503.0, 3.0),
                                    (6.1127754e10, -0.5), (7.0, 0.0)])
def test_a_u16_comparison_of_an_i8_that_ptxas_learns_late(b0, b1):
    """`v2 = i8(v1 | 127) << 5` is -32 whatever the bool v1; as u16 it is 65504. ptxas learned
    the value only late and folded its `cvt.s16.s8` to the 32-bit -32, so `u16(v2) > u16(x)`
    compared x with 0xFFFFFFE0 and was true for every x (H100;
    benchmarks/probes/reduced/program-1946.py, which this is but for unused parameters)."""
    source = HEADER + """
@ptxpy.jit
def kern(b: Array[f32], o_f16: Array[f16, 2]):
    i = 1
    v1: bool = (0 >= b[i])
    v2: i8 = i8((v1 | 127))
    v5 = 1
    v2 <<= 5
    if (u16(v2) > u16(b[(max(v2, v2, v1)) & 63])):
        if 1:
            v5 = 0
        else:
            pass
    else:
        pass
    o_f16[i, 0] = v5
"""
    b = np.zeros(64, np.float32)
    b[0], b[1] = b0, b1
    (o,) = run(source, "kern", [b, Out((2, 1), np.float16)], grid=1, block=1)
    x = b[1 if b1 <= 0 else 0]
    assert o[1, 0] == (0 if 65504 > min(max(int(x), 0), 65535) else 1)


def test_i8_values_that_ptxas_learns_late_keep_16_bits():
    """i8 results that are constant whatever a run-time bool (through `|`), used as u16 and u32:
    each 8-bit extension's result has 16 bits, not a 32-bit sign extension."""
    source = HEADER + """
@ptxpy.jit
def kern(x: Array[u16], b: Array[f32], o: Array[u32, 2]):
    i = ptxpy.global_id(0)
    v: bool = b[i] > 0.0
    k1: i8 = i8(v | 127)
    k1 <<= 5
    k2: i8 = i8(i32(v) | 255)
    k3: i8 = i8(v | 65) * i8(3)
    k4: i8 = min(i8(v | 127) << 5, i8(-100) + i8(v | 1))
    o[i, 0] = u16(k1) > x[i]
    o[i, 1] = u16(k2) == x[i]
    o[i, 2] = u32(u16(k1))
    o[i, 3] = u16(k3) >= x[i]
    o[i, 4] = u32(u16(k4))
    o[i, 5] = u16(k4) < x[i]
"""
    x = np.array([0, 1, 65503, 65504, 65505, 65535, 65437, 65438, 65475, 65476, 195, 127],
                 np.uint16)
    b = np.where(np.arange(len(x)) % 2 == 0, 1.0, -1.0).astype(np.float32)
    (o,) = run(source, "kern", [x, b, Out((len(x), 6), np.uint32)], grid=1, block=len(x))
    k1, k2, k3, k4 = 65504, 65535, 65475, 65437     # -32, -1, i8(195) = -61, -99 as u16
    want = [x < k1, x == k2, np.full(len(x), k1), x <= k3, np.full(len(x), k4), k4 < x]
    assert o.tolist() == np.stack(want, axis=1).astype(np.uint32).tolist()


def test_a_bool_made_bf16_in_a_loop_that_ptxas_unrolls():
    """Program 827 as the card got it wrong (benchmarks/probes/reduced/program-827.py): the loop
    runs once, so m[0] = 1.0; the card stored the bits 0x0001 (ptxas dropped the conversion of
    `selp.s32 1, 0` to bf16). Unused parameters stay: without them ptxas got it right."""
    source = HEADER + """
@ptxpy.jit
def kern(a: Array[i32], b: Array[f32], c: Array[i32], d: Array[u16], o_i32: Array[i32, 2], o_u8: Array[u8, 2], o_u64: Array[u64, 2], o_bf16: Array[bf16, 2], o_i64: Array[i64, 2], o_mem: Array[bf16, 2]):
    i = 0
    v4: bf16 = 1
    v5: i64 = 0
    m = ptxpy.local_array(4, bf16)
    m[0] = 0
    m[1] = 0
    m[2] = 0
    m[3] = 0
    w6 = 0
    while w6 < 1:
        w6 += 1
        m[(v5) & 3] = (bool(v4) + 0)
        v4 = 0
    o_mem[i, 0] = m[0]
    o_mem[i, 1] = 0
    o_mem[i, 2] = 0
    o_mem[i, 3] = 0
"""
    inputs = [np.zeros(64, t) for t in (np.int32, np.float32, np.int32, np.uint16)]
    outputs = [Out((1, 1), t) for t in (np.int32, np.uint8, np.uint64, ml_dtypes.bfloat16,
                                        np.int64)] + [Out((1, 4), ml_dtypes.bfloat16)]
    o_mem = run(source, "kern", inputs + outputs, grid=1, block=1)[-1]
    assert o_mem.astype(np.float32).tolist() == [[1.0, 0.0, 0.0, 0.0]]


@pytest.mark.parametrize("ty", ["bf16", "f16"])
@pytest.mark.parametrize("trips", [1, 2])
@pytest.mark.parametrize("value", ["bool(v) + 0", "1 if v != 0 else 0", "i32(v != 0) * 3"])
def test_a_bool_made_a_half_float_in_a_loop_that_ptxas_unrolls(ty, trips, value):
    """A bool, as an int, converted to bf16 or f16 in a loop of constant trip count, where `v`
    is 1.0 on the first trip and 0.0 after: program 827's pattern (above) in more forms. On the
    card these pass even without the fix (ptxas is sensitive to the surroundings); they check
    the fold `_convert_select` does on the simulator, in every type."""
    source = HEADER + f"""
@ptxpy.jit
def kern(o: Array[{ty}, 2]):
    i = 0
    v: {ty} = 1
    m = ptxpy.local_array(4, {ty})
    m[0] = 0
    w = 0
    while w < {trips}:
        w += 1
        m[0] = {value}
        v = 0
    o[i, 0] = m[0]
"""
    (o,) = run(source, "kern", [Out((1, 1), NUMPY[ty])], grid=1, block=1)
    scale = 3.0 if "* 3" in value else 1.0
    assert float(o[0, 0]) == (scale if trips == 1 else 0.0)


@pytest.mark.parametrize("a0, d0", [(98, 72), (0, 0), (0, 5)])
def test_a_bool_xor_of_a_value_a_loop_copied(a0, d0):
    """`(v3 | v4) ^ v3` is 0 when a loop has set v4 = v3; with `v3 & v4` beside it ptxas merged
    the three into one PLOP3 and gave v3 (H100; benchmarks/probes/reduced/program-51.py, which
    this is but for its unused helper)."""
    source = HEADER + """
@ptxpy.jit
def kern(a: Array[i32], b: Array[f32], c: Array[i16], d: Array[u32], o_u16: Array[u16, 2], o_i8: Array[i8, 2], o_bool: Array[bool, 2]):
    i = 0
    v1: u16 = 0
    v3: bool = (0 >= 0)
    v4 = False
    if a[i]:
        pass
    else:
        v3 = (d[((((v1 & 65535) + v1) // 200)) & 63] <= 0)
    w8 = 0
    while w8 < 5:
        w8 += 1
        v4 = v3
    v1 = ((v3 | v4) ^ v3)
    v4 = (v3 & v4)
    o_i8[i, 1] = v1
    o_bool[i, 1] = v4
"""
    a, d = np.zeros(64, np.int32), np.zeros(64, np.uint32)
    a[0], d[0] = a0, d0
    b, c = np.zeros(64, np.float32), np.zeros(64, np.int16)
    _, o_i8, o_bool = run(source, "kern", [a, b, c, d, Out((1, 1), np.uint16), Out((1, 2), np.int8),
                                            Out((1, 2), np.bool_)], grid=1, block=1)
    v3 = bool(a0) or d0 <= 0
    assert (int(o_i8[0, 1]), bool(o_bool[0, 1])) == (0, v3)


def test_inverted_bits_of_a_value_a_branch_on_not_equal_pins():
    """`~x & 3` where a branch on `x != c` was false (so x == c): ptxas took x for c and dropped
    the inversion, `m[i, (~i) & 3]` under `if not bool(i)` stored at column 0, not 3 (H100,
    program 98 of seed 3708, known_index_probe.py); ptxpy branches on `x == c` instead. The
    program cut down, then the forms the probe found wrong: the `else` of `!=`, `not (x != 5)`,
    a loaded `x`, `~x | 4`, 64 bits."""
    source = HEADER + """
@ptxpy.jit
def cut(o: Array[f32, 2]):
    i = ptxpy.global_id(0)
    v2: bool = bool(i)
    m = ptxpy.shared_array((64, 4), f32)
    m[i, 0] = 0
    m[i, 1] = 0
    m[i, 2] = 0
    m[i, 3] = 0
    if (not v2):
        m[i, ((~i)) & 3] = 1
    o[i, 0] = m[i, 0]
    o[i, 1] = m[i, 3]

@ptxpy.jit
def forms(a: Array[i32], o: Array[i32, 2]):
    i = ptxpy.global_id(0)
    x = a[i]
    for k in range(6):
        o[i, k] = -9
    if x != 0:
        o[i, 0] = 7
    else:
        o[i, 0] = (~x) & 3
    if not (x != 5):
        o[i, 1] = (~x) & 3
    if not bool(x):
        o[i, 2] = (~x) | 4
    w = i64(x)
    if not bool(w):
        o[i, 3] = i32((~w) & 3)
    if not (i != 5):
        o[i, 4] = (~i) & 3
    v = not (x != 5)
    if v:
        o[i, 5] = 1
    o[i, 6] = i32(v)
"""
    (o,) = run(source, "cut", [Out((64, 2), np.float32)], grid=1, block=64)
    assert o[:, 0].tolist() == [0.0] * 64
    assert o[:, 1].tolist() == [1.0] + [0.0] * 63
    x = np.array([0, 5, 3, 0, -1, 5, 7, 0], np.int32)
    (o,) = run(source, "forms", [x, Out((8, 7), np.int32)], grid=1, block=8)
    assert o[:, 0].tolist() == [3 if v == 0 else 7 for v in x]
    assert o[:, 1].tolist() == [2 if v == 5 else -9 for v in x]
    assert o[:, 2].tolist() == [-1 if v == 0 else -9 for v in x]
    assert o[:, 3].tolist() == [3 if v == 0 else -9 for v in x]
    assert o[:, 4].tolist() == [2 if i == 5 else -9 for i in range(8)]
    assert o[:, 5].tolist() == [1 if v == 5 else -9 for v in x]    # (the `!=` kept for `v`)
    assert o[:, 6].tolist() == [int(v == 5) for v in x]


def test_a_three_way_min_of_a_value_times_minus_one():
    """`min(i, i32((-1) * v1), 0)` is -i: ptxas turned `mul.lo.s64 -1, x` into a negation,
    folded the two `min`s into one three-way min and lost it (0 for every thread; H100,
    benchmarks/probes/reduced/program-423.py, which the first kernel is but for its unused
    helper). The other forms: the constant on either side, 16, 32 and 64 bits, min and max."""
    source = HEADER + """
@ptxpy.jit
def kern(a: Array[i32], b: Array[f32], o_i64: Array[i64, 2], o_i32: Array[i32, 2], o_f32: Array[f32, 2], o_bool: Array[bool, 2], o_u16: Array[u16, 2], o_mem: Array[u64, 2]):
    i = ptxpy.global_id(0)
    v1: i64 = i
    v2: i32 = min(i, i32(((-1) * v1)), 0)
    m = ptxpy.shared_array((64, 4), u64)
    m[i, 0] = 0
    m[i, 1] = v2
    m[i, 2] = 0
    m[i, 3] = 0
    m[i, 0] = 0
    o_mem[i, 0] = 0
    o_mem[i, 1] = m[i, 1]
    o_mem[i, 2] = 0
    o_mem[i, 3] = 0

@ptxpy.jit
def forms(a: Array[i32], o: Array[i64, 2]):
    i = ptxpy.global_id(0)
    x = a[i]
    o[i, 0] = min(min(x, x * (-1)), 5)
    o[i, 1] = min(min(x, (-1) * x), 5)
    o[i, 2] = max(max(x, (-1) * x), -3)
    o[i, 3] = min(min(i64(x), i64(x) * (-1)), i64(4))
    o[i, 4] = min(min(i16(x), i16(x) * (-1)), i16(6))
    o[i, 5] = min(min(x, u32(x) * u32(4294967295)), 2)
"""
    n = 64
    args = [np.zeros(n, np.int32), np.zeros(n, np.float32)] + [
        Out((n, 2), dtype) for dtype in (np.int64, np.int32, np.float32, np.bool_, np.uint16)]
    o_mem = run(source, "kern", args + [Out((n, 4), np.uint64)], grid=1, block=n)[-1]
    assert o_mem[:, 1].tolist() == [(-i) % 2**64 for i in range(n)]
    x = np.concatenate([np.arange(-20, 20), [2**31 - 1, -2**31, -32768, 32767, 65535]]).astype(np.int32)
    (o,) = run(source, "forms", [x, Out((len(x), 6), np.int64)], grid=1, block=len(x))
    wide = x.astype(np.int64)
    neg32 = (-wide + 2**31) % 2**32 - 2**31
    short = (wide + 2**15) % 2**16 - 2**15
    want = [np.minimum(np.minimum(wide, neg32), 5), np.minimum(np.minimum(wide, neg32), 5),
            np.maximum(np.maximum(wide, neg32), -3), np.minimum(np.minimum(wide, -wide), 4),
            np.minimum(np.minimum(short, (-short + 2**15) % 2**16 - 2**15), 6),
            np.minimum(np.minimum(wide, -wide % 2**32), 2)]
    assert o.tolist() == np.stack(want, axis=1).tolist()


def test_a_bool_select_beside_an_or_of_its_inputs_in_a_loop():
    """Random program 775 of seed 3847 (`--loops`), cut down: `v5 = False` in one arm and
    `v2 = v5` in the other became selects, `c ? false : v5` and `c ? true : v5`; as
    `v5 ^ (v5 & c)` beside `c | v5`, ptxas merged them into PLOP3s and thread 1 stored False
    (H100). ptxpy selects bools as 0 or 1 in 32-bit registers. v5 ends as `i != 0`."""
    source = HEADER + """
@ptxpy.jit
def kern(a: Array[i32], o_bool: Array[bool, 2]):
    i = ptxpy.global_id(0)
    v1: bool = (0 > 0)
    v3: u16 = u8(a[i])
    v4: i64 = i
    v5: bool = bool(v4)
    v2 = (not 0)
    if v3:
        if (v4 <= 0):
            v5 = bool(0)
        else:
            v2 = v5
        for k7 in range(0, 1, 1):
            if (0 >= v2):
                v5 = v1
    o_bool[i, 2] = v5
"""
    a = np.array([-2125543687, 256, 7] * 21 + [0], np.int32)
    (o,) = run(source, "kern", [a, Out((64, 3), np.bool_)], grid=1, block=64)
    assert o[:, 2].tolist() == [i != 0 for i in range(64)]


def test_a_max_of_a_max_by_zero_tested_for_zero():
    """Random program 1064 of seed 4026 (`--loops`), cut down: `if max(0, i, 0): ... else:
    v = d[i]` loaded d[i] for i > 0. ptxas made `max(max(x, 0), 0)` and its test for 0 one
    `VIMNMX.RELU` whose predicate was wrong for x > 0, branch or stored bool (H100,
    max_branch_probe.py). ptxpy keeps one max."""
    source = HEADER + """
@ptxpy.jit
def kern(a: Array[i32], d: Array[i64], o: Array[i64, 2]):
    i = ptxpy.global_id(0)
    x = a[i]
    v: i64 = 0
    if max(0, i, 0):
        pass
    else:
        v = d[i]
    o[i, 0] = v
    o[i, 1] = max(0, x, 0) == 0
"""
    a = (np.arange(64, dtype=np.int32) - 20) * np.where(np.arange(64) % 2, 1, -1).astype(np.int32)
    d = np.arange(1000, 1064, dtype=np.int64)
    (o,) = run(source, "kern", [a, d, Out((64, 2), np.int64)], grid=1, block=64)
    assert o[:, 0].tolist() == [1000] + [0] * 63
    assert o[:, 1].tolist() == [int(x <= 0) for x in a]


def test_8_bit_vector_loads_converted_through_u32():
    """Random program 285 of seed 4150 (`--vectors`), cut down: `t0, t1, t2, t3 = x[4 * i:
    4 * i + 4]` of i8 and then `bf16(u32(t3))`: from `ld.v4.s8`, ptxas converted the
    sign-extended element as a signed byte (`I2F.S8`), -125 instead of 4294967171.0 (H100,
    vector_probe.py: every float type; 16-bit elements and scalar loads right; one 32-bit load
    and a `bfe.s32` per byte wrong too). ptxpy loads each used byte of an 8-bit vector by itself,
    as the scalar loads the card got right (and this form was right on the card: session 25)."""
    source = HEADER + """
@ptxpy.jit
def kern(x: Array[i8], y: Array[u8], o: Array[f32, 2], w: Array[f64, 2], n: Array[i32, 2]):
    i = ptxpy.global_id(0)
    t0, t1, t2, t3 = x[4 * i:4 * i + 4]
    s0, s1 = x[2 * i:2 * i + 2]
    u0, u1, u2, u3 = y[4 * i:4 * i + 4]
    o[i, 0] = f32(u32(t3))
    o[i, 1] = f32(u32(s1))
    w[i, 0] = f64(u32(t0))
    n[i, 0] = t0 + t1 + t2
    n[i, 1] = i32(u0) - u3
"""
    x = np.arange(-128, 128).astype(np.int8)
    y = np.arange(256).astype(np.uint8)[::-1].copy()
    o, w, n = run(source, "kern", [x, y, Out((64, 2), np.float32), Out((64, 1), np.float64),
                                   Out((64, 2), np.int32)], grid=1, block=64)
    as_u32 = x.astype(np.int64) % 2**32
    assert o[:, 0].tolist() == as_u32[3::4].astype(np.float32).tolist()
    assert o[:, 1].tolist() == as_u32[1:128:2].astype(np.float32).tolist()
    assert w[:, 0].tolist() == as_u32[0::4].astype(np.float64).tolist()
    quads = x.astype(np.int32).reshape(64, 4)
    assert n[:, 0].tolist() == quads[:, :3].sum(axis=1).astype(np.int8).tolist()   # i8 wraps
    assert n[:, 1].tolist() == (y[0::4].astype(np.int32) - y[3::4]).tolist()


SELECTED_BOOL = HEADER + """
@ptxpy.jit
def kern(a: Array[i32], b: Array[f32], o_bool: Array[bool, 2], o_i16: Array[i16, 2]):
    i = ptxpy.global_id(0)
    v1: bool = (0 <= 2)
    v3: bool = (i and a[i])
    v4: i16 = v3
    v5: i64 = 0
    if (v4 >= v5):
        o_i16[i, 1] = 7
        v1 = True
    else:
        v1 = v3
    t6, t7 = b[(2 * (((v4 - 2)) & 31)):(2 * (((v4 - 2)) & 31)) + 2]
    o_bool[i, 0] = v1
    o_i16[i, 0] = i16(t7)
"""


def test_a_selected_bool_whose_register_a_later_bool_takes():
    """Random program 571 of seed 4149 (`--vectors`), cut down: `v4: i16 = v3` of a bool, then
    `if v4 >= 0: v1 = True else: v1 = v3`, and a load at `2 * ((v4 - 2) & 31)`. With v1 in v3's
    predicate register, ptxas selected v4 from v1 (True, as `v4 >= 0` always holds) and threads
    whose v3 is False loaded b[62:64] (H100, vector_probe.py: eight rewrites of the PTX wrong,
    v1 in a register of its own right). ptxpy keeps a selected predicate's register to itself
    while the selected value lives (`regalloc.keep_selected_predicates_live`)."""
    a = np.where(np.arange(64) % 3 == 0, 0, np.arange(64) - 30).astype(np.int32)
    b = np.arange(64, dtype=np.float32) + 100
    o_bool, o_i16 = run(SELECTED_BOOL, "kern", [a, b, Out((64, 2), np.bool_),
                                               Out((64, 2), np.int16)], grid=1, block=64)
    v4 = ((np.arange(64) != 0) & (a != 0)).astype(np.int64)
    start = 2 * ((v4 - 2) & 31)
    assert o_bool[:, 0].tolist() == [True] * 64
    assert o_i16[:, 0].tolist() == b[start + 1].astype(np.int16).tolist()
    assert o_i16[:, 1].tolist() == [7] * 64


def test_no_bool_is_written_to_a_selected_predicate_while_the_selection_lives():
    """The PTX of the kernel above: `%p` of `selp.s16 %rs, 1, 0, %p` (v4 from v3) is written
    by nothing before the load reads `%rs`, though the `if` between writes v1."""
    ptx = compile_source(SELECTED_BOOL, "kern", arch="sm_90").ptx
    selp = re.search(r"selp\.s16 (%rs\d+), 1, 0, (%p\d+);", ptx)
    after = ptx[selp.end():]
    until_read = after[:re.search(rf"{selp.group(1)}\b", after).start()]
    assert "setp.ne.u32" in until_read, ptx          # v1 = True is written there
    assert not re.search(rf"(setp|mov)\.\S+ {selp.group(2)}\b", until_read), ptx


def test_a_branch_on_a_bool_inside_the_branch_on_its_negation():
    """Random program 206 of seed 4330 (`--exchange --atomic --vectors --loops`), cut down:
    `if not v3: if v3: ...` left a dead body (a predicate written, an atomic) that made ptxas
    for sm_80 (CUDA 13.0 and 13.5) crash with a segmentation fault when an earlier store was
    there too; sm_90 assembled it. ptxpy drops a branch that a dominating branch on the same
    bool decided (`simplifycfg.fold_known_branches`), so no such body reaches ptxas."""
    source = HEADER + """
@ptxpy.jit
def kern(a: Array[i32], acc: Array[i64, 2], o: Array[u16]):
    i = ptxpy.global_id(0)
    v3: bool = bool(bf16(a[i]))
    if i == 0:
        acc[0, 3] = i64(-2147483647)
    xs = ptxpy.shared_array(64, u16)
    if (not v3):
        if v3:
            if a[i]:
                v3 = bool(0)
            else:
                ptxpy.atomic_xor(acc, (0, 0), 0)
    xs[i] = v3
    ptxpy.syncthreads()
    o[i] = xs[63 - i]
"""
    a = np.where(np.arange(64) % 3 == 0, 0, np.arange(64) - 30).astype(np.int32)
    acc = np.zeros((1, 4), np.int64)
    (o,) = run(source, "kern", [a, acc, Out(64, np.uint16)], grid=1, block=64)
    assert o.tolist() == (a[::-1] != 0).astype(np.uint16).tolist()
    assert "atom" not in compile_source(source, "kern", arch="sm_80").ptx


def test_bool_selects_of_every_form():
    """c ? a : b for bool a, b, with the arms constants, values, and values that contain c."""
    source = HEADER + """
@ptxpy.jit
def kern(a: Array[i32], o: Array[bool, 2]):
    i = ptxpy.global_id(0)
    c: bool = a[i] & 1 != 0
    x: bool = a[i] & 2 != 0
    o[i, 0] = x if c else (c | x)
    o[i, 1] = False if c else (c | x)
    o[i, 2] = True if c else x
    o[i, 3] = x if c else False
    o[i, 4] = x if c else True
    o[i, 5] = (c ^ x) if c else (c & x)
"""
    a = np.arange(4, dtype=np.int32)
    (o,) = run(source, "kern", [a, Out((4, 6), np.bool_)], grid=1, block=4)
    c, x = (a & 1) != 0, (a & 2) != 0
    want = [np.where(c, x, c | x), np.where(c, False, c | x), np.where(c, True, x),
            np.where(c, x, False), np.where(c, x, True), np.where(c, c ^ x, c & x)]
    assert o.tolist() == np.stack(want, axis=1).tolist()


def test_an_f32_difference_of_loop_results_rounds_ties_to_even():
    """100000 - 1.00390625 = 99998.99609375 is halfway between two f32s; round to nearest even
    gives 99999.0. ptxas, evaluating the loops while compiling, rounded the subtraction (and an
    addition of a negative value) down (H100; benchmarks/probes/reduced/program-528.py is the
    first line). Each operand order and kind: register - constant, register + register of
    the other sign, constant + register, constant - register, register - register."""
    source = HEADER + """
@ptxpy.jit
def kern(o: Array[f32]):
    v3: f32 = 0
    for k8 in range(0, 1, 1):
        for k9 in range(1, 4, 1):
            v3 = 100000
    n: f32 = 0
    m: f32 = 0
    for k in range(2):
        n = -1.00390625
        m = 1.00390625
    o[0] = (v3 - 1.0039062500000002)
    o[1] = v3 + n
    o[2] = 100000.0 + n
    o[3] = 100000.0 - m
    o[4] = v3 - m
    o[5] = m - v3
"""
    (o,) = run(source, "kern", [Out(6, np.float32)], grid=1, block=1)
    assert o.tolist() == [99999.0] * 5 + [-99999.0]


@pytest.mark.parametrize("t", ["bf16", "f16", "f32", "f64"])
def test_minus_a_zero_from_a_loop_result(t):
    """-T(v) of a zero v is -0.0. With v from a comparison of a helper's loop result (False:
    helper(0) is -1), ptxas made `-bf16(v)` a select of -1.0 and +0.0 (H100;
    benchmarks/probes/reduced/program-872.py, which this is for bf16)."""
    source = HEADER + """
@ptxpy.func
def helper(p0: u8) -> i8:
    for k1 in range(0, 2, 1):
        if ((u32(100) | u32(p0)) <= u32(k1) > (u32(p0) << 11)):
            continue
        p0 = 1
    if ((i16(p0) ^ u32(p0)) > (-5)):
        for k2 in range(u32(0), 1, 1):
            p0 &= 0
        w3 = 0
        while w3 < 4:
            w3 += 1
            p0 = 255
            p0 |= ((i64(p0) <= p0) or (f32(p0) >= float(p0)))
    w4 = 0
    while w4 < 0:
        w4 += 1
        p0 %= (((p0 - (p0 | p0)) & 127) + 1)
    return i8(p0)

@ptxpy.jit
def kern(o_bool: Array[bool], o: Array[T]):
    v1: bool = (0 <= helper(0) >= 0)
    v2: u8 = v1
    v3: T = (-T(v2))
    o_bool[0] = v3
    o[0] = v3
""".replace("T", t)
    dtype = np.float64 if t == "f64" else np.float32 if t == "f32" else np.float16 if t == "f16" \
        else ml_dtypes.bfloat16
    o_bool, o = run(source, "kern", [Out(1, np.bool_, True), Out(1, dtype, 1)], grid=1, block=1)
    assert o_bool.tolist() == [False]
    assert o.view(f"u{o.itemsize}").tolist() == [1 << (8 * o.itemsize - 1)]   # -0.0


def test_a_constant_minus_a_loop_result():
    """`(2 - p1) & p1` with p1 = 2**31 - 1 from a loop is 3; ptxas, evaluating the loops while
    compiling, made it 1 (H100; benchmarks/probes/reduced/program-1467.py, which this is)."""
    source = HEADER + """
@ptxpy.func
def helper(p0: f64, p1: u32) -> u32:
    w1 = 0
    while w1 < 6:
        w1 += 1
        if (i32(p1) == p1):
            p1 = ((abs(u8(p1)) // ((u8(p1) & 15) + 1)) - (u8(p1) + bool(p1)))
            p1 = 2147483647
        else:
            p0 *= 0.001
            p0 = p0
        if ((u16(p1) if (bf16(p0) <= bf16(p0)) else u16(p1)) == 31):
            continue
    w2 = 0
    while w2 < 1:
        w2 += 1
        p0 = (p0 if ((i8(p1) if (i64(p1) != 65535) else i64(p1)) <= min(i64(0.1), i64(p1)) >= i64(bool(p1))) else (p0 / 2.0))
    return ((u32(2) - p1) & p1)

@ptxpy.jit
def kern(o: Array[u32]):
    o[0] = helper(1099511627776, 2)
"""
    (o,) = run(source, "kern", [Out(1, np.uint32)], grid=1, block=64)
    assert o.tolist() == [3]


def test_products_of_values_with_known_low_bits():
    """A 32-bit product of values whose low bits are known ones, then `|` or `&` with a small
    constant: ptxas 13.5.37 (`PTXPY_PTXAS=newest`) takes the product's low bits to be zeros,
    turning `| 7` into `+ 7` and `& 3` into 0, where the driver's JIT (ptxas 13.0) is right
    (H100; benchmarks/probes/reduced/program-1186-4528.py and program-398-4533.py,
    known_bits_probe.py). Run on the card under PTXPY_PTXAS=newest, this fails there."""
    source = HEADER + """
@ptxpy.jit
def products(x: Array[u32], y: Array[u32], a: Array[u32], b: Array[u32], c: Array[u32],
             d: Array[u32], e: Array[i16]):
    i = ptxpy.global_id(0)
    a[i] = (x[i] | 1) ** 4 | 3
    b[i] = (x[i] | 1) ** 4 & 3
    c[i] = (x[i] | 255) ** 3 | 7
    d[i] = (x[i] | 3) * (y[i] | 3) | 3
    v = (x[i] | 1) ** 4
    e[i] = (i16(v) | 3) ^ i16(v)
"""
    rng = np.random.default_rng(7)
    x, y = (rng.integers(0, 2**32, 64, dtype=np.uint64).astype(np.uint32) for _ in range(2))
    outs = run(source, "products", [x, y] + [Out(64, np.uint32)] * 4 + [Out(64, np.int16)],
               grid=1, block=64)
    with np.errstate(over="ignore"):
        fourth = (x | 1) ** 4
        expected = [fourth | 3, fourth & 3, (x | 255) ** 3 | 7, (x | 3) * (y | 3) | 3,
                    (fourth.astype(np.int16) | 3) ^ fourth.astype(np.int16)]
    for got, want in zip(outs, expected):
        np.testing.assert_array_equal(got, want)
    assert set(expected[1].tolist()) == {1} and set(expected[4].tolist()) == {2}


@pytest.mark.parametrize("t, start", [("i32", 2147483647), ("i32", 8), ("i64", 2**63 - 1),
                                      ("i16", 32767), ("u8", 127)])
def test_xor_with_all_ones_in_a_loop(t, start):
    """`x ^= -1` (every bit set) repeated in a loop of constant trip count, from x = 2**31 - 1:
    ptxas 13.0 (the driver's JIT), evaluating the loop while compiling, left x unchanged, so
    `d[x & 63]` read d[63], not d[0] (H100; benchmarks/probes/reduced/program-845-4713.py).
    The backend emits such an `xor` as `not`, which it evaluates right."""
    ones = -1 if t[0] == "i" else 255
    source = HEADER + f"""
@ptxpy.func
def toggle(p0: {t}, n: i32) -> {t}:
    p0 = {start}
    for k in range(0, n, 1):
        p0 ^= {ones}
    return p0

@ptxpy.jit
def kern(d: Array[i16], o: Array[i16], q: Array[i16], r: Array[{t}]):
    i = ptxpy.global_id(0)
    o[i] = d[toggle(i, 5) & 63]
    q[i] = d[toggle(i, 2) & 63]
    r[i] = toggle(i, 3) ^ {t}(i)
"""
    dtype = NUMPY[t]
    d = np.arange(100, 164, dtype=np.int16)
    o, q, r = run(source, "kern", [d, Out(64, np.int16), Out(64, np.int16), Out(64, dtype)],
                  grid=1, block=64)
    odd = int(np.array(start, dtype) ^ np.array(ones).astype(dtype))
    assert o.tolist() == [d[odd & 63]] * 64
    assert q.tolist() == [d[start & 63]] * 64
    assert r.tolist() == (np.full(64, odd, dtype) ^ np.arange(64).astype(dtype)).tolist()


@pytest.mark.parametrize("ty", INTS)
def test_cdiv_is_the_hosts_ceiling_division_for_every_sign_and_value(ty):
    """`ptxpy.cdiv(a, d)` in a kernel is what the host and constant folding compute,
    -(-a // d), wrapped to the type: a negative divisor rounds up too, and no intermediate
    overflows near the type's end (`(a + d - 1) // d` gave 0 for `cdiv(u8(250), 10)`)."""
    info = np.iinfo(NUMPY[ty])
    low, high = int(info.min), int(info.max)
    rng = np.random.default_rng(len(ty) * 7 + info.bits)
    edges = [low, low + 1, high - 1, high, 0, 1, 2, 3, 7, 10, -1, -2, -3, -7, 250, 255, 100]
    values = [v for v in edges if low <= v <= high] + [int(v) for v in rng.integers(low, high, 24, endpoint=True, dtype=NUMPY[ty])]
    pairs = [(a, d) for a in values for d in values if d != 0][:512]
    a = np.array([p[0] for p in pairs], NUMPY[ty])
    d = np.array([p[1] for p in pairs], NUMPY[ty])
    source = HEADER + f"""
@ptxpy.jit
def ceil_div(a: Array[{ty}], d: Array[{ty}], out: Array[{ty}]):
    i = ptxpy.global_id(0)
    if i < a.shape[0]:
        out[i] = ptxpy.cdiv(a[i], d[i])
"""
    (got,) = run(source, "ceil_div", [a, d, Out(len(a), NUMPY[ty])], grid=cdiv_host(len(a), 128),
                 block=128)
    span = high - low + 1
    want = [(-(-x // y) - low) % span + low for x, y in pairs]
    wrong = [(x, y, int(g), w) for (x, y), g, w in zip(pairs, got, want) if int(g) != w]
    assert not wrong, wrong[:10]


def cdiv_host(a: int, b: int) -> int:
    return -(-a // b)


def test_a_constant_part_of_an_index_beyond_32_bits_of_byte_offset():
    """An address's immediate offset is 32 bits: `x[v + 600000000]` of an f32 array is 2.4e9
    bytes from `x + 4 * v`, which the backend adds before the access (it used to stop with
    an internal error). With v = 3 - 600000000 every access below is element 3 or 5."""
    source = HEADER + """
@ptxpy.jit
def far(x: Array[f32], v: i32, out: Array[f32], o2: Array[f32, 2]):
    s = ptxpy.shared_array(8, f32)
    s[v + 600000002] = x[v + 600000000] * 2.0
    ptxpy.syncthreads()
    out[v + 600000000] = s[5]
    out[0] = s[v + 600000002]
    ptxpy.atomic_add(out, v + 600000002, 1.5)
    o2[1, v + 600000000] = 4.0
"""
    x = np.arange(8, dtype=np.float32) + 1
    v = np.int32(3 - 600000000)
    out, o2 = run(source, "far", [x, v, Out(8, np.float32), Out((2, 4), np.float32)], grid=1, block=1)
    assert out.tolist() == [8.0, 0, 0, 8.0, 0, 1.5, 0, 0]
    assert o2.tolist() == [[0, 0, 0, 0], [0, 0, 0, 4.0]]


@pytest.mark.parametrize("ty", ["f64", "i64", "u64"])
@pytest.mark.parametrize("memory", ["global", "shared"])
def test_four_wide_vector_access_of_a_64_bit_type(ty, memory):
    """`a, b, c, d = x[i:i + 4]` of a 64-bit type is 256 bits: two 128-bit accesses (the
    widest before sm_100), each one instruction; the store likewise."""
    staged = ("    s = ptxpy.shared_array(16, " + ty + ")\n    s[t] = x[t]\n    ptxpy.syncthreads()\n"
              if memory == "shared" else "")
    src = "s" if memory == "shared" else "x"
    source = HEADER + f"""
@ptxpy.jit
def quad(x: Array[{ty}], out: Array[{ty}]):
    t = ptxpy.thread_idx.x
{staged}    if t < 4:
        i = 4 * t
        a, b, c, d = {src}[i:i + 4]
        out[i:i + 4] = (d, c, b, a)
"""
    x = np.arange(16).astype(NUMPY[ty]) * 3 + 1
    (got,) = run(source, "quad", [x, Out(16, NUMPY[ty])], grid=1, block=16)
    assert got.tolist() == x.reshape(4, 4)[:, ::-1].reshape(-1).tolist()
    ptx = compile_source(source, "quad").ptx
    width = {"f64": "f64", "i64": "s64", "u64": "u64"}[ty]
    space = "global.nc" if memory == "global" else "shared"
    assert ptx.count(f"ld.{space}.v2.{width}") == 2, ptx
    assert ptx.count(f"st.global.v2.{width}") == 2, ptx


def test_min_and_max_of_bools_are_bools():
    """As Python's `min(True, False)` and jax.numpy's promotion: a bool (not an i32)."""
    source = HEADER + """
@ptxpy.jit
def pick(x: Array[i32], lo: Array[i32], hi: Array[i32], kinds: Array[i32]):
    i = ptxpy.global_id(0)
    a = x[i] > 0
    b = x[i] > 5
    m = min(a, b)
    M = max(a, b, False)
    lo[i] = m
    hi[i] = M
    kinds[i] = i32(m == True) + 2 * i32(max(a, 3))
"""
    x = np.array([-1, 0, 1, 5, 6, 7, -3, 10], np.int32)
    lo, hi, kinds = run(source, "pick", [x, Out(8, np.int32), Out(8, np.int32), Out(8, np.int32)],
                        grid=1, block=8)
    assert lo.tolist() == [int(min(v > 0, v > 5)) for v in x]
    assert hi.tolist() == [int(max(v > 0, v > 5, False)) for v in x]
    assert kinds.tolist() == [int(min(v > 0, v > 5)) + 6 for v in x]
    from ptxpy.transpiler import typed
    from ptxpy.transpiler.frontend import check_kernel, parse_module

    body = typed.format_body(check_kernel(parse_module(source), "pick").kernel.body)
    assert "    m = (a:bool and b:bool):bool" in body


def _range_bounds(ty: str, step: int) -> list:
    """(start, stop) pairs near both ends of `ty`, and ordinary ones, for a loop of `step`."""
    info = np.iinfo(NUMPY[ty])
    lo, hi = int(info.min), int(info.max)
    if step > 0:
        pairs = [(hi - 8, hi - 1), (hi - 8, hi), (hi - 2, hi), (hi - step, hi), (hi, hi),
                 (lo, lo + 5), (lo, lo + step + 1)]
    else:
        pairs = [(lo + 8, lo + 1), (lo + 8, lo), (lo + 2, lo), (lo - step, lo), (lo, lo),
                 (hi, hi - 5), (hi, hi + step - 1)]
    mid = (lo + hi) // 2
    return pairs + [(mid, mid + 10), (mid + 10, mid), (mid, mid)]


@pytest.mark.parametrize("ty, step", [(ty, step) for ty in INTS for step in (3, 5, -3, -5)])
def test_a_constant_step_range_stops_at_the_end_of_its_type(ty, step):
    """`range(start, stop, step)` runs Python's values also where `v + step` would pass the
    type's end: the loop never steps past `stop`, so it cannot wrap around to the other end
    (before session 31, `range(2**31 - 8, 2**31 - 1, 5)` on i32 went on from -2**31 + 1).
    A negative step counts an unsigned loop down in its own type (before session 32, the
    step's literal made a u8 loop an i32 one, and a u64 loop an error)."""
    source = HEADER + f"""
@ptxpy.jit
def walk(bounds: Array[{ty}], seen: Array[{ty}], count: Array[i32]):
    i = ptxpy.global_id(0)
    n = 0
    for v in range(bounds[2 * i], bounds[2 * i + 1], {step}):
        if n < 4:
            seen[4 * i + n] = v
        n += 1
        if n == 100:
            break
    count[i] = n
"""
    pairs = _range_bounds(ty, step)
    bounds = np.array([v for pair in pairs for v in pair], NUMPY[ty])
    seen, count = run(source, "walk", [bounds, Out(4 * len(pairs), NUMPY[ty]),
                                       Out(len(pairs), np.int32)], grid=1, block=len(pairs))
    for k, (start, stop) in enumerate(pairs):
        expected = list(range(start, stop, step))
        assert count[k] == len(expected), (start, stop)
        assert seen[4 * k:4 * k + min(4, len(expected))].tolist() == expected[:4], (start, stop)


@pytest.mark.parametrize("ty, stop, step", [("i32", "2**31 - 1", 5), ("u8", "u8(255)", 10),
                                            ("i16", "i16(-32768)", -7), ("u32", "u32(1)", -3)])
def test_a_constant_stop_near_the_end_of_its_type_ends_the_loop(ty, stop, step):
    """A compile-time `stop` within one step of the type's end: the latch steps from
    `min(v, stop - step)` (a constant limit) rather than from `v`."""
    source = HEADER + f"""
@ptxpy.jit
def walk(starts: Array[{ty}], seen: Array[{ty}], count: Array[i32]):
    i = ptxpy.global_id(0)
    n = 0
    for v in range(starts[i], {stop}, {step}):
        if n < 4:
            seen[4 * i + n] = v
        n += 1
        if n == 100:
            break
    count[i] = n
"""
    info = np.iinfo(NUMPY[ty])
    end = int(info.max) if step > 0 else int(info.min)
    starts = [end - 3 * step, end - step, end - 1 if step > 0 else end + 1, end]
    stop_value = eval(stop.replace(f"{ty}(", "(")) if ty in stop else eval(stop)
    seen, count = run(source, "walk", [np.array(starts, NUMPY[ty]), Out(16, NUMPY[ty]),
                                       Out(4, np.int32)], grid=1, block=4)
    for k, start in enumerate(starts):
        expected = list(range(start, stop_value, step))
        assert count[k] == len(expected), start
        assert seen[4 * k:4 * k + min(4, len(expected))].tolist() == expected[:4], start


@pytest.mark.parametrize("k", [math.nan, -0.0, 0.0, 2.0])
def test_min_and_max_of_constants_follow_the_run_time_rule(k):
    """A NaN among the arguments is ignored and -0.0 is below 0.0 whether the arguments are
    constants (folded while typing) or values (PTX min/max); Python's own min and max keep the
    first of a NaN or of equal zeros."""
    source = HEADER + """
import math

@ptxpy.jit
def mm(x: Array[f32], folded: Array[f32], computed: Array[f32], K: ptxpy.Const[float] = 0.0):
    folded[0] = min(K, 1.0)
    folded[1] = max(K, -0.0)
    folded[2] = min(-0.0, K, 0.0)
    folded[3] = max(math.nan, K)
    computed[0] = min(x[0], 1.0)
    computed[1] = max(x[0], -0.0)
    computed[2] = min(-0.0, x[0], 0.0)
    computed[3] = max(math.nan, x[0])
"""
    folded, computed = run(source, "mm", [np.array([k], np.float32), Out(4, np.float32),
                                          Out(4, np.float32)], grid=1, block=1, consts={"K": k})
    assert np.array_equal(folded, computed, equal_nan=True)
    assert np.signbit(folded).tolist() == np.signbit(computed).tolist()


def test_chained_assignment_evaluates_once_and_converts_per_target():
    """`y[i] = x[i] = z[i] = e` evaluates `e` once (its load of y[i] before any store) and
    stores it into each target converted to that target's type, left to right."""
    source = HEADER + """
@ptxpy.jit
def chain(x: Array[f32], y: Array[i32], z: Array[u8]):
    i = ptxpy.global_id(0)
    y[i] = x[i] = z[i] = y[i] * 3 + 250
    y[i + 4] = c = i
    y[i + 4] = y[i + 4] + c + 1      # the chain's store came before this load
"""
    y = np.array([0, 1, 2, 3, 0, 0, 0, 0], np.int32)
    x, z = np.zeros(4, np.float32), np.zeros(4, np.uint8)
    before = y[:4] * 3 + 250
    run(source, "chain", [x, y, z], grid=1, block=4)
    assert y[:4].tolist() == before.tolist() and x.tolist() == before.astype(np.float32).tolist()
    assert z.tolist() == (before % 256).tolist()
    assert y[4:].tolist() == [1, 3, 5, 7]


def test_chained_assignment_gives_each_name_the_value():
    source = HEADER + """
@ptxpy.jit
def chain(x: Array[f32], total: Array[f32]):
    i = ptxpy.global_id(0)
    a = b = x[i] * 0.5
    c = d = i
    total[i] = a + b + f32(c * d)
"""
    x = np.arange(4, dtype=np.float32)
    (total,) = run(source, "chain", [x, Out(4, np.float32)], grid=1, block=4)
    assert total.tolist() == (x + np.arange(4) ** 2).tolist()


@pytest.mark.parametrize("ty", ["u8", "u16", "u32", "u64", "i16"])
def test_an_index_counted_down_in_a_loop_addresses_backwards(ty):
    """`v -= 3` on an unsigned index is `v + (2**bits - 3)`: the pointer that strength reduction
    gives the address must move back 3 elements, not forward by the zero-extended step (a u16
    index moved 65533 elements forward before session 32)."""
    source = HEADER + f"""
@ptxpy.jit
def back(x: Array[f32], out: Array[f32], start: {ty}, m: i32):
    acc = 0.0
    v = start
    for t in range(m):
        acc += x[v]
        v -= 3
    out[0] = acc
"""
    x = np.arange(40, dtype=np.float32) ** 2
    (out,) = run(source, "back", [x, Out(1, np.float32), NUMPY[ty](37), np.int32(12)], grid=1, block=1)
    assert out[0] == sum(x[37 - 3 * t] for t in range(12))


@pytest.mark.parametrize("name, params, body, expected", [
    # a scalar named like an array's extent: k_x_shape0 twice, and the extent read the scalar
    ("k", "x: Array[f32], x_shape0: i32, out: Array[f32]",
     "    out[ptxpy.global_id(0)] = f32(x.shape[0] * 100 + x_shape0)", [8 * 100 + 4] * 4),
    # a shared array named like a parameter's extent in a kernel named smem
    ("smem", "a: Array[f32], out: Array[f32]",
     "    a_shape0 = ptxpy.shared_array(4, f32)\n    t = ptxpy.thread_idx.x\n"
     "    a_shape0[t] = a[t] + f32(a.shape[0])\n    ptxpy.syncthreads()\n    out[t] = a_shape0[3 - t]",
     [8 + 3, 8 + 2, 8 + 1, 8 + 0]),
    # a local array in a kernel named local
    ("local", "q: Array[f32], out: Array[f32]",
     "    q_shape0 = ptxpy.local_array(2, f32)\n    t = ptxpy.thread_idx.x\n"
     "    q_shape0[t & 1] = q[t]\n    out[t] = q_shape0[t & 1] + f32(q.shape[0])", [8, 9, 10, 11]),
], ids=["param", "shared", "local"])
def test_ptx_names_never_repeat_whatever_the_python_names(name, params, body, expected):
    """`.param`, `.shared` and `.local` names join the kernel's and the variables' names with
    `_`; where two joins give the same name the later one is numbered (`k_x_shape0_2`), so the
    PTX assembles and each name reads its own value."""
    source = HEADER + f"\n@ptxpy.jit\ndef {name}({params}):\n{body}\n"
    args = [np.arange(8, dtype=np.float32)]
    if "x_shape0: i32" in params:
        args.append(np.int32(4))
    outs = run(source, name, args + [Out(4, np.float32)], grid=1, block=4)
    assert outs[0].tolist() == [float(v) for v in expected]


def test_a_parameter_never_takes_the_name_of_the_print_buffer():
    source = HEADER + """
@ptxpy.jit
def printf(args: Array[f32], n: i32):
    print("v", n)
    args[0] = f32(args.shape[0])
"""
    kernel = compile_source(source, "printf")
    assert ".param .u64 printf_args_2" in kernel.ptx and ".b8 printf_args[" in kernel.ptx
    x = np.zeros(3, np.float32)
    run(source, "printf", [x, np.int32(7)], grid=1, block=1)
    assert x[0] == 3.0


@pytest.mark.parametrize("t", ["i32", "i64", "u32", "i8", "u16"])
def test_integer_division_by_zero_gives_the_documented_value_in_every_form(t):
    """As the H100 gives them (docs/language.md; benchmarks/probes/division_by_zero_probe.py):
    in signed types `x // 0` is -2 and `x % 0` is -1, in unsigned types both are all ones,
    also with a constant divisor; a constant dividend 0 gives `0 // z` all ones and `0 % z`
    0. Before, the simulator gave `x % 0` as x, a constant zero divisor gave -1 and `0 // z`
    gave 0."""
    source = HEADER + f"""
@ptxpy.jit
def kern(a: Array[{t}], b: Array[{t}], o: Array[{t}, 2]):
    i = ptxpy.global_id(0)
    x = a[i]
    z = b[i]
    o[i, 0] = x // z
    o[i, 1] = x // {t}(0)
    o[i, 2] = {t}(0) // z
    o[i, 3] = {t}(-7) // {t}(0)
    o[i, 4] = x % z
    o[i, 5] = x % {t}(0)
    o[i, 6] = {t}(0) % z
    o[i, 7] = {t}(5) // z
"""
    dtype = NUMPY[t]
    signed = np.issubdtype(dtype, np.signedinteger)
    a = np.array([-7, 0, 5, 100] if signed else [0, 5, 100, 7], dtype)
    b = np.zeros(4, dtype)
    (o,) = run(source, "kern", [a, b, Out((4, 8), dtype)], grid=1, block=4)

    quotient, remainder = (-2, -1) if signed else (-1, -1)
    expected = np.array([quotient, quotient, -1, quotient, remainder, remainder, 0,
                         quotient]).astype(dtype)
    for row, x in zip(o, a):
        assert row.tolist() == expected.tolist(), (t, x)
