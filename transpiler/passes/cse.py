"""Common-subexpression elimination: value numbering over the dominator tree.

An instruction is replaced by an identical one (same op, type, attrs and args, commutative
args in either order) that dominates it. Only pure ops take part, and loads only on the
read-only path (`nc=True`): other loads may see a store in between. Phis merge only with
identical phis of the same block.
"""
from __future__ import annotations

from ..cfg import DomTree
from ..interp import PURE_OPS
from ..ir import Const, Function, Instr, remove_instr, users
from .copyprop import replace_all_uses

COMMUTATIVE = frozenset({"add", "mul", "min", "max", "and", "or", "xor", "mul_hi", "mul_wide"})
NUMBERED = PURE_OPS | {"param", "sreg", "addr_of", "extract"}


def run(func: Function) -> Function:
    dom = DomTree(func)
    uses = users(func)
    table: dict = {}
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
        block_keys[block] = _number_block(block, table, uses)
    return func



def _number_block(block, table: dict, uses: dict) -> list:
    added = []
    for instr in list(block.all_instrs()):
        key = value_key(instr)
        if key is None:
            continue
        known = table.get(key)
        if known is not None:
            replace_all_uses(uses, instr, known)
            remove_instr(instr)
        else:
            table[key] = instr
            added.append(key)
    return added


def value_key(instr: Instr):
    """A hashable key equal for instructions that compute the same value, or None."""
    op = instr.op
    if op == "phi":
        return ("phi", instr.block, tuple(map(_arg_key, instr.args)))
    if op not in NUMBERED and not (op in ("load", "vload") and instr.attrs.get("nc")):
        return None
    args = [_arg_key(a) for a in instr.args]
    if op in COMMUTATIVE:
        args.sort(key=repr)
    key = (op, instr.type, tuple(args), tuple(sorted(instr.attrs.items())))
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _arg_key(value):
    # Consts compare by value; every other value by identity
    return value if isinstance(value, Const) else ("v", id(value))
