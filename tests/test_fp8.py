"""`ptxpy.to_fp8(x, format)` and `ptxpy.from_fp8(byte, format)`: f32 values to the bytes of
fp8 formats e4m3 and e5m2 (PTX `cvt.rn.satfinite.{e4m3,e5m2}x2.f32`, sm_89 and later) and
back (`cvt.rn.f16x2.{e4m3,e5m2}x2`). Checked in the simulator (on the GPU with
PTXPY_TEST_DEVICE=gpu) against a nearest-value search over each format's table of values,
and ml_dtypes' decoding."""
import ml_dtypes
import numpy as np
import pytest

from kernel_harness import Out, compile_source, run
from ptxpy.transpiler.errors import CompileError

HEADER = """
import ptxpy
from ptxpy import Array, f32, f64, i32, u8
"""
FORMATS = {"e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2}

ROUND_TRIP = HEADER + """
@ptxpy.jit
def round_trip(x: Array[f32], b: Array[u8], back: Array[f32], value: Array[f32]):
    i = ptxpy.global_id()
    if i < x.shape[0]:
        byte = ptxpy.to_fp8(x[i], "{F}")
        b[i] = byte
        back[i] = ptxpy.from_fp8(byte, "{F}")
        value[i] = ptxpy.from_fp8(u8(i), "{F}")
"""


def table(fmt: str):
    """Every byte of the format and its value (f64; NaN where it is none)."""
    codes = np.arange(256, dtype=np.uint8)
    return codes, codes.view(FORMATS[fmt]).astype(np.float64)


def nearest_bytes(x, fmt: str):
    """The byte of each f32 in `x` as round-to-nearest-even with saturation gives it, by search:
    the finite value of the same sign nearest to x (beyond the largest, the largest), of two
    equally near the one with an even byte; NaN 0x7F."""
    codes, values = table(fmt)
    out = np.empty(x.size, np.uint8)
    for i, v in enumerate(np.asarray(x, np.float64)):
        if np.isnan(v):
            out[i] = 0x7F
            continue
        same_sign = (codes >= 0x80) == bool(np.signbit(v))
        finite = np.flatnonzero(same_sign & np.isfinite(values))
        v = np.clip(v, values[finite].min(), values[finite].max())     # the infinities too
        distance = np.abs(values[finite] - v)
        best = finite[distance == distance.min()]
        out[i] = codes[best[best % 2 == 0][0] if best.size > 1 else best[0]]
    return out


def inputs(fmt: str, rng):
    """Each finite value, the midpoints between neighbours and an f32 ulp either side, values
    past the largest, infinities, zeros, tiny values, NaN, and random normals at many scales."""
    _, values = table(fmt)
    finite = np.unique(values[np.isfinite(values)])
    mid = (finite[:-1] + finite[1:]) / 2
    mid32 = mid.astype(np.float32)
    largest = finite.max()
    special = [np.inf, -np.inf, np.nan, 0.0, -0.0, largest * 1.02, -largest * 1.1, 1e30, -1e30,
               finite[finite > 0].min() / 4, -finite[finite > 0].min() / 3]
    scales = np.exp2(rng.integers(-20, 18, 200)).astype(np.float32)
    return np.concatenate([finite, mid32, np.nextafter(mid32, np.float32(np.inf)),
                           np.nextafter(mid32, np.float32(-np.inf)), special,
                           rng.standard_normal(200).astype(np.float32) * scales]).astype(np.float32)


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_conversions_match_the_nearest_value_search(fmt):
    x = inputs(fmt, np.random.default_rng(1))
    n = max(x.size, 256)
    x = np.concatenate([x, np.zeros(n - x.size, np.float32)])
    block = 128
    b, back, value = run(ROUND_TRIP.replace("{F}", fmt), "round_trip",
                         [x, Out(n, np.uint8), Out(n, np.float32), Out(n, np.float32)],
                         -(-n // block), block, archs=("sm_90",))
    np.testing.assert_array_equal(b, nearest_bytes(x, fmt))
    _, values = table(fmt)
    np.testing.assert_array_equal(back, values[b].astype(np.float32))
    np.testing.assert_array_equal(value[:256], values.astype(np.float32))   # NaNs where NaN


def test_a_constant_is_converted_at_compile_time():
    source = HEADER + """
@ptxpy.jit
def constants(out: Array[u8], back: Array[f32]):
    out[0] = ptxpy.to_fp8(300.0, "e4m3")
    out[1] = ptxpy.to_fp8(-1e9, "e5m2")
    back[0] = ptxpy.from_fp8(u8(0x7E), "e4m3")
"""
    out, back = run(source, "constants", [Out(2, np.uint8), Out(1, np.float32)], 1, 1,
                    archs=("sm_90",))
    assert list(out) == [nearest_bytes(np.float32([300.0]), "e4m3")[0],
                         nearest_bytes(np.float32([-1e9]), "e5m2")[0]]
    assert back[0] == 448.0
    assert "cvt.rn" not in compile_source(source, "constants").ptx


def compile_error(body: str, arch: str = "sm_90") -> str:
    with pytest.raises(CompileError) as info:
        compile_source(HEADER + "\n@ptxpy.jit\ndef k(x: Array[f32], d: Array[f64], b: Array[u8]):\n"
                       + body, "k", arch=arch)
    return str(info.value).splitlines()[0]


@pytest.mark.parametrize("body, message, arch", [
    ("    b[0] = ptxpy.to_fp8(x[0], \"e4m4\")\n",
     "kernels.py:7:31: error: the format of ptxpy.to_fp8 is \"e4m3\" or \"e5m2\", got '\"e4m4\"'",
     "sm_90"),
    ("    b[0] = ptxpy.to_fp8(d[0], \"e4m3\")\n",
     "kernels.py:7:25: error: ptxpy.to_fp8 takes an f32 value (cast it: f32(...)), got f64",
     "sm_90"),
    ("    x[0] = ptxpy.from_fp8(x[0], \"e5m2\")\n",
     "kernels.py:7:27: error: ptxpy.from_fp8 takes a u8 value (cast it: u8(...)), got f32",
     "sm_90"),
    ("    b[0] = ptxpy.to_fp8(x[0], \"e4m3\")\n",
     "kernels.py:7:12: error: ptxpy.to_fp8 needs sm_89 or newer (fp8 conversions); the target is "
     "sm_80", "sm_80"),
])
def test_errors(body, message, arch):
    assert compile_error(body, arch) == message
