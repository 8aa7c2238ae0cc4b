"""Which part of random program 767 (seed 4323, `--exchange --atomic --vectors --loops`) makes
the H100 read a misaligned address? (device only)

compute-sanitizer (session 25): `Invalid __global__ read of size 8 bytes at kern+0xb10 in
kernels.py:42, thread 17: access to 0x7fcf0000008c is misaligned`: the load of
`c[(u8(i) & u16(i)) & 63]` in a `while w9 < (i & 3)` loop, whose address (`mad.wide.s32 %rd13`)
the optimiser computed before the loop; another branch of the loop holds an f32 `atomic_min` on
a shared array (a warp-uniform compare-and-swap loop). The PTX keeps `%rd13` unchanged from its
`mad.wide` to the load. Each form below is that PTX with one part changed, run in its own
process (a bad address loses the context) three times; forms that run are compared with the
simulator's run of the same PTX.

    python benchmarks/probes/program767_probe.py [--sass] [FORM ...]
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests"))
sys.path.insert(0, HERE)
from program748_probe import changed, run_in_processes, run_one  # noqa: E402

FLAGS = ["--exchange", "--atomic", "--vectors", "--loops"]
SPARE = (r"(\.reg \.b32 %r<\d+>;)", r"\1 .reg .b32 %qi; .reg .b64 %qa; .reg .b64 %qb;")
HOISTED = (r"cvt\.u32\.u16 %r8, %rs1;\s*mad\.wide\.s32 %rd13, %r8, 8, %rd3;",
           "cvt.u32.u16 %qi, %rs1; mov.u64 %qb, %rd3;")
AT_LOAD = (r"ld\.global\.nc\.s64 %rd10, \[%rd13\];",
           "mad.wide.s32 %qa, %qi, 8, %qb; ld.global.nc.s64 %rd10, [%qa];")
CAS = (r"atom\.shared\.cas\.b32 (%r\d+), \[([^\]]+)\], (%r\d+), (%r\d+);",
       r"st.shared.u32 [\2], \4; mov.u32 \1, \3;")
FORMS = {
    "as compiled": [],
    "address computed at the load": [SPARE, HOISTED, AT_LOAD],
    "address kept in another register": [SPARE, (r"mad\.wide\.s32 %rd13, %r8, 8, %rd3;",
                                                 "mad.wide.s32 %qa, %r8, 8, %rd3;"),
                                         (r"\[%rd13\]", "[%qa]")],
    "CAS a store": [CAS],
    "bra for bra.uni": [(r"bra\.uni ", "bra ")],
    "no barrier after the loop": [(r"bar\.sync 0;(?=\s*\n\s*// line 48)", "")],
    "ptxas -O3 cubin": ("ptxas", ["-O3"]),
    "ptxas -O0 cubin": ("ptxas", ["-O0"]),
}


def program_ptx():
    from kernel_harness import compile_source
    from replay import kernel_args, program

    source, _, inputs, out_specs = program("4323", 767, FLAGS)
    return compile_source(source, "kern", arch="sm_90").ptx, kernel_args(inputs, out_specs)


def rewritten(form):
    return changed(*program_ptx(), form, FORMS[form])


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--one":
        run_one(sys.argv[2], rewritten, 34)
        return
    run_in_processes(__file__, FORMS, 34)
    if "--sass" in sys.argv:
        from min_probe import sass
        for form in [f for f in FORMS if f in sys.argv] or ["as compiled"]:
            print(f"{form}:\n" + sass(rewritten(form)[0], addresses=True))


if __name__ == "__main__":
    main()
