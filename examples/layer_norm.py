"""Layer normalisation, out = (x - mean) / sqrt(var + eps) * gamma + beta, over each row.

One block per row: 256 threads for rows of up to 8192 floats, 512 up to 16384 (`Const`s
THREADS and CACHE that the wrapper `layer_norm` picks from the row length, `launch_shape`, so
each row length gets a kernel with only the registers it needs):

1. Each thread loads its float4s of the row, and of gamma and beta, keeping them in registers
   (up to eight float4s per thread; longer rows are read a second time, from L2, in step 3). It sums d = x - K and d * d over them, where K = x[r, 0] is a shift taken from the
   row itself: var = E[d^2] - E[d]^2 then does not lose its digits to cancellation when the
   mean is large compared with the spread (the "shifted data" algorithm), and both sums come
   out of one pass.
2. `block_sum2` adds both sums over the block in one go: warp shuffles, one shared-memory slot
   per warp for each, and a final warp shuffle.
3. Each thread writes its elements, normalised, scaled and shifted.

`python examples/layer_norm.py [--rows R --cols C]` checks the result against jax.numpy.
"""
import argparse

import jax
import jax.numpy as jnp
import numpy as np

import ptxpy
from ptxpy import Array, Const, f32, i32

THREAD_CHOICES = (256, 512)     # threads per row: the fewest that hold the row in registers
MAX_CACHE = 8       # float4s per thread held in registers: rows up to 512 * 32 = 16384 floats
MAX_WARPS = 32      # shared-memory slots: one per warp of the largest block CUDA allows
LONG_ROW_THREADS = 256          # rows read twice (too long, or not a multiple of 4)
EPS = 1e-5


@ptxpy.func
def block_sum2(a: f32, b: f32, warps: i32) -> tuple[f32, f32]:
    """Sums of `a` and of `b` over the block's `warps` warps, returned to every thread."""
    part_a = ptxpy.shared_array(MAX_WARPS, f32)
    part_b = ptxpy.shared_array(MAX_WARPS, f32)
    t = ptxpy.thread_idx.x
    a = ptxpy.warp_sum(a)
    b = ptxpy.warp_sum(b)
    if t % 32 == 0:
        part_a[t // 32] = a
        part_b[t // 32] = b
    ptxpy.syncthreads()
    # Every warp reads the `warps` partial sums (a broadcast) and finishes the sum with
    # shuffles: no second barrier needed.
    lane = t % 32
    a = part_a[lane] if lane < warps else 0.0
    b = part_b[lane] if lane < warps else 0.0
    return ptxpy.warp_sum(a), ptxpy.warp_sum(b)


@ptxpy.jit(out_shape=lambda x, gamma, beta, eps, CACHE=0, THREADS=256: x,
           grid=lambda x, gamma, beta, eps, CACHE=0, THREADS=256: (x.shape[0],),
           block=lambda x, gamma, beta, eps, CACHE=0, THREADS=256: THREADS)
def layer_norm_kernel(x: Array[f32, 2], gamma: Array[f32], beta: Array[f32], eps: f32,
                      out: Array[f32, 2], CACHE: Const[int] = 0, THREADS: Const[int] = 256):
    row = ptxpy.block_idx.x
    cols = x.shape[1]
    t = ptxpy.thread_idx.x
    inv_n = 1.0 / f32(cols)
    shift = x[row, 0]
    s = 0.0
    ss = 0.0
    if CACHE > 0:
        # The row stays in registers (CACHE float4s per thread), read from memory once. All
        # loads, gamma and beta included, are issued before any arithmetic: loaded after the
        # block reduction, gamma and beta (L2 hits) put their latency on every block's critical
        # path, which at 2048 x 8192 cost 5% (docs/performance.md). (A compile-time branch: for
        # CACHE == 0 it is not compiled at all, so the size 4 * CACHE is never 0.)
        vals = ptxpy.local_array(4 * CACHE, f32)
        gs = ptxpy.local_array(4 * CACHE, f32)
        bs = ptxpy.local_array(4 * CACHE, f32)
        for k in ptxpy.static_range(CACHE):
            j = (k * THREADS + t) * 4
            if j < cols:
                a, b, c, d = x[row, j:j + 4]
                g0, g1, g2, g3 = gamma[j:j + 4]
                b0, b1, b2, b3 = beta[j:j + 4]
            else:
                a, b, c, d = shift, shift, shift, shift     # contribute 0 after the shift
                g0, g1, g2, g3 = 0.0, 0.0, 0.0, 0.0
                b0, b1, b2, b3 = 0.0, 0.0, 0.0, 0.0
            vals[4 * k] = a
            vals[4 * k + 1] = b
            vals[4 * k + 2] = c
            vals[4 * k + 3] = d
            gs[4 * k] = g0
            gs[4 * k + 1] = g1
            gs[4 * k + 2] = g2
            gs[4 * k + 3] = g3
            bs[4 * k] = b0
            bs[4 * k + 1] = b1
            bs[4 * k + 2] = b2
            bs[4 * k + 3] = b3
        for k in ptxpy.static_range(4 * CACHE):
            v = vals[k] - shift
            s += v
            ss = ptxpy.fma(v, v, ss)
        s, ss = block_sum2(s, ss, THREADS // 32)
        mean_d = s * inv_n                                   # mean of x - shift
        rstd = ptxpy.rsqrt(max(ss * inv_n - mean_d * mean_d, 0.0) + eps)
        mean = shift + mean_d
        for k in ptxpy.static_range(CACHE):
            j = (k * THREADS + t) * 4
            if j < cols:
                out[row, j:j + 4] = (ptxpy.fma((vals[4 * k] - mean) * rstd, gs[4 * k], bs[4 * k]),
                                     ptxpy.fma((vals[4 * k + 1] - mean) * rstd, gs[4 * k + 1],
                                               bs[4 * k + 1]),
                                     ptxpy.fma((vals[4 * k + 2] - mean) * rstd, gs[4 * k + 2],
                                               bs[4 * k + 2]),
                                     ptxpy.fma((vals[4 * k + 3] - mean) * rstd, gs[4 * k + 3],
                                               bs[4 * k + 3]))
    elif cols % 4 == 0:
        # Long rows: a strided loop of float4s; the row is read again below (from L2).
        for j in range(t * 4, cols, THREADS * 4):
            a, b, c, d = x[row, j:j + 4]
            a -= shift
            b -= shift
            c -= shift
            d -= shift
            s += (a + b) + (c + d)
            ss = ptxpy.fma(a, a, ptxpy.fma(b, b, ptxpy.fma(c, c, ptxpy.fma(d, d, ss))))
        s, ss = block_sum2(s, ss, THREADS // 32)
        mean_d = s * inv_n
        rstd = ptxpy.rsqrt(max(ss * inv_n - mean_d * mean_d, 0.0) + eps)
        mean = shift + mean_d
        for j in range(t * 4, cols, THREADS * 4):
            a, b, c, d = x[row, j:j + 4]
            g0, g1, g2, g3 = gamma[j:j + 4]
            b0, b1, b2, b3 = beta[j:j + 4]
            out[row, j:j + 4] = (ptxpy.fma((a - mean) * rstd, g0, b0),
                                 ptxpy.fma((b - mean) * rstd, g1, b1),
                                 ptxpy.fma((c - mean) * rstd, g2, b2),
                                 ptxpy.fma((d - mean) * rstd, g3, b3))
    else:
        # Rows whose length is not a multiple of 4 are not 16-byte aligned: scalar accesses.
        for j in range(t, cols, THREADS):
            a = x[row, j] - shift
            s += a
            ss = ptxpy.fma(a, a, ss)
        s, ss = block_sum2(s, ss, THREADS // 32)
        mean_d = s * inv_n
        rstd = ptxpy.rsqrt(max(ss * inv_n - mean_d * mean_d, 0.0) + eps)
        mean = shift + mean_d
        for j in range(t, cols, THREADS):
            out[row, j] = ptxpy.fma((x[row, j] - mean) * rstd, gamma[j], beta[j])


def launch_shape(cols: int) -> tuple[int, int]:
    """(THREADS, CACHE) for rows of `cols` floats: the fewest threads whose registers hold the
    row (CACHE float4s each, at most MAX_CACHE), else LONG_ROW_THREADS reading it twice."""
    if cols % 4 == 0:
        for threads in THREAD_CHOICES:
            per_thread = ptxpy.cdiv(cols, threads * 4)
            if per_thread <= MAX_CACHE:
                return threads, per_thread
    return LONG_ROW_THREADS, 0


def layer_norm(x, gamma, beta, eps=EPS):
    """Layer norm of each row of x (any shape). THREADS and CACHE, the float4s per thread held
    in registers, come from the row length (`launch_shape`; CACHE 0: the row read twice); each
    pair is its own compiled kernel."""
    threads, cache = launch_shape(x.shape[1])
    return layer_norm_kernel(x, gamma, beta, eps, CACHE=cache, THREADS=threads)


def reference(x, gamma, beta, eps=EPS):
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.var(x, axis=-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + eps) * gamma + beta


def main(rows: int | None = None, cols: int | None = None) -> None:
    on_gpu = jax.default_backend() == "gpu"
    rows = rows or (4096 if on_gpu else 64)
    cols = cols or (4096 if on_gpu else 1000)
    f = jax.jit(layer_norm)
    longest = max(THREAD_CHOICES) * 4 * MAX_CACHE
    # in registers, odd length, in registers with 512 threads, rows read twice
    for r, c in ((rows, cols), (rows, cols + 3), (rows, 9000), (rows if on_gpu else 4, longest + 4)):
        k = jax.random.split(jax.random.key(c), 3)
        x = 100.0 + 3.0 * jax.random.normal(k[0], (r, c), jnp.float32)   # a large mean
        gamma = 1.0 + 0.1 * jax.random.normal(k[1], (c,), jnp.float32)
        beta = 0.1 * jax.random.normal(k[2], (c,), jnp.float32)
        out = f(x, gamma, beta, EPS)
        np.testing.assert_allclose(np.asarray(out), np.asarray(reference(x, gamma, beta)),
                                   rtol=1e-4, atol=1e-4)
    print(f"layer_norm of {rows} x {cols}, {rows} x {cols + 3}, {rows} x 9000 and {r} x {longest + 4}: "
          "matches jax.numpy")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=None)
    parser.add_argument("--cols", type=int, default=None)
    args = parser.parse_args()
    main(args.rows, args.cols)
