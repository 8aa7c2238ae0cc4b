"""examples/radix_sort.py with other tile and block sizes, with its tiles' digit counts published
before the ranking (EARLY = 1: counted by shared atomics first) or after the block's scans, with
at most 64 registers a thread (4 blocks an SM), and without its look-back (wrong places: the
data path's own time), beside XLA's `jnp.sort` / `jnp.argsort` / `jax.lax.sort_key_val` (with
`--pairs`: keys and i32 values) and a copy of the keys (the
bandwidth ceiling of one pass that reads and writes every key once). Each sort is first
compared with NumPy's. On a GPU only:

    python benchmarks/probes/sort_probe.py [--sizes 24 26 28] [--only NAME ...] [--argsort] [--pairs]

Rates are keys per second; "passes" is the time over the copy's (a sort moves every key once
per digit, four times, after one read to count the digits).
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
from example_variant import load_variant  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "radix_sort.py"
# Skips the look-back (each tile's earlier keys of a digit: 0; wrong places, not checked, kept
# inside the output: the next pass's keys are then not the counted ones)
NO_LOOKBACK = {"        earlier = _look_back(words, row0, tile, tid, total)\n": "        earlier = 0\n",
               "            place = moved[_digit(k, shift)] + j\n":
               "            place = min(moved[_digit(k, shift)] + j, n - 1)\n"}
# The tile's counts published after the block's two scans, as in session 50
PUBLISH_LATE = {"        if not EARLY:\n            _publish(words, row0, tile, tid, total)     # as soon as it is known\n": "",
                "        earlier = _look_back(": "        if not EARLY:\n            _publish(words, row0, tile, tid, total)\n"
                                                "        earlier = _look_back("}
# At most 64 registers a thread, so that 4 blocks fit an SM (72 without)
FOUR_BLOCKS = {"@ptxpy.jit(out_shape=_pass_outputs, block=BLOCK,":
               "@ptxpy.jit(out_shape=_pass_outputs, block=BLOCK, launch_bounds=(BLOCK, 4),"}
# (name, {module constant: value}, {source text: replacement})
VARIANTS = [("example", {}, {}), ("ITEMS 8", {"ITEMS": 8}, {}), ("ITEMS 12", {"ITEMS": 12}, {}),
            ("ITEMS 20", {"ITEMS": 20}, {}), ("ITEMS 24", {"ITEMS": 24}, {}),
            ("BLOCK 384", {"BLOCK": 384}, {}), ("BLOCK 384 ITEMS 12", {"BLOCK": 384, "ITEMS": 12}, {}),
            ("BLOCK 384 ITEMS 23", {"BLOCK": 384, "ITEMS": 23}, {}),
            ("BLOCK 512 ITEMS 12", {"BLOCK": 512, "ITEMS": 12}, {}),
            ("early counts", {"EARLY": 1}, {}), ("publish after scans", {}, PUBLISH_LATE),
            ("4 blocks an SM", {}, FOUR_BLOCKS), ("4 blocks an SM, ITEMS 12", {"ITEMS": 12}, FOUR_BLOCKS),
            ("no look-back (wrong places)", {}, NO_LOOKBACK)]


def seconds(f, x, rounds: int = 5, reps: int = 10) -> float:
    jax.block_until_ready(f(x))
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(reps):
            out = f(x)
        jax.block_until_ready(out)
        best = min(best, (time.perf_counter() - start) / reps)
    return best


def _with_values(sort_pairs):
    """f(x): `sort_pairs(x, values)` of i32 values made in the call (i ^ 0x5555)."""
    def f(x):
        return sort_pairs(x, jnp.arange(x.shape[0], dtype=jnp.int32) ^ 0x5555)
    return f


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[24, 26, 28],
                        help="log2 of the vector lengths")
    parser.add_argument("--only", nargs="+", default=None, help="variant names")
    parser.add_argument("--argsort", action="store_true",
                        help="time every variant's argsort too (else only the example's)")
    parser.add_argument("--pairs", action="store_true",
                        help="time every variant's sort_pairs (i32 values) beside jax.lax.sort_key_val")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp())
    systems = []
    for name, constants, replacements in VARIANTS:
        if args.only is None or name in args.only:
            module = load_variant(EXAMPLE, name, constants, replacements, folder)
            systems.append((f"{name} sort", jax.jit(module.radix_sort), "sort"))
            if name == "example" or args.argsort:
                systems.append((f"{name} argsort", jax.jit(module.radix_argsort), "argsort"))
            if args.pairs:
                systems.append((f"{name} pairs", jax.jit(_with_values(module.sort_pairs)), "pairs"))
    systems += [("XLA sort", jax.jit(jnp.sort), "sort"),
                ("XLA argsort", jax.jit(jnp.argsort), "argsort"),
                ("XLA copy (x + 1)", jax.jit(lambda x: x + 1), None)]
    if args.pairs:
        systems.append(("XLA pairs", jax.jit(_with_values(jax.lax.sort_key_val)), "pairs"))
    for log2 in args.sizes:
        n = 1 << log2
        x = jax.random.normal(jax.random.key(log2), (n,), jnp.float32)
        host = np.asarray(x)
        order = np.argsort(host, kind="stable")
        want = {"sort": np.sort(host), "argsort": order,
                "pairs": (np.arange(n, dtype=np.int32) ^ 0x5555)[order]}
        copy = seconds(jax.jit(lambda x: x + 1), x)
        rates = []
        for name, f, kind in systems:
            if kind is not None and "wrong" not in name:
                got = f(x)[1] if kind == "pairs" else f(x)   # pairs: the values (stable)
                np.testing.assert_array_equal(np.asarray(got), want[kind], err_msg=name)
            s = seconds(f, x)
            rates.append(f"{name} {s * 1e3:.3f} ms {n / s / 1e9:.2f} Gkeys/s ({s / copy:.1f} passes)")
        print(f"2^{log2} f32: " + "; ".join(rates), flush=True)


if __name__ == "__main__":
    main()
