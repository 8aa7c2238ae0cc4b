"""math.ldexp and math.frexp in kernels: checked against Python's math module (and NumPy) on
special values, subnormals and exponents far outside the type's range, in the simulator (and on
the GPU with PTXPY_TEST_DEVICE=gpu); the IR interpreter, module constants and errors too."""
import math

import ml_dtypes
import numpy as np
import pytest

from kernel_harness import Out, compile_source, run
from ptxpy.transpiler import driver, interp
from ptxpy.transpiler.errors import CompileError

SOURCE = """
import math
import ptxpy
from ptxpy import Array, bf16, f16, f32, f64, i8, i32, i64, u32, u64

@ptxpy.jit
def ldexp_k(x: Array[{T}], n: Array[{N}], out: Array[{T}]):
    i = ptxpy.global_id(0)
    if i < x.shape[0]:
        out[i] = math.ldexp(x[i], n[i])

@ptxpy.jit
def frexp_k(x: Array[{T}], m: Array[{T}], e: Array[i32]):
    i = ptxpy.global_id(0)
    if i < x.shape[0]:
        m[i], e[i] = math.frexp(x[i])
"""

DTYPES = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "bf16": ml_dtypes.bfloat16}
EXPONENTS = [-2**31, -100000, -1200, -1100, -1076, -1075, -1074, -1023, -1022, -300, -200, -160,
             -150, -149, -127, -126, -30, -1, 0, 1, 2, 30, 127, 128, 200, 300, 1023, 1024,
             1100, 2100, 100000, 2**31 - 1]


def specials(dtype) -> np.ndarray:
    info = ml_dtypes.finfo(dtype)
    tiny = info.smallest_subnormal
    values = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.5, 0.75, 3.0, float(info.max),
              -float(info.max), float(info.smallest_normal), float(tiny), -float(tiny),
              float(tiny) * 3, float(info.smallest_normal) * 0.75, 1 / 3, -7e-3, 12345.678]
    rng = np.random.default_rng(36)
    scale = 2.0 ** rng.integers(info.minexp - info.nmant, info.maxexp, 60).astype(np.float64)
    values += list(rng.uniform(-2, 2, 60) * scale)
    return np.array(values, np.float64).astype(dtype)


def expected_ldexp(x: np.ndarray, n: np.ndarray, dtype) -> np.ndarray:
    """Python's ldexp in f64 (exact for these types' values), rounded once to the type: for f32,
    f16 and bf16, the f64 result has every bit needed unless it is far below their subnormals."""
    out = []
    for value, k in zip(x.astype(np.float64), n):
        k = max(-5000, min(5000, int(k)))
        try:
            out.append(math.ldexp(float(value), k))
        except OverflowError:
            out.append(math.copysign(math.inf, float(value)))
    with np.errstate(over="ignore"):
        return np.array(out, np.float64).astype(dtype)


def bits_equal(a: np.ndarray, b: np.ndarray) -> None:
    view = {2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize]
    nan = np.isnan(a.astype(np.float64))
    np.testing.assert_array_equal(nan, np.isnan(b.astype(np.float64)))
    np.testing.assert_array_equal(a[~nan].view(view), b[~nan].view(view))


@pytest.mark.parametrize("type_name", ["f32", "f64", "f16", "bf16"])
def test_ldexp_is_rounded_once_for_every_exponent(type_name):
    dtype = DTYPES[type_name]
    values = specials(dtype)
    x = np.repeat(values, len(EXPONENTS))
    n = np.tile(np.array(EXPONENTS, np.int64), len(values)).astype(np.int32)
    source = SOURCE.format(T=type_name, N="i32")
    (out,) = run(source, "ldexp_k", [x, n, Out(len(x), dtype)], grid=(len(x) + 255) // 256, block=256)
    bits_equal(out, expected_ldexp(x, n, dtype))
    if type_name == "f64":
        with np.errstate(over="ignore"):
            np.testing.assert_array_equal(out, np.ldexp(x, n))


def test_ldexp_f32_agrees_with_numpy_on_subnormal_results():
    rng = np.random.default_rng(7)
    x = (rng.uniform(1, 2, 4096) * 2.0 ** rng.integers(-20, 20, 4096)).astype(np.float32)
    n = rng.integers(-175, -120, 4096).astype(np.int32)     # results across the subnormals
    source = SOURCE.format(T="f32", N="i32")
    (out,) = run(source, "ldexp_k", [x, n, Out(len(x), np.float32)], grid=16, block=256)
    np.testing.assert_array_equal(out.view(np.uint32), np.ldexp(x, n).view(np.uint32))


@pytest.mark.parametrize("exponent_type, numpy_type", [("i64", np.int64), ("u32", np.uint32),
                                                       ("u64", np.uint64), ("i8", np.int8)])
def test_ldexp_exponent_of_any_integer_type(exponent_type, numpy_type):
    info = np.iinfo(numpy_type)
    wanted = [info.min, info.min + 1, -200, -3, 0, 1, 5, 127, 128, 200, 1000, 65537, info.max // 2,
              info.max - 1, info.max]
    n = np.array([k for k in wanted if info.min <= k <= info.max], numpy_type)
    x = np.full(len(n), 1.5, np.float32)
    source = SOURCE.format(T="f32", N=exponent_type)
    (out,) = run(source, "ldexp_k", [x, n, Out(len(x), np.float32)], grid=1, block=32)
    bits_equal(out, expected_ldexp(x, n, np.float32))


@pytest.mark.parametrize("type_name", ["f32", "f64", "f16", "bf16"])
def test_frexp_matches_python(type_name):
    dtype = DTYPES[type_name]
    x = specials(dtype)
    source = SOURCE.format(T=type_name, N="i32")
    m, e = run(source, "frexp_k", [x, Out(len(x), dtype), Out(len(x), np.int32)], grid=1, block=256)
    pairs = [math.frexp(float(v)) for v in x.astype(np.float64)]
    bits_equal(m, np.array([p[0] for p in pairs], np.float64).astype(dtype))
    np.testing.assert_array_equal(e, [p[1] for p in pairs])
    finite = np.isfinite(x.astype(np.float64)) & (x.astype(np.float64) != 0)
    assert np.all((np.abs(m.astype(np.float64)[finite]) >= 0.5) & (np.abs(m.astype(np.float64)[finite]) < 1))


def test_frexp_then_ldexp_gives_the_value_back():
    source = """
import math
import ptxpy
from ptxpy import Array, f64

@ptxpy.jit
def round_trip(x: Array[f64], out: Array[f64]):
    i = ptxpy.global_id(0)
    if i < x.shape[0]:
        m, e = math.frexp(x[i])
        out[i] = math.ldexp(m, e)
"""
    x = specials(np.float64)
    (out,) = run(source, "round_trip", [x, Out(len(x), np.float64)], grid=1, block=256)
    bits_equal(out, x)


def test_frexp_items_and_constants():
    source = """
import math
import ptxpy
from ptxpy import Array, f32, i32

HALF_ULP = math.ldexp(1.0, -24)
M, E = math.frexp(48.0)

@ptxpy.jit
def parts(x: Array[f32], out: Array[f32], k: Array[i32]):
    i = ptxpy.global_id(0)
    if i < x.shape[0]:
        out[i] = math.frexp(x[i])[0] + HALF_ULP * M + math.ldexp(1, 3)
        k[i] = math.frexp(x[i])[1] + E
"""
    x = np.array([1.0, 3.0, -10.0, 0.0], np.float32)
    out, k = run(source, "parts", [x, Out(4, np.float32), Out(4, np.int32)], grid=1, block=32)
    mantissa, exponent = np.frexp(x)
    expected = (mantissa + np.float32(2.0 ** -24 * 0.75) + np.float32(8.0)).astype(np.float32)
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_array_equal(k, exponent + 6)


def test_the_ir_interpreter_agrees():
    program = driver.parse(SOURCE.format(T="f32", N="i32"), "kernels.py")
    func = driver.compile_kernel(program, "ldexp_k", stop_after="ssa").ssa
    x = np.array([1.0, -3.0, 1e-40, 2.0 ** -126, np.inf, 1.5], np.float32)
    n = np.array([-149, 5, 60, -1, 3, 20], np.int32)
    out = np.zeros(6, np.float32)
    for thread in range(6):
        interp.run_function(func, {"x": x, "n": n, "out": out, "x_shape0": 6, "n_shape0": 6,
                                   "out_shape0": 6}, {"ntid.x": 8, "tid.x": thread, "ctaid.x": 0})
    bits_equal(out, np.ldexp(x, n))


@pytest.mark.parametrize("call, message", [
    ("math.ldexp(x[i], 2.0)", "math.ldexp takes an integer exponent, got the float 2.0"),
    ("math.ldexp(x[i], x[i])", "math.ldexp takes an integer exponent, got f32"),
    ("math.ldexp(x[i])", "math.ldexp"),
    ("math.frexp(x[i], 1)", "math.frexp"),
])
def test_errors(call, message):
    source = f"""
import math
import ptxpy
from ptxpy import Array, f32

@ptxpy.jit
def bad(x: Array[f32], out: Array[f32]):
    i = ptxpy.global_id(0)
    out[i] = {call}
"""
    with pytest.raises(CompileError, match=message.replace("(", r"\(").replace(")", r"\)")):
        compile_source(source, "bad")
