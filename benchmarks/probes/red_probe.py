"""Does the GPU run a shared-memory reduction (`red.shared`) in a short loop? (device only)

Session 22's random program 546 (seed 3103, `--warp --atomic`) ran
`ptxpy.atomic_or(s_acc, 3, ~i)` three times in a `for` loop: `red.shared.or.b64
[smem_s_acc+24]` in a loop of constant trip count. On the H100 it failed with "Invalid
__shared__ read of size 8 bytes ... Access to 0x19 is misaligned" (compute-sanitizer), an
address the PTX never forms. Each form below updates one element of a shared array from all 64
threads, `trips` times each, then thread 0 stores the element; the result is compared with
NumPy. A form that kills the context is run in its own process, so the others still run.

What it found: ptxas makes a 64-bit shared atomic (add, and with `red` too) its own
compare-and-swap loop (`ATOMS.CAST.SPIN.64`), and kept the trip counter of a loop around it
in a uniform register, which the lanes leaving that loop at different times share: with a
run-time trip count, the sum came out -2048, not -6140. Program 546 as ptxpy compiles it
now (its own CAS loop in PTX, `lower_intrinsics._spun_by_ptxas`) runs.

    python benchmarks/probes/red_probe.py [--sass]
    python benchmarks/probes/red_probe.py --spin    # which atomics ptxas makes a CAS loop
"""
import subprocess
import sys

import numpy as np

sys.path.insert(0, "tests")

THREADS = 64
START = 100
# name: (instruction with %a = the element's address and %v = the thread's value, bits, loop
# trip count (None: no loop; "param": read at run time), byte offset of the element, result)
OPS = {"or": np.bitwise_or, "and": np.bitwise_and, "xor": np.bitwise_xor, "add": np.add,
       "max": np.maximum}


def forms():
    out = {}
    for op in ("or", "and", "xor", "add", "max"):
        for bits in (64, 32):
            for trips in (3, 1, None, "param"):
                for kind in ("red", "atom"):
                    if kind == "atom" and bits != 64:
                        continue
                    name = f"{kind}.shared.{op}.b{bits} x{trips if trips else ' (no loop)'}"
                    out[name] = (kind, op, bits, trips, 24 if bits == 64 else 12)
    out["red.shared.or.b64 x3 at offset 0"] = ("red", "or", 64, 3, 0)
    out["red.global.or.b64 x3"] = ("red", "or", 64, 3, "global")
    out["red.global.add.b64 xparam"] = ("red", "add", 64, "param", "global")
    out["atom.global.add.b64 xparam"] = ("atom", "add", 64, "param", "global")
    return out


# the whole of program 546 (its PTX as ptxpy emits it), and rewrites of it
PROGRAM_546 = {"program 546 (today's ptxpy)": None,
               "program 546": [],
               "program 546, atom for red": [(r"(\.reg \.b64 %rd<\d+>;)", r"\1 .reg .b64 %qd<2>;"),
                                             (r"red\.shared\.(\w+)\.(\w+) ", r"atom.shared.\1.\2 %qd1, ")],
               "program 546, no red in the loop": [(r"red\.shared\.or\.b64 \[smem_s_acc\+24\], %rd15;", "")]}


def program_546(rewrites):
    import re

    from kernel_harness import compile_source
    from replay import kernel_args, program
    from ptxpy.transpiler import lower_intrinsics
    source, _, inputs, out_specs = program("3103", 546, ["--warp", "--atomic"])
    spun = lower_intrinsics._spun_by_ptxas
    if rewrites is not None:     # as ptxpy compiled it then: red.shared.or.b64
        lower_intrinsics._spun_by_ptxas = lambda op, array: False
    text = compile_source(source, "kern", arch="sm_90").ptx
    lower_intrinsics._spun_by_ptxas = spun
    for pattern, replacement in rewrites or []:
        text, count = re.subn(pattern, replacement, text)
        assert count, f"pattern not found: {pattern}"
    return text, kernel_args(inputs, out_specs)


def ptx(kind, op, bits, trips, offset):
    t = {"or": "b", "and": "b", "xor": "b", "add": "u", "max": "s"}[op] + str(bits)
    r = "%rd1" if bits == 64 else "%r2"
    space = "global" if offset == "global" else "shared"
    address = "[%rd5]" if offset == "global" else f"[sm+{offset}]"
    update = (f"red.{space}.{op}.{t} {address}, {r};" if kind == "red" else
              f"atom.{space}.{op}.{t} {'%rd6' if bits == 64 else '%r6'}, {address}, {r};")
    if trips is None:
        loop = [update]
    else:
        bound = "%r7" if trips == "param" else str(trips)
        loop = ["mov.u32 %r4, 0;", "$LOOP:", f"setp.lt.s32 %p2, %r4, {bound};", "@!%p2 bra $DONE;",
                update, "add.s32 %r4, %r4, 1;", "bra.uni $LOOP;", "$DONE:"]
    st = "u64" if bits == 64 else "u32"
    where = "[%rd5]" if offset == "global" else f"[sm+{offset}]"
    body = "\n    ".join(loop)
    return f""".version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 po, .param .u32 trips) {{
    .reg .b32 %r<8>; .reg .b64 %rd<8>; .reg .pred %p<3>;
    .shared .align 16 .b8 sm[32];
    ld.param.u64 %rd3, [po]; cvta.to.global.u64 %rd5, %rd3;
    ld.param.u32 %r7, [trips];
    mov.u32 %r1, %tid.x;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra $SKIP;
    {'' if offset == 'global' else f'st.shared.{st} {where}, {START};'}
$SKIP:
    bar.sync 0;
    not.b32 %r2, %r1;
    cvt.s64.s32 %rd1, %r2;
    {body}
    bar.sync 0;
    @%p1 bra $END;
    {'' if offset == 'global' else f'ld.shared.{st} {"%rd2" if bits == 64 else "%r3"}, {where};'}
    {'' if offset == 'global' else f'st.global.{st} [%rd5], {"%rd2" if bits == 64 else "%r3"};'}
$END:
    ret;
}}
"""


def expected(op, bits, trips):
    dtype = np.int64 if bits == 64 else np.int32
    values = ~np.arange(THREADS, dtype=dtype)
    n = 1 if trips in (None, 1) else 3
    acc = np.array(START, dtype)
    with np.errstate(over="ignore"):
        for v in np.repeat(values, n):
            acc = OPS[op](acc, v).astype(dtype)
    return acc


PTXPY_SOURCE = """
import ptxpy
from ptxpy import Array, i32, i64

@ptxpy.jit
def k(o: Array[i64], trips: Array[i32]):
    i = ptxpy.global_id(0)
    s = ptxpy.shared_array(4, i64)
    if i == 0:
        s[3] = i64(100)
    ptxpy.syncthreads()
    for k6 in range(0, trips[0], 1):
        ptxpy.atomic_add(s, 3, ~i)
    ptxpy.syncthreads()
    if i == 0:
        o[0] = s[3]
"""
PTXPY_FORM = "ptxpy: atomic_add(s, 3, ~i) xparam"


def run_one(name):
    from gpu_launcher import gpu_run_kernel
    from min_probe import sass

    if name in PROGRAM_546:
        text, args = program_546(PROGRAM_546[name])
        try:
            gpu_run_kernel(text, "kern", (1,), (THREADS,), args)
            print(f"{name:36s} ran")
        except AssertionError as exc:
            print(f"{name:36s} {exc}")
        if "--sass" in sys.argv:
            print("    " + sass(text).replace("\n", "\n    "))
        return
    if name == PTXPY_FORM:
        from ptxpy.transpiler import driver
        text = driver.transpile(PTXPY_SOURCE, "k.py", arch="sm_90")["k"]
        kind, op, bits, trips, offset = "red", "add", 64, "param", 24
    else:
        kind, op, bits, trips, offset = forms()[name]
        text = ptx(kind, op, bits, trips, offset)
    out = np.full(1, START, np.int64 if bits == 64 else np.int32)
    try:
        args = [out, 1, np.array([3], np.int32), 1] if name == PTXPY_FORM else [out, 3]
        gpu_run_kernel(text, "k", (1,), (THREADS,), args)
    except AssertionError as exc:
        print(f"{name:36s} {exc}")
    else:
        want = expected(op, bits, trips)
        print(f"{name:36s} {'right' if out[0] == want else f'WRONG: {out[0]}, not {want}'}")
    if "--sass" in sys.argv:
        print("    " + sass(text).replace("\n", "\n    "))


SPIN_FORMS = ["atom.shared.add.u32", "atom.shared.add.u64", "atom.shared.or.b64",
              "atom.shared.max.s64", "atom.shared.min.u64", "atom.shared.exch.b64",
              "atom.shared.cas.b64", "atom.shared.exch.b32", "atom.shared.cas.b32",
              "atom.shared.cas.b16", "atom.shared.add.noftz.f16", "atom.shared.add.noftz.bf16",
              "atom.shared.add.f32", "atom.shared.add.f64", "atom.global.cas.b16",
              "atom.global.add.noftz.f16", "atom.global.add.u64", "atom.global.add.f64"]


def spin_loops():
    """Which shared and global atomics ptxas turns into a compare-and-swap loop of its own
    (`ATOMS.CAST.SPIN`, `ATOMG...CAS` in a loop): one line each, from the SASS."""
    from min_probe import sass

    for form in SPIN_FORMS:
        width = int(form[-2:]) if form[-2:].isdigit() else 16
        reg = {16: "%h", 32: "%r", 64: "%rd"}[width]
        cls = {16: ".b16", 32: ".b32", 64: ".b64"}[width]
        operands = f"{reg}3, [%rd5], {reg}1" + (f", {reg}2" if ".cas." in form else "")
        text = f""".version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 po) {{
    .reg {cls} {reg}<8>; {"" if width == 64 else ".reg .b64 %rd<8>;"}
    .shared .align 16 .b8 sm[32];
    ld.param.u64 %rd3, [po];
    {"mov.u64 %rd5, sm;" if "shared" in form else "cvta.to.global.u64 %rd5, %rd3;"}
    ld.global{cls.replace("b", "u") if width > 16 else ".b16"} {reg}1, [%rd3];
    ld.global{cls.replace("b", "u") if width > 16 else ".b16"} {reg}2, [%rd3+8];
    {form} {operands};
    st.global{cls} [%rd3+16], {reg}3;
    ret;
}}
"""
        code = sass(text)
        spins = [line for line in code.splitlines() if "CAS" in line or "SPIN" in line]
        print(f"{form:30s} {' | '.join(spins) if spins else 'no compare-and-swap'}")


def main():
    if "--spin" in sys.argv:
        spin_loops()
        return
    if "--one" in sys.argv:
        run_one(sys.argv[sys.argv.index("--one") + 1])
        return
    for name in [*PROGRAM_546, PTXPY_FORM, *forms()]:
        sass_too = "--sass" in sys.argv and name in ("program 546", "red.shared.add.b64 xparam",
                                                       "red.shared.add.b64 x3")
        done = subprocess.run([sys.executable, __file__, "--one", name] + (["--sass"] if sass_too else []),
                              capture_output=True, text=True)
        print((done.stdout or done.stderr[-400:]).rstrip(), flush=True)


if __name__ == "__main__":
    main()
