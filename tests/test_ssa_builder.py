"""Tests of the SSA builder (transpiler/ssa_builder.py, lower_intrinsics.py).

Typed trees are built by hand (helpers below) or, where the frontend is available, from kernel
source. Every function is checked with `verify.verify` and executed one thread at a time by the
reference interpreter of the IR (transpiler/interp.py, section 1), which raises on out-of-bounds
addresses.
"""
from __future__ import annotations

import numpy as np
import pytest

from ptxpy.transpiler import interp, ir, typed as T, verify
from ptxpy.transpiler.errors import CompileError
from ptxpy.transpiler.ssa_builder import build_function
from ptxpy.types import ArrayType, TupleType, bool_, f16, f32, f64, i8, i32, i64, u32

# --- 1. running the IR: the reference interpreter (transpiler/interp.py) -------------------


class OutOfBounds(Exception):
    pass


class Trapped(Exception):
    pass


def run_ir(func: ir.Function, args: list, sregs: dict | None = None, max_steps: int = 1_000_000) -> list:
    """Run one thread; `args` per `func.params` (arrays are written in place); returns printf lines."""
    named = {}
    for spec, value in zip(func.params, args):
        named[spec.name] = np.array([value], spec.dtype.numpy) if spec.by_ref else value
    printed: list = []
    try:
        interp.run_function(func, named, dict(sregs or {}), printed=printed, max_steps=max_steps,
                            lone_thread=True)
    except interp.Trap:
        raise Trapped("".join(printed)) from None
    except interp.InterpError as err:
        if "out-of-bounds" in str(err) or "misaligned" in str(err):
            raise OutOfBounds(str(err)) from None
        raise
    return printed



# --- 2. building typed trees by hand ----------------------------------------------------------
L = (3, 4)


def c(value, ty=i32):
    return T.Constant(L, ty, value)


def v(name, ty=i32):
    return T.Var(L, ty, name)


def bin_(op, left, right, ty=None):
    return T.Binary(L, ty or left.type, op, left, right)


def cmp(op, left, right, ty=None):
    return T.Compare(L, bool_, [op], [left, right], [ty or left.type])


def load(array, *indices, ty=f32):
    return T.Load(L, ty, array, list(indices))


def shape(array, dim=0):
    return T.Shape(L, i32, array, dim)


def assign(name, value):
    return T.Assign(L, [name], [value])


def store(array, index, value):
    return T.Store(L, array, index if isinstance(index, list) else [index], value)


def tid():
    return T.Intrinsic(L, i32, "thread_idx.x", [])


def arr(elem=f32, rank=1):
    return ArrayType(elem, rank)


def kernel(params: dict, body: list, local_types: dict | None = None, written=(), arrays=(), funcs=None,
           name="k", **options):
    ps = [T.Param(n, t) for n, t in params.items()]
    fd = T.FuncDef(L, name, ps, None, body, True, dict(local_types or {}), list(arrays), set(written))
    module = T.TypedModule(fd, dict(funcs or {}), "kern.py", ["line"] * 50)
    func = build_function(module, "sm_90", options)
    verify.verify(func)
    return func


def ops(func) -> list:
    return [i.op for i in func.instrs()]


def per_thread(func, args, n, **sregs):
    for t in range(n):
        run_ir(func, args, {"tid.x": t, "laneid": t % 32, **sregs})


# --- 3. tests on hand-built trees --------------------------------------------------------------
def test_saxpy_params_and_ir_shape():
    i = v("i")
    body = [assign("i", T.Intrinsic(L, i32, "global_id", [c(0)])),
            T.If(L, cmp("lt", i, shape("x")),
                 [store("out", i, bin_("add", bin_("mul", v("a", f32), load("x", i)), load("y", i)))], [])]
    func = kernel({"x": arr(), "y": arr(), "a": f32, "out": arr()}, body, {"i": i32}, written={"out"})
    assert func.name == "k" and func.blocks[0] is func.entry
    assert [(p.name, p.kind, p.written) for p in func.params] == [
        ("x", "array", False), ("y", "array", False), ("a", "scalar", False), ("out", "array", True)]
    params = {i.attrs["name"]: i for i in func.instrs() if i.op == "param"}
    assert set(params) == {"k_x", "k_x_shape0", "k_y", "k_y_shape0", "k_a", "k_out", "k_out_shape0"}
    assert params["k_x"].attrs.get("ptr") and params["k_x"].type == i64 and params["k_x_shape0"].type == i32
    loads = [i for i in func.instrs() if i.op == "load"]
    assert len(loads) == 2 and all(l.attrs == {"space": "global", "nc": True} for l in loads)
    assert ops(func).count("mul_wide") == 3 and ops(func)[-1] == "ret"
    assert all(i.loc == L for i in func.instrs())
    x, y = np.arange(5, dtype=np.float32), np.ones(5, np.float32)
    out = np.zeros(5, np.float32)
    per_thread(func, [x, y, 2.0, out], 8, **{"ntid.x": 8})
    np.testing.assert_array_equal(out, 2 * x + y)


def _range_kernel(start, stop, step, sign, modify=False):
    """out[0] = sum of iterations * 1000 + count; out[1] = loop var after the loop (or -99)."""
    body = [assign("s", c(0)), assign("j", c(-99)),
            T.For(L, "j", start, stop, step, sign,
                  [assign("s", bin_("add", bin_("mul", v("s"), c(7)), v("j")))]
                  + ([assign("j", c(1000))] if modify else [])),
            store("out", c(0), v("s")), store("out", c(1), v("j"))]
    return kernel({"a": i32, "b": i32, "st": i32, "out": arr(i32)}, body, {"s": i32, "j": i32}, written={"out"})


@pytest.mark.parametrize("a,b,st", [(0, 10, 1), (3, 17, 4), (10, 0, 1), (10, 0, -3), (5, 5, 2), (-4, 9, 5),
                                    (9, -4, -5), (0, 3, -1)])
def test_for_range_runtime_step(a, b, st):
    func = _range_kernel(v("a"), v("b"), v("st"), 0)
    out = np.zeros(2, np.int32)
    run_ir(func, [a, b, st, out])
    s, last = 0, -99
    for j in range(a, b, st):
        s, last = s * 7 + j, j
    assert out.tolist() == [s, last]


@pytest.mark.parametrize("a,b,st,sign", [(0, 10, 3, 1), (10, -1, -2, -1), (4, 4, 1, 1), (0, 5, -1, -1)])
def test_for_range_constant_step_and_body_writes_loop_var(a, b, st, sign):
    for modify in (False, True):
        func = _range_kernel(v("a"), v("b"), c(st), sign, modify)
        out = np.zeros(2, np.int32)
        run_ir(func, [a, b, 0, out])
        s, last = 0, -99
        for j in range(a, b, st):
            s = s * 7 + j
            last = 1000 if modify else j
        assert out.tolist() == [s, last]


def test_while_with_break_and_continue():
    # n = 0; k = x; while True: k += 1; if k % 3 == 0: continue; n += k; if n > 50: break
    body = [assign("n", c(0)), assign("k", v("x")),
            T.While(L, c(True, bool_), [
                assign("k", bin_("add", v("k"), c(1))),
                T.If(L, cmp("eq", bin_("mod", v("k"), c(3)), c(0)), [T.Continue(L)], []),
                assign("n", bin_("add", v("n"), v("k"))),
                T.If(L, cmp("gt", v("n"), c(50)), [T.Break(L)], [])]),
            store("out", c(0), v("n")), store("out", c(1), v("k"))]
    func = kernel({"x": i32, "out": arr(i32)}, body, {"n": i32, "k": i32}, written={"out"})
    for x in (-7, 0, 5):
        out = np.zeros(2, np.int32)
        run_ir(func, [x, out])
        n, k = 0, x
        while True:
            k += 1
            if k % 3 == 0:
                continue
            n += k
            if n > 50:
                break
        assert out.tolist() == [n, k]


def test_static_range_unrolled_with_break_and_continue():
    # for k in static_range(6): if k == 1: continue; if x[k] < 0: break; s += x[k] * k
    body = [assign("s", c(0.0, f32)),
            T.StaticFor(L, "k", list(range(6)), [
                T.If(L, cmp("eq", v("k"), c(1)), [T.Continue(L)], []),
                T.If(L, cmp("lt", load("x", v("k")), c(0.0, f32)), [T.Break(L)], []),
                assign("s", bin_("add", v("s"), bin_("mul", load("x", v("k")), T.Cast(L, f32, v("k")))))]),
            store("out", c(0), v("s"))]
    func = kernel({"x": arr(), "out": arr()}, body, {"s": f32, "k": i32}, written={"out"})
    assert not any(b.name.startswith("for") or b.name.startswith("while") for b in func.blocks)
    for xs in ([1, 2, 3, 4, 5, 6], [1, -2, 3, -4, 5, 6], [1, 2, 3, 4, 5, -1]):
        x = np.array(xs, np.float32)
        out = np.zeros(1, np.float32)
        run_ir(func, [x, out])
        s = 0.0
        for k in range(6):
            if k == 1:
                continue
            if x[k] < 0:
                break
            s += x[k] * k
        assert out[0] == s


def test_static_range_without_jumps_folds_constant_branches():
    # for k in static_range(4): if k + 1 < 4: out[k + 1] = k  -> straight-line code, no branch
    body = [T.StaticFor(L, "k", [0, 1, 2, 3], [
        T.If(L, cmp("lt", bin_("add", v("k"), c(1)), c(4)), [store("out", bin_("add", v("k"), c(1)), v("k"))], [])])]
    func = kernel({"out": arr(i32)}, body, {"k": i32}, written={"out"})
    assert len(func.blocks) == 1 and ops(func).count("store") == 3
    out = np.full(4, -1, np.int32)
    run_ir(func, [out])
    assert out.tolist() == [-1, 0, 1, 2]


def test_guarded_loads_never_run_out_of_bounds():
    i = tid()
    guarded = T.IfExp(L, f32, cmp("lt", i, shape("x")), load("x", i), c(0.0, f32))
    positive = T.BoolOp(L, bool_, "and", [cmp("lt", i, shape("x")), cmp("gt", load("x", i), c(0.0, f32))])
    body = [store("out", i, bin_("add", guarded, T.Cast(L, f32, positive)))]
    func = kernel({"x": arr(), "out": arr()}, body, written={"out"})
    assert "select" not in ops(func) or ops(func).count("phi") >= 1
    x = np.array([1.5, -2.0, 3.0], np.float32)
    out = np.zeros(6, np.float32)
    per_thread(func, [x, out], 6)
    np.testing.assert_array_equal(out, [2.5, -2.0, 4.0, 0, 0, 0])
    # the same without the guard faults in the evaluator: the check above is meaningful
    bad = kernel({"x": arr(), "out": arr()}, [store("out", i, load("x", i))], written={"out"})
    with pytest.raises(OutOfBounds):
        per_thread(bad, [x, out], 6)


def test_if_elif_else_and_or_conditions():
    i = tid()
    cond_a = T.BoolOp(L, bool_, "or", [cmp("lt", i, c(2)), cmp("gt", load("x", i, ty=i32), c(10))])
    body = [T.If(L, cond_a, [store("out", i, c(1))],
                 [T.If(L, T.Unary(L, bool_, "not", cmp("eq", load("x", i, ty=i32), c(5))),
                       [store("out", i, c(2))], [store("out", i, c(3))])])]
    func = kernel({"x": arr(i32), "out": arr(i32)}, body, written={"out"})
    x = np.array([0, 20, 20, 5, 7, 11], np.int32)
    out = np.zeros(6, np.int32)
    per_thread(func, [x, out], 6)
    assert out.tolist() == [1, 1, 1, 3, 2, 1]


def test_chained_comparison_is_lazy_and_evaluates_middle_once():
    i = tid()
    chain = T.Compare(L, bool_, ["le", "lt", "lt"], [c(0), i, shape("x"), load("x", i, ty=i32)], [i32, i32, i32])
    func = kernel({"x": arr(i32), "out": arr(i32)}, [store("out", i, T.Cast(L, i32, chain))], written={"out"})
    assert ops(func).count("load") == 1
    x = np.array([-1, 5, 1], np.int32)
    out = np.zeros(5, np.int32)
    per_thread(func, [x, out], 5)
    assert out.tolist() == [0, 1, 0, 0, 0]


def test_tuple_assignment_swaps():
    body = [assign("a", c(0)), assign("b", c(1)),
            T.For(L, "t", c(0), v("n"), c(1), 1, [T.Assign(L, ["a", "b"], [v("b"), bin_("add", v("a"), v("b"))])]),
            store("out", c(0), v("a"))]
    func = kernel({"n": i32, "out": arr(i32)}, body, {"a": i32, "b": i32, "t": i32}, written={"out"})
    out = np.zeros(1, np.int32)
    run_ir(func, [10, out])
    assert out[0] == 55


@pytest.mark.parametrize("ty", [i32, i8, i64])
def test_floor_division_and_modulo_of_negative_ints(ty):
    a, b = v("a", ty), v("b", ty)
    body = [store("q", c(0), bin_("floordiv", a, b)), store("r", c(0), bin_("mod", a, b))]
    func = kernel({"a": ty, "b": ty, "q": arr(ty), "r": arr(ty)}, body, written={"q", "r"})
    assert {"floordiv", "floormod"} <= set(ops(func))
    for x, y in [(7, 2), (-7, 2), (7, -2), (-7, -2), (-8, 4), (0, -3)]:
        q, r = np.zeros(1, ty.numpy), np.zeros(1, ty.numpy)
        run_ir(func, [x, y, q, r])
        assert (q[0], r[0]) == (x // y, x % y)


def test_float_floordiv_mod_and_unsigned_div():
    x, y = v("x", f32), v("y", f32)
    body = [store("o", c(0), bin_("floordiv", x, y)), store("o", c(1), bin_("mod", x, y)),
            store("u", c(0), bin_("floordiv", v("p", u32), v("q", u32))),
            store("u", c(1), bin_("mod", v("p", u32), v("q", u32)))]
    func = kernel({"x": f32, "y": f32, "p": u32, "q": u32, "o": arr(), "u": arr(u32)}, body, written={"o", "u"})
    assert "floor" in ops(func) and "div" in ops(func) and "rem" in ops(func)
    o, u = np.zeros(2, np.float32), np.zeros(2, np.uint32)
    run_ir(func, [-7.5, 2.0, 4000000000, 7, o, u])
    assert o.tolist() == [-4.0, 0.5] and u.tolist() == [4000000000 // 7, 4000000000 % 7]


def test_power_by_repeated_squaring():
    body = [store("o", c(k), T.Pow(L, f32, v("x", f32), e)) for k, e in enumerate([0, 1, 2, 5, 8, -2])]
    body.append(store("n", c(0), T.Pow(L, i32, v("m"), 7)))
    func = kernel({"x": f32, "m": i32, "o": arr(), "n": arr(i32)}, body, written={"o", "n"})
    assert ops(func).count("mul") <= 3 + 1 + 3 + 3 + 1 + 4
    o, n = np.zeros(6, np.float32), np.zeros(1, np.int32)
    run_ir(func, [1.5, 3, o, n])
    np.testing.assert_allclose(o, [1, 1.5, 2.25, 1.5 ** 5, 1.5 ** 8, 1.5 ** -2], rtol=1e-6)
    assert n[0] == 3 ** 7
    with pytest.raises(CompileError):
        kernel({"m": i32, "n": arr(i32)}, [store("n", c(0), T.Pow(L, i32, v("m"), -1))], written={"n"})


def test_min_max_abs_shifts_invert_and_casts():
    x, m = v("x", f32), v("m")
    body = [store("o", c(0), bin_("min", x, c(1.0, f32))), store("o", c(1), bin_("max", x, c(-1.0, f32))),
            store("o", c(2), T.Intrinsic(L, f32, "abs", [x])),
            store("n", c(0), bin_("shl", m, c(3, i64))), store("n", c(1), bin_("shr", m, c(1, u32))),
            store("n", c(2), T.Unary(L, i32, "invert", m)), store("n", c(3), T.Cast(L, i32, x)),
            store("n", c(4), T.Cast(L, i32, T.Cast(L, i8, T.Binary(L, i32, "add", m, c(200))))),
            store("n", c(5), T.Cast(L, i32, T.Cast(L, bool_, x))), store("n", c(6), T.Intrinsic(L, i32, "abs", [m]))]
    func = kernel({"x": f32, "m": i32, "o": arr(), "n": arr(i32)}, body, written={"o", "n"})
    for op in ("shl", "shr"):
        shift = next(i for i in func.instrs() if i.op == op)
        assert shift.args[1].type.bits == 32
    o, n = np.zeros(3, np.float32), np.zeros(7, np.int32)
    run_ir(func, [-2.75, -20, o, n])
    assert o.tolist() == [-2.75, -1.0, 2.75]
    assert n.tolist() == [-160, -10, 19, -2, np.int8(-20 + 200 - 256), 1, 20]


def _divmod_func():
    a, b = v("a"), v("b")
    return T.FuncDef(L, "divmod_floor", [T.Param("a", i32), T.Param("b", i32)], TupleType((i32, i32)),
                     [T.Return(L, [bin_("floordiv", a, b), bin_("mod", a, b)])], False, {})


def _clamp_func():
    val, lo, hi = v("v", f32), v("lo", f32), v("hi", f32)
    return T.FuncDef(L, "clamp", [T.Param("v", f32), T.Param("lo", f32), T.Param("hi", f32)], f32,
                     [T.If(L, cmp("lt", val, lo), [T.Return(L, lo)], []),
                      T.If(L, cmp("gt", val, hi), [T.Return(L, hi)], []),
                      T.Return(L, val)], False, {})


def test_inlined_calls_with_tuple_returns_and_early_returns():
    i = tid()
    call = T.Call(L, TupleType((i32, i32)), "divmod_floor", [load("n", i, ty=i32), c(7)])
    clamp = T.Call(L, f32, "clamp", [load("x", i), c(-1.0, f32), c(1.0, f32)])
    body = [T.Assign(L, ["q", "r"], [call]), store("q", i, v("q")), store("r", i, v("r")),
            store("out", i, bin_("add", clamp, T.Call(L, f32, "clamp", [load("x", i), c(0.0, f32), c(0.5, f32)])))]
    funcs = {"divmod_floor": _divmod_func(), "clamp": _clamp_func()}
    func = kernel({"x": arr(), "n": arr(i32), "out": arr(), "q": arr(i32), "r": arr(i32)}, body,
                  {"q": i32, "r": i32}, written={"out", "q", "r"}, funcs=funcs)
    x = np.array([-3, -0.7, 0.2, 0.8, 4], np.float32)
    n = np.array([-15, -1, 0, 6, 22], np.int32)
    out, q, r = np.zeros(5, np.float32), np.zeros(5, np.int32), np.zeros(5, np.int32)
    per_thread(func, [x, n, out, q, r], 5)
    np.testing.assert_array_equal(out, np.clip(x, -1, 1) + np.clip(x, 0, 0.5))
    assert q.tolist() == (n // 7).tolist() and r.tolist() == (n % 7).tolist()


def test_array_arguments_bind_by_name_in_inlined_functions():
    callee = T.FuncDef(L, "bump", [T.Param("a", arr(i32)), T.Param("j", i32)], None,
                       [store("a", v("j"), bin_("add", load("a", v("j"), ty=i32), c(1)))], False, {})
    body = [T.ExprStmt(L, T.Call(L, None, "bump", [T.ArrayArg(L, arr(i32), "data"), tid()])),
            T.ExprStmt(L, T.Call(L, None, "bump", [T.ArrayArg(L, arr(i32), "data"), c(0)]))]
    func = kernel({"data": arr(i32)}, body, written={"data"}, funcs={"bump": callee})
    assert not any(i.attrs.get("nc") for i in func.instrs() if i.op == "load")
    data = np.zeros(3, np.int32)
    per_thread(func, [data], 3)
    assert data.tolist() == [4, 1, 1]


def test_two_dimensional_indexing_row_major():
    r, col = v("r"), v("c")
    body = [T.For(L, "r", c(0), shape("x", 0), c(1), 1, [
        T.For(L, "c", c(0), shape("x", 1), c(1), 1, [
            store("out", [r, col], bin_("add", load("x", r, col), T.Cast(L, f32, bin_("mul", r, col))))])])]
    func = kernel({"x": arr(f32, 2), "out": arr(f32, 2)}, body, {"r": i32, "c": i32}, written={"out"})
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    out = np.zeros((3, 4), np.float32)
    run_ir(func, [x, out])
    rr, cc = np.mgrid[0:3, 0:4]
    np.testing.assert_array_equal(out, x + rr * cc)


def test_64_bit_indices_compute_offsets_in_i64():
    body = [store("out", v("j", i64), load("x", v("j", i64)))]
    func = kernel({"j": i64, "x": arr(), "out": arr()}, body, written={"out"})
    assert "mul_wide" not in ops(func)
    x, out = np.arange(4, dtype=np.float32), np.zeros(4, np.float32)
    run_ir(func, [3, x, out])
    assert out[3] == 3


def test_variable_defined_on_one_path_is_undef_in_the_phi():
    body = [T.If(L, cmp("gt", v("n"), c(0)), [assign("t", c(5))], []),
            T.If(L, cmp("gt", v("n"), c(0)), [store("out", c(0), v("t"))], [])]
    func = kernel({"n": i32, "out": arr(i32)}, body, {"t": i32}, written={"out"})
    phis = [i for i in func.instrs() if i.op == "phi"]
    assert any(isinstance(a, ir.Undef) for p in phis for a in p.args) or not phis
    out = np.zeros(1, np.int32)
    run_ir(func, [1, out])
    assert out[0] == 5


def test_early_return_from_kernel_goes_to_single_exit():
    body = [T.If(L, cmp("ge", tid(), shape("out")), [T.Return(L, None)], []),
            store("out", tid(), c(9))]
    func = kernel({"out": arr(i32)}, body, written={"out"})
    assert ops(func).count("ret") == 1
    out = np.zeros(2, np.int32)
    per_thread(func, [out], 4)
    assert out.tolist() == [9, 9]


def test_debug_bounds_checks_and_asserts_trap_with_location():
    body = [T.Assert(L, cmp("lt", v("n"), c(10)), "n too big"), store("out", v("n"), c(1))]
    params = {"n": i32, "out": arr(i32)}
    plain = kernel(params, body, written={"out"})
    assert "trap" not in ops(plain) and "printf" not in ops(plain)
    func = kernel(params, body, written={"out"}, debug=True)
    assert func.blocks[-1].instrs[-1].op == "trap"
    out = np.zeros(4, np.int32)
    run_ir(func, [3, out])
    assert out[3] == 1
    with pytest.raises(Trapped, match=r"kern.py:3: index out of bounds"):
        run_ir(func, [4, out])
    with pytest.raises(Trapped, match=r"kern.py:3: index out of bounds"):
        run_ir(func, [-1, out])
    with pytest.raises(Trapped, match="kern.py:3: assertion failed: n too big"):
        run_ir(func, [12, out])


def _local_kernel(index):
    decl = T.ArrayDecl("r", f32, (4,), "local")
    body = [T.StaticFor(L, "k", [0, 1, 2, 3], [store("r", v("k"), T.Cast(L, f32, bin_("mul", v("k"), v("k"))))]),
            store("out", c(0), load("r", index))]
    return kernel({"j": i32, "out": arr()}, body, {"k": i32}, written={"out"}, arrays=[decl])


def test_local_array_with_constant_indices_lives_in_registers():
    func = _local_kernel(c(3))
    assert not func.arrays and "addr_of" not in ops(func)
    out = np.zeros(1, np.float32)
    run_ir(func, [0, out])
    assert out[0] == 9


def test_local_array_with_runtime_index_goes_to_local_memory():
    func = _local_kernel(v("j"))
    assert [(d.space, d.count, d.elem) for d in func.arrays] == [("local", 4, f32)]
    assert {i.attrs["space"] for i in func.instrs() if i.op in ("load", "store")} >= {"local"}
    out = np.zeros(1, np.float32)
    run_ir(func, [2, out])
    assert out[0] == 4


def test_shared_array_and_barrier():
    decl = T.ArrayDecl("tile", f32, (2, 8), "shared")
    body = [store("tile", [c(1), tid()], load("x", tid())),
            T.ExprStmt(L, T.Intrinsic(L, None, "syncthreads", [])),
            store("out", tid(), load("tile", c(1), tid()))]
    func = kernel({"x": arr(), "out": arr()}, body, written={"out"}, arrays=[decl])
    assert [(d.space, d.count) for d in func.arrays] == [("shared", 16)]
    assert "barrier" in ops(func) and "addr_of" in ops(func)
    shared = [i for i in func.instrs() if i.op in ("load", "store") and i.attrs["space"] == "shared"]
    assert len(shared) == 2
    x, out = np.arange(8, dtype=np.float32), np.zeros(8, np.float32)
    per_thread(func, [x, out], 8)
    np.testing.assert_array_equal(out, x)


def test_thread_intrinsics():
    names = ["thread_idx.y", "block_idx.z", "block_dim.x", "grid_dim.y", "lane_id", "warp_id"]
    body = [store("out", c(k), T.Intrinsic(L, i32, n, [])) for k, n in enumerate(names)]
    body += [store("out", c(6), T.Intrinsic(L, i32, "global_id", [c(1)])),
             store("out", c(7), T.Intrinsic(L, i32, "program_id", [c(2)])),
             store("out", c(8), T.Intrinsic(L, i32, "num_programs", [c(0)]))]
    func = kernel({"out": arr(i32)}, body, written={"out"})
    out = np.zeros(9, np.int32)
    regs = {"tid.x": 5, "tid.y": 2, "tid.z": 1, "ntid.x": 8, "ntid.y": 4, "ntid.z": 2, "ctaid.y": 3,
            "ctaid.z": 6, "nctaid.x": 11, "nctaid.y": 12, "laneid": 7}
    run_ir(func, [out], regs)
    linear = 5 + 8 * (2 + 4 * 1)
    assert out.tolist() == [2, 6, 8, 12, 7, linear >> 5, 3 * 4 + 2, 6, 11]


@pytest.mark.parametrize("name,fn", [("exp", np.exp), ("sin", np.sin), ("cos", np.cos), ("tan", np.tan),
                                     ("tanh", np.tanh), ("log", np.log), ("sqrt", np.sqrt)])
def test_f32_math_lowering(name, fn):
    body = [store("out", c(0), T.Intrinsic(L, f32, name, [v("x", f32)]))]
    func = kernel({"x": f32, "out": arr()}, body, written={"out"})
    for x in (0.3, 1.7, 12.5, 40.0, 0.0, -1e-3):
        if name in ("log", "sqrt") and x <= 0:
            continue
        out = np.zeros(1, np.float32)
        run_ir(func, [x, out])
        np.testing.assert_allclose(out[0], fn(np.float64(np.float32(x))), rtol=3e-7, atol=1e-30)


def test_exp_and_erf_edge_values():
    import math as m
    body = [store("out", c(0), T.Intrinsic(L, f32, "exp", [v("x", f32)])),
            store("out", c(1), T.Intrinsic(L, f32, "erf", [v("x", f32)]))]
    func = kernel({"x": f32, "out": arr()}, body, written={"out"})
    for x in (88.5, -100.0, 1e30, -np.inf, np.inf, np.nan, 0.5, -0.9, 1.3, -2.5, 5.0):
        out = np.zeros(2, np.float32)
        run_ir(func, [x, out])
        want = np.float32([m.exp(x) if x < 89 else np.inf, m.erf(x)]) if not np.isnan(x) else [np.nan] * 2
        np.testing.assert_allclose(out, want, rtol=4e-7)


def test_f64_transcendentals_inline_the_library_and_f16_math_goes_through_f32():
    names = ("exp", "log", "sin", "tanh")
    body = [store("out", c(k), T.Intrinsic(L, f64, name, [v("x", f64)])) for k, name in enumerate(names)]
    func = kernel({"x": f64, "out": arr(f64)}, body, written={"out"})
    assert {i.loc for i in func.instrs()} <= {L, None}      # library code carries the call's line
    out = np.zeros(len(names))
    run_ir(func, [0.75, out])
    np.testing.assert_array_max_ulp(out, [np.exp(0.75), np.log(0.75), np.sin(0.75), np.tanh(0.75)], 1)
    func = kernel({"x": f64, "h": f16, "out": arr(f64), "o16": arr(f16)},
                  [store("out", c(0), T.Intrinsic(L, f64, "sqrt", [v("x", f64)])),
                   store("o16", c(0), T.Intrinsic(L, f16, "exp", [v("h", f16)]))], written={"out", "o16"})
    out, o16 = np.zeros(1), np.zeros(1, np.float16)
    run_ir(func, [2.0, 1.0, out, o16])
    assert out[0] == np.sqrt(2.0) and o16[0] == np.float16(np.e)


def test_fast_math_uses_approximations():
    body = [store("out", c(0), bin_("truediv", T.Intrinsic(L, f32, "exp", [v("x", f32)]), v("x", f32)))]
    func = kernel({"x": f32, "out": arr()}, body, written={"out"}, fast_math=True)
    div = next(i for i in func.instrs() if i.op == "div")
    assert div.attrs.get("approx") and "round" not in ops(func)


def test_print_converts_arguments():
    body = [T.Print(L, "%f %d %d %d\n", [v("x", f32), v("b", bool_), v("s", i8), v("m")])]
    func = kernel({"x": f32, "b": bool_, "s": i8, "m": i32}, body)
    printf = next(i for i in func.instrs() if i.op == "printf")
    assert [a.type for a in printf.args] == [f64, i32, i32, i32] and printf.attrs["fmt"] == "%f %d %d %d\n"
    assert run_ir(func, [1.5, True, -3, 7]) == ["1.500000 1 -3 7\n"]


def test_vector_load_and_store():
    i = bin_("mul", tid(), c(4))
    body = [T.VectorLoad(L, ["a", "b", "c", "d"], "x", i, 4),
            T.VectorStore(L, "out", i, [v("d", f32), v("c", f32), v("b", f32), v("a", f32)])]
    func = kernel({"x": arr(), "out": arr()}, body, {n: f32 for n in "abcd"}, written={"out"})
    vload = next(i for i in func.instrs() if i.op == "vload")
    assert vload.attrs == {"space": "global", "nc": True, "n": 4}
    assert ops(func).count("extract") == 4 and "vstore" in ops(func)
    x, out = np.arange(8, dtype=np.float32), np.zeros(8, np.float32)
    per_thread(func, [x, out], 2)
    assert out.tolist() == [3, 2, 1, 0, 7, 6, 5, 4]


def test_atomics_on_global_and_local_arrays():
    atom = T.Intrinsic(L, i32, "atomic_sub", [c(2)], {"array": "acc", "indices": [c(0)]})
    cas = T.Intrinsic(L, i32, "atomic_cas", [c(0), c(7)], {"array": "acc", "indices": [c(1)]})
    decl = T.ArrayDecl("r", i32, (2,), "local")
    body = [store("old", c(0), atom), store("old", c(1), cas), store("r", c(1), c(5)),
            store("old", c(2), T.Intrinsic(L, i32, "atomic_max", [c(9)], {"array": "r", "indices": [c(1)]})),
            store("old", c(3), load("r", c(1), ty=i32))]
    func = kernel({"acc": arr(i32), "old": arr(i32)}, body, written={"acc", "old"}, arrays=[decl])
    atoms = [i for i in func.instrs() if i.op == "atom"]
    assert [(a.attrs["op"], a.attrs["space"]) for a in atoms] == [("add", "global"), ("cas", "global")]
    acc, old = np.array([10, 0], np.int32), np.zeros(4, np.int32)
    run_ir(func, [acc, old])
    assert acc.tolist() == [8, 7] and old.tolist() == [10, 0, 5, 9]


def test_warp_functions():
    body = [store("o", c(0), T.Intrinsic(L, f32, "warp_sum", [v("x", f32)])),
            store("d", c(0), T.Intrinsic(L, f64, "shfl_xor_sync", [v("y", f64), c(1)])),
            store("h", c(0), T.Intrinsic(L, f16, "shfl_down_sync", [v("h", f16), c(2)])),
            store("u", c(0), T.Intrinsic(L, u32, "ballot_sync", [cmp("gt", v("x", f32), c(0.0, f32))])),
            store("u", c(1), T.Cast(L, u32, T.Intrinsic(L, bool_, "any_sync", [cmp("gt", v("x", f32), c(0.0, f32))])))]
    func = kernel({"x": f32, "y": f64, "h": f16, "o": arr(), "d": arr(f64), "h16": arr(f16), "u": arr(u32)},
                  [s if not (isinstance(s, T.Store) and s.array == "h") else store("h16", c(0), s.value) for s in body],
                  written={"o", "d", "h16", "u"})
    shfls = [i for i in func.instrs() if i.op == "shfl"]
    # warp_sum: five butterflies, or (a block that is not whole warps) five shfl.down and a
    # shfl.idx that takes only the lanes present
    assert all(s.type.bits == 32 for s in shfls) and len(shfls) == 5 + 6 + 2 + 1
    assert {s.attrs["mode"] for s in shfls} == {"bfly", "idx", "down"}
    o, d, h, u = np.zeros(1, np.float32), np.zeros(1), np.zeros(1, np.float16), np.zeros(2, np.uint32)
    run_ir(func, [1.5, -2.25, 3.5, o, d, h, u])
    # the evaluator runs one thread, a block of one: its warp is that one lane
    assert (o[0], d[0], h[0]) == (1.5, -2.25, 3.5) and u.tolist() == [1, 1]


def test_unlowerable_nodes_raise_located_compile_errors():
    class Weird(T.Stmt):
        pass

    with pytest.raises(CompileError, match="cannot compile a Weird statement"):
        kernel({}, [Weird(L)])
    with pytest.raises(CompileError, match="'break' outside a loop"):
        kernel({}, [T.Break(L)])
    with pytest.raises(CompileError, match="unsupported intrinsic"):
        kernel({}, [T.ExprStmt(L, T.Intrinsic(L, i32, "frobnicate", []))])


# --- 4. kernels from source (frontend -> SSA -> evaluator, per thread) --------------------------
HEADER = """
import math
import ptxpy
from ptxpy import Array, Const, f16, f32, f64, i8, i16, i32, i64, u8, u16, u32, u64
"""
rng = np.random.default_rng(7)


def compile_src(body: str, name: str, consts=None, **options):
    frontend = pytest.importorskip("ptxpy.transpiler.frontend")
    source = HEADER + body
    parsed = frontend.parse_module(source, "src.py")
    func = build_function(frontend.check_kernel(parsed, name, consts or {}), "sm_90", options)
    verify.verify(func)
    return func


def launch(func, args, grid=1, block=32):
    grid = (grid, 1, 1) if isinstance(grid, int) else tuple(grid) + (1,) * (3 - len(grid))
    block = (block, 1, 1) if isinstance(block, int) else tuple(block) + (1,) * (3 - len(block))
    dims = {"ntid.x": block[0], "ntid.y": block[1], "ntid.z": block[2],
            "nctaid.x": grid[0], "nctaid.y": grid[1], "nctaid.z": grid[2]}
    for b in np.ndindex(*grid[::-1]):
        for t in np.ndindex(*block[::-1]):
            linear = t[2] + block[0] * (t[1] + block[1] * t[0])
            regs = {"ctaid.z": b[0], "ctaid.y": b[1], "ctaid.x": b[2], "tid.z": t[0], "tid.y": t[1],
                    "tid.x": t[2], "laneid": linear % 32, **dims}
            run_ir(func, args, regs)


def test_src_saxpy_and_loop():
    func = compile_src("""
@ptxpy.jit
def saxpy(x: Array[f32], y: Array[f32], a: f32, out: Array[f32]):
    i = ptxpy.global_id(0)
    if i < x.shape[0]:
        s = 0.0
        for k in range(i):
            s += 1.0
        out[i] = a * x[i] + y[i] + s
""", "saxpy")
    x, y = rng.standard_normal(50).astype(np.float32), rng.standard_normal(50).astype(np.float32)
    out = np.zeros(50, np.float32)
    launch(func, [x, y, 2.0, out], grid=2, block=32)
    np.testing.assert_allclose(out, 2 * x + y + np.arange(50), rtol=1e-6)


def test_src_if_elif_else_and_while_collatz():
    func = compile_src("""
@ptxpy.jit
def k(x: Array[i32], out: Array[i32], steps: Array[i32]):
    i = ptxpy.global_id()
    if i >= len(x):
        return
    v = x[i]
    if v < 0:
        out[i] = -1
    elif v == 0:
        out[i] = 0
    elif v < 10:
        out[i] = 1
    else:
        out[i] = 2
    n = 0
    while v > 1:
        if v % 2 == 0:
            v //= 2
        else:
            v = 3 * v + 1
        n += 1
    steps[i] = n
""", "k")
    x = np.array([-5, 0, 3, 27, 10, 1, 97], np.int32)
    out, steps = np.zeros(7, np.int32), np.zeros(7, np.int32)
    launch(func, [x, out, steps], block=8)

    def collatz(v):
        n = 0
        while v > 1:
            v, n = (v // 2 if v % 2 == 0 else 3 * v + 1), n + 1
        return n
    assert out.tolist() == [-1, 0, 1, 2, 2, 1, 2]
    assert steps.tolist() == [collatz(v) for v in x]


@pytest.mark.parametrize("start,stop,step", [(0, 10, 3), (10, 0, -3), (5, 5, 1), (7, 2, 1), (-3, 8, 4), (2, -9, -1)])
def test_src_for_range_runtime_step_and_loop_var_after(start, stop, step):
    func = compile_src("""
@ptxpy.jit
def k(a: i32, b: i32, c: i32, out: Array[i32]):
    j = -100
    total = 0
    count = 0
    for j in range(a, b, c):
        total += j
        count += 1
        j = 1000
    out[0] = total
    out[1] = count
    out[2] = j
""", "k")
    out = np.zeros(3, np.int32)
    run_ir(func, [start, stop, step, out])
    r = list(range(start, stop, step))
    assert out.tolist() == [sum(r), len(r), 1000 if r else -100]


def test_src_static_range_break_continue_and_early_return():
    func = compile_src("""
N = 8

@ptxpy.jit
def k(x: Array[f32, 2], out: Array[f32]):
    row = ptxpy.global_id(0)
    if row >= x.shape[0]:
        return
    acc = 0.0
    for j in ptxpy.static_range(N):
        if j % 3 == 2:
            continue
        if x[row, j] < -1.0:
            break
        acc += x[row, j]
    for j in range(x.shape[1]):
        if x[row, j] > 2.0:
            out[row] = acc + 100.0
            return
    out[row] = acc
""", "k")
    x = rng.standard_normal((12, 8)).astype(np.float32)
    out = np.zeros(12, np.float32)
    launch(func, [x, out], block=16)
    expected = []
    for row in x:
        acc = np.float32(0)
        for j in range(8):
            if j % 3 == 2:
                continue
            if row[j] < -1:
                break
            acc += row[j]
        expected.append(acc + 100 if (row > 2).any() else acc)
    np.testing.assert_allclose(out, expected, rtol=1e-6)


def test_src_guarded_loads_and_chained_comparisons():
    func = compile_src("""
@ptxpy.jit
def k(x: Array[f32], out: Array[f32], flags: Array[i32]):
    i = ptxpy.global_id(0)
    v = x[i] if i < len(x) else -1.0
    ok = i < len(x) and x[i] > 0.0
    inside = 0 <= i - 2 < len(x) - 2 and x[i] != 0.0
    if i < len(out):
        out[i] = v
        flags[i] = (1 if ok else 0) + (2 if inside else 0)
""", "k")
    x = np.array([1.0, -2.0, 3.0, 0.0, 5.0], np.float32)
    out, flags = np.zeros(8, np.float32), np.zeros(8, np.int32)
    launch(func, [x, out, flags], block=8)
    assert out.tolist() == [1, -2, 3, 0, 5, -1, -1, -1]
    assert flags.tolist() == [1, 0, 3, 0, 3, 0, 0, 0]


def test_src_swap_augmented_assignment_and_arrays():
    func = compile_src("""
@ptxpy.jit
def k(n: Array[i32], out: Array[i64]):
    i = ptxpy.global_id(0)
    if i < len(n):
        a = 0
        b = 1
        for t in range(n[i]):
            a, b = b, a + b
        out[i] = i64(a)
        out[i] *= 2
        out[i] -= 1
""", "k")
    n = np.array([0, 1, 2, 10, 20], np.int32)
    out = np.zeros(5, np.int64)
    launch(func, [n, out], block=8)
    fib = [0, 1, 1, 55, 6765]
    assert out.tolist() == [2 * f - 1 for f in fib]


@pytest.mark.parametrize("dtype", ["i32", "i8", "i64"])
def test_src_floor_division_and_modulo(dtype):
    func = compile_src(f"""
@ptxpy.jit
def k(a: Array[{dtype}], b: Array[{dtype}], q: Array[{dtype}], r: Array[{dtype}]):
    i = ptxpy.global_id(0)
    if i < len(a):
        q[i] = a[i] // b[i]
        r[i] = a[i] % b[i]
""", "k")
    npt = {"i32": np.int32, "i8": np.int8, "i64": np.int64}[dtype]
    a = np.array([7, -7, 7, -7, 0, -100, 99], npt)
    b = np.array([2, 2, -2, -2, 5, 7, -8], npt)
    q, r = np.zeros(7, npt), np.zeros(7, npt)
    launch(func, [a, b, q, r], block=8)
    assert q.tolist() == (a // b).tolist() and r.tolist() == (a % b).tolist()


def test_src_power_min_max_abs_casts():
    func = compile_src("""
@ptxpy.jit
def k(x: Array[f32], n: Array[i32], o: Array[f32], m: Array[i32]):
    i = ptxpy.global_id(0)
    if i < len(x):
        v = x[i]
        o[i] = v ** 3 + v ** 2 + 2.0 ** -1 + max(v, 0.5, -v) + min(abs(v), 1.0)
        m[i] = int(v) + n[i] ** 2 + i32(i8(n[i] * 50)) + min(n[i], 3, i) + abs(n[i])
""", "k")
    x = np.array([-2.5, 0.25, 3.75, -0.75], np.float32)
    n = np.array([-3, 4, 9, -1], np.int32)
    o, m = np.zeros(4, np.float32), np.zeros(4, np.int32)
    launch(func, [x, n, o, m], block=4)
    expected_o = x ** 3 + x ** 2 + 0.5 + np.maximum(np.maximum(x, 0.5), -x) + np.minimum(np.abs(x), 1)
    np.testing.assert_allclose(o, expected_o, rtol=1e-6)
    i = np.arange(4)
    expected_m = (np.trunc(x).astype(np.int32) + n ** 2 + (n * 50).astype(np.int8)
                  + np.minimum(np.minimum(n, 3), i) + np.abs(n))
    assert m.tolist() == expected_m.tolist()


def test_src_device_functions_with_tuple_returns_and_arrays():
    func = compile_src("""
@ptxpy.func
def divmod_floor(a: i32, b: i32) -> tuple[i32, i32]:
    return a // b, a % b

@ptxpy.func
def clamp(v: f32, lo: f32, hi: f32) -> f32:
    if v < lo:
        return lo
    if v > hi:
        return hi
    return v

@ptxpy.func
def scaled_sum(x: Array[f32], i: i32, s: f32) -> f32:
    return clamp(x[i] * s, -1.0, 1.0) + clamp(x[i], 0.0, 0.5)

@ptxpy.jit
def funcs(x: Array[f32], n: Array[i32], out: Array[f32], q: Array[i32], r: Array[i32]):
    i = ptxpy.global_id(0)
    if i < len(x):
        out[i] = scaled_sum(x, i, 0.5)
        qq, rr = divmod_floor(n[i], 7)
        q[i] = qq
        r[i] = rr
""", "funcs")
    x = rng.uniform(-4, 4, 20).astype(np.float32)
    n = rng.integers(-100, 100, 20).astype(np.int32)
    out, q, r = np.zeros(20, np.float32), np.zeros(20, np.int32), np.zeros(20, np.int32)
    launch(func, [x, n, out, q, r], block=32)
    np.testing.assert_array_equal(out, np.clip(x * np.float32(0.5), -1, 1) + np.clip(x, 0, 0.5))
    assert q.tolist() == (n // 7).tolist() and r.tolist() == (n % 7).tolist()


@pytest.mark.parametrize("kk,neg", [(1, False), (3, True)])
def test_src_const_parameters(kk, neg):
    func = compile_src("""
@ptxpy.jit
def scale(x: Array[f32], out: Array[f32], K: Const[int] = 2, NEG: Const[bool] = False):
    i = ptxpy.global_id(0)
    if i < len(x):
        v = x[i] * K
        if NEG:
            v = -v
        out[i] = v
""", "scale", {"K": kk, "NEG": neg})
    assert [p.name for p in func.params] == ["x", "out"]
    x = rng.standard_normal(16).astype(np.float32)
    out = np.zeros(16, np.float32)
    launch(func, [x, out], block=16)
    np.testing.assert_array_equal(out, x * kk * (-1 if neg else 1))


def test_src_thread_intrinsics_2d():
    func = compile_src("""
@ptxpy.jit
def ids(out: Array[i32, 3]):
    x = ptxpy.block_idx.x * ptxpy.block_dim.x + ptxpy.thread_idx.x
    y = ptxpy.program_id(1) * ptxpy.block_dim.y + ptxpy.thread_idx.y
    if x < out.shape[1] and y < out.shape[0]:
        out[y, x, 0] = ptxpy.global_id(0) + 1000 * ptxpy.global_id(1)
        out[y, x, 1] = ptxpy.lane_id() + 100 * ptxpy.warp_id()
        out[y, x, 2] = ptxpy.num_programs(0) * 10 + ptxpy.grid_dim.y + ptxpy.WARP_SIZE * 1000
""", "ids")
    out = np.zeros((12, 20, 3), np.int32)
    launch(func, [out], grid=(3, 2), block=(8, 8))
    yy, xx = np.mgrid[0:12, 0:20]
    np.testing.assert_array_equal(out[..., 0], xx + 1000 * yy)
    linear = (xx % 8) + 8 * (yy % 8)
    np.testing.assert_array_equal(out[..., 1], linear % 32 + 100 * (linear // 32))
    np.testing.assert_array_equal(out[..., 2], 3 * 10 + 2 + 32000)


def test_src_nan_comparisons_follow_python():
    func = compile_src("""
@ptxpy.jit
def nans(x: Array[f32], out: Array[i32]):
    i = ptxpy.global_id(0)
    if i < len(x):
        v = x[i]
        out[i] = (1 if v == v else 0) + (2 if v != v else 0) + (4 if v < 1.0 else 0) + (8 if not v >= 1.0 else 0)
""", "nans")
    x = np.array([np.nan, 0.0, 2.0, -np.inf, np.inf], np.float32)
    out = np.zeros(5, np.int32)
    launch(func, [x, out], block=8)
    expected = [(1 if v == v else 0) + (2 if v != v else 0) + (4 if v < 1 else 0) + (8 if not v >= 1 else 0)
                for v in x.tolist()]
    assert out.tolist() == expected


@pytest.mark.parametrize("runtime_index", [False, True])
def test_src_local_array_registers_or_memory(runtime_index):
    index = "(i + j) % 4" if runtime_index else "3 - j"
    func = compile_src(f"""
@ptxpy.jit
def k(x: Array[f32], out: Array[f32]):
    i = ptxpy.global_id(0)
    r = ptxpy.local_array(4, f32)
    for j in ptxpy.static_range(4):
        r[j] = x[4 * i + j]
    s = 0.0
    for j in ptxpy.static_range(4):
        s += r[{index}] * (j + 1)
    out[i] = s
""", "k")
    assert bool(func.arrays) == runtime_index
    x = rng.standard_normal(8).astype(np.float32)
    out = np.zeros(2, np.float32)
    launch(func, [x, out], block=2)
    rows = x.reshape(2, 4)
    weights = np.arange(1, 5)
    if runtime_index:
        expected = [sum(rows[i][(i + j) % 4] * (j + 1) for j in range(4)) for i in range(2)]
    else:
        expected = (rows[:, ::-1] * weights).sum(1)
    np.testing.assert_allclose(out, expected, rtol=1e-6)


def test_src_debug_mode_reports_the_source_line():
    func = compile_src("""
@ptxpy.jit
def k(x: Array[f32], out: Array[f32]):
    i = ptxpy.global_id(0)
    assert i < 100, "too many threads"
    out[i] = x[i + 1]
""", "k", debug=True)
    x, out = np.zeros(4, np.float32), np.zeros(4, np.float32)
    run_ir(func, [x, out], {"tid.x": 2})
    with pytest.raises(Trapped, match=r"src\.py:10: index out of bounds.*'x'"):
        run_ir(func, [x, out], {"tid.x": 3})
    with pytest.raises(Trapped, match=r"src\.py:9: assertion failed: too many threads"):
        run_ir(func, [x, np.zeros(200, np.float32)], {"tid.x": 150})


def test_by_ref_scalar_is_loaded_once_at_entry():
    fd_params = [T.Param("a", f32, by_ref=True), T.Param("out", arr())]
    fd = T.FuncDef(L, "k", fd_params, None, [store("out", c(0), bin_("mul", v("a", f32), c(2.0, f32)))],
                   True, {}, [], {"out"})
    func = build_function(T.TypedModule(fd, {}, "kern.py", []))
    verify.verify(func)
    assert func.params[0].by_ref and func.params[0].kind == "scalar"
    load_a = next(i for i in func.entry.instrs if i.op == "load")
    assert load_a.attrs == {"space": "global", "nc": True} and load_a.args[0].attrs["ptr"]
    out = np.zeros(1, np.float32)
    run_ir(func, [1.25, out])
    assert out[0] == 2.5


def test_select_only_for_trivially_safe_arms():
    i = tid()
    safe = T.IfExp(L, i32, cmp("lt", i, c(3)), bin_("add", i, c(1)), c(0))
    func = kernel({"out": arr(i32)}, [store("out", c(0), safe)], written={"out"})
    assert "select" in ops(func) and len(func.blocks) == 1
    unsafe = T.IfExp(L, i32, cmp("ne", i, c(0)), bin_("floordiv", c(10), i), c(0))
    func = kernel({"out": arr(i32)}, [store("out", c(0), unsafe)], written={"out"})
    assert "select" not in ops(func) and "phi" in ops(func)


def test_debug_vector_access_checks_alignment():
    body = [T.VectorLoad(L, ["a", "b"], "x", v("s"), 2), store("out", c(0), bin_("add", v("a", f32), v("b", f32)))]
    func = kernel({"s": i32, "x": arr(), "out": arr()}, body, {"a": f32, "b": f32}, written={"out"}, debug=True)
    x, out = np.arange(6, dtype=np.float32), np.zeros(1, np.float32)
    run_ir(func, [2, x, out])
    assert out[0] == 5
    with pytest.raises(Trapped, match="misaligned vector access"):
        run_ir(func, [3, x, out])
    with pytest.raises(Trapped, match="index out of bounds"):
        run_ir(func, [6, x, out])


def test_each_inlined_call_gets_fresh_variables():
    # func: t = 0; for k in static_range(4): if k == j: return t; t += k ... ; return t
    body = [assign("t", c(0)),
            T.StaticFor(L, "k", [0, 1, 2, 3], [T.If(L, cmp("eq", v("k"), v("j")), [T.Return(L, v("t"))], []),
                                               assign("t", bin_("add", v("t"), v("k")))]),
            T.Return(L, v("t"))]
    partial = T.FuncDef(L, "partial", [T.Param("j", i32)], i32, body, False, {"t": i32, "k": i32})
    kbody = [assign("t", c(100)),
             store("out", c(0), bin_("add", T.Call(L, i32, "partial", [v("n")]),
                                     T.Call(L, i32, "partial", [c(2)]))),
             store("out", c(1), v("t"))]
    func = kernel({"n": i32, "out": arr(i32)}, kbody, {"t": i32}, written={"out"}, funcs={"partial": partial})
    for n, first in [(0, 0), (3, 3), (9, 6)]:
        out = np.zeros(2, np.int32)
        run_ir(func, [n, out])
        assert out.tolist() == [first + 1, 100]


def test_long_unrolled_kernels_build_without_deep_recursion():
    body = [assign("acc", c(0.0, f32)),
            T.StaticFor(L, "j", list(range(400)), [
                T.If(L, cmp("gt", load("x", v("j")), v("acc", f32)),
                     [assign("acc", bin_("add", v("acc", f32), load("x", v("j"))))], [])]),
            store("out", c(0), v("acc", f32))]
    func = kernel({"x": arr(), "out": arr()}, body, {"acc": f32, "j": i32}, written={"out"}, debug=True)
    x, out = rng.standard_normal(400).astype(np.float32), np.zeros(1, np.float32)
    run_ir(func, [x, out])
    acc = np.float32(0)
    for value in x:
        if value > acc:
            acc = acc + value
    assert out[0] == acc
