"""CFG clean-up: fold constant branches and those a dominating branch decides, drop unreachable
blocks, merge straight-line blocks, bypass empty forwarding blocks, and lay the blocks out in
reverse postorder."""
from __future__ import annotations

from ..cfg import dom_tree, facts_along_dominators
from ..ir import Block, Const, Function, Instr, add_pred, set_targets, users
from .copyprop import replace_all_uses


def run(func: Function) -> Function:
    edited = fold_known_branches(func)
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


def fold_known_branches(func: Function) -> bool:
    """Give a constant condition to each branch on a bool (or its `not`) that a dominating
    branch on the same bool decided: in `if not v: if v: ...` the inner body is unreachable,
    and `fold_constant_branches` then drops it. (The H100's ptxas for sm_80 crashed on such
    dead code: docs/ptx-dialect.md.)"""
    branches = [b.terminator for b in func.blocks
                if b.terminator is not None and b.terminator.op == "cbr"]
    atoms = [atom for term in branches for atom in _atoms(term.args[0])]
    if len(atoms) == len(set(atoms)):
        return False     # no two branches test one value: none decides another
    changed = False
    for block, facts in facts_along_dominators(dom_tree(func), _learned).items():
        own = block.terminator
        if facts and own is not None and own.op == "cbr":
            value = _decided(facts, own.args[0])
            if value is not None:
                own.args[0] = Const(own.args[0].type, value)
                changed = True
    return changed


def _learned(facts: dict, term: Instr, block: Block) -> dict:
    """`facts` and what the branch `term` taken to `block` tells."""
    facts = dict(facts)
    _learn(facts, term.args[0], block is term.targets[0])
    return facts


def _atoms(cond) -> list:
    """The values a branch condition is made of through `not`, `and`, `or`."""
    if cond.__class__ is not Instr:
        return []
    if cond.op == "not":
        return _atoms(cond.args[0])
    if cond.op in ("and", "or") and cond.type.is_bool:
        return [cond] + _atoms(cond.args[0]) + _atoms(cond.args[1])
    return [cond]


def _learn(facts: dict, cond, holds: bool) -> None:
    """Record that `cond` is `holds`, and what follows for its parts."""
    if cond.__class__ is not Instr:
        return
    facts[cond] = holds
    if cond.op == "not":
        _learn(facts, cond.args[0], not holds)
    elif cond.type.is_bool and (cond.op, holds) in (("and", True), ("or", False)):
        _learn(facts, cond.args[0], holds)
        _learn(facts, cond.args[1], holds)


def _decided(facts: dict, cond):
    """What `cond` is where `facts` hold, or None if they do not say."""
    if cond.__class__ is not Instr:
        return None
    if cond in facts:
        return facts[cond]
    if cond.op == "not":
        inner = _decided(facts, cond.args[0])
        return None if inner is None else not inner
    return None


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
            merge_into(block, succ, uses.get)
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


def merge_into(block: Block, succ: Block, use_map) -> None:
    """Append `succ` (whose one predecessor is `block`, ending in `br succ`) to `block`; its
    phis, each of one argument, become that argument (`use_map()`: the `ir.users` map, kept)."""
    for phi in succ.phis:
        replace_all_uses(use_map(), phi, phi.args[0])
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
