"""Where the first call of a `@ptxpy.jit` saxpy in a new process spends its time, beside the first
call of a new `jax.jit(lambda x: a * x + y)` and of a Pallas saxpy in the same place (after JAX
has set up its GPU and made two arrays). Each case runs in a fresh process, with empty caches
(ptxpy's disk cache in a new folder, no JAX persistent cache) unless `--warm` is given (then
ptxpy's disk cache and JAX's persistent compilation cache are primed by a first process).
Prints the wall times, JAX's own log of its stages (trace, lowering, XLA compile) and the
functions of the first call that took longest (cProfile, cumulative and own time). On a GPU only:

    python benchmarks/probes/first_call_probe.py [--warm] [--top 40] [--only ptxpy xla pallas]
"""
import argparse
import json
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from worker_json import run_json  # noqa: E402

N = 1 << 20


def _saxpy(system: str):
    import jax
    import jax.numpy as jnp

    if system == "ptxpy":
        sys.path.insert(0, os.path.join(HERE, "..", "..", "examples"))
        from saxpy import saxpy

        return lambda x, y: saxpy(x, y, 2.0)
    if system == "xla":
        return jax.jit(lambda x, y: 2.0 * x + y)
    from jax.experimental import pallas as pl

    def body(x_ref, y_ref, o_ref):
        o_ref[...] = 2.0 * x_ref[...] + y_ref[...]

    block = 1 << 14
    return pl.pallas_call(body, out_shape=jax.ShapeDtypeStruct((N,), jnp.float32), grid=(N // block,),
                          in_specs=[pl.BlockSpec((block,), lambda i: (i,))] * 2,
                          out_specs=pl.BlockSpec((block,), lambda i: (i,)))


def worker(system: str, top: int) -> dict:
    import cProfile
    import io
    import logging
    import pstats

    import jax
    import jax.numpy as jnp

    if os.environ.get("BENCH_JAX_CACHE"):
        jax.config.update("jax_compilation_cache_dir", os.environ["BENCH_JAX_CACHE"])
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    log = io.StringIO()
    handler = logging.StreamHandler(log)
    handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
    for name in ("jax._src.dispatch", "jax._src.interpreters.pxla", "jax._src.compiler",
                 "jax._src.compilation_cache", "jax._src.cache_key"):
        logger = logging.getLogger(name)
        logger.setLevel(logging.DEBUG)
        logger.addHandler(handler)
    t0 = time.perf_counter()
    f = _saxpy(system)
    t1 = time.perf_counter()
    x = jnp.ones(N, jnp.float32).block_until_ready()
    y = jnp.ones(N, jnp.float32).block_until_ready()
    log.truncate(0)
    log.seek(0)
    profile = cProfile.Profile()
    t2 = time.perf_counter()
    profile.enable()
    out = jax.block_until_ready(f(x, y))
    profile.disable()
    t3 = time.perf_counter()
    jax.block_until_ready(f(x, y))
    t4 = time.perf_counter()
    assert float(out[0]) == 3.0
    stats = io.StringIO()
    pstats.Stats(profile, stream=stats).sort_stats("cumulative").print_stats(top)
    pstats.Stats(profile, stream=stats).sort_stats("tottime").print_stats(top // 2)
    return {"import (ms)": (t1 - t0) * 1e3, "first call (ms)": (t3 - t2) * 1e3,
            "second call (ms)": (t4 - t3) * 1e3, "jax log": log.getvalue(),
            "profile": stats.getvalue()}


def run(system: str, env: dict, top: int) -> dict:
    return run_json([sys.executable, os.path.abspath(__file__), "--worker", system,
                     "--top", str(top)], env)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker")
    ap.add_argument("--out")
    ap.add_argument("--warm", action="store_true")
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--only", nargs="+", default=["ptxpy", "xla", "pallas"])
    a = ap.parse_args()
    if a.worker:
        json.dump(worker(a.worker, a.top), open(a.out, "w"))
        return
    for system in a.only:
        env = {"PTXPY_CACHE_DIR": tempfile.mkdtemp()}
        if a.warm:
            env["BENCH_JAX_CACHE"] = tempfile.mkdtemp()
            run(system, env, a.top)   # primes both caches
        result = run(system, env, a.top)
        print(f"==== {system} ({'caches warm' if a.warm else 'caches empty'})")
        for key, value in result.items():
            if isinstance(value, float):
                print(f"{key}: {value:.2f}")
            else:
                print(f"{key}:\n{value}")


if __name__ == "__main__":
    main()
