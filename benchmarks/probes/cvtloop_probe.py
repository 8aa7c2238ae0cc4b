"""Does the GPU's compiler convert a bool it computes in a loop into bf16 or f16 correctly?
(device only)

Session 21's random program 827 (seed 2207, with --memory; cut down in reduced/program-827.py)
runs a loop once with a loop-carried bf16 `v4` (1.0, then 0.0) and computes `bf16(bool(v4) + 0)`:
PTX `setp.neu.bf16`, `selp.s32 1, 0`, `cvt.rn.bf16.s32`. The card gave the bits 0x0001 where
1.0 (0x3F80) was expected. `cvtf_probe.py` found the same conversion right outside a loop.
Each form below runs a loop N times (N a constant 1, or loaded: 0, 1, 2 or 3) with %h2 = 1.0 on
entry and 0.0 after the first trip, sets %h1 from %h2 as its name says inside the loop, and
stores %h1's bits (0 before the loop).

    python benchmarks/probes/cvtloop_probe.py [--sass]
"""
import sys

import numpy as np

sys.path.insert(0, "tests")
from gpu_launcher import gpu_run_kernel  # noqa: E402
from min_probe import entry, report  # noqa: E402

BF16 = {"one": "0x3F80", "setp": "setp.neu.bf16 %p1, %h2, %h3;", "cvt": "cvt.rn.bf16"}
F16 = {"one": "0x3C00", "setp": "setp.neu.f16 %p1, %h2, %h3;", "cvt": "cvt.rn.f16"}


def body(t, convert="{cvt}.s32 %h1, %r2;", select="selp.s32 %r2, 1, 0, %p1;", test="{setp}"):
    return [s.format(**t) for s in ["mov.b16 %h3, 0x0000;", test, select, convert]]


# name: (the type's constants, the loop body setting %h1 from %h2, a loop (or straight line))
FORMS = {
    "bf16: setp.neu, selp.s32 1 0, cvt.rn.bf16.s32 (program 827)": (BF16, body(BF16), True),
    "bf16: ... cvt.rn.bf16.u32": (BF16, body(BF16, "{cvt}.u32 %h1, %r2;"), True),
    "bf16: ... cvt.rn.f32.s32, cvt.rn.bf16.f32": (
        BF16, body(BF16, "cvt.rn.f32.s32 %f1, %r2; cvt.rn.bf16.f32 %h1, %f1;"), True),
    "bf16: ... selp.b16 1.0 0.0 (no cvt)": (BF16, body(BF16, "", "selp.b16 %h1, 0x3F80, 0x0000, %p1;"),
                                            True),
    "bf16: compare as f32, selp.s32, cvt.rn.bf16.s32": (
        BF16, body(BF16, test="cvt.f32.bf16 %f2, %h2; setp.neu.f32 %p1, %f2, 0f00000000;"), True),
    "bf16: compare bits, selp.s32, cvt.rn.bf16.s32": (
        BF16, body(BF16, test="and.b16 %h4, %h2, 0x7FFF; setp.ne.b16 %p1, %h4, 0;"), True),
    "bf16: the same, no loop": (BF16, body(BF16), False),
    "f16: setp.neu, selp.s32 1 0, cvt.rn.f16.s32": (F16, body(F16), True),
    "f16: ... cvt.rn.f32.s32, cvt.rn.f16.f32": (
        F16, body(F16, "cvt.rn.f32.s32 %f1, %r2; cvt.rn.f16.f32 %h1, %f1;"), True),
    "bf16: selp.s32 3 0, cvt.rn.bf16.s32": (BF16, body(BF16, select="selp.s32 %r2, 3, 0, %p1;"), True),
    # other tests (of %r6 = 1, then 0; of %f2 = 1.0, then 0.0; of %h2 loaded on entry)
    "bf16: setp.ne.s32 of an int, selp.s32 1 0, cvt.rn.bf16.s32": (
        BF16, body(BF16, test="setp.ne.s32 %p1, %r6, 0;"), True),
    "bf16: setp.neu.f32 of an f32, selp.s32 1 0, cvt.rn.bf16.s32": (
        BF16, body(BF16, test="setp.neu.f32 %p1, %f2, 0f00000000;"), True),
    "bf16: setp.neu.bf16 of a loaded value, selp.s32 1 0, cvt.rn.bf16.s32": (
        BF16, ["ld.global.u16 %h5, [%qd6];", "shl.b16 %h5, %h5, 7;",       # N * 2**-126
               "setp.eq.s32 %p3, %r1, 1;", "selp.b16 %h2, %h5, %h2, %p3;"]
        + body(BF16), True),
    # other ways to 1 or 0
    "bf16: a branch sets 1 or 0, cvt.rn.bf16.s32": (
        BF16, body(BF16, select="@%p1 bra $ONE; mov.u32 %r2, 0; bra.uni $JOIN;\n"
                   "$ONE: mov.u32 %r2, 1;\n$JOIN:"), True),
    "bf16: not.pred, selp.s32 0 1, cvt.rn.bf16.s32": (
        BF16, body(BF16, select="not.pred %p3, %p1; selp.s32 %r2, 0, 1, %p3;"), True),
    "bf16: selp.s16 1 0, cvt.rn.bf16.s16": (
        BF16, body(BF16, "cvt.rn.bf16.s16 %h1, %rs2;", "selp.s16 %rs2, 1, 0, %p1;"), True),
    "bf16: selp.s32 1 0, and 1, cvt.rn.bf16.s32": (
        BF16, body(BF16, select="selp.s32 %r2, 1, 0, %p1; and.b32 %r2, %r2, 1;"), True),
    # an f32 result (its bits stored)
    "f32: setp.neu.bf16, selp.s32 1 0, cvt.rn.f32.s32": (
        BF16, body(BF16, "cvt.rn.f32.s32 %f1, %r2;"), True),
    "f32: setp.ne.s32 of an int, selp.s32 1 0, cvt.rn.f32.s32": (
        BF16, body(BF16, "cvt.rn.f32.s32 %f1, %r2;", test="setp.ne.s32 %p1, %r6, 0;"), True),
    "f32: setp.neu.f32 of an f32, selp.s32 1 0, cvt.rn.f32.s32": (
        BF16, body(BF16, "cvt.rn.f32.s32 %f1, %r2;", test="setp.neu.f32 %p1, %f2, 0f00000000;"),
        True),
}
PTXPY_SOURCE = '''
import ptxpy
from ptxpy import Array, bf16, i32

@ptxpy.jit
def in_loop(n: Array[i32, 1], out: Array[bf16, 1]):
    i = ptxpy.thread_idx.x
    v = bf16(1)
    r = bf16(0)
    w = 0
    while w < n[i]:
        w += 1
        r = bool(v) + 0
        v = 0
    out[i] = r


@ptxpy.jit
def once(out: Array[bf16, 1]):         # program 827: ptxas knows the trip count
    i = ptxpy.thread_idx.x
    v = bf16(1)
    r = bf16(0)
    w = 0
    while w < 1:
        w += 1
        r = bool(v) + 0
        v = 0
    out[i] = r
'''


def kernel(name, t, text, loop, count, wide):
    if not loop:
        text = [f"mov.b16 %h2, {t['one']};"] + text
        return kernel_text(name, "\n    ".join(text), wide)
    return kernel_text(name, f"""mov.u32 %r1, 0;
    mov.b16 %h2, {t['one']}; mov.u32 %r6, 1; mov.f32 %f2, 0f3F800000;
$LOOP:
    setp.lt.s32 %p2, %r1, {count};
    @!%p2 bra $DONE;
    add.s32 %r1, %r1, 1;
    {chr(10).join(text)}
    mov.b16 %h2, 0x0000; mov.u32 %r6, 0; mov.f32 %f2, 0f00000000;
    bra.uni $LOOP;
$DONE:""", wide)


def kernel_text(name, text, wide):
    store = "mov.b32 %r3, %f1;" if wide else "cvt.u32.u16 %r3, %h1;"
    return entry(name, ".reg .pred %p<4>; .reg .b32 %r<8>; .reg .b16 %h<6>; .reg .f32 %f<4>; "
                 ".reg .b16 %rs<4>;",
                 ["ld.global.u32 %r5, [%qd6];", "mov.b16 %h1, 0x0000; mov.f32 %f1, 0f00000000;",
                  text, store, "st.global.u32 [%qd9], %r3;"])


def main():
    head = ".version 7.8\n.target sm_90\n.address_size 64\n"
    n = np.array([1, 0, 2, 3, 1, 1, 0, 2], np.int32)
    k = 0
    for name, (t, text, loop) in FORMS.items():
        for count in (("1", "%r5") if loop else ("",)):
            out = np.zeros(len(n), np.uint32)
            wide = name.startswith("f32")
            ptx = head + kernel(f"k{k}", t, text, loop, count, wide)
            gpu_run_kernel(ptx, f"k{k}", (1,), (len(n),), [n, out])
            trips = np.ones_like(n) if count == "1" else n
            one = 0x4040 if "3 0" in name else 0x3F800000 if wide else int(t["one"], 16)
            expected = np.where(trips == 1, one, 0) if loop else np.full(len(n), one)
            if "loaded value" in name:      # 0 where %h5 is
                expected[n == 0] = 0
            label = f"{name}, N = {'loaded' if count == '%r5' else count}" if loop else name
            report(label, 70, np.flatnonzero(expected != out), {"N": trips}, out, expected, ptx)
            k += 1
    from ptxpy.transpiler import driver
    kernels = driver.transpile(PTXPY_SOURCE, "cvtloop.py", arch="sm_90")
    out = np.zeros(len(n), np.uint16)
    gpu_run_kernel(kernels["once"], "once", (1,), (len(n),), [out, len(n)])
    expected = np.full(len(n), 0x3F80, np.uint16)
    report("ptxpy: r = bool(v) + 0 in a loop run once (program 827)", 70,
           np.flatnonzero(expected != out), {"N": np.ones_like(n)}, out, expected, kernels["once"])
    ptx = kernels["in_loop"]
    for trips in (n, np.ones_like(n)):
        out = np.zeros(len(n), np.uint16)
        gpu_run_kernel(ptx, "in_loop", (1,), (len(n),), [trips, len(n), out, len(n)])
        expected = np.where(trips == 1, 0x3F80, 0).astype(np.uint16)
        report(f"ptxpy: r = bool(v) + 0 in a loop, N = {'1' if (trips == 1).all() else 'loaded'}",
               70, np.flatnonzero(expected != out), {"N": trips}, out, expected, ptx)


if __name__ == "__main__":
    main()
