"""Liveness of virtual registers over the machine CFG (after out-of-SSA)."""
from __future__ import annotations

from .machine import MBlock, MFunction


def registers_read(mfunc: MFunction) -> dict:
    """{instruction: the registers it reads} (`MInstr.uses`, computed once for every pass)."""
    return {instr: instr.uses for block in mfunc.blocks for instr in block.instrs}


def block_uses_defs(block: MBlock, reads: dict) -> tuple[set, set]:
    """Registers read before any write in the block (upward-exposed), and those written."""
    uses = set(block.term.uses) if block.term else set()
    defs = set()
    for instr in reversed(block.instrs):   # a read sees the writes before it only
        if not instr.guard:   # a guarded write may not happen: it kills nothing
            uses.difference_update(instr.dsts)
            defs.update(instr.dsts)
        uses.update(reads[instr])
    return uses, defs


def live_out(mfunc: MFunction, reads: dict | None = None) -> dict[MBlock, set]:
    """The registers live at the end of each block: backward dataflow over a worklist, which
    revisits a block only when what its successors need grew (sets only grow)."""
    reads = registers_read(mfunc) if reads is None else reads
    local = {block: block_uses_defs(block, reads) for block in mfunc.blocks}
    preds: dict[MBlock, list] = {block: [] for block in mfunc.blocks}
    for block in mfunc.blocks:
        for succ in block.succs:
            preds[succ].append(block)
    live_in = {block: set() for block in mfunc.blocks}
    out = {block: set() for block in mfunc.blocks}
    work = list(mfunc.blocks)   # popped from the end: later blocks first
    queued = set(work)
    while work:
        block = work.pop()
        queued.discard(block)
        uses, defs = local[block]
        new_in = uses | (out[block] - defs)
        if len(new_in) == len(live_in[block]):
            continue
        live_in[block] = new_in
        for pred in preds[block]:
            out[pred] |= new_in
            if pred not in queued:
                queued.add(pred)
                work.append(pred)
    return out
