"""Which part of random program 748 (seed 3306, `--warp --atomic`) stops the H100? (device only)

The program has a bf16 `atomic_min` on a shared array (a compare-and-swap loop on the aligned
32-bit word) in one branch, an f32 `atomic_max` on global memory (a compare-and-swap loop) in
the other, then 64-bit divisions, two shuffles and a loop. As session 22 compiled it (a loop
that each lane leaves when its own swap succeeds), it failed with an illegal address, and ran
under compute-sanitizer. Each form below is that PTX with one part taken out or changed, run in
its own process (an illegal address loses the context) `RUNS` times; "ran" forms are compared
with the simulator's run of the same PTX.

What it found (session 23): the forms without the global swap loop, without the shuffle,
without either division or the loop after it, with all threads in one branch, and `ptxas -O0`
ran; `-O1` wrote into the input `a`; `-O2`, `-O3` and the driver's compiler failed. cuda-gdb
put the fault at the loop's `ATOMG.E.CAS [R8+0x4]` with R8 copied from `UR4`, which the code
after the loop sets to 0: lanes still in the loop read a uniform register that others had
already reused. The loop made warp-uniform (`vote.sync.any` over the lanes that entered it, as
ptxpy now writes it: "today's ptxpy") runs.

    python benchmarks/probes/program748_probe.py [--sass] [FORM ...]
"""
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests"))
sys.path.insert(0, HERE)

RUNS = 3
SHARED_CAS = r"atom\.shared\.cas\.b32 (%r\d+), \[(%rd\d+)\], (%r\d+), (%r\d+);"
GLOBAL_CAS = r"atom\.global\.cas\.b32 (%r\d+), \[(%rd\d+\+\d+)\], (%r\d+), (%r\d+);"
SHFL = r"shfl\.sync\.\w+\.b32 (%r\d+), (%r\d+), [^;]*;"
CAS_LOOP = """    ld.global.f32 %f3, [%rd6+8];
$BB4:
    max.f32 %f1, %f3, %f2;
    mov.b32 %r7, %f3;
    mov.b32 %r8, %f1;
    atom.global.cas.b32 %r8, [%rd6+8], %r7, %r8;
    setp.eq.u32 %p1, %r8, %r7;
    @!%p1 bra $BB6;
"""
BOTTOM_EXIT_LOOP = """    ld.global.f32 %f3, [%rd6+8];
$BB4:
    max.f32 %f1, %f3, %f2;
    mov.b32 %r7, %f3;
    mov.b32 %r8, %f1;
    atom.global.cas.b32 %r8, [%rd6+8], %r7, %r8;
    setp.ne.u32 %p1, %r8, %r7;
    mov.b32 %f3, %r8;
    @%p1 bra $BB4;
"""
VOTE_LOOP = """    activemask.b32 %q1;
    ld.global.f32 %f3, [%rd6+8];
    setp.ne.u32 %qp1, 0, 0;
$BB4:
    max.f32 %f1, %f3, %f2;
    mov.b32 %r7, %f3;
    mov.b32 %r8, %f1;
    @!%qp1 atom.global.cas.b32 %r8, [%rd6+8], %r7, %r8;
    setp.eq.or.u32 %qp1, %r8, %r7, %qp1;
    mov.b32 %f3, %r8;
    vote.sync.any.pred %qp2, !%qp1, %q1;
    @%qp2 bra.uni $BB4;
"""
# name: [(pattern, replacement)] on the PTX, or ("ptxas", options) for a cubin of the
# device's ptxas instead of the driver's compiler
TODAY = "today's ptxpy"
FORMS = {
    TODAY: [],
    "as compiled": [],
    "shared CAS a store": [(SHARED_CAS, r"st.shared.u32 [\2], \4; mov.u32 \1, \3;")],
    "global CAS a store": [(GLOBAL_CAS, r"st.global.u32 [\2], \4; mov.u32 \1, \3;")],
    "both CAS stores": [(SHARED_CAS, r"st.shared.u32 [\2], \4; mov.u32 \1, \3;"),
                        (GLOBAL_CAS, r"st.global.u32 [\2], \4; mov.u32 \1, \3;")],
    "no shuffles": [(SHFL, r"mov.b32 \1, \2;")],
    "butterfly lane 1": [(r"(shfl\.sync\.bfly\.b32 %r\d+, %r\d+), %r\d+,", r"\1, 1,")],
    "bra for bra.uni": [(r"bra\.uni ", "bra ")],
    "no griddepcontrol": [(r"griddepcontrol\.wait;", "")],
    "no while loop": [(r"setp\.lt\.s32 (%p\d+), (%r\d+), 5;", r"setp.lt.s32 \1, \2, 0;")],
    "no butterfly shuffle": [(r"shfl\.sync\.bfly\.b32 (%r\d+), (%r\d+), [^;]*;", r"mov.b32 \1, \2;")],
    "no index shuffle": [(r"shfl\.sync\.idx\.b32 (%r\d+), (%r\d+), [^;]*;", r"mov.b32 \1, \2;")],
    "global CAS once, no loop": [(r"(atom\.global\.cas[^\n]*\n\s*setp[^\n]*\n\s*)@!%p\d+ bra \$BB\d+;",
                                  r"\1")],
    "no division in the branch": [(r"div\.u64 (%rd\d+), (%rd\d+), %rd\d+;(?=\s+bra\.uni)",
                                   r"shr.u64 \1, \2, 6;")],
    "no division after the join": [(r"div\.u64 (%rd\d+), (%rd\d+), %rd\d+;(?=\s+and)",
                                    r"shr.u64 \1, \2, 6;")],
    "all threads take the CAS branch": [(r"(setp\.lt\.s16 %p1, %rs3, %rs1;\s*)@!%p1 bra \$BB7;", r"\1")],
    "syncwarp after the CAS loop": [(r"(\.reg \.pred %p<\d+>;)", r"\1 .reg .b32 %q<3>;"),
                                    (r"(ld\.global\.f32 %f3, \[%rd6\+8\];)", r"activemask.b32 %q1; \1"),
                                    (r"(@!%p1 bra \$BB6;)", r"\1 bar.warp.sync %q1;")],
    "CAS loop exits at its end": [(re.escape(CAS_LOOP), BOTTOM_EXIT_LOOP)],
    "CAS loop uniform (vote)": [(r"(\.reg \.pred %p<\d+>;)", r"\1 .reg .b32 %q<3>; .reg .pred %qp<3>;"),
                                (re.escape(CAS_LOOP), VOTE_LOOP)],
    "ptxas -O3 cubin": ("ptxas", ["-O3"]),
    "ptxas -O0 cubin": ("ptxas", ["-O0"]),
    "ptxas -O1 cubin": ("ptxas", ["-O1"]),
    "ptxas -O2 cubin": ("ptxas", ["-O2"]),
}


def program_ptx(today=False):
    """The program's PTX as ptxpy compiled it in session 22 (or `today`), and its arguments."""
    from kernel_harness import compile_source
    from replay import kernel_args, program
    from without_fix import divergent_swap_loop

    source, _, inputs, out_specs = program("3306", 748, ["--warp", "--atomic"])
    if today:
        text = compile_source(source, "kern", arch="sm_90").ptx
    else:
        from ptxpy.transpiler import lower_intrinsics
        today_loop = lower_intrinsics._swap_loop
        lower_intrinsics._swap_loop = divergent_swap_loop
        text = compile_source(source, "kern", arch="sm_90").ptx
        lower_intrinsics._swap_loop = today_loop
    return text, kernel_args(inputs, out_specs)


def rewritten(form):
    text, args = program_ptx(today=form == TODAY)
    return changed(text, args, form, FORMS[form])


def changed(text, args, form, change):
    """(text, args, cubin or None): `text` rewritten by `change`, a list of (pattern,
    replacement), or ("ptxas", options) for a cubin of the device's ptxas."""
    if isinstance(change, tuple):
        return text, args, cubin(text, change[1])
    for pattern, replacement in change:
        text, count = re.subn(pattern, replacement, text)
        assert count, f"{form}: pattern not found: {pattern}"
    return text, args, None


def cubin(text, options):
    with tempfile.TemporaryDirectory() as tmp:
        with open(f"{tmp}/k.ptx", "w") as f:
            f.write(text)
        subprocess.run([os.environ.get("PTXAS", "ptxas"), "-arch", "sm_90", *options, "-o", f"{tmp}/k.cubin",
                        f"{tmp}/k.ptx"], check=True)
        with open(f"{tmp}/k.cubin", "rb") as f:
            return f.read()


def run_one(form, rewrite=None, width=24):
    """One form (`rewrite(form)`: text, args, cubin or None) on the simulator, then on the card
    (only the simulator without PTXPY_TEST_DEVICE=gpu); prints what happened."""
    from gpu_launcher import gpu_run_kernel
    from ptxpy.runtime.simulator import run_kernel

    text, args, image = (rewrite or rewritten)(form)
    simulated = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    run_kernel(text, "kern", grid=(1,), block=(64,), args=simulated)
    if os.environ.get("PTXPY_TEST_DEVICE") != "gpu":
        print(f"{form:{width}s} simulated")
        return
    try:
        gpu_run_kernel(text, "kern", (1,), (64,), args, image=image)
    except AssertionError as exc:
        print(f"{form:{width}s} {exc}")
        return
    differ = [k for k, (a, b) in enumerate(zip(args, simulated))
              if isinstance(a, np.ndarray) and a.tobytes() != b.tobytes()]
    print(f"{form:{width}s} ran" + (f", arrays {differ} differ from the simulator" if differ else ""))


def run_in_processes(script, forms, width=24):
    """Each form named on the command line (all of `forms` if none) `RUNS` times, each in a new
    process (`script --one FORM`): a bad address loses the context."""
    for form in [f for f in forms if f in sys.argv] or forms:
        for _ in range(RUNS if os.environ.get("PTXPY_TEST_DEVICE") == "gpu" else 1):
            done = subprocess.run([sys.executable, script, "--one", form], capture_output=True,
                                  text=True, timeout=120)
            print((done.stdout.strip() or f"{form:{width}s} " + done.stderr[-400:]), flush=True)


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--one":
        run_one(sys.argv[2])
        return
    run_in_processes(__file__, FORMS)
    if "--sass" in sys.argv:
        from min_probe import sass
        print(sass(program_ptx()[0], addresses=True))


if __name__ == "__main__":
    main()
