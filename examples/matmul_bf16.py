"""bf16 matrix multiplication on the tensor cores with f32 accumulators, z = x @ y in f32.

What `jnp.dot(x, y, preferred_element_type=jnp.float32)` computes for bf16 x and y: products
exact, sums in f32. Built, as CUTLASS's and Triton's Ampere kernels are, from `ptxpy.cp_async`
(global to shared, no registers on the way), `ptxpy.ldmatrix` (the fragments, straight from
shared memory) and `ptxpy.mma_sync` (PTX `mma.sync.aligned.m16n8k16...bf16`), docs/language.md
"Tensor cores" and "Asynchronous copies":

- each block of 256 threads (8 warps) computes a 128 x 128 tile of z and loops over K in steps
  of 32, each step's 128 x 32 tile of x and 32 x 128 tile of y copied by 16-byte `cp.async`
  (8 bf16) into a ring of STAGES shared buffers, STAGES - 1 steps ahead;
- the warps form a 2 x 4 grid, each owning a 64 x 32 tile of z: 4 x 4 tensor-core tiles of
  16 x 8 and their 64 f32 accumulators;
- per k step of 16 a warp loads the A fragments of its 4 row tiles with one `ldmatrix .x4`
  each, the B fragments of its 4 column tiles with two `ldmatrix .x4.trans` (y's tile is
  k-major, as y is: the transposing load gives the column-major fragment), and issues 16
  `mma.sync`;
- the shared rows are padded by 16 bytes so that the 8 rows an `ldmatrix` phase reads fall
  in 8 different groups of banks.

`python examples/matmul_bf16.py [--size N]` checks z against float64 NumPy (N a multiple of
128) and, on a GPU, times it beside XLA's `jnp.dot` with f32 results.
"""
import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

import ptxpy
from ptxpy import Array, bf16, f32, i32

BM = 128            # block tile rows
BN = 128            # block tile columns
BK = 32             # K step: two mma k-steps of 16
STAGES = 3          # shared-memory buffers in the cp.async ring
WM = 64             # warp tile rows: 4 mma tiles of 16
WN = 32             # warp tile columns: 4 mma tiles of 8
MT = WM // 16       # mma tiles per warp tile, down and across
NT = WN // 8
WARPS_N = BN // WN  # the block's warps: (BM // WM) x WARPS_N, here 2 x 4
THREADS = BM // WM * WARPS_N * 32
X_STRIDE = BK + 8   # padded shared rows (16 bytes more): ldmatrix free of bank conflicts
Y_STRIDE = BN + 8
X_CHUNKS = BK // 8                  # 16-byte pieces of a row of x's tile
X_ROWS = THREADS // X_CHUNKS        # rows of x's tile one copy by every thread covers
Y_ROWS = THREADS // (BN // 8)       # rows of y's tile one copy by every thread covers


@ptxpy.func
def load_stage(x: Array[bf16, 2], y: Array[bf16, 2], xs: Array[bf16, 3], ys: Array[bf16, 3],
               stage: i32, k0: i32, m0: i32, n0: i32, t: i32, valid: bool):
    """Start the copies of x's BM x BK tile at (m0, k0) and y's BK x BN tile at (k0, n0) into
    ring buffer `stage`, 16 bytes per cp.async (where not `valid`, zeros and no reads)."""
    for r in ptxpy.static_range(BM // X_ROWS):
        row = t // X_CHUNKS + X_ROWS * r
        col = (t % X_CHUNKS) * 8
        ptxpy.cp_async(xs[stage, row, col:col + 8], x[m0 + row, k0 + col:k0 + col + 8], valid)
    for r in ptxpy.static_range(BK // Y_ROWS):
        row = t // (BN // 8) + Y_ROWS * r
        col = (t % (BN // 8)) * 8
        ptxpy.cp_async(ys[stage, row, col:col + 8], y[k0 + row, n0 + col:n0 + col + 8], valid)


@ptxpy.jit(out_shape=lambda x, y: jax.ShapeDtypeStruct((x.shape[0], y.shape[1]), jnp.float32),
           grid=lambda x, y: (y.shape[1] // BN, x.shape[0] // BM), block=THREADS)
def matmul_bf16(x: Array[bf16, 2], y: Array[bf16, 2], z: Array[f32, 2]):
    tiles = x.shape[1] // BK
    m0 = ptxpy.block_idx.y * BM
    n0 = ptxpy.block_idx.x * BN
    xs = ptxpy.shared_array((STAGES, BM, X_STRIDE), bf16)   # xs[s, m, k] = x[m0 + m, k0 + k]
    ys = ptxpy.shared_array((STAGES, BK, Y_STRIDE), bf16)   # ys[s, k, n] = y[k0 + k, n0 + n]
    acc = ptxpy.local_array((MT, NT, 4), f32)               # [m tile, n tile, fragment]: registers
    af = ptxpy.local_array((MT, 8), bf16)                   # a k step's fragments: registers
    bf = ptxpy.local_array((NT, 4), bf16)
    for i in ptxpy.static_range(MT):
        for j in ptxpy.static_range(NT):
            for e in ptxpy.static_range(4):
                acc[i, j, e] = 0.0

    t = ptxpy.thread_idx.x
    warp = t // 32
    wm = (warp // WARPS_N) * WM     # this warp's tile of the block's
    wn = (warp % WARPS_N) * WN
    lane = ptxpy.lane_id()
    for s in ptxpy.static_range(STAGES - 1):     # the first steps' tiles, a group each
        load_stage(x, y, xs, ys, s, s * BK, m0, n0, t, s < tiles)
        ptxpy.cp_async_commit()
    for kt in range(tiles):
        ptxpy.cp_async_wait(STAGES - 2)     # this thread's copies of step kt have landed,
        ptxpy.syncthreads()                 # everyone's have, and step kt - 1's buffer is free
        ahead = kt + STAGES - 1
        load_stage(x, y, xs, ys, ahead % STAGES, ahead * BK, m0, n0, t, ahead < tiles)
        ptxpy.cp_async_commit()             # (an empty group past the end keeps the count)
        st = kt % STAGES
        for k in ptxpy.static_range(0, BK, 16):
            for i in ptxpy.static_range(MT):    # lanes 0-15: rows 0-15, k..k+7; 16-31: k+8..k+15
                arow = wm + i * 16 + lane % 16
                acol = k + (lane // 16) * 8
                a0, a1, a2, a3, a4, a5, a6, a7 = ptxpy.ldmatrix(xs[st, arow, acol:acol + 8], 4)
                af[i, 0] = a0
                af[i, 1] = a1
                af[i, 2] = a2
                af[i, 3] = a3
                af[i, 4] = a4
                af[i, 5] = a5
                af[i, 6] = a6
                af[i, 7] = a7
            for j in ptxpy.static_range(0, NT, 2):  # lanes 0-15: rows k..k+15 of column tile j,
                bcol = wn + (j + lane // 16) * 8    # lanes 16-31: those of column tile j + 1
                b0, b1, b2, b3, b4, b5, b6, b7 = ptxpy.ldmatrix(
                    ys[st, k + lane % 16, bcol:bcol + 8], 4, trans=True)
                bf[j, 0] = b0
                bf[j, 1] = b1
                bf[j, 2] = b2
                bf[j, 3] = b3
                bf[j + 1, 0] = b4
                bf[j + 1, 1] = b5
                bf[j + 1, 2] = b6
                bf[j + 1, 3] = b7
            for j in ptxpy.static_range(NT):
                for i in ptxpy.static_range(MT):
                    d0, d1, d2, d3 = ptxpy.mma_sync(
                        (af[i, 0], af[i, 1], af[i, 2], af[i, 3], af[i, 4], af[i, 5], af[i, 6],
                         af[i, 7]),
                        (bf[j, 0], bf[j, 1], bf[j, 2], bf[j, 3]),
                        (acc[i, j, 0], acc[i, j, 1], acc[i, j, 2], acc[i, j, 3]))
                    acc[i, j, 0] = d0
                    acc[i, j, 1] = d1
                    acc[i, j, 2] = d2
                    acc[i, j, 3] = d3
    g = lane // 4
    q = lane % 4
    for i in ptxpy.static_range(MT):
        for j in ptxpy.static_range(NT):
            row = m0 + wm + i * 16 + g
            col = n0 + wn + j * 8 + 2 * q
            z[row, col:col + 2] = (acc[i, j, 0], acc[i, j, 1])
            z[row + 8, col:col + 2] = (acc[i, j, 2], acc[i, j, 3])


def main(size: int | None = None) -> None:
    on_gpu = jax.default_backend() == "gpu"
    if size is None:
        size = 4096 if on_gpu else 128
    rng = np.random.default_rng(0)
    xj = jnp.asarray(rng.standard_normal((size, size), dtype=np.float32), jnp.bfloat16)
    yj = jnp.asarray(rng.standard_normal((size, size), dtype=np.float32), jnp.bfloat16)
    f = jax.jit(matmul_bf16)
    z = np.asarray(f(xj, yj))
    x, y = np.asarray(xj).astype(np.float64), np.asarray(yj).astype(np.float64)
    error = float(np.max(np.abs(z - x @ y) / (np.abs(x) @ np.abs(y))))
    # (the tensor cores' order and internal precision of the f32 sums are unspecified: a
    # bound well above f32 rounding, far below what a misplaced element gives)
    assert error < 2.0 ** -14, f"error {error:.2e} of sum |x||y|, more than f32 sums give"
    msg = (f"matmul_bf16 of two {size} x {size} bf16 matrices: matches float64 NumPy within f32 "
           f"accumulation ({error:.1e} of sum |x||y|)")
    if on_gpu:
        xla = jax.jit(lambda a, b: jnp.dot(a, b, preferred_element_type=jnp.float32))
        for name, fn in (("ptxpy", f), ("XLA's jnp.dot (f32 results)", xla)):
            fn(xj, yj).block_until_ready()
            start, reps = time.perf_counter(), 10
            for _ in range(reps):
                out = fn(xj, yj)
            out.block_until_ready()
            seconds = (time.perf_counter() - start) / reps
            msg += f"; {name} {2 * size ** 3 / seconds / 1e12:.1f} TFLOP/s"
    print(msg)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=None, help="matrix size N (N x N)")
    main(parser.parse_args().size)
