"""Accuracy of the math library (docs/math.md): inputs, references, ulp errors, the kernels.

Shared by tests/test_math_accuracy.py (which asserts the bounds) and benchmarks/math_accuracy.py
(which prints the table of docs/math.md). Each function is compiled as a one-line elementwise
kernel, assembled for sm_80 and sm_90 and run in the simulator, or on the GPU when
PTXPY_TEST_DEVICE=gpu (tests/kernel_harness.py).

f32 results are compared with a float64 reference (NumPy, SciPy's erf), whose own error is far
below an f32 ulp; f64 results with mpmath at 40 digits. The error of a result y for the exact
value v is |y - v| / ulp(v), ulp(v) being the spacing of the format's numbers at |v| (the
subnormal spacing below the smallest normal); a result that overflowed to inf counts as 2^128
(f32) or 2^1024 (f64).
"""
from __future__ import annotations

import math
import os

import numpy as np

from kernel_harness import Out, run

UNARY = ("exp", "exp2", "log", "log2", "log10", "sin", "cos", "tan", "tanh", "erf",
         "expm1", "log1p", "sinh", "cosh", "asinh", "acosh", "atanh",
         "cbrt", "erfc",
         "atan", "asin", "acos")
BINARY = ("pow", "hypot", "atan2")
FUNCTIONS = UNARY + BINARY
#: the stated bounds in ulp (docs/math.md); the tests assert them
BOUND_ULP = {"f32": 2.0, "f64": 2.0}
F32_TINY, F32_MAX = np.float32(2.0 ** -126), np.finfo(np.float32).max
F32_SPECIALS = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 2.0 ** -149, -(2.0 ** -149),
                         2.0 ** -126 - 2.0 ** -149, 2.0 ** -126, -(2.0 ** -126), F32_MAX, -F32_MAX,
                         1.0, -1.0, 0.5, 2.0, -2.0, 3.0, -3.0, 0.25, 10.0, 100.0],
                        dtype=np.float32)
F64_SPECIALS = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, -5e-324, 2.0 ** -1022,
                         -(2.0 ** -1022), 2.2250738585072009e-308, np.finfo(np.float64).max,
                         -np.finfo(np.float64).max, 1.0, -1.0, 0.5, 2.0, -2.0, 3.0, -3.0, 0.25,
                         10.0, 100.0])

SOURCE = """
import math
import ptxpy
from ptxpy import Array, {ty}

@ptxpy.jit
def kernel(x: Array[{ty}], y: Array[{ty}], out: Array[{ty}]):
    i = ptxpy.global_id()
    if i < x.shape[0]:
        out[i] = math.{call}
"""
BLOCK = 256


def device() -> str:
    return "gpu" if os.environ.get("PTXPY_TEST_DEVICE") == "gpu" else "simulator"


def evaluate(name: str, ty: str, x: np.ndarray, y: np.ndarray | None = None,
             assemble: bool = True) -> np.ndarray:
    """math.NAME on every element, compiled for `ty` and run (simulator, or the GPU)."""
    call = f"{name}(x[i], y[i])" if name in BINARY else f"{name}(x[i])"
    source = SOURCE.format(ty=ty, call=call)
    y = x if y is None else y
    n = len(x)
    (out,) = run(source, "kernel", [x, y, Out(n, x.dtype)], grid=max(1, -(-n // BLOCK)),
                 block=BLOCK, assemble=assemble)
    return out


# --- inputs ------------------------------------------------------------------------------------
def _random_bits(rng, count: int, dtype) -> np.ndarray:
    """Uniformly random bit patterns: every exponent (and some inf/nan) equally often."""
    width = np.dtype(dtype).itemsize
    raw = rng.integers(0, 2 ** (8 * width), size=count, dtype=np.uint64 if width == 8 else np.uint32)
    return raw.view(dtype)


def _log_uniform(rng, count: int, lo_exp: float, hi_exp: float, dtype, signed=True) -> np.ndarray:
    values = np.exp2(rng.uniform(lo_exp, hi_exp, count))
    if signed:
        values *= rng.choice([-1.0, 1.0], count)
    return values.astype(dtype)


def _around(values, count_each: int, dtype) -> np.ndarray:
    """The `count_each` consecutive floats of `dtype` centred on each value."""
    udtype = np.uint32 if np.dtype(dtype).itemsize == 4 else np.uint64
    out = []
    for v in np.asarray(values, dtype):
        bits = np.array([v], dtype).view(udtype)[0]
        steps = np.arange(count_each, dtype=np.int64) - count_each // 2
        out.append((bits.astype(np.int64) + steps).astype(udtype).view(dtype))
    return np.concatenate(out)


def _near_multiples_of_pi_over_2(k: np.ndarray, dtype, each: int = 4) -> np.ndarray:
    """The `each` floats nearest to k pi/2 for every k (where the reduction cancels most)."""
    centres = (np.asarray(k, np.float64) * (math.pi / 2)).astype(dtype)
    centres = centres[np.isfinite(centres)]
    udtype = np.uint32 if np.dtype(dtype).itemsize == 4 else np.uint64
    bits = centres.view(udtype).astype(np.int64)
    steps = np.arange(each) - each // 2
    return (bits[:, None] + steps[None, :]).astype(udtype).view(dtype).ravel()


def _interesting_f32(name: str, rng) -> list:
    f = np.float32
    uni = lambda lo, hi, n: rng.uniform(lo, hi, n).astype(f)   # noqa: E731
    if name == "exp":
        return [uni(-104, 89, 1 << 18), uni(-1, 1, 1 << 17),
                _around([88.72283, -87.33654, -103.27893, -103.97208], 4096, f)]
    if name == "exp2":
        return [uni(-151, 129, 1 << 18), uni(-1, 1, 1 << 17),
                _around([128.0, -126.0, -149.0, -150.0], 4096, f), np.arange(-160, 140).astype(f)]
    if name in ("log", "log2", "log10"):
        powers = np.concatenate([np.exp2(np.arange(-149, 128)), 10.0 ** np.arange(-45, 39)]).astype(f)
        return [uni(0.5, 2, 1 << 18), _log_uniform(rng, 1 << 18, -149, 128, f, signed=False),
                _around([1.0], 1 << 16, f), powers]
    if name in ("sin", "cos", "tan"):
        # every multiple of pi/2 that the f32 Cody-Waite reduction handles, then random ones
        return [uni(-10, 10, 1 << 17), uni(-1e4, 1e4, 1 << 16),
                _log_uniform(rng, 1 << 16, -30, 128, f),
                _near_multiples_of_pi_over_2(np.arange(1, 1 << 16), f, 4),
                _near_multiples_of_pi_over_2(np.floor(np.exp2(rng.uniform(16, 100, 1 << 14))), f),
                _around([math.pi / 4, 3 * math.pi / 4, 1.0e30, 102944.0], 4096, f)]
    if name == "tanh":
        return [uni(-10, 10, 1 << 18), uni(-1, 1, 1 << 17), _log_uniform(rng, 1 << 16, -30, 5, f),
                _around([0.55, 9.01, 0.001], 4096, f)]
    if name == "erf":
        return [uni(-6, 6, 1 << 18), uni(-1, 1, 1 << 17), _log_uniform(rng, 1 << 16, -30, 3, f),
                _around([1.0, 2.0, 3.92, 0.84375], 4096, f)]
    # expm1 sinh cosh: the k = 0 / k != 0 switch (ln(2)/2), the switch to e^x (k = 30, k = 16),
    # the series cut-offs (2^-25, 2^-12), overflow; log1p asinh acosh atanh: near -1 and 1, the
    # series cut-off 2^-12, the switch to ln(2x) at 2^12, the reduction's sqrt(2)
    near = lambda centre, side, lo_exp, hi_exp, n: (centre + side * _log_uniform(   # noqa: E731
        rng, n, lo_exp, hi_exp, np.float64, signed=False)).astype(f)
    if name == "expm1":
        return [uni(-20, 89, 1 << 18), uni(-1, 1, 1 << 17), _log_uniform(rng, 1 << 16, -30, 6.5, f),
                _around([0.34657359, -0.34657359, 1.0397208, 21.14, 88.72283, -18.0, 2.0 ** -25,
                         2.0 ** -12], 4096, f)]
    if name in ("sinh", "cosh"):
        return [uni(-90, 90, 1 << 18), uni(-1, 1, 1 << 17), _log_uniform(rng, 1 << 16, -30, 6.5, f),
                _around([89.415985, -89.415985, 0.34657359, 11.437, 2.0 ** -12], 4096, f)]
    if name == "log1p":
        return [uni(-1, 2, 1 << 18), _log_uniform(rng, 1 << 18, -30, 128, f, signed=False),
                _log_uniform(rng, 1 << 16, -30, -1, f), near(-1.0, 1, -24, -1, 1 << 16),
                _around([-1.0, 2.0 ** -12, -(2.0 ** -12), 0.41421357, -0.29289323, 2.0 ** 24], 4096, f)]
    if name == "asinh":
        return [uni(-10, 10, 1 << 18), _log_uniform(rng, 1 << 18, -30, 128, f),
                _around([4096.0, -4096.0, 2.0 ** -12, 1.0], 4096, f)]
    if name == "acosh":
        return [near(1.0, 1, -23, 2, 1 << 18), _log_uniform(rng, 1 << 18, 0, 128, f, signed=False),
                _around([1.0, 4096.0, 1.4142135], 4096, f)]
    if name == "atanh":
        return [uni(-1, 1, 1 << 18), _log_uniform(rng, 1 << 17, -30, 0, f), near(1.0, -1, -24, -1, 1 << 16),
                near(-1.0, 1, -24, -1, 1 << 16), _around([1.0, -1.0, 2.0 ** -12, 0.5, 0.17], 4096, f)]
    if name == "cbrt":      # every exponent, the perfect cubes k^3 2^(3j) (exact results)
        cubes = np.outer(np.arange(1, 257.0) ** 3, np.exp2(3.0 * np.arange(-49, 35))).ravel()
        return [uni(-10, 10, 1 << 18), _log_uniform(rng, 1 << 18, -149, 128, f), cubes.astype(f),
                -cubes[::7].astype(f), _around([1.0, 2.0, 4.0, 8.0, 2.0 ** -126, 2.0 ** -147], 4096, f)]
    if name == "erfc":      # the switches at 15/32 and 2, subnormal results, 2 and 0 from -3.92, 10.1
        return [uni(-4, 10.2, 1 << 18), uni(-1, 1, 1 << 17), uni(8.5, 10.2, 1 << 16),
                _log_uniform(rng, 1 << 16, -30, 1, f),
                _around([0.46875, -0.46875, 2.0, -2.0, 3.92, -3.92, 9.19, 10.05, 10.1], 4096, f)]
    if name == "atan":      # the breakpoints of the reduction, tiny and huge arguments
        return [uni(-4, 4, 1 << 18), _log_uniform(rng, 1 << 18, -149, 128, f),
                _around([0.4375, 0.6875, 1.1875, 2.4375, -0.4375, -2.4375, 2.0 ** 30, 2.0 ** -12], 4096, f)]
    if name in ("asin", "acos"):    # the switch at 1/2, next to +-1, tiny arguments
        return [uni(-1, 1, 1 << 18), _log_uniform(rng, 1 << 17, -149, 0, f), near(1.0, -1, -24, -1, 1 << 16),
                near(-1.0, 1, -24, -1, 1 << 16), _around([0.5, -0.5, 1.0, -1.0, 2.0 ** -12], 4096, f)]
    raise KeyError(name)


def f32_inputs(name: str, count: int = 1 << 20, seed: int = 0):
    """About `count` f32 inputs for math.NAME (x, and y for pow): random bit patterns, dense
    grids where the function is delicate, and the special values."""
    rng = np.random.default_rng(seed)
    if name in BINARY:
        return BINARY_INPUTS[name](rng, count, np.float32, 128)
    parts = _interesting_f32(name, rng)
    parts.append(F32_SPECIALS)
    used = sum(len(p) for p in parts)
    parts.insert(0, _random_bits(rng, max(count - used, 1 << 16), np.float32))
    return np.concatenate(parts), None


def _pow_inputs(rng, count: int, dtype, max_exp: int):
    quarter = count // 4
    x_any = _log_uniform(rng, quarter, -max_exp, max_exp, dtype, signed=False)
    y_any = rng.uniform(-60, 60, quarter).astype(dtype) if max_exp < 200 else \
        rng.uniform(-600, 600, quarter).astype(dtype)
    x_near1 = (1 + rng.uniform(-1e-2, 1e-2, quarter)).astype(dtype)
    y_big = _log_uniform(rng, quarter, 0, 17 if max_exp < 200 else 30, dtype)
    x_neg = -_log_uniform(rng, quarter, -8, 8, dtype, signed=False)
    y_int = np.round(rng.uniform(-40, 40, quarter)).astype(dtype)
    x_bits = _random_bits(rng, quarter, dtype)
    y_bits = _random_bits(rng, quarter, dtype)
    specials = F32_SPECIALS if dtype == np.float32 else F64_SPECIALS
    sx, sy = np.meshgrid(specials, specials)
    x = np.concatenate([x_any, x_near1, x_neg, x_bits, sx.ravel()]).astype(dtype)
    y = np.concatenate([y_any, y_big, y_int, y_bits, sy.ravel()]).astype(dtype)
    return x, y


#: the (x, y) inputs of each function of two arguments: (rng, count, dtype, max_exp) -> (x, y)
def _hypot_inputs(rng, count: int, dtype, max_exp: int):
    """hypot: both arguments over every exponent (subnormals included), ratios near 1 (where
    x^2 + y^2 must be carried exactly), very different magnitudes, results near overflow and
    among the subnormals, Pythagorean triples, random bits and every pair of special values."""
    info = np.finfo(dtype)
    lo_exp, hi_exp = info.minexp - info.nmant, info.maxexp        # -149, 128 / -1074, 1024
    part = count // 5
    wide = lambda lo, hi: _log_uniform(rng, part, lo, hi, np.float64)     # noqa: E731
    sign = lambda: rng.choice([-1.0, 1.0], part)                           # noqa: E731
    x_any, y_any = wide(lo_exp, hi_exp), wide(lo_exp, hi_exp)
    x_near = wide(lo_exp + 2, hi_exp - 1)
    y_near = x_near * rng.uniform(0.5, 1.0, part) * sign()
    x_far = wide(lo_exp + 60, hi_exp)
    y_far = x_far * np.exp2(-rng.uniform(0, 2 * info.nmant + 8, part)) * sign()
    x_edge = np.concatenate([wide(hi_exp - 2, hi_exp)[: part // 2], wide(lo_exp, info.minexp + 2)[: part // 2]])
    y_edge = x_edge * rng.uniform(0.0, 1.0, len(x_edge)) * rng.choice([-1.0, 1.0], len(x_edge))
    triples = np.array([(3, 4), (5, 12), (8, 15), (7, 24), (20, 21), (65, 72)], np.float64)
    powers = np.exp2(np.arange(lo_exp, hi_exp - 8, 37))
    tx, ty = (np.outer(triples[:, k], powers).ravel() for k in (0, 1))
    specials = F32_SPECIALS if dtype == np.float32 else F64_SPECIALS
    sx, sy = np.meshgrid(specials, specials)
    with np.errstate(all="ignore"):
        x = np.concatenate([x_any, x_near, x_far, x_edge, tx, _random_bits(rng, part, dtype).astype(np.float64),
                            sx.ravel()]).astype(dtype)
        y = np.concatenate([y_any, y_near, y_far, y_edge, ty, _random_bits(rng, part, dtype).astype(np.float64),
                            sy.ravel()]).astype(dtype)
    return x, y


def _atan2_inputs(rng, count: int, dtype, max_exp: int):
    """atan2(y, x): every quadrant (random signs throughout), both over every exponent (so
    tiny and huge ratios, subnormals, results that underflow), ratios near atan2_*'s switches
    (2^-40 / 2^-20, 7/16, 11/16, 1) at every scale, around the scaling thresholds, random bits
    and every pair of special values."""
    info = np.finfo(dtype)
    lo_exp, hi_exp = info.minexp - info.nmant, info.maxexp
    part = count // 5
    wide = lambda n: _log_uniform(rng, n, lo_exp, hi_exp, np.float64)       # noqa: E731
    sign = lambda n: rng.choice([-1.0, 1.0], n)                              # noqa: E731
    x_any, y_any = wide(part), wide(part)
    x_near = wide(part)
    ratios = np.array([7 / 16, 11 / 16, 1.0, 2.0 ** -40, 2.0 ** -20])
    ratio = rng.choice(ratios, part) * (1 + rng.uniform(-2.0 ** -12, 2.0 ** -12, part))
    x_far = _log_uniform(rng, part, -60, 60, np.float64)
    with np.errstate(all="ignore"):
        y_near = x_near * np.where(rng.random(part) < 0.5, ratio, 1 / ratio) * sign(part)
        y_far = x_far * np.exp2(rng.uniform(-2 * hi_exp, 2 * hi_exp, part)) * sign(part)
    edges = np.array([2.0 ** 1000, 2.0 ** -900] if dtype == np.float64 else [2.0 ** 100, 2.0 ** -40])
    x_edge = rng.choice(edges, part) * np.exp2(rng.uniform(-1, 1, part)) * sign(part)
    y_edge = x_edge * _log_uniform(rng, part, -45, 0, np.float64)
    specials = F32_SPECIALS if dtype == np.float32 else F64_SPECIALS
    sy, sx = np.meshgrid(specials, specials)
    with np.errstate(all="ignore"):
        y = np.concatenate([y_any, y_near, y_far, y_edge, _random_bits(rng, part, dtype).astype(np.float64),
                            sy.ravel()]).astype(dtype)
        x = np.concatenate([x_any, x_near, x_far, x_edge, _random_bits(rng, part, dtype).astype(np.float64),
                            sx.ravel()]).astype(dtype)
    if dtype == np.float64:     # mpmath has no -0 (atan2(-0, x < 0) = -pi): zero y is tested exactly
        x, y = x[y != 0], y[y != 0]
    return y, x         # atan2's first argument is the kernel's x


BINARY_INPUTS = {"pow": _pow_inputs, "hypot": _hypot_inputs, "atan2": _atan2_inputs}


def f64_inputs(name: str, count: int = 40000, seed: int = 1):
    """A smaller f64 sample (the mpmath reference is slow)."""
    rng = np.random.default_rng(seed)
    if name in BINARY:
        return BINARY_INPUTS[name](rng, count, np.float64, 1000)
    d = np.float64
    uni = lambda lo, hi, n: rng.uniform(lo, hi, n)   # noqa: E731
    part = count // 4
    ranges = {
        "exp": [uni(-746, 710, part), uni(-1, 1, part), _around([709.782712893384, -708.39641853226408,
                                                              -745.1332191019411], 64, d)],
        "exp2": [uni(-1080, 1030, part), uni(-1, 1, part), _around([1024.0, -1022.0, -1074.0], 64, d)],
        "log": [uni(0.5, 2, part), _log_uniform(rng, part, -1074, 1024, d, signed=False),
                _around([1.0], 512, d)],
        "sin": [uni(-10, 10, part), _log_uniform(rng, part, -30, 1024, d),
                _near_multiples_of_pi_over_2(np.floor(np.exp2(rng.uniform(0, 20, 1000))), d),
                _near_multiples_of_pi_over_2(np.floor(np.exp2(rng.uniform(20, 60, 500))), d)],
        "tanh": [uni(-20, 20, part), uni(-1, 1, part), _log_uniform(rng, part // 4, -40, 5, d)],
        "erf": [uni(-6, 6, part), uni(-1, 1, part), _log_uniform(rng, part // 4, -40, 3, d),
                _around([1.0, 2.0, 5.9215871957945073], 64, d)],
        "expm1": [uni(-40, 710, part), uni(-1, 1, part), _log_uniform(rng, part // 4, -60, 5, d),
                  _around([709.782712893384, 0.34657359027997264, -0.34657359027997264, -38.0, 41.94,
                           2.0 ** -54], 64, d)],
        "sinh": [uni(-711, 711, part), uni(-1, 1, part), _log_uniform(rng, part // 4, -60, 5, d),
                 _around([710.4758600739439, -710.4758600739439, 23.913, 2.0 ** -26], 64, d)],
        "log1p": [uni(-1, 2, part), _log_uniform(rng, part, -60, 1024, d, signed=False),
                  -1.0 + _log_uniform(rng, part // 4, -53, -1, d, signed=False),
                  _log_uniform(rng, part // 4, -56, -1, d),
                  _around([-1.0, 2.0 ** -54, -(2.0 ** -54), 2.0 ** -53, 0.41421356237309503], 64, d)],
        "asinh": [uni(-10, 10, part), _log_uniform(rng, part, -60, 1024, d),
                  _around([2.0 ** 28, -(2.0 ** 28), 2.0 ** -26, 1.0], 64, d)],
        "acosh": [1.0 + _log_uniform(rng, part, -52, 2, d, signed=False),
                  _log_uniform(rng, part, 0, 1024, d, signed=False), _around([1.0, 2.0 ** 28], 64, d)],
        "atanh": [uni(-1, 1, part), _log_uniform(rng, part, -60, 0, d),
                  1.0 - _log_uniform(rng, part // 4, -53, -1, d, signed=False),
                  _around([1.0, -1.0, 2.0 ** -27, 0.5], 64, d)],
        "cbrt": [uni(-10, 10, part), _log_uniform(rng, part, -1074, 1024, d),
                 np.floor(np.exp2(rng.uniform(0, 17, 2000))) ** 3 * np.exp2(3.0 * rng.integers(-358, 324, 2000)),
                 -np.arange(1.0, 300.0) ** 3, np.exp2(np.arange(-1074, 1024, 7.0)),
                 _around([1.0, 8.0, 2.0 ** -1022, 2.0 ** -1073], 64, d)],
        "erfc": [uni(-6, 27.4, part), uni(-1, 1, part), uni(25, 27.4, part // 4),
                 _log_uniform(rng, part // 4, -60, 1, d),
                 _around([0.46875, -0.46875, 2.0, -2.0, 5.92, -5.92, 26.55, 27.2262, 27.3], 64, d)],
        "atan": [uni(-4, 4, part), _log_uniform(rng, part, -1074, 1024, d),
                 _around([0.4375, 0.6875, 1.1875, 2.4375, -2.4375, 2.0 ** 64, 2.0 ** -27], 64, d)],
        "asin": [uni(-1, 1, part), _log_uniform(rng, part, -1074, 0, d),
                 1.0 - _log_uniform(rng, part // 4, -53, -1, d, signed=False),
                 -1.0 + _log_uniform(rng, part // 4, -53, -1, d, signed=False),
                 _around([0.5, -0.5, 1.0, -1.0], 64, d)],
    }
    for alias, base in (("log2", "log"), ("log10", "log"), ("cos", "sin"), ("tan", "sin"),
                        ("cosh", "sinh"), ("acos", "asin")):
        ranges[alias] = ranges[base]
    parts = ranges[name] + [F64_SPECIALS]
    used = sum(len(p) for p in parts)
    parts.insert(0, _random_bits(rng, max(count - used, 256), np.float64))
    return np.concatenate(parts), None


# --- references --------------------------------------------------------------------------------
def _erf64(x: np.ndarray) -> np.ndarray:
    try:
        from scipy.special import erf
        return erf(x)
    except ImportError:
        return np.vectorize(math.erf, otypes=[np.float64])(x)


def _erfc64(x: np.ndarray) -> np.ndarray:
    try:
        from scipy.special import erfc
        return erfc(x)
    except ImportError:
        return np.vectorize(math.erfc, otypes=[np.float64])(x)


NUMPY_F64 = {"exp": np.exp, "exp2": np.exp2, "log": np.log, "log2": np.log2, "log10": np.log10,
             "sin": np.sin, "cos": np.cos, "tan": np.tan, "tanh": np.tanh, "erf": _erf64,
             "pow": np.power,
             "expm1": np.expm1, "log1p": np.log1p, "sinh": np.sinh, "cosh": np.cosh,
             "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh,
             "hypot": np.hypot, "cbrt": np.cbrt, "erfc": _erfc64,
             "atan": np.arctan, "asin": np.arcsin, "acos": np.arccos, "atan2": np.arctan2}


def reference_f64_of_f32(name: str, x: np.ndarray, y: np.ndarray | None) -> np.ndarray:
    """The float64 value of math.NAME at f32 arguments (within 1e-15 relative of exact)."""
    with np.errstate(all="ignore"):
        x64 = x.astype(np.float64)
        if name in BINARY:
            return NUMPY_F64[name](x64, y.astype(np.float64))
        return NUMPY_F64[name](x64)


def mp_functions() -> dict:
    """math.NAME in mpmath, for each function."""
    import mpmath as mp

    return {"exp": mp.exp, "exp2": lambda v: mp.power(2, v), "log": mp.log, "log2": lambda v: mp.log(v, 2),
            "log10": mp.log10, "sin": mp.sin, "cos": mp.cos, "tan": mp.tan, "tanh": mp.tanh,
            "erf": mp.erf, "pow": mp.power,
            "expm1": mp.expm1, "log1p": mp.log1p, "sinh": mp.sinh, "cosh": mp.cosh,
            "asinh": mp.asinh, "acosh": mp.acosh, "atanh": mp.atanh,
            "hypot": mp.hypot, "cbrt": lambda v: mp.sign(v) * mp.cbrt(abs(v)), "erfc": mp.erfc,
            "atan": mp.atan, "asin": mp.asin, "acos": mp.acos, "atan2": mp.atan2}


def reference_mp(name: str, x: np.ndarray, y: np.ndarray | None) -> tuple:
    """math.NAME at f64 arguments by mpmath (40 digits), as the nearest double and the rest.
    Where NumPy's float64 result is not a finite nonzero number (special cases, overflow,
    underflow) that result is the reference."""
    import mpmath as mp

    mp.mp.dps = 40
    fns = mp_functions()
    hi = reference_f64_of_f32(name, x, y)
    rest = np.zeros(len(x))          # (exact - hi) / ulp(hi): exact even below the subnormals
    args = [x] if y is None else [x, y]
    regular = np.isfinite(hi) & (hi != 0) & np.all([np.isfinite(a) for a in args], axis=0)
    for i in np.flatnonzero(regular):
        exact = fns[name](*[mp.mpf(float(a[i])) for a in args])
        hi[i] = float(exact)
        if np.isfinite(hi[i]):
            rest[i] = float((exact - mp.mpf(hi[i])) / mp.mpf(float(_ulp(np.array([hi[i]]))[0])))
    return hi, rest


# --- errors ------------------------------------------------------------------------------------
def _ulp(exact: np.ndarray, dtype=np.float64) -> np.ndarray:
    """The spacing of `dtype`'s numbers at |exact| (the subnormal spacing below the normals),
    in extended precision (2^1024 is representable there)."""
    info = np.finfo(dtype)
    _, exponent = np.frexp(exact.astype(np.longdouble))
    return np.exp2((np.maximum(exponent - 1, info.minexp) - info.nmant).astype(np.longdouble))


def ulp_errors(got: np.ndarray, exact: np.ndarray, exact_rest=None) -> np.ndarray:
    """|got - exact| in ulps of got's format at |exact|; `exact_rest` is what the exact value
    exceeds `exact` by, in those ulps. 0 where both are the same infinity or both NaN, inf
    where only one is NaN; an infinite result counts as 2^(maximum exponent + 1)."""
    info = np.finfo(got.dtype)
    wide = np.longdouble        # x87 extended: 2^1024 and f64 differences are exact in it
    top = wide(2) ** info.maxexp
    with np.errstate(all="ignore"):      # signalling NaNs among the random bit patterns
        g = got.astype(wide)
        e = exact.astype(wide)
    rest = np.zeros(len(e), wide) if exact_rest is None else np.asarray(exact_rest).astype(wide)
    with np.errstate(all="ignore"):
        g_cap = np.where(np.isinf(g), np.copysign(top, g), g)
        e_cap = np.clip(e, -top, top)
        err = np.abs((g_cap - e_cap) / _ulp(e_cap, got.dtype) - rest).astype(np.float64)
    both_nan = np.isnan(g) & np.isnan(e)
    err = np.where(both_nan, 0.0, err)
    err = np.where(np.isnan(g) != np.isnan(e), np.inf, err)
    return np.where(~both_nan & np.isinf(e) & (g == e), 0.0, err)


def measure(name: str, ty: str, assemble: bool = True) -> dict:
    """Run math.NAME on its inputs; the largest error in ulp, where, and how many inputs."""
    if ty == "f32":
        x, y = f32_inputs(name)
        got = evaluate(name, ty, x, y, assemble)
        errors = ulp_errors(got, reference_f64_of_f32(name, x, y))
    else:
        x, y = f64_inputs(name)
        got = evaluate(name, ty, x, y, assemble)
        hi, lo = reference_mp(name, x, y)
        errors = ulp_errors(got, hi, lo)
    worst = int(np.argmax(errors))
    return {"function": name, "type": ty, "inputs": len(x), "max_ulp": float(errors[worst]),
            "worst_x": float(x[worst]), "worst_y": None if y is None else float(y[worst]),
            "got": float(got[worst]), "device": device(), "x": x, "y": y, "result": got,
            "errors": errors}
