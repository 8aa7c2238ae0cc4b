"""int8 matrix-vector product with exact i32 sums, y = a @ x, on `ptxpy.dp4a`.

A quantized layer's decode step: one int8 vector against an int8 weight matrix, as
`jnp.dot(a, x, preferred_element_type=jnp.int32)` computes it. Memory-bound: the kernel must
stream a's M x K bytes once, at the card's bandwidth.

- The kernel reads words of four bytes: `a` and `x` reach it as i32 arrays of K / 4 words per
  row (`jax.lax.bitcast_convert_type`, which moves no byte);
- one warp per row: each lane loads 16 bytes of the row (four words, one 128-bit load) per
  step and the matching words of x, and `ptxpy.dp4a` adds each word's four byte products to
  the lane's sum (PTX `dp4a.s32.s32`: signed bytes, an i32 sum);
- `ptxpy.warp_sum` of the lanes' i32 sums is one `redux.sync.add.s32`, and lane 0 stores it.

On an H100 it streams a 16384 x 16384 matrix at 2.85 TB/s, as XLA's int8 `jnp.dot` does
(2.86; BENCHMARKS.md, session 46).

`python examples/gemv_int8.py [--rows M] [--cols K]` checks y against NumPy's int64 product
(K a multiple of 16) and, on a GPU, times it beside XLA's int8 `jnp.dot`.
"""
import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

import ptxpy
from ptxpy import Array, i32

WARPS = 8                     # rows per block: one warp each
THREADS = 32 * WARPS
STEP = 4 * 32                 # words of a row the warp reads per step: four per lane


@ptxpy.jit(out_shape=lambda a, x: jax.ShapeDtypeStruct((a.shape[0],), jnp.int32),
           grid=lambda a, x: (ptxpy.cdiv(a.shape[0], WARPS),), block=THREADS)
def gemv_words(a: Array[i32, 2], x: Array[i32], y: Array[i32]):
    """y[r] = the dot product of the bytes of a[r, :] and x (K / 4 words each)."""
    row = ptxpy.block_idx.x * WARPS + ptxpy.thread_idx.x // 32
    lane = ptxpy.lane_id()
    if row < a.shape[0]:
        words = a.shape[1]
        total = 0
        for j in range(4 * lane, words, STEP):
            a0, a1, a2, a3 = a[row, j:j + 4]
            x0, x1, x2, x3 = x[j:j + 4]
            total = ptxpy.dp4a(a0, x0, total)
            total = ptxpy.dp4a(a1, x1, total)
            total = ptxpy.dp4a(a2, x2, total)
            total = ptxpy.dp4a(a3, x3, total)
        total = ptxpy.warp_sum(total)
        if lane == 0:
            y[row] = total


def as_words(v):
    """int8 values, last axis a multiple of 4, as i32 words of four bytes (no copy)."""
    return jax.lax.bitcast_convert_type(v.reshape(*v.shape[:-1], v.shape[-1] // 4, 4), jnp.int32)


@jax.jit
def gemv_int8(a, x):
    return gemv_words(as_words(a), as_words(x))


def seconds(fn, *args) -> float:
    """fn(*args)'s time: the best of five rounds of 20 calls."""
    fn(*args).block_until_ready()
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(20):
            out = fn(*args)
        out.block_until_ready()
        best = min(best, (time.perf_counter() - start) / 20)
    return best


def main(rows: int | None = None, cols: int | None = None) -> None:
    on_gpu = jax.default_backend() == "gpu"
    rows = rows or (16384 if on_gpu else 37)
    cols = cols or (16384 if on_gpu else 1024)
    assert cols % 16 == 0, "K must be a multiple of 16 (16-byte loads of a's rows)"
    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, (rows, cols), dtype=np.int8)
    x = rng.integers(-128, 128, cols, dtype=np.int8)
    y = np.asarray(gemv_int8(jnp.asarray(a), jnp.asarray(x)))
    expected = a.astype(np.int64) @ x.astype(np.int64)
    np.testing.assert_array_equal(y, expected)
    msg = f"gemv_int8 of a {rows} x {cols} int8 matrix: matches NumPy's int64 product exactly"
    if on_gpu:
        aj, xj = jnp.asarray(a), jnp.asarray(x)
        xla = jax.jit(lambda m, v: jnp.dot(m, v, preferred_element_type=jnp.int32))
        np.testing.assert_array_equal(np.asarray(xla(aj, xj)), expected)
        for name, fn in (("ptxpy", gemv_int8), ("XLA's int8 jnp.dot", xla)):
            msg += f"; {name} {rows * cols / seconds(fn, aj, xj) / 1e12:.2f} TB/s of a"
    print(msg)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=None, help="M, the rows of a")
    parser.add_argument("--cols", type=int, default=None, help="K, a multiple of 16")
    args = parser.parse_args()
    main(args.rows, args.cols)
