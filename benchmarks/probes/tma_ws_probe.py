"""A warp-specialised examples/matmul_tma_wgmma.py, timed beside it and XLA's `jnp.dot`.

Two warpgroups multiply; one thread of a third issues each K step's tensor copies as soon as
the stage is free: both multiplying warpgroups arrive (all 256 threads) on the stage's
`empty` mbarrier once `wgmma_wait(1)` says its products are done, so the loop has no
`syncthreads`. (A third warpgroup, not a warp: a kernel that calls `wgmma` has whole
warpgroups.) On an H100 it gained nothing (BENCHMARKS.md, session 45).

With REGS=True (`matmul_ws_regs`: the same kernel under `launch_bounds=(384, 1)`, 168
registers a thread at the start) the copying warpgroup gives registers back
(`ptxpy.setmaxnreg_dec(40)`) and the multiplying ones take them (`setmaxnreg_inc(232)`).

    python benchmarks/probes/tma_ws_probe.py [N ...]
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
GROUP = 16
CONSUMERS = 128 * (BM // 64)      # two warpgroups multiply
THREADS = CONSUMERS + 128         # and one thread of a third copies (wgmma needs whole warpgroups)
NB = BN // 64
SWIZZLE = 128
ATOM = 8 * SWIZZLE
STAGE_BYTES = (BM * BK + BK * BN) * 2


@ptxpy.jit(out_shape=lambda x, y: jax.ShapeDtypeStruct((x.shape[0], y.shape[1]), jnp.float32),
           grid=lambda x, y: (y.shape[1] // BN, x.shape[0] // BM), block=THREADS)
def matmul_ws(x: Array[bf16, 2], y: Array[bf16, 2], z: Array[f32, 2], REGS: Const[bool] = False):
    tiles = x.shape[1] // BK
    bm, bn = ptxpy.block_idx.y, ptxpy.block_idx.x
    if GROUP > 0:
        pid = bn + bm * ptxpy.grid_dim.x
        per_group = GROUP * ptxpy.grid_dim.x
        first = pid // per_group * GROUP
        rows = min(ptxpy.grid_dim.y - first, GROUP)
        bm = first + pid % per_group % rows
        bn = pid % per_group // rows
    m0 = bm * BM
    n0 = bn * BN
    xs = ptxpy.shared_array((STAGES, BM, BK), bf16)
    ys = ptxpy.shared_array((STAGES, NB, BK, 64), bf16)
    full = ptxpy.shared_array((STAGES,), u64)      # a stage's tiles have landed
    empty = ptxpy.shared_array((STAGES,), u64)     # both warpgroups are done reading a stage
    t = ptxpy.thread_idx.x
    if t == 0:
        for s in ptxpy.static_range(STAGES):
            ptxpy.mbarrier_init(full[s], 1)
            ptxpy.mbarrier_init(empty[s], CONSUMERS)
    ptxpy.fence_proxy_async()
    ptxpy.syncthreads()
    if t >= CONSUMERS:
        if REGS:
            ptxpy.setmaxnreg_dec(40)
        if t == CONSUMERS:
            for kt in range(tiles):
                s = kt % STAGES
                if kt >= STAGES:        # step kt - STAGES has been read: its stage is free
                    ptxpy.mbarrier_wait(empty[s], (kt // STAGES - 1) % 2)
                k0 = kt * BK
                ptxpy.mbarrier_arrive_expect_tx(full[s], STAGE_BYTES)
                ptxpy.tma_load(xs[s], x[m0:m0 + BM, k0:k0 + BK], full[s], swizzle=SWIZZLE)
                for j in ptxpy.static_range(NB):
                    ptxpy.tma_load(ys[s, j], y[k0:k0 + BK, n0 + 64 * j:n0 + 64 * j + 64], full[s],
                                   swizzle=SWIZZLE)
    else:
        if REGS:
            ptxpy.setmaxnreg_inc(232)
        acc = ptxpy.local_array((BN // 8, 4), f32)
        for j in ptxpy.static_range(BN // 8):
            for e in ptxpy.static_range(4):
                acc[j, e] = 0.0
        g = t // 128
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
                ptxpy.mbarrier_arrive(empty[(kt - INFLIGHT) % STAGES])
        ptxpy.wgmma_wait(0)
        lane = t % 32
        row = m0 + 64 * g + 16 * ((t % 128) // 32) + lane // 4
        for j in ptxpy.static_range(BN // 8):
            col = n0 + 8 * j + 2 * (lane % 4)
            z[row, col:col + 2] = (acc[j, 0], acc[j, 1])
            z[row + 8, col:col + 2] = (acc[j, 2], acc[j, 3])


matmul_ws_regs = ptxpy.jit(
    matmul_ws.fn, out_shape=lambda x, y, REGS=False: jax.ShapeDtypeStruct((x.shape[0], y.shape[1]), jnp.float32),
    grid=lambda x, y, REGS=False: (y.shape[1] // BN, x.shape[0] // BM), block=THREADS,
    launch_bounds=(THREADS, 1))


def main(sizes: list[int]) -> None:
    from matmul_tma_wgmma import matmul_tma
    from matmul_wgmma import tflops

    on_gpu = jax.default_backend() == "gpu"
    rng = np.random.default_rng(0)
    xla = jax.jit(lambda a, b: jnp.dot(a, b, preferred_element_type=jnp.float32))
    for size in sizes:
        xj = jnp.asarray(rng.standard_normal((size, size), dtype=np.float32), jnp.bfloat16)
        yj = jnp.asarray(rng.standard_normal((size, size), dtype=np.float32), jnp.bfloat16)
        fns = {"warp-specialised": jax.jit(matmul_ws),
               "warp-specialised, setmaxnreg": jax.jit(lambda a, b: matmul_ws_regs(a, b, REGS=True)),
               "tma": jax.jit(matmul_tma), "XLA": xla}
        if size <= 2048:
            x, y = np.asarray(xj).astype(np.float64), np.asarray(yj).astype(np.float64)
            for name in ("warp-specialised", "warp-specialised, setmaxnreg"):
                error = float(np.max(np.abs(np.asarray(fns[name](xj, yj)) - x @ y)
                                     / (np.abs(x) @ np.abs(y))))
                print(f"{size}: {name} error {error:.1e} of sum |x||y|", flush=True)
                assert error < 2.0 ** -14
        else:
            for name in ("warp-specialised", "warp-specialised, setmaxnreg"):
                diff = float(np.max(np.abs(np.asarray(fns[name](xj, yj)) - np.asarray(xla(xj, yj)))))
                print(f"{size}: {name} max |z - XLA's z| {diff:.2e}", flush=True)
        if on_gpu:
            rates = {name: tflops(fn, xj, yj) for name, fn in fns.items()}
            print(f"{size}: " + ", ".join(f"{name} {rate:.1f} TFLOP/s" for name, rate in rates.items()),
                  flush=True)


if __name__ == "__main__":
    main([int(n) for n in sys.argv[1:]] or [256])
