"""Expand Python's floor `floordiv`/`floormod` into truncating `div`/`rem` plus a correction.

q = a / b; r = a % b; when r != 0 and r, b differ in sign: q -= 1, r += b (also for b == 0,
where the H100's `div` and `rem` both give -1: `x // 0` is -2, `x % 0` is -1). A constant divisor,
or a `divisor_sign` attribute (1 or -1, set by passes/ranges.py), settles b's sign at compile
time, so only r's sign is tested; a positive power of two needs only a shift or a mask (an
arithmetic shift already rounds toward minus infinity).
"""
from __future__ import annotations

from ..ir import Const, Function, Instr, bool_, u32, users
from .copyprop import replace_all_uses


def run(func: Function) -> Function:
    uses = None
    for block in func.blocks:
        if not any(i.op in ("floordiv", "floormod") for i in block.instrs):
            continue
        uses = uses if uses is not None else users(func)
        rewritten = []
        for instr in block.instrs:
            if instr.op in ("floordiv", "floormod"):
                expansion = _expand(instr)
                for new in expansion:
                    new.block, new.loc = block, instr.loc
                rewritten.extend(expansion)
                replace_all_uses(uses, instr, expansion[-1])
                instr.block = None
            else:
                rewritten.append(instr)
        block.instrs = rewritten
    func.edits += uses is not None
    return func


def _expand(instr: Instr) -> list[Instr]:
    """New instructions computing `instr`, the last one giving its value."""
    a, b = instr.args
    t, is_div = instr.type, instr.op == "floordiv"
    if not t.is_signed or (isinstance(a, Const) and a.value == 0):
        return [Instr("div" if is_div else "rem", t, [a, b])]     # a 0 dividend needs no fix-up
    if isinstance(b, Const) and b.value > 0 and b.value & (b.value - 1) == 0:
        if is_div:
            return [Instr("shr", t, [a, Const(u32, b.value.bit_length() - 1)])]
        return [Instr("and", t, [a, Const(t, b.value - 1)])]
    quotient = Instr("div", t, [a, b])
    remainder = Instr("rem", t, [a, b])
    zero = Const(t, 0)
    sign = b.value if isinstance(b, Const) else instr.attrs.get("divisor_sign")
    if sign:
        fix = [Instr("cmp", bool_, [remainder, zero], {"pred": "lt" if sign > 0 else "gt"})]
    else:
        nonzero = Instr("cmp", bool_, [remainder, zero], {"pred": "ne"})
        signs = Instr("xor", t, [remainder, b])
        differ = Instr("cmp", bool_, [signs, zero], {"pred": "lt"})
        fix = [nonzero, signs, differ, Instr("and", bool_, [nonzero, differ])]
    if is_div:
        adjusted = Instr("sub", t, [quotient, Const(t, 1)])
        result = Instr("select", t, [fix[-1], adjusted, quotient])
        return [quotient, remainder, *fix, adjusted, result]
    adjusted = Instr("add", t, [remainder, b])
    return [remainder, *fix, adjusted, Instr("select", t, [fix[-1], adjusted, remainder])]
