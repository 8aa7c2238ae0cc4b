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


def variant(name: str, constants: dict, folder: Path, source: Path = EXAMPLE,
            kernel: str = "matmul_tf32"):
    text = source.read_text()
    for key, value in constants.items():
        text, count = re.subn(rf"^{key} = \d+", f"{key} = {value}", text, flags=re.M)
        assert count == 1, key
    path = folder / f"variant_{abs(hash(name))}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return jax.jit(getattr(module, kernel))


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


def measure(systems: list, check: tuple, inputs: dict, results: dict, width: int = 22) -> None:
    """Check each (name, jitted matmul) against float64 NumPy on `check` (x, y), then time it
    on each size's `inputs`; a row per system into results["variants"] and printed. A system
    that fails to compile or launch gets its error instead."""
    x64, y64 = (np.asarray(a).astype(np.float64) for a in check)
    exact, scale = x64 @ y64, np.abs(x64) @ np.abs(y64)
    for name, fn in systems:
        try:
            z = np.asarray(fn(jnp.asarray(check[0]), jnp.asarray(check[1])))
        except Exception as err:
            print(f"{name:{width}s} failed: {type(err).__name__}: {err}", flush=True)
            results["variants"][name] = {"failed": f"{type(err).__name__}: {err}"}
            continue
        row = {"error": float(np.max(np.abs(z - exact) / scale))}
        for n, (x, y) in inputs.items():
            row[str(n)] = round(tflops(fn, x, y), 1)
        results["variants"][name] = row
        print(f"{name:{width}s} error {row['error']:.1e}  " +
              "  ".join(f"{n}^3 {row[str(n)]:6.1f} TFLOP/s" for n in inputs), flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", default=None)
    parser.add_argument("--baseline", default=None, help="another matmul_tf32 module to time")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    check = 2048
    xc = rng.standard_normal((check, check), dtype=np.float32)
    yc = rng.standard_normal((check, check), dtype=np.float32)
    sizes = [4096, 8192]
    inputs = {n: (jnp.asarray(rng.standard_normal((n, n), dtype=np.float32)),
                  jnp.asarray(rng.standard_normal((n, n), dtype=np.float32))) for n in sizes}
    results = {"card": jax.devices()[0].device_kind, "variants": {}}
    with tempfile.TemporaryDirectory() as folder:
        systems = [("XLA jnp.dot (tf32)", jax.jit(jnp.dot))]
        systems += [(name, variant(name, constants, Path(folder))) for name, constants in VARIANTS]
        if args.baseline:
            systems.append(("baseline", variant("baseline", {}, Path(folder), Path(args.baseline))))
        measure(systems, (xc, yc), inputs, results)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    sys.exit(main())
