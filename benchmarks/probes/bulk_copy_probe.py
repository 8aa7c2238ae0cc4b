"""Rows through shared memory by Hopper's bulk copies (`ptxpy.cp_async_bulk`, mbarriers) beside
the same work with plain loads and XLA's: `out = 2 x` over a (rows, 8192) f32 array, TB/s
counting each byte read once and written once (CUPTI durations, benchmarks/kernels.py's
`_profiled_time`). Every kernel is checked against NumPy first. On the GPU only:

    python benchmarks/probes/bulk_copy_probe.py [--rows 8192] [--json FILE]

`bulk`: persistent blocks (two a multiprocessor), each taking rows b, b + G, ...: thread 0
starts the next row's bulk load into the other of two buffers while every thread scales this
row into a third, which one bulk store writes out. `bulk loads`: the same with three buffers
(two rows ahead) and each thread's four floats stored straight to global memory. `plain`: one block a row, each thread four
floats at a time from global memory to global memory.
"""
import argparse
import json
import os
import sys

import jax
import jax.numpy as jnp
import numpy as np

import ptxpy
from ptxpy import Array, f32, u64

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from kernels import _profiled_time  # noqa: E402

N = 8192
THREADS = 256


BLOCKS = 264     # two a multiprocessor of the H100 (96 KB of shared memory each)


@ptxpy.jit(out_shape=lambda x: x, grid=lambda x: min(x.shape[0], BLOCKS), block=THREADS)
def bulk(x: Array[f32, 2], out: Array[f32, 2]):
    xs = ptxpy.shared_array((2, N), f32)
    ys = ptxpy.shared_array(N, f32)
    bars = ptxpy.shared_array((2,), u64)
    t = ptxpy.thread_idx.x
    b = ptxpy.block_idx.x
    step = ptxpy.grid_dim.x
    rows = x.shape[0]
    if t == 0:
        ptxpy.mbarrier_init(bars[0], 1)
        ptxpy.mbarrier_init(bars[1], 1)
    ptxpy.fence_proxy_async()
    ptxpy.syncthreads()
    if t == 0:
        ptxpy.mbarrier_arrive_expect_tx(bars[0], N * 4)
        ptxpy.cp_async_bulk(xs[0, 0:N], x[b, 0:N], bars[0])
    k = 0
    for r in range(b, rows, step):
        s = k % 2
        if t == 0 and r + step < rows:
            ptxpy.mbarrier_arrive_expect_tx(bars[1 - s], N * 4)
            ptxpy.cp_async_bulk(xs[1 - s, 0:N], x[r + step, 0:N], bars[1 - s])
        ptxpy.mbarrier_wait(bars[s], (k // 2) % 2)
        if t == 0:
            ptxpy.cp_async_bulk_wait(0, read=True)      # the last row's store has read ys
        ptxpy.syncthreads()
        for c in range(4 * t, N, 4 * THREADS):
            a0, a1, a2, a3 = xs[s, c:c + 4]
            ys[c:c + 4] = (a0 * 2.0, a1 * 2.0, a2 * 2.0, a3 * 2.0)
        ptxpy.fence_proxy_async()
        ptxpy.syncthreads()
        if t == 0:
            ptxpy.cp_async_bulk(out[r, 0:N], ys[0:N])
            ptxpy.cp_async_bulk_commit()
        k += 1
    if t == 0:
        ptxpy.cp_async_bulk_wait(0)


STAGES = 3


@ptxpy.jit(out_shape=lambda x: x, grid=lambda x: min(x.shape[0], BLOCKS), block=THREADS)
def bulk_loads(x: Array[f32, 2], out: Array[f32, 2]):
    xs = ptxpy.shared_array((STAGES, N), f32)
    bars = ptxpy.shared_array((STAGES,), u64)
    t = ptxpy.thread_idx.x
    b = ptxpy.block_idx.x
    step = ptxpy.grid_dim.x
    rows = x.shape[0]
    if t == 0:
        for s in ptxpy.static_range(STAGES):
            ptxpy.mbarrier_init(bars[s], 1)
    ptxpy.fence_proxy_async()
    ptxpy.syncthreads()
    if t == 0:
        for s in ptxpy.static_range(STAGES - 1):
            if b + s * step < rows:
                ptxpy.mbarrier_arrive_expect_tx(bars[s], N * 4)
                ptxpy.cp_async_bulk(xs[s, 0:N], x[b + s * step, 0:N], bars[s])
    k = 0
    for r in range(b, rows, step):
        s = k % STAGES
        ahead = r + (STAGES - 1) * step
        if t == 0 and ahead < rows:
            a = (k + STAGES - 1) % STAGES
            ptxpy.mbarrier_arrive_expect_tx(bars[a], N * 4)
            ptxpy.cp_async_bulk(xs[a, 0:N], x[ahead, 0:N], bars[a])
        ptxpy.mbarrier_wait(bars[s], (k // STAGES) % 2)
        for c in range(4 * t, N, 4 * THREADS):
            a0, a1, a2, a3 = xs[s, c:c + 4]
            out[r, c:c + 4] = (a0 * 2.0, a1 * 2.0, a2 * 2.0, a3 * 2.0)
        ptxpy.syncthreads()       # xs[s] is free for the copy STAGES - 1 rows on
        k += 1


@ptxpy.jit(out_shape=lambda x: x, grid=lambda x: x.shape[0], block=THREADS)
def plain(x: Array[f32, 2], out: Array[f32, 2]):
    t = ptxpy.thread_idx.x
    r = ptxpy.block_idx.x
    for c in range(4 * t, N, 4 * THREADS):
        a0, a1, a2, a3 = x[r, c:c + 4]
        out[r, c:c + 4] = (a0 * 2.0, a1 * 2.0, a2 * 2.0, a3 * 2.0)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=8192)
    parser.add_argument("--json")
    args = parser.parse_args()
    x = jnp.asarray(np.random.default_rng(0).standard_normal((args.rows, N)).astype(np.float32))
    expected = 2 * np.asarray(x)
    nbytes = 2 * x.size * 4
    results = {}
    for name, fn in (("XLA", lambda v: v * 2.0), ("plain", plain), ("bulk", bulk),
                     ("bulk loads", bulk_loads)):
        np.testing.assert_array_equal(np.asarray(jax.jit(fn)(x)), expected)
        seconds = _profiled_time(fn, (x,))
        results[name] = {"us": seconds * 1e6, "TB/s": nbytes / seconds / 1e12}
        print(f"{name:6s} {args.rows} x {N}: {seconds * 1e6:8.1f} us  {nbytes / seconds / 1e12:.3f} TB/s",
              flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": args.rows, "cols": N, "device": jax.devices()[0].device_kind,
                       "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
