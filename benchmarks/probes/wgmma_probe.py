"""The warpgroup (wgmma) bf16 matmul in a few shapes, beside XLA's bf16 `jnp.dot` with f32
results and the mma.sync example (examples/matmul_bf16.py): TFLOP/s at 4096^3 and 8192^3.
With --tf32, the same for examples/matmul_tf32_wgmma.py beside XLA's f32 `jnp.dot` (tf32) and
examples/matmul_tf32.py.

Each variant is the example with other module constants (written to a temporary module of its
own name); every one is checked against float64 NumPy at 2048^3 first. On a Hopper GPU only:

    python benchmarks/probes/wgmma_probe.py [--tf32] [--json FILE] [--only NAME ...]
"""
import argparse
import json
import sys
import tempfile
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from matmul_async_probe import measure, variant  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
sys.path.insert(0, str(EXAMPLES))     # (matmul_tf32_wgmma imports matmul_wgmma)
# (name, {constant: value}); the example's own constants first
VARIANTS = [("example", {}), ("group 0", {"GROUP": 0}), ("group 8", {"GROUP": 8}),
            ("group 32", {"GROUP": 32}), ("inflight 0", {"INFLIGHT": 0}),
            ("BN 128, stages 3, inflight 0", {"BN": 128, "STAGES": 3, "INFLIGHT": 0})]
TF32_VARIANTS = [("tf32 example", {}), ("tf32 inflight 0", {"INFLIGHT": 0}),
                 ("tf32 stages 3, inflight 0", {"STAGES": 3, "INFLIGHT": 0}),
                 ("tf32 group 8", {"GROUP": 8}),
                 ("tf32 BN 128, stages 3", {"BN": 128, "STAGES": 3}),
                 ("tf32 BN 128, stages 3, inflight 0", {"BN": 128, "STAGES": 3, "INFLIGHT": 0})]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", default=None)
    parser.add_argument("--only", nargs="*", default=None, help="variant names to time")
    parser.add_argument("--tf32", action="store_true", help="the f32 (tf32) kernels instead")
    args = parser.parse_args()
    dtype = jnp.float32 if args.tf32 else jnp.bfloat16
    rng = np.random.default_rng(0)
    check = 2048
    xc = rng.standard_normal((check, check), dtype=np.float32).astype(dtype)
    yc = rng.standard_normal((check, check), dtype=np.float32).astype(dtype)
    sizes = [4096, 8192]
    inputs = {n: (jnp.asarray(rng.standard_normal((n, n), dtype=np.float32), dtype),
                  jnp.asarray(rng.standard_normal((n, n), dtype=np.float32), dtype))
              for n in sizes}
    results = {"card": jax.devices()[0].device_kind, "variants": {}}
    name = "matmul_tf32_wgmma" if args.tf32 else "matmul_wgmma"
    chosen = [v for v in (TF32_VARIANTS if args.tf32 else VARIANTS)
              if args.only is None or v[0] in args.only]
    with tempfile.TemporaryDirectory() as folder:
        if args.tf32:
            systems = [("XLA jnp.dot (tf32)", jax.jit(jnp.dot)),
                       ("mma.sync example", variant("mma", {}, Path(folder),
                                                    EXAMPLES / "matmul_tf32.py", "matmul_tf32"))]
        else:
            systems = [("XLA jnp.dot (bf16, f32 results)",
                        jax.jit(lambda a, b: jnp.dot(a, b, preferred_element_type=jnp.float32))),
                       ("mma.sync example", variant("mma", {}, Path(folder),
                                                    EXAMPLES / "matmul_bf16.py", "matmul_bf16"))]
        systems += [(label, variant(label, constants, Path(folder), EXAMPLES / f"{name}.py", name))
                    for label, constants in chosen]
        measure(systems, (xc, yc), inputs, results, width=30)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    sys.exit(main())
