"""RMS norm of a few long rows: each row over a thread-block cluster of 8 blocks
(examples/rms_norm_cluster.py) beside one block a row (examples/rms_norm.py) and XLA's
`x * rsqrt(mean(x * x) + eps) * w`. TB/s counting x read once and out written once (w is
small), from CUPTI durations (benchmarks/kernels.py's `_profiled_time`); every result is checked
against jax.numpy first. On the GPU only (sm_90):

    python benchmarks/probes/cluster_probe.py [--json FILE]
"""
import argparse
import json
import os
import sys

import jax
import jax.numpy as jnp
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, ".."), os.path.join(HERE, "..", "..", "examples")]
from kernels import _profiled_time  # noqa: E402
import rms_norm  # noqa: E402
import rms_norm_cluster  # noqa: E402

SHAPES = ((8, 262144), (16, 131072), (32, 131072), (64, 65536), (128, 32768), (1024, 16384))


def xla(x, w):
    return rms_norm_cluster.reference(x, w, rms_norm_cluster.EPS)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    systems = {"cluster of 8": lambda x, w: rms_norm_cluster.rms_norm(x, w),
               "block a row": lambda x, w: rms_norm.rms_norm(x, w, rms_norm.EPS),
               "XLA": xla}
    results = []
    for rows, cols in SHAPES:
        keys = jax.random.split(jax.random.key(rows), 2)
        x = jax.random.normal(keys[0], (rows, cols), jnp.float32)
        w = 1.0 + 0.1 * jax.random.normal(keys[1], (cols,), jnp.float32)
        ref = np.asarray(xla(x, w))
        row = {"rows": rows, "cols": cols}
        for name, fn in systems.items():
            out = np.asarray(jax.jit(fn)(x, w))
            np.testing.assert_allclose(out, ref, rtol=2e-5, atol=2e-5)
            seconds = _profiled_time(lambda a, b: fn(a, b), [x, w])
            row[name] = 2 * x.size * 4 / seconds / 1e12
        results.append(row)
        print(f"{rows:5d} x {cols:6d}: " + ", ".join(f"{name} {row[name]:.3f}"
                                                    for name in systems) + " TB/s", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": jax.devices()[0].device_kind, "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
