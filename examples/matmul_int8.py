"""int8 matrix multiplication on the tensor cores with exact i32 sums, z = x @ y.

A quantized layer's matmul, as `jnp.matmul(x, y, preferred_element_type=jnp.int32)` computes
it for int8 x and y: products and sums exact (modulo 2^32 past the i32 range, which K up to
2^17 of values in [-127, 127] never reaches). examples/matmul_bf16.py's kernel for sm_80 and
later (Ampere's tensor cores; on Hopper examples/matmul_int8_wgmma.py is faster), built from
`ptxpy.cp_async`, `ptxpy.ldmatrix` and `ptxpy.mma_sync` of 8-bit integers (PTX
`mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32`, docs/language.md "Tensor cores"). What
differs:

- B's fragment holds four consecutive k of one column, so the kernel takes y transposed:
  `matmul_int8(x, y)` is `jax.jit` of `x, y -> kernel(x, y.T)`, XLA's transpose before it;
- a K step is 64 bytes (two mma k-steps of 32); x's and y.T's tiles are stored row by row,
  padded by 16 bytes so that the 8 rows an `ldmatrix` phase reads fall in 8 groups of banks;
- `ldmatrix` of bytes gives each lane four consecutive bytes of a row, which are a register of
  `mma_sync`'s fragment as loaded: the PTX moves no byte between the two.

`python examples/matmul_int8.py [--size N]` checks z's first 256 rows against NumPy's product
(N a multiple of 128) and, on a GPU, all of z against XLA's, and times both (with
examples/matmul_int8_wgmma.py's `main`).
"""
import argparse
import os
import sys

import jax
import jax.numpy as jnp

import ptxpy
from ptxpy import Array, i8, i32

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from matmul_int8_wgmma import main as check_and_time  # noqa: E402  (its NumPy and XLA checks)

BM = 128            # block tile rows
BN = 128            # block tile columns
BK = 64             # K step: two mma k-steps of 32
STAGES = 3          # shared-memory buffers in the cp.async ring
WM = 64             # warp tile rows: 4 mma tiles of 16
WN = 32             # warp tile columns: 4 mma tiles of 8
MT = WM // 16       # mma tiles per warp tile, down and across
NT = WN // 8
WARPS_N = BN // WN  # the block's warps: (BM // WM) x WARPS_N, here 2 x 4
THREADS = BM // WM * WARPS_N * 32
STRIDE = BK + 16    # padded shared rows (16 bytes more): ldmatrix free of bank conflicts
CHUNKS = BK // 16   # 16-byte pieces of a tile's row
ROWS = THREADS // CHUNKS            # rows one copy by every thread covers


@ptxpy.func
def load_tile(a: Array[i8, 2], s: Array[i8, 3], stage: i32, r0: i32, k0: i32, t: i32,
              valid: bool):
    """Start the copies of a's 128 x BK tile at (r0, k0) into s[stage], 16 bytes per cp.async
    (where not `valid`, zeros and no reads)."""
    for r in ptxpy.static_range(0, 128, ROWS):
        row = t // CHUNKS + r
        col = (t % CHUNKS) * 16
        ptxpy.cp_async(s[stage, row, col:col + 16], a[r0 + row, k0 + col:k0 + col + 16], valid)


@ptxpy.jit(out_shape=lambda x, yt: jax.ShapeDtypeStruct((x.shape[0], yt.shape[0]), jnp.int32),
           grid=lambda x, yt: (yt.shape[0] // BN, x.shape[0] // BM), block=THREADS)
def matmul_int8_t(x: Array[i8, 2], yt: Array[i8, 2], z: Array[i32, 2]):
    """z = x @ yt.T, exact i32 sums."""
    tiles = x.shape[1] // BK
    m0 = ptxpy.block_idx.y * BM
    n0 = ptxpy.block_idx.x * BN
    xs = ptxpy.shared_array((STAGES, BM, STRIDE), i8)    # xs[s, m, k] = x[m0 + m, k0 + k]
    ys = ptxpy.shared_array((STAGES, BN, STRIDE), i8)    # ys[s, n, k] = y[k0 + k, n0 + n]
    acc = ptxpy.local_array((MT, NT, 4), i32)            # [m tile, n tile, fragment]: registers
    bf = ptxpy.local_array((NT, 8), i8)                  # a k step's B fragments: registers
    for i in ptxpy.static_range(MT):
        for j in ptxpy.static_range(NT):
            for e in ptxpy.static_range(4):
                acc[i, j, e] = 0

    t = ptxpy.thread_idx.x
    warp = t // 32
    wm = (warp // WARPS_N) * WM     # this warp's tile of the block's
    wn = (warp % WARPS_N) * WN
    lane = ptxpy.lane_id()
    for s in ptxpy.static_range(STAGES - 1):     # the first steps' tiles, a group each
        load_tile(x, xs, s, m0, s * BK, t, s < tiles)
        load_tile(yt, ys, s, n0, s * BK, t, s < tiles)
        ptxpy.cp_async_commit()
    for kt in range(tiles):
        ptxpy.cp_async_wait(STAGES - 2)     # this thread's copies of step kt have landed,
        ptxpy.syncthreads()                 # everyone's have, and step kt - 1's buffer is free
        ahead = kt + STAGES - 1
        load_tile(x, xs, ahead % STAGES, m0, ahead * BK, t, ahead < tiles)
        load_tile(yt, ys, ahead % STAGES, n0, ahead * BK, t, ahead < tiles)
        ptxpy.cp_async_commit()             # (an empty group past the end keeps the count)
        st = kt % STAGES
        for k in ptxpy.static_range(0, BK, 32):
            for j in ptxpy.static_range(0, NT, 2):  # lanes 0-15: column tile j's 8 rows of
                brow = wn + (j + lane // 16) * 8 + lane % 8     # y.T, bytes k..k+15 then
                bcol = k + (lane // 8) % 2 * 16                 # k+16..k+31; lanes 16-31:
                (b0, b1, b2, b3, b4, b5, b6, b7, c0, c1, c2, c3, c4, c5, c6,   # tile j + 1's
                 c7) = ptxpy.ldmatrix(ys[st, brow, bcol:bcol + 16], 4)
                bf[j, 0:4] = (b0, b1, b2, b3)
                bf[j, 4:8] = (b4, b5, b6, b7)
                bf[j + 1, 0:4] = (c0, c1, c2, c3)
                bf[j + 1, 4:8] = (c4, c5, c6, c7)
            for i in ptxpy.static_range(MT):    # lanes 0-15: rows 0-15, bytes k..k+15;
                arow = wm + i * 16 + lane % 16  # lanes 16-31: bytes k+16..k+31
                acol = k + (lane // 16) * 16
                (a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14,
                 a15) = ptxpy.ldmatrix(xs[st, arow, acol:acol + 16], 4)
                for j in ptxpy.static_range(NT):
                    d0, d1, d2, d3 = ptxpy.mma_sync(
                        (a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15),
                        (bf[j, 0], bf[j, 1], bf[j, 2], bf[j, 3], bf[j, 4], bf[j, 5], bf[j, 6],
                         bf[j, 7]),
                        (acc[i, j, 0], acc[i, j, 1], acc[i, j, 2], acc[i, j, 3]))
                    acc[i, j, 0:4] = (d0, d1, d2, d3)
    g = lane // 4
    q = lane % 4
    for i in ptxpy.static_range(MT):
        for j in ptxpy.static_range(NT):
            row = m0 + wm + i * 16 + g
            col = n0 + wn + j * 8 + 2 * q
            z[row, col:col + 2] = (acc[i, j, 0], acc[i, j, 1])
            z[row + 8, col:col + 2] = (acc[i, j, 2], acc[i, j, 3])


@jax.jit
def matmul_int8(x, y):
    return matmul_int8_t(x, y.T)


def main(size: int | None = None) -> None:
    check_and_time(size, matmul_int8, "matmul_int8", gpu_size=4096)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=None, help="matrix size N (N x N)")
    main(parser.parse_args().size)
