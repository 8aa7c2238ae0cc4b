"""CFG clean-up: fold constant branches, drop unreachable blocks, merge straight-line blocks,
bypass empty forwarding blocks, and lay the blocks out in reverse postorder."""
from __future__ import annotations

from ..ir import Block, Const, Function, Instr, add_pred, set_targets, users
from .copyprop import replace_all_uses


def run(func: Function) -> Function:
    edited = False
    while _clean_up(func):
        edited = True
    order = layout(func)
    func.edits += edited or order != func.blocks
    func.blocks = order
    return func


def _clean_up(func: Function) -> bool:
    """One round of the clean-ups; whether any changed the function."""
    changed = fold_constant_branches(func)
    changed |= remove_unreachable(func)
    changed |= merge_straight_line(func)
    changed |= bypass_forwarding_blocks(func)
    return changed


def layout(func: Function) -> list[Block]:
    """Reverse postorder, visiting each block's first target first (loop bodies before exits)."""
    seen, order = {func.entry}, []
    stack = [(func.entry, iter(reversed(func.entry.succs)))]
    while stack:
        block, succs = stack[-1]
        for succ in succs:
            if succ not in seen:
                seen.add(succ)
                stack.append((succ, iter(reversed(succ.succs))))
                break
        else:
            order.append(block)
            stack.pop()
    order.reverse()
    return order


def make_branch(term: Instr, target: Block) -> None:
    """Turn terminator `term` into `br target` (`target` must be one of its targets)."""
    set_targets(term, [target])
    term.op, term.args = "br", []


def fold_constant_branches(func: Function) -> bool:
    changed = False
    for block in func.blocks:
        term = block.terminator
        if term is not None and term.op == "cbr" and isinstance(term.args[0], Const):
            make_branch(term, term.targets[0 if term.args[0].value else 1])
            changed = True
    return changed


def remove_unreachable(func: Function) -> bool:
    reachable = _reachable(func)
    if len(reachable) == len(func.blocks):
        return False
    for block in func.blocks:
        if block not in reachable and block.terminator is not None:
            set_targets(block.terminator, [])
    func.blocks = [b for b in func.blocks if b in reachable]
    return True


def _reachable(func: Function) -> set[Block]:
    seen, todo = {func.entry}, [func.entry]
    while todo:
        block = todo.pop()
        for succ in block.instrs[-1].targets if block.instrs else ():
            if succ not in seen:
                seen.add(succ)
                todo.append(succ)
    return seen


def merge_straight_line(func: Function) -> bool:
    """Append each block to its predecessor when that is its only one and it has no other."""
    uses = _LazyUsers(func)
    merged: set[Block] = set()
    for block in func.blocks:
        if block in merged:
            continue
        while True:
            term = block.terminator
            if term.op != "br":
                break
            succ = term.targets[0]
            if succ is block or succ is func.entry or succ.preds != [block]:
                break
            _merge_into(block, succ, uses)
            merged.add(succ)
    if merged:
        func.blocks = [b for b in func.blocks if b not in merged]
    return bool(merged)


class _LazyUsers:
    """`ir.users(func)`, computed when first needed (most merges have no phis to replace)."""

    def __init__(self, func: Function):
        self.func, self.map = func, None

    def get(self) -> dict:
        if self.map is None:
            self.map = users(self.func)
        return self.map


def _merge_into(block: Block, succ: Block, uses: _LazyUsers) -> None:
    for phi in succ.phis:
        replace_all_uses(uses.get(), phi, phi.args[0])
        phi.block = None
    block.instrs.pop()
    for instr in succ.instrs:
        instr.block = block
        block.instrs.append(instr)
    for after in succ.succs:
        after.preds = [block if p is succ else p for p in after.preds]
    succ.phis, succ.instrs, succ.preds = [], [], []


def _same(a, b) -> bool:
    return a is b or (isinstance(a, Const) and a == b)


def bypass_forwarding_blocks(func: Function) -> bool:
    """Send the predecessors of a block holding only `br S` straight to S."""
    changed = False
    for block in list(func.blocks):
        if block is func.entry or block.phis or len(block.instrs) != 1:
            continue
        term = block.instrs[0]
        if term.op != "br" or term.targets[0] is block:
            continue
        succ = term.targets[0]
        for pred in list(block.preds):
            changed |= _bypass(pred, block, succ)
        if not block.preds:
            set_targets(term, [])
            func.blocks.remove(block)
            changed = True
    return changed


def _bypass(pred: Block, block: Block, succ: Block) -> bool:
    k = succ.preds.index(block)
    values = {phi: phi.args[k] for phi in succ.phis}
    term = pred.terminator
    if succ in term.targets:
        j = succ.preds.index(pred)
        if term.op != "cbr" or not all(_same(phi.args[j], v) for phi, v in values.items()):
            return False
        make_branch(term, succ)
        return True
    term.targets = [succ if t is block else t for t in term.targets]
    block.preds.remove(pred)
    add_pred(succ, pred, values)
    return True
