"""The frontend: parse_module finds kernels, check_kernel produces the typed tree (SPEC 2.1-2.5)."""
import textwrap

import pytest

from ptxpy.transpiler import typed
from ptxpy.transpiler.errors import CompileError
from ptxpy.transpiler.frontend import ParsedModule, TupleExpr, check_kernel, parse_module
from ptxpy.types import ArrayType, ConstType, TupleType, bf16, bool_, f16, f32, f64, i32, i64, u32, u64, u8

HEADER = """\
import math
import ptxpy
from ptxpy import Array, Const, bf16, f16, f32, f64, i8, i16, i32, i64, u8, u16, u32, u64
"""


def module(body: str, name: str = "k", consts=None, by_ref=frozenset()) -> typed.TypedModule:
    parsed = parse_module(HEADER + textwrap.dedent(body), "test.py")
    return check_kernel(parsed, name, consts, by_ref)


def kernel(body: str, **kw) -> typed.FuncDef:
    return module(body, **kw).kernel


def text(body: str, **kw) -> str:
    return typed.format_func(kernel(body, **kw))


def expr_of(line: str, params: str = "x: Array[f32], h: f16, n: i32, u: u32, d: f64, b: bf16") -> typed.Expr:
    """The typed value of `line` assigned to a fresh variable in a kernel."""
    k = kernel(f"""
        @ptxpy.jit
        def k({params}):
            r = {line}
        """)
    return k.body[0].values[0]


# --- parse_module ----------------------------------------------------------------------------
def test_parse_finds_kernels_and_funcs_in_source_order():
    parsed = parse_module(HEADER + textwrap.dedent("""
        @ptxpy.jit(out_shape=lambda x: x, grid=lambda x: (ptxpy.cdiv(x.shape[0], 256),), block=256)
        def second(x: Array[f32], out: Array[f32]):
            pass

        @ptxpy.func
        def helper(a: f32) -> f32:
            return a

        def plain(x):
            return x

        @ptxpy.jit
        def first(x: Array[i32, 2], n: int, flag: bool, s: float, K: Const[int] = 3):
            pass
        """), "m.py")
    assert isinstance(parsed, ParsedModule)
    assert list(parsed.kernels) == ["second", "first"]
    assert list(parsed.funcs) == ["helper"]
    first = parsed.kernels["first"]
    assert first.name == "first" and first.loc == (17, 4)
    assert [(p.name, p.type, p.default) for p in first.params] == [
        ("x", ArrayType(i32, 2), None), ("n", i32, None), ("flag", bool_, None), ("s", f32, None),
        ("K", ConstType(i32), 3)]
    assert first.params[0].loc == (17, 10)


@pytest.mark.parametrize("imports,decorator,f32_name", [
    ("import ptxpy", "@ptxpy.jit", "ptxpy.f32"),
    ("import ptxpy as px", "@px.jit()", "px.f32"),
    ("from ptxpy import jit, f32", "@jit", "f32"),
    ("from ptxpy import jit as kern\nfrom ptxpy.types import f32 as F", "@kern(block=32)", "F"),
    ("import ptxpy.types as T\nimport ptxpy", "@ptxpy.jit", "T.f32"),
    ("from ptxpy import *", "@jit(grid=lambda *a: 1)", "f32"),
    ("from ptxpy.api import jit\nfrom ptxpy import f32", "@jit", "f32"),
    ("import ptxpy.api\nimport ptxpy", "@ptxpy.api.jit", "ptxpy.f32"),
    ("import ptxpy.api as A\nimport ptxpy", "@A.jit(block=64)", "ptxpy.f32"),
])
def test_decorator_and_type_spellings(imports, decorator, f32_name):
    source = f"{imports}\n{decorator}\ndef k(a: {f32_name}):\n    b = a\n"
    parsed = parse_module(source)
    assert parsed.kernels["k"].params[0].type == f32
    assert check_kernel(parsed, "k").kernel.locals == {"b": f32}


def test_star_import_brings_exactly_ptxpys_exports():
    """`from ptxpy import *` binds `ptxpy.__all__` (the bool type is `bool_`), so Python's `bool`
    keeps its meaning in annotations, `Const[bool]`, casts and return types."""
    import ptxpy
    from ptxpy.transpiler.scope import PTXPY_NAMES

    assert PTXPY_NAMES == set(ptxpy.__all__)
    source = textwrap.dedent("""
        from ptxpy import *

        @func
        def positive(v: f32) -> bool:
            return v > 0.0

        @jit
        def k(p: bool, x: Array[f32], flag: Const[bool] = True):
            x[0] = 1.0 if p and flag and bool(x[1]) and positive(x[2]) else 0.0
        """)
    parsed = parse_module(source)
    assert [p.type for p in parsed.kernels["k"].params] == [bool_, ArrayType(f32, 1), ConstType(bool_)]
    assert parsed.funcs["positive"].return_type == bool_
    check_kernel(parsed, "k")


def test_func_decorator_with_alias():
    source = "import ptxpy as p\n@p.func\ndef f(a: p.i32) -> p.i32:\n    return a\n"
    assert list(parse_module(source).funcs) == ["f"]


def test_parse_never_runs_the_module(tmp_path):
    marker = tmp_path / "ran"
    source = HEADER + textwrap.dedent(f"""
        open({str(marker)!r}, "w").write("ran")
        raise SystemExit("this module must not run")
        import not_a_real_module_anywhere

        @ptxpy.jit(grid=lambda: 1 / 0)
        def k(out: Array[f32]):
            out[0] = 1.0
        """)
    parsed = parse_module(source)
    check_kernel(parsed, "k")
    assert not marker.exists()


def test_functions_without_ptxpy_decorators_are_ignored():
    parsed = parse_module(HEADER + "import functools\n@functools.cache\ndef f(x):\n    return x\n")
    assert parsed.kernels == {} and parsed.funcs == {}


# --- the typed tree --------------------------------------------------------------------------
def test_saxpy_typed_tree():
    assert text("""
        @ptxpy.jit
        def k(x: Array[f32], y: Array[f32], a: f32, out: Array[f32]):
            i = ptxpy.global_id(0)
            if i < x.shape[0]:
                out[i] = a * x[i] + y[i]
        """) == textwrap.dedent("""\
        kernel k(x: Array[f32], y: Array[f32], a: f32, out: Array[f32]):
            # locals: i: i32
            i = global_id(0:i32):i32
            if (i:i32 lt.i32 x.shape[0]):
                out[i:i32] = ((a:f32 mul x[i:i32]:f32):f32 add y[i:i32]:f32):f32""")


def test_loop_kernel_typed_tree():
    assert text("""
        @ptxpy.jit
        def k(x: Array[f32, 2], out: Array[f32]):
            row = ptxpy.global_id()
            acc = 0.0
            for j in range(x.shape[1]):
                acc += x[row, j]
            out[row] = acc / x.shape[1]
        """) == textwrap.dedent("""\
        kernel k(x: Array[f32, 2], out: Array[f32]):
            # locals: row: i32, acc: f32, j: i32
            row = global_id(0:i32):i32
            acc = 0.0:f32
            for j in range(0:i32, x.shape[1], 1:i32):
                acc = (acc:f32 add x[row:i32, j:i32]:f32):f32
            out[row:i32] = (acc:f32 truediv f32(x.shape[1])):f32""")


def test_nodes_carry_types_and_locations():
    k = kernel("""
        @ptxpy.jit
        def k(x: Array[f32], out: Array[f32]):
            i = ptxpy.thread_idx.x
            out[i] = x[i] * 2
        """)
    assign, store = k.body
    assert isinstance(assign, typed.Assign) and assign.loc == (7, 4)
    intrinsic = assign.values[0]
    assert isinstance(intrinsic, typed.Intrinsic) and intrinsic.name == "thread_idx.x"
    assert intrinsic.loc == (7, 8) and intrinsic.type == i32
    assert isinstance(store, typed.Store) and store.array == "out"
    mul = store.value
    assert isinstance(mul, typed.Binary) and mul.op == "mul" and mul.type == f32
    assert isinstance(mul.left, typed.Load) and mul.left.loc == (8, 13)
    assert isinstance(mul.right, typed.Constant) and mul.right.type == f32 and mul.right.value == 2.0


# --- promotion (SPEC 2.1) --------------------------------------------------------------------
@pytest.mark.parametrize("line,expected", [
    ("h * 2.0", "(h:f16 mul 2.0:f16):f16"),
    ("x[0] * n", "(x[0:i32]:f32 mul f32(n:i32)):f32"),
    ("n + u", "(i64(n:i32) add i64(u:u32)):i64"),
    ("h + b", "(f32(h:f16) add f32(b:bf16)):f32"),
    ("n * 2.5", "(f32(n:i32) mul 2.5:f32):f32"),
    ("d * 0.1", "(d:f64 mul 0.1:f64):f64"),
    ("u + 1", "(u:u32 add 1:u32):u32"),
    ("n / 2", "(f32(n:i32) truediv 2.0:f32):f32"),
    ("d / n", "(d:f64 truediv f64(n:i32)):f64"),
    ("h / 2", "(h:f16 truediv 2.0:f16):f16"),
    ("n // 2 + n % 3", "((n:i32 floordiv 2:i32):i32 add (n:i32 mod 3:i32):i32):i32"),
    ("n << 2 | 1", "((n:i32 shl 2:i32):i32 or 1:i32):i32"),
    ("(n > 0) & (n < 5)", "((n:i32 gt.i32 0:i32) and (n:i32 lt.i32 5:i32)):bool"),
    ("~n", "(invert n:i32):i32"),
    ("-h", "(neg h:f16):f16"),
    ("n ** 3", "(n:i32 ** 3):i32"),
    ("d ** -2", "(d:f64 ** -2):f64"),
    ("True + n", "(1:i32 add n:i32):i32"),
])
def test_promotion(line, expected):
    assert typed.format_expr(expr_of(line)) == expected


@pytest.mark.parametrize("line,value,type_", [
    ("1 + 2 * 3", 7, i32), ("7 // 2", 3, i32), ("-7 // 2", -4, i32), ("-7 % 3", 2, i32),
    ("1 / 4", 0.25, f32), ("2 ** 40", 2**40, i64), ("2 ** 63", 2**63, "u64"), ("3 > 2", True, bool_),
    ("1 if 3 > 2 else 2", 1, i32), ("ptxpy.WARP_SIZE * 2", 64, i32), ("math.pi", 3.1415927410125732, f32),
    ("ptxpy.cdiv(10, 4)", 3, i32), ("min(3, 1, 2)", 1, i32), ("abs(-5)", 5, i32), ("-(-3)", 3, i32),
])
def test_constant_expressions_fold_with_python_semantics(line, value, type_):
    e = expr_of(line)
    assert isinstance(e, typed.Constant) and e.value == value
    assert str(e.type) == str(type_)


def test_weak_literal_materialises_on_assignment():
    k = kernel("""
        @ptxpy.jit
        def k(out: Array[f32]):
            a = 0
            b = 0.0
            c = 3000000000
            d = True
        """)
    assert k.locals == {"a": i32, "b": f32, "c": i64, "d": bool_}


def test_variable_keeps_its_first_type_and_converts_later_assignments():
    k = kernel("""
        @ptxpy.jit
        def k(x: Array[i32], d: f64):
            acc = 0.0
            acc = x[0]
            big: f64 = 1
            big = acc
            n = i8(x[0])
            n = n + 1
        """)
    assert k.locals == {"acc": f32, "big": f64, "n": i64.__class__("i8", "int", 8)}
    assert typed.format_body(k.body[1:2]) == ["    acc = f32(x[0:i32]:i32)"]
    assert typed.format_body(k.body[2:4]) == ["    big = 1.0:f64", "    big = f64(acc:f32)"]


def test_assigning_to_parameters_follows_the_same_rule():
    k = kernel("""
        @ptxpy.jit
        def k(n: i64, out: Array[i64]):
            n = n * 2
            n = 3
            out[0] = n
        """)
    assert k.locals == {}
    assert [p.name for p in k.params] == ["n", "out"]


def test_casts_and_builtins():
    k = kernel("""
        @ptxpy.jit
        def k(x: Array[f32], n: i32):
            a = int(x[0])
            b = float(n)
            c = bool(x[0])
            d = i64(n)
            e = f32(2)
            f = abs(x[0])
            g = max(n, 2.5, x[0])
            h = min(n, 3)
            m = len(x) + x.size
        """)
    lines = typed.format_body(k.body)
    assert lines == [
        "    a = i32(x[0:i32]:f32)",
        "    b = f32(n:i32)",
        "    c = (x[0:i32]:f32 ne.f32 0.0:f32)",
        "    d = i64(n:i32)",
        "    e = 2.0:f32",
        "    f = abs(x[0:i32]:f32):f32",
        "    g = ((f32(n:i32) max 2.5:f32):f32 max x[0:i32]:f32):f32",
        "    h = (n:i32 min 3:i32):i32",
        "    m = (x.shape[0] add x.shape[0]):i32",
    ]


def test_size_of_a_rank_3_array_is_a_product_of_extents():
    e = expr_of("x.size", params="x: Array[u8, 3]")
    assert typed.format_expr(e) == "((x.shape[0] mul x.shape[1]):i32 mul x.shape[2]):i32"


def test_boolean_operators_and_truthiness():
    k = kernel("""
        @ptxpy.jit
        def k(x: Array[f32], n: i32):
            a = n and x[0] or not n
            if n:
                pass
            while x[0]:
                break
        """)
    lines = typed.format_body(k.body)
    assert lines[0] == ("    a = (((n:i32 ne.i32 0:i32) and (x[0:i32]:f32 ne.f32 0.0:f32)) or "
                        "(not (n:i32 ne.i32 0:i32)):bool)")
    assert lines[1] == "    if (n:i32 ne.i32 0:i32):"
    assert lines[3] == "    while (x[0:i32]:f32 ne.f32 0.0:f32):"
    assert k.locals["a"] == bool_


def test_chained_comparison_types_each_pair():
    e = expr_of("0 <= n < d <= 5.0")
    assert isinstance(e, typed.Compare)
    assert e.ops == ["le", "lt", "le"]
    assert e.operand_types == [i32, f64, f64]
    assert [typed.format_expr(o) for o in e.operands] == ["0:i32", "n:i32", "d:f64", "5.0:f64"]


def test_if_expression_promotes_arms():
    e = expr_of("h if n > 0 else 1")
    assert typed.format_expr(e) == "(h:f16 if (n:i32 gt.i32 0:i32) else 1.0:f16):f16"


def test_math_intrinsics_follow_argument_type():
    assert typed.format_expr(expr_of("math.sqrt(h)")) == "sqrt(h:f16):f16"
    assert typed.format_expr(expr_of("math.exp(n)")) == "exp(f32(n:i32)):f32"
    assert typed.format_expr(expr_of("math.copysign(d, 1)")) == "copysign(d:f64, 1.0:f64):f64"
    assert typed.format_expr(expr_of("math.isnan(x[0])")) == "isnan(x[0:i32]:f32):bool"
    assert typed.format_expr(expr_of("ptxpy.fma(x[0], 2.0, 1)")) == "fma(x[0:i32]:f32, 2.0:f32, 1.0:f32):f32"
    assert typed.format_expr(expr_of("ptxpy.rsqrt(d)")) == "rsqrt(d:f64):f64"
    assert expr_of("math.inf").value == float("inf")


def test_math_names_imported_from_math():
    source = HEADER + "from math import sqrt, pi as PI\n@ptxpy.jit\ndef k(a: f32):\n    b = sqrt(a) * PI\n"
    k = check_kernel(parse_module(source), "k").kernel
    assert typed.format_body(k.body) == ["    b = (sqrt(a:f32):f32 mul 3.1415927410125732:f32):f32"]


def test_thread_intrinsics():
    k = kernel("""
        @ptxpy.jit
        def k(out: Array[i32]):
            a = ptxpy.block_idx.y + ptxpy.block_dim.z + ptxpy.grid_dim.x
            b = ptxpy.program_id(2) + ptxpy.num_programs(axis=1) + ptxpy.global_id(axis=1)
            c = ptxpy.lane_id() + ptxpy.warp_id() + ptxpy.WARP_SIZE
            d = ptxpy.cdiv(a, 4)
            ptxpy.syncthreads()
        """)
    lines = typed.format_body(k.body)
    assert lines[0] == "    a = ((block_idx.y():i32 add block_dim.z():i32):i32 add grid_dim.x():i32):i32"
    assert lines[1] == ("    b = ((program_id(2:i32):i32 add num_programs(1:i32):i32):i32 add "
                        "global_id(1:i32):i32):i32")
    assert lines[2] == "    c = ((lane_id():i32 add warp_id():i32):i32 add 32:i32):i32"
    assert lines[3] == "    d = cdiv(a:i32, 4:i32):i32"
    sync = k.body[4]
    assert isinstance(sync, typed.ExprStmt) and sync.value.name == "syncthreads"
    assert sync.value.type is None


def test_atomics_and_warp_functions():
    k = kernel("""
        @ptxpy.jit
        def k(x: Array[f32], counts: Array[u32, 2], n: i32):
            old = ptxpy.atomic_add(counts, (n, 1), 1)
            ptxpy.atomic_cas(counts, (0, n), 0, 5)
            m = ptxpy.atomic_max(x, n, n)
            s = ptxpy.shfl_down_sync(x[n], 16) + ptxpy.warp_sum(x[n])
            v = ptxpy.ballot_sync(n > 2)
            w = ptxpy.any_sync(n) and ptxpy.all_sync(True)
        """)
    add = k.body[0].values[0]
    assert isinstance(add, typed.Intrinsic) and add.name == "atomic_add" and add.type == u32
    assert add.extra["array"] == "counts"
    assert [typed.format_expr(e) for e in add.extra["indices"]] == ["n:i32", "1:i32"]
    assert [typed.format_expr(e) for e in add.args] == ["1:u32"]
    cas = k.body[1].value
    assert [typed.format_expr(e) for e in cas.args] == ["0:u32", "5:u32"]
    assert typed.format_expr(k.body[2].values[0]) == "atomic_max(x[n:i32], f32(n:i32)):f32"
    assert k.locals == {"old": u32, "m": f32, "s": f32, "v": u32, "w": bool_}
    assert k.written_arrays == {"counts", "x"}


def test_intrinsics_print_the_arrays_and_constants_they_name():
    """`--emit typed` shows what an intrinsic takes besides its values: cp_async's operands,
    ldmatrix's row and count, wgmma's accumulators and flags, wgmma_desc's matrix."""
    k = kernel("""
        @ptxpy.jit
        def k(x: Array[f16, 2], n: i32):
            s = ptxpy.shared_array((64, 64), f16)
            acc = ptxpy.local_array((4,), f32)
            ptxpy.cp_async(s[n, 0:8], x[n, 8:16], n > 0)
            ptxpy.cp_async_wait(1)
            v0, v1 = ptxpy.ldmatrix(s[n, 0:8], 1, trans=True)
            d = ptxpy.wgmma_desc(s[0, 16], 128, 16, 1024)
            ptxpy.wgmma(acc, d, d, f16, trans_b=True)
        """)
    texts = [line.strip() for line in typed.format_func(k).splitlines()]
    assert "cp_async((n:i32 gt.i32 0:i32); dst=s[n:i32, 0:i32 : +8], src=x[n:i32, 8:i32 : +8], bytes=16)" in texts
    assert "cp_async_wait(n=1)" in texts
    assert any(t.endswith("ldmatrix(row=s[n:i32, 0:i32 : +8], count=1, trans=True):(f16, f16)") for t in texts)
    assert "d = wgmma_desc(ref=s[0:i32, 16:i32], swizzle=128, lbo=16, sbo=1024):u64" in texts
    assert "wgmma(d:u64, d:u64, True:bool; acc=acc, ab=f16, trans_a=False, trans_b=True)" in texts


def test_shared_and_local_arrays():
    k = kernel("""
        BLOCK = 128

        @ptxpy.jit
        def k(x: Array[f32], out: Array[f32], T: Const[int] = 4):
            tile = ptxpy.shared_array((BLOCK // 2, T), f32)
            regs = ptxpy.local_array(T, dtype=i32)
            t = ptxpy.thread_idx.x
            tile[t, 0] = x[t]
            regs[0] = t
            out[t] = tile[t, 0] + regs[0]
        """)
    assert [(d.name, d.elem, d.shape, d.space) for d in k.arrays] == [
        ("tile", f32, (64, 4), "shared"), ("regs", i32, (4,), "local")]
    assert k.written_arrays == {"out"}
    assert "tile" not in k.locals


def test_vector_access():
    k = kernel("""
        @ptxpy.jit
        def k(x: Array[f32], h: Array[f16], out: Array[f32]):
            i = ptxpy.global_id() * 4
            a, b, c, d = x[i:i + 4]
            out[i:4 + i] = (d, c, b, 1)
            p0, p1, p2, p3, p4, p5, p6, p7 = h[0:8]
        """)
    load, store, load8 = k.body[1:]
    assert isinstance(load, typed.VectorLoad) and load.targets == ["a", "b", "c", "d"]
    assert load.width == 4 and load.array == "x" and typed.format_expr(load.start) == "i:i32"
    assert isinstance(store, typed.VectorStore) and store.array == "out"
    assert [typed.format_expr(v) for v in store.values] == ["d:f32", "c:f32", "b:f32", "1.0:f32"]
    assert load8.width == 8 and k.locals["p7"] == f16
    assert k.written_arrays == {"out"}


def test_tuple_assignment_and_swap():
    k = kernel("""
        @ptxpy.jit
        def k(out: Array[i64]):
            a, b = i64(0), i64(1)
            a, b = b, a + b
            x, y = 1, 2.5
        """)
    first, swap, mixed = k.body
    assert first.targets == ["a", "b"] and len(first.values) == 2
    assert k.locals == {"a": i64, "b": i64, "x": i32, "y": f32}
    assert typed.format_body([swap]) == ["    a, b = b:i64, (a:i64 add b:i64):i64"]


def test_augmented_assignment_on_array_element():
    k = kernel("""
        @ptxpy.jit
        def k(out: Array[u8], n: i32):
            out[n] += 1
            out[n] *= n
        """)
    assert typed.format_body(k.body) == [
        "    out[n:i32] = (out[n:i32]:u8 add 1:u8):u8",
        "    out[n:i32] = u8((i32(out[n:i32]:u8) mul n:i32):i32)",
    ]


def test_for_loops_range_forms_and_step_sign():
    k = kernel("""
        @ptxpy.jit
        def k(n: i64, s: i32):
            for a in range(n):
                pass
            for b in range(10, 0, -1):
                pass
            for c in range(0, n, s):
                pass
            for e in range(1, 9, 2):
                continue
        """)
    fa, fb, fc, fe = k.body
    assert (fa.var, fa.step_sign, fa.start.type) == ("a", 1, i64)
    assert fb.step_sign == -1 and typed.format_expr(fb.step) == "-1:i32"
    assert fc.step_sign == 0 and fc.step.type == i64
    assert fe.step_sign == 1 and isinstance(fe.body[0], typed.Continue)
    assert k.locals == {"a": i64, "b": i32, "c": i64, "e": i32}


def test_static_range_with_compile_time_arguments():
    k = kernel("""
        N = 8

        @ptxpy.jit
        def k(out: Array[i32], K: Const[int] = 3):
            for j in ptxpy.static_range(1, N // 2 + K, 2):
                out[j] = j
        """, consts={"K": 4})
    loop = k.body[0]
    assert isinstance(loop, typed.StaticFor) and loop.values == [1, 3, 5, 7]
    assert k.locals == {"j": i32}


def test_module_constants_are_weak():
    k = kernel("""
        BLOCK = 256
        EPS = 1e-6
        HALF = BLOCK // 2
        NEG = -1
        SCALE = 1.0 / 3
        BIG = 2 ** 40
        TWO_PI = 2 * math.pi

        @ptxpy.jit
        def k(h: f16, d: f64, out: Array[f64]):
            a = h * SCALE
            b = d + EPS
            c = HALF + NEG
            e = BIG
            f = TWO_PI
        """)
    lines = typed.format_body(k.body)
    assert lines[0] == "    a = (h:f16 mul 0.333251953125:f16):f16"
    assert lines[1] == "    b = (d:f64 add 1e-06:f64):f64"
    assert lines[2] == "    c = 127:i32"
    assert k.locals == {"a": f16, "b": f64, "c": i32, "e": i64, "f": f32}


def test_module_constants_follow_python_rebinding():
    k = kernel("""
        N = 4
        N = N * 2
        N += 1

        @ptxpy.jit
        def k(out: Array[i32]):
            out[0] = N
        """)
    assert typed.format_body(k.body) == ["    out[0:i32] = 9:i32"]


def test_const_parameters_specialise_with_defaults():
    body = """
        @ptxpy.jit
        def k(x: Array[f32], out: Array[f32], K: Const[int] = 2, S: Const[float] = 0.5, NEG: Const[bool] = False):
            v = x[0] * K + S
            if NEG:
                v = -v
            out[0] = v
        """
    default = kernel(body)
    assert [p.name for p in default.params] == ["x", "out"]
    assert typed.format_body(default.body)[0] == "    v = ((x[0:i32]:f32 mul 2.0:f32):f32 add 0.5:f32):f32"
    assert typed.format_body(default.body)[1] == "    out[0:i32] = v:f32"     # if False: dropped
    special = kernel(body, consts={"K": 5, "NEG": True})
    assert typed.format_body(special.body)[0] == "    v = ((x[0:i32]:f32 mul 5.0:f32):f32 add 0.5:f32):f32"
    assert typed.format_body(special.body)[1] == "    v = (neg v:f32):f32"  # if True: inlined


def test_const_parameter_with_half_precision_stays_weak():
    k = kernel("""
        @ptxpy.jit
        def k(h: f16, S: Const[float] = 2.0):
            a = h * S
        """)
    assert k.locals == {"a": f16}


def test_by_ref_marks_scalar_params():
    k = kernel("""
        @ptxpy.jit
        def k(a: f32, n: i32, out: Array[f32]):
            out[n] = a
        """, by_ref=frozenset({"a"}))
    assert [(p.name, p.type, p.by_ref) for p in k.params] == [
        ("a", f32, True), ("n", i32, False), ("out", ArrayType(f32), False)]


def test_written_arrays_through_funcs():
    m = module("""
        @ptxpy.func
        def put(dst: Array[f32], src: Array[f32], i: i32):
            dst[i] = src[i]

        @ptxpy.func
        def bump(a: Array[i32, 2], i: i32) -> i32:
            return ptxpy.atomic_add(a, (i, 0), 1)

        @ptxpy.func
        def via(dst: Array[f32], src: Array[f32]):
            put(dst, src, 0)

        @ptxpy.jit
        def k(x: Array[f32], y: Array[f32], c: Array[i32, 2], r: Array[f32]):
            via(y, x)
            n = bump(c, 0)
            v = x[0] + r[0]
        """)
    assert m.kernel.written_arrays == {"y", "c"}
    assert m.funcs["put"].written_arrays == {"dst"}
    assert m.funcs["via"].written_arrays == {"dst"}
    assert list(m.funcs) == ["put", "via", "bump"]
    call = m.kernel.body[0].value
    assert isinstance(call, typed.Call) and call.type is None
    assert [type(a) for a in call.args] == [typed.ArrayArg, typed.ArrayArg]
    assert call.args[0].type == ArrayType(f32)


def test_funcs_typed_with_casts_and_tuple_returns():
    m = module("""
        @ptxpy.jit
        def k(x: Array[f32], n: i32):
            q, r = divmod_floor(n, 7)
            c = clamp(n, 0, 1.5)
            first = divmod_floor(n, 2)[0]

        @ptxpy.func
        def clamp(v: f32, lo: f32, hi: f32) -> f32:
            if v < lo:
                return lo
            return min(v, hi)

        @ptxpy.func
        def divmod_floor(a: i32, b: i32) -> tuple[i32, i32]:
            return a // b, a % b
        """)
    k = m.kernel
    assert k.locals == {"q": i32, "r": i32, "c": f32, "first": i32}
    unpack = k.body[0]
    assert unpack.targets == ["q", "r"] and len(unpack.values) == 1
    assert unpack.values[0].type == TupleType((i32, i32))
    assert typed.format_expr(k.body[1].values[0]) == "clamp(f32(n:i32), 0.0:f32, 1.5:f32):f32"
    item = k.body[2].values[0]
    assert isinstance(item, typed.TupleItem) and item.index == 0 and item.type == i32
    ret = m.funcs["divmod_floor"].body[0]
    assert isinstance(ret.value, TupleExpr) and ret.value.type == TupleType((i32, i32))
    assert [typed.format_expr(v) for v in ret.value.items] == [
        "(a:i32 floordiv b:i32):i32", "(a:i32 mod b:i32):i32"]
    assert m.funcs["clamp"].return_type == f32 and not m.funcs["clamp"].is_kernel


def test_func_return_value_is_cast_to_the_annotation():
    m = module("""
        @ptxpy.func
        def half(a: i32) -> u8:
            return a / 2

        @ptxpy.jit
        def k(n: i32):
            v = half(n)
        """)
    assert typed.format_body(m.funcs["half"].body) == [
        "    return u8((f32(a:i32) truediv 2.0:f32):f32)"]


def test_print_builds_a_printf_format():
    k = kernel("""
        @ptxpy.jit
        def k(a: i8, b: u16, c: i64, d: u64, e: f16, f: f32, g: f64, h: bool, u: u32):
            print("values:", a, b, c, d, e, f, g, h, u, 7, "100%")
            print(a, b, sep=", ", end="")
        """)
    first, second = k.body
    assert isinstance(first, typed.Print)
    assert first.format == "values: %d %u %lld %llu %f %f %f %d %u 7 100%%\n"
    assert [str(a.type) for a in first.args] == ["i32", "u32", "i64", "u64", "f64", "f64", "f64",
                                                 "i32", "u32"]
    assert second.format == "%d, %u"


def test_assert_with_and_without_message():
    k = kernel("""
        @ptxpy.jit
        def k(n: i32):
            assert n > 0, "n must be positive"
            assert n
        """)
    first, second = k.body
    assert isinstance(first, typed.Assert) and first.message == "n must be positive"
    assert second.message == "n"   # the condition's text
    assert typed.format_expr(second.cond) == "(n:i32 ne.i32 0:i32)"


def test_docstrings_pass_and_return_in_kernels():
    k = kernel('''
        @ptxpy.jit
        def k(n: i32):
            """A kernel."""
            if n > 0:
                return
            pass
            ...
        ''')
    assert [type(s).__name__ for s in k.body] == ["If", "Pass"]
    assert isinstance(k.body[0].body[0], typed.Return) and k.body[0].body[0].value is None


def test_locals_shadow_module_names():
    k = kernel("""
        N = 4

        @ptxpy.jit
        def k(out: Array[i32]):
            N = 7
            out[0] = N
        """)
    assert typed.format_body(k.body) == ["    N = 7:i32", "    out[0:i32] = N:i32"]


def test_if_elif_else_nests():
    k = kernel("""
        @ptxpy.jit
        def k(v: f32, out: Array[f32]):
            if v < 0:
                r = -1.0
            elif v == 0:
                r = 0.0
            else:
                r = 1.0
            out[0] = r
        """)
    branch = k.body[0]
    assert isinstance(branch, typed.If) and isinstance(branch.orelse[0], typed.If)
    assert k.locals == {"r": f32}


def test_annotated_local_declared_before_use_in_branches():
    k = kernel("""
        @ptxpy.jit
        def k(n: i32, out: Array[f64]):
            acc: f64
            if n > 0:
                acc = 1
            else:
                acc = n
            out[0] = acc
        """)
    assert k.locals == {"acc": f64}


def test_unsigned_range_with_a_negative_constant_step_counts_in_its_own_type():
    """A constant step counts by its size, its sign sets the direction: `range(n, 0, -1)` is a
    u32 loop as `range(n)` is, and a u64 one is no error; a step too large for the type
    promotes as any operand does."""
    k = kernel("""
        @ptxpy.jit
        def k(n: u32, m: u64, b: u8):
            for i in range(n, 0, -1):
                pass
            for j in range(n):
                pass
            for q in range(m, 0, -3):
                pass
            for r in range(b, 0, -300):
                pass
        """)
    down, up, down64, far = k.body
    assert down.step_sign == -1 and down.step.type == u32 and down.step.value == 2**32 - 1
    assert down64.step_sign == -1 and down64.step.value == 2**64 - 3
    assert far.step_sign == -1 and far.step.type == i32 and far.step.value == -300
    assert up.start.type == u32
    assert k.locals == {"i": u32, "j": u32, "q": u64, "r": i32}


def test_integer_literal_range_and_errors_for_huge_literals():
    assert expr_of("2147483647").type == i32
    assert expr_of("2147483648").type == i64
    with pytest.raises(CompileError, match="does not fit in 64 bits"):
        expr_of("2 ** 64 + 1")


@pytest.mark.parametrize("line,value,type_", [
    ("(1 << 64) - 1", 2**64 - 1, "u64"), ("2 ** 64 // 3", 6148914691236517205, i64),
    ("-(2 ** 64) + 2 ** 63 + 5", -2**63 + 5, i64), ("~(-(1 << 64))", 2**64 - 1, "u64"),
    ("(1 << 70) >> 10", 2**60, i64), ("(1 << 70) * 0.5", 2.0**69, f32),
    ("(1 << 64) > (1 << 63)", True, bool_), ("1 if 2 ** 65 == 2 * 2 ** 64 else 2", 1, i32),
])
def test_constant_expressions_may_pass_64_bits_on_the_way(line, value, type_):
    """As in a module constant, only the value a constant expression ends with must fit."""
    e = expr_of(line)
    assert isinstance(e, typed.Constant) and e.value == value
    assert str(e.type) == str(type_)


@pytest.mark.parametrize("line", ["(1 << 64) + n", "n < (1 << 64)", "u64(1 << 64)",
                                  "abs(1 << 64)", "1 << 64"])
def test_a_constant_beyond_64_bits_as_a_value_is_an_error(line):
    with pytest.raises(CompileError, match="18446744073709551616 does not fit in 64 bits"):
        expr_of(line)


@pytest.mark.parametrize("line,expected", [
    ("v * 3 + 200", "((v:u8 mul 3:u8):u8 add 200:u8):u8"),
    ("v & 0x1FF", "(i32(v:u8) and 511:i32):i32"),
    ("n < 3000000000", "(n:i32 lt.i64 3000000000:i64)"),
    ("u == -1", "(u:u32 eq.i64 -1:i64)"),
    ("u - 1", "(u:u32 sub 1:u32):u32"),
])
def test_weak_integer_that_does_not_fit_keeps_its_own_type(line, expected):
    assert typed.format_expr(expr_of(line, params="v: u8, n: i32, u: u32")) == expected


def test_bf16_and_f16_keep_their_type_under_weak_floats():
    assert expr_of("b * 0.5 + 1").type == bf16
    assert expr_of("h - 1").type == f16


def test_check_kernel_errors_for_unknown_kernel_and_consts():
    parsed = parse_module(HEADER + "@ptxpy.jit\ndef k(K: Const[int]):\n    pass\n", "c.py")
    with pytest.raises(CompileError, match="no @ptxpy.jit kernel named 'nope'"):
        check_kernel(parsed, "nope")
    with pytest.raises(CompileError, match="needs a value"):
        check_kernel(parsed, "k")
    with pytest.raises(CompileError, match="has no Const parameter 'Q'"):
        check_kernel(parsed, "k", {"K": 1, "Q": 2})
    with pytest.raises(CompileError, match=r"is Const\[int\] but was given 1.5"):
        check_kernel(parsed, "k", {"K": 1.5})
    assert check_kernel(parsed, "k", {"K": 1}).kernel.params == []


def test_typed_module_fields():
    m = module("""
        @ptxpy.jit
        def k(n: i32):
            pass
        """)
    assert m.filename == "test.py" and m.source_lines[0] == "import math"
    assert m.kernel.is_kernel and m.kernel.return_type is None and m.funcs == {}
    assert u8 not in m.kernel.locals.values()


# --- source positions, partial parsing and caches (the frontend's speed) ----------------------
TRICKY_SOURCES = [
    HEADER + "@ptxpy.jit\ndef k(x: Array[f32], n: i32):\n    y = ((n +\n  1) * 2)\n    x[0] = -(f32(y))  # c\n",
    "import ptxpy\r\n@ptxpy.func\r\ndef f(a: int,\r\n      b: int) -> int:\r\n    return (a\r\n  + b)\r\n",
    "import ptxpy\n\n# leading\n\n@ptxpy.jit\n\n# between\n@(\n  ptxpy.jit)\ndef k(n: int):\n\tif n:\n\t\tm = 'é'; q = 2\n",
    "x = 1 + \\\n    2\n\x0cdef f(a):\n    return a \\\n        + 1  # c\n# trailing\nclass C:\n    pass",
]


@pytest.mark.parametrize("source", TRICKY_SOURCES)
def test_node_positions_are_libcsts_own(source):
    import libcst as cst
    from libcst.metadata import MetadataWrapper, PositionProvider

    from ptxpy.transpiler.positions import module_starts

    module = cst.parse_module(source)
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    starts = module_starts(module)
    for node, where in expected.items():
        if node is not module and not isinstance(node, cst.SimpleWhitespace):   # (not recorded)
            assert starts[node] == (where.start.line, where.start.column), type(node).__name__


HOST_CODE = """
class Model:
    def run(self):
        return [i for i in range(3)]

def helper(x):
    return x + 1

if __name__ == "__main__":
    print(helper(1))
"""


def test_host_code_is_skipped_and_positions_stay_those_of_the_whole_file():
    import libcst as cst
    from libcst.metadata import MetadataWrapper, PositionProvider

    from ptxpy.transpiler.scope import code_of

    source = HEADER + HOST_CODE + "\nBLOCK = 4\n\n@ptxpy.jit\ndef k(x: Array[f32]):\n    x[0] = (BLOCK +\n 1)\n"
    parsed = parse_module(source, "test.py")
    assert list(parsed.kernels) == ["k"] and parsed.scope.constants["BLOCK"] == 4
    assert parsed.scope.others["Model"] == "class" and parsed.scope.others["helper"] == "function"
    headers = [s for s in parsed.top.statements if isinstance(s, (cst.ClassDef, cst.FunctionDef))]
    assert [h.name.value for h in headers] == ["Model", "helper", "k"]
    assert [code_of(h.body).strip() for h in headers[:2]] == ["pass", "pass"]   # host code
    assert not any(isinstance(s, cst.If) for s in parsed.top.statements)      # not parsed
    whole = cst.parse_module(source)
    expected = MetadataWrapper(whole, unsafe_skip_copy=True).resolve(PositionProvider)
    ours, theirs = parsed.kernels["k"].node, whole.body[-1]
    pairs = list(zip(_nodes(ours), _nodes(theirs)))
    assert len(pairs) == len(list(_nodes(theirs))) > 30
    for mine, whole_files in pairs:
        where = expected[whole_files].start
        assert parsed.loc(mine) == (where.line, where.column), type(mine).__name__


def test_long_files_have_function_bodies_parsed_when_needed(monkeypatch):
    import libcst as cst
    from libcst.metadata import MetadataWrapper, PositionProvider

    from ptxpy.transpiler import toplevel

    monkeypatch.setattr(toplevel, "BODIES_ON_DEMAND_ABOVE", 0)
    source = HEADER + textwrap.dedent("""
        @ptxpy.func
        def unused(a: f32) -> f32:
            return a +  oops

        @ptxpy.func
        def used(a: f32) -> f32:
            return (a *
                    2.0)

        @ptxpy.jit
        def k(x: Array[f32]):
            x[0] = used(x[1])
        """)
    parsed = parse_module(source, "test.py")
    assert list(parsed.funcs) == ["unused", "used"]
    assert [d.node.name.value for d in parsed.kernels.values()] == ["k"]
    assert parsed.funcs["unused"].definition._node is None     # never needed, never parsed
    typed_module = check_kernel(parsed, "k")
    assert list(typed_module.funcs) == ["used"] and parsed.funcs["unused"].definition._node is None
    whole = cst.parse_module(source)
    expected = MetadataWrapper(whole, unsafe_skip_copy=True).resolve(PositionProvider)
    for ours, theirs in [(parsed.funcs["used"].node, whole.body[-2]), (parsed.kernels["k"].node, whole.body[-1])]:
        for mine, whole_files in zip(_nodes(ours), _nodes(theirs)):
            where = expected[whole_files].start
            assert parsed.loc(mine) == (where.line, where.column), type(mine).__name__


def _nodes(node):
    """`node` and its descendants, less the blank and comment lines before a statement (a
    definition parsed on its own starts at its first decorator) and the `SimpleWhitespace`
    nodes (whose positions are not recorded)."""
    import libcst as cst

    if not isinstance(node, cst.SimpleWhitespace):
        yield node
    for child in node.children:
        if not isinstance(child, cst.EmptyLine):
            yield from _nodes(child)


def test_error_in_a_kernel_after_host_code_points_at_its_line():
    source = HEADER + HOST_CODE + "\n@ptxpy.jit\ndef k(n: i32):\n    m = n +  oops\n"
    with pytest.raises(CompileError) as info:
        check_kernel(parse_module(source, "test.py"), "k")
    line = source.splitlines().index("    m = n +  oops") + 1
    assert str(info.value).splitlines()[0] == f"test.py:{line}:14: error: name 'oops' is not defined"


def test_a_later_host_function_replaces_a_kernel_of_its_name():
    parsed = parse_module(HEADER + "@ptxpy.jit\ndef k(n: i32):\n    pass\n\ndef k():\n    pass\n", "t.py")
    assert parsed.kernels == {}


GOOD_KERNEL = "@ptxpy.jit\ndef good(x: Array[f32]):\n    x[0] = 1.0\n"


@pytest.mark.parametrize("header, message", [
    ("@ptxpy.jit\ndef bad(x: Array[f32] = 1):", "parameter 'x' has a default value"),
    ("@ptxpy.jit\ndef bad(x):", "parameter 'x' of a kernel needs a type annotation"),
    ("@ptxpy.jit\ndef bad(x: Array[f99]):", "f99"),
    ("@ptxpy.jit\ndef bad(*xs: f32):", "'[*]xs' parameters are not supported"),
    ("@ptxpy.jit\nasync def bad(x: Array[f32]):", "async functions cannot be kernels"),
    ("@ptxpy.jit\ndef bad(x: Array[f32]) -> f32:", "a kernel returns nothing"),
    ("@ptxpy.jit\n@staticmethod\ndef bad(x: Array[f32]):", "unsupported decorator '@staticmethod'"),
    ("@ptxpy.jit\n@ptxpy.func\ndef bad(x: Array[f32]):", "cannot be both @ptxpy.jit and @ptxpy.func"),
])
def test_a_kernel_header_error_is_that_kernels_alone(header, message):
    parsed = parse_module(HEADER + header + "\n    pass\n" + GOOD_KERNEL, "test.py")
    check_kernel(parsed, "good")
    errors = []
    for _ in range(2):
        with pytest.raises(CompileError, match=message) as info:
            check_kernel(parsed, "bad")
        assert info.value.filename == "test.py" and info.value.source_line in parsed.source_lines
        errors.append(info.value)
    assert errors[0] is not errors[1]   # raised afresh: no traceback piling up on one object


@pytest.mark.parametrize("header, error", [
    ("@ptxpy.func\ndef helper(v) -> f32:",
     "test.py:5:12: error: parameter 'v' of a device function needs a type annotation (e.g. "
     "'x: Array[f32]' or 'n: i32')"),
    ("@ptxpy.func(inline=True)\ndef helper(v: f32) -> f32:",
     "test.py:4:2: error: @ptxpy.func takes no arguments"),
    ("@ptxpy.func\ndef helper(v: f32) -> Array[f32]:",
     "test.py:5:23: error: a device function cannot return an array"),
])
def test_a_device_function_header_error_stops_only_the_kernels_that_call_it(header, error):
    user = "@ptxpy.jit\ndef user(x: Array[f32]):\n    x[0] = helper(x[1])\n"
    parsed = parse_module(HEADER + header + "\n    return v\n" + GOOD_KERNEL + user, "test.py")
    check_kernel(parsed, "good")
    with pytest.raises(CompileError) as info:
        check_kernel(parsed, "user")
    assert str(info.value).splitlines()[0] == error


def test_a_later_definition_replaces_one_with_a_header_error():
    parsed = parse_module(HEADER + "@ptxpy.jit\ndef good(x):\n    pass\n" + GOOD_KERNEL, "test.py")
    check_kernel(parsed, "good")


def test_device_functions_are_checked_once_per_parsed_module():
    parsed = parse_module(HEADER + textwrap.dedent("""
        @ptxpy.func
        def inner(a: f32) -> f32:
            return a * 2.0

        @ptxpy.func
        def outer(a: f32) -> f32:
            return inner(a) + 1.0

        @ptxpy.jit
        def k(x: Array[f32], N: Const[int] = 1):
            x[0] = outer(x[N])

        @ptxpy.jit
        def k2(x: Array[f32]):
            x[0] = outer(x[1])
        """), "test.py")
    first = check_kernel(parsed, "k", {"N": 1})
    second = check_kernel(parsed, "k", {"N": 2})
    third = check_kernel(parsed, "k2")
    assert list(first.funcs) == list(third.funcs) == ["inner", "outer"]
    assert all(first.funcs[n] is second.funcs[n] is third.funcs[n] for n in first.funcs)
    assert first.kernel is not second.kernel


def test_the_same_source_is_parsed_once():
    from ptxpy.transpiler import driver

    source = HEADER + "@ptxpy.jit\ndef k(x: Array[f32]):\n    x[0] = 1.0\n"
    driver.clear_caches()
    program = driver.parse(source, "a.py")
    assert driver.parse(source, "a.py") is program
    assert driver.parse(source, "b.py") is not program
    driver.clear_caches()
    assert driver.parse(source, "a.py") is not program


# --- issue 2: static_range constants, constant branches, tuple stores --------------------------
def test_static_range_variable_is_a_weak_constant_in_each_iteration():
    k = kernel("""
        @ptxpy.jit
        def k(x: Array[u32], h: f16, c: i8, out: Array[u32]):
            w = x[0]
            for k in ptxpy.static_range(4):
                v = (w >> (8 * k)) & 0xFF
                out[k] = v
                g = h * k
                e = c + k
            out[4] = k
        """)
    assert k.locals["v"] == u32 and k.locals["g"] == f16 and k.locals["e"].name == "i8"
    assert k.locals["k"] == i32            # read after the loop: it holds the last value
    loop = k.body[1]
    assert isinstance(loop, typed.StaticFor) and loop.values == [0, 1, 2, 3] and len(loop.bodies) == 4
    assert typed.format_body(loop.bodies[3])[0] == "    v = ((w:u32 shr 24:i32):u32 and 255:u32):u32"
    assert typed.format_body(loop.bodies[2])[1] == "    out[2:i32] = v:u32"


def test_static_range_variable_in_compile_time_positions():
    k = kernel("""
        @ptxpy.jit
        def k(x: Array[f32, 2], y: Array[f16], out: Array[f32]):
            i = ptxpy.global_id()
            for k in ptxpy.static_range(1, 3):
                out[k] = x[0, 0] ** k + f32(x.shape[k - 1])
                if k == 2:
                    a, b, c, d = y[4 * i:4 * i + 2 * k]      # width 4 only when k == 2
                    out[0] = f32(a + b + c + d)
                else:
                    a, b = y[2 * i:2 * i + 2 * k]
                    out[0] = f32(a + b)
                if k > 1:
                    out[k - 2] = 0.0                     # a negative index for k == 1: never typed
                print("k =", k, out[k])
        """)
    first, second = k.body[1].bodies
    assert typed.format_body(first)[0] == \
        "    out[1:i32] = ((x[0:i32, 0:i32]:f32 ** 1):f32 add f32(x.shape[0])):f32"
    assert isinstance(first[1], typed.VectorLoad) and first[1].width == 2
    assert isinstance(second[1], typed.VectorLoad) and second[1].width == 4
    assert first[-1].format.startswith("k = 1 ") and second[-1].format.startswith("k = 2 ")


def test_static_range_body_not_mentioning_the_variable_is_typed_once():
    k = kernel("""
        @ptxpy.jit
        def k(out: Array[f32]):
            for j in ptxpy.static_range(3):
                out[0] += 1.0
            for j in ptxpy.static_range(0):
                out[q] = 1.0          # no iterations: never typed
        """)
    once, empty = k.body
    assert once.bodies is None and len(once.body) == 1
    assert empty.bodies == [] and empty.values == []


def test_static_range_errors_name_the_iteration():
    with pytest.raises(CompileError, match=r"cannot assign to 'k' inside its ptxpy.static_range loop"):
        kernel("""
            @ptxpy.jit
            def k(out: Array[i32]):
                for k in ptxpy.static_range(4):
                    k += 1
            """)
    with pytest.raises(CompileError) as info:
        kernel("""
            @ptxpy.jit
            def k(x: Array[f32, 2], out: Array[f32]):
                for k in ptxpy.static_range(4):
                    out[k] = f32(x.shape[k])
            """)
    assert info.value.message == ("x.shape[2] is out of range: 'x' has rank 2 "
                                  "(in the unrolled iteration where k = 2)")
    assert info.value.loc[0] == 8
    with pytest.raises(CompileError, match="changes its shape or dtype between the iterations"):
        kernel("""
            @ptxpy.jit
            def k(out: Array[f32]):
                for k in ptxpy.static_range(1, 3):
                    t = ptxpy.local_array(k, f32)
                    t[0] = 1.0
            """)


def test_static_range_local_array_declared_in_the_body_is_one_array():
    k = kernel("""
        @ptxpy.jit
        def k(out: Array[f32]):
            for k in ptxpy.static_range(4):
                t = ptxpy.local_array(4, f32)
                t[k] = 1.0
        """)
    assert [(d.name, d.shape) for d in k.arrays] == [("t", (4,))]


def test_dead_constant_branches_are_not_typed():
    body = """
        DEBUG = False

        @ptxpy.jit
        def k(x: Array[f32], out: Array[f32], VEC: Const[int] = 4, N: Const[int] = 0):
            i = ptxpy.global_id()
            if VEC == 4:
                a, b, c, d = x[i:i + VEC]
                out[i] = a + b + c + d
            elif VEC == 2:
                a, b = x[i:i + VEC]
                out[i] = a + b
            else:
                out[i] = x[i]
            if N > 0:
                t = ptxpy.local_array(N, f32)     # a size of 0 is an error: only typed for N > 0
                t[0] = 1.0
                out[0] = t[0]
            if DEBUG:
                print(undefined_name)
            y = 1.0 if N > 0 else 2       # the chosen arm alone is typed: an i32 here
            if N > 0 and x[N - 1] > 0.0:  # not typed for N == 0 (short circuit)
                out[0] = 2.0
        """
    k4 = kernel(body)
    assert [type(s).__name__ for s in k4.body] == ["Assign", "VectorLoad", "Store", "Assign"]
    assert k4.locals["y"] == i32 and not k4.arrays
    k2 = kernel(body, consts={"VEC": 2, "N": 3})
    assert isinstance(k2.body[1], typed.VectorLoad) and k2.body[1].width == 2
    assert [d.shape for d in k2.arrays] == [(3,)] and k2.locals["y"] == f32
    assert isinstance(k2.body[-1], typed.If)
    k1 = kernel(body, consts={"VEC": 1})
    assert typed.format_body(k1.body)[1] == "    out[i:i32] = x[i:i32]:f32"


def test_errors_in_the_live_constant_branch_are_reported():
    with pytest.raises(CompileError) as info:
        kernel("""
            @ptxpy.jit
            def k(x: Array[f32], out: Array[f32], VEC: Const[int] = 2):
                if VEC == 4:
                    a, b = x[0:VEC]
                else:
                    a, b, c = x[0:VEC]
            """)
    assert info.value.loc == (10, 8)
    assert "a vector load of 2 elements needs 2 variables, got 3" in info.value.message


def test_constant_condition_on_a_device_function_return_path():
    k = module("""
        FIRST = True

        @ptxpy.func
        def pick(a: f32, b: f32) -> f32:
            if FIRST:
                return a

        @ptxpy.jit
        def k(out: Array[f32]):
            out[0] = pick(1.0, 2.0)
        """)
    assert "pick" in k.funcs


def test_tuple_assignment_to_array_elements():
    k = kernel("""
        @ptxpy.func
        def two(a: f32) -> tuple[f32, i32]:
            return a, 1

        @ptxpy.jit
        def k(x: Array[f32], out: Array[i32], i: i32, j: i32):
            x[i], x[j] = x[j], x[i]
            a, out[i] = two(x[0])
            i, out[i] = j, 7
        """)
    swap = typed.format_body(k.body[:3])
    assert swap == ["    $t0, $t1 = x[j:i32]:f32, x[i:i32]:f32",
                    "    x[i:i32] = $t0:f32", "    x[j:i32] = $t1:f32"]
    unpack = typed.format_body(k.body[3:6])
    assert unpack == ["    $t2, $t3 = two(x[0:i32]:f32):(f32, i32)", "    a = $t2:f32",
                      "    out[i:i32] = $t3:i32"]
    assert typed.format_body(k.body[6:]) == ["    $t4 = j:i32", "    i = $t4:i32", "    out[i:i32] = 7:i32"]
    assert k.written_arrays == {"x", "out"} and k.locals["a"] == f32


def test_libcst_validation_is_skipped_only_while_parsing():
    """The parse builds libcst's nodes without their checks, gives the same tree as libcst's
    own parse, and leaves the checks on afterwards, also when parses overlap in threads."""
    import threading

    import libcst as cst

    from ptxpy.transpiler import toplevel

    source = HEADER + "@ptxpy.jit\ndef k(x: Array[f32], n: i32):\n    x[0] = -x[n] * 2.0 if n > 0 else 1.0\n"
    assert toplevel.libcst_parse(source).deep_equals(cst.parse_module(source))

    def must_validate():
        with pytest.raises(cst.CSTValidationError):
            cst.Name("not an identifier")
        with pytest.raises(cst.CSTValidationError):
            cst.Integer("1.5")

    must_validate()
    with pytest.raises(CompileError):
        toplevel.parse_with_libcst("def f(:\n")      # an error inside the parse
    must_validate()
    errors = []

    def parse_many():
        try:
            for _ in range(30):
                parse_module(source, "t.py")
        except Exception as err:   # collected: an assertion in a thread would be lost
            errors.append(err)

    threads = [threading.Thread(target=parse_many) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    must_validate()


DEEP = " + ".join(["1"] * 4500)


@pytest.mark.parametrize("host_code", [
    f"if __name__ == '__main__':\n    print({DEEP})\n",     # blanked out for libcst
    f"def host():\n    return {DEEP}\n",                     # an undecorated body: blanked too
    f"class Host:\n    VALUE = {DEEP}\n",
])
def test_deep_expressions_in_host_code_that_libcst_never_reads_are_allowed(host_code):
    parsed = parse_module(HEADER + host_code + "@ptxpy.jit\ndef k(x: Array[f32]):\n    x[0] = 1.0\n")
    assert list(parsed.kernels) == ["k"]


@pytest.mark.parametrize("code, loc", [
    (f"TOTAL = {DEEP}\n", (4, 0)),                                         # a module constant
    (f"@ptxpy.func\ndef f(v: f32) -> f32:\n    if v > 0.0:\n        v = {DEEP}\n    return v\n",
     (7, 8)),
])
def test_deep_expressions_that_libcst_would_read_are_located_errors(code, loc):
    with pytest.raises(CompileError) as info:
        parse_module(HEADER + code, "test.py")
    assert info.value.loc == loc
    assert "nests expressions more than 4000 levels deep" in info.value.message


def test_the_recursion_limit_is_restored_after_a_compile():
    import sys

    limit = sys.getrecursionlimit()
    kernel("@ptxpy.jit\ndef k(x: Array[f32]):\n    x[0] = " + " + ".join(["x[1]"] * 600) + "\n")
    assert sys.getrecursionlimit() == limit


def test_nested_functions_are_named_as_python_names_them():
    import ast

    from ptxpy.transpiler.toplevel import nested_functions

    source = textwrap.dedent("""
        class A:
            @dec
            def m(self): pass
        def f():
            @dec
            def g(): pass
        if X:
            for i in y:
                @dec
                def h(): pass
        @dec
        def top(): pass
        """)
    found = [(fn.qualname, fn.inside) for fn in nested_functions(ast.parse(source), source)]
    assert found == [("A.m", "class 'A'"), ("f.<locals>.g", "function 'f'"), ("h", "a 'for' block")]
