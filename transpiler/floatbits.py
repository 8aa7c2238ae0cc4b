"""Floats of every ptxpy width as Python floats, without NumPy: rounding and bit patterns.

A value of type f16, bf16 or f32 is held as the Python float (an f64) of the same value, which
is always exact; `from_bits`/`bits_of` convert a value and its bit pattern both ways, NaN
payloads included. `round_to(x, t)` converts an f64 to type `t` as NumPy does: nearest, ties to
even, rounding once (for bf16 unlike ml_dtypes, which rounds through f32 twice, and like the
GPU's cvt); `int_to_float` does the same from an integer; a NaN keeps its sign and
leading payload bits (quieted for f32, canonical for bf16). Arithmetic done in
f64 and then rounded once is exact for +, -, *, / and sqrt of narrower operands (f64 has more
than twice their precision), so folding needs no float32 arithmetic of its own.
"""
from __future__ import annotations

import math
import struct

_PACK = {"f16": "<e", "f32": "<f", "f64": "<d"}
_UINT = {2: "<H", 4: "<I", 8: "<Q"}
#: (mantissa bits, exponent bits) of each float type
LAYOUT = {"f16": (10, 5), "bf16": (7, 8), "f32": (23, 8), "f64": (52, 11)}
MAX_FINITE = {"f16": 65504.0, "bf16": 3.3895313892515355e38, "f32": 3.4028234663852886e38,
              "f64": 1.7976931348623157e308}
#: the NaN this machine's arithmetic produces (inf - inf): what NumPy gives for 0/0 and friends
DEFAULT_NAN = math.inf - math.inf


def f64_bits(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def f64_from_bits(bits: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


def round_to(x: float, name: str) -> float:
    """`x` converted to float type `name` ('f16' 'bf16' 'f32' 'f64'): nearest, too large: +-inf."""
    if name == "f64":
        return x
    return from_bits(converted_bits(x, name), name)


def converted_bits(x: float, name: str) -> int:
    """The bit pattern of `x` converted to float type `name`, as NumPy converts."""
    if name == "bf16":
        return _bf16_bits(x)
    if x != x:
        return _converted_nan(x, name)
    try:
        packed = struct.pack(_PACK[name], x)
    except OverflowError:   # rounds beyond the largest finite value
        packed = struct.pack(_PACK[name], math.copysign(math.inf, x))
    return struct.unpack(_UINT[len(packed)], packed)[0]


def bits_of(x: float, name: str) -> int:
    """The bit pattern of `x`, a value of float type `name` (the inverse of `from_bits`)."""
    if x != x:
        mantissa, exponent = LAYOUT[name]
        d = f64_bits(x)
        payload = (d & ((1 << 52) - 1)) >> (52 - mantissa) or 1 << (mantissa - 1)
        return ((d >> 63) << (exponent + mantissa)) | (((1 << exponent) - 1) << mantissa) | payload
    return converted_bits(x, name)


def from_bits(bits: int, name: str) -> float:
    """The value of bit pattern `bits` of float type `name` (a NaN keeps its payload bits)."""
    mantissa, exponent = LAYOUT[name]
    exp_mask = ((1 << exponent) - 1) << mantissa
    if bits & exp_mask == exp_mask and bits & ((1 << mantissa) - 1):
        sign, payload = bits >> (exponent + mantissa), bits & ((1 << mantissa) - 1)
        return f64_from_bits((sign << 63) | (0x7FF << 52) | (payload << (52 - mantissa)))
    if name == "bf16":
        return struct.unpack("<f", struct.pack("<I", bits << 16))[0]
    return struct.unpack(_PACK[name], bits.to_bytes((1 + exponent + mantissa) // 8, "little"))[0]


def next_toward(x: float, name: str, up: bool) -> float:
    """The next value of float type `name` after finite `x`, up or down."""
    if name == "f64":
        return math.nextafter(x, math.inf if up else -math.inf)
    if x == 0:
        tiny = from_bits(1, name)
        return tiny if up else -tiny
    bits = bits_of(x, name)
    away_from_zero = up == (x > 0)
    return from_bits(bits + 1 if away_from_zero else bits - 1, name)


def _converted_nan(x: float, name: str) -> int:
    """A NaN converted to f32 (quieted, as the CPU does) or f16 (as NumPy: payload or 1)."""
    mantissa, exponent = LAYOUT[name]
    d = f64_bits(x)
    sign = (d >> 63) << (exponent + mantissa)
    payload = (d & ((1 << 52) - 1)) >> (52 - mantissa)
    if name == "f32":
        payload |= 1 << (mantissa - 1)
    elif payload == 0:
        payload = 1
    return sign | (((1 << exponent) - 1) << mantissa) | payload


def _bf16_bits(x: float) -> int:
    """x rounded once to bf16, nearest even (a NaN becomes +-0x7FC0), as the GPU's
    `cvt.rn.bf16.f64` does: through f32 rounded to odd, which keeps the rounding single
    (ml_dtypes goes through f32 rounded to nearest, which rounds twice:
    1 + 2^-8 + 2^-52 gives 1.0 there, 1.0078125 here)."""
    b = converted_bits(x, "f32")
    if (b & 0x7F800000) == 0x7F800000 and b & 0x7FFFFF:
        return 0xFFC0 if b >> 31 else 0x7FC0
    if math.isfinite(x):
        nearest = from_bits(b, "f32")
        if nearest != x:              # inexact: truncate toward zero, make the last bit sticky
            if abs(nearest) > abs(x):
                b -= 1
            b |= 1
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) & 0xFFFF


def int_to_float(n: int, name: str) -> float:
    """The integer `n` rounded once to float type `name` (nearest even, too large: +-inf).

    `float(n)` alone would round twice for a narrower type and an `n` beyond 2^53."""
    precision = LAYOUT[name][0] + 1
    magnitude, extra = abs(n), abs(n).bit_length() - precision
    if extra > 0:
        q, r = divmod(magnitude, 1 << extra)
        half = 1 << (extra - 1)
        if r > half or (r == half and q & 1):
            q += 1
        magnitude = q << extra          # now exact in float64 (precision + 1 bits at most)
    return round_to(float(-magnitude if n < 0 else magnitude), name)


#: the fp8 formats' largest finite values: e4m3 (NVIDIA's, no infinities) and e5m2
FP8_MAX = {"e4m3": 448.0, "e5m2": 57344.0}


def fp8_byte(x: float, fmt: str) -> int:
    """The byte of `x` in fp8 `fmt` as `cvt.rn.satfinite.{e4m3,e5m2}x2.f32` gives it: to nearest
    even, beyond the largest finite value (infinities too) that value, a NaN 0x7F."""
    import ml_dtypes   # (JAX's dependency)
    import numpy as np

    if math.isnan(x):
        return 0x7F
    limit = FP8_MAX[fmt]
    dtype = ml_dtypes.float8_e4m3fn if fmt == "e4m3" else ml_dtypes.float8_e5m2
    return int(np.float32(min(max(x, -limit), limit)).astype(dtype).view(np.uint8))


def fp8_value(byte: int, fmt: str) -> float:
    """The value of an fp8 byte (exact in f32)."""
    import ml_dtypes
    import numpy as np

    dtype = ml_dtypes.float8_e4m3fn if fmt == "e4m3" else ml_dtypes.float8_e5m2
    return float(np.uint8(byte & 0xFF).view(dtype))
