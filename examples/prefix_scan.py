"""Inclusive prefix sum (cumulative sum) of an i32 vector, the classic three-phase GPU scan.

1. `scan_tiles`: each block scans one tile of 1024 elements (256 threads x 4). A thread loads
   its 4 elements with one 128-bit load and scans them serially; the warp scans the threads'
   totals with `ptxpy.warp_cumsum` (Kogge-Stone, 5 `shfl.sync.up`); the warps' totals go through shared
   memory, and each thread adds the totals of the warps before it. The block also writes its
   tile's total.
2. The tile totals are scanned by the same procedure (recursively: 1024 times fewer elements
   per level).
3. `add_offsets` adds to every element of tile b the scanned total of tiles 0..b-1.

Each element is read twice and written twice; a single-pass "decoupled look-back" scan would
save one read and one write at the price of a much longer kernel.

`python examples/prefix_scan.py [--size N]` checks the result against jnp.cumsum.
"""
import argparse

import jax
import jax.numpy as jnp
import numpy as np

import ptxpy
from ptxpy import Array, i32

BLOCK = 256
ITEMS = 4
TILE = BLOCK * ITEMS
WARPS = BLOCK // 32


def _tiles(x):
    return ptxpy.cdiv(x.shape[0], TILE)


@ptxpy.jit(out_shape=lambda x: [x, jax.ShapeDtypeStruct((_tiles(x),), x.dtype)],
           grid=lambda x: (_tiles(x),), block=BLOCK)
def scan_tiles(x: Array[i32], y: Array[i32], tile_sums: Array[i32]):
    n = x.shape[0]
    t = ptxpy.thread_idx.x
    lane = t % 32
    warp = t // 32
    i = ptxpy.block_idx.x * TILE + t * ITEMS
    # This thread's four elements (zeros past the end).
    if i + 4 <= n:
        a, b, c, d = x[i:i + 4]
    else:
        a = x[i] if i < n else 0
        b = x[i + 1] if i + 1 < n else 0
        c = x[i + 2] if i + 2 < n else 0
        d = x[i + 3] if i + 3 < n else 0
    b += a
    c += b
    d += c                                  # d: this thread's total
    s = ptxpy.warp_cumsum(d)                # inclusive scan of the totals across the warp
    warp_totals = ptxpy.shared_array(WARPS, i32)
    if lane == 31:
        warp_totals[warp] = s
    ptxpy.syncthreads()
    before = s - d                          # sum of the earlier threads of this warp
    for w in ptxpy.static_range(WARPS - 1):  # plus the totals of the earlier warps
        if w < warp:
            before += warp_totals[w]
    if i + 4 <= n:
        y[i:i + 4] = (before + a, before + b, before + c, before + d)
    else:
        if i < n:
            y[i] = before + a
        if i + 1 < n:
            y[i + 1] = before + b
        if i + 2 < n:
            y[i + 2] = before + c
    if t == BLOCK - 1:
        tile_sums[ptxpy.block_idx.x] = before + d


@ptxpy.jit(out_shape=lambda y, offsets: y, grid=lambda y, offsets: (_tiles(y),), block=BLOCK)
def add_offsets(y: Array[i32], offsets: Array[i32], out: Array[i32]):
    """out = y + (sum of all earlier tiles), for every element of each tile."""
    n = y.shape[0]
    tile = ptxpy.block_idx.x
    i = tile * TILE + ptxpy.thread_idx.x * ITEMS
    add = offsets[tile - 1] if tile > 0 else 0
    if i + 4 <= n:
        a, b, c, d = y[i:i + 4]
        out[i:i + 4] = (a + add, b + add, c + add, d + add)
    else:
        for j in range(i, n):
            out[j] = y[j] + add


def cumsum(x):
    y, tile_sums = scan_tiles(x)
    if tile_sums.shape[0] == 1:
        return y
    return add_offsets(y, cumsum(tile_sums))   # at most log_1024(n) levels


def main(size: int | None = None) -> None:
    if size is None:
        size = 1 << 24 if jax.default_backend() == "gpu" else 1_000_003
    f = jax.jit(cumsum)
    for n in (size, 1, 1000, 1024, 4099):
        x = jax.random.randint(jax.random.key(n), (n,), 0, 100, jnp.int32)
        np.testing.assert_array_equal(np.asarray(f(x)), np.asarray(jnp.cumsum(x)))
    print(f"prefix_scan of {size} i32 elements: matches jnp.cumsum")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=None, help="vector length")
    main(parser.parse_args().size)
