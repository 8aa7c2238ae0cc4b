"""The example kernels against their peers on the GPU: ptxpy, XLA, Triton, Pallas (needs CUDA).

    python benchmarks/kernels.py [--out DIR] [--quick]

For each kernel and size it prints the median time and the achieved TB/s (bytes: each input
read once, each output written once) or TFLOP/s, beside the measured device-to-device copy
bandwidth, the ceiling for the memory-bound kernels. It writes `kernels.json` and a chart
`kernels.png` (achieved bandwidth per kernel and size, every system side by side) into DIR.

Method: fresh random inputs per kernel; every system's output is checked against float64 NumPy
before it is timed (‖out − ref‖ / ‖ref‖ < 1e-4, no NaN). JAX-side systems (ptxpy, XLA, Pallas)
are timed on the GPU from the CUPTI kernel records of JAX's profiler: PROFILED_CALLS calls, each
on its own copy of the first input, the median of each call's summed kernel durations (XLA may
run several kernels for one operation). As a cross-check they are also timed from the host,
as SHORT and as LONG calls in one `jax.jit`, each call on its own copy of the first
input and all outputs returned (so XLA can neither merge nor drop them, and the inputs rotate),
median of REPEATS host-timed runs after a warm-up each; (LONG time - SHORT time) /
(LONG - SHORT) is the time per call, free of the dispatch overhead. A bandwidth above the copy ceiling means XLA replaced the work by a
layout change (seen for transpose); such rows are reported as elided and left out. Triton runs on torch tensors and is timed with `triton.testing.do_bench`
(CUDA events, median). Inputs are well past the 50 MB L2 except where a size says otherwise.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "examples"), os.path.join(ROOT, "benchmarks")]

SHORT, LONG, REPEATS = 2, 10, 11


def _jax_time(fn, args) -> float:
    """Seconds per call: SHORT and LONG calls on as many distinct copies of the first input in one
    jit each (so XLA can neither merge nor drop them, and no call finds its input in the L2
    cache), the difference divided by LONG - SHORT, so the dispatch overhead cancels out."""
    import jax

    first, rest = args[0], args[1:]
    copies = [first] + [first * (1 + k * 2.0 ** -10) for k in range(1, LONG)]

    def calls(xs, *rest):
        return tuple(fn(x, *rest) for x in xs)

    run = jax.jit(calls)
    medians = []
    for count in (SHORT, LONG):
        xs = tuple(copies[:count])
        jax.block_until_ready(run(xs, *rest))
        times = []
        for _ in range(REPEATS):
            start = time.perf_counter()
            jax.block_until_ready(run(xs, *rest))
            times.append(time.perf_counter() - start)
        medians.append(statistics.median(times))
    return (medians[1] - medians[0]) / (LONG - SHORT)


PROFILED_CALLS = 15
_TRACE_NOTES: list = []     # how the first profile looked, for the record (see main)


def _profiled_time(fn, args) -> float:
    """Seconds per call on the GPU, from CUPTI kernel records (JAX's profiler): the median over
    PROFILED_CALLS calls, each on its own copy of the first input (so none finds it in the L2),
    of the summed durations of every kernel the call ran. Host dispatch does not count, as with
    CUDA events around a launch."""
    import jax

    first, rest = args[0], args[1:]
    copies = [_perturbed(first, k) for k in range(PROFILED_CALLS)]
    run = jax.jit(fn)
    for x in copies[:3]:
        jax.block_until_ready(run(x, *rest))

    def calls():
        for x in copies:
            jax.block_until_ready(run(x, *rest))
            time.sleep(0.002)   # a gap on the timeline between calls

    groups = _split_calls(profiled_kernels(calls), PROFILED_CALLS)
    return statistics.median(sum(dur for _, dur, _ in call) for call in groups) * 1e-6


def _perturbed(x, k: int):
    """A fresh array close to `x` (of its dtype): one not found in the L2 after `x`."""
    import jax.numpy as jnp
    return x * (1 + k * 2.0 ** -10) if jnp.issubdtype(x.dtype, jnp.floating) else x + k


def profiled_kernels(work) -> list:
    """(start us, duration us, name) of every GPU kernel that `work()` ran, from a JAX profile."""
    import glob
    import gzip
    import tempfile

    import jax

    with tempfile.TemporaryDirectory() as folder:
        jax.profiler.start_trace(folder, create_perfetto_trace=True)
        try:
            work()
        finally:
            jax.profiler.stop_trace()
        [path] = glob.glob(os.path.join(folder, "**", "perfetto_trace.json.gz"), recursive=True)
        with gzip.open(path) as f:
            return _device_kernels(json.load(f))


def _device_kernels(trace: dict) -> list:
    """(start us, duration us, name) of every kernel on a GPU stream, in time order."""
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    names = {e["pid"]: e.get("args", {}).get("name", "") for e in events
             if e.get("ph") == "M" and e.get("name") == "process_name"}
    gpu = {pid for pid, name in names.items() if "GPU" in name or "gpu" in name}
    kernels = sorted((e["ts"], e["dur"], e.get("name", "")) for e in events
                     if e.get("ph") == "X" and e.get("pid") in gpu and "dur" in e
                     and not e.get("name", "").startswith(("Memcpy", "Memset", "MemoryCopy")))
    if not _TRACE_NOTES:
        _TRACE_NOTES.append({"gpu processes": sorted(names[p] for p in gpu),
                             "first kernels": [k[2][:80] for k in kernels[:6]]})
    if not kernels:
        raise RuntimeError(f"no GPU kernels in the profile (processes: {sorted(names.values())})")
    return kernels


def _split_calls(kernels: list, calls: int) -> list:
    """Splits the kernels into `calls` groups at the largest gaps between them."""
    gaps = sorted(range(1, len(kernels)),
                  key=lambda k: kernels[k][0] - (kernels[k - 1][0] + kernels[k - 1][1]))[-(calls - 1):]
    bounds = [0] + sorted(gaps) + [len(kernels)]
    groups = [kernels[a:b] for a, b in zip(bounds, bounds[1:])]
    if len(groups) != calls or len(kernels) % calls:
        raise RuntimeError(f"{len(kernels)} kernels do not split into {calls} equal calls")
    return groups


def _torch_time(fn, args) -> float:
    import triton
    return triton.testing.do_bench(lambda: fn(*args), warmup=50, rep=300, return_mode="median") / 1e3


def _check(name, system, out, ref) -> None:
    out = np.asarray(out, dtype=np.float64)
    err = np.linalg.norm(out - ref) / max(np.linalg.norm(ref), 1e-30)
    if not np.all(np.isfinite(out)) or err > 1e-4:
        raise AssertionError(f"{name} {system}: relative error {err:.2e}")


def copy_bandwidth(nbytes: int) -> float:
    import torch
    x = torch.randn(nbytes // 8, device="cuda")
    y = torch.empty_like(x)
    seconds = _torch_time(lambda: y.copy_(x), ())
    return 2 * x.numel() * 4 / seconds


def elementwise_bandwidth(rows: int, cols: int) -> float:
    """Bytes per second of XLA's `-x` on a rows x cols f32 array, timed as the kernels are
    (CUPTI durations; an event-timed copy of a 46 us kernel also counts its launch gap)."""
    import jax.numpy as jnp
    x = jnp.asarray(np.random.default_rng(0).standard_normal((rows, cols), np.float32))
    return 2 * x.size * 4 / _profiled_time(lambda a: -a, [x])


def cases(quick: bool, wanted=lambda kernel: True):
    """(kernel, size label, ptxpy fn, inputs (numpy), reference fn, bytes, flops); the inputs
    of a kernel `wanted` rejects are never made."""
    import add_vectors
    import layer_norm
    import matmul
    import reduction
    import rms_norm
    import softmax
    import swiglu
    import transpose

    rng = np.random.default_rng(0)
    if wanted("add"):
        n = 1 << (26 if quick else 28)
        x, y = rng.standard_normal(n, np.float32), rng.standard_normal(n, np.float32)
        yield ("add", f"2^{n.bit_length() - 1}", add_vectors.add_vectors, (x, y),
               lambda a, b: a + b, 12 * n, None)
    rows_wanted = [k for k in ("rms_norm", "softmax", "layer_norm") if wanted(k)]
    for rows, cols in ((2048, 8192),) if quick else ((2048, 8192), (8192, 8192)):
        if not rows_wanted:
            break
        x = rng.standard_normal((rows, cols), np.float32)
        w = rng.standard_normal(cols, np.float32)
        b = rng.standard_normal(cols, np.float32)
        label, nbytes = f"{rows}x{cols}", 8 * rows * cols
        row_cases = {
            "rms_norm": (lambda a, g: rms_norm.rms_norm(a, g, 1e-6), (x, w),
                         lambda a, g: a / np.sqrt(np.mean(a * a, axis=-1, keepdims=True) + 1e-6) * g),
            "softmax": (softmax.softmax, (x,), _softmax_ref),
            "layer_norm": (lambda a, g, h: layer_norm.layer_norm(a, g, h, 1e-6), (x, w, b),
                           _layer_norm_ref),
        }
        for kernel in rows_wanted:
            fn, inputs, ref = row_cases[kernel]
            yield (kernel, label, fn, inputs, ref, nbytes, None)
    if wanted("swiglu"):
        x = rng.standard_normal((4096, 2 * 4096), np.float32)
        yield ("swiglu", "4096x2x4096", swiglu.swiglu, (x,), _swiglu_ref, 12 * 4096 * 4096, None)
    if wanted("sum"):
        x = rng.standard_normal(1 << 26, np.float32)
        yield ("sum", "2^26", reduction.total, (x,), lambda a: np.sum(a), 4 << 26, None)
    if wanted("transpose"):
        x = rng.standard_normal((8192, 8192), np.float32)
        yield ("transpose", "8192^2", transpose.transpose, (x,), lambda a: a.T, 8 * x.size, None)
    if wanted("matmul"):
        s = 2048 if quick else 4096
        a, b = rng.standard_normal((s, s), np.float32), rng.standard_normal((s, s), np.float32)
        yield ("matmul", f"{s}^3", matmul.matmul, (a, b), lambda p, q: p @ q, None, 2 * s ** 3)


def _softmax_ref(a):
    e = np.exp(a - a.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _layer_norm_ref(a, g, h):
    mean = a.mean(axis=-1, keepdims=True)
    return (a - mean) / np.sqrt(a.var(axis=-1, keepdims=True) + 1e-6) * g + h


def _swiglu_ref(a):
    gate, up = a[:, : a.shape[1] // 2], a[:, a.shape[1] // 2:]
    return gate / (1 + np.exp(-gate)) * up


def measure(kernel, label, ptxpy_fn, inputs, ref_fn, nbytes, flops) -> list:
    import jax.numpy as jnp
    import peers

    ref = ref_fn(*[np.asarray(v, np.float64) for v in inputs])
    jax_inputs = [jnp.asarray(v) for v in inputs]
    rows = []
    systems = [("ptxpy", ptxpy_fn), ("XLA", peers.xla(kernel)), ("Pallas", peers.pallas(kernel))]
    for system, fn in systems:
        if fn is None:
            continue
        row = _run(kernel, label, system, lambda: _profiled_time(fn, jax_inputs),
                   lambda: fn(*jax_inputs), ref, nbytes, flops)
        if row:
            row["us (host, difference method)"] = round(_jax_time(fn, jax_inputs) * 1e6, 1)
        rows.append(row)
    triton_fn = peers.triton_fn(kernel)
    if triton_fn is not None:
        import torch
        torch_inputs = [torch.from_numpy(np.ascontiguousarray(v)).cuda() for v in inputs]
        rows.append(_run(kernel, label, "Triton", lambda: _torch_time(triton_fn, torch_inputs),
                         lambda: triton_fn(*torch_inputs).cpu().numpy(), ref, nbytes, flops))
    return [r for r in rows if r]


CEILING = [float("inf")]     # the measured copy bandwidth, bytes/s


def _run(kernel, label, system, timer, call, ref, nbytes, flops):
    try:
        _check(f"{kernel} {label}", system, call(), ref)
        seconds = timer()
    except Exception as err:      # a peer missing a feature must not stop the run
        print(f"{kernel:10} {label:12} {system:7} failed: {type(err).__name__}: {str(err)[:200]}", flush=True)
        return None
    if nbytes and nbytes / seconds > 1.05 * CEILING[0]:
        print(f"{kernel:10} {label:12} {system:7} elided: {nbytes / seconds / 1e12:.1f} TB/s is above the "
              "copy ceiling", flush=True)
        return None
    row = {"kernel": kernel, "size": label, "system": system, "us": round(seconds * 1e6, 1)}
    if nbytes:
        row["TB/s"] = round(nbytes / seconds / 1e12, 3)
    if flops:
        row["TFLOP/s"] = round(flops / seconds / 1e12, 2)
    print(json.dumps(row), flush=True)
    return row


def chart(rows, ceiling, path) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib missing: no chart")
        return
    rows = [r for r in rows if "TB/s" in r]
    groups = sorted({(r["kernel"], r["size"]) for r in rows}, key=lambda g: [r["kernel"] for r in rows].index(g[0]))
    systems = ["ptxpy", "XLA", "Triton", "Pallas"]
    fig, ax = plt.subplots(figsize=(max(8, len(groups) * 1.3), 4.5))
    width = 0.8 / len(systems)
    for k, system in enumerate(systems):
        values = [next((r["TB/s"] for r in rows if (r["kernel"], r["size"]) == g and r["system"] == system), 0)
                  for g in groups]
        ax.bar(np.arange(len(groups)) + k * width, values, width, label=system)
    ax.axhline(ceiling / 1e12, color="k", linestyle="--", label="device copy")
    ax.set_xticks(np.arange(len(groups)) + 0.4 - width / 2)
    ax.set_xticklabels([f"{k}\n{s}" for k, s in groups], fontsize=8)
    ax.set_ylabel("achieved TB/s")
    ax.set_title("ptxpy examples on an H100 (f32)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.environ.get("OUT", "."))
    parser.add_argument("--quick", action="store_true", help="smaller sizes, fewer kernels")
    args = parser.parse_args()
    ceiling = CEILING[0] = copy_bandwidth(1 << 30)
    print(f"device-to-device copy: {ceiling / 1e12:.3f} TB/s", flush=True)
    # The ceiling at the row kernels' sizes: a 46 us kernel (2048 x 8192) pays its ramp-up and
    # tail on a shorter run than the 1 GiB copy does.
    sized = {f"{rows}x{cols}": elementwise_bandwidth(rows, cols)
             for rows, cols in ((2048, 8192), (8192, 8192))}
    for label, bandwidth in sized.items():
        print(f"XLA's -x on {label} (what a row kernel moves, no arithmetic): "
              f"{bandwidth / 1e12:.3f} TB/s", flush=True)
    rows = []
    for case in cases(args.quick):
        rows += measure(*case)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "kernels.json"), "w") as f:
        json.dump({"copy_TB/s": round(ceiling / 1e12, 3),
                   "negate_TB/s_at": {k: round(v / 1e12, 3) for k, v in sized.items()},
                   "rows": rows, "profile": _TRACE_NOTES}, f, indent=1)
    chart(rows, ceiling, os.path.join(args.out, "kernels.png"))
    print(f"\n{'kernel':10} {'size':12} {'system':7} {'us':>9} {'TB/s':>6} {'TFLOP/s':>8}")
    for r in rows:
        print(f"{r['kernel']:10} {r['size']:12} {r['system']:7} {r['us']:9.1f} {r.get('TB/s', ''):>6} "
              f"{r.get('TFLOP/s', ''):>8}")


if __name__ == "__main__":
    main()
