"""16-bit integer arithmetic and immediate dividends on the GPU, against NumPy (device only).

Random programs showed the card computing some 16-bit `.s16` arithmetic as if it could not
wrap, and a `rem` with an immediate dividend wrongly. Each form computes one expression from
two loaded 16-bit values (%rs1 = a, %rs2 = b; %r1, %r2 the same sign-extended; %rd1, %rd2
the same as 64-bit) into the 32-bit %r7, which is stored.

    python benchmarks/probes/narrow_probe.py
"""
import sys

import numpy as np

sys.path.insert(0, "tests")
from gpu_launcher import gpu_run_kernel  # noqa: E402

W = "cvt.s32.s16 %r7, %rs3;"
P = "selp.s32 %r7, 1, 0, %p1;"


def s16(x):
    return ((np.asarray(x, np.int64) + 2**15) % 2**16) - 2**15


def trunc_div(a, b):
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (b < 0), -q, q)


FORMS = {
    "add.s16, widened": (["add.s16 %rs3, %rs1, %rs2;", W], lambda a, b: s16(a + b)),
    "add.u16, widened": (["add.u16 %rs3, %rs1, %rs2;", W], lambda a, b: s16(a + b)),
    "sub.s16, widened": (["sub.s16 %rs3, %rs1, %rs2;", W], lambda a, b: s16(a - b)),
    "sub.u16, widened": (["sub.u16 %rs3, %rs1, %rs2;", W], lambda a, b: s16(a - b)),
    "mul.lo.s16, widened": (["mul.lo.s16 %rs3, %rs1, %rs2;", W], lambda a, b: s16(a * b)),
    "mul.lo.u16, widened": (["mul.lo.u16 %rs3, %rs1, %rs2;", W], lambda a, b: s16(a * b)),
    "sub.s16 <= b": (["sub.s16 %rs3, %rs1, %rs2;", "setp.le.s16 %p1, %rs3, %rs2;", P],
                     lambda a, b: s16(a - b) <= b),
    "sub.u16 <= b": (["sub.u16 %rs3, %rs1, %rs2;", "setp.le.s16 %p1, %rs3, %rs2;", P],
                     lambda a, b: s16(a - b) <= b),
    "add.s16 < a": (["add.s16 %rs3, %rs1, %rs2;", "setp.lt.s16 %p1, %rs3, %rs1;", P],
                    lambda a, b: s16(a + b) < a),
    "add.u16 < a": (["add.u16 %rs3, %rs1, %rs2;", "setp.lt.s16 %p1, %rs3, %rs1;", P],
                    lambda a, b: s16(a + b) < a),
    "max.s16(a, 0 - a)": (["sub.s16 %rs3, 0, %rs1;", "max.s16 %rs3, %rs1, %rs3;", W],
                          lambda a, b: s16(np.maximum(a, -a))),
    "max.s16(0 - a, a)": (["sub.s16 %rs3, 0, %rs1;", "max.s16 %rs3, %rs3, %rs1;", W],
                          lambda a, b: s16(np.maximum(a, -a))),
    "rem.s16 a, -8": (["rem.s16 %rs3, %rs1, -8;", W], lambda a, b: a - trunc_div(a, -8) * -8),
    "rem.s16 a, b|1": (["or.b16 %rs4, %rs2, 1;", "rem.s16 %rs3, %rs1, %rs4;", W],
                       lambda a, b: a - trunc_div(a, b | 1) * (b | 1)),
    "div.s16 a, b|1": (["or.b16 %rs4, %rs2, 1;", "div.s16 %rs3, %rs1, %rs4;", W],
                       lambda a, b: s16(trunc_div(a, b | 1))),
    "rem.s32 7, b|1": (["or.b32 %r4, %r2, 1;", "rem.s32 %r7, 7, %r4;"],
                       lambda a, b: 7 - trunc_div(7, b | 1) * (b | 1)),
    "div.s32 7, b|1": (["or.b32 %r4, %r2, 1;", "div.s32 %r7, 7, %r4;"],
                       lambda a, b: trunc_div(7, b | 1)),
    "rem.s32 0, b|1": (["or.b32 %r4, %r2, 1;", "rem.s32 %r7, 0, %r4;"], lambda a, b: 0 * a),
    "rem.s64 0, b|1": (["or.b64 %rd4, %rd2, 1;", "rem.s64 %rd5, 0, %rd4;", "cvt.u32.u64 %r7, %rd5;"],
                       lambda a, b: 0 * a),
    "rem.s64 7, b|1": (["or.b64 %rd4, %rd2, 1;", "rem.s64 %rd5, 7, %rd4;", "cvt.u32.u64 %r7, %rd5;"],
                       lambda a, b: 7 - trunc_div(7, b | 1) * (b | 1)),
    "div.s64 7, b|1": (["or.b64 %rd4, %rd2, 1;", "div.s64 %rd5, 7, %rd4;", "cvt.u32.u64 %r7, %rd5;"],
                       lambda a, b: trunc_div(7, b | 1)),
    "rem.s64 0, b|1 != 0": (["or.b64 %rd4, %rd2, 1;", "rem.s64 %rd5, 0, %rd4;",
                             "setp.ne.s64 %p1, %rd5, 0;", P], lambda a, b: 0 * a),
}


def kernel(name, body):
    return f""".visible .entry {name}(.param .u64 pa, .param .u64 pb, .param .u64 po) {{
    .reg .pred %p<4>; .reg .b16 %rs<8>; .reg .b32 %r<8>; .reg .b64 %rd<8>; .reg .b64 %qd<12>;
    ld.param.u64 %qd1, [pa]; ld.param.u64 %qd2, [pb]; ld.param.u64 %qd4, [po];
    mov.u32 %r3, %tid.x; mul.wide.u32 %qd5, %r3, 2; mul.wide.u32 %qd3, %r3, 4;
    add.s64 %qd6, %qd1, %qd5; add.s64 %qd7, %qd2, %qd5; add.s64 %qd9, %qd4, %qd3;
    ld.global.s16 %rs1, [%qd6]; ld.global.s16 %rs2, [%qd7];
    cvt.s32.s16 %r1, %rs1; cvt.s32.s16 %r2, %rs2; cvt.s64.s16 %rd1, %rs1; cvt.s64.s16 %rd2, %rs2;
    {' '.join(body)}
    st.global.s32 [%qd9], %r7;
    ret;
}}
"""


def main():
    head = ".version 7.8\n.target sm_90\n.address_size 64\n"
    rng = np.random.default_rng(1)
    edges = [0, 1, -1, 2, -8, 8, 127, -128, 255, 32767, -32768, 32766, -32767, 16384, -16384]
    a = np.concatenate([rng.integers(-2**15, 2**15, 400), np.repeat(edges, len(edges))]).astype(np.int16)
    b = np.concatenate([rng.integers(-2**15, 2**15, 400), np.tile(edges, len(edges))]).astype(np.int16)
    for k, (name, (body, want)) in enumerate(FORMS.items()):
        out = np.zeros(len(a), np.int32)
        gpu_run_kernel(head + kernel(f"k{k}", body), f"k{k}", (1,), (len(a),), [a, b, out])
        expected = np.asarray(want(a.astype(np.int64), b.astype(np.int64))).astype(np.int64)
        bad = np.flatnonzero(expected != out)
        print(f"{name:22s} " + ("right" if not len(bad) else
              f"WRONG at {len(bad)} of {len(a)}: a={a[bad[0]]} b={b[bad[0]]} gives "
              f"{out[bad[0]]}, not {expected[bad[0]]}"))


if __name__ == "__main__":
    main()
