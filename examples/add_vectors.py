"""Adding two vectors: the first program of the Pallas tutorial ("Pallas Quickstart"), in ptxpy.

Pallas writes it as a whole-array operation on refs (`o_ref[...] = x_ref[...] + y_ref[...]`)
and lets the compiler split the work. In ptxpy the body runs once per GPU thread, as in CUDA,
so the kernel says which elements each thread adds. Here every thread adds four neighbouring
elements with one 128-bit load from each input and one 128-bit store (`x[i:i + 4]`), which is
what an elementwise kernel needs to reach full memory bandwidth on an H100; the threads of a
warp touch 512 consecutive bytes, so every access is coalesced.

`python examples/add_vectors.py [--size N]` checks the result against jax.numpy.
"""
import argparse

import jax
import jax.numpy as jnp
import numpy as np

import ptxpy
from ptxpy import Array, f32

BLOCK = 256          # threads per block
VEC = 4              # elements per thread: one ld.global.v4.f32 per input


@ptxpy.jit(out_shape=lambda x, y: x,
           grid=lambda x, y: (ptxpy.cdiv(x.shape[0], BLOCK * VEC),), block=BLOCK)
def add_vectors(x: Array[f32], y: Array[f32], out: Array[f32]):
    n = x.shape[0]
    i = ptxpy.global_id(0) * VEC            # first of this thread's four elements
    if i + VEC <= n:
        # Fast path: four elements in one vector load per input and one vector store.
        x0, x1, x2, x3 = x[i:i + VEC]
        y0, y1, y2, y3 = y[i:i + VEC]
        out[i:i + VEC] = (x0 + y0, x1 + y1, x2 + y2, x3 + y3)
    else:
        # The last thread may own a partial group (n not a multiple of 4): element by element.
        for j in range(i, n):
            out[j] = x[j] + y[j]


def main(size: int | None = None) -> None:
    if size is None:
        size = 1 << 26 if jax.default_backend() == "gpu" else 100_003
    # The tutorial's own call: add_vectors(jnp.arange(8), jnp.arange(8)).
    small = jnp.arange(8, dtype=jnp.float32)
    np.testing.assert_array_equal(np.asarray(add_vectors(small, small)), np.arange(8) * 2.0)

    kx, ky = jax.random.split(jax.random.key(0))
    x = jax.random.normal(kx, (size,), jnp.float32)
    y = jax.random.normal(ky, (size,), jnp.float32)
    out = jax.jit(add_vectors)(x, y)
    np.testing.assert_array_equal(np.asarray(out), np.asarray(x + y))
    print(f"add_vectors over {size} elements: matches jax.numpy")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=None, help="vector length")
    main(parser.parse_args().size)
