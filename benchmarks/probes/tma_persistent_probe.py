"""A persistent, warp-specialised TMA matmul: each block loops over output tiles, so that its
copying warpgroup fills the next tile's stages while the multiplying ones store this tile.

examples/matmul_tma_wgmma.py's tiles (128 x 256, K steps of 64, 4 stages, 128-byte swizzle),
run by at most SMS blocks of three warpgroups under `launch_bounds=(384, 1)`:
- warpgroup 2 (`setmaxnreg_dec(40)`): one thread walks the block's tiles and their K steps
  with one running step count `c` across tiles, waiting on stage `c % STAGES`'s `empty`
  barrier before refilling it;
- warpgroups 0 and 1 (`setmaxnreg_inc(232)`): 64 rows of the tile each; a step's products
  start a new sum on the tile's first step (`accumulate=`), and once `wgmma_wait` says a step
  is read its stage is handed back (`mbarrier_arrive` on `empty`: 256 arrivals), the tile's
  last step after `wgmma_wait(0)`; then they store the tile while the copies run ahead.
Tiles go in GROUP-row bands (L2 reuse), as in the examples.

    python benchmarks/probes/tma_persistent_probe.py [N ...]
"""
import os
import sys

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples"))

import ptxpy  # noqa: E402
from ptxpy import Array, Const, bf16, f32, i32, u64  # noqa: E402

BM, BN, BK = 128, 256, 64
STAGES = 4
GROUP = 16
CONSUMERS = 256
THREADS = CONSUMERS + 128
NB = BN // 64
SWIZZLE = 128
ATOM = 8 * SWIZZLE
STAGE_BYTES = (BM * BK + BK * BN) * 2


def grid(x, y, SMS=132):
    return (min(SMS, (x.shape[0] // BM) * (y.shape[1] // BN)),)


@ptxpy.func
def tile_origin(tile: i32, rows_of_tiles: i32, cols_of_tiles: i32) -> tuple[i32, i32]:
    """The first row and column of output tile `tile`, tiles taken in GROUP-row bands."""
    per_group = GROUP * cols_of_tiles
    first = tile // per_group * GROUP
    band = min(rows_of_tiles - first, GROUP)
    return (first + tile % per_group % band) * BM, tile % per_group // band * BN


@ptxpy.jit(out_shape=lambda x, y, SMS=132: jax.ShapeDtypeStruct((x.shape[0], y.shape[1]), jnp.float32),
           grid=grid, block=THREADS, launch_bounds=(THREADS, 1))
def matmul_persistent(x: Array[bf16, 2], y: Array[bf16, 2], z: Array[f32, 2], SMS: Const[int] = 132):
    steps = x.shape[1] // BK
    rows_of_tiles = x.shape[0] // BM
    cols_of_tiles = y.shape[1] // BN
    tiles = rows_of_tiles * cols_of_tiles
    xs = ptxpy.shared_array((STAGES, BM, BK), bf16)
    ys = ptxpy.shared_array((STAGES, NB, BK, 64), bf16)
    full = ptxpy.shared_array((STAGES,), u64)
    empty = ptxpy.shared_array((STAGES,), u64)
    t = ptxpy.thread_idx.x
    if t == 0:
        for s in ptxpy.static_range(STAGES):
            ptxpy.mbarrier_init(full[s], 1)
            ptxpy.mbarrier_init(empty[s], CONSUMERS)
    ptxpy.fence_proxy_async()
    ptxpy.syncthreads()
    if t >= CONSUMERS:
        ptxpy.setmaxnreg_dec(40)
        if t == CONSUMERS:
            c = 0
            for tile in range(ptxpy.block_idx.x, tiles, ptxpy.grid_dim.x):
                m0, n0 = tile_origin(tile, rows_of_tiles, cols_of_tiles)
                for kt in range(steps):
                    s = c % STAGES
                    if c >= STAGES:
                        ptxpy.mbarrier_wait(empty[s], (c // STAGES - 1) % 2)
                    k0 = kt * BK
                    ptxpy.mbarrier_arrive_expect_tx(full[s], STAGE_BYTES)
                    ptxpy.tma_load(xs[s], x[m0:m0 + BM, k0:k0 + BK], full[s], swizzle=SWIZZLE)
                    for j in ptxpy.static_range(NB):
                        ptxpy.tma_load(ys[s, j], y[k0:k0 + BK, n0 + 64 * j:n0 + 64 * j + 64],
                                       full[s], swizzle=SWIZZLE)
                    c += 1
    else:
        ptxpy.setmaxnreg_inc(232)
        acc = ptxpy.local_array((BN // 8, 4), f32)
        g = t // 128
        lane = t % 32
        c = 0
        for tile in range(ptxpy.block_idx.x, tiles, ptxpy.grid_dim.x):
            m0, n0 = tile_origin(tile, rows_of_tiles, cols_of_tiles)
            for kt in range(steps):
                st = c % STAGES
                ptxpy.mbarrier_wait(full[st], (c // STAGES) % 2)
                ptxpy.wgmma_fence()
                for k in ptxpy.static_range(0, BK, 16):
                    a = ptxpy.wgmma_desc(xs[st, 64 * g, k], SWIZZLE, 16, ATOM)
                    b = ptxpy.wgmma_desc(ys[st, 0, k, 0], SWIZZLE, BK * 128, ATOM)
                    ptxpy.wgmma(acc, a, b, bf16, trans_b=True, accumulate=kt + k > 0)
                ptxpy.wgmma_commit()
                ptxpy.wgmma_wait(1)
                if kt > 0:              # step c - 1's products are done
                    ptxpy.mbarrier_arrive(empty[(c - 1) % STAGES])
                c += 1
            ptxpy.wgmma_wait(0)
            ptxpy.mbarrier_arrive(empty[(c - 1) % STAGES])
            row = m0 + 64 * g + 16 * ((t % 128) // 32) + lane // 4
            for j in ptxpy.static_range(BN // 8):
                col = n0 + 8 * j + 2 * (lane % 4)
                z[row, col:col + 2] = (acc[j, 0], acc[j, 1])
                z[row + 8, col:col + 2] = (acc[j, 2], acc[j, 3])


def main(sizes: list[int]) -> None:
    from matmul_tma_wgmma import matmul_tma
    from matmul_wgmma import tflops

    on_gpu = jax.default_backend() == "gpu"
    rng = np.random.default_rng(0)
    xla = jax.jit(lambda a, b: jnp.dot(a, b, preferred_element_type=jnp.float32))
    for size in sizes:
        xj = jnp.asarray(rng.standard_normal((size, size), dtype=np.float32), jnp.bfloat16)
        yj = jnp.asarray(rng.standard_normal((size, size), dtype=np.float32), jnp.bfloat16)
        sms = 132 if on_gpu else 3       # the simulator: a few blocks, several tiles each
        persistent = jax.jit(lambda a, b: matmul_persistent(a, b, SMS=sms))
        if size <= 2048:
            x, y = np.asarray(xj).astype(np.float64), np.asarray(yj).astype(np.float64)
            error = float(np.max(np.abs(np.asarray(persistent(xj, yj)) - x @ y)
                                 / (np.abs(x) @ np.abs(y))))
            print(f"{size}: persistent error {error:.1e} of sum |x||y|", flush=True)
            assert error < 2.0 ** -14
        else:
            diff = float(np.max(np.abs(np.asarray(persistent(xj, yj)) - np.asarray(xla(xj, yj)))))
            print(f"{size}: persistent max |z - XLA's z| {diff:.2e}", flush=True)
        if on_gpu:
            fns = {"persistent": persistent, "tma": jax.jit(matmul_tma), "XLA": xla}
            rates = {name: tflops(fn, xj, yj) for name, fn in fns.items()}
            print(f"{size}: " + ", ".join(f"{name} {rate:.1f} TFLOP/s" for name, rate in rates.items()),
                  flush=True)


if __name__ == "__main__":
    main([int(n) for n in sys.argv[1:]] or [256])
