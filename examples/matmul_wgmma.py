"""bf16 matrix multiplication on Hopper's warpgroup tensor cores, z = x @ y in f32.

What `jnp.dot(x, y, preferred_element_type=jnp.float32)` computes for bf16 x and y, with PTX's
`wgmma.mma_async` (an H100 or another sm_90 card: the kernel's PTX targets `sm_90a`), the
instruction CUTLASS's and cuBLAS's Hopper kernels are built on. docs/language.md "Warpgroup
matrix multiply" says what each call does:

- each block of 256 threads (two warpgroups of 4 warps) computes a 128 x 256 tile of z and
  loops over K in steps of 64; each step's 128 x 64 tile of x and 64 x 256 tile of y is
  copied by 16-byte `cp.async` into a ring of 4 shared buffers, 2 steps ahead;
- the tiles are stored as the tensor cores read them with the 128-byte swizzle: a row of
  x's tile is 64 bf16 = 128 bytes, and its 16-byte chunk c lies at chunk c ^ (row % 8); y's
  tile is stored k-major in blocks of 64 columns, each k row's chunk c at c ^ (k % 8). Then
  the shared-memory banks a wgmma reads are all different, and so are those the copies
  write;
- warpgroup g owns rows 64g..64g + 63 of the block's tile: per step it issues 4 `wgmma`
  (k = 16 each) of its 64 x 256 product, A and B read from shared memory through their
  descriptors (`ptxpy.wgmma_desc`), accumulating in 128 f32 registers per thread; it waits
  for the step before (`wgmma_wait(1)`), so one step's products run while the next are
  issued;
- blocks are launched 16 block rows at a time, column by column (GROUP), so that the tiles
  of x and y a wave of blocks reads are still in L2 for the next.

On the H100 it runs at 0.95x XLA's (cuBLAS's) speed at 4096^3 and 8192^3 (BENCHMARKS.md).

`python examples/matmul_wgmma.py [--size N]` checks z against float64 NumPy (N a multiple
of 256) and, on a GPU, times it beside XLA's `jnp.dot` with f32 results.
"""
import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

import ptxpy
from ptxpy import Array, bf16, f32, i32

BM = 128            # block tile rows: a warpgroup's 64 each
BN = 256            # block tile columns: the wgmma's N
BK = 64             # K step: 64 bf16, one 128-byte swizzled row; 4 wgmma of k = 16
STAGES = 4          # shared-memory buffers in the cp.async ring
INFLIGHT = 1        # a step's wgmma group still running while the next step's are issued
AHEAD = STAGES - 1 - INFLIGHT     # steps whose tiles are copied ahead
GROUP = 16          # block rows per group of the launch order (L2 reuse); 0: the grid's order
WARPGROUPS = BM // 64
THREADS = 128 * WARPGROUPS
NB = BN // 64                     # y's tile: blocks of 64 columns (one 128-byte row each)
X_ROWS = THREADS // 8             # rows of x's tile one copy by every thread covers
Y_ROWS = THREADS // (BN // 8)     # rows of y's tile one copy by every thread covers
SWIZZLE = 128                     # bytes
ATOM = 8 * SWIZZLE                # the swizzle's pattern: 8 rows of 128 bytes


@ptxpy.func
def load_stage(x: Array[bf16, 2], y: Array[bf16, 2], xs: Array[bf16, 3], ys: Array[bf16, 4],
               stage: i32, k0: i32, m0: i32, n0: i32, t: i32, valid: bool):
    """Start the copies of x's BM x BK tile at (m0, k0) and y's BK x BN tile at (k0, n0) into
    ring buffer `stage`, swizzled, 16 bytes per cp.async (where not `valid`, zeros, no reads)."""
    for r in ptxpy.static_range(BM // X_ROWS):
        row = t // 8 + X_ROWS * r
        c = t % 8
        col = (c ^ (row % 8)) * 8
        ptxpy.cp_async(xs[stage, row, col:col + 8], x[m0 + row, k0 + c * 8:k0 + c * 8 + 8], valid)
    for r in ptxpy.static_range(BK // Y_ROWS):
        k = t // (BN // 8) + Y_ROWS * r
        chunk = t % (BN // 8)
        col = ((chunk % 8) ^ (k % 8)) * 8
        ptxpy.cp_async(ys[stage, chunk // 8, k, col:col + 8],
                       y[k0 + k, n0 + chunk * 8:n0 + chunk * 8 + 8], valid)


@ptxpy.jit(out_shape=lambda x, y: jax.ShapeDtypeStruct((x.shape[0], y.shape[1]), jnp.float32),
           grid=lambda x, y: (y.shape[1] // BN, x.shape[0] // BM), block=THREADS)
def matmul_wgmma(x: Array[bf16, 2], y: Array[bf16, 2], z: Array[f32, 2]):
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
    xs = ptxpy.shared_array((STAGES, BM, BK), bf16)        # x's tile, rows swizzled
    ys = ptxpy.shared_array((STAGES, NB, BK, 64), bf16)    # y's tile, k-major, swizzled
    acc = ptxpy.local_array((BN // 8, 4), f32)             # the wgmma's D fragment: registers
    for j in ptxpy.static_range(BN // 8):
        for e in ptxpy.static_range(4):
            acc[j, e] = 0.0

    t = ptxpy.thread_idx.x
    g = t // 128                    # this thread's warpgroup: rows 64g..64g + 63
    for s in ptxpy.static_range(AHEAD):     # the first steps' tiles, a group each
        load_stage(x, y, xs, ys, s, s * BK, m0, n0, t, s < tiles)
        ptxpy.cp_async_commit()
    for kt in range(tiles):
        ptxpy.cp_async_wait(AHEAD - 1)      # this thread's copies of step kt have landed,
        ptxpy.fence_proxy_async()           # are visible to the tensor cores' reads,
        ptxpy.syncthreads()                 # and so are everyone's; the buffer of step
        ahead = kt + AHEAD                  # kt - 1 - INFLIGHT is read by no wgmma any more
        load_stage(x, y, xs, ys, ahead % STAGES, ahead * BK, m0, n0, t, ahead < tiles)
        ptxpy.cp_async_commit()
        st = kt % STAGES
        ptxpy.wgmma_fence()
        for k in ptxpy.static_range(0, BK, 16):
            # A: 64 rows of 128 bytes, 8-row atoms ATOM bytes apart; B: k-major, 8 k rows of
            # 128 bytes per atom, the blocks of 64 columns BK * 128 bytes apart
            a = ptxpy.wgmma_desc(xs[st, 64 * g, k], SWIZZLE, 16, ATOM)
            b = ptxpy.wgmma_desc(ys[st, 0, k, 0], SWIZZLE, BK * 128, ATOM)
            ptxpy.wgmma(acc, a, b, bf16, trans_b=True)
        ptxpy.wgmma_commit()
        ptxpy.wgmma_wait(INFLIGHT)      # (step kt + 1 + INFLIGHT overwrites this step's buffers)
    ptxpy.wgmma_wait(0)

    lane = t % 32
    row = m0 + 64 * g + 16 * ((t % 128) // 32) + lane // 4
    for j in ptxpy.static_range(BN // 8):
        col = n0 + 8 * j + 2 * (lane % 4)
        z[row, col:col + 2] = (acc[j, 0], acc[j, 1])
        z[row + 8, col:col + 2] = (acc[j, 2], acc[j, 3])


def check_and_time(name: str, kernel, size: int | None, others=()) -> None:
    """An example's run: `kernel` (a bf16 matmul with f32 results) on two random size x size
    matrices, checked against float64 NumPy and, on a GPU, timed beside `others` ((label,
    jitted function) pairs) and XLA's `jnp.dot`. Without a size: 4096 on a GPU, else 256."""
    on_gpu = jax.default_backend() == "gpu"
    if size is None:
        size = 4096 if on_gpu else 256
    rng = np.random.default_rng(0)
    xj = jnp.asarray(rng.standard_normal((size, size), dtype=np.float32), jnp.bfloat16)
    yj = jnp.asarray(rng.standard_normal((size, size), dtype=np.float32), jnp.bfloat16)
    f = jax.jit(kernel)
    z = np.asarray(f(xj, yj))
    x, y = np.asarray(xj).astype(np.float64), np.asarray(yj).astype(np.float64)
    error = float(np.max(np.abs(z - x @ y) / (np.abs(x) @ np.abs(y))))
    # (the tensor cores' order and internal precision of the f32 sums are unspecified: a
    # bound well above f32 rounding, far below what a misplaced element gives)
    assert error < 2.0 ** -14, f"error {error:.2e} of sum |x||y|, more than f32 sums give"
    msg = (f"{name} of two {size} x {size} bf16 matrices: matches float64 NumPy within "
           f"f32 accumulation ({error:.1e} of sum |x||y|)")
    if on_gpu:
        xla = jax.jit(lambda a, b: jnp.dot(a, b, preferred_element_type=jnp.float32))
        for label, fn in ((f"ptxpy ({name})", f), *others, ("XLA's jnp.dot (f32 results)", xla)):
            msg += f"; {label} {tflops(fn, xj, yj):.1f} TFLOP/s"
    print(msg)


def main(size: int | None = None) -> None:
    check_and_time("matmul_wgmma", matmul_wgmma, size)


def tflops(fn, x, y) -> float:
    """fn(x, y)'s rate for square x and y: the best of three rounds of 10 calls."""
    fn(x, y).block_until_ready()
    seconds = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(10):
            out = fn(x, y)
        out.block_until_ready()
        seconds = min(seconds, (time.perf_counter() - start) / 10)
    return 2 * x.shape[0] ** 3 / seconds / 1e12


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=None, help="matrix size N (N x N)")
    main(parser.parse_args().size)
