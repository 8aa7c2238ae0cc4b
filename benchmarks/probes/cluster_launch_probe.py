"""The one-block TMA matmul (examples/matmul_tma_wgmma.py) launched in clusters of 2 and of 1:
what the cluster launch alone costs (GPU only; TFLOP/s as the examples time them).

    python benchmarks/probes/cluster_launch_probe.py
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples"))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import ptxpy  # noqa: E402
from matmul_tma_wgmma import BM, BN, THREADS, matmul_tma  # noqa: E402
from matmul_wgmma import tflops  # noqa: E402


def out_shape(x, y):
    return jax.ShapeDtypeStruct((x.shape[0], y.shape[1]), jnp.float32)


def grid(x, y):
    return (y.shape[1] // BN, x.shape[0] // BM)


for cluster in (2, 1):
    kernel = jax.jit(ptxpy.jit(matmul_tma.fn, out_shape=out_shape, grid=grid, block=THREADS,
                               cluster=cluster))
    for n in (4096, 8192):
        rng = np.random.default_rng(0)
        x = jnp.asarray(rng.standard_normal((n, n), dtype=np.float32), jnp.bfloat16)
        y = jnp.asarray(rng.standard_normal((n, n), dtype=np.float32), jnp.bfloat16)
        print(f"one-block kernel launched in clusters of {cluster}: {n}: "
              f"{tflops(kernel, x, y):.1f} TFLOP/s", flush=True)
