"""Measured accuracy of the math library: the table of docs/math.md.

    python benchmarks/math_accuracy.py                    # in the simulator
    python benchmarks/math_accuracy.py --device gpu       # on the GPU (cuda-python, a CUDA device)
    python benchmarks/math_accuracy.py --functions exp,sin --types f32

For every function and type: the number of inputs, the largest error in ulp against the exact
value (float64 NumPy/SciPy for f32, mpmath for f64; tests/math_accuracy_cases.py says how the
inputs are chosen), the argument where it occurs, and where it was measured. With --compare,
both the simulator and the GPU run and the table also says whether their results are identical
bit for bit (NaNs compared as NaNs).
"""
from __future__ import annotations

import argparse
import datetime
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "tests"), ROOT]      # kernel_harness; ptxpy from this checkout

import math_accuracy_cases as cases  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("simulator", "gpu"), default="simulator")
    parser.add_argument("--functions", default=",".join(cases.FUNCTIONS))
    parser.add_argument("--types", default="f32,f64")
    parser.add_argument("--compare", action="store_true",
                        help="run on the GPU and in the simulator and compare the bits")
    parser.add_argument("--throughput", action="store_true",
                        help="instead: GPU time per element, accurate and fast_math (needs a GPU)")
    args = parser.parse_args(argv)
    if args.throughput:
        return throughput(args.functions.split(","), args.types.split(","))
    if args.device == "gpu" or args.compare:
        os.environ["PTXPY_TEST_DEVICE"] = "gpu"
    print(f"# math library accuracy, {args.device if not args.compare else 'gpu vs simulator'}, "
          f"{datetime.date.today().isoformat()}")
    header = "| function | type | inputs | max ulp | at x | measured in |"
    if args.compare:
        header += " bits equal to the simulator |"
    print(header)
    print("|" + " --- |" * (header.count("|") - 1))
    for ty in args.types.split(","):
        for name in args.functions.split(","):
            print(_row(name, ty, args.compare), flush=True)
    return 0


def _row(name: str, ty: str, compare: bool) -> str:
    start = time.perf_counter()
    result = cases.measure(name, ty)
    where = f"x={result['worst_x']!r}"
    if result["worst_y"] is not None:
        where += f", y={result['worst_y']!r}"
    row = (f"| {name} | {ty} | {result['inputs']} | {result['max_ulp']:.3f} | {where} | "
           f"{result['device']} ({time.perf_counter() - start:.1f} s) |")
    if compare:
        os.environ.pop("PTXPY_TEST_DEVICE")
        simulated = cases.evaluate(name, ty, result["x"], result["y"], assemble=False)
        os.environ["PTXPY_TEST_DEVICE"] = "gpu"
        row += f" {_identical(result['result'], simulated)} |"
    return row


def _identical(a: np.ndarray, b: np.ndarray) -> str:
    udtype = np.uint32 if a.dtype.itemsize == 4 else np.uint64
    same = (a.view(udtype) == b.view(udtype)) | (np.isnan(a) & np.isnan(b))
    return "yes" if same.all() else f"no: {int((~same).sum())} differ"


def throughput(names: list, types: list, n: int = 1 << 24, repeats: int = 20) -> int:
    """Nanoseconds per element of `out[i] = math.NAME(x[i])` on the GPU, median of `repeats`
    launches over n elements of random arguments in [-10, 10] (log: (0, 10])."""
    from kernel_harness import compile_source

    print("| function | type | accurate (ns/element) | fast_math (ns/element) |")
    print("| --- | --- | --- | --- |")
    for ty in types:
        dtype = np.float32 if ty == "f32" else np.float64
        rng = np.random.default_rng(0)
        for name in names:
            x = rng.uniform(-10, 10, n).astype(dtype)
            if name.startswith("log"):
                x = np.abs(x) + dtype(1e-3)
            call = f"{name}(x[i], y[i])" if name in cases.BINARY else f"{name}(x[i])"
            source = cases.SOURCE.format(ty=ty, call=call)
            times = []
            for fast in (False, True):
                ptx = compile_source(source, "kernel", fast_math=fast).ptx
                times.append(_time_kernel(ptx, np.abs(x) if name in cases.BINARY else x, repeats) / n * 1e6)
            print(f"| {name} | {ty} | {times[0]:.4f} | {times[1]:.4f} |", flush=True)
    return 0


def _time_kernel(ptx: str, x: np.ndarray, repeats: int) -> float:
    """Median milliseconds of one launch of `kernel(x, y, out)` over len(x) elements."""
    import ctypes

    from cuda.bindings import driver as cu

    def check(result):
        err, *rest = result if isinstance(result, tuple) else (result,)
        assert int(err) == 0, f"CUDA error {err}"
        return rest[0] if len(rest) == 1 else rest

    check(cu.cuInit(0))
    ctx = check(cu.cuDevicePrimaryCtxRetain(check(cu.cuDeviceGet(0))))
    check(cu.cuCtxSetCurrent(ctx))
    module = check(cu.cuModuleLoadData(ptx.encode() + b"\0"))
    function = check(cu.cuModuleGetFunction(module, b"kernel"))
    n = len(x)
    buffers = [check(cu.cuMemAlloc(x.nbytes)) for _ in range(3)]
    for dptr in buffers[:2]:
        check(cu.cuMemcpyHtoD(dptr, x.ctypes.data, x.nbytes))
    values = []
    for dptr in buffers:     # each array: pointer, then its shape
        values += [ctypes.c_uint64(int(dptr)), ctypes.c_int32(n)]
    pointers = (ctypes.c_void_p * len(values))(*[ctypes.addressof(v) for v in values])
    start, stop = check(cu.cuEventCreate(0)), check(cu.cuEventCreate(0))
    times = []
    for _ in range(repeats + 2):
        check(cu.cuEventRecord(start, 0))
        check(cu.cuLaunchKernel(function, -(-n // cases.BLOCK), 1, 1, cases.BLOCK, 1, 1, 0, 0,
                                ctypes.addressof(pointers), 0))
        check(cu.cuEventRecord(stop, 0))
        check(cu.cuEventSynchronize(stop))
        times.append(check(cu.cuEventElapsedTime(start, stop)))
    for dptr in buffers:
        check(cu.cuMemFree(dptr))
    check(cu.cuModuleUnload(module))
    return float(np.median(times[2:]))


if __name__ == "__main__":
    sys.exit(main())
