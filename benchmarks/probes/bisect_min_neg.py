"""A program that the H100 computes differently from the simulator, cut down (session 16).

One of the random programs still differing on the card. `min(a, -bool(i), i8(a & 0x7FFFFFFF))`:
the simulator and the language give -1 for i > 0 and a > 0; the H100 gave 1 (and 0 for a = 0)
while each pair of the three alone is right. Explained in session 17 (min_probe.py): ptxas
fuses the two mins into one VIMNMX3 and drops the negation of the inner min's second operand.
The backend now negates as ~x + 1; the random programs of this kind (32 and 786 of session 16)
no longer differ on the card. The output below is from before that change.

    python benchmarks/probes/bisect_min_neg.py                          # the simulator
    PTXPY_TEST_DEVICE=gpu python benchmarks/probes/bisect_min_neg.py    # the card

Output on the H100 (2026-11-23, driver 580.159.04):
    full [0, -3, 1, 1, 1, -100, -1, 0]          (the simulator: [0, -3, -1, -1, -1, -100, -1, -1])
    two [0, -3, -1, -1, -1, -100, -1, -1]
    neg_only [0, -1, -1, -1, -1, -1, -1, -1]
    i8_only [5, -3, 7, 5, 100, -100, -1, 0]
    neg_i8 [0, -3, -1, -1, -1, -100, -1, -1]
"""
import sys
sys.path.insert(0, "tests")
import numpy as np
from kernel_harness import Out, run
HEADER = "import ptxpy\nfrom ptxpy import Array, i8, i16, i32, i64, u8\n"
bodies = {
 "full": "o[i] = min(a[i], (-bool(i)), i8((a[i] & 2147483647)))",
 "two": "o[i] = min(a[i], (-bool(i)))",
 "neg_only": "o[i] = -bool(i)",
 "i8_only": "o[i] = min(a[i], i8((a[i] & 2147483647)))",
 "neg_i8": "o[i] = min((-bool(i)), i8((a[i] & 2147483647)))",
}
a = np.array([5, -3, 7, 5, 100, -100, 2**31 - 1, 0], np.int32)
for name, body in bodies.items():
    src = HEADER + f"\n@ptxpy.jit\ndef k(a: Array[i32], o: Array[i32]):\n    i = ptxpy.global_id(0)\n    {body}\n"
    (o,) = run(src, "k", [a, Out(len(a), np.int32)], grid=1, block=len(a))
    print(name, o.tolist())
