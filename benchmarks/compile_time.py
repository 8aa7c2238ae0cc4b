"""Transpile time per kernel: ptxpy beside Numba-CUDA's `cuda.compile_ptx` (both on the CPU).

    python benchmarks/compile_time.py [--repeat 20] [--numba-python PATH]

Warm: in one process after imports, the median over repeats of a full compile from source
(parse, type-check, SSA, passes, registers, PTX; no cache). Cold: a fresh `python -c` that
imports the compiler and compiles one kernel, wall time including interpreter start-up.
Numba runs when `numba.cuda` imports in this Python, or in `--numba-python` (a virtualenv with
`numba-cuda` and `cuda-toolkit[nvvm,nvrtc]`).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import textwrap
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from compile_kernels import KERNELS  # noqa: E402


def warm_ptxpy(source: str, name: str, repeat: int) -> float:
    from ptxpy.transpiler import driver

    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        driver.transpile(source, "bench.py", kernels=[name])
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def cold(python: str, code: str) -> float:
    times = []
    for _ in range(3):
        start = time.perf_counter()
        subprocess.run([python, "-c", code], check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def cold_ptxpy(source: str, name: str) -> float:
    code = f"import ptxpy; ptxpy.transpile({source!r}, 'bench.py')"
    return cold(sys.executable, code)


NUMBA_WARM = textwrap.dedent("""
    import json, statistics, sys, time
    sys.path.insert(0, {here!r})
    from compile_kernels import numba_kernel
    from numba import cuda
    fn, sig = numba_kernel({name!r})
    cuda.compile_ptx(fn, sig, cc=(9, 0))
    times = []
    for _ in range({repeat}):
        fn, sig = numba_kernel({name!r})   # a fresh function: no dispatcher cache
        start = time.perf_counter()
        cuda.compile_ptx(fn, sig, cc=(9, 0))
        times.append(time.perf_counter() - start)
    print(json.dumps(statistics.median(times) * 1e3))
""")

NUMBA_COLD = ("import sys; sys.path.insert(0, {here!r}); from compile_kernels import numba_kernel; "
              "from numba import cuda; fn, sig = numba_kernel({name!r}); cuda.compile_ptx(fn, sig, cc=(9, 0))")


def numba_times(python: str, name: str, repeat: int):
    code = NUMBA_WARM.format(here=HERE, name=name, repeat=repeat)
    done = subprocess.run([python, "-c", code], capture_output=True, text=True)
    if done.returncode != 0:
        return None, None
    warm = json.loads(done.stdout.strip().splitlines()[-1])
    return warm, cold(python, NUMBA_COLD.format(here=HERE, name=name))


def find_numba_python(given: str | None) -> str | None:
    for python in filter(None, [given, sys.executable]):
        ok = subprocess.run([python, "-c", "from numba import cuda"], capture_output=True)
        if ok.returncode == 0:
            return python
    return None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--numba-python", default=os.environ.get("NUMBA_PYTHON"))
    args = parser.parse_args()
    numba_python = find_numba_python(args.numba_python)
    print(f"{'kernel':<12} {'lines':>5} {'ptxpy warm':>11} {'ptxpy cold':>11} "
          f"{'numba warm':>11} {'numba cold':>11} {'warm x':>7} {'cold x':>7}")
    for name, (source, lines) in KERNELS.items():
        warm = warm_ptxpy(source, name, args.repeat)
        cold_ms = cold_ptxpy(source, name)
        n_warm = n_cold = None
        if numba_python:
            n_warm, n_cold = numba_times(numba_python, name, max(3, args.repeat // 4))
        row = f"{name:<12} {lines:>5} {warm:>9.2f}ms {cold_ms:>9.1f}ms "
        if n_warm is not None:
            row += f"{n_warm:>9.1f}ms {n_cold:>9.1f}ms {n_warm / warm:>6.0f}x {n_cold / cold_ms:>6.1f}x"
        else:
            row += f"{'-':>11} {'-':>11}"
        print(row)
    if not numba_python:
        print("(numba-cuda not found: pass --numba-python or set NUMBA_PYTHON)")


if __name__ == "__main__":
    main()
