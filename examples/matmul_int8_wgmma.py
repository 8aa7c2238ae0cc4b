"""8-bit integer matrix multiplication on Hopper's warpgroup tensor cores, z = x @ y (i32 sums).

A quantized layer's matmul: i8 x and y, exact i32 sums, as `jnp.matmul(x, y,
preferred_element_type=jnp.int32)` gives them. `ptxpy.wgmma` with `dtype=i8`
(`wgmma.mma_async...k32.s32.s8.s8`, sm_90a) and i32 accumulators; examples/matmul_wgmma.py
(bf16) is the same kernel explained. What differs:

- the tensor cores read 8-bit operands K-major only (no `trans_b`), so the kernel takes y
  transposed, as examples/matmul_tf32_wgmma.py does: `matmul_int8_wgmma(x, y)` is `jax.jit`
  of `x, y -> kernel(x, y.T)`, XLA's transpose of y before the kernel;
- a 128-byte row holds 128 int8: each K step is 128 wide, 4 wgmma of k = 32, and both tiles
  are stored row by row (x's by m, y.T's by n) with 16-byte chunk c at c ^ (row % 8);
- the sums are exact: they wrap modulo 2^32 only past the i32 range, which K up to 2^17 of
  values in [-127, 127] never reaches.

`python examples/matmul_int8_wgmma.py [--size N]` checks z's first 256 rows against NumPy's
product (N a multiple of 256) and, on a GPU, all of z against XLA's, and times both.
"""
import argparse
import os
import sys

import jax
import jax.numpy as jnp
import numpy as np

import ptxpy
from ptxpy import Array, Const, i8, i32

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from matmul_wgmma import tflops  # noqa: E402  (examples/matmul_wgmma.py)

BM = 128            # block tile rows: a warpgroup's 64 each
BN = 256            # block tile columns: the wgmma's N
BK = 128            # K step: 128 int8, one 128-byte swizzled row; 4 wgmma of k = 32
STAGES = 4          # shared-memory buffers in the cp.async ring
INFLIGHT = 1        # a step's wgmma group still running while the next step's are issued
AHEAD = STAGES - 1 - INFLIGHT     # steps whose tiles are copied ahead
GROUP = 16          # block rows per group of the launch order (L2 reuse); 0: the grid's order
THREADS = 128 * (BM // 64)
SWIZZLE = 128                     # bytes
ATOM = 8 * SWIZZLE                # the swizzle's pattern: 8 rows of 128 bytes


@ptxpy.func
def copy_tile(a: Array[i8, 2], s: Array[i8, 3], ROWS: Const[int], stage: i32, r0: i32, k0: i32,
              t: i32, valid: bool):
    """Start the copies of a's ROWS x BK tile at (r0, k0) into s[stage], 16 bytes each, a row's
    chunk c at chunk c ^ (row % 8) (where not `valid`, zeros and no reads)."""
    for r in ptxpy.static_range(0, ROWS, THREADS // 8):
        row = t // 8 + r
        c = t % 8
        at = (c ^ (row % 8)) * 16
        ptxpy.cp_async(s[stage, row, at:at + 16], a[r0 + row, k0 + c * 16:k0 + c * 16 + 16],
                       valid)


@ptxpy.jit(out_shape=lambda x, yt: jax.ShapeDtypeStruct((x.shape[0], yt.shape[0]), jnp.int32),
           grid=lambda x, yt: (yt.shape[0] // BN, x.shape[0] // BM), block=THREADS)
def matmul_int8_wgmma_t(x: Array[i8, 2], yt: Array[i8, 2], z: Array[i32, 2]):
    """z = x @ yt.T, exact i32 sums."""
    tiles = x.shape[1] // BK
    bm, bn = ptxpy.block_idx.y, ptxpy.block_idx.x
    if GROUP > 0:      # blocks in launch order cover GROUP block rows, column by column
        pid = bn + bm * ptxpy.grid_dim.x
        per_group = GROUP * ptxpy.grid_dim.x
        first = pid // per_group * GROUP
        height = min(ptxpy.grid_dim.y - first, GROUP)
        bm = first + pid % per_group % height
        bn = pid % per_group // height
    m0 = bm * BM
    n0 = bn * BN
    xs = ptxpy.shared_array((STAGES, BM, BK), i8)        # x's tile, rows swizzled
    ys = ptxpy.shared_array((STAGES, BN, BK), i8)        # y.T's tile, rows swizzled
    acc = ptxpy.local_array((BN // 8, 4), i32)           # the wgmma's D fragment: registers

    t = ptxpy.thread_idx.x
    g = t // 128                    # this thread's warpgroup: rows 64g..64g + 63
    for s in ptxpy.static_range(AHEAD):     # the first steps' tiles, a group each
        copy_tile(x, xs, BM, s, m0, s * BK, t, s < tiles)
        copy_tile(yt, ys, BN, s, n0, s * BK, t, s < tiles)
        ptxpy.cp_async_commit()
    for kt in range(tiles):
        ptxpy.cp_async_wait(AHEAD - 1)      # step kt's tiles have landed (this thread's),
        ptxpy.fence_proxy_async()           # are visible to the tensor cores' reads,
        ptxpy.syncthreads()                 # and everyone's have
        st = kt % STAGES
        ptxpy.wgmma_fence()
        for k in ptxpy.static_range(0, BK, 32):
            a = ptxpy.wgmma_desc(xs[st, 64 * g, k], SWIZZLE, 16, ATOM)
            b = ptxpy.wgmma_desc(ys[st, 0, k], SWIZZLE, 16, ATOM)
            ptxpy.wgmma(acc, a, b, i8, accumulate=kt + k > 0)
        ptxpy.wgmma_commit()
        ahead = kt + AHEAD                  # (its buffer was step kt - 1 - INFLIGHT's)
        copy_tile(x, xs, BM, ahead % STAGES, m0, ahead * BK, t, ahead < tiles)
        copy_tile(yt, ys, BN, ahead % STAGES, n0, ahead * BK, t, ahead < tiles)
        ptxpy.cp_async_commit()
        ptxpy.wgmma_wait(INFLIGHT)
    ptxpy.wgmma_wait(0)

    lane = t % 32
    r = m0 + 64 * g + 16 * ((t % 128) // 32) + lane // 4
    for j in ptxpy.static_range(BN // 8):
        col = n0 + 8 * j + 2 * (lane % 4)
        z[r, col:col + 2] = (acc[j, 0], acc[j, 1])
        z[r + 8, col:col + 2] = (acc[j, 2], acc[j, 3])


@jax.jit
def matmul_int8_wgmma(x, y):
    return matmul_int8_wgmma_t(x, y.T)


@jax.jit
def xla_int8(x, y):
    return jnp.matmul(x, y, preferred_element_type=jnp.int32)


def main(size: int | None = None, kernel=matmul_int8_wgmma, name: str = "matmul_int8_wgmma",
         gpu_size: int = 8192) -> None:
    """Check `kernel` (x, y -> x @ y in i32) against NumPy and XLA, and time it beside XLA's
    (examples/matmul_int8.py checks its kernel here too)."""
    on_gpu = jax.default_backend() == "gpu"
    if size is None:
        size = gpu_size if on_gpu else 256
    rng = np.random.default_rng(0)
    x = rng.integers(-127, 128, (size, size), dtype=np.int8)
    y = rng.integers(-127, 128, (size, size), dtype=np.int8)
    xj, yj = jnp.asarray(x), jnp.asarray(y)
    z = np.asarray(kernel(xj, yj))
    rows = slice(0, 256)      # NumPy's product of 256 rows (exact in f64: |sums| < 2^53)
    expected = x[rows].astype(np.float64) @ y.astype(np.float64)
    assert z.dtype == np.int32 and np.array_equal(z[rows], expected), "z differs from NumPy's"
    msg = (f"{name} of two {size} x {size} int8 matrices: matches NumPy's product "
           f"(rows 0-{min(size, 256) - 1})")
    if on_gpu:
        assert np.array_equal(z, np.asarray(xla_int8(xj, yj))), "z differs from XLA's"
        msg += " and XLA's (all of z)"
        for who, fn in (("ptxpy", kernel), ("XLA's int8 jnp.matmul", xla_int8)):
            msg += f"; {who} {tflops(fn, xj, yj):.1f} TOP/s"
    print(msg)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=None, help="matrix size N (N x N)")
    main(parser.parse_args().size)
