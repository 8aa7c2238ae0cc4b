"""Does the GPU's compiler keep the sign of a negated zero? (device only)

Session 19's random programs found `-bf16(v)` with `v == 0` stored as +0.0 on the H100, where
negation flips the sign bit and gives -0.0 (program 872 of seed 1114:
`neg.bf16` of `cvt.rn.bf16.f32` of `cvt.rn.f32.u16` of a `selp`). Each form below negates a
loaded float `x`, or a value computed from it, stores the result, and compares its bits with
NumPy's over zeros, NaN, infinities and ordinary values (any NaN is right
for a NaN).

    python benchmarks/probes/fneg_probe.py [--sass]
"""
import sys

import ml_dtypes
import numpy as np

sys.path.insert(0, "tests")
from gpu_launcher import gpu_run_kernel  # noqa: E402
from min_probe import report  # noqa: E402

TO_F32 = {"bf16": "cvt.f32.bf16 %qf1, %x1;", "f16": "cvt.f32.f16 %qf1, %x1;"}
FROM_F32 = {"bf16": "cvt.rn.bf16.f32 %x3, %qf2;", "f16": "cvt.rn.f16.f32 %x3, %qf2;"}
NONZERO_AS_FLOAT = ["setp.neu.f32 %qp1, %qf1, 0f00000000;", "selp.u16 %qs1, 1, 0, %qp1;",
                    "cvt.rn.f32.u16 %qf2, %qs1;"]


def neg_zero(x):
    return np.full_like(x, -0.0)


def nonzero(x):
    return (x != 0).astype(x.dtype)


def through_f32(ty, negate):
    """x widened to f32, x != 0 as 0.0 or 1.0, narrowed back, then negated by `negate`."""
    return [TO_F32[ty], *NONZERO_AS_FLOAT, FROM_F32[ty], negate]


# name: (float type, body setting %x2 from %x1 = x, NumPy reference)
FORMS = {
    "neg.bf16 x": ("bf16", ["neg.bf16 %x2, %x1;"], lambda x: -x),
    "neg.f16 x": ("f16", ["neg.f16 %x2, %x1;"], lambda x: -x),
    "neg.f32 x": ("f32", ["neg.f32 %x2, %x1;"], lambda x: -x),
    "neg.f64 x": ("f64", ["neg.f64 %x2, %x1;"], lambda x: -x),
    "neg.bf16 of (x != 0) (program 872)": ("bf16", through_f32("bf16", "neg.bf16 %x2, %x3;"),
                                           lambda x: -nonzero(x)),
    "neg.f16 of (x != 0)": ("f16", through_f32("f16", "neg.f16 %x2, %x3;"),
                            lambda x: -nonzero(x)),
    "xor 0x8000 of (x != 0) bf16": ("bf16", through_f32("bf16", "xor.b16 %x2, %x3, 0x8000;"),
                                    lambda x: -nonzero(x)),
    "xor 0x8000 of (x != 0) f16": ("f16", through_f32("f16", "xor.b16 %x2, %x3, 0x8000;"),
                                   lambda x: -nonzero(x)),
    "neg.f32 of (x != 0)": ("f32", ["mov.f32 %qf1, %x1;", *NONZERO_AS_FLOAT,
                                    "neg.f32 %x2, %qf2;"], lambda x: -nonzero(x)),
    "neg.bf16 of bf16(f32(x))": ("bf16", [TO_F32["bf16"], "mov.f32 %qf2, %qf1;",
                                          FROM_F32["bf16"], "neg.bf16 %x2, %x3;"],
                                 lambda x: -x),
    # operands ptxas knows while compiling, as in program 872 (a helper's loops it evaluates)
    "neg.bf16 of 0 (known)": ("bf16", ["mov.b16 %x3, 0x0000;", "neg.bf16 %x2, %x3;"], neg_zero),
    "neg.f16 of 0 (known)": ("f16", ["mov.b16 %x3, 0x0000;", "neg.f16 %x2, %x3;"], neg_zero),
    "neg.f32 of 0 (known)": ("f32", ["mov.f32 %x3, 0f00000000;", "neg.f32 %x2, %x3;"], neg_zero),
    "neg.f64 of 0 (known)": ("f64", ["mov.f64 %x3, 0d0000000000000000;", "neg.f64 %x2, %x3;"],
                             neg_zero),
    "neg.bf16 of bf16(f32(u16 0)) (known)": ("bf16", [
        "mov.u16 %qs1, 0;", "cvt.rn.f32.u16 %qf2, %qs1;", FROM_F32["bf16"], "neg.bf16 %x2, %x3;"],
        neg_zero),
    "neg.f16 of f16(f32(u16 0)) (known)": ("f16", [
        "mov.u16 %qs1, 0;", "cvt.rn.f32.u16 %qf2, %qs1;", FROM_F32["f16"], "neg.f16 %x2, %x3;"],
        neg_zero),
    "neg.f32 of f32(u16 0) (known)": ("f32", [
        "mov.u16 %qs1, 0;", "cvt.rn.f32.u16 %x3, %qs1;", "neg.f32 %x2, %x3;"], neg_zero),
    "xor 0x8000 of bf16(f32(u16 0)) (known)": ("bf16", [
        "mov.u16 %qs1, 0;", "cvt.rn.f32.u16 %qf2, %qs1;", FROM_F32["bf16"],
        "xor.b16 %x2, %x3, 0x8000;"], neg_zero),
}
FLOAT = {"f32": ("f", "f32", np.float32), "f64": ("fd", "f64", np.float64),
         "f16": ("h", "b16", np.float16), "bf16": ("h", "b16", ml_dtypes.bfloat16)}


def kernel(name, ty, body):
    prefix, width, dtype = FLOAT[ty]
    size = np.dtype(dtype).itemsize
    text = " ".join(body).replace("%x", f"%{prefix}")
    return f""".visible .entry {name}(.param .u64 px, .param .u64 po) {{
    .reg .b32 %q<4>; .reg .b64 %qd<12>; .reg .{width} %{prefix}<10>; .reg .pred %qp<4>;
    .reg .f32 %qf<4>; .reg .b16 %qs<4>;
    ld.param.u64 %qd1, [px]; ld.param.u64 %qd3, [po];
    mov.u32 %q1, %tid.x; mul.wide.u32 %qd5, %q1, {size};
    add.s64 %qd6, %qd1, %qd5; add.s64 %qd9, %qd3, %qd5;
    ld.global.{width} %{prefix}1, [%qd6];
    {text}
    st.global.{width} [%qd9], %{prefix}2;
    ret;
}}
"""


def bits(values):
    return values.view(f"u{values.dtype.itemsize}")


def main():
    head = ".version 7.8\n.target sm_90\n.address_size 64\n"
    special = [0.0, -0.0, np.nan, np.inf, -np.inf, 1.0, -1.0, 2.5, -2.5, 1e-3]
    for k, (name, (ty, body, want)) in enumerate(FORMS.items()):
        x = np.array(special, FLOAT[ty][2])
        out = np.zeros_like(x)
        ptx = head + kernel(f"k{k}", ty, body)
        gpu_run_kernel(ptx, f"k{k}", (1,), (len(x),), [x, out])
        with np.errstate(invalid="ignore"):
            expected = want(x).astype(x.dtype)
        # a NaN's sign and payload are unspecified after neg (PTX ISA): any NaN will do
        bad = np.flatnonzero((bits(expected) != bits(out)) & ~(np.isnan(expected) & np.isnan(out)))
        report(name, 38, bad, {"x": x}, out, expected, ptx)


if __name__ == "__main__":
    main()
