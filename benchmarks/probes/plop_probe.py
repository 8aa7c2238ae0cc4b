"""Does the GPU's compiler combine predicate logic right when two of its inputs are the same
value? (device only)

Session 21's random program 51 (seed 2612, with --warp; cut down in reduced/program-51.py)
computes `(v3 | v4) ^ v3` after a loop of five trips that sets `v4 = v3`: 0 whatever v3. The
card stored v3: ptxas unrolled the loop, put the `or` and `xor` in one `PLOP3` of (v3, true,
v3), and gave it the function of its first input (LUT 0xf0), not 0. Each form below computes
a predicate from p (x != 0, x loaded) and q, a copy of p made as its name says, and stores
1 or 0.

    python benchmarks/probes/plop_probe.py [--sass]
"""
import sys

import numpy as np

sys.path.insert(0, "tests")
from gpu_launcher import gpu_run_kernel  # noqa: E402
from min_probe import check_ptxpy, entry, report  # noqa: E402

# how q becomes a copy of p (%p1)
COPIES = {
    "mov.pred": ["mov.pred %p2, %p1;"],
    "a loop of 5 trips": ["mov.u32 %r2, 0;", "setp.ne.u32 %p2, 0, 0;", "$LOOP:",
                          "setp.lt.s32 %p4, %r2, 5;", "@!%p4 bra $DONE;", "add.s32 %r2, %r2, 1;",
                          "mov.pred %p2, %p1;", "bra.uni $LOOP;", "$DONE:"],
}
# as program 51: p set again by both arms of a branch on it (True, or x > 100: still x != 0)
COPIES["p from a branch, then a loop of 5 trips"] = [
    "@%p1 bra $TAKEN;", "setp.gt.u32 %p1, %r1, 100;", "bra.uni $JOIN;", "$TAKEN:",
    "setp.ne.u32 %p1, 1, 0;", "$JOIN:"] + COPIES["a loop of 5 trips"]
# name: (PTX setting %p3 from %p1 = p and %p2 = q, NumPy of p (q == p))
FORMS = {
    "(p | q) ^ p": (["or.pred %p3, %p1, %p2;", "xor.pred %p3, %p3, %p1;"], lambda p: p & False),
    "(p & q) ^ p": (["and.pred %p3, %p1, %p2;", "xor.pred %p3, %p3, %p1;"], lambda p: p & False),
    "p ^ q": (["xor.pred %p3, %p1, %p2;"], lambda p: p & False),
    "(p | q) & !p": (["or.pred %p3, %p1, %p2;", "not.pred %p4, %p1;", "and.pred %p3, %p3, %p4;"],
                     lambda p: p & False),
    "(p ^ q) | p": (["xor.pred %p3, %p1, %p2;", "or.pred %p3, %p3, %p1;"], lambda p: p),
    "(p | q) ^ q": (["or.pred %p3, %p1, %p2;", "xor.pred %p3, %p3, %p2;"], lambda p: p & False),
    "(p | q) != p as setp.ne.b32 of selp": (
        ["or.pred %p3, %p1, %p2;", "selp.u32 %r5, 1, 0, %p3;", "selp.u32 %r6, 1, 0, %p1;",
         "setp.ne.b32 %p3, %r5, %r6;"], lambda p: p & False),
    "(p | q) ^ p in b32": (
        ["selp.u32 %r5, 1, 0, %p1;", "selp.u32 %r6, 1, 0, %p2;", "or.b32 %r7, %r5, %r6;",
         "xor.b32 %r7, %r7, %r5;", "setp.ne.u32 %p3, %r7, 0;"], lambda p: p & False),
    "(p | q) ^ p in b16": (
        ["selp.u16 %rs1, 1, 0, %p1;", "selp.u16 %rs2, 1, 0, %p2;", "or.b16 %rs3, %rs1, %rs2;",
         "xor.b16 %rs3, %rs3, %rs1;", "setp.ne.u16 %p3, %rs3, 0;"], lambda p: p & False),
}
PTXPY_SOURCE = '''
import ptxpy
from ptxpy import Array, i32, i8

@ptxpy.jit
def after_loop(x: Array[i32, 1], out: Array[i8, 1]):
    i = ptxpy.thread_idx.x
    p = x[i] != 0
    q = False
    w = 0
    while w < 5:
        w += 1
        q = p
    out[i] = (p | q) ^ p
'''


def kernel(name, copy, form):
    return entry(name, ".reg .pred %p<6>; .reg .b32 %r<8>; .reg .b16 %rs<4>;",
                 ["ld.global.u32 %r1, [%qd6];", "setp.ne.u32 %p1, %r1, 0;", *copy, *form,
                  "selp.u32 %r3, 1, 0, %p3;", "st.global.u32 [%qd9], %r3;"])


def main():
    head = ".version 7.8\n.target sm_90\n.address_size 64\n"
    x = np.array([0, 1, 2, 0, 7, 0, 0, 5], np.int32)
    k = 0
    for cname, copy in COPIES.items():
        for fname, (form, want) in FORMS.items():
            out = np.zeros(len(x), np.uint32)
            ptx = head + kernel(f"k{k}", copy, form)
            gpu_run_kernel(ptx, f"k{k}", (1,), (len(x),), [x, out])
            expected = want(x != 0).astype(np.uint32)
            report(f"{fname}, q by {cname}", 56, np.flatnonzero(expected != out), {"x": x},
                   out, expected, ptx)
            k += 1
    check_ptxpy("ptxpy: (p | q) ^ p after q = p in a loop", 56, PTXPY_SOURCE, "after_loop", x,
                np.full(len(x), 7, np.int8), np.zeros(len(x), np.int8))


if __name__ == "__main__":
    main()
