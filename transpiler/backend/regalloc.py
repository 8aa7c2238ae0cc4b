"""Register allocation: interference graph, copy coalescing, colouring per register class.

PTX registers are virtual (ptxas allocates the hardware ones), so nothing is spilled: the aim
is readable code with few registers per class and no needless `mov`. Copies are coalesced
aggressively whenever their two registers do not interfere, phi copies first and those in
inner loops before outer ones. Colouring tries smallest-last and definition order and keeps
the better one.
"""
from __future__ import annotations

import heapq

from .liveness import live_out
from .machine import MBlock, MFunction, VReg


def allocate_registers(mfunc: MFunction) -> None:
    graph = interference_graph(mfunc)
    alias = coalesce(mfunc, graph)
    order = _definition_order(mfunc, alias)
    colours = _number_in_order(colour(graph, order), order)
    for block in mfunc.blocks:
        for instr in block.instrs:
            for reg in [*instr.dsts, *instr.uses]:
                reg.number = colours[_find(alias, reg)]
        if block.term and block.term.cond is not None:
            block.term.cond.number = colours[_find(alias, block.term.cond)]
        block.instrs = [i for i in block.instrs
                        if not (i.is_copy and i.dsts[0].number == i.srcs[0].number)]


def interference_graph(mfunc: MFunction) -> dict[VReg, set]:
    graph: dict[VReg, set] = {}
    outs = live_out(mfunc)
    for block in mfunc.blocks:
        live = set(outs[block])
        if block.term:
            live.update(block.term.uses)
        for reg in live:
            graph.setdefault(reg, set())
        for instr in reversed(block.instrs):
            # a copy's destination may share the source's register: they hold one value
            others = live - {instr.srcs[0]} if instr.is_copy else live
            for dst in instr.dsts:
                graph.setdefault(dst, set())
                for reg in [*others, *instr.dsts]:
                    if reg is not dst and reg.cls == dst.cls:
                        graph[dst].add(reg)
                        graph.setdefault(reg, set()).add(dst)
            if not instr.guard:
                live.difference_update(instr.dsts)
            for reg in instr.uses:
                graph.setdefault(reg, set())
                live.add(reg)
    return graph


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
        taken = {colours[n] for n in graph[reg] if n in colours}
        c = 1
        while c in taken:
            c += 1
        colours[reg] = c
    return colours


def _count(colours: dict) -> int:
    per_class: dict[str, int] = {}
    for reg, c in colours.items():
        per_class[reg.cls] = max(per_class.get(reg.cls, 0), c)
    return sum(per_class.values())


def _smallest_last(graph) -> list:
    degree = {reg: len(ns) for reg, ns in graph.items()}
    heap = [(d, reg.id, reg) for reg, d in degree.items()]
    heapq.heapify(heap)
    removed, order = set(), []
    while heap:
        d, _, reg = heapq.heappop(heap)
        if reg in removed or d != degree[reg]:
            continue
        removed.add(reg)
        order.append(reg)
        for n in graph[reg]:
            if n not in removed:
                degree[n] -= 1
                heapq.heappush(heap, (degree[n], n.id, n))
    order.reverse()
    return order


def _definition_order(mfunc: MFunction, alias: dict) -> list:
    seen, order = set(), []
    for block in mfunc.blocks:
        for instr in block.instrs:
            for reg in [*instr.uses, *instr.dsts]:
                rep = _find(alias, reg)
                if rep not in seen:
                    seen.add(rep)
                    order.append(rep)
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
