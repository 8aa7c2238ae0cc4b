"""f32 matrix multiplication on the tensor cores (tf32 operands, f32 accumulators), z = x @ y.

The precision of PyTorch's `allow_tf32` and of XLA's default f32 `dot` on these GPUs: each
operand keeps 10 fraction bits, products are exact and summed in f32. Built on
`ptxpy.mma_sync` (PTX `mma.sync.aligned.m16n8k8`, docs/language.md "Tensor cores"):

- each block of 256 threads (8 warps) computes a 128 x 128 tile of z and loops over K in
  steps of 16, staging a 128 x 16 tile of x and a 16 x 128 tile of y in shared memory (two
  128-bit global loads per thread for each, issued one step ahead: register prefetching);
- the warps form a 2 x 4 grid, each owning a 64 x 32 tile of z: 4 x 4 tensor-core tiles of
  16 x 8, whose 64 f32 accumulators stay in registers;
- per k step of 8 a warp reads its A fragments (4 per 16-row tile) and B fragments (2 per
  8-column tile) from shared memory and issues 16 `mma.sync`;
- the shared tiles' rows are padded (x: 16 + 4 floats, y: 128 + 8) so that the 32 lanes of a
  fragment load hit 32 different banks.

`python examples/matmul_tf32.py [--size N]` checks z against float64 NumPy (N a multiple of
128) within tf32's error and, on a GPU, times it beside XLA's f32 `jnp.dot` (tf32 too).
"""
import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

import ptxpy
from ptxpy import Array, f32

BM = 128            # block tile rows
BN = 128            # block tile columns
BK = 16             # K step (two mma k-steps of 8)
THREADS = 256       # 8 warps: 2 (rows) x 4 (columns)
WM = 64             # warp tile rows: 4 mma tiles of 16
WN = 32             # warp tile columns: 4 mma tiles of 8
X_STRIDE = BK + 4   # padded shared rows: fragment loads free of bank conflicts
Y_STRIDE = BN + 8


@ptxpy.jit(out_shape=lambda x, y: jax.ShapeDtypeStruct((x.shape[0], y.shape[1]), x.dtype),
           grid=lambda x, y: (y.shape[1] // BN, x.shape[0] // BM), block=THREADS)
def matmul_tf32(x: Array[f32, 2], y: Array[f32, 2], z: Array[f32, 2]):
    k_total = x.shape[1]
    m0 = ptxpy.block_idx.y * BM
    n0 = ptxpy.block_idx.x * BN
    xs = ptxpy.shared_array((BM, X_STRIDE), f32)    # xs[m, k] = x[m0 + m, k0 + k]
    ys = ptxpy.shared_array((BK, Y_STRIDE), f32)    # ys[k, n] = y[k0 + k, n0 + n]
    acc = ptxpy.local_array((4, 4, 4), f32)         # [m tile, n tile, fragment]: registers
    for i in ptxpy.static_range(4):
        for j in ptxpy.static_range(4):
            for e in ptxpy.static_range(4):
                acc[i, j, e] = 0.0

    t = ptxpy.thread_idx.x
    warp = t // 32
    wm = (warp // 4) * WM           # this warp's tile of the block's
    wn = (warp % 4) * WN
    g = ptxpy.lane_id() // 4        # the lane's place in the fragments
    q = ptxpy.lane_id() % 4
    # The tiles each thread copies per step: rows xr and xr + 64 of x's (4 floats at column xc),
    # rows yr and yr + 8 of y's (4 floats at column yc).
    xr = t // 4
    xc = (t % 4) * 4
    yr = t // 32
    yc = (t % 32) * 4
    kx = xc
    ny = n0 + yc
    p0, p1, p2, p3 = x[m0 + xr, kx:kx + 4]
    p4, p5, p6, p7 = x[m0 + xr + 64, kx:kx + 4]
    r0, r1, r2, r3 = y[yr, ny:ny + 4]
    r4, r5, r6, r7 = y[yr + 8, ny:ny + 4]
    for k0 in range(0, k_total, BK):
        xs[xr, xc:xc + 4] = (p0, p1, p2, p3)
        xs[xr + 64, xc:xc + 4] = (p4, p5, p6, p7)
        ys[yr, yc:yc + 4] = (r0, r1, r2, r3)
        ys[yr + 8, yc:yc + 4] = (r4, r5, r6, r7)
        ptxpy.syncthreads()
        if k0 + BK < k_total:       # the next step's tiles, while this one is computed
            kx = k0 + BK + xc
            p0, p1, p2, p3 = x[m0 + xr, kx:kx + 4]
            p4, p5, p6, p7 = x[m0 + xr + 64, kx:kx + 4]
            r0, r1, r2, r3 = y[k0 + BK + yr, ny:ny + 4]
            r4, r5, r6, r7 = y[k0 + BK + yr + 8, ny:ny + 4]
        for k in ptxpy.static_range(0, BK, 8):
            for j in ptxpy.static_range(4):
                b0 = ys[k + q, wn + j * 8 + g]
                b1 = ys[k + q + 4, wn + j * 8 + g]
                for i in ptxpy.static_range(4):
                    row = wm + i * 16 + g
                    d0, d1, d2, d3 = ptxpy.mma_sync(
                        (xs[row, k + q], xs[row + 8, k + q], xs[row, k + q + 4], xs[row + 8, k + q + 4]),
                        (b0, b1),
                        (acc[i, j, 0], acc[i, j, 1], acc[i, j, 2], acc[i, j, 3]))
                    acc[i, j, 0] = d0
                    acc[i, j, 1] = d1
                    acc[i, j, 2] = d2
                    acc[i, j, 3] = d3
        ptxpy.syncthreads()
    for i in ptxpy.static_range(4):
        for j in ptxpy.static_range(4):
            row = m0 + wm + i * 16 + g
            col = n0 + wn + j * 8 + 2 * q
            z[row, col:col + 2] = (acc[i, j, 0], acc[i, j, 1])
            z[row + 8, col:col + 2] = (acc[i, j, 2], acc[i, j, 3])


def main(size: int | None = None) -> None:
    on_gpu = jax.default_backend() == "gpu"
    if size is None:
        size = 4096 if on_gpu else 128
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
