"""Tiled f32 matrix multiplication on the CUDA cores (no tensor cores), z = x @ y.

The classic SIMT SGEMM structure (as in CUTLASS's SIMT kernels and most "how to write a fast
matmul" walk-throughs):

- each block of 256 threads computes a 128 x 128 tile of z and loops over K in steps of 16;
- each step stages a 128 x 16 tile of x and a 16 x 128 tile of y in shared memory (two 128-bit
  global loads per thread for each), x transposed so that its columns become rows;
- each thread accumulates an 8 x 8 micro-tile of z in 64 registers: per k it reads 8 values of
  x and 8 of y from shared memory (four 128-bit loads) and does 64 FMAs, so the inner loop does
  16 FMAs per shared-memory load;
- a thread's 8 rows (and 8 columns) are two groups of 4, 64 apart, so that the 16 threads that
  share a row of the block read 16 different float4s of a shared tile row: no bank conflicts;
- the next step's global loads are issued before the current step's FMAs (register
  prefetching), so their latency hides behind the arithmetic;
- the 16 k of a step are unrolled with `static_range`: each shared load then has a constant
  offset, and ptxas issues the next k's loads while this k's FMAs run.

On an H100 at 4096^3 (BENCHMARKS.md): the unrolled step 47.2 TFLOP/s against 43.6 for a run-time
`for k in range(BK)` (session 12; the rolled loop waited on its shared loads); steps of 16
rather than 8 halve the barriers per FMA (43.9 against 43.2-43.3, session 10, rolled); two
shared buffers with one barrier per step measured slower (42.5-42.7). Shared memory: 16.6 KB per
block; 127 registers (two blocks of 256 threads per SM). The grid has one block per output
tile: (N/128, M/128).

`python examples/matmul.py [--size N]` checks z against jax.numpy (N a multiple of 128, K of 16).
"""
import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

import ptxpy
from ptxpy import Array, f32

BM = 128          # block tile rows
BN = 128          # block tile columns
BK = 16           # K step
THREADS = 256     # a 16 x 16 layout of threads, each owning an 8 x 8 micro-tile
HALF_M = BM // 2  # a thread's rows are tm..tm+3 and tm+64..tm+67
HALF_N = BN // 2
PAD = 4           # padding of the transposed x tile's rows (keeps 16-byte alignment)


@ptxpy.jit(out_shape=lambda x, y: jax.ShapeDtypeStruct((x.shape[0], y.shape[1]), x.dtype),
           grid=lambda x, y: (y.shape[1] // BN, x.shape[0] // BM), block=THREADS)
def matmul(x: Array[f32, 2], y: Array[f32, 2], z: Array[f32, 2]):
    k_total = x.shape[1]
    m0 = ptxpy.block_idx.y * BM
    n0 = ptxpy.block_idx.x * BN

    xs = ptxpy.shared_array((BK, BM + PAD), f32)     # xs[k, m] = x[m0 + m, k0 + k]
    ys = ptxpy.shared_array((BK, BN), f32)           # ys[k, n] = y[k0 + k, n0 + n]
    acc = ptxpy.local_array((8, 8), f32)             # all indices constant: registers
    a = ptxpy.local_array(8, f32)
    b = ptxpy.local_array(8, f32)
    for r in ptxpy.static_range(8):
        for c in ptxpy.static_range(8):
            acc[r, c] = 0.0

    t = ptxpy.thread_idx.x
    tm = (t // 16) * 4             # micro-tile rows tm..tm+3 and tm+64..tm+67
    tn = (t % 16) * 4              # micro-tile columns tn..tn+3 and tn+64..tn+67
    tm2 = tm + HALF_M
    tn2 = tn + HALF_N
    # The eight elements each thread copies per step, as two float4s of each tile.
    xm = t // 2                    # x tile: row xm, columns xk..xk+3 and xk+8..xk+11
    xk = (t % 2) * 4
    yk = t // 32                   # y tile: rows yk and yk+8, columns yn..yn+3
    yn = (t % 32) * 4
    # (Slice starts are named variables: ptxpy rejects x[r, k0 + xk:k0 + xk + 4] today.)
    kx = xk
    kx2 = xk + 8
    ny = n0 + yn

    # Step 0's tiles, loaded into registers.
    p0, p1, p2, p3 = x[m0 + xm, kx:kx + 4]
    p4, p5, p6, p7 = x[m0 + xm, kx2:kx2 + 4]
    q0, q1, q2, q3 = y[yk, ny:ny + 4]
    q4, q5, q6, q7 = y[yk + 8, ny:ny + 4]
    for k0 in range(0, k_total, BK):
        # Registers -> shared memory (x transposed).
        xs[xk, xm] = p0
        xs[xk + 1, xm] = p1
        xs[xk + 2, xm] = p2
        xs[xk + 3, xm] = p3
        xs[xk + 8, xm] = p4
        xs[xk + 9, xm] = p5
        xs[xk + 10, xm] = p6
        xs[xk + 11, xm] = p7
        ys[yk, yn:yn + 4] = (q0, q1, q2, q3)
        ys[yk + 8, yn:yn + 4] = (q4, q5, q6, q7)
        ptxpy.syncthreads()
        # Prefetch the next step's tiles while this one is computed.
        if k0 + BK < k_total:
            kx = k0 + BK + xk
            kx2 = kx + 8
            p0, p1, p2, p3 = x[m0 + xm, kx:kx + 4]
            p4, p5, p6, p7 = x[m0 + xm, kx2:kx2 + 4]
            q0, q1, q2, q3 = y[k0 + BK + yk, ny:ny + 4]
            q4, q5, q6, q7 = y[k0 + BK + yk + 8, ny:ny + 4]
        # Unrolled: with k a constant, every shared load has a constant offset and ptxas can
        # issue the next k's loads during this k's FMAs (127 registers on sm_90). A run-time
        # `range(BK)` here measured 7% slower (BENCHMARKS.md, session 12).
        for k in ptxpy.static_range(BK):
            a0, a1, a2, a3 = xs[k, tm:tm + 4]
            a4, a5, a6, a7 = xs[k, tm2:tm2 + 4]
            b0, b1, b2, b3 = ys[k, tn:tn + 4]
            b4, b5, b6, b7 = ys[k, tn2:tn2 + 4]
            a[0] = a0
            a[1] = a1
            a[2] = a2
            a[3] = a3
            a[4] = a4
            a[5] = a5
            a[6] = a6
            a[7] = a7
            b[0] = b0
            b[1] = b1
            b[2] = b2
            b[3] = b3
            b[4] = b4
            b[5] = b5
            b[6] = b6
            b[7] = b7
            for r in ptxpy.static_range(8):
                for c in ptxpy.static_range(8):
                    # Explicit FMA: ptxpy does not contract a * b + c by itself.
                    acc[r, c] = ptxpy.fma(a[r], b[c], acc[r, c])
        ptxpy.syncthreads()          # everyone is done reading before the tiles are replaced

    # Write the micro-tile: eight rows of two float4 stores each.
    for r in ptxpy.static_range(8):
        row = m0 + tm + r % 4 + (r // 4) * HALF_M
        col = n0 + tn
        z[row, col:col + 4] = (acc[r, 0], acc[r, 1], acc[r, 2], acc[r, 3])
        col2 = col + HALF_N
        z[row, col2:col2 + 4] = (acc[r, 4], acc[r, 5], acc[r, 6], acc[r, 7])


def checked_matmul(x, y):
    (m, k), (k2, n) = x.shape, y.shape
    if k != k2 or m % BM or n % BN or k % BK:
        raise ValueError(f"matmul needs M, N multiples of {BM} and K of {BK}, got {x.shape} @ {y.shape}")
    return matmul(x, y)


def main(size: int | None = None) -> None:
    on_gpu = jax.default_backend() == "gpu"
    if size is None:
        size = 4096 if on_gpu else 256
    k1, k2 = jax.random.split(jax.random.key(0))
    x = jax.random.normal(k1, (size, size), jnp.float32)
    y = jax.random.normal(k2, (size, size), jnp.float32)
    f = jax.jit(checked_matmul)
    z = f(x, y)
    expected = jnp.matmul(x, y, precision=jax.lax.Precision.HIGHEST)
    np.testing.assert_allclose(np.asarray(z), np.asarray(expected), rtol=1e-4, atol=2e-3)
    msg = f"matmul of two {size} x {size} f32 matrices: matches jax.numpy"
    if on_gpu:
        f(x, y).block_until_ready()
        start, reps = time.perf_counter(), 10
        for _ in range(reps):
            z = f(x, y)
        z.block_until_ready()
        seconds = (time.perf_counter() - start) / reps
        msg += f"; {2 * size ** 3 / seconds / 1e12:.1f} TFLOP/s"
    print(msg)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=None, help="matrix size N (N x N)")
    main(parser.parse_args().size)
