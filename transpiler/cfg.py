"""Control-flow analyses over `ir.Function`: orders, dominators, natural loops."""
from __future__ import annotations

from dataclasses import dataclass, field

from .ir import TERMINATORS, Block, Function


def branch_head(block: Block) -> Block | None:
    """The block whose `cbr` leads to `block`, when that is `block`'s only predecessor (an arm
    of a branch), else None."""
    if len(block.preds) != 1:
        return None
    head = block.preds[0]
    term = head.instrs[-1] if head.instrs else None
    return head if head is not block and term is not None and term.op == "cbr" else None


def reverse_postorder(func: Function) -> list[Block]:
    """Blocks reachable from the entry, each before its successors except along back edges."""
    seen: set[Block] = set()
    order: list[Block] = []
    stack = [(func.entry, iter(func.entry.succs))]
    seen.add(func.entry)
    while stack:
        block, succs = stack[-1]
        for succ in succs:
            if succ not in seen:
                seen.add(succ)
                stack.append((succ, iter(succ.succs)))
                break
        else:
            order.append(block)
            stack.pop()
    order.reverse()
    return order


def dominators(func: Function, order: list[Block] | None = None) -> dict[Block, Block | None]:
    """Immediate dominators (Cooper, Harvey, Kennedy), for reachable blocks in reverse
    postorder; the entry maps to None. `order`: `reverse_postorder(func)` where the caller has it."""
    order = reverse_postorder(func) if order is None else order
    parents = _idom_indexes(order)
    idom: dict[Block, Block | None] = {order[0]: None}
    for k in range(1, len(order)):
        idom[order[k]] = order[parents[k]]
    return idom


def _idom_indexes(order: list[Block]) -> list[int]:
    """The immediate dominator of each block of `order` (reverse postorder) as its index there,
    in integers throughout: blocks are compared by their position."""
    index = {b: k for k, b in enumerate(order)}
    preds = [[index[p] for p in b.preds if p in index] for b in order]
    idom = [-1] * len(order)
    idom[0] = 0
    changed = True
    while changed:
        changed = False
        for k in range(1, len(order)):
            new = -1
            for p in preds[k]:
                if idom[p] < 0:
                    continue
                if new < 0:
                    new = p
                    continue
                while p != new:
                    while p > new:
                        p = idom[p]
                    while new > p:
                        new = idom[new]
            if idom[k] != new:
                idom[k] = new
                changed = True
    return idom


class DomTree:
    def __init__(self, func: Function, order: list[Block] | None = None):
        """`order`: `reverse_postorder(func)` where the caller has it (kept as `self.order`)."""
        order = reverse_postorder(func) if order is None else order
        self.order = order
        parents = _idom_indexes(order)
        self.idom: dict[Block, Block | None] = {order[0]: None}
        self.children: dict[Block, list[Block]] = {b: [] for b in order}
        self.depth = {order[0]: 0}
        depths = [0] * len(order)
        for k in range(1, len(order)):
            block, parent = order[k], order[parents[k]]
            self.idom[block] = parent
            self.children[parent].append(block)
            depths[k] = depths[parents[k]] + 1
            self.depth[block] = depths[k]

    def dominates(self, a: Block, b: Block) -> bool:
        """Whether every path from the entry to `b` passes through `a` (a block dominates itself)."""
        if b not in self.depth or a not in self.depth:
            return False
        while self.depth[b] > self.depth[a]:
            b = self.idom[b]
        return a is b

    def preorder(self, root: Block) -> list[Block]:
        out, todo = [], [root]
        while todo:
            block = todo.pop()
            out.append(block)
            todo.extend(reversed(self.children[block]))
        return out


def facts_along_dominators(dom: DomTree, learn) -> dict[Block, dict]:
    """For each block of `dom.order`, what the branches taken to reach it tell: its immediate
    dominator's facts, extended by `learn(facts, term, block)` (a new dict; `facts` unchanged)
    where `block` is reached only by the conditional branch `term` of its immediate dominator
    (whose two targets differ)."""
    known: dict[Block, dict] = {}
    for block in dom.order:     # each block after its immediate dominator
        parent = dom.idom[block]
        if parent is None:
            known[block] = {}
            continue
        term = parent.terminator
        if (len(block.preds) == 1 and term.op == "cbr"     # its only predecessor is `parent`
                and term.targets[0] is not term.targets[1]):
            known[block] = learn(known[parent], term, block)
        else:
            known[block] = known[parent]
    return known


def dom_tree(func: Function) -> DomTree:
    """`DomTree(func)`, computed once while `passes.optimize` runs and the control flow is the
    same (`Function.analyses`, `_same_edges`). For a pass to call before it changes the control
    flow: a pass counts its changes only when it ends."""
    cache = func.analyses
    if cache is None:
        return DomTree(func)
    found = cache.get("dom")
    if found is not None and (found[0] == func.edits or _same_edges(func, found[2])):
        if found[0] != func.edits:
            cache["dom"] = (func.edits, found[1], found[2])
        return found[1]
    dom = DomTree(func, _cached_order(func))
    cache["dom"] = (func.edits, dom, _edges(dom.order))
    return dom


def block_order(func: Function) -> list[Block]:
    """`reverse_postorder(func)` (a new list), from the cache as `dom_tree` has it."""
    return list(_cached_order(func))


def _cached_order(func: Function) -> list[Block]:
    """Reverse postorder, the dominator tree's where it is cached and the control flow is the
    same (callers only read it)."""
    cache = func.analyses
    if cache is None:
        return reverse_postorder(func)
    for name in ("dom", "order"):
        found = cache.get(name)
        if found is not None and (found[0] == func.edits or _same_edges(func, found[2])):
            return found[1].order if name == "dom" else found[1]
    order = reverse_postorder(func)
    cache["order"] = (func.edits, order, _edges(order))
    return order


def _edges(order: list[Block]) -> tuple:
    """What the reverse postorder `order` and its dominator tree are computed from: the entry
    and the successors of each block reachable from it (in valid IR, a block's preds are the
    blocks whose terminators target it)."""
    return order, [list(block.instrs[-1].targets) for block in order]


def _same_edges(func: Function, edges: tuple) -> bool:
    """Whether the control flow of `func` is still that of `_edges(order)`: the same entry, and
    every block reachable then has the same successors (so the same blocks are reachable, by
    the same edges)."""
    order, succs = edges
    if order[0] is not func.blocks[0]:
        return False
    for block, targets in zip(order, succs):
        instrs = block.instrs
        if not instrs or instrs[-1].op not in TERMINATORS or instrs[-1].targets != targets:
            return False
    return True


@dataclass(eq=False)
class Loop:
    header: Block
    blocks: set = field(default_factory=set)
    latches: list = field(default_factory=list)
    parent: "Loop | None" = None

    @property
    def exits(self) -> list[Block]:
        """Blocks outside the loop that a loop block branches to."""
        return [s for b in self.blocks for s in b.succs if s not in self.blocks]

    def preheader(self) -> Block | None:
        """The single outside predecessor of the header, when it branches only to the header."""
        outside = [p for p in self.header.preds if p not in self.blocks]
        if len(outside) == 1 and outside[0].succs == [self.header]:
            return outside[0]
        return None


def natural_loops(func: Function, dom: DomTree | None = None) -> list[Loop]:
    """Natural loops, one per header (back edges to one header merged), innermost first."""
    dom = dom or DomTree(func)
    loops: dict[Block, Loop] = {}
    for block in dom.order:   # (reverse postorder)
        for succ in block.succs:
            if dom.dominates(succ, block):
                loop = loops.setdefault(succ, Loop(succ, {succ}))
                loop.latches.append(block)
                _collect_body(loop, block)
    ordered = sorted(loops.values(), key=lambda l: len(l.blocks))
    for k, inner in enumerate(ordered):
        for outer in ordered[k + 1:]:
            if inner.header in outer.blocks:
                inner.parent = outer
                break
    return ordered


def _collect_body(loop: Loop, latch: Block) -> None:
    todo = [latch]
    while todo:
        block = todo.pop()
        if block not in loop.blocks:
            loop.blocks.add(block)
            todo.extend(block.preds)
