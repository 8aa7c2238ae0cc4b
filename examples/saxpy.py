"""SAXPY, out = a * x + y: the smallest complete ptxpy program.

Runs on the GPU through JAX when there is one, else on ptxpy's CPU simulator (SPEC 2.7).
`python examples/saxpy.py` checks the result against NumPy.
"""
import jax
import numpy as np

import ptxpy
from ptxpy import Array, f32

BLOCK = 256


@ptxpy.jit(out_shape=lambda x, y, a: x,
           grid=lambda x, y, a: (ptxpy.cdiv(x.shape[0], BLOCK),), block=BLOCK)
def saxpy(x: Array[f32], y: Array[f32], a: f32, out: Array[f32]):
    i = ptxpy.global_id(0)          # one thread per element
    if i < x.shape[0]:              # the last block may be partly outside the array
        out[i] = a * x[i] + y[i]


def main(n: int = 10_000) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal(n, dtype=np.float32)
    y = rng.standard_normal(n, dtype=np.float32)
    eager = saxpy(x, y, 2.0)
    jitted = jax.jit(saxpy)(x, y, 2.0)        # `a` is traced here: no new transpile per value
    expected = 2.0 * x + y
    np.testing.assert_allclose(np.asarray(eager), expected, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(np.asarray(jitted), expected, rtol=1e-6, atol=1e-6)
    where = "the CPU simulator" if saxpy._interpreting() else str(jax.devices()[0])
    print(f"saxpy over {n} elements on {where}: matches NumPy")


if __name__ == "__main__":
    main()
