"""Does the GPU's compiler keep NaN out of `abs(x) >= c`? (device only)

Session 18's random programs found `abs(b[i]) >= 0` true on the H100 for a NaN `b[i]`
(reduced/program-1278.py): ptxas answers an ordered comparison of a value it knows to be
non-negative as if NaN could not reach it. Each form below computes a predicate from a loaded
float `x` (and `c`) and is compared with NumPy, over NaN, infinities, zeros and ordinary values.

    python benchmarks/probes/fabs_probe.py [--sass]
"""
import sys

import numpy as np

sys.path.insert(0, "tests")
from gpu_launcher import gpu_run_kernel  # noqa: E402
from min_probe import report  # noqa: E402

NAN_TEST = "setp.num.{t} %qp2, %x1, %x1;"
# name: (float type, body setting %qp1 from %x1 = x, %x3 = c, NumPy reference)
FORMS = {
    "abs(x) >= 0": ("f32", ["abs.{t} %x2, %x1;", "setp.ge.{t} %qp1, %x2, {zero};"],
                    lambda x, c: np.abs(x) >= 0),
    "abs(x) > 0": ("f32", ["abs.{t} %x2, %x1;", "setp.gt.{t} %qp1, %x2, {zero};"],
                   lambda x, c: np.abs(x) > 0),
    "abs(x) >= -1": ("f32", ["abs.{t} %x2, %x1;", "setp.ge.{t} %qp1, %x2, {minus_one};"],
                     lambda x, c: np.abs(x) >= -1),
    "abs(x) < 0": ("f32", ["abs.{t} %x2, %x1;", "setp.lt.{t} %qp1, %x2, {zero};"],
                   lambda x, c: np.abs(x) < 0),
    "abs(x) != -1 (neu)": ("f32", ["abs.{t} %x2, %x1;", "setp.neu.{t} %qp1, %x2, {minus_one};"],
                           lambda x, c: np.abs(x) != -1),
    "abs(x) <u 0": ("f32", ["abs.{t} %x2, %x1;", "setp.ltu.{t} %qp1, %x2, {zero};"],
                    lambda x, c: ~(np.abs(x) >= 0)),
    "max(abs(x), 0) >= 0": ("f32", ["abs.{t} %x2, %x1;", "max.{t} %x2, %x2, {zero};",
                                    "setp.ge.{t} %qp1, %x2, {zero};"],
                            lambda x, c: np.fmax(np.abs(x), 0) >= 0),
    "abs(x) >= 0 f16": ("f16", ["mov.b16 %x5, 0x0000;", "abs.{t} %x2, %x1;",
                                "setp.ge.{t} %qp1, %x2, %x5;"], lambda x, c: np.abs(x) >= 0),
    "sign bit cleared >= 0 f16": ("f16", ["mov.b16 %x5, 0x0000;", "and.b16 %x2, %x1, 0x7FFF;",
                                          "setp.ge.{t} %qp1, %x2, %x5;"],
                                  lambda x, c: np.abs(x) >= 0),
    "abs(x) >= c": ("f32", ["abs.{t} %x2, %x1;", "setp.ge.{t} %qp1, %x2, %x3;"],
                    lambda x, c: np.abs(x) >= c),
    "abs(x) >= 0 f64": ("f64", ["abs.{t} %x2, %x1;", "setp.ge.{t} %qp1, %x2, {zero};"],
                        lambda x, c: np.abs(x) >= 0),
    "x * x >= 0": ("f32", ["mul.rn.{t} %x2, %x1, %x1;", "setp.ge.{t} %qp1, %x2, {zero};"],
                   lambda x, c: x * x >= 0),
    "sqrt(x) >= 0": ("f32", ["sqrt.rn.{t} %x2, %x1;", "setp.ge.{t} %qp1, %x2, {zero};"],
                     lambda x, c: np.sqrt(x) >= 0),
    "max(x, -x) >= 0": ("f32", ["neg.{t} %x2, %x1;", "max.{t} %x2, %x1, %x2;",
                                "setp.ge.{t} %qp1, %x2, {zero};"],
                        lambda x, c: np.fmax(x, -x) >= 0),
    "abs(x) >= 0 and x is a number": ("f32", ["abs.{t} %x2, %x1;", NAN_TEST,
                                              "setp.ge.and.{t} %qp1, %x2, {zero}, %qp2;"],
                                      lambda x, c: np.abs(x) >= 0),
    "not (abs(x) <u 0)": ("f32", ["abs.{t} %x2, %x1;", "setp.ltu.{t} %qp1, %x2, {zero};",
                                  "not.pred %qp1, %qp1;"],
                          lambda x, c: np.abs(x) >= 0),
    "sign bit cleared >= 0": ("f32", ["and.b32 %x2, %x1, 0x7FFFFFFF;",
                                      "setp.ge.{t} %qp1, %x2, {zero};"],
                              lambda x, c: np.abs(x) >= 0),
}
FLOAT = {"f32": ("f", "f32", np.float32, "0f00000000", "0fBF800000"),
         "f16": ("h", "b16", np.float16, "", ""),
         "f64": ("fd", "f64", np.float64, "0d0000000000000000", "0dBFF0000000000000")}


def kernel(name, ty, body):
    prefix, width, dtype, zero, minus_one = FLOAT[ty]
    size = np.dtype(dtype).itemsize
    text = " ".join(body).format(t=ty, zero=zero, minus_one=minus_one).replace("%x", f"%{prefix}")
    return f""".visible .entry {name}(.param .u64 px, .param .u64 pc, .param .u64 po) {{
    .reg .b32 %q<4>; .reg .b64 %qd<12>; .reg .{width} %{prefix}<10>; .reg .pred %qp<4>;
    ld.param.u64 %qd1, [px]; ld.param.u64 %qd2, [pc]; ld.param.u64 %qd3, [po];
    mov.u32 %q1, %tid.x; mul.wide.u32 %qd5, %q1, {size}; mul.wide.u32 %qd8, %q1, 4;
    add.s64 %qd6, %qd1, %qd5; add.s64 %qd7, %qd2, %qd5; add.s64 %qd9, %qd3, %qd8;
    ld.global.{width} %{prefix}1, [%qd6]; ld.global.{width} %{prefix}3, [%qd7];
    {text}
    selp.u32 %q2, 1, 0, %qp1;
    st.global.u32 [%qd9], %q2;
    ret;
}}
"""


def main():
    head = ".version 7.8\n.target sm_90\n.address_size 64\n"
    special = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 2.5, -2.5, 1e-40]
    for k, (name, (ty, body, want)) in enumerate(FORMS.items()):
        dtype = FLOAT[ty][2]
        x = np.repeat(np.array(special, dtype), 4)
        c = np.tile(np.array([0.0, 1.0, -1.0, np.nan], dtype), len(special))
        out = np.zeros(len(x), np.uint32)
        ptx = head + kernel(f"k{k}", ty, body)
        gpu_run_kernel(ptx, f"k{k}", (1,), (len(x),), [x, c, out])
        with np.errstate(invalid="ignore"):
            expected = want(x, c).astype(np.uint32)
        report(name, 32, np.flatnonzero(expected != out), {"x": x, "c": c}, out, expected, ptx)


if __name__ == "__main__":
    main()
