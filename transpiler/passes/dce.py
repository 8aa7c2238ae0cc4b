"""Dead-code elimination: keep what effectful instructions and terminators need, drop the rest
(dead phi cycles included)."""
from __future__ import annotations

from ..ir import EFFECT_OPS, Function, Instr


def run(func: Function) -> Function:
    live: set[Instr] = set()
    work = [i for b in func.blocks for i in b.instrs if i.op in EFFECT_OPS]
    while work:
        instr = work.pop()
        if instr in live:
            continue
        live.add(instr)
        for arg in instr.args:
            if arg.__class__ is Instr and arg not in live:
                work.append(arg)
    changed = False
    for block in func.blocks:
        changed |= _keep_only(block, live)
    func.edits += changed
    return func


def _keep_only(block, live: set) -> bool:
    """Drop the instructions of `block` not in `live` (and detach them); whether there were any."""
    dropped = False
    for group in (block.phis, block.instrs):
        if not live.issuperset(group):
            for instr in group:
                if instr not in live:
                    instr.block = None
            group[:] = [instr for instr in group if instr in live]
            dropped = True
    return dropped
