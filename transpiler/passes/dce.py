"""Dead-code elimination: keep what effectful instructions and terminators need, drop the rest
(dead phi cycles included)."""
from __future__ import annotations

from ..ir import Function, Instr


def run(func: Function) -> Function:
    live: set[Instr] = set()
    work = [i for b in func.blocks for i in b.instrs if i.has_side_effects]
    while work:
        instr = work.pop()
        if instr in live:
            continue
        live.add(instr)
        work.extend(a for a in instr.args if isinstance(a, Instr) and a not in live)
    for block in func.blocks:
        for instr in block.all_instrs():
            if instr not in live:
                instr.block = None
        block.phis = [p for p in block.phis if p in live]
        block.instrs = [i for i in block.instrs if i in live]
    return func
