"""Loop-invariant code motion: pure, non-trapping instructions whose args are all defined
outside a loop move to the loop's preheader (created when missing), innermost loops first.

Loads stay (they may fault, and a store in the loop may change them), as do integer
divisions by anything but a nonzero constant (they may trap) and anything with effects.
Instructions of conditionally executed blocks are hoisted too: none of them can fault.
"""
from __future__ import annotations

from ..cfg import Loop, block_order, dom_tree, natural_loops
from ..interp import PURE_OPS
from ..ir import Block, Const, Function, Instr, add_pred

HOISTABLE = PURE_OPS | {"param", "sreg", "addr_of", "tensor_map"}
DIVISIONS = frozenset({"div", "rem", "floordiv", "floormod"})


def run(func: Function) -> Function:
    loops = natural_loops(func, dom_tree(func))
    if not loops:
        return func
    # each block's place in the code's order; a new preheader's just before its header's
    position = {block: float(k) for k, block in enumerate(block_order(func))}
    names = {block.name for block in func.blocks}
    changed = False
    for loop in loops:
        preheader = ensure_preheader(func, loop, names)
        if preheader is None:
            continue
        if preheader not in position:
            position[preheader] = position[loop.header] - 0.5
            changed = True
        changed |= _hoist(loop, preheader, position)
    func.edits += changed
    return func


def can_hoist(instr: Instr) -> bool:
    if instr.op not in HOISTABLE:
        return False
    if instr.op in DIVISIONS and not instr.type.is_float:
        divisor = instr.args[1]
        return isinstance(divisor, Const) and divisor.value != 0
    return True


def _hoist(loop: Loop, preheader: Block, position: dict) -> bool:
    """Move the loop's invariant instructions to `preheader`, its blocks taken in the code's
    order (`position`); whether there were any."""
    body, moved = loop.blocks, False
    for block in sorted((b for b in body if b in position), key=position.__getitem__):
        kept = []
        for instr in block.instrs:
            if can_hoist(instr) and all(
                    not isinstance(a, Instr) or a.block not in body for a in instr.args):
                preheader.insert_before_terminator(instr)
                moved = True
            else:
                kept.append(instr)
        block.instrs = kept
    return moved


def ensure_preheader(func: Function, loop: Loop, names: set | None = None) -> Block | None:
    """The loop's preheader, made (and added to the enclosing loops) when it has none;
    `names`: the function's block names (kept up to date), to name it."""
    existing = loop.preheader()
    if existing is not None:
        return existing
    header = loop.header
    outside = [p for p in header.preds if p not in loop.blocks]
    if not outside:
        return None
    preheader = Block(_unique_name(func, header.name + "_pre", names))
    preheader.func = func
    func.blocks.insert(func.blocks.index(header), preheader)
    incoming = _move_edges(header, outside, preheader)
    preheader.append(Instr("br", None, targets=[header]))
    add_pred(header, preheader, incoming)
    outer = loop.parent
    while outer is not None:
        outer.blocks.add(preheader)
        outer = outer.parent
    return preheader


def _move_edges(header: Block, outside: list[Block], preheader: Block) -> dict:
    """Redirect the `outside` edges into `header` to `preheader`; merge their phi args there."""
    positions = [header.preds.index(p) for p in outside]
    incoming = {}
    for phi in header.phis:
        args = [phi.args[k] for k in positions]
        if all(a is args[0] or (isinstance(a, Const) and a == args[0]) for a in args):
            incoming[phi] = args[0]
        else:
            incoming[phi] = preheader.append(Instr("phi", phi.type, args, loc=phi.loc))
    for pred in outside:
        term = pred.terminator
        term.targets = [preheader if t is header else t for t in term.targets]
        preheader.preds.append(pred)
    keep = [k for k in range(len(header.preds)) if k not in set(positions)]
    header.preds = [header.preds[k] for k in keep]
    for phi in header.phis:
        phi.args = [phi.args[k] for k in keep]
    return incoming


def _unique_name(func: Function, name: str, names: set | None = None) -> str:
    if names is None:
        names = {b.name for b in func.blocks}
    candidate, n = name, 1
    while candidate in names:
        n += 1
        candidate = f"{name}{n}"
    names.add(candidate)
    return candidate
