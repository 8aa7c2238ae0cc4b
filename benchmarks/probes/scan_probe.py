"""examples/scan_single_pass.py (a decoupled look-back prefix sum of i32) in a few block shapes,
beside examples/prefix_scan.py's three-kernel scan, XLA's `jnp.cumsum` and XLA's copy of the
vector (`x + 1`, the bandwidth ceiling of a pass that reads and writes every element once).
Each result is first compared with `jnp.cumsum`'s. On a GPU only:

    python benchmarks/probes/scan_probe.py [--sizes 20 24 26 28] [--only NAME ...]
"""
import argparse
import sys
import tempfile
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from matmul_async_probe import variant  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
sys.path.insert(0, str(EXAMPLES))
import prefix_scan  # noqa: E402

# (name, {module constant: value}) of examples/scan_single_pass.py
VARIANTS = [("example", {}), ("ITEMS 8", {"ITEMS": 8}), ("ITEMS 32", {"ITEMS": 32}),
            ("BLOCK 128", {"BLOCK": 128}), ("BLOCK 512, ITEMS 8", {"BLOCK": 512, "ITEMS": 8}),
            ("block index", {"IN_START_ORDER": 0}),
            ("block index, BLOCK 128", {"IN_START_ORDER": 0, "BLOCK": 128})]


def seconds(f, x, rounds: int = 5, reps: int = 20) -> float:
    f(x).block_until_ready()
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(reps):
            out = f(x)
        out.block_until_ready()
        best = min(best, (time.perf_counter() - start) / reps)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[20, 24, 26, 28],
                        help="log2 of the vector lengths")
    parser.add_argument("--only", nargs="+", default=None, help="variant names")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp())
    systems = [(name, variant(name, constants, folder, EXAMPLES / "scan_single_pass.py",
                              "cumsum"))
               for name, constants in VARIANTS if args.only is None or name in args.only]
    systems += [("prefix_scan.py", jax.jit(prefix_scan.cumsum)),
                ("XLA cumsum", jax.jit(jnp.cumsum)), ("XLA copy (x + 1)", jax.jit(lambda x: x + 1))]
    for log2 in args.sizes:
        n = 1 << log2
        x = jax.random.randint(jax.random.key(log2), (n,), -100, 100, jnp.int32)
        want = np.asarray(jnp.cumsum(x))
        rates = []
        for name, f in systems:
            if not name.startswith("XLA copy"):
                np.testing.assert_array_equal(np.asarray(f(x)), want, err_msg=name)
            s = seconds(f, x)
            rates.append(f"{name} {s * 1e6:.1f} us {8 * n / s / 1e12:.2f} TB/s")
        print(f"2^{log2} i32: " + "; ".join(rates), flush=True)


if __name__ == "__main__":
    main()
