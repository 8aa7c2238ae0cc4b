"""Compile time of a kernel with many registers live together, as it grows (on the CPU).

    python benchmarks/regalloc_scaling.py [--mt 4 8 16 32] [--ints]

examples/matmul_tf32.py with its warp tile's mma tiles down (`MT`, 4 as shipped) raised: each
tile adds accumulators live through the K loop, far past the 255 registers a thread has at the
top end. Prints, per MT, the registers of the largest interference graph, the PTX lines and
the compile's wall time (one compile, caches cleared, after a first compile of the example
as shipped). `--ints` keeps the register allocator on
its loops over Python ints at every size (as before `backend/bitmatrix.py`), to compare.
"""
from __future__ import annotations

import argparse
import os
import re
import time

from ptxpy.transpiler import driver
from ptxpy.transpiler.backend import regalloc

EXAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples",
                       "matmul_tf32.py")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mt", type=int, nargs="+", default=[4, 8, 16, 32])
    ap.add_argument("--ints", action="store_true")
    args = ap.parse_args()
    if args.ints:
        regalloc.LARGE_GRAPH = 10 ** 9
    source = open(EXAMPLE).read()
    sizes = []
    graph_of = regalloc.interference_graph

    def counting(mfunc, registers):
        graph = graph_of(mfunc, registers)
        sizes.append(len(graph))
        return graph

    regalloc.interference_graph = counting
    driver.transpile(source, EXAMPLE)   # imports what a compile needs, unmeasured
    print(f"{'MT':>4} {'registers':>9} {'PTX lines':>9} {'seconds':>8}")
    for mt in args.mt:
        text, count = re.subn(r"^MT = .*$", f"MT = {mt}", source, count=1, flags=re.M)
        assert count == 1, "matmul_tf32.py no longer sets MT on a line of its own"
        sizes.clear()
        driver.clear_caches()
        start = time.perf_counter()
        ptx = driver.transpile(text, EXAMPLE)
        seconds = time.perf_counter() - start
        lines = sum(str(p).count("\n") for p in (ptx.values() if isinstance(ptx, dict) else [ptx]))
        print(f"{mt:>4} {max(sizes):>9} {lines:>9} {seconds:>8.2f}")


if __name__ == "__main__":
    main()
