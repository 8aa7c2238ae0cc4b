"""Does the GPU's compiler convert an integer it learns late into bf16, f16 or f32 correctly?
(device only)

Session 21's random program 827 (seed 2207, with --memory) stores `(bool(v2) & bool(v4)) + 0`
into a bf16 array: PTX `selp.s32 %r, 1, 0, %p` then `cvt.rn.bf16.s32`. The card stored the bits
0x0001 (1 as an integer, not 1.0 = 0x3F80). Each form below builds an integer from a loaded `x`
as its name says, converts it with one `cvt` into the destination type, and stores the result's
bits; NumPy gives the expected bits.

    python benchmarks/probes/cvtf_probe.py [--sass]
"""
import sys

import numpy as np

sys.path.insert(0, "tests")
from gpu_launcher import gpu_run_kernel  # noqa: E402
from min_probe import check_ptxpy, entry, report  # noqa: E402

# name: (PTX setting %r2 from %r1 = x and %p1 = (x != 0), the value as a function of x)
VALUES = {
    "selp 1, 0": (["selp.s32 %r2, 1, 0, %p1;"], lambda x: (x != 0) * 1),
    "selp 2, 0 then and 1": (["selp.s32 %r2, 2, 0, %p1;", "and.b32 %r2, %r2, 1;"],
                             lambda x: x * 0),
    "selp 1, 0 then add 5": (["selp.s32 %r2, 1, 0, %p1;", "add.s32 %r2, %r2, 5;"],
                             lambda x: (x != 0) + 5),
    "selp 3, 0": (["selp.s32 %r2, 3, 0, %p1;"], lambda x: (x != 0) * 3),
    "selp -1, 0": (["selp.s32 %r2, -1, 0, %p1;"], lambda x: -1 * (x != 0)),
    "selp 1, 0 then or 8": (["selp.s32 %r2, 1, 0, %p1;", "or.b32 %r2, %r2, 8;"],
                            lambda x: (x != 0) | 8),
    "mov 1": (["mov.u32 %r2, 1;"], lambda x: x * 0 + 1),
    "loaded x": (["mov.u32 %r2, %r1;"], lambda x: x),
}
# name: (PTX converting %r2 into %h1 (16 bits) or %f1 (32 bits), NumPy dtype of the result)
CONVERSIONS = {
    "cvt.rn.bf16.s32": (["cvt.rn.bf16.s32 %h1, %r2;"], "bf16"),
    "cvt.rn.bf16.u32": (["cvt.rn.bf16.u32 %h1, %r2;"], "bf16"),
    "cvt.rn.bf16.s16": (["cvt.u16.u32 %rs1, %r2;", "cvt.rn.bf16.s16 %h1, %rs1;"], "bf16"),
    "cvt.rn.bf16.s64": (["cvt.s64.s32 %rd1, %r2;", "cvt.rn.bf16.s64 %h1, %rd1;"], "bf16"),
    "cvt.rn.f32.s32, cvt.rn.bf16.f32": (["cvt.rn.f32.s32 %f1, %r2;", "cvt.rn.bf16.f32 %h1, %f1;"],
                                        "bf16"),
    "cvt.rn.f16.s32": (["cvt.rn.f16.s32 %h1, %r2;"], np.float16),
    "cvt.rn.f16.u32": (["cvt.rn.f16.u32 %h1, %r2;"], np.float16),
    "cvt.rn.f16.s16": (["cvt.u16.u32 %rs1, %r2;", "cvt.rn.f16.s16 %h1, %rs1;"], np.float16),
    "cvt.rn.f32.s32": (["cvt.rn.f32.s32 %f1, %r2;"], np.float32),
    "cvt.rn.f32.u32": (["cvt.rn.f32.u32 %f1, %r2;"], np.float32),
}
PTXPY_SOURCE = '''
import ptxpy
from ptxpy import Array, bf16, i32

@ptxpy.jit
def as_bf16(x: Array[i32, 1], out: Array[bf16, 1]):
    i = ptxpy.thread_idx.x
    out[i] = (bool(x[i]) & True) + 0
'''


def bits(values, dtype):
    """The result's bits as u32, as the kernel stores them."""
    if dtype == "bf16":       # the values are small integers: f32's upper half is exact
        return (values.astype(np.float32).view(np.uint32) >> 16).astype(np.uint32)
    with np.errstate(over="ignore"):      # 2**32 - 1 is inf in f16
        return values.astype(dtype).view(f"u{np.dtype(dtype).itemsize}").astype(np.uint32)


def kernel(name, value, conversion, wide):
    store = "mov.b32 %r3, %f1;" if wide else "cvt.u32.u16 %r3, %h1;"
    return entry(name, ".reg .pred %p<4>; .reg .b32 %r<8>; .reg .b16 %rs<4>; .reg .b16 %h<4>; "
                 ".reg .f32 %f<4>; .reg .b64 %rd<4>;",
                 ["ld.global.u32 %r1, [%qd6];", "setp.ne.u32 %p1, %r1, 0;", *value, *conversion,
                  store, "st.global.u32 [%qd9], %r3;"])


def main():
    head = ".version 7.8\n.target sm_90\n.address_size 64\n"
    x = np.array([0, 1, 2, 0, 7, 100, 0, 1], np.int32)
    n = 0
    for cname, (conversion, dtype) in CONVERSIONS.items():
        wide = dtype is np.float32
        for vname, (value, want) in VALUES.items():
            out = np.zeros(len(x), np.uint32)
            ptx = head + kernel(f"k{n}", value, conversion, wide)
            gpu_run_kernel(ptx, f"k{n}", (1,), (len(x),), [x, out])
            values = want(x).astype(np.int64)
            expected = bits(values & 0xFFFFFFFF if ".u32" in cname else values, dtype)
            report(f"{cname} of {vname}", 52, np.flatnonzero(expected != out), {"x": x},
                   out, expected, ptx)
            n += 1
    check_ptxpy("ptxpy: bf16 (bool(x) & True) + 0", 52, PTXPY_SOURCE, "as_bf16", x,
                np.zeros(len(x), np.uint16), bits((x != 0) * 1, "bf16").astype(np.uint16))


if __name__ == "__main__":
    main()
