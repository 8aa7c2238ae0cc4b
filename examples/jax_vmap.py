"""ptxpy kernels under `jax.vmap`.

The Pallas tutorial ends its matmul section with `jax.vmap(matmul)` over a batch of matrix
pairs. A ptxpy kernel is batched the same way. When the kernel does not use the grid's z axis
itself (no `block_idx.z`, `program_id(2)`, ...), ptxpy recompiles it with the batch as grid
axis z: one launch covers the whole batch, each block offsetting its arrays to its item;
otherwise the items run one launch after another (docs/jax.md).

Three cases:
- `jax.vmap(matmul)`: x and y both batched, the tutorial's example (matmul.py's kernel);
- `jax.vmap(rms_norm, in_axes=(0, None, None))`: a batch of activations sharing one weight
  vector: the weight is passed once, not broadcast;
- nested `jax.vmap(jax.vmap(softmax))`: two batch levels flatten into one grid axis.

`python examples/jax_vmap.py [--batch B --size N]` checks each against jax.numpy.
"""
import argparse
import os
import sys

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from matmul import matmul       # noqa: E402  (examples/matmul.py)
from rms_norm import rms_norm   # noqa: E402  (examples/rms_norm.py)
from softmax import softmax     # noqa: E402  (examples/softmax.py)


def main(batch: int | None = None, size: int | None = None) -> None:
    on_gpu = jax.default_backend() == "gpu"
    batch = batch or 4
    size = size or (1024 if on_gpu else 128)
    k = jax.random.split(jax.random.key(0), 5)

    # The tutorial's batched matmul: (B, N, N) @ (B, N, N).
    x = jax.random.normal(k[0], (batch, size, size), jnp.float32)
    y = jax.random.normal(k[1], (batch, size, size), jnp.float32)
    z = jax.jit(jax.vmap(matmul))(x, y)
    want = jnp.einsum("bij,bjk->bik", x, y, precision=jax.lax.Precision.HIGHEST)
    np.testing.assert_allclose(np.asarray(z), np.asarray(want), rtol=1e-4, atol=1e-3)

    # A batch of (rows, size) activations normalised with one shared weight vector.
    a = jax.random.normal(k[2], (batch, 32, size), jnp.float32)
    w = 1.0 + 0.1 * jax.random.normal(k[3], (size,), jnp.float32)
    out = jax.jit(jax.vmap(rms_norm, in_axes=(0, None, None)))(a, w, 1e-6)
    want = a * jax.lax.rsqrt(jnp.mean(a * a, axis=-1, keepdims=True) + 1e-6) * w
    np.testing.assert_allclose(np.asarray(out), np.asarray(want), rtol=2e-5, atol=2e-5)

    # Two levels of vmap over a (2, B, rows, size) array of logits.
    s = jax.random.normal(k[4], (2, batch, 16, size), jnp.float32)
    out = jax.jit(jax.vmap(jax.vmap(softmax)))(s)
    np.testing.assert_allclose(np.asarray(out), np.asarray(jax.nn.softmax(s, axis=-1)),
                               rtol=1e-5, atol=1e-7)
    print(f"jax_vmap: batched matmul ({batch} x {size} x {size}), rms_norm with a shared weight, "
          "nested vmap of softmax: match jax.numpy")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=None)
    parser.add_argument("--size", type=int, default=None)
    args = parser.parse_args()
    main(args.batch, args.size)
