"""Reassociation of integer additions so constant offsets end up outermost in addresses.

`s[k, t * 4 + j]` for j = 0..3 in an unrolled loop computes four addresses
`base + sext(i + j) * 4`. Rewritten as `(base + sext(i) * 4) + 4j`, the four share one base (cse
merges them, strength reduction keeps one pointer per loop) and the backend folds each constant
into the access (`ld.shared.f32 %f1, [%rd3+12]`).

- `(x + C) + y` -> `(x + y) + C` on integers of any width: exact in wrap-around arithmetic.
- `mul_wide(x + C, S)` -> `mul_wide(x, S) + C*S`: equal unless `x + C` wraps in 32 bits, and a
  `mul_wide` only computes array offsets, where such an index is out of bounds (caught by
  `debug=True` on the index before any address is formed).

Only additions with a single use are rewritten, so no work is duplicated.
"""
from __future__ import annotations

from ..ir import Const, Function, Instr, users


def run(func: Function) -> Function:
    changed = True
    while changed:
        changed = False
        uses = users(func)
        for block in func.blocks:
            for instr in list(block.instrs):
                if instr.op == "add" and instr.type.is_int:
                    changed |= _hoist_constant(instr, uses)
                elif instr.op == "mul_wide":
                    changed |= _split_wide(instr, uses)
    return func


def _offset_add(value, uses: dict):
    """`value` if it is a single-use `x + C` (C a constant, x not), else None."""
    if not (isinstance(value, Instr) and value.op == "add" and len(uses.get(value, ())) == 1):
        return None
    consts = [a for a in value.args if isinstance(a, Const)]
    return value if len(consts) == 1 else None


def _split(add: Instr) -> tuple:
    const = next(a for a in add.args if isinstance(a, Const))
    other = next(a for a in add.args if not isinstance(a, Const))
    return other, const


def _hoist_constant(instr: Instr, uses: dict) -> bool:
    """(x + C) + y -> (x + y) + C."""
    if any(isinstance(a, Const) for a in instr.args):
        return False
    for k, arg in enumerate(instr.args):
        inner = _offset_add(arg, uses)
        if inner is None:
            continue
        x, const = _split(inner)
        y = instr.args[1 - k]
        joined = Instr("add", instr.type, [x, y], loc=instr.loc)
        instr.block.instrs.insert(instr.block.instrs.index(instr), joined)
        joined.block = instr.block
        instr.args = [joined, const]
        return True
    return False


def _split_wide(instr: Instr, uses: dict) -> bool:
    """mul_wide(x + C, S) -> mul_wide(x, S) + C*S, for a constant S."""
    index, scale = instr.args
    inner = _offset_add(index, uses)
    if inner is None or not isinstance(scale, Const):
        return False
    x, const = _split(inner)
    if not x.type.is_signed and const.value >= 1 << 31:
        return False          # an unsigned "x - c" spelled as a wrapping add: leave it
    product = Instr("mul_wide", instr.type, [x, scale], dict(instr.attrs), loc=instr.loc)
    instr.block.instrs.insert(instr.block.instrs.index(instr), product)
    product.block = instr.block
    instr.op, instr.attrs = "add", {}
    instr.args = [product, Const(instr.type, int(const.value) * int(scale.value))]
    return True
