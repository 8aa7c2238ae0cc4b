"""Liveness of virtual registers over the machine CFG (after out-of-SSA).

Sets of registers are Python ints used as bitsets: bit `k` is register `Registers.regs[k]`
(union, difference and comparison of whole sets in a few machine words each).
"""
from __future__ import annotations

from .machine import MBlock, MFunction, VReg


class Registers:
    """The registers a function's instructions and branches name, numbered densely in the
    order of their ids (a lower number is a lower id), with what each instruction reads and
    writes as bitsets."""

    __slots__ = ("regs", "bit", "reads", "writes", "reads_mask", "class_mask", "copies")

    def __init__(self, mfunc: MFunction):
        self.reads: dict = {}   # instruction -> the registers it reads (`MInstr.uses`)
        self.copies: set = set()   # the instructions that are `MInstr.is_copy`
        named = set()
        for block in mfunc.blocks:
            for instr in block.instrs:
                read = self.reads[instr] = instr.uses
                named.update(read)
                named.update(instr.dsts)
                if instr.opcode.startswith("mov.") and instr.is_copy:
                    self.copies.add(instr)
            if block.term and block.term.cond is not None:
                named.add(block.term.cond)
        self.regs: list[VReg] = sorted(named, key=_reg_id)
        self.bit: dict[VReg, int] = {reg: 1 << n for n, reg in enumerate(self.regs)}
        self.class_mask: dict[str, int] = {}    # register class -> bitset of its registers
        for reg, bit in self.bit.items():
            self.class_mask[reg.cls] = self.class_mask.get(reg.cls, 0) | bit
        mask = self.mask
        self.reads_mask = {instr: mask(read) for instr, read in self.reads.items()}
        self.writes = {instr: mask(instr.dsts) for instr in self.reads}   # bitsets of dsts

    def mask(self, regs) -> int:
        """The bitset of `regs`."""
        bits, bit_of = 0, self.bit
        for reg in regs:
            bits |= bit_of[reg]
        return bits


def _reg_id(reg: VReg) -> int:
    return reg.id


def block_uses_defs(block: MBlock, registers: Registers) -> tuple[int, int]:
    """Registers read before any write in the block (upward-exposed), and those written."""
    uses = registers.mask(block.term.uses) if block.term else 0
    defs = 0
    reads, writes = registers.reads_mask, registers.writes
    for instr in reversed(block.instrs):   # a read sees the writes before it only
        if not instr.guard:   # a guarded write may not happen: it kills nothing
            written = writes[instr]
            uses &= ~written
            defs |= written
        uses |= reads[instr]
    return uses, defs


def live_out(mfunc: MFunction, registers: Registers) -> dict[MBlock, int]:
    """The registers live at the end of each block (bitsets): backward dataflow over a
    worklist, which revisits a block only when what its successors need grew (sets only
    grow)."""
    local = {block: block_uses_defs(block, registers) for block in mfunc.blocks}
    preds: dict[MBlock, list] = {block: [] for block in mfunc.blocks}
    for block in mfunc.blocks:
        for succ in block.succs:
            preds[succ].append(block)
    live_in = {block: 0 for block in mfunc.blocks}
    out = {block: 0 for block in mfunc.blocks}
    work = list(mfunc.blocks)   # popped from the end: later blocks first
    queued = set(work)
    while work:
        block = work.pop()
        queued.discard(block)
        uses, defs = local[block]
        new_in = uses | (out[block] & ~defs)
        if new_in == live_in[block]:
            continue
        live_in[block] = new_in
        for pred in preds[block]:
            out[pred] |= new_in
            if pred not in queued:
                queued.add(pred)
                work.append(pred)
    return out
