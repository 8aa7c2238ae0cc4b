"""Does the GPU's compiler drop a negation folded into a three-way min/max? (device only)

The shortest program still differing on the H100 in session 16 (bisect_min_neg.py) computes
`min(min(a, -b), c)`; ptxas fused it into one `VIMNMX3 R, a, b, c` without the negation. Each
form below computes one such expression from three loaded values and is compared with NumPy.

    python benchmarks/probes/min_probe.py [--sass]
"""
import re
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, "tests")
from gpu_launcher import gpu_run_kernel  # noqa: E402

# name: (type, body computing %x7 from %x1 = a, %x2 = b, %x3 = c, NumPy reference)
NEG = "neg.{t} %x4, %x2;"
FORMS = {
    "min(min(a, -b), c)": ("s32", [NEG, "min.{t} %x5, %x1, %x4;", "min.{t} %x7, %x5, %x3;"],
                           lambda a, b, c: np.minimum(np.minimum(a, -b), c)),
    "min(min(-b, a), c)": ("s32", [NEG, "min.{t} %x5, %x4, %x1;", "min.{t} %x7, %x5, %x3;"],
                           lambda a, b, c: np.minimum(np.minimum(a, -b), c)),
    "min(c, min(a, -b))": ("s32", [NEG, "min.{t} %x5, %x1, %x4;", "min.{t} %x7, %x3, %x5;"],
                           lambda a, b, c: np.minimum(np.minimum(a, -b), c)),
    "min(a, min(-b, c))": ("s32", [NEG, "min.{t} %x5, %x4, %x3;", "min.{t} %x7, %x1, %x5;"],
                           lambda a, b, c: np.minimum(np.minimum(c, -b), a)),
    "min(c, min(-b, a))": ("s32", [NEG, "min.{t} %x5, %x4, %x1;", "min.{t} %x7, %x3, %x5;"],
                           lambda a, b, c: np.minimum(np.minimum(a, -b), c)),
    "max(max(-b, a), c)": ("s32", [NEG, "max.{t} %x5, %x4, %x1;", "max.{t} %x7, %x5, %x3;"],
                           lambda a, b, c: np.maximum(np.maximum(a, -b), c)),
    "max(c, max(-b, a))": ("s32", [NEG, "max.{t} %x5, %x4, %x1;", "max.{t} %x7, %x3, %x5;"],
                           lambda a, b, c: np.maximum(np.maximum(a, -b), c)),
    "max(max(b, -b), c)": ("s32", [NEG, "max.{t} %x5, %x2, %x4;", "max.{t} %x7, %x5, %x3;"],
                           lambda a, b, c: np.maximum(np.maximum(b, -b), c)),
    "max(max(-b, b), c)": ("s32", [NEG, "max.{t} %x5, %x4, %x2;", "max.{t} %x7, %x5, %x3;"],
                           lambda a, b, c: np.maximum(np.maximum(b, -b), c)),
    "max(c, max(-b, b))": ("s32", [NEG, "max.{t} %x5, %x4, %x2;", "max.{t} %x7, %x3, %x5;"],
                           lambda a, b, c: np.maximum(np.maximum(b, -b), c)),
    "min(c, min(a, ~b+1))": ("s32", ["not.b32 %x4, %x2;", "add.s32 %x4, %x4, 1;",
                                     "min.{t} %x5, %x1, %x4;", "min.{t} %x7, %x3, %x5;"],
                             lambda a, b, c: np.minimum(np.minimum(a, -b), c)),
    "max(max(a, ~b+1), c)": ("s32", ["not.b32 %x4, %x2;", "add.s32 %x4, %x4, 1;",
                                     "max.{t} %x5, %x1, %x4;", "max.{t} %x7, %x5, %x3;"],
                             lambda a, b, c: np.maximum(np.maximum(a, -b), c)),
    "max(max(b, ~b+1), c)": ("s32", ["not.b32 %x4, %x2;", "add.s32 %x4, %x4, 1;",
                                     "max.{t} %x5, %x2, %x4;", "max.{t} %x7, %x5, %x3;"],
                             lambda a, b, c: np.maximum(np.maximum(b, -b), c)),
    "min(min(-b, a), c) s16": ("s16", [NEG, "min.{t} %x5, %x4, %x1;", "min.{t} %x7, %x5, %x3;"],
                               lambda a, b, c: np.minimum(np.minimum(a, -b), c)),
    "min(min(a, -b), c+1)": ("s32", [NEG, "add.s32 %x6, %x3, 1;", "min.{t} %x5, %x1, %x4;",
                                     "min.{t} %x7, %x5, %x6;"],
                             lambda a, b, c: np.minimum(np.minimum(a, -b), c + 1)),
    "max(max(a, -b), c)": ("s32", [NEG, "max.{t} %x5, %x1, %x4;", "max.{t} %x7, %x5, %x3;"],
                           lambda a, b, c: np.maximum(np.maximum(a, -b), c)),
    "min(min(a, -b), 0)": ("s32", [NEG, "min.{t} %x5, %x1, %x4;", "min.{t} %x7, %x5, 0;"],
                           lambda a, b, c: np.minimum(np.minimum(a, -b), 0)),
    "min(min(a, 0-b), c)": ("s32", ["sub.{t} %x4, 0, %x2;", "min.{t} %x5, %x1, %x4;",
                                    "min.{t} %x7, %x5, %x3;"],
                            lambda a, b, c: np.minimum(np.minimum(a, -b), c)),
    "min(min(a, ~b+1), c)": ("s32", ["not.b32 %x4, %x2;", "add.s32 %x4, %x4, 1;",
                                     "min.{t} %x5, %x1, %x4;", "min.{t} %x7, %x5, %x3;"],
                             lambda a, b, c: np.minimum(np.minimum(a, -b), c)),
    "min(min(a, b*-1), c)": ("s32", ["mul.lo.s32 %x4, %x2, -1;", "min.{t} %x5, %x1, %x4;",
                                     "min.{t} %x7, %x5, %x3;"],
                             lambda a, b, c: np.minimum(np.minimum(a, -b), c)),
    "min(min(a, ~b), c)": ("s32", ["not.b32 %x4, %x2;", "min.{t} %x5, %x1, %x4;",
                                   "min.{t} %x7, %x5, %x3;"],
                           lambda a, b, c: np.minimum(np.minimum(a, ~b), c)),
    "min(min(a, -b), c) u32": ("u32", ["neg.s32 %x4, %x2;", "min.{t} %x5, %x1, %x4;",
                                       "min.{t} %x7, %x5, %x3;"],
                               lambda a, b, c: np.minimum(np.minimum(a, -b), c)),
    "min(min(a, -b), c) s64": ("s64", [NEG, "min.{t} %x5, %x1, %x4;", "min.{t} %x7, %x5, %x3;"],
                               lambda a, b, c: np.minimum(np.minimum(a, -b), c)),
    "min(min(a, -b), c) s16": ("s16", [NEG, "min.{t} %x5, %x1, %x4;", "min.{t} %x7, %x5, %x3;"],
                               lambda a, b, c: np.minimum(np.minimum(a, -b), c)),
    "max(max(a, -b), c) s16": ("s16", [NEG, "max.{t} %x5, %x1, %x4;", "max.{t} %x7, %x5, %x3;"],
                               lambda a, b, c: np.maximum(np.maximum(a, -b), c)),
}
REG = {"s32": ("r", "b32", np.int32), "u32": ("r", "b32", np.uint32),
       "s64": ("rd", "b64", np.int64), "s16": ("rs", "b16", np.int16)}


def kernel(name, ty, body):
    prefix, width, dtype = REG[ty]
    size = np.dtype(dtype).itemsize
    text = " ".join(body).format(t=ty).replace("%x", f"%{prefix}")
    return f""".visible .entry {name}(.param .u64 pa, .param .u64 pb, .param .u64 pc, .param .u64 po) {{
    .reg .b32 %q<4>; .reg .b64 %qd<12>; .reg .{width} %{prefix}<10>; .reg .pred %p<4>;
    ld.param.u64 %qd1, [pa]; ld.param.u64 %qd2, [pb]; ld.param.u64 %qd3, [pc]; ld.param.u64 %qd4, [po];
    mov.u32 %q1, %tid.x; mul.wide.u32 %qd5, %q1, {size};
    add.s64 %qd6, %qd1, %qd5; add.s64 %qd7, %qd2, %qd5; add.s64 %qd8, %qd3, %qd5; add.s64 %qd9, %qd4, %qd5;
    ld.global.{ty} %{prefix}1, [%qd6]; ld.global.{ty} %{prefix}2, [%qd7]; ld.global.{ty} %{prefix}3, [%qd8];
    {text}
    st.global.{ty} [%qd9], %{prefix}7;
    ret;
}}
"""


def sass(ptx, addresses=False):
    """The SASS of `ptx` for sm_90, an instruction a line (with its address: `addresses`)."""
    with tempfile.TemporaryDirectory() as tmp:
        with open(f"{tmp}/k.ptx", "w") as f:
            f.write(ptx)
        subprocess.run(["ptxas", "-arch", "sm_90", "-o", f"{tmp}/k.cubin", f"{tmp}/k.ptx"], check=True)
        out = subprocess.run(["cuobjdump", "-sass", f"{tmp}/k.cubin"], capture_output=True, text=True).stdout
    lines = (re.match(r"\s*/\*([0-9a-f]{4,})\*/\s*(.*?)\s*(?:/\*|$)", line) for line in out.splitlines())
    return "\n".join((f"{m.group(1)}  " if addresses else "") + m.group(2) for m in lines
                      if m and "NOP" not in m.group(2))


def report(name, width, bad, inputs, out, expected, ptx):
    """Print one form's verdict: right, or how many threads differ, with the first one's
    `inputs` (name: array) and values; then its SASS under --sass."""
    verdict = "right" if not len(bad) else f"WRONG at {len(bad)} of {len(out)}"
    example = "" if not len(bad) else (
        ": " + " ".join(f"{n}={v[bad[0]]}" for n, v in inputs.items())
        + f" gives {out[bad[0]]}, not {expected[bad[0]]}")
    print(f"{name:{width}s} {verdict}{example}")
    if "--sass" in sys.argv:
        print("    " + sass(ptx).replace("\n", "\n    "))


def entry(name, regs, body):
    """A PTX kernel `name(px, po)` over 4-byte elements: each thread t has %qd6 = &x[t] and
    %qd9 = &out[t] (%q and %qd registers), declares `regs` and runs `body` (a list of lines)."""
    text = "\n    ".join(body)
    return f""".visible .entry {name}(.param .u64 px, .param .u64 po) {{
    .reg .b32 %q<4>; .reg .b64 %qd<12>; {regs}
    ld.param.u64 %qd1, [px]; ld.param.u64 %qd3, [po];
    mov.u32 %q1, %tid.x; mul.wide.u32 %qd5, %q1, 4;
    add.s64 %qd6, %qd1, %qd5; add.s64 %qd9, %qd3, %qd5;
    {text}
    ret;
}}
"""


def check_ptxpy(name, width, source, kernel, x, out, expected):
    """Compile `kernel` of the ptxpy `source`, run it on one block over `x` into `out` (its 1-D
    arrays take their lengths after them), and print its verdict as `report` does."""
    from ptxpy.transpiler import driver

    ptx = driver.transpile(source, f"{kernel}.py", arch="sm_90")[kernel]
    gpu_run_kernel(ptx, kernel, (1,), (len(x),), [x, len(x), out, len(out)])
    report(name, width, np.flatnonzero(expected != out), {"x": x}, out, expected, ptx)


def main():
    head = ".version 7.8\n.target sm_90\n.address_size 64\n"
    rng = np.random.default_rng(0)
    for k, (name, (ty, body, want)) in enumerate(FORMS.items()):
        dtype = REG[ty][2]
        info = np.iinfo(dtype)
        a, b, c = (np.concatenate([rng.integers(-100, 100, 200), [0, 1, -1, info.min, info.max] * 3])
                   .astype(dtype) for _ in range(3))
        rng.shuffle(b)
        out = np.zeros_like(a)
        ptx = head + kernel(f"k{k}", ty, body)
        gpu_run_kernel(ptx, f"k{k}", (1,), (len(a),), [a, b, c, out])
        with np.errstate(over="ignore"):
            expected = want(a, b, c).astype(dtype)
        report(name, 26, np.flatnonzero(expected != out), {"a": a, "b": b, "c": c}, out,
               expected, ptx)


if __name__ == "__main__":
    main()
