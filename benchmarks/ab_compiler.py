"""A/B of compiler variants on the GPU: kernel time of the examples, each variant compiled in its
own process with its own kernel cache (device only).

    python benchmarks/ab_compiler.py [--variants base no-speculate ...] [--rounds 2] [--only TEXT ...]

A variant switches one compiler decision off, in the child process only: a pass taken out of
`passes.PIPELINE`, or a backend choice patched. Variants run alternately (base, A, base, A ...)
`--rounds` times, so a drift of the card's clock shows as a difference between rounds of the
same variant. Each variant's child process runs every case: choose them with `--only` (kernel
names) and `--variants` so that a run fits the device's time. Times are CUPTI kernel durations (`kernels._profiled_time`: the median over calls,
each on a fresh copy of the input); printed as TB/s (or TFLOP/s for matmul) per case, and
written as JSON to `$OUT/ab-compiler.json` (or the working directory).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

#: variant -> Python run in the child before anything is compiled
VARIANTS = {
    "base": "",
    "no-speculate": "_drop_pass('speculate')",
    "no-hoist": "_drop_pass('hoist')",
    "no-strength": "_drop_pass('strength')",
    # every mul_wide + add as mul.wide + add.s64 (SASS -16 on matmul; more registers elsewhere)
    "no-mad-wide": "_no_mad_wide()",
    # arms of up to 12 instructions, exp/log/sqrt... included: softmax's `merge` (two exps) as
    # selects; SASS 694 -> 660 (CACHE=4), 549 -> 510 (CACHE=0, 20 -> 27 registers)
    "speculate-wide": ("speculate.MAX_ARM = 12; speculate.CHEAP_OPS = speculate.CHEAP_OPS | "
                       "{'ex2', 'lg2', 'rcp', 'rsqrt', 'sqrt', 'sin', 'cos', 'tanh'}"),
    # reassoc.JOIN_EXISTING on: rms_norm_warp SASS 124 -> 97, registers 32 -> 39 on sm_90
    "join-existing": "reassoc.JOIN_EXISTING = True",
    # examples/matmul.py with its `for k in range(BK)` unrolled by 2 or 16 (ptxas keeps it a
    # loop of 64 FFMAs; nvcc unrolls its twin by 2): 123 / 127 registers on sm_90
    "matmul-unroll-2": "_unroll_matmul_k(2)",
    "matmul-unroll-16": "_unroll_matmul_k(16)",
    # constant-step `range` loops stepping from `v` even where `v + step` could wrap (before
    # session 31), not from `min(v, stop - step)`
    "unclamped-range": "_unclamped_range()",
}

CHILD = r'''
import json, os, sys
sys.path.insert(0, {here!r}); sys.path.insert(0, os.path.join({here!r}, "..", "examples"))
from ptxpy.transpiler import passes
from ptxpy.transpiler.backend import isel
from ptxpy.transpiler.passes import reassoc, speculate


def _drop_pass(name):
    passes.PIPELINE[:] = [(n, run) for n, run in passes.PIPELINE if n != name]


def _no_mad_wide():
    plain = isel.ISel._mad_candidate

    def candidate(self, add):
        mul = plain(self, add)
        return None if mul is not None and mul.op == "mul_wide" else mul
    isel.ISel._mad_candidate = candidate


def _unclamped_range():
    """Constant-step `range` loops as built before session 31: `v + step` at the latch even
    where it could wrap past the type's end (the loop then went on from the other end)."""
    from ptxpy.transpiler import ssa_builder
    ssa_builder._Builder.latch_limit = lambda self, stop, step, sign: None


def _unroll_matmul_k(times):
    """A copy of examples/matmul.py whose K-step loop runs `times` steps per iteration,
    unrolled with static_range, first on sys.path."""
    import tempfile
    source = open(os.path.join({here!r}, "..", "examples", "matmul.py")).read()
    head = "        for k in range(BK):\n"
    start = source.index(head)
    end = source.index("        ptxpy.syncthreads()          # everyone is done reading")
    body = "".join("    " + line if line.strip() else line
                   for line in source[start + len(head):end].splitlines(keepends=True))
    unrolled = (f"        for kk in range(0, BK, {{times}}):\n"
                f"            for u in ptxpy.static_range({{times}}):\n"
                f"                k = kk + u\n")
    folder = tempfile.mkdtemp()
    with open(os.path.join(folder, "matmul.py"), "w") as f:
        f.write(source[:start] + unrolled + body + source[end:])
    sys.path.insert(0, folder)


{patch}
import jax.numpy as jnp
import numpy as np
import kernels
import matmul_blocks
import prefix_scan
import rms_norm

only = {only!r}
wanted = lambda kernel: not only or any(text in kernel for text in only)
rng = np.random.default_rng(1)


def extra_cases():
    if wanted("prefix_scan"):
        x = rng.integers(-9, 9, 1 << 26, dtype=np.int32)
        yield ("prefix_scan", "2^26", prefix_scan.cumsum, (x,), None, 16 << 26, None)
    if wanted("matmul_blocks"):
        a, b = (rng.standard_normal((4096, 4096), np.float32) for _ in range(2))
        yield ("matmul_blocks", "4096^3", matmul_blocks.matmul, (a, b), None, None, 2 * 4096 ** 3)
    if wanted("rms_norm_warp"):       # pyptx's shape: one warp per row, launch-bound
        x, w = rng.standard_normal((16, 512), np.float32), rng.standard_normal(512, np.float32)
        yield ("rms_norm_warp", "16x512", rms_norm.rms_norm_small, (x, w), None, 8 * x.size, None)


result = {{}}
for kernel, label, fn, inputs, _, nbytes, flops in [*kernels.cases(False, wanted), *extra_cases()]:
    seconds = kernels._profiled_time(fn, [jnp.asarray(a) for a in inputs])
    result[f"{{kernel}} {{label}}"] = (round(nbytes / seconds / 1e12, 4) if nbytes
                                       else round(flops / seconds / 1e12, 3))
print(json.dumps(result))
'''


def run_variant(variant: str, only: list) -> dict:
    code = CHILD.format(here=HERE, patch=VARIANTS[variant], only=only)
    env = dict(os.environ, PTXPY_CACHE_DIR=tempfile.mkdtemp(prefix=f"ab-{variant}-"))
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    lines = done.stdout.strip().splitlines()
    if done.returncode or not lines:
        return {"error": done.stderr[-3000:]}
    return json.loads(lines[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", nargs="+", default=[v for v in VARIANTS if v != "base"],
                        choices=sorted(VARIANTS))
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--only", nargs="+", default=[],
                        help="kernels whose name contains one of these (matmul, rms_norm, ...)")
    args = parser.parse_args()
    runs = []
    for round_ in range(args.rounds):
        for variant in ["base"] + [v for v in args.variants if v != "base"]:
            result = run_variant(variant, args.only)
            runs.append({"round": round_, "variant": variant, "result": result})
            print(round_, variant, json.dumps(result), flush=True)
    path = os.path.join(os.environ.get("OUT", "."), "ab-compiler.json")
    with open(path, "w") as f:
        json.dump(runs, f, indent=1)
    print("written", path)


if __name__ == "__main__":
    main()
