"""What the GPU gives for integer `//` and `%` by zero, in each form ptxpy compiles: both
operands at run time, a constant divisor, a constant dividend, both constants (session 34).
Run on a GPU: PTXPY_TEST_DEVICE=gpu python benchmarks/probes/division_by_zero_probe.py"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests"))
from kernel_harness import Out, run  # noqa: E402

HEADER = "import ptxpy\nfrom ptxpy import Array, i8, i16, i32, i64, u8, u16, u32, u64\n"
FORMS = ["x // z", "x // T(0)", "T(0) // z", "T(-7) // T(0)", "x % z", "x % T(0)", "T(0) % z",
         "T(5) // z", "T(5) % z"]

for t, dtype in (("i32", np.int32), ("i64", np.int64), ("u32", np.uint32), ("i8", np.int8),
                 ("u16", np.uint16), ("u64", np.uint64)):
    body = "\n".join(f"    o[i, {k}] = {form.replace('T', t)}" for k, form in enumerate(FORMS))
    source = HEADER + f"""
@ptxpy.jit
def kern(a: Array[{t}], b: Array[{t}], o: Array[{t}, 2]):
    i = ptxpy.global_id(0)
    x = a[i]
    z = b[i]
{body}
"""
    a = np.array([-7, 0, 5, 100] if np.issubdtype(dtype, np.signedinteger) else [0, 5, 100, 7], dtype)
    (o,) = run(source, "kern", [a, np.zeros(4, dtype), Out((4, len(FORMS)), dtype)], grid=1, block=4)
    for x, row in zip(a, o):
        print(t, f"x={x}", dict(zip(FORMS, row.tolist())))
