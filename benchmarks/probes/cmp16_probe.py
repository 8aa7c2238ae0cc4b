"""Does the GPU's compiler compare a 16-bit value it knows with the signedness the `setp` names?
(device only)

Session 20's random program 1946 (reduced/program-1946.py) compares `u16(v2) > u16(x)` with
v2 = i8(127 << 5) = -32: PTX `setp.hi.u16` of 0xFFE0 (65504) and a loaded value at most
65535. In the SASS, ptxas compared in 32 bits against 0xFFFFFFE0 (-32 sign-extended), so the
test was true for every x. Each form computes one 16-bit comparison of a loaded u16 `x` with a
value ptxas knows (built as the form says) and stores 1 or 0; `x` is loaded as a u16, or as a
u32 then `min`-ed with 65535 and narrowed (as in program 1946).

    python benchmarks/probes/cmp16_probe.py [--sass] [--quick]
"""
import sys

import numpy as np

sys.path.insert(0, "tests")
from gpu_launcher import gpu_run_kernel  # noqa: E402
from min_probe import report  # noqa: E402

# ways to put a known value into %rs2 (with its bits as u16 and as s16)
SEXT_M32 = ["mov.u32 %r2, 127;", "cvt.u16.u32 %rs4, %r2;", "cvt.s16.s8 %rs4, %rs4;",
            "shl.b16 %rs4, %rs4, 5;", "cvt.s16.s8 %rs2, %rs4;"]                 # -32 = 0xFFE0
LATE_127 = ["selp.s32 %r2, 1, 0, %p2;", "or.b32 %r2, %r2, 127;"]


def late(value):
    """%r2 = value, through `(selp(2, 0) & 1) | value`, which ptxas also only learns late."""
    return ["selp.s32 %r2, 2, 0, %p2;", "and.b32 %r2, %r2, 1;", f"or.b32 %r2, %r2, {value};"]


KNOWN = {"sext i8": SEXT_M32,
         "sext i8 through or 127": ["setp.ne.u32 %p2, %q1, 99;", "selp.s32 %r2, 1, 0, %p2;",
                                    "or.b32 %r2, %r2, 127;"] + SEXT_M32[1:],
         # 127 and 0xFFE1 as (bool | constant), which ptxas only learns late: each step alone
         "late 127 as u16": LATE_127 + ["cvt.u16.u32 %rs2, %r2;"],
         "late cvt.s16.s8 of 0xFF": ["selp.s32 %r2, 1, 0, %p2;", "or.b32 %r2, %r2, 255;",
                                     "cvt.u16.u32 %rs4, %r2;", "cvt.s16.s8 %rs2, %rs4;"],
         "late 0xFFE1 as u16": ["selp.s32 %r2, 1, 0, %p2;", "or.b32 %r2, %r2, 0xFFE1;",
                                "cvt.u16.u32 %rs2, %r2;"],
         "late 0xFFE1 in b16": ["selp.b16 %rs4, 1, 0, %p2;", "or.b16 %rs2, %rs4, 0xFFE1;"],
         "late (127 << 5) as u16, no sext": LATE_127 + ["cvt.u16.u32 %rs4, %r2;",
                                                        "shl.b16 %rs2, %rs4, 5;"],
         "late 127 << 5 then cvt.s16.s8": LATE_127 + ["cvt.u16.u32 %rs4, %r2;",
                                                      "shl.b16 %rs4, %rs4, 5;",
                                                      "cvt.s16.s8 %rs2, %rs4;"],
         "late 127 << 5 then shl 8, shr.s 8": LATE_127 + ["cvt.u16.u32 %rs4, %r2;",
                                                          "shl.b16 %rs4, %rs4, 13;",
                                                          "shr.s16 %rs2, %rs4, 8;"],
         "late 127 << 5 then cvt.s32.s8 in 32 bits": LATE_127 + ["shl.b32 %r2, %r2, 5;",
                                                                 "cvt.s32.s8 %r2, %r2;",
                                                                 "cvt.u16.u32 %rs2, %r2;"],
         "late 127 << 5 then bfe.s32": LATE_127 + ["shl.b32 %r2, %r2, 5;",
                                                   "bfe.s32 %r2, %r2, 0, 8;",
                                                   "cvt.u16.u32 %rs2, %r2;"],
         # other 16-bit results that are negative, of values ptxas learns late
         "late neg.s16 of 32": late(32) + ["cvt.u16.u32 %rs4, %r2;", "neg.s16 %rs2, %rs4;"],
         "late sub.s16 0 - 32": late(32) + ["cvt.u16.u32 %rs4, %r2;", "sub.s16 %rs2, 0, %rs4;"],
         "late mul.lo.s16 32 * -1": late(32) + ["cvt.u16.u32 %rs4, %r2;",
                                                "mul.lo.s16 %rs2, %rs4, -1;"],
         "late cvt.s16.s32 of -32": late(-32) + ["cvt.s16.s32 %rs2, %r2;"],
         "late not.b16 of 31": late(31) + ["cvt.u16.u32 %rs4, %r2;", "not.b16 %rs2, %rs4;"],
         "late shr.s16 of 0x8000 by 10": late(0x8000) + ["cvt.u16.u32 %rs4, %r2;",
                                                         "shr.s16 %rs2, %rs4, 10;"],
         "late cvt.s16.s8 of 0xE0 (and, or)": late(0xE0) + ["cvt.u16.u32 %rs4, %r2;",
                                                            "cvt.s16.s8 %rs2, %rs4;"],
         "late cvt.s32.s8 of a b16, cvt.u16.u32": LATE_127 + [
             "cvt.u16.u32 %rs4, %r2;", "shl.b16 %rs4, %rs4, 5;", "cvt.s32.s8 %r5, %rs4;",
             "cvt.u16.u32 %rs2, %r5;"],
         "shl 8, shr.s 8 of a loaded y (not known)": ["ld.global.u8 %rs4, [%qd10];",
                                                      "shl.b16 %rs4, %rs4, 8;",
                                                      "shr.s16 %rs2, %rs4, 8;"],
         "cvt.s32.s8, cvt.u16.u32 of a loaded y (not known)": [
             "ld.global.u8 %rs4, [%qd10];", "cvt.s32.s8 %r5, %rs4;", "cvt.u16.u32 %rs2, %r5;"],
         "cvt.s16.s8 of a loaded y (not known)": ["ld.global.u8 %rs4, [%qd10];",
                                                  "cvt.s16.s8 %rs2, %rs4;"],
         "cvt.s16.s8 of 0xE0": ["mov.b16 %rs4, 0x00E0;", "cvt.s16.s8 %rs2, %rs4;"],
         "mov 0xFFE0": ["mov.b16 %rs2, 0xFFE0;"],
         "cvt.u16.u32 of 65504": ["mov.u32 %r2, 65504;", "cvt.u16.u32 %rs2, %r2;"],
         "cvt.s16.s32 of -32": ["mov.u32 %r2, -32;", "cvt.s16.s32 %rs2, %r2;"],
         "neg.s16 of 32": ["mov.b16 %rs4, 32;", "neg.s16 %rs2, %rs4;"]}
TESTS = {"hi.u16 k, x": ("setp.hi.u16 %p1, %rs2, %rs1;", lambda k, x: k > x),
         "lo.u16 x, k": ("setp.lo.u16 %p1, %rs1, %rs2;", lambda k, x: x < k),
         "gt.u16 k, x": ("setp.gt.u16 %p1, %rs2, %rs1;", lambda k, x: k > x),
         "ge.u16 k, x": ("setp.ge.u16 %p1, %rs2, %rs1;", lambda k, x: k >= x),
         "lt.s16 x, k": ("setp.lt.s16 %p1, %rs1, %rs2;", lambda k, x: x.view(np.int16) < k.view(np.int16)),
         "eq.u16 x, k": ("setp.eq.u16 %p1, %rs1, %rs2;", lambda k, x: x == k),
         "hi.u16 (x & 0xFFFF as u32)": ("cvt.u32.u16 %r5, %rs1; cvt.u32.u16 %r6, %rs2; "
                                        "setp.hi.u32 %p1, %r6, %r5;", lambda k, x: k > x)}


KNOWN_VALUE = {"late 127 as u16": 127, "late cvt.s16.s8 of 0xFF": 0xFFFF,
               "late 0xFFE1 as u16": 0xFFE1, "late 0xFFE1 in b16": 0xFFE1,
               "late (127 << 5) as u16, no sext": 0x0FE0}
# other uses of %rs2 (%r4 is stored to a second output)
USES = {"": [], "and sext to 32 bits": ["cvt.s32.s16 %r4, %rs2;"],
        "and sext into a max": ["selp.s32 %r7, 1, 0, %p2;", "cvt.s32.s16 %r4, %rs2;",
                                "max.s32 %r4, %r4, %r7;"]}
# how x reaches %rs1: (PTX, element type of the x array)
X_SOURCES = {"ld.u16": (["ld.global.u16 %rs1, [%qd6];"], np.uint16),
             "min(ld.u32, 65535)": (["ld.global.u32 %r1, [%qd6];", "min.u32 %r1, %r1, 65535;",
                                     "cvt.u16.u32 %rs1, %r1;"], np.uint32)}


def kernel(name, source, known, use, test):
    text = "\n    ".join(source + known + use + [test])
    return f""".visible .entry {name}(.param .u64 px, .param .u64 py, .param .u64 po, .param .u64 pw) {{
    .reg .b64 %qd<16>; .reg .pred %p<4>; .reg .b32 %r<8>; .reg .b16 %rs<8>; .reg .b32 %q<4>;
    ld.param.u64 %qd1, [px]; ld.param.u64 %qd3, [po]; ld.param.u64 %qd11, [py];
    ld.param.u64 %qd12, [pw];
    mov.u32 %r4, 0;
    mov.u32 %q1, %tid.x; mul.wide.u32 %qd5, %q1, {{size}}; mul.wide.u32 %qd7, %q1, 4;
    add.s64 %qd6, %qd1, %qd5; add.s64 %qd9, %qd3, %qd7; cvt.u64.u32 %qd13, %q1;
    setp.ne.u32 %p2, %q1, 99;
    add.s64 %qd10, %qd11, %qd13; add.s64 %qd14, %qd12, %qd7;
    {text}
    selp.s32 %r3, 1, 0, %p1;
    st.global.s32 [%qd9], %r3;
    st.global.s32 [%qd14], %r4;
    ret;
}}
"""


def main():
    head = ".version 7.8\n.target sm_90\n.address_size 64\n"
    x = np.array([0, 1, 224, 32767, 32768, 65503, 65504, 65505, 65535, 65408, 127, 65505, 4064],
                 np.uint16)
    y = np.array([0xE0, 0xE0, 0x7F, 0x80, 0xFF, 0xE0, 0xE0, 0xE0, 0xE0, 0x80, 0x7F, 0xFF, 1],
                 np.uint8)
    n = 0
    quick = "--quick" in sys.argv     # one source of x, no other uses, four tests
    for xname, (source, dtype) in list(X_SOURCES.items())[:1 if quick else None]:
        for kname, known in KNOWN.items():
            k = (y.view(np.int8).astype(np.int16).view(np.uint16) if "loaded" in kname
                 else np.full_like(x, KNOWN_VALUE.get(kname, 0xFFE0)))
            for uname, use in list(USES.items())[:1 if quick else None]:
                for tname, (test, want) in TESTS.items():
                    if quick and tname not in ("hi.u16 k, x", "eq.u16 x, k", "lt.s16 x, k",
                                               "hi.u16 (x & 0xFFFF as u32)"):
                        continue
                    out, wide = np.zeros(len(x), np.int32), np.zeros(len(x), np.int32)
                    ptx = head + kernel(f"k{n}", source, known, use, test).replace(
                        "{size}", str(np.dtype(dtype).itemsize))
                    gpu_run_kernel(ptx, f"k{n}", (1,), (len(x),), [x.astype(dtype), y, out, wide])
                    expected = want(k, x).astype(np.int32)
                    report(f"{tname}, k = {kname} {uname}, x {xname}", 90,
                           np.flatnonzero(expected != out), {"x": x, "k": k}, out, expected, ptx)
                    n += 1


if __name__ == "__main__":
    main()
