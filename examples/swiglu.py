"""SwiGLU, the gated activation of LLaMA-style MLPs: out = silu(gate) * up, silu(a) = a / (1 + exp(-a)).

The MLP's first matmul produces gate and up side by side, x = [gate | up] of shape (M, 2H);
this kernel reads both halves and writes out of shape (M, H) in one pass. It is purely
memory-bound: 12 bytes move per output element, so what matters is that every access is a
coalesced 128-bit vector and that the arithmetic stays cheap:

- `fast_math=True` makes `/` a `div.approx.f32` and `math.exp` an `ex2.approx` (CUDA's
  `--use_fast_math`), a handful of instructions instead of the correctly rounded versions;
- the grid is 2-D: blockIdx.y picks rows (looping when there are more than 65535) and blockIdx.x
  columns, so no thread divides by H to find its row.

`python examples/swiglu.py [--rows M --hidden H]` checks the result against jax.nn.silu.
"""
import argparse
import math

import jax
import jax.numpy as jnp
import numpy as np

import ptxpy
from ptxpy import Array, f32

BLOCK = 256
MAX_ROW_BLOCKS = 65535          # CUDA's limit on gridDim.y


def _grid(x):
    h = x.shape[1] // 2
    per_block = BLOCK * 4 if h % 4 == 0 else BLOCK
    return (ptxpy.cdiv(h, per_block), min(x.shape[0], MAX_ROW_BLOCKS))


@ptxpy.func
def silu(a: f32) -> f32:
    return a / (1.0 + math.exp(-a))


@ptxpy.jit(out_shape=lambda x: jax.ShapeDtypeStruct((x.shape[0], x.shape[1] // 2), x.dtype),
           grid=_grid, block=BLOCK, fast_math=True)
def swiglu(x: Array[f32, 2], out: Array[f32, 2]):
    rows = x.shape[0]
    h = out.shape[1]
    if h % 4 == 0:
        j = (ptxpy.block_idx.x * BLOCK + ptxpy.thread_idx.x) * 4
        if j < h:
            ju = h + j                 # the matching `up` column
            # A `while` loop rather than range(block_idx.y, rows, grid_dim.y): with a run-time
            # step, range() first computes its trip count (an integer division per thread), which
            # this grid-stride loop, one or two rows per thread, does not need.
            r = ptxpy.block_idx.y
            while r < rows:
                g0, g1, g2, g3 = x[r, j:j + 4]
                u0, u1, u2, u3 = x[r, ju:ju + 4]
                out[r, j:j + 4] = (silu(g0) * u0, silu(g1) * u1, silu(g2) * u2, silu(g3) * u3)
                r += ptxpy.grid_dim.y
    else:
        # H not a multiple of 4: rows are not 16-byte aligned, one element per thread.
        j = ptxpy.block_idx.x * BLOCK + ptxpy.thread_idx.x
        if j < h:
            r = ptxpy.block_idx.y
            while r < rows:
                out[r, j] = silu(x[r, j]) * x[r, h + j]
                r += ptxpy.grid_dim.y


def reference(x):
    gate, up = jnp.split(x, 2, axis=-1)
    return jax.nn.silu(gate) * up


def main(rows: int | None = None, hidden: int | None = None) -> None:
    on_gpu = jax.default_backend() == "gpu"
    rows = rows or (4096 if on_gpu else 32)
    hidden = hidden or (11008 if on_gpu else 1000)
    f = jax.jit(swiglu)
    for h in (hidden, hidden + 1):
        x = 3.0 * jax.random.normal(jax.random.key(h), (rows, 2 * h), jnp.float32)
        np.testing.assert_allclose(np.asarray(f(x)), np.asarray(reference(x)), rtol=1e-5, atol=1e-6)
    print(f"swiglu of ({rows}, 2 x {hidden}) and ({rows}, 2 x {hidden + 1}): matches jax.numpy")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=None)
    parser.add_argument("--hidden", type=int, default=None)
    args = parser.parse_args()
    main(args.rows, args.hidden)
