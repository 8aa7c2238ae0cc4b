"""Does the GPU's compiler learn a value from a branch condition, and then fold f32 arithmetic on
it with the wrong rounding? (device only)

`ffold_probe.py` showed ptxas rounding a folded f32 `100000 - 1.00390625` (a tie) away from even;
ptxpy now emits `fma.rn` by ±1 for f32 add/sub of values ptxas could know (`backend/opaque.py`).
A loaded `x` is opaque, but inside `if x == 100000.0:` ptxas could still learn x. Each form
below computes the difference there from a loaded `x`, stores its bits (0 elsewhere) and is
compared with NumPy. The last form is the same thing written in ptxpy and compiled by it.

    python benchmarks/probes/fbranch_probe.py [--sass]
"""
import sys

import numpy as np

sys.path.insert(0, "tests")
from gpu_launcher import gpu_run_kernel  # noqa: E402
from min_probe import entry, report  # noqa: E402

C, NC = "0f3F808000", "0fBF808000"   # 1.00390625, -1.00390625
X = "0f47C35000"                      # 100000.0
# name: (setp setting %qp1 true where the difference is computed, the difference into %f2)
FORMS = {
    "x == X: x - c": (f"setp.eq.f32 %qp1, %f1, {X};", f"sub.rn.f32 %f2, %f1, {C};"),
    "x == X: x + (-c)": (f"setp.eq.f32 %qp1, %f1, {X};", f"add.rn.f32 %f2, %f1, {NC};"),
    "x == X: x - c (no .rn)": (f"setp.eq.f32 %qp1, %f1, {X};", f"sub.f32 %f2, %f1, {C};"),
    "!(x != X): x - c": (f"setp.neu.f32 %qp2, %f1, {X}; not.pred %qp1, %qp2;",
                         f"sub.rn.f32 %f2, %f1, {C};"),
    "bits(x) == bits(X): x - c": ("mov.b32 %q3, %f1; setp.eq.b32 %qp1, %q3, 0x47C35000;",
                                  f"sub.rn.f32 %f2, %f1, {C};"),
    "X <= x <= X: x - c": (f"setp.ge.f32 %qp2, %f1, {X}; setp.le.and.f32 %qp1, %f1, {X}, %qp2;",
                           f"sub.rn.f32 %f2, %f1, {C};"),
}
PTXPY_SOURCE = '''
import ptxpy
from ptxpy import Array, f32

@ptxpy.jit
def at_x(x: Array[f32, 1], out: Array[f32, 1]):
    i = ptxpy.thread_idx.x
    v = x[i]
    r = f32(0.0)
    if v == 100000.0:
        r = v - 1.00390625
    out[i] = r
'''


def kernel(name, test, compute):
    return entry(name, ".reg .f32 %f<10>; .reg .pred %qp<4>;",
                 ["ld.global.f32 %f1, [%qd6];", "mov.f32 %f2, 0f00000000;", test,
                  "@!%qp1 bra $DONE;", compute, "$DONE:", "st.global.f32 [%qd9], %f2;"])


def expected(x):
    return np.where(x == np.float32(100000), x - np.float32(1.00390625), np.float32(0))


def check(name, ptx, entry, x, shapes=False):
    out = np.full_like(x, np.nan)
    args = [x, len(x), out, len(x)] if shapes else [x, out]
    gpu_run_kernel(ptx, entry, (1,), (len(x),), args)
    want = expected(x).astype(np.float32)
    bad = np.flatnonzero(want.view(np.uint32) != out.view(np.uint32))
    report(name, 28, bad, {"x": x}, out, want, ptx)


def main():
    head = ".version 7.8\n.target sm_90\n.address_size 64\n"
    x = np.array([100000.0, 99999.0, 3.0, 1e30, -100000.0, 0.0, 100000.0, 100001.0], np.float32)
    for k, (name, (test, compute)) in enumerate(FORMS.items()):
        check(name, head + kernel(f"k{k}", test, compute), f"k{k}", x)
    from ptxpy.transpiler import driver
    ptx = driver.transpile(PTXPY_SOURCE, "fbranch.py", arch="sm_90")["at_x"]
    check("ptxpy: if v == 100000.0", ptx, "at_x", x, shapes=True)


if __name__ == "__main__":
    main()
