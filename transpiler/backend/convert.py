"""`cvt` between every pair of scalar types, as the IR defines it.

Conventions: 8-bit ints sit in 16-bit registers kept sign-/zero-extended, so as sources they
convert like their 16-bit counterparts; bf16 converts directly only to and from f32 before
sm_90 (other pairs go through f32, which is exact from bf16 and rounds once to bf16 from all
but f64 and integers wider than 24 bits); f16 and bf16 go through f32 into 8- and 16-bit ints.
"""
from __future__ import annotations

from ptxpy.types import Scalar, f32

from .errors import BackendError
from .machine import Imm, VReg
from .ptxtypes import arith, cvt_type, half_bits, immediate

_FLOAT_MODES = ("rn", "rz", "rm", "rp")
_INT_MODES = ("rzi", "rni", "rmi", "rpi")


def convert(sel, dst: VReg, src: VReg, s: Scalar, t: Scalar, mode: str | None) -> None:
    """Emit through `sel` (an isel.ISel) the conversion of `src` (type s) into `dst` (type t)."""
    if s == t:
        from .isel import copy_instr
        sel.block.instrs.append(copy_instr(dst, src, sel.loc))
    elif t.is_bool:
        _to_bool(sel, dst, src, s)
    elif s.is_bool:
        one = half_bits(t, 1.0) if t.bits == 16 and t.is_float else None
        if one is not None:
            sel.emit("selp.b16", [dst], [Imm(f"0x{one:04X}"), Imm("0x0000"), src])
        else:
            sel.emit(f"selp.{arith(t)}", [dst], [Imm(immediate(t, 1)), Imm(immediate(t, 0)), src])
    elif s.is_int and t.is_int:
        _int_to_int(sel, dst, src, s, t)
    elif "bf16" in (s.name, t.name) and f32 not in (s, t) and not _direct_bf16(sel, s, t):
        _through_f32(sel, dst, src, s, t, mode)
    elif s.name in ("f16", "bf16") and (t.name in ("f16", "bf16") or t.is_int and t.bits <= 16):
        # f16 -> u16 directly: the H100 merged the converted bits into a stale register and
        # then took them as zero-extended (u16(f16(0.0)) widened to -65536; variants.py)
        _through_f32(sel, dst, src, s, t, mode)
    else:
        _with_float(sel, dst, src, s, t, mode)


def _direct_bf16(sel, s: Scalar, t: Scalar) -> bool:
    """Whether one cvt converts between bf16 and the other type (sm_90; not for 8-bit ints)."""
    other = t if s.name == "bf16" else s
    return sel.target.bf16_arith and other.bits >= 16


def _to_bool(sel, dst: VReg, src: VReg, s: Scalar) -> None:
    if s.is_float and s.bits == 16:
        # nonzero unless the bits without the sign are all zero (NaN counts as true)
        magnitude = sel.new("rs")
        sel.emit("and.b16", [magnitude], [src, Imm("0x7FFF")])
        sel.emit("setp.ne.u16", [dst], [magnitude, Imm("0")])
    elif s.is_float:
        sel.emit(f"setp.neu.{arith(s)}", [dst], [src, Imm(immediate(s, 0.0))])
    else:
        sel.emit(f"setp.ne.{arith(s)}", [dst], [src, Imm("0")])


def extend_8_bits(sel, dst: VReg, src: VReg, t: Scalar) -> None:
    """The low 8 bits of src (16 or 32 bits wide) into the 16-bit dst, extended as the 8-bit
    int t says. i8 goes through a 32-bit register, not `cvt.s16.s8`: ptxas folded that cvt of
    a value it learned late (`i8(v | 127) << 5`, v a bool) to the 32-bit sign extension, and
    a later u16 use compared 0xFFFFFFE0 for 0xFFE0 (program 1946, cmp16_probe.py, H100). The
    SASS at run time is two instructions either way."""
    if not t.is_signed:
        sel.emit("cvt.u16.u8", [dst], [src])
        return
    wide = sel.new("r")
    sel.emit("cvt.s32.s8", [wide], [src])
    sel.emit("cvt.u16.u32", [dst], [wide])


def _int_to_int(sel, dst: VReg, src: VReg, s: Scalar, t: Scalar) -> None:
    if t.bits == 8:
        if s.bits > 32:   # wrap to 16 bits, then re-extend the low 8
            sel.emit(f"cvt.u16.{arith(s).replace('s', 'u')}", [dst], [src])
            src = dst
        extend_8_bits(sel, dst, src, t)
    elif src.cls == dst.cls:   # i16<->u16, i32<->u32, i64<->u64, i8/u8 -> i16/u16: same bits
        from .isel import copy_instr
        sel.block.instrs.append(copy_instr(dst, src, sel.loc))
    elif t.bits > s.bits:   # extended as the source's signedness says (cvt.u64.u32, not .s64)
        kind = "s" if s.is_signed else "u"
        sel.emit(f"cvt.{kind}{t.bits}.{arith(s)}", [dst], [src])
    else:   # narrowing wraps
        sel.emit(f"cvt.u{t.bits}.u{s.bits}", [dst], [src])


def _float_to_narrow_int(sel, dst: VReg, src: VReg, s_name: str, t: Scalar, mode: str) -> None:
    """Float -> 8/16-bit int through a 32-bit int, clamped to t's range (the same saturation
    and NaN -> 0 as one cvt): the H100 merged a 16-bit cvt's bits into a stale register and
    later took its upper half as the extension (u16(h) widened to -65536; variants.py)."""
    wide = sel.new("r")
    kind = "s32" if t.is_signed else "u32"
    sel.emit(f"cvt.{mode}.{kind}.{s_name}", [wide], [src])
    low, high = (-(1 << (t.bits - 1)), (1 << (t.bits - 1)) - 1) if t.is_signed else (0, (1 << t.bits) - 1)
    if low:
        sel.emit(f"max.{kind}", [wide], [wide, Imm(str(low))])
    sel.emit(f"min.{kind}", [wide], [wide, Imm(str(high))])
    sel.emit(f"cvt.{cvt_type(t).replace('s8', 's16').replace('u8', 'u16')}.{kind}", [dst], [wide])


def _through_f32(sel, dst: VReg, src: VReg, s: Scalar, t: Scalar, mode) -> None:
    wide = sel.new("f")
    convert(sel, wide, src, s, f32, None if t == f32 else _f32_mode(s, mode))
    convert(sel, dst, wide, f32, t, mode)


def _f32_mode(s: Scalar, mode):
    # an intermediate f32 from an integer or f64 rounds like the final result would
    return mode if mode in _FLOAT_MODES else None


def _with_float(sel, dst: VReg, src: VReg, s: Scalar, t: Scalar, mode) -> None:
    """One `cvt` where s or t is a float (f16/bf16 handled like f32 by the caller's routing)."""
    if "bf16" in (s.name, t.name):
        if s.name == "bf16" and t == f32:
            sel.target.require((7, 1), 80, "cvt.f32.bf16")
        elif t.name == "bf16" and s != f32 or s.name == "bf16":
            sel.target.require((7, 8), 90, f"cvt.{cvt_type(t)}.{cvt_type(s)}")
    s_name = arith(s) if s.is_int else cvt_type(s)   # 8-bit ints are extended in 16 bits
    if t.is_int:
        mode = mode or "rzi"
        if mode not in _INT_MODES:
            raise BackendError(f"cvt {s} -> {t}: rounding mode {mode!r} (use rzi rni rmi rpi)")
        if t.bits == 64 or s.bits == 64:
            # the H100 gives the most negative value's bits (0x80...) for a NaN converted
            # into 64 bits, or from f64 into any width; the IR says 0
            converted, nan = sel.new(t), sel.new("p")
            if t.bits <= 16:
                _float_to_narrow_int(sel, converted, src, s_name, t, mode)
            else:
                sel.emit(f"cvt.{mode}.{cvt_type(t)}.{s_name}", [converted], [src])
            sel.emit(f"setp.nan.{arith(s)}", [nan], [src, src])
            sel.emit(f"selp.{arith(t)}", [dst], [Imm("0"), converted, nan])
            return
        if t.bits <= 16:
            _float_to_narrow_int(sel, dst, src, s_name, t, mode)
            return
        sel.emit(f"cvt.{mode}.{cvt_type(t)}.{s_name}", [dst], [src])
        return
    widening = s.is_float and t.bits > s.bits
    if widening:
        sel.emit(f"cvt.{cvt_type(t)}.{s_name}", [dst], [src])
        return
    mode = mode or "rn"
    if mode not in _FLOAT_MODES:
        raise BackendError(f"cvt {s} -> {t}: rounding mode {mode!r} (use rn rz rm rp)")
    sel.emit(f"cvt.{mode}.{cvt_type(t)}.{s_name}", [dst], [src])
