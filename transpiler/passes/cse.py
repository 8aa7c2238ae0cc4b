"""Common-subexpression elimination: value numbering over the dominator tree.

An instruction is replaced by an identical one (same op, type, attrs and args, commutative
args in either order) that dominates it. Only pure ops take part, and loads only on the
read-only path (`nc=True`): other loads may see a store in between. Phis merge only with
identical phis of the same block.

Cheap integer and predicate arithmetic (`REMAT_OPS`) is not reused across a block barrier
(`syncthreads`) on the dominator path: recomputing `j = (k * BLOCK + t) * 4` and `j < n` after a
block reduction costs a few instructions, while keeping one integer and one predicate per
unrolled chunk live through it raised the register count above nvcc's (BENCHMARKS.md). The
recomputed value still counts as the earlier one in the keys of what uses it, so a read-only
load or a float computed from it is shared as before.
"""
from __future__ import annotations

from ..cfg import dom_tree
from ..interp import PURE_OPS
from ..ir import Function, Instr

COMMUTATIVE = frozenset({"add", "mul", "min", "max", "and", "or", "xor", "mul_hi", "mul_wide"})
NUMBERED = PURE_OPS | {"param", "sreg", "addr_of", "extract", "tensor_map"}
REMAT_OPS = frozenset({"add", "sub", "mul", "shl", "shr", "and", "or", "xor", "not", "min",
                       "max", "cmp", "cvt", "mul_wide"})


def run(func: Function) -> Function:
    dom = dom_tree(func)
    table: dict = {}        # value key -> (the instruction computing it, its barrier epoch)
    replaced: dict = {}     # removed instruction -> the one computing its value
    undo: dict = {}         # block -> [(key, entry it hid or None)], to restore on leaving
    same: dict = {}         # recomputed instruction -> the earlier one with its value
    todo = [(func.entry, 0)]
    while todo:
        block, epoch = todo.pop()
        if epoch is None:
            for key, hidden in reversed(undo.pop(block)):
                if hidden is None:
                    del table[key]
                else:
                    table[key] = hidden
            continue
        todo.append((block, None))
        undo[block], end_epoch = _number_block(block, table, replaced, same, epoch)
        todo.extend((child, end_epoch) for child in dom.children[block])
    if replaced:
        _forward_late_uses(func, replaced, dom.idom)
        func.edits += 1
    return func


def _number_block(block, table: dict, replaced: dict, same: dict, epoch: int) -> tuple[list, int]:
    """Replace the instructions of `block` already in `table`, add the others; returns the
    table changes to undo and the barrier epoch at the block's end.

    An instruction's args are made to use the replacements first: uses other than phi args
    are dominated by the definition, so the walk has seen it."""
    changes = []
    for group in (block.phis, block.instrs):
        removed = False
        for instr in group:
            if instr.op == "barrier":
                epoch += 1
                continue
            if replaced:
                for arg in instr.args:
                    if arg.__class__ is Instr and arg in replaced:   # (a Const hashes in Python)
                        instr.args = [replaced.get(a, a) if a.__class__ is Instr else a
                                      for a in instr.args]
                        break
            key = value_key(instr, same)
            if key is None:
                continue
            try:
                known = table.get(key)
            except TypeError:   # an attribute value that cannot be hashed
                continue
            if known is not None and (known[1] == epoch or not _rematerialised(instr)):
                replaced[instr] = known[0]
                instr.block = None
                removed = True
            else:
                if known is not None:
                    same[instr] = same.get(known[0], known[0])
                changes.append((key, known))
                table[key] = (instr, epoch)
        if removed:
            group[:] = [instr for instr in group if instr.block is not None]
    return changes, epoch


def _rematerialised(instr: Instr) -> bool:
    """Cheap integer or predicate arithmetic, recomputed rather than kept across a barrier."""
    return instr.op in REMAT_OPS and instr.type.kind != "float"


def _forward_args(instr: Instr, replaced: dict) -> None:
    for arg in instr.args:
        if arg.__class__ is Instr and arg in replaced:   # (a Const would hash in Python)
            instr.args = [replaced.get(a, a) if a.__class__ is Instr else a for a in instr.args]
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


def value_key(instr: Instr, same: dict | None = None):
    """A hashable key equal for instructions that compute the same value, or None.

    Args compare as values do (Consts by value, everything else by identity, a recomputed
    value as the one it repeats, `same`); the two args of a commutative op as a set (a pair of
    equal args is a one-element set)."""
    op = instr.op
    if op == "phi":
        return ("phi", instr.block, tuple(instr.args))
    if op not in NUMBERED and not (op in _LOADS and instr.attrs.get("nc")):
        return None
    args = instr.args
    if same:
        args = [same.get(a, a) if a.__class__ is Instr else a for a in args]
    if op in COMMUTATIVE and len(args) == 2:
        args = frozenset(args)
    else:
        args = tuple(args)
    attrs = instr.attrs
    if not attrs:
        return (op, instr.type.name, args, ())
    return (op, instr.type.name, args,
            tuple(attrs.items()) if len(attrs) == 1 else tuple(sorted(attrs.items())))


_LOADS = frozenset({"load", "vload"})
