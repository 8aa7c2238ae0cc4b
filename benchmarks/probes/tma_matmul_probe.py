"""bf16 wgmma matmul fed by tensor copies (examples/matmul_tma_wgmma.py) against the cp.async
one (examples/matmul_wgmma.py) and XLA's `jnp.dot` (f32 results), at each size: both checked
against float64 NumPy (up to 2048) or XLA (above), then timed on a GPU.

    python benchmarks/probes/tma_matmul_probe.py [N ...]
"""
import os
import sys

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))

from matmul_tma_wgmma import matmul_tma  # noqa: E402
from matmul_wgmma import matmul_wgmma, tflops  # noqa: E402


def main(sizes: list[int]) -> None:
    on_gpu = jax.default_backend() == "gpu"
    rng = np.random.default_rng(0)
    xla = jax.jit(lambda a, b: jnp.dot(a, b, preferred_element_type=jnp.float32))
    for size in sizes:
        xj = jnp.asarray(rng.standard_normal((size, size), dtype=np.float32), jnp.bfloat16)
        yj = jnp.asarray(rng.standard_normal((size, size), dtype=np.float32), jnp.bfloat16)
        fns = {"tma": jax.jit(matmul_tma), "cp.async": jax.jit(matmul_wgmma), "XLA": xla}
        if size <= 2048:
            x, y = np.asarray(xj).astype(np.float64), np.asarray(yj).astype(np.float64)
            exact, scale = x @ y, np.abs(x) @ np.abs(y)
            for name in ("tma", "cp.async"):
                error = float(np.max(np.abs(np.asarray(fns[name](xj, yj)) - exact) / scale))
                print(f"{size}: {name} error {error:.1e} of sum |x||y|", flush=True)
                assert error < 2.0 ** -14, name
        else:
            reference = np.asarray(xla(xj, yj))
            for name in ("tma", "cp.async"):
                diff = float(np.max(np.abs(np.asarray(fns[name](xj, yj)) - reference)))
                print(f"{size}: {name} max |z - XLA's z| {diff:.2e}", flush=True)
        if on_gpu:
            rates = {name: tflops(fn, xj, yj) for name, fn in fns.items()}
            print(f"{size}: " + ", ".join(f"{name} {rate:.1f} TFLOP/s" for name, rate in rates.items()),
                  flush=True)


if __name__ == "__main__":
    main([int(n) for n in sys.argv[1:]] or [256])
