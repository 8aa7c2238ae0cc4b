"""RMS normalisation, out[r, :] = x[r, :] / sqrt(mean(x[r, :] ** 2) + eps) * w.

Two kernels:

- `rms_norm_warp`: pyptx's RMS norm example (B = 16 rows of N = 512), one warp per row. N is a
  `Const`, so the row's N / 32 values per lane stay in registers between the sum of squares and
  the scaling: the row is read from memory once. The lanes read 128-bit vectors, the 32 lanes of
  a warp covering 512 consecutive bytes per load, and `ptxpy.warp_sum` (five `shfl.sync.bfly`)
  adds their partial sums, leaving the total in every lane.
- `rms_norm`: the general kernel, any rows x cols (e.g. 2048 x 8192), one block of 256 threads
  per row. Each thread sums squares over a strided set of float4s; the block reduces through
  warp shuffles, one shared-memory slot per warp, and a final warp shuffle (`block_sum`); then
  the row is read a second time (now from L1/L2) and scaled. Rows whose length is not a
  multiple of 4 take a scalar path, since vector loads need 16-byte alignment.

`python examples/rms_norm.py [--rows R --cols C]` checks both against jax.numpy.
"""
import argparse

import jax
import jax.numpy as jnp
import numpy as np

import ptxpy
from ptxpy import Array, Const, f32

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

BLOCK = 256
WARPS = BLOCK // 32


@ptxpy.func
def block_sum(v: f32) -> f32:
    """The sum of `v` over the block's BLOCK threads, returned to every thread."""
    partial = ptxpy.shared_array(WARPS, f32)
    total = ptxpy.shared_array(1, f32)
    t = ptxpy.thread_idx.x
    v = ptxpy.warp_sum(v)                      # 1. within each warp, through shuffles
    if t % 32 == 0:
        partial[t // 32] = v                   # 2. one value per warp to shared memory
    ptxpy.syncthreads()
    if t < 32:                                 # 3. the first warp adds the warps' values
        s = partial[t] if t < WARPS else 0.0
        s = ptxpy.warp_sum(s)
        if t == 0:
            total[0] = s
    ptxpy.syncthreads()
    return total[0]


@ptxpy.jit(out_shape=lambda x, w, eps: x, grid=lambda x, w, eps: (x.shape[0],), block=BLOCK)
def rms_norm(x: Array[f32, 2], w: Array[f32], eps: f32, out: Array[f32, 2]):
    row = ptxpy.block_idx.x
    cols = x.shape[1]
    t = ptxpy.thread_idx.x
    ss = 0.0
    vector = cols % 4 == 0                     # the same for the whole block: no divergence
    if vector:
        for j in range(t * 4, cols, BLOCK * 4):
            a, b, c, d = x[row, j:j + 4]
            ss = ptxpy.fma(a, a, ss)
            ss = ptxpy.fma(b, b, ss)
            ss = ptxpy.fma(c, c, ss)
            ss = ptxpy.fma(d, d, ss)
    else:
        for j in range(t, cols, BLOCK):
            v = x[row, j]
            ss = ptxpy.fma(v, v, ss)
    scale = ptxpy.rsqrt(block_sum(ss) / f32(cols) + eps)
    if vector:
        for j in range(t * 4, cols, BLOCK * 4):
            a, b, c, d = x[row, j:j + 4]
            w0, w1, w2, w3 = w[j:j + 4]
            out[row, j:j + 4] = (a * scale * w0, b * scale * w1, c * scale * w2, d * scale * w3)
    else:
        for j in range(t, cols, BLOCK):
            out[row, j] = x[row, j] * scale * w[j]


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

    # The general kernel, with a vector-friendly and an odd row length.
    for c in (cols, cols + 3):
        x = jax.random.normal(keys[2], (rows, c), jnp.float32)
        w = 1.0 + 0.1 * jax.random.normal(keys[3], (c,), jnp.float32)
        out = jax.jit(rms_norm)(x, w, EPS)
        np.testing.assert_allclose(np.asarray(out), np.asarray(reference(x, w)), rtol=2e-5, atol=2e-5)
    print(f"rms_norm: 16 x 512 (one warp per row) and {rows} x {cols}, {rows} x {cols + 3} "
          "(one block per row): match jax.numpy")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=None)
    parser.add_argument("--cols", type=int, default=None)
    args = parser.parse_args()
    main(args.rows, args.cols)
