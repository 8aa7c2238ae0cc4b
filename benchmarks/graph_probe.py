"""What CUDA graph XLA builds for a chain of tiny kernels, and where a call's host time goes,
for ptxpy's kernels, Pallas's, XLA's own PTX thunk and a minimal C FFI handler (needs a CUDA GPU
and a C compiler).

    python benchmarks/graph_probe.py [--out DIR] [--processes 1]

Each process preloads benchmarks/graph_probe.c, which writes every graph XLA instantiates as
Graphviz (DIR/graphNNN.dot) and times every `cuGraphLaunch` on the host, and runs every system's
chain of 100 `x + 1` kernels (benchmarks/launch.py's), taking turns (`worker`). Results, per
process: DIR/graph_probe.json.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SYSTEMS = ["ptxpy @jit (recorded, PDL)", "ptxpy @jit 1 x 128 (recorded, PDL)",
           "ptxpy launch() (recorded)", "ptxpy launch() (captured)",
           "Pallas", "XLA PTX thunk", "minimal C FFI handler (captured)"]


def _op(system: str):
    sys.path.insert(0, HERE)
    import launch
    return {"ptxpy @jit (recorded, PDL)": launch._ptxpy_jit_add1,
            "ptxpy launch() (recorded)": launch._ptxpy_add1,
            "Pallas": launch._pallas_add1,
            "XLA PTX thunk": launch._xla_ptx_add1,
            "minimal C FFI handler (captured)": lambda: launch._c_add1(tempfile.mkdtemp()),
            "ptxpy launch() (captured)": _ptxpy_captured_add1,
            "ptxpy @jit 1 x 128 (recorded, PDL)": _ptxpy_wide_add1,
            }[system]()


def _ptxpy_wide_add1():
    from chain_kernel import add1_wide
    return add1_wide


def _ptxpy_captured_add1():
    """launch()'s FFI call of the same kernel, to a second target registered for XLA's execute
    stage only: XLA stream-captures it instead of asking for a kernel node."""
    import jax
    import jax.numpy as jnp

    import launch
    from ptxpy.runtime import ffi
    from ptxpy.runtime import launch as runtime_launch

    target = ffi.register_target("ptxpy_launch_captured", record=False)
    x = jnp.zeros(1024, jnp.float32)
    out = jax.ShapeDtypeStruct(x.shape, jnp.float32)
    prepared = runtime_launch.prepare(launch._add1_kernel(), [x], [out], 1024 // 256, 256)
    return lambda v: ffi.call(prepared.key, [v], prepared.out_types, None,
                              runtime_launch.VMAP_METHOD, target=target)[0]


def _chain(op, length: int):
    def f(x):
        for _ in range(length):
            x = op(x)
        return x
    return f


def _launches(probe, path: str) -> list:
    """(start, duration) in nanoseconds of each cuGraphLaunch since the last call, of the most
    launched graph."""
    probe.graph_probe_dump(path.encode())
    rows = [line.split() for line in open(path)]
    if not rows:
        return []
    execs = [r[0] for r in rows]
    main_exec = max(set(execs), key=execs.count)
    return [(int(start), int(ns)) for e, start, ns in rows if e == main_exec]


def worker(rounds: int = 10, calls: int = 30) -> dict:
    """All systems' chains of 100 in one process, taking turns `rounds` times: medians over every
    call of each system of the host time of `f(x)`, of `f(x)` waited for, and of its parts:
    before the cuGraphLaunch inside it (JAX and XLA up to the launch), the launch, and after it
    (the process's own noise then hits every system alike)."""
    import ctypes

    import jax
    import jax.numpy as jnp
    import numpy as np

    from ptxpy.runtime import native as _native

    probe = ctypes.CDLL(os.environ["GRAPH_PROBE_LIB"])
    scratch = os.environ["GRAPH_PROBE_PREFIX"] + "launches.txt"
    x = jnp.asarray(np.random.default_rng(0).standard_normal(1024).astype(np.float32))
    chains = {}
    for system in SYSTEMS:
        chains[system] = f = jax.jit(_chain(_op(system), 100))
        np.testing.assert_allclose(f(x), np.asarray(x) + 100, rtol=1e-5)
    parts = ("f(x) dispatch", "f(x) waited", "before cuGraphLaunch", "cuGraphLaunch",
             "after cuGraphLaunch")
    modes = ("output kept", "output dropped")
    counted = "C handler (launches, updates, to Python) per call"
    seen = {(system, mode): {part: [] for part in parts} | {counted: [0.0, 0.0, 0.0]}
            for system in SYSTEMS for mode in modes}
    for _ in range(rounds):
        for system, f in chains.items():
            for mode in modes:
                # "kept": the last output is alive during the next call, so the next output
                # lands elsewhere and XLA updates the graph's nodes that write it (a training
                # loop); "dropped": each output is freed before the next call.
                held = [f(x) for _ in range(2)]
                jax.block_until_ready(held)
                if mode == "output dropped":
                    held.clear()
                _launches(probe, scratch)
                before = _native.counters()
                stamps = []
                for _ in range(calls):
                    t0 = time.monotonic_ns()
                    y = f(x)
                    t1 = time.monotonic_ns()
                    jax.block_until_ready(y)
                    stamps.append((t0, t1, time.monotonic_ns()))
                    if mode == "output kept":
                        held = [y]
                    del y
                launches = _launches(probe, scratch)
                row = seen[(system, mode)]
                now = _native.counters()
                for i in range(3):
                    row[counted][i] += (now[i] - before[i]) / calls / rounds
                for (t0, t1, t2), (start, ns) in zip(stamps, launches) if len(launches) == calls else ():
                    row["before cuGraphLaunch"].append(start - t0)
                    row["cuGraphLaunch"].append(ns)
                    row["after cuGraphLaunch"].append(t1 - start - ns)
                for t0, t1, t2 in stamps:
                    row["f(x) dispatch"].append(t1 - t0)
                    row["f(x) waited"].append(t2 - t0)
                held.clear()
    us = lambda v: round(statistics.median(v) / 1e3, 2) if v else None
    return {f"{system}, {mode}": {part: us(values) if part in parts else [round(c, 2) for c in values]
                                  for part, values in row.items()}
            for (system, mode), row in seen.items()}


def build_probe(folder: str) -> str:
    lib = os.path.join(folder, "libgraph_probe.so")
    subprocess.run([os.environ.get("CC", "cc"), "-O2", "-shared", "-fPIC",
                    os.path.join(HERE, "graph_probe.c"), "-o", lib, "-ldl"], check=True)
    return lib


def run(lib: str, out: str) -> dict:
    env = dict(os.environ, LD_PRELOAD=lib, GRAPH_PROBE_LIB=lib,
               GRAPH_PROBE_PREFIX=os.path.join(out, ""))
    with tempfile.NamedTemporaryFile("r", suffix=".json") as result:
        proc = subprocess.run([sys.executable, __file__, "--worker", "--result", result.name],
                              env=env, capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            return {"error": proc.stderr[-3000:]}
        return json.load(open(result.name))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.environ.get("OUT", "graph-probe"))
    parser.add_argument("--processes", type=int, default=1)
    parser.add_argument("--worker", action="store_true")
    parser.add_argument("--result")
    args = parser.parse_args()
    if args.worker:
        json.dump(worker(), open(args.result, "w"))
        return
    os.makedirs(args.out, exist_ok=True)
    lib = build_probe(tempfile.mkdtemp(prefix="graph-probe-"))
    results = []
    for process in range(args.processes):
        results.append(run(lib, args.out))
        for name, row in results[-1].items():
            print(f"process {process} {name:52} {row}", flush=True)
    with open(os.path.join(args.out, "graph_probe.json"), "w") as f:
        json.dump({"all in one process": results}, f, indent=1)


if __name__ == "__main__":
    main()
