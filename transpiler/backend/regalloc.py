"""Register allocation: interference graph, copy coalescing, colouring per register class.

PTX registers are virtual (ptxas allocates the hardware ones), so nothing is spilled: the aim
is readable code with few registers per class and no needless `mov`. Copies are coalesced
aggressively whenever their two registers do not interfere, phi copies first and those in
inner loops before outer ones. Colouring tries smallest-last and definition order and keeps
the better one. From `LARGE_GRAPH` registers up, the loops over every edge run on NumPy bit
matrices instead (`bitmatrix`, the same results).
"""
from __future__ import annotations

from collections import Counter

from .liveness import Registers, live_out
from .machine import MBlock, MFunction, VReg

#: registers from which the loops over every edge run on NumPy bit matrices (`bitmatrix`,
#: imported only then); below it, the loops on Python ints are faster
LARGE_GRAPH = 1024


def allocate_registers(mfunc: MFunction) -> None:
    registers = Registers(mfunc)
    keep_selected_predicates_live(mfunc, registers)
    graph = interference_graph(mfunc, registers)
    loops = _loop_bodies(mfunc)
    keep_loop_predicates_apart(mfunc, loops, registers, graph)
    _make_symmetric(graph)
    alias = coalesce(mfunc, loops, registers, graph)
    order = _definition_order(mfunc, alias, registers.reads)
    colours = _number_in_order(colour(registers, graph, alias, order), order)
    for reg in registers.regs:   # every register (those merged away are in `alias`)
        reg.number = colours[_find(alias, reg)]
    _drop_coalesced_copies(mfunc, registers.copies)


def _drop_coalesced_copies(mfunc: MFunction, copies: set) -> None:
    """Remove the copies (`copies`) whose two registers got one number."""
    for block in mfunc.blocks:
        kept = [i for i in block.instrs
                if not (i in copies and i.dsts[0].number == i.srcs[0].number)]
        if len(kept) != len(block.instrs):
            block.instrs = kept


def interference_graph(mfunc: MFunction, registers: Registers) -> list[int]:
    """The neighbours of each register (by its number in `registers`, as a bitset): the
    registers of its class live where it is written, or written with it. One direction only:
    `_make_symmetric` adds the reverse edges once every edge is in (`allocate_registers`)."""
    graph = [0] * len(registers.regs)
    outs = live_out(mfunc, registers)
    reads, writes = registers.reads_mask, registers.writes
    for block in mfunc.blocks:
        live = outs[block]
        if block.term:
            live |= registers.mask(block.term.uses)
        for instr in reversed(block.instrs):
            if instr.dsts:
                _add_interferences(graph, instr, live, registers)
                if not instr.guard:
                    live &= ~writes[instr]
            live |= reads[instr]
    return graph


def _make_symmetric(graph: list) -> None:
    """Add the reverse of every edge. Done once at the end, each edge once: while the graph
    is built, a register's row takes whole live sets at each definition (one `|=`), which
    with many long-lived registers (a wgmma's 128 accumulators, and the copies into them)
    would otherwise cost a step per live register per definition."""
    if len(graph) >= LARGE_GRAPH:
        return _bitmatrix().make_symmetric(graph)
    for n, row in enumerate(list(graph)):
        bit = 1 << n
        while row:
            low = row & -row
            graph[low.bit_length() - 1] |= bit
            row ^= low


def _add_interferences(graph: list, instr, live: int, registers: Registers) -> None:
    """Edges from each register `instr` writes to the others of its class live there (`live`:
    the registers live after it); `_make_symmetric` adds the reverse ones."""
    bit_of, class_mask = registers.bit, registers.class_mask
    copied = bit_of[instr.srcs[0]] if instr in registers.copies else 0   # a copy's two registers hold one value
    several = len(instr.dsts) > 1
    for dst in instr.dsts:
        bit = bit_of[dst]
        same_class = class_mask[dst.cls]
        others = live & same_class
        if several:
            others |= registers.writes[instr] & same_class
        others &= ~(copied | bit)
        graph[bit.bit_length() - 1] |= others


def keep_loop_predicates_apart(mfunc: MFunction, loops: list, registers: Registers,
                               graph: list) -> None:
    """Give each predicate that a loop carries a register that no predicate outside the loop
    uses: the value it enters with is copied in (`mov.pred`), and out after the loop.

    The H100's ptxas takes a predicate register that a branch before a loop tested (or one it
    derives from it, as `p` from a branch on `not p`) as still holding that value inside the
    loop, even where the loop writes it: `if v: for ...: v ^= True` came out as `not v`
    (docs/ptx-dialect.md). In a register of its own the carried value is right.
    """
    bit_of = registers.bit
    writers = None     # predicate bit -> how many blocks write it, made at the first use
    for header, body in loops:
        carried = [instr.dsts[0] for pred in header.preds for instr in pred.instrs
                   if instr.phi_copy and instr.dsts[0].cls == "p"]
        if not carried:
            continue
        if writers is None:
            written = {block: {bit_of[dst] for instr in block.instrs for dst in instr.dsts
                               if dst.cls == "p"} for block in mfunc.blocks}
            writers = Counter(bit for bits in written.values() for bit in bits)
            anywhere = sum(writers)
        inside = Counter(bit for block in body for bit in written[block])
        only_inside = sum(bit for bit, count in inside.items() if count == writers[bit])
        outside = anywhere & ~only_inside    # the predicates some block outside the loop writes
        for reg in carried:     # (one direction: `_make_symmetric` adds the reverse edges)
            bit = bit_of[reg]
            graph[bit.bit_length() - 1] |= outside & ~bit


def keep_selected_predicates_live(mfunc: MFunction, registers: Registers) -> None:
    """Take the predicate a `selp` reads as read also wherever the selected value (or a copy
    of it) is read, so that no other predicate shares its register while the value lives.

    The H100's ptxas moved `selp.s16 %rs1, 1, 0, %p1` past a later write of `%p1` (the
    register of another bool, given by the coalescing of a phi copy): the selected value
    came out as if the later bool had been selected (program 571 of seed 4149,
    docs/ptx-dialect.md).
    """
    bit_of, reads_mask = registers.bit, registers.reads_mask
    selected = {}    # bit of a selected value or a copy of it -> bits of the predicates
    for block in mfunc.blocks:
        for instr in block.instrs:
            if instr.opcode.startswith("selp.") and instr.srcs[2].__class__ is VReg:
                bit = bit_of[instr.dsts[0]]
                selected[bit] = selected.get(bit, 0) | bit_of[instr.srcs[2]]
    if not selected:
        return
    copies = [(bit_of[i.dsts[0]], bit_of[i.srcs[0]]) for i in registers.copies]
    grown = True
    while grown:     # a copy of a copy of a selected value: to a fixed point
        grown = False
        for dst, src in copies:
            preds = selected.get(src, 0)
            if preds & ~selected.get(dst, 0):
                selected[dst] = selected.get(dst, 0) | preds
                grown = True
    any_selected = sum(selected)
    for instr, read in reads_mask.items():
        hit = read & any_selected
        if not hit:
            continue
        extra = 0
        while hit:      # the selected values it reads, one bit each (few, of many selected)
            low = hit & -hit
            extra |= selected[low]
            hit ^= low
        reads_mask[instr] = read | extra


def coalesce(mfunc: MFunction, loops: list, registers: Registers, graph: list) -> dict[VReg, VReg]:
    """Merge the two registers of each copy that do not interfere (in `graph`: afterwards each
    remaining register's row holds the remaining registers it interferes with, a merged one's
    is 0); returns the alias map. While merging, a remaining register's row is the union of
    its members' rows (original registers) and `members` its members: two interfere when one's
    row meets the other's members. Each merge is then two `|=`; the rows are renamed once at
    the end (`_rename_rows`), not at each merge."""
    alias: dict[VReg, VReg] = {}
    depth = loop_depths(mfunc, loops)
    copies = registers.copies
    copies = [(not instr.phi_copy, -depth[block], n, instr)
              for block in mfunc.blocks for n, instr in enumerate(block.instrs) if instr in copies]
    bit_of = registers.bit
    members: dict[int, int] = {}    # row of a register with others merged into it -> their bits
    for *_, instr in sorted(copies, key=lambda c: c[:3]):
        keep, gone = _find(alias, instr.dsts[0]), _find(alias, instr.srcs[0])
        if keep is gone:
            continue
        keep_bit, gone_bit = bit_of[keep], bit_of[gone]
        keep_n, gone_n = keep_bit.bit_length() - 1, gone_bit.bit_length() - 1
        if graph[keep_n] & members.get(gone_n, gone_bit):
            continue
        graph[keep_n] |= graph[gone_n]
        graph[gone_n] = 0
        members[keep_n] = members.get(keep_n, keep_bit) | members.pop(gone_n, gone_bit)
        alias[gone] = keep
    if alias:
        _rename_rows(graph, registers, alias)
    return alias


def _rename_rows(graph: list, registers: Registers, alias: dict) -> None:
    """Each remaining register's row in terms of remaining registers: a member merged away
    stands for the register it was merged into."""
    bit_of = registers.bit
    if len(graph) >= LARGE_GRAPH:
        moved = list(alias)
        return _bitmatrix().rename_columns(graph, [_number(bit_of[reg]) for reg in moved],
                                           [_number(bit_of[_find(alias, reg)]) for reg in moved])
    renamed = {bit_of[reg]: bit_of[_find(alias, reg)] for reg in alias}
    away = registers.mask(alias)
    for n, row in enumerate(graph):
        moved = row & away
        if not moved:
            continue
        row ^= moved
        while moved:
            low = moved & -moved
            row |= renamed[low]
            moved ^= low
        graph[n] = row


def _number(bit: int) -> int:
    """A register's number in the graph, from its bit."""
    return bit.bit_length() - 1


def _bitmatrix():
    from . import bitmatrix
    return bitmatrix


def _find(alias: dict, reg: VReg) -> VReg:
    """The register `reg` was merged into; the path to it shortened on the way (registers
    merged one into the next, as an accumulator's copies across an unrolled loop are, would
    otherwise make each look-up walk the whole chain)."""
    root = reg
    while root in alias:
        root = alias[root]
    while reg is not root:
        parent = alias[reg]
        alias[reg] = root
        reg = parent
    return root


def colour(registers: Registers, graph: list, alias: dict, def_order: list) -> dict[VReg, int]:
    """Numbers from 1 per class for the registers not merged away; neighbours differ. The
    better of two greedy orders."""
    best = None
    present = [reg for reg in registers.regs if reg not in alias]
    # a large graph is packed into a bit matrix once for the three walks over it
    bits = _bitmatrix().packed(graph) if len(graph) >= LARGE_GRAPH else None
    for order in (_smallest_last(registers, graph, present, bits), def_order):
        colours = _greedy(registers, graph, order, bits)
        used = _count(colours)
        if best is None or used < best[0]:
            best = (used, colours)
    return best[1]


def _number_in_order(colours: dict, order: list) -> dict[VReg, int]:
    """Renumber each class's colours so registers count up in program order (%r1 first)."""
    renumber: dict[tuple, int] = {}
    per_class: dict[str, int] = {}
    for reg in order:
        key = (reg.cls, colours[reg])
        if key not in renumber:
            per_class[reg.cls] = renumber[key] = per_class.get(reg.cls, 0) + 1
    return {reg: renumber[(reg.cls, c)] for reg, c in colours.items()}


def _greedy(registers: Registers, graph: list, order: list, bits=None) -> dict[VReg, int]:
    """Each register in `order` gets the lowest colour none of its neighbours has yet (`bits`:
    the graph as `bitmatrix.packed` gives it, where the caller has it)."""
    if len(graph) >= LARGE_GRAPH:
        colours = _bitmatrix().greedy(graph, [_number(registers.bit[reg]) for reg in order], bits)
        return dict(zip(order, colours))
    colours: dict[VReg, int] = {}
    coloured = [0, 0]   # colour -> bitset of the registers that have it (colours from 1)
    bit_of = registers.bit
    for reg in order:
        bit = bit_of[reg]
        neighbours = graph[bit.bit_length() - 1]
        c = 1
        while neighbours & coloured[c]:
            c += 1
            if c == len(coloured):
                coloured.append(0)
        coloured[c] |= bit
        colours[reg] = c
    return colours


def _count(colours: dict) -> int:
    per_class: dict[str, int] = {}
    for reg, c in colours.items():
        if c > per_class.get(reg.cls, 0):
            per_class[reg.cls] = c
    return sum(per_class.values())


def _smallest_last(registers: Registers, graph: list, present: list, bits=None) -> list:
    """The registers `present` in reverse order of removal, each removed with the fewest
    neighbours left (the lowest id among equals). The registers left are kept in bitsets by
    degree: as numbers follow ids, the lowest bit of one is the lowest id. The lowest degree
    can fall by one per removal, so its search restarts there. (`bits`: as in `_greedy`.)"""
    regs, bit_of = registers.regs, registers.bit
    if len(graph) >= LARGE_GRAPH:
        order = _bitmatrix().smallest_last(graph, [_number(bit_of[reg]) for reg in present], bits)
        return [regs[n] for n in order]
    degree = [graph[n].bit_count() for n in range(len(regs))]
    buckets = [0] * (max(degree, default=0) + 1)   # degree -> bitset of the registers left
    left = 0   # bitset of the registers not removed yet
    for reg in present:
        bit = bit_of[reg]
        buckets[degree[bit.bit_length() - 1]] |= bit
        left |= bit
    order, low = [], 0
    for _ in range(len(present)):
        while not buckets[low]:
            low += 1
        bucket = buckets[low]
        bit = bucket & -bucket
        buckets[low] = bucket ^ bit
        left ^= bit   # removed: its neighbours still left lose one
        n = bit.bit_length() - 1
        order.append(regs[n])
        neighbours = graph[n] & left
        while neighbours:
            low_bit = neighbours & -neighbours
            m = low_bit.bit_length() - 1
            d = degree[m]
            degree[m] = d - 1
            buckets[d] ^= low_bit
            buckets[d - 1] |= low_bit
            neighbours ^= low_bit
        if low:
            low -= 1
    order.reverse()
    return order


def _definition_order(mfunc: MFunction, alias: dict, reads: dict) -> list:
    """The registers not merged away, in the order the code first names them."""
    seen, order = set(), []
    for block in mfunc.blocks:
        for instr in block.instrs:
            for reg in [*reads[instr], *instr.dsts]:
                while reg in alias:   # (`_find`, inline)
                    reg = alias[reg]
                if reg not in seen:
                    seen.add(reg)
                    order.append(reg)
        if block.term and block.term.cond is not None:
            rep = _find(alias, block.term.cond)
            if rep not in seen:
                seen.add(rep)
                order.append(rep)
    return order


def loop_depths(mfunc: MFunction, loops: list) -> dict[MBlock, int]:
    """How many of the natural loops `loops` (`_loop_bodies`) contain each block."""
    depth = {block: 0 for block in mfunc.blocks}
    for _, body in loops:
        for block in body:
            depth[block] += 1
    return depth


def _loop_bodies(mfunc: MFunction) -> list[tuple[MBlock, set]]:
    """(header, blocks) of each natural loop, one per back edge (found by depth-first search)."""
    on_stack, seen = set(), set()
    back_edges = []
    stack = [(mfunc.blocks[0], iter(mfunc.blocks[0].succs))]
    on_stack.add(mfunc.blocks[0])
    seen.add(mfunc.blocks[0])
    while stack:
        block, succs = stack[-1]
        for succ in succs:
            if succ in on_stack:
                back_edges.append((block, succ))
            elif succ not in seen:
                seen.add(succ)
                on_stack.add(succ)
                stack.append((succ, iter(succ.succs)))
                break
        else:
            on_stack.discard(block)
            stack.pop()
    loops = []
    for latch, header in back_edges:
        body, todo = {header}, [latch]
        while todo:
            block = todo.pop()
            if block not in body:
                body.add(block)
                todo.extend(block.preds)
        loops.append((header, body))
    return loops
