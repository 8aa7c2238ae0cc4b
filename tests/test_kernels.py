"""End to end: Python source -> PTX -> ptxas (sm_80, sm_90) -> simulator, against NumPy.

One kernel per construct of SPEC 2.1-2.3; each result is computed independently with NumPy.
"""
import math
import re

import numpy as np
import pytest

from kernel_harness import Out, compile_source, run

HEADER = """
import math
import ptxpy
from ptxpy import Array, Const, f16, f32, f64, i8, i16, i32, i64, u8, u16, u32, u64
"""

rng = np.random.default_rng(1234)


def src(body: str) -> str:
    return HEADER + body


def test_saxpy():
    source = src("""
@ptxpy.jit
def saxpy(x: Array[f32], y: Array[f32], a: f32, out: Array[f32]):
    i = ptxpy.global_id(0)
    if i < x.shape[0]:
        out[i] = a * x[i] + y[i]
""")
    n = 1000
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    (out,) = run(source, "saxpy", [x, y, np.float32(2.5), Out(n, np.float32)], grid=4, block=256)
    np.testing.assert_array_equal(out, np.float32(2.5) * x + y)


def test_if_elif_else():
    source = src("""
@ptxpy.jit
def piecewise(x: Array[f32], out: Array[f32]):
    i = ptxpy.global_id()
    if i >= len(x):
        return
    v = x[i]
    if v < -1.0:
        r = -1.0
    elif v < 0.0:
        r = v * v
    elif v == 0.0:
        r = 42.0
    else:
        r = v + 1.0
    out[i] = r
""")
    x = np.concatenate([rng.uniform(-3, 3, 300), [0.0, -1.0, -0.5]]).astype(np.float32)
    (out,) = run(source, "piecewise", [x, Out(x.size, np.float32)], grid=3, block=128)
    expected = np.where(x < -1, -1.0, np.where(x < 0, x * x, np.where(x == 0, 42.0, x + 1)))
    np.testing.assert_array_equal(out, expected.astype(np.float32))


def test_while_loop_collatz():
    source = src("""
@ptxpy.jit
def collatz(x: Array[i32], steps: Array[i32]):
    i = ptxpy.global_id(0)
    if i < x.shape[0]:
        n = x[i]
        count = 0
        while n != 1:
            if n % 2 == 0:
                n = n // 2
            else:
                n = 3 * n + 1
            count += 1
        steps[i] = count
""")
    x = np.arange(1, 200, dtype=np.int32)

    def collatz(n):
        c = 0
        while n != 1:
            n = n // 2 if n % 2 == 0 else 3 * n + 1
            c += 1
        return c
    (out,) = run(source, "collatz", [x, Out(x.size, np.int32)], grid=2, block=128)
    np.testing.assert_array_equal(out, [collatz(int(n)) for n in x])


def test_for_range_row_sum_2d():
    source = src("""
@ptxpy.jit
def row_sum(x: Array[f32, 2], out: Array[f32]):
    row = ptxpy.global_id(0)
    if row < x.shape[0]:
        acc = 0.0
        for j in range(x.shape[1]):
            acc += x[row, j]
        out[row] = acc
""")
    x = rng.standard_normal((37, 50)).astype(np.float32)
    (out,) = run(source, "row_sum", [x, Out(37, np.float32)], grid=1, block=64)
    expected = np.zeros(37, np.float32)
    for j in range(50):
        expected += x[:, j]
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("start,stop,step", [(0, 10, 1), (10, 0, -1), (3, 20, 4), (20, 3, -3),
                                             (5, 5, 1), (5, 0, 2), (0, 5, -1), (-7, 7, 3)])
def test_for_range_runtime_step(start, stop, step):
    source = src("""
@ptxpy.jit
def ranges(start: i32, stop: i32, step: i32, total: Array[i32], count: Array[i32], last: Array[i32]):
    t = ptxpy.global_id(0)
    s = 0
    c = 0
    v = -1000
    for v in range(start, stop, step):
        s += v * (t + 1)
        c += 1
    total[t] = s
    count[t] = c
    last[t] = v
""")
    outs = run(source, "ranges", [np.int32(start), np.int32(stop), np.int32(step),
                                  Out(32, np.int32), Out(32, np.int32), Out(32, np.int32)],
               grid=1, block=32)
    values = list(range(start, stop, step))
    t = np.arange(32)
    np.testing.assert_array_equal(outs[0], sum(values) * (t + 1))
    np.testing.assert_array_equal(outs[1], len(values))
    np.testing.assert_array_equal(outs[2], values[-1] if values else -1000)


def test_for_constant_negative_step_and_var_modified_in_body():
    source = src("""
@ptxpy.jit
def down(out: Array[i32]):
    t = ptxpy.global_id(0)
    acc = 0
    for k in range(t, -1, -2):
        acc = acc * 3 + k
        k = 1000          # does not change the iteration, as in Python
    out[t] = acc
""")
    (out,) = run(source, "down", [Out(40, np.int32)], grid=1, block=40)
    expected = []
    for t in range(40):
        acc = 0
        for k in range(t, -1, -2):
            acc = (acc * 3 + k) & 0xFFFFFFFF
        expected.append(np.uint32(acc).view(np.int32))
    np.testing.assert_array_equal(out, expected)


def test_static_range_unrolled_with_break_and_continue():
    source = src("""
N = 8
@ptxpy.jit
def unrolled(x: Array[i32], out: Array[i32]):
    i = ptxpy.global_id(0)
    acc = 0
    for k in ptxpy.static_range(N):
        if k == 2:
            continue
        if x[i] == k:
            break
        acc += k * x[i]
    out[i] = acc
""")
    x = rng.integers(0, 10, 64).astype(np.int32)
    (out,) = run(source, "unrolled", [x, Out(64, np.int32)], grid=1, block=64)
    expected = []
    for v in x:
        acc = 0
        for k in range(8):
            if k == 2:
                continue
            if v == k:
                break
            acc += k * v
        expected.append(acc)
    np.testing.assert_array_equal(out, expected)
    ptx = __import__("kernel_harness").compile_source(source, "unrolled").ptx
    assert "bra" in ptx  # the breaks branch out


def test_break_continue_early_return():
    source = src("""
@ptxpy.jit
def search(x: Array[i32, 2], target: i32, out: Array[i32]):
    row = ptxpy.global_id(0)
    if row >= x.shape[0]:
        return
    out[row] = -1
    for j in range(x.shape[1]):
        if x[row, j] < 0:
            continue
        if x[row, j] == target:
            out[row] = j
            break
""")
    x = rng.integers(-3, 6, (50, 20)).astype(np.int32)
    (out,) = run(source, "search", [x, np.int32(4), Out(50, np.int32)], grid=1, block=64)
    expected = [int(np.argmax(r == 4)) if (r == 4).any() else -1 for r in x]
    np.testing.assert_array_equal(out, expected)


def test_guarded_load_never_executes_out_of_bounds():
    source = src("""
@ptxpy.jit
def guarded(x: Array[f32], out: Array[f32]):
    i = ptxpy.global_id(0)
    n = x.shape[0]
    v = x[i] if i < n else 0.0
    w = 1.0
    if i < n and x[i] > 0.0:
        w = 2.0
    if i >= n or x[i] < 0.0:
        w = w + 10.0
    if i < out.shape[0]:
        out[i] = v * w
""")
    x = rng.standard_normal(100).astype(np.float32)
    # 128 threads read a 100-element array: threads 100..127 must not touch x
    (out,) = run(source, "guarded", [x, Out(128, np.float32)], grid=1, block=128)
    w = np.where(x > 0, 2.0, 1.0) + np.where(x < 0, 10.0, 0.0)
    np.testing.assert_array_equal(out[:100], (x * w).astype(np.float32))
    np.testing.assert_array_equal(out[100:], 0.0)


def test_chained_comparisons():
    source = src("""
@ptxpy.jit
def inside(x: Array[f32], lo: f32, hi: f32, out: Array[i32]):
    i = ptxpy.global_id(0)
    if i < len(x):
        out[i] = 1 if lo <= x[i] < hi else 0
        if lo < x[i] <= hi != x[i]:
            out[i] += 2
""")
    x = rng.uniform(-2, 2, 200).astype(np.float32)
    x[:3] = [-1.0, 1.0, 0.5]
    (out,) = run(source, "inside", [x, np.float32(-1.0), np.float32(1.0), Out(200, np.int32)],
                 grid=1, block=256)
    expected = ((-1 <= x) & (x < 1)).astype(np.int32) + 2 * ((-1 < x) & (x <= 1) & (x != 1))
    np.testing.assert_array_equal(out, expected)


def test_tuple_assignment_and_swap_fibonacci():
    source = src("""
@ptxpy.jit
def fib(out: Array[i64]):
    i = ptxpy.global_id(0)
    a, b = i64(0), i64(1)
    for _ in range(i):
        a, b = b, a + b
    x, y = a, b
    x, y = y, x
    out[i] = y * 1000 + (x - y)
""")
    (out,) = run(source, "fib", [Out(60, np.int64)], grid=1, block=60)
    fibs = [0, 1]
    while len(fibs) < 62:
        fibs.append(fibs[-1] + fibs[-2])
    expected = [fibs[i] * 1000 + (fibs[i + 1] - fibs[i]) for i in range(60)]
    np.testing.assert_array_equal(out, expected)


def test_augmented_assignment_on_arrays_and_locals():
    source = src("""
@ptxpy.jit
def aug(x: Array[i32], out: Array[i32]):
    i = ptxpy.global_id(0)
    v = x[i]
    v += 3
    v *= 2
    v -= 1
    v //= 3
    v %= 7
    v <<= 2
    v |= 1
    v ^= 6
    v &= 0xFF
    v >>= 1
    out[i] = v
    out[i] += 100
""")
    x = rng.integers(-50, 50, 64).astype(np.int32)
    (out,) = run(source, "aug", [x, Out(64, np.int32)], grid=1, block=64)
    v = x.astype(np.int64)
    v = (v + 3) * 2 - 1
    v = v // 3
    v = v % 7
    v = ((v << 2) | 1) ^ 6
    v = (v & 0xFF) >> 1
    np.testing.assert_array_equal(out, v + 100)



def test_augmented_assignment_evaluates_an_elements_index_once():
    """`out[f()] op= v` calls `f()` once, as Python does: the load and the store use one index
    (an atomic counter here, so a second evaluation would move both the counter and the store)."""
    source = src("""
@ptxpy.func
def take(c: Array[i32]) -> i32:
    return ptxpy.atomic_add(c, 0, 1)

@ptxpy.jit
def aug(c: Array[i32], out: Array[f32], grid: Array[f32, 2]):
    out[ptxpy.atomic_add(c, 0, 1)] += 1.0
    out[take(c) + 1] *= 4.0
    grid[1, ptxpy.atomic_add(c, 1, 2)] -= 0.5
""")
    out = np.array([10, 20, 30, 40], np.float32)
    grid = np.arange(8, dtype=np.float32).reshape(2, 4)
    c, got, got_grid = run(source, "aug", [Out(2, np.int32, np.zeros(2, np.int32)), Out(4, np.float32, out),
                                           Out((2, 4), np.float32, grid)], grid=1, block=1)
    np.testing.assert_array_equal(c, [2, 2])
    np.testing.assert_array_equal(got, [11, 20, 120, 40])   # out[0] += 1; out[1 + 1] *= 4
    expected = grid.copy()
    expected[1, 0] -= 0.5
    np.testing.assert_array_equal(got_grid, expected)

def test_quoted_annotations_name_their_types():
    """`x: "Array[f32]"`, as Python's typing reads a quoted annotation (parameters, Const,
    locals, a device function's tuple return)."""
    source = src("""
@ptxpy.func
def pair(v: "f32") -> "tuple[f32, i32]":
    return v * 2.0, i32(v)

@ptxpy.jit
def quoted(x: "Array[f32]", out: 'Array[f32, 2]', K: "Const[int]" = 3):
    i = ptxpy.thread_idx.x
    acc: "f32" = 1
    twice, whole = pair(x[i])
    out[0, i] = twice * K + acc
    out[1, i] = f32(whole)
""")
    x = np.array([0.5, 1.5, 2.5, -3.0], np.float32)
    (out,) = run(source, "quoted", [x, Out((2, 4), np.float32)], grid=1, block=4)
    np.testing.assert_array_equal(out, [x * 6 + 1, np.trunc(x)])


def test_a_shape_unpacks_into_its_extents():
    """`n, m = x.shape`, as in NumPy and Numba: each extent an i32."""
    source = src("""
@ptxpy.jit
def extents(x: Array[f32, 3], out: Array[i32]):
    n, m, k = x.shape
    out[0] = n
    out[1] = m * 10 + k
""")
    (out,) = run(source, "extents", [np.zeros((2, 3, 4), np.float32), Out(2, np.int32)],
                 grid=1, block=1)
    np.testing.assert_array_equal(out, [2, 34])


def test_math_of_constants_folds_to_python_s_weak_values():
    """`d * math.sqrt(2.0)` keeps an f64 `d`'s precision (the constant is Python's double,
    weak, as `1.0 / 3.0` is); `math.floor(2.5)` is Python's int 2, `math.ceil(-0.5)` 0 (not
    -0.0); where Python raises (`math.log(0.0)`) the C value stays."""
    source = src("""
@ptxpy.jit
def consts(d: Array[f64], h: Array[f16], out: Array[f64], ints: Array[i64], half: Array[f16]):
    out[0] = d[0] * math.sqrt(2.0)
    out[1] = d[0] * math.atan2(1.0, 3.0)
    out[2] = math.log(0.0)
    ints[0] = math.floor(2.5) * 3
    ints[1] = i64(math.copysign(1.0, math.ceil(-0.5)))
    half[0] = h[0] * math.sqrt(2.0)
""")
    compiled = compile_source(source, "consts")
    assert "sqrt.rn" not in compiled.ptx and "0d3FF6A09E667F3BCD" in compiled.ptx   # sqrt(2), folded
    out, ints, half = run(source, "consts", [np.ones(1), np.ones(1, np.float16), Out(3, np.float64),
                                             Out(2, np.int64), Out(1, np.float16)],
                          grid=1, block=1)
    assert out[0] == math.sqrt(2.0) and out[1] == math.atan2(1.0, 3.0) and out[2] == -math.inf
    np.testing.assert_array_equal(ints, [6, 1])      # ceil(-0.5) is the int 0: copysign gives +1
    assert half[0] == np.float16(math.sqrt(2.0))     # f16 stays f16 (weak)


def test_log_with_a_base_is_log_over_log():
    """`math.log(x, b)` as Python computes it: log(x) / log(b); of constants, Python's value."""
    source = src("""
@ptxpy.jit
def logs(x: Array[f64], out: Array[f64]):
    i = ptxpy.thread_idx.x
    out[i] = math.log(x[i], 10.0) + math.log(1000.0, 10.0)
""")
    x = np.array([1.0, 10.0, 5.0, 1e-3])
    (out,) = run(source, "logs", [x, Out(4, np.float64)], grid=1, block=4)
    expected = np.array([math.log(v, 10.0) for v in x]) + math.log(1000.0, 10.0)
    np.testing.assert_allclose(out, expected, rtol=4e-16)


def test_fma_of_half_types_rounds_once():
    """`ptxpy.fma` on f16 and bf16 is their own `fma.rn` (through f32 it rounded twice)."""
    import ml_dtypes

    for t, a, b, c, exact in (("f16", 1.015625, 1.03125, 2.0**-24, 1.0478515625),
                              ("bf16", 1.0625, 1.0625, 2.0**-30, 1.1328125)):
        dtype = np.float16 if t == "f16" else ml_dtypes.bfloat16
        source = src(f"""
from ptxpy import bf16
@ptxpy.jit
def fused(a: Array[{t}], b: Array[{t}], c: Array[{t}], out: Array[{t}]):
    out[0] = ptxpy.fma(a[0], b[0], c[0])
""")
        assert f"fma.rn.{t} " in compile_source(source, "fused").ptx
        (out,) = run(source, "fused", [np.array([v], dtype) for v in (a, b, c)] + [Out(1, dtype)],
                     grid=1, block=1)
        assert float(out[0]) == exact, t


def test_abs_of_half_types_keeps_a_nan_s_bits():
    import ml_dtypes

    for t, dtype in (("f16", np.float16), ("bf16", ml_dtypes.bfloat16)):
        source = src(f"""
from ptxpy import bf16
@ptxpy.jit
def magnitude(x: Array[{t}], out: Array[{t}]):
    i = ptxpy.thread_idx.x
    out[i] = abs(x[i])
""")
        bits = np.array([0xFFC1, 0x7FA0, 0x8000, 0xBC00], np.uint16) if t == "bf16" else \
            np.array([0xFE01, 0x7D00, 0x8000, 0xBC00], np.uint16)
        (out,) = run(source, "magnitude", [bits.view(dtype), Out(4, dtype)], grid=1, block=4)
        np.testing.assert_array_equal(out.view(np.uint16), bits & 0x7FFF)


def test_divmod_and_frexp_evaluate_their_operand_once():
    """`divmod(f(), b)` and `math.frexp(f())` call `f()` once, as Python does: both items come
    from one value (eight threads each take one ticket of the counters)."""
    source = src("""
@ptxpy.jit
def split(c: Array[i32], fc: Array[f32], qr: Array[i32], back: Array[f32]):
    t = ptxpy.thread_idx.x
    q, r = divmod(ptxpy.atomic_add(c, 0, 1), 3)
    qr[t] = q * 3 + r
    m, e = math.frexp(ptxpy.atomic_add(fc, 0, 1.0))
    back[t] = math.ldexp(m, e)
""")
    c, fc, qr, back = run(source, "split", [Out(1, np.int32, np.zeros(1, np.int32)),
                                            Out(1, np.float32, np.zeros(1, np.float32)),
                                            Out(8, np.int32), Out(8, np.float32)], grid=1, block=8)
    assert c[0] == 8 and fc[0] == 8.0
    np.testing.assert_array_equal(np.sort(qr), np.arange(8))
    np.testing.assert_array_equal(np.sort(back), np.arange(8, dtype=np.float32))


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.int8, np.int16])
def test_floor_division_and_modulo_on_negative_ints(dtype):
    t = {np.int32: "i32", np.int64: "i64", np.int8: "i8", np.int16: "i16"}[dtype]
    source = src(f"""
@ptxpy.jit
def floors(a: Array[{t}], b: Array[{t}], q: Array[{t}], r: Array[{t}]):
    i = ptxpy.global_id(0)
    if i < len(a):
        q[i] = a[i] // b[i]
        r[i] = a[i] % b[i]
""")
    a = rng.integers(-100, 100, 500).astype(dtype)
    b = rng.integers(-9, 10, 500).astype(dtype)
    b[b == 0] = 3
    q, r = run(source, "floors", [a, b, Out(500, dtype), Out(500, dtype)], grid=2, block=256)
    np.testing.assert_array_equal(q, np.floor_divide(a, b))
    np.testing.assert_array_equal(r, np.mod(a, b))


def test_floor_division_fixup_removed_for_nonnegative_operands():
    from ptxpy.transpiler import driver

    source = src("""
@ptxpy.jit
def tiles(out: Array[i32]):
    i = ptxpy.global_id(0)
    out[i] = i // 32 + i % 32
""")
    ssa = str(driver.compile_kernel(driver.parse(source), "tiles", stop_after="ssa").ssa)
    assert "floordiv" not in ssa and "floormod" not in ssa and "select" not in ssa, ssa
    (out,) = run(source, "tiles", [Out(128, np.int32)], grid=2, block=64)
    i = np.arange(128)
    np.testing.assert_array_equal(out, i // 32 + i % 32)


FLOAT_DIVISIONS = """
@ptxpy.jit
def divisions(a: Array[{t}], b: Array[{t}], q: Array[{t}], r: Array[{t}], m: Array[{t}]):
    i = ptxpy.global_id(0)
    if i < len(a):
        q[i] = a[i] // b[i]
        r[i] = a[i] % b[i]
        m[i] = math.fmod(a[i], b[i])
"""


def float_division_operands(dtype, n=192):
    """Random operands of every magnitude, quotients that round across an integer (3.0 and
    0.1, and x a few ulps from k * y for k up to 4 times 2^precision), and every pair of the
    special values."""
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.1, 3.0, -7.5, 2.0],
                       np.float64)
    tiny, huge = (5e-324, 1e300) if dtype == np.float64 else (1e-45, 3e38) if dtype == np.float32 else (6e-8, 6e4)
    special = np.concatenate([special, [tiny, -tiny, huge, -huge]]).astype(dtype)
    wide = np.float64 if dtype == np.float64 else np.float32
    digits = {np.float64: 30, np.float32: 6, np.float16: 2}[dtype]
    scale = 10.0 ** rng.integers(-digits, digits, (2, n))
    a, b = (rng.standard_normal((2, n)) * scale).astype(wide).astype(dtype)
    precision = np.finfo(dtype).nmant
    y = b[rng.permutation(n)]
    x = (y.astype(np.float64) * np.floor(2.0 ** rng.uniform(0, precision + 2, n))).astype(dtype)
    for _ in range(3):
        x = np.where(rng.integers(0, 2, n) == 1, np.nextafter(x, dtype(np.inf)), np.nextafter(x, dtype(-np.inf)))
    return (np.concatenate([np.repeat(special, len(special)), a, x]),
            np.concatenate([np.tile(special, len(special)), b, y]))


@pytest.mark.parametrize("t,dtype", [("f32", np.float32), ("f64", np.float64), ("f16", np.float16)])
def test_float_floordiv_mod_and_fmod_are_numpys_bit_for_bit(t, dtype):
    """`//` and `%` on floats are Python's (from the exact remainder, as NumPy computes them
    in the type; f16 in f32), `math.fmod` is C's: equal bits, signed zeros and NaNs included.
    `3.0 // 0.1` is 29.0 (the quotient 30.000000000000004 rounds across 30)."""
    a, b = float_division_operands(dtype)
    q, r, m = run(src(FLOAT_DIVISIONS.format(t=t)), "divisions",
                  [a, b] + [Out(len(a), dtype)] * 3, grid=-(-len(a) // 128), block=128)
    wide = np.float64 if dtype == np.float64 else np.float32
    with np.errstate(all="ignore"):
        expected = [f(a.astype(wide), b.astype(wide)).astype(dtype)
                    for f in (np.floor_divide, np.remainder, np.fmod)]
    bits = {np.float64: np.uint64, np.float32: np.uint32, np.float16: np.uint16}[dtype]
    for got, want, name in zip((q, r, m), expected, ("//", "%", "fmod")):
        same = (got.view(bits) == want.view(bits)) | (np.isnan(got) & np.isnan(want))
        assert same.all(), (name, a[~same][:4], b[~same][:4], got[~same][:4], want[~same][:4])
    if dtype == np.float64:
        k = np.nonzero((a == 3.0) & (b == np.float64(0.1)))[0][0]
        assert (q[k], r[k]) == (3.0 // 0.1, 3.0 % 0.1) and q[k] == 29.0


def test_power_with_constant_integer_exponents():
    source = src("""
@ptxpy.jit
def powers(x: Array[f32], n: Array[i32], out: Array[f32], iout: Array[i32]):
    i = ptxpy.global_id(0)
    if i < len(x):
        out[i] = x[i] ** 2 + x[i] ** 3 - x[i] ** 0 + x[i] ** -2 + x[i] ** 1
        iout[i] = n[i] ** 5
""")
    x = rng.uniform(0.5, 2, 100).astype(np.float32)
    n = rng.integers(-20, 20, 100).astype(np.int32)
    out, iout = run(source, "powers", [x, n, Out(100, np.float32), Out(100, np.int32)], grid=1, block=128)
    np.testing.assert_allclose(out, x ** 2 + x ** 3 - 1 + x ** -2.0 + x, rtol=2e-6)
    np.testing.assert_array_equal(iout, n.astype(np.int64) ** 5)


def test_min_max_abs_many_arguments():
    source = src("""
@ptxpy.jit
def mm(a: Array[f32], b: Array[i32], out: Array[f32], iout: Array[i32]):
    i = ptxpy.global_id(0)
    if i < len(a):
        out[i] = max(a[i], 0.5, -a[i]) + min(a[i], abs(a[i]) * 2.0, 1.0)
        iout[i] = min(b[i], 3, -b[i], 100) + max(abs(b[i]), 7)
""")
    a = rng.uniform(-4, 4, 100).astype(np.float32)
    b = rng.integers(-20, 20, 100).astype(np.int32)
    out, iout = run(source, "mm", [a, b, Out(100, np.float32), Out(100, np.int32)], grid=1, block=128)
    np.testing.assert_array_equal(out, np.maximum(np.maximum(a, 0.5), -a) +
                                  np.minimum(np.minimum(a, np.abs(a) * 2), 1.0))
    np.testing.assert_array_equal(iout, np.minimum.reduce([b, np.full_like(b, 3), -b]) +
                                  np.maximum(np.abs(b), 7))


def test_casts_truncate_and_wrap():
    source = src("""
@ptxpy.jit
def casts(x: Array[f32], n: Array[i32], t: Array[i32], w8: Array[i8], wu8: Array[u8], f: Array[f32], big: Array[i64]):
    i = ptxpy.global_id(0)
    if i < len(x):
        t[i] = int(x[i])
        w8[i] = i8(n[i])
        wu8[i] = n[i]
        f[i] = float(n[i]) / 4
        big[i] = i64(n[i]) * 100000
""")
    x = rng.uniform(-100, 100, 100).astype(np.float32)
    n = rng.integers(-100000, 100000, 100).astype(np.int32)
    outs = run(source, "casts", [x, n, Out(100, np.int32), Out(100, np.int8), Out(100, np.uint8),
                                 Out(100, np.float32), Out(100, np.int64)], grid=1, block=128)
    np.testing.assert_array_equal(outs[0], np.trunc(x).astype(np.int32))
    np.testing.assert_array_equal(outs[1], n.astype(np.int8))
    np.testing.assert_array_equal(outs[2], n.astype(np.uint8))
    np.testing.assert_array_equal(outs[3], n.astype(np.float32) / np.float32(4))
    np.testing.assert_array_equal(outs[4], n.astype(np.int64) * 100000)


def test_small_integer_arithmetic_wraps():
    source = src("""
@ptxpy.jit
def wraps(a: Array[u8], b: Array[i16], c: Array[u8], d: Array[i16], e: Array[u32]):
    i = ptxpy.global_id(0)
    if i < len(a):
        x = a[i]
        x = x * 3 + 200        # u8 arithmetic wraps (weak literals keep u8)
        c[i] = x
        y = b[i]
        y = y * 7 - 30000
        d[i] = y
        e[i] = u32(b[i]) * 3000000
""")
    a = rng.integers(0, 256, 100).astype(np.uint8)
    b = rng.integers(-30000, 30000, 100).astype(np.int16)
    c, d, e = run(source, "wraps", [a, b, Out(100, np.uint8), Out(100, np.int16), Out(100, np.uint32)],
                  grid=1, block=128)
    np.testing.assert_array_equal(c, (a.astype(np.int64) * 3 + 200).astype(np.uint8))
    np.testing.assert_array_equal(d, (b.astype(np.int64) * 7 - 30000).astype(np.int16))
    np.testing.assert_array_equal(e, (b.astype(np.int64).astype(np.uint32) * np.uint32(3000000)))


def test_promotion_i32_plus_u32_is_i64_and_f16_stays_f16():
    source = src("""
@ptxpy.jit
def promo(a: Array[i32], b: Array[u32], h: Array[f16], s: Array[i64], g: Array[f16]):
    i = ptxpy.global_id(0)
    if i < len(a):
        s[i] = a[i] + b[i]
        g[i] = h[i] * 2.0 + 1.0
""")
    a = rng.integers(-2**31, 2**31 - 1, 64).astype(np.int32)
    b = rng.integers(0, 2**32 - 1, 64).astype(np.uint32)
    h = rng.uniform(-3, 3, 64).astype(np.float16)
    s, g = run(source, "promo", [a, b, h, Out(64, np.int64), Out(64, np.float16)], grid=1, block=64)
    np.testing.assert_array_equal(s, a.astype(np.int64) + b.astype(np.int64))
    np.testing.assert_array_equal(g, h * np.float16(2) + np.float16(1))


def test_device_functions_inlined_with_tuple_returns():
    source = src("""
@ptxpy.func
def divmod_floor(a: i32, b: i32) -> tuple[i32, i32]:
    return a // b, a % b

@ptxpy.func
def clamp(v: f32, lo: f32, hi: f32) -> f32:
    if v < lo:
        return lo
    if v > hi:
        return hi
    return v

@ptxpy.func
def scaled_sum(x: Array[f32], i: i32, s: f32) -> f32:
    return clamp(x[i] * s, -1.0, 1.0) + clamp(x[i], 0.0, 0.5)

@ptxpy.jit
def funcs(x: Array[f32], n: Array[i32], out: Array[f32], q: Array[i32], r: Array[i32]):
    i = ptxpy.global_id(0)
    if i < len(x):
        out[i] = scaled_sum(x, i, 0.5)
        qq, rr = divmod_floor(n[i], 7)
        q[i] = qq
        r[i] = rr
""")
    x = rng.uniform(-4, 4, 100).astype(np.float32)
    n = rng.integers(-100, 100, 100).astype(np.int32)
    out, q, r = run(source, "funcs", [x, n, Out(100, np.float32), Out(100, np.int32), Out(100, np.int32)],
                    grid=1, block=128)
    np.testing.assert_array_equal(out, np.clip(x * np.float32(0.5), -1, 1) + np.clip(x, 0, 0.5))
    np.testing.assert_array_equal(q, n // 7)
    np.testing.assert_array_equal(r, n % 7)


@pytest.mark.parametrize("k,flag", [(1, False), (3, True)])
def test_const_parameters_specialise(k, flag):
    source = src("""
@ptxpy.jit
def scale(x: Array[f32], out: Array[f32], K: Const[int] = 2, NEG: Const[bool] = False):
    i = ptxpy.global_id(0)
    if i < len(x):
        v = x[i] * K
        if NEG:
            v = -v
        out[i] = v
""")
    x = rng.standard_normal(64).astype(np.float32)
    (out,) = run(source, "scale", [x, Out(64, np.float32)], grid=1, block=64,
                 consts={"K": k, "NEG": flag})
    np.testing.assert_array_equal(out, x * k * (-1 if flag else 1))


def test_const_default_used_when_not_given():
    source = src("""
@ptxpy.jit
def scale(x: Array[f32], out: Array[f32], K: Const[int] = 4):
    i = ptxpy.global_id(0)
    if i < len(x):
        out[i] = x[i] * K
""")
    x = rng.standard_normal(64).astype(np.float32)
    (out,) = run(source, "scale", [x, Out(64, np.float32)], grid=1, block=64)
    np.testing.assert_array_equal(out, x * 4)


def test_const_parameters_of_device_functions_specialise_per_value():
    """A `Const` parameter of a @ptxpy.func: each call's value checks the function anew
    (compile-time branches, static_range counts), by position, keyword or default; a kernel's
    own Const passes on."""
    source = src("""
@ptxpy.func
def poly(x: f32, DEGREE: Const[int], ODD: Const[bool] = False) -> f32:
    acc = f32(0.0)
    for k in ptxpy.static_range(DEGREE + 1):
        if ODD and k % 2 == 0:
            continue
        acc = acc * x + f32(k + 1)
    return acc

@ptxpy.func
def window(x: Array[f32], i: i32, W: Const[int]) -> f32:
    s = f32(0.0)
    t = ptxpy.local_array(W, f32)
    for k in ptxpy.static_range(W):
        t[k] = x[(i + k) % len(x)]
    for k in ptxpy.static_range(W):
        s += t[k]
    return s

@ptxpy.jit
def k(x: Array[f32], a: Array[f32], b: Array[f32], c: Array[f32], W: Const[int] = 3):
    i = ptxpy.global_id()
    if i < len(x):
        a[i] = poly(x[i], 2) + poly(x[i], DEGREE=3, ODD=True)
        b[i] = window(x, i, W)
        c[i] = window(x, i, W + 2) - poly(x[i], W)
""")
    n = 100
    x = rng.uniform(-1, 1, n).astype(np.float32)

    def poly(v, degree, odd=False):
        acc = np.zeros_like(v)
        for k in range(degree + 1):
            if odd and k % 2 == 0:
                continue
            acc = acc * v + np.float32(k + 1)
        return acc

    def window(w):
        return sum(x[(np.arange(n) + k) % n] for k in range(w))

    a, b, c = run(source, "k", [x, Out(n, np.float32), Out(n, np.float32), Out(n, np.float32)],
                  grid=1, block=128, consts={"W": 4})
    np.testing.assert_allclose(a, poly(x, 2) + poly(x, 3, True), rtol=1e-6)
    np.testing.assert_allclose(b, window(4), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(c, window(6) - poly(x, 4), rtol=1e-5, atol=1e-5)


def test_products_of_widened_ints_compile_to_mul_wide_and_mul_hi():
    """A Philox round's `u64(a) * u64(b)` halves, the signed high half and a widened product
    plus an addend: `mul.wide`, `mul.hi`, `mad.wide` in the PTX, NumPy's values."""
    source = src("""
@ptxpy.jit
def k(a: Array[u32], b: Array[u32], s: Array[i32], hi: Array[u32], lo: Array[u32], shi: Array[i32],
      acc: Array[u64]):
    i = ptxpy.global_id()
    if i < len(a):
        p = u64(a[i]) * u64(0xD2511F53)
        hi[i] = u32(p >> 32) ^ b[i]
        lo[i] = u32(p)
        shi[i] = i32((i64(s[i]) * i64(s[len(a) - 1 - i])) >> 32)
        acc[i] = u64(a[i]) * u64(b[i]) + u64(b[i])
""")
    ptx = compile_source(source, "k").ptx
    assert "mul.wide.u32" in ptx and "mul.hi.s32" in ptx and "mul.lo.u64" not in ptx
    n = 200
    a = rng.integers(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32)
    b = rng.integers(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32)
    s = rng.integers(-2 ** 31, 2 ** 31, n, dtype=np.int64).astype(np.int32)
    hi, lo, shi, acc = run(source, "k", [a, b, s, Out(n, np.uint32), Out(n, np.uint32), Out(n, np.int32),
                                         Out(n, np.uint64)], grid=1, block=256)
    p = a.astype(np.uint64) * np.uint64(0xD2511F53)
    np.testing.assert_array_equal(hi, (p >> np.uint64(32)).astype(np.uint32) ^ b)
    np.testing.assert_array_equal(lo, p.astype(np.uint32))
    np.testing.assert_array_equal(shi, ((s.astype(np.int64) * s[::-1].astype(np.int64)) >> 32).astype(np.int32))
    np.testing.assert_array_equal(acc, a.astype(np.uint64) * b.astype(np.uint64) + b.astype(np.uint64))


def test_truncated_i64_shifts_and_logic_compile_to_32_bit_instructions():
    """`i32((key >> shift) & 255)` with `key: u32` and `shift: i32` promotes to i64 as NumPy
    does, but only its low half is kept: one 32-bit shift and `and` in the PTX (the narrow
    pass), NumPy's values for counts past 31 and negative ones too (read as unsigned: 0)."""
    source = src("""
@ptxpy.jit
def k(keys: Array[u32], shifts: Array[i32], digits: Array[i32], mixed: Array[u32]):
    i = ptxpy.global_id()
    if i < len(keys):
        key = keys[i]
        s = shifts[i]
        digits[i] = i32((key >> s) & 255)
        mixed[i] = u32(((key << s) ^ (key * 2654435761)) + 12345)
""")
    ptx = compile_source(source, "k").ptx
    assert not re.search(r"\b(shr|shl|and|xor)\.[bsu]64", ptx), ptx
    n = 256
    keys = rng.integers(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32)
    shifts = np.arange(n, dtype=np.int32) % 72 - 4
    digits, mixed = run(source, "k", [keys, shifts, Out(n, np.int32), Out(n, np.uint32)],
                        grid=1, block=256)
    wide = [int(x) for x in keys]
    counts = [int(c) % 2 ** 32 for c in shifts]     # a negative count read as unsigned
    np.testing.assert_array_equal(digits, [(x >> c if c < 64 else 0) & 255 for x, c in zip(wide, counts)])
    np.testing.assert_array_equal(mixed, [(((x << c if c < 64 else 0) ^ (x * 2654435761)) + 12345) % 2 ** 32
                                          for x, c in zip(wide, counts)])


def test_a_load_both_arms_make_is_made_once():
    """`x[i] * 2 if p != 0 else x[i] + 1`: both arms load x[i], so it is loaded once, before the
    branch (the hoist pass); NumPy's values for both p."""
    source = src("""
@ptxpy.jit
def k(x: Array[f32], p: i32, out: Array[f32]):
    i = ptxpy.global_id()
    if i < len(x):
        out[i] = x[i] * 2.0 if p != 0 else x[i] + 1.0
""")
    assert compile_source(source, "k").ptx.count("ld.global") == 1
    x = rng.standard_normal(300).astype(np.float32)
    for p, want in ((1, x * np.float32(2)), (0, x + np.float32(1))):
        (got,) = run(source, "k", [x, p, Out(300, np.float32)], grid=2, block=256)
        np.testing.assert_array_equal(got, want)


def test_round_and_trunc_keep_the_float_type():
    """`round(x)` ties to even as Python's (and NumPy's rint); `math.trunc` toward zero; both
    keep the float type, as `math.floor` does. An integer is returned unchanged."""
    source = src("""
@ptxpy.jit
def k(x: Array[f32], h: Array[f16], d: Array[f64], n: Array[i32], r: Array[f32], t: Array[f32],
      rh: Array[f16], rd: Array[f64], td: Array[f64], rn: Array[i32]):
    i = ptxpy.global_id()
    if i < len(x):
        r[i] = round(x[i])
        t[i] = math.trunc(x[i])
        rh[i] = round(h[i])
        rd[i] = round(d[i]) + round(2.5)
        td[i] = math.trunc(d[i])
        rn[i] = round(n[i])
""")
    x = np.concatenate([np.arange(-4, 4.5, 0.5), rng.uniform(-1e8, 1e8, 30), [np.inf, -np.inf, np.nan,
                                                                            -0.3, 0.0, -0.0]]).astype(np.float32)
    m = len(x)
    with np.errstate(over="ignore"):
        h = x.astype(np.float16)
    d, ints = x.astype(np.float64) * 1.000001, np.arange(m, dtype=np.int32) - 20
    r, t, rh, rd, td, rn = run(source, "k", [x, h, d, ints, Out(m, np.float32), Out(m, np.float32),
                                             Out(m, np.float16), Out(m, np.float64), Out(m, np.float64),
                                             Out(m, np.int32)], grid=1, block=64)
    np.testing.assert_array_equal(r, np.rint(x))
    np.testing.assert_array_equal(np.signbit(r), np.signbit(np.rint(x)))
    np.testing.assert_array_equal(t, np.trunc(x))
    np.testing.assert_array_equal(np.signbit(t), np.signbit(np.trunc(x)))
    np.testing.assert_array_equal(rh, np.rint(h))
    np.testing.assert_array_equal(rd, np.rint(d) + 2.0)
    np.testing.assert_array_equal(td, np.trunc(d))
    np.testing.assert_array_equal(rn, ints)


def test_thread_block_grid_intrinsics_2d():
    source = src("""
@ptxpy.jit
def ids(out: Array[i32, 3]):
    x = ptxpy.block_idx.x * ptxpy.block_dim.x + ptxpy.thread_idx.x
    y = ptxpy.program_id(1) * ptxpy.block_dim.y + ptxpy.thread_idx.y
    if x < out.shape[1] and y < out.shape[0]:
        out[y, x, 0] = ptxpy.global_id(0) + 1000 * ptxpy.global_id(1)
        out[y, x, 1] = ptxpy.lane_id() + 100 * ptxpy.warp_id()
        out[y, x, 2] = ptxpy.num_programs(0) * 10 + ptxpy.grid_dim.y + ptxpy.WARP_SIZE * 1000
""")
    (out,) = run(source, "ids", [Out((12, 20, 3), np.int32)], grid=(3, 2), block=(8, 8))
    yy, xx = np.mgrid[0:12, 0:20]
    np.testing.assert_array_equal(out[..., 0], xx + 1000 * yy)
    linear = (xx % 8) + 8 * (yy % 8)
    np.testing.assert_array_equal(out[..., 1], linear % 32 + 100 * (linear // 32))
    np.testing.assert_array_equal(out[..., 2], 3 * 10 + 2 + 32000)


def test_module_constants_and_math_constants():
    source = src("""
BLOCK = 64
HALF = BLOCK // 2
EPS = 1e-3
SCALE = 1.0 / 4

@ptxpy.jit
def consts(out: Array[f32]):
    i = ptxpy.global_id(0)
    out[i] = (i % HALF) * SCALE + EPS + math.pi
""")
    (out,) = run(source, "consts", [Out(64, np.float32)], grid=1, block=64)
    i = np.arange(64)
    np.testing.assert_allclose(out, ((i % 32) * 0.25 + 1e-3 + np.pi).astype(np.float32), rtol=1e-6)


def test_a_device_function_returning_a_one_element_tuple():
    source = src("""
@ptxpy.func
def halve(a: f32) -> tuple[f32]:
    return (a / 2.0,)

@ptxpy.jit
def k(x: Array[f32], out: Array[f32]):
    (v,) = halve(x[0])
    w, = halve(v)
    out[0] = w
""")
    (out,) = run(source, "k", [np.array([6.0], np.float32), Out(1, np.float32)], grid=1, block=1)
    assert out.tolist() == [1.5]


def test_min_and_max_promote_all_their_arguments_to_one_type_in_any_order():
    """max(i16, 0.5, u64) is f64, as i16 with u64 is; before, the arguments were promoted from
    the left, and i16 with the weak 0.5 made an f32 that u64 then joined (16777220, not
    16777219)."""
    source = src("""
@ptxpy.jit
def k(a: Array[i16], b: Array[u64], out: Array[f64]):
    x = a[0]
    y = b[0]
    out[0] = max(x, 0.5, y)
    out[1] = max(x, y, 0.5)
    out[2] = max(0.5, x, y)
    out[3] = min(y, 0.5, x) + 0.0
""")
    (out,) = run(source, "k", [np.array([-3], np.int16), np.array([16777219], np.uint64),
                               Out(4, np.float64)], grid=1, block=1)
    assert out.tolist() == [16777219.0] * 3 + [-3.0]


def test_a_bool_counts_in_i32_beside_a_weak_integer_that_needs_u64():
    """A weak integer too big for i32 counts with its own type (u64), and a bool counts as i32:
    i32 with u64 is f64, as with an i32 operand; before, the bool took u64 and the sum wrapped."""
    source = src("""
@ptxpy.jit
def k(f: Array[ptxpy.bool_], out: Array[f64]):
    t = f[0]
    out[0] = t + 18446744073709551615
    out[1] = (not t) - 2**63
""")
    (out,) = run(source, "k", [np.array([True]), Out(2, np.float64)], grid=1, block=1)
    assert out.tolist() == [2.0**64, -(2.0**63)]


def test_float_of_a_string_is_a_float_constant():
    """float('-inf') (the common Python spelling), float('nan'), float('1e3'): float constants
    like math.inf, in a kernel and at module level."""
    source = src("""
BIG = float('inf')
LIMIT = float(' 1e3 ') * 2

@ptxpy.jit
def k(x: Array[f32], out: Array[f32]):
    i = ptxpy.thread_idx.x
    m = float('-inf')
    m = max(m, x[i])
    out[4 * i] = m
    out[4 * i + 1] = min(x[i], BIG)
    out[4 * i + 2] = float('NaN')
    out[4 * i + 3] = LIMIT + float("-Infinity") * 0.0
""")
    x = np.array([1.5, -np.inf, np.nan], np.float32)
    (out,) = run(source, "k", [x, Out(12, np.float32)], grid=1, block=3)
    expected = np.array([[v, v if v == v else np.inf, np.nan, np.nan] for v in x], np.float32)
    expected[2, 0] = -np.inf            # max(-inf, nan) is -inf, as CUDA's fmax
    np.testing.assert_array_equal(out.reshape(3, 4), expected)


def test_a_negative_shape_index_counts_from_the_end():
    source = src("""
@ptxpy.jit
def extents(x: Array[f32, 3], out: Array[i32]):
    out[0] = x.shape[-1]
    out[1] = x.shape[-2]
    out[2] = x.shape[-3]
    out[3] = x.shape[2 - 3]
""")
    (out,) = run(source, "extents", [np.zeros((2, 3, 5), np.float32), Out(4, np.int32)],
                 grid=1, block=1)
    assert list(out) == [5, 3, 2, 5]


def test_tuple_module_constants_are_shapes_and_their_items_numbers():
    source = src("""
TILE = (4, 33)
ROWS = TILE[0]
WIDE = TILE[-1] * 2
DIMS = len(TILE)
CORNER = (3, 31)
FIRST = (0,)

@ptxpy.jit
def transpose(x: Array[f32, 2], out: Array[f32, 2], wide: Array[i32]):
    s = ptxpy.shared_array(TILE, f32)
    r = ptxpy.thread_idx.y
    c = ptxpy.thread_idx.x
    s[r, c] = x[r, c]
    ptxpy.syncthreads()
    out[c, r] = s[ROWS - 1 - r, c] * TILE[1]
    wide[0] = WIDE
    for d in ptxpy.static_range(len(TILE)):
        wide[1 + d] = TILE[d] * DIMS
    ptxpy.syncthreads()
    if r == 0 and c == 0:
        out[CORNER[1], CORNER[0]] = s[CORNER]    # a tuple constant indexes with its items, as in Python
        wide[FIRST] += 1
""")
    x = rng.standard_normal((4, 32)).astype(np.float32)
    out, wide = run(source, "transpose", [x, Out((32, 4), np.float32), Out(3, np.int32)],
                    grid=1, block=(32, 4))
    expected = (x[::-1] * np.float32(33)).T
    expected[31, 3] = x[3, 31]
    np.testing.assert_array_equal(out, expected)
    assert list(wide) == [67, 8, 66]
    assert ".shared .align 16 .b8 smem_s[528];" in compile_source(source, "transpose").ptx


def test_rms_norm_rows():
    source = src("""
@ptxpy.jit
def rms_norm(x: Array[f32, 2], w: Array[f32], out: Array[f32, 2], eps: f32):
    row = ptxpy.global_id(0)
    if row >= x.shape[0]:
        return
    n = x.shape[1]
    ss = 0.0
    for j in range(n):
        ss += x[row, j] * x[row, j]
    scale = 1.0 / math.sqrt(ss / n + eps)
    for j in range(n):
        out[row, j] = x[row, j] * scale * w[j]
""")
    x = rng.standard_normal((16, 64)).astype(np.float32)
    w = rng.standard_normal(64).astype(np.float32)
    (out,) = run(source, "rms_norm", [x, w, Out((16, 64), np.float32), np.float32(1e-6)], grid=1, block=32)
    expected = x / np.sqrt((x * x).mean(axis=1, keepdims=True) + 1e-6) * w
    np.testing.assert_allclose(out, expected, rtol=2e-5, atol=1e-6)


def test_nan_comparisons_follow_python():
    source = src("""
@ptxpy.jit
def nans(x: Array[f32], out: Array[i32]):
    i = ptxpy.global_id(0)
    if i < len(x):
        v = x[i]
        out[i] = (1 if v == v else 0) + (2 if v != v else 0) + (4 if v < 1.0 else 0) + (8 if not v >= 1.0 else 0)
""")
    x = np.array([np.nan, 0.0, 2.0, -np.inf, np.inf], np.float32)
    (out,) = run(source, "nans", [x, Out(5, np.int32)], grid=1, block=32)
    expected = [(1 if v == v else 0) + (2 if v != v else 0) + (4 if v < 1 else 0) + (8 if not v >= 1 else 0)
                for v in x.tolist()]
    np.testing.assert_array_equal(out, expected)


def test_floor_division_of_an_overflowed_product():
    # found by tests/test_differential.py: products of non-negative values may wrap negative
    source = src("""
@ptxpy.jit
def wrapped(a: Array[u32], q: Array[i64], r: Array[i64], q32: Array[i32], r32: Array[i32]):
    i = ptxpy.global_id(0)
    v = i64(a[i]) * i64(a[i])
    q[i] = v // 7
    r[i] = v % 7
    w = i * max(i, i32(a[i] & 0x7FFFFFFF))
    q32[i] = w // 7
    r32[i] = w % 7
""")
    a = np.array([4294967203, 365558975, 3, 2**31 + 5, 7, 99999, 2**32 - 1, 0] * 2, np.uint32)
    q, r, q32, r32 = run(source, "wrapped", [a, Out(16, np.int64), Out(16, np.int64),
                                             Out(16, np.int32), Out(16, np.int32)], grid=1, block=16)
    v = (a.astype(np.int64) * a.astype(np.int64))   # wraps like the kernel (NumPy int64)
    np.testing.assert_array_equal(q, v // 7)
    np.testing.assert_array_equal(r, v % 7)
    i = np.arange(16, dtype=np.int64)
    w = ((i * np.maximum(i, (a & 0x7FFFFFFF).astype(np.int64))) & 0xFFFFFFFF).astype(np.uint32).view(np.int32)
    np.testing.assert_array_equal(q32, w // 7)
    np.testing.assert_array_equal(r32, w % 7)


def test_floor_division_of_an_overflowed_sum():
    # differential seed 11, program 1278, reduced: for i >= 1, (i + i) + 2147483647 wraps
    # negative, so `//` and `%` on it keep their floor correction
    source = src("""
@ptxpy.jit
def wrapped_sum(q: Array[i64], r: Array[i64]):
    i = ptxpy.global_id(0)
    v = i64((i + i) + 2147483647)
    q[i] = v // ((v & 15) + 1)
    r[i] = v % ((v & 15) + 1)
""")
    q, r = run(source, "wrapped_sum", [Out(64, np.int64), Out(64, np.int64)], grid=2, block=32)
    v = (2 * np.arange(64) + 2147483647).astype(np.int32).astype(np.int64)   # wraps like i32
    np.testing.assert_array_equal(q, v // ((v & 15) + 1))
    np.testing.assert_array_equal(r, v % ((v & 15) + 1))
    assert (q[1], r[1]) == (-1073741824, 1)   # v = -2147483647, divided by 2


def test_floor_division_of_an_overflowed_shift():
    # differential seed 11, program 1505, reduced: a non-negative i64 shifted left wraps
    # negative (at once, or after some trips of `(w + w) << 7`); `//` and `%` keep the fix-up
    source = src("""
@ptxpy.jit
def shifted(a: Array[u32], q: Array[i64], r: Array[i64], lq: Array[i64], lr: Array[i64]):
    i = ptxpy.global_id(0)
    v = i64(a[i]) << 40
    q[i] = v // 12
    r[i] = v % 12
    w = i64(a[i]) + i64(i)
    for k in range(6):
        w = ((w + w) << 7) // ((w & 15) + 1)
    lq[i] = w // 12
    lr[i] = w % 12
""")
    a = np.array([1, 2**23, 2**23 + 1, 2**24 - 1, 3, 2**32 - 1, 0, 12345678, 4294967231],
                 np.uint32)
    outs = [Out(len(a), np.int64) for _ in range(4)]
    q, r, lq, lr = run(source, "shifted", [a] + outs, grid=1, block=len(a))
    v = a.astype(np.int64) << 40                       # NumPy int64 wraps like the kernel
    np.testing.assert_array_equal(q, v // 12)
    np.testing.assert_array_equal(r, v % 12)
    assert (q[5], r[5]) == (-91625968982, 8)           # v = -(2**40), not a multiple of 12
    w = a.astype(np.int64) + np.arange(len(a))
    for _ in range(6):
        w = ((w + w) << 7) // ((w & 15) + 1)
    np.testing.assert_array_equal(lq, w // 12)
    np.testing.assert_array_equal(lr, w % 12)


def test_nan_converts_to_zero_in_64_bit_integers_too():
    # differential seed 23, programs 7213 and 9419: cvt.rzi to a 64-bit integer gives
    # 0x8000000000000000 for NaN on the H100 (the simulator measures it so), where the IR,
    # constant folding and the 32-bit conversions give 0
    import ml_dtypes

    source = src("""
from ptxpy import bf16

@ptxpy.jit
def to_int(x: Array[f32], y: Array[f64], h: Array[f16], g: Array[bf16],
           s: Array[i64], u: Array[u64], hs: Array[i64], gu: Array[u64], w: Array[i32]):
    i = ptxpy.global_id(0)
    s[i] = i64(x[i])
    u[i] = u64(y[i])
    hs[i] = i64(h[i])
    gu[i] = u64(g[i])
    w[i] = i32(x[i])
""")
    values = np.array([np.nan, -np.nan, np.inf, -np.inf, 2.75, -3.5, 1e30, 0.0])
    n = len(values)
    with np.errstate(over="ignore"):   # 1e30 is inf in f16
        inputs = [values.astype(t)
                  for t in (np.float32, np.float64, np.float16, ml_dtypes.bfloat16)]
    types = (np.int64, np.uint64, np.int64, np.uint64, np.int32)
    outs = run(source, "to_int", inputs + [Out(n, t) for t in types], grid=1, block=n)

    def expected(xs, t):   # truncate, saturate, NaN -> 0
        info = np.iinfo(t)
        return [0 if np.isnan(v) else max(info.min, min(info.max, int(np.trunc(v)) if np.isfinite(v)
                                                         else (info.max if v > 0 else info.min)))
                for v in xs.astype(np.float64)]
    for out, xs, t in zip(outs, inputs + [inputs[0]], types):
        assert out.tolist() == expected(xs, t), (t, out)


def test_casts_of_typed_constants_saturate_like_run_time_casts():
    # found by tests/test_differential.py (seed 7, programs 893, 954, 979): a cast of a typed
    # constant that is infinite (f16(3e38), f16(-2147483647)) to an integer was the compile
    # error meant for weak constants (`int(math.nan)`); as a cast at run time it saturates
    source = src("""
@ptxpy.jit
def k(x: Array[f16], out: Array[i32]):
    i = ptxpy.global_id(0)
    out[0] = i32(u8(f16(3e38)))
    out[1] = i32(f64(f16(-2147483647)))
    out[2] = i32(i16(f32(3e38)))
    out[3] = i32(u16(x[0]))
    out[4] = i32(u64(f32(-1e30)) >> 60)
""")
    (out,) = run(source, "k", [np.array([np.inf], np.float16), Out(5, np.int32)], grid=1, block=1)
    assert out.tolist() == [255, -2**31, 32767, 65535, 0]


def test_literals_and_constant_casts_round_once_to_bf16():
    # found by tests/test_differential.py (seed 1, program 58): the compiler rounded constants
    # to bf16 through f32 (twice), as ml_dtypes does; the GPU's cvt.rn.bf16 (and a run-time
    # cast) rounds once: 2^24 + 2^16 + 1 is 2^24 + 2^17, 1 + 2^-8 + 2^-52 is 1 + 2^-7
    import ml_dtypes

    source = src("""
from ptxpy import bf16

@ptxpy.jit
def k(g: Array[bf16], n: Array[i64], d: Array[f64], out: Array[f32]):
    out[0] = f32(g[0] + 16842753)
    out[1] = f32(g[0] + 1.0039062500000002)
    out[2] = f32(bf16(16842753))
    out[3] = f32(bf16(n[0]))
    out[4] = f32(bf16(d[0]))
    out[5] = f32(bf16(i64(1157425104234217473)))   # 2^60 + 2^52 + 1
""")
    g = np.zeros(1, ml_dtypes.bfloat16)
    (out,) = run(source, "k", [g, np.array([16842753], np.int64),
                               np.array([1 + 2**-8 + 2**-52]), Out(6, np.float32)], grid=1, block=1)
    assert out.tolist() == [16908288.0, 1.0078125, 16908288.0, 16908288.0, 1.0078125,
                            2.0**60 + 2.0**53]


# --- 32-bit shared and local addresses (docs/ptx-dialect.md, "Shared and local addresses") ----
STENCIL = """
T = 16

@ptxpy.jit
def stencil(x: Array[f32, 2], n: i32, out: Array[f32, 2], hist: Array[u32], rev: Array[f64]):
    tile = ptxpy.shared_array((T + 2, T + 2), f32)
    counts = ptxpy.shared_array(8, u32)
    acc = ptxpy.shared_array(T * T, f64)
    tx = ptxpy.thread_idx.x
    ty = ptxpy.thread_idx.y
    t = ty * T + tx
    if t < 8:
        counts[t] = u32(0)
    tile[ty + 1, tx + 1] = x[ty, tx]
    if tx == 0:
        tile[ty + 1, 0] = 0.0
        tile[ty + 1, T + 1] = 0.0
    if ty == 0:
        tile[0, tx + 1] = 0.0
        tile[T + 1, tx + 1] = 0.0
    acc[t] = f64(x[ty, tx])
    ptxpy.syncthreads()
    out[ty, tx] = tile[ty + 1, tx] + tile[ty + 1, tx + 2] + tile[ty, tx + 1] + tile[ty + 2, tx + 1]
    ptxpy.atomic_add(counts, t % 8, u32(1))
    s: f64 = 0.0
    for j in range(t, -1, -1):          # a pointer into acc walking down: a negative step
        s = s * 0.5 + acc[j]
    for k in range(n):
        s = s + acc[(t + k * 3) % (T * T)]
    rev[t] = s
    ptxpy.syncthreads()
    if t < 8:
        hist[t] = counts[t]
"""


def test_shared_memory_is_addressed_in_32_bits():
    import re

    from kernel_harness import compile_source

    source = src(STENCIL)
    x = rng.standard_normal((16, 16)).astype(np.float32)
    n = 5
    out, hist, rev = run(source, "stencil", [x, np.int32(n), Out((16, 16), np.float32),
                                            Out(8, np.uint32), Out(256, np.float64)],
                         grid=1, block=(16, 16))
    padded = np.zeros((18, 18), np.float32)
    padded[1:17, 1:17] = x
    expected = ((padded[1:17, 0:16] + padded[1:17, 2:18]) + padded[0:16, 1:17]) + padded[2:18, 1:17]
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_array_equal(hist, np.full(8, 32, np.uint32))
    acc = x.reshape(-1).astype(np.float64)
    want = []
    for t in range(256):
        s = 0.0
        for j in range(t, -1, -1):
            s = s * 0.5 + acc[j]
        for k in range(n):
            s = s + acc[(t + k * 3) % 256]
        want.append(s)
    np.testing.assert_array_equal(rev, np.array(want))

    ptx = compile_source(source, "stencil").ptx
    body = ptx[ptx.index("{"):]
    for name in ("tile", "counts", "acc"):
        assert re.search(rf"mov\.u32 %r\d+, smem_{name};", body)
    assert "mov.u64" not in body and "cvta.shared" not in body and "cvta.to.shared" not in body
    accesses = re.findall(r"(?:ld|st|red|atom)\.shared\S* [^\n]*", body)
    assert len(accesses) >= 10 and all(re.search(r"\[%r\d+(\+\d+)?\]", a) for a in accesses)
    assert re.search(r"st\.shared\.f32 \[%r\d+\+68\], 0f00000000;", body)   # tile[ty + 1, T + 1]
    assert re.search(r"red\.shared\.add\.u32 \[%r\d+\], 1;", body)
    assert re.search(r"add\.u32 %r\d+, %r\d+, -8;", body)                  # acc[j], j -= 1


def test_local_array_with_a_runtime_index_is_addressed_in_32_bits():
    import re

    from kernel_harness import compile_source

    source = src("""
@ptxpy.jit
def local(x: Array[f32], k: i32, out: Array[f32]):
    i = ptxpy.global_id(0)
    r = ptxpy.local_array(4, f32)
    for j in ptxpy.static_range(4):
        r[j] = x[i] * f32(j + 1)
    r[(i + k) % 4] = -1.0
    out[i] = r[0] + r[1] * 10.0 + r[2] * 100.0 + r[3] * 1000.0
""")
    x = rng.integers(-9, 9, 64).astype(np.float32)
    (out,) = run(source, "local", [x, np.int32(3), Out(64, np.float32)], grid=2, block=32)
    slots = x[:, None] * np.arange(1, 5, dtype=np.float32)
    slots[np.arange(64), (np.arange(64) + 3) % 4] = -1
    np.testing.assert_array_equal(out, slots @ np.array([1, 10, 100, 1000], np.float32))
    body = compile_source(source, "local").ptx
    assert re.search(r"mov\.u32 %r\d+, local_r;", body)
    assert re.search(r"st\.local\.f32 \[%r\d+\], 0fBF800000;", body)


# --- FMA contraction: only under fast_math (docs/performance.md) ------------------------------
CONTRACT = """
@ptxpy.jit
def muladd(a: Array[f32], b: Array[f32], c: Array[f32], fused: Array[f32], diff: Array[f32],
           dot: Array[f32]):
    i = ptxpy.global_id(0)
    if i < len(a):
        fused[i] = a[i] * b[i] + c[i]
        diff[i] = c[i] - b[i] * c[i]
        s = 0.0
        for j in range(4):
            s += a[(i + j) % len(a)] * b[j]
        dot[i] = s
"""


def _fma_f32(a, b, c):
    """fma for f32 arrays: float64 product (exact) and sum, rounded to odd (two-sum) so that
    the rounding to f32 is the only one."""
    a64, b64, c64 = (np.asarray(v, np.float64) for v in (a, b, c))
    p = a64 * b64
    s = p + c64
    bb = s - p
    err = (p - (s - bb)) + (c64 - bb)
    odd = (err != 0) & ((s.view(np.int64) & 1) == 0)
    return np.where(odd, np.nextafter(s, np.where(err > 0, np.inf, -np.inf)), s).astype(np.float32)


@pytest.mark.parametrize("fast_math", [False, True])
def test_fast_math_contracts_multiply_add_to_fma(fast_math):
    from kernel_harness import compile_source

    n = 512
    a, b, c = (rng.standard_normal(n).astype(np.float32) for _ in range(3))
    a[:2], b[:2], c[:2] = 1 + 2.0 ** -12, 1 + 2.0 ** -12, 2.0 ** -80   # fused != rounded twice
    source = src(CONTRACT)
    fused, diff, dot = run(source, "muladd", [a, b, c] + [Out(n, np.float32)] * 3, grid=2,
                           block=256, fast_math=fast_math)
    s = np.zeros(n, np.float32)
    for j in range(4):
        if fast_math:
            s = _fma_f32(a[(np.arange(n) + j) % n], b[j], s)
        else:
            s = s + a[(np.arange(n) + j) % n] * b[j]
    if fast_math:
        np.testing.assert_array_equal(fused, _fma_f32(a, b, c))
        np.testing.assert_array_equal(diff, _fma_f32(-b, c, c))
        assert fused[0] != a[0] * b[0] + c[0]
    else:
        np.testing.assert_array_equal(fused, a * b + c)       # NumPy's f32: two roundings
        np.testing.assert_array_equal(diff, c - b * c)
    np.testing.assert_array_equal(dot, s)
    ptx = compile_source(source, "muladd", fast_math=fast_math).ptx
    if fast_math:
        assert ptx.count("fma.rn.f32") == 3 and "mul.rn.f32" not in ptx
    else:
        assert "fma" not in ptx and "mul.rn.f32" in ptx and "add.rn.f32" in ptx
        assert not __import__("re").search(r"\b(mul|add|sub)\.f(32|64)", ptx)   # always .rn


def test_fast_math_leaves_the_math_library_unfused():
    from kernel_harness import compile_source

    source = src("""
@ptxpy.jit
def lib(x: Array[f32], y: Array[f64], out: Array[f32], out64: Array[f64]):
    i = ptxpy.global_id(0)
    out[i] = math.erf(x[i]) * x[i] + x[i]
    out64[i] = math.exp(y[i]) * y[i] + y[i]
""")
    exact = compile_source(source, "lib").ptx
    fast = compile_source(source, "lib", fast_math=True).ptx
    for t in ("f32", "f64"):   # only the kernel's own a * b + c is fused
        assert fast.count(f"fma.rn.{t}") == exact.count(f"fma.rn.{t}") + 1


# --- issue 2: static_range constants, constant branches, run-time steps, tuple stores --------
def test_static_range_variable_keeps_weak_types_in_byte_extraction():
    from kernel_harness import compile_source

    source = src("""
@ptxpy.jit
def bytes_of(words: Array[u32], h: Array[f16], out: Array[i32], scaled: Array[f16]):
    i = ptxpy.global_id()
    if i < words.shape[0]:
        w = words[i]
        for k in ptxpy.static_range(4):
            out[4 * i + k] = i32((w >> (8 * k)) & 0xFF)    # u32 shifts: k is a weak constant
            scaled[4 * i + k] = h[i] * k                   # f16 * k stays f16
""")
    words = rng.integers(0, 2**32, 100, dtype=np.uint32)
    h = rng.standard_normal(100).astype(np.float16)
    out, scaled = run(source, "bytes_of", [words, h, Out(400, np.int32), Out(400, np.float16)],
                      grid=1, block=128)
    np.testing.assert_array_equal(out, words.view(np.uint8).astype(np.int32))
    np.testing.assert_array_equal(scaled.reshape(100, 4), h[:, None] * np.arange(4, dtype=np.float16))
    ptx = compile_source(source, "bytes_of").ptx
    assert "shr.u32" in ptx
    assert "shr.b64" not in ptx and "shr.u64" not in ptx and "shr.s64" not in ptx


def test_static_range_variable_as_exponent_shape_index_and_vector_width():
    source = src("""
@ptxpy.jit
def poly(x: Array[f32], out: Array[f32, 2]):
    i = ptxpy.global_id()
    if i >= out.shape[0]:
        return
    for k in ptxpy.static_range(4):
        if k == 0:
            out[i, 0] = 1.0
        else:
            out[i, k] = x[i] ** k + out[i, k - 1]     # out[i, -1] is never compiled
    for k in ptxpy.static_range(1, 3):
        if 2 * k == 4:
            a, b, c, d = x[4 * i:4 * i + 2 * k]
            out[i, 4] = a + b + c + d
        else:
            a, b = x[4 * i:4 * i + 2 * k]
            out[i, 5] = a + b
""")
    x = rng.standard_normal(64).astype(np.float32)
    (out,) = run(source, "poly", [x, Out((16, 6), np.float32)], grid=1, block=16)
    xi = x[:16]
    expected = np.zeros((16, 6), np.float32)
    expected[:, 0] = 1.0
    powers = {1: xi, 2: xi * xi, 3: (xi * xi) * xi}     # `**` multiplies, as here
    for k in range(1, 4):
        expected[:, k] = powers[k] + expected[:, k - 1]
    quads = x.reshape(16, 4)
    expected[:, 4] = ((quads[:, 0] + quads[:, 1]) + quads[:, 2]) + quads[:, 3]
    expected[:, 5] = quads[:, 0] + quads[:, 1]
    np.testing.assert_allclose(out, expected, rtol=1e-6)


VEC_KERNEL = """
@ptxpy.jit
def vsum(x: Array[f32], out: Array[f32], VEC: Const[int] = 4, N: Const[int] = 0):
    i = ptxpy.global_id()
    if VEC * i + VEC > x.shape[0]:
        return
    if VEC == 4:
        a, b, c, d = x[VEC * i:VEC * i + VEC]
        out[i] = (a + b) + (c + d)
    elif VEC == 2:
        a, b = x[VEC * i:VEC * i + VEC]
        out[i] = a + b
    else:
        out[i] = x[i]
    if N > 0:
        t = ptxpy.local_array(N, f32)       # a size of 0 would be an error: typed only for N > 0
        for k in ptxpy.static_range(N):
            t[k] = f32(k)
        out[i] += t[N - 1]
"""


@pytest.mark.parametrize("vec,n", [(4, 0), (2, 3), (1, 0)])
def test_dead_constant_branches_compile_per_specialisation(vec, n):
    from kernel_harness import compile_source

    x = rng.standard_normal(64).astype(np.float32)
    consts = {"VEC": vec, "N": n}
    (out,) = run(src(VEC_KERNEL), "vsum", [x, Out(64 // vec, np.float32)], grid=1, block=64,
                 consts=consts)
    parts = x.reshape(-1, vec)
    expected = (parts[:, 0] + parts[:, 1]) + (parts[:, 2] + parts[:, 3]) if vec == 4 else parts.sum(1)
    np.testing.assert_array_equal(out, expected.astype(np.float32) + (n - 1 if n else 0))
    ptx = compile_source(src(VEC_KERNEL), "vsum", consts).ptx
    assert ("ld.global.nc.v4.f32" in ptx) == (vec == 4) and ("ld.global.nc.v2.f32" in ptx) == (vec == 2)


RANGES = """
@ptxpy.jit
def ranges(start: T, stop: T, step: T, out: Array[i64]):
    count = 0
    total = i64(0)
    last = i64(-12345)
    for v in range(start, stop, step):
        count += 1
        total += i64(v)
        last = i64(v)
    out[0] = i64(count)
    out[1] = total
    out[2] = last
"""

_LIMITS = {t: (int(np.iinfo(t).min), int(np.iinfo(t).max)) for t in ("int8", "int32", "int64", "uint32")}
RANGE_CASES = [
    ("int32", 0, 10, 3), ("int32", 10, 0, -3), ("int32", 5, 5, 1), ("int32", 5, 5, -1),
    ("int32", 0, 5, -1), ("int32", 5, 0, 1), ("int32", 3, 9, 0), ("int32", 9, 3, 0),
    ("int32", -2**31, 2**31 - 1, 2**31 - 1), ("int32", 2**31 - 1, -2**31, -2**31),
    ("int32", 2**31 - 10, 2**31 - 1, 4), ("int32", -2**31 + 10, -2**31, -4),
    ("int32", -2**31, 2**31 - 1, 2**30 + 1), ("int32", 2**31 - 1, -2**31, -(2**30 + 1)),
    ("int8", -128, 127, 100), ("int8", 127, -128, -128), ("int8", -128, 127, -1),
    ("int8", 120, 127, 3), ("int64", -2**63, 2**63 - 1, 2**62 + 7),
    ("int64", 2**63 - 1, -2**63, -2**63), ("int64", 2**63 - 20, 2**63 - 1, 6),
    ("uint32", 0, 2**32 - 1, 2**31), ("uint32", 2**32 - 10, 2**32 - 1, 4), ("uint32", 7, 3, 1),
    ("uint32", 3, 7, 0),
]


@pytest.mark.parametrize("dtype,start,stop,step", RANGE_CASES)
def test_range_with_run_time_step_counts_exactly(dtype, start, stop, step):
    names = {"int8": "i8", "int32": "i32", "int64": "i64", "uint32": "u32"}
    source = src(RANGES.replace("T", names[dtype]))
    t = np.dtype(dtype).type
    (out,) = run(source, "ranges", [t(start), t(stop), t(step), Out(3, np.int64)], grid=1, block=1)
    values = list(range(start, stop, step)) if step else []    # a zero step: no iterations
    total = (sum(values) + 2**63) % 2**64 - 2**63                # i64 wraps
    assert out.tolist() == [len(values), total, values[-1] if values else -12345]


def test_range_with_run_time_step_tests_one_condition_per_iteration():
    from kernel_harness import compile_source
    import re

    source = src("""
@ptxpy.jit
def walk(x: Array[f32], start: i32, stop: i32, step: i32, out: Array[f32]):
    s = 0.0
    for v in range(start, stop, step):
        s += x[v]
    out[0] = s
""")
    ptx = compile_source(source, "walk").ptx
    lines = [line.strip() for line in ptx.splitlines()
             if line.strip() and not line.strip().startswith(("//", ".loc"))]
    loops = []
    for k, line in enumerate(lines):
        m = re.match(r"(\$\w+):$", line)
        if m:
            back = [j for j in range(k + 1, len(lines)) if re.search(rf"\bbra(\.uni)? {re.escape(m.group(1))};", lines[j])]
            if back:
                loops.append(lines[k:back[-1] + 1])
    assert len(loops) == 1
    assert sum(line.startswith("setp") for line in loops[0]) == 1, "\n".join(loops[0])
    assert not any(line.startswith("div") for line in loops[0])
    x = rng.standard_normal(50).astype(np.float32)
    for start, stop, step in [(0, 50, 7), (49, -1, -5), (3, 3, 2), (10, 0, 1), (0, 10, 0)]:
        (out,) = run(source, "walk", [x, np.int32(start), np.int32(stop), np.int32(step),
                                      Out(1, np.float32)], grid=1, block=1, assemble=False)
        expected = np.float32(0)
        for v in (range(start, stop, step) if step else []):
            expected = np.float32(expected + x[v])
        assert out[0] == expected


def test_tuple_assignment_to_array_elements_evaluates_all_values_first():
    source = src("""
@ptxpy.func
def divmod7(a: i32) -> tuple[i32, i32]:
    return a // 7, a % 7

@ptxpy.jit
def swaps(x: Array[f32], q: Array[i32], r: Array[i32], idx: Array[i32]):
    i = ptxpy.global_id()
    if 2 * i + 1 >= x.shape[0]:
        return
    x[2 * i], x[2 * i + 1] = x[2 * i + 1], x[2 * i]        # swap in global memory
    s = ptxpy.shared_array(64, i32)
    s[i] = i
    ptxpy.syncthreads()
    t = ptxpy.local_array(2, i32)                       # registers
    t[0], t[1] = s[i], s[31 - i]
    t[0], t[1] = t[1], t[0]
    q[i], r[i] = divmod7(t[0] * 10 + t[1])
    a, idx[i] = divmod7(i)
    j = 0
    j, idx[i + 32] = i, j                              # idx[i + 32] = the old j (0) with the new i
    idx[j + 64], j = j, 5                              # idx[i + 64] = i, then j = 5
    idx[i + 96] = a + j
""")
    x = rng.standard_normal(64).astype(np.float32)
    xs = x.copy()             # written in place by the simulator
    q, r, idx = run(source, "swaps", [xs, Out(32, np.int32), Out(32, np.int32), Out(128, np.int32)],
                    grid=1, block=32)
    np.testing.assert_array_equal(xs, x.reshape(32, 2)[:, ::-1].ravel())
    i = np.arange(32)
    value = (31 - i) * 10 + i
    np.testing.assert_array_equal(q, value // 7)
    np.testing.assert_array_equal(r, value % 7)
    np.testing.assert_array_equal(idx, np.concatenate([i % 7, np.zeros(32), i, i // 7 + 5]))


@pytest.mark.parametrize("start,stop,step", [(0, 40, 3), (40, -5, -4), (7, 7, -1), (-3, 30, 1)])
def test_range_with_run_time_step_break_and_continue(start, stop, step):
    source = src("""
@ptxpy.jit
def jumps(start: i32, stop: i32, step: i32, out: Array[i32]):
    t = ptxpy.global_id()
    acc = 0
    for v in range(start, stop, step):
        if v % 5 == t % 5:
            continue
        if v == t + 20:
            break
        acc = acc * 3 + v
    out[t] = acc
""")
    (out,) = run(source, "jumps", [np.int32(start), np.int32(stop), np.int32(step),
                                   Out(32, np.int32)], grid=1, block=32)
    expected = []
    for t in range(32):
        acc = 0
        for v in range(start, stop, step):
            if v % 5 == t % 5:
                continue
            if v == t + 20:
                break
            acc = (acc * 3 + v + 2**31) % 2**32 - 2**31
        expected.append(acc)
    np.testing.assert_array_equal(out, expected)


def test_guarded_chunks_share_one_address_with_immediate_offsets():
    """The chunks of a row kept in registers (`if j < n: x[row, j:j + 4]`, unrolled) load from
    one base address plus 4096 * k, computed once before the first guard (passes/hoist.py),
    and a short row still reads nothing past its end."""
    import re

    from kernel_harness import compile_source

    source = src("""
@ptxpy.jit
def row_scale(x: Array[f32, 2], out: Array[f32, 2]):
    row = ptxpy.block_idx.x
    t = ptxpy.thread_idx.x
    cols = x.shape[1]
    for k in ptxpy.static_range(3):
        j = (k * 32 + t) * 4
        if j < cols:
            a, b, c, d = x[row, j:j + 4]
            out[row, j:j + 4] = (a * 2.0, b * 3.0, c * 4.0, d * 5.0)
""")
    x = rng.standard_normal((3, 328)).astype(np.float32)        # the last chunk partly empty
    (out,) = run(source, "row_scale", [x, Out((3, 328), np.float32)], grid=3, block=32)
    np.testing.assert_array_equal(out, x * np.tile(np.float32([2, 3, 4, 5]), 82))
    ptx = compile_source(source, "row_scale").ptx
    loads = re.findall(r"ld\.global\.nc\.v4\.f32 \{[^}]*\}, \[(%rd\d+)(?:\+(\d+))?\]", ptx)
    assert len(loads) == 3 and len({base for base, _ in loads}) == 1, ptx
    assert sorted(int(off or 0) for _, off in loads) == [0, 512, 1024]
    # the two addresses (x's and out's) are formed once, before the first guard
    first_guard = ptx.index("bra")
    assert ptx.count("mad.wide") + ptx.count("mul.wide") == 2
    assert ptx.rindex("mad.wide") < first_guard


NAN_MIN_MAX = """
@ptxpy.jit
def clamp(a: Array[f32], b: Array[f32], d: Array[f64], e: Array[f64], h: Array[f16],
          g: Array[f16], n: Array[i32], o1: Array[f32], o2: Array[f32], o3: Array[f64],
          o4: Array[f64], o5: Array[f16], o6: Array[i32], o7: Array[f32]):
    i = ptxpy.global_id(0)
    if i < a.shape[0]:
        o1[i] = ptxpy.maximum(a[i], b[i])
        o2[i] = ptxpy.minimum(ptxpy.maximum(a[i], -1.0), 1.0)
        o3[i] = ptxpy.maximum(d[i], e[i])
        o4[i] = ptxpy.minimum(d[i], e[i])
        o5[i] = ptxpy.minimum(h[i], g[i])
        o6[i] = ptxpy.maximum(n[i], 3) + ptxpy.minimum(n[i], -2)
        o7[i] = ptxpy.maximum(math.nan, 1.0) + ptxpy.minimum(2.0, 3)
"""


def test_maximum_and_minimum_propagate_nan_as_numpy_does():
    a = np.array([np.nan, 1, -2, 3, np.nan, 0.5, 7, -5, np.inf, -np.inf], np.float32)
    b = np.array([1, np.nan, -3, 4, np.nan, -0.5, 2, 9, np.nan, 1], np.float32)
    d, e = a.astype(np.float64), b.astype(np.float64)
    h, g = a.astype(np.float16), b.astype(np.float16)
    count = np.arange(-5, 5, dtype=np.int32)
    size = a.size
    outs = run(src(NAN_MIN_MAX), "clamp",
               [a, b, d, e, h, g, count, Out(size, np.float32), Out(size, np.float32),
                Out(size, np.float64), Out(size, np.float64), Out(size, np.float16),
                Out(size, np.int32), Out(size, np.float32)], grid=1, block=32)
    expected = [np.maximum(a, b), np.minimum(np.maximum(a, np.float32(-1)), np.float32(1)),
                np.maximum(d, e), np.minimum(d, e), np.minimum(h, g),
                np.maximum(count, 3) + np.minimum(count, -2), np.full(size, np.nan, np.float32)]
    for out, want in zip(outs, expected):
        assert out.dtype == want.dtype
        np.testing.assert_array_equal(out, want)     # (NaNs in the same places)
    ptx = compile_source(src(NAN_MIN_MAX), "clamp").ptx
    assert "max.NaN.f32" in ptx and "min.NaN.f16" in ptx and "setp.nan.f64" in ptx
    assert "max.s32" in ptx and ".NaN.s32" not in ptx


def test_activemask_holds_the_lanes_running_together():
    source = src("""
@ptxpy.jit
def lanes(out: Array[u32], inner: Array[u32]):
    i = ptxpy.global_id(0)
    out[i] = ptxpy.activemask()
    if ptxpy.lane_id() < 5:
        inner[i] = ptxpy.activemask()
""")
    out, inner = run(source, "lanes", [Out(52, np.uint32), Out(52, np.uint32, init=7)],
                     grid=1, block=52)
    np.testing.assert_array_equal(out, [0xFFFFFFFF] * 32 + [0xFFFFF] * 20)
    lane = np.arange(52) % 32
    np.testing.assert_array_equal(inner, np.where(lane < 5, 0x1F, 7))
    assert "activemask.b32" in compile_source(source, "lanes").ptx


def test_lane_masks_are_the_lanes_below_at_and_above():
    source = src("""
@ptxpy.jit
def masks(lt: Array[u32], le: Array[u32], eq: Array[u32], ge: Array[u32], gt: Array[u32],
          rank: Array[i32]):
    i = ptxpy.global_id(0)
    lt[i] = ptxpy.lanemask_lt()
    le[i] = ptxpy.lanemask_le()
    eq[i] = ptxpy.lanemask_eq()
    ge[i] = ptxpy.lanemask_ge()
    gt[i] = ptxpy.lanemask_gt()
    peers = ptxpy.match_any_sync(i % 3)     # this lane's place among the lanes of its value
    rank[i] = ptxpy.popc(peers & ptxpy.lanemask_lt())
""")
    outs = run(source, "masks", [Out(52, np.uint32) for _ in range(5)] + [Out(52, np.int32)],
               grid=1, block=52)
    lane = (np.arange(52) % 32).astype(np.uint64)
    below = (np.uint64(1) << lane) - np.uint64(1)
    at = np.uint64(1) << lane
    full = np.uint64(0xFFFFFFFF)
    for out, want in zip(outs, [below, below | at, at, full & ~below, full & ~(below | at)]):
        np.testing.assert_array_equal(out, want.astype(np.uint32))
    i = np.arange(52)
    warp_start = i - i % 32
    want_rank = [np.sum((np.arange(warp_start[k], k) % 3) == k % 3) for k in i]
    np.testing.assert_array_equal(outs[5], want_rank)
    ptx = compile_source(source, "masks").ptx
    assert all(f"%lanemask_{m};" in ptx for m in ("lt", "le", "eq", "ge", "gt"))


def test_divmod_is_floor_division_and_remainder():
    source = src("""
@ptxpy.jit
def k(a: Array[i32], b: Array[i32], x: Array[f32], q: Array[i32], r: Array[i32],
      fq: Array[f32], fr: Array[f32], c: Array[i32]):
    i = ptxpy.global_id(0)
    if i < a.shape[0]:
        q[i], r[i] = divmod(a[i], b[i])
        fq[i], fr[i] = divmod(x[i], 0.75)
        s, t = divmod(17, -5)
        c[i] = s * 100 + t + divmod(a[i], 3)[1]
""")
    a = np.array([7, -7, 7, -7, 0, 100, -2147483647], np.int32)
    b = np.array([2, 2, -2, -2, 3, 7, 10], np.int32)
    x = np.array([1.6, -1.6, 3.0, -0.1, 0.75, 10, -7.5], np.float32)
    n = a.size
    q, r, fq, fr, c = run(source, "k", [a, b, x, Out(n, np.int32), Out(n, np.int32),
                                        Out(n, np.float32), Out(n, np.float32), Out(n, np.int32)],
                          grid=1, block=32)
    np.testing.assert_array_equal(q, a // b)
    np.testing.assert_array_equal(r, a % b)
    np.testing.assert_array_equal(fq, x // np.float32(0.75))
    np.testing.assert_array_equal(fr, x % np.float32(0.75))
    np.testing.assert_array_equal(c, (17 // -5) * 100 + 17 % -5 + a % 3)


def test_ndim_is_a_compile_time_constant():
    source = src("""
@ptxpy.jit
def dims(x: Array[f32, 3], out: Array[f32]):
    r = ptxpy.local_array(x.ndim, f32)
    for d in ptxpy.static_range(x.ndim):
        r[d] = f32(x.shape[d])
    for d in ptxpy.static_range(x.ndim):
        out[d] = r[d] ** x.ndim
""")
    x = np.zeros((2, 5, 7), np.float32)
    (out,) = run(source, "dims", [x, Out(3, np.float32)], grid=1, block=1)
    np.testing.assert_array_equal(out, np.array([2, 5, 7], np.float32) ** 3)
