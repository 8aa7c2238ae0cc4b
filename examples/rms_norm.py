"""RMS normalisation, out[r, :] = x[r, :] / sqrt(mean(x[r, :] ** 2) + eps) * w.

Two kernels:

- `rms_norm_warp`: pyptx's RMS norm example (B = 16 rows of N = 512), one warp per row. N is a
  `Const`, so the row's N / 32 values per lane stay in registers between the sum of squares and
  the scaling: the row is read from memory once. The lanes read 128-bit vectors, the 32 lanes of
  a warp covering 512 consecutive bytes per load, and `ptxpy.warp_sum` (five `shfl.sync.bfly`)
  adds their partial sums, leaving the total in every lane.
- `rms_norm`: the general kernel, any rows x cols (e.g. 2048 x 8192), one block per row. Each
  thread sums the squares of its float4s; the block reduces through warp shuffles and one
  shared-memory slot per warp (`block_sum`); then every thread scales its elements. The row
  stays in registers in between (up to sixteen float4s per thread, in a `local_array` indexed
  by constants), so it is read from memory once. The wrapper picks two `Const`s from the row
  length: THREADS, the fewest of 128, 256 or 512 threads that hold the row that way (rows of
  up to 8192, 16384 or 32768 floats), and CACHE, the float4s per thread. Longer rows are read
  a second time (from L2). (On an H100, 128 threads ran 1-2% faster than 256 at 2048 x 8192
  and 4096 x 4096; 256 threads holding a 16384-float row beat reading it twice by far; see
  BENCHMARKS.md, session 14.)
  Rows whose length is not a multiple of 4 take a scalar path, since vector loads need 16-byte
  alignment.

`python examples/rms_norm.py [--rows R --cols C]` checks both against jax.numpy.
"""
import argparse

import jax
import jax.numpy as jnp
import numpy as np

import ptxpy
from ptxpy import Array, Const, f32, i32

EPS = 1e-6

# --- one warp per row, N known at compile time ------------------------------------------------


@ptxpy.jit(out_shape=lambda x, w, eps, N=512: x, grid=lambda x, w, eps, N=512: (x.shape[0],), block=32)
def rms_norm_warp(x: Array[f32, 2], w: Array[f32], eps: f32, out: Array[f32, 2],
                  N: Const[int] = 512):
    row = ptxpy.block_idx.x
    lane = ptxpy.thread_idx.x
    vals = ptxpy.local_array(N // 32, f32)     # this lane's elements: registers, not memory
    ss = 0.0
    for k in ptxpy.static_range(N // 128):     # N // 128 float4 loads per lane
        j = k * 128 + lane * 4
        a, b, c, d = x[row, j:j + 4]
        vals[4 * k] = a
        vals[4 * k + 1] = b
        vals[4 * k + 2] = c
        vals[4 * k + 3] = d
        ss = ptxpy.fma(a, a, ss)
        ss = ptxpy.fma(b, b, ss)
        ss = ptxpy.fma(c, c, ss)
        ss = ptxpy.fma(d, d, ss)
    ss = ptxpy.warp_sum(ss)                    # every lane gets the row's sum of squares
    scale = ptxpy.rsqrt(ss * (1.0 / N) + eps)
    for k in ptxpy.static_range(N // 128):
        j = k * 128 + lane * 4
        w0, w1, w2, w3 = w[j:j + 4]
        out[row, j:j + 4] = (vals[4 * k] * scale * w0, vals[4 * k + 1] * scale * w1,
                             vals[4 * k + 2] * scale * w2, vals[4 * k + 3] * scale * w3)


def rms_norm_small(x, w, eps=EPS):
    """pyptx's interface: N is taken from the shape (one compiled kernel per N)."""
    assert x.shape[1] % 128 == 0, "rms_norm_warp needs N to be a multiple of 128"
    return rms_norm_warp(x, w, eps, N=x.shape[1])


# --- one block per row, any shape -------------------------------------------------------------

THREAD_CHOICES = (128, 256, 512)    # threads per row: the fewest that hold the row in registers
MAX_CACHE = 16      # float4s per thread held in registers: rows up to 512 * 64 = 32768 floats
MAX_WARPS = 32      # block_sum's slots: one per warp of the largest block CUDA allows
LONG_ROW_THREADS = 256              # rows read twice (too long, or not a multiple of 4)


@ptxpy.func
def block_sum(v: f32, warps: i32) -> f32:
    """The sum of `v` over the block's `warps` warps, returned to every thread."""
    partial = ptxpy.shared_array(MAX_WARPS, f32)
    t = ptxpy.thread_idx.x
    v = ptxpy.warp_sum(v)                      # 1. within each warp, through shuffles
    if t % 32 == 0:
        partial[t // 32] = v                   # 2. one value per warp to shared memory
    ptxpy.syncthreads()
    lane = t % 32                              # 3. every warp adds the `warps` values (shared
    v = partial[lane] if lane < warps else 0.0 #    memory broadcasts): no second barrier
    return ptxpy.warp_sum(v)


@ptxpy.jit(out_shape=lambda x, w, eps, CACHE=0, THREADS=128: x,
           grid=lambda x, w, eps, CACHE=0, THREADS=128: (x.shape[0],),
           block=lambda x, w, eps, CACHE=0, THREADS=128: THREADS)
def rms_norm_kernel(x: Array[f32, 2], w: Array[f32], eps: f32, out: Array[f32, 2],
                    CACHE: Const[int] = 0, THREADS: Const[int] = 128):
    row = ptxpy.block_idx.x
    cols = x.shape[1]
    t = ptxpy.thread_idx.x
    ss = 0.0
    if CACHE > 0:
        # The row stays in registers: CACHE float4s per thread (a local_array indexed by
        # constants), read from memory once. All loads are issued before any arithmetic.
        # (A compile-time branch: not compiled for CACHE == 0, so the size is never 0.)
        vals = ptxpy.local_array(4 * CACHE, f32)
        for k in ptxpy.static_range(CACHE):
            j = (k * THREADS + t) * 4
            if j < cols:
                a, b, c, d = x[row, j:j + 4]
            else:
                a, b, c, d = 0.0, 0.0, 0.0, 0.0
            vals[4 * k] = a
            vals[4 * k + 1] = b
            vals[4 * k + 2] = c
            vals[4 * k + 3] = d
        for k in ptxpy.static_range(4 * CACHE):
            ss = ptxpy.fma(vals[k], vals[k], ss)
        scale = ptxpy.rsqrt(block_sum(ss, THREADS // 32) / f32(cols) + eps)
        for k in ptxpy.static_range(CACHE):
            j = (k * THREADS + t) * 4
            if j < cols:
                w0, w1, w2, w3 = w[j:j + 4]
                out[row, j:j + 4] = (vals[4 * k] * scale * w0, vals[4 * k + 1] * scale * w1,
                                     vals[4 * k + 2] * scale * w2, vals[4 * k + 3] * scale * w3)
    elif cols % 4 == 0:
        # Long rows: a strided loop of float4s, and the row is read a second time (from L2).
        for j in range(t * 4, cols, THREADS * 4):
            a, b, c, d = x[row, j:j + 4]
            ss = ptxpy.fma(a, a, ptxpy.fma(b, b, ptxpy.fma(c, c, ptxpy.fma(d, d, ss))))
        scale = ptxpy.rsqrt(block_sum(ss, THREADS // 32) / f32(cols) + eps)
        for j in range(t * 4, cols, THREADS * 4):
            a, b, c, d = x[row, j:j + 4]
            w0, w1, w2, w3 = w[j:j + 4]
            out[row, j:j + 4] = (a * scale * w0, b * scale * w1, c * scale * w2, d * scale * w3)
    else:
        # Rows whose length is not a multiple of 4 are not 16-byte aligned: scalar accesses.
        for j in range(t, cols, THREADS):
            v = x[row, j]
            ss = ptxpy.fma(v, v, ss)
        scale = ptxpy.rsqrt(block_sum(ss, THREADS // 32) / f32(cols) + eps)
        for j in range(t, cols, THREADS):
            out[row, j] = x[row, j] * scale * w[j]


def launch_shape(cols: int) -> tuple[int, int]:
    """(THREADS, CACHE) for rows of `cols` floats: the fewest threads whose registers hold the
    row (CACHE float4s each, at most MAX_CACHE), else LONG_ROW_THREADS reading the row twice."""
    if cols % 4 == 0:
        for threads in THREAD_CHOICES:
            per_thread = ptxpy.cdiv(cols, threads * 4)
            if per_thread <= MAX_CACHE:
                return threads, per_thread
    return LONG_ROW_THREADS, 0


def rms_norm(x, w, eps=EPS):
    """RMS norm of each row of x (any shape). Picks the kernel's specialisation from the row
    length (`launch_shape`); each (CACHE, THREADS) is its own compiled kernel with only the
    registers it needs."""
    threads, cache = launch_shape(x.shape[1])
    return rms_norm_kernel(x, w, eps, CACHE=cache, THREADS=threads)


def reference(x, w, eps=EPS):
    return x * jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + eps) * w


def main(rows: int | None = None, cols: int | None = None) -> None:
    on_gpu = jax.default_backend() == "gpu"
    if rows is None:
        rows = 2048 if on_gpu else 64
    if cols is None:
        cols = 8192 if on_gpu else 1000
    keys = jax.random.split(jax.random.key(0), 4)

    # pyptx's shape: 16 rows of 512, one warp per row.
    x = jax.random.normal(keys[0], (16, 512), jnp.float32)
    w = 1.0 + 0.1 * jax.random.normal(keys[1], (512,), jnp.float32)
    out = jax.jit(rms_norm_small)(x, w)
    np.testing.assert_allclose(np.asarray(out), np.asarray(reference(x, w)), rtol=2e-5, atol=2e-5)

    # The general kernel: rows held in registers, rows of odd length, rows too long for them.
    longest = max(THREAD_CHOICES) * 4 * MAX_CACHE
    for r, c in ((rows, cols), (rows, cols + 3), (rows if on_gpu else 4, longest + 4)):
        x = jax.random.normal(keys[2], (r, c), jnp.float32)
        w = 1.0 + 0.1 * jax.random.normal(keys[3], (c,), jnp.float32)
        out = jax.jit(rms_norm)(x, w, EPS)
        np.testing.assert_allclose(np.asarray(out), np.asarray(reference(x, w)), rtol=2e-5, atol=2e-5)
    print(f"rms_norm: 16 x 512 (one warp per row) and {rows} x {cols}, {rows} x {cols + 3}, "
          f"{r} x {longest + 4} (one block per row): match jax.numpy")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=None)
    parser.add_argument("--cols", type=int, default=None)
    args = parser.parse_args()
    main(args.rows, args.cols)
