"""Sum and maximum of a vector, in two deterministic stages.

`reduce` is one kernel used twice:

1. over x with blocks of 512 threads, enough of them (up to 8192) that each thread reads 16
   elements: four 128-bit loads in flight at once, in a grid-stride loop that larger arrays go
   round more than once. Each thread keeps its own partial result; the block combines its
   threads' results with warp shuffles (`warp_sum`/`warp_max`) and one shared-memory slot per
   warp, and writes one partial result per block. This is the shape XLA gives the same
   reduction; on an H100 at 2^26 it reads 3.07 TB/s, against 3.04 with 1024 blocks of 256
   threads going round the loop 16 times (BENCHMARKS.md, session 13);
2. over those (at most 8192) partial results with a single block, giving the answer.

The order of the additions is fixed by the launch shape, so the sum is the same on every run
(a single-stage version with `atomic_add` would not be). `IS_MAX` is a `Const[bool]`: the sum
and the max are two specialisations of one source.

`python examples/reduction.py [--size N]` checks both against jax.numpy.
"""
import argparse
import math

import jax
import jax.numpy as jnp
import numpy as np

import ptxpy
from ptxpy import Array, Const, f32

BLOCK = 512
WARPS = BLOCK // 32
MAX_BLOCKS = 8192


def _blocks(x, *_, **__):
    return max(1, min(MAX_BLOCKS, ptxpy.cdiv(x.shape[0], BLOCK * 4 * 4)))


@ptxpy.jit(out_shape=lambda x, IS_MAX=False: jax.ShapeDtypeStruct((_blocks(x),), x.dtype),
           grid=lambda x, IS_MAX=False: (_blocks(x),), block=BLOCK)
def reduce(x: Array[f32], partial: Array[f32], IS_MAX: Const[bool] = False):
    n = x.shape[0]
    t = ptxpy.thread_idx.x
    tid = ptxpy.block_idx.x * BLOCK + t
    stride = ptxpy.grid_dim.x * BLOCK
    acc = -math.inf if IS_MAX else 0.0
    # Grid-stride loop over float4s (the array's start is 16-byte aligned), four of them per
    # iteration so that each thread has four loads in flight ...
    i = tid * 4
    step = stride * 4
    while i + 4 <= n - 3 * step:           # i + 3 * step + 4 <= n, without overflowing
        a0, a1, a2, a3 = x[i:i + 4]
        b0, b1, b2, b3 = x[i + step:i + step + 4]
        c0, c1, c2, c3 = x[i + 2 * step:i + 2 * step + 4]
        d0, d1, d2, d3 = x[i + 3 * step:i + 3 * step + 4]
        if IS_MAX:
            acc = max(acc, max(a0, a1, a2, a3), max(b0, b1, b2, b3), max(c0, c1, c2, c3),
                      max(d0, d1, d2, d3))
        else:
            acc += (((a0 + a1) + (a2 + a3)) + ((b0 + b1) + (b2 + b3))) + (
                ((c0 + c1) + (c2 + c3)) + ((d0 + d1) + (d2 + d3)))
        i += 4 * step
    # ... then one float4 at a time ...
    while i + 4 <= n:
        a, b, c, d = x[i:i + 4]
        if IS_MAX:
            acc = max(acc, a, b, c, d)
        else:
            acc += (a + b) + (c + d)
        i += step
    # ... and the last n % 4 elements, one per thread.
    tail = n - n % 4 + tid
    if tail < n:
        acc = max(acc, x[tail]) if IS_MAX else acc + x[tail]

    # Block reduction: shuffles within each warp, then shared memory across warps.
    acc = ptxpy.warp_max(acc) if IS_MAX else ptxpy.warp_sum(acc)
    per_warp = ptxpy.shared_array(WARPS, f32)
    if t % 32 == 0:
        per_warp[t // 32] = acc
    ptxpy.syncthreads()
    if t < 32:
        v = per_warp[t] if t < WARPS else (-math.inf if IS_MAX else 0.0)
        v = ptxpy.warp_max(v) if IS_MAX else ptxpy.warp_sum(v)
        if t == 0:
            partial[ptxpy.block_idx.x] = v


def total(x, is_max: bool = False):
    """Stage 1 over x, stage 2 over its partial results (and more stages should one block not
    cover them); works under jax.jit."""
    partial = reduce(x, IS_MAX=is_max)
    while partial.shape[0] > 1:
        partial = reduce(partial, IS_MAX=is_max)
    return partial[0]


def main(size: int | None = None) -> None:
    if size is None:
        size = 1 << 26 if jax.default_backend() == "gpu" else 1_000_003
    x = jax.random.normal(jax.random.key(0), (size,), jnp.float32)
    got_sum = jax.jit(total, static_argnums=1)(x, False)
    got_max = jax.jit(total, static_argnums=1)(x, True)
    want_sum = np.sum(np.asarray(x, np.float64))
    np.testing.assert_allclose(float(got_sum), want_sum, rtol=1e-5, atol=1e-6 * np.sqrt(size))
    assert float(got_max) == float(jnp.max(x)), (float(got_max), float(jnp.max(x)))
    for n in (1, 7, 4099):                                   # small and ragged sizes
        y = jnp.arange(n, dtype=jnp.float32) - 3.0
        assert float(total(y)) == float(jnp.sum(y)) and float(total(y, True)) == n - 4.0
    print(f"reduction of {size} elements: sum {float(got_sum):.4f}, max {float(got_max):.4f}; "
          "match jax.numpy")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=None, help="vector length")
    main(parser.parse_args().size)
