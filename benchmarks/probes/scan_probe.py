"""examples/scan_single_pass.py (a decoupled look-back prefix sum of i32) in a few block shapes,
and without its look-back (wrong sums: the data path's own time),
beside examples/prefix_scan.py's three-kernel scan, XLA's `jnp.cumsum` and XLA's copy of the
vector (`x + 1`, the bandwidth ceiling of a pass that reads and writes every element once).
Each result is first compared with `jnp.cumsum`'s. On a GPU only:

    python benchmarks/probes/scan_probe.py [--sizes 20 24 26 28] [--only NAME ...] [--source FILE ...]

`--source benchmarks/probes/scan_striped.py` times the scan of session 48 (flag and sum in two
words, `store_release` / `load_acquire`) with each thread's elements in four coalesced runs;
`--source` takes several files.
"""
import argparse
import sys
import tempfile
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
sys.path.insert(0, str(EXAMPLES))
import prefix_scan  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from example_variant import load_variant  # noqa: E402

EXAMPLE = EXAMPLES / "scan_single_pass.py"
# Skips the look-back (each tile's earlier sum is 0: wrong results, not checked): what the
# example's loads, scan and stores alone take
NO_LOOKBACK = {"    if warp == 0:\n        earlier = _look_back(words, tile, aggregate)":
               "    if warp < 0:\n        earlier = 0",
               "    before += shared[WARPS + 1]\n": ""}
# (name, {module constant: value}, {source text: replacement}) of examples/scan_single_pass.py
VARIANTS = [("example", {}, {}), ("ITEMS 8", {"ITEMS": 8}, {}), ("ITEMS 32", {"ITEMS": 32}, {}),
            ("BLOCK 128", {"BLOCK": 128}, {}), ("BLOCK 256", {"BLOCK": 256}, {}),
            ("block index", {"IN_START_ORDER": 0}, {}),
            ("no look-back (wrong sums)", {}, NO_LOOKBACK)]


def variant(name: str, constants: dict, replacements: dict, folder: Path, source: Path = EXAMPLE):
    """jax.jit of the `cumsum` of a copy of `source` with other constants and text."""
    return jax.jit(load_variant(source, name, constants, replacements, folder).cumsum)


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
    parser.add_argument("--source", nargs="+", default=[],
                        help="other versions of the example, timed too")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp())
    systems = [(name, variant(name, constants, replacements, folder))
               for name, constants, replacements in VARIANTS
               if args.only is None or name in args.only]
    systems += [(source, variant(source, {}, {}, folder, Path(source))) for source in args.source]
    systems += [("prefix_scan.py", jax.jit(prefix_scan.cumsum)),
                ("XLA cumsum", jax.jit(jnp.cumsum)), ("XLA copy (x + 1)", jax.jit(lambda x: x + 1))]
    for log2 in args.sizes:
        n = 1 << log2
        x = jax.random.randint(jax.random.key(log2), (n,), -100, 100, jnp.int32)
        want = np.asarray(jnp.cumsum(x))
        rates = []
        for name, f in systems:
            if not name.startswith(("XLA copy", "no look-back")):
                np.testing.assert_array_equal(np.asarray(f(x)), want, err_msg=name)
            s = seconds(f, x)
            rates.append(f"{name} {s * 1e6:.1f} us {8 * n / s / 1e12:.2f} TB/s")
        print(f"2^{log2} i32: " + "; ".join(rates), flush=True)


if __name__ == "__main__":
    main()
