"""Do the GPU's float atomics keep subnormal values, as the simulator assumes? (device only)

The PTX ISA has `atom.add.f32` flush subnormal inputs and results to zero, while the
`.noftz` forms (f16, bf16) keep them; the simulator adds exactly, in IEEE arithmetic. Each
form below has thread t add b[t] to its own element m[t] (no two threads share one, so the
result is deterministic) and store the old value; both are compared, bit for bit, with the
exact sum (NumPy) and with the sum of flushed values.

    python benchmarks/probes/atom_probe.py [--sass]
"""
import sys

import numpy as np

sys.path.insert(0, "tests")
from gpu_launcher import gpu_run_kernel  # noqa: E402
from min_probe import report  # noqa: E402

# name: (PTX type, register class, element bytes, the instruction(s): %a = address, %v =
# addend, %o = old value)
FORMS = {
    "atom.global.add.f32": ("f32", "f", 4, ["atom.global.add.f32 %o, [%a], %v;"]),
    "red.global.add.f32": ("f32", "f", 4, ["red.global.add.f32 [%a], %v;", "mov.f32 %o, 0f00000000;"]),
    "atom.add.f32 (generic)": ("f32", "f", 4, ["atom.add.f32 %o, [%a], %v;"]),
    "atom.shared.add.f32": ("f32", "f", 4, None),
    "atom.global.add.f64": ("f64", "fd", 8, ["atom.global.add.f64 %o, [%a], %v;"]),
    "atom.global.add.noftz.f16": ("f16", "h", 2, ["atom.global.add.noftz.f16 %o, [%a], %v;"]),
    "atom.global.add.noftz.bf16": ("bf16", "h", 2, ["atom.global.add.noftz.bf16 %o, [%a], %v;"]),
}
DTYPES = {"f32": np.float32, "f64": np.float64, "f16": np.float16}


def kernel(name, ty, cls, size, body):
    width = {"f32": "f32", "f64": "f64", "f16": "b16", "bf16": "b16"}[ty]
    move = "b16" if size == 2 else ty
    if body is None:     # through a shared copy of the element
        body = ["mov.u64 %s, sm;", "add.s64 %s, %s, %qd5;", f"st.shared.{ty} [%s], %m;",
                f"atom.shared.add.{ty} %o, [%s], %v;", f"ld.shared.{ty} %m, [%s];",
                f"st.global.{ty} [%a], %m;"]
    text = "\n    ".join(body).replace("%s", "%qd10").replace("%o", f"%{cls}3").replace(
        "%v", f"%{cls}2").replace("%m", f"%{cls}1").replace("%a", "%qd6")
    return f""".visible .entry {name}(.param .u64 pm, .param .u64 pv, .param .u64 po) {{
    .reg .b32 %q<4>; .reg .b64 %qd<12>; .reg .{width} %{cls}<6>;
    .shared .align 8 .b8 sm[1024];
    ld.param.u64 %qd1, [pm]; ld.param.u64 %qd2, [pv]; ld.param.u64 %qd3, [po];
    mov.u32 %q1, %tid.x; mul.wide.u32 %qd5, %q1, {size};
    add.s64 %qd6, %qd1, %qd5; add.s64 %qd7, %qd2, %qd5; add.s64 %qd9, %qd3, %qd5;
    ld.global.{move} %{cls}1, [%qd6]; ld.global.{move} %{cls}2, [%qd7];
    {text}
    st.global.{move} [%qd9], %{cls}3;
    ret;
}}
"""


def values(ty):
    """Pairs (m, b) around the subnormal range of ty, as float64."""
    info = {"f32": (2.0**-126, 2.0**-149), "f64": (2.0**-1022, 2.0**-1074),
            "f16": (2.0**-14, 2.0**-24), "bf16": (2.0**-126, 2.0**-133)}[ty]
    normal, tiny = info
    ms = [tiny, 3 * tiny, normal / 2, normal, 1.0, 0.0, -tiny, normal * 1.5, -normal / 4]
    bs = [tiny, tiny, normal / 2, -tiny, tiny, tiny, 2 * tiny, -normal, normal / 4]
    return np.array(ms), np.array(bs)


def as_type(x, ty):
    if ty == "bf16":
        import ml_dtypes
        return x.astype(np.float32).astype(ml_dtypes.bfloat16).view(np.uint16)
    return x.astype(DTYPES[ty])


def flushed(x, ty):
    smallest_normal = {"f32": 2.0**-126, "f64": 2.0**-1022, "f16": 2.0**-14, "bf16": 2.0**-126}[ty]
    return np.where(np.abs(x) < smallest_normal, 0.0 * np.sign(x), x)


def main():
    head = ".version 8.0\n.target sm_90\n.address_size 64\n"
    for k, (name, (ty, cls, size, body)) in enumerate(FORMS.items()):
        ms, bs = values(ty)
        m, b = as_type(ms, ty), as_type(bs, ty)
        out = np.zeros_like(m)
        ptx = head + kernel(f"k{k}", ty, cls, size, body)
        gpu_run_kernel(ptx, f"k{k}", (1,), (len(m),), [m, b, out])
        exact = as_type(ms + bs, ty)
        flush = as_type(flushed(flushed(ms, ty) + flushed(bs, ty), ty), ty)
        width = np.dtype(f"u{size}")
        got, want = m.view(width), exact.view(width)
        report(name + " sum, exact", 40, np.flatnonzero(got != want), {"m": ms, "b": bs},
               got, want, ptx)
        report(name + " sum, flushed", 40, np.flatnonzero(got != flush.view(width)),
               {"m": ms, "b": bs}, got, flush.view(width), ptx)
        if not name.startswith("red"):
            old = as_type(ms, ty).view(width)
            report(name + " old value", 40, np.flatnonzero(out.view(width) != old),
                   {"m": ms}, out.view(width), old, ptx)


if __name__ == "__main__":
    main()
