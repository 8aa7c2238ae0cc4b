"""A warp-specialised TMA matmul in clusters of two blocks sharing y's tiles (multicast), timed
beside examples/matmul_tma_cluster.py (the same sharing without a copying warpgroup),
examples/matmul_tma_wgmma.py and XLA's `jnp.dot`.

Two warpgroups multiply; one thread of a third copies: per K step, once the stage is free in
both blocks, its own tile of x and one half of y's tile, the half multicast into both blocks
(`ptxpy.tma_load(..., multicast=0b11)`). When `wgmma_wait(1)` says a step's products are done,
the multiplying threads arrive at the stage's `empty` mbarrier in both blocks (the other's
through `ptxpy.map_shared_rank(empty, peer)`). So neither block's multiplications wait on the
other's copies, only on the stage's data. With ALL=True every multiplying thread arrives in
each block (what the PTX ISA promises: `wgmma.wait_group` waits for the products of the
executing warp, and the simulator holds kernels to it); with ALL=False only thread r of each
warpgroup arrives, at block r's barrier, after the warpgroup's wait, as CUTLASS's
`PipelineTmaAsync` signals (GPU only: the simulator reports the other warps' reads as possibly
unfinished).

    python benchmarks/probes/tma_cluster_probe.py [N ...]
"""
import os
import sys

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples"))

import ptxpy  # noqa: E402
from ptxpy import Array, Const, bf16, f32, u64  # noqa: E402

BM, BN, BK = 128, 256, 64
STAGES = 4
INFLIGHT = 1
CLUSTER = 2
GROUP = 8
CONSUMERS = 128 * (BM // 64)      # two warpgroups multiply
THREADS = CONSUMERS + 128         # and one thread of a third copies
NB = BN // 64
SWIZZLE = 128
ATOM = 8 * SWIZZLE
STAGE_BYTES = (BM * BK + BK * BN) * 2
BOTH = (1 << CLUSTER) - 1


def out_shape(x, y, ALL=True):
    return jax.ShapeDtypeStruct((x.shape[0], y.shape[1]), jnp.float32)


def grid(x, y, ALL=True):
    return (CLUSTER * (y.shape[1] // BN), x.shape[0] // (CLUSTER * BM))


@ptxpy.jit(out_shape=out_shape, grid=grid, block=THREADS, cluster=CLUSTER)
def matmul_ws_cluster(x: Array[bf16, 2], y: Array[bf16, 2], z: Array[f32, 2],
                      ALL: Const[bool] = True):
    tiles = x.shape[1] // BK
    rank = ptxpy.cluster_rank()
    cm, bn = ptxpy.block_idx.y, ptxpy.block_idx.x // CLUSTER
    if GROUP > 0:
        columns = ptxpy.grid_dim.x // CLUSTER
        pid = bn + cm * columns
        per_group = GROUP * columns
        first = pid // per_group * GROUP
        rows = min(ptxpy.grid_dim.y - first, GROUP)
        cm = first + pid % per_group % rows
        bn = pid % per_group // rows
    m0 = (cm * CLUSTER + rank) * BM
    n0 = bn * BN
    xs = ptxpy.shared_array((STAGES, BM, BK), bf16)
    ys = ptxpy.shared_array((STAGES, NB, BK, 64), bf16)
    full = ptxpy.shared_array((STAGES,), u64)      # a stage's tiles have landed here
    empty = ptxpy.shared_array((STAGES,), u64)     # both blocks are done reading a stage
    t = ptxpy.thread_idx.x
    if t == 0:
        for s in ptxpy.static_range(STAGES):
            ptxpy.mbarrier_init(full[s], 1)
            ptxpy.mbarrier_init(empty[s], CLUSTER * (CONSUMERS if ALL else CONSUMERS // 128))
    ptxpy.fence_mbarrier_init()
    ptxpy.fence_proxy_async()
    ptxpy.cluster_sync()
    if t >= CONSUMERS:
        if t == CONSUMERS:
            for kt in range(tiles):
                s = kt % STAGES
                if kt >= STAGES:        # step kt - STAGES has been read in both blocks
                    ptxpy.mbarrier_wait(empty[s], (kt // STAGES - 1) % 2)
                k0 = kt * BK
                ptxpy.mbarrier_arrive_expect_tx(full[s], STAGE_BYTES)
                ptxpy.tma_load(xs[s], x[m0:m0 + BM, k0:k0 + BK], full[s], swizzle=SWIZZLE)
                for j in ptxpy.static_range(NB // CLUSTER):
                    c = n0 + 64 * (rank * (NB // CLUSTER) + j)
                    if rank == 0:
                        ptxpy.tma_load(ys[s, j], y[k0:k0 + BK, c:c + 64], full[s],
                                       swizzle=SWIZZLE, multicast=BOTH)
                    else:
                        ptxpy.tma_load(ys[s, j + NB // CLUSTER], y[k0:k0 + BK, c:c + 64], full[s],
                                       swizzle=SWIZZLE, multicast=BOTH)
    else:
        acc = ptxpy.local_array((BN // 8, 4), f32)
        for j in ptxpy.static_range(BN // 8):
            for e in ptxpy.static_range(4):
                acc[j, e] = 0.0
        g = t // 128
        signal = t % 128                # with ALL=False thread r of the warpgroup tells block r
        there = ptxpy.map_shared_rank(empty, signal % CLUSTER if not ALL else rank ^ 1)
        for kt in range(tiles):
            st = kt % STAGES
            ptxpy.mbarrier_wait(full[st], (kt // STAGES) % 2)
            ptxpy.wgmma_fence()
            for k in ptxpy.static_range(0, BK, 16):
                a = ptxpy.wgmma_desc(xs[st, 64 * g, k], SWIZZLE, 16, ATOM)
                b = ptxpy.wgmma_desc(ys[st, 0, k, 0], SWIZZLE, BK * 128, ATOM)
                ptxpy.wgmma(acc, a, b, bf16, trans_b=True)
            ptxpy.wgmma_commit()
            ptxpy.wgmma_wait(INFLIGHT)
            if kt >= INFLIGHT:          # step kt - INFLIGHT's products are done
                done = (kt - INFLIGHT) % STAGES
                if ALL:
                    ptxpy.mbarrier_arrive(empty[done])
                    ptxpy.mbarrier_arrive(there[done])
                elif signal < CLUSTER:
                    ptxpy.mbarrier_arrive(there[done])
        ptxpy.wgmma_wait(0)
        lane = t % 32
        row = m0 + 64 * g + 16 * ((t % 128) // 32) + lane // 4
        for j in ptxpy.static_range(BN // 8):
            col = n0 + 8 * j + 2 * (lane % 4)
            z[row, col:col + 2] = (acc[j, 0], acc[j, 1])
            z[row + 8, col:col + 2] = (acc[j, 2], acc[j, 3])
    ptxpy.cluster_sync()                # no block exits while the other may arrive on it


@ptxpy.jit(out_shape=out_shape, grid=grid, block=CONSUMERS, cluster=CLUSTER)
def matmul_early(x: Array[bf16, 2], y: Array[bf16, 2], z: Array[f32, 2]):
    """examples/matmul_tma_cluster.py without its per-step syncthreads: every thread arrives at
    the stage's empty barrier in both blocks as soon as its wgmma_wait(1) says the stage's
    products are done, a step before thread 0 needs the stage again (one step of slack)."""
    tiles = x.shape[1] // BK
    rank = ptxpy.cluster_rank()
    cm, bn = ptxpy.block_idx.y, ptxpy.block_idx.x // CLUSTER
    if GROUP > 0:
        columns = ptxpy.grid_dim.x // CLUSTER
        pid = bn + cm * columns
        per_group = GROUP * columns
        first = pid // per_group * GROUP
        rows = min(ptxpy.grid_dim.y - first, GROUP)
        cm = first + pid % per_group % rows
        bn = pid % per_group // rows
    m0 = (cm * CLUSTER + rank) * BM
    n0 = bn * BN
    xs = ptxpy.shared_array((STAGES, BM, BK), bf16)
    ys = ptxpy.shared_array((STAGES, NB, BK, 64), bf16)
    full = ptxpy.shared_array((STAGES,), u64)
    empty = ptxpy.shared_array((STAGES,), u64)
    acc = ptxpy.local_array((BN // 8, 4), f32)
    for j in ptxpy.static_range(BN // 8):
        for e in ptxpy.static_range(4):
            acc[j, e] = 0.0
    t = ptxpy.thread_idx.x
    g = t // 128
    if t == 0:
        for s in ptxpy.static_range(STAGES):
            ptxpy.mbarrier_init(full[s], 1)
            ptxpy.mbarrier_init(empty[s], CLUSTER * CONSUMERS)
    ptxpy.fence_mbarrier_init()
    ptxpy.fence_proxy_async()
    ptxpy.cluster_sync()
    theirs = ptxpy.map_shared_rank(empty, rank ^ 1)
    for kt in range(tiles + STAGES - 2):
        if t == 0 and kt < tiles:       # copy tile kt, two steps ahead of its products
            s = kt % STAGES
            if kt >= STAGES:
                ptxpy.mbarrier_wait(empty[s], (kt // STAGES - 1) % 2)
            k0 = kt * BK
            ptxpy.mbarrier_arrive_expect_tx(full[s], STAGE_BYTES)
            ptxpy.tma_load(xs[s], x[m0:m0 + BM, k0:k0 + BK], full[s], swizzle=SWIZZLE)
            for j in ptxpy.static_range(NB // CLUSTER):
                c = n0 + 64 * (rank * (NB // CLUSTER) + j)
                if rank == 0:
                    ptxpy.tma_load(ys[s, j], y[k0:k0 + BK, c:c + 64], full[s],
                                   swizzle=SWIZZLE, multicast=BOTH)
                else:
                    ptxpy.tma_load(ys[s, j + NB // CLUSTER], y[k0:k0 + BK, c:c + 64], full[s],
                                   swizzle=SWIZZLE, multicast=BOTH)
        mt = kt - (STAGES - 2)
        if mt >= 0:
            st = mt % STAGES
            ptxpy.mbarrier_wait(full[st], (mt // STAGES) % 2)
            ptxpy.wgmma_fence()
            for k in ptxpy.static_range(0, BK, 16):
                a = ptxpy.wgmma_desc(xs[st, 64 * g, k], SWIZZLE, 16, ATOM)
                b = ptxpy.wgmma_desc(ys[st, 0, k, 0], SWIZZLE, BK * 128, ATOM)
                ptxpy.wgmma(acc, a, b, bf16, trans_b=True)
            ptxpy.wgmma_commit()
            ptxpy.wgmma_wait(INFLIGHT)
            if mt >= INFLIGHT:
                done = (mt - INFLIGHT) % STAGES
                ptxpy.mbarrier_arrive(empty[done])
                ptxpy.mbarrier_arrive(theirs[done])
    ptxpy.wgmma_wait(0)
    ptxpy.cluster_arrive()
    lane = t % 32
    row = m0 + 64 * g + 16 * ((t % 128) // 32) + lane // 4
    for j in ptxpy.static_range(BN // 8):
        col = n0 + 8 * j + 2 * (lane % 4)
        z[row, col:col + 2] = (acc[j, 0], acc[j, 1])
        z[row + 8, col:col + 2] = (acc[j, 2], acc[j, 3])
    ptxpy.cluster_wait()


def main(sizes: list[int]) -> None:
    from matmul_tma_cluster import matmul_tma_cluster
    from matmul_tma_wgmma import matmul_tma
    from matmul_wgmma import tflops

    on_gpu = jax.default_backend() == "gpu"
    rng = np.random.default_rng(0)
    xla = jax.jit(lambda a, b: jnp.dot(a, b, preferred_element_type=jnp.float32))
    for size in sizes:
        xj = jnp.asarray(rng.standard_normal((size, size), dtype=np.float32), jnp.bfloat16)
        yj = jnp.asarray(rng.standard_normal((size, size), dtype=np.float32), jnp.bfloat16)
        mine = {"cluster, warp-specialised": jax.jit(matmul_ws_cluster),
                "cluster, early release": jax.jit(matmul_early)}
        if on_gpu:
            mine["cluster, warp-specialised, one signal a warpgroup"] = \
                jax.jit(lambda a, b: matmul_ws_cluster(a, b, ALL=False))
        reference = np.asarray(xla(xj, yj))
        for name, fn in mine.items():
            diff = float(np.max(np.abs(np.asarray(fn(xj, yj)) - reference)))
            print(f"{size}: {name} max |z - XLA's z| {diff:.2e}", flush=True)
            assert diff < 1e-2 * max(1.0, float(np.max(np.abs(reference)))), diff
        if on_gpu:
            fns = {**mine, "cluster (example)": jax.jit(matmul_tma_cluster),
                   "one block (example)": jax.jit(matmul_tma), "XLA": xla}
            rates = {name: tflops(fn, xj, yj) for name, fn in fns.items()}
            print(f"{size}: " + ", ".join(f"{name} {rate:.1f} TFLOP/s" for name, rate in rates.items()),
                  flush=True)


if __name__ == "__main__":
    main([int(n) for n in sys.argv[1:]] or [256])
