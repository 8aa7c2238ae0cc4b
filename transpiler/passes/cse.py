"""Common-subexpression elimination: value numbering over the dominator tree.

An instruction is replaced by an identical one (same op, type, attrs and args, commutative
args in either order) that dominates it. Only pure ops take part, and loads only on the
read-only path (`nc=True`): other loads may see a store in between. Phis merge only with
identical phis of the same block.
"""
from __future__ import annotations

from ..cfg import DomTree
from ..interp import PURE_OPS
from ..ir import Function, Instr

COMMUTATIVE = frozenset({"add", "mul", "min", "max", "and", "or", "xor", "mul_hi", "mul_wide"})
NUMBERED = PURE_OPS | {"param", "sreg", "addr_of", "extract"}


def run(func: Function) -> Function:
    dom = DomTree(func)
    table: dict = {}        # value key -> the instruction computing it, in dominating blocks
    replaced: dict = {}     # removed instruction -> the one computing its value
    block_keys: dict = {}
    todo = [(func.entry, True)]
    while todo:
        block, entering = todo.pop()
        if not entering:
            for key in block_keys.pop(block):
                del table[key]
            continue
        todo.append((block, False))
        todo.extend((child, True) for child in dom.children[block])
        block_keys[block] = _number_block(block, table, replaced)
    if replaced:
        _forward_late_uses(func, replaced, dom.idom)
    return func


def _number_block(block, table: dict, replaced: dict) -> list:
    """Replace the instructions of `block` already in `table`, add the others; their keys.

    An instruction's args are made to use the replacements first: uses other than phi args
    are dominated by the definition, so the walk has seen it."""
    added = []
    for group in (block.phis, block.instrs):
        removed = False
        for instr in group:
            if replaced:
                for arg in instr.args:
                    if arg in replaced:
                        instr.args = [replaced.get(a, a) for a in instr.args]
                        break
            key = value_key(instr)
            if key is None:
                continue
            try:
                known = table.get(key)
            except TypeError:   # an attribute value that cannot be hashed
                continue
            if known is not None:
                replaced[instr] = known
                instr.block = None
                removed = True
            else:
                table[key] = instr
                added.append(key)
        if removed:
            group[:] = [instr for instr in group if instr.block is not None]
    return added


def _forward_args(instr: Instr, replaced: dict) -> None:
    for arg in instr.args:
        if arg in replaced:
            instr.args = [replaced.get(a, a) for a in instr.args]
            return


def _forward_late_uses(func: Function, replaced: dict, walked: dict) -> None:
    """The uses the walk saw before the replacement: phi args (along back edges), and those in
    blocks it does not reach."""
    for block in func.blocks:
        for phi in block.phis:
            _forward_args(phi, replaced)
        if block not in walked:
            for instr in block.instrs:
                _forward_args(instr, replaced)


def value_key(instr: Instr):
    """A hashable key equal for instructions that compute the same value, or None.

    Args compare as values do (Consts by value, everything else by identity); the two args of
    a commutative op as a set (a pair of equal args is a one-element set)."""
    op = instr.op
    if op == "phi":
        return ("phi", instr.block, tuple(instr.args))
    if op not in NUMBERED and not (op in _LOADS and instr.attrs.get("nc")):
        return None
    args = instr.args
    if op in COMMUTATIVE and len(args) == 2:
        args = frozenset(args)
    else:
        args = tuple(args)
    attrs = instr.attrs
    return (op, instr.type.name, args, tuple(sorted(attrs.items())) if attrs else ())


_LOADS = frozenset({"load", "vload"})
