"""f32 matrix multiplication on the tensor cores (tf32 operands, f32 accumulators), z = x @ y.

The precision of PyTorch's `allow_tf32` and of XLA's default f32 `dot` on these GPUs: each
operand keeps 10 fraction bits, products are exact and summed in f32. Built on
`ptxpy.mma_sync` (PTX `mma.sync.aligned.m16n8k8`), `ptxpy.ldmatrix` and `ptxpy.cp_async` (PTX
`cp.async`), docs/language.md "Tensor cores" and "Asynchronous copies":

- each block of 256 threads (8 warps) computes a 128 x 256 tile of z and loops over K in
  steps of 32, each step's 128 x 32 tile of x and 32 x 256 tile of y copied into shared memory
  by 16-byte `cp.async` into a ring of STAGES buffers: the copies of step k + STAGES - 1 are
  in flight while step k is computed (the software pipeline of CUTLASS's multistage kernels);
- the warps form a 2 x 4 grid, each owning a 64 x 64 tile of z: 4 x 8 tensor-core tiles of
  16 x 8, whose 128 f32 accumulators stay in registers (64 x 32 tiles were 2-11% slower on the
  H100: each fragment read from shared memory now feeds twice the `mma`s);
- per k step of 8 a warp reads its A fragments with one `ptxpy.ldmatrix` per 16-row tile
  (PTX `ldmatrix ... .x4`: four 8 x 4 f32 matrices, each lane pointing at one row), its B
  fragments (2 per 8-column tile) with scalar shared loads, and issues 32 `mma.sync`;
- the shared tiles' rows are padded (x: 32 + 4 floats, y: 256 + 8) so that the 32 lanes of a
  fragment load hit 32 different banks.

`python examples/matmul_tf32.py [--size N]` checks z against float64 NumPy (N a multiple of
256) within tf32's error and, on a GPU, times it beside XLA's f32 `jnp.dot` (tf32 too).
"""
import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

import ptxpy
from ptxpy import Array, f32, i32

BM = 128            # block tile rows
BN = 256            # block tile columns
BK = 32             # K step: four mma k-steps of 8
STAGES = 3          # shared-memory buffers in the cp.async ring
WM = 64             # warp tile rows: 4 mma tiles of 16
WN = 64             # warp tile columns: 8 mma tiles of 8
MT = WM // 16       # mma tiles per warp tile, down and across
NT = WN // 8
WARPS_N = BN // WN  # the block's warps: (BM // WM) x WARPS_N, here 2 x 4
THREADS = BM // WM * WARPS_N * 32
X_STRIDE = BK + 4   # padded shared rows: fragment loads free of bank conflicts
Y_STRIDE = BN + 8
X_CHUNKS = BK // 4                  # 16-byte pieces of a row of x's tile
X_ROWS = THREADS // X_CHUNKS        # rows of x's tile one copy by every thread covers
Y_ROWS = THREADS // (BN // 4)       # rows of y's tile one copy by every thread covers
LDMATRIX = 1        # A fragments by ptxpy.ldmatrix (1) or four scalar shared loads (0)


@ptxpy.func
def load_stage(x: Array[f32, 2], y: Array[f32, 2], xs: Array[f32, 3], ys: Array[f32, 3],
               stage: i32, k0: i32, m0: i32, n0: i32, t: i32, valid: bool):
    """Start the copies of x's BM x BK tile at (m0, k0) and y's BK x BN tile at (k0, n0) into
    ring buffer `stage`, 16 bytes per cp.async (where not `valid` they read nothing and
    fill the buffer with zeros)."""
    for r in ptxpy.static_range(BM // X_ROWS):
        row = t // X_CHUNKS + X_ROWS * r
        col = (t % X_CHUNKS) * 4
        ptxpy.cp_async(xs[stage, row, col:col + 4], x[m0 + row, k0 + col:k0 + col + 4], valid)
    for r in ptxpy.static_range(BK // Y_ROWS):
        row = t // (BN // 4) + Y_ROWS * r
        col = (t % (BN // 4)) * 4
        ptxpy.cp_async(ys[stage, row, col:col + 4], y[k0 + row, n0 + col:n0 + col + 4], valid)


@ptxpy.jit(out_shape=lambda x, y: jax.ShapeDtypeStruct((x.shape[0], y.shape[1]), x.dtype),
           grid=lambda x, y: (y.shape[1] // BN, x.shape[0] // BM), block=THREADS)
def matmul_tf32(x: Array[f32, 2], y: Array[f32, 2], z: Array[f32, 2]):
    tiles = x.shape[1] // BK
    m0 = ptxpy.block_idx.y * BM
    n0 = ptxpy.block_idx.x * BN
    xs = ptxpy.shared_array((STAGES, BM, X_STRIDE), f32)    # xs[s, m, k] = x[m0 + m, k0 + k]
    ys = ptxpy.shared_array((STAGES, BK, Y_STRIDE), f32)    # ys[s, k, n] = y[k0 + k, n0 + n]
    acc = ptxpy.local_array((MT, NT, 4), f32)               # [m tile, n tile, fragment]: registers
    af = ptxpy.local_array((MT, 4), f32)                    # a k step's A fragments: registers
    for i in ptxpy.static_range(MT):
        for j in ptxpy.static_range(NT):
            for e in ptxpy.static_range(4):
                acc[i, j, e] = 0.0

    t = ptxpy.thread_idx.x
    warp = t // 32
    wm = (warp // WARPS_N) * WM     # this warp's tile of the block's
    wn = (warp % WARPS_N) * WN
    lane = ptxpy.lane_id()
    g = lane // 4                   # the lane's place in the fragments
    q = lane % 4
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
        for k in ptxpy.static_range(0, BK, 8):
            for i in ptxpy.static_range(MT):     # the A fragments of the warp's row tiles
                if LDMATRIX:    # lanes 0-15 point at rows 0-15, k..k+3; 16-31 at k+4..k+7
                    arow = wm + i * 16 + lane % 16
                    acol = k + (lane // 16) * 4
                    a0, a1, a2, a3 = ptxpy.ldmatrix(xs[st, arow, acol:acol + 4], 4)
                else:
                    row = wm + i * 16 + g
                    a0, a1 = xs[st, row, k + q], xs[st, row + 8, k + q]
                    a2, a3 = xs[st, row, k + q + 4], xs[st, row + 8, k + q + 4]
                af[i, 0] = a0
                af[i, 1] = a1
                af[i, 2] = a2
                af[i, 3] = a3
            for j in ptxpy.static_range(NT):
                b0 = ys[st, k + q, wn + j * 8 + g]
                b1 = ys[st, k + q + 4, wn + j * 8 + g]
                for i in ptxpy.static_range(MT):
                    d0, d1, d2, d3 = ptxpy.mma_sync(
                        (af[i, 0], af[i, 1], af[i, 2], af[i, 3]), (b0, b1),
                        (acc[i, j, 0], acc[i, j, 1], acc[i, j, 2], acc[i, j, 3]))
                    acc[i, j, 0] = d0
                    acc[i, j, 1] = d1
                    acc[i, j, 2] = d2
                    acc[i, j, 3] = d3
    for i in ptxpy.static_range(MT):
        for j in ptxpy.static_range(NT):
            row = m0 + wm + i * 16 + g
            col = n0 + wn + j * 8 + 2 * q
            z[row, col:col + 2] = (acc[i, j, 0], acc[i, j, 1])
            z[row + 8, col:col + 2] = (acc[i, j, 2], acc[i, j, 3])


def main(size: int | None = None) -> None:
    on_gpu = jax.default_backend() == "gpu"
    if size is None:
        size = 4096 if on_gpu else 256
    rng = np.random.default_rng(0)
    x = rng.standard_normal((size, size), dtype=np.float32)
    y = rng.standard_normal((size, size), dtype=np.float32)
    xj, yj = jnp.asarray(x), jnp.asarray(y)
    f = jax.jit(matmul_tf32)
    z = np.asarray(f(xj, yj))
    exact = x.astype(np.float64) @ y.astype(np.float64)
    scale = np.abs(x).astype(np.float64) @ np.abs(y).astype(np.float64)
    error = float(np.max(np.abs(z - exact) / scale))
    assert error < 2.0 ** -10, f"error {error:.2e} of sum |x||y|, more than tf32 gives"
    msg = (f"matmul_tf32 of two {size} x {size} f32 matrices: matches float64 NumPy within tf32's "
           f"error ({error:.1e} of sum |x||y|)")
    if on_gpu:
        for name, fn in (("ptxpy", f), ("XLA's jnp.dot (tf32)", jax.jit(jnp.dot))):
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
