"""Tests of the PTX simulator (ptxpy.runtime.simulator) on hand-written and nvcc-generated PTX."""
from __future__ import annotations

import math
import re
import shutil
import subprocess
from fractions import Fraction
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")

from ptxpy.runtime.simulator import Module, SimulatorError, run_kernel

BF16 = np.dtype(ml_dtypes.bfloat16)
HEADER = ".version 7.8\n.target sm_90\n.address_size 64\n"
REGS = """
    .reg .pred %p<8>;
    .reg .b16 %rs<8>;
    .reg .b16 %h<8>;
    .reg .b32 %r<40>;
    .reg .b64 %rd<40>;
    .reg .f32 %f<8>;
    .reg .f64 %fd<8>;
"""

# ---- an elementwise harness: out[i] = OP(a[i], b[i], c[i]) ------------------------------------

NP_TYPES = {"f16": np.float16, "bf16": BF16, "f32": np.float32, "f64": np.float64, "pred": np.uint8,
            "f16x2": np.uint32, "bf16x2": np.uint32}


def _reg(t: str, slot: int) -> str:
    if t == "f32":
        return f"%f{slot}"
    if t == "f64":
        return f"%fd{slot}"
    if t == "pred":
        return f"%p{slot}"
    if t in ("f16", "bf16"):
        return f"%h{slot}"
    bits = 32 if t.endswith("x2") else int(t[1:])
    return {8: "%rs", 16: "%rs", 32: "%r", 64: "%rd"}[bits] + str(slot)


def _mem_type(t: str) -> str:
    return {"f16": "b16", "bf16": "b16", "f16x2": "b32", "bf16x2": "b32", "pred": "u8"}.get(t, t)


def _nbytes(t: str) -> int:
    return np.dtype(NP_TYPES.get(t) or f"{'int' if t[0] == 's' else 'uint'}{t[1:]}").itemsize


def _access(name: str, t: str, k: int) -> str:
    """Address of element i of parameter `name` in %rd{20+k}."""
    return (f"    ld.param.u64 %rd{10 + k}, [map_{name}];\n"
            f"    cvta.to.global.u64 %rd{10 + k}, %rd{10 + k};\n"
            f"    mul.lo.s64 %rd{30 + k}, %rd39, {_nbytes(t)};\n"
            f"    add.s64 %rd{20 + k}, %rd{10 + k}, %rd{30 + k};\n")


def map_ptx(body: str, a: str, out: str, b: str | None = None, c: str | None = None) -> str:
    """A kernel `map(out, a, b, c, n)` running `body` with {a} {b} {c} {d} (d is the result)."""
    names = {"a": _reg(a, 1), "b": _reg(b or a, 2), "c": _reg(c or a, 3), "d": _reg(out, 4)}
    loads = ""
    for k, (name, t) in enumerate((("a", a), ("b", b), ("c", c))):
        if t is None:
            continue
        loads += _access(name, t, k)
        if t == "pred":
            loads += (f"    ld.global.u8 %rs7, [%rd{20 + k}];\n"
                      f"    setp.ne.u16 {names[name]}, %rs7, 0;\n")
        else:
            loads += f"    ld.global.{_mem_type(t)} {names[name]}, [%rd{20 + k}];\n"
    store = _access("out", out, 3)
    if out == "pred":
        store += "    selp.u16 %rs7, 1, 0, %p4;\n    st.global.u8 [%rd23], %rs7;\n"
    else:
        store += f"    st.global.{_mem_type(out)} [%rd23], {names['d']};\n"
    return HEADER + f""".visible .entry map(.param .u64 map_out, .param .u64 map_a, .param .u64 map_b,
                          .param .u64 map_c, .param .u32 map_n)
{{{REGS}
    mov.u32 %r10, %ctaid.x;
    mov.u32 %r11, %ntid.x;
    mov.u32 %r12, %tid.x;
    mad.lo.s32 %r13, %r10, %r11, %r12;
    ld.param.u32 %r14, [map_n];
    setp.ge.u32 %p7, %r13, %r14;
    @%p7 bra $DONE;
    cvt.u64.u32 %rd39, %r13;
{loads}{body.format(**names)}
{store}$DONE:
    ret;
}}
"""


def run_map(body: str, a, out: str, b=None, c=None):
    """Run the map kernel on NumPy inputs (typed by their dtype names) and return the output."""
    ta, tb, tc = a[0], b[0] if b else None, c[0] if c else None
    ptx = map_ptx(body, ta, out, tb, tc)
    n = len(a[1])
    arrays = [np.asarray(x[1], NP_TYPES.get(x[0]) or _np_int(x[0])) if x else np.zeros(1, np.uint8)
              for x in (a, b, c)]
    result = np.zeros(n, NP_TYPES.get(out) or _np_int(out))
    run_kernel(ptx, "map", grid=(n + 63) // 64, block=64, args=[result, *arrays, n])
    return result


def _np_int(t: str):
    return np.dtype(f"{'int' if t[0] == 's' else 'uint'}{t[1:]}")


# ---- hand-written kernels ----------------------------------------------------------------------

SAXPY = HEADER + """.file 1 "saxpy.py"

.visible .entry saxpy(
    .param .u64 saxpy_x,
    .param .u32 saxpy_x_shape0,
    .param .u64 saxpy_y,
    .param .u32 saxpy_y_shape0,
    .param .f32 saxpy_a,
    .param .u64 saxpy_out,
    .param .u32 saxpy_out_shape0,
    .param .u32 saxpy_n
)
{
    .reg .pred %p<2>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<10>;
    .reg .f32 %f<5>;

    // line 7: i = ptxpy.global_id(0)
    .loc 1 7 8
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    mad.lo.s32 %r4, %r1, %r2, %r3;
    // line 8: if i < n:
    .loc 1 8 4
    ld.param.u32 %r5, [saxpy_n];
    setp.ge.s32 %p1, %r4, %r5;
    @%p1 bra $BB1;
    // line 9: out[i] = a * x[i] + y[i]
    .loc 1 9 8
    ld.param.u64 %rd1, [saxpy_x];
    cvta.to.global.u64 %rd2, %rd1;
    mul.wide.s32 %rd3, %r4, 4;
    add.s64 %rd4, %rd2, %rd3;
    ld.global.nc.f32 %f1, [%rd4];
    ld.param.u64 %rd5, [saxpy_y];
    cvta.to.global.u64 %rd6, %rd5;
    add.s64 %rd7, %rd6, %rd3;
    ld.global.f32 %f2, [%rd7];
    ld.param.f32 %f3, [saxpy_a];
    fma.rn.f32 %f4, %f3, %f1, %f2;
    ld.param.u64 %rd8, [saxpy_out];
    cvta.to.global.u64 %rd8, %rd8;
    add.s64 %rd9, %rd8, %rd3;
    .loc 1 10 8
    st.global.f32 [%rd9], %f4;
$BB1:
    ret;
}
"""

INDEX_2D = HEADER + """
.visible .entry index2d(.param .u64 out, .param .u32 width)
{
    .reg .b32 %r<16>;
    .reg .b64 %rd<6>;
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %ctaid.x;
    mad.lo.s32 %r4, %r3, %r2, %r1;          // x
    mov.u32 %r5, %tid.y;
    mov.u32 %r6, %ntid.y;
    mov.u32 %r7, %ctaid.y;
    mad.lo.s32 %r8, %r7, %r6, %r5;          // y
    ld.param.u32 %r9, [width];
    mad.lo.s32 %r10, %r8, %r9, %r4;         // y * width + x
    mul.lo.s32 %r11, %r8, 1000;
    add.s32 %r12, %r11, %r4;                // 1000 * y + x
    mov.u32 %r13, %tid.z;
    mov.u32 %r14, %nctaid.x;
    mad.lo.s32 %r12, %r14, 1000000, %r12;   // + 1e6 * gridDim.x
    mad.lo.s32 %r12, %r13, 10000000, %r12;  // + 1e7 * tid.z (always 0)
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd1, %rd1;
    mul.wide.u32 %rd2, %r10, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r12;
    ret;
}
"""

# out[i] = (i odd ? sum_{k < i % 7} k : -i), a loop with a per-thread trip count inside a branch
DIVERGE = HEADER + """
.visible .entry diverge(.param .u64 out)
{
    .reg .pred %p<4>;
    .reg .b32 %r<12>;
    .reg .b64 %rd<4>;
    mov.u32 %r1, %tid.x;
    and.b32 %r2, %r1, 1;
    setp.eq.u32 %p1, %r2, 0;
    @%p1 bra $EVEN;
    rem.u32 %r3, %r1, 7;        // trip count
    mov.u32 %r4, 0;             // k
    mov.u32 %r5, 0;             // sum
$LOOP:
    setp.ge.u32 %p2, %r4, %r3;
    @%p2 bra $JOIN;
    add.s32 %r5, %r5, %r4;
    add.s32 %r4, %r4, 1;
    bra.uni $LOOP;
$EVEN:
    neg.s32 %r5, %r1;
$JOIN:
    ld.param.u64 %rd1, [out];
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.s32 [%rd3], %r5;
    ret;
}
"""

def leaving_a_loop(entry: str, params: str, before: str, on_leaving: str) -> str:
    """A kernel whose lane i leaves a loop after i % 4 trips, the back edge laid out after the
    exit (as a compare-and-swap loop's retry block can be): `before` runs ahead of the loop,
    `on_leaving` on the way out and sets %r5, which is stored at out[i]."""
    return HEADER + f"""
.visible .entry {entry}({params})
{{
    .reg .pred %p<4>;
    .reg .b32 %r<12>;
    .reg .b64 %rd<4>;
    mov.u32 %r1, %tid.x;
    and.b32 %r3, %r1, 3;        // trip count
{before}
    mov.u32 %r4, 0;
$HEAD:
    setp.ge.u32 %p2, %r4, %r3;
    @!%p2 bra $MORE;
{on_leaving}
    ld.param.u64 %rd1, [out];
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r5;
    ret;
$MORE:
    add.s32 %r4, %r4, 1;
    bra.uni $HEAD;
}}
"""


# out[i] = the loop count of lane i + 1, shuffled down: the lanes leave the loop at different
# times and meet at the shfl.sync, which waits for the whole warp (threads below `split`
# shuffle up instead)
LATE_LANES = leaving_a_loop("late", ".param .u64 out, .param .u32 split", "", """
    ld.param.u32 %r6, [split];
    setp.lt.u32 %p3, %r1, %r6;
    @%p3 bra $ELSE;
    shfl.sync.down.b32 %r5, %r4, 1, 0x1f, 0xffffffff;
    bra.uni $STORE;
$ELSE:
    shfl.sync.up.b32 %r5, %r4, 1, 0x0, 0xffffffff;
$STORE:""")

# out[i] = activemask after a bar.warp.sync on the mask the lanes entered the loop with
WARP_SYNC_AFTER_LOOP = leaving_a_loop("wsync", ".param .u64 out", "    activemask.b32 %r7;", """
    bar.warp.sync %r7;
    activemask.b32 %r5;""")

REDUCE = HEADER + """
.visible .entry reduce(.param .u64 inp, .param .u64 out)
{
    .reg .pred %p<4>;
    .reg .b32 %r<16>;
    .reg .b64 %rd<8>;
    .reg .f32 %f<4>;
    .shared .align 4 .b8 smem[1024];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mad.lo.s32 %r4, %r2, %r3, %r1;
    ld.param.u64 %rd1, [inp];
    cvta.to.global.u64 %rd1, %rd1;
    mul.wide.u32 %rd2, %r4, 4;
    add.s64 %rd3, %rd1, %rd2;
    ld.global.f32 %f1, [%rd3];
    mov.u32 %r5, smem;
    shl.b32 %r6, %r1, 2;
    add.s32 %r7, %r5, %r6;
    st.shared.f32 [%r7], %f1;
    bar.sync 0;
    shr.u32 %r8, %r3, 1;
$LOOP:
    setp.ge.u32 %p1, %r1, %r8;
    @%p1 bra $SKIP;
    shl.b32 %r9, %r8, 2;
    add.s32 %r10, %r7, %r9;
    ld.shared.f32 %f2, [%r10];
    ld.shared.f32 %f3, [%r7];
    add.f32 %f3, %f3, %f2;
    st.shared.f32 [%r7], %f3;
$SKIP:
    barrier.sync 0;
    shr.u32 %r8, %r8, 1;
    setp.ne.u32 %p2, %r8, 0;
    @%p2 bra $LOOP;
    setp.ne.u32 %p3, %r1, 0;
    @%p3 bra $END;
    ld.shared.f32 %f1, [smem];
    ld.param.u64 %rd4, [out];
    cvta.to.global.u64 %rd4, %rd4;
    mul.wide.u32 %rd5, %r2, 4;
    add.s64 %rd6, %rd4, %rd5;
    st.global.f32 [%rd6], %f1;
$END:
    ret;
}
"""

# out[i*8 + k]: down 5, up 3, bfly 3, idx lane^7, idx width 8 from src 2, down width 8, bfly-sum,
# and the predicate of the down shuffle
SHUFFLE = HEADER + """
.visible .entry shuffle(.param .u64 inp, .param .u64 out)
{
    .reg .pred %p<4>;
    .reg .b32 %r<32>;
    .reg .b64 %rd<8>;
    mov.u32 %r1, %tid.x;
    ld.param.u64 %rd1, [inp];
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    ld.global.u32 %r2, [%rd3];
    shfl.sync.down.b32 %r10|%p1, %r2, 5, 0x1f, -1;
    shfl.sync.up.b32 %r11, %r2, 3, 0x0, 0xffffffff;
    shfl.sync.bfly.b32 %r12, %r2, 3, 31, -1;
    and.b32 %r3, %r1, 31;
    xor.b32 %r4, %r3, 7;
    shfl.sync.idx.b32 %r13, %r2, %r4, 0x1f, -1;
    shfl.sync.idx.b32 %r14, %r2, 2, 0x181f, -1;
    shfl.sync.down.b32 %r15, %r2, 5, 0x181f, -1;
    mov.u32 %r16, %r2;
    shfl.sync.bfly.b32 %r17, %r16, 16, 31, -1;
    add.s32 %r16, %r16, %r17;
    shfl.sync.bfly.b32 %r17, %r16, 8, 31, -1;
    add.s32 %r16, %r16, %r17;
    shfl.sync.bfly.b32 %r17, %r16, 4, 31, -1;
    add.s32 %r16, %r16, %r17;
    shfl.sync.bfly.b32 %r17, %r16, 2, 31, -1;
    add.s32 %r16, %r16, %r17;
    shfl.sync.bfly.b32 %r17, %r16, 1, 31, -1;
    add.s32 %r16, %r16, %r17;
    selp.u32 %r18, 1, 0, %p1;
    ld.param.u64 %rd4, [out];
    mul.wide.u32 %rd5, %r1, 32;
    add.s64 %rd6, %rd4, %rd5;
    st.global.v4.u32 [%rd6], {%r10, %r11, %r12, %r13};
    st.global.v4.u32 [%rd6+16], {%r14, %r15, %r16, %r18};
    ret;
}
"""

# per thread: ballot(in & 1), any(in & 1), all(in & 1), uni(in > 100), activemask inside `lane < 10`
VOTE = HEADER + """
.visible .entry vote(.param .u64 inp, .param .u64 out)
{
    .reg .pred %p<8>;
    .reg .b32 %r<32>;
    .reg .b64 %rd<8>;
    mov.u32 %r1, %tid.x;
    ld.param.u64 %rd1, [inp];
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    ld.global.u32 %r2, [%rd3];
    and.b32 %r3, %r2, 1;
    setp.eq.b32 %p1, %r3, 1;
    vote.sync.ballot.b32 %r10, %p1, -1;
    vote.sync.any.pred %p2, %p1, -1;
    vote.sync.all.pred %p3, %p1, -1;
    setp.gt.u32 %p4, %r2, 100;
    vote.sync.uni.pred %p5, !%p4, -1;
    selp.u32 %r11, 1, 0, %p2;
    selp.u32 %r12, 1, 0, %p3;
    selp.u32 %r13, 1, 0, %p5;
    mov.u32 %r14, 0;
    and.b32 %r4, %r1, 31;
    setp.ge.u32 %p6, %r4, 10;
    @%p6 bra $SKIP;
    activemask.b32 %r14;
$SKIP:
    ld.param.u64 %rd4, [out];
    mul.wide.u32 %rd5, %r1, 20;
    add.s64 %rd6, %rd4, %rd5;
    st.global.u32 [%rd6], %r10;
    st.global.u32 [%rd6+4], %r11;
    st.global.u32 [%rd6+8], %r12;
    st.global.u32 [%rd6+12], %r13;
    st.global.u32 [%rd6+16], %r14;
    ret;
}
"""

# hist[in[i]] += 1 returning old; per-block shared counter; float max through a cas loop
ATOMICS = HEADER + """
.visible .entry atomics(.param .u64 inp, .param .u64 hist, .param .u64 olds, .param .u64 blockcount,
                        .param .u64 fmax, .param .u64 vals)
{
    .reg .pred %p<4>;
    .reg .b32 %r<32>;
    .reg .b64 %rd<16>;
    .reg .f32 %f<4>;
    .shared .align 4 .u32 counter;
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mad.lo.s32 %r4, %r2, %r3, %r1;
    mul.wide.u32 %rd1, %r4, 4;
    ld.param.u64 %rd2, [inp];
    add.s64 %rd3, %rd2, %rd1;
    ld.global.u32 %r5, [%rd3];
    ld.param.u64 %rd4, [hist];
    mul.wide.u32 %rd5, %r5, 4;
    add.s64 %rd6, %rd4, %rd5;
    atom.global.add.u32 %r6, [%rd6], 1;
    ld.param.u64 %rd7, [olds];
    add.s64 %rd8, %rd7, %rd1;
    st.global.u32 [%rd8], %r6;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra $NOINIT;
    st.shared.u32 [counter], 0;
$NOINIT:
    bar.sync 0;
    atom.shared.add.u32 %r7, [counter], %r5;
    bar.sync 0;
    @%p1 bra $CAS;
    ld.shared.u32 %r8, [counter];
    ld.param.u64 %rd9, [blockcount];
    mul.wide.u32 %rd10, %r2, 4;
    add.s64 %rd11, %rd9, %rd10;
    st.global.u32 [%rd11], %r8;
$CAS:
    ld.param.u64 %rd12, [vals];
    add.s64 %rd13, %rd12, %rd1;
    ld.global.f32 %f1, [%rd13];
    ld.param.u64 %rd14, [fmax];
    ld.global.u32 %r10, [%rd14];
$RETRY:
    mov.b32 %f2, %r10;
    max.f32 %f3, %f2, %f1;
    mov.b32 %r11, %f3;
    atom.global.cas.b32 %r12, [%rd14], %r10, %r11;
    setp.ne.u32 %p2, %r12, %r10;
    mov.u32 %r10, %r12;
    @%p2 bra $RETRY;
    ret;
}
"""

# one address: atomic op with value v[i], old values out
ATOM_ONE = HEADER + """
.visible .entry atom_one(.param .u64 cell, .param .u64 vals, .param .u64 olds)
{
    .reg .b32 %r<8>;
    .reg .b64 %rd<8>;
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd1, %r1, 4;
    ld.param.u64 %rd2, [vals];
    add.s64 %rd3, %rd2, %rd1;
    ld.global.u32 %r2, [%rd3];
    ld.param.u64 %rd4, [cell];
    OPCODE %r3, [%rd4], %r2;
    ld.param.u64 %rd5, [olds];
    add.s64 %rd6, %rd5, %rd1;
    st.global.u32 [%rd6], %r3;
    ret;
}
"""

VECTORS = HEADER + """
.visible .entry vectors(.param .u64 inp, .param .u64 out, .param .u64 dout)
{
    .reg .b32 %r<4>;
    .reg .b64 %rd<10>;
    .reg .f32 %f<8>;
    .reg .f64 %fd<4>;
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd1, %r1, 16;
    ld.param.u64 %rd2, [inp];
    add.s64 %rd3, %rd2, %rd1;
    ld.global.v4.f32 {%f1, %f2, %f3, %f4}, [%rd3];
    ld.param.u64 %rd4, [out];
    add.s64 %rd5, %rd4, %rd1;
    st.global.v4.f32 [%rd5], {%f4, %f3, %f2, %f1};
    ld.global.v2.f32 {%f5, _}, [%rd3+8];
    cvt.f64.f32 %fd1, %f5;
    add.f64 %fd2, %fd1, 0d3FF0000000000000;
    ld.param.u64 %rd6, [dout];
    add.s64 %rd7, %rd6, %rd1;
    st.global.v2.f64 [%rd7], {%fd1, %fd2};
    ret;
}
"""

# generic addressing: shared through cvta.shared, a .local array through cvta.local
GENERIC = HEADER + """
.visible .entry generic(.param .u64 out)
{
    .reg .b32 %r<8>;
    .reg .b64 %rd<16>;
    .shared .align 8 .b8 buf[256];
    .local .align 4 .b8 scratch[8];
    mov.u32 %r1, %tid.x;
    mov.u64 %rd1, buf;
    cvta.shared.u64 %rd2, %rd1;
    mul.wide.u32 %rd3, %r1, 4;
    add.s64 %rd4, %rd2, %rd3;
    mul.lo.s32 %r2, %r1, 3;
    st.u32 [%rd4], %r2;
    bar.sync 0;
    mov.u32 %r3, %ntid.x;
    sub.s32 %r4, %r3, 1;
    sub.s32 %r4, %r4, %r1;
    mul.wide.u32 %rd5, %r4, 4;
    add.s64 %rd6, %rd2, %rd5;
    ld.u32 %r5, [%rd6];
    cvta.to.shared.u64 %rd7, %rd6;
    ld.shared.u32 %r6, [%rd7];
    add.s32 %r5, %r5, %r6;
    mov.u64 %rd8, scratch;
    cvta.local.u64 %rd9, %rd8;
    st.u32 [%rd9+4], %r5;
    ld.local.u32 %r7, [scratch+4];
    ld.param.u64 %rd10, [out];
    add.s64 %rd11, %rd10, %rd3;
    st.global.u32 [%rd11], %r7;
    ret;
}
"""

PRINTF = HEADER + """.extern .func (.param .b32 func_retval0) vprintf
(
    .param .b64 vprintf_param_0,
    .param .b64 vprintf_param_1
)
;
.global .align 1 .b8 fmt[28] = {105, 61, 37, 100, 32, 120, 61, 37, 46, 50, 102, 32, 104, 61, 37, 120,
                                 32, 115, 61, 37, 115, 32, 37, 108, 108, 100, 10, 0};
.global .align 1 .b8 word[3] = {111, 107, 0};

.visible .entry show(.param .u64 xs)
{
    .local .align 8 .b8 depot[40];
    .reg .b32 %r<8>;
    .reg .b64 %rd<16>;
    .reg .f32 %f<2>;
    .reg .f64 %fd<2>;
    mov.u32 %r1, %tid.x;
    ld.param.u64 %rd1, [xs];
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    ld.global.f32 %f1, [%rd3];
    cvt.f64.f32 %fd1, %f1;
    mov.u64 %rd4, depot;
    cvta.local.u64 %rd5, %rd4;
    st.local.u32 [depot], %r1;
    st.local.f64 [depot+8], %fd1;
    mul.lo.s32 %r2, %r1, 255;
    st.local.u32 [depot+16], %r2;
    mov.u64 %rd6, word;
    cvta.global.u64 %rd7, %rd6;
    st.local.u64 [depot+24], %rd7;
    mov.u64 %rd8, -5000000000;
    st.local.u64 [depot+32], %rd8;
    mov.u64 %rd9, fmt;
    cvta.global.u64 %rd10, %rd9;
    {
    .param .b64 param0;
    st.param.b64 [param0+0], %rd10;
    .param .b64 param1;
    st.param.b64 [param1+0], %rd5;
    .param .b32 retval0;
    call.uni (retval0), vprintf, (param0, param1);
    ld.param.b32 %r3, [retval0+0];
    }
    ret;
}
"""

TRAP = HEADER + """.file 1 "/work/kernels/guard.py"
.visible .entry guard(.param .u32 bad)
{
    .reg .pred %p<2>;
    .reg .b32 %r<4>;
    mov.u32 %r1, %tid.x;
    ld.param.u32 %r2, [bad];
    .loc 1 12 4
    setp.eq.u32 %p1, %r1, %r2;
    .loc 1 13 8
    @%p1 trap;
    ret;
}
"""

BARRIER_AFTER_EXIT = HEADER + """
.visible .entry early(.param .u32 n)
{
    .reg .pred %p<2>;
    .reg .b32 %r<4>;
    mov.u32 %r1, %tid.x;
    ld.param.u32 %r2, [n];
    setp.ge.u32 %p1, %r1, %r2;
    @%p1 ret;
    bar.sync 0;
    ret;
}
"""

HAND_WRITTEN = [SAXPY, INDEX_2D, DIVERGE, REDUCE, SHUFFLE, VOTE, ATOMICS, VECTORS, GENERIC, PRINTF,
                TRAP, BARRIER_AFTER_EXIT] + [ATOM_ONE.replace("OPCODE", op) for op in
                                             ("atom.global.exch.b32", "atom.global.inc.u32")]


# ---- basic kernels -----------------------------------------------------------------------------

def test_saxpy_matches_numpy():
    rng = np.random.default_rng(0)
    n = 1000
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    out = np.zeros(n, np.float32)
    a = np.float32(1.75)
    run_kernel(Module(SAXPY), "saxpy", grid=(4,), block=(256,), args=[x, n, y, n, a, out, n, n])
    expected = (a.astype(np.float64) * x + y).astype(np.float32)   # one rounding, as fma
    np.testing.assert_array_equal(out, expected)


def test_module_is_reusable_and_params_alias():
    mod = Module(SAXPY)
    x = np.arange(64, dtype=np.float32)
    run_kernel(mod, "saxpy", 1, 64, [x, 64, x, 64, 2.0, x, 64, 64])   # out aliases x and y
    np.testing.assert_array_equal(x, 3 * np.arange(64, dtype=np.float32))
    run_kernel(mod, "saxpy", 1, 64, [x, 64, x, 64, 2.0, x, 64, 10])
    np.testing.assert_array_equal(x[:10], 9 * np.arange(10, dtype=np.float32))
    np.testing.assert_array_equal(x[10:], 3 * np.arange(10, 64, dtype=np.float32))


def test_2d_grid_and_block_indexing():
    width, height = 24, 10
    out = np.zeros(width * height, np.int32)
    run_kernel(INDEX_2D, "index2d", grid=(3, 2), block=(8, 5, 1), args=[out, width])
    y, x = np.mgrid[0:height, 0:width]
    np.testing.assert_array_equal(out.reshape(height, width), 1000 * y + x + 3_000_000)


def test_divergent_branches_and_loops():
    out = np.zeros(100, np.int32)
    run_kernel(DIVERGE, "diverge", grid=1, block=100, args=[out])
    expected = [sum(range(i % 7)) if i % 2 else -i for i in range(100)]
    np.testing.assert_array_equal(out, expected)


def test_shuffling_lanes_wait_for_the_rest_of_their_warp():
    """`shfl.sync` makes a lane wait until every live lane of its member mask executes it (PTX
    ISA), however late: here the lanes leave a loop at different iterations, the back edge laid
    out after the shuffle. Lanes that can never arrive (in the other branch) are an error."""
    out = np.zeros(64, np.uint32)
    run_kernel(LATE_LANES, "late", grid=1, block=64, args=[out, 0])
    counts = np.arange(64) % 4
    lane = np.arange(64) % 32
    np.testing.assert_array_equal(out, np.where(lane < 31, np.roll(counts, -1), counts))
    with pytest.raises(SimulatorError, match=r"`shfl\.sync\.up.* live but never execute it"):
        run_kernel(LATE_LANES, "late", grid=1, block=64, args=[out, 5])


EARLY_EXIT = HEADER + """
.visible .entry early(.param .u64 out)
{
    .reg .pred %p<2>;
    .reg .b32 %r<4>;
    .reg .b64 %rd<4>;
    mov.u32 %r1, %tid.x;
    setp.ge.u32 %p1, %r1, 8;
    @%p1 ret;
    shfl.sync.down.b32 %r2, %r1, 4, 0x1f, 0xffffffff;
    ld.param.u64 %rd1, [out];
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r2;
    ret;
}
"""


def test_a_shuffle_from_a_lane_that_has_exited_is_an_error():
    """Lanes 8 to 31 leave before the shuffle: lanes 0 to 3 read lanes 4 to 7, which are there,
    and lane 4 reads lane 8, whose registers are gone (undefined on the GPU)."""
    out = np.zeros(32, np.uint32)
    with pytest.raises(SimulatorError, match=r"`shfl\.sync\.down.*`: reads lane 8, which has "
                                             r"exited; thread \(4,0,0\)"):
        run_kernel(EARLY_EXIT, "early", grid=1, block=32, args=[out])


def test_a_warp_function_after_a_return_names_the_lane_that_left():
    from kernel_harness import compile_source

    kernel = compile_source("""
import ptxpy
from ptxpy import Array, f32

@ptxpy.jit
def k(x: Array[f32], out: Array[f32]):
    t = ptxpy.thread_idx.x
    if t >= len(x):
        return
    out[t] = ptxpy.shfl_xor_sync(x[t], 16)
""", "k")
    x = np.ones(40, np.float32)
    with pytest.raises(SimulatorError, match=r"^kernels\.py:10: `shfl\.sync\.bfly.*`: lane 8 of the "
                       r"warp, named in the member mask, has exited \(a `return` before the call, or a branch that skipped it\)"):
        run_kernel(kernel.ptx, "k", grid=1, block=64, args=[x, 40, np.zeros(40, np.float32), 40])


def test_a_warp_function_in_a_branch_that_some_lanes_skip_names_a_lane_that_left():
    """Lane 16 skips the branch and reaches the kernel's end: it has exited by the time lane 0
    waits for it at the shuffle, with no `return` in the kernel."""
    from kernel_harness import compile_source

    kernel = compile_source("""
import ptxpy
from ptxpy import Array, f32

@ptxpy.jit
def k(x: Array[f32], out: Array[f32]):
    t = ptxpy.thread_idx.x
    v = x[t]
    if t < 16:
        v = ptxpy.shfl_xor_sync(v, 1)
    out[t] = v
""", "k")
    x = np.ones(32, np.float32)
    with pytest.raises(SimulatorError, match=r"^kernels\.py:10: `shfl\.sync\.bfly.*`: lane 16 of the "
                       r"warp, named in the member mask, has exited \(a `return` before the call, or "
                       r"a branch that skipped it\)"):
        run_kernel(kernel.ptx, "k", grid=1, block=32, args=[x, 32, np.zeros(32, np.float32), 32])


def test_bar_warp_sync_makes_lanes_wait_for_their_mask():
    """Lanes leave a loop at different iterations; after `bar.warp.sync` on the mask they
    entered with, they run together again: `activemask` names all 32 (a partial warp: its own)."""
    out = np.zeros(48, np.uint32)
    run_kernel(WARP_SYNC_AFTER_LOOP, "wsync", grid=1, block=48, args=[out])
    np.testing.assert_array_equal(out, [0xFFFFFFFF] * 32 + [0xFFFF] * 16)


def test_shared_memory_tree_reduction():
    rng = np.random.default_rng(1)
    blocks = 40
    data = rng.standard_normal(blocks * 256).astype(np.float32)
    out = np.zeros(blocks, np.float32)
    run_kernel(REDUCE, "reduce", grid=blocks, block=256, args=[data, out])
    tree = data.reshape(blocks, 256).copy()
    s = 128
    while s:
        tree[:, :s] = tree[:, :s] + tree[:, s:2 * s]
        s //= 2
    np.testing.assert_array_equal(out, tree[:, 0])


def test_warp_shuffles():
    n = 64
    inp = (np.arange(n, dtype=np.uint32) * 7 + 3)
    out = np.zeros((n, 8), np.uint32)
    run_kernel(SHUFFLE, "shuffle", grid=1, block=n, args=[inp, out])
    for i in range(n):
        lane, warp = i % 32, i - i % 32
        val = lambda j: inp[warp + j]
        seg = lane - lane % 8
        expected = [
            val(lane + 5) if lane + 5 < 32 else val(lane),
            val(lane - 3) if lane >= 3 else val(lane),
            val(lane ^ 3), val(lane ^ 7), val(seg + 2),
            val(lane + 5) if lane % 8 + 5 < 8 else val(lane),
            inp[warp:warp + 32].sum(), int(lane + 5 < 32)]
        assert list(out[i]) == expected, i


def test_shuffle_in_partial_warp_reads_own_value_for_missing_lanes():
    inp = np.arange(40, dtype=np.uint32) + 100
    out = np.zeros((40, 8), np.uint32)
    run_kernel(SHUFFLE, "shuffle", grid=1, block=40, args=[inp, out])
    # lanes 32..39 form a warp of 8: down by 5 exists for lanes 0..2 of it only
    assert list(out[32:40, 0]) == [137, 138, 139, 135, 136, 137, 138, 139]
    assert list(out[32:40, 7]) == [1, 1, 1, 0, 0, 0, 0, 0]


def test_votes_and_activemask():
    rng = np.random.default_rng(2)
    n = 96
    inp = rng.integers(0, 100, n).astype(np.uint32)
    inp[32:64] |= 1                       # warp 1: all odd
    inp[64:96] = 2 * rng.integers(0, 50, 32)  # warp 2: all even
    inp[5] = 1000
    out = np.zeros((n, 5), np.uint32)
    run_kernel(VOTE, "vote", grid=1, block=n, args=[inp, out])
    for w in range(3):
        bits = inp[32 * w:32 * w + 32] & 1
        ballot = sum(int(b) << k for k, b in enumerate(bits))
        big = inp[32 * w:32 * w + 32] > 100
        uni = int(big.all() or not big.any())
        for row in out[32 * w:32 * w + 32]:
            assert list(row[:4]) == [ballot, int(ballot != 0), int(ballot == 0xFFFFFFFF), uni]
        assert list(out[32 * w:32 * w + 32, 4]) == [0x3FF] * 10 + [0] * 22


def test_atomics_histogram_shared_counter_and_cas_loop():
    rng = np.random.default_rng(3)
    blocks, threads = 6, 128
    n = blocks * threads
    inp = rng.integers(0, 10, n).astype(np.uint32)
    hist = np.zeros(10, np.uint32)
    olds = np.zeros(n, np.uint32)
    counts = np.zeros(blocks, np.uint32)
    vals = rng.standard_normal(n).astype(np.float32)
    fmax = np.full(1, -np.inf, np.float32)
    run_kernel(ATOMICS, "atomics", grid=blocks, block=threads,
               args=[inp, hist, olds, counts, fmax, vals])
    np.testing.assert_array_equal(hist, np.bincount(inp, minlength=10))
    for b in range(10):   # old values are 0, 1, 2, ... in thread order within each bin
        np.testing.assert_array_equal(olds[inp == b], np.arange((inp == b).sum()))
    np.testing.assert_array_equal(counts, inp.reshape(blocks, threads).sum(axis=1))
    assert fmax[0] == vals.max()


@pytest.mark.parametrize("opcode, start, values, expect_olds, expect_final", [
    ("atom.global.exch.b32", 7, [1, 2, 3, 4], [7, 1, 2, 3], 4),
    ("atom.global.inc.u32", 0, [2] * 7, [0, 1, 2, 0, 1, 2, 0], 1),
    ("atom.global.dec.u32", 1, [2] * 5, [1, 0, 2, 1, 0], 2),
    ("atom.global.min.s32", 5, [9, 3, -4, 8], [5, 5, 3, -4], -4),
    ("atom.global.max.u32", 5, [9, 3, 12, 8], [5, 9, 9, 12], 12),
    ("atom.global.and.b32", 0xFF, [0xF0, 0x3C, 0xFF], [0xFF, 0xF0, 0x30], 0x30),
    ("atom.global.or.b32", 1, [2, 4, 8], [1, 3, 7], 15),
    ("atom.global.xor.b32", 1, [3, 3, 5], [1, 2, 1], 4),
    ("atom.global.add.u32", 0xFFFFFFFE, [1, 1, 1], [0xFFFFFFFE, 0xFFFFFFFF, 0], 1),
])
def test_atomic_operations_on_one_address(opcode, start, values, expect_olds, expect_final):
    cell = np.array([start], np.uint32 if start >= 0 else np.int32).view(np.uint32)
    vals = np.array(values, np.int64).astype(np.uint32)
    olds = np.zeros(len(values), np.uint32)
    run_kernel(ATOM_ONE.replace("OPCODE", opcode), "atom_one", 1, len(values), [cell, vals, olds])
    np.testing.assert_array_equal(olds, np.array(expect_olds, np.int64).astype(np.uint32))
    assert cell[0] == np.uint32(np.int64(expect_final).astype(np.uint32))


def test_float_atomic_add_applies_in_thread_order():
    vals = np.array([1e8, 1.0, 1.0, -1e8, 0.5] * 20, np.float32)
    cell = np.zeros(1, np.float32)
    olds = np.zeros(vals.size, np.float32)
    ptx = ATOM_ONE.replace("OPCODE", "atom.global.add.f32")
    run_kernel(ptx, "atom_one", 1, vals.size,
               [cell, vals.view(np.uint32), olds.view(np.uint32)])
    acc, expected = np.float32(0), []
    for v in vals:
        expected.append(acc)
        acc = np.float32(acc + v)
    np.testing.assert_array_equal(olds, expected)
    assert cell[0] == acc


def test_vector_loads_and_stores():
    inp = np.arange(32, dtype=np.float32).reshape(8, 4)
    out = np.zeros_like(inp)
    dout = np.zeros((8, 2), np.float64)
    run_kernel(VECTORS, "vectors", 1, 8, [inp, out, dout])
    np.testing.assert_array_equal(out, inp[:, ::-1])
    np.testing.assert_array_equal(dout, np.stack([inp[:, 2], inp[:, 2] + 1], axis=1))


def test_generic_addressing_of_shared_and_local():
    out = np.zeros(64, np.uint32)
    run_kernel(GENERIC, "generic", 2, 64, [out])
    np.testing.assert_array_equal(out, 2 * 3 * (63 - np.arange(64)))


def test_vprintf_formats_values_in_thread_order(capsys):
    xs = np.array([1.5, -2.25, 0.125], np.float32)
    run_kernel(PRINTF, "show", 1, 3, [xs])
    lines = capsys.readouterr().out.splitlines()
    assert lines == [f"i={i} x={x:.2f} h={255 * i:x} s=ok -5000000000" for i, x in enumerate(xs)]


# ---- errors ------------------------------------------------------------------------------------

def test_out_of_bounds_load_names_the_python_line():
    x = np.zeros(100, np.float32)
    y = np.zeros(130, np.float32)
    out = np.zeros(130, np.float32)
    with pytest.raises(SimulatorError) as err:
        run_kernel(SAXPY, "saxpy", grid=5, block=32, args=[x, 100, y, 130, 1.0, out, 130, 130])
    msg = str(err.value)
    assert msg.startswith("saxpy.py:9: out-of-bounds global load of 4 bytes at 0x"), msg
    assert msg.endswith("thread (4,0,0) block (3,0,0)"), msg


def test_out_of_bounds_store_names_the_python_line():
    x = np.zeros(130, np.float32)
    out = np.zeros(120, np.float32)
    with pytest.raises(SimulatorError, match=r"^saxpy\.py:10: out-of-bounds global store of 4 bytes"
                                             r".*thread \(24,0,0\) block \(3,0,0\)$"):
        run_kernel(SAXPY, "saxpy", grid=5, block=32, args=[x, 130, x, 130, 1.0, out, 120, 130])
    assert not out.any()   # a faulting launch copies nothing back


def test_misaligned_access():
    x = np.zeros(64, np.float32)
    ptx = SAXPY.replace("add.s64 %rd4, %rd2, %rd3;", "add.s64 %rd4, %rd2, %rd3;\n    add.s64 %rd4, %rd4, 2;")
    with pytest.raises(SimulatorError, match=r"^saxpy\.py:9: misaligned global load of 4 bytes"):
        run_kernel(ptx, "saxpy", 1, 32, [x, 64, x, 64, 1.0, x, 64, 32])


def test_unknown_instruction_and_modifier_fail_when_loading():
    bad = DIVERGE.replace("neg.s32 %r5, %r1;", "frobnicate.b32 %r5, %r1;")
    with pytest.raises(SimulatorError, match="frobnicate"):
        Module(bad)
    bad = DIVERGE.replace("neg.s32 %r5, %r1;", "add.rz.f32 %r5, %r1, %r1;")
    with pytest.raises(SimulatorError, match=r"PTX line \d+.*\.rz"):
        Module(bad)


def test_trap_reports_the_source_line():
    run_kernel(TRAP, "guard", 1, 32, [99])
    with pytest.raises(SimulatorError, match=r"^/work/kernels/guard\.py:13: kernel trapped; thread \(5,0,0\)"):
        run_kernel(TRAP, "guard", 1, 32, [5])


def test_barrier_after_some_threads_exited_is_an_error():
    run_kernel(BARRIER_AFTER_EXIT, "early", 2, 64, [64])
    with pytest.raises(SimulatorError, match="barrier can never complete: 40 of 64 threads wait"):
        run_kernel(BARRIER_AFTER_EXIT, "early", 2, 64, [40])


def test_bad_arguments():
    with pytest.raises(SimulatorError, match="takes 1 parameters"):
        run_kernel(TRAP, "guard", 1, 1, [])
    with pytest.raises(SimulatorError, match="no kernel 'nope'"):
        run_kernel(TRAP, "nope", 1, 1, [1])


# ---- the shared-memory race check (racecheck=True, PTXPY_SIM_RACECHECK) ------------------------

# out[i] = xs[(t + block) % 64] after every thread stored xs[t] = t: block 0 reads its own
# element, the others another thread's
EXCHANGE = HEADER + """.file 1 "kernels.py"
.visible .entry exchange(.param .u64 out)
{
    .reg .b32 %r<12>;
    .reg .b64 %rd<4>;
    .shared .align 4 .b32 xs[64];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, xs;
    shl.b32 %r4, %r1, 2;
    add.s32 %r5, %r3, %r4;
    .loc 1 7 4
    st.shared.u32 [%r5], %r1;
    .loc 1 8 4
    BARRIER
    add.s32 %r6, %r1, %r2;
    and.b32 %r6, %r6, 63;
    shl.b32 %r7, %r6, 2;
    add.s32 %r8, %r3, %r7;
    .loc 1 9 4
    ld.shared.u32 %r9, [%r8];
    mov.u32 %r10, %ntid.x;
    mad.lo.s32 %r11, %r2, %r10, %r1;
    ld.param.u64 %rd1, [out];
    mul.wide.u32 %rd2, %r11, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r9;
    ret;
}
"""
RACY = EXCHANGE.replace("BARRIER", "")
SYNCED = EXCHANGE.replace("BARRIER", "bar.sync 0;")
EXCHANGE_RACE = ("kernels.py:9: shared memory race: thread (0,0,0) reads 4 bytes at shared offset 0x4 "
                 "that thread (1,0,0) wrote since the last barrier; block (1,0,0)")


def _exchanged(blocks: int) -> np.ndarray:
    return (np.arange(64) + np.arange(blocks)[:, None]).reshape(-1) % 64


def test_racecheck_reports_a_load_of_another_threads_store_without_a_barrier():
    out = np.zeros(128, np.uint32)
    with pytest.raises(SimulatorError) as err:
        run_kernel(RACY, "exchange", 2, 64, [out], racecheck=True)
    assert str(err.value) == EXCHANGE_RACE
    assert not out.any()
    run_kernel(RACY, "exchange", 1, 64, [out[:64]], racecheck=True)   # each its own element
    np.testing.assert_array_equal(out[:64], np.arange(64))


def test_racecheck_names_the_block_of_a_later_batch(monkeypatch):
    """Under the race check a batch holds fewer blocks (RACECHECK_BYTES of state): here one."""
    from ptxpy.runtime import simulator

    monkeypatch.setattr(simulator, "RACECHECK_BYTES", simulator._SharedRaces.BYTES_PER_BYTE * 256)
    batches = []
    run = simulator._RacecheckBatch.run
    monkeypatch.setattr(simulator._RacecheckBatch, "run", lambda self: batches.append(self.B) or run(self))
    out = np.zeros(3 * 64, np.uint32)
    run_kernel(SYNCED, "exchange", 3, 64, [out], racecheck=True)
    np.testing.assert_array_equal(out, _exchanged(3))
    assert batches == [1, 1, 1]
    with pytest.raises(SimulatorError) as err:
        run_kernel(RACY, "exchange", 3, 64, [out], racecheck=True)
    assert str(err.value) == EXCHANGE_RACE


def test_racecheck_passes_the_kernel_with_its_barrier():
    out = np.zeros(3 * 64, np.uint32)
    run_kernel(Module(SYNCED), "exchange", 3, 64, [out], racecheck=True)
    np.testing.assert_array_equal(out, _exchanged(3))


def test_racecheck_is_off_by_default():
    """The threads of a block run in step, so the racy kernel gives what the barrier would."""
    out = np.zeros(2 * 64, np.uint32)
    Module(RACY).run("exchange", 2, 64, [out])
    np.testing.assert_array_equal(out, _exchanged(2))


def test_racecheck_environment_variable(monkeypatch):
    out = np.zeros(2 * 64, np.uint32)
    monkeypatch.setenv("PTXPY_SIM_RACECHECK", "1")
    with pytest.raises(SimulatorError) as err:
        run_kernel(RACY, "exchange", 2, 64, [out])
    assert str(err.value) == EXCHANGE_RACE
    run_kernel(RACY, "exchange", 2, 64, [out], racecheck=False)    # the keyword wins
    np.testing.assert_array_equal(out, _exchanged(2))
    for off in ("0", "false", "No", "off", ""):      # as PTXPY_INTERPRET and PTXPY_CACHE read them
        monkeypatch.setenv("PTXPY_SIM_RACECHECK", off)
        run_kernel(RACY, "exchange", 2, 64, [out])


# thread a makes the FIRST access, then thread b the SECOND, to a 16-byte shared array
PAIR = HEADER + """.file 1 "kernels.py"
.visible .entry pair(.param .u32 a, .param .u32 b)
{
    .reg .pred %p<3>;
    .reg .b16 %rs<2>;
    .reg .b32 %r<12>;
    .reg .b64 %rd<4>;
    .shared .align 4 .b32 xs[4];
    mov.u32 %r1, %tid.x;
    ld.param.u32 %r2, [a];
    ld.param.u32 %r3, [b];
    setp.eq.u32 %p1, %r1, %r2;
    setp.eq.u32 %p2, %r1, %r3;
    mov.u64 %rd1, xs;
    cvta.shared.u64 %rd2, %rd1;
    .loc 1 4 4
    @%p1 FIRST
    BARRIER
    .loc 1 5 4
    @%p2 SECOND
    ret;
}
"""
ST, LD = "st.shared.u32 [xs+4], %r1;", "ld.shared.u32 %r9, [xs+4];"
ATOM, RED = "atom.shared.add.u32 %r9, [xs+4], 1;", "red.shared.add.u32 [xs+4], 1;"
CAS = "atom.shared.cas.b32 %r9, [xs+4], 0, 1;"


@pytest.mark.parametrize("first, second, race", [
    (ST, LD, "reads 4 bytes at shared offset 0x4 that thread (2,0,0) wrote"),
    (ST, ST, "writes 4 bytes at shared offset 0x4 that thread (2,0,0) wrote"),
    (LD, ST, "writes 4 bytes at shared offset 0x4 that thread (2,0,0) read"),
    (ATOM, LD, "reads 4 bytes at shared offset 0x4 that thread (2,0,0) atomically updated"),
    (LD, RED, "atomically updates 4 bytes at shared offset 0x4 that thread (2,0,0) read"),
    (ST, ATOM, "atomically updates 4 bytes at shared offset 0x4 that thread (2,0,0) wrote"),
    (CAS, ST, "writes 4 bytes at shared offset 0x4 that thread (2,0,0) atomically updated"),
    ("st.shared.u8 [xs+5], %r1;", LD, "reads 4 bytes at shared offset 0x4 that thread (2,0,0) wrote"),
    ("st.u32 [%rd2+4], %r1;", "ld.shared.v2.u32 {%r9, %r10}, [xs];",
     "reads 8 bytes at shared offset 0x0 that thread (2,0,0) wrote"),        # generic address
    (LD, LD, None), (ATOM, RED, None), (RED, CAS, None),
    (CAS, LD, None), (LD, CAS, None),     # a compare-and-swap loop's plain first load
    ("st.shared.u16 [xs+6], %r1;", "ld.shared.u16 %rs1, [xs+4];", None),   # other bytes
])
def test_racecheck_pairs_of_accesses_by_two_threads(first, second, race):
    ptx = PAIR.replace("FIRST", first).replace("SECOND", second)
    racy = ptx.replace("BARRIER", "")
    if race is None:
        run_kernel(racy, "pair", 1, 8, [2, 5], racecheck=True)
    else:
        with pytest.raises(SimulatorError) as err:
            run_kernel(racy, "pair", 1, 8, [2, 5], racecheck=True)
        assert str(err.value) == (f"kernels.py:5: shared memory race: thread (5,0,0) {race} since "
                                  "the last barrier; block (0,0,0)")
    run_kernel(racy, "pair", 1, 8, [5, 5], racecheck=True)        # one thread is no race
    run_kernel(ptx.replace("BARRIER", "bar.sync 0;"), "pair", 1, 8, [2, 5], racecheck=True)


# each thread stores xs[t >> shift]
STORES = HEADER + """.file 1 "kernels.py"
.visible .entry stores(.param .u32 shift)
{
    .reg .b32 %r<8>;
    .shared .align 4 .b32 xs[64];
    mov.u32 %r1, %tid.x;
    ld.param.u32 %r2, [shift];
    shr.u32 %r3, %r1, %r2;
    shl.b32 %r4, %r3, 2;
    mov.u32 %r5, xs;
    add.s32 %r6, %r5, %r4;
    .loc 1 3 8
    st.shared.u32 [%r6], %r1;
    ret;
}
"""


def test_racecheck_reports_two_lanes_of_one_store_writing_the_same_bytes():
    run_kernel(STORES, "stores", 2, 64, [0], racecheck=True)
    with pytest.raises(SimulatorError) as err:
        run_kernel(STORES, "stores", (1, 2), (1, 64), [1], racecheck=True)
    assert str(err.value) == ("kernels.py:3: shared memory race: thread (0,1,0) writes 4 bytes at "
                              "shared offset 0x0 that thread (0,0,0) also writes in the same "
                              "instruction; block (0,0,0)")


# every thread adds 1 to a shared counter, then thread 0 reads it
COUNTER = HEADER + """.file 1 "kernels.py"
.visible .entry counter(.param .u64 out)
{
    .reg .pred %p<2>;
    .reg .b32 %r<4>;
    .reg .b64 %rd<2>;
    .shared .align 4 .u32 count;
    mov.u32 %r1, %tid.x;
    setp.eq.u32 %p1, %r1, 0;
    .loc 1 12 4
    atom.shared.add.u32 %r2, [count], 1;
    red.shared.add.u32 [count], 2;
    BARRIER
    .loc 1 13 4
    @%p1 ld.shared.u32 %r3, [count];
    ld.param.u64 %rd1, [out];
    @%p1 st.global.u32 [%rd1], %r3;
    ret;
}
"""


def test_racecheck_atomics_of_many_threads_race_only_with_plain_accesses():
    out = np.zeros(1, np.uint32)
    run_kernel(COUNTER.replace("BARRIER", "bar.sync 0;"), "counter", 1, 96, [out], racecheck=True)
    assert out[0] == 3 * 96 - 1     # from 0xffffffff: shared memory starts as all-ones bytes
    with pytest.raises(SimulatorError) as err:
        run_kernel(COUNTER.replace("BARRIER", ""), "counter", 1, 96, [out], racecheck=True)
    # the other thread named is of another warp: once threads of two warps have made an access,
    # the check keeps one of each
    assert str(err.value) == ("kernels.py:13: shared memory race: thread (0,0,0) reads 4 bytes at "
                              "shared offset 0x0 that thread (32,0,0) atomically updated since the "
                              "last barrier; block (0,0,0)")


# the float maximum of a block's values through a compare-and-swap loop seeded by a plain load
FMAX = HEADER + """
.visible .entry fmax(.param .u64 vals, .param .u64 out)
{
    .reg .pred %p<3>;
    .reg .b32 %r<16>;
    .reg .b64 %rd<4>;
    .reg .f32 %f<4>;
    .shared .align 4 .f32 best;
    mov.u32 %r1, %tid.x;
    setp.ne.u32 %p1, %r1, 0;
    ld.param.u64 %rd1, [vals];
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    ld.global.f32 %f1, [%rd3];
    @!%p1 st.shared.f32 [best], %f1;
    bar.sync 0;
    ld.shared.u32 %r10, [best];
$RETRY:
    mov.b32 %f2, %r10;
    max.f32 %f3, %f2, %f1;
    mov.b32 %r11, %f3;
    atom.shared.cas.b32 %r12, [best], %r10, %r11;
    setp.ne.u32 %p2, %r12, %r10;
    mov.u32 %r10, %r12;
    @%p2 bra $RETRY;
    bar.sync 0;
    @%p1 bra $END;
    ld.shared.u32 %r13, [best];
    ld.param.u64 %rd1, [out];
    st.global.u32 [%rd1], %r13;
$END:
    ret;
}
"""


HAND_WRITTEN += [SYNCED, STORES, COUNTER.replace("BARRIER", "bar.sync 0;"), FMAX,
                 PAIR.replace("FIRST", CAS).replace("SECOND", LD).replace("BARRIER", "bar.sync 0;")]


def test_racecheck_accepts_a_compare_and_swap_loop():
    vals = np.random.default_rng(5).standard_normal(128).astype(np.float32)
    out = np.zeros(1, np.float32)
    run_kernel(FMAX, "fmax", 1, 128, [vals, out], racecheck=True)
    assert out[0] == vals.max()


def test_racecheck_of_the_reduction_and_generic_addresses():
    data = np.random.default_rng(1).standard_normal(4 * 256).astype(np.float32)
    out = np.zeros(4, np.float32)
    run_kernel(REDUCE, "reduce", 4, 256, [data, out], racecheck=True)
    np.testing.assert_allclose(out, data.reshape(4, 256).sum(axis=1), rtol=1e-5)
    out = np.zeros(64, np.uint32)
    run_kernel(GENERIC, "generic", 2, 64, [out], racecheck=True)
    racy = GENERIC.replace("    bar.sync 0;\n", "")
    line = racy.splitlines().index("    ld.u32 %r5, [%rd6];") + 1
    with pytest.raises(SimulatorError) as err:
        run_kernel(racy, "generic", 2, 64, [out], racecheck=True)
    assert str(err.value) == (f"PTX line {line}: shared memory race: thread (0,0,0) reads 4 bytes "
                              "at shared offset 0xfc that thread (63,0,0) wrote since the last "
                              "barrier; block (0,0,0)")


# ---- integers ----------------------------------------------------------------------------------

def _u(values, t):
    """Python ints as type t, wrapping around like the hardware."""
    bits = int(t[1:])
    return np.array([v % (1 << bits) for v in values], f"uint{bits}").view(_np_int(t))


@pytest.mark.parametrize("body, t, a, b, expected", [
    ("add.u16 {d}, {a}, {b};", "u16", [65535, 3], [1, 4], [0, 7]),
    ("add.s16 {d}, {a}, {b};", "s16", [32767, -5], [1, 2], [-32768, -3]),
    ("sub.u32 {d}, {a}, {b};", "u32", [0, 10], [1, 3], [0xFFFFFFFF, 7]),
    ("mul.lo.s32 {d}, {a}, {b};", "s32", [65536, -7], [65536, 3], [0, -21]),
    ("mul.hi.u32 {d}, {a}, {b};", "u32", [0xFFFFFFFF, 1 << 16], [0xFFFFFFFF, 1 << 16], [0xFFFFFFFE, 1]),
    ("mul.hi.s32 {d}, {a}, {b};", "s32", [-2, 1 << 30], [3, 8], [-1, 2]),
    ("mul.hi.u64 {d}, {a}, {b};", "u64", [2 ** 64 - 1, 2 ** 40], [2 ** 64 - 1, 2 ** 40], [2 ** 64 - 2, 2 ** 16]),
    ("mul.hi.s64 {d}, {a}, {b};", "s64", [-3, 2 ** 62], [2 ** 62, -8], [-1, -2]),
    ("div.s32 {d}, {a}, {b};", "s32", [-7, 7, -7, -2 ** 31, 5], [2, -2, -2, -1, 0], [-3, -3, 3, -2 ** 31, -1]),
    ("rem.s32 {d}, {a}, {b};", "s32", [-7, 7, -7, -2 ** 31, 5], [2, -2, -2, -1, 0], [-1, 1, -1, 0, -1]),   # x % 0: all ones, as on the H100
    ("div.u32 {d}, {a}, {b};", "u32", [7, 0xFFFFFFFF, 9], [2, 16, 0], [3, 0x0FFFFFFF, 0xFFFFFFFF]),
    ("rem.u64 {d}, {a}, {b};", "u64", [2 ** 64 - 1, 9], [10, 0], [5, 2 ** 64 - 1]),
    ("div.s16 {d}, {a}, {b};", "s16", [-32768, 100], [-1, -7], [-32768, -14]),
    ("shr.s32 {d}, {a}, {b};", "s32", [-20, -20, 20, -1], [2, 40, 40, 31], [-5, -1, 0, -1]),
    ("shr.u32 {d}, {a}, {b};", "u32", [0x80000000, 0x80000000], [31, 32], [1, 0]),
    ("shr.b64 {d}, {a}, {b};", "u64", [2 ** 63, 2 ** 63], [63, 64], [1, 0]),
    ("min.s32 {d}, {a}, {b};", "s32", [-1, 5], [3, 2], [-1, 2]),
    ("max.u32 {d}, {a}, {b};", "u32", [0xFFFFFFFF, 5], [3, 2], [0xFFFFFFFF, 5]),
    ("and.b32 {d}, {a}, {b};", "u32", [0xF0F0, 12], [0xFF00, 10], [0xF000, 8]),
    ("xor.b64 {d}, {a}, {b};", "u64", [2 ** 64 - 1], [1], [2 ** 64 - 2]),
])
def test_integer_binary_ops(body, t, a, b, expected):
    bt = "u32" if body.startswith("sh") else t
    out = run_map(body, (t, _u(a, t)), t, b=(bt, _u(b, bt)))
    np.testing.assert_array_equal(out, _u(expected, t))


@pytest.mark.parametrize("body, t, a, expected", [
    ("shl.b32 {d}, {a}, 32;", "u32", [1, 5], [0, 0]),
    ("shl.b32 {d}, {a}, 31;", "u32", [1, 3], [2 ** 31, 2 ** 31]),
    ("shl.b16 {d}, {a}, 4;", "u16", [0x1234], [0x2340]),
    ("abs.s32 {d}, {a};", "s32", [-5, -2 ** 31, 7], [5, -2 ** 31, 7]),
    ("neg.s64 {d}, {a};", "s64", [5, -2 ** 63], [-5, -2 ** 63]),
    ("not.b16 {d}, {a};", "u16", [0, 0xFF00], [0xFFFF, 0x00FF]),
    ("cnot.b32 {d}, {a};", "u32", [0, 7], [1, 0]),
    ("brev.b32 {d}, {a};", "u32", [1, 0x12345678], [0x80000000, 0x1E6A2C48]),
    ("brev.b64 {d}, {a};", "u64", [1, 6], [2 ** 63, 3 * 2 ** 61]),
    ("mad.lo.u32 {d}, {a}, 3, 0xFFFFFFFF;", "u32", [1, 0x55555555], [2, 0xFFFFFFFE]),
    ("mul.lo.u16 {d}, {a}, 300;", "u16", [300], [(300 * 300) % 65536]),
])
def test_integer_unary_ops(body, t, a, expected):
    np.testing.assert_array_equal(run_map(body, (t, _u(a, t)), t), _u(expected, t))


def test_popc_clz_on_32_and_64_bits():
    vals32 = _u([0, 1, 0x80000000, 0xFFFFFFFF, 0x00F0F000, 12345], "u32")
    vals64 = _u([0, 1, 2 ** 63, 2 ** 64 - 1, 2 ** 40 + 7], "u64")
    for body, vals, t, ref in [
        ("popc.b32 {d}, {a};", vals32, "u32", lambda v: bin(v).count("1")),
        ("clz.b32 {d}, {a};", vals32, "u32", lambda v: 32 - v.bit_length()),
    ]:
        np.testing.assert_array_equal(run_map(body, (t, vals), "u32"), [ref(int(v)) for v in vals])
    for body, ref in [("popc.b64 %r4, {a};", lambda v: bin(v).count("1")),
                      ("clz.b64 %r4, {a};", lambda v: 64 - v.bit_length())]:
        np.testing.assert_array_equal(run_map(body, ("u64", vals64), "u32"), [ref(int(v)) for v in vals64])


def _bfe_reference(a: int, pos: int, length: int, bits: int, signed: bool) -> int:
    pos, length = pos & 0xFF, length & 0xFF
    msb = bits - 1
    sbit = 0 if not signed or length == 0 else (a >> min(pos + length - 1, msb)) & 1
    out = 0
    for i in range(bits):
        bit = (a >> (pos + i)) & 1 if i < length and pos + i <= msb else sbit
        out |= bit << i
    return out


@pytest.mark.parametrize("t", ["u32", "s32", "u64", "s64"])
def test_bfe_against_the_ptx_pseudocode(t):
    rng = np.random.default_rng(4)
    bits = int(t[1:])
    a = rng.integers(0, 2 ** 63, 60, dtype=np.uint64) | (rng.integers(0, 2, 60).astype(np.uint64) << np.uint64(63))
    a = a & np.uint64((1 << bits) - 1)
    pos = rng.integers(0, 70, 60).astype(np.uint32)
    length = rng.integers(0, 70, 60).astype(np.uint32)
    pos[:3], length[:3] = [3, 0, 300], [0, 300, 5]
    at = a.astype(_np_int(f"u{bits}")).view(_np_int(t))
    out = run_map("bfe." + t + " {d}, {a}, {b}, {c};", (t, at), t, b=("u32", pos), c=("u32", length))
    expected = [_bfe_reference(int(x), int(p), int(n), bits, t[0] == "s") for x, p, n in zip(a, pos, length)]
    np.testing.assert_array_equal(out.view(_np_int(f"u{bits}")), np.array(expected, np.uint64))


def test_bfi_prmt_and_lop3():
    f = _u([0xAB, 0xFFFF, 0x1], "u32")
    b = _u([0x12345678, 0, 0xFFFFFFFF], "u32")
    out = run_map("bfi.b32 {d}, {a}, {b}, 8, 8;", ("u32", f), "u32", b=("u32", b))
    np.testing.assert_array_equal(out, _u([0x1234AB78, 0xFF00, 0xFFFF01FF], "u32"))
    out = run_map("prmt.b32 {d}, {a}, {b}, 0x3210;", ("u32", b), "u32", b=("u32", f))
    np.testing.assert_array_equal(out, b)
    out = run_map("prmt.b32 {d}, {a}, {b}, 0x8884;", ("u32", _u([0x80, 0x7F], "u32")), "u32",
                  b=("u32", _u([0x11223344, 0x55667788], "u32")))
    np.testing.assert_array_equal(out, _u([0xFFFFFF44, 0x00000088], "u32"))
    out = run_map("lop3.b32 {d}, {a}, {b}, {c}, 0x96;", ("u32", f), "u32", b=("u32", b), c=("u32", b))
    np.testing.assert_array_equal(out, f)   # 0x96 is a ^ b ^ c


def test_narrow_loads_stores_and_integer_cvt():
    vals = _u([-1, 127, -128, 5], "s8")
    np.testing.assert_array_equal(run_map("cvt.s32.s8 {d}, {a};", ("s8", vals), "s32"), [-1, 127, -128, 5])
    np.testing.assert_array_equal(run_map("cvt.u32.u8 {d}, {a};", ("u8", vals.view(np.uint8)), "u32"),
                                  [255, 127, 128, 5])
    wide = _u([0x12345678, -1, 300, -300], "s32")
    np.testing.assert_array_equal(run_map("cvt.u16.u32 {d}, {a};", ("s32", wide), "u16"),
                                  _u([0x5678, 0xFFFF, 300, 65236], "u16"))
    np.testing.assert_array_equal(run_map("cvt.sat.s8.s32 %rs4, {a};", ("s32", wide), "s16"),
                                  [127, -1, 127, -128])
    np.testing.assert_array_equal(run_map("cvt.sat.u8.s32 %rs4, {a};", ("s32", wide), "u16"),
                                  [255, 0, 255, 0])
    np.testing.assert_array_equal(run_map("cvt.s64.s32 {d}, {a};", ("s32", wide), "s64"),
                                  [0x12345678, -1, 300, -300])
    np.testing.assert_array_equal(run_map("cvt.u64.u32 {d}, {a};", ("s32", wide), "u64"),
                                  _u([0x12345678, 0xFFFFFFFF, 300, 2 ** 32 - 300], "u64"))
    np.testing.assert_array_equal(run_map("mul.wide.s32 {d}, {a}, 65536;", ("s32", wide), "s64"),
                                  np.array([0x12345678, -1, 300, -300], np.int64) * 65536)
    np.testing.assert_array_equal(run_map("mul.wide.u16 {d}, {a}, 65535;", ("u16", _u([65535], "u16")), "u32"),
                                  [65535 * 65535])


# ---- floating point ----------------------------------------------------------------------------

F32_SPECIAL = np.array([1.5, 2.5, -1.5, -2.5, 1e10, -1e10, np.nan, np.inf, -np.inf, 0.49999997, -0.7],
                       np.float32)


@pytest.mark.parametrize("mode, dst, expected", [
    ("rni", "s32", [2, 2, -2, -2, 2 ** 31 - 1, -2 ** 31, 0, 2 ** 31 - 1, -2 ** 31, 0, -1]),
    ("rzi", "s32", [1, 2, -1, -2, 2 ** 31 - 1, -2 ** 31, 0, 2 ** 31 - 1, -2 ** 31, 0, 0]),
    ("rmi", "s32", [1, 2, -2, -3, 2 ** 31 - 1, -2 ** 31, 0, 2 ** 31 - 1, -2 ** 31, 0, -1]),
    ("rpi", "s32", [2, 3, -1, -2, 2 ** 31 - 1, -2 ** 31, 0, 2 ** 31 - 1, -2 ** 31, 1, 0]),
    ("rzi", "u32", [1, 2, 0, 0, 2 ** 32 - 1, 0, 0, 2 ** 32 - 1, 0, 0, 0]),
    # NaN -> 64-bit integer gives 0x8000000000000000 on the H100 (measured), 0 for narrower types
    ("rni", "s64", [2, 2, -2, -2, 10 ** 10, -10 ** 10, -2 ** 63, 2 ** 63 - 1, -2 ** 63, 0, -1]),
    ("rpi", "u64", [2, 3, 0, 0, 10 ** 10, 0, 2 ** 63, 2 ** 64 - 1, 0, 1, 0]),
    ("rni", "s16", [2, 2, -2, -2, 32767, -32768, 0, 32767, -32768, 0, -1]),
])
def test_cvt_float_to_int_rounds_saturates_and_maps_nan_as_the_gpu_does(mode, dst, expected):
    out = run_map(f"cvt.{mode}.{dst}.f32 {{d}}, {{a}};", ("f32", F32_SPECIAL), dst)
    np.testing.assert_array_equal(out, _u(expected, dst))


def test_cvt_f64_to_f32_in_every_rounding_mode():
    one_up = np.nextafter(np.float32(1), np.float32(2))
    big = np.finfo(np.float32).max
    x = np.array([1 + 2 ** -30, -1 - 2 ** -30, 1e300, -1e300, 1.0, 2 ** -160, np.nan], np.float64)
    tiny = np.float32(2 ** -149)
    expected = {
        "rn": [1, -1, np.inf, -np.inf, 1, 0, np.nan],
        "rz": [1, -1, big, -big, 1, 0, np.nan],
        "rm": [1, -one_up, big, -np.inf, 1, 0, np.nan],
        "rp": [one_up, -1, np.inf, -big, 1, tiny, np.nan],
    }
    for mode, want in expected.items():
        out = run_map(f"cvt.{mode}.f32.f64 {{d}}, {{a}};", ("f64", x), "f32")
        np.testing.assert_array_equal(out, np.array(want, np.float32), err_msg=mode)


def test_cvt_between_float16_bfloat16_and_float32():
    rng = np.random.default_rng(5)
    x = (rng.standard_normal(500) * np.exp2(rng.integers(-30, 20, 500))).astype(np.float32)
    x[:4] = [65520.0, 65519.0, 1e-8, -3e-5]
    out = run_map("cvt.rn.f16.f32 {d}, {a};", ("f32", x), "f16")
    np.testing.assert_array_equal(out, x.astype(np.float16))
    out = run_map("cvt.rn.bf16.f32 {d}, {a};", ("f32", x), "bf16")
    np.testing.assert_array_equal(out.astype(np.float32), x.astype(BF16).astype(np.float32))
    out = run_map("cvt.rz.f16.f32 {d}, {a};", ("f32", np.array([1.0019, -1.0009, 70000.0], np.float32)), "f16")
    np.testing.assert_array_equal(out, np.array([1.0009765625, -1.0, 65504.0], np.float16))
    h = x.astype(np.float16)
    np.testing.assert_array_equal(run_map("cvt.f32.f16 {d}, {a};", ("f16", h), "f32"), h.astype(np.float32))
    b = x.astype(BF16)
    np.testing.assert_array_equal(run_map("cvt.f32.bf16 {d}, {a};", ("bf16", b), "f32"), b.astype(np.float32))


def test_cvt_int_to_float_and_sat():
    ints = _u([16777217, -16777219, 2 ** 31 - 1, 7], "s32")
    np.testing.assert_array_equal(run_map("cvt.rn.f32.s32 {d}, {a};", ("s32", ints), "f32"),
                                  ints.astype(np.float32))
    np.testing.assert_array_equal(run_map("cvt.rz.f32.s32 {d}, {a};", ("s32", ints), "f32"),
                                  np.array([16777216, -16777218, 2147483520, 7], np.float32))
    big = _u([2 ** 64 - 1, 2 ** 53 + 1], "u64")
    np.testing.assert_array_equal(run_map("cvt.rn.f64.u64 {d}, {a};", ("u64", big), "f64"),
                                  [2.0 ** 64, 2.0 ** 53])
    x = np.array([-0.5, 0.25, 3.0, np.nan], np.float32)
    np.testing.assert_array_equal(run_map("cvt.sat.f32.f32 {d}, {a};", ("f32", x), "f32"), [0, 0.25, 1, 0])
    np.testing.assert_array_equal(run_map("cvt.rni.f32.f32 {d}, {a};", ("f32", F32_SPECIAL), "f32"),
                                  np.rint(F32_SPECIAL))


def test_cvt_64_bit_int_to_bf16_rounds_once():
    # found by tests/test_differential.py: 2^60 + 2^52 + 1 is just above the midpoint of two
    # bf16 values, but its float64 (2^60 + 2^52) is the midpoint, which rounds to even (2^60)
    hand = [(1 << 60) + (1 << 52) + 1, (1 << 60) + (1 << 52), -((1 << 60) + (1 << 52) + 1),
            2 ** 63 - 1, -2 ** 63, 16842753]
    want = [2.0 ** 60 + 2.0 ** 53, 2.0 ** 60, -(2.0 ** 60 + 2.0 ** 53), 2.0 ** 63, -2.0 ** 63,
            16908288.0]
    out = run_map("cvt.rn.bf16.s64 {d}, {a};", ("s64", _u(hand, "s64")), "bf16")
    np.testing.assert_array_equal(out.astype(np.float64), want)
    rng = np.random.default_rng(11)
    for t in ("s64", "u64"):
        info = np.iinfo(_np_int(t))
        ints = rng.integers(info.min, info.max, 300, dtype=_np_int(t), endpoint=True)
        ints = ints >> rng.integers(0, 50, 300).astype(ints.dtype)
        ints[:2] = [(1 << 60) + (1 << 52) + 1, (1 << 62) + (1 << 54) + 3]
        out = run_map(f"cvt.rn.bf16.{t} {{d}}, {{a}};", (t, ints), "bf16")
        expected = [_round_fraction(Fraction(int(n)), ml_dtypes.bfloat16) for n in ints]
        np.testing.assert_array_equal(out.astype(np.float64), np.array(expected, np.float64))


def test_half_precision_arithmetic():
    rng = np.random.default_rng(6)
    a = rng.standard_normal(400).astype(np.float16)
    b = (rng.standard_normal(400) * 100).astype(np.float16)
    c = rng.standard_normal(400).astype(np.float16)
    wide = [v.astype(np.float64) for v in (a, b, c)]
    out = run_map("add.rn.f16 {d}, {a}, {b};", ("f16", a), "f16", b=("f16", b))
    np.testing.assert_array_equal(out, (wide[0] + wide[1]).astype(np.float16))
    out = run_map("mul.f16 {d}, {a}, {b};", ("f16", a), "f16", b=("f16", b))
    np.testing.assert_array_equal(out, (wide[0] * wide[1]).astype(np.float16))
    out = run_map("fma.rn.f16 {d}, {a}, {b}, {c};", ("f16", a), "f16", b=("f16", b), c=("f16", c))
    np.testing.assert_array_equal(out, [_round_fraction(Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z)), np.float16)
                                        for x, y, z in zip(a, b, c)])
    ab, bb = a.astype(BF16), b.astype(BF16)
    out = run_map("mul.rn.bf16 {d}, {a}, {b};", ("bf16", ab), "bf16", b=("bf16", bb))
    np.testing.assert_array_equal(out.astype(np.float32),
                                  (ab.astype(np.float32) * bb.astype(np.float32)).astype(BF16).astype(np.float32))
    pa, pb = a.view(np.uint32), b.view(np.uint32)
    out = run_map("add.rn.f16x2 {d}, {a}, {b};", ("f16x2", pa), "f16x2", b=("f16x2", pb))
    np.testing.assert_array_equal(out.view(np.float16), (wide[0] + wide[1]).astype(np.float16))


def _round_fraction(exact: Fraction, dtype):
    """Correct rounding (nearest even) of an exact rational to a NumPy float type."""
    guess = dtype(float(exact))
    if not np.isfinite(guess):
        return guess
    lo, hi = np.nextafter(guess, dtype(-np.inf)), np.nextafter(guess, dtype(np.inf))
    best = min((guess, lo, hi), key=lambda v: (abs(Fraction(float(v)) - exact),
                                               int(np.asarray(v).view(f"uint{8 * np.dtype(dtype).itemsize}")) & 1))
    return best


def test_fma_is_correctly_rounded():
    rng = np.random.default_rng(7)
    for dtype, t in ((np.float32, "f32"), (np.float64, "f64")):
        a = rng.standard_normal(300).astype(dtype)
        b = rng.standard_normal(300).astype(dtype)
        c = -(a * b)                                        # cancellation: the product's rounding error
        c[::3] = rng.standard_normal(100).astype(dtype) * dtype(1e-7)
        c[1::3] += np.nextafter(c[1::3], dtype(np.inf)) - c[1::3]
        out = run_map(f"fma.rn.{t} {{d}}, {{a}}, {{b}}, {{c}};", (t, a), t, b=(t, b), c=(t, c))
        exact = [Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z)) for x, y, z in zip(a, b, c)]
        np.testing.assert_array_equal(out, [_round_fraction(e, dtype) for e in exact], err_msg=t)


def test_correctly_rounded_and_approximate_math():
    rng = np.random.default_rng(8)
    x = np.abs(rng.standard_normal(300)).astype(np.float32) * 10 + np.float32(1e-3)
    y = rng.standard_normal(300).astype(np.float32)
    np.testing.assert_array_equal(run_map("div.rn.f32 {d}, {a}, {b};", ("f32", y), "f32", b=("f32", x)), y / x)
    np.testing.assert_array_equal(run_map("sqrt.rn.f32 {d}, {a};", ("f32", x), "f32"), np.sqrt(x))
    np.testing.assert_array_equal(run_map("rcp.rn.f64 {d}, {a};", ("f64", x.astype(np.float64)), "f64"),
                                  1 / x.astype(np.float64))
    x64 = x.astype(np.float64)
    for op, ref in (("ex2", np.exp2(-x64)), ("lg2", np.log2(x64)), ("sin", np.sin(x64)),
                    ("cos", np.cos(x64)), ("rsqrt", 1 / np.sqrt(x64)), ("tanh", np.tanh(x64 / 10))):
        arg = {"ex2": -x, "tanh": x / np.float32(10)}.get(op, x)
        out = run_map(f"{op}.approx.ftz.f32 {{d}}, {{a}};", ("f32", arg), "f32")
        np.testing.assert_allclose(out, ref, rtol=2 ** -22, atol=2 ** -22, err_msg=op)
    out = run_map("div.approx.f32 {d}, {a}, {b};", ("f32", y), "f32", b=("f32", x))
    np.testing.assert_allclose(out, y / x, rtol=2 ** -22)
    # a * (1 / b): past 2^126 the reciprocal is flushed, the quotient a signed 0 (NaN for inf)
    a = np.array([1, -3, np.inf, 6, 5], np.float32)
    b = np.array([1e38, 2.0**127, 2.0**127, -2.0**126 * 1.5, 2.0**126], np.float32)
    out = run_map("div.approx.f32 {d}, {a}, {b};", ("f32", a), "f32", b=("f32", b))
    assert list(out[:2]) == [0.0, 0.0] and np.signbit(out[1]) and np.isnan(out[2])
    assert out[3] == 0.0 and np.signbit(out[3]) and out[4] == np.float32(5 / 2.0**126)


def test_setp_ordered_unordered_and_nan_rules():
    a = np.array([1, np.nan, 2, np.nan, 0.0, -0.0], np.float32)
    b = np.array([2, 1, 2, np.nan, -0.0, 3], np.float32)
    cases = {
        "lt": [1, 0, 0, 0, 0, 1], "ltu": [1, 1, 0, 1, 0, 1], "ne": [1, 0, 0, 0, 0, 1],
        "neu": [1, 1, 0, 1, 0, 1], "eq": [0, 0, 1, 0, 1, 0], "equ": [0, 1, 1, 1, 1, 0],
        "geu": [0, 1, 1, 1, 1, 0], "num": [1, 0, 1, 0, 1, 1], "nan": [0, 1, 0, 1, 0, 0],
    }
    for cmp, want in cases.items():
        out = run_map(f"setp.{cmp}.f32 {{d}}, {{a}}, {{b}};", ("f32", a), "pred", b=("f32", b))
        np.testing.assert_array_equal(out, want, err_msg=cmp)
    out = run_map("setp.lt.and.f32 %p5|{d}, {a}, {b}, {c};", ("f32", a), "pred", b=("f32", b),
                  c=("pred", np.array([1, 1, 1, 0, 0, 1], np.uint8)))
    np.testing.assert_array_equal(out, [0, 1, 1, 0, 0, 0])    # the second result: !(a < b) & c
    ints = _u([-1, 5], "s32")
    out = run_map("setp.lo.s32 {d}, {a}, {b};", ("s32", ints), "pred", b=("s32", _u([3, 7], "s32")))
    np.testing.assert_array_equal(out, [0, 1])                 # lo compares unsigned: 0xFFFFFFFF > 3
    out = run_map("min.f32 {d}, {a}, {b};", ("f32", a), "f32", b=("f32", b))
    np.testing.assert_array_equal(out, [1, 1, 2, np.nan, -0.0, -0.0])
    assert np.signbit(out[4])
    out = run_map("max.f32 {d}, {a}, {b};", ("f32", a), "f32", b=("f32", b))
    np.testing.assert_array_equal(out, [2, 1, 2, np.nan, 0.0, 3])
    assert not np.signbit(out[4])


def test_float_misc_ops():
    x = np.array([1e-40, -3.0, np.nan, np.inf, 0.0, 2e-39], np.float32)
    out = run_map("neg.ftz.f32 {d}, {a};", ("f32", x), "f32")
    np.testing.assert_array_equal(out, [-0.0, 3.0, np.nan, -np.inf, -0.0, -0.0])
    assert np.signbit(out[0])
    np.testing.assert_array_equal(run_map("abs.f32 {d}, {a};", ("f32", x), "f32"), np.abs(x))
    np.testing.assert_array_equal(run_map("testp.subnormal.f32 {d}, {a};", ("f32", x), "pred"), [1, 0, 0, 0, 0, 1])
    np.testing.assert_array_equal(run_map("testp.normal.f32 {d}, {a};", ("f32", x), "pred"), [0, 1, 0, 0, 0, 0])
    np.testing.assert_array_equal(run_map("testp.finite.f32 {d}, {a};", ("f32", x), "pred"), [1, 1, 0, 0, 1, 1])
    out = run_map("copysign.f32 {d}, {a}, {b};", ("f32", np.array([-1, 1], np.float32)), "f32",
                  b=("f32", np.array([5, -6], np.float32)))
    np.testing.assert_array_equal(out, [-5, 6])
    out = run_map("add.ftz.f32 {d}, {a}, {b};", ("f32", x[:2]), "f32", b=("f32", x[:2]))
    np.testing.assert_array_equal(out, [0.0, -6.0])
    out = run_map("add.sat.f32 {d}, {a}, {b};", ("f32", x[1:3]), "f32", b=("f32", np.float32([3.5, 1])))
    np.testing.assert_array_equal(out, [0.5, 0.0])
    out = run_map("selp.f32 {d}, {a}, {b}, %p5;\n    setp.gt.f32 %p5, {a}, 0f00000000;\n"
                  "    selp.f32 {d}, {a}, {b}, %p5;", ("f32", x[1:2]), "f32", b=("f32", np.float32([9])))
    np.testing.assert_array_equal(out, [9.0])
    out = run_map("mov.b32 %r4, {a};\n    and.b32 {d}, %r4, 0x7fffffff;", ("f32", np.float32([-2.0])), "u32")
    np.testing.assert_array_equal(out, [0x40000000])


# ---- assembling the hand-written PTX -----------------------------------------------------------

def _ptxas() -> str | None:
    found = shutil.which("ptxas")
    if found:
        return found
    try:
        import nvidia.cu13
        candidate = Path(nvidia.cu13.__path__[0]) / "bin" / "ptxas"
        return str(candidate) if candidate.exists() else None
    except ImportError:
        return None


MAP_SAMPLES = [
    map_ptx("bfe.s64 {d}, {a}, {b}, {c};", "s64", "s64", "u32", "u32"),
    map_ptx("fma.rn.f16x2 {d}, {a}, {b}, {c};", "f16x2", "f16x2", "f16x2", "f16x2"),
    map_ptx("mul.rn.bf16 {d}, {a}, {b};", "bf16", "bf16", "bf16"),
    map_ptx("setp.lt.and.f32 %p5|{d}, {a}, {b}, {c};", "f32", "pred", "f32", "pred"),
    map_ptx("cvt.rp.f32.f64 {d}, {a};", "f64", "f32"),
    map_ptx("cvt.rni.s16.f32 {d}, {a};", "f32", "s16"),
    map_ptx("lop3.b32 {d}, {a}, {b}, {c}, 0x96;", "u32", "u32", "u32", "u32"),
    map_ptx("ex2.approx.ftz.f32 {d}, {a};", "f32", "f32"),
]


@pytest.mark.parametrize("index", range(len(HAND_WRITTEN) + len(MAP_SAMPLES)))
def test_hand_written_ptx_assembles_with_ptxas(index, tmp_path):
    ptxas = _ptxas()
    if ptxas is None:
        pytest.skip("ptxas is not available")
    ptx = (HAND_WRITTEN + MAP_SAMPLES)[index]
    path = tmp_path / "k.ptx"
    path.write_text(ptx)
    result = subprocess.run([ptxas, "-arch=sm_90", str(path), "-o", str(tmp_path / "k.cubin")],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    Module(ptx)


# ---- nvcc-generated PTX ------------------------------------------------------------------------

CUDA_SOURCE = r"""
#include <cstdio>
#include <cuda_fp16.h>
extern "C" __global__ void saxpy(int n, float a, const float* x, float* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
extern "C" __global__ void block_sum(const float* in, float* out, int n) {
    __shared__ float s[256];
    int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    s[t] = i < n ? in[i] : 0.f;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) { if (t < k) s[t] += s[t + k]; __syncthreads(); }
    if (t == 0) out[blockIdx.x] = s[0];
}
extern "C" __global__ void warp_sum(const int* in, int* out, unsigned* ballots) {
    int v = in[threadIdx.x];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
    unsigned b = __ballot_sync(0xffffffff, in[threadIdx.x] & 1);
    if ((threadIdx.x & 31) == 0) { out[threadIdx.x / 32] = v; ballots[threadIdx.x / 32] = b; }
}
extern "C" __global__ void histogram(const int* in, int* hist, int* old, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) old[i] = atomicAdd(&hist[in[i]], 1);
}
extern "C" __global__ void mixed(const double* x, long long* q, unsigned short* h, float* f, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    double v = x[i];
    q[i] = (long long)v / 3 + (long long)(v * v) % 7;
    h[i] = __half_as_ushort(__float2half_rn((float)v));
    f[i] = sqrtf(fabsf((float)v)) + __int_as_float(__float_as_int((float)v) ^ 0x80000000);
}
extern "C" __global__ void hello(int k) {
    if (threadIdx.x < 3) printf("thread %d of %d: %.3f %s\n", threadIdx.x, k, 0.5 * threadIdx.x, "done");
}
extern "C" __global__ void grid2d(int* out, int w, int h) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < w && y < h) out[y * w + x] = x * 100 + y;
}
"""


@pytest.fixture(scope="module")
def nvcc_module(tmp_path_factory):
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc is not on PATH")
    work = tmp_path_factory.mktemp("nvcc")
    (work / "k.cu").write_text(CUDA_SOURCE)
    subprocess.run([nvcc, "-ptx", "-arch=sm_80", "-lineinfo", "-o", str(work / "k.ptx"), str(work / "k.cu")],
                   check=True, capture_output=True)
    return Module((work / "k.ptx").read_text())


def test_nvcc_saxpy_and_reduction(nvcc_module):
    rng = np.random.default_rng(9)
    n = 1000
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    expected = (np.float64(2.5) * x + y).astype(np.float32)
    run_kernel(nvcc_module, "saxpy", 4, 256, [n, 2.5, x, y])
    np.testing.assert_array_equal(y, expected)
    out = np.zeros(4, np.float32)
    run_kernel(nvcc_module, "block_sum", 4, 256, [x, out, n])
    np.testing.assert_allclose(out, np.pad(x, (0, 24)).reshape(4, 256).sum(axis=1), rtol=1e-5)


def test_nvcc_warp_sum_and_histogram(nvcc_module):
    inp = np.arange(64, dtype=np.int32) * 3
    sums, ballots = np.zeros(2, np.int32), np.zeros(2, np.uint32)
    run_kernel(nvcc_module, "warp_sum", 1, 64, [inp, sums, ballots])
    np.testing.assert_array_equal(sums, inp.reshape(2, 32).sum(axis=1))
    np.testing.assert_array_equal(ballots, [0xAAAAAAAA, 0xAAAAAAAA])
    data = np.random.default_rng(10).integers(0, 16, 3000).astype(np.int32)
    hist, old = np.zeros(16, np.int32), np.zeros(3000, np.int32)
    run_kernel(nvcc_module, "histogram", 12, 256, [data, hist, old, 3000])
    np.testing.assert_array_equal(hist, np.bincount(data, minlength=16))
    for b in range(16):
        np.testing.assert_array_equal(old[data == b], np.arange((data == b).sum()))


def test_nvcc_mixed_types(nvcc_module):
    x = np.array([10.7, -10.7, 1e3, -3.25, 65536.5], np.float64)
    q, h, f = np.zeros(5, np.int64), np.zeros(5, np.uint16), np.zeros(5, np.float32)
    run_kernel(nvcc_module, "mixed", 1, 32, [x, q, h, f, 5])
    trunc = np.trunc(x).astype(np.int64)
    np.testing.assert_array_equal(q, [int(t / 3) + int(math.fmod(int(v * v), 7)) for t, v in zip(trunc, x)])
    np.testing.assert_array_equal(h, x.astype(np.float32).astype(np.float16).view(np.uint16))
    xf = x.astype(np.float32)
    np.testing.assert_array_equal(f, np.sqrt(np.abs(xf)) - xf)


def test_nvcc_printf_and_2d_grid(nvcc_module, capsys):
    run_kernel(nvcc_module, "hello", 1, 8, [7])
    assert capsys.readouterr().out.splitlines() == [
        f"thread {i} of 7: {0.5 * i:.3f} done" for i in range(3)]
    out = np.full(30 * 20, -1, np.int32)
    run_kernel(nvcc_module, "grid2d", (4, 3), (8, 8), [out, 30, 20])
    y, x = np.mgrid[0:20, 0:30]
    np.testing.assert_array_equal(out.reshape(20, 30), 100 * x + y)


def test_nvcc_out_of_bounds_points_at_the_cuda_line(nvcc_module):
    x, y = np.zeros(10, np.float32), np.zeros(10, np.float32)
    with pytest.raises(SimulatorError, match=r"k\.cu:6: out-of-bounds global load"):
        run_kernel(nvcc_module, "saxpy", 1, 32, [20, 1.0, x, y])


# ---- the race check against a model that keeps every access ------------------------------------

class _FakeBatch:
    """What _SharedRaces reads of a batch: one block of T threads, `size` bytes of shared."""

    def __init__(self, T: int, size: int):
        from types import SimpleNamespace
        self.T, self.B, self.first_block = T, 1, 0
        self.shared = np.zeros(size, np.uint8)
        self.launch = SimpleNamespace(shared_pad=size, block=(T, 1, 1), grid=(1, 1, 1))
        self.kernel = SimpleNamespace(where=lambda ins: "k.py:1")

    def thread_index(self, t: int) -> str:
        return f"({t},0,0)"

    def block_index(self, b: int) -> str:
        return f"({b},0,0)"


def _model_race(history, epochs, what, lanes, words):
    """Every earlier access since the barrier: the threads one of these accesses races with."""
    from ptxpy.runtime.simulator import _CONFLICTS
    found = set()
    for t, word in zip(lanes, words):
        for (o, kind, w, epoch) in history:
            ordered = o // 32 == t // 32 and epoch < epochs[t // 32]
            if w == word and kind in _CONFLICTS[what] and o != t and not ordered:
                found.add(o)
    return found


@pytest.mark.parametrize("seed", range(6))
def test_the_race_check_finds_what_a_model_keeping_every_access_finds(seed):
    """Random shared accesses (loads, stores, atomics, compare-and-swaps of 4 bytes at 3 words,
    by random lanes of a 80-thread block) with random `syncwarp`s of single warps and block
    barriers: the check raises at the first access where the model finds an unordered other
    thread, naming one the model names."""
    from ptxpy.runtime.simulator import _SharedRaces
    rng_ = np.random.default_rng(seed)
    checked = 0
    for _ in range(150):
        T, n_words = 80, 3
        races = _SharedRaces(_FakeBatch(T, 4 * n_words))
        history, epochs = [], [0, 0, 0]
        for step in range(12):
            roll = rng_.random()
            if roll < 0.1:
                races.release(np.array([True]))
                history = []
                continue
            if roll < 0.3:
                warp = int(rng_.integers(3))
                races.warp_synced(np.arange(3) == warp)
                epochs[warp] += 1
                continue
            what = str(rng_.choice(["load", "store", "atomic", "cas"]))
            count = int(rng_.integers(1, 4))
            lanes = rng_.choice(T, count, replace=False)
            if what == "store":
                words = rng_.choice(n_words, count, replace=False) if count <= n_words else None
                if words is None:
                    continue
            else:
                words = rng_.integers(0, n_words, count)
            expected = _model_race(history, epochs, what, lanes, words)
            try:
                races.access(what, np.asarray(words) * 4, np.asarray(lanes), 4, None)
            except SimulatorError as err:
                other = int(re.search(r"that thread \((\d+),0,0\)", str(err)).group(1))
                assert other in expected, (str(err), expected)
                checked += 1
                break
            assert not expected, (what, lanes, words, history, epochs)
            history += [(int(t), what, int(w), epochs[int(t) // 32]) for t, w in zip(lanes, words)]
    assert checked > 50
