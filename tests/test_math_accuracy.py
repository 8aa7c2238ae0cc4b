"""The accurate math library (SPEC 2.5, docs/math.md): error bounds, special values, bitcast.

Every function is compiled from a one-line kernel, assembled for sm_80 and sm_90, and run in the
simulator over about 10^6 f32 inputs (random bit patterns over all exponents, dense grids where
the function is delicate, the special values) and a smaller f64 sample against mpmath.
With PTXPY_TEST_DEVICE=gpu the same kernels run on the GPU instead (tests/kernel_harness.py):

    PTXPY_TEST_DEVICE=gpu python -m pytest -q tests/test_math_accuracy.py
"""
import math
import re

import numpy as np
import pytest

import math_accuracy_cases as cases
from kernel_harness import Out, compile_source, run
from ptxpy.transpiler.errors import CompileError

INF, NAN = math.inf, math.nan


@pytest.mark.parametrize("name", cases.FUNCTIONS)
def test_f32_error_bound_over_a_million_inputs(name):
    result = cases.measure(name, "f32")
    assert result["inputs"] >= 10 ** 6
    assert result["max_ulp"] <= cases.BOUND_ULP["f32"], (
        f"math.{name} f32: {result['max_ulp']:.3f} ulp at x={result['worst_x']!r} "
        f"y={result['worst_y']!r} (got {result['got']!r})")


@pytest.mark.parametrize("name", cases.FUNCTIONS)
def test_f64_error_bound_against_mpmath(name):
    pytest.importorskip("mpmath")
    result = cases.measure(name, "f64")
    assert result["max_ulp"] <= cases.BOUND_ULP["f64"], (
        f"math.{name} f64: {result['max_ulp']:.3f} ulp at x={result['worst_x']!r} "
        f"y={result['worst_y']!r} (got {result['got']!r})")


# --- special values, exactly (C99 Annex F; NumPy agrees) -------------------------------------
TINY32 = 2.0 ** -149          # smallest f32 subnormal
SUB32 = 2.0 ** -130           # an f32 subnormal
SPECIAL_CASES = {
    "exp": [(0.0, 1.0), (-0.0, 1.0), (INF, INF), (-INF, 0.0), (NAN, NAN), (TINY32, 1.0),
            (-TINY32, 1.0), (89.0, INF), (-104.0, 0.0), (1000.0, INF)],
    "exp2": [(0.0, 1.0), (-0.0, 1.0), (INF, INF), (-INF, 0.0), (NAN, NAN), (10.0, 1024.0),
             (-149.0, TINY32), (-130.0, SUB32), (128.0, INF), (-151.0, 0.0), (127.0, 2.0 ** 127)],
    "log": [(1.0, 0.0), (0.0, -INF), (-0.0, -INF), (-1.0, NAN), (-INF, NAN), (INF, INF),
            (NAN, NAN), (-TINY32, NAN)],
    "log2": [(1.0, 0.0), (0.0, -INF), (-0.0, -INF), (-2.0, NAN), (INF, INF), (NAN, NAN),
             (TINY32, -149.0), (SUB32, -130.0), (2.0 ** 127, 127.0), (0.5, -1.0)],
    "log10": [(1.0, 0.0), (0.0, -INF), (-0.0, -INF), (-3.0, NAN), (INF, INF), (NAN, NAN)],
    "sin": [(0.0, 0.0), (-0.0, -0.0), (INF, NAN), (-INF, NAN), (NAN, NAN), (TINY32, TINY32),
            (-SUB32, -SUB32)],
    "cos": [(0.0, 1.0), (-0.0, 1.0), (INF, NAN), (-INF, NAN), (NAN, NAN), (TINY32, 1.0)],
    "tan": [(0.0, 0.0), (-0.0, -0.0), (INF, NAN), (-INF, NAN), (NAN, NAN), (-TINY32, -TINY32),
            (SUB32, SUB32)],
    "tanh": [(0.0, 0.0), (-0.0, -0.0), (INF, 1.0), (-INF, -1.0), (NAN, NAN), (TINY32, TINY32),
             (-SUB32, -SUB32), (20.0, 1.0), (-20.0, -1.0)],
    "erf": [(0.0, 0.0), (-0.0, -0.0), (INF, 1.0), (-INF, -1.0), (NAN, NAN), (4.0, 1.0),
            (-10.0, -1.0)],
    "expm1": [(0.0, 0.0), (-0.0, -0.0), (INF, INF), (-INF, -1.0), (NAN, NAN), (TINY32, TINY32),
              (-SUB32, -SUB32), (89.0, INF), (-20.0, -1.0), (-1000.0, -1.0)],
    "log1p": [(0.0, 0.0), (-0.0, -0.0), (-1.0, -INF), (-2.0, NAN), (-INF, NAN), (INF, INF),
              (NAN, NAN), (TINY32, TINY32), (-SUB32, -SUB32)],
    "sinh": [(0.0, 0.0), (-0.0, -0.0), (INF, INF), (-INF, -INF), (NAN, NAN), (TINY32, TINY32),
             (-SUB32, -SUB32), (90.0, INF), (-90.0, -INF)],
    "cosh": [(0.0, 1.0), (-0.0, 1.0), (INF, INF), (-INF, INF), (NAN, NAN), (TINY32, 1.0),
             (90.0, INF), (-90.0, INF)],
    "asinh": [(0.0, 0.0), (-0.0, -0.0), (INF, INF), (-INF, -INF), (NAN, NAN), (TINY32, TINY32),
              (-SUB32, -SUB32)],
    "acosh": [(1.0, 0.0), (0.5, NAN), (0.0, NAN), (-1.0, NAN), (-INF, NAN), (INF, INF), (NAN, NAN)],
    "atanh": [(0.0, 0.0), (-0.0, -0.0), (1.0, INF), (-1.0, -INF), (2.0, NAN), (INF, NAN),
              (-INF, NAN), (NAN, NAN), (TINY32, TINY32), (-SUB32, -SUB32)],
    # the values at +-inf, +-1 and 0 (multiples of pi, rounded by type) in test_inverse_trig_...
    "atan": [(0.0, 0.0), (-0.0, -0.0), (NAN, NAN), (TINY32, TINY32), (-SUB32, -SUB32)],
    "asin": [(0.0, 0.0), (-0.0, -0.0), (NAN, NAN), (TINY32, TINY32), (-SUB32, -SUB32), (INF, NAN),
             (-INF, NAN), (1.5, NAN), (-1.0000001, NAN)],
    "acos": [(1.0, 0.0), (NAN, NAN), (INF, NAN), (-INF, NAN), (2.0, NAN), (-1.0000001, NAN)],
    "cbrt": [(0.0, 0.0), (-0.0, -0.0), (INF, INF), (-INF, -INF), (NAN, NAN), (1.0, 1.0), (-1.0, -1.0),
             (27.0, 3.0), (-8.0, -2.0), (2.0 ** -147, 2.0 ** -49), (-(2.0 ** 126), -(2.0 ** 42))],
    "erfc": [(0.0, 1.0), (-0.0, 1.0), (INF, 0.0), (-INF, 2.0), (NAN, NAN), (TINY32, 1.0),
             (-SUB32, 1.0), (10.1, 0.0), (-3.92, 2.0), (30.0, 0.0), (-30.0, 2.0)],
}


def _same(got, want) -> bool:
    """Equal including the sign of zero; any NaN equals any NaN."""
    if math.isnan(want):
        return math.isnan(got)
    return got == want and math.copysign(1, got) == math.copysign(1, want)


@pytest.mark.parametrize("ty", ["f32", "f64"])
@pytest.mark.parametrize("name", cases.UNARY)
def test_special_values(name, ty):
    dtype = np.float32 if ty == "f32" else np.float64
    inputs = [x for x, _ in SPECIAL_CASES[name]]
    want = [y for _, y in SPECIAL_CASES[name]]
    if ty == "f64":     # the f32 thresholds and subnormals are ordinary numbers in f64
        keep = [k for k, x in enumerate(inputs) if not math.isfinite(x) or x in (0.0, 1.0, -1.0)]
        inputs, want = [inputs[k] for k in keep], [want[k] for k in keep]
    got = cases.evaluate(name, ty, np.array(inputs, dtype))
    bad = [(x, g, w) for x, g, w in zip(inputs, got.tolist(), want) if not _same(g, w)]
    assert not bad, f"math.{name} {ty}: (x, got, want) {bad}"


def _special_pairs_as_c(name: str, ty: str, reference, is_exact):
    """math.NAME on every pair of the type's special values against NumPy's float64
    `reference` (which follows C): exactly where `is_exact(first, second, want)` says the
    result is a special one, within the bound elsewhere; returns how many were exact."""
    dtype = np.float32 if ty == "f32" else np.float64
    specials = cases.F32_SPECIALS if ty == "f32" else cases.F64_SPECIALS
    a, b = (g.ravel().astype(dtype) for g in np.meshgrid(specials, specials))
    got = cases.evaluate(name, ty, a, b)
    with np.errstate(all="ignore"):
        want = reference(a.astype(np.float64), b.astype(np.float64)).astype(dtype)
    exact = is_exact(a, b, want)
    bad = [(float(p), float(q), float(g), float(w)) for p, q, g, w in zip(a[exact], b[exact], got[exact],
                                                                        want[exact]) if not _same(g, w)]
    assert not bad, f"{name} {ty}: (first, second, got, want) {bad[:10]}"
    errors = cases.ulp_errors(got[~exact], want[~exact].astype(np.float64))
    assert errors.max() <= cases.BOUND_ULP[ty] + 0.5    # `want` is itself rounded
    return int(exact.sum())


@pytest.mark.parametrize("ty", ["f32", "f64"])
def test_pow_special_cases_as_c(ty):
    """Every pair of special values, as C's pow/powf (NumPy's float64 power follows C)."""
    _special_pairs_as_c("pow", ty, np.power,
                        lambda x, y, want: ~np.isfinite(want) | (want == 0) | (np.abs(want) == 1))


@pytest.mark.parametrize("ty", ["f32", "f64"])
def test_inverse_trigonometric_values_at_the_ends(ty):
    """atan(+-inf) = +-pi/2, asin(+-1) = +-pi/2, acos(-1) = pi, acos(+-0) = pi/2, atan(+-1) =
    +-pi/4: pi/2, pi and pi/4 rounded to the type."""
    dtype = np.float32 if ty == "f32" else np.float64
    pi = math.pi
    for name, pairs in (("atan", [(INF, pi / 2), (-INF, -pi / 2), (1.0, pi / 4), (-1.0, -pi / 4)]),
                        ("asin", [(1.0, pi / 2), (-1.0, -pi / 2)]),
                        ("acos", [(-1.0, pi), (0.0, pi / 2), (-0.0, pi / 2)])):
        got = cases.evaluate(name, ty, np.array([x for x, _ in pairs], dtype))
        want = np.array([w for _, w in pairs], dtype)
        np.testing.assert_array_equal(got, want, err_msg=f"{name} {ty}")


@pytest.mark.parametrize("ty", ["f32", "f64"])
def test_atan2_special_cases_as_c(ty):
    """Every pair of special values (signed zeros, infinities, NaN, +-1, subnormals, the largest
    numbers), as C's atan2/atan2f: atan2(+-0, +-0) = +-0 or +-pi, atan2(+-inf, +-inf) = +-pi/4
    or +-3pi/4, atan2(y, +-0) = +-pi/2, atan2(+-y, +inf) = +-0, ... (NumPy's float64 arctan2
    follows C; its results here are pi multiples, rounded once more to f32 without harm)."""
    exact = _special_pairs_as_c(
        "atan2", ty, np.arctan2,
        lambda y, x, want: (x == 0) | (y == 0) | ~np.isfinite(x) | ~np.isfinite(y) | (np.abs(x) == np.abs(y)))
    specials = cases.F32_SPECIALS if ty == "f32" else cases.F64_SPECIALS
    assert exact > len(specials) ** 2 / 3


@pytest.mark.parametrize("ty", ["f32", "f64"])
def test_hypot_special_values(ty):
    """C99 Annex F: hypot(+-inf, y) = +inf even for a NaN y, a NaN otherwise comes back,
    hypot(x, +-0) = |x|; exact on Pythagorean triples, also where the squares would overflow or
    underflow, and among the subnormals; overflow only where the result does."""
    dtype = np.float32 if ty == "f32" else np.float64
    info = np.finfo(dtype)
    top, tiny = float(info.max), float(info.smallest_subnormal)
    huge = 2.0 ** (100 if ty == "f32" else 1000)
    pairs = [((INF, NAN), INF), ((NAN, -INF), INF), ((-INF, 2.5), INF), ((0.0, INF), INF),
             ((NAN, 2.5), NAN), ((2.5, NAN), NAN), ((-7.5, 0.0), 7.5), ((0.0, -7.5), 7.5),
             ((-0.0, -0.0), 0.0), ((-tiny, 0.0), tiny), ((top, -0.0), top), ((top, 1.0), top),
             ((3.0, 4.0), 5.0), ((-5.0, 12.0), 13.0), ((3 * huge, 4 * huge), 5 * huge),
             ((3 / huge, -4 / huge), 5 / huge), ((3 * tiny, 4 * tiny), 5 * tiny),
             ((20 * tiny, 21 * tiny), 29 * tiny), ((tiny, tiny), tiny), ((top, top), INF),
             ((0.75 * top, top), INF)]
    x = np.array([p[0][0] for p in pairs], dtype)
    y = np.array([p[0][1] for p in pairs], dtype)
    with np.errstate(all="ignore"):
        want = np.array([w for _, w in pairs], dtype)
    got = cases.evaluate("hypot", ty, x, y)
    bad = [(p[0], g, w) for p, g, w in zip(pairs, got.tolist(), want.tolist()) if not _same(g, w)]
    assert not bad, f"hypot {ty}: ((x, y), got, want) {bad}"


@pytest.mark.parametrize("ty", ["f32", "f64"])
def test_cbrt_of_cubes_is_exact(ty):
    """cbrt(k^3 2^(3j)) = k 2^j exactly, subnormal cubes included, and cbrt is odd."""
    dtype = np.float32 if ty == "f32" else np.float64
    k = np.arange(1, 256 if ty == "f32" else 2 ** 17, 1 if ty == "f32" else 97, dtype=np.float64)
    j = np.arange(-49, 42) if ty == "f32" else np.arange(-358, 324)
    roots = k * np.exp2(np.random.default_rng(3).choice(j, len(k)).astype(np.float64))
    roots = np.concatenate([roots, [2.0 ** j[0], 2.0 ** j[-1], 3.0 * 2.0 ** j[0]]])
    roots = np.concatenate([roots, -roots])
    cubes = roots ** 3
    info = np.finfo(dtype)
    keep = (np.abs(cubes) <= float(info.max)) & (np.abs(cubes) >= float(info.smallest_subnormal))
    got = cases.evaluate("cbrt", ty, cubes[keep].astype(dtype))
    np.testing.assert_array_equal(got, roots[keep].astype(dtype))


@pytest.mark.parametrize("name", ["sin", "cos", "tan"])
def test_huge_arguments_reduce_exactly(name):
    """Payne-Hanek: f32 and f64 arguments up to the largest finite ones."""
    x32 = np.array([1e30, -3.4028235e38, 2.0 ** 100, 8.6e36, 1.2e15, 102944.0], np.float32)
    got32 = cases.evaluate(name, "f32", x32)
    assert cases.ulp_errors(got32, cases.NUMPY_F64[name](x32.astype(np.float64))).max() <= 0.51
    pytest.importorskip("mpmath")
    x64 = np.array([1e300, -1.7976931348623157e308, 2.0 ** 1000, 6381956970095103.0 * 2.0 ** 797,
                    5.319372648326541e255, 1e22], np.float64)
    got64 = cases.evaluate(name, "f64", x64)
    hi, rest = cases.reference_mp(name, x64, None)
    assert cases.ulp_errors(got64, hi, rest).max() <= 1.0


# --- the rest of the contract ----------------------------------------------------------------
KERNEL = """
import math
import ptxpy
from ptxpy import Array, f16, bf16, f32, f64, i32, i64, u32, u64

@ptxpy.jit
def kernel(x: Array[{ty}], y: Array[{ty}], out: Array[{ty}]):
    i = ptxpy.global_id()
    if i < x.shape[0]:
        out[i] = {expr}
"""


def _ptx(expr: str, ty: str = "f32", fast_math: bool = False) -> str:
    return compile_source(KERNEL.format(ty=ty, expr=expr), "kernel", fast_math=fast_math).ptx


def test_sqrt_and_division_are_correctly_rounded():
    ptx = _ptx("math.sqrt(x[i]) + x[i] / y[i]")
    assert "sqrt.rn.f32" in ptx and "div.rn.f32" in ptx and ".approx" not in ptx
    rng = np.random.default_rng(5)
    x = cases._random_bits(rng, 1 << 16, np.float32)
    y = cases._random_bits(rng, 1 << 16, np.float32)
    for expr, want in (("math.sqrt(x[i])", np.sqrt), ("x[i] / y[i]", np.divide)):
        (out,) = run(KERNEL.format(ty="f32", expr=expr), "kernel", [x, y, Out(len(x), np.float32)],
                     grid=256, block=256)
        with np.errstate(all="ignore"):
            expected = want(x) if expr.startswith("math") else want(x, y)
        same = (out.view(np.uint32) == expected.view(np.uint32)) | (np.isnan(out) & np.isnan(expected))
        assert same.all(), expr


@pytest.mark.parametrize("name,instruction", [("exp", "ex2.approx.f32"), ("exp2", "ex2.approx.f32"),
                                              ("log", "lg2.approx.f32"), ("log2", "lg2.approx.f32"),
                                              ("log10", "lg2.approx.f32"), ("sin", "sin.approx.f32"),
                                              ("cos", "cos.approx.f32"), ("tanh", "tanh.approx.f32")])
def test_fast_math_uses_the_hardware_approximations(name, instruction):
    fast = _ptx(f"math.{name}(x[i])", fast_math=True)
    assert instruction in fast and "fma.rn.f64" not in fast
    assert ".approx" not in _ptx(f"math.{name}(x[i])")


def test_fast_functions_and_their_f64_fallback():
    for name, instruction in (("fast_exp", "ex2"), ("fast_log", "lg2"), ("fast_sin", "sin"),
                              ("fast_cos", "cos")):
        assert f"{instruction}.approx.f32" in _ptx(f"ptxpy.{name}(x[i])")
        assert ".approx" not in _ptx(f"ptxpy.{name}(x[i])", ty="f64")   # no f64 approximation exists


def test_half_precision_math_goes_through_f32():
    x = np.array([0.5, 1.0, 2.0, -3.0, 10.0], np.float16)
    for name in ("exp", "tanh", "log"):
        (out,) = run(KERNEL.format(ty="f16", expr=f"math.{name}(x[i])"), "kernel",
                     [x, x, Out(len(x), np.float16)], grid=1, block=32)
        with np.errstate(all="ignore"):
            want = cases.NUMPY_F64[name](x.astype(np.float64)).astype(np.float16)
        np.testing.assert_array_equal(out, want)


def test_library_code_carries_the_callers_line():
    ptx = _ptx("math.sin(x[i])")
    lines = set(re.findall(r"^\s*\.loc\s+\d+\s+(\d+)", ptx, re.M))
    assert lines == {"7", "8", "9", "10"}       # the kernel's own lines, never the library's


# --- ptxpy.bitcast -----------------------------------------------------------------------------
BITCAST = """
import ptxpy
from ptxpy import Array, f16, f32, f64, i16, i32, i64, u16, u32, u64

@ptxpy.jit
def kernel(x: Array[f32], d: Array[f64], h: Array[f16], bits: Array[u32], out32: Array[f32],
           out64: Array[i64], back: Array[f64], out16: Array[i16]):
    i = ptxpy.global_id()
    if i < x.shape[0]:
        bits[i] = ptxpy.bitcast(x[i], u32)
        out32[i] = ptxpy.bitcast(ptxpy.bitcast(x[i], u32) ^ 0x80000000, f32)
        out64[i] = ptxpy.bitcast(d[i], i64)
        back[i] = ptxpy.bitcast(ptxpy.bitcast(d[i], u64) + 1, f64)
        out16[i] = ptxpy.bitcast(h[i], i16) + ptxpy.bitcast(0x3C00, i16) * 0
"""


def test_bitcast_reinterprets_bits():
    x = np.array([1.0, -2.5, np.inf, 0.0, -0.0, 3e-45], np.float32)
    d = x.astype(np.float64)
    h = x.astype(np.float16)
    n = len(x)
    bits, out32, out64, back, out16 = run(
        BITCAST, "kernel", [x, d, h, Out(n, np.uint32), Out(n, np.float32), Out(n, np.int64),
                            Out(n, np.float64), Out(n, np.int16)], grid=1, block=32)
    np.testing.assert_array_equal(bits, x.view(np.uint32))
    np.testing.assert_array_equal(out32.view(np.uint32), x.view(np.uint32) ^ np.uint32(0x80000000))
    np.testing.assert_array_equal(out64, d.view(np.int64))
    np.testing.assert_array_equal(back.view(np.uint64), d.view(np.uint64) + np.uint64(1))
    np.testing.assert_array_equal(out16, h.view(np.int16))


@pytest.mark.parametrize("expr,message", [
    ("ptxpy.bitcast(x[i], u64)", "from f32 (32 bits) to u64 (64 bits): the widths must be equal"),
    ("ptxpy.bitcast(x[i], bool)", "must be a numeric scalar type"),
    ("ptxpy.bitcast(x[i], 3)", "must be a numeric scalar type"),
    ("ptxpy.bitcast(x[i] > 0, i32)", "needs a number, got bool"),
    ("ptxpy.bitcast(x[i])", "takes 2 arguments"),
    ("ptxpy._rint(x[i])", "ptxpy has no attribute '_rint'"),
])
def test_bitcast_errors_are_located(expr, message):
    source = KERNEL.format(ty="f32", expr=f"f32({expr})")
    with pytest.raises(CompileError) as err:
        compile_source(source, "kernel")
    text = str(err.value)
    assert message in text and "kernels.py:10:" in text, text


def test_bitcast_on_the_host_is_a_clear_error():
    import ptxpy

    with pytest.raises(ptxpy.KernelOnlyError):
        ptxpy.bitcast(1.0, ptxpy.u32)


# --- bit-for-bit agreement -------------------------------------------------------------------
@pytest.mark.parametrize("ty", ["f32", "f64"])
def test_nan_arguments_come_back_unchanged(ty):
    """A NaN argument is the result, bits and all (quiet or signalling, any payload)."""
    if ty == "f32":
        bits = np.array([0x7FC12345, 0xFFC00001, 0x7F812345], np.uint32)
    else:
        bits = np.array([0x7FF8000012345678, 0xFFF8000000000001, 0x7FF0000000000ABC], np.uint64)
    x = bits.view(np.float32 if ty == "f32" else np.float64)
    for name in cases.FUNCTIONS:
        got = cases.evaluate(name, ty, x, np.full_like(x, 2.5) if name in cases.BINARY else None)
        np.testing.assert_array_equal(got.view(bits.dtype), bits, err_msg=name)


def test_constant_arguments_fold_to_the_run_time_result():
    """The compiler folds math.NAME(constant) with its IR interpreter: the same bits as the
    compiled code computes at run time."""
    calls = [f"math.{name}(f32({c!r}))" for name in ("exp", "log", "sin", "erf")
             for c in (0.3, -2.5, 75.0)]
    folded = [f"    out[{k}] = {call}" for k, call in enumerate(calls)]
    computed = [f"    out[{k + len(calls)}] = {call.replace('f32(', 'f32(x[0] * ')}"
                for k, call in enumerate(calls)]
    source = ("import math\nimport ptxpy\nfrom ptxpy import Array, f32\n\n@ptxpy.jit\n"
              "def kernel(x: Array[f32], out: Array[f32]):\n" + "\n".join(folded + computed) + "\n")
    (out,) = run(source, "kernel", [np.ones(1, np.float32), Out(2 * len(calls), np.float32)],
                 grid=1, block=1)
    n = len(calls)
    same = (out[:n].view(np.uint32) == out[n:].view(np.uint32)) | (np.isnan(out[:n]) & np.isnan(out[n:]))
    assert same.all(), [calls[k] for k in np.flatnonzero(~same)]


def test_simulated_f64_fma_is_exact_for_tiny_products():
    """The library's error terms use fma on tiny values; the simulator must round them as the
    GPU does (once), also where its fast emulation does not apply."""
    from fractions import Fraction

    rng = np.random.default_rng(7)
    a, b = rng.standard_normal(256) * 1e-160, rng.standard_normal(256) * 1e-160
    c = rng.standard_normal(256) * 1e-310
    source = KERNEL.format(ty="f64", expr="ptxpy.fma(x[i], y[i], x[i + 256])").replace(
        "if i < x.shape[0]", "if i < 256")
    (out,) = run(source, "kernel", [np.concatenate([a, c]), b, Out(512, np.float64)], grid=2, block=256)
    exact = [float(Fraction(p) * Fraction(q) + Fraction(r)) for p, q, r in zip(a, b, c)]
    np.testing.assert_array_equal(out[:256], exact)


def test_each_library_function_is_read_alone_as_from_the_whole_file():
    """`mathlib` reads, for one function, only the names it reaches (imports, functions,
    constants). For every function of ptxpy/libm.py that parse finds everything (no fall back
    to the whole file) and types exactly as the whole file's parse does."""
    import ast

    from ptxpy.transpiler import mathlib, typed

    source = mathlib.library_source()
    tree = ast.parse(source)
    names = [s.name for s in tree.body if isinstance(s, ast.FunctionDef)]
    assert len(names) > 30
    for name in names:
        alone = mathlib._typed(source, name, mathlib._needed_names(tree, name))
        whole = mathlib._typed(source, name, None)
        assert sorted(alone[1]) == sorted(whole[1]), name
        for callee in whole[1]:
            assert typed.format_func(alone[1][callee]) == typed.format_func(whole[1][callee]), callee
