"""Launch cost of a kernel that takes a tensor map, beside the same kernel without one.

Two `x + 1` kernels over an (8, 128) f32 array, one block of 128 threads: `plain` reads x with
loads, `tma` brings it into shared memory with one `ptxpy.tma_load` (its launch encodes a
CUtensorMap for x's address). Timed like benchmarks/launch.py: an eager call with
`block_until_ready`, and 100 chained calls in one `jax.jit` with the outputs dropped or kept
(kept: XLA moves the graph's buffers every call, asking the FFI handler to update each node).
Run it twice to compare the C FFI handler with the Python one:

    python benchmarks/probes/tma_launch_probe.py
    PTXPY_NATIVE_HANDLER=0 python benchmarks/probes/tma_launch_probe.py

It prints microseconds per call (eager) or per kernel (chains), medians of rounds, and what
the C handler did (launches, node updates, calls passed to Python).
"""
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np

import ptxpy
from ptxpy import Array, f32, u64
from ptxpy.runtime import native

ROWS, COLS, CHAIN, ROUNDS = 8, 128, 100, 9


@ptxpy.jit(out_shape=lambda x: x, grid=1, block=COLS)
def plain(x: Array[f32, 2], out: Array[f32, 2]):
    t = ptxpy.thread_idx.x
    for r in ptxpy.static_range(ROWS):
        out[r, t] = x[r, t] + 1.0


@ptxpy.jit(out_shape=lambda x: x, grid=1, block=COLS)
def tma(x: Array[f32, 2], out: Array[f32, 2]):
    tile = ptxpy.shared_array((ROWS, COLS), f32)
    bar = ptxpy.shared_array((1,), u64)
    t = ptxpy.thread_idx.x
    if t == 0:
        ptxpy.mbarrier_init(bar[0], 1)
    ptxpy.fence_proxy_async()
    ptxpy.syncthreads()
    if t == 0:
        ptxpy.mbarrier_arrive_expect_tx(bar[0], ROWS * COLS * 4)
        ptxpy.tma_load(tile, x[0:ROWS, 0:COLS], bar[0])
    ptxpy.mbarrier_wait(bar[0], 0)
    for r in ptxpy.static_range(ROWS):
        out[r, t] = tile[r, t] + 1.0


def median_us(call, reps: int, per: int = 1) -> float:
    rounds = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        for _ in range(reps):
            call()
        rounds.append((time.perf_counter() - start) / (reps * per) * 1e6)
    return statistics.median(rounds)


def chain(kernel):
    def f(x):
        for _ in range(CHAIN):
            x = kernel(x)
        return x
    return jax.jit(f)


def main() -> None:
    x = jnp.asarray(np.arange(ROWS * COLS, dtype=np.float32).reshape(ROWS, COLS))
    print(f"C handler {'on' if native.enabled() else 'off'}; device {jax.devices()[0]}")
    for name, kernel in (("plain", plain), ("tma", tma)):
        np.testing.assert_array_equal(np.asarray(kernel(x)), np.asarray(x) + 1)
        f = chain(kernel)
        np.testing.assert_array_equal(np.asarray(f(x)), np.asarray(x) + CHAIN)
        before = native.counters()
        eager = median_us(lambda: kernel(x).block_until_ready(), 200)
        dropped = median_us(lambda: f(x).block_until_ready(), 20, CHAIN)
        kept = []

        def keeping():
            kept.append(f(x))
            if len(kept) > 2:
                kept.pop(0)
            kept[-1].block_until_ready()
        moved = median_us(keeping, 20, CHAIN)
        after = native.counters()
        done = tuple(b - a for a, b in zip(before, after))
        print(f"{name}: eager {eager:.1f} us/call; chain dropped {dropped:.2f} us/kernel, kept "
              f"{moved:.2f} us/kernel; C handler launches {done[0]}, updates {done[1]}, "
              f"to Python {done[2]}", flush=True)


if __name__ == "__main__":
    main()
