"""Where a warm start's first call goes: examples/saxpy.py's `@ptxpy.jit` saxpy on 2^20 f32, in
new processes whose ptxpy disk cache (and JAX's persistent cache) a first process filled. Each
process times its first call and, inside it, the runtime's steps (wrapped with timers: each
figure includes the steps inside it), then a second call. No profiler runs. On a GPU only:

    python benchmarks/probes/warm_start_probe.py [--runs 5] [--no-keep]

`--no-keep`: with `PTXPY_EXECUTABLE_CACHE=0` (the first call goes through `jax.jit`).
`--prefetch-ab`: each run twice, the second without the preload that loads the kernel's kept
executables before its call (`api._load_executables`), alternated.
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

#: (module, attribute path) of the steps timed, outermost first
STEPS = [
    ("ptxpy.api", "Kernel._prepare"),
    ("ptxpy.runtime.launch", "prepare"),
    ("ptxpy.runtime.launch", "register"),
    ("ptxpy.runtime.driver", "kernel_image"),
    ("ptxpy.runtime.driver", "KernelImage.load"),
    ("ptxpy.runtime.ffi", "register_target"),
    ("ptxpy.runtime.launch", "PreparedCall.run_eagerly"),
    ("ptxpy.runtime.executables", "eager_runner"),
    ("ptxpy.runtime.executables", "_environment"),
    ("ptxpy.runtime.executables", "_load"),
    ("ptxpy.runtime.cache", "read_digest"),
    ("jax.experimental.serialize_executable", "deserialize_and_load"),
    ("ptxpy.runtime.executables", "_Runner.__call__"),
]


def _wrap(times: dict, label: str, owner, name: str) -> None:
    inner = getattr(owner, name)

    def timed(*args, **kwargs):
        start = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            times[label] = times.get(label, 0.0) + (time.perf_counter() - start) * 1e3

    setattr(owner, name, timed)


def worker() -> dict:
    import importlib

    import jax
    import jax.numpy as jnp

    if os.environ.get("BENCH_JAX_CACHE"):
        jax.config.update("jax_compilation_cache_dir", os.environ["BENCH_JAX_CACHE"])
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    sys.path.insert(0, os.path.join(HERE, "..", "..", "examples"))
    from ptxpy import api

    if os.environ.get("BENCH_NO_PREFETCH"):
        api._load_executables = lambda: None
    t0 = time.perf_counter()
    from saxpy import saxpy
    decorated = (time.perf_counter() - t0) * 1e3
    x = jnp.ones(N, jnp.float32).block_until_ready()
    y = jnp.ones(N, jnp.float32).block_until_ready()
    time.sleep(0.3)    # the runtime's preload (about 35 ms) finishes, as it would during set-up
    preloads = {part: thread.is_alive() for part, thread in api._preloads.items()}
    executables = sys.modules.get("ptxpy.runtime.executables")
    loaded_ahead = len(executables._prefetched) if executables else 0
    times: dict = {}
    for module, path in STEPS:
        try:
            owner = importlib.import_module(module)
        except ImportError:
            continue
        *outer, name = path.split(".")
        for part in outer:
            owner = getattr(owner, part)
        if hasattr(owner, name):
            _wrap(times, path, owner, name)
    t1 = time.perf_counter()
    out = saxpy(x, y, 2.0)
    t2 = time.perf_counter()
    out.block_until_ready()
    t3 = time.perf_counter()
    assert float(out[0]) == 3.0
    first = dict(times)
    times.clear()
    t4 = time.perf_counter()
    jax.block_until_ready(saxpy(x, y, 2.0))
    t5 = time.perf_counter()
    return {"decorate": decorated, "preloads running": preloads, "loaded ahead": loaded_ahead,
            "first call": (t3 - t1) * 1e3,
            "first call's dispatch": (t2 - t1) * 1e3, "first call's wait": (t3 - t2) * 1e3,
            "steps": first, "second call": (t5 - t4) * 1e3}


def run(env: dict) -> dict:
    return run_json([sys.executable, os.path.abspath(__file__), "--worker"], env)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", action="store_true")
    ap.add_argument("--out")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--no-keep", action="store_true")
    ap.add_argument("--prefetch-ab", action="store_true")
    a = ap.parse_args()
    if a.worker:
        json.dump(worker(), open(a.out, "w"))
        return
    env = {"PTXPY_CACHE_DIR": tempfile.mkdtemp(), "BENCH_JAX_CACHE": tempfile.mkdtemp()}
    if a.no_keep:
        env["PTXPY_EXECUTABLE_CACHE"] = "0"
    run(env)    # fills both caches (and keeps the executable at its exit)
    variants = [("", {}), ("without prefetch: ", {"BENCH_NO_PREFETCH": "1"})]
    for _ in range(a.runs):
        for label, extra in variants if a.prefetch_ab else variants[:1]:
            result = run(dict(env, **extra))
            if "error" in result:
                print(result["error"])
                continue
            steps = result.pop("steps")
            print(label + json.dumps({k: round(v, 2) if isinstance(v, float) else v
                                      for k, v in result.items()}))
            for step, ms in steps.items():
                print(f"    {step:45s} {ms:8.2f} ms")


if __name__ == "__main__":
    main()
