"""Transpile time per kernel: ptxpy beside Numba-CUDA's `cuda.compile_ptx` (both on the CPU).

    python benchmarks/compile_time.py [--repeat 20] [--numba-python PATH]

Warm: in one process after imports, the median over repeats of a full compile from source
(parse, type-check, SSA, passes, registers, PTX; the parse cache is cleared before each).
Again: the same source compiled again with the parse cache kept, as a second specialisation or
a second kernel of one file is (device functions are not checked again either).
Cold: a fresh `python -c` that imports the compiler and compiles one kernel, wall time including
interpreter start-up, in this environment (where PYTHONDONTWRITEBYTECODE=1, ptxpy's modules
are compiled from source every time). Cold+pyc: the same with Python's bytecode cache (kept in a
temporary PYTHONPYCACHEPREFIX, primed by one run), as after `pip install`; Numba's site-packages
always have theirs. Numba runs when `numba.cuda` imports in this Python, or in `--numba-python`
(a virtualenv with `numba-cuda` and `cuda-toolkit[nvvm,nvrtc]`).

    python benchmarks/compile_time.py --stages [--repeat 20]

prints instead where a warm compile's time goes: parse (Python's and libcst's, positions), type
check, SSA construction, each pass of the pipeline (summed per pass name; a pass that
`passes.optimize` skips counts nothing) and the backend, as
medians in milliseconds (with Python's cyclic garbage collector paused, as the driver has it
during a compile); below the total, the part of it that libcst's parse took.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from compile_kernels import KERNELS  # noqa: E402


def warm_ptxpy(source: str, name: str, repeat: int, cached: bool = False) -> float:
    from ptxpy.transpiler import driver

    times = []
    driver.transpile(source, "bench.py", kernels=[name])
    for _ in range(repeat):
        if not cached:
            driver.clear_caches()
        start = time.perf_counter()
        driver.transpile(source, "bench.py", kernels=[name])
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def stage_times(source: str, name: str, repeat: int) -> dict:
    """{stage: median ms} of warm compiles from source, stage by stage; the last row, LIBCST,
    is the part of them that libcst's parse took."""
    from ptxpy.transpiler import toplevel

    times: dict = {}

    def record(stage: str, seconds: float) -> None:
        times.setdefault(stage, []).append(seconds)

    libcst_parse = toplevel.libcst_parse
    in_libcst = [0.0]

    def timed_libcst_parse(text):
        start = time.perf_counter()
        try:
            return libcst_parse(text)
        finally:
            in_libcst[0] += time.perf_counter() - start

    toplevel.libcst_parse = timed_libcst_parse
    try:
        for _ in range(repeat + 1):    # the first round warms up
            in_libcst[0] = 0.0
            _time_stages(source, name, record)
            record(LIBCST, in_libcst[0])
    finally:
        toplevel.libcst_parse = libcst_parse
    return {stage: statistics.median(t[1:]) * 1e3 for stage, t in times.items()}


#: the row of `stage_times` that the stages above it include: libcst's parse of the file (in
#: "parse"; in "check" where a long file's function is parsed when first needed)
LIBCST = "(of which libcst's parse)"


def _time_stages(source: str, name: str, record) -> None:
    """One compile of kernel `name`, each stage's seconds given to `record(stage, seconds)`."""
    from ptxpy.transpiler import driver, passes
    from ptxpy.transpiler.backend import emit_ptx
    from ptxpy.transpiler.frontend import check_kernel, parse_module
    from ptxpy.transpiler.ssa_builder import build_function

    options = driver.Options()

    def timed(stage: str, step):
        start = time.perf_counter()
        result = step()
        record(stage, time.perf_counter() - start)
        return result

    with driver._GcPaused():   # as `driver.transpile` runs a compile
        parsed = timed("parse", lambda: parse_module(source, "bench.py"))
        typed = timed("check", lambda: check_kernel(parsed, name))
        func = timed("ssa", lambda: build_function(typed, options.arch, options.as_dict()))
        per_pass = {pass_name: 0.0 for pass_name, _ in passes.PIPELINE}
        func = passes.optimize(func, pipeline=[(pass_name, _timed(run, pass_name, per_pass))
                                               for pass_name, run in passes.PIPELINE])
        for pass_name, seconds in per_pass.items():
            record(f"pass {pass_name}", seconds)
        timed("backend", lambda: emit_ptx(func))


def _timed(run, pass_name: str, per_pass: dict):
    """`run`, adding the seconds it takes to `per_pass[pass_name]`."""
    def timed_run(func):
        start = time.perf_counter()
        func = run(func)
        per_pass[pass_name] += time.perf_counter() - start
        return func
    return timed_run


def print_stages(repeat: int) -> None:
    rows = {name: stage_times(source, name, repeat) for name, (source, _) in KERNELS.items()}
    print(f"{'stage (ms)':<26}" + "".join(f"{name:>10}" for name in rows))
    for stage in next(iter(rows.values())):
        if stage != LIBCST:
            print(f"{stage:<26}" + "".join(f"{row[stage]:>10.2f}" for row in rows.values()))
    print(f"{'total':<26}" + "".join(f"{sum(row.values()) - row[LIBCST]:>10.2f}"
                                     for row in rows.values()))
    print(f"{LIBCST:<26}" + "".join(f"{row[LIBCST]:>10.2f}" for row in rows.values()))


def cold(python: str, code: str, env: dict | None = None, runs: int = 5) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([python, "-c", code], check=True, capture_output=True, env=env)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def cold_ptxpy(source: str, name: str, pycache: str | None = None) -> float:
    code = f"import ptxpy; ptxpy.transpile({source!r}, 'bench.py')"
    if pycache is None:
        return cold(sys.executable, code)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = pycache
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, env=env)
    return cold(sys.executable, code, env)


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
    parser.add_argument("--stages", action="store_true", help="where the warm time goes")
    args = parser.parse_args()
    if args.stages:
        print_stages(args.repeat)
        return
    numba_python = find_numba_python(args.numba_python)
    print(f"{'kernel':<10} {'lines':>5} {'warm':>8} {'again':>8} {'cold':>8} {'cold+pyc':>9} "
          f"{'numba warm':>11} {'numba cold':>11} {'warm x':>7} {'cold x':>13}")
    with tempfile.TemporaryDirectory() as pycache:
        for name, (source, lines) in KERNELS.items():
            print(_row(name, source, lines, args.repeat, numba_python, pycache), flush=True)
    if not numba_python:
        print("(numba-cuda not found: pass --numba-python or set NUMBA_PYTHON)")


def _row(name: str, source: str, lines: int, repeat: int, numba_python, pycache: str) -> str:
    """One kernel's line: ptxpy's times, then Numba's and the ratios (cold: without/with pyc)."""
    warm = warm_ptxpy(source, name, repeat)
    again = warm_ptxpy(source, name, repeat, cached=True)
    cold_ms, cold_pyc = cold_ptxpy(source, name), cold_ptxpy(source, name, pycache)
    row = f"{name:<10} {lines:>5} {warm:>6.2f}ms {again:>6.2f}ms {cold_ms:>6.0f}ms {cold_pyc:>7.0f}ms "
    if not numba_python:
        return row + f"{'-':>11} {'-':>11}"
    n_warm, n_cold = numba_times(numba_python, name, max(3, repeat // 4))
    if n_warm is None:
        return row + f"{'-':>11} {'-':>11}"
    return (row + f"{n_warm:>9.1f}ms {n_cold:>9.0f}ms {n_warm / warm:>6.1f}x "
            f"{n_cold / cold_ms:>5.1f}x/{n_cold / cold_pyc:.1f}x")


if __name__ == "__main__":
    main()
