"""Which change to the PTX makes the GPU agree with the simulator? (device only)

For each program that `reduce_gpu.py` cut down, the PTX that ptxpy emits is run on the
simulator and on the card, then again on the card after each named rewrite of the PTX text
(a regular expression and its replacement, or a list of such pairs all applied;
`%q`/`%qf`/`%qd`/`%qp`/`%qh` are spare registers).

    python benchmarks/probes/variants.py [NUMBER ...] [--sass]

The rewrites match the PTX that ptxpy emitted when they were written (session 17); after the
backend changed for a program, its patterns print "pattern not found".
"""
import os
import re
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import reduce_gpu  # noqa: E402
from min_probe import sass  # noqa: E402

MISMATCHES = [os.path.join(HERE, "..", "results", name) for name in (
    "differential-gpu-h100-2026-11-23-session16-remaining.txt",
    "differential-gpu-h100-2026-11-23-session17.txt",
    "differential-gpu-h100-2026-11-23-session18.txt",
    "differential-gpu-h100-2026-11-23-session18-long.txt",
    "differential-gpu-h100-2026-11-23-session19.txt",
    "differential-gpu-h100-2026-11-23-session19-final.txt",
    "differential-gpu-h100-2026-11-23-session19-fma.txt",
    "differential-gpu-h100-2026-11-24-session21-warp.txt")]
SELECT_564 = (r"or\.pred %p3, %p2, %p1;\s*and\.pred %p1, %p2, %p1;\s*not\.pred %p2, %p2;"
              r"\s*and\.pred %p2, %p2, %p3;\s*or\.pred %p2, %p1, %p2;")
Q = "cvt.s32.s16 %q1, {a}; cvt.s32.s16 %q2, {b};"
VARIANTS = {
    265: {   # v4 == abs(v4) for v4: i16 == 2 after two loops: the card says no
        "abs in 32 bits": (r"sub\.s16 %rs2, 0, %rs1;\s*max\.s16 %rs2, %rs1, %rs2;",
                           "cvt.s32.s16 %q1, %rs1; neg.s32 %q2, %q1; max.s32 %q2, %q1, %q2; "
                           "cvt.u16.u32 %rs2, %q2;"),
        "abs.s16": (r"sub\.s16 %rs2, 0, %rs1;\s*max\.s16 %rs2, %rs1, %rs2;", "abs.s16 %rs2, %rs1;"),
        "not, add 1": (r"sub\.s16 %rs2, 0, %rs1;",
                       "not.b16 %rs2, %rs1; add.s16 %rs2, %rs2, 1;"),
        "compare in 32 bits": (r"setp\.eq\.s16 %p1, %rs1, %rs2;",
                               Q.format(a="%rs1", b="%rs2") + " setp.eq.s32 %p1, %q1, %q2;"),
    },
    1027: {  # i8(b[60]) - i16(v3) <= i16(v3), in 16 bits
        "sub and compare in 32 bits": (
            r"sub\.s16 %rs2, %rs2, %rs1;\s*setp\.le\.s16 %p1, %rs2, %rs1;",
            Q.format(a="%rs2", b="%rs1") + " sub.s32 %q1, %q1, %q2; cvt.u16.u32 %rs2, %q1; "
            "cvt.s32.s16 %q1, %rs2; setp.le.s32 %p1, %q1, %q2;"),
        "sub.u16": (r"sub\.s16 %rs2, %rs2, %rs1;", "sub.u16 %rs2, %rs2, %rs1;"),
        "compare in 32 bits": (r"setp\.le\.s16 %p1, %rs2, %rs1;",
                               Q.format(a="%rs2", b="%rs1") + " setp.le.s32 %p1, %q1, %q2;"),
        "cvt.rzi.s16 then s8": (r"cvt\.rzi\.s8\.f32 %rs2, %f1;",
                                "cvt.rzi.s32.f32 %q1, %f1; min.s32 %q1, %q1, 127; "
                                "max.s32 %q1, %q1, -128; cvt.u16.u32 %rs2, %q1;"),
    },
    1024: {  # i8 % -8 in a loop condition
        "rem in 32 bits": (r"rem\.s16 %rs3, %rs2, -8;",
                           "cvt.s32.s16 %q1, %rs2; rem.s32 %q1, %q1, -8; cvt.u16.u32 %rs3, %q1;"),
        "add in 32 bits": (r"add\.s16 %rs1, %rs3, -8;",
                           "cvt.s32.s16 %q1, %rs3; add.s32 %q1, %q1, -8; cvt.u16.u32 %rs1, %q1;"),
        "add.u16": (r"add\.s16 %rs1, %rs3, -8;", "add.u16 %rs1, %rs3, -8;"),
    },
    478: {   # u16(f16 0.0) widened to i32 gives -65536
        "through f32": (r"cvt\.rzi\.u16\.f16 %rs1, %h1;",
                        "cvt.f32.f16 %qf1, %h1; cvt.rzi.u16.f32 %rs1, %qf1;"),
        "cvt.u32.u16": (r"cvt\.s32\.u16 %r4, %rs1;", "cvt.u32.u16 %r4, %rs1;"),
        "cvt.rzi.u32.f16 then clamp": (r"cvt\.rzi\.u16\.f16 %rs1, %h1;",
                                       "cvt.rzi.u32.f16 %q1, %h1; min.u32 %q1, %q1, 65535; "
                                       "cvt.u16.u32 %rs1, %q1;"),
    },
    1164: {  # v1 == max(0, v1, bool(v2)) with v1 = 17: an immediate first operand
        "immediates last": (r"max\.s16 %rs1, 17, %rs1;\s*setp\.eq\.s16 %p1, 17, %rs1;",
                            "max.s16 %rs1, %rs1, 17; setp.eq.s16 %p1, %rs1, 17;"),
        "max immediate last": (r"max\.s16 %rs1, 17, %rs1;", "max.s16 %rs1, %rs1, 17;"),
        "setp immediate last": (r"setp\.eq\.s16 %p1, 17, %rs1;", "setp.eq.s16 %p1, %rs1, 17;"),
    },
    1360: {  # u32(f64) widened to i64 by cvt.s64.u32 came out sign-extended
        "cvt.u64.u32": (r"cvt\.s64\.u32", "cvt.u64.u32"),
    },
    1141: {  # a predicate xor-ed with True six times in a loop
        "mov.pred for constants": (r"setp\.ne\.u32 (%p\d+), (\d), 0;", r"mov.pred \1, \2;"),
        "not.pred for xor with True": (r"setp\.ne\.u32 %p2, 1, 0;\s*xor\.pred %p1, %p1, %p2;",
                                       "not.pred %p1, %p1;"),
        "constant through a register": (r"setp\.ne\.u32 (%p\d+), (\d), 0;",
                                        r"mov.u32 %q1, \2; setp.ne.u32 \1, %q1, 0;"),
        # session 18: is the guard's predicate, redefined in the loop, taken as still true?
        "loop on a copy of the guard": [
            (r"@!%p1 bra \$BB7;", "mov.pred %qp1, %p1; @!%p1 bra $BB7;"),
            (r"xor\.pred %p1, %p1, %p2;", "xor.pred %qp1, %qp1, %p2;"),
            (r"selp\.u16 %rs1, 1, 0, %p1;", "selp.u16 %rs1, 1, 0, %qp1;")],
        "bool in a b32 register": [
            (r"@!%p1 bra \$BB7;", "selp.u32 %q1, 1, 0, %p1; @!%p1 bra $BB7;"),
            (r"xor\.pred %p1, %p1, %p2;", "selp.u32 %q2, 1, 0, %p2; xor.b32 %q1, %q1, %q2;"),
            (r"selp\.u16 %rs1, 1, 0, %p1;", "cvt.u16.u32 %rs1, %q1;")],
        "guard through an integer": (r"@!%p1 bra \$BB7;", "selp.u32 %q1, 1, 0, %p1; "
                                     "setp.eq.u32 %qp1, %q1, 0; @%qp1 bra $BB7;"),
    },
    720: {
        "mov.pred for constants": (r"setp\.ne\.u32 (%p\d+), (\d), 0;", r"mov.pred \1, \2;"),
        "float immediate last": (r"setp\.le\.f32 %p1, 0f3F800000, %f1;",
                                 "setp.ge.f32 %p1, %f1, 0f3F800000;"),
    },
    240: {
        "mov.pred for constants": (r"setp\.ne\.u32 (%p\d+), (\d), 0;", r"mov.pred \1, \2;"),
    },
    467: {   # v3 &= v1 in a loop: the card keeps 1
        "mov.pred for constants": (r"setp\.ne\.u32 (%p\d+), (\d), 0;", r"mov.pred \1, \2;"),
        "rem of a register zero": (r"rem\.s64 %rd2, 0, %rd2;",
                                   "mov.b64 %qd1, 0; rem.s64 %rd2, %qd1, %rd2;"),
        "rem folded to 0": (r"rem\.s64 %rd2, 0, %rd2;", "mov.b64 %rd2, 0;"),
        "not.pred for xor with True": (r"setp\.ne\.u32 %p2, 1, 0;\s*xor\.pred %p2, %p1, %p2;",
                                       "not.pred %p2, %p1;"),
        "loop on a copy of the guard": [
            (r"@%p1 bra \$BB2;", "mov.pred %qp1, %p1; @%p1 bra $BB2;"),
            (r"selp\.s16 %rs2, 1, 0, %p1;", "selp.s16 %rs2, 1, 0, %qp1;"),
            (r"xor\.pred %p1, %p1, %p2;", "xor.pred %qp1, %qp1, %p2;")],
        "bool in a b32 register": [
            (r"@%p1 bra \$BB2;", "selp.u32 %q3, 1, 0, %p1; @%p1 bra $BB2;"),
            (r"selp\.s16 %rs2, 1, 0, %p1;", "cvt.u16.u32 %rs2, %q3;"),
            (r"xor\.pred %p1, %p1, %p2;", "selp.u32 %q2, 1, 0, %p2; xor.b32 %q3, %q3, %q2;")],
        "predicated clear": (r"selp\.s16 %rs2, 1, 0, %p1;\s*and\.b16 %rs1, %rs1, %rs2;",
                             "@!%p1 mov.u16 %rs1, 0;"),
        "and in 32 bits": (r"and\.b16 %rs1, %rs1, %rs2;",
                           "cvt.u32.u16 %q1, %rs1; cvt.u32.u16 %q2, %rs2; and.b32 %q1, %q1, %q2; "
                           "cvt.u16.u32 %rs1, %q1;"),
    },
    1467: {  # (2 - x) & x after a loop that sets x to 2**31 - 1: the card says 1, not 3
        "store x itself": (r"sub\.u32 %r1, 2, %r2;\s*and\.b32 %r1, %r1, %r2;", "mov.u32 %r1, %r2;"),
        "immediate through a register": (r"sub\.u32 %r1, 2, %r2;",
                                         "mov.u32 %q1, 2; sub.u32 %r1, %q1, %r2;"),
        "compare in 32 bits": (r"cvt\.s64\.s32 %rd3, %r2;\s*setp\.eq\.s64 %p1, %rd3, %rd2;",
                               "setp.ge.s32 %p1, %r2, 0;"),
        "sign-extend by mul.wide": (r"cvt\.s64\.s32 %rd3, %r2;", "mul.wide.s32 %rd3, %r2, 1;"),
        "not, add 3": (r"sub\.u32 %r1, 2, %r2;", "not.b32 %r1, %r2; add.u32 %r1, %r1, 3;"),
    },
    2030: {},  # v2 &= c in a loop after `if v2:` and `v2 = True` on one path: fixed by regalloc
    528: {   # 100000 (set in loops) - 1.00390625 in f32, a tie: the card rounds it down
        "fma(c, -1, x)": (r"sub\.rn\.f32 (%f\d+), (%f\d+), (0f[0-9A-F]+);",
                          r"mov.f32 %qf1, \3; fma.rn.f32 \1, %qf1, 0fBF800000, \2;"),
        "fma(x, 1, -c)": (r"sub\.rn\.f32 (%f\d+), (%f\d+), 0f3F808000;",
                          r"fma.rn.f32 \1, \2, 0f3F800000, 0fBF808000;"),
        "x + (-c)": (r"sub\.rn\.f32 (%f\d+), (%f\d+), 0f3F808000;",
                     r"add.rn.f32 \1, \2, 0fBF808000;"),
    },
    564: {   # v4 = (v3 if v4 else (v4 | v3)), which is v3 (True): the card stores False
        "16-bit test in 32 bits": (r"setp\.ne\.s16 %p2, %rs1, 0;",
                                   "and.b32 %q1, %r1, 65535; setp.ne.u32 %p2, %q1, 0;"),
        "eq instead of not ne": (r"setp\.ne\.s16 %p2, %rs1, 0;\s*not\.pred %p2, %p2;",
                                 "setp.eq.s16 %p2, %rs1, 0;"),
        "select as selp": (r"or\.pred %p3, %p2, %p1;\s*and\.pred %p1, %p2, %p1;\s*not\.pred %p2, %p2;"
                           r"\s*and\.pred %p2, %p2, %p3;\s*or\.pred %p2, %p1, %p2;",
                           "or.pred %p3, %p2, %p1; selp.u32 %q1, 1, 0, %p1; selp.u32 %q2, 1, 0, %p3; "
                           "selp.u32 %q1, %q1, %q2, %p2; setp.ne.u32 %p2, %q1, 0;"),
        "select by xor": (SELECT_564, "or.pred %p3, %p2, %p1; xor.pred %qp1, %p1, %p3; "
                                      "and.pred %qp1, %qp1, %p2; xor.pred %p2, %p3, %qp1;"),
        "select by guarded mov": (SELECT_564, "or.pred %p3, %p2, %p1; mov.pred %qp1, %p3; "
                                              "@%p2 mov.pred %qp1, %p1; mov.pred %p2, %qp1;"),
        "not c & b as not (c | not b)": (SELECT_564, "or.pred %p3, %p2, %p1; and.pred %qp1, %p2, %p1; "
                                         "not.pred %qp2, %p3; or.pred %qp2, %qp2, %p2; "
                                         "not.pred %qp2, %qp2; or.pred %p2, %qp1, %qp2;"),
        "not into a fresh register": (r"not\.pred %p2, %p2;\s*and\.pred %p2, %p2, %p1;",
                                      "not.pred %qp1, %p2; and.pred %p2, %qp1, %p1;"),
        "second not into a fresh register": (r"not\.pred %p2, %p2;\s*and\.pred %p2, %p2, %p3;",
                                             "not.pred %qp1, %p2; and.pred %p2, %qp1, %p3;"),
    },
    51: {    # v4 = v3 in a loop of 5 after v3 = True or (d <= 0) in a branch on %p1 (session 21)
        "branch tests its own register": (r"setp\.ne\.s32 %p1, %r1, 0;\s*@%p1 bra \$BB2;",
                                          "setp.ne.s32 %qp1, %r1, 0; @%qp1 bra $BB2;"),
        "True arm keeps the tested %p1": (r"\$BB2:\s*setp\.ne\.u32 %p1, 1, 0;", "$BB2:"),
        "True arm by setp of a register": (r"setp\.ne\.u32 %p1, 1, 0;",
                                           "mov.u32 %q1, 1; setp.ne.u32 %p1, %q1, 0;"),
        "loop's entry value by mov.pred": (r"setp\.ne\.u32 %p2, 0, 0;",
                                           "setp.ne.u32 %qp2, 0, 0; mov.pred %p2, %qp2;"),
        "v3 copied to %qp1 before the loop": [
            (r"\$BB3:\s*mov\.u32 %r1, 0;", "$BB3: mov.pred %qp1, %p1; mov.u32 %r1, 0;"),
            (r"mov\.pred %p2, %p1;", "mov.pred %p2, %qp1;"),
            (r"or\.pred %p3, %p1, %p2;", "or.pred %p3, %qp1, %p2;"),
            (r"xor\.pred %p3, %p3, %p1;", "xor.pred %p3, %p3, %qp1;"),
            (r"and\.pred %p1, %p1, %p2;", "and.pred %p1, %qp1, %p2;")],
        "v4 = v3 & v4 into a new register": [(r"and\.pred %p1, %p1, %p2;", "and.pred %qp3, %p1, %p2;"),
                                              (r"selp\.u16 %rs1, 1, 0, %p1;", "selp.u16 %rs1, 1, 0, %qp3;")],
        "no v3 & v4 (it is v3)": (r"and\.pred %p1, %p1, %p2;", ""),
        "the xor in b32": (r"xor\.pred %p3, %p3, %p1;",
                           "selp.u32 %q1, 1, 0, %p3; selp.u32 %q2, 1, 0, %p1; xor.b32 %q1, %q1, %q2; "
                           "setp.ne.u32 %p3, %q1, 0;"),
        "the xor as setp.ne.b32 of selps": (r"xor\.pred %p3, %p3, %p1;",
                                            "selp.u32 %q1, 1, 0, %p3; selp.u32 %q2, 1, 0, %p1; "
                                            "setp.ne.b32 %p3, %q1, %q2;"),
        "the or and xor in b32": [
            (r"or\.pred %p3, %p1, %p2;", "selp.u32 %q1, 1, 0, %p1; selp.u32 %q2, 1, 0, %p2; "
             "or.b32 %q3, %q1, %q2;"),
            (r"xor\.pred %p3, %p3, %p1;", "xor.b32 %q3, %q3, %q1; setp.ne.u32 %p3, %q3, 0;")],
        "the loop's trip count loaded": (r"setp\.lt\.s32 %p3, %r1, 5;",
                                         "ld.global.nc.s32 %q2, [%rd1]; min.s32 %q2, %q2, 5; "
                                         "max.s32 %q2, %q2, 5; setp.lt.s32 %p3, %r1, %q2;"),
    },
    872: {   # -bf16(v2) with v2 == 0 from a helper's loops: the card stores +0.0
        "sign bit flipped": (r"neg\.bf16 (%hb\d+), (%hb\d+);", r"xor.b16 \1, \2, 0x8000;"),
        "negated in f32": (r"cvt\.rn\.bf16\.f32 (%hb\d+), (%f\d+);\s*neg\.bf16 (%hb\d+), \1;",
                           r"neg.f32 %qf1, \2; cvt.rn.bf16.f32 \3, %qf1;"),
        "0 - x": (r"neg\.bf16 (%hb\d+), (%hb\d+);",
                  r"mov.b16 %qh1, 0x0000; sub.rn.bf16 \1, %qh1, \2;"),
    },
}


def run_ptx(kernel, ptx, args, device):
    """The outputs of `kernel`'s parameters with PTX text `ptx`, on the simulator or the card."""
    from kernel_harness import Out

    os.environ["PTXPY_TEST_DEVICE"] = device
    values, outputs, flat = [], [], []
    for value in args:
        if isinstance(value, Out):
            value = np.zeros(value.shape, value.dtype)
            outputs.append(value)
        values.append(value)
    for spec, value in zip(kernel.params, values):
        flat.append(value)
        if spec.kind == "array":
            flat.extend(int(n) for n in value.shape)
    if device == "gpu":
        from gpu_launcher import gpu_run_kernel
        gpu_run_kernel(ptx, kernel.name, (1, 1, 1), (64, 1, 1), flat)
    else:
        from ptxpy.runtime.simulator import run_kernel
        run_kernel(ptx, kernel.name, grid=1, block=64, args=flat)
    return outputs


def differences(want, got):
    from test_differential import same_values

    for k, (w, g) in enumerate(zip(want, got)):
        bad = np.argwhere(~same_values(w, g, reduce_gpu._type_of(w)))
        if len(bad):
            t, c = (int(v) for v in bad[0])
            return f"{len(bad)} differ; output {k} [{t}, {c}]: {w[t, c]!r} vs {g[t, c]!r}"
    return "agrees"


def original_of(programs, number, reduced):
    """The run's program that `reduced` was cut from (numbers repeat between runs; the inputs,
    which the reducer keeps, tell them apart), with `reduced` as its source."""
    inputs = [a for a in reduce_gpu.kernel_arrays(reduced)[0] if a[2] == 1]
    for program in programs:
        if program["number"] == number and [
                a for a in reduce_gpu.kernel_arrays(program["source"])[0] if a[2] == 1] == inputs:
            return dict(program, original=program["source"], source=reduced)
    raise LookupError(f"no program {number} with the inputs of the reduced one")


def rewrite(ptx, rewrites):
    """`ptx` after one (pattern, replacement) pair or a list of them; count 0 if any missed."""
    if isinstance(rewrites, tuple):
        rewrites = [rewrites]
    counts = []
    for pattern, replacement in rewrites:
        ptx, count = re.subn(pattern, replacement, ptx)
        counts.append(count)
    return ptx, min(counts)


def main():
    from kernel_harness import compile_source

    programs = [p for path in MISMATCHES for p in reduce_gpu.parse_mismatches(open(path).read())]
    only = [int(a) for a in sys.argv[1:] if a.isdigit()]
    for number, variants in VARIANTS.items():
        if only and number not in only:
            continue
        reduced = open(os.path.join(HERE, "reduced", f"program-{number}.py")).read()
        program = original_of(programs, number, reduced)
        args = reduce_gpu.build_args(program)
        kernel = compile_source(program["source"], "kern")
        spares = (".reg .b32 %q<4>; .reg .f32 %qf<4>; .reg .b64 %qd<4>; .reg .pred %qp<4>; "
                  ".reg .b16 %qh<4>;")
        ptx = re.sub(r"(\{\n)", r"\1    " + spares + r"\n", kernel.ptx, count=1)
        simulated = run_ptx(kernel, ptx, args, "")
        print(f"program {number}: as emitted: {differences(simulated, run_ptx(kernel, ptx, args, 'gpu'))}")
        for name, rewrites in variants.items():
            changed, count = rewrite(ptx, rewrites)
            if not count:
                print(f"    {name}: pattern not found")
                continue
            print(f"    {name}: {differences(simulated, run_ptx(kernel, changed, args, 'gpu'))}")
        if "--sass" in sys.argv:
            print("    " + sass(ptx).replace("\n", "\n    "))


if __name__ == "__main__":
    main()
