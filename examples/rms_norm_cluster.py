"""RMS normalisation of a few long rows, each row split over a thread-block cluster.

out[r, :] = x[r, :] / sqrt(mean(x[r, :] ** 2) + eps) * w

rms_norm.py gives each row one block, which holds a row of up to 32768 floats in registers.
With few, long rows (a batch of 16 rows of 131072 floats: 8 MB) that leaves most of the GPU's
132 SMs idle, and a row too long for one block's registers is read twice. Here each row is
shared by the CLUSTER blocks of one thread-block cluster (Hopper, sm_90; `@ptxpy.jit(cluster=
CLUSTER)`): block `rank` holds columns [rank * cols / CLUSTER, (rank + 1) * cols / CLUSTER) in
registers and sums their squares; the blocks then exchange their sums through distributed
shared memory (each block's sum in its own shared memory, read by the others through
`ptxpy.map_shared_rank` after `ptxpy.cluster_sync()`), and each scales its part. The row is
read from memory once, by CLUSTER SMs at a time.

The cluster barrier is split: a block arrives (`ptxpy.cluster_arrive()`) as soon as it has read
the others' sums, and waits (`ptxpy.cluster_wait()`) only before it exits, so that no block's
shared memory goes away while another may still read it, with the scaling and the stores in
between.

On an H100 (BENCHMARKS.md, session 47) it moved 1.9-2.2 TB/s with 8 to 64 rows of 65536 to
262144 floats: 1.06x-1.15x XLA, and 3x-18x rms_norm.py's one block a row. From about 128 rows
on, one block a row has SMs enough and is the faster (2.7-2.9 TB/s against 1.7-2.1): use this
kernel for a few long rows only.

`python examples/rms_norm_cluster.py [--rows R --cols C]` checks it against jax.numpy. On a GPU
before Hopper it says so and checks nothing (clusters need sm_90).
"""
import argparse

import jax
import jax.numpy as jnp
import numpy as np

import ptxpy
from ptxpy import Array, Const, f32

EPS = 1e-6
CLUSTER = 8         # blocks per row (the largest portable cluster)
THREADS = 512
MAX_CACHE = 16      # float4s per thread in registers: a block's part of up to 32768 floats


@ptxpy.func
def block_sum(v: f32) -> f32:
    """The sum of `v` over the block's THREADS threads, returned to every thread."""
    partial = ptxpy.shared_array(THREADS // 32, f32)
    t = ptxpy.thread_idx.x
    v = ptxpy.warp_sum(v)
    if t % 32 == 0:
        partial[t // 32] = v
    ptxpy.syncthreads()
    lane = t % 32
    v = partial[lane] if lane < THREADS // 32 else 0.0
    return ptxpy.warp_sum(v)


@ptxpy.jit(out_shape=lambda x, w, eps, CACHE=1: x,
           grid=lambda x, w, eps, CACHE=1: (CLUSTER, x.shape[0]), block=THREADS,
           cluster=CLUSTER)
def rms_norm_cluster(x: Array[f32, 2], w: Array[f32], eps: f32, out: Array[f32, 2],
                     CACHE: Const[int] = 1):
    row = ptxpy.block_idx.y
    cols = x.shape[1]
    part = cols // CLUSTER                     # the wrapper checks cols % (4 * CLUSTER) == 0
    start = ptxpy.cluster_rank() * part
    t = ptxpy.thread_idx.x
    vals = ptxpy.local_array(4 * CACHE, f32)   # this thread's float4s: registers
    for k in ptxpy.static_range(CACHE):
        j = (k * THREADS + t) * 4
        if j < part:
            a, b, c, d = x[row, start + j:start + j + 4]
        else:
            a, b, c, d = 0.0, 0.0, 0.0, 0.0
        vals[4 * k] = a
        vals[4 * k + 1] = b
        vals[4 * k + 2] = c
        vals[4 * k + 3] = d
    ss = 0.0
    for k in ptxpy.static_range(4 * CACHE):
        ss = ptxpy.fma(vals[k], vals[k], ss)
    mine = ptxpy.shared_array(1, f32)          # this block's sum, for the other blocks
    ss = block_sum(ss)
    if t == 0:
        mine[0] = ss
    ptxpy.cluster_sync()                       # every block's sum is written
    lane = t % 32
    v = 0.0
    if lane < CLUSTER:                         # lane r of each warp reads block r's sum
        theirs = ptxpy.map_shared_rank(mine, lane)
        v = theirs[0]
    ptxpy.cluster_arrive()                     # done with the others' shared memory
    scale = ptxpy.rsqrt(ptxpy.warp_sum(v) / f32(cols) + eps)
    for k in ptxpy.static_range(CACHE):
        j = (k * THREADS + t) * 4
        if j < part:
            w0, w1, w2, w3 = w[start + j:start + j + 4]
            out[row, start + j:start + j + 4] = (vals[4 * k] * scale * w0,
                                                 vals[4 * k + 1] * scale * w1,
                                                 vals[4 * k + 2] * scale * w2,
                                                 vals[4 * k + 3] * scale * w3)
    ptxpy.cluster_wait()                       # no block exits while another reads its sum


def rms_norm(x, w, eps=EPS):
    """RMS norm of each row of x, whose length must be a multiple of 4 * CLUSTER and at most
    CLUSTER * THREADS * 4 * MAX_CACHE (262144 floats)."""
    cols = x.shape[1]
    if cols % (4 * CLUSTER) or cols > CLUSTER * THREADS * 4 * MAX_CACHE:
        raise ValueError(f"rms_norm_cluster: rows of {cols} floats; they must be a multiple of "
                         f"{4 * CLUSTER} and at most {CLUSTER * THREADS * 4 * MAX_CACHE}")
    cache = ptxpy.cdiv(cols // CLUSTER, THREADS * 4)
    return rms_norm_cluster(x, w, eps, CACHE=cache)


def reference(x, w, eps=EPS):
    return x * jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + eps) * w


def clusters_run_here() -> bool:
    """Whether this machine runs clusters: the simulator does; a GPU needs sm_90 or newer."""
    if jax.default_backend() != "gpu":
        return True
    major = int(jax.devices()[0].compute_capability.split(".")[0])
    return major >= 9


def main(rows: int | None = None, cols: int | None = None) -> None:
    on_gpu = jax.default_backend() == "gpu"
    if not clusters_run_here():
        print("rms_norm_cluster: thread-block clusters need sm_90 or newer; skipped")
        return
    rows = rows or (16 if on_gpu else 2)
    cols = cols or (131072 if on_gpu else 4096)
    keys = jax.random.split(jax.random.key(0), 2)
    for c in (cols, cols - 4 * CLUSTER):       # a part that is not whole float4s per thread
        x = jax.random.normal(keys[0], (rows, c), jnp.float32)
        w = 1.0 + 0.1 * jax.random.normal(keys[1], (c,), jnp.float32)
        out = jax.jit(rms_norm)(x, w, EPS)
        np.testing.assert_allclose(np.asarray(out), np.asarray(reference(x, w)), rtol=2e-5,
                                   atol=2e-5)
    print(f"rms_norm_cluster: {rows} x {cols} and {rows} x {cols - 4 * CLUSTER}, each row over "
          f"a cluster of {CLUSTER} blocks: match jax.numpy")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=None)
    parser.add_argument("--cols", type=int, default=None)
    args = parser.parse_args()
    main(args.rows, args.cols)
