"""Row-wise softmax, out[r, :] = exp(x[r, :] - max(x[r, :])) / sum(exp(x[r, :] - max(x[r, :]))).

One block per row: 256 threads for rows of up to 8192 floats, 512 up to 16384 (`Const`s
THREADS and CACHE that the wrapper picks from the row length, `launch_shape`):

1. Each thread computes the maximum m and the sum s of exp(x - m) over its float4s of the row.
   The row stays in registers (up to eight float4s per thread) and is read from memory once.
   Longer rows use the "online" softmax: a running maximum and a running sum, s rescaled by
   exp(m_old - m_new) when a larger value arrives, and the row is read again in step 3 (from
   L2).
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

THREAD_CHOICES = (256, 512)     # threads per row: the fewest that hold the row in registers
MAX_CACHE = 8       # float4s per thread held in registers: rows up to 512 * 32 = 16384 floats
MAX_WARPS = 32      # shared-memory slots: one per warp of the largest block CUDA allows
LONG_ROW_THREADS = 256          # rows read twice (too long, or not a multiple of 4)


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


@ptxpy.jit(out_shape=lambda x, CACHE=0, THREADS=256: x,
           grid=lambda x, CACHE=0, THREADS=256: (x.shape[0],),
           block=lambda x, CACHE=0, THREADS=256: THREADS)
def softmax_kernel(x: Array[f32, 2], out: Array[f32, 2], CACHE: Const[int] = 0,
                   THREADS: Const[int] = 256):
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
            j = (k * THREADS + t) * 4
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
            if (k * THREADS + t) * 4 < cols:         # no exp of the padding
                for e in ptxpy.static_range(4):
                    s += ptxpy.fast_exp(vals[4 * k + e] - m)
    elif cols % 4 == 0:
        # Long rows: online softmax over a strided loop of float4s.
        for j in range(t * 4, cols, THREADS * 4):
            a, b, c, d = x[row, j:j + 4]
            m, s = add4(m, s, a, b, c, d)
    else:
        # Rows whose length is not a multiple of 4 are not 16-byte aligned: scalar accesses.
        for j in range(t, cols, THREADS):
            m, s = add1(m, s, x[row, j])

    # 2. Merge across the warp (butterfly: every lane ends with the warp's result) ...
    for k in ptxpy.static_range(5):
        m2 = ptxpy.shfl_xor_sync(m, 16 >> k)
        s2 = ptxpy.shfl_xor_sync(s, 16 >> k)
        m, s = merge(m, s, m2, s2)
    # ... then across the block's warps through shared memory.
    wm = ptxpy.shared_array(MAX_WARPS, f32)
    ws = ptxpy.shared_array(MAX_WARPS, f32)
    if t % 32 == 0:
        wm[t // 32] = m
        ws[t // 32] = s
    ptxpy.syncthreads()
    m = wm[0]
    s = ws[0]
    for k in ptxpy.static_range(1, THREADS // 32):  # every thread merges the warp results itself:
        m, s = merge(m, s, wm[k], ws[k])       # shared-memory broadcasts, no second barrier
    inv = 1.0 / s

    # 3. Normalise.
    if CACHE > 0:
        for k in ptxpy.static_range(CACHE):
            j = (k * THREADS + t) * 4
            if j < cols:
                out[row, j:j + 4] = (ptxpy.fast_exp(vals[4 * k] - m) * inv,
                                     ptxpy.fast_exp(vals[4 * k + 1] - m) * inv,
                                     ptxpy.fast_exp(vals[4 * k + 2] - m) * inv,
                                     ptxpy.fast_exp(vals[4 * k + 3] - m) * inv)
    elif cols % 4 == 0:
        for j in range(t * 4, cols, THREADS * 4):
            a, b, c, d = x[row, j:j + 4]
            out[row, j:j + 4] = (ptxpy.fast_exp(a - m) * inv, ptxpy.fast_exp(b - m) * inv,
                                 ptxpy.fast_exp(c - m) * inv, ptxpy.fast_exp(d - m) * inv)
    else:
        for j in range(t, cols, THREADS):
            out[row, j] = ptxpy.fast_exp(x[row, j] - m) * inv


def launch_shape(cols: int) -> tuple[int, int]:
    """(THREADS, CACHE) for rows of `cols` floats: the fewest threads whose registers hold the
    row (CACHE float4s each, at most MAX_CACHE), else LONG_ROW_THREADS reading it twice."""
    if cols % 4 == 0:
        for threads in THREAD_CHOICES:
            per_thread = ptxpy.cdiv(cols, threads * 4)
            if per_thread <= MAX_CACHE:
                return threads, per_thread
    return LONG_ROW_THREADS, 0


def softmax(x):
    """Softmax of each row of x (any shape). THREADS and CACHE, the float4s per thread held in
    registers, come from the row length (`launch_shape`; CACHE 0: online softmax, the row read
    twice); each pair is its own compiled kernel with only the registers it needs."""
    threads, cache = launch_shape(x.shape[1])
    return softmax_kernel(x, CACHE=cache, THREADS=threads)


def main(rows: int | None = None, cols: int | None = None) -> None:
    on_gpu = jax.default_backend() == "gpu"
    rows = rows or (4096 if on_gpu else 64)
    cols = cols or (4096 if on_gpu else 1000)
    f = jax.jit(softmax)
    longest = max(THREAD_CHOICES) * 4 * MAX_CACHE
    # in registers, scalar, in registers with 512 threads, online (the row read twice)
    for r, c in ((rows, cols), (rows, cols + 1), (rows, 9000), (rows if on_gpu else 4, longest + 4)):
        x = 4.0 * jax.random.normal(jax.random.key(c), (r, c), jnp.float32)
        out = f(x)
        np.testing.assert_allclose(np.asarray(out), np.asarray(jax.nn.softmax(x, axis=-1)),
                                   rtol=1e-5, atol=1e-7)
    # A row of -inf except one entry, and a row of equal values.
    x = jnp.full((2, 64), -jnp.inf, jnp.float32).at[0, 5].set(1.0).at[1].set(3.0)
    np.testing.assert_allclose(np.asarray(f(x)), np.asarray(jax.nn.softmax(x, axis=-1)), rtol=1e-6)
    print(f"softmax of {rows} x {cols}, {rows} x {cols + 1}, {rows} x 9000 and {r} x {longest + 4}: "
          "matches jax.nn.softmax")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=None)
    parser.add_argument("--cols", type=int, default=None)
    args = parser.parse_args()
    main(args.rows, args.cols)
