"""Products of values whose low bits ptxas knows: which ptxas gets them wrong.

With ptxas 13.5.37 (`PTXPY_PTXAS=newest`) the H100 computed two random programs wrong in
session 26 (1186 of seed 4528, 398 of seed 4533, `--memory --warp --loops --vectors`); cut down
on the card (`reduced/program-1186-4528.py`, `reduced/program-398-4533.py`) each is a 32-bit
product of values with known low one-bits, then an `or` (or `and`) with a small constant:
`(x | 255) ** 3 | 7` and `(i16(v) | 3)` of `v = (a | 1) ** 4`. ptxas 13.5 takes the known low
bits of such a product to be zeros: it turns `| 7` into `+ 7` (`IMAD R, a, b, 0x7`) and folds
`& 3` to 0, where ptxas 13.0 (the driver's JIT) adds the right 6 and keeps the `and`. Only
`mul.lo`/`mad.lo` of 32 bits with two register operands do it: a constant factor, 16- and
64-bit products and `mul.wide` are right.

Each form loads `x` and `y` (u32), computes `%r8` and is compared with NumPy:

    python benchmarks/probes/known_bits_probe.py            # on the card, as the runtime compiles
    PTXPY_PTXAS=newest python benchmarks/probes/known_bits_probe.py
    python benchmarks/probes/known_bits_probe.py --sass PTXAS ...   # no GPU: each ptxas's SASS
"""
import os
import re
import sys

import numpy as np

# name: (PTX computing %r8 from %r1 = x and %r2 = y, NumPy reference)
FORMS = {
    "(x|1)**4 | 3": ("or.b32 %r3, %r1, 1; mul.lo.u32 %r4, %r3, %r3; mul.lo.u32 %r4, %r4, %r4; "
                     "or.b32 %r8, %r4, 3;", lambda x, y: (x | 1) ** 4 | 3),
    "(x|1)**4 & 3": ("or.b32 %r3, %r1, 1; mul.lo.u32 %r4, %r3, %r3; mul.lo.u32 %r4, %r4, %r4; "
                     "and.b32 %r8, %r4, 3;", lambda x, y: (x | 1) ** 4 & 3),
    "(x|255)**2 | 7": ("or.b32 %r3, %r1, 255; mul.lo.u32 %r4, %r3, %r3; or.b32 %r8, %r4, 7;",
                       lambda x, y: (x | 255) ** 2 | 7),
    "(x|255)**3 | 7": ("or.b32 %r3, %r1, 255; mul.lo.u32 %r4, %r3, %r3; "
                       "mul.lo.u32 %r4, %r4, %r3; or.b32 %r8, %r4, 7;",
                       lambda x, y: (x | 255) ** 3 | 7),
    "(x|3)*(y|3) | 3": ("or.b32 %r3, %r1, 3; or.b32 %r4, %r2, 3; mul.lo.u32 %r5, %r3, %r4; "
                        "or.b32 %r8, %r5, 3;", lambda x, y: (x | 3) * (y | 3) | 3),
    "(4x+3)**2 | 3": ("shl.b32 %r3, %r1, 2; add.u32 %r3, %r3, 3; mul.lo.u32 %r4, %r3, %r3; "
                      "or.b32 %r8, %r4, 3;", lambda x, y: (4 * x + 3) ** 2 | 3),
    "(x|7)*(x|7)+8 & 7 (mad)": ("or.b32 %r3, %r1, 7; mad.lo.u32 %r4, %r3, %r3, 8; "
                                "and.b32 %r8, %r4, 7;", lambda x, y: ((x | 7) ** 2 + 8) & 7),
    # the forms ptxas 13.5 gets right
    "(x|1)**2 | 3": ("or.b32 %r3, %r1, 1; mul.lo.u32 %r4, %r3, %r3; or.b32 %r8, %r4, 3;",
                     lambda x, y: (x | 1) ** 2 | 3),
    "(x|3)*5 | 3": ("or.b32 %r3, %r1, 3; mul.lo.u32 %r4, %r3, 5; or.b32 %r8, %r4, 3;",
                    lambda x, y: (x | 3) * 5 | 3),
    "(x|255)**2 | 7 (mul.wide)": ("or.b32 %r3, %r1, 255; mul.wide.u32 %rd5, %r3, %r3; "
                                  "cvt.u32.u64 %r4, %rd5; or.b32 %r8, %r4, 7;",
                                  lambda x, y: (x | 255) ** 2 | 7),
}
HEAD = ".version 7.8\n.target sm_90\n.address_size 64\n"


def kernel(name, body):
    return HEAD + f""".visible .entry {name}(.param .u64 px, .param .u64 py, .param .u64 po) {{
    .reg .b32 %q<2>; .reg .b32 %r<9>; .reg .b64 %rd<10>;
    ld.param.u64 %rd1, [px]; ld.param.u64 %rd2, [py]; ld.param.u64 %rd3, [po];
    mov.u32 %q1, %tid.x; mul.wide.u32 %rd4, %q1, 4;
    add.s64 %rd1, %rd1, %rd4; add.s64 %rd2, %rd2, %rd4; add.s64 %rd3, %rd3, %rd4;
    ld.global.u32 %r1, [%rd1]; ld.global.u32 %r2, [%rd2];
    {body}
    st.global.u32 [%rd3], %r8;
    ret;
}}
"""


def sass(ptxas, ptx):
    """The arithmetic of `ptx`'s SASS for sm_90 under `ptxas` (nvdisasm: NVDISASM or the PATH)."""
    from sass_hazards import sass_of

    body = (re.search(r"/\*[0-9a-f]{4}\*/\s*(.*?)\s*;", line)
            for line in sass_of(ptx, ptxas=ptxas).splitlines())
    return [m.group(1) for m in body
            if m and not re.match(r"(LDC|ULDC|LDG|STG|S2R|EXIT|BRA|NOP|ACQBULK|IADD3|IMAD\.X|IMAD\.WIDE)\b",
                                  m.group(1))]


def main(argv):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    if argv and argv[0] == "--sass":
        for name, (body, _) in FORMS.items():
            print(name)
            for ptxas in argv[1:]:
                print(f"    {ptxas}: " + " | ".join(sass(ptxas, kernel("k", body))))
        return
    sys.path.insert(0, "tests")
    from gpu_launcher import gpu_run_kernel

    rng = np.random.default_rng(0)
    x = rng.integers(0, 2**32, 256, dtype=np.uint64).astype(np.uint32)
    y = rng.integers(0, 2**32, 256, dtype=np.uint64).astype(np.uint32)
    for k, (name, (body, want)) in enumerate(FORMS.items()):
        out = np.zeros_like(x)
        gpu_run_kernel(kernel(f"k{k}", body), f"k{k}", (1,), (len(x),), [x, y, out])
        with np.errstate(over="ignore"):
            expected = want(x, y).astype(np.uint32)
        bad = np.flatnonzero(expected != out)
        verdict = "right" if not len(bad) else (
            f"WRONG at {len(bad)} of {len(x)}: x={x[bad[0]]} y={y[bad[0]]} "
            f"gives {out[bad[0]]}, not {expected[bad[0]]}")
        print(f"{name:28s} {verdict}")


if __name__ == "__main__":
    main(sys.argv[1:])
