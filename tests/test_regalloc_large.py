"""The register allocator's bit-matrix loops (`backend/bitmatrix.py`, for graphs of
`regalloc.LARGE_GRAPH` registers and more) give exactly what its loops on Python ints give."""
from __future__ import annotations

import os
import random

import pytest

from ptxpy.transpiler import driver
from ptxpy.transpiler.backend import bitmatrix, regalloc

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "examples")


class _Reg:
    def __init__(self, n: int, cls: str):
        self.id, self.cls = n, cls

    def __repr__(self) -> str:
        return f"r{self.id}"


class _Registers:
    """What `regalloc`'s graph loops read of `liveness.Registers`."""

    def __init__(self, count: int, rng: random.Random):
        self.regs = [_Reg(n, rng.choice("rf")) for n in range(count)]
        self.bit = {reg: 1 << n for n, reg in enumerate(self.regs)}

    def mask(self, regs) -> int:
        return sum(self.bit[reg] for reg in set(regs))


def _random_graph(registers: _Registers, rng: random.Random, density: float) -> list:
    """Edges between registers of one class only, in one direction (as the builder makes)."""
    rows = []
    for n, reg in enumerate(registers.regs):
        row = 0
        for m, other in enumerate(registers.regs):
            if m != n and other.cls == reg.cls and rng.random() < density:
                row |= 1 << m
        rows.append(row)
    return rows


@pytest.fixture(params=[(1, 0.5), (7, 0.3), (8, 0.9), (61, 0.05), (200, 0.2), (203, 0.6)],
                ids=lambda p: f"{p[0]}regs-{p[1]}")
def case(request, monkeypatch):
    """A random graph; blocks of 16 rows, so that several blocks and a short last one are met."""
    monkeypatch.setattr(bitmatrix, "_ROWS_AT_ONCE", 16)
    count, density = request.param
    rng = random.Random(count * 1000 + int(density * 100))
    registers = _Registers(count, rng)
    return registers, _random_graph(registers, rng, density), rng


def _both(monkeypatch, run):
    """run() with the loops on ints, then with the bit matrices."""
    monkeypatch.setattr(regalloc, "LARGE_GRAPH", 10 ** 9)
    on_ints = run()
    monkeypatch.setattr(regalloc, "LARGE_GRAPH", 0)
    return on_ints, run()


def test_make_symmetric(case, monkeypatch):
    registers, rows, _ = case

    def run():
        graph = list(rows)
        regalloc._make_symmetric(graph)
        return graph

    on_ints, on_bits = _both(monkeypatch, run)
    assert on_ints == on_bits
    for n, row in enumerate(on_bits):     # and it is the symmetric closure
        for m in range(len(rows)):
            assert bool(row >> m & 1) == bool(rows[n] >> m & 1 or rows[m] >> n & 1)


def _coalesced(registers, rows, rng):
    """A symmetric graph with some registers merged into others they do not interfere with (a
    merged one's row 0, its bits still in other rows), and the alias map."""
    graph = list(rows)
    regalloc._make_symmetric(graph)
    alias, members = {}, {}
    for _ in range(len(graph) // 2):
        keep, gone = rng.sample(registers.regs, 2) if len(graph) > 1 else (None, None)
        if keep is None:
            break
        keep, gone = regalloc._find(alias, keep), regalloc._find(alias, gone)
        k, g = keep.id, gone.id
        if keep is gone or keep.cls != gone.cls or graph[k] & members.get(g, 1 << g):
            continue
        graph[k] |= graph[g]
        graph[g] = 0
        members[k] = members.get(k, 1 << k) | members.pop(g, 1 << g)
        alias[gone] = keep
    return graph, alias


@pytest.mark.parametrize("few_moved", [1, 10 ** 9], ids=["column-by-column", "by-transpose"])
def test_rename_rows(case, monkeypatch, few_moved):
    registers, rows, rng = case
    monkeypatch.setattr(bitmatrix, "_FEW_MOVED", few_moved)
    graph, alias = _coalesced(registers, rows, rng)

    def run():
        renamed = list(graph)
        if alias:
            regalloc._rename_rows(renamed, registers, alias)
        return renamed

    on_ints, on_bits = _both(monkeypatch, run)
    assert on_ints == on_bits
    away = registers.mask(alias)
    assert all(row & away == 0 for row in on_bits)


def test_smallest_last_and_greedy(case, monkeypatch):
    registers, rows, rng = case
    graph, alias = _coalesced(registers, rows, rng)
    if alias:
        regalloc._rename_rows(graph, registers, alias)
    present = [reg for reg in registers.regs if reg not in alias]
    rng.shuffle(present)    # the order given does not matter

    def run():
        order = regalloc._smallest_last(registers, graph, present)
        shuffled = list(order)
        rng_order = random.Random(len(order))
        rng_order.shuffle(shuffled)
        return order, regalloc._greedy(registers, graph, order), \
            regalloc._greedy(registers, graph, shuffled)

    (order, colours, colours_shuffled), on_bits = _both(monkeypatch, run)
    assert (order, colours, colours_shuffled) == on_bits
    assert sorted(order, key=lambda reg: reg.id) == sorted(present, key=lambda reg: reg.id)
    for reg, c in colours.items():   # a colouring: no two neighbours share a colour
        n = reg.id
        assert c >= 1
        for other, d in colours.items():
            if graph[n] >> other.id & 1:
                assert c != d


@pytest.mark.parametrize("example", ["matmul.py", "matmul_tf32.py", "radix_sort.py", "saxpy.py"])
def test_kernels_compile_to_the_same_ptx_either_way(example, monkeypatch):
    """A kernel of matmul.py and of matmul_tf32.py has over LARGE_GRAPH registers (1,502 and
    1,304), radix_sort's 846 at most, saxpy's 18."""
    path = os.path.join(EXAMPLES, example)
    source = open(path).read()

    def run():
        driver.clear_caches()
        return str(driver.transpile(source, path))

    on_ints, on_bits = _both(monkeypatch, run)
    assert on_ints == on_bits


def test_walks_given_the_packed_matrix(case, monkeypatch):
    """`colour` packs a large graph once for its three walks: given the matrix, they give what
    they give packing it themselves, and leave it as it was."""
    registers, rows, rng = case
    graph, alias = _coalesced(registers, rows, rng)
    if alias:
        regalloc._rename_rows(graph, registers, alias)
    present = [reg for reg in registers.regs if reg not in alias]
    monkeypatch.setattr(regalloc, "LARGE_GRAPH", 0)
    bits = bitmatrix.packed(graph)
    order = regalloc._smallest_last(registers, graph, present)
    assert regalloc._smallest_last(registers, graph, present, bits) == order
    colours = regalloc._greedy(registers, graph, order)
    assert regalloc._greedy(registers, graph, order, bits) == colours
    assert bitmatrix.as_rows(bits) == graph
