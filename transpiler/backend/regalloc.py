"""Register allocation: interference graph, copy coalescing, colouring per register class.

PTX registers are virtual (ptxas allocates the hardware ones), so nothing is spilled: the aim
is readable code with few registers per class and no needless `mov`. Copies are coalesced
aggressively whenever their two registers do not interfere, phi copies first and those in
inner loops before outer ones. Colouring tries smallest-last and definition order and keeps
the better one.
"""
from __future__ import annotations

from .liveness import live_out, registers_read
from .machine import MBlock, MFunction, VReg


def allocate_registers(mfunc: MFunction) -> None:
    reads = registers_read(mfunc)
    graph = interference_graph(mfunc, reads)
    alias = coalesce(mfunc, graph)
    order = _definition_order(mfunc, alias, reads)
    colours = _number_in_order(colour(graph, order), order)
    for reg in [*graph, *alias]:   # every register (those merged away are in `alias` only)
        reg.number = colours[_find(alias, reg)]
    _drop_coalesced_copies(mfunc)


def _drop_coalesced_copies(mfunc: MFunction) -> None:
    """Remove the copies whose two registers got one number."""
    for block in mfunc.blocks:
        kept = [i for i in block.instrs
                if not (i.is_copy and i.dsts[0].number == i.srcs[0].number)]
        if len(kept) != len(block.instrs):
            block.instrs = kept


def interference_graph(mfunc: MFunction, reads: dict | None = None) -> dict[VReg, set]:
    """{register: the registers of its class live where it is written, or written with it}
    (symmetric). `reads` as from `liveness.registers_read`."""
    reads = registers_read(mfunc) if reads is None else reads
    graph: dict[VReg, set] = {}
    outs = live_out(mfunc, reads)
    for block in mfunc.blocks:
        live = set(outs[block])
        if block.term:
            live.update(block.term.uses)
        live_by_class: dict[str, set] = {}
        for reg in live:
            _live_in_class(live_by_class, reg)
            if reg not in graph:
                graph[reg] = set()
        for instr in reversed(block.instrs):
            dsts = instr.dsts
            if dsts:
                _add_interferences(graph, instr, live_by_class)
                if not instr.guard:
                    for dst in dsts:
                        live_by_class[dst.cls].discard(dst)
            for reg in reads[instr]:
                if reg not in graph:
                    graph[reg] = set()
                _live_in_class(live_by_class, reg)
    return graph


def _live_in_class(live_by_class: dict, reg: VReg) -> None:
    found = live_by_class.get(reg.cls)
    if found is None:
        live_by_class[reg.cls] = {reg}
    else:
        found.add(reg)


def _add_interferences(graph: dict, instr, live_by_class: dict) -> None:
    """Edges between each register `instr` writes and the others of its class live there."""
    copied = instr.srcs[0] if instr.is_copy else None   # a copy's two registers hold one value
    dsts = instr.dsts
    for dst in dsts:
        if dst not in graph:
            graph[dst] = set()
    for dst in dsts:
        others = live_by_class.get(dst.cls)
        if others is None:
            others = live_by_class[dst.cls] = set()
        if copied in others or len(dsts) > 1:
            others = (others | {d for d in dsts if d.cls == dst.cls}) - {copied}
        neighbours = graph[dst]
        neighbours |= others
        for reg in others:
            graph[reg].add(dst)
        neighbours.discard(dst)   # (when `dst` is live after it is written)


def coalesce(mfunc: MFunction, graph: dict[VReg, set]) -> dict[VReg, VReg]:
    """Merge the two registers of each copy that do not interfere; returns the alias map."""
    alias: dict[VReg, VReg] = {}
    depth = loop_depths(mfunc)
    copies = [(not instr.phi_copy, -depth[block], n, instr)
              for block in mfunc.blocks for n, instr in enumerate(block.instrs) if instr.is_copy]
    for *_, instr in sorted(copies, key=lambda c: c[:3]):
        keep, gone = _find(alias, instr.dsts[0]), _find(alias, instr.srcs[0])
        if keep is gone or gone in graph[keep]:
            continue
        for reg in graph.pop(gone):
            graph[reg].discard(gone)
            graph[reg].add(keep)
            graph[keep].add(reg)
        alias[gone] = keep
    return alias


def _find(alias: dict, reg: VReg) -> VReg:
    while reg in alias:
        reg = alias[reg]
    return reg


def colour(graph: dict[VReg, set], def_order: list) -> dict[VReg, int]:
    """Numbers from 1 per class; neighbours differ. The better of two greedy orders."""
    best = None
    for order in (_smallest_last(graph), def_order):
        colours = _greedy(graph, order)
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


def _greedy(graph, order) -> dict[VReg, int]:
    colours: dict[VReg, int] = {}
    for reg in order:
        taken = set(map(colours.get, graph[reg]))
        c = 1
        while c in taken:
            c += 1
        colours[reg] = c
    return colours


def _count(colours: dict) -> int:
    per_class: dict[str, int] = {}
    for reg, c in colours.items():
        if c > per_class.get(reg.cls, 0):
            per_class[reg.cls] = c
    return sum(per_class.values())


def _smallest_last(graph) -> list:
    """Registers in reverse order of removal, each removed with the fewest neighbours left
    (the lowest id among equals). The registers left are kept by degree, as ids (compared in C
    by `min`); the lowest degree can fall by one per removal, so its search restarts there."""
    by_id = {reg.id: reg for reg in graph}
    degree = {reg: len(ns) for reg, ns in graph.items()}
    buckets = [set() for _ in range(max(degree.values(), default=0) + 1)]   # by degree
    for reg, d in degree.items():
        buckets[d].add(reg.id)
    order, low = [], 0
    for _ in range(len(degree)):
        bucket = buckets[low]
        while not bucket:
            low += 1
            bucket = buckets[low]
        reg_id = min(bucket)
        bucket.discard(reg_id)
        reg = by_id[reg_id]
        del degree[reg]   # removed: its neighbours still in `degree` lose one
        order.append(reg)
        for n in graph[reg]:
            d = degree.get(n)
            if d is not None:
                degree[n] = d - 1
                n_id = n.id
                buckets[d].discard(n_id)
                buckets[d - 1].add(n_id)
        if low:
            low -= 1
    order.reverse()
    return order


def _definition_order(mfunc: MFunction, alias: dict, reads: dict) -> list:
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


def loop_depths(mfunc: MFunction) -> dict[MBlock, int]:
    """How many natural loops contain each block (back edges found by depth-first search)."""
    depth = {block: 0 for block in mfunc.blocks}
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
    for latch, header in back_edges:
        body, todo = {header}, [latch]
        while todo:
            block = todo.pop()
            if block not in body:
                body.add(block)
                todo.extend(block.preds)
        for block in body:
            depth[block] += 1
    return depth
