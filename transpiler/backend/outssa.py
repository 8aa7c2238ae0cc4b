"""Out-of-SSA: phis become copies on the incoming edges.

Critical edges into blocks with phis are split first (the lost-copy problem); then the phis of
a block are, per incoming edge, one parallel copy, sequentialised so that no copy overwrites a
register another copy of the same group still reads (the swap problem: a cycle is broken with
one temporary). Copies carry `phi_copy=True` so the allocator coalesces them first.
"""
from __future__ import annotations

from .isel import copy_instr
from .machine import MBlock, MFunction, Terminator, VReg


def destruct_ssa(mfunc: MFunction) -> None:
    split_critical_edges(mfunc)
    for block in mfunc.blocks:
        if block.phis:
            _lower_phis(block)


def split_critical_edges(mfunc: MFunction) -> None:
    after, before = {}, {}    # block -> the edge blocks placed right after / before it
    for block in list(mfunc.blocks):
        if not block.phis or len(block.preds) < 2:
            continue
        for k, pred in enumerate(block.preds):
            if len(pred.succs) > 1:
                block.preds[k] = _split(pred, block, after, before)
    if after or before:     # (placed once: an insert at each split was quadratic)
        mfunc.blocks = [placed for block in mfunc.blocks
                        for placed in (*before.get(block, ()), block, *after.get(block, ()))]


def _split(pred: MBlock, succ: MBlock, after: dict, before: dict) -> MBlock:
    edge = MBlock(f"{pred.name}_{succ.name}", preds=[pred],
                  term=Terminator("br", [succ], loc=pred.term.loc))
    targets = pred.term.targets
    is_else = targets.index(succ) == len(targets) - 1 and len(targets) == 2
    targets[targets.index(succ)] = edge
    # place it where a branch is saved: after pred when pred would fall through to it
    # (the latest split first), otherwise just before succ, which it then falls through to
    if is_else:
        after.setdefault(pred, []).insert(0, edge)
    else:
        before.setdefault(succ, []).append(edge)
    return edge


def _lower_phis(block: MBlock) -> None:
    for k, pred in enumerate(block.preds):
        pairs = [(phi.dst, phi.args[k]) for phi in block.phis if phi.args[k] is not None]
        copies = sequentialise(pairs)
        for copy in copies:
            copy.phi_copy = True
        if len(pred.succs) == 1:
            pred.instrs.extend(copies)
        else:   # block has this one pred (else the edge was split): copy on entry
            block.instrs[:0] = copies
    block.phis = []


def sequentialise(pairs: list) -> list:
    """Ordered copies with the effect of the parallel copy `pairs` [(dst VReg, src)]."""
    pending = {dst: src for dst, src in pairs if src is not dst}
    out = []
    while pending:
        read = {src for src in pending.values() if isinstance(src, VReg)}
        ready = [dst for dst in pending if dst not in read]
        if ready:
            for dst in ready:
                out.append(copy_instr(dst, pending.pop(dst)))
            continue
        # only cycles remain: save one destination, then read the saved copy instead
        dst = next(iter(pending))
        saved = VReg(dst.cls)
        out.append(copy_instr(saved, dst))
        for key, src in pending.items():
            if src is dst:
                pending[key] = saved
    return out
