"""Where an eager call's time goes: the dispatch (the call returns, the launch queued) against
the wait (`block_until_ready` after it), for a `@ptxpy.jit` x + 1 on 1024 f32, the same
call's cached `jax.jit` of the FFI call without ptxpy's Python before it, a minimal C FFI
handler (benchmarks/launch.py's, eager and under `jax.jit`), Pallas (eager and under `jax.jit`)
and XLA's own x + 1. Medians of 400 calls in microseconds, three rounds. On a GPU only:

    python benchmarks/probes/eager_split_probe.py [--json out.json] [--profile]
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))

import launch as bench  # noqa: E402  (benchmarks/launch.py)


def _split(fn, x, reps: int = 400) -> tuple:
    """(median dispatch, median wait, median of both) of fn(x), in us."""
    import jax

    for _ in range(30):
        jax.block_until_ready(fn(x))
    dispatch, wait = [], []
    for _ in range(reps):
        t0 = time.perf_counter()
        out = fn(x)
        t1 = time.perf_counter()
        jax.block_until_ready(out)
        t2 = time.perf_counter()
        dispatch.append(t1 - t0)
        wait.append(t2 - t1)
    both = [d + w for d, w in zip(dispatch, wait)]
    return tuple(round(statistics.median(v) * 1e6, 2) for v in (dispatch, wait, both))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json")
    ap.add_argument("--profile", action="store_true", help="also a cProfile of the kernel's calls")
    args = ap.parse_args()
    # the calls go through `jax.jit` whatever an earlier process kept (runtime/executables.py)
    os.environ["PTXPY_EXECUTABLE_CACHE"] = "0"
    import jax
    import jax.numpy as jnp
    import numpy as np

    x = jnp.asarray(np.random.default_rng(0).standard_normal(bench.N).astype(np.float32))
    kernel = bench._ptxpy_jit_add1()
    kernel(x)
    plan = next(iter(kernel._plans.values()))
    prepared = plan.launched   # the checked launch it keeps
    run = getattr(plan, "run", None) or prepared._jitted     # its jitted FFI call

    def ffi_only(v):
        return prepared.run_eagerly([v])

    c_call = bench._c_add1(tempfile.mkdtemp())
    pallas = bench._pallas_add1()
    ops = {"ptxpy @jit kernel": kernel, "its jax.jit of the FFI call": ffi_only,
           "that jax.jit, called straight": run,
           "minimal C FFI handler, eager": c_call, "minimal C FFI handler, jax.jit": jax.jit(c_call),
           "Pallas, eager": pallas, "Pallas, jax.jit": jax.jit(pallas),
           "XLA x + 1": lambda v: v + 1.0, "XLA x + 1, jax.jit": jax.jit(lambda v: v + 1.0)}
    results = {}
    for name, op in ops.items():
        out = op(x)
        out = out[0] if isinstance(out, (list, tuple)) else out
        np.testing.assert_allclose(np.asarray(out), np.asarray(x) + 1, rtol=1e-6, err_msg=name)
    for _ in range(3):
        for name, op in ops.items():
            results.setdefault(name, []).append(_split(op, x))
    print(f"{'call (us)':40s} {'dispatch':>26s} {'wait':>26s} {'total':>26s}")
    for name, rows in results.items():
        cols = ["/".join(f"{r[k]:.1f}" for r in rows) for k in range(3)]
        print(f"{name:40s} {cols[0]:>26s} {cols[1]:>26s} {cols[2]:>26s}")
    _micro(kernel, x)
    if args.profile:
        _profile(kernel, x)
    if args.json:
        json.dump(results, open(args.json, "w"), indent=1)


def _micro(kernel, x) -> None:
    """Medians (us) of pieces of the decorator's Python, each alone."""
    import timeit

    import jax

    from ptxpy import api
    from ptxpy.runtime import values

    pieces = {"jax.core.Tracer (the attribute lookup)": lambda: jax.core.Tracer,
              "values.is_tracer(x)": lambda: values.is_tracer(x),
              "api._call_key((x,), {})": lambda: api._call_key((x,), {}),
              "kernel._prepared_call((x,), {})": lambda: kernel._prepared_call((x,), {}),
              "kernel._interpreting()": kernel._interpreting}
    for name, piece in pieces.items():
        times = timeit.repeat(piece, number=200, repeat=15)
        print(f"{name:45s} {statistics.median(times) / 200 * 1e6:8.2f} us")


def _profile(kernel, x, calls: int = 3000) -> None:
    """cProfile of `calls` eager calls of the kernel (each waited for), by own time."""
    import cProfile
    import pstats

    import jax

    profile = cProfile.Profile()
    for _ in range(calls):
        profile.enable()
        out = kernel(x)
        profile.disable()
        jax.block_until_ready(out)
    pstats.Stats(profile).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
