"""The SSA passes and the IR interpreter: structural effect of each pass, and equivalence of the
interpreter's results before and after `optimize` (hand-written and random IR)."""
from __future__ import annotations

import copy
import math
import time
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ptxpy.transpiler import floatbits, interp
from ptxpy.transpiler.abi import ParamSpec
from ptxpy.transpiler.cfg import natural_loops
from ptxpy.transpiler.ir import Block, Const, Function, Instr, SharedDecl, Undef, add_pred
from ptxpy.transpiler.passes import (PIPELINE, contract, copyprop, cse, dce, hoist, licm,
                                     lower_floor, memforward, narrow, optimize, ranges, reassoc,
                                     sccp, simplifycfg, speculate, strength, widen)
from ptxpy.transpiler.verify import verify
from ptxpy.types import bf16, bool_, f16, f32, f64, i32, i64, u32, u64

INT_MIN, INT_MAX = -(1 << 31), (1 << 31) - 1


# --- building IR by hand ---------------------------------------------------------------------
class Builder:
    """Appends instructions to a current block of a kernel `k`; ints and floats become Consts
    of the other operand's type (or of `t`)."""

    def __init__(self, params=()):
        self.func = Function("k", [ParamSpec(n, "array", t) for n, t in params])
        self.cur = self.func.new_block("entry")

    def block(self, hint: str = "bb") -> Block:
        return self.func.new_block(hint)

    def at(self, block: Block) -> "Builder":
        self.cur = block
        return self

    def __call__(self, opcode: str, t, *args, **attrs) -> Instr:
        typed = [a for a in args if not isinstance(a, (int, float))]
        like = typed[0].type if typed else t
        values = [Const(like, a) if isinstance(a, (int, float)) else a for a in args]
        return self.cur.append(Instr(opcode, t, values, attrs))

    def param(self, name: str, t=i32, ptr=False) -> Instr:
        return self("param", i64 if ptr else t, name=f"k_{name}", ptr=ptr)

    def sreg(self, name: str = "tid.x") -> Instr:
        return self("sreg", i32, name=name)

    def br(self, target: Block) -> None:
        self.cur.append(Instr("br", None, targets=[target]))
        add_pred(target, self.cur)

    def cbr(self, cond, then: Block, other: Block) -> None:
        self.cur.append(Instr("cbr", None, [cond], targets=[then, other]))
        add_pred(then, self.cur)
        add_pred(other, self.cur)

    def ret(self) -> None:
        self.cur.append(Instr("ret", None))

    def phi(self, t, block: Block | None = None) -> Instr:
        return (block or self.cur).append(Instr("phi", t))

    def diamond(self, cond, then_value, else_value, t) -> tuple:
        """if cond: v = then_value(self) else: v = else_value(self); returns (phi, then, else)."""
        then, other, join = self.block("then"), self.block("else"), self.block("join")
        self.cbr(cond, then, other)
        left = then_value(self.at(then))
        self.br(join)
        right = else_value(self.at(other))
        self.br(join)
        merged = self.at(join).phi(t)
        self.fill(merged, {then: left, other: right})
        return merged, left, right

    @staticmethod
    def fill(phi: Instr, incoming: dict) -> None:
        phi.args = [incoming[p] for p in phi.block.preds]

    def store(self, base, index, value, t=None) -> None:
        """out[index] = value, through `add(base, mul_wide(index, size))`."""
        t = t or value.type
        address = self("add", i64, base, self("mul_wide", i64, index, Const(i32, t.nbytes)))
        self("store", None, address, value, space="global")

    def load(self, base, index, t, nc=False) -> Instr:
        address = self("add", i64, base, self("mul_wide", i64, index, Const(i32, t.nbytes)))
        return self("load", t, address, space="global", **({"nc": True} if nc else {}))


def ops(func: Function) -> list[str]:
    return [i.op for b in func.blocks for i in b.all_instrs()]


def run_pass(run, func: Function) -> Function:
    verify(func)
    func = run(func)
    verify(func)
    return func


def execute(func: Function, args: dict, sregs: dict | None = None) -> dict:
    args = {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in args.items()}
    interp.run_function(func, args, sregs or {})
    return {k: v for k, v in args.items() if isinstance(v, np.ndarray)}


def same_arrays(a: np.ndarray, b: np.ndarray) -> bool:
    if a.dtype.kind != "f":
        return np.array_equal(a, b)
    nan = np.isnan(a)
    return (np.array_equal(nan, np.isnan(b)) and np.array_equal(a[~nan], b[~nan])
            and np.array_equal(np.signbit(a[~nan]), np.signbit(b[~nan])))


def assert_equivalent(func: Function, inputs: list[tuple[dict, dict]]) -> Function:
    """optimize(func) (verified after each pass) gives the interpreter's results of func."""
    before = copy.deepcopy(func)
    after = optimize(func, verify_each=True)
    for args, sregs in inputs:
        expected, got = execute(before, args, sregs), execute(after, args, sregs)
        for name in expected:
            assert same_arrays(expected[name], got[name]), (name, expected[name], got[name])
    return after


def scalar_kernel(t, body):
    """A kernel storing `body(builder, a, b)` to out[0], a and b being scalar params of type t."""
    b = Builder()
    a, c, out = b.param("a", t), b.param("b", t), b.param("out", ptr=True)
    value = body(b, a, c)
    b.store(out, Const(i32, 0), value)
    b.ret()
    return b.func


def run_scalar(func: Function, t, a, c):
    out = np.zeros(1, dtype=t.numpy)
    interp.run_function(func, {"a": a, "b": c, "out": out}, {})
    return out[0]


# --- the interpreter -------------------------------------------------------------------------
@pytest.mark.parametrize("op, t, a, c, expected", [
    ("add", i32, INT_MAX, 1, INT_MIN),
    ("sub", u32, 0, 1, 2**32 - 1),
    ("mul", i32, 65536, 65536, 0),
    ("div", i32, -7, 2, -3),
    ("rem", i32, -7, 2, -1),
    ("floordiv", i32, -7, 2, -4),
    ("floormod", i32, -7, 2, 1),
    ("floordiv", i32, 7, -2, -4),
    ("floormod", i32, 7, -2, -1),
    ("div", i32, INT_MIN, -1, INT_MIN),
    ("shr", i32, -8, 1, -4),
    ("shr", u32, 2**32 - 8, 1, 2**31 - 4),
    ("shl", i32, 1, 40, 0),
    ("mul_hi", i32, -1, 1, -1),
    ("min", u32, 2**32 - 1, 3, 3),
])
def test_interp_integer_semantics(op, t, a, c, expected):
    func = scalar_kernel(t, lambda b, x, y: b(op, t, x, y if op not in ("shl", "shr")
                                              else Const(u32, c)))
    assert int(run_scalar(func, t, a, c)) == expected


def test_interp_float_semantics():
    add = scalar_kernel(f32, lambda b, x, y: b("add", f32, x, y))
    assert run_scalar(add, f32, 0.1, 0.2) == np.float32(0.1) + np.float32(0.2)
    assert math.isnan(run_scalar(add, f32, math.inf, -math.inf))
    fma = scalar_kernel(f32, lambda b, x, y: b("fma", f32, x, y, Const(f32, -1.0)))
    x = float(np.float32(1 + 2**-12))
    assert run_scalar(fma, f32, x, x) == np.float32(2**-11 + 2**-24)  # one rounding, not two
    to_int = scalar_kernel(f32, lambda b, x, y: b("cvt", f32, b("cvt", i32, x)))
    assert run_scalar(to_int, f32, -2.7, 0.0) == -2.0
    assert run_scalar(to_int, f32, math.nan, 0.0) == 0.0
    assert run_scalar(to_int, f32, 1e20, 0.0) == np.float32(INT_MAX)
    ne = scalar_kernel(f32, lambda b, x, y: b("select", f32, b("cmp", bool_, x, y, pred="ne"),
                                               Const(f32, 1.0), Const(f32, 0.0)))
    assert run_scalar(ne, f32, math.nan, math.nan) == 1.0


def test_interp_memory_faults_and_traps():
    func = scalar_kernel(i32, lambda b, x, y: b.load(b.param("x", ptr=True), x, i32))
    ok = np.arange(4, dtype=np.int32) * 10
    out = np.zeros(1, np.int32)
    interp.run_function(func, {"a": 3, "b": 0, "x": ok, "out": out}, {})
    assert out[0] == 30
    with pytest.raises(interp.InterpError, match="out-of-bounds"):
        interp.run_function(func, {"a": 4, "b": 0, "x": ok, "out": out}, {})
    with pytest.raises(interp.InterpError, match="out-of-bounds"):
        interp.run_function(func, {"a": -1 << 29, "b": 0, "x": ok, "out": out}, {})
    b = Builder()
    b("trap", None)
    with pytest.raises(interp.Trap):
        interp.run_function(b.func, {}, {})
    b = Builder()
    b("shfl", i32, b.sreg(), Const(i32, 0), mode="idx")
    b.ret()
    with pytest.raises(interp.InterpError, match="simulator"):
        interp.run_function(b.func, {}, {})


def test_interp_shared_memory_vectors_and_atomics():
    b = Builder()
    b.func.arrays.append(SharedDecl("s", f32, 8))
    base = b("addr_of", i64, symbol="s")
    b("vstore", None, base, Const(f32, 1.0), Const(f32, 2.0), space="shared")
    pair = b("vload", f32, base, space="shared", n=2)
    total = b("add", f32, b("extract", f32, pair, index=0), b("extract", f32, pair, index=1))
    counter = b.param("c", ptr=True)
    old = b("atom", i32, counter, Const(i32, 5), space="global", op="add")
    b("store", None, base, total, space="shared")
    b("store", None, b("add", i64, counter, Const(i64, 4)), old, space="global")
    b.ret()
    shared = {"s": np.zeros(8, np.float32)}
    c = np.array([7, 0], np.int32)
    interp.run_function(b.func, {"c": c}, {}, shared)
    assert shared["s"][0] == 3.0 and list(c) == [12, 7]


# --- sccp ------------------------------------------------------------------------------------
def test_sccp_folds_and_removes_constant_branch():
    b = Builder()
    out, p = b.param("out", ptr=True), b.param("p")
    then, other, join = b.block("then"), b.block("else"), b.block("join")
    x = b("add", i32, Const(i32, 2), Const(i32, 3))
    b.cbr(b("cmp", bool_, x, 4, pred="gt"), then, other)
    b.at(then).br(join)
    b.at(other).br(join)
    merged = b.at(join).phi(i32)
    b.fill(merged, {then: Const(i32, 10), other: p})
    b.store(out, Const(i32, 0), b("mul", i32, merged, x))
    b.ret()
    func = run_pass(sccp.run, b.func)
    assert "cbr" not in ops(func) and other not in func.blocks
    store = [i for i in func.instrs() if i.op == "store"][0]
    assert store.args[1] == Const(i32, 50)


def test_sccp_exact_fixed_width_folding():
    cases = [
        (i32, "add", INT_MAX, 1, INT_MIN),
        (u32, "sub", 0, 1, 2**32 - 1),
        (i32, "div", -7, 2, -3),
        (i32, "rem", -7, 2, -1),
        (i32, "floordiv", -7, 2, -4),
        (f32, "add", float(np.float32(0.1)), float(np.float32(0.2)),
         float(np.float32(0.1) + np.float32(0.2))),
    ]
    for t, op, a, c, expected in cases:
        func = scalar_kernel(t, lambda b, x, y: b(op, t, Const(t, a), Const(t, c)))
        func = run_pass(sccp.run, func)
        store = [i for i in func.instrs() if i.op == "store"][0]
        assert store.args[1] == Const(t, expected), (op, store.args[1])


def test_sccp_leaves_division_by_zero_and_approximations():
    func = scalar_kernel(i32, lambda b, x, y: b("div", i32, Const(i32, 1), Const(i32, 0)))
    assert "div" in ops(run_pass(sccp.run, func))
    func = scalar_kernel(f32, lambda b, x, y: b("sin", f32, Const(f32, 1.0), approx=True))
    assert "sin" in ops(run_pass(sccp.run, func))


def test_sccp_loop_phi_of_a_constant_stays_constant():
    b = Builder()
    out, n = b.param("out", ptr=True), b.param("n")
    head, body, done = b.block("head"), b.block("body"), b.block("done")
    b.br(head)
    i, k = b.at(head).phi(i32), b.phi(i32)
    b.cbr(b("cmp", bool_, i, n, pred="lt"), body, done)
    k_next = b.at(body)("mul", i32, k, 1)
    i_next = b("add", i32, i, 1)
    b.br(head)
    b.fill(i, {b.func.entry: Const(i32, 0), body: i_next})
    b.fill(k, {b.func.entry: Const(i32, 7), body: k_next})
    b.at(done).store(out, Const(i32, 0), k)
    b.ret()
    func = run_pass(sccp.run, b.func)
    assert len(head.phis) == 1
    assert [i for i in func.instrs() if i.op == "store"][0].args[1] == Const(i32, 7)


# --- copyprop, cse, dce ----------------------------------------------------------------------
@pytest.mark.parametrize("t", [bf16, f16, f32, i64])
@pytest.mark.parametrize("form", ["bool", "select"])
def test_sccp_converts_a_bool_or_a_select_of_constants_directly(t, form):
    """`T(i32(a < b))` -> `T(a < b)`, `T(3 if a < b else -2)` -> `T(3) if a < b else T(-2)`:
    no cvt is left of a `selp` of constants (ptxas got that wrong for bf16 and f16)."""
    def body(b, x, y):
        less = b("cmp", bool_, x, y, pred="lt")
        as_int = (b("cvt", i32, less) if form == "bool"
                  else b("select", i32, less, Const(i32, 3), Const(i32, -2)))
        return b("cvt", t, as_int)
    func = scalar_kernel(i32, body)
    store = next(i for i in func.instrs() if i.op == "store")
    before = [run_scalar(func, t, a, c) for a, c in ((1, 2), (2, 1), (5, 5))]
    func = run_pass(sccp.run, func)
    func = run_pass(dce.run, func)
    converted = store.args[1]
    assert converted.op == ("cvt" if form == "bool" else "select")
    assert converted.args[0].op == "cmp"
    assert [run_scalar(func, t, a, c) for a, c in ((1, 2), (2, 1), (5, 5))] == before
    ones = {"bool": [1, 0, 0], "select": [3, -2, -2]}[form]
    assert before == [float(v) if t.is_float else v for v in ones]


def test_copyprop_removes_movs_and_trivial_phis():
    b = Builder()
    out, p = b.param("out", ptr=True), b.param("p")
    then, join = b.block("then"), b.block("join")
    copy_ = b("mov", i32, p)
    b.cbr(b("cmp", bool_, p, 0, pred="gt"), then, join)
    b.at(then).br(join)
    same = b.at(join).phi(i32)
    b.fill(same, {b.func.entry: copy_, then: copy_})
    b.store(out, Const(i32, 0), same)
    b.ret()
    func = run_pass(copyprop.run, b.func)
    assert "mov" not in ops(func) and "phi" not in ops(func)
    assert [i for i in func.instrs() if i.op == "store"][0].args[1] is p


def test_undef_phi_args_give_way_to_the_defined_value():
    b = Builder()
    out, p = b.param("out", ptr=True), b.param("p")
    then, join = b.block("then"), b.block("join")
    b.cbr(b("cmp", bool_, p, 0, pred="gt"), then, join)
    b.at(then).br(join)
    constant, copied = b.at(join).phi(i32), b.phi(i32)
    b.fill(constant, {b.func.entry: Undef(i32), then: Const(i32, 3)})
    b.fill(copied, {b.func.entry: Undef(i32), then: p})
    b.store(out, Const(i32, 0), b("add", i32, constant, copied))
    b.ret()
    func = run_pass(sccp.run, b.func)
    func = run_pass(copyprop.run, func)
    assert "phi" not in ops(func)
    add = [i for i in func.instrs() if i.op == "add" and i.type == i32][0]
    assert add.args == [Const(i32, 3), p]


def test_cse_merges_commuted_adds_and_readonly_loads_only():
    b = Builder()
    out, x = b.param("out", ptr=True), b.param("x", ptr=True)
    tid = b.sreg()
    first, second = b("add", i32, tid, 3), b("add", i32, Const(i32, 3), tid)
    nc1, nc2 = b.load(x, tid, f32, nc=True), b.load(x, tid, f32, nc=True)
    plain1 = b.load(out, tid, f32)
    b.store(out, first, nc1)
    plain2 = b.load(out, tid, f32)
    b.store(out, second, b("add", f32, b("add", f32, nc2, plain1), plain2))
    b.ret()
    func = run_pass(cse.run, b.func)
    assert second.block is None and nc2.block is None
    assert plain1.block is not None and plain2.block is not None
    assert ops(func).count("load") == 3


def test_cse_does_not_share_between_sibling_branches():
    b = Builder()
    out, p = b.param("out", ptr=True), b.param("p")
    square = lambda b: b("mul", i32, p, p)                     # noqa: E731
    merged, left, right = b.diamond(b("cmp", bool_, p, 0, pred="gt"), square, square, i32)
    then, other = left.block, right.block
    b.store(out, Const(i32, 0), merged)
    b.ret()
    run_pass(cse.run, b.func)
    assert left.block is then and right.block is other


@pytest.mark.parametrize("narrow", [f16, bf16, f32])
def test_sccp_narrowing_keeps_the_sign_of_zero(narrow):
    """Found by the differential generator: f16(-0.0 computed in f64) folded to +0.0."""
    b = Builder()
    out = b.param("out", ptr=True)
    wide = b("div", f64, b("cvt", f64, Const(i32, 0)), Const(f64, -0.5))    # -0.0
    narrowed = b("cvt", narrow, wide)
    b.store(out, Const(i32, 0), b("mul", narrow, Const(narrow, 0.0), narrowed))
    b.ret()
    func = run_pass(sccp.run, b.func)
    [stored] = [i.args[1] for i in func.instrs() if i.op == "store"]
    assert isinstance(stored, Const) and stored.value == 0 and math.copysign(1, stored.value) < 0


def test_cse_recomputes_cheap_integers_after_a_barrier():
    """Index arithmetic and its bound test are computed again after `barrier` instead of being
    kept live through it (in this block and in the blocks it dominates); float values, loads
    and everything before the barrier are still shared."""
    b = Builder()
    out, x, n = b.param("out", ptr=True), b.param("x", ptr=True), b.param("n")
    tid = b.sreg()
    j1 = b("mul", i32, tid, 4)
    in1 = b("cmp", bool_, j1, n, pred="lt")
    v1 = b.load(x, j1, f32, nc=True)
    s1 = b("mul", f32, v1, v1)
    j_same = b("mul", i32, tid, 4)               # before the barrier: shared
    b.store(out, j_same, s1)
    b("barrier", None)
    after = b.block("after")
    b.br(after)
    j2 = b.at(after)("mul", i32, tid, 4)
    in2 = b("cmp", bool_, j2, n, pred="lt")
    v2 = b.load(x, j2, f32, nc=True)
    s2 = b("mul", f32, v2, v2)
    j3 = b("mul", i32, tid, 4)                   # after it, shared with j2
    b.store(out, j3, b("add", f32, s2, b("select", f32, in1, s1, Const(f32, 0.0))))
    b.store(out, Const(i32, 0), b("select", f32, in2, s2, Const(f32, 0.0)))
    b.ret()
    run_pass(cse.run, b.func)
    assert j_same.block is None and j3.block is None
    assert j2.block is after and in2.block is after
    assert v2.block is None and s2.block is None          # a read-only load and a float: shared


def _guarded_chunks(chunks=3):
    """for k in static_range(chunks): if t*4 + 64k < n: out[t*4 + 64k] = x[row*n + t*4 + 64k]"""
    b = Builder()
    out, x, n, row = b.param("out", ptr=True), b.param("x", ptr=True), b.param("n"), b.param("r")
    t4 = b("shl", i32, b.sreg(), Const(u32, 2))
    base = b("mul", i32, row, n)
    for k in range(chunks):
        j = b("add", i32, t4, 64 * k)
        arm, join = b.block("arm"), b.block("join")
        b.cbr(b("cmp", bool_, j, n, pred="lt"), arm, join)
        b.at(arm)
        offset = b("mul_wide", i64, b("add", i32, base, j), Const(i32, 4))
        value = b("load", f32, b("add", i64, x, offset), space="global", nc=True)
        b("store", None, b("add", i64, out, b("mul_wide", i64, j, Const(i32, 4))), value,
          space="global")
        b.br(join)
        b.at(join)
    b.ret()
    return b.func


def test_hoist_merges_the_address_arithmetic_of_guarded_chunks():
    """After reassoc, every chunk's load address is `x + mul_wide(row * n + t * 4, 4)` plus a
    constant: hoist moves it out of the arms and cse keeps one."""
    func = _guarded_chunks()
    for run in (reassoc.run, hoist.run, cse.run, dce.run):
        func = run_pass(run, func)
    arms = [blk for blk in func.blocks if blk.name.startswith("arm")]
    assert len(arms) == 3
    for blk in arms:       # left in each arm: the store's own `mul_wide(j, 4)`, and adds
        ops_here = [i.op for i in blk.instrs if i.type is not None and i.type.is_int]
        assert ops_here.count("mul_wide") == 1 and "mul" not in ops_here
    loads = [i.args[0] for i in func.instrs() if i.op == "load"]
    bases = {a.args[0] for a in loads}             # each load: base + constant offset
    assert len(bases) == 1 and sorted(a.args[1].value for a in loads) == [0, 256, 512]
    xs = np.linspace(-3, 3, 400).astype(np.float32)
    inputs = [({"x": xs, "out": np.zeros(400, np.float32), "n": n, "r": r}, {"tid.x": t})
              for n in (5, 70, 130) for r in (0, 2) for t in (0, 3, 31)]
    assert_equivalent(_guarded_chunks(), inputs)


def test_hoist_leaves_what_only_one_arm_computes():
    func = _guarded_chunks(chunks=1)
    arm = next(blk for blk in func.blocks if blk.name.startswith("arm"))
    before = list(arm.instrs)
    run_pass(hoist.run, func)
    assert arm.instrs == before


def _both_arms_load(store_first: bool = False, one_arm: bool = False):
    """out[0] = x[i] * 2 if c else x[i] + 1, each arm loading x[i] through its own address
    (with `store_first`, the else arm stores to out[1] before its load; with `one_arm`, only the
    then arm loads, the else arm gives 0)."""
    b = Builder()
    x, out, i, c = b.param("x", ptr=True), b.param("out", ptr=True), b.param("i"), b.param("c")
    then, other, join = b.block("then"), b.block("else"), b.block("join")
    b.cbr(b("cmp", bool_, c, Const(i32, 0), pred="ne"), then, other)
    doubled = b.at(then)("mul", f32, b.load(x, i, f32), Const(f32, 2.0))
    b.br(join)
    b.at(other)
    if store_first:
        b.store(out, Const(i32, 1), Const(f32, 5.0))
    plus = Const(f32, 0.0) if one_arm else b("add", f32, b.load(x, i, f32), Const(f32, 1.0))
    b.br(join)
    value = b.at(join).phi(f32)
    Builder.fill(value, {then: doubled, other: plus})
    b.store(out, Const(i32, 0), value)
    b.ret()
    return b.func


def test_hoist_merges_a_load_both_arms_make():
    """`x[i] * 2 if c else x[i] + 1`: the load runs on every path, so it moves before the
    branch, once; the results are the interpreter's."""
    func = run_pass(hoist.run, _both_arms_load())
    loads = [i for i in func.instrs() if i.op == "load"]
    assert len(loads) == 1 and loads[0].block is func.entry
    for c in (0, 1):
        got = execute(func, {"x": np.arange(8, dtype=np.float32), "out": np.zeros(2, np.float32),
                             "i": 3, "c": c})["out"]
        assert got[0] == (6.0 if c else 4.0)


@pytest.mark.parametrize("case", ["store_first", "one_arm"])
def test_hoist_leaves_a_load_after_a_store_or_in_one_arm(case):
    """A load after a store in its arm may read what the store wrote; a load only one arm makes
    may be out of bounds where the other arm runs: both stay in their arms."""
    func = run_pass(hoist.run, _both_arms_load(**{case: True}))
    assert all(i.block is not func.entry for i in func.instrs() if i.op == "load")


def test_hoist_numbers_a_long_chain_without_recursing():
    """A 5,000-long unrolled integer chain used in two arms: numbering it must not recurse
    per link (it once ended in 'nested too deeply')."""
    b = Builder()
    out, n = b.param("out", ptr=True), b.param("n")
    s = b.sreg()
    for k in range(5000):
        s = b("add", i32, b("mul", i32, s, 3), k)
    join = None
    for k in range(2):
        arm, join = b.block("arm"), b.block("join")
        b.cbr(b("cmp", bool_, Const(i32, k), n, pred="lt"), arm, join)
        b.at(arm)
        b.store(out, Const(i32, k), b("add", i32, s, 1))
        b.br(join)
        b.at(join)
    b.ret()
    func = run_pass(hoist.run, b.func)
    adds = [i for i in func.instrs() if i.op == "add" and i.args == [s, Const(i32, 1)]]
    assert len(adds) == 2 and all(not a.block.name.startswith("arm") for a in adds)


def test_dce_removes_dead_code_and_dead_phi_cycles():
    b = Builder()
    out, n = b.param("out", ptr=True), b.param("n")
    head, body, done = b.block("head"), b.block("body"), b.block("done")
    unused = b("mul", i32, n, n)
    b.br(head)
    i, dead = b.at(head).phi(i32), b.phi(i32)
    b.cbr(b("cmp", bool_, i, n, pred="lt"), body, done)
    dead_next = b.at(body)("add", i32, dead, 2)
    i_next = b("add", i32, i, 1)
    b.br(head)
    b.fill(i, {b.func.entry: Const(i32, 0), body: i_next})
    b.fill(dead, {b.func.entry: Const(i32, 0), body: dead_next})
    b.at(done).store(out, Const(i32, 0), i)
    b.ret()
    func = run_pass(dce.run, b.func)
    assert unused.block is None and dead.block is None and dead_next.block is None
    assert i.block is head and "store" in ops(func)


# --- licm and strength reduction -------------------------------------------------------------
def two_entry_loop():
    """A loop whose header has two outside predecessors; its body computes an invariant
    `p * q`, loads `x[i]` and divides by `p`."""
    b = Builder()
    out, x, n, p, q = (b.param("out", ptr=True), b.param("x", ptr=True), b.param("n"),
                       b.param("p"), b.param("q"))
    side, head, body, done = b.block("side"), b.block("head"), b.block("body"), b.block("done")
    b.cbr(b("cmp", bool_, p, 0, pred="gt"), side, head)
    b.at(side).br(head)
    i, acc = b.at(head).phi(i32), b.phi(i32)
    b.cbr(b("cmp", bool_, i, n, pred="lt"), body, done)
    b.at(body)
    invariant = b("mul", i32, p, q)
    loaded = b.load(x, i, i32)
    quotient = b("div", i32, loaded, p)
    acc_next = b("add", i32, acc, b("add", i32, invariant, quotient))
    b.store(out, i, acc_next)
    i_next = b("add", i32, i, 1)
    b.br(head)
    b.fill(i, {b.func.entry: Const(i32, 0), side: Const(i32, 1), body: i_next})
    b.fill(acc, {b.func.entry: Const(i32, 0), side: Const(i32, 0), body: acc_next})
    b.at(done).ret()
    return b.func, invariant, loaded, quotient


def test_licm_hoists_invariant_into_a_new_preheader():
    func, invariant, loaded, quotient = two_entry_loop()
    func = run_pass(licm.run, func)
    (loop,) = natural_loops(func)
    preheader = loop.preheader()
    assert preheader is not None and invariant.block is preheader
    assert loaded.block in loop.blocks and quotient.block in loop.blocks
    assert len(preheader.phis) == 1  # i starts at 0 or 1; acc at 0 from both
    xs = np.arange(8, dtype=np.int32) * 7 - 20
    inputs = [({"x": xs, "out": np.zeros(8, np.int32), "n": n, "p": p, "q": 3}, {})
              for n in (0, 5, 8) for p in (-3, 4)]
    assert_equivalent(two_entry_loop()[0], inputs)


def counted_loop(step=1, index_type=i32, widen="mul_wide"):
    """for i in range(start, n, step): out[i] = x[i] * 2 + i."""
    b = Builder()
    out, x, n, start = b.param("out", ptr=True), b.param("x", ptr=True), b.param("n"), b.param("s")
    head, body, done = b.block("head"), b.block("body"), b.block("done")
    b.br(head)
    i = b.at(head).phi(i32)
    b.cbr(b("cmp", bool_, i, n, pred="lt"), body, done)
    b.at(body)
    if widen == "mul_wide":
        offset = b("mul_wide", i64, i, Const(i32, 4))
    elif widen == "row":  # x[row, i] with an invariant row start: a derived induction variable
        offset = b("mul_wide", i64, b("add", i32, b("mul", i32, start, n), i), Const(i32, 4))
    else:
        offset = b("mul", i64, b("cvt", i64, i), Const(i64, 4))
    value = b("load", f32, b("add", i64, x, offset), space="global", nc=True)
    result = b("add", f32, b("mul", f32, value, 2.0), b("cvt", f32, i))
    b("store", None, b("add", i64, offset, out), result, space="global")
    i_next = b("add", i32, i, step)
    b.br(head)
    b.fill(i, {b.func.entry: start, body: i_next})
    b.at(done).ret()
    return b.func


@pytest.mark.parametrize("step, widen", [(1, "mul_wide"), (3, "mul_wide"), (2, "cvt"),
                                         (1, "row")])
def test_strength_reduction_keeps_an_index_that_stays_live(step, widen):
    """`i` is the loop test's and a value's operand: pointers beside it would only add
    registers, so the addresses stay computed from it."""
    func = run_pass(licm.run, counted_loop(step, widen=widen))
    func = run_pass(strength.run, func)
    (loop,) = natural_loops(func)
    assert not [p for p in loop.header.phis if p.type == i64]
    xs = np.linspace(-3, 3, 40).astype(np.float32)
    inputs = [({"x": xs, "out": np.zeros(40, np.float32), "n": n, "s": s}, {})
              for n in (0, 5, 12) for s in (0, 2)]
    assert_equivalent(func, inputs)


def pointer_loop(step=1, widen="mul_wide"):
    """for c in range(n): out[s + c * step] = x[s + c * step] * 2, with the index `i` its own
    induction variable that only addresses use."""
    b = Builder()
    out, x, n, start = b.param("out", ptr=True), b.param("x", ptr=True), b.param("n"), b.param("s")
    head, body, done = b.block("head"), b.block("body"), b.block("done")
    b.br(head)
    c, i = b.at(head).phi(i32), b.phi(i32)
    b.cbr(b("cmp", bool_, c, n, pred="lt"), body, done)
    b.at(body)
    if widen == "mul_wide":
        offset = b("mul_wide", i64, i, Const(i32, 4))
    else:
        offset = b("mul", i64, b("cvt", i64, i), Const(i64, 4))
    value = b("load", f32, b("add", i64, x, offset), space="global", nc=True)
    b("store", None, b("add", i64, offset, out), b("mul", f32, value, 2.0), space="global")
    c_next, i_next = b("add", i32, c, 1), b("add", i32, i, step)
    b.br(head)
    b.fill(c, {b.func.entry: Const(i32, 0), body: c_next})
    b.fill(i, {b.func.entry: start, body: i_next})
    b.at(done).ret()
    return b.func


@pytest.mark.parametrize("step, widen", [(1, "mul_wide"), (3, "mul_wide"), (2, "cvt")])
def test_strength_reduction_replaces_an_index_only_addresses_use(step, widen):
    func = run_pass(licm.run, pointer_loop(step, widen))
    func = run_pass(strength.run, func)
    func = run_pass(sccp.run, func)
    func = run_pass(dce.run, func)
    (loop,) = natural_loops(func)
    assert len([p for p in loop.header.phis if p.type == i64]) == 2
    assert [p.type for p in loop.header.phis if p.type != i64] == [i32]     # the counter only
    int_ops = [i.op for b in loop.blocks for i in b.instrs if i.type is not None and i.type.is_int]
    assert "mul_wide" not in int_ops and "mul" not in int_ops
    xs = np.linspace(-3, 3, 40).astype(np.float32)
    inputs = [({"x": xs, "out": np.zeros(40, np.float32), "n": n, "s": s}, {})
              for n in (0, 5, 12) for s in (0, 2)]
    assert_equivalent(pointer_loop(step, widen), inputs)


def test_strength_turns_mul_by_power_of_two_into_shift():
    func = run_pass(strength.run, scalar_kernel(i32, lambda b, x, y: b("mul", i32, x, 8)))
    assert "shl" in ops(func) and "mul" not in ops(func)
    for a in (3, -5, INT_MAX):
        assert int(run_scalar(func, i32, a, 0)) == interp.wrap_int(a * 8, i32)


@pytest.mark.parametrize("t, wide, pairs", [
    (u32, u64, [(0xFFFFFFFF, 0xFFFFFFFF), (0x9E3779B9, 0xD2511F53), (3, 0)]),
    (i32, i64, [(INT_MIN, INT_MIN), (INT_MIN, INT_MAX), (-1, 7), (-77777, 99999)]),
])
def test_widen_products_of_extended_ints_and_their_high_half(t, wide, pairs):
    """u64(a) * u64(b) -> mul_wide(a, b); u32(that >> 32) -> mul_hi(a, b) where the product
    has no other use; a constant factor counts when it fits the 32-bit type."""
    def high(b, x, y):
        product = b("mul", wide, b("cvt", wide, x), b("cvt", wide, y))
        return b("cvt", t, b("shr", wide, product, Const(i32, 32)))

    def low_and_scaled(b, x, y):
        product = b("mul", wide, b("cvt", wide, x), b("cvt", wide, y))
        scaled = b("mul", wide, b("cvt", wide, x), Const(wide, 0x7FFFFFFF))
        hi = b("cvt", t, b("shr", wide, product, Const(i32, 32)))
        return b("add", t, b("add", t, hi, b("cvt", t, product)), b("cvt", t, scaled))

    for body, wides, highs in ((high, 0, 1), (low_and_scaled, 2, 0)):
        func = run_pass(dce.run, run_pass(widen.run, scalar_kernel(t, body)))
        found = ops(func)
        assert "mul" not in found and (found.count("mul_wide") - 1, found.count("mul_hi")) == (wides, highs)
        for a, c in pairs:     # (one mul_wide addresses the store)
            assert run_scalar(func, t, a, c) == run_scalar(scalar_kernel(t, body), t, a, c)


def _digit_and_hash(b, key, shift):
    """i32((i64(key) >> shift) & 255) + i32((i64(key) << shift) ^ ~(key * 40503 - 7)), as
    NumPy's promotion of u32 and i32 writes `(key >> shift) & 255` and the rest."""
    wide = b("cvt", i64, key)
    digit = b("cvt", i32, b("and", i64, b("shr", i64, wide, shift), Const(i64, 255)))
    hashed = b("xor", i64, b("shl", i64, wide, shift),
               b("not", i64, b("sub", i64, b("mul", i64, wide, Const(i64, 40503)), Const(i64, 7))))
    return b("add", i32, digit, b("cvt", i32, b("neg", i64, hashed)))


def test_narrow_computes_truncated_i64_arithmetic_in_32_bits():
    """What is only ever truncated to 32 bits is computed in 32: a shift of a zero-extended
    u32 (counts of 32 and more, and negative ones read as unsigned, shift everything out in
    both widths), and adds, products, logic and left shifts of anything; the interpreter gives
    the same values before and after."""
    b = Builder()
    key, shift, out = b.param("key", u32), b.param("shift", i32), b.param("out", ptr=True)
    b.store(out, Const(i32, 0), _digit_and_hash(b, key, shift))
    b.ret()
    before = copy.deepcopy(b.func)
    func = run_pass(dce.run, run_pass(copyprop.run, run_pass(narrow.run, b.func)))
    assert not [i for i in func.instrs() if i.type in (i64, u64) and i.op != "mul_wide"
                and i.op != "add" and i.op != "param"]      # (the store's address stays 64-bit)
    shifts = [i for i in func.instrs() if i.op == "shr"]
    assert [s.type for s in shifts] == [u32]
    for k in (0, 1, 0x80000000, 0xFFFFFFFF, 0x12345678):
        for s in (0, 1, 7, 24, 31, 32, 33, 63, 64, 100, -1, -32):
            got, want = np.zeros(1, np.int32), np.zeros(1, np.int32)
            interp.run_function(func, {"key": k, "shift": s, "out": got}, {})
            interp.run_function(before, {"key": k, "shift": s, "out": want}, {})
            assert got[0] == want[0], (k, s, got[0], want[0])


def test_narrow_keeps_what_needs_the_high_half():
    """A 64-bit value with a use that needs its high half (a store of it) stays 64-bit, and
    so does a right shift of a sign extension; a sum truncated to be a shift's count is
    narrowed."""
    b = Builder()
    key, k, out = b.param("key", i32), b.param("k", u32), b.param("out", ptr=True)
    wide = b("add", i64, b("cvt", i64, key), Const(i64, 1))
    b.store(out, Const(i32, 0), b("cvt", i32, wide))
    b.store(out, Const(i32, 1), wide)
    b.store(out, Const(i32, 2), b("cvt", i32, b("shr", i64, b("cvt", i64, key), Const(i32, 3))))
    count = b("cvt", i32, b("add", i64, b("cvt", i64, k), Const(i64, 2)))
    b.store(out, Const(i32, 3), b("shl", u32, k, count))
    b.ret()
    func = run_pass(narrow.run, b.func)
    assert [i.type for i in func.instrs() if i.op == "shr"] == [i64]
    assert [i.args[1] for i in func.instrs() if i.op == "add" and i.type is i32] == [Const(i32, 2)]


def _memory_kernel(between):
    """x[i] += 1; (between); x[i] *= 2; out[i] = x[i] + y[j], y[j] loaded twice: returns the
    function and its loads and stores in order."""
    b = Builder()
    x, out, i, j = b.param("x", ptr=True), b.param("out", ptr=True), b.param("i"), b.param("j")
    addr = b("add", i64, x, b("mul_wide", i64, i, Const(i32, 4)))
    y = b("add", i64, x, b("mul_wide", i64, j, Const(i32, 4)))
    first = b("load", f32, addr, space="global")
    b("store", None, addr, b("add", f32, first, 1.0), space="global")
    between(b, x)
    second = b("load", f32, addr, space="global")
    b("store", None, addr, b("mul", f32, second, 2.0), space="global")
    third = b("load", f32, addr, space="global")
    total = b("add", f32, third, b("add", f32, b("load", f32, y, space="global"),
                                   b("load", f32, y, space="global")))
    b.store(out, i, total)
    b.ret()
    return b.func


@pytest.mark.parametrize("between, loads, stores, interpretable", [
    (lambda b, x: None, 2, 2, True),                                        # x once, y once
    (lambda b, x: b("store", None, b("param", i64, name="k_s"), Const(f32, 0.0), space="shared"), 2, 3,
     False),
    (lambda b, x: b("barrier", None), 3, 3, False),
    (lambda b, x: b("store", None, b("add", i64, x, Const(i64, 64)), Const(f32, 5.0), space="global"), 3, 4,
     True),
    (lambda b, x: b("atom", f32, x, Const(f32, 1.0), op="add", space="global"), 3, 3, True),
])
def test_memforward_within_a_block(between, loads, stores, interpretable):
    """A load of what the block last stored or loaded there is that value, and a store that a
    later one overwrites unread goes; a store elsewhere in the same state space (it may alias),
    a barrier or an atomic stops both; a shared store leaves global memory alone."""
    func = _memory_kernel(between)
    before = copy.deepcopy(func)
    func = run_pass(memforward.run, func)
    found = ops(func)
    assert (found.count("load"), found.count("store")) == (loads, stores), found
    for i, j in ((0, 0), (1, 3), (16, 2), (5, 16)) if interpretable else ():
        x = np.arange(32, dtype=np.float32)    # (element 16 is where the aliasing store writes)
        args = {"x": x, "out": np.zeros(32, np.float32), "i": i, "j": j}
        assert all(same_arrays(a, b) for a, b in zip(execute(before, args).values(),
                                                     execute(func, args).values()))


def test_widen_leaves_other_products():
    def body(b, x, y):     # an i32 sign-extended into u64, a constant beyond 32 bits, -1 (a negation)
        mixed = b("mul", u64, b("cvt", u64, x), b("cvt", u64, x))
        big = b("mul", i64, b("cvt", i64, x), Const(i64, 1 << 33))
        negated = b("mul", i64, Const(i64, -1), b("cvt", i64, y))
        return b("cvt", i32, b("add", i64, b("add", i64, b("cvt", i64, mixed), big), negated))
    func = run_pass(widen.run, scalar_kernel(i32, body))
    assert ops(func).count("mul") == 3 and ops(func).count("mul_wide") == 1   # the store's


@pytest.mark.parametrize("a, c", [(5, 7), (-9, 3), (INT_MAX, 1), (INT_MIN, -1)])
def test_reassoc_moves_constants_outward_exactly(a, c):
    # ((a + 3) + b) + ((b + -2) * 1 + a): the integer adds reassociate exactly, wrapping included
    def body(b, x, y):
        left = b("add", i32, b("add", i32, x, 3), y)
        right = b("add", i32, b("add", i32, y, -2), x)
        return b("add", i32, left, right)
    func = run_pass(reassoc.run, scalar_kernel(i32, body))
    (store,) = [i for i in func.instrs() if i.op == "store"]
    stored = store.args[-1]
    assert stored.op == "add" and any(isinstance(v, Const) for v in stored.args)
    expected = interp.wrap_int(2 * a + 2 * c + 1, i32)
    assert int(run_scalar(func, i32, a, c)) == expected
    assert int(run_scalar(scalar_kernel(i32, body), i32, a, c)) == expected


def test_reassoc_splits_the_constant_out_of_a_wide_offset():
    b = Builder()
    base, i, out = b.param("x", ptr=True), b.param("i"), b.param("out", ptr=True)
    wide = b("mul_wide", i64, b("add", i32, i, 3), 4)
    b("store", None, b("add", i64, out, wide), Const(i32, 0), space="global")
    b.ret()
    func = run_pass(reassoc.run, b.func)
    (mul,) = [x for x in func.instrs() if x.op == "mul_wide"]
    assert mul.args[0] is i
    (address,) = [x for x in func.instrs() if x.op == "store"]
    assert address.args[0].op == "add" and Const(i64, 12) in address.args[0].args


def test_reassoc_takes_a_signed_subtraction_of_a_constant_as_an_offset():
    """`x[r + (i - 1)]`: the neighbour below is the same base 4 bytes back (`[%rd3+-4]`), as
    `x[r + (i + 1)]` is 4 bytes on; an unsigned `i - 1` stays (its wrapped -1 would widen)."""
    for t, shifted in ((i32, True), (u32, False)):
        b = Builder()
        i, r, out = b.param("i", t), b.param("r", t), b.param("out", ptr=True)
        index = b("add", t, r, b("sub", t, i, Const(t, 1)))
        wide = b("mul_wide", i64 if t.is_signed else u64, index, Const(t, 4))
        if not t.is_signed:
            wide = b("cvt", i64, wide)
        b("store", None, b("add", i64, out, wide), Const(i32, 0), space="global")
        b.ret()
        func = run_pass(reassoc.run, b.func)
        (address,) = [x.args[0] for x in func.instrs() if x.op == "store"]
        offsets = [a for a in address.args if isinstance(a, Instr) and a.op == "add"]
        assert any(Const(i64, -4) in a.args for a in offsets + [address]) == shifted, t
        for iv, rv in ((1, 0), (5, 2), (3, 4)):
            got = execute(func, {"i": iv, "r": rv, "out": np.full(8, 9, np.int32)})
            assert list(got["out"]) == [0 if k == rv + iv - 1 else 9 for k in range(8)]


@pytest.mark.parametrize("a", [5, -9, INT_MAX, INT_MIN, 1 << 30])
def test_reassoc_distributes_constant_offsets_through_mul_and_shl(a):
    # ((a + 7) * 132) and ((a + -3) << 4): the constant leaves the product, wrapping included
    def body(b, x, y):
        return b("add", i32, b("mul", i32, b("add", i32, x, 7), 132),
                 b("shl", i32, b("add", i32, x, -3), Const(u32, 4)))
    func = run_pass(reassoc.run, scalar_kernel(i32, body))
    (store,) = [i for i in func.instrs() if i.op == "store"]
    stored = store.args[-1]
    assert stored.op == "add" and Const(i32, 7 * 132 - 3 * 16) in stored.args
    live = {id(a) for i in func.instrs() for a in i.args}
    assert not [i for i in func.instrs() if i.op in ("mul", "shl") and id(i) in live
                and any(x.op == "add" for x in i.args if isinstance(x, Instr))]
    expected = interp.wrap_int((a + 7) * 132 + ((a - 3) << 4), i32)
    assert int(run_scalar(func, i32, a, 0)) == expected
    assert int(run_scalar(scalar_kernel(i32, body), i32, a, 0)) == expected


def test_reassoc_gives_unrolled_tile_accesses_one_base():
    # s[(k + 1) * 132 + m] and s[k * 132 + m] (shared, f32): one address plus 528 bytes
    b = Builder()
    k, m = b.param("k"), b.param("m")
    base = b("addr_of", i64, symbol="smem_s")
    b.func.arrays.append(SharedDecl("smem_s", f32, 8 * 132))
    for row in (0, 1):
        index = b("add", i32, b("mul", i32, b("add", i32, k, row) if row else k, 132), m)
        address = b("add", i64, base, b("mul_wide", i64, index, Const(i32, 4)))
        b("store", None, address, Const(f32, 1.0), space="shared")
    b.ret()
    func = run_pass(cse.run, run_pass(reassoc.run, b.func))
    first, second = [i.args[0] for i in func.instrs() if i.op == "store"]
    assert second.op == "add" and second.args == [first, Const(i64, 528)]


def test_reassoc_splits_a_guarded_index_when_its_product_exists():
    """`x[i] ...; x[i + 1] if i + 1 < n`: `i + 1` stays for the test, and the arm's address
    becomes the product of `x[i]` plus 4 (an immediate offset, `[%rd4+4]`)."""
    def kernel(with_product):
        b = Builder()
        x, i, n, out = b.param("x", ptr=True), b.param("i"), b.param("n"), b.param("out", ptr=True)
        if with_product:
            b.store(out, Const(i32, 0), b.load(x, i, f32, nc=True))
        j = b("add", i32, i, 1)
        arm, join = b.block("arm"), b.block("join")
        b.cbr(b("cmp", bool_, j, n, pred="lt"), arm, join)
        b.at(arm).store(out, Const(i32, 1), b.load(x, j, f32, nc=True))
        b.br(join)
        b.at(join).ret()
        return b.func, arm
    func, arm = kernel(True)
    run_pass(reassoc.run, func)
    (wide,) = [v for v in arm.instrs if v.op == "mul_wide" and v.args[0].type == i32
               and v.args[1] == Const(i32, 4) and not isinstance(v.args[0], Const)]
    assert wide.args[0].op == "param"                    # mul_wide(i, 4), no longer of i + 1
    xs = np.arange(8, dtype=np.float32) + 0.5
    for i, n in ((2, 4), (3, 4), (6, 8)):
        for variant in (kernel(True)[0], func):
            got = execute(variant, {"x": xs, "i": i, "n": n, "out": np.zeros(2, np.float32)})
            assert list(got["out"]) == [xs[i], xs[i + 1] if i + 1 < n else 0.0]
    func, arm = kernel(False)                            # no product of i to share: left alone
    run_pass(reassoc.run, func)
    assert any(v.op == "mul_wide" and v.args[0].op == "add" for v in arm.instrs)


def test_reassoc_join_existing_gives_row_chunks_one_base(monkeypatch):
    """With `JOIN_EXISTING` (off by default, a GPU experiment): `row * n + (t * 4 + 128 k)`,
    whose column also indexes `w`, becomes `(row * n + t * 4) + 128 k`, so the chunks of
    `x[row, j:j + 4]` load from one address plus 512 k bytes; results unchanged."""
    def kernel():
        b = Builder()
        x, w, out = b.param("x", ptr=True), b.param("w", ptr=True), b.param("out", ptr=True)
        row, n, m = b.param("r"), b.param("n"), b.param("m")
        t4 = b("shl", i32, b.sreg(), Const(u32, 2))
        x_row, out_row = b("mul", i32, row, n), b("mul", i32, row, m)
        for k in range(3):
            j = b("add", i32, t4, 128 * k) if k else t4
            v = b.load(x, b("add", i32, x_row, j), f32, nc=True)
            b.store(out, b("add", i32, out_row, j), b("mul", f32, v, b.load(w, j, f32, nc=True)))
        b.ret()
        return b.func
    monkeypatch.setattr(reassoc, "JOIN_EXISTING", True)
    func = kernel()
    for run in (cse.run, reassoc.run, cse.run, dce.run):
        func = run_pass(run, func)
    offset = [i.args[0] for i in func.instrs() if i.op in ("load", "store")
              and i.args[0].op == "add" and isinstance(i.args[0].args[1], Const)]
    assert len({a.args[0] for a in offset}) == 3         # x's, w's and out's: one base each
    assert sorted(a.args[1].value for a in offset) == [512] * 3 + [1024] * 3
    xs, ws = np.linspace(-2, 2, 2048).astype(np.float32), np.linspace(1, 3, 512).astype(np.float32)
    for r, n, m, t in ((0, 512, 512, 0), (2, 600, 500, 31), (1, 700, 800, 5)):
        args = {"x": xs, "w": ws, "out": np.zeros(2048, np.float32), "r": r, "n": n, "m": m}
        assert same_arrays(execute(kernel(), args, {"tid.x": t})["out"],
                           execute(func, args, {"tid.x": t})["out"])


# --- speculate -------------------------------------------------------------------------------
def _guarded_shared_sum(offsets=range(7), space="shared", extra=()):
    """smem[k] = 3k + 1 for k < 8; s = t; for w: if w < t: s += smem[w]; out[0] = s"""
    b = Builder()
    out = b.param("out", ptr=True)
    b.func.arrays.append(SharedDecl("smem", i32, 8))
    base = b("addr_of", i64, symbol="smem")
    t = b.sreg()
    for k in range(8):
        b("store", None, b("add", i64, base, Const(i64, 4 * k)), Const(i32, 3 * k + 1),
          space="shared")
    s = t
    for w in offsets:
        arm, join = b.block("arm"), b.block("join")
        b.cbr(b("cmp", bool_, Const(i32, w), t, pred="lt"), arm, join)
        b.at(arm)
        if space == "global":
            value = b.load(out, Const(i32, w), i32)
        else:
            value = b("load", i32, b("add", i64, base, Const(i64, 4 * w)), space="shared")
        for op in extra:
            value = b(op, i32, value, 1)
        total = b("add", i32, s, value)
        b.br(join)
        phi = b.at(join).phi(i32)
        Builder.fill(phi, {arm: total, phi.block.preds[0] if phi.block.preds[0] is not arm
                           else phi.block.preds[1]: s})
        s = phi
    b.store(out, Const(i32, 0), s)
    b.ret()
    return b.func


def _sum_reference(t, offsets=range(7), extra_ops=0):
    return t + sum(3 * w + 1 + extra_ops for w in offsets if w < t)


def test_speculate_turns_guarded_shared_loads_into_selects():
    """`if w < t: s += smem[w]` with w constant: the loads run unconditionally and the sum adds
    `select(w < t, smem[w], 0)`; no branch is left."""
    func = run_pass(speculate.run, _guarded_shared_sum())
    assert "cbr" not in ops(func)
    selects = [i for i in func.instrs() if i.op == "select"]
    assert len(selects) == 7 and all(i.args[2] == Const(i32, 0) for i in selects)
    adds = [i for i in func.instrs() if i.op == "add" and i.type == i32]
    assert all(any(a in selects for a in add.args) for add in adds)
    for t in (0, 1, 4, 7, 30):
        got = execute(func, {"out": np.zeros(8, np.int32)}, {"tid.x": t})
        assert got["out"][0] == _sum_reference(t)
    inputs = [({"out": np.zeros(8, np.int32)}, {"tid.x": t}) for t in (0, 3, 8)]
    assert_equivalent(_guarded_shared_sum(), inputs)


@pytest.mark.parametrize("case", ["global", "out_of_bounds", "too_long", "negative"])
def test_speculate_leaves_arms_that_could_fault_or_cost(case):
    """A global load (maybe out of bounds exactly when the guard is false), a shared load past
    the array's end or before its start, and an arm of more than MAX_ARM instructions stay
    behind their branch."""
    func = {"global": lambda: _guarded_shared_sum(range(2), space="global"),
            "out_of_bounds": lambda: _guarded_shared_sum([8]),
            "negative": lambda: _guarded_shared_sum([-1]),
            "too_long": lambda: _guarded_shared_sum(range(2), extra=("add", "xor", "or"))}[case]()
    before = ops(func)
    run_pass(speculate.run, func)
    assert ops(func) == before


def test_speculate_keeps_shuffles_and_stores_in_their_arm():
    b = Builder()
    out, n = b.param("out", ptr=True), b.param("n")
    t = b.sreg()
    up = b("shfl", i32, t, Const(i32, 1), mode="up", clamp=0)
    for effect in ("shfl", "store"):
        arm, join = b.block("arm"), b.block("join")
        b.cbr(b("cmp", bool_, t, n, pred="lt"), arm, join)
        b.at(arm)
        if effect == "shfl":
            b("shfl", i32, up, Const(i32, 2), mode="up", clamp=0)
        else:
            b.store(out, t, up)
        b.br(join)
        b.at(join)
    b.ret()
    before = ops(b.func)
    run_pass(speculate.run, b.func)
    assert ops(b.func) == before


@pytest.mark.parametrize("t", [f32, i32])
def test_speculate_diamond_and_the_sign_of_zero(t):
    """`r = a + v if c else a * v` (both arms cheap) becomes a select; `c ? a + v : a` becomes
    `a + (c ? v : -0.0)`, which keeps a exactly, -0.0 included (0.0 would not)."""
    b = Builder()
    out = b.param("out", ptr=True)
    a, v, c = b.param("a", t), b.param("v", t), b.param("c")
    cond = b("cmp", bool_, c, Const(i32, 0), pred="gt")
    both, _, _ = b.diamond(cond, lambda b: b("add", t, a, v), lambda b: b("mul", t, a, v), t)
    join = both.block
    arm, end = b.block("arm"), b.block("end")
    b.cbr(cond, arm, end)
    added = b.at(arm)("add", t, a, v)
    b.br(end)
    kept = b.at(end).phi(t)
    Builder.fill(kept, {arm: added, join: a})
    b.store(out, Const(i32, 0), both)
    b.store(out, Const(i32, 1), kept)
    b.ret()
    reference = copy.deepcopy(b.func)
    func = run_pass(speculate.run, b.func)
    assert "cbr" not in ops(func) and ops(func).count("select") == 2
    values = [(-0.0, 0.0), (-0.0, -0.0), (1.5, -2.0), (3.0, 0.25)] if t is f32 else \
             [(0, 0), (-7, 3), (INT_MAX, 1)]
    for x, y in values:
        for flag in (0, 1):
            args = {"out": np.zeros(2, t.numpy), "a": x, "v": y, "c": flag}
            assert same_arrays(execute(reference, args)["out"], execute(func, args)["out"])


def test_speculate_takes_a_nested_branch_inside_out():
    """`if k & M > INF: k = NAN elif k == SIGN: k = 0` (a float key's canonical form): the inner
    branch becomes a select, its join merges into the outer arm, and that arm is then short
    enough to become a select too, so no branch on the loaded value is left."""
    b = Builder()
    out, key = b.param("out", ptr=True), b.param("key", u32)
    is_nan = b("cmp", bool_, b("and", u32, key, Const(u32, 0x7FFFFFFF)), Const(u32, 0x7F800000),
               pred="gt")
    nan_arm, other, inner_zero, inner_join, join = (b.block(n) for n in
                                                     ("nan", "other", "zero", "ijoin", "join"))
    b.cbr(is_nan, nan_arm, other)
    b.at(nan_arm).br(join)
    b.at(other).cbr(b("cmp", bool_, key, Const(u32, 0x80000000), pred="eq"), inner_zero, inner_join)
    b.at(inner_zero).br(inner_join)
    inner = b.at(inner_join).phi(u32)
    Builder.fill(inner, {inner_zero: Const(u32, 0), other: key})
    b.br(join)
    outer = b.at(join).phi(u32)
    Builder.fill(outer, {nan_arm: Const(u32, 0x7FC00000), inner_join: inner})
    b.store(out, Const(i32, 0), outer)
    b.ret()
    reference = copy.deepcopy(b.func)
    func = run_pass(speculate.run, b.func)
    assert "cbr" not in ops(func) and ops(func).count("select") == 2
    for k in (0, 1, 0x80000000, 0x7F800000, 0x7FC00001, 0xFFC00000, 0x3F800000, 0xBF800000):
        args = {"out": np.zeros(1, np.uint32), "key": k}
        assert execute(reference, args)["out"][0] == execute(func, args)["out"][0]


def test_speculate_rewrites_a_sum_only_where_the_phi_is_its_one_use():
    """The arm's `s + v` also feeds a second phi: it must stay `s + v` (plain selects)."""
    b = Builder()
    out = b.param("out", ptr=True)
    s, v, c = b.param("a"), b.param("v"), b.param("c")
    arm, join = b.block("arm"), b.block("join")
    b.cbr(b("cmp", bool_, c, Const(i32, 0), pred="gt"), arm, join)
    total = b.at(arm)("add", i32, s, v)
    b.br(join)
    first, second = b.at(join).phi(i32), b.phi(i32)
    Builder.fill(first, {arm: total, b.func.entry: s})
    Builder.fill(second, {arm: total, b.func.entry: Const(i32, 0)})
    b.store(out, Const(i32, 0), first)
    b.store(out, Const(i32, 1), second)
    b.ret()
    func = run_pass(speculate.run, b.func)
    assert total.args == [s, v] and "cbr" not in ops(func)
    for flag in (0, 1):
        got = execute(func, {"out": np.zeros(2, np.int32), "a": 5, "v": 3, "c": flag})["out"]
        assert list(got) == ([8, 8] if flag else [5, 0])


def test_speculate_bool_arm_becomes_a_plain_select():
    """`if c: flag = flag or other` on bools: a select of the two values (no identity operand)."""
    b = Builder()
    out, p, q = b.param("out", ptr=True), b.param("p"), b.param("q")
    flag, other = b("cmp", bool_, p, Const(i32, 0), pred="gt"), b("cmp", bool_, q, Const(i32, 0), pred="gt")
    arm, join = b.block("arm"), b.block("join")
    b.cbr(b("cmp", bool_, p, q, pred="lt"), arm, join)
    either = b.at(arm)("or", bool_, flag, other)
    b.br(join)
    result = b.at(join).phi(bool_)
    Builder.fill(result, {arm: either, b.func.entry: flag})
    b.store(out, Const(i32, 0), b("select", i32, result, Const(i32, 1), Const(i32, 0)))
    b.ret()
    reference = copy.deepcopy(b.func)
    func = run_pass(speculate.run, b.func)
    assert "cbr" not in ops(func) and either.args == [flag, other]
    for p_, q_ in ((-1, 1), (1, -1), (-2, -1), (1, 2), (0, 0)):
        args = {"out": np.zeros(1, np.int32), "p": p_, "q": q_}
        assert execute(func, args)["out"][0] == execute(reference, args)["out"][0]


# --- comparisons of shifted values --------------------------------------------------------------
@pytest.mark.parametrize("t", [i32, u32])
@pytest.mark.parametrize("k", [0, 1, 5, 31])
def test_sccp_compares_a_shifted_value_before_the_shift(t, k):
    """`(x >> k) < C` -> `x < C << k` (and <=, >, >=, constant on either side): exact for
    every x where the new bound fits the type, and left alone where it does not."""
    top = INT_MAX if t is i32 else (1 << 32) - 1
    low = INT_MIN if t is i32 else 0
    constants = sorted({0, 1, 7, 2, top >> k, (top >> k) - 1, low >> k, (low >> k) + 1,
                        -1 if t is i32 else 100})
    xs = sorted({low, low + 1, -33 if t is i32 else 33, -32 if t is i32 else 32, -1 if t is i32 else 1,
                 0, 31, 32, 33, 255, top - 1, top} | {(c << k) + d for c in constants
                                                      for d in (-1, 0, 1) if low <= (c << k) + d <= top})
    for pred in ("lt", "le", "gt", "ge"):
        for constant in constants:
            for swapped in (False, True):
                def body(b, x, _):
                    shifted = b("shr", t, x, Const(u32, k))
                    pair = (Const(t, constant), shifted) if swapped else (shifted, Const(t, constant))
                    test = b("cmp", bool_, *pair, pred=pred)
                    return b("select", t, test, Const(t, 1), Const(t, 0))
                func = run_pass(sccp.run, scalar_kernel(t, body))
                reference = scalar_kernel(t, body)
                (cmp,) = [i for i in func.instrs() if i.op == "cmp"]
                moved = any(isinstance(a, Instr) and a.op == "param" for a in cmp.args)
                bound = constant << k if (pred in ("lt", "ge")) != swapped else ((constant + 1) << k) - 1
                assert moved == (low <= bound <= top), (pred, constant, swapped)
                for x in xs:
                    assert run_scalar(func, t, x, 0) == run_scalar(reference, t, x, 0), \
                        (pred, constant, swapped, x)


# --- repeated min/max ---------------------------------------------------------------------------
REPEATED_MIN_MAX = {"op(op(a, b), b)": lambda m, a, b, z: m(m(a, b), b),
                    "op(b, op(a, b))": lambda m, a, b, z: m(b, m(a, b)),
                    "op(op(a, b), a)": lambda m, a, b, z: m(m(a, b), a),
                    "op(op(a, 0), 0)": lambda m, a, b, z: m(m(a, z), z),
                    "op(0, op(0, a))": lambda m, a, b, z: m(z, m(z, a))}


@pytest.mark.parametrize("t", [i32, u32, i64])
@pytest.mark.parametrize("op", ["min", "max"])
@pytest.mark.parametrize("form", [*REPEATED_MIN_MAX, "op(op(a, 0), b)"])
def test_sccp_drops_a_min_or_max_repeated_on_one_of_its_operands(t, op, form):
    """`max(max(a, b), b)` is `max(a, b)`: one instruction stays (a workaround as well: ptxas
    got `max(max(x, 0), 0) == 0` wrong, max_branch_probe.py). `max(max(a, 0), b)` keeps both."""
    build = REPEATED_MIN_MAX.get(form, lambda m, a, b, z: m(m(a, z), b))

    def body(builder, a, b):
        return build(lambda x, y: builder(op, t, x, y), a, b, Const(t, 0))
    func = run_pass(sccp.run, scalar_kernel(t, body))
    reference = scalar_kernel(t, body)
    assert len([i for i in func.instrs() if i.op == op]) == (1 if form in REPEATED_MIN_MAX else 2)
    values = [0, 1, 5, -1, -7, INT_MIN, INT_MAX] if t.is_signed else [0, 1, 5, 7, 2**32 - 1]
    for x in values:
        for y in values:
            assert run_scalar(func, t, x, y) == run_scalar(reference, t, x, y), (x, y)


@pytest.mark.parametrize("pred", ["eq", "ne"])
@pytest.mark.parametrize("constant", [True, False])
@pytest.mark.parametrize("left", [True, False])
def test_sccp_compares_a_bool_with_a_constant_as_the_bool_itself(pred, constant, left):
    """`p != False` and `p == True` (either side) are p: no predicate constant is materialised
    to compare with (the library's `(y < 0.0) != (mod < 0.0)` once y's sign is known)."""
    def body(b, x, y):
        less = b("cmp", bool_, x, y, pred="lt")
        pair = (Const(bool_, constant), less) if left else (less, Const(bool_, constant))
        return b("cvt", i32, b("cmp", bool_, *pair, pred=pred))
    reference = scalar_kernel(i32, body)
    func = run_pass(sccp.run, scalar_kernel(i32, body))
    compares = [i for i in func.instrs() if i.op == "cmp"]
    assert len(compares) == (1 if (pred == "eq") == constant else 2)
    for x, y in ((1, 2), (2, 1), (3, 3)):
        assert run_scalar(func, i32, x, y) == run_scalar(reference, i32, x, y)


# --- FMA contraction (fast_math) ---------------------------------------------------------------
def fused_reference(a, b, c):
    """fma(a, b, c) for f32 arrays: the f64 product is exact, the f64 sum is rounded to odd
    (two-sum), so the final rounding to f32 is the only one."""
    a64, b64, c64 = (np.asarray(v, np.float64) for v in (a, b, c))
    p = a64 * b64
    s = p + c64
    bb = s - p
    err = (p - (s - bb)) + (c64 - bb)
    odd = (err != 0) & ((s.view(np.int64) & 1) == 0) & np.isfinite(s)
    s = np.where(odd, np.nextafter(s, np.where(err > 0, np.inf, -np.inf)), s)
    return s.astype(np.float32)


def contract_kernel(t=f32, flag=True):
    """out[0] = a*b + c, out[1] = c - b*e, out[2] = a*e - b, out[3] = c*e + c*e + a (the
    product used twice stays), out[4] = b*b + c with the product in the block before."""
    b = Builder()
    b.func.options = {"fast_math": True}
    a, c, d, e = (b.param(n, t) for n in ("a", "b", "c", "e"))
    out = b.param("out", ptr=True)
    kw = {"contract": True} if flag else {}
    results = [b("add", t, b("mul", t, a, c, **kw), d, **kw)]
    results.append(b("sub", t, d, b("mul", t, c, e, **kw), **kw))
    results.append(b("sub", t, b("mul", t, a, e, **kw), c, **kw))
    shared = b("mul", t, d, e, **kw)
    results.append(b("add", t, b("add", t, shared, shared, **kw), a, **kw))
    early = b("mul", t, c, c, **kw)
    later, done = b.block("later"), b.block("done")
    for k, value in enumerate(results):
        b.store(out, Const(i32, k), value)
    b.cbr(b("cmp", bool_, a, c, pred="ne"), later, done)
    b.at(later)
    b.store(out, Const(i32, 4), b("add", t, early, d, **kw))
    b.br(done)
    b.at(done)
    b.ret()
    return b.func


def contract_reference(a, b, c, e):
    with np.errstate(all="ignore"):
        return [fused_reference(a, b, c), fused_reference(-b, e, c), fused_reference(a, e, -b),
                (c * e + c * e) + a, b * b + c if a != b else 0]


def test_contract_fuses_single_use_products_of_the_same_block():
    func = run_pass(contract.run, contract_kernel())
    stored = [i.args[-1] for i in func.instrs() if i.op == "store"]
    assert [v.op for v in stored] == ["fma", "fma", "fma", "add", "add"]
    assert stored[1].args[0].op == "neg" and stored[2].args[2].op == "neg"
    assert "contract" not in stored[0].attrs
    # the whole pipeline: the same, with the dead products gone
    func = optimize(contract_kernel(), verify_each=True)
    assert ops(func).count("fma") == 3 and ops(func).count("mul") == 2


@pytest.mark.parametrize("a, b, c, e", [
    (1.5, -2.25, 0.1, 7.0),
    (1 + 2.0 ** -12, 1 + 2.0 ** -12, 2.0 ** -80, 1 - 2.0 ** -12),   # f64 sum then f32: twice
    (3.0, 1 / 3, -1.0, 3.0), (1e30, 1e10, -np.inf, 1e-30), (0.0, -1.0, 0.0, -0.0)])
def test_contract_rounds_once(a, b, c, e):
    a, b, c, e = (np.float32(v) for v in (a, b, c, e))
    func = optimize(contract_kernel(), verify_each=True)
    out = np.zeros(5, np.float32)
    interp.run_function(func, {"a": a, "b": b, "c": c, "e": e, "out": out}, {})
    assert same_arrays(out, np.array(contract_reference(a, b, c, e), np.float32))


def test_contract_needs_fast_math_and_the_contract_flag():
    func = contract_kernel()
    func.options = {}
    assert "fma" not in ops(run_pass(contract.run, func))
    assert "fma" not in ops(run_pass(contract.run, contract_kernel(flag=False)))


@pytest.mark.parametrize("t", [f16, bf16, f64])
def test_contract_other_float_types(t):
    func = optimize(contract_kernel(t), verify_each=True)
    assert ops(func).count("fma") == 3
    a, b, c, e = (np.array(v, t.numpy)[()] for v in (1.375, -2.5, 0.3125, 0.75))
    out = np.zeros(5, t.numpy)
    interp.run_function(func, {"a": a, "b": b, "c": c, "e": e, "out": out}, {})
    exact = [1.375 * -2.5 + 0.3125, 0.3125 + 2.5 * 0.75, 1.375 * 0.75 + 2.5]   # exact in t
    assert [float(v) for v in out[:3]] == exact


# --- ranges and lower_floor ------------------------------------------------------------------
def test_ranges_turns_floor_ops_on_tid_and_shapes_into_div():
    b = Builder()
    b.func.params.append(ParamSpec("x", "array", i32, rank=1))
    out, n = b.param("out", ptr=True), b.param("x_shape0")
    tid, p = b.sreg(), b.param("p")
    gid = b("add", i32, b("mul", i32, b.sreg("ctaid.x"), b.sreg("ntid.x")), tid)
    by_shape = b("floordiv", i32, tid, n)
    mod_shape = b("floormod", i32, tid, n)
    by_four = b("floordiv", i32, tid, 4)
    mod_four = b("floormod", i32, tid, 4)
    both_negative = b("floordiv", i32, b("neg", i32, tid), -3)
    signed = b("floordiv", i32, p, 3)
    negative = b("floordiv", i32, tid, -3)
    global_id = b("floordiv", i32, gid, n)   # wraps negative in grids of over 2^31 threads
    divisions = (by_shape, mod_shape, by_four, mod_four, both_negative, signed, negative, global_id)
    for k, v in enumerate(divisions):
        b.store(out, Const(i32, k), v)
    b.ret()
    run_pass(ranges.run, b.func)
    assert [d.op for d in divisions] == ["div", "rem", "shr", "and", "div",
                                         "floordiv", "floordiv", "floordiv"]
    assert [d.attrs.get("divisor_sign") for d in divisions[5:]] == [None, None, 1]


def counting_loops(up_step: int):
    """out[i] = i // 3 + down // 3 for i = 0, up_step, ... while i < n; down = 0, -1, ..."""
    b = Builder()
    out, n = b.param("out", ptr=True), b.param("n")
    head, body, done = b.block("head"), b.block("body"), b.block("done")
    b.br(head)
    i, down = b.at(head).phi(i32), b.phi(i32)
    b.cbr(b("cmp", bool_, i, n, pred="lt"), body, done)
    up_div = b.at(body)("floordiv", i32, i, 3)
    down_div = b("floordiv", i32, down, 3)
    b.store(out, b("and", i32, i, 15), b("add", i32, up_div, down_div))
    i_next, down_next = b("add", i32, i, up_step), b("sub", i32, down, 1)
    b.br(head)
    b.fill(i, {b.func.entry: Const(i32, 0), body: i_next})
    b.fill(down, {b.func.entry: Const(i32, 0), body: down_next})
    b.at(done).ret()
    return b.func, up_div, down_div


def test_ranges_sees_induction_phis():
    func, up_div, down_div = counting_loops(1)
    run_pass(ranges.run, func)
    assert up_div.op == "div" and down_div.op == "floordiv"


def test_ranges_knows_a_step_of_two_can_wrap():
    # i < n <= INT_MAX does not keep i + 2 from wrapping to INT_MIN, and the loop goes on
    func, up_div, _ = counting_loops(2)
    run_pass(ranges.run, func)
    assert up_div.op == "floordiv"
    inputs = [({"out": np.zeros(16, np.int32), "n": n}, {}) for n in (0, 7, 40)]
    assert_equivalent(func, inputs)


def test_ranges_keeps_the_fixup_where_sums_and_shifts_wrap():
    # differential seed 11, programs 1278 and 1505: non-negative operands, wrapped result
    b = Builder()
    out, out64, a = b.param("out", ptr=True), b.param("out64", ptr=True), b.param("a", u32)
    tid = b.sreg()
    summed = b("add", i32, b("add", i32, tid, tid), INT_MAX)
    shifted = b("shl", i64, b("cvt", i64, a), Const(u32, 40))
    small = b("add", i32, tid, 1000)
    wrapped = [b("floormod", i32, summed, 7), b("floordiv", i64, shifted, 12)]
    exact = b("floordiv", i32, small, 7)
    b.store(out, Const(i32, 0), wrapped[0])
    b.store(out64, Const(i32, 0), wrapped[1])
    b.store(out, Const(i32, 1), exact)
    b.ret()
    func = copy.deepcopy(b.func)
    run_pass(ranges.run, b.func)
    assert [w.op for w in wrapped] == ["floormod", "floordiv"] and exact.op == "div"
    inputs = [({"out": np.zeros(2, np.int32), "out64": np.zeros(1, np.int64), "a": a},
               {"tid.x": t}) for a in (3, 2**23 + 1, 2**32 - 1) for t in (0, 1, 5)]
    assert_equivalent(func, inputs)


def interval_of(t, body, *params):
    """The interval `ranges` finds for `body(builder, *param values)` (params of type t)."""
    b = Builder()
    b.func.params.append(ParamSpec("x", "array", i32, rank=1))
    out = b.param("out", ptr=True)
    value = body(b, *[b.param(name, t) for name in params])
    b.store(out, Const(i32, 0), value)
    b.ret()
    return ranges.Ranges(b.func).range(value)


@pytest.mark.parametrize("t, body, expected", [
    (i32, lambda b, p: b("rem", i32, p, 10), (-9, 9)),
    (i32, lambda b, p: b("floormod", i32, p, -10), (-9, 0)),
    (i32, lambda b, p: b("shr", i32, p, Const(u32, 28)), (-8, 7)),
    (u32, lambda b, p: b("shr", u32, p, Const(u32, 28)), (0, 15)),
    (i32, lambda b, p: b("and", i32, p, 0xFF), (0, 255)),
    (i32, lambda b, p: b("cvt", i32, b("and", u32, b("cvt", u32, p), Const(u32, 2**31 - 1))),
     (0, INT_MAX)),
    (i32, lambda b, p: b("cvt", i32, b("or", u32, b("cvt", u32, p), Const(u32, 2**31))),
     (INT_MIN, -1)),                                         # wraps as a whole: still exact
    (i32, lambda b, p: b("mul", i32, b.sreg("tid.x"), b.sreg("ntid.x")), (0, 1023 * 1024)),
    (i32, lambda b, p: b("mul", i32, b.sreg("ctaid.x"), b.sreg("ntid.x")), (INT_MIN, INT_MAX)),
    (i64, lambda b, p: b("mul_wide", i64, b.sreg("ctaid.x"), b.sreg("ntid.x")),
     (0, (2**31 - 1) * 1024)),
    (i32, lambda b, p: b("abs", i32, p), (INT_MIN, INT_MAX)),   # abs(INT_MIN) wraps
    (i32, lambda b, p: b("abs", i32, b("rem", i32, p, 10)), (0, 9)),
    (i32, lambda b, p: b("not", i32, b.sreg("laneid")), (-32, -1)),
    (u32, lambda b, p: b("neg", u32, b("or", u32, b("and", u32, p, Const(u32, 7)), Const(u32, 1))),
     (2**32 - 7, 2**32 - 1)),
    (i32, lambda b, p: b("param", i32, name="k_x_shape0"), (0, INT_MAX)),
])
def test_ranges_intervals_of_wrapping_ops(t, body, expected):
    assert interval_of(t, body, "p") == expected


def test_ranges_bounds_a_counted_while_loop():
    # while w < 6: w += 1 -- widened while solving, then narrowed back by the branch
    b = Builder()
    out = b.param("out", ptr=True)
    head, body, done = b.block("head"), b.block("body"), b.block("done")
    b.br(head)
    w = b.at(head).phi(i32)
    b.cbr(b("cmp", bool_, w, 6, pred="lt"), body, done)
    w_next = b.at(body)("add", i32, w, 1)
    b.br(head)
    b.fill(w, {b.func.entry: Const(i32, 0), body: w_next})
    b.at(done).store(out, Const(i32, 0), w)
    b.ret()
    found = ranges.Ranges(b.func)
    assert found.range(w) == (0, 6) and found.range(w_next) == (1, 6)
    assert found.at(w, body) == (0, 5) and found.at(w, done) == (6, 6)


@pytest.mark.parametrize("divisor", [None, 3, -3, 4, -4, 1])
def test_lower_floor_matches_python(divisor):
    def body(b, x, y):
        d = y if divisor is None else Const(i32, divisor)
        return b("add", i32, b("mul", i32, b("floordiv", i32, x, d), 1000),
                 b("floormod", i32, x, d))
    func = run_pass(lower_floor.run, scalar_kernel(i32, body))
    assert "floordiv" not in ops(func) and "floormod" not in ops(func)
    for a in (-7, -6, -1, 0, 1, 6, 7, INT_MIN + 1, INT_MAX):
        for c in ((-7, -2, -1, 1, 2, 7) if divisor is None else (divisor,)):
            expected = interp.wrap_int((a // c) * 1000 + a % c, i32)
            assert int(run_scalar(func, i32, a, c)) == expected, (a, c)


@pytest.mark.parametrize("sign", [1, -1])
def test_lower_floor_tests_only_the_remainder_when_the_divisor_sign_is_known(sign):
    def body(b, x, y):
        return b("add", i32, b("mul", i32, b("floordiv", i32, x, y, divisor_sign=sign), 1000),
                 b("floormod", i32, x, y, divisor_sign=sign))
    func = run_pass(lower_floor.run, scalar_kernel(i32, body))
    assert "xor" not in ops(func) and ops(func).count("cmp") == 2
    for a in (-7, -6, -1, 0, 1, 6, 7, INT_MIN + 1, INT_MAX):
        for c in (1, 2, 7, INT_MAX):
            expected = interp.wrap_int((a // (sign * c)) * 1000 + a % (sign * c), i32)
            assert int(run_scalar(func, i32, a, sign * c)) == expected, (a, sign * c)


# --- simplifycfg -----------------------------------------------------------------------------
def test_simplifycfg_merges_forwards_and_drops_unreachable():
    b = Builder()
    out, p = b.param("out", ptr=True), b.param("p")
    middle, forward, then, join, orphan = (b.block("middle"), b.block("fwd"), b.block("then"),
                                           b.block("join"), b.block("orphan"))
    b.br(middle)
    doubled = b.at(middle)("add", i32, p, p)
    b.cbr(b("cmp", bool_, p, 0, pred="gt"), then, forward)
    b.at(forward).br(join)
    b.at(then).br(join)
    b.at(orphan).br(join)
    merged = b.at(join).phi(i32)
    b.fill(merged, {forward: Const(i32, 1), then: doubled, orphan: Const(i32, 9)})
    b.store(out, Const(i32, 0), merged)
    b.ret()
    func = run_pass(simplifycfg.run, b.func)
    names = [blk.name for blk in func.blocks]
    assert "orphan0" not in names and forward not in func.blocks and middle not in func.blocks
    assert then not in func.blocks or len(merged.args) == 2
    assert len(func.blocks) <= 3 and func.blocks[0] is func.entry
    for p_value in (-2, 5):
        assert execute(func, {"p": p_value, "out": np.zeros(1, np.int32)})["out"][0] == (
            1 if p_value <= 0 else 2 * p_value)


def test_simplifycfg_collapses_cbr_whose_arms_agree():
    b = Builder()
    out, p = b.param("out", ptr=True), b.param("p")
    left, right, join = b.block("l"), b.block("r"), b.block("join")
    b.cbr(b("cmp", bool_, p, 0, pred="gt"), left, right)
    b.at(left).br(join)
    b.at(right).br(join)
    merged = b.at(join).phi(i32)
    b.fill(merged, {left: Const(i32, 4), right: Const(i32, 4)})
    b.store(out, Const(i32, 0), merged)
    b.ret()
    func = run_pass(simplifycfg.run, b.func)
    assert "cbr" not in ops(func) and len(func.blocks) == 1


def test_simplifycfg_drops_a_branch_that_a_dominating_branch_decided():
    """`if c and d: if not c: out = 1 (unreachable) else: out = 2` `else: if c: out = 3`:
    where `c and d` held, `c` did; where it did not, `c` may be either."""
    b = Builder()
    out, p = b.param("out", ptr=True), b.param("p")
    then, dead, live, other, third, done = (b.block("then"), b.block("dead"), b.block("live"),
                                            b.block("other"), b.block("third"), b.block("done"))
    c = b("cmp", bool_, p, 0, pred="gt")
    d = b("cmp", bool_, p, 5, pred="lt")
    b.cbr(b("and", bool_, c, d), then, other)
    b.at(then).cbr(b("not", bool_, c), dead, live)
    b.at(dead).store(out, Const(i32, 0), Const(i32, 1))
    b.br(done)
    b.at(live).store(out, Const(i32, 0), Const(i32, 2))
    b.br(done)
    b.at(other).cbr(c, third, done)
    b.at(third).store(out, Const(i32, 0), Const(i32, 3))
    b.br(done)
    b.at(done).ret()
    func = run_pass(simplifycfg.run, b.func)
    assert dead not in func.blocks
    assert [blk.terminator.op for blk in func.blocks].count("cbr") == 2
    for p_value, want in ((-1, 0), (3, 2), (7, 3)):
        assert execute(func, {"p": p_value, "out": np.zeros(1, np.int32)})["out"][0] == want


# --- the whole pipeline ----------------------------------------------------------------------
def test_optimize_saxpy_like_kernel():
    def build():
        b = Builder()
        x, y, out = b.param("x", ptr=True), b.param("y", ptr=True), b.param("out", ptr=True)
        a, n = b.param("a", f32), b.param("x_shape0")
        then, done = b.block("then"), b.block("done")
        i = b("add", i32, b("mul", i32, b.sreg("ctaid.x"), b.sreg("ntid.x")), b.sreg())
        b.cbr(b("cmp", bool_, i, n, pred="lt"), then, done)
        b.at(then)
        half = b("floordiv", i32, i, 2)
        value = b("fma", f32, a, b.load(x, i, f32, nc=True), b.load(y, half, f32, nc=True))
        b.store(out, i, b("add", f32, value, b("cvt", f32, b("floormod", i32, i, 2))))
        b.br(done)
        b.at(done).ret()
        return b.func
    xs = np.array([1.5, -2.0, np.nan, np.inf, 3.0, -0.0], np.float32)
    inputs = [({"x": xs, "y": xs[::-1].copy(), "out": np.zeros(6, np.float32), "a": a}, sregs)
              for a in (2.0, -0.5, math.nan)
              for sregs in ({"tid.x": t, "ntid.x": 4, "ctaid.x": c}
                            for t in range(4) for c in (0, 1))]
    func = assert_equivalent(build(), inputs)
    assert "floordiv" not in ops(func) and "floormod" not in ops(func) and "div" not in ops(func)


def test_pipeline_names_and_verify_each():
    assert [name for name, _ in PIPELINE][0] == "simplifycfg"
    func, *_ = two_entry_loop()
    optimize(func, verify_each=True)


def test_optimize_skips_a_pass_with_nothing_new_to_do():
    """A pass that changed nothing runs again only once another pass has changed the function."""
    calls = []

    def counted(name, run):
        return name, lambda func: (calls.append(name), run(func))[1]

    func, *_ = two_entry_loop()
    pipeline = [counted("dce", dce.run), counted("dce", dce.run), counted("licm", licm.run),
                counted("dce", dce.run), counted("dce", dce.run)]
    optimize(func, verify_each=True, pipeline=pipeline)
    assert calls == ["dce", "licm", "dce"]   # licm made a preheader: dce runs again, once


def test_verify_each_catches_a_change_not_counted():
    def silent_dce(func):
        edits = func.edits
        func = dce.run(func)
        func.edits = edits
        return func

    func, *_ = two_entry_loop()
    func.entry.instrs.insert(0, Instr("add", i32, [Const(i32, 1), Const(i32, 2)]))
    func.entry.instrs[0].block = func.entry
    with pytest.raises(Exception, match="without counting it"):
        optimize(func, verify_each=True, pipeline=[("dce", silent_dce)])


def hundred_instruction_kernel():
    b = Builder()
    out, n = b.param("out", ptr=True), b.param("n")
    head, body, done = b.block("head"), b.block("body"), b.block("done")
    values = [b.sreg(), b.param("p"), b.param("q")]
    for k in range(45):
        values.append(b(("add", "mul", "xor", "sub")[k % 4], i32, values[-1], values[k % 3]))
    b.br(head)
    i, acc = b.at(head).phi(i32), b.phi(i32)
    b.cbr(b("cmp", bool_, i, n, pred="lt"), body, done)
    b.at(body)
    local = [acc]
    for k in range(40):
        local.append(b(("add", "mul", "xor", "floordiv")[k % 4], i32, local[-1],
                       values[k % len(values)] if k % 4 != 3 else Const(i32, 7)))
    b.store(out, i, local[-1])
    i_next = b("add", i32, i, 1)
    b.br(head)
    b.fill(i, {b.func.entry: Const(i32, 0), body: i_next})
    b.fill(acc, {b.func.entry: values[-1], body: local[-1]})
    b.at(done).ret()
    return b.func


def test_optimize_is_fast():
    funcs = [hundred_instruction_kernel() for _ in range(20)]
    assert sum(1 for _ in funcs[0].instrs()) >= 100
    start = time.perf_counter()
    for func in funcs:
        optimize(func)
    per_function = (time.perf_counter() - start) / len(funcs)
    assert per_function < 0.05, per_function  # a loose bound for loaded CI machines
    verify(funcs[0])


# --- random IR -------------------------------------------------------------------------------
TYPES = (i32, u32, i64, f32)
INT_BINARY = ("add", "sub", "mul", "min", "max", "and", "or", "xor", "mul_hi", "shl", "shr",
              "div", "rem", "floordiv", "floormod")
FLOAT_BINARY = ("add", "sub", "mul", "div", "min", "max", "copysign")
FLOAT_UNARY = ("neg", "abs", "sqrt", "floor", "ceil", "trunc", "round", "rcp")
SPECIAL_INTS = (0, 1, -1, 2, 7, 8, INT_MIN, INT_MAX, 1 << 40, -(1 << 63))
OUTPUTS = 8   # values of each type stored at the end, after the loop's 8 slots
SPECIAL_FLOATS = (0.0, -0.0, 1.0, -1.5, 0.1, 3e38, math.inf, -math.inf, math.nan)


def fit(value, t):
    return interp.to_python(interp.to_numpy(value, t), t)


class RandomKernel:
    """Random straight-line code, a diamond and a counted loop over i32/u32/i64/f32, storing
    the values it computes to one output array per type."""

    def __init__(self, draw):
        self.draw = draw
        self.b = b = Builder()
        self.outs = {t: b.param(f"out_{t}", ptr=True) for t in TYPES}
        self.ins = {t: b.param(f"in_{t}", ptr=True) for t in TYPES}
        self.params = {t: [b.param(f"a_{t}_{k}", t) for k in range(2)] for t in TYPES}
        self.pool = {t: list(self.params[t]) for t in TYPES}
        self.pool[i32].append(b.sreg())
        self.slots = dict.fromkeys(TYPES, 8)

    def build(self) -> Function:
        b, draw = self.b, self.draw
        self.bounded()
        self.straight(draw(st.integers(1, 8)))
        self.diamond()
        self.loop()
        self.straight(draw(st.integers(0, 4)))
        for t in TYPES:
            for value in self.pool[t][-OUTPUTS:]:
                b.store(self.outs[t], Const(i32, self.slots[t]), value)
                self.slots[t] += 1
        b.ret()
        return b.func

    def bounded(self):
        """Integers of small ranges, some negative: what `ranges` can be precise about."""
        b = self.b
        for t in TYPES[:3]:
            first, second = self.params[t]
            self.pool[t].append(b("rem", t, first, Const(t, 100)))
            self.pool[t].append(b("shr", t, second, Const(u32, t.bits - 6)))

    def pick(self, t):
        if self.draw(st.integers(0, 2)) == 0:
            values = SPECIAL_FLOATS if t.is_float else SPECIAL_INTS
            return Const(t, fit(self.draw(st.sampled_from(values)), t))
        return self.draw(st.sampled_from(self.pool[t]))

    def straight(self, count):
        for _ in range(count):
            t = self.draw(st.sampled_from(TYPES))
            self.pool[t].append(self.value(t))

    def value(self, t) -> Instr:
        b, draw = self.b, self.draw
        kind = draw(st.sampled_from(("binary", "unary", "select", "cvt", "load")))
        if kind == "select":
            cond = self.compare()
            return b("select", t, cond, self.pick(t), self.pick(t))
        if kind == "cvt":
            src = draw(st.sampled_from(TYPES))
            modes = (None, "rni", "rmi") if src.is_float and t.is_int else (None,)
            mode = draw(st.sampled_from(modes))
            return b("cvt", t, self.pick(src), **({"mode": mode} if mode else {}))
        if kind == "load":
            index = Const(i32, 0)
            if draw(st.booleans()):
                index = b("and", i32, self.pick(i32), Const(i32, 7))
            if draw(st.booleans()):
                return b.load(self.outs[t], index, t)
            return b.load(self.ins[t], index, t, nc=draw(st.booleans()))
        if t.is_float:
            if kind == "unary":
                return b(draw(st.sampled_from(FLOAT_UNARY)), t, self.pick(t))
            if draw(st.integers(0, 6)) == 0:
                return b("fma", t, self.pick(t), self.pick(t), self.pick(t))
            return b(draw(st.sampled_from(FLOAT_BINARY)), t, self.pick(t), self.pick(t))
        if kind == "unary":
            return b(draw(st.sampled_from(("neg", "abs", "not"))), t, self.pick(t))
        op = draw(st.sampled_from(INT_BINARY))
        if op in ("floordiv", "floormod") and not t.is_signed:
            op = "div"
        if op in ("shl", "shr"):
            return b(op, t, self.pick(t), self.pick(draw(st.sampled_from((i32, u32)))))
        if op in ("div", "rem"):
            return b(op, t, self.pick(t), b("or", t, self.pick(t), Const(t, 1)))
        if op in ("floordiv", "floormod"):
            # any dividend, so that `ranges` must not drop the fix-up of one that can wrap
            dividend = self.pick(t)
            if draw(st.booleans()):
                dividend = b("and", t, self.pick(t), Const(t, 0xFFFF))
            divisor = b("or", t, self.pick(t), Const(t, 1))
            if draw(st.booleans()):
                divisor = Const(t, draw(st.sampled_from((3, -3, 4, -8, 1))))
            return b(op, t, dividend, divisor)
        return b(op, t, self.pick(t), self.pick(t))

    def compare(self) -> Instr:
        t = self.draw(st.sampled_from(TYPES))
        pred = self.draw(st.sampled_from(("eq", "ne", "lt", "le", "gt", "ge")))
        return self.b("cmp", bool_, self.pick(t), self.pick(t), pred=pred)

    def diamond(self):
        b, draw = self.b, self.draw
        then, other, join = b.block("then"), b.block("else"), b.block("join")
        b.cbr(self.compare(), then, other)
        before = {t: list(self.pool[t]) for t in TYPES}
        sides = {}
        for block in (then, other):
            self.pool = {t: list(before[t]) for t in TYPES}
            b.at(block)
            self.straight(draw(st.integers(0, 4)))
            sides[block] = self.pool
            b.br(join)
        self.pool = before
        b.at(join)
        for t in TYPES:
            if draw(st.booleans()):
                merged = b.phi(t)
                b.fill(merged, {blk: draw(st.sampled_from(pool[t])) for blk, pool in sides.items()})
                self.pool[t].append(merged)

    def loop(self):
        b, draw = self.b, self.draw
        trips = b("and", i32, self.params[i32][0], Const(i32, 7))
        for t in TYPES:  # what the loop's loads of out[0] must not be merged with
            self.pool[t].append(b.load(self.outs[t], Const(i32, 0), t))
        start = Const(i32, draw(st.integers(0, 2)))
        entry = b.cur
        head, body, done = b.block("head"), b.block("body"), b.block("done")
        b.br(head)
        b.at(head)
        i = b.phi(i32)
        accs = {t: b.phi(t) for t in TYPES if draw(st.booleans())}
        b.cbr(b("cmp", bool_, i, trips, pred="lt"), body, done)
        b.at(body)
        outside = {t: list(self.pool[t]) for t in TYPES}
        for t, acc in accs.items():
            self.pool[t].append(acc)
        self.pool[i32].append(i)
        self.straight(draw(st.integers(0, 3)))
        loads = {t: [b.load(self.outs[t], Const(i32, 0), t), b.load(self.outs[t], i, t)]
                 for t in TYPES}
        for t in TYPES:  # loads that must see the previous iteration's store: no CSE, no hoisting
            self.pool[t].extend(loads[t])
        self.straight(draw(st.integers(0, 4)))
        nexts = {t: b(draw(st.sampled_from(("add", "mul", "max"))), t,
                      draw(st.sampled_from(loads[t] + [self.pick(t)])), self.pick(t))
                 for t in accs}
        for t, value in nexts.items():
            b.store(self.outs[t], i, value)
            b.store(self.outs[t], Const(i32, 0), value)
        i_next = b("add", i32, i, Const(i32, draw(st.integers(1, 2))))
        b.br(head)
        b.fill(i, {entry: start, body: i_next})
        for t, acc in accs.items():
            b.fill(acc, {entry: draw(st.sampled_from(outside[t])), body: nexts[t]})
        self.pool = outside
        for t, acc in accs.items():
            self.pool[t].append(acc)
        self.pool[i32].append(i)
        b.at(done)


def random_inputs(draw) -> tuple[dict, dict]:
    args = {}
    for t in TYPES:
        elements = (st.floats(width=32) if t.is_float
                    else st.integers(-(1 << (t.bits - 1)) if t.is_signed else 0,
                                     (1 << (t.bits - (1 if t.is_signed else 0))) - 1))
        for k in range(2):
            specials = st.sampled_from(SPECIAL_FLOATS if t.is_float else (0, 1, 7))
            args[f"a_{t}_{k}"] = fit(draw(st.one_of(elements, specials)), t)
        args[f"in_{t}"] = np.array([fit(draw(elements), t) for _ in range(8)], dtype=t.numpy)
        args[f"out_{t}"] = np.zeros(8 + OUTPUTS, dtype=t.numpy)
    return args, {"tid.x": draw(st.integers(0, 40))}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_ir_optimize_preserves_results(data):
    func = RandomKernel(data.draw).build()
    verify(func)
    inputs = [random_inputs(data.draw) for _ in range(3)]
    assert_equivalent(func, inputs)


def computed_values(func: Function, args: dict, sregs: dict) -> list[tuple[Instr, object]]:
    """(instruction, value) for each non-phi instruction the interpreter executes."""
    seen = []
    execute_one = interp._Thread.execute

    def recording(thread, instr):
        value = execute_one(thread, instr)
        seen.append((instr, value))
        return value
    args = {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in args.items()}
    with mock.patch.object(interp._Thread, "execute", recording):
        interp.run_function(func, args, sregs)
    return seen


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_ir_values_lie_in_their_ranges(data):
    func = RandomKernel(data.draw).build()
    found = ranges.Ranges(func)
    for args, sregs in [random_inputs(data.draw) for _ in range(3)]:
        for instr, value in computed_values(func, args, sregs):
            if instr.type is not None and instr.type.is_int:
                lo, hi = found.range(instr)
                assert lo <= int(value) <= hi, (instr, value, (lo, hi))


# --- folding without NumPy: floats of every width as Python floats ---------------------------
FLOAT_TYPES = {"f16": f16, "bf16": bf16, "f32": f32, "f64": f64}


def _numpy_bits(value, t) -> int:
    with np.errstate(all="ignore"):
        return int(np.array([value]).astype(t.numpy).view(f"u{t.nbytes}")[0])


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.floats(width=64), st.integers(0, (1 << 64) - 1).map(
    lambda b: float(np.array(b, np.uint64).view(np.float64)))))
def test_float_conversions_match_numpy(x):
    for name, t in FLOAT_TYPES.items():
        want = _bf16_nearest_bits(x) if name == "bf16" else _numpy_bits(x, t)
        assert floatbits.converted_bits(x, name) == want, name


def _bf16_nearest_bits(x: float) -> int:
    """x rounded once to bf16, as the GPU's cvt.rn.bf16.f64 does: ml_dtypes rounds float64
    through float32 (twice), which is at most one step off; pick the nearest of its neighbours
    exactly (ties to even; past the largest finite value, infinity counts as 2^128)."""
    from fractions import Fraction

    b = _numpy_bits(x, bf16)
    if not math.isfinite(x):
        return b
    sign, magnitude = b & 0x8000, b & 0x7FFF

    def value(m):
        return Fraction(2) ** 128 if m == 0x7F80 else Fraction(
            float(np.array(m, np.uint16).view(bf16.numpy)))
    target = abs(Fraction(x))
    candidates = sorted({max(magnitude - 1, 0), magnitude, min(magnitude + 1, 0x7F80)})
    best = min(candidates, key=lambda m: (abs(value(m) - target), m & 1))
    return sign | best


def test_bf16_conversions_round_once():
    """1 + 2^-8 + 2^-52 is just above the midpoint of two bf16 values, but rounds to f32 as the
    midpoint: through f32 (ml_dtypes) it gives 1.0; the GPU's cvt and ptxpy give 1.0078125."""
    assert floatbits.round_to(1 + 2**-8 + 2**-52, "bf16") == 1.0078125
    assert floatbits.round_to(-(1 + 2**-8 + 2**-52), "bf16") == -1.0078125
    assert floatbits.round_to(1 + 2**-8, "bf16") == 1.0                       # a true tie: even
    assert floatbits.int_to_float(16842753, "bf16") == 16908288.0             # 2^24 + 2^16 + 1
    assert floatbits.int_to_float((1 << 60) + (1 << 36) + 1, "f32") == float((1 << 60) + (1 << 37))
    assert interp.evaluate("cvt", bf16, {}, [16842753], [i32]) == 16908288.0
    assert interp.evaluate("cvt", bf16, {}, [1 + 2**-8 + 2**-52], [f64]) == 1.0078125


@pytest.mark.parametrize("name", ["f16", "bf16"])
def test_every_16_bit_pattern_round_trips(name):
    for pattern in range(1 << 16):
        value = floatbits.from_bits(pattern, name)
        assert floatbits.bits_of(value, name) == pattern
        if value == value:
            assert value == float(np.array(pattern, np.uint16).view(FLOAT_TYPES[name].numpy))


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([f16, f32]), st.integers(0, (1 << 32) - 1), st.integers(0, (1 << 32) - 1),
       st.sampled_from(["add", "sub", "mul", "div", "rem", "sqrt", "rcp"]))
def test_folding_in_f64_gives_numpys_narrow_arithmetic(t, a_bits, b_bits, op):
    mask = (1 << t.bits) - 1
    a, b = (floatbits.from_bits(bits & mask, t.name) for bits in (a_bits, b_bits))
    args = [a] if op in ("sqrt", "rcp") else [a, b]
    got = interp.evaluate(op, t, {}, args, [t] * len(args))
    x, y = (np.array([v]).astype(t.numpy)[0] for v in (a, b))
    with np.errstate(all="ignore"):
        expected = {"add": lambda: x + y, "sub": lambda: x - y, "mul": lambda: x * y,
                    "div": lambda: x / y, "rem": lambda: np.fmod(x, y), "sqrt": lambda: np.sqrt(x),
                    "rcp": lambda: t.numpy.type(1) / x}[op]()
    assert (math.isnan(got) and np.isnan(expected)) or interp.bits(got, t) == _numpy_bits(expected, t)
