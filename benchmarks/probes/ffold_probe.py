"""Does the GPU's compiler round float arithmetic on values it knows while compiling as the
GPU does at run time? (device only)

`fsub_probe.py` showed ptxas folding `100000 - 1.00390625` (f32) to 99998.9921875, where
round-to-nearest-even gives 99999.0 (a tie). Here each op is applied to pairs of constants
that ptxas sees (`mov` then the op: it folds them) and to the same pairs loaded from memory (the
op runs on the GPU), and both are compared with NumPy: ties, inexact results and exact ones.

    python benchmarks/probes/ffold_probe.py
"""
import sys

import numpy as np

sys.path.insert(0, "tests")
from gpu_launcher import gpu_run_kernel  # noqa: E402

# name: (PTX computing %x3 from %x1 = a and %x2 = b ({nb}: -b as an immediate), NumPy)
OPS = {"add": ("add.rn.{t} %x3, %x1, %x2;", np.add),
       "sub": ("sub.rn.{t} %x3, %x1, %x2;", np.subtract),
       "add of neg": ("neg.{t} %x7, %x2; add.rn.{t} %x3, %x1, %x7;", np.subtract),
       "add of -b": ("add.rn.{t} %x3, %x1, {nb};", np.subtract),
       "fma -1": ("fma.rn.{t} %x3, %x2, {m1}, %x1;", np.subtract),
       "fma 1": ("neg.{t} %x7, %x2; fma.rn.{t} %x3, %x1, {p1}, %x7;", np.subtract),
       "mul": ("mul.rn.{t} %x3, %x1, %x2;", np.multiply),
       "div": ("div.rn.{t} %x3, %x1, %x2;", np.divide)}
# type: (NumPy type, register prefix and type, immediate, bits, mov type)
TYPES = {"f32": (np.float32, "f", "f32", "0f{:08X}", np.uint32, "f32"),
         "f64": (np.float64, "fd", "f64", "0d{:016X}", np.uint64, "f64"),
         "f16": (np.float16, "h", "b16", "0x{:04X}", np.uint16, "b16")}


def pairs(dtype, rng, n=96):
    """Every third pair a tie for add and sub (a = m * 2^e with m in [1.25, 1.5), b = 1 plus
    half of a's ulp), then random inexact pairs, then small integers."""
    bits = np.finfo(dtype).nmant
    e = rng.integers(3, 13, n)
    m = rng.integers(1 << bits, 1 << (bits + 1), n) * 2.0 ** -bits
    tie_a, tie_b = (1.25 + (m - 1) / 4) * 2.0 ** e, 1 + 2.0 ** (e - bits - 1)
    a = np.where(np.arange(n) % 3 == 0, tie_a, m * 2.0 ** rng.integers(0, min(20, bits), n))
    b = np.where(np.arange(n) % 3 == 0, tie_b, rng.random(n) * 3)
    b = np.where(np.arange(n) % 3 == 2, rng.integers(1, 9, n), b)
    return a.astype(dtype), b.astype(dtype)


def ones(t):
    """-1 and 1 as operands of type t (f16 has no immediates: registers set at the start)."""
    if t == "f16":
        return {"m1": "%x9", "p1": "%x6"}
    dtype, _, _, imm, ubits, _ = TYPES[t]
    return {"m1": imm.format(dtype(-1).view(ubits)), "p1": imm.format(dtype(1).view(ubits))}


def kernel(name, t, op, a, b):
    dtype, prefix, width, imm, ubits, mov = TYPES[t]
    size = dtype().itemsize
    lines = []
    for k, (x, y) in enumerate(zip(a, b)):
        compute = OPS[op][0].format(t=t, nb=imm.format((-y).view(ubits)), **ones(t))
        lines.append(f"mov.{mov} %x1, {imm.format(x.view(ubits))}; "
                     f"mov.{mov} %x2, {imm.format(y.view(ubits))}; {compute} "
                     f"st.global.{width} [%qd3+{k * size}], %x3;")
    body = "\n    ".join(lines)
    return f""".visible .entry {name}(.param .u64 pa, .param .u64 pb, .param .u64 po, .param .u64 pk) {{
    .reg .b32 %q<4>; .reg .b64 %qd<12>; .reg .{width} %x<10>;
    ld.param.u64 %qd1, [pa]; ld.param.u64 %qd2, [pb]; ld.param.u64 %qd3, [pk];
    ld.param.u64 %qd4, [po];
    mov.u32 %q1, %tid.x; mul.wide.u32 %qd5, %q1, {size};
    add.s64 %qd6, %qd1, %qd5; add.s64 %qd7, %qd2, %qd5; add.s64 %qd8, %qd4, %qd5;
    {"mov.b16 %x9, 0xBC00; mov.b16 %x6, 0x3C00;" if t == "f16" else ""}
    ld.global.{width} %x1, [%qd6]; ld.global.{width} %x2, [%qd7];
    neg.{t} %x8, %x2; {OPS[op][0].format(t=t, nb="%x8", **ones(t))}
    st.global.{width} [%qd8], %x3;
    setp.ne.u32 %qp1, %q1, 0;
    @%qp1 bra $DONE;
    {body}
$DONE:
    ret;
}}
""".replace(".reg .b64 %qd<12>;", ".reg .b64 %qd<12>; .reg .pred %qp<2>;").replace(
        "%x", "%" + prefix)


def main():
    head = ".version 7.8\n.target sm_90\n.address_size 64\n"
    rng = np.random.default_rng(0)
    for t, (dtype, *_, ubits, _) in TYPES.items():
        a, b = pairs(dtype, rng)
        for op, (_, ref) in OPS.items():
            if t == "f16" and op in ("div", "add of -b"):   # no div.f16, no f16 immediates
                continue
            run_time, known = np.zeros_like(a), np.zeros_like(a)
            name = f"k{len(op)}_{t}_{op.replace(' ', '_').replace('-', 'minus')}"
            ptx = head + kernel(name, t, op, a, b)
            gpu_run_kernel(ptx, name, (1,), (len(a),), [a, b, run_time, known])
            want = ref(a, b).astype(dtype)
            for name, got in (("at run time", run_time), ("known to ptxas", known)):
                bad = np.flatnonzero(want.view(ubits) != got.view(ubits))
                ties = sum(1 for k in bad if k % 3 == 0)
                example = "" if not len(bad) else (
                    f": {a[bad[0]]!r} {op} {b[bad[0]]!r} gave {got[bad[0]]!r}, not {want[bad[0]]!r}")
                verdict = "right" if not len(bad) else f"WRONG at {len(bad)} of {len(a)} ({ties} ties)"
                print(f"{op:10s} {t} {name:15s} {verdict}{example}")


if __name__ == "__main__":
    main()
