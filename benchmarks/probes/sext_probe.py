"""Does the GPU's compiler keep the sign of an i8 shifted left and widened to 32 bits before a
`max`? (device only)

Session 20's random program 1946 (seed 2013, with --memory; cut down in reduced/program-1946.py)
computes `v2 = i8(127) << 5` (-32, wrapped to i8) and reads `b[max(v2, v2, v1) & 63]` with v1 a
bool: the index is v1 (0 or 1), but the card read b[32] or b[33], as if max had seen 224 or
65504, not -32. Each form computes the max (or a step on the way) from a loaded x and stores it.

    python benchmarks/probes/sext_probe.py [--sass]
"""
import sys

import numpy as np

sys.path.insert(0, "tests")
from gpu_launcher import gpu_run_kernel  # noqa: E402
from min_probe import entry, report  # noqa: E402

START = ["setp.ge.f32 %p1, 0f00000000, %f1;", "selp.s32 %r2, 1, 0, %p1;", "or.b32 %r2, %r2, 127;",
         "cvt.u16.u32 %rs1, %r2;", "cvt.s16.s8 %rs1, %rs1;", "shl.b16 %rs2, %rs1, 5;",
         "cvt.s16.s8 %rs2, %rs2;"]
MAX = ["selp.s16 %rs1, 1, 0, %p1;", "cvt.s32.s16 %r3, %rs2;", "cvt.s32.s16 %r2, %rs1;",
       "max.s32 %r3, %r3, %r2;"]
# name: (body setting %r3 from %f1 = x, NumPy reference from x)
FORMS = {
    "program 1946: max(sext(i8(127 | v1) << 5), v1)": (START + MAX, lambda x: (x <= 0) * 1),
    "sext(i8(127 | v1) << 5)": (START + ["cvt.s32.s16 %r3, %rs2;"], lambda x: np.full(len(x), -32)),
    "max(sext(i8(127) << 5), v1)": (
        ["setp.ge.f32 %p1, 0f00000000, %f1;", "mov.u32 %r2, 127;"] + START[3:] + MAX,
        lambda x: (x <= 0) * 1),
    "max(sext(i8(127 | v1) << 5), 0)": (START + ["cvt.s32.s16 %r3, %rs2;", "max.s32 %r3, %r3, 0;"],
                                        lambda x: np.zeros(len(x))),
    "max(sext(-32 | v1 * 0), v1)": (["setp.ge.f32 %p1, 0f00000000, %f1;", "selp.s32 %r2, 1, 0, %p1;",
                                     "and.b32 %r2, %r2, 0;", "or.b32 %r2, %r2, -32;",
                                     "cvt.u16.u32 %rs2, %r2;"] + MAX, lambda x: (x <= 0) * 1),
    "max(sext(i8(127 | v1) << 5) as s16, v1)": (
        START + ["selp.s16 %rs1, 1, 0, %p1;", "max.s16 %rs3, %rs2, %rs1;", "cvt.s32.s16 %r3, %rs3;"],
        lambda x: (x <= 0) * 1),
    "max(shl then sext in 32 bits, v1)": (
        START[:5] + ["cvt.s32.s16 %r4, %rs1;", "shl.b32 %r4, %r4, 5;", "cvt.s32.s8 %r3, %r4;",
                     "selp.s32 %r2, 1, 0, %p1;", "max.s32 %r3, %r3, %r2;"], lambda x: (x <= 0) * 1),
}


def kernel(name, body):
    return entry(name, ".reg .f32 %f<4>; .reg .pred %p<4>; .reg .b32 %r<8>; .reg .b16 %rs<8>;",
                 ["ld.global.f32 %f1, [%qd6];", *body, "st.global.s32 [%qd9], %r3;"])


def main():
    head = ".version 7.8\n.target sm_90\n.address_size 64\n"
    x = np.array([10593.912, -1.0, 0.0, 6.1e10, -0.01, 1.0, np.nan, 3.0], np.float32)
    for k, (name, (body, want)) in enumerate(FORMS.items()):
        out = np.zeros(len(x), np.int32)
        ptx = head + kernel(f"k{k}", body)
        gpu_run_kernel(ptx, f"k{k}", (1,), (len(x),), [x, out])
        with np.errstate(invalid="ignore"):
            expected = np.asarray(want(x)).astype(np.int32)
        report(name, 44, np.flatnonzero(expected != out), {"x": x}, out, expected, ptx)


if __name__ == "__main__":
    main()
