"""One call each of examples/matmul_tma_cluster.py's kernel and of the one-block TMA matmul at
4096^3, for Nsight Compute to compare (GPU only):

    ncu --kernel-name regex:matmul_tma --section SpeedOfLight --section MemoryWorkloadAnalysis \\
        --section WarpStateStats python benchmarks/probes/cluster_ncu.py
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples"))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from matmul_tma_cluster import matmul_tma_cluster  # noqa: E402
from matmul_tma_wgmma import matmul_tma  # noqa: E402

N = 4096
rng = np.random.default_rng(0)
x = jnp.asarray(rng.standard_normal((N, N), dtype=np.float32), jnp.bfloat16)
y = jnp.asarray(rng.standard_normal((N, N), dtype=np.float32), jnp.bfloat16)
jax.block_until_ready(jax.jit(matmul_tma_cluster)(x, y))
jax.block_until_ready(jax.jit(matmul_tma)(x, y))
