"""64-bit integer arithmetic whose result is only ever truncated to 32 bits, done in 32 bits.

NumPy's promotion makes `key >> shift` with `key: u32` and `shift: i32` an `i64` shift, so
`i32((key >> shift) & 255)` is four instructions (zero extension, 64-bit shift, 64-bit `and`,
truncation) where C would write two. Where every use of a 64-bit integer instruction is a
truncation to 32 bits or an operand of another such instruction, that only needs its operands'
low halves, the instruction is computed in 32 bits instead:

- `add sub mul and or xor not neg`, and `shl` by any count (32 or more shifts everything out
  of the low half in both widths): the low half of the result depends only on the low halves
  of the operands;
- `shr` of a zero extension (a `cvt` from an unsigned type): the high half is zero, so the
  64-bit shift, arithmetic or logical, and a 32-bit logical one agree on the low half, for
  counts of 32 or more too (both give 0);
- the operands: a `cvt` from a 32-bit integer is that integer, from a narrower one its
  extension to 32 bits; a constant is its low 32 bits.

The narrowed instructions go right after the 64-bit ones they replace; each truncation
becomes a `mov` of its narrowed value (copyprop removes it; a `cvt` where only the signedness
differs), and dce drops the 64-bit instructions.
"""
from __future__ import annotations

from ..cfg import reverse_postorder
from ..ir import Const, Function, Instr, users
from ptxpy.types import i32, u32

_LOW_HALF_OPS = frozenset({"add", "sub", "mul", "and", "or", "xor", "not", "neg", "shl", "shr"})
_HALF = {"i64": i32, "u64": u32}


def run(func: Function) -> Function:
    if not _any_truncated_arithmetic(func):
        return func
    order = reverse_postorder(func)     # (an operand's half is made before its users')
    wide = {i for b in order for i in b.instrs
            if i.op in _LOW_HALF_OPS and i.type is not None and i.type.name in _HALF}
    uses = users(func)
    narrowable = _narrowable(wide, uses)
    truncations = [u for i in narrowable for u in uses.get(i, ()) if _is_truncation(u)]
    if not truncations:
        return func
    halves: dict = {}
    for block in order:
        instrs = []
        for instr in block.instrs:
            instrs.append(instr)
            if instr in narrowable:
                halves[instr] = _low_half(instr, halves, instrs)
        for instr in instrs:
            instr.block = block
        block.instrs = instrs
    for cvt in truncations:
        half = halves[cvt.args[0]]
        cvt.op = "mov" if half.type == cvt.type else "cvt"
        cvt.args = [half]
    func.edits += 1
    return func


def _any_truncated_arithmetic(func: Function) -> bool:
    for block in func.blocks:
        for instr in block.instrs:
            if instr.op == "cvt":
                value = instr.args[0]
                if value.__class__ is Instr and value.op in _LOW_HALF_OPS and _is_truncation(instr):
                    return True
    return False


def _narrowable(wide: set, uses: dict) -> set:
    """The instructions of `wide` that can be computed in 32 bits: each use truncates them or
    is another of them (as an operand whose low half is all it needs), and each operand is a
    constant, an extension of an integer of 32 bits or fewer, or another of them."""
    found = {i for i in wide if _fits(i)}
    changed = True
    while changed:
        changed = False
        for instr in list(found):
            if not (all(_needs_low_half(u, instr, found) for u in uses.get(instr, ()))
                    and all(_operand_ok(a, found) for a in _value_operands(instr))):
                found.discard(instr)
                changed = True
    return found


def _fits(instr: Instr) -> bool:
    if instr.op != "shr":
        return True
    value = instr.args[0]
    return _is_extension(value) and not value.args[0].type.is_signed


def _value_operands(instr: Instr) -> list:
    """The operands whose low half the result depends on (not a shift's count)."""
    return instr.args[:1] if instr.op in ("shl", "shr") else instr.args


def _needs_low_half(user: Instr, instr: Instr, found: set) -> bool:
    """Whether `user` needs only the low half of `instr`: it truncates it, or is one of `found`
    and takes it as a value operand (not as a shift's count)."""
    if _is_truncation(user):
        return True
    return user in found and (user.op not in ("shl", "shr") or user.args[1] is not instr)


def _operand_ok(value, found: set) -> bool:
    return isinstance(value, Const) or _is_extension(value) or value in found


def _is_extension(value) -> bool:
    """A `cvt` to a 64-bit integer type from an integer of 32 bits or fewer."""
    return (isinstance(value, Instr) and value.op == "cvt" and not value.attrs
            and value.type.name in _HALF
            and value.args[0].type.is_int and value.args[0].type.bits <= 32)


def _is_truncation(instr: Instr) -> bool:
    """A plain `cvt` (no rounding or other mode) to a 32-bit integer type from a 64-bit one."""
    return (instr.op == "cvt" and not instr.attrs and instr.type.is_int and instr.type.bits == 32
            and instr.args[0].type is not None and instr.args[0].type.name in _HALF)


def _low_half(instr: Instr, halves: dict, out: list) -> Instr:
    """A 32-bit instruction (appended to `out`) computing the low half of `instr`."""
    half = _HALF[instr.type.name]
    if instr.op == "shr":    # of a zero extension: logically, in the unsigned type
        value = _operand(instr.args[0], u32, halves, instr, out)
        shifted = _emit(out, Instr("shr", u32, [value, instr.args[1]], loc=instr.loc))
        return shifted if half is u32 else _emit(out, Instr("cvt", half, [shifted], loc=instr.loc))
    args = [_operand(a, half, halves, instr, out) for a in _value_operands(instr)]
    return _emit(out, Instr(instr.op, half, args + instr.args[len(args):], dict(instr.attrs),
                            loc=instr.loc))


def _operand(value, half, halves: dict, user: Instr, out: list):
    """`value`'s low half as a `half` value."""
    if isinstance(value, Const):
        low = value.value & 0xFFFFFFFF
        return Const(half, low - (1 << 32) if half.is_signed and low >= 1 << 31 else low)
    low = halves.get(value)
    if low is None:    # an extension: its source, extended to 32 bits if it is narrower
        low = value.args[0]
    if low.type == half:
        return low
    return _emit(out, Instr("cvt", half, [low], loc=user.loc))


def _emit(out: list, instr: Instr) -> Instr:
    out.append(instr)
    return instr
