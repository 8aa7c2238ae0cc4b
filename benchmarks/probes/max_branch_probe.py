"""A branch on `max(x, 0)`: right on the card? (device only)

Random program 1064 of seed 4026 (`--loops`), cut down by `reduce_gpu.py`, stored `d[1]` where
`if max(0, i, 0): pass else: v = d[i]` must leave 0 for thread 1. Each form below branches on
a `max`/`min` of a thread's index or input and is compared with NumPy; then the cut-down
program with rewrites of its PTX as session 23 wrote it (two maxes).

    python benchmarks/probes/max_branch_probe.py [--sass]
"""
import os
import re
import sys

import numpy as np

sys.path.insert(0, "tests")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from known_index_probe import launcher, report, show_sass  # noqa: E402

HEAD = """
import ptxpy
from ptxpy import Array, i32, i64

@ptxpy.jit
def kern(a: Array[i32], d: Array[i64], o: Array[i64]):
    i = ptxpy.global_id(0)
    x = a[i]
    v: i64 = 0
"""
TAIL = "    o[i] = v\n"


def branch(test):
    return f"    if {test}:\n        pass\n    else:\n        v = d[i]\n"


# name: (source between HEAD and TAIL, whether thread i with input x loads d[i], or the value
# it stores)
FORMS = {
    "if max(0, i, 0)": (branch("max(0, i, 0)"), lambda i, x: max(0, i, 0) == 0),
    "if max(i, 0)": (branch("max(i, 0)"), lambda i, x: max(i, 0) == 0),
    "if max(0, i)": (branch("max(0, i)"), lambda i, x: max(0, i) == 0),
    "if max(x, 0)": (branch("max(x, 0)"), lambda i, x: max(x, 0) == 0),
    "if max(0, x, 0)": (branch("max(0, x, 0)"), lambda i, x: max(0, x, 0) == 0),
    "if min(x, 0)": (branch("min(x, 0)"), lambda i, x: min(x, 0) == 0),
    "if max(x, 3) != 3": (branch("max(x, 3) != 3"), lambda i, x: max(x, 3) == 3),
    "if max(x, 0) == 0 (else)": (branch("max(x, 0) == 0"), lambda i, x: max(x, 0) != 0),
    "if max(x, 0) > 0": (branch("max(x, 0) > 0"), lambda i, x: not max(x, 0) > 0),
    "if max(i64(x), 0)": (branch("max(i64(x), 0)"), lambda i, x: max(x, 0) == 0),
    "select: 0 if max(x, 0) else d[i]": ("    v = 0 if max(x, 0) else d[i]\n",
                                         lambda i, x: max(x, 0) == 0),
    "if max(0, x, 0) == 0 (else)": (branch("max(0, x, 0) == 0"), lambda i, x: max(x, 0) != 0),
    "if max(0, x, 0) > 0": (branch("max(0, x, 0) > 0"), lambda i, x: max(x, 0) == 0),
    "if max(0, x, 0) == 3 (else)": (branch("max(0, x, 0) == 3"), lambda i, x: max(x, 0) != 3),
    "if max(x, i, 0)": (branch("max(x, i, 0)"), lambda i, x: max(x, i, 0) == 0),
    "if max(x, i - 30, 0)": (branch("max(x, i - 30, 0)"), lambda i, x: max(x, i - 30, 0) == 0),
    "if max(max(x, 0), 1) != 1": (branch("max(max(x, 0), 1) != 1"), lambda i, x: max(x, 1) == 1),
    "if min(0, x, 0)": (branch("min(0, x, 0)"), lambda i, x: min(x, 0) == 0),
    "if max(0, i64(x), 0)": (branch("max(0, i64(x), 0)"), lambda i, x: max(x, 0) == 0),
    "o = max(0, x, 0) == 0": ("    v = i64(max(0, x, 0) == 0)\n",
                               lambda i, x: int(max(x, 0) == 0)),
    "select: 0 if max(0, x, 0) else d[i]": ("    v = 0 if max(0, x, 0) else d[i]\n",
                                            lambda i, x: max(x, 0) == 0),
}

REDUCED = HEAD + branch("max(0, i, 0)") + TAIL
SETP = r"setp\.eq\.s32 (%p\d+), (%r\d+), 0;\s*@%p\d+ bra (\$BB\d+);"
# name: rewrites (pattern, replacement) of the cut-down program's PTX
PTX_FORMS = {
    "cut down, today's ptxpy": None,
    "cut down, two maxes": [],
    "setp.ne, branch the other way": [
        (SETP, r"setp.ne.s32 \1, \2, 0; @!\1 bra \3;")],
    "setp.gt instead of setp.ne": [
        (SETP, r"setp.gt.s32 \1, \2, 0; @!\1 bra \3;")],
    "one max": [(r"max\.s32 (%r\d+), \1, 0;\n", "")],
    "max with the register first": [(r"max\.s32 (%r\d+), 0, (%r\d+);", r"max.s32 \1, \2, 0;")],
    "max.s32 by a register holding 0": [
        (r"\.reg \.b32 %r<(\d+)>;", r".reg .b32 %r<\1>; .reg .b32 %rz;"),
        (r"max\.s32 (%r\d+), 0, (%r\d+);", r"mov.u32 %rz, 0; max.s32 \1, %rz, \2;")],
}


def run_forms():
    from kernel_harness import compile_source

    a = (np.arange(64, dtype=np.int32) - 20) * np.where(np.arange(64) % 2, 1, -1).astype(np.int32)
    a[[5, 6]] = 0
    a[7] = 3
    d = np.arange(1000, 1064, dtype=np.int64)
    for name, (body, effect) in FORMS.items():
        text = compile_source(HEAD + body + TAIL, "kern", arch="sm_90").ptx
        run(name, text, a, d, [want(effect(i, int(a[i])), d[i]) for i in range(64)])


def want(effect, loaded):
    """`effect`: whether the thread loads d[i] (True/False), or the value it stores."""
    return loaded if effect is True else 0 if effect is False else effect


def run_ptx_forms():
    from kernel_harness import compile_source

    import ptxpy.transpiler.passes.sccp as sccp

    a = np.zeros(64, np.int32)
    d = np.arange(1000, 1064, dtype=np.int64)
    kept = sccp._repeated_min_max
    sccp._repeated_min_max = lambda *args: None      # the PTX as session 23 wrote it
    base = compile_source(REDUCED, "kern", arch="sm_90").ptx
    sccp._repeated_min_max = kept
    want = [d[0]] + [0] * 63
    for name, rewrites in PTX_FORMS.items():
        text = compile_source(REDUCED, "kern", arch="sm_90").ptx if rewrites is None else base
        for pattern, replacement in rewrites or []:
            text, count = re.subn(pattern, replacement, text)
            assert count, f"{name}: pattern not found: {pattern}"
        run(name, text, a, d, want)


def run(name, text, a, d, want):
    out = np.full(64, -1, np.int64)
    launcher()(text, "kern", (1,), (64,), [a, 64, d, 64, out, 64])
    report(name, out, np.array(want, np.int64))
    show_sass(text)


if __name__ == "__main__":
    run_forms()
    run_ptx_forms()
