"""Where examples/radix_sort.py's time goes: its digit counts and each of its four passes timed
alone, for normal f32 keys (few distinct values in the high digits) and uniform u32 keys, and
the counts with warp-aggregated atomics (`match_any_sync` of the digit, one `atomic_add` of the
lanes' count by the lowest of them) instead of one shared atomic per key and digit. Correct in
the simulator, not yet run on a GPU (session 50's device time ran out). On a GPU:

    python benchmarks/probes/sort_parts.py [--log2 26]
"""
import argparse
import importlib.util
import sys
import tempfile
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "radix_sort.py"
PER_KEY = '''    for p in ptxpy.static_range(PASSES):
        ptxpy.atomic_add(hist, (p, _digit(key, BITS * p)), 1)
'''
AGGREGATED = '''    for p in ptxpy.static_range(PASSES):
        d = _digit(key, BITS * p)
        peers = ptxpy.match_any_sync(d)
        if ptxpy.lane_id() == ptxpy.ffs(peers) - 1:
            ptxpy.atomic_add(hist, (p, d), ptxpy.popc(peers))
'''


def load(name: str, text: str, folder: Path):
    path = folder / f"{name}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def seconds(f, *args, rounds: int = 5, reps: int = 20) -> float:
    jax.block_until_ready(f(*args))
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(reps):
            out = f(*args)
        jax.block_until_ready(out)
        best = min(best, (time.perf_counter() - start) / reps)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log2", type=int, default=26)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp())
    text = EXAMPLE.read_text()
    assert PER_KEY in text
    m = load("sort_example", text, folder)
    agg = load("sort_aggregated", text.replace(PER_KEY, AGGREGATED), folder)
    n = 1 << args.log2
    inputs = {"normal f32": jax.random.normal(jax.random.key(0), (n,), jnp.float32),
              "uniform u32": jax.random.bits(jax.random.key(1), (n,), jnp.uint32)}
    for label, x in inputs.items():
        kind = m.DTYPES[jnp.dtype(x.dtype)]
        keys = jax.lax.bitcast_convert_type(x, jnp.uint32)
        zeros = jnp.zeros((m.PASSES, m.RADIX), jnp.int32)
        counts = jax.jit(lambda k: m.digit_counts(k, zeros, KIND=kind))(keys)
        agg_counts = jax.jit(lambda k: agg.digit_counts(k, zeros, KIND=kind))(keys)
        np.testing.assert_array_equal(np.asarray(agg_counts), np.asarray(counts))
        parts = [("digit_counts", seconds(jax.jit(lambda k: m.digit_counts(k, zeros, KIND=kind)), keys)),
                 ("digit_counts aggregated",
                  seconds(jax.jit(lambda k: agg.digit_counts(k, zeros, KIND=kind)), keys))]
        state = jnp.zeros((m.PASSES * (m._tiles(keys) + 1), 2 * m.RADIX), jnp.int32)
        none = jnp.zeros((1,), jnp.uint32)
        moved = keys
        for p in range(m.PASSES):
            step = jax.jit(lambda k, s, p=p: m.sort_pass(k, none, counts, s, p, KIND=kind))
            parts.append((f"pass {p}", seconds(step, moved, state)))
            moved, _, state = step(moved, state)
        np.testing.assert_array_equal(np.asarray(jax.lax.bitcast_convert_type(moved, x.dtype)),
                                      np.sort(np.asarray(x)))
        parts.append(("whole sort", seconds(jax.jit(m.radix_sort), x)))
        parts.append(("copy (x + 1)", seconds(jax.jit(lambda v: v + 1), keys)))
        # each pass above also copied the state it was given (it aliases it): that copy alone
        parts.append(("state copy", seconds(jax.jit(lambda s: s + 1), state)))
        print(f"2^{args.log2} {label}: " + "; ".join(f"{name} {s * 1e6:.1f} us" for name, s in parts),
              flush=True)


if __name__ == "__main__":
    sys.exit(main())
