"""On a GPU: a shared array sized at launch (one row of the input, from 400 bytes to 200 KB)
through JAX, eager, in jax.jit and under jax.vmap, checked against NumPy; prints what it ran.
One compile serves every row length; each size past 48 KB raises the function's dynamic
shared-memory limit (its own kernel image) and is stream-captured under jax.jit."""
import jax
import jax.numpy as jnp
import numpy as np

import ptxpy
from ptxpy import Array, f32


@ptxpy.jit(out_shape=lambda x: x, grid=lambda x: x.shape[0], block=lambda x: min(1024, x.shape[1]))
def row_flip(x: Array[f32, 2], out: Array[f32, 2]):
    row = ptxpy.shared_array(x.shape[1], f32)
    r = ptxpy.block_idx.x
    t = ptxpy.thread_idx.x
    n = x.shape[1]
    for k in range(t, n, ptxpy.block_dim.x):
        row[k] = x[r, k]
    ptxpy.syncthreads()
    for k in range(t, n, ptxpy.block_dim.x):
        out[r, k] = row[n - 1 - k] + 1.0


def main() -> None:
    rng = np.random.default_rng(0)
    for rows, cols in [(64, 100), (16, 12288), (8, 12289), (8, 50000), (132, 1024)]:
        x = rng.standard_normal((rows, cols)).astype(np.float32)
        expected = x[:, ::-1] + np.float32(1)
        np.testing.assert_array_equal(np.asarray(row_flip(jnp.asarray(x))), expected)
        twice = jax.jit(lambda v: row_flip(row_flip(v)))
        np.testing.assert_array_equal(np.asarray(twice(jnp.asarray(x))),
                                      (x + np.float32(1)) + np.float32(1))
        batch = np.stack([x[:4], x[4:8]])
        np.testing.assert_array_equal(np.asarray(jax.vmap(row_flip)(jnp.asarray(batch))),
                                      batch[:, :, ::-1] + np.float32(1))
        print(f"{jax.devices()[0].device_kind}: rows of {cols} f32 ({cols * 4} bytes of shared "
              "memory): eager, jit and vmap match NumPy")
    ptx = row_flip.ptx(jnp.zeros((2, 8), jnp.float32))
    print("\n".join(line for line in ptx.splitlines() if line.startswith("//   ")))


if __name__ == "__main__":
    main()
