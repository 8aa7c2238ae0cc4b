"""How ptxpy scalar types map to PTX register classes and instruction types."""
from __future__ import annotations

import struct

from ptxpy.types import Scalar

REG_CLASS = {"bool": "p", "i8": "rs", "u8": "rs", "i16": "rs", "u16": "rs", "i32": "r",
             "u32": "r", "i64": "rd", "u64": "rd", "f16": "h", "bf16": "hb", "f32": "f",
             "f64": "fd"}

# 8-bit integers live in 16-bit registers, kept sign- (i8) or zero-extended (u8), so they
# compute with the 16-bit instruction types
_ARITH = {"i8": "s16", "u8": "u16", "i16": "s16", "u16": "u16", "i32": "s32", "u32": "u32",
          "i64": "s64", "u64": "u64", "f16": "f16", "bf16": "bf16", "f32": "f32", "f64": "f64",
          "bool": "pred"}
_MEM = {"bool": "u8", "i8": "s8", "u8": "u8", "i16": "s16", "u16": "u16", "i32": "s32",
        "u32": "u32", "i64": "s64", "u64": "u64", "f16": "b16", "bf16": "b16", "f32": "f32",
        "f64": "f64"}
_CVT = dict(_MEM, f16="f16", bf16="bf16")
_REG_BITS = {"p": 1, "rs": 16, "h": 16, "hb": 16, "r": 32, "f": 32, "rd": 64, "fd": 64}


def reg_class(t: Scalar) -> str:
    return REG_CLASS[t.name]


def arith(t: Scalar) -> str:
    """Instruction type for arithmetic and compares (`s32`, `f32`, `s16` for i8 ...)."""
    return _ARITH[t.name]


def signed_arith(t: Scalar) -> str:
    """As `arith`, signed for ints (neg/abs/mad have no unsigned meaning difference)."""
    return _ARITH[t.name].replace("u", "s") if t.is_int else _ARITH[t.name]


def mem(t: Scalar) -> str:
    """Type of ld/st/ld.param for an element of type t."""
    return _MEM[t.name]


def cvt_type(t: Scalar) -> str:
    """The type name of t inside `cvt` (8-bit ints spelled as such)."""
    return _CVT[t.name]


def bits(t: Scalar) -> str:
    """Untyped name of t's register width: b16, b32, b64 (`pred` for bool)."""
    if t.is_bool:
        return "pred"
    return f"b{_REG_BITS[reg_class(t)]}"


def reg_bits(cls: str) -> int:
    return _REG_BITS[cls]


def f32_bits(value: float) -> int:
    return struct.unpack(">I", struct.pack(">f", value))[0]


def f64_bits(value: float) -> int:
    return struct.unpack(">Q", struct.pack(">d", value))[0]


def f16_bits(value: float) -> int:
    return struct.unpack(">H", struct.pack(">e", value))[0]


def bf16_bits(value: float) -> int:
    """Round-to-nearest-even of the f32 value to bf16 (NaN stays a quiet NaN)."""
    b = f32_bits(value)
    if (b & 0x7F800000) == 0x7F800000 and b & 0x7FFFFF:
        return (b >> 16) | 0x40
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) & 0xFFFF


def immediate(t: Scalar, value) -> str | None:
    """PTX immediate text for a constant of type t, or None where PTX has none (f16, bool)."""
    if t.is_float:
        if t.bits == 32:
            return f"0f{f32_bits(float(value)):08X}"
        if t.bits == 64:
            return f"0d{f64_bits(float(value)):016X}"
        return None
    if t.is_bool:
        return None
    return str(_wrap(int(value), t))


def half_bits(t: Scalar, value) -> int:
    return f16_bits(float(value)) if t.name == "f16" else bf16_bits(float(value))


def _wrap(value: int, t: Scalar) -> int:
    mask = (1 << t.bits) - 1
    value &= mask
    if t.is_signed and value >> (t.bits - 1):
        value -= 1 << t.bits
    return value
