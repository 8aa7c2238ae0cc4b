"""Turn `floordiv`/`floormod` into `div`/`rem` where both operands are provably >= 0.

For a >= 0 and b > 0 Python's floor semantics and C's truncation agree (b == 0 is undefined
either way). A division by a constant power of two of a non-negative value becomes a shift
or a mask. The proof is a greatest fixed point over the function: every value starts out
assumed non-negative and loses that as soon as its rule fails, so loop phis such as
`i = phi(0, i + 1)` keep it. Like the CUDA C programmer, it assumes that sums of non-negative
indices do not overflow. Products can (ptxpy integers wrap), so a signed `mul` or `shl` counts
only when it is thread-index arithmetic: special registers times each other or small constants.
"""
from __future__ import annotations

import re

from ..cfg import reverse_postorder
from ..ir import Const, Function, Instr, Undef, Value, u32

_SHAPE_PARAM = re.compile(r"_shape\d+$")
_BOTH = frozenset({"add", "mul_wide", "min", "or", "xor", "div", "floordiv"})
_SMALL = 1024   # a factor no larger than a block dimension


def run(func: Function) -> Function:
    proof = NonNegative(func)
    for block in func.blocks:
        for instr in block.instrs:
            if instr.op in ("floordiv", "floormod", "div", "rem") and instr.type.is_int:
                _rewrite_division(instr, proof)
    return func


def _rewrite_division(instr: Instr, proof: "NonNegative") -> None:
    a, b = instr.args
    if not (proof.holds(a) and proof.holds(b)):
        return
    floor_op = instr.op in ("floordiv", "floormod")
    is_div = instr.op in ("div", "floordiv")
    if isinstance(b, Const) and b.value > 0 and b.value & (b.value - 1) == 0:
        k = b.value.bit_length() - 1
        instr.op = "shr" if is_div else "and"
        instr.args = [a, Const(u32, k) if is_div else Const(b.type, b.value - 1)]
    elif floor_op:
        instr.op = "div" if is_div else "rem"


class NonNegative:
    """Which integer values of a function are >= 0 (every value of an unsigned type is)."""

    def __init__(self, func: Function):
        order = [i for b in reverse_postorder(func) for i in b.all_instrs() if i.type is not None]
        self.nonneg: dict[Instr, bool] = dict.fromkeys(order, True)
        changed = True
        while changed:
            changed = False
            for instr in order:
                if self.nonneg[instr] and not self._rule(instr):
                    self.nonneg[instr] = False
                    changed = True

    def holds(self, value: Value) -> bool:
        if isinstance(value, Const):
            return value.type.kind in ("uint", "bool") or value.value >= 0
        if isinstance(value, Undef) or value.type is None:
            return False
        return value.type.kind in ("uint", "bool") or self.nonneg.get(value, False)

    def _rule(self, instr: Instr) -> bool:
        if instr.type.kind in ("uint", "bool"):
            return True
        if not instr.type.is_int:
            return False
        op, args = instr.op, instr.args
        if op == "sreg":
            return True
        if op == "param":
            return bool(_SHAPE_PARAM.search(instr.attrs.get("name", "")))
        if op in _BOTH or op == "phi":
            return all(self.holds(a) for a in args)
        if op in ("max", "and"):
            return any(self.holds(a) for a in args)
        if op == "mul":
            return all(self.holds(a) and _thread_index_factor(a) for a in args)
        if op == "shl":
            return (self.holds(args[0]) and _thread_index_factor(args[0])
                    and isinstance(args[1], Const) and 0 <= args[1].value <= 10)
        if op in ("shr", "rem", "mov"):
            return self.holds(args[0])
        if op == "floormod":
            return self.holds(args[1])
        if op == "select":
            return self.holds(args[1]) and self.holds(args[2])
        if op == "cvt":
            src = args[0].type
            if src.kind in ("uint", "bool"):
                return src.bits < instr.type.bits
            return src.is_int and src.bits <= instr.type.bits and self.holds(args[0])
        return False


def _thread_index_factor(value: Value) -> bool:
    """A special register or a small constant: products of these are thread-index arithmetic."""
    if isinstance(value, Const):
        return 0 <= value.value <= _SMALL
    return isinstance(value, Instr) and value.op == "sreg"
