"""Does the GPU's compiler round `100000 - 1.00390625` in f32 to nearest even? (device only)

Session 19's random program 528 (seed 1312) ends in `v3 - 1.0039062500000002` with v3 = 100000
set in a loop: the f32 result 99998.99609375 lies halfway between 99998.9921875 and 99999.0,
and round-to-nearest-even gives 99999.0; the card stored 99998.9921875. Each form computes the
difference from a loaded `x` (or a value ptxas knows) and stores its bits.

    python benchmarks/probes/fsub_probe.py [--sass]
"""
import sys

import numpy as np

sys.path.insert(0, "tests")
from gpu_launcher import gpu_run_kernel  # noqa: E402
from min_probe import entry, report  # noqa: E402

C = "0f3F808000"   # 1.00390625
X = "0f47C35000"   # 100000.0
# name: (body setting %f2 from %f1 = x, NumPy reference)
FORMS = {
    "x - c": ([f"sub.rn.f32 %f2, %f1, {C};"], lambda x: x - np.float32(1.00390625)),
    "x + (-c)": (["add.rn.f32 %f2, %f1, 0fBF808000;"], lambda x: x - np.float32(1.00390625)),
    "known 100000 - c": ([f"mov.f32 %f3, {X};", f"sub.rn.f32 %f2, %f3, {C};"],
                         lambda x: np.full_like(x, np.float32(100000) - np.float32(1.00390625))),
    "known 100000 - c (no .rn)": ([f"mov.f32 %f3, {X};", f"sub.f32 %f2, %f3, {C};"],
                                  lambda x: np.full_like(x, np.float32(99999.0))),
    "known in a loop": ([f"mov.f32 %f3, 0f00000000;", "mov.u32 %q2, 0;", "$L1:",
                         f"mov.f32 %f3, {X};", "add.u32 %q2, %q2, 1;",
                         "setp.lt.u32 %qp1, %q2, 3;", "@%qp1 bra $L1;",
                         f"sub.rn.f32 %f2, %f3, {C};"],
                        lambda x: np.full_like(x, np.float32(99999.0))),
}


def kernel(name, body):
    return entry(name, ".reg .f32 %f<10>; .reg .pred %qp<4>;",
                 ["ld.global.f32 %f1, [%qd6];", *body, "st.global.f32 [%qd9], %f2;"])


def main():
    head = ".version 7.8\n.target sm_90\n.address_size 64\n"
    x = np.array([100000.0, 99999.0, 3.0, 1e30, -100000.0, 0.0], np.float32)
    for k, (name, (body, want)) in enumerate(FORMS.items()):
        out = np.zeros_like(x)
        ptx = head + kernel(f"k{k}", body)
        gpu_run_kernel(ptx, f"k{k}", (1,), (len(x),), [x, out])
        expected = want(x).astype(np.float32)
        bad = np.flatnonzero(expected.view(np.uint32) != out.view(np.uint32))
        report(name, 28, bad, {"x": x}, out, expected, ptx)


if __name__ == "__main__":
    main()
