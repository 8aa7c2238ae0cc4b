"""FP8 matrix multiplication on Hopper's warpgroup tensor cores, z = x @ y in f32.

x and y in `float8_e4m3fn` (PTX's `.e4m3`: 4 exponent bits, 3 fraction bits, no
infinities), products on the tensor cores with f32 results, as `jnp.dot(x, y,
preferred_element_type=jnp.float32)` computes them: `ptxpy.wgmma` with `dtype="e4m3"`
(`wgmma.mma_async...k32.f32.e4m3.e4m3`, sm_90a), twice the bf16 instruction's rate.
examples/matmul_int8_wgmma.py is the same kernel for int8; what differs:

- the kernel's arrays hold the fp8 bytes (`u8`): `matmul_fp8_wgmma(x, y)` is `jax.jit` of a
  bitcast of x and of y.T to uint8 (free) and XLA's transpose of y (the tensor cores read
  8-bit operands K-major only), then the kernel;
- the accumulators are f32, but the tensor cores add each k32 product to them with fewer
  fraction bits than f32 has (as DeepSeek-V3's technical report found on H800): the error
  grows with K, as cuBLAS's does without its own promotion to f32. The check allows it.

`python examples/matmul_fp8_wgmma.py [--size N]` checks z against float64 NumPy (N a multiple
of 256; 256 rows of it on a GPU, where it also compares XLA's) and, on a GPU, times it beside
XLA's fp8 `jnp.dot`.
"""
import argparse
import os
import sys

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np

import ptxpy
from ptxpy import Array, Const, f32, i32, u8

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from matmul_wgmma import tflops  # noqa: E402  (examples/matmul_wgmma.py)

BM = 128            # block tile rows: a warpgroup's 64 each
BN = 256            # block tile columns: the wgmma's N
BK = 128            # K step: 128 fp8, one 128-byte swizzled row; 4 wgmma of k = 32
STAGES = 4          # shared-memory buffers in the cp.async ring
INFLIGHT = 1        # a step's wgmma group still running while the next step's are issued
AHEAD = STAGES - 1 - INFLIGHT     # steps whose tiles are copied ahead
GROUP = 16          # block rows per group of the launch order (L2 reuse)
THREADS = 128 * (BM // 64)
SWIZZLE = 128                     # bytes
ATOM = 8 * SWIZZLE                # the swizzle's pattern: 8 rows of 128 bytes


@ptxpy.func
def copy_bytes(a: Array[u8, 2], s: Array[u8, 3], ROWS: Const[int], stage: i32, r0: i32,
               k0: i32, t: i32, valid: bool):
    """Start the copies of a's ROWS x BK tile of bytes at (r0, k0) into s[stage], 16 bytes
    each, a row's chunk c at chunk c ^ (row % 8) (where not `valid`, zeros and no reads)."""
    for r in ptxpy.static_range(0, ROWS, THREADS // 8):
        row = t // 8 + r
        c = t % 8
        at = (c ^ (row % 8)) * 16
        ptxpy.cp_async(s[stage, row, at:at + 16], a[r0 + row, k0 + c * 16:k0 + c * 16 + 16],
                       valid)


@ptxpy.jit(out_shape=lambda x, yt: jax.ShapeDtypeStruct((x.shape[0], yt.shape[0]), jnp.float32),
           grid=lambda x, yt: (yt.shape[0] // BN, x.shape[0] // BM), block=THREADS)
def matmul_fp8_wgmma_t(x: Array[u8, 2], yt: Array[u8, 2], z: Array[f32, 2]):
    """z = x @ yt.T of e4m3 bytes, f32 results."""
    tiles = x.shape[1] // BK
    pid = ptxpy.block_idx.x + ptxpy.block_idx.y * ptxpy.grid_dim.x    # GROUP block rows,
    per_group = GROUP * ptxpy.grid_dim.x                              # column by column
    first = pid // per_group * GROUP
    height = min(ptxpy.grid_dim.y - first, GROUP)
    m0 = (first + pid % per_group % height) * BM
    n0 = pid % per_group // height * BN
    xs = ptxpy.shared_array((STAGES, BM, BK), u8)        # x's tile, rows swizzled
    ys = ptxpy.shared_array((STAGES, BN, BK), u8)        # y.T's tile, rows swizzled
    acc = ptxpy.local_array((BN // 8, 4), f32)           # the wgmma's D fragment: registers

    t = ptxpy.thread_idx.x
    g = t // 128                    # this thread's warpgroup: rows 64g..64g + 63
    for s in ptxpy.static_range(AHEAD):     # the first steps' tiles, a group each
        copy_bytes(x, xs, BM, s, m0, s * BK, t, s < tiles)
        copy_bytes(yt, ys, BN, s, n0, s * BK, t, s < tiles)
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
            ptxpy.wgmma(acc, a, b, "e4m3", accumulate=kt + k > 0)
        ptxpy.wgmma_commit()
        ahead = kt + AHEAD                  # (its buffer was step kt - 1 - INFLIGHT's)
        copy_bytes(x, xs, BM, ahead % STAGES, m0, ahead * BK, t, ahead < tiles)
        copy_bytes(yt, ys, BN, ahead % STAGES, n0, ahead * BK, t, ahead < tiles)
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
def matmul_fp8_wgmma(x, y):
    as_bytes = lambda a: jax.lax.bitcast_convert_type(a, jnp.uint8)   # noqa: E731
    return matmul_fp8_wgmma_t(as_bytes(x), as_bytes(y.T))


@jax.jit
def xla_fp8(x, y):
    return jnp.dot(x, y, preferred_element_type=jnp.float32)


def error_of(z, x64, y64, rows) -> float:
    """The largest error of z's `rows` against float64, over sum |x||y| of each element."""
    exact = x64[rows] @ y64
    return float(np.max(np.abs(z[rows] - exact) / (np.abs(x64[rows]) @ np.abs(y64))))


def main(size: int | None = None) -> None:
    on_gpu = jax.default_backend() == "gpu"
    if size is None:
        size = 8192 if on_gpu else 256
    rng = np.random.default_rng(0)
    x = rng.standard_normal((size, size)).astype(ml_dtypes.float8_e4m3fn)
    y = rng.standard_normal((size, size)).astype(ml_dtypes.float8_e4m3fn)
    xj, yj = jnp.asarray(x), jnp.asarray(y)
    z = np.asarray(matmul_fp8_wgmma(xj, yj))
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    rows = slice(0, 256)
    error = error_of(z, x64, y64, rows)
    # f32 sums would give about 2^-24 * log2(K); the tensor cores' fp8 sums keep fewer bits
    assert error < 2.0 ** -8, f"error {error:.2e} of sum |x||y|, more than the fp8 sums give"
    msg = (f"matmul_fp8_wgmma of two {size} x {size} e4m3 matrices: matches float64 NumPy "
           f"(rows 0-{min(size, 256) - 1}) within the tensor cores' fp8 accumulation "
           f"({error:.1e} of sum |x||y|")
    if on_gpu:
        msg += f"; XLA's {error_of(np.asarray(xla_fp8(xj, yj)), x64, y64, rows):.1e}"
        msg += ")"
        for name, fn in (("ptxpy", matmul_fp8_wgmma), ("XLA's fp8 jnp.dot", xla_fp8)):
            msg += f"; {name} {tflops(fn, xj, yj):.1f} TFLOP/s"
    else:
        msg += ")"
    print(msg)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=None, help="matrix size N (N x N)")
    main(parser.parse_args().size)
