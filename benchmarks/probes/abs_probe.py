"""Which integer `abs` forms does ptxas treat as never negative? (device only)

abs(INT_MIN) is INT_MIN in two's complement; ptxpy's IR says so and its passes keep the
sign-dependent code after it. Each kernel computes abs(x) one way, then `rem(abs, -6) > 0`
(false for INT_MIN: the remainder is -2) and, for 16 bits, the result widened with cvt.s64.s16.

    python benchmarks/probes/abs_probe.py
"""
import sys

import numpy as np

sys.path.insert(0, "tests")
from gpu_launcher import gpu_run_kernel  # noqa: E402

FORMS32 = {
    "abs": ["abs.s32 %r1, %r0;"],
    "shr_xor_sub": ["shr.s32 %r9, %r0, 31;", "xor.b32 %r8, %r0, %r9;", "sub.s32 %r1, %r8, %r9;"],
    "selp": ["setp.lt.s32 %p9, %r0, 0;", "sub.s32 %r8, 0, %r0;", "selp.s32 %r1, %r8, %r0, %p9;"],
    "max_neg": ["sub.s32 %r8, 0, %r0;", "max.s32 %r1, %r0, %r8;"],
}
FORMS16 = {
    "abs16": ["abs.s16 %rs1, %rs0;"],
    "sub_max16": ["sub.s16 %rs8, 0, %rs0;", "max.s16 %rs1, %rs0, %rs8;"],
    "shr_xor_sub16": ["shr.s16 %rs9, %rs0, 15;", "xor.b16 %rs8, %rs0, %rs9;", "sub.s16 %rs1, %rs8, %rs9;"],
    "selp16": ["setp.lt.s16 %p9, %rs0, 0;", "sub.s16 %rs8, 0, %rs0;", "selp.b16 %rs1, %rs8, %rs0, %p9;"],
    "neg16": ["sub.s16 %rs1, 0, %rs0;"],
    "negop16": ["neg.s16 %rs1, %rs0;"],
    "not_add16": ["not.b16 %rs8, %rs0;", "add.s16 %rs1, %rs8, 1;"],
    "mul_m1_16": ["mul.lo.s16 %rs1, %rs0, -1;"],
    "neg32_cvt16": ["cvt.s32.s16 %r8, %rs0;", "neg.s32 %r8, %r8;", "cvt.u16.u32 %rs1, %r8;"],
    "neg16_cvt": ["neg.s16 %rs8, %rs0;", "cvt.s32.s16 %r8, %rs8;", "cvt.u16.u32 %rs1, %r8;"],
}


def kernel32(name, body):
    return f""".visible .entry {name}(.param .u64 x, .param .u64 o) {{
    .reg .pred %p<10>; .reg .b32 %r<10>; .reg .b64 %rd<6>;
    ld.param.u64 %rd1, [x]; ld.param.u64 %rd2, [o];
    cvta.to.global.u64 %rd1, %rd1; cvta.to.global.u64 %rd2, %rd2;
    mov.u32 %r5, %tid.x; mul.wide.u32 %rd3, %r5, 4; add.s64 %rd4, %rd1, %rd3;
    ld.global.s32 %r0, [%rd4];
    {' '.join(body)}
    rem.s32 %r2, %r1, -6; setp.gt.s32 %p1, %r2, 0; selp.s32 %r3, 1, 0, %p1;
    mul.wide.u32 %rd3, %r5, 12; add.s64 %rd4, %rd2, %rd3;
    st.global.s32 [%rd4], %r1; st.global.s32 [%rd4+4], %r2; st.global.s32 [%rd4+8], %r3;
    ret;
}}
"""


def kernel16(name, body):
    return f""".visible .entry {name}(.param .u64 x, .param .u64 o) {{
    .reg .pred %p<10>; .reg .b16 %rs<10>; .reg .b32 %r<10>; .reg .b64 %rd<8>;
    ld.param.u64 %rd1, [x]; ld.param.u64 %rd2, [o];
    cvta.to.global.u64 %rd1, %rd1; cvta.to.global.u64 %rd2, %rd2;
    mov.u32 %r5, %tid.x; mul.wide.u32 %rd3, %r5, 2; add.s64 %rd4, %rd1, %rd3;
    ld.global.s16 %rs0, [%rd4];
    {' '.join(body)}
    cvt.s64.s16 %rd5, %rs1;
    mul.wide.u32 %rd3, %r5, 8; add.s64 %rd4, %rd2, %rd3;
    st.global.s64 [%rd4], %rd5;
    ret;
}}
"""


def main():
    head = ".version 7.8\n.target sm_90\n.address_size 64\n"
    x32 = np.array([-2**31, -7, 0, 7, 2**31 - 1], np.int32)
    for name, body in FORMS32.items():
        out = np.zeros(3 * len(x32), np.int32)
        gpu_run_kernel(head + kernel32(name, body), name, (1,), (len(x32),), [x32, out])
        rows = out.reshape(-1, 3)
        print(f"{name:14s} abs(INT_MIN)={rows[0, 0]} rem={rows[0, 1]} rem>0={rows[0, 2]}  "
              f"(expected {-2**31} -2 0)  others {rows[1:].tolist()}")
    x16 = np.array([-32768, -7, 0, 7, 32767], np.int16)
    for name, body in FORMS16.items():
        out = np.zeros(len(x16), np.int64)
        gpu_run_kernel(head + kernel16(name, body), name, (1,), (len(x16),), [x16, out])
        print(f"{name:14s} widened: {out.tolist()}  (x = {x16.tolist()})")


if __name__ == "__main__":
    main()
