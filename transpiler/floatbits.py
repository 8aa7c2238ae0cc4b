"""Floats of every ptxpy width as Python floats, without NumPy: rounding and bit patterns.

A value of type f16, bf16 or f32 is held as the Python float (an f64) of the same value, which
is always exact; `from_bits`/`bits_of` convert a value and its bit pattern both ways, NaN
payloads included. `round_to(x, t)` converts an f64 to type `t` as NumPy does: nearest, ties to
even (f32 and f16 directly, bf16 through f32 as ml_dtypes does); a NaN keeps its sign and
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
    """ml_dtypes' conversion: x to f32, then round to nearest even (a NaN becomes +-0x7FC0)."""
    b = converted_bits(x, "f32")
    if (b & 0x7F800000) == 0x7F800000 and b & 0x7FFFFF:
        return 0xFFC0 if b >> 31 else 0x7FC0
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) & 0xFFFF
