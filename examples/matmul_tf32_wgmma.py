"""f32 matrix multiplication on Hopper's warpgroup tensor cores (tf32 operands), z = x @ y.

XLA's default f32 `jnp.dot` on an H100 in ptxpy: `ptxpy.wgmma` with `dtype=f32`
(`wgmma.mma_async...k8.f32.tf32.tf32`, sm_90a), products of the operands' top 19 bits summed
in f32. examples/matmul_wgmma.py (bf16) is the same kernel explained; what differs:

- the tensor cores read tf32 operands K-major only (no `trans_b`), so the kernel takes y
  transposed: `matmul_tf32_wgmma(x, y)` is `jax.jit` of `x, y -> kernel(x, y.T)`, XLA's
  transpose of y (one pass over it) before the kernel;
- a 128-byte row holds 32 f32: each K step is 32 wide, 4 wgmma of k = 8, and both tiles are
  stored row by row (x's by m, y.T's by n) with 16-byte chunk c at c ^ (row % 8);
- the products are issued before the next tiles' copies, which then overlap them;
- the operands are not rounded to tf32 first, as `mma_sync`'s are (`cvt.rna`): the tensor
  cores read them from shared memory as they are, ignoring the low 13 bits. The error is
  about 2.5x XLA's (1.4e-4 of sum |x||y| at 2048^3 against 5.7e-5); rounding the tiles on
  their way through registers took 6x the time (BENCHMARKS.md, session 40).

`python examples/matmul_tf32_wgmma.py [--size N]` checks z against float64 NumPy (N a
multiple of 256) and, on a GPU, times it beside XLA's f32 `jnp.dot` (tf32 on these cards).
"""
import argparse
import os
import sys

import jax
import jax.numpy as jnp
import numpy as np

import ptxpy
from ptxpy import Array, Const, f32, i32

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from matmul_wgmma import tflops  # noqa: E402  (examples/matmul_wgmma.py)

BM = 128            # block tile rows: a warpgroup's 64 each
BN = 256            # block tile columns: the wgmma's N
BK = 32             # K step: 32 f32, one 128-byte swizzled row; 4 wgmma of k = 8
STAGES = 4          # shared-memory buffers in the cp.async ring
INFLIGHT = 1        # a step's wgmma group still running while the next step's are issued
AHEAD = STAGES - 1 - INFLIGHT     # steps whose tiles are copied ahead
GROUP = 16          # block rows per group of the launch order (L2 reuse); 0: the grid's order
THREADS = 128 * (BM // 64)
SWIZZLE = 128                     # bytes
ATOM = 8 * SWIZZLE                # the swizzle's pattern: 8 rows of 128 bytes


@ptxpy.func
def load_tile(a: Array[f32, 2], s: Array[f32, 3], ROWS: Const[int], stage: i32, r0: i32, k0: i32,
              t: i32, valid: bool):
    """Start the copies of a's ROWS x BK tile at (r0, k0) into s[stage], each row's 16-byte
    chunk c at chunk c ^ (row % 8) (where not `valid`, zeros and no reads)."""
    for r in ptxpy.static_range(0, ROWS, THREADS // 8):
        row = t // 8 + r
        c = t % 8
        col = (c ^ (row % 8)) * 4
        ptxpy.cp_async(s[stage, row, col:col + 4], a[r0 + row, k0 + c * 4:k0 + c * 4 + 4], valid)


@ptxpy.jit(out_shape=lambda x, yt: jax.ShapeDtypeStruct((x.shape[0], yt.shape[0]), jnp.float32),
           grid=lambda x, yt: (yt.shape[0] // BN, x.shape[0] // BM), block=THREADS)
def matmul_tf32_wgmma_t(x: Array[f32, 2], yt: Array[f32, 2], z: Array[f32, 2]):
    """z = x @ yt.T (tf32 products)."""
    tiles = x.shape[1] // BK
    bm, bn = ptxpy.block_idx.y, ptxpy.block_idx.x
    if GROUP > 0:      # blocks in launch order cover GROUP block rows, column by column
        pid = bn + bm * ptxpy.grid_dim.x
        per_group = GROUP * ptxpy.grid_dim.x
        first = pid // per_group * GROUP
        rows = min(ptxpy.grid_dim.y - first, GROUP)
        bm = first + pid % per_group % rows
        bn = pid % per_group // rows
    m0 = bm * BM
    n0 = bn * BN
    xs = ptxpy.shared_array((STAGES, BM, BK), f32)       # x's tile, rows swizzled
    ys = ptxpy.shared_array((STAGES, BN, BK), f32)       # y.T's tile, rows swizzled
    acc = ptxpy.local_array((BN // 8, 4), f32)           # the wgmma's D fragment: registers

    t = ptxpy.thread_idx.x
    g = t // 128                    # this thread's warpgroup: rows 64g..64g + 63
    for s in ptxpy.static_range(AHEAD):     # the first steps' tiles, a group each
        load_tile(x, xs, BM, s, m0, s * BK, t, s < tiles)
        load_tile(yt, ys, BN, s, n0, s * BK, t, s < tiles)
        ptxpy.cp_async_commit()
    for kt in range(tiles):
        ptxpy.cp_async_wait(AHEAD - 1)      # step kt's tiles have landed (this thread's),
        ptxpy.fence_proxy_async()           # are visible to the tensor cores' reads,
        ptxpy.syncthreads()                 # and everyone's have
        st = kt % STAGES
        ptxpy.wgmma_fence()
        for k in ptxpy.static_range(0, BK, 8):
            a = ptxpy.wgmma_desc(xs[st, 64 * g, k], SWIZZLE, 16, ATOM)
            b = ptxpy.wgmma_desc(ys[st, 0, k], SWIZZLE, 16, ATOM)
            ptxpy.wgmma(acc, a, b, f32, accumulate=kt + k > 0)
        ptxpy.wgmma_commit()
        ahead = kt + AHEAD                  # (its buffer was step kt - 1 - INFLIGHT's)
        load_tile(x, xs, BM, ahead % STAGES, m0, ahead * BK, t, ahead < tiles)
        load_tile(yt, ys, BN, ahead % STAGES, n0, ahead * BK, t, ahead < tiles)
        ptxpy.cp_async_commit()
        ptxpy.wgmma_wait(INFLIGHT)
    ptxpy.wgmma_wait(0)

    lane = t % 32
    row = m0 + 64 * g + 16 * ((t % 128) // 32) + lane // 4
    for j in ptxpy.static_range(BN // 8):
        col = n0 + 8 * j + 2 * (lane % 4)
        z[row, col:col + 2] = (acc[j, 0], acc[j, 1])
        z[row + 8, col:col + 2] = (acc[j, 2], acc[j, 3])


@jax.jit
def matmul_tf32_wgmma(x, y):
    return matmul_tf32_wgmma_t(x, y.T)


def main(size: int | None = None) -> None:
    on_gpu = jax.default_backend() == "gpu"
    if size is None:
        size = 4096 if on_gpu else 256
    rng = np.random.default_rng(0)
    x = rng.standard_normal((size, size), dtype=np.float32)
    y = rng.standard_normal((size, size), dtype=np.float32)
    xj, yj = jnp.asarray(x), jnp.asarray(y)
    z = np.asarray(matmul_tf32_wgmma(xj, yj))
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    error = float(np.max(np.abs(z - x64 @ y64) / (np.abs(x64) @ np.abs(y64))))
    assert error < 2.0 ** -10, f"error {error:.2e} of sum |x||y|, more than tf32 gives"
    msg = (f"matmul_tf32_wgmma of two {size} x {size} f32 matrices: matches float64 NumPy "
           f"within tf32's error ({error:.1e} of sum |x||y|)")
    if on_gpu:
        for name, fn in (("ptxpy", matmul_tf32_wgmma), ("XLA's jnp.dot (tf32)", jax.jit(jnp.dot))):
            msg += f"; {name} {tflops(fn, xj, yj):.1f} TFLOP/s"
    print(msg)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=None, help="matrix size N (N x N)")
    main(parser.parse_args().size)
