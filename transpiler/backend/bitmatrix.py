"""The register allocator's loops over large interference graphs, on NumPy bit matrices.

`regalloc` keeps a graph as one Python int per register (a bitset of its neighbours). Its loops
that visit edges one by one (`_make_symmetric`, `_rename_rows`, `_smallest_last`, `_greedy`)
each step on ints as wide as the register count, so with thousands of registers live together
(a kernel that unrolls far more accumulators than a thread has registers) their cost grows with
the cube of the count: matmul_tf32.py with 32 mma tiles a warp took 5 s to allocate. These are
the same four steps over the graph as a matrix of packed bits, a row or a block of rows at a
time in C, which is quadratic (the transpose that makes the graph symmetric works on 8 x 8
squares of bits held in 64-bit words; a renaming of few columns moves them one by one). They
give exactly what the loops give (tests compare them), so the PTX does not depend on which
ran; `regalloc` uses them from `LARGE_GRAPH` registers up.
"""
from __future__ import annotations

import numpy as np

_ROWS_AT_ONCE = 1024    # rows unpacked (or transposed) together: a multiple of 8
_FEW_MOVED = 16         # `rename_columns` goes column by column when at most count / 16 move


def packed(rows: list, height: int | None = None) -> np.ndarray:
    """The bitsets `rows` as a (rows, bytes) matrix of bits, bit k of row i at byte k // 8
    (`height`: that many rows, the last ones zero)."""
    width = (len(rows) + 7) // 8
    bits = np.zeros((len(rows) if height is None else height, width), np.uint8)
    flat = memoryview(bits.reshape(-1))
    for i, row in enumerate(rows):   # (one copy of each row, no copy of the whole)
        flat[i * width:(i + 1) * width] = row.to_bytes(width, "little")
    return bits


def unpacked(bits: np.ndarray, count: int) -> np.ndarray:
    """Rows of packed bits as booleans (the last axis `count` long)."""
    return np.unpackbits(bits, axis=-1, count=count, bitorder="little").view(bool)


def as_rows(bits: np.ndarray) -> list:
    return [int.from_bytes(row.tobytes(), "little") for row in bits]


def make_symmetric(rows: list) -> None:
    """`regalloc._make_symmetric`: every row gains the registers whose rows name it."""
    count = len(rows)
    width = (count + 7) // 8
    bits = packed(rows, 8 * width)     # square: the rows padded to whole bytes
    # in place: a block's rows may already hold bits transposed from earlier blocks, but those
    # transpose back into bits that are already there, so the result is the same
    for start in range(0, count, _ROWS_AT_ONCE):
        groups = min(_ROWS_AT_ONCE, 8 * width - start) // 8
        bits[:, start // 8:start // 8 + groups] |= _transposed(bits[start:start + 8 * groups])
    rows[:] = as_rows(bits[:count])


_TRANSPOSE_STEPS = ((7, 0x00AA00AA00AA00AA), (14, 0x0000CCCC0000CCCC), (28, 0x00000000F0F0F0F0))


def _transposed(block: np.ndarray) -> np.ndarray:
    """The bit matrix `block` (8g rows, w bytes a row) transposed: 8w rows of g bytes. Each 8 x 8
    square of bits (8 rows, one byte of each) is one 64-bit word, byte i from row i, and is
    transposed within the word (bit 8i + j to bit 8j + i: Hacker's Delight, section 7-3)."""
    groups, width = block.shape[0] // 8, block.shape[1]
    words = np.ascontiguousarray(block.reshape(groups, 8, width).transpose(0, 2, 1))
    x = words.view("<u8").reshape(groups, width)
    for shift, mask in _TRANSPOSE_STEPS:
        t = (x ^ (x >> np.uint64(shift))) & np.uint64(mask)
        x = x ^ t ^ (t << np.uint64(shift))
    # byte j of the word of (group g, byte b) holds row 8b + j of the result, at its byte g
    x = x.astype("<u8", copy=False).view(np.uint8).reshape(groups, width, 8)
    return x.transpose(1, 2, 0).reshape(8 * width, groups)


def rename_columns(rows: list, moved: list, to: list) -> None:
    """`regalloc._rename_rows`: in every row, register `moved[k]` (a number) becomes `to[k]`
    (a register not moved). `rows` is a symmetric graph whose moved registers' rows have been
    merged into those of the registers they became (theirs then 0), as coalescing leaves it.

    Then the result is symmetric too (its row r, bit t: some register merged into r
    interferes with some register merged into t, which reads the same both ways), so its row t
    is its column t: the OR of the columns of the registers merged into t. Columns are rows of
    the transpose: one transpose and a few ORs of rows, instead of unpacking every row to move
    bits (regalloc's loops on ints compute the same, as tests check)."""
    count = len(rows)
    if len(moved) <= count // _FEW_MOVED:
        _rename_few_columns(rows, moved, to)
        return
    columns = transposed(rows)
    renamed = list(columns)
    for m, t in zip(moved, to):
        renamed[t] |= columns[m]
    for m in moved:
        renamed[m] = 0
    rows[:] = renamed


def transposed(rows: list) -> list:
    """The bitsets of the transpose of the square bit matrix `rows`: row c holds bit r where
    row r holds bit c."""
    count = len(rows)
    width = (count + 7) // 8
    bits = packed(rows, 8 * width)
    out = np.zeros_like(bits)
    for start in range(0, count, _ROWS_AT_ONCE):
        groups = min(_ROWS_AT_ONCE, 8 * width - start) // 8
        out[:, start // 8:start // 8 + groups] = _transposed(bits[start:start + 8 * groups])
    return as_rows(out[:count])


def _rename_few_columns(rows: list, moved: list, to: list) -> None:
    """`rename_columns` one column at a time, on the packed bits: for a few columns, cheaper
    than unpacking every row."""
    bits = packed(rows)
    columns = [(bits[:, m >> 3] >> np.uint8(m & 7)) & np.uint8(1) for m in moved]
    for m in moved:
        bits[:, m >> 3] &= np.uint8(0xFF ^ (1 << (m & 7)))
    for column, target in zip(columns, to):
        bits[:, target >> 3] |= column << np.uint8(target & 7)
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
        n = int(degree.argmin())    # the first of the smallest: the lowest number
        order.append(n)
        degree[n] = removed
        left[n] = False
        # (a subtraction of the mask, not `degree[mask] -= 1`: indexing by a scattered mask
        # costs several times as much)
        np.subtract(degree, unpacked(bits[n], count) & left, out=degree)
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
        # (compress, not `colour_of[mask]`: see smallest_last; the method skips np.compress's
        # Python wrapper)
        near = np.bincount(colour_of.compress(unpacked(bits[n], count)), minlength=highest + 2)
        c = int(near[1:].argmin()) + 1
        colour_of[n] = c
        highest = max(highest, c)
        colours.append(c)
    return colours
