"""The tensor-core matmul with its tiles fed by `ptxpy.cp_async`, in a few shapes, beside XLA's
f32 `jnp.dot` (tf32) and, with --baseline, another kernel (session 38's register-prefetching
example): TFLOP/s at 4096^3 and 8192^3.

Each variant is examples/matmul_tf32.py with other module constants (written to a temporary
module); every one is checked against float64 NumPy at 2048^3 first. On the GPU only:

    python benchmarks/probes/matmul_async_probe.py [--json FILE]
"""
import argparse
import importlib.util
import json
import re
import sys
import tempfile
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "matmul_tf32.py"
# (name, {constant: value}); the example's own constants first
VARIANTS = [("example", {}), ("A by scalar loads", {"LDMATRIX": 0}), ("stages 4", {"STAGES": 4}),
            ("warp 64x32, block 128x128", {"BN": 128, "WN": 32})]


def variant(name: str, constants: dict, folder: Path, source: Path = EXAMPLE):
    text = source.read_text()
    for key, value in constants.items():
        text, count = re.subn(rf"^{key} = \d+", f"{key} = {value}", text, flags=re.M)
        assert count == 1, key
    path = folder / f"variant_{abs(hash(name))}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return jax.jit(module.matmul_tf32)


def tflops(fn, x, y, rounds=3, reps=20) -> float:
    fn(x, y).block_until_ready()
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(reps):
            out = fn(x, y)
        out.block_until_ready()
        best = min(best, (time.perf_counter() - start) / reps)
    return 2 * x.shape[0] * x.shape[1] * y.shape[1] / best / 1e12


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", default=None)
    parser.add_argument("--baseline", default=None, help="another matmul_tf32 module to time")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    check = 2048
    xc = rng.standard_normal((check, check), dtype=np.float32)
    yc = rng.standard_normal((check, check), dtype=np.float32)
    exact = xc.astype(np.float64) @ yc.astype(np.float64)
    scale = np.abs(xc).astype(np.float64) @ np.abs(yc).astype(np.float64)
    sizes = [4096, 8192]
    inputs = {n: (jnp.asarray(rng.standard_normal((n, n), dtype=np.float32)),
                  jnp.asarray(rng.standard_normal((n, n), dtype=np.float32))) for n in sizes}
    results = {"card": jax.devices()[0].device_kind, "variants": {}}
    with tempfile.TemporaryDirectory() as folder:
        systems = [("XLA jnp.dot (tf32)", jax.jit(jnp.dot))]
        systems += [(name, variant(name, constants, Path(folder))) for name, constants in VARIANTS]
        if args.baseline:
            systems.append(("baseline", variant("baseline", {}, Path(folder), Path(args.baseline))))
        for name, fn in systems:
            z = np.asarray(fn(jnp.asarray(xc), jnp.asarray(yc)))
            error = float(np.max(np.abs(z - exact) / scale))
            row = {"error": error}
            for n in sizes:
                row[str(n)] = round(tflops(fn, *inputs[n]), 1)
            results["variants"][name] = row
            print(f"{name:22s} error {error:.1e}  " +
                  "  ".join(f"{n}^3 {row[str(n)]:6.1f} TFLOP/s" for n in sizes), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    sys.exit(main())
