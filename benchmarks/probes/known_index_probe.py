"""`~x` where a branch tells ptxas what `x` is: right on the card? (device only)

Random program 98 of seed 3708 (`--atomic --warp`) stored `b[63]` at `m[0, 0]` instead of
`m[0, 3]`: thread 0 ran `if not bool(i): m[i, (~i) & 3] = ...`, where the branch tells ptxas
that `i` is 0. Each form below computes something from `x` under such a branch (or without
one) and is compared with NumPy; then the same for floats, where `x == 0.0` may be -0.0 (all
right, with and without the fix: ptxas does not put 0.0 for x there); then the cut-down
program 98 with rewrites of its PTX.

    python benchmarks/probes/known_index_probe.py [--sass]
"""
import os
import re
import sys

import numpy as np

sys.path.insert(0, "tests")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

HEAD = """
import ptxpy
from ptxpy import Array, f32, f64, i16, i32, i64

@ptxpy.jit
def kern(a: Array[i32], b: Array[f32], o: Array[f32, 2]):
    i = ptxpy.global_id(0)
    for k in range(4):
        o[i, k] = f32(k)
"""
SHARED = """    m = ptxpy.shared_array((64, 4), f32)
    for k in range(4):
        m[i, k] = f32(k)
    {test}
        m[i, (~{x}) & 3] = b[63]
    for k in range(4):
        o[i, k] = m[i, k]
"""
# name: (source after HEAD, {i: (column, value)} for a thread's a[i] and i)
FORMS = {
    "if not bool(i): m[i, ~i & 3] = ...": (SHARED.format(test="if not bool(i):", x="i"),
                                           lambda i, x: (~i & 3, 14380.401) if i == 0 else None),
    "if i == 0: m[i, ~i & 3] = ...": (SHARED.format(test="if i == 0:", x="i"),
                                      lambda i, x: (~i & 3, 14380.401) if i == 0 else None),
    "no branch: m[i, ~i & 3] = ...": (SHARED.format(test="if True:", x="i"),
                                      lambda i, x: (~i & 3, 14380.401)),
    "if not bool(i): o[i, ~i & 3] = ...": ("    if not bool(i):\n        o[i, (~i) & 3] = b[63]\n",
                                           lambda i, x: (~i & 3, 14380.401) if i == 0 else None),
    "if not bool(i): o[i, 0] = ~i & 3": ("    if not bool(i):\n        o[i, 0] = f32((~i) & 3)\n",
                                         lambda i, x: (0, ~i & 3) if i == 0 else None),
    "if not bool(i): o[i, 0] = ~i": ("    if not bool(i):\n        o[i, 0] = f32(~i)\n",
                                     lambda i, x: (0, ~i) if i == 0 else None),
    "if i != 0: .. else: o[i, 0] = ~i & 3": (
        "    if i != 0:\n        o[i, 1] = f32(9)\n    else:\n        o[i, 0] = f32((~i) & 3)\n",
        lambda i, x: (1, 9) if i != 0 else (0, ~i & 3)),
    "if not bool(a[i]): o[i, 0] = ~a[i] & 3": (
        "    x = a[i]\n    if not bool(x):\n        o[i, 0] = f32((~x) & 3)\n",
        lambda i, x: (0, ~x & 3) if x == 0 else None),
    "if not (i != 5): o[i, 0] = ~i & 3": ("    if not (i != 5):\n        o[i, 0] = f32((~i) & 3)\n",
                                          lambda i, x: (0, ~i & 3) if i == 5 else None),
    "if i == 5: o[i, 0] = ~i & 3": ("    if i == 5:\n        o[i, 0] = f32((~i) & 3)\n",
                                    lambda i, x: (0, ~i & 3) if i == 5 else None),
    "if not bool(i): o[i, 0] = (i ^ 5) & 7": ("    if not bool(i):\n        o[i, 0] = f32((i ^ 5) & 7)\n",
                                              lambda i, x: (0, (i ^ 5) & 7) if i == 0 else None),
    "if not bool(i): o[i, 0] = ~i | 4": ("    if not bool(i):\n        o[i, 0] = f32((~i) | 4)\n",
                                         lambda i, x: (0, ~i | 4) if i == 0 else None),
    "i64: if not bool(x): o[i, 0] = ~x & 3": (
        "    x = i64(i)\n    if not bool(x):\n        o[i, 0] = f32((~x) & 3)\n",
        lambda i, x: (0, ~i & 3) if i == 0 else None),
    "select: ~i & 3 if not bool(i) else 7": ("    o[i, 0] = f32(((~i) & 3) if not bool(i) else 7)\n",
                                             lambda i, x: (0, ~i & 3) if i == 0 else (0, 7)),
    "if not bool(i) and b[i] < 0: o[i, 0] = ~i & 3": (
        "    if not bool(i) and b[i] < 0:\n        o[i, 0] = f32((~i) & 3)\n",
        lambda i, x: (0, ~i & 3) if i == 0 else None),
    "if not (bool(i) or b[i] > 100): o[i, 0] = ~i & 3": (
        "    if not (bool(i) or b[i] > 100):\n        o[i, 0] = f32((~i) & 3)\n",
        lambda i, x: (0, ~i & 3) if i == 0 else None),
    "while w != 0 .. then ~w & 3": (
        "    w = i & 3\n    while w != 0:\n        w -= 1\n    o[i, 0] = f32((~w) & 3)\n",
        lambda i, x: (0, 3)),
    "i16: if not bool(x): o[i, 0] = ~x & 3": (
        "    x = i16(i)\n    if not bool(x):\n        o[i, 0] = f32((~x) & 3)\n",
        lambda i, x: (0, ~i & 3) if i == 0 else None),
}

# the same question for floats: where `x == 0.0` holds, x may be -0.0 (compared by bits)
FLOAT_FORMS = {
    "if x != 0.0: .. else: o = 1 / x": (
        "    x = b[i]\n    if x != 0.0:\n        o[i, 0] = f32(5)\n    else:\n        o[i, 0] = 1.0 / x\n",
        lambda x: 5.0 if x != 0 else np.float32(1) / x),
    "if x == 0.0: o = 1 / x": ("    x = b[i]\n    if x == 0.0:\n        o[i, 0] = 1.0 / x\n",
                               lambda x: np.float32(1) / x if x == 0 else 0.0),
    "if not (x != 0.0): o = x * -1": ("    x = b[i]\n    if not (x != 0.0):\n        o[i, 0] = x * -1.0\n",
                                      lambda x: x * np.float32(-1) if x == 0 else 0.0),
    "f64: if x == 0.0: o = 1 / x": ("    x = f64(b[i])\n    if x == 0.0:\n        o[i, 0] = f32(1.0 / x)\n",
                                    lambda x: np.float32(np.float64(1) / np.float64(x)) if x == 0 else 0.0),
}


def run_float_forms():
    from kernel_harness import compile_source

    b = np.array([0.0, -0.0, 1.5, -0.0] * 16, np.float32)
    a = np.zeros(64, np.int32)
    for name, (body, value) in FLOAT_FORMS.items():
        text = compile_source(HEAD.replace("    for k in range(4):\n        o[i, k] = f32(k)\n", "")
                              + body, "kern", arch="sm_90").ptx
        out = np.zeros((64, 4), np.float32)
        launcher()(text, "kern", (1,), (64,), [a, 64, b, 64, out, 64, 4])
        want = np.zeros((64, 4), np.float32)
        with np.errstate(divide="ignore"):
            want[:, 0] = [value(x) for x in b]
        report(name, out.view(np.uint32), want.view(np.uint32))
        show_sass(text)


# program 98 cut down (reduce_gpu.py), and rewrites of its PTX
REDUCED = """
import ptxpy
from ptxpy import Array, f32

@ptxpy.jit
def kern(b: Array[f32], o: Array[f32, 2]):
    i = ptxpy.global_id(0)
    v2: bool = bool(i)
    m = ptxpy.shared_array((64, 4), f32)
    m[i, 0] = 0
    m[i, 1] = 0
    m[i, 2] = 0
    m[i, 3] = 0
    if (not v2):
        m[i, ((~i)) & 3] = 1
    o[i, 0] = 0
    o[i, 1] = 0
    o[i, 2] = 0
    o[i, 3] = m[i, 3]
"""
BRANCH = r"not\.pred (%p\d+), (%p\d+);\s*@!\1 bra (\$BB\d+);"
PTX_FORMS = {
    "program 98 cut down, today's ptxpy": None,
    "program 98 cut down": [],
    "branch on v2 itself": [(BRANCH, r"@\2 bra \3;")],
    "not v2 as setp.eq": [(r"not\.pred (%p\d+), %p\d+;", r"setp.eq.s32 \1, %r6, 0;")],
    "not v2 into another register": [(r"\.reg \.pred %p<\d+>;", ".reg .pred %p<4>;"),
                                     (BRANCH, r"not.pred %p3, \2; @!%p3 bra \3;")],
    "~i as xor -1": [(r"not\.b32 (%r\d+), (%r\d+);", r"xor.b32 \1, \2, -1;")],
}


def launcher():
    from gpu_launcher import gpu_run_kernel
    from ptxpy.runtime.simulator import run_kernel

    if os.environ.get("PTXPY_TEST_DEVICE") == "gpu":
        return gpu_run_kernel
    return lambda text, name, grid, block, args: run_kernel(text, name, grid=grid, block=block,
                                                            args=args)


def show_sass(text):
    if "--sass" in sys.argv:
        from min_probe import sass
        print("    " + sass(text).replace("\n", "\n    "))


def report(name, got, want):
    bad = [tuple(int(v) for v in x) for x in np.argwhere(got != want)]
    print(f"{name:44s} " + ("right" if not bad else
                            f"WRONG at {bad[:4]}: {got[bad[0]]}, not {want[bad[0]]}"), flush=True)


def run_forms():
    from kernel_harness import compile_source

    a = np.where(np.arange(64) % 3 == 0, 0, np.arange(64) * 7 - 100).astype(np.int32)
    b = np.linspace(-5, 5, 64).astype(np.float32)
    b[63] = 14380.401
    for name, (body, effect) in FORMS.items():
        text = compile_source(HEAD + body, "kern", arch="sm_90").ptx
        out = np.zeros((64, 4), np.float32)
        launcher()(text, "kern", (1,), (64,), [a, 64, b, 64, out, 64, 4])
        want = np.tile(np.arange(4, dtype=np.float32), (64, 1))
        for i in range(64):
            change = effect(i, int(a[i]))
            if change is not None:
                want[i, change[0]] = change[1]
        report(name, out, want)
        show_sass(text)


def run_ptx_forms():
    from kernel_harness import compile_source

    from without_fix import selector
    planned = selector()._plan_branch_tests
    selector()._plan_branch_tests = lambda self: None     # the PTX as session 22 wrote it
    base = compile_source(REDUCED, "kern", arch="sm_90").ptx
    selector()._plan_branch_tests = planned
    want = np.zeros((64, 4), np.float32)
    want[0, 3] = 1
    for name, rewrites in PTX_FORMS.items():
        text = compile_source(REDUCED, "kern", arch="sm_90").ptx if rewrites is None else base
        for pattern, replacement in rewrites or []:
            text, count = re.subn(pattern, replacement, text)
            assert count, f"{name}: pattern not found: {pattern}"
        out = np.zeros((64, 4), np.float32)
        launcher()(text, "kern", (1,), (64,), [np.zeros(64, np.float32), 64, out, 64, 4])
        report(name, out, want)
        show_sass(text)


if __name__ == "__main__":
    run_forms()
    run_float_forms()
    run_ptx_forms()
