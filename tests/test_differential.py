"""Differential testing: random well-typed kernels, compiled + simulated, against a Python reference.

A small random program (typed locals, arithmetic over variables and array reads, if/else,
bounded for/while loops with break/continue, an optional @ptxpy.func helper) is generated as
ptxpy source and, at the same time, as a Python evaluator that emulates fixed-width integers
(wrapping) and f32 (np.float32 at every step). Each of 64 threads runs it; outputs must match
bit for bit. `//` and `%` often divide values that look non-negative but may have wrapped
(`i * c + d`, masks plus offsets, shifts, `abs`) by constants of either sign, `len(a)` or
masked values: where a compiler is most tempted to drop the floor correction.

The generator takes a `draw_int(lo, hi)` callable, so hypothesis (`st.data()`) and
`random.Random` (see `__main__`: `python tests/test_differential.py N SEED`) drive the same code.
"""
from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from kernel_harness import Out, run  # noqa: E402

HEADER = """
import ptxpy
from ptxpy import Array, i32, u32, i64, f32
"""

# Found by this test: a signed product, sum or shift of non-negative values can wrap negative,
# so `//` and `%` must keep their floor correction (passes/ranges.py computes every operation
# with its wrap-around). The regressions are tests/test_kernels.py::
# test_floor_division_of_an_overflowed_product, _sum and _shift.
NTHREADS = 64
INT_TYPES = ("i32", "u32", "i64")
ALL_TYPES = INT_TYPES + ("f32",)
BITS = {"i32": 32, "u32": 32, "i64": 64}
SIGNED = {"i32": True, "u32": False, "i64": True}
F32_LITERALS = ["0.5", "1.0", "2.0", "-1.5", "3.25", "0.0", "0.125", "-4.0", "100.0"]
F32_DIVISORS = ["2.0", "4.0", "-0.5", "3.0", "10.0"]


def wrap(value: int, ty: str) -> int:
    bits = BITS[ty]
    value &= (1 << bits) - 1
    if SIGNED[ty] and value >= 1 << (bits - 1):
        value -= 1 << bits
    return value


def limits(ty: str):
    bits = BITS[ty]
    if SIGNED[ty]:
        return -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return 0, (1 << bits) - 1


def f32_to_int(x, ty: str) -> int:
    """float -> int as ptxpy documents it: truncate toward zero, saturate (NaN -> 0)."""
    x = np.float32(x)
    if np.isnan(x):
        return 0
    lo, hi = limits(ty)
    if np.isinf(x):
        return hi if x > 0 else lo
    v = int(np.trunc(np.float64(x)))
    return min(max(v, lo), hi)


def int_to_f32(x: int, ty: str):
    dtype = {"i32": np.int32, "u32": np.uint32, "i64": np.int64}[ty]
    return np.array([x], dtype=dtype).astype(np.float32)[0]


def convert(value, src: str, dst: str):
    if src == dst:
        return value
    if dst == "f32":
        return int_to_f32(value, src)
    if src == "f32":
        return f32_to_int(value, dst)
    return wrap(value, dst)


class Break(Exception):
    pass


class Continue(Exception):
    pass


class Expr:
    """Source text, type, evaluator (env -> value), and whether it is a literal."""

    def __init__(self, src, ty, fn, const=False):
        self.src, self.ty, self.fn, self.const = src, ty, fn, const


def int_literal(draw, ty):
    if ty == "u32":
        choices = [0, 1, 2, 3, 5, 7, 31, 255, 1000, 65535, 0x7FFFFFFF, 0xFFFFFFFF]
    elif ty == "i32":
        choices = [0, 1, 2, 3, -1, -5, 7, 31, 255, -1000, 65535, 0x7FFFFFFF, -0x7FFFFFFF]
    else:
        choices = [0, 1, 3, -1, -7, 100, 1 << 33, -(1 << 40), 123456789012, 0x7FFFFFFF,
                   1 << 62, 0x7FFFFFFFFFFFFFFF]
    return literal(choices[draw(0, len(choices) - 1)], ty)


def literal(v: int, ty: str) -> Expr:
    return Expr(str(v) if v >= 0 else f"({v})", ty, lambda env, v=v: v, const=True)


ARITH = {"+": lambda x, y: x + y, "-": lambda x, y: x - y, "*": lambda x, y: x * y,
         "&": lambda x, y: x & y, "|": lambda x, y: x | y, "^": lambda x, y: x ^ y,
         "<<": lambda x, y: x << y, "//": lambda x, y: x // y, "%": lambda x, y: x % y}


def arith(a: Expr, op: str, b: Expr) -> Expr:
    """`a op b` in a's type, wrapping as ptxpy integers do."""
    fa, fb, py, ty = a.fn, b.fn, ARITH[op], a.ty
    return Expr(f"({a.src} {op} {b.src})", ty, lambda env: wrap(py(fa(env), fb(env)), ty))


# Thread-index arithmetic whose non-negativity a compiler may be tempted to assume: factors,
# offsets, masks and shifts that make it wrap past the type's maximum (programs 1278 and 1505
# of seed 11), for `//` and `%` to divide
INDEX_FACTORS = {"i32": [1, 3, 1000, 65536, 0x7FFFFFFF], "u32": [1, 3, 65536, 0xFFFFFFFF],
                 "i64": [1, 3, 1 << 33, 0x7FFFFFFFFFFFFFFF]}
INDEX_OFFSETS = {"i32": [0, 7, 0x7FFFFFFF], "u32": [0, 7, 0xFFFFFFFF],
                 "i64": [0, 7, 0x7FFFFFFFFFFFFFFF]}
MASKS = {"i32": [255, 0x7FFFFFFF], "u32": [255, 0xFFFFFFFF], "i64": [255, 0x7FFFFFFFFFFFFFFF]}
DIVISORS = {"i32": [1, 3, 7, 12, 32, -3, -8], "u32": [1, 3, 7, 12, 32],
            "i64": [1, 3, 7, 12, 32, -3, -8]}


def f32_literal(draw):
    s = F32_LITERALS[draw(0, len(F32_LITERALS) - 1)]
    val = np.float32(float(s))
    return Expr(s if not s.startswith("-") else f"({s})", "f32", lambda env, v=val: v, const=True)


class Gen:
    def __init__(self, draw, allow_arrays=True):
        self.draw = draw
        self.allow_arrays = allow_arrays
        self.vars: dict[str, str] = {}        # assignable name -> type
        self.readonly: dict[str, str] = {}    # loop variables, thread index
        self.counter = 0
        self.loop_depth = 0
        self.helper = None                    # (name, param types, return type)
        self.helper_called = False
        self.n_stmts = 0

    def fresh(self, prefix):
        self.counter += 1
        return f"{prefix}{self.counter}"

    def chance(self, k, n):
        return self.draw(0, n - 1) < k

    # ---- expressions -------------------------------------------------------------------------
    def leaf(self, ty):
        names = [n for n, t in list(self.vars.items()) + list(self.readonly.items()) if t == ty]
        options = []
        if names:
            options.append("var")
        if self.allow_arrays and ty in ("i32", "f32"):
            options.append("arr")
        if not options:
            # cast of some other variable (there is always at least one)
            other = [(n, t) for n, t in list(self.vars.items()) + list(self.readonly.items())]
            n, t = other[self.draw(0, len(other) - 1)]
            return self.cast(Expr(n, t, lambda env, n=n: env[n]), ty)
        kind = options[self.draw(0, len(options) - 1)]
        if kind == "var":
            n = names[self.draw(0, len(names) - 1)]
            return Expr(n, ty, lambda env, n=n: env[n])
        arr = "a" if ty == "i32" else "b"
        if self.chance(2, 3):
            return Expr(f"{arr}[i]", ty, lambda env, arr=arr: env["@" + arr][env["i"]])
        idx = self.expr("i32", 1)
        return Expr(f"{arr}[({idx.src}) & 63]", ty,
                    lambda env, arr=arr, f=idx.fn: env["@" + arr][f(env) & 63])

    def cast(self, e, ty):
        if e.ty == ty:
            return e
        src_ty = e.ty
        return Expr(f"{ty}({e.src})", ty, lambda env, f=e.fn: convert(f(env), src_ty, ty))

    def operand(self, ty, depth):
        """A right operand: a literal (weak, takes ty) or an expression."""
        if self.chance(1, 3):
            return int_literal(self.draw, ty) if ty != "f32" else f32_literal(self.draw)
        return self.expr(ty, depth)

    def expr(self, ty, depth):
        if depth <= 0 or self.chance(1, 4):
            return self.leaf(ty)
        d = depth - 1
        if ty == "f32":
            k = self.draw(0, 7)
            if k <= 2:
                op = "+-*"[k]
                a, b = self.expr(ty, d), self.operand(ty, d)
                fa, fb = a.fn, b.fn
                fn = {"+": lambda env: np.float32(fa(env) + fb(env)),
                      "-": lambda env: np.float32(fa(env) - fb(env)),
                      "*": lambda env: np.float32(fa(env) * fb(env))}[op]
                return Expr(f"({a.src} {op} {b.src})", ty, fn)
            if k == 3:
                a = self.expr(ty, d)
                c = F32_DIVISORS[self.draw(0, len(F32_DIVISORS) - 1)]
                cv = np.float32(float(c))
                return Expr(f"({a.src} / {c if cv > 0 else '(' + c + ')'})", ty,
                            lambda env, f=a.fn: np.float32(f(env) / cv))
            if k == 4:
                a = self.expr(ty, d)
                if self.chance(1, 2):
                    return Expr(f"(-{a.src})", ty, lambda env, f=a.fn: np.float32(-f(env)))
                return Expr(f"abs({a.src})", ty, lambda env, f=a.fn: np.float32(abs(f(env))))
            if k == 5:
                return self.ternary(ty, d)
            if k == 6:
                src_ty = INT_TYPES[self.draw(0, 2)]
                return self.cast(self.expr(src_ty, d), ty)
            return self.call_or_leaf(ty, d)
        # integer types
        k = self.draw(0, 11)
        if k <= 4:
            op = ["+", "-", "*", "&", "|", "^"][self.draw(0, 5)]
            return arith(self.expr(ty, d), op, self.operand(ty, d))
        if k == 5:
            return self.floor_division(ty, d)
        if k == 6:
            op = ["<<", ">>"][self.draw(0, 1)]
            a = self.expr(ty, d)
            s = self.draw(0, 9)
            fa = a.fn
            if op == "<<":
                return Expr(f"({a.src} << {s})", ty, lambda env: wrap(fa(env) << s, ty))
            return Expr(f"({a.src} >> {s})", ty, lambda env: fa(env) >> s)
        if k == 7:
            a = self.expr(ty, d)
            fa = a.fn
            u = self.draw(0, 2)
            if u == 0:
                return Expr(f"(-{a.src})", ty, lambda env: wrap(-fa(env), ty))
            if u == 1:
                return Expr(f"(~{a.src})", ty, lambda env: wrap(~fa(env), ty))
            return Expr(f"abs({a.src})", ty, lambda env: wrap(abs(fa(env)), ty))
        if k == 8:
            a, b = self.expr(ty, d), self.operand(ty, d)
            fa, fb = a.fn, b.fn
            if self.chance(1, 2):
                return Expr(f"min({a.src}, {b.src})", ty, lambda env: min(fa(env), fb(env)))
            return Expr(f"max({a.src}, {b.src})", ty, lambda env: max(fa(env), fb(env)))
        if k == 9:
            return self.ternary(ty, d)
        if k == 10:
            src_ty = [t for t in ALL_TYPES if t != ty][self.draw(0, 2)]
            return self.cast(self.expr(src_ty, d), ty)
        return self.call_or_leaf(ty, d)

    def pick(self, choices: list):
        return choices[self.draw(0, len(choices) - 1)]

    def floor_division(self, ty, depth):
        dividend = self.index_like(ty, depth) if self.chance(1, 2) else self.expr(ty, depth)
        return arith(dividend, ["//", "%"][self.draw(0, 1)], self.divisor(ty, depth))

    def index_like(self, ty, depth):
        """A value that is non-negative unless it wrapped: i * c + d, masks, shifts, abs."""
        k = self.draw(0, 3)
        if k == 0:
            i = self.cast(Expr("i", "i32", lambda env: env["i"]), ty) if "i" in self.readonly \
                else self.leaf(ty)   # in a @ptxpy.func
            scaled = arith(i, "*", literal(self.pick(INDEX_FACTORS[ty]), ty))
            return arith(scaled, "+", literal(self.pick(INDEX_OFFSETS[ty]), ty))
        if k == 1:
            masked = arith(self.expr(ty, depth), "&", literal(self.pick(MASKS[ty]), ty))
            return arith(masked, "+", self.operand(ty, depth))
        if k == 2:
            shift = self.pick([1, 7, 20, BITS[ty] - 1])
            masked = arith(self.expr(ty, depth), "&", literal(self.pick(MASKS[ty]), ty))
            return arith(masked, "<<", literal(shift, ty))
        a = self.expr(ty, depth)
        return Expr(f"abs({a.src})", ty, lambda env, f=a.fn: wrap(abs(f(env)), ty))

    def divisor(self, ty, depth):
        k = self.draw(0, 3)
        if k == 0:
            return literal(self.pick(DIVISORS[ty]), ty)
        if k == 1 and self.allow_arrays:
            n = "len(a)" if ty == "i32" else f"{ty}(len(a))"
            return Expr(n, ty, lambda env: len(env["@a"]))
        mask = [7, 15, 3, 255][self.draw(0, 3)]
        masked = arith(self.expr(ty, depth), "&", literal(mask, ty))
        return arith(masked, "+", literal(1, ty))

    def call_or_leaf(self, ty, depth):
        if self.helper is not None and not self.helper_called and self.helper[2] == ty:
            self.helper_called = True
            name, ptys, rty, hfn = self.helper
            args = [self.expr(t, min(depth, 2)) for t in ptys]
            fns = [a.fn for a in args]
            return Expr(f"{name}({', '.join(a.src for a in args)})", ty,
                        lambda env: hfn([f(env) for f in fns]))
        return self.leaf(ty)

    def ternary(self, ty, depth):
        c = self.cond(depth)
        a, b = self.expr(ty, depth), self.expr(ty, depth)
        fc, fa, fb = c.fn, a.fn, b.fn
        return Expr(f"({a.src} if {c.src} else {b.src})", ty,
                    lambda env: fa(env) if fc(env) else fb(env))

    def cond(self, depth):
        k = self.draw(0, 9)
        if k == 0 and depth > 0:
            a, b = self.cond(depth - 1), self.cond(depth - 1)
            fa, fb = a.fn, b.fn
            if self.chance(1, 2):
                return Expr(f"({a.src} and {b.src})", "bool", lambda env: fa(env) and fb(env))
            return Expr(f"({a.src} or {b.src})", "bool", lambda env: fa(env) or fb(env))
        if k == 1 and depth > 0:
            a = self.cond(depth - 1)
            return Expr(f"(not {a.src})", "bool", lambda env, f=a.fn: not f(env))
        ty = ALL_TYPES[self.draw(0, 3)]
        a, b = self.expr(ty, min(depth, 2)), self.operand(ty, min(depth, 2))
        op = ["<", "<=", ">", ">=", "==", "!="][self.draw(0, 5)]
        fa, fb = a.fn, b.fn
        py = {"<": lambda x, y: x < y, "<=": lambda x, y: x <= y, ">": lambda x, y: x > y,
              ">=": lambda x, y: x >= y, "==": lambda x, y: x == y,
              "!=": lambda x, y: x != y}[op]
        return Expr(f"({a.src} {op} {b.src})", "bool", lambda env: bool(py(fa(env), fb(env))))

    # ---- statements --------------------------------------------------------------------------
    def block(self, depth, n):
        """Returns (lines, fn(env)) for n statements."""
        lines, fns = [], []
        for _ in range(n):
            ls, f = self.stmt(depth)
            lines += ls
            fns.append(f)

        def run_block(env):
            for f in fns:
                f(env)
        return lines, run_block

    def assign(self):
        name = list(self.vars)[self.draw(0, len(self.vars) - 1)]
        ty = self.vars[name]
        if self.chance(1, 4) and ty != "f32":
            op = ["+", "-", "*", "^", "|", "&"][self.draw(0, 5)]
            e = self.operand(ty, 3)
            py = {"+": lambda x, y: x + y, "-": lambda x, y: x - y, "*": lambda x, y: x * y,
                  "&": lambda x, y: x & y, "|": lambda x, y: x | y, "^": lambda x, y: x ^ y}[op]

            def f(env, fe=e.fn):
                env[name] = wrap(py(env[name], fe(env)), ty)
            return [f"{name} {op}= {e.src}"], f
        if self.chance(1, 5) and ty == "f32":
            op = "+-*"[self.draw(0, 2)]
            e = self.operand(ty, 3)
            py = {"+": lambda x, y: x + y, "-": lambda x, y: x - y, "*": lambda x, y: x * y}[op]

            def f(env, fe=e.fn):
                env[name] = np.float32(py(env[name], fe(env)))
            return [f"{name} {op}= {e.src}"], f
        e = self.expr(ty, 3)

        def f(env, fe=e.fn):
            env[name] = fe(env)
        return [f"{name} = {e.src}"], f

    def stmt(self, depth):
        self.n_stmts += 1
        k = self.draw(0, 9)
        if depth <= 0 or self.n_stmts > 14 or k <= 3:
            return self.assign()
        if k <= 5:
            c = self.cond(2)
            then_lines, then_fn = self.block(depth - 1, self.draw(1, 3))
            lines = [f"if {c.src}:"] + ["    " + l for l in then_lines]
            else_fn = None
            if self.chance(1, 2):
                else_lines, else_fn = self.block(depth - 1, self.draw(1, 2))
                lines += ["else:"] + ["    " + l for l in else_lines]

            def f(env, fc=c.fn):
                if fc(env):
                    then_fn(env)
                elif else_fn is not None:
                    else_fn(env)
            return lines, f
        if k == 6 and self.loop_depth > 0:
            c = self.cond(1)
            word = ["break", "continue"][self.draw(0, 1)]
            exc = Break if word == "break" else Continue

            def f(env, fc=c.fn):
                if fc(env):
                    raise exc()
            return [f"if {c.src}:", f"    {word}"], f
        if k <= 8 and self.loop_depth < 2:
            count = self.draw(0, 6)
            start, step = (0, 1) if self.chance(2, 3) else (self.draw(0, 2), self.draw(1, 3))
            is_while = k == 8
            var = self.fresh("w" if is_while else "k")
            self.loop_depth += 1
            if not is_while:
                self.readonly[var] = "i32"
            body_lines, body_fn = self.block(depth - 1, self.draw(1, 3))
            self.loop_depth -= 1
            self.readonly.pop(var, None)
            if is_while:
                lines = [f"{var} = 0", f"while {var} < {count}:", f"    {var} += 1"]
            else:
                lines = [f"for {var} in range({start}, {count}, {step}):"]
            lines += ["    " + l for l in body_lines]

            def f(env):
                for it in (range(count) if is_while else range(start, count, step)):
                    env[var] = it if not is_while else it + 1
                    try:
                        body_fn(env)
                    except Continue:
                        continue
                    except Break:
                        break
                if is_while:
                    env[var] = count if count > 0 else 0
            return lines, f
        return self.assign()


def gen_helper(draw):
    """An optional @ptxpy.func: (source lines, name, param types, return type, evaluator)."""
    g = Gen(draw, allow_arrays=False)
    ptys = [ALL_TYPES[draw(0, 3)] for _ in range(draw(1, 3))]
    rty = ALL_TYPES[draw(0, 3)]
    params = []
    for j, t in enumerate(ptys):
        g.vars[f"p{j}"] = t
        params.append(f"p{j}: {t}")
    body_lines, body_fn = g.block(2, draw(1, 4))
    ret = g.expr(rty, 2)
    lines = ["@ptxpy.func", f"def helper({', '.join(params)}) -> {rty}:"]
    lines += ["    " + l for l in body_lines] + [f"    return {ret.src}", ""]

    def evaluate(args):
        env = {f"p{j}": v for j, v in enumerate(args)}
        body_fn(env)
        return ret.fn(env)
    return lines, ("helper", ptys, rty, evaluate)


def gen_program(draw):
    """Returns (source, reference(a, b) -> (out_i, out_f), inputs (a, b))."""
    lines = [HEADER]
    g = Gen(draw)
    if draw(0, 2) == 0:
        hl, g.helper = gen_helper(draw)
        lines += hl
    g.readonly["i"] = "i32"
    body, inits = [], []
    nvars = draw(4, 6)
    types = [ALL_TYPES[j] for j in range(4)][: min(nvars, 4)]
    types += [ALL_TYPES[draw(0, 3)] for _ in range(nvars - len(types))]
    for t in types:
        name = g.fresh("v")
        e = g.expr(t, 2)
        body.append(f"{name}: {t} = {e.src}")
        inits.append((name, e.fn))
        g.vars[name] = t
    if draw(0, 1) == 0:   # a floor division that reaches out_i unless overwritten
        t = INT_TYPES[draw(0, 2)]
        name, e = g.fresh("v"), g.floor_division(t, 2)
        body.append(f"{name}: {t} = {e.src}")
        inits.append((name, e.fn))
        g.vars[name] = t
    blines, bfn = g.block(3, draw(1, 6))
    body += blines
    ints = [n for n, t in g.vars.items() if t != "f32"]
    floats = [n for n, t in g.vars.items() if t == "f32"]
    out_terms = []
    for n in ints:
        t = g.vars[n]
        out_terms.append(f"i32({n})" if t != "i64" else f"i32({n} ^ ({n} >> 32))")
    body.append(f"out_i[i] = {' ^ '.join(out_terms)}")
    body.append(f"out_f[i] = {' - '.join(floats)}")
    lines += ["@ptxpy.jit",
              "def kern(a: Array[i32], b: Array[f32], out_i: Array[i32], out_f: Array[f32]):",
              "    i = ptxpy.global_id(0)"]
    lines += ["    " + l for l in body]
    source = "\n".join(lines) + "\n"

    def reference(a, b):
        out_i = np.zeros(NTHREADS, np.int32)
        out_f = np.zeros(NTHREADS, np.float32)
        with np.errstate(all="ignore"):
            for tid in range(NTHREADS):
                env = {"i": tid, "@a": [int(x) for x in a], "@b": [np.float32(x) for x in b]}
                for name, fn in inits:
                    env[name] = fn(env)
                bfn(env)
                acc = 0
                for n in ints:
                    v = env[n]
                    if g.vars[n] == "i64":
                        v = v ^ (v >> 32)
                    acc ^= wrap(v, "i32")
                out_i[tid] = acc
                fv = env[floats[0]]
                for n in floats[1:]:
                    fv = np.float32(fv - env[n])
                out_f[tid] = fv
        return out_i, out_f

    seed = draw(0, 2**31 - 1)
    rng = np.random.default_rng(seed)
    a = np.where(rng.random(NTHREADS) < 0.7, rng.integers(-100, 100, NTHREADS),
                 rng.integers(-2**31, 2**31, NTHREADS)).astype(np.int32)
    b = np.where(rng.random(NTHREADS) < 0.7, rng.integers(-50, 50, NTHREADS) * 0.25,
                 rng.standard_normal(NTHREADS) * 1e4).astype(np.float32)
    return source, reference, (a, b)


def same_f32(x, y):
    x, y = np.asarray(x, np.float32), np.asarray(y, np.float32)
    both_nan = np.isnan(x) & np.isnan(y)
    return (x.view(np.uint32) == y.view(np.uint32)) | both_nan


def check_program(draw):
    """Generate, compile + simulate, compare. Raises AssertionError on a mismatch."""
    source, reference, (a, b) = gen_program(draw)
    exp_i, exp_f = reference(a, b)
    got_i, got_f = run(source, "kern", [a, b, Out(NTHREADS, np.int32), Out(NTHREADS, np.float32)],
                       grid=1, block=NTHREADS)
    bad_i = np.nonzero(got_i != exp_i)[0]
    bad_f = np.nonzero(~same_f32(got_f, exp_f))[0]
    if len(bad_i) or len(bad_f):
        t = int(bad_i[0]) if len(bad_i) else int(bad_f[0])
        raise AssertionError(
            f"mismatch at thread {t} (a={a[t]}, b={b[t]!r}): out_i expected {exp_i[t]} got "
            f"{got_i[t]}; out_f expected {exp_f[t]!r} got {got_f[t]!r}\n{source}")


try:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st
except ImportError:  # pragma: no cover
    given = None

if given is not None:
    @settings(max_examples=int(os.environ.get("PTXPY_DIFF_EXAMPLES", "300")), deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(st.data())
    def test_random_kernels_match_reference(data):
        check_program(lambda lo, hi: data.draw(st.integers(lo, hi)))


def main(argv):
    import random
    import traceback

    n = int(argv[1]) if len(argv) > 1 else 100
    seed = int(argv[2]) if len(argv) > 2 else 0
    mismatches = errors = 0
    for k in range(n):
        r = random.Random(f"{seed}:{k}")
        try:
            check_program(lambda lo, hi: r.randint(lo, hi))
        except AssertionError as exc:
            mismatches += 1
            print(f"--- program {k}: {exc}" if mismatches <= 3 else f"--- program {k}: mismatch")
        except Exception:
            errors += 1
            print(f"--- program {k}: internal error")
            if errors <= 3:
                traceback.print_exc()
    print(f"{n} programs, {mismatches} mismatches, {errors} internal errors, seed {seed}")


if __name__ == "__main__":
    main(sys.argv)
