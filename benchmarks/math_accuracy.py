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

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))

import math_accuracy_cases as cases  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("simulator", "gpu"), default="simulator")
    parser.add_argument("--functions", default=",".join(cases.FUNCTIONS))
    parser.add_argument("--types", default="f32,f64")
    parser.add_argument("--compare", action="store_true",
                        help="run on the GPU and in the simulator and compare the bits")
    args = parser.parse_args(argv)
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
    where = f"x={result['worst_x']!r}" + (f", y={result['worst_y']!r}" if result["worst_y"] is not None else "")
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


if __name__ == "__main__":
    sys.exit(main())
