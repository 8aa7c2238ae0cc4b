"""Layer normalisation, out = (x - mean) / sqrt(var + eps) * gamma + beta, over each row.

One block of 256 threads per row, the row read twice (the second time from L1/L2):

1. Each thread sums d = x - K and d * d over its strided float4s, where K = x[r, 0] is a shift
   taken from the row itself: var = E[d^2] - E[d]^2 then does not lose its digits to
   cancellation when the mean is large compared with the spread (the "shifted data" algorithm),
   and both sums come out of one pass.
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
from ptxpy import Array, f32

BLOCK = 256
WARPS = BLOCK // 32
EPS = 1e-5


@ptxpy.func
def block_sum2(a: f32, b: f32) -> tuple[f32, f32]:
    """Sums of `a` and of `b` over the block, returned to every thread."""
    part_a = ptxpy.shared_array(WARPS, f32)
    part_b = ptxpy.shared_array(WARPS, f32)
    t = ptxpy.thread_idx.x
    a = ptxpy.warp_sum(a)
    b = ptxpy.warp_sum(b)
    if t % 32 == 0:
        part_a[t // 32] = a
        part_b[t // 32] = b
    ptxpy.syncthreads()
    # Every warp reads the WARPS partial sums (a broadcast) and finishes the sum with shuffles:
    # no second barrier needed.
    lane = t % 32
    a = part_a[lane] if lane < WARPS else 0.0
    b = part_b[lane] if lane < WARPS else 0.0
    return ptxpy.warp_sum(a), ptxpy.warp_sum(b)


@ptxpy.jit(out_shape=lambda x, gamma, beta, eps: x, grid=lambda x, gamma, beta, eps: (x.shape[0],),
           block=BLOCK)
def layer_norm(x: Array[f32, 2], gamma: Array[f32], beta: Array[f32], eps: f32, out: Array[f32, 2]):
    row = ptxpy.block_idx.x
    cols = x.shape[1]
    t = ptxpy.thread_idx.x
    vector = cols % 4 == 0
    shift = x[row, 0]
    s = 0.0
    ss = 0.0
    if vector:
        for j in range(t * 4, cols, BLOCK * 4):
            a, b, c, d = x[row, j:j + 4]
            a -= shift
            b -= shift
            c -= shift
            d -= shift
            s += (a + b) + (c + d)
            ss = ptxpy.fma(a, a, ptxpy.fma(b, b, ptxpy.fma(c, c, ptxpy.fma(d, d, ss))))
    else:
        for j in range(t, cols, BLOCK):
            a = x[row, j] - shift
            s += a
            ss = ptxpy.fma(a, a, ss)
    s, ss = block_sum2(s, ss)
    inv_n = 1.0 / f32(cols)
    mean_d = s * inv_n                                   # mean of x - shift
    var = max(ss * inv_n - mean_d * mean_d, 0.0)
    rstd = ptxpy.rsqrt(var + eps)
    mean = shift + mean_d
    if vector:
        for j in range(t * 4, cols, BLOCK * 4):
            a, b, c, d = x[row, j:j + 4]
            g0, g1, g2, g3 = gamma[j:j + 4]
            b0, b1, b2, b3 = beta[j:j + 4]
            out[row, j:j + 4] = (ptxpy.fma((a - mean) * rstd, g0, b0),
                                 ptxpy.fma((b - mean) * rstd, g1, b1),
                                 ptxpy.fma((c - mean) * rstd, g2, b2),
                                 ptxpy.fma((d - mean) * rstd, g3, b3))
    else:
        for j in range(t, cols, BLOCK):
            out[row, j] = ptxpy.fma((x[row, j] - mean) * rstd, gamma[j], beta[j])


def reference(x, gamma, beta, eps=EPS):
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.var(x, axis=-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + eps) * gamma + beta


def main(rows: int | None = None, cols: int | None = None) -> None:
    on_gpu = jax.default_backend() == "gpu"
    rows = rows or (4096 if on_gpu else 64)
    cols = cols or (4096 if on_gpu else 1000)
    f = jax.jit(layer_norm)
    for c in (cols, cols + 3):
        k = jax.random.split(jax.random.key(c), 3)
        x = 100.0 + 3.0 * jax.random.normal(k[0], (rows, c), jnp.float32)   # a large mean
        gamma = 1.0 + 0.1 * jax.random.normal(k[1], (c,), jnp.float32)
        beta = 0.1 * jax.random.normal(k[2], (c,), jnp.float32)
        out = f(x, gamma, beta, EPS)
        np.testing.assert_allclose(np.asarray(out), np.asarray(reference(x, gamma, beta)),
                                   rtol=1e-4, atol=1e-4)
    print(f"layer_norm of {rows} x {cols} and {rows} x {cols + 3}: matches jax.numpy")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=None)
    parser.add_argument("--cols", type=int, default=None)
    args = parser.parse_args()
    main(args.rows, args.cols)
