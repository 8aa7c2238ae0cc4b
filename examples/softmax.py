"""Row-wise softmax, out[r, :] = exp(x[r, :] - max(x[r, :])) / sum(exp(x[r, :] - max(x[r, :]))).

One block of 256 threads per row:

1. Each thread computes the maximum m and the sum s of exp(x - m) over its float4s of the row.
   Rows of up to 8192 floats stay in registers (up to eight float4s per thread: a `Const`
   that the wrapper `softmax` picks from the row length) and are read from memory once. Longer rows use the "online" softmax: a running maximum and a running sum,
   s rescaled by exp(m_old - m_new) when a larger value arrives, and the row is read again
   in step 3 (from L2).
2. The block merges the threads' (m, s) pairs: within each warp with `shfl_xor_sync`
   butterflies, across warps through shared memory.
3. Each thread writes exp(x - m) / s for its elements.

exp is `ptxpy.fast_exp` (`ex2.approx` of x * log2(e), CUDA's __expf): softmax's arguments are
<= 0 after the shift, where it is accurate to a few ulp.

`python examples/softmax.py [--rows R --cols C]` checks the result against jax.nn.softmax.
"""
import argparse
import math

import jax
import jax.numpy as jnp
import numpy as np

import ptxpy
from ptxpy import Array, Const, f32

BLOCK = 256
WARPS = BLOCK // 32
MAX_CACHE = 8       # at most 8 float4s per thread stay in registers: rows up to 8192 floats


@ptxpy.func
def merge(m: f32, s: f32, m2: f32, s2: f32) -> tuple[f32, f32]:
    """Combine two partial results (max m, sum s of exp(x - m))."""
    mm = max(m, m2)
    if mm == -math.inf:                        # both empty: avoid exp(-inf - -inf) = NaN
        return mm, 0.0
    return mm, s * ptxpy.fast_exp(m - mm) + s2 * ptxpy.fast_exp(m2 - mm)


@ptxpy.func
def add4(m: f32, s: f32, a: f32, b: f32, c: f32, d: f32) -> tuple[f32, f32]:
    """Add four values to a partial result, rescaling the sum at most once."""
    mx = max(a, b, c, d)
    if mx > m:
        s = s * ptxpy.fast_exp(m - mx)         # exp(-inf) == 0 the first time
        m = mx
    s += ptxpy.fast_exp(a - m) + ptxpy.fast_exp(b - m) + ptxpy.fast_exp(c - m) + ptxpy.fast_exp(d - m)
    return m, s


@ptxpy.func
def add1(m: f32, s: f32, v: f32) -> tuple[f32, f32]:
    if v > m:
        s = s * ptxpy.fast_exp(m - v)
        m = v
    return m, s + ptxpy.fast_exp(v - m)


@ptxpy.jit(out_shape=lambda x, CACHE=0: x, grid=lambda x, CACHE=0: (x.shape[0],), block=BLOCK)
def softmax_kernel(x: Array[f32, 2], out: Array[f32, 2], CACHE: Const[int] = 0):
    row = ptxpy.block_idx.x
    cols = x.shape[1]
    t = ptxpy.thread_idx.x
    # 1. This thread's maximum m and sum s of exp(x - m).
    m = -math.inf
    s = 0.0
    if CACHE > 0:
        # The row stays in registers, read from memory once; all loads are issued first.
        # (CACHE > 0 is a compile-time branch: for CACHE == 0 it is not compiled at all.)
        vals = ptxpy.local_array(4 * CACHE, f32)     # constant indices only: registers
        for k in ptxpy.static_range(CACHE):
            j = (k * BLOCK + t) * 4
            if j < cols:
                a, b, c, d = x[row, j:j + 4]
            else:
                a, b, c, d = -math.inf, -math.inf, -math.inf, -math.inf
            vals[4 * k] = a
            vals[4 * k + 1] = b
            vals[4 * k + 2] = c
            vals[4 * k + 3] = d
        for k in ptxpy.static_range(4 * CACHE):      # the values are at hand: no rescaling
            m = max(m, vals[k])
        for k in ptxpy.static_range(CACHE):
            if (k * BLOCK + t) * 4 < cols:           # no exp of the padding
                for e in ptxpy.static_range(4):
                    s += ptxpy.fast_exp(vals[4 * k + e] - m)
    elif cols % 4 == 0:
        # Long rows: online softmax over a strided loop of float4s.
        for j in range(t * 4, cols, BLOCK * 4):
            a, b, c, d = x[row, j:j + 4]
            m, s = add4(m, s, a, b, c, d)
    else:
        # Rows whose length is not a multiple of 4 are not 16-byte aligned: scalar accesses.
        for j in range(t, cols, BLOCK):
            m, s = add1(m, s, x[row, j])

    # 2. Merge across the warp (butterfly: every lane ends with the warp's result) ...
    for k in ptxpy.static_range(5):
        m2 = ptxpy.shfl_xor_sync(m, 16 >> k)
        s2 = ptxpy.shfl_xor_sync(s, 16 >> k)
        m, s = merge(m, s, m2, s2)
    # ... then across the block's warps through shared memory.
    wm = ptxpy.shared_array(WARPS, f32)
    ws = ptxpy.shared_array(WARPS, f32)
    if t % 32 == 0:
        wm[t // 32] = m
        ws[t // 32] = s
    ptxpy.syncthreads()
    m = wm[0]
    s = ws[0]
    for k in ptxpy.static_range(1, WARPS):     # every thread merges the 8 warp results itself:
        m, s = merge(m, s, wm[k], ws[k])       # shared-memory broadcasts, no second barrier
    inv = 1.0 / s

    # 3. Normalise.
    if CACHE > 0:
        for k in ptxpy.static_range(CACHE):
            j = (k * BLOCK + t) * 4
            if j < cols:
                out[row, j:j + 4] = (ptxpy.fast_exp(vals[4 * k] - m) * inv,
                                     ptxpy.fast_exp(vals[4 * k + 1] - m) * inv,
                                     ptxpy.fast_exp(vals[4 * k + 2] - m) * inv,
                                     ptxpy.fast_exp(vals[4 * k + 3] - m) * inv)
    elif cols % 4 == 0:
        for j in range(t * 4, cols, BLOCK * 4):
            a, b, c, d = x[row, j:j + 4]
            out[row, j:j + 4] = (ptxpy.fast_exp(a - m) * inv, ptxpy.fast_exp(b - m) * inv,
                                 ptxpy.fast_exp(c - m) * inv, ptxpy.fast_exp(d - m) * inv)
    else:
        for j in range(t, cols, BLOCK):
            out[row, j] = ptxpy.fast_exp(x[row, j] - m) * inv


def softmax(x):
    """Softmax of each row of x (any shape). CACHE, the float4s per thread held in registers,
    is just enough for the row (0: online softmax, the row read twice); each value is its own
    compiled kernel with only the registers it needs."""
    per_thread = ptxpy.cdiv(x.shape[1], BLOCK * 4)
    cache = per_thread if x.shape[1] % 4 == 0 and per_thread <= MAX_CACHE else 0
    return softmax_kernel(x, CACHE=cache)


def main(rows: int | None = None, cols: int | None = None) -> None:
    on_gpu = jax.default_backend() == "gpu"
    rows = rows or (4096 if on_gpu else 64)
    cols = cols or (4096 if on_gpu else 1000)
    f = jax.jit(softmax)
    for c in (cols, cols + 1, 9000):            # cached, scalar and online paths
        x = 4.0 * jax.random.normal(jax.random.key(c), (rows, c), jnp.float32)
        out = f(x)
        np.testing.assert_allclose(np.asarray(out), np.asarray(jax.nn.softmax(x, axis=-1)),
                                   rtol=1e-5, atol=1e-7)
    # A row of -inf except one entry, and a row of equal values.
    x = jnp.full((2, 64), -jnp.inf, jnp.float32).at[0, 5].set(1.0).at[1].set(3.0)
    np.testing.assert_allclose(np.asarray(f(x)), np.asarray(jax.nn.softmax(x, axis=-1)), rtol=1e-6)
    print(f"softmax of {rows} x {cols}, {rows} x {cols + 1} and {rows} x 9000: matches jax.nn.softmax")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=None)
    parser.add_argument("--cols", type=int, default=None)
    args = parser.parse_args()
    main(args.rows, args.cols)
