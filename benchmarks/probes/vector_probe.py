"""The two random programs with vector access that the card got wrong (session 24, device only).

1. Program 285 of seed 4150, cut down: an `i8` from `ld.global.v4.s8`, sign-extended
   (`cvt.s32.s16`), then `cvt.rn.bf16.u32`: the card stored -70 where u32(-70) is 4294967226.
   Source forms: `T(u32(x))` for x an i8, i16 or u8 loaded alone or in a vector, T each float
   type; then rewrites of the PTX that session 24 started with (one `ld.v4.s8`).
2. Program 571 of seed 4149, cut down: thread 0 loaded `b[62:64]` where it must load
   `b[60:62]`. Rewrites of its PTX as session 24's allocator gave it (v1 and v3 in `%p1`),
   and today's ptxpy (a `selp`'s predicate kept to itself while the selected value lives).

    python benchmarks/probes/vector_probe.py [--sass]
"""
import os
import random
import re
import sys

import numpy as np

sys.path.insert(0, "tests")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from known_index_probe import launcher, report, show_sass  # noqa: E402

CONVERT = """
import ptxpy
from ptxpy import Array, i8, i16, u8, u32, f16, bf16, f32, f64

@ptxpy.jit
def kern(x: Array[{S}], o: Array[{T}]):
    i = ptxpy.global_id(0)
    {load}
    o[i] = {T}(u32(t3))
"""
# (the workaround: isel.bytes_one_by_one; `without_fix.py vector-bytes` puts `ld.v4.s8` back)
LOADS = {"vector": "t0, t1, t2, t3 = x[4 * i:4 * i + 4]", "scalar": "t3 = x[4 * i + 3]"}


def run_conversions():
    from kernel_harness import compile_source
    from test_differential import np_dtype

    for source_type in ("i8", "i16", "u8"):
        x = np.arange(-128, 128).astype(np_dtype(source_type))
        expected_u32 = (x[3::4].astype(np.int64) % 2**32).astype(np.float64)
        np.seterr(over="ignore")           # u32 values past f16's largest number are inf
        for target in ("bf16", "f16", "f32", "f64"):
            for load_name, load in LOADS.items():
                text = compile_source(CONVERT.format(S=source_type, T=target, load=load), "kern",
                                      arch="sm_90").ptx
                out = np.zeros(64, np_dtype(target))
                launcher()(text, "kern", (1,), (64,), [x, 256, out, 64])
                report(f"{target}(u32({source_type})), {load_name} load", out,
                       expected_u32.astype(np_dtype(target)))
                show_sass(text)


def reduced(name):
    text = open(os.path.join(HERE, "reduced", name)).read()
    return text.split('"""', 2)[2]


def program_inputs(seed, number):
    from replay import kernel_args
    from test_differential import gen_program

    draws = random.Random(f"{seed}:{number}")
    _, _, inputs, out_specs = gen_program(lambda lo, hi: draws.randint(lo, hi), True, True,
                                          False, True, False, True)
    return lambda: kernel_args(inputs, out_specs)


FALSE = r"setp\.ne\.u32 %p1, 0, 0;"
TRUE = r"setp\.ne\.u32 %p1, 1, 0;"
DIVISION = r"mov\.b16 %h2, 0x0000;.*?cvt\.rmi\.f16\.f16 %h1, %h1;"
VECTOR = r"ld\.global\.nc\.v2\.f32 \{%f1, %f2\}, \[%rd3\];"
PTX_FORMS_571 = {
    "as emitted": [],
    "false as mov.pred": [(FALSE, "mov.pred %p1, 0;")],
    "true as mov.pred": [(TRUE, "mov.pred %p1, 1;")],
    "both as mov.pred": [(FALSE, "mov.pred %p1, 0;"), (TRUE, "mov.pred %p1, 1;")],
    "no f16 division": [(DIVISION, "")],
    "one scalar load": [(VECTOR, "ld.global.nc.f32 %f2, [%rd3+4];")],
    "v4's selp in 32 bits": [(r"selp\.s16 %rs1, 1, 0, %p1;",
                              "selp.u32 %r6, 1, 0, %p1; cvt.u16.u32 %rs1, %r6;")],
    "v1's True through %p2": [(TRUE, "setp.ne.u32 %p2, 1, 0; mov.pred %p1, %p2;")],
    "v1 in a register of its own": [
        (r"\.reg \.pred %p<3>;", ".reg .pred %p<4>;"),
        (r"(selp\.s64 %rd3, 1, 0, %p1;)", r"mov.pred %p3, %p1; \1"),
        (TRUE, "setp.ne.u32 %p3, 1, 0;"),
        (r"selp\.u16 %rs1, 1, 0, %p1;", "selp.u16 %rs1, 1, 0, %p3;")],
}


def rewritten(text, rewrites, name):
    """`text` with each (pattern, replacement) applied; a pattern must match."""
    for pattern, replacement in rewrites or []:
        text, count = re.subn(pattern, replacement, text, flags=re.S)
        assert count, f"{name}: pattern not found: {pattern}"
    return text


def card_against_simulator(name, text, args, output):
    """Run `text` on the simulator and on the card with fresh `args()`; compare args[output]."""
    from ptxpy.runtime.simulator import run_kernel

    want, got = args(), args()
    run_kernel(text, "kern", grid=(1,), block=(64,), args=want)
    launcher()(text, "kern", (1,), (64,), got)
    report(name, got[output], want[output])
    show_sass(text)


def run_program_571():
    from kernel_harness import compile_source

    import ptxpy.transpiler.backend.regalloc as regalloc

    source = reduced("program-571-4149.py")
    today = compile_source(source, "kern", arch="sm_90").ptx
    rule = regalloc.keep_selected_predicates_live
    regalloc.keep_selected_predicates_live = lambda *args: None
    base = compile_source(source, "kern", arch="sm_90").ptx
    regalloc.keep_selected_predicates_live = rule
    args = program_inputs("4149", 571)
    card_against_simulator("program 571: today's ptxpy", today, args, 14)
    for name, rewrites in PTX_FORMS_571.items():
        card_against_simulator(f"program 571: {name}", rewritten(base, rewrites, name), args,
                               14)      # o_i16


def run_program_285():
    from kernel_harness import compile_source

    text = compile_source(reduced("program-285-4150.py"), "kern", arch="sm_90").ptx
    card_against_simulator("program 285 as emitted", text, program_inputs("4150", 285),
                           8)           # o_bf16


U32_TO_F32 = r"cvt\.rn\.f32\.u32 (%f\d+), (%r\d+);"
SPARE = (r"(\.reg \.b32 %r<\d+>;)", r"\1 .reg .b32 %qr; .reg .b64 %qd; .reg .f64 %qfd;")
V4 = r"ld\.global\.nc\.v4\.s8 \{%rs\d+, %rs\d+, %rs\d+, (%rs\d+)\}, \[(%rd\d+)\];"
# rewrites of the PTX of session 24's start (one `ld.v4.s8`); None: today's ptxpy
CONVERSION_FORMS = {
    "today's ptxpy (a load per byte)": None,
    "ld.v4.s8": [],
    "u32 through u64": [SPARE, (U32_TO_F32, r"cvt.u64.u32 %qd, \2; cvt.rn.f32.u64 \1, %qd;")],
    "u32 through f64": [SPARE, (U32_TO_F32, r"cvt.rn.f64.u32 %qfd, \2; cvt.rn.f32.f64 \1, %qfd;")],
    "sign extension from s8": [(r"cvt\.s32\.s16 (%r\d+), (%rs\d+);", r"cvt.s32.s8 \1, \2;")],
    "one 32-bit load, bfe.s32 (wrong in session 24)": [
        SPARE, (V4, r"ld.global.nc.u32 %qr, [\2]; bfe.s32 %qr, %qr, 24, 8; cvt.u16.u32 \1, %qr;")],
}


def run_conversion_rewrites():
    """f32(u32(t3)) of an i8 vector element, its PTX rewritten."""
    from kernel_harness import compile_source

    from without_fix import FIXES
    x = np.arange(-128, 128).astype(np.int8)
    want = (x[3::4].astype(np.int64) % 2**32).astype(np.float32)
    source = CONVERT.format(S="i8", T="f32", load=LOADS["vector"])
    today = compile_source(source, "kern", arch="sm_90").ptx
    FIXES["vector-bytes"]()
    base = compile_source(source, "kern", arch="sm_90").ptx
    for name, rewrites in CONVERSION_FORMS.items():
        text = today if rewrites is None else rewritten(base, rewrites, name)
        out = np.zeros(64, np.float32)
        launcher()(text, "kern", (1,), (64,), [x, 256, out, 64])
        report(f"f32(u32(i8)) vector: {name}", out, want)
        show_sass(text)


if __name__ == "__main__":
    run_conversions()
    run_program_285()
    run_program_571()
    run_conversion_rewrites()     # last: it takes the workaround out of this process
