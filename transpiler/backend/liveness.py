"""Liveness of virtual registers over the machine CFG (after out-of-SSA)."""
from __future__ import annotations

from .machine import MBlock, MFunction


def block_uses_defs(block: MBlock) -> tuple[set, set]:
    """Registers read before any write in the block (upward-exposed), and those written."""
    uses, defs = set(), set()
    for instr in block.instrs:
        uses.update(r for r in instr.uses if r not in defs)
        if not instr.guard:   # a guarded write may not happen: it kills nothing
            defs.update(instr.dsts)
    if block.term:
        uses.update(r for r in block.term.uses if r not in defs)
    return uses, defs


def live_out(mfunc: MFunction) -> dict[MBlock, set]:
    """The registers live at the end of each block (backward dataflow to a fixed point)."""
    local = {block: block_uses_defs(block) for block in mfunc.blocks}
    live_in = {block: set() for block in mfunc.blocks}
    out = {block: set() for block in mfunc.blocks}
    changed = True
    while changed:
        changed = False
        for block in reversed(mfunc.blocks):
            out[block] = set().union(*(live_in[s] for s in block.succs))
            uses, defs = local[block]
            new_in = uses | (out[block] - defs)
            if new_in != live_in[block]:
                live_in[block] = new_in
                changed = True
    return out
