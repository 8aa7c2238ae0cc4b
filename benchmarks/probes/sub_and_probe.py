"""Does the GPU's compiler get `(c - x) & x` right? (device only)

Session 18's random program 1467 (reduced/program-1467.py) ends in `(2 - p1) & p1` with
p1 = 2**31 - 1, which is 3; the card stored 1. Each form computes one such expression from
loaded 32-bit values (%r1 = x, %r2 = y, which holds 2) and is compared with NumPy.

    python benchmarks/probes/sub_and_probe.py [--sass]
"""
import sys

import numpy as np

sys.path.insert(0, "tests")
sys.path.insert(0, "benchmarks/probes")
from gpu_launcher import gpu_run_kernel  # noqa: E402
from min_probe import kernel, report  # noqa: E402

S = "setp.lt.u32 %p1, %x1, 1000; selp.b32 %x5, 2, 2147483647, %p1;"


def s_of(x):
    return np.where(x < 1000, 2, 2**31 - 1).astype(np.uint32)


FORMS = {
    "(2 - x) & x": (["sub.u32 %x4, 2, %x1;", "and.b32 %x7, %x4, %x1;"], lambda x, y: (2 - x) & x),
    "x & (2 - x)": (["sub.u32 %x4, 2, %x1;", "and.b32 %x7, %x1, %x4;"], lambda x, y: (2 - x) & x),
    "(3 - x) & x": (["sub.u32 %x4, 3, %x1;", "and.b32 %x7, %x4, %x1;"], lambda x, y: (3 - x) & x),
    "(0 - x) & x": (["sub.u32 %x4, 0, %x1;", "and.b32 %x7, %x4, %x1;"], lambda x, y: (0 - x) & x),
    "(y - x) & x": (["sub.u32 %x4, %x2, %x1;", "and.b32 %x7, %x4, %x1;"], lambda x, y: (y - x) & x),
    "(x - 2) & x": (["sub.u32 %x4, %x1, 2;", "and.b32 %x7, %x4, %x1;"], lambda x, y: (x - 2) & x),
    "(2 - x) | x": (["sub.u32 %x4, 2, %x1;", "or.b32 %x7, %x4, %x1;"], lambda x, y: (2 - x) | x),
    "(2 - x) ^ x": (["sub.u32 %x4, 2, %x1;", "xor.b32 %x7, %x4, %x1;"], lambda x, y: (2 - x) ^ x),
    "(~x + 3) & x": (["not.b32 %x4, %x1;", "add.u32 %x4, %x4, 3;", "and.b32 %x7, %x4, %x1;"],
                     lambda x, y: (2 - x) & x),
    # s is 2 or 2**31 - 1, as in the program's loop: ptxas knows its bits 1 and 31
    "(2 - s) & s": ([S, "sub.u32 %x4, 2, %x5;", "and.b32 %x7, %x4, %x5;"],
                    lambda x, y: (2 - s_of(x)) & s_of(x)),
    "2 - s": ([S, "sub.u32 %x7, 2, %x5;"], lambda x, y: 2 - s_of(x)),
    "(y - s) & s": ([S, "sub.u32 %x4, %x2, %x5;", "and.b32 %x7, %x4, %x5;"],
                    lambda x, y: (2 - s_of(x)) & s_of(x)),
    "(~s + 3) & s": ([S, "not.b32 %x4, %x5;", "add.u32 %x4, %x4, 3;", "and.b32 %x7, %x4, %x5;"],
                     lambda x, y: (2 - s_of(x)) & s_of(x)),
    "(2 - s) ^ s": ([S, "sub.u32 %x4, 2, %x5;", "xor.b32 %x7, %x4, %x5;"],
                    lambda x, y: (2 - s_of(x)) ^ s_of(x)),
    "(5 - t) & t": (["setp.lt.u32 %p1, %x1, 1000;", "selp.b32 %x5, 6, 9, %p1;",
                     "sub.u32 %x4, 5, %x5;", "and.b32 %x7, %x4, %x5;"],
                    lambda x, y: (5 - np.where(x < 1000, 6, 9)) & np.where(x < 1000, 6, 9)),
}


def main():
    head = ".version 7.8\n.target sm_90\n.address_size 64\n"
    rng = np.random.default_rng(0)
    x = np.concatenate([[0, 1, 2, 3, 5, 2**31 - 1, 2**31, 2**32 - 1, 2**31 + 1],
                        rng.integers(0, 2**32, 119)]).astype(np.uint32)
    y = np.full_like(x, 2)
    for k, (name, (body, want)) in enumerate(FORMS.items()):
        out = np.zeros_like(x)
        ptx = head + kernel(f"k{k}", "u32", body)
        gpu_run_kernel(ptx, f"k{k}", (1,), (len(x),), [x, y, y, out])
        with np.errstate(over="ignore"):
            expected = want(x, y).astype(np.uint32)
        report(name, 16, np.flatnonzero(expected != out), {"x": x}, out, expected, ptx)


if __name__ == "__main__":
    main()
