"""Hoisting of repeated integer arithmetic out of the arms of branches.

`if j < cols: v = x[row, j:j + 4]`, unrolled, puts each chunk's address arithmetic inside its
own branch arm. Arms are siblings, so `cse` cannot merge what they have in common (after
`reassoc`, `x + mul_wide(row * cols + t * 4, 4)` in every chunk), and ptxas then computes each
address on its own (a parameter reload and a 64-bit multiply-add per chunk). Moved into the
block that branches (which dominates the next chunk's), the copies become one for `cse`, and
each access keeps only its constant offset (`[%rd4+4096]`).

Only what at least two arms compute alike is moved (elsewhere, moving it would only lengthen
live ranges), and only non-trapping integer arithmetic whose operands are available in the
branching block: executing it where the arm would not have run changes no result.

A load is moved only where both arms of one branch make it (`k = x[i] if c else f(x[i])`): it
runs on every path then, so running it before the branch loads nothing new, and one load serves
both. Only a plain load that comes before anything with an effect in its arm (a store, an
atomic, a barrier, a shuffle), of the same type, state space and address in both arms.
"""
from __future__ import annotations

from collections import Counter

from ..cfg import DomTree, block_order, branch_head, dom_tree
from ..ir import EFFECT_OPS, Const, Function, Instr, users
from .copyprop import replace_all_uses
from .cse import COMMUTATIVE

HOISTED_OPS = frozenset({"add", "sub", "mul", "mul_wide", "shl", "and", "or", "xor", "min",
                         "max", "cvt"})


def run(func: Function) -> Function:
    arms = _arms(func)
    if len(arms) < 2:
        return func
    keys: dict[int, int] = {}
    numbers: dict[tuple, int] = {}
    counts = Counter()
    for arm in arms:
        for key in {_key(i, keys, numbers) for i in arm.instrs if _candidate(i)}:
            counts[key] += 1
    repeated = {key for key, n in counts.items() if n > 1}
    if repeated:
        dom = dom_tree(func)   # (nothing has changed yet)
        moved = [_hoist_from(arm, head, dom, lambda i: keys.get(id(i)) in repeated)
                 for arm, head in arms.items()]
        func.edits += any(moved)
        func.edits += _merge_loads_of_both_arms(func, arms, dom, keys, numbers)
    return func


def _merge_loads_of_both_arms(func: Function, arms: dict, dom: DomTree, keys: dict,
                              numbers: dict) -> bool:
    """Move a load that both arms of one branch make into the branching block, once."""
    pairs: dict = {}
    for arm, head in arms.items():
        pairs.setdefault(head, []).append(arm)
    uses = None
    for head, both in pairs.items():
        if len(both) != 2:
            continue
        first, second = (_leading_loads(arm, keys, numbers) for arm in both)
        for key, load in first.items():
            other = second.get(key)
            address = load.args[0]
            if other is None or not (not isinstance(address, Instr) or address.block is head
                                     or dom.dominates(address.block, head)):
                continue
            uses = uses if uses is not None else users(func)
            load.block.instrs.remove(load)
            head.insert_before_terminator(load)
            other.block.instrs.remove(other)
            other.block = None
            replace_all_uses(uses, other, load)
    return uses is not None


def _leading_loads(arm, keys: dict, numbers: dict) -> dict:
    """{(type, attributes, address's value number): load} of `arm`'s plain loads before its
    first instruction with an effect."""
    found: dict = {}
    for instr in arm.instrs:
        if instr.op in EFFECT_OPS:
            break
        if instr.op == "load":
            address = instr.args[0]
            number = (_key(address, keys, numbers) if isinstance(address, Instr)
                      and _candidate(address) else ("value", id(address)))
            found.setdefault((instr.type.name, tuple(sorted(instr.attrs.items())), number), instr)
    return found


def _arms(func: Function) -> dict:
    """{arm: the block branching to it}, in reverse postorder."""
    arms = {}
    for block in block_order(func):
        head = branch_head(block)
        if head is not None:
            arms[block] = head
    return arms


def _candidate(instr: Instr) -> bool:
    if instr.op not in HOISTED_OPS or instr.type is None or not instr.type.is_int:
        return False
    return instr.op != "cvt" or (not instr.attrs.get("mode") and instr.args[0].type.is_int)


def _key(root: Instr, keys: dict, numbers: dict) -> int:
    """A value number, equal for instructions that compute the same value from the same
    operands, where an operand computed by such an instruction counts by its own number.
    Numbered operands first, with a stack: an unrolled chain can be thousands long."""
    stack = [root]
    while stack:
        instr = stack[-1]
        if id(instr) in keys:
            stack.pop()
            continue
        pending = [a for a in instr.args
                   if isinstance(a, Instr) and _candidate(a) and id(a) not in keys]
        if pending:
            stack.extend(pending)
            continue
        args = [("const", a) if isinstance(a, Const)
                else keys[id(a)] if isinstance(a, Instr) and _candidate(a)
                else ("value", id(a)) for a in instr.args]
        attrs = tuple(sorted(instr.attrs.items())) if instr.attrs else ()
        operands = frozenset(args) if instr.op in COMMUTATIVE and len(args) == 2 else tuple(args)
        structure = (instr.op, instr.type.name, attrs, operands)
        keys[id(instr)] = numbers.setdefault(structure, len(numbers))
        stack.pop()
    return keys[id(root)]


def _hoist_from(arm, head, dom: DomTree, wanted) -> bool:
    """Move what `wanted` picks of `arm`'s instructions into `head`; whether there was any."""
    moved: list = []
    moved_ids: set = set()
    for instr in arm.instrs:
        if _candidate(instr) and wanted(instr) and all(
                not isinstance(a, Instr) or id(a) in moved_ids
                or (a.block is not None and dom.dominates(a.block, head)) for a in instr.args):
            moved.append(instr)
            moved_ids.add(id(instr))
    if not moved:
        return False
    arm.instrs = [i for i in arm.instrs if id(i) not in moved_ids]
    at = len(head.instrs) - 1
    head.instrs[at:at] = moved
    for instr in moved:
        instr.block = head
    return True
