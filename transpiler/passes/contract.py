"""FMA contraction under `fast_math`: `a * b + c` -> `fma(a, b, c)`, one rounding instead of two.

Only under `fast_math=True` (`func.options`): by default ptxpy keeps IEEE multiplication and
addition, each rounded, so results match NumPy bit for bit (the backend writes `mul.rn`/`add.rn`,
which ptxas never fuses on its own). It is what nvcc does by default (`--fmad=true`) and Triton
with `enable_fp_fusion`; `ptxpy.fma(a, b, c)` asks for the fused form explicitly in any mode.

Rewritten, on f16, bf16, f32 and f64, where the multiplication has no other use and sits in the
same block as the addition (so nothing is computed twice, and a product hoisted out of a loop
stays there), and where both carry `contract=True` (the SSA builder sets it on the float
`add sub mul` of kernel code compiled under fast_math; the math library's code, inlined with
fast_math off, keeps exact operations, which its error analysis needs):

- `a * b + c` and `c + a * b` -> `fma(a, b, c)`
- `a * b - c` -> `fma(a, b, -c)`
- `c - a * b` -> `fma(-a, b, c)`

(negation is exact: a constant is negated in place, a value by a `neg`, which ptxas folds into
the FFMA's operand).
"""
from __future__ import annotations

from ..ir import Const, Function, Instr, remove_instr, users

FLOAT_TYPES = ("f16", "bf16", "f32", "f64")


def run(func: Function) -> Function:
    if not func.options.get("fast_math"):
        return func
    uses = users(func)
    changed = False
    for block in func.blocks:
        for instr in list(block.instrs):
            if instr.op in ("add", "sub") and _contractible(instr):
                changed |= _contract(instr, uses)
    func.edits += changed
    return func


def _contractible(instr: Instr) -> bool:
    return (instr.type is not None and instr.type.name in FLOAT_TYPES
            and bool(instr.attrs.get("contract")))


def _product(value, add: Instr, uses: dict) -> Instr | None:
    """`value` if it is a multiplication that may be fused into `add`."""
    if (isinstance(value, Instr) and value.op == "mul" and value.type == add.type
            and value.block is add.block and _contractible(value)
            and uses.get(value) == [add] and add.args[0] is not add.args[1]):
        return value
    return None


def _contract(instr: Instr, uses: dict) -> bool:
    """`instr` made an `fma` of the product it adds, where it may be; whether it was."""
    x, y = instr.args
    if _product(x, instr, uses) is not None:          # a*b + y, a*b - y
        mul, other = x, y
        addend = other if instr.op == "add" else _negate(other, instr)
        a, b = mul.args
    elif _product(y, instr, uses) is not None:        # x + a*b, x - a*b
        mul, addend = y, x
        a, b = mul.args
        if instr.op == "sub":
            if isinstance(b, Const) and not isinstance(a, Const):
                a, b = b, a
            a = _negate(a, instr)
    else:
        return False
    instr.op, instr.attrs = "fma", {}
    instr.args = [a, b, addend]
    remove_instr(mul)   # (`uses` is only asked about products, whose single user is unchanged)
    return True


def _negate(value, before: Instr):
    """-value: a constant negated, or a `neg` inserted before `before`."""
    if isinstance(value, Const):
        return Const(value.type, -value.value)
    neg = Instr("neg", value.type, [value], loc=before.loc)
    block = before.block
    block.instrs.insert(block.instrs.index(before), neg)
    neg.block = block
    return neg
