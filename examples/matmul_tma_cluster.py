"""bf16 matrix multiplication on Hopper, two blocks of a thread-block cluster sharing y's tiles.

examples/matmul_tma_wgmma.py's kernel (z = x @ y in f32, 128 x 256 block tiles, two
warpgroups, a ring of 4 shared stages filled by tensor copies), launched in clusters of two
blocks (`@ptxpy.jit(cluster=2)`) that compute vertically neighbouring tiles of z, so both need
the same 64 x 256 tile of y at every K step. Each block copies its own tile of x and one half
of y's tile, multicast (`ptxpy.tma_load(..., multicast=0b11)`) into both blocks' shared
memory: y crosses from L2 once per cluster, not once per block (docs/language.md, "Thread-block
clusters").

A block may refill a stage only when both blocks have finished the products that read it, so
each stage has an "empty" mbarrier in each block, counting one arrival per block: after its
per-step `syncthreads()`, thread 0 of each block arrives at the stage of the step before last in
both blocks (`ptxpy.mbarrier_arrive` on `ptxpy.map_shared_rank(empty, peer)[s]` for the other's),
and waits on its own before copying into that stage again. `ptxpy.fence_mbarrier_init()` and a
`cluster_sync()` publish the barriers before either block uses the other's, and a split cluster
barrier at the end keeps each block's barriers alive while the other may still arrive on them.

On H100s it ran at 465-469 / 511-520 TFLOP/s at 4096^3 / 8192^3, 0.67x-0.69x the one-block
kernel (676-685 / 758-760; BENCHMARKS.md, session 47): the calls work, the speed-up of sharing
y has not come (Nsight Compute shows more L2 traffic, not less; the cause is open).

`python examples/matmul_tma_cluster.py [--size N]` checks z against float64 NumPy (N a multiple
of 256) and, on a GPU, times it beside the one-block kernel and XLA's `jnp.dot`.
"""
import argparse

import jax
import jax.numpy as jnp

import ptxpy
from matmul_tma_wgmma import matmul_tma
from matmul_wgmma import check_and_time
from ptxpy import Array, bf16, f32, u64

BM, BN, BK = 128, 256, 64     # block tile rows and columns, K step
STAGES = 4                    # shared-memory stages in the ring
INFLIGHT = 1                  # a step's wgmma group still running while the next is issued
AHEAD = STAGES - 1 - INFLIGHT     # steps whose tiles are copied ahead
CLUSTER = 2                   # blocks sharing y's tile
GROUP = 8                     # cluster rows per group of the launch order (L2 reuse)
THREADS = 128 * (BM // 64)
NB = BN // 64                 # y's tile: blocks of 64 columns, one 128-byte row each
SWIZZLE = 128
ATOM = 8 * SWIZZLE
STAGE_BYTES = (BM * BK + BK * BN) * 2     # what lands in each block's stage per step
BOTH = (1 << CLUSTER) - 1     # the multicast mask of every block of the cluster


@ptxpy.jit(out_shape=lambda x, y: jax.ShapeDtypeStruct((x.shape[0], y.shape[1]), jnp.float32),
           grid=lambda x, y: (CLUSTER * (y.shape[1] // BN), x.shape[0] // (CLUSTER * BM)),
           block=THREADS, cluster=CLUSTER)
def matmul_tma_cluster(x: Array[bf16, 2], y: Array[bf16, 2], z: Array[f32, 2]):
    tiles = x.shape[1] // BK
    rank = ptxpy.cluster_rank()
    peer = rank ^ 1
    cm, bn = ptxpy.block_idx.y, ptxpy.block_idx.x // CLUSTER     # the cluster's tile pair
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
            ptxpy.mbarrier_init(empty[s], CLUSTER)
    ptxpy.fence_mbarrier_init()
    ptxpy.fence_proxy_async()
    ptxpy.cluster_sync()            # both blocks' barriers exist before either uses the other's
    theirs = ptxpy.map_shared_rank(empty, peer)
    if t == 0:
        for s in ptxpy.static_range(AHEAD):
            if s < tiles:
                ptxpy.mbarrier_arrive_expect_tx(full[s], STAGE_BYTES)
                ptxpy.tma_load(xs[s], x[m0:m0 + BM, s * BK:s * BK + BK], full[s], swizzle=SWIZZLE)
                for j in ptxpy.static_range(NB // CLUSTER):
                    c = n0 + 64 * (rank * (NB // CLUSTER) + j)
                    if rank == 0:
                        ptxpy.tma_load(ys[s, j], y[s * BK:s * BK + BK, c:c + 64], full[s],
                                       swizzle=SWIZZLE, multicast=BOTH)
                    else:
                        ptxpy.tma_load(ys[s, j + NB // CLUSTER], y[s * BK:s * BK + BK, c:c + 64],
                                       full[s], swizzle=SWIZZLE, multicast=BOTH)
    for kt in range(tiles):
        st = kt % STAGES
        ptxpy.mbarrier_wait(full[st], (kt // STAGES) % 2)
        ptxpy.syncthreads()         # every warpgroup is past step kt - 1's wgmma_wait(INFLIGHT)
        ahead = kt + AHEAD
        if t == 0:
            if kt >= INFLIGHT + 1:  # step kt - 2's stage is free here: say so in both blocks
                done = (kt - INFLIGHT - 1) % STAGES
                ptxpy.mbarrier_arrive(empty[done])
                ptxpy.mbarrier_arrive(theirs[done])
            if ahead < tiles:
                sa = ahead % STAGES
                if ahead >= STAGES:     # both blocks are done with the stage's last tile
                    ptxpy.mbarrier_wait(empty[sa], (ahead // STAGES - 1) % 2)
                k0 = ahead * BK
                ptxpy.mbarrier_arrive_expect_tx(full[sa], STAGE_BYTES)
                ptxpy.tma_load(xs[sa], x[m0:m0 + BM, k0:k0 + BK], full[sa], swizzle=SWIZZLE)
                for j in ptxpy.static_range(NB // CLUSTER):
                    c = n0 + 64 * (rank * (NB // CLUSTER) + j)
                    if rank == 0:
                        ptxpy.tma_load(ys[sa, j], y[k0:k0 + BK, c:c + 64], full[sa],
                                       swizzle=SWIZZLE, multicast=BOTH)
                    else:
                        ptxpy.tma_load(ys[sa, j + NB // CLUSTER], y[k0:k0 + BK, c:c + 64],
                                       full[sa], swizzle=SWIZZLE, multicast=BOTH)
        ptxpy.wgmma_fence()
        for k in ptxpy.static_range(0, BK, 16):
            a = ptxpy.wgmma_desc(xs[st, 64 * g, k], SWIZZLE, 16, ATOM)
            b = ptxpy.wgmma_desc(ys[st, 0, k, 0], SWIZZLE, BK * 128, ATOM)
            ptxpy.wgmma(acc, a, b, bf16, trans_b=True)
        ptxpy.wgmma_commit()
        ptxpy.wgmma_wait(INFLIGHT)
    ptxpy.wgmma_wait(0)
    ptxpy.cluster_arrive()          # this block arrives on the other's barriers no more

    lane = t % 32
    row = m0 + 64 * g + 16 * ((t % 128) // 32) + lane // 4
    for j in ptxpy.static_range(BN // 8):
        col = n0 + 8 * j + 2 * (lane % 4)
        z[row, col:col + 2] = (acc[j, 0], acc[j, 1])
        z[row + 8, col:col + 2] = (acc[j, 2], acc[j, 3])
    ptxpy.cluster_wait()            # nor does the other block on this one's: both may exit


def main(size: int | None = None) -> None:
    on_gpu = jax.default_backend() == "gpu"
    if on_gpu and int(jax.devices()[0].compute_capability.split(".")[0]) != 9:
        print("matmul_tma_cluster: needs Hopper (sm_90a: wgmma, clusters); skipped")
        return
    check_and_time("matmul_tma_cluster", matmul_tma_cluster, size,
                   [("ptxpy (one block, matmul_tma_wgmma.py)", jax.jit(matmul_tma))])


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=None, help="matrix size N (N x N)")
    main(parser.parse_args().size)
