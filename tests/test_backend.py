"""The backend (ir.Function -> PTX): hand-built IR kernels, each assembled with ptxas for
sm_80 and sm_90, plus readability checks on the text and the out-of-SSA copy sequencing."""
from __future__ import annotations

import random
import re

import numpy as np
import pytest

import ptxpy
from ptxpy.transpiler import ir
from ptxpy.transpiler.abi import ParamSpec
from ptxpy.transpiler.backend import BackendError, emit_ptx
from ptxpy.transpiler.backend.machine import Imm, VReg
from ptxpy.transpiler.backend.outssa import sequentialise
from ptxpy.transpiler.ptxas import assemble, find_ptxas
from ptxpy.transpiler.verify import verify
from ptxpy.types import (SCALARS, bf16, bool_, f16, f32, f64, i8, i16, i32, i64, u8, u16, u32,
                         u64)

ARCHS = ("sm_80", "sm_90")
needs_ptxas = pytest.mark.skipif(find_ptxas() is None, reason="ptxas not found")


# --- a small IR builder ----------------------------------------------------------------------
class Builder:
    def __init__(self, name: str, params: list, source: str = "", arch: str = "sm_90"):
        self.func = ir.Function(name, params, arch=arch, filename=f"/src/{name}.py",
                                source_lines=source.splitlines())
        self.block = None
        self.line = 1

    def new_block(self, hint: str) -> ir.Block:
        return self.func.new_block(hint)

    def at(self, block: ir.Block, line: int | None = None) -> "Builder":
        self.block = block
        self.line = line or self.line
        return self

    def __call__(self, opcode: str, type, /, *args, **attrs) -> ir.Instr:
        args = [ir.Const(type, a) if not isinstance(a, ir.Value) else a for a in args]
        return self.block.append(ir.Instr(opcode, type, args, attrs, loc=(self.line, 4)))

    def const(self, t, value) -> ir.Const:
        return ir.Const(t, value)

    def param(self, name: str, t, ptr: bool = False) -> ir.Instr:
        return self("param", t, name=f"{self.func.name}_{name}", **({"ptr": True} if ptr else {}))

    def index_addr(self, base, index, elem) -> ir.Instr:
        offset = self("mul_wide", i64, index, ir.Const(i32, elem.nbytes))
        return self("add", i64, base, offset)

    def phi(self, t) -> ir.Instr:
        return self.block.append(ir.Instr("phi", t, [], loc=(self.line, 4)))

    def br(self, target) -> None:
        term = self.block.append(ir.Instr("br", None, loc=(self.line, 4)))
        ir.set_targets(term, [target])

    def cbr(self, cond, then, else_) -> None:
        term = self.block.append(ir.Instr("cbr", None, [cond], loc=(self.line, 4)))
        ir.set_targets(term, [then, else_])

    def ret(self) -> None:
        self.block.append(ir.Instr("ret", None, loc=(self.line, 4)))

    def finish(self, phis: dict | None = None) -> ir.Function:
        for phi, incoming in (phis or {}).items():
            phi.args = [incoming[p] for p in phi.block.preds]
        verify(self.func)
        return self.func


def array(name, t, rank=1, written=False):
    return ParamSpec(name, "array", t, rank, written=written)


def scalar(name, t, by_ref=False):
    return ParamSpec(name, "scalar", t, by_ref=by_ref)


def global_id(b: Builder) -> ir.Instr:
    block_idx, block_dim = b("sreg", i32, name="ctaid.x"), b("sreg", i32, name="ntid.x")
    thread = b("sreg", i32, name="tid.x")
    return b("add", i32, b("mul", i32, block_idx, block_dim), thread)


REGISTERS: dict[tuple, int] = {}


def compile_all(func: ir.Function, archs=ARCHS) -> dict[str, str]:
    """PTX per arch; assembles each with ptxas (when present) and records its register count."""
    texts = {}
    for arch in archs:
        func.arch = arch
        ptx = texts[arch] = emit_ptx(func)
        assert f".target {arch}\n" in ptx
        if find_ptxas():
            ok, messages, regs = assemble(ptx, arch)
            assert ok, f"ptxas -arch={arch} failed:\n{messages}\n{numbered(ptx)}"
            REGISTERS[(func.name, arch)] = regs
    return texts


def numbered(ptx: str) -> str:
    return "\n".join(f"{n + 1:4} {line}" for n, line in enumerate(ptx.splitlines()))


def block_text(ptx: str, label: str) -> str:
    """The lines from `label:` up to the next label (or the end of the body)."""
    body = ptx.split(f"{label}:\n", 1)[1]
    return re.split(r"^\$BB\d+:$|^}$", body, maxsplit=1, flags=re.M)[0]


def instructions(text: str) -> list[str]:
    lines = [l.strip() for l in text.splitlines()]
    return [l for l in lines if l and not l.startswith(("//", ".", "$"))]


# --- kernels -----------------------------------------------------------------------------------
SAXPY_SRC = """def saxpy(x: Array[f32], y: Array[f32], a: f32, out: Array[f32]):
    i = ptxpy.global_id(0)
    if i < x.shape[0]:
        out[i] = a * x[i] + y[i]
"""


def saxpy() -> ir.Function:
    b = Builder("saxpy", [array("x", f32), array("y", f32), scalar("a", f32),
                          array("out", f32, written=True)], SAXPY_SRC)
    entry, body, done = b.new_block("entry"), b.new_block("then"), b.new_block("end")
    b.at(entry, 2)
    x, n, y = b.param("x", i64, ptr=True), b.param("x_shape0", i32), b.param("y", i64, ptr=True)
    a, out = b.param("a", f32), b.param("out", i64, ptr=True)
    i = global_id(b)
    b.line = 3
    b.cbr(b("cmp", bool_, i, n, pred="lt"), body, done)
    b.at(body, 4)
    xv = b("load", f32, b.index_addr(x, i, f32), space="global", nc=True)
    yv = b("load", f32, b.index_addr(y, i, f32), space="global", nc=True)
    b("store", None, b.index_addr(out, i, f32), b("add", f32, b("mul", f32, a, xv), yv),
      space="global")
    b.br(done)
    b.at(done).ret()
    return b.finish()


SUM_SRC = """def total(x: Array[f32], n: i32, out: Array[f32]):
    acc = 0.0
    for i in range(n):
        acc += x[i]
    out[0] = acc
"""


def sum_loop() -> ir.Function:
    b = Builder("total", [array("x", f32), scalar("n", i32), array("out", f32, written=True)],
                SUM_SRC)
    entry, head, body, done = (b.new_block(h) for h in ("entry", "head", "body", "done"))
    b.at(entry, 2)
    x, n, out = b.param("x", i64, ptr=True), b.param("n", i32), b.param("out", i64, ptr=True)
    b.br(head)
    b.at(head, 3)
    i, acc = b.phi(i32), b.phi(f32)
    b.cbr(b("cmp", bool_, i, n, pred="lt"), body, done)
    b.at(body, 4)
    acc2 = b("add", f32, acc, b("load", f32, b.index_addr(x, i, f32), space="global", nc=True))
    b.line = 3
    i2 = b("add", i32, i, 1)
    b.br(head)
    b.at(done, 5)
    b("store", None, out, acc, space="global")
    b.ret()
    return b.finish({i: {entry: b.const(i32, 0), body: i2},
                     acc: {entry: b.const(f32, 0.0), body: acc2}})


SWAP_SRC = """def swap(out: Array[i32], n: i32):
    a, b = 1, 2
    for k in range(n):
        a, b = b, a
    out[0] = a
    out[1] = b
"""


def swap_loop() -> ir.Function:
    """`a, b = b, a` in a loop: the latch's phi copies form a cycle (the swap problem)."""
    b = Builder("swap", [array("out", i32, written=True), scalar("n", i32)], SWAP_SRC)
    entry, head, body, done = (b.new_block(h) for h in ("entry", "head", "body", "done"))
    b.at(entry, 2)
    out, n = b.param("out", i64, ptr=True), b.param("n", i32)
    b.br(head)
    b.at(head, 3)
    k, x, y = b.phi(i32), b.phi(i32), b.phi(i32)
    b.cbr(b("cmp", bool_, k, n, pred="lt"), body, done)
    b.at(body, 3)
    k2 = b("add", i32, k, 1)
    b.br(head)
    b.at(done, 5)
    b("store", None, out, x, space="global")
    b.line = 6
    b("store", None, b("add", i64, out, 4), y, space="global")
    b.ret()
    return b.finish({k: {entry: b.const(i32, 0), body: k2},
                     x: {entry: b.const(i32, 1), body: y},
                     y: {entry: b.const(i32, 2), body: x}})


BREAK_SRC = """def first_negative(x: Array[f32], n: i32, out: Array[i32]):
    i = 0
    while i < n:
        i += 1
        if x[i - 1] < 0.0:
            break
    out[0] = i
"""


def break_loop() -> ir.Function:
    """Two exits into one block with a phi: both edges are critical (the lost-copy problem)."""
    b = Builder("first_negative", [array("x", f32), scalar("n", i32),
                                   array("out", i32, written=True)], BREAK_SRC)
    entry, head, body, latch, done = (b.new_block(h) for h in
                                      ("entry", "head", "body", "latch", "done"))
    b.at(entry, 2)
    x, n, out = b.param("x", i64, ptr=True), b.param("n", i32), b.param("out", i64, ptr=True)
    b.br(head)
    b.at(head, 3)
    i = b.phi(i32)
    b.cbr(b("cmp", bool_, i, n, pred="lt"), body, done)
    b.at(body, 4)
    i2 = b("add", i32, i, 1)
    b.line = 5
    v = b("load", f32, b.index_addr(x, i, f32), space="global", nc=True)
    b.cbr(b("cmp", bool_, v, b.const(f32, 0.0), pred="lt"), done, latch)
    b.at(latch, 6)
    b.br(head)
    b.at(done, 7)
    result = b.phi(i32)
    b("store", None, out, result, space="global")
    b.ret()
    return b.finish({i: {entry: b.const(i32, 0), latch: i2},
                     result: {head: i, body: i2}})


ALL_TYPES = [bool_, i8, u8, i16, u16, i32, u32, i64, u64, f16, bf16, f32, f64]


def cvt_matrix() -> ir.Function:
    """One scalar parameter per type, converted to every type, stored to one array per type."""
    params = [scalar(f"s_{t.name}", t) for t in ALL_TYPES]
    params += [array(f"o_{t.name}", t, written=True) for t in ALL_TYPES]
    b = Builder("cvt_all", params)
    b.at(b.new_block("entry"), 1)
    values = {t: b.param(f"s_{t.name}", t) for t in ALL_TYPES}
    outs = {t: b.param(f"o_{t.name}", i64, ptr=True) for t in ALL_TYPES}
    for k, s in enumerate(ALL_TYPES):
        for t in ALL_TYPES:
            b.line = 2 + k
            value = b("cvt", t, values[s]) if s != t else values[s]
            addr = b("add", i64, outs[t], b.const(i64, k * t.nbytes)) if k else outs[t]
            b("store", None, addr, value, space="global")
    b.line = 20
    for mode in ("rni", "rmi", "rpi"):
        b("store", None, outs[i32], b("cvt", i32, values[f32], mode=mode), space="global")
    b("store", None, outs[f32], b("cvt", f32, values[f64], mode="rz"), space="global")
    b("store", None, outs[f16], b("cvt", f16, values[f32], mode="rm"), space="global")
    b("store", None, outs[bf16], b("bitcast", bf16, values[i16]), space="global")
    b("store", None, outs[f32], b("bitcast", f32, values[u32]), space="global")
    b("store", None, outs[u32], b("bitcast", u32, values[i32]), space="global")
    b.ret()
    return b.finish()


def half_arith(t) -> ir.Function:
    b = Builder(f"arith_{t.name}", [array("x", t), array("out", t, written=True),
                                   array("flags", bool_, written=True)])
    b.at(b.new_block("entry"), 1)
    x, out = b.param("x", i64, ptr=True), b.param("out", i64, ptr=True)
    flags = b.param("flags", i64, ptr=True)
    p, q = b("load", t, x, space="global"), b("load", t, b("add", i64, x, 2), space="global")
    results = [b(op, t, p, q) for op in ("add", "sub", "mul", "div", "min", "max", "copysign")]
    results += [b(op, t, p) for op in ("neg", "abs", "sqrt", "floor", "round", "ex2", "rsqrt")]
    results.append(b("fma", t, p, q, b.const(t, 1.5)))
    results.append(b("mul", t, p, b.const(t, 2.0)))
    cond = b("cmp", bool_, p, q, pred="lt")
    results.append(b("select", t, cond, p, b.const(t, 0.0)))
    for k, value in enumerate(results):
        b("store", None, b("add", i64, out, 2 * k) if k else out, value, space="global")
    tests = [cond, b("cmp", bool_, p, q, pred="ne"), b("isnan", bool_, p), b("isinf", bool_, q)]
    for k, value in enumerate(tests):
        b("store", None, b("add", i64, flags, k) if k else flags, value, space="global")
    b.ret()
    return b.finish()


def bool_ops() -> ir.Function:
    b = Builder("bools", [scalar("a", bool_), scalar("c", bool_), array("x", i32),
                          array("out", bool_, written=True), array("vals", i32, written=True)])
    b.at(b.new_block("entry"), 1)
    a, c = b.param("a", bool_), b.param("c", bool_)
    x, out, vals = (b.param(n, i64, ptr=True) for n in ("x", "out", "vals"))
    v = b("load", bool_, x, space="global")       # a byte 0/1 read as bool
    values = [b("and", bool_, a, c), b("or", bool_, a, v), b("xor", bool_, c, v), b("not", bool_, a)]
    values += [b("cmp", bool_, a, c, pred=p) for p in ("eq", "ne", "lt", "le", "gt", "ge")]
    values += [b("select", bool_, a, c, v), b("select", bool_, a, True, v),
               b("select", bool_, a, False, v), b("select", bool_, a, v, True),
               b("select", bool_, a, v, False), b("select", bool_, a, True, False)]
    for k, value in enumerate(values):
        b("store", None, b("add", i64, out, k) if k else out, value, space="global")
    n = b("load", i32, x, space="global")
    picked = b("select", i32, a, n, b.const(i32, -1))
    b("store", None, vals, picked, space="global")
    b("store", None, b("add", i64, vals, 4), b("cvt", i32, c), space="global")
    b.ret()
    return b.finish()


def int_ops() -> ir.Function:
    types = [i8, u8, i16, u16, i32, u32, i64, u64]
    params = [array(f"x_{t.name}", t, written=True) for t in types]
    b = Builder("ints", params + [array("flags", bool_, written=True)])
    b.at(b.new_block("entry"), 1)
    shift = b("sreg", i32, name="tid.x")
    flags = b.param("flags", i64, ptr=True)
    nflag = 0
    for t in types:
        base = b.param(f"x_{t.name}", i64, ptr=True)
        p = b("load", t, base, space="global")
        q = b("load", t, b("add", i64, base, t.nbytes), space="global")
        results = [b(op, t, p, q) for op in ("add", "sub", "mul", "div", "rem", "min", "max",
                                             "and", "or", "xor", "mul_hi")]
        results += [b(op, t, p) for op in ("neg", "abs", "not")]
        results += [b("shl", t, p, shift), b("shr", t, p, shift), b("fma", t, p, q, p),
                    b("add", t, p, b.const(t, 100)), b("mul", t, p, b.const(t, 3))]
        for k, value in enumerate(results):
            b("store", None, b("add", i64, base, (k + 2) * t.nbytes), value, space="global")
        for pred in ("lt", "ge", "eq"):
            flag = b("cmp", bool_, p, q, pred=pred)
            b("store", None, b("add", i64, flags, nflag), flag, space="global")
            nflag += 1
        if t.bits <= 32 and t.bits >= 16:
            wide = b("mul_wide", SCALARS[("i" if t.is_signed else "u") + str(2 * t.bits)], p, q)
            b("store", None, b("add", i64, base, 168), b("cvt", t, wide), space="global")
    b.ret()
    return b.finish()


def shared_reduce() -> ir.Function:
    """Shared memory, an addr_of folded into `[smem+off]`, and a barrier."""
    b = Builder("block_sum", [array("x", f32), array("out", f32, written=True)])
    b.func.arrays.append(ir.SharedDecl("smem_s", f32, 256))
    b.at(b.new_block("entry"), 1)
    x, out = b.param("x", i64, ptr=True), b.param("out", i64, ptr=True)
    tid = b("sreg", i32, name="tid.x")
    base = b("addr_of", i64, symbol="smem_s")
    slot = b.index_addr(base, tid, f32)
    b("store", None, slot, b("load", f32, b.index_addr(x, tid, f32), space="global"),
      space="shared")
    b.line = 2
    b("barrier", None)
    b.line = 3
    first = b("load", f32, base, space="shared")
    second = b("load", f32, b("add", i64, base, 4), space="shared")
    b("store", None, out, b("add", f32, first, second), space="global")
    b.ret()
    return b.finish()


def shared_addressing() -> ir.Function:
    """32-bit .shared addresses: an i64 offset needed in both widths (cvt.u32.u64), a mul_wide
    that a global address shares (recomputed in 32 bits), sub and 64-bit mul, a pointer phi.
    out[t] = x[t] + 2 * x[31 - t] for 32 threads."""
    b = Builder("shared32", [array("x", f32), array("out", f32, written=True)])
    b.func.arrays.append(ir.SharedDecl("smem_s", f32, 128))
    entry, loop, body, done = (b.new_block(n) for n in ("entry", "loop", "body", "done"))
    b.at(entry, 1)
    x, out = b.param("x", i64, ptr=True), b.param("out", i64, ptr=True)
    tid = b("sreg", i32, name="tid.x")
    base = b("addr_of", i64, symbol="smem_s")
    wide = b("cvt", i64, tid)
    off = b("shl", i64, wide, ir.Const(u32, 2))           # 4t, for x (64 bits) and s (32 bits)
    v = b("load", f32, b("add", i64, x, off), space="global")
    b("store", None, b("add", i64, base, off), v, space="shared")                # s[t] = x[t]
    scaled = b("mul_wide", i64, tid, ir.Const(i32, 4))    # 4t, for out and for s
    top = b("sub", i64, b("add", i64, base, 508), scaled)                       # &s[127 - t]
    b("store", None, top, b("mul", f32, v, b.const(f32, 2.0)), space="shared")
    b("barrier", None)
    start = b("add", i64, base, b("mul", i64, wide, ir.Const(i64, 4)))          # &s[t]
    b.br(loop)
    b.at(loop, 2)
    i, total, ptr = b.phi(i32), b.phi(f32), b.phi(i64)
    b.cbr(b("cmp", bool_, i, b.const(i32, 2), pred="lt"), body, done)
    b.at(body, 3)
    total2 = b("add", f32, total, b("load", f32, ptr, space="shared"))           # s[t + 96 i]
    i2 = b("add", i32, i, b.const(i32, 1))
    ptr2 = b("add", i64, ptr, b.const(i64, 384))
    b.br(loop)
    b.at(done, 4)
    b("store", None, b("add", i64, out, scaled), total, space="global")
    b.ret()
    zero = b.const(i32, 0)
    return b.finish({i: {entry: zero, body: i2}, total: {entry: b.const(f32, 0.0), body: total2},
                     ptr: {entry: start, body: ptr2}})


def atomics() -> ir.Function:
    b = Builder("atomics", [array("f", f32, written=True), array("n", i32, written=True),
                            array("u", u32, written=True), array("d", f64, written=True),
                            array("old", f32, written=True), array("h", f16, written=True)])
    b.at(b.new_block("entry"), 1)
    f, n, u, d, old, h = (b.param(p, i64, ptr=True) for p in ("f", "n", "u", "d", "old", "h"))
    b("store", None, old, b("atom", f32, f, b.const(f32, 1.0), op="add", space="global"),
      space="global")
    b("atom", f32, b("add", i64, f, 4), b.const(f32, 2.0), op="add", space="global")
    b("atom", f64, d, b.const(f64, 1.0), op="add", space="global")
    b("atom", f16, h, b.const(f16, 1.0), op="add", space="global")
    for k, op in enumerate(("add", "min", "max", "and", "or", "xor")):
        b("atom", i32, b("add", i64, n, 4 * k) if k else n, b.const(i32, 7), op=op, space="global")
    swapped = b("atom", i32, n, b.const(i32, 3), b.const(i32, 9), op="cas", space="global")
    exchanged = b("atom", i32, n, swapped, op="exch", space="global")
    b("store", None, b("add", i64, n, 32), exchanged, space="global")
    b("atom", u32, u, b.const(u32, 10), op="inc", space="global")
    b("store", None, b("add", i64, u, 4),
      b("atom", u32, u, b.const(u32, 10), op="dec", space="global"), space="global")
    b.ret()
    return b.finish()


def warp_ops() -> ir.Function:
    b = Builder("warp", [array("x", f32), array("out", f32, written=True),
                         array("votes", u32, written=True)])
    b.at(b.new_block("entry"), 1)
    x, out, votes = (b.param(p, i64, ptr=True) for p in ("x", "out", "votes"))
    lane = b("sreg", i32, name="laneid")
    v = b("load", f32, b.index_addr(x, lane, f32), space="global")
    for mode, arg in (("down", 16), ("up", 1), ("bfly", 8), ("idx", 0)):
        v = b("add", f32, v, b("shfl", f32, v, b.const(i32, arg), mode=mode))
    b("store", None, b.index_addr(out, lane, f32), v, space="global")
    positive = b("cmp", bool_, v, b.const(f32, 0.0), pred="gt")
    ballot = b("vote", u32, positive, mode="ballot")
    anyone = b("vote", bool_, positive, mode="any")
    everyone = b("vote", bool_, positive, mode="all")
    b("store", None, votes, ballot, space="global")
    b("store", None, b("add", i64, votes, 4), b("cvt", u32, anyone), space="global")
    b("store", None, b("add", i64, votes, 8), b("cvt", u32, everyone), space="global")
    b.ret()
    return b.finish()


def vector_ops() -> ir.Function:
    b = Builder("vectors", [array("x", f32), array("h", f16), array("d", f64),
                            array("out", f32, written=True), array("hout", f16, written=True)])
    b.at(b.new_block("entry"), 1)
    x, h, d, out, hout = (b.param(p, i64, ptr=True) for p in ("x", "h", "d", "out", "hout"))
    i = b("sreg", i32, name="tid.x")
    vec = b("vload", f32, b.index_addr(x, b("shl", i32, i, 2), f32), space="global", nc=True, n=4)
    parts = [b("extract", f32, vec, index=k) for k in range(4)]
    total = b("add", f32, b("add", f32, parts[0], parts[1]), b("add", f32, parts[2], parts[3]))
    b("vstore", None, b.index_addr(out, b("shl", i32, i, 2), f32),
      total, parts[1], parts[2], b.const(f32, 0.0), space="global")
    hv = b("vload", f16, h, space="global", nc=True, n=8)
    halves = [b("extract", f16, hv, index=k) for k in range(8)]
    b("vstore", None, hout, *halves[::-1], space="global")
    dv = b("vload", f64, d, space="global", n=2)
    first = b("extract", f64, dv, index=0)       # element 1 unused
    b("store", None, b("add", i64, out, 64), b("cvt", f32, first), space="global")
    b.ret()
    return b.finish()


def float_ops(t) -> ir.Function:
    b = Builder(f"floats_{t.name}", [array("x", t), array("out", t, written=True),
                                     scalar("scale", t, by_ref=True)])
    b.at(b.new_block("entry"), 1)
    x, out = b.param("x", i64, ptr=True), b.param("out", i64, ptr=True)
    scale = b.param("scale", t)
    p, q = b("load", t, x, space="global", nc=True), b("load", t, b("add", i64, x, t.nbytes),
                                                      space="global", nc=True)
    ops = ["sqrt", "rsqrt", "rcp", "floor", "ceil", "trunc", "round", "neg", "abs"]
    if t == f32:
        ops += ["ex2", "lg2", "sin", "cos", "tanh"]
    results = [b(op, t, p) for op in ops]
    results += [b("sqrt", t, p, approx=True), b("rcp", t, p, approx=True),
                b("div", t, p, q), b("div", t, p, q, approx=True), b("copysign", t, p, q),
                b("fma", t, p, q, scale), b("min", t, p, q), b("max", t, p, q),
                b("sub", t, b.const(t, 1.0), p)]
    for k, value in enumerate(results):
        b("store", None, b("add", i64, out, k * t.nbytes) if k else out, value, space="global")
    b.ret()
    return b.finish()


KERNELS = {
    "saxpy": saxpy, "sum_loop": sum_loop, "swap_loop": swap_loop, "break_loop": break_loop,
    "cvt_matrix": cvt_matrix, "f16_arith": lambda: half_arith(f16),
    "bf16_arith": lambda: half_arith(bf16), "bool_ops": bool_ops, "int_ops": int_ops,
    "shared_reduce": shared_reduce, "shared32": shared_addressing, "atomics": atomics, "warp_ops": warp_ops,
    "vector_ops": vector_ops, "f32_ops": lambda: float_ops(f32), "f64_ops": lambda: float_ops(f64),
}


# --- tests: every kernel assembles ----------------------------------------------------------
@needs_ptxas
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_assembles(name):
    texts = compile_all(KERNELS[name]())
    for ptx in texts.values():
        assert ptx.rstrip().endswith("ret;\n}") or "ret;" in ptx


def test_module_layout():
    ptx = compile_all(saxpy(), ("sm_90",))["sm_90"]
    lines = ptx.splitlines()
    assert lines[:3] == ["//", "// Generated by ptxpy 0.1.0 from /src/saxpy.py", "//"]
    assert lines[3:7] == [".version 7.8", ".target sm_90", ".address_size 64",
                          '.file 1 "/src/saxpy.py"']
    assert ".visible .entry saxpy(\n    .param .u64 saxpy_x,\n    .param .u32 saxpy_x_shape0," in ptx
    assert "    .param .u32 saxpy_out_shape0\n)\n{" in ptx
    assert "    .reg .pred %p<2>;" in ptx and "    .reg .f32 %f<4>;" in ptx
    assert ptx.rstrip().endswith("ret;\n}")


@pytest.mark.parametrize("arch", ["sm_80", "sm_89", "sm_90", "sm_100"])
def test_entry_waits_for_dependent_launch_from_sm90(arch):
    """sm_90+: the first instruction is griddepcontrol.wait, so the runtime may launch the kernel
    as a programmatic dependent launch; older targets have no such instruction."""
    func = saxpy()
    func.arch = arch
    ptx = emit_ptx(func)
    body = ptx[ptx.index("{\n") + 2:].splitlines()
    first = next(line.strip() for line in body if line.strip()
                 and not line.strip().startswith((".reg", ".local", ".shared", "//", ".loc")))
    if arch in ("sm_80", "sm_89"):
        assert "griddepcontrol" not in ptx and first != "griddepcontrol.wait;"
    else:
        assert first == "griddepcontrol.wait;" and ptx.count("griddepcontrol") == 1


@pytest.mark.parametrize("arch,version", [("sm_80", "7.0"), ("sm_86", "7.1"), ("sm_89", "7.8"),
                                          ("sm_90", "7.8"), ("sm_90a", "8.0"), ("sm_100", "8.6"),
                                          ("sm_120", "8.7")])
def test_version_per_target(arch, version):
    func = saxpy()
    func.arch = arch
    assert f".version {version}\n.target {arch}\n" in emit_ptx(func)


def test_version_raised_by_instruction():
    func = half_arith(bf16)
    func.arch = "sm_80"
    assert ".version 7.1" in emit_ptx(func)       # cvt.f32.bf16 needs PTX 7.1


def test_constant_bool_store_is_one_byte_store():
    """Storing a constant bool writes its byte (`st.global.u8 [...], 1`), no predicate round trip."""
    b = Builder("flags", [array("o", bool_, written=True)])
    b.at(b.new_block("entry"))
    o = b.param("o", i64, ptr=True)
    address = b.index_addr(o, global_id(b), bool_)
    b("store", None, address, ir.Const(bool_, True), space="global")
    b("store", None, b("add", i64, address, ir.Const(i64, 1)), ir.Const(bool_, False), space="global")
    b.ret()
    ptx = compile_all(b.finish())["sm_90"]
    stores = [l for l in instructions(ptx) if l.startswith("st.")]
    assert stores == ["st.global.u8 [%rd1], 1;", "st.global.u8 [%rd1+1], 0;"], ptx
    assert "selp" not in ptx and "setp" not in ptx


def test_saxpy_readable():
    ptx = compile_all(saxpy(), ("sm_90",))["sm_90"]
    assert "    // line 2: i = ptxpy.global_id(0)\n    .loc 1 2 5\n" in ptx
    assert "// line 4: out[i] = a * x[i] + y[i]\n    .loc 1 4 5" in ptx
    assert "ld.param.u64 %rd1, [saxpy_x];\n    cvta.to.global.u64 %rd1, %rd1;" in ptx
    assert "ld.param.f32 %f1, [saxpy_a];" in ptx
    assert "mad.lo.s32" in ptx
    assert ptx.count("mad.wide.s32") == 3         # offset*4 + base, once per array
    assert ptx.count("ld.global.nc.f32") == 2
    assert "@!%p1 bra $BB2;" in ptx                  # the then-block falls through
    assert "$BB1:" not in ptx                        # not branched to: no label
    assert "mov.f32" not in ptx and "mov.u64" not in ptx


def test_sum_loop_body_has_no_mov():
    ptx = compile_all(sum_loop())["sm_90"]
    labels = re.findall(r"^(\$BB\d+):$", ptx, re.M)
    assert labels, ptx
    loop = block_text(ptx, labels[0])
    body = instructions(loop)
    assert not [l for l in body if l.startswith("mov")], ptx
    assert any(l.startswith("add.rn.f32") for l in body)
    assert any("bra" in l for l in body)
    # the copies of the initial values happen once, before the loop
    assert "mov.f32 %f1, 0f00000000;" in ptx
    assert ".reg .f32 %f<3>;" in ptx


def test_swap_loop_uses_three_moves():
    ptx = compile_all(swap_loop())["sm_90"]
    movs = [l for l in instructions(ptx) if l.startswith("mov.u32")]
    # three initial values (k, a, b), then the swap through one temporary
    assert len(movs) == 6, ptx
    assert re.search(r"mov\.u32 (%r\d+), (%r\d+);\n\s+mov\.u32 \2, (%r\d+);\n\s+"
                     r"mov\.u32 \3, \1;", ptx), ptx


def test_break_loop_splits_critical_edges():
    ptx = compile_all(break_loop())["sm_90"]
    # the exit phi receives i from the header and i+1 from the body: both arrive via copies
    # on split edges, so neither overwrites the loop's own i
    assert ptx.count("bra") >= 3, ptx


def test_line_comments_for_every_statement():
    ptx = emit_ptx(sum_loop())
    for n, line in enumerate(SUM_SRC.splitlines()[1:], start=2):
        assert f"// line {n}: {line.strip()}" in ptx, n


def test_a_statement_over_several_lines_is_one_comment_before_its_instructions():
    """SPEC 4: each statement as a comment before its instructions. A statement that brackets
    or a backslash carry over several lines shows all of them at its first instruction; its
    sub-expressions on later lines get a `.loc` of their own, without another comment."""
    from ptxpy.transpiler import driver

    source = ("import ptxpy\nfrom ptxpy import Array, f32, i32\n\n@ptxpy.jit\n"
              "def k(x: Array[f32],\n      out: Array[f32], n: i32):\n"
              "    i = ptxpy.global_id(0)\n"
              "    if (i < n and\n            x[i] > 0.0):\n"
              "        out[i] = (x[i] +\n                  2.0 *\n                  x[i]) + \\\n"
              "            1.0\n")
    ptx = driver.transpile(source, "kernels.py")["k"]
    body = ptx[ptx.index("griddepcontrol.wait;"):]
    blocks = [[l.strip() for l in chunk.splitlines()] for chunk in body.split("\n\n")[1:]]
    comments = [[l for l in b if l.startswith("// line")] for b in blocks]
    assert comments[0] == ["// line 5: def k(x: Array[f32],", "// line 6: out: Array[f32], n: i32):"]
    assert ["// line 8: if (i < n and", "// line 9: x[i] > 0.0):"] in comments
    statement = ["// line 10: out[i] = (x[i] +", "// line 11: 2.0 *", "// line 12: x[i]) + \\",
                 "// line 13: 1.0"]
    assert statement in comments
    lines = blocks[comments.index(statement)]
    assert lines[:4] == statement and lines[4] == ".loc 1 11 19"     # 2.0 * x[i] comes first
    assert ".loc 1 10 19" in lines
    assert body.count("// line 11:") == 1      # a later line has a .loc, not another comment
    assert all(len(c) <= 4 for c in comments)


def test_bool_lowering():
    ptx = compile_all(bool_ops())["sm_90"]
    assert "ld.param.u8" in ptx and "setp.ne.u16" in ptx
    assert "and.pred" in ptx and "or.pred" in ptx and "not.pred" in ptx
    assert "xor.pred" not in ptx     # (ptxas merged it wrongly: pred_differ, bool_select)
    assert "st.global.u8" in ptx and "selp.u16" in ptx
    assert "selp.s32" in ptx and "selp.pred" not in ptx


def test_int_ops_types():
    ptx = compile_all(int_ops())["sm_90"]
    for opcode in ("setp.lo.u32", "setp.hs.u64", "setp.lt.s16", "shr.u32", "shr.s64", "div.u32",
                   "mul.lo.s32", "mul.hi.u64", "mul.wide.s16", "mul.wide.u32", "cvt.s32.s8",
                   "cvt.u16.u8", "ld.global.s8", "ld.global.u8", "st.global.u8"):
        assert opcode in ptx, opcode
    # i8 is re-extended through 32 bits: ptxas folded a `cvt.s16.s8` of a value it learned
    # late to 32 bits (tests/test_edge_semantics.py, ..._that_ptxas_learns_late)
    assert "cvt.s16.s8" not in ptx
    # 8- and 16-bit add/sub/mul/div/rem/mad are done in 32 bits, wrapped back explicitly
    # (ptxas's 16-bit range analysis misses the wrap); negation is ~x + 1 at every width
    assert not re.search(r"\b(sub|div|rem|mad\.lo)\.[su]16\b", ptx), ptx
    assert re.search(r"cvt\.s32\.s16 (%r\d+), %rs\d+;\s+cvt\.s32\.s16 (%r\d+), %rs\d+;\s+"
                     r"rem\.s32 \1, \1, \2;\s+cvt\.u16\.u32 %rs\d+, \1;", ptx), ptx
    assert "neg." not in ptx and "not.b64" in ptx


def test_half_arith_native_and_emulated():
    texts = compile_all(half_arith(bf16))
    assert "add.rn.bf16" in texts["sm_90"] and "setp.lt.bf16" in texts["sm_90"]
    assert "add.rn.bf16" not in texts["sm_80"] and "fma.rn.bf16" in texts["sm_80"]
    assert "cvt.f32.bf16" in texts["sm_80"]
    f16_ptx = compile_all(half_arith(f16))["sm_80"]
    assert "add.rn.f16" in f16_ptx and "div.rn.f32" in f16_ptx and "cvt.rn.f16.f32" in f16_ptx
    assert "mov.b16" in f16_ptx and "0x3E00" in f16_ptx   # 1.5 materialised, f16 has no immediate


def test_cvt_matrix_opcodes():
    texts = compile_all(cvt_matrix())
    for ptx in texts.values():
        for opcode in ("cvt.rzi.s32.f32", "cvt.rn.f32.s32", "cvt.rn.f16.f32", "cvt.f32.f16",
                       "cvt.f64.f32", "cvt.rn.f32.f64", "cvt.rni.s32.f32", "cvt.rz.f32.f64",
                       "cvt.rm.f16.f32", "setp.neu.f32", "selp.u32", "cvt.s64.s32",
                       "cvt.u32.u64", "cvt.rn.bf16.f32", "mov.b32 %f"):
            assert opcode in ptx, opcode
    assert "cvt.rn.bf16.f64" in texts["sm_90"] and "cvt.rn.bf16.f64" not in texts["sm_80"]


def test_shared_memory():
    ptx = compile_all(shared_reduce())["sm_90"]
    assert "    .shared .align 16 .b8 smem_s[1024];" in ptx
    assert "bar.sync 0;" in ptx
    assert "ld.shared.f32 %f2, [smem_s];" in ptx or re.search(r"ld\.shared\.f32 %f\d+, \[smem_s\]", ptx)
    assert re.search(r"ld\.shared\.f32 %f\d+, \[smem_s\+4\]", ptx)
    # 32-bit shared addresses: the base in a .b32 register, `tid * 4 + base` one mad
    assert re.search(r"mov\.u32 (%r\d+), smem_s;", ptx) and "mov.u64" not in ptx
    assert re.search(r"mad\.lo\.u32 (%r\d+), %r\d+, 4, %r\d+;\n\s+(\S+ )?ld\.global", ptx) or \
        re.search(r"mad\.lo\.u32 (%r\d+), %r\d+, 4, %r\d+;", ptx)
    assert re.search(r"st\.shared\.f32 \[%r\d+\], %f\d+;", ptx)


def test_shared_addresses_in_32_bits():
    ptx = compile_all(shared_addressing())["sm_90"]
    body = ptx[ptx.index("{"):]
    assert re.search(r"mov\.u32 %r\d+, smem_s;", body)
    assert not re.search(r"(ld|st)\.shared\S* [^\n]*\[%rd", body)      # no 64-bit shared address
    assert re.search(r"cvt\.u32\.u64 %r\d+, %rd\d+;", body)            # `off`: needed in both widths
    assert re.search(r"shl\.b32 %r\d+, %r\d+, 2;", body)                # `scaled` again, in 32 bits
    assert re.search(r"add\.u32 %r\d+, %r\d+, 508;\n\s+sub\.u32", body)
    assert re.search(r"mad\.lo\.u32 %r\d+, %r1, 4, %r2;", body)         # base + i64 mul, from tid
    assert re.search(r"add\.u32 %r\d+, %r\d+, 384;", body)              # the pointer phi's step
    assert re.search(r"ld\.global\.f32 %f\d+, \[%rd\d+\];", body)      # global stays 64-bit


def test_atomics():
    ptx = compile_all(atomics())["sm_90"]
    assert re.search(r"atom\.global\.add\.f32 %f\d+, \[%rd\d+\], 0f3F800000;", ptx)
    assert re.search(r"red\.global\.add\.f32 \[%rd\d+\+4\], 0f40000000;", ptx)
    assert "red.global.add.f64" in ptx and "red.global.add.noftz.f16" in ptx
    assert "red.global.min.s32" in ptx and "red.global.and.b32" in ptx
    assert re.search(r"atom\.global\.cas\.b32 %r\d+, \[%rd\d+\], 3, 9;", ptx)
    assert "atom.global.exch.b32" in ptx and "red.global.inc.u32" in ptx
    assert "atom.global.dec.u32" in ptx


def test_warp_ops():
    ptx = compile_all(warp_ops())["sm_90"]
    assert re.search(r"shfl\.sync\.down\.b32 %f\d+, %f\d+, 16, 0x1f, 0xffffffff;", ptx)
    assert re.search(r"shfl\.sync\.up\.b32 %f\d+, %f\d+, 1, 0x0, 0xffffffff;", ptx)
    assert "vote.sync.ballot.b32" in ptx and "vote.sync.any.pred" in ptx
    assert "vote.sync.all.pred" in ptx and "mov.u32 %r1, %laneid;" in ptx


def test_vectors():
    ptx = compile_all(vector_ops())["sm_90"]
    assert re.search(r"ld\.global\.nc\.v4\.f32 \{%f\d+, %f\d+, %f\d+, %f\d+\}, \[%rd\d+\];", ptx)
    assert re.search(r"st\.global\.v4\.f32 \[%rd\d+\], \{%f\d+, %f\d+, %f\d+, %f\d+\};", ptx)
    assert "ld.global.nc.v4.b32" in ptx and "st.global.v4.b32" in ptx
    assert re.search(r"mov\.b32 \{%h\d+, %h\d+\}, %r\d+;", ptx)
    assert "ld.global.v2.f64" in ptx


def test_by_ref_scalar_loaded_through_pointer():
    ptx = compile_all(float_ops(f32), ("sm_90",))["sm_90"]
    assert re.search(r"ld\.param\.u64 (%rd\d+), \[floats_f32_scale\];\n\s+cvta\.to\.global\.u64 "
                     r"\1, \1;\n\s+ld\.global\.f32 %f\d+, \[\1\];", ptx)
    assert "sqrt.rn.f32" in ptx and "sqrt.approx.f32" in ptx and "div.rn.f32" in ptx
    assert "div.approx.f32" in ptx and "rcp.approx.f32" in ptx and "tanh.approx.f32" in ptx
    assert "cvt.rmi.f32.f32" in ptx and "cvt.rni.f32.f32" in ptx


def test_f64_ops():
    ptx = compile_all(float_ops(f64), ("sm_80",))["sm_80"]
    assert "div.rn.f64" in ptx and "rcp.approx.ftz.f64" in ptx and "rsqrt.approx.f64" in ptx


def test_copysign_operand_order():
    b = Builder("cs", [scalar("m", f32), scalar("s", f32), array("out", f32, written=True)])
    b.at(b.new_block("entry"), 1)
    m, s, out = b.param("m", f32), b.param("s", f32), b.param("out", i64, ptr=True)
    b("store", None, out, b("copysign", f32, m, s), space="global")
    b.ret()
    ptx = compile_all(b.finish(), ("sm_90",))["sm_90"]
    # PTX copysign d, a, b takes the sign of a: the IR's sign operand comes first
    assert "ld.param.f32 %f1, [cs_m];" in ptx and "ld.param.f32 %f2, [cs_s];" in ptx
    assert re.search(r"copysign\.f32 %f\d+, %f2, %f1;", ptx)


# --- errors ---------------------------------------------------------------------------------
def _single(opcode, t, *args, **attrs):
    b = Builder("bad", [array("x", t, written=True)])
    b.at(b.new_block("entry"), 1)
    x = b.param("x", i64, ptr=True)
    b(opcode, t, x, *args, **attrs)
    b.ret()
    return b.finish()


def test_printf_promotes_its_arguments_and_shares_format_strings(capsys):
    # the SSA builder promotes print's values; the backend promotes any it is given (C's rules)
    b = Builder("show", [scalar("h", f16), scalar("c", i8)])
    b.at(b.new_block("entry"), 1)
    h, c = b.param("h", f16), b.param("c", i8)
    flag = b("cmp", bool_, c, ir.Const(i8, 0), pred="lt")
    for _ in range(2):
        b("printf", None, h, c, flag, ir.Const(u16, 65535), ir.Const(i64, -2**40), fmt="%f %d %d %u %lld\n")
    b.ret()
    ptx = compile_all(b.finish())["sm_80"]
    assert ptx.count(".global .align 1 .b8 $str") == 1 and ptx.count("call.uni") == 2
    assert "cvt.f64.f16" in ptx and "cvt.s32.s16" in ptx and "    .local .align 8 .b8 printf_args[32];" in ptx
    _sim_run_kernel(ptx, "show", 1, 1, [np.float16(-1.5), -7])
    assert capsys.readouterr().out == "-1.500000 -7 1 65535 -1099511627776\n" * 2


def test_unsupported_atomics_raise():
    with pytest.raises(BackendError, match="min"):
        emit_ptx(_single("atom", f32, ir.Const(f32, 1.0), op="min", space="global"))
    func = _single("atom", bf16, ir.Const(bf16, 1.0), op="add", space="global")
    func.arch = "sm_80"
    with pytest.raises(BackendError, match="sm_90"):
        emit_ptx(func)


def test_unknown_target_raises():
    func = saxpy()
    func.arch = "sm_70"
    with pytest.raises(BackendError, match="sm_70"):
        emit_ptx(func)


# --- out-of-SSA copy sequencing ----------------------------------------------------------------
def _run_copies(copies, env):
    env = dict(env)
    for copy in copies:
        src = copy.srcs[0]
        env[copy.dsts[0]] = env[src] if isinstance(src, VReg) else src.text
    return env


@pytest.mark.parametrize("seed", range(40))
def test_sequentialise_matches_parallel_copy(seed):
    rng = random.Random(seed)
    regs = [VReg("r") for _ in range(rng.randint(2, 7))]
    dsts = rng.sample(regs, rng.randint(1, len(regs)))
    pairs = [(d, rng.choice(regs) if rng.random() < 0.8 else Imm(str(rng.randint(0, 9))))
             for d in dsts]
    env = {r: f"v{r.id}" for r in regs}
    expected = dict(env)
    for dst, src in pairs:
        expected[dst] = env[src] if isinstance(src, VReg) else src.text
    got = _run_copies(sequentialise(pairs), env)
    assert all(got[r] == expected[r] for r in regs)


def test_sequentialise_swap_uses_one_temporary():
    a, b = VReg("r"), VReg("r")
    copies = sequentialise([(a, b), (b, a)])
    assert len(copies) == 3
    env = _run_copies(copies, {a: 1, b: 2})
    assert (env[a], env[b]) == (2, 1)


# --- running the PTX: on the simulator, and on a GPU when there is one --------------------------
from gpu_launcher import gpu_run_kernel as _gpu_run_kernel  # noqa: E402


def _sim_run_kernel(ptx, kernel, grid, block, args):
    sim = pytest.importorskip("ptxpy.runtime.simulator")
    sim.run_kernel(ptx, kernel, grid, block, args)


@pytest.fixture(params=["simulator", pytest.param("gpu", marks=pytest.mark.gpu)])
def run_kernel(request):
    return _sim_run_kernel if request.param == "simulator" else _gpu_run_kernel


@pytest.fixture(params=ARCHS)
def arch(request):
    return request.param


def _ptx(func, arch):
    func.arch = arch
    return emit_ptx(func)


def test_run_saxpy(run_kernel, arch):
    n = 300
    x, y = np.arange(n, dtype=np.float32), np.linspace(-1, 1, n).astype(np.float32)
    out = np.zeros(n, np.float32)
    run_kernel(_ptx(saxpy(), arch), "saxpy", (2,), (256,), [x, n, y, n, np.float32(2.5), out, n])
    np.testing.assert_allclose(out, 2.5 * x + y, rtol=1e-6)


def test_run_sum_loop(run_kernel, arch):
    x = np.arange(10, dtype=np.float32)
    out = np.zeros(1, np.float32)
    run_kernel(_ptx(sum_loop(), arch), "total", (1,), (1,), [x, 10, np.int32(7), out, 1])
    assert out[0] == x[:7].sum()


def test_run_shared_addressing(run_kernel, arch):
    x = rng_values = np.random.default_rng(5).standard_normal(32).astype(np.float32)
    out = np.zeros(32, np.float32)
    run_kernel(_ptx(shared_addressing(), arch), "shared32", (1,), (32,), [x, 32, out, 32])
    np.testing.assert_array_equal(out, (np.float32(0) + rng_values) + np.float32(2) * x[::-1])


@pytest.mark.parametrize("n", [0, 1, 2, 5])
def test_run_swap_loop(run_kernel, arch, n):
    out = np.zeros(2, np.int32)
    run_kernel(_ptx(swap_loop(), arch), "swap", (1,), (1,), [out, 2, np.int32(n)])
    assert list(out) == ([2, 1] if n % 2 else [1, 2])


@pytest.mark.parametrize("data,expected", [([1, 2, -3, 4], 3), ([1, 2, 3, 4], 4), ([-1, 2], 1)])
def test_run_break_loop(run_kernel, arch, data, expected):
    x = np.array(data, np.float32)
    out = np.zeros(1, np.int32)
    run_kernel(_ptx(break_loop(), arch), "first_negative", (1,), (1,),
               [x, len(x), np.int32(len(x)), out, 1])
    assert out[0] == expected


def _numpy_cvt(value, s, t):
    """What the IR's cvt gives, computed on the host (float->int truncates and saturates)."""
    import ml_dtypes  # noqa: F401  (bf16 dtype)
    v = np.asarray(value, s.numpy)
    if t.is_bool:
        return bool(v != 0) if not s.is_float else bool(v.astype(np.float64) != 0)
    if s.is_float and t.is_int:
        f = float(v.astype(np.float64))
        if np.isnan(f):   # 0; the backend tests for NaN at 64 bits, where the GPU gives 1<<63
            return 0
        info = np.iinfo(t.numpy)
        return int(min(max(np.trunc(f), info.min), info.max))
    if s.is_int and t.is_int:
        return np.asarray(int(v)).astype(t.numpy).item() if t.bits >= s.bits else \
            int(np.asarray(int(v) & ((1 << t.bits) - 1)).astype(f"u{t.bits // 8}").view(t.numpy))
    if s.is_bool:
        return np.asarray(int(v), t.numpy).item() if not t.is_float else np.asarray(float(v), t.numpy)
    if s.is_int and t.is_float and t.name == "bf16":
        return np.asarray(float(int(v)), np.float32).astype(t.numpy)
    return v.astype(t.numpy)


@pytest.mark.parametrize("sample", [0, 1, 2])
def test_run_cvt_matrix(run_kernel, arch, sample):
    import ml_dtypes  # noqa: F401
    inputs = [{"bool": True, "i8": -7, "u8": 250, "i16": -1234, "u16": 60000, "i32": -123456,
               "u32": 4000000000, "i64": -(3 << 40), "u64": (5 << 60), "f16": -2.75, "bf16": 3.5,
               "f32": -1.5e5, "f64": 1e10},
              {"bool": False, "i8": 127, "u8": 0, "i16": 300, "u16": 255, "i32": 70000,
               "u32": 65536, "i64": 255, "u64": 1, "f16": 100.5, "bf16": -0.0,
               "f32": 200.75, "f64": -3.999},
              {"bool": True, "i8": -128, "u8": 128, "i16": -32768, "u16": 32768, "i32": -1,
               "u32": 1, "i64": -1, "u64": 2**64 - 1, "f16": 65504.0, "bf16": -1e30,
               "f32": float("nan"), "f64": 1e300}][sample]
    args, outs = [], {}
    for t in ALL_TYPES:
        args.append(np.asarray(inputs[t.name], t.numpy)[()] if not t.is_bool else np.uint8(inputs[t.name]))
    for t in ALL_TYPES:
        outs[t] = np.zeros(len(ALL_TYPES) if not t.is_bool else 16, t.numpy)
        args += [outs[t], len(outs[t])]
    run_kernel(_ptx(cvt_matrix(), arch), "cvt_all", (1,), (1,), args)
    # only the first block of stores (k = source index) is checked; the mode tests overwrite 0
    for k, s in enumerate(ALL_TYPES[1:], start=1):
        for t in ALL_TYPES:
            if s == t:
                continue
            expected = _numpy_cvt(inputs[s.name], s, t)
            got = outs[t][k]
            if t.is_float:
                e = np.asarray(expected, t.numpy).astype(np.float64)
                assert (np.isnan(e) and np.isnan(float(got))) or float(got) == float(e), (s, t, got, e)
            else:
                assert int(got) == int(expected), (s, t, got, expected)


def _numpy_half(t, p, q):
    import ml_dtypes  # noqa: F401
    a, b = np.float32(p), np.float32(q)
    r = lambda x: np.asarray(x, np.float32).astype(t.numpy)   # noqa: E731
    return [r(a + b), r(a - b), r(a * b), r(a / b), r(min(a, b)), r(max(a, b)),
            r(np.copysign(a, b)), r(-a), r(abs(a)), r(np.sqrt(a)), r(np.floor(a)), r(np.round(a))]


@pytest.mark.parametrize("t", [f16, bf16])
def test_run_half_arith(run_kernel, arch, t):
    x = np.array([2.5, -0.375], t.numpy)
    out = np.zeros(24, t.numpy)
    flags = np.zeros(8, np.uint8)
    run_kernel(_ptx(half_arith(t), arch), f"arith_{t.name}", (1,), (1,),
               [x, 2, out, 24, flags, 8])
    expected = _numpy_half(t, float(x[0]), float(x[1]))
    # results: add sub mul div min max copysign neg abs sqrt floor round ex2 rsqrt fma mul select
    assert [float(v) for v in out[:12]] == [float(v) for v in expected]
    assert float(out[14]) == float(np.asarray(np.float32(2.5) * np.float32(-0.375) + 1.5,
                                              np.float32).astype(t.numpy))
    assert float(out[15]) == 5.0 and float(out[16]) == 0.0
    assert list(flags[:4]) == [0, 1, 0, 0]


def _wrap(value: int, t) -> int:
    value &= (1 << t.bits) - 1
    return value - (1 << t.bits) if t.is_signed and value >> (t.bits - 1) else value


def _c_div(p: int, q: int) -> int:
    return abs(p) // abs(q) * (1 if (p < 0) == (q < 0) else -1)


def test_run_int_ops(run_kernel, arch):
    types = [i8, u8, i16, u16, i32, u32, i64, u64]
    pairs = {i8: (-100, 7), u8: (200, 9), i16: (-30000, 7), u16: (60000, 9), i32: (-2**31 + 5, 7),
             u32: (2**32 - 5, 9), i64: (-2**63 + 5, 7), u64: (2**64 - 5, 9)}
    arrays = {t: np.zeros(128, t.numpy) for t in types}
    for t in types:
        arrays[t][:2] = pairs[t]
    flags = np.zeros(24, np.uint8)
    args = [x for t in types for x in (arrays[t], len(arrays[t]))] + [flags, 24]
    run_kernel(_ptx(int_ops(), arch), "ints", (1,), (1,), args)
    for t in types:
        p, q = pairs[t]
        expected = [p + q, p - q, p * q, _c_div(p, q), p - q * _c_div(p, q), min(p, q), max(p, q),
                    p & q, p | q, p ^ q, (p * q) >> t.bits, -p, abs(p), ~p, p, p, p * q + p,
                    p + 100, p * 3]
        got = [int(v) for v in arrays[t][2:2 + len(expected)]]
        assert got == [_wrap(e, t) for e in expected], t
        if 16 <= t.bits <= 32:
            assert int(arrays[t][168 // t.nbytes]) == _wrap(p * q, t)
    assert list(flags[:24]) == [int(f) for t in types
                                for f in (pairs[t][0] < pairs[t][1], pairs[t][0] >= pairs[t][1], False)]


def test_register_counts_report():
    """Not a check: prints `ptxas -v` register counts (run with -s to see them)."""
    for (name, arch), regs in sorted(REGISTERS.items()):
        print(f"{name:16} {arch}: {regs} registers")


# --- the simulator and 32-bit .shared/.local addresses -------------------------------------------
SHARED32_PTX = """
.version 7.8
.target sm_90
.address_size 64

.global .align 4 .b8 gvar[4];

.visible .entry k(
    .param .u64 k_out
)
{
    .reg .b32 %r<6>;
    .reg .b64 %rd<3>;
    .shared .align 16 .b8 smem_s[64];
    .local .align 16 .b8 local_r[16];

    ld.param.u64 %rd1, [k_out];
    cvta.to.global.u64 %rd1, %rd1;
    mov.u32 %r1, smem_s;
    mov.u32 %r2, %tid.x;
    mad.lo.u32 %r3, %r2, 4, %r1;
    st.shared.u32 [%r3+4], %r2;
    bar.sync 0;
    ld.shared.u32 %r4, [%r3+OFFSET];
    mov.u32 %r5, local_r;
    st.local.u32 [%r5+12], %r4;
    ld.local.u32 %r4, [%r5+12];
    mul.wide.u32 %rd2, %r2, 4;
    add.s64 %rd2, %rd1, %rd2;
    STORE;
    ret;
}
"""


def _shared32(offset="8", store="st.global.u32 [%rd2], %r4"):
    return SHARED32_PTX.replace("OFFSET", offset).replace("STORE", store)


def test_simulator_runs_32_bit_shared_and_local_addresses():
    from ptxpy.runtime.simulator import run_kernel

    out = np.zeros(4, np.uint32)
    run_kernel(_shared32(), "k", (1,), (4,), [out])
    # s[t + 2] = t + 1; the last one was never written: all ones, as the simulator starts shared memory
    assert out.tolist() == [1, 2, 3, 0xFFFFFFFF]
    if find_ptxas():
        ok, messages, _ = assemble(_shared32(), "sm_90")
        assert ok, messages


@pytest.mark.parametrize("offset, store, message", [
    ("-8", "st.global.u32 [%rd2], %r4", "out-of-bounds shared load"),     # 0 - 8 wraps in 32 bits
    ("8", "st.global.u32 [%r3], %r4", "address register for global memory"),
    ("8", "st.u32 [%r3], %r4", "address register for generic memory"),
    ("8", "mov.u32 %r4, gvar", "needs 64 bits"),
])
def test_simulator_refuses_32_bit_addresses_outside_shared_and_local(offset, store, message):
    from ptxpy.runtime.simulator import SimulatorError, run_kernel

    with pytest.raises(SimulatorError, match=message):
        run_kernel(_shared32(offset, store), "k", (1,), (4,), [np.zeros(4, np.uint32)])


@pytest.mark.parametrize("arch", ["sm_80", "sm_90", "sm_90a", "sm_100", "sm_120"])
def test_every_target_name_compiles_16_bit_atomics(arch):
    """`sm_90a` is a target like the plain ones (before, the bf16
    atomic's arch test read '90a' as a number): bf16 `atom.add` from sm_90, else a CAS loop."""
    import ptxpy

    source = ("import ptxpy\nfrom ptxpy import Array, bf16, f16\n\n@ptxpy.jit\n"
              "def k(b: Array[bf16], h: Array[f16]):\n"
              "    ptxpy.atomic_add(b, 0, bf16(1.0))\n    ptxpy.atomic_add(h, 0, f16(1.0))\n")
    ptx = ptxpy.transpile(source, "atomics.py", arch=arch)["k"]
    assert f".target {arch}\n" in ptx and "red.global.add.noftz.f16" in ptx
    assert ("red.global.add.noftz.bf16" in ptx) == (arch != "sm_80")
    assert ("atom.global.cas.b16" in ptx) == (arch == "sm_80")
    if find_ptxas():
        ok, log, _ = assemble(ptx, arch)
        assert ok, log


def test_a_register_read_but_never_written_is_an_internal_error():
    """The instruction selector's check that nothing reads a register no instruction writes
    (what an instruction left out while still used would leave behind)."""
    from ptxpy.transpiler.backend.isel import _check_written
    from ptxpy.transpiler.backend.machine import MBlock, MInstr, Terminator

    written, lost = VReg("r"), VReg("r")
    block = MBlock("entry", [MInstr("mov.u32", [written], [Imm("1")]),
                             MInstr("add.u32", [written], [written, Imm("2")])],
                   term=Terminator("ret"))
    _check_written([block])
    block.instrs.append(MInstr("add.u32", [written], [written, lost]))
    with pytest.raises(BackendError, match=r"%rv\d+ is read by `add\.u32 .*` in entry but never written"):
        _check_written([block])


@pytest.mark.parametrize("count, version", [(500, "7.8"), (600, "8.1"), (4200, None)])
def test_kernel_parameters_beyond_4352_bytes_need_ptx_8_1_and_beyond_32764_are_an_error(count, version):
    """600 f64 scalars (4800 bytes) need `.version 8.1`, which ptxas asks for; 4200 (33600
    bytes) are more than CUDA takes: an error naming the kernel, not PTX ptxas refuses."""
    from ptxpy.transpiler.errors import CompileError

    params = ", ".join(f"a{k}: f64" for k in range(count))
    source = (f"import ptxpy\nfrom ptxpy import Array, f64\n\n@ptxpy.jit\ndef k({params}, "
              "out: Array[f64]):\n    out[0] = a0 + a1\n")
    if version is None:
        with pytest.raises(CompileError, match=r"kernel 'k' takes 33\d\d\d bytes of parameters; "
                                               r"CUDA allows at most 32764"):
            ptxpy.transpile(source, "k.py")
        return
    ptx = ptxpy.transpile(source, "k.py")["k"]
    assert f".version {version}\n" in ptx
    if find_ptxas():
        ok, messages, _ = assemble(ptx, "sm_90")
        assert ok, messages
