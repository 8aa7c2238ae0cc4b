"""Products of widened 32-bit integers: `mul_wide`, and their high half: `mul_hi`.

Written the portable way, a 64-bit product of two 32-bit values is `u64(a) * u64(b)` (the
high half of a hash step, Philox, a fixed-point scale), which as it stands is a 64-bit
multiply: several instructions on the GPU (`mul.lo.u64` is emulated with 32-bit multiplies).

- `mul(cvt(a), cvt(b))`, with `a` and `b` of one 32-bit type extended to the 64-bit type of the
  same signedness (zero extension for unsigned, sign extension for signed), is `mul_wide(a, b)`
  (`mul.wide.u32`/`.s32`). A constant operand counts when it fits in the 32-bit type, but not
  -1: a product by -1 stays a negation, which the backend writes in the form that ptxas's
  three-way min/max folding gets right (`isel.times_minus_one`; `mul.wide.s32 -1, x` lost the
  sign there, test_edge_semantics' three-way min on the H100).
- `cvt(shr(mul_wide(a, b), 32))` to the 32-bit type of `a` and `b` is `mul_hi(a, b)`
  (`mul.hi.u32`/`.s32`): whatever the shift fills the top with, the low 32 bits of the shifted
  product are its high half. Only where nothing else uses the product: ptxas takes the high
  half of a `mul.wide` it keeps anyway as a register, free.

ptxas itself already makes one `IMAD.WIDE.U32` of `cvt.u64.u32` + `mul.lo.u64` (nvdisasm,
sm_90): the rewrite makes the PTX read as one would write it, with fewer 64-bit registers.

Both rewrite the instruction in place; the extensions and the shift, if nothing else uses them,
are left to dce.
"""
from __future__ import annotations

from ..ir import Const, Function, Instr, pass_users, scalar

_NARROW = {"u64": "u32", "i64": "i32"}


def run(func: Function) -> Function:
    widened = False
    for block in func.blocks:
        for instr in block.instrs:
            if instr.op == "mul":
                widened |= _to_mul_wide(instr)
    func.edits += widened
    highs = [i for b in func.blocks for i in b.instrs if i.op == "cvt" and _high_half_of(i)]
    if highs:
        uses = pass_users(func)
        for cvt in highs:
            shifted = cvt.args[0]
            product = shifted.args[0]
            if uses.get(product) == [shifted] and all(u.op == "cvt" for u in uses[shifted]):
                cvt.op, cvt.args = "mul_hi", list(product.args)
                func.edits += 1
    return func


def _to_mul_wide(mul: Instr) -> bool:
    narrow = _NARROW.get(mul.type.name)
    if narrow is None:
        return False
    if any(isinstance(a, Const) and a.value == -1 for a in mul.args):
        return False    # a negation: isel writes `mul x, -1` as `not` + `add` for ptxas (`times_minus_one`)
    operands = [_narrow_operand(arg, narrow) for arg in mul.args]
    if None in operands or all(isinstance(a, Const) for a in operands):
        return False
    mul.op, mul.args = "mul_wide", operands
    return True


def _narrow_operand(value, narrow: str):
    """`value` as the `narrow`-typed value it is the extension of, or None."""
    if isinstance(value, Const):
        lo, hi = (-(1 << 31), 1 << 31) if narrow == "i32" else (0, 1 << 32)
        return Const(scalar(narrow), value.value) if lo <= value.value < hi else None
    if isinstance(value, Instr) and value.op == "cvt" and value.args[0].type.name == narrow:
        return value.args[0]
    return None


def _high_half_of(cvt: Instr) -> bool:
    """Whether `cvt` takes the high half of a `mul_wide` to the type of its operands."""
    shifted = cvt.args[0]
    if not (isinstance(shifted, Instr) and shifted.op == "shr" and isinstance(shifted.args[1], Const)
            and shifted.args[1].value == 32):
        return False
    product = shifted.args[0]
    return (isinstance(product, Instr) and product.op == "mul_wide"
            and product.args[0].type == cvt.type and cvt.type.bits == 32)
