"""The register allocator's loops over large interference graphs, on NumPy bit matrices.

`regalloc` keeps a graph as one Python int per register (a bitset of its neighbours). Its loops
that visit edges one by one (`_make_symmetric`, `_rename_rows`, `_smallest_last`, `_greedy`)
each step on ints as wide as the register count, so with thousands of registers live together
(a kernel that unrolls far more accumulators than a thread has registers) their cost grows with
the cube of the count: matmul_tf32.py with 32 mma tiles a warp took 5 s to allocate. These are
the same four steps over the graph as a matrix of packed bits, a row or a block of rows at a
time in C, which is quadratic. They give exactly what the loops give (tests compare them), so
the PTX does not depend on which ran; `regalloc` uses them from `LARGE_GRAPH` registers up.
"""
from __future__ import annotations

import numpy as np

_ROWS_AT_ONCE = 1024    # rows unpacked together (a multiple of 8): 1024 bytes per register


def packed(rows: list) -> np.ndarray:
    """The bitsets `rows` as a (rows, bytes) matrix of bits, bit k of row i at byte k // 8."""
    width = (len(rows) + 7) // 8
    data = bytearray(b"".join(row.to_bytes(width, "little") for row in rows))   # (writable)
    return np.frombuffer(data, np.uint8).reshape(len(rows), width)


def unpacked(bits: np.ndarray, count: int) -> np.ndarray:
    """Rows of packed bits as booleans (the last axis `count` long)."""
    return np.unpackbits(bits, axis=-1, count=count, bitorder="little").view(bool)


def as_rows(bits: np.ndarray) -> list:
    return [int.from_bytes(row.tobytes(), "little") for row in bits]


def make_symmetric(rows: list) -> None:
    """`regalloc._make_symmetric`: every row gains the registers whose rows name it."""
    count = len(rows)
    bits = packed(rows)
    # in place: a block's rows may already hold bits transposed from earlier blocks, but those
    # transpose back into bits that are already there, so the result is the same
    for start in range(0, count, _ROWS_AT_ONCE):
        block = unpacked(bits[start:start + _ROWS_AT_ONCE], count)
        columns = np.packbits(block.T, axis=1, bitorder="little")   # bits start.. of every row
        bits[:, start // 8:start // 8 + columns.shape[1]] |= columns
    rows[:] = as_rows(bits)


def rename_columns(rows: list, moved: list, to: list) -> None:
    """`regalloc._rename_rows`: in every row, register `moved[k]` (a number) becomes `to[k]`."""
    count = len(rows)
    by_target = np.argsort(np.asarray(to), kind="stable")
    sources = np.asarray(moved)[by_target]
    targets, starts = np.unique(np.asarray(to)[by_target], return_index=True)
    bits = packed(rows)
    for start in range(0, count, _ROWS_AT_ONCE):
        block = unpacked(bits[start:start + _ROWS_AT_ONCE], count)     # (a new array)
        merged = np.logical_or.reduceat(block[:, sources], starts, axis=1)
        block[:, sources] = False
        block[:, targets] |= merged
        bits[start:start + _ROWS_AT_ONCE] = np.packbits(block, axis=1, bitorder="little")
    rows[:] = as_rows(bits)


def smallest_last(rows: list, present: list, bits: np.ndarray | None = None) -> list:
    """`regalloc._smallest_last` on register numbers: `present` in reverse order of removal,
    each removed with the fewest neighbours left, the lowest number among equals (`bits`:
    `packed(rows)`, where the caller has it)."""
    count = len(rows)
    bits = packed(rows) if bits is None else bits
    removed = np.iinfo(np.int64).max
    degree = np.full(count, removed, np.int64)
    degree[present] = [rows[n].bit_count() for n in present]
    left = np.zeros(count, bool)
    left[present] = True
    order = []
    for _ in range(len(present)):
        n = int(np.argmin(degree))    # the first of the smallest: the lowest number
        order.append(n)
        degree[n] = removed
        left[n] = False
        degree[unpacked(bits[n], count) & left] -= 1
    order.reverse()
    return order


def greedy(rows: list, order: list, bits: np.ndarray | None = None) -> list:
    """`regalloc._greedy` on register numbers: the colours (from 1) of `order`, each the lowest
    none of its neighbours coloured before it has (`bits`: `packed(rows)`, where the caller has
    it)."""
    count = len(rows)
    bits = packed(rows) if bits is None else bits
    colour_of = np.zeros(count, np.int64)     # 0: not coloured yet
    colours, highest = [], 0
    for n in order:
        # neighbours per colour 0..highest+1; highest+1 is free, so the first zero from 1 is
        near = np.bincount(colour_of[unpacked(bits[n], count)], minlength=highest + 2)
        c = int(np.argmin(near[1:])) + 1
        colour_of[n] = c
        highest = max(highest, c)
        colours.append(c)
    return colours
