"""Compile time of long unrolled kernels whose iterations branch (session 59's exploration
found 2048 and 4096 iterations of an `if` taking 7 and 46 s):

    python benchmarks/probes/unrolled_compile_probe.py [N ...]

`branches`: each of N unrolled iterations loads, tests and updates an accumulator in an
if/else, which `speculate` turns into selects (a run of N merged blocks); `loops`: each holds a
two-step `while` with a run-time `break` (N small loops for `licm`, an accumulator's N copies
coalesced into one register). Prints the seconds of one compile from source each.
"""
import sys
import time

from ptxpy.transpiler import driver

BRANCHES = """
import ptxpy
from ptxpy import Array, f32

@ptxpy.jit
def branches(x: Array[f32], out: Array[f32]):
    t = ptxpy.thread_idx.x
    acc = 0.0
    for k in ptxpy.static_range({n}):
        v = x[(t + k) % 32]
        if v > 0.0:
            acc += v * f32(k)
        else:
            acc -= v
    out[t] = acc
"""

LOOPS = """
import ptxpy
from ptxpy import Array, f32

@ptxpy.jit
def loops(x: Array[f32], out: Array[f32]):
    t = ptxpy.thread_idx.x
    acc = 0.0
    for k in ptxpy.static_range({n}):
        j = 0
        while j < 2:
            if x[(t + k + j) % 32] < -2.0:
                break
            acc += f32(j)
            j += 1
    out[t] = acc
"""


def main() -> None:
    sizes = [int(a) for a in sys.argv[1:]] or [512, 1024, 2048]
    driver.transpile(BRANCHES.format(n=4), "warm.py")
    for name, template in (("branches", BRANCHES), ("loops", LOOPS)):
        for n in sizes:
            driver.clear_caches()
            start = time.perf_counter()
            driver.transpile(template.format(n=n), f"{name}.py")
            print(f"{name:9s} {n:5d}  {time.perf_counter() - start:7.2f} s", flush=True)


if __name__ == "__main__":
    main()
