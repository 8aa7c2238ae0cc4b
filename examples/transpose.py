"""Matrix transpose through shared memory, out[j, i] = x[i, j].

A naive transpose reads rows and writes columns: one of the two is uncoalesced (each thread of
a warp touches a different 128-byte line). Here each block of 64 x 8 threads moves one 64 x 64
tile: it reads the tile's rows (coalesced: a warp reads 128 bytes of a row), parks them in
shared memory, and writes the tile of the output row by row (coalesced again), reading shared
memory down a column.

The shared tile is 64 x 65 floats: with 65 the elements of a tile column lie in 32 different
banks for any 32 consecutive rows, so a warp reading a column costs one shared-memory
transaction instead of 32 (with a 64-float row all of a column would fall in one bank: a
32-way conflict). Each thread moves 8 elements (TILE / ROWS), all 8 loads in flight at once.
On an H100 at 8192^2 this tile moves 2.91 TB/s, a 32 x 32 tile with 32 x 8 threads 2.82
(BENCHMARKS.md, session 12).

`python examples/transpose.py [--rows M --cols N]` checks the result against jnp.transpose.
"""
import argparse

import jax
import jax.numpy as jnp
import numpy as np

import ptxpy
from ptxpy import Array, f32

TILE = 64
ROWS = 8            # block = (TILE, ROWS) threads; each thread handles TILE / ROWS elements


@ptxpy.jit(out_shape=lambda x: jax.ShapeDtypeStruct((x.shape[1], x.shape[0]), x.dtype),
           grid=lambda x: (ptxpy.cdiv(x.shape[1], TILE), ptxpy.cdiv(x.shape[0], TILE)),
           block=(TILE, ROWS))
def transpose(x: Array[f32, 2], out: Array[f32, 2]):
    m = x.shape[0]
    n = x.shape[1]
    tile = ptxpy.shared_array((TILE, TILE + 1), f32)      # + 1: no bank conflicts
    tx = ptxpy.thread_idx.x
    ty = ptxpy.thread_idx.y
    row0 = ptxpy.block_idx.y * TILE
    col0 = ptxpy.block_idx.x * TILE

    # Read the tile x[row0:row0+64, col0:col0+64], row by row: a warp reads 128 bytes of a row.
    col = col0 + tx
    for k in ptxpy.static_range(0, TILE, ROWS):
        row = row0 + ty + k
        if row < m and col < n:
            tile[ty + k, tx] = x[row, col]
    ptxpy.syncthreads()

    # Write out[col0:col0+64, row0:row0+64], row by row, reading the tile down its columns.
    out_col = row0 + tx
    for k in ptxpy.static_range(0, TILE, ROWS):
        out_row = col0 + ty + k
        if out_row < n and out_col < m:
            out[out_row, out_col] = tile[tx, ty + k]


def main(rows: int | None = None, cols: int | None = None) -> None:
    on_gpu = jax.default_backend() == "gpu"
    rows = rows or (8192 if on_gpu else 300)
    cols = cols or (8192 if on_gpu else 200)
    f = jax.jit(transpose)
    for shape in ((rows, cols), (cols + 5, rows + 7)):        # also sizes that are not tiles
        x = jax.random.normal(jax.random.key(shape[0]), shape, jnp.float32)
        np.testing.assert_array_equal(np.asarray(f(x)), np.asarray(x.T))
    print(f"transpose of {rows} x {cols} and {cols + 5} x {rows + 7}: matches jnp.transpose")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=None)
    parser.add_argument("--cols", type=int, default=None)
    args = parser.parse_args()
    main(args.rows, args.cols)
