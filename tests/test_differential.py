"""Differential testing: random well-typed kernels, compiled + simulated, against a Python reference.

A small random program is generated as ptxpy source and, at the same time, as a Python
evaluator of the same program; each of 64 threads runs it and every variable's final value
must match bit for bit (NaN matches any NaN).

What the generator covers:

* every scalar type: `i8 i16 i32 i64 u8 u16 u32 u64 f16 bf16 f32 f64` and `bool`, as typed
  locals, input arrays (`Array[T]`, besides `a: Array[i32]` and `b: Array[f32]`) and output
  arrays (one `Array[T, 2]` per type holding the variables of that type, plus stores that
  convert a value of another type);
* arithmetic `+ - * / // % **`, bitwise `& | ^ ~`, shifts (counts up to past the width, from
  literals and from masked values of any integer type), unary `-`, `abs`, `min`/`max` of two or
  three values, `a if c else b`, comparisons (also chained), `and`/`or`/`not`, truthiness of
  numbers, `True + True`-style arithmetic on bools;
* NumPy/JAX promotion between every pair of types (`i8 + u8` is `i16`, `u64 + i64` is `f64`,
  `i32 * f16` is `f16`, `f16 + bf16` is `f32` ...), weak literals (`h * 0.1` stays `f16`;
  `v + 200` with `v: i8` is `i32` because 200 does not fit), implicit conversions on assignment
  and augmented assignment (also of literals), casts between every pair of types (`T(x)`,
  `int(x)`, `float(x)`, `bool(x)`), typed constants `T(literal)` that the compiler converts and
  folds at compile time (`u8(-1)`, `bf16(16842753)`, `i8(255.9)`, `f16(70000.0)`), arguments
  and results of a `@ptxpy.func` converted as casts, range loops whose variable takes the type
  of a cast start;
* `//` and `%` of values that look non-negative but may have wrapped (`i * c + d`, masks plus
  offsets, shifts, `abs`) by constants of either sign (also -1: `INT_MIN // -1` wraps), `len(a)`
  or masked values: where a compiler is most tempted to drop the floor correction;
* nested if/for/while with break/continue, an optional @ptxpy.func helper;
* with `memory=True` (`--memory` on the command line), a scratch array of any type that the
  program stores to and loads from, at constant slots and at masked run-time ones, in loops
  and branches: a global output `o_mem: Array[T, 2]` (row i), a `ptxpy.local_array(4, T)` or a
  `ptxpy.shared_array((64, 4), T)` (row i, so no thread touches another's slots). Its four
  slots are stored first; the final contents are an output. This is where a compiler is tempted
  to move or merge a load across a store (CSE, loop-invariant motion, `.nc` loads of an array
  that is written). Off by default, so that the seeds of earlier runs give the same programs.
* with `warp=True` (`--warp`), warp functions between the kernel's top-level statements, where
  every lane of the warp makes the call: `v = T(ptxpy.shfl_sync(e, lane))` (also `_up`,
  `_down`, `_xor`; lanes from literals past 31 or negative, and from run-time values of any
  integer type), `warp_sum`/`warp_max`/`warp_min` of any number type (the sum in the
  butterfly's order, which a float sum depends on) and `ballot_sync`/`any_sync`/`all_sync`.
  The reference runs the threads in step at the top level. Off by default, as `memory`.
* with `atomic=True` (`--atomic`, which implies `--memory`), atomics of every kind
  (`atomic_add sub min max and or xor exch cas`) on the thread's own scratch element, global,
  shared or local, whose old value is assigned (converted) or unused; `atomic_cas` compares
  with a constant (`-0.0` against a stored `0.0` differs: it compares bits) or with the
  element itself (it swaps, NaN or not); an f32 `atomic_add` in global memory flushes
  subnormal values to zero, as the card does. And, in some programs, a counter array of four slots
  that every thread updates with the slot's own commutative operation (integer `add sub min
  max and or xor`, float `min max`), in branches and loops: global `o_acc`, or shared `s_acc`
  copied out after a barrier; thread 0 sets the start values before a barrier. The order of
  the threads' updates is unknown, the final values are not. Off by default, as `memory`.
* with `loops=True` (`--loops`), half the loops run a number of times known only at run time:
  different in each lane (`i & 3`, `(a[i] & 3)`, a warp divided in halves), or the same in all
  (`len(a) >> 4`), so that lanes leave a loop at different iterations, as they leave a
  compare-and-swap loop. Off by default, as `memory`.
* with `returns=True` (`--returns`), early returns: `if c: return` at any depth, also in
  loops, after storing the thread's outputs as they stand, as the end of the kernel does; the
  thread's later statements do not run. Not with `warp` or `atomic` (the other lanes' warp
  functions and barriers need every thread). Off by default, as `memory`.
* with `vectors=True` (`--vectors`), vector access (`.v2`/`.v4`, at most 128 bits): loads from
  the input arrays (`t1, t2 = a[s:s + 2]`, `s` a constant or the width times a masked run-time
  value) and from the scratch array when it is global or shared, whose values then set some
  variables (cast), and stores of converted values to the scratch array (`m[i, 0:4] = (...)`).
  Off by default, as `memory`.
* with `exchange=True` (`--exchange`), threads trade values through a shared array `xs` of 64
  elements between the kernel's top-level statements: `ptxpy.syncthreads()`, `xs[i] = e`,
  `ptxpy.syncthreads()`, `v = T(xs[j])` with `j` another thread's index (`(i + k) & 63`,
  `i ^ k`, `63 - i`, or a masked run-time value), so that a load moved across a barrier, or a
  store moved past one, reads another thread's stale or unwritten element. Not with `returns`
  (every thread must reach the barriers). Off by default, as `memory`.

The reference is written from the language's rules (docs/language.md, SPEC 2.1), never from
the compiler: integers wrap at their width; floats are held as Python floats with the exact
value of their type, each operation computed in float64 (exact or, with float64's more than
twice the precision, rounded innocently) and rounded once to the type, round to nearest even,
by `round_float` below (integer sources are rounded exactly, bit by bit); float -> int
truncates toward zero and saturates, NaN gives 0; float `//` and `%` are Python's, as NumPy
computes them in the type (f16 and bf16 in f32); float `min`/`max` ignore a NaN operand and
order -0.0 below +0.0 (PTX `min`/`max`, CUDA's `fminf`). `test_reference_rounding_matches_numpy`
checks the rounding helpers against NumPy and ml_dtypes, and `test_reference_promotion_...`
the promotion table against `jax.numpy.promote_types`.

The generator takes a `draw_int(lo, hi)` callable, so hypothesis (`st.data()`) and
`random.Random` (see `__main__`: `python tests/test_differential.py N SEED`) drive the same code.
"""
from __future__ import annotations

import math
import os
import re
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from kernel_harness import Out, run  # noqa: E402

HEADER = """
import ptxpy
from ptxpy import Array, i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64
"""

# Found by this test: a signed product, sum or shift of non-negative values can wrap negative,
# so `//` and `%` must keep their floor correction (passes/ranges.py computes every operation
# with its wrap-around). The regressions are tests/test_kernels.py::
# test_floor_division_of_an_overflowed_product, _sum and _shift.
NTHREADS = 64
# every program runs under the simulator's shared-memory race check (docs/simulator.md):
# the generator's barriers must order every exchange, counter and scratch access
RACECHECK = True
INT_TYPES = ("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64")
FLOAT_TYPES = ("f16", "bf16", "f32", "f64")
NUM_TYPES = INT_TYPES + FLOAT_TYPES
ALL_TYPES = NUM_TYPES + ("bool",)
BITS = {"i8": 8, "i16": 16, "i32": 32, "i64": 64, "u8": 8, "u16": 16, "u32": 32, "u64": 64,
        "f16": 16, "bf16": 16, "f32": 32, "f64": 64}
SIGNED = {t: t.startswith("i") for t in INT_TYPES}
INTS = frozenset(INT_TYPES)
# precision (significand bits), smallest normal exponent, largest finite value
FLOAT_FORMAT = {"f16": (11, -14, 65504.0),
                "bf16": (8, -126, float.fromhex("0x1.fep127")),
                "f32": (24, -126, float.fromhex("0x1.fffffep127"))}


def np_dtype(ty: str):
    if ty == "bf16":
        import ml_dtypes  # shipped with jaxlib
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype({"bool": "bool", "i8": "int8", "i16": "int16", "i32": "int32",
                     "i64": "int64", "u8": "uint8", "u16": "uint16", "u32": "uint32",
                     "u64": "uint64", "f16": "float16", "f32": "float32", "f64": "float64"}[ty])


# ---- the reference semantics ------------------------------------------------------------------
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


def round_float(x: float, ty: str) -> float:
    """The float64 `x` rounded to float type `ty`: nearest, ties to even, too large -> +-inf."""
    if ty == "f64" or x != x or x == 0 or math.isinf(x):
        return x
    precision, emin, largest = FLOAT_FORMAT[ty]
    if abs(x) >= 2 * largest:
        return math.copysign(math.inf, x)
    exponent = max(math.frexp(x)[1] - 1, emin)           # of the leading bit (or subnormal)
    quantum = exponent - (precision - 1)
    rounded = round(math.ldexp(x, -quantum))             # exact scaling; round() is half-even
    if rounded == 0:
        return math.copysign(0.0, x)
    y = math.ldexp(float(rounded), quantum)
    return y if abs(y) <= largest else math.copysign(math.inf, x)


def int_to_float(n: int, ty: str) -> float:
    """The integer `n` rounded once to float type `ty` (exactly, not through float64)."""
    if ty == "f64":
        return float(n)           # Python rounds int -> float correctly, ties to even
    magnitude = abs(n)
    extra = magnitude.bit_length() - FLOAT_FORMAT[ty][0]
    if extra > 0:
        q, r = divmod(magnitude, 1 << extra)
        half = 1 << (extra - 1)
        if r > half or (r == half and q & 1):
            q += 1
        magnitude = q << extra
    y = float(magnitude)          # at most precision + 1 significant bits: exact
    if y > FLOAT_FORMAT[ty][2]:
        y = math.inf
    return -y if n < 0 else y


def float_to_int(x: float, ty: str) -> int:
    """float -> int as ptxpy documents it: truncate toward zero, saturate (NaN -> 0)."""
    if x != x:
        return 0
    lo, hi = limits(ty)
    if math.isinf(x):
        return hi if x > 0 else lo
    return min(max(math.trunc(x), lo), hi)


def convert(value, src: str, dst: str):
    """A cast (`dst(value)`), an implicit conversion or a store, all alike."""
    if src == dst:
        return value
    if dst == "bool":
        return value != 0           # NaN is true
    if src == "bool":
        value, src = int(value), "i32"
    if dst in INTS:
        return wrap(value, dst) if src in INTS else float_to_int(value, dst)
    if src in INTS:
        return int_to_float(value, dst)
    return round_float(value, dst)


def strong_join(a: str, b: str) -> str:
    """jax.numpy.promote_types (with jax_enable_x64) of two ptxpy types."""
    if a == b:
        return a
    if a == "bool" or b == "bool":
        return b if a == "bool" else a
    fa, fb = a in FLOAT_FORMAT or a == "f64", b in FLOAT_FORMAT or b == "f64"
    if fa and fb:
        if {a, b} == {"f16", "bf16"}:
            return "f32"
        return a if BITS[a] > BITS[b] else b
    if fa or fb:
        return a if fa else b     # any integer with a float: the float (i64 * f16 is f16)
    if SIGNED[a] == SIGNED[b]:
        return a if BITS[a] > BITS[b] else b
    s, u = (a, b) if SIGNED[a] else (b, a)
    if BITS[s] > BITS[u]:
        return s
    return "f64" if BITS[u] == 64 else f"i{2 * BITS[u]}"


def literal_type(value) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, float):
        return "f32"
    if -2**31 <= value < 2**31:
        return "i32"
    return "i64" if -2**63 <= value < 2**63 else "u64"


def fits(value: int, ty: str) -> bool:
    lo, hi = limits(ty)
    return lo <= value <= hi


def result_type(exprs) -> str:
    """The type a binary operator, min/max or an if-expression computes in: strong operands
    promote; weak literals take their type, except that an int literal that does not fit an
    integer result counts with its own type, and a float literal against integers gives f32."""
    strong = [e.ty for e in exprs if not e.weak]
    assert strong, "the generator never combines literals only"
    t = strong[0]
    for s in strong[1:]:
        t = strong_join(t, s)
    weak = [e for e in exprs if e.weak]
    if not weak:
        return t
    if any(isinstance(e.value, float) for e in weak) and t not in FLOAT_TYPES:
        return "f32"
    if t in INTS or t == "bool":
        base = "i32" if t == "bool" else t
        for e in weak:
            if not fits(e.value, base):
                t = strong_join(t, literal_type(e.value))
        if t == "bool":
            t = "i32"
    return t


def float_arith(op: str, x: float, y: float, ty: str) -> float:
    a, b = np.float64(x), np.float64(y)
    with np.errstate(all="ignore"):
        r = a + b if op == "+" else a - b if op == "-" else a * b if op == "*" else a / b
    return round_float(float(r), ty)


def float_floor_division(op: str, x: float, y: float, ty: str) -> float:
    """Python's float `//` or `%` (from the exact remainder) as NumPy computes it in the type,
    f16 and bf16 in f32; `y == 0` gives what NumPy gives (x / y, and NaN)."""
    as_type = np.float64 if ty == "f64" else np.float32
    with np.errstate(all="ignore"):
        r = (np.floor_divide if op == "//" else np.remainder)(as_type(x), as_type(y))
    return round_float(float(r), ty)


def float_min_max(op: str, x: float, y: float) -> float:
    """PTX min/max (CUDA's fminf/fmaxf): a NaN operand is ignored, -0.0 is below +0.0."""
    if x != x:
        return y
    if y != y:
        return x
    if x == 0 and y == 0:
        signs = (math.copysign(1, x) < 0, math.copysign(1, y) < 0)
        negative = any(signs) if op == "min" else all(signs)
        return -0.0 if negative else 0.0
    return min(x, y) if op == "min" else max(x, y)


class Break(Exception):
    pass


class Continue(Exception):
    pass


class Return(Exception):
    pass


class Expr:
    """Source text, type, evaluator (env -> value); `weak` literals carry their `value`."""

    def __init__(self, src, ty, fn, weak=False, value=None):
        self.src, self.ty, self.fn, self.weak, self.value = src, ty, fn, weak, value


def literal(v) -> Expr:
    text = repr(v) if isinstance(v, float) else str(v)
    if text.startswith("-"):
        text = f"({text})"
    return Expr(text, literal_type(v), lambda env, v=v: v, weak=True, value=v)


def convert_constant(v, ty: str):
    """A Python number's exact value (a Python float is an f64) converted once to ty."""
    if isinstance(v, bool):
        return convert(v, "bool", ty)
    if isinstance(v, float):
        return convert(v, "f64", ty)
    return wrap(v, ty) if ty in INTS else convert(v, "i64", ty)


def operand_fn(e: Expr, ty: str):
    """An evaluator of `e` converted to `ty` (a literal is converted once, here)."""
    if e.weak:
        value = convert_constant(e.value, ty)
        return lambda env: value
    if e.ty == ty:
        return e.fn
    f, src = e.fn, e.ty
    return lambda env: convert(f(env), src, ty)


INT_POOL = [0, 1, 2, 3, -1, -5, 7, 31, 100, 127, -128, 200, 255, -1000, 1000, 32767, 65535,
            16842753, 0x7FFFFFFF, -0x7FFFFFFF, 0xFFFFFFFF, 1 << 33, -(1 << 40), 123456789012,
            (1 << 60) + (1 << 36) + 1, 1 << 62, 0x7FFFFFFFFFFFFFFF, 2**64 - 1]
INT_LITERALS = {t: [v for v in INT_POOL if fits(v, t)] for t in INT_TYPES}
# short decimals, values that overflow f16 (65504 is its largest), and 1 + 2^-8 + 2^-52, which
# rounds to bf16 differently when it goes through f32 (double rounding)
FLOAT_LITERALS = [0.5, 1.0, 2.0, -1.5, 3.25, 0.0, 0.125, -4.0, 100.0, 0.1, 1e-3, 65504.0,
                  70000.0, 1e10, 3e38, 1.0039062500000002, -2.5]
FLOAT_DIVISORS = [2.0, 4.0, -0.5, 3.0, 10.0, 0.1]
ARRAY_NAMES = ("c", "d")
MEM_SLOTS = 4      # elements of the scratch array per thread (a power of two: indices are masked)


def py_op(op):
    return {"+": lambda x, y: x + y, "-": lambda x, y: x - y, "*": lambda x, y: x * y,
            "&": lambda x, y: x & y, "|": lambda x, y: x | y, "^": lambda x, y: x ^ y,
            "//": lambda x, y: x // y, "%": lambda x, y: x % y}[op]


def binop(a: Expr, op: str, b: Expr) -> Expr:
    """`a op b` with the language's typing, and its evaluator."""
    src = f"({a.src} {op} {b.src})"
    if op in ("<<", ">>"):
        ty = result_type([a, b])
        fa = operand_fn(a, ty)
        fb = operand_fn(b, "i32" if b.ty == "bool" else b.ty)
        if op == "<<":
            return Expr(src, ty, lambda env: wrap(fa(env) << int(fb(env)), ty))
        return Expr(src, ty, lambda env: fa(env) >> int(fb(env)))
    ty = result_type([a, b])
    if ty == "bool" and op in ("&", "|", "^"):
        fa, fb = operand_fn(a, ty), operand_fn(b, ty)
        py = {"&": lambda x, y: x and y, "|": lambda x, y: x or y, "^": lambda x, y: x != y}[op]
        return Expr(src, "bool", lambda env: py(fa(env), fb(env)))
    if ty == "bool":
        ty = "i32"
    if op == "/" and ty not in FLOAT_TYPES:
        ty = "f32"
    fa, fb = operand_fn(a, ty), operand_fn(b, ty)
    if ty in FLOAT_TYPES:
        if op in ("+", "-", "*", "/"):
            return Expr(src, ty, lambda env: float_arith(op, fa(env), fb(env), ty))
        return Expr(src, ty, lambda env: float_floor_division(op, fa(env), fb(env), ty))
    py = py_op(op)
    return Expr(src, ty, lambda env: wrap(py(fa(env), fb(env)), ty))


def cast(e: Expr, ty: str, spelling: str | None = None) -> Expr:
    if e.ty == ty and not e.weak:
        return e
    f, src = operand_fn(e, e.ty), e.ty
    return Expr(f"{spelling or ty}({e.src})", ty, lambda env: convert(f(env), src, ty))


# Thread-index arithmetic whose non-negativity a compiler may be tempted to assume: factors,
# offsets, masks and shifts that make it wrap past the type's maximum (programs 1278 and 1505
# of seed 11), for `//` and `%` to divide
def _index_values(t, values):
    return [v for v in values if fits(v, t)] or [1]


INDEX_FACTORS = {t: _index_values(t, [1, 3, 100, 127, 255, 1000, 32767, 65535, 65536, 0x7FFFFFFF,
                                      0xFFFFFFFF, 1 << 33, 0x7FFFFFFFFFFFFFFF, 2**64 - 1])
                 for t in INT_TYPES}
INDEX_OFFSETS = {t: [0, 7, limits(t)[1]] for t in INT_TYPES}
MASKS = {t: sorted({min(255, limits(t)[1]), limits(t)[1]}) for t in INT_TYPES}
DIVISORS = {t: [v for v in [1, 3, 7, 12, 32, -1, -3, -8, 100, 200] if fits(v, t)]
            for t in INT_TYPES}


def subtypes(ty: str) -> list:
    """The types whose values convert implicitly to `ty` (they promote to it)."""
    return [t for t in ALL_TYPES if strong_join(t, ty) == ty]


SUBTYPES = {t: subtypes(t) for t in ALL_TYPES}
# operand type pairs that promote to each type, (t, t) excepted
PAIRS = {t: [(x, y) for x in ALL_TYPES for y in ALL_TYPES
             if strong_join(x, y) == t and (x, y) != (t, t)] for t in NUM_TYPES}
INT_PAIRS = {t: [(x, y) for x, y in PAIRS[t] if x in INTS and y in INTS] for t in INT_TYPES}


class Gen:
    def __init__(self, draw, arrays=None):
        self.draw = draw
        self.arrays = arrays or {}            # input array name -> element type
        self.vars: dict[str, str] = {}        # assignable name -> type
        self.readonly: dict[str, str] = {}    # loop variables, thread index
        self.counter = 0
        self.loop_depth = 0
        self.helper = None                    # (name, param types, return type, evaluator)
        self.helper_called = False
        self.n_stmts = 0
        self.runtime_leaves = 0               # variables, array reads ... generated so far
        self.memory = None                    # (kind, name, element type) of the scratch array
        self.atomic = False                   # atomics on the scratch and shared-counter arrays
        self.acc = None                       # (array name, element type, op of each slot)
        self.runtime_loops = False            # trip counts from run-time values (`--loops`)
        self.returns_left = 0                 # early returns still to place (`--returns`)
        self.vectors = False                  # vector loads and stores (`--vectors`)
        self.exchange = None                  # the element type of `xs` (`--exchange`)

    def fresh(self, prefix):
        self.counter += 1
        return f"{prefix}{self.counter}"

    def chance(self, k, n):
        return self.draw(0, n - 1) < k

    def pick(self, choices):
        return choices[self.draw(0, len(choices) - 1)]

    def all_vars(self):
        return list(self.vars.items()) + list(self.readonly.items())

    # ---- leaves and literals -----------------------------------------------------------------
    def var(self, name, ty):
        self.runtime_leaves += 1
        return Expr(name, ty, lambda env: env[name])

    def leaf(self, ty):
        if self.chance(1, 12):
            return self.typed_constant(ty)
        if self.memory and self.chance(1, 3 if self.memory[2] == ty else 8):
            return self.cast(self.mem_read(), ty)
        names = [n for n, t in self.all_vars() if t == ty]
        arrays = [n for n, t in self.arrays.items() if t == ty]
        options = (["var"] if names else []) + (["arr"] if arrays else [])
        if not options:
            if self.arrays and self.chance(1, 3):
                arr = self.pick(list(self.arrays))
                return self.cast(self.array_read(arr), ty)
            n, t = self.pick(self.all_vars())     # there is always at least one
            return self.cast(self.var(n, t), ty)
        if self.pick(options) == "var":
            return self.var(self.pick(names), ty)
        return self.array_read(self.pick(arrays))

    def typed_constant(self, ty):
        """`ty(literal)`: a constant of type ty, converted by the compiler at compile time
        (wrapping, rounding, saturating), that constant folding then propagates."""
        if ty == "bool":
            v = self.pick([0, 1, 2, -1, 0.0, 0.5])
        elif self.chance(1, 2):
            v = self.pick(INT_POOL)
        else:
            v = self.pick(FLOAT_LITERALS + [1e20, -3.75, 255.9, -129.5, 65519.0])
        value = convert_constant(v, ty)
        e = literal(v)
        return Expr(f"{ty}({e.src})", ty, lambda env: value)

    def array_read(self, arr):
        ty = self.arrays[arr]
        self.runtime_leaves += 1
        if "i" in self.readonly and self.chance(2, 3):
            return Expr(f"{arr}[i]", ty, lambda env: env["@" + arr][env["i"]])
        idx = self.expr(self.pick(INT_TYPES), 1)
        f = idx.fn
        return Expr(f"{arr}[({idx.src}) & 63]", ty, lambda env: env["@" + arr][f(env) & 63])

    def mem_ref(self, slot=None):
        """The scratch element at `slot`, or at a constant or masked run-time slot: (its
        source, slot(env))."""
        if slot is None and self.chance(1, 2):
            slot = self.draw(0, MEM_SLOTS - 1)
        index, fslot = self.mem_index(slot)
        return f"{self.memory[1]}[{index}]", fslot

    def mem_index(self, slot):
        """The index of a scratch element (`slot` or `i, slot`) and slot(env)."""
        if slot is not None:
            src, fslot = str(slot), (lambda env, k=slot: k)
        else:
            e = self.expr(self.pick(INT_TYPES), 1)
            f = e.fn
            src, fslot = f"({e.src}) & {MEM_SLOTS - 1}", (lambda env: f(env) & (MEM_SLOTS - 1))
        return (src if self.memory[0] == "local" else f"i, {src}"), fslot

    def mem_read(self):
        ref, fslot = self.mem_ref()
        self.runtime_leaves += 1
        return Expr(ref, self.memory[2], lambda env: env["@mem"][fslot(env)])

    def mem_store(self, slot=None):
        """`m[slot] = e`: the value converts to the element type as a store does."""
        ty = self.memory[2]
        memory, self.memory = self.memory, (self.memory if slot is None else None)
        e = self.expr(ty if self.chance(3, 5) else self.pick(ALL_TYPES), 2)
        self.memory = memory     # the first stores fill the slots: they read none
        ref, fslot = self.mem_ref(slot)
        fe = operand_fn(e, ty)

        def f(env):
            env["@mem"][fslot(env)] = fe(env)
        return [f"{ref} = {e.src}"], f

    def literal(self, ty):
        """A weak literal to combine with a value of type ty."""
        if ty in INTS:
            return literal(self.pick(INT_LITERALS[ty]))
        if ty in FLOAT_TYPES:
            if self.chance(1, 4):
                return literal(self.pick([0, 1, 3, -2, 1000, 100000, 16842753]))
            return literal(self.pick(FLOAT_LITERALS))
        return literal(self.pick([True, False]))

    def operand(self, ty, depth):
        """A right operand: a literal (weak, takes ty) or an expression of type ty."""
        if ty != "bool" and self.chance(1, 3):
            return self.literal(ty)
        return self.expr(ty, depth)

    def cast(self, e, ty):
        if e.ty == ty:
            return e
        spelling = None
        if ty == "i32" and e.ty != "bool" and self.chance(1, 4):
            spelling = "int"
        elif ty == "f32" and e.ty != "bool" and self.chance(1, 4):
            spelling = "float"
        return cast(e, ty, spelling)

    # ---- expressions -------------------------------------------------------------------------
    def expr(self, ty, depth):
        if depth <= 0 or self.chance(1, 4):
            return self.leaf(ty)
        d = depth - 1
        if ty == "bool":
            return self.bool_expr(d)
        if ty in FLOAT_TYPES:
            return self.float_expr(ty, d)
        return self.int_expr(ty, d)

    def operands(self, ty, d, ints_only=False):
        """Two operands: mostly of type ty (or a weak literal), else of types that promote to
        ty, else of any types (the caller casts the result to ty)."""
        k = self.draw(0, 9)
        if k < 6:
            return self.expr(ty, d), self.operand(ty, d)
        pairs = INT_PAIRS[ty] if ints_only else PAIRS[ty]
        if k < 9 and pairs:
            ta, tb = self.pick(pairs)
            if self.chance(1, 2):
                ta, tb = tb, ta
            return self.expr(ta, d), self.expr(tb, d)
        types = INT_TYPES if ints_only else NUM_TYPES
        ta, tb = self.pick(types), self.pick(types)
        if ints_only and strong_join(ta, tb) not in INTS:    # u64 with a signed type: f64
            tb = ta
        b = self.expr(tb, d) if self.chance(1, 2) else self.literal(ta)
        return self.expr(ta, d), b

    def arith(self, ty, ops, d):
        op = self.pick(ops)
        ints_only = ty in INTS and (op in ("&", "|", "^") or self.chance(1, 2))
        a, b = self.operands(ty, d, ints_only)
        return self.cast(binop(a, op, b), ty)

    def float_expr(self, ty, d):
        k = self.draw(0, 11)
        if k <= 3:
            return self.arith(ty, ["+", "-", "*", "+", "-", "*", "/"], d)
        if k == 4:
            a = self.expr(ty, d)
            if self.chance(1, 2):
                c = self.pick(FLOAT_DIVISORS)
                return binop(a, "/", literal(c))
            divisor = self.expr(ty, d) if self.chance(1, 3) else literal(self.pick(FLOAT_DIVISORS))
            return binop(a, self.pick(["//", "%"]), divisor)
        if k == 5:
            a = self.expr(ty, d)
            u = self.draw(0, 3)
            if u == 0:
                return Expr(f"(-{a.src})", ty, lambda env, f=a.fn: -f(env))
            if u == 1:
                return Expr(f"abs({a.src})", ty, lambda env, f=a.fn: abs(f(env)))
            n = self.pick([0, 1, 2, -1])
            f = a.fn
            if n == 0:
                fn = (lambda env: 1.0)
            elif n == 1:
                fn = f
            elif n == 2:
                fn = (lambda env: float_arith("*", f(env), f(env), ty))
            else:
                fn = (lambda env: float_arith("/", 1.0, f(env), ty))
            return Expr(f"({a.src} ** {n if n >= 0 else '(-1)'})", ty, fn)
        if k == 6:
            return self.ternary(ty, d)
        if k == 7:
            return self.cast(self.expr(self.pick([t for t in ALL_TYPES if t != ty]), d), ty)
        if k == 8:
            return self.min_max(ty, d)
        if k == 9:    # true division of integers: f32 (f64 when they promote to it)
            ta, tb = self.pick(INT_TYPES), self.pick(INT_TYPES)
            b = self.expr(tb, d) if self.chance(2, 3) else self.literal(ta)
            return self.cast(binop(self.expr(ta, d), "/", b), ty)
        return self.call_or_leaf(ty, d)

    def int_expr(self, ty, d):
        k = self.draw(0, 13)
        if k <= 4:
            return self.arith(ty, ["+", "-", "*", "&", "|", "^"], d)
        if k == 5:
            return self.floor_division(ty, d)
        if k == 6:
            return self.shift(ty, d)
        if k == 7:
            a = self.expr(ty, d)
            fa = a.fn
            u = self.draw(0, 3)
            if u == 0:
                return Expr(f"(-{a.src})", ty, lambda env: wrap(-fa(env), ty))
            if u == 1:
                return Expr(f"(~{a.src})", ty, lambda env: wrap(~fa(env), ty))
            if u == 2:
                return Expr(f"abs({a.src})", ty, lambda env: wrap(abs(fa(env)), ty))
            n = self.draw(0, 5)
            return Expr(f"({a.src} ** {n})", ty, lambda env: wrap(fa(env) ** n, ty))
        if k == 8:
            return self.min_max(ty, d)
        if k == 9:
            return self.ternary(ty, d)
        if k == 10:
            return self.cast(self.expr(self.pick([t for t in ALL_TYPES if t != ty]), d), ty)
        if k == 11 and ty == "i32":      # arithmetic on bools counts in i32
            a = self.expr("bool", d)
            b = self.expr("bool", d) if self.chance(1, 2) else self.literal("i32")
            if self.chance(1, 4):
                return Expr(f"(-{a.src})", ty, lambda env, f=a.fn: -int(f(env)))
            return binop(a, self.pick(["+", "-", "*"]), b)
        return self.call_or_leaf(ty, d)

    def bool_expr(self, d):
        k = self.draw(0, 5)
        if k <= 2:
            return self.cond(d)
        if k == 3:
            return self.cast(self.expr(self.pick(NUM_TYPES), d), "bool")
        if k == 4:
            a, b = self.expr("bool", d), self.expr("bool", d)
            return binop(a, self.pick(["&", "|", "^"]), b)
        return self.ternary("bool", d)

    def shift(self, ty, d):
        op = self.pick(["<<", ">>"])
        # the count: a literal up to past the width, or a masked value of a type that
        # promotes with ty to ty
        if self.chance(1, 2):
            return binop(self.expr(ty, d), op, literal(self.draw(0, BITS[ty] + 2)))
        count_ty = self.pick([t for t in SUBTYPES[ty] if t in INTS] or [ty])
        mask = self.pick([7, 15, 31, 63])
        count = binop(self.expr(count_ty, d), "&", literal(mask))
        return self.cast(binop(self.expr(ty, d), op, count), ty)

    def min_max(self, ty, d):
        name = self.pick(["min", "max"])
        args = [self.expr(ty, d), self.operand(ty, d)]
        if self.chance(1, 3):
            args.append(self.expr(self.pick(SUBTYPES[ty]), d))
        t = result_type(args)
        fns = [operand_fn(a, t) for a in args]
        if t in FLOAT_TYPES:
            def fn(env):
                r = fns[0](env)
                for f in fns[1:]:
                    r = float_min_max(name, r, f(env))
                return r
        else:
            fold = min if name == "min" else max

            def fn(env):
                return fold(f(env) for f in fns)
        return self.cast(Expr(f"{name}({', '.join(a.src for a in args)})", t, fn), ty)

    def floor_division(self, ty, depth):
        dividend = self.index_like(ty, depth) if self.chance(1, 2) else self.expr(ty, depth)
        return binop(dividend, self.pick(["//", "%"]), self.divisor(ty, depth))

    def index_like(self, ty, depth):
        """A value that is non-negative unless it wrapped: i * c + d, masks, shifts, abs."""
        k = self.draw(0, 3)
        if k == 0:
            i = self.cast(self.var("i", "i32"), ty) if "i" in self.readonly \
                else self.leaf(ty)   # in a @ptxpy.func
            scaled = binop(i, "*", literal(self.pick(INDEX_FACTORS[ty])))
            return binop(scaled, "+", literal(self.pick(INDEX_OFFSETS[ty])))
        if k == 1:
            masked = binop(self.expr(ty, depth), "&", literal(self.pick(MASKS[ty])))
            return self.cast(binop(masked, "+", self.operand(ty, depth)), ty)
        if k == 2:
            shift = self.pick([1, 7, BITS[ty] // 2, BITS[ty] - 1])
            masked = binop(self.expr(ty, depth), "&", literal(self.pick(MASKS[ty])))
            return binop(masked, "<<", literal(shift))
        a = self.expr(ty, depth)
        return Expr(f"abs({a.src})", ty, lambda env, f=a.fn: wrap(abs(f(env)), ty))

    def divisor(self, ty, depth):
        """A non-zero value of type ty."""
        k = self.draw(0, 4)
        if k == 0:
            return literal(self.pick(DIVISORS[ty]))
        if k == 1 and "a" in self.arrays:
            n = "len(a)" if ty == "i32" else f"{ty}(len(a))"
            self.runtime_leaves += 1
            return Expr(n, ty, lambda env: len(env["@a"]))
        if k == 2 and SIGNED[ty]:     # -8 ... -1
            return binop(binop(self.expr(ty, depth), "&", literal(7)), "-", literal(8))
        masked = binop(self.expr(ty, depth), "&", literal(self.pick([7, 15, 3, 127])))
        return binop(masked, "+", literal(1))

    def call_or_leaf(self, ty, depth):
        if self.helper is not None and not self.helper_called:
            self.helper_called = True
            self.runtime_leaves += 1
            name, ptys, rty, hfn = self.helper
            args, fns = [], []
            for t in ptys:      # arguments convert to the parameter types as casts do
                a = self.expr(t if self.chance(2, 3) else self.pick(NUM_TYPES), min(depth, 2))
                args.append(a)
                fns.append(operand_fn(a, a.ty))
            srcs = [a.ty for a in args]

            def fn(env):
                return hfn([convert(f(env), s, t) for f, s, t in zip(fns, srcs, ptys)])
            return self.cast(Expr(f"{name}({', '.join(a.src for a in args)})", rty, fn), ty)
        return self.leaf(ty)

    def ternary(self, ty, depth):
        before = self.runtime_leaves
        c = self.test(depth)
        # a compile-time condition (of typed constants only) makes the value the chosen arm, with
        # that arm's own type (docs/language.md, "Compile-time branches"): arms of one type then
        runtime_condition = self.runtime_leaves > before
        a = self.expr(ty, depth)
        subtype = runtime_condition and self.chance(1, 3)
        b = self.expr(self.pick(SUBTYPES[ty]), depth) if subtype else self.expr(ty, depth)
        if self.chance(1, 2):
            a, b = b, a
        t = result_type([a, b])
        fc, fa, fb = c.fn, operand_fn(a, t), operand_fn(b, t)
        return Expr(f"({a.src} if {c.src} else {b.src})", t,
                    lambda env: fa(env) if fc(env) else fb(env))

    def test(self, depth):
        """A condition for if/while/ternary: a bool, or a number tested for != 0."""
        if self.chance(1, 8):
            e = self.expr(self.pick(NUM_TYPES), min(depth, 1))
            return Expr(e.src, e.ty, lambda env, f=e.fn: f(env) != 0)
        return self.cond(depth)

    def cond(self, depth):
        k = self.draw(0, 11)
        if k == 0 and depth > 0:
            before = self.runtime_leaves
            a = self.test(depth - 1)
            after_a = self.runtime_leaves
            b = self.test(depth - 1)
            fa, fb = a.fn, b.fn
            is_and = self.chance(1, 2)
            if after_a == before and bool(fa({})) != is_and:
                # `False and b`, `True or b`: a compile-time condition, b is not compiled
                # (docs/language.md, "Compile-time branches"), so b's leaves do not count
                self.runtime_leaves = after_a
            if is_and:
                return Expr(f"({a.src} and {b.src})", "bool", lambda env: fa(env) and fb(env))
            return Expr(f"({a.src} or {b.src})", "bool", lambda env: fa(env) or fb(env))
        if k == 1 and depth > 0:
            a = self.test(depth - 1)
            return Expr(f"(not {a.src})", "bool", lambda env, f=a.fn: not f(env))
        if k == 2:
            bools = [n for n, t in self.all_vars() if t == "bool"]
            if bools:
                return self.var(self.pick(bools), "bool")
        ty = self.pick(NUM_TYPES)
        d = min(depth, 2)
        a = self.expr(ty, d)
        if self.chance(1, 4):
            b = self.expr(self.pick(NUM_TYPES), d)
        else:
            b = self.operand(ty, d)
        ops = {"<": lambda x, y: x < y, "<=": lambda x, y: x <= y, ">": lambda x, y: x > y,
               ">=": lambda x, y: x >= y, "==": lambda x, y: x == y, "!=": lambda x, y: x != y}
        op = self.pick(list(ops))
        if k == 3:       # chained: lo <= a < b, each pair in its own promoted type
            lo = self.operand(ty, d)
            t1, t2 = result_type([lo, a]), result_type([a, b])
            fl, fa1, fa2, fb = operand_fn(lo, t1), operand_fn(a, t1), operand_fn(a, t2), \
                operand_fn(b, t2)
            op1 = self.pick(["<", "<="])
            p1, p2 = ops[op1], ops[op]
            return Expr(f"({lo.src} {op1} {a.src} {op} {b.src})", "bool",
                        lambda env: p1(fl(env), fa1(env)) and p2(fa2(env), fb(env)))
        t = result_type([a, b])
        fa, fb, py = operand_fn(a, t), operand_fn(b, t), ops[op]
        return Expr(f"({a.src} {op} {b.src})", "bool", lambda env: py(fa(env), fb(env)))

    # ---- warp functions (top level only: every lane of the warp makes the call) -------------
    def warp_stmt(self):
        """`v = T(ptxpy.<warp function>(...))`: (lines, fn(envs)) where fn takes every thread's
        env, in thread order, since a lane's result depends on the other lanes' arguments."""
        name = self.pick(list(self.vars))
        ty = self.vars[name]
        op = self.pick(WARP_FUNCTIONS)
        if op in VOTES:
            arg = self.expr("bool", 2)
            value_ty, extra = ("u32" if op == "ballot_sync" else "bool"), None
        else:
            value_ty = ty if ty != "bool" and self.chance(2, 3) else self.pick(NUM_TYPES)
            arg = self.cast(self.expr(value_ty, 2), value_ty)
            extra = None
            if op.startswith("shfl"):
                extra = (literal(self.pick([0, 1, 2, 5, 16, 31, 32, 33, 40, -1]))
                         if self.chance(1, 2) else self.expr(self.pick(INT_TYPES), 1))
        key = self.fresh("@warp")
        call = f"ptxpy.{op}({arg.src}{', ' + extra.src if extra else ''})"
        target = self.cast(Expr(call, value_ty, lambda env: env[key]), ty)
        f_arg, f_target = operand_fn(arg, arg.ty), operand_fn(target, ty)
        f_extra = operand_fn(extra, "i64") if extra else None

        def f(envs):
            args = [f_arg(env) for env in envs]
            extras = [f_extra(env) & 31 for env in envs] if extra else None
            for tid, env in enumerate(envs):
                env[key] = warp_result(op, value_ty, args, extras, tid)
            for env in envs:
                env[name] = f_target(env)
        return [f"{name} = {target.src}"], f

    # ---- exchanges through shared memory (top level only: every thread reaches the barriers) --
    def exchange_stmt(self):
        """`xs[i] = e` between barriers, then `v = T(xs[j])` of another thread's j: (lines,
        fn(envs)), fn taking every thread's env in thread order."""
        ty = self.exchange
        value = self.cast(self.expr(ty, 2), ty)
        form = self.draw(0, 3)
        if form == 3:
            e = self.expr(self.pick(INT_TYPES), 1)
            index, f_index = f"({e.src}) & {NTHREADS - 1}", e.fn
        else:
            k = self.draw(1, NTHREADS - 1)
            index = [f"(i + {k}) & {NTHREADS - 1}", f"i ^ {k}", f"{NTHREADS - 1} - i"][form]
            f_index = [lambda env: env["i"] + k, lambda env: env["i"] ^ k,
                       lambda env: NTHREADS - 1 - env["i"]][form]
        key = self.fresh("@xs")
        name = self.pick(list(self.vars))
        target = self.cast(Expr(f"xs[{index}]", ty, lambda env: env[key]), self.vars[name])
        f_value, f_target = operand_fn(value, ty), operand_fn(target, self.vars[name])

        def f(envs):
            stored = [f_value(env) for env in envs]
            for env in envs:
                env[key] = stored[f_index(env) & (NTHREADS - 1)]
            for env in envs:
                env[name] = f_target(env)
        lines = ["ptxpy.syncthreads()", f"xs[i] = {value.src}", "ptxpy.syncthreads()",
                 f"{name} = {target.src}"]
        return lines, f

    # ---- atomics -----------------------------------------------------------------------------
    def atomic_stmt(self):
        """An atomic on the thread's own scratch element (its old value assigned, or unused), or
        on a slot of the counter array every thread updates (unused: the order of the threads'
        updates is unknown, but with the slot's one commutative operation the result is not).
        (lines, fn(env)), or None where the program has neither."""
        private = self.memory is not None and self.memory[2] in ATOMIC_TYPES
        if self.acc and (not private or self.chance(1, 2)):
            return self.shared_counter_atomic()
        return self.private_atomic() if private else None

    def private_atomic(self):
        kind, name, ty = self.memory
        op = self.pick(ATOMIC_OPS if ty in INTS else FLOAT_ATOMIC_OPS)
        slot = self.draw(0, MEM_SLOTS - 1) if self.chance(1, 2) else None
        index, fslot = self.mem_index(slot)
        args = []
        if op == "cas":
            args.append(self.cas_expected(ty, index))
        args.append(self.expr(ty if self.chance(3, 5) else self.pick(ALL_TYPES), 2))
        arg_fns, ref_op = [operand_fn(e, ty) for e in args], op
        if args[0].value == "own":     # compares the element's bits with themselves: swaps
            ref_op, arg_fns = "exch", arg_fns[1:]
        key = self.fresh("@old")
        call = (f"ptxpy.atomic_{op}({name}, {'(' + index + ')' if ',' in index else index}, "
                f"{', '.join(e.src for e in args)})")
        target_name = self.pick(list(self.vars)) if self.chance(2, 3) else None
        f_target = None
        if target_name is not None:
            target = self.cast(Expr(call, ty, lambda env: env[key]), self.vars[target_name])
            f_target = operand_fn(target, self.vars[target_name])
            line = f"{target_name} = {target.src}"
        else:
            line = call

        def f(env):
            s = fslot(env)
            old = env["@mem"][s]
            env["@mem"][s] = atomic_result(ref_op, ty, old, [fa(env) for fa in arg_fns],
                                           kind == "global")
            env[key] = old
            if f_target is not None:
                env[target_name] = f_target(env)
        return [line], f

    def cas_expected(self, ty, index):
        """What atomic_cas compares with: the element itself (`value` "own": it always swaps),
        or a value; for floats never a NaN, whose bits the reference does not know."""
        if self.chance(1, 3):
            return Expr(f"{self.memory[1]}[{index}]", ty, None, value="own")
        if ty in INTS:
            return self.expr(ty, 1)
        v = self.pick([0.0, -0.0, 1.0, -1.5, 0.5, 65504.0])
        value = convert_constant(v, ty)
        return Expr(f"{ty}({v!r})", ty, lambda env: value)

    def shared_counter_atomic(self):
        name, ty, ops = self.acc
        slot = self.draw(0, ACC_SLOTS - 1)
        e = self.expr(ty if self.chance(3, 5) else self.pick(ALL_TYPES), 2)
        fe, op = operand_fn(e, ty), ops[slot]
        index = slot if name == "s_acc" else f"0, {slot}"

        def f(env):
            acc = env["@acc"]
            acc[slot] = atomic_result(op, ty, acc[slot], [fe(env)])
        return [f"ptxpy.atomic_{op}({name}, {'(' + index + ')' if name != 's_acc' else index}, "
                f"{e.src})"], f

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
        if self.vectors and self.chance(1, 4):
            return self.vector_stmt()
        if self.atomic and self.chance(1, 4):
            stmt = self.atomic_stmt()
            if stmt is not None:
                return stmt
        if self.memory and self.chance(1, 4):
            return self.mem_store()
        name = self.pick(list(self.vars))
        ty = self.vars[name]
        if self.chance(1, 3) and ty != "bool":
            line, f = self.augmented(name, ty)
            if line is not None:
                return [line], f
        if ty == "bool" and self.chance(1, 3):
            op, b = self.pick(["&", "|", "^"]), self.expr("bool", 2)
            fe = binop(self.var(name, ty), op, b).fn
            return [f"{name} {op}= {b.src}"], (lambda env: env.__setitem__(name, fe(env)))
        if self.chance(1, 10):          # a weak literal converts to the variable's type
            if ty == "bool":
                e = literal(self.pick([True, False]))
            else:
                e = self.literal(ty)
                if ty in INTS and not fits(e.value, ty):
                    e = literal(0)
            value = operand_fn(e, ty)(None)
            return [f"{name} = {e.src}"], (lambda env: env.__setitem__(name, value))
        src_ty = ty if self.chance(3, 5) else self.pick(SUBTYPES[ty])
        e = self.expr(src_ty, 2)
        fe = operand_fn(e, ty)

        def f(env):
            env[name] = fe(env)
        return [f"{name} = {e.src}"], f

    # ---- vector access (`--vectors`) ------------------------------------------------------------
    def vector_stmt(self):
        """A vector load from an input array or the scratch array, or a vector store to the
        scratch array (global or shared: there are no local vectors)."""
        scratch = self.memory and self.memory[0] != "local" and self.memory[2] != "bool"
        if scratch and self.chance(1, 2):
            if self.chance(1, 2):
                return self.vector_store()
            start, width, fstart = self.vector_start(MEM_SLOTS, BITS[self.memory[2]])
            source = f"{self.memory[1]}[i, {start}:{start} + {width}]"
            return self.vector_load(source, self.memory[2], width,
                                    lambda env, k: env["@mem"][fstart(env) + k])
        arr = self.pick(list(self.arrays))
        start, width, fstart = self.vector_start(NTHREADS, BITS[self.arrays[arr]])
        return self.vector_load(f"{arr}[{start}:{start} + {width}]", self.arrays[arr], width,
                                lambda env, k: env["@" + arr][fstart(env) + k])

    def vector_start(self, length, bits):
        """(source, width, start(env)) of an aligned run of at most 128 bits in `length`
        elements (8 only of a 16-bit type): a constant start, or the width times a masked
        run-time value."""
        widths = [w for w in (2, 4, 8) if w * bits <= 128 and w <= length and (w < 8 or bits == 16)]
        width = self.pick(widths)
        runs = length // width
        if runs == 1 or self.chance(1, 3):
            start = width * self.draw(0, runs - 1)
            return str(start), width, (lambda env: start)
        e = self.expr(self.pick(INT_TYPES), 1)
        f = e.fn
        return (f"({width} * (({e.src}) & {runs - 1}))", width,
                lambda env: width * (f(env) & (runs - 1)))

    def vector_load(self, source, ty, width, element):
        """`t1, t2, ... = source`, then some variables set from the loaded values."""
        names = [self.fresh("t") for _ in range(width)]
        lines = [f"{', '.join(names)} = {source}"]
        setters = []
        for name in names:
            if self.chance(1, 3):
                continue
            target = self.pick(list(self.vars))
            value = self.cast(Expr(name, ty, lambda env, n=name: env[n]), self.vars[target])
            lines.append(f"{target} = {value.src}")
            setters.append((target, value.fn))

        def f(env):
            for k, name in enumerate(names):
                env[name] = element(env, k)
            for target, fn in setters:
                env[target] = fn(env)
        return lines, f

    def vector_store(self):
        """`m[i, s:s + W] = (e1, ..., eW)`: each value converts to the element type."""
        ty = self.memory[2]
        start, width, fstart = self.vector_start(MEM_SLOTS, BITS[ty])
        values = [self.expr(ty if self.chance(3, 5) else self.pick(ALL_TYPES), 2)
                  for _ in range(width)]
        fns = [operand_fn(e, ty) for e in values]

        def f(env):
            results = [fn(env) for fn in fns]      # all values first, then the stores
            first = fstart(env)
            for k, value in enumerate(results):
                env["@mem"][first + k] = value
        return [f"{self.memory[1]}[i, {start}:{start} + {width}] = "
                f"({', '.join(e.src for e in values)})"], f

    def augmented(self, name, ty):
        """`name op= e` where `name op e` converts implicitly back to ty, or (None, None)."""
        target = self.var(name, ty)
        if ty in INTS:
            op = self.pick(["+", "-", "*", "^", "|", "&", "//", "%", "<<", ">>"])
        else:
            op = self.pick(["+", "-", "*", "/", "//", "%"])
        if op in ("//", "%"):
            e = self.divisor(ty, 2) if ty in INTS else literal(self.pick(FLOAT_DIVISORS))
        elif op in ("<<", ">>"):
            e = literal(self.draw(0, BITS[ty])) if self.chance(1, 2) else binop(
                self.expr(self.pick([t for t in SUBTYPES[ty] if t in INTS] or [ty]), 2),
                "&", literal(15))
        elif self.chance(1, 3):
            e = self.literal(ty)
        else:
            e = self.expr(self.pick(SUBTYPES[ty]), 2)
        result = binop(target, op, e)
        if strong_join(result.ty, ty) != ty:
            return None, None
        fr = operand_fn(result, ty)

        def f(env):
            env[name] = fr(env)
        return f"{name} {op}= {e.src}", f

    def stmt(self, depth):
        self.n_stmts += 1
        k = self.draw(0, 9)
        if depth <= 0 or self.n_stmts > 14 or k <= 3:
            return self.assign()
        if k <= 5:
            c = self.test(2)
            then_lines, then_fn = self.block(depth - 1, self.draw(1, 3))
            lines = [f"if {c.src}:"] + ["    " + line for line in then_lines]
            else_fn = None
            if self.chance(1, 2):
                else_lines, else_fn = self.block(depth - 1, self.draw(1, 2))
                lines += ["else:"] + ["    " + line for line in else_lines]

            def f(env, fc=c.fn):
                if fc(env):
                    then_fn(env)
                elif else_fn is not None:
                    else_fn(env)
            return lines, f
        if k == 6 and self.loop_depth > 0:
            c = self.test(1)
            word = self.pick(["break", "continue"])
            exc = Break if word == "break" else Continue

            def f(env, fc=c.fn):
                if fc(env):
                    raise exc()
            return [f"if {c.src}:", f"    {word}"], f
        if k == 9 and self.returns_left:
            self.returns_left -= 1
            c = self.test(1)

            def f(env, fc=c.fn):
                if fc(env):
                    raise Return()
            return [f"if {c.src}:", f"    {OUTPUTS}", "    return"], f
        if k <= 8 and self.loop_depth < 2:
            count = self.draw(0, 6)
            start, step = (0, 1) if self.chance(2, 3) else (self.draw(0, 2), self.draw(1, 3))
            is_while = k == 8
            var = self.fresh("w" if is_while else "k")
            var_ty = "i32" if is_while or self.chance(2, 3) else self.pick(INT_TYPES)
            stop, count_of = str(count), (lambda env: count)
            if self.runtime_loops and self.chance(1, 2):
                stop, count_of = self.pick(RUN_TIME_COUNTS)
                if var_ty != "i32":
                    stop = f"{var_ty}({stop})"
            self.loop_depth += 1
            if not is_while:
                self.readonly[var] = var_ty
            body_lines, body_fn = self.block(depth - 1, self.draw(1, 3))
            self.loop_depth -= 1
            self.readonly.pop(var, None)
            if is_while:
                lines = [f"{var} = 0", f"while {var} < {stop}:", f"    {var} += 1"]
            elif var_ty == "i32":
                lines = [f"for {var} in range({start}, {stop}, {step}):"]
            else:      # the variable takes the type of the cast start
                lines = [f"for {var} in range({var_ty}({start}), {stop}, {step}):"]
            lines += ["    " + line for line in body_lines]

            def f(env):
                count = count_of(env)
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


OUTPUTS = "@outputs"     # where an early return stores the outputs: a line gen_program fills

# (source, value) of the run-time trip counts of `--loops`: 0 to 4, per lane or for all
RUN_TIME_COUNTS = [("(i & 3)", lambda env: env["i"] & 3),
                   ("(a[i] & 3)", lambda env: env["@a"][env["i"]] & 3),
                   ("((i >> 4) & 1)", lambda env: (env["i"] >> 4) & 1),
                   ("(len(a) >> 4)", lambda env: NTHREADS >> 4)]

ATOMIC_TYPES = ("i32", "i64", "u32", "u64", "f16", "bf16", "f32", "f64")
ATOMIC_OPS = ("add", "sub", "min", "max", "and", "or", "xor", "exch", "cas")
FLOAT_ATOMIC_OPS = ("add", "sub", "min", "max", "exch", "cas")
COUNTER_OPS = ("add", "sub", "min", "max", "and", "or", "xor")   # commutative and associative
FLOAT_COUNTER_OPS = ("min", "max")     # (a float sum depends on the order)
ACC_SLOTS = 4


def flush_subnormal(x: float) -> float:
    """An f32 below the smallest normal magnitude becomes a zero of its sign."""
    return math.copysign(0.0, x) if abs(x) < 2.0**-126 else x


def atomic_result(op, ty, old, values, global_memory=False):
    """The value `atomic_<op>` leaves in an element holding `old` (docs/language.md,
    "Atomics"); `values` are the arguments after the index, converted to the element type.
    An f32 `atomic_add`/`atomic_sub` in global memory flushes subnormal values to zero."""
    v = values[-1]
    if global_memory and ty == "f32" and op in ("add", "sub"):
        return flush_subnormal(float_arith("+" if op == "add" else "-", flush_subnormal(old),
                                           flush_subnormal(v), ty))
    if op == "exch":
        return v
    if op == "cas":      # compares the bits (the reference never compares two NaNs)
        same = old == values[0] and math.copysign(1, old) == math.copysign(1, values[0]) \
            if ty in FLOAT_TYPES else old == values[0]
        return v if same else old
    if op in ("add", "sub"):
        if ty in FLOAT_TYPES:
            return float_arith("+" if op == "add" else "-", old, v, ty)
        return wrap(old + v if op == "add" else old - v, ty)
    if op in ("min", "max"):
        return float_min_max(op, old, v) if ty in FLOAT_TYPES else (min if op == "min" else max)(old, v)
    return wrap({"and": old & v, "or": old | v, "xor": old ^ v}[op], ty)


VOTES = ("ballot_sync", "any_sync", "all_sync")
WARP_FUNCTIONS = ("shfl_sync", "shfl_up_sync", "shfl_down_sync", "shfl_xor_sync", "warp_sum",
                  "warp_max", "warp_min") + VOTES


def warp_result(op, ty, args, extras, tid):
    """What `op` gives thread `tid` (docs/language.md, "Warp functions"): `args` holds every
    thread's argument, `extras` the lane arguments' low five bits; the warps are whole."""
    base, lane = tid - tid % 32, tid % 32
    warp = args[base:base + 32]
    if op in VOTES:
        if op == "ballot_sync":
            return sum(1 << k for k, p in enumerate(warp) if p)
        return any(warp) if op == "any_sync" else all(warp)
    if op.startswith("warp_"):
        combine = {"warp_sum": lambda x, y: (float_arith("+", x, y, ty) if ty in FLOAT_TYPES
                                             else wrap(x + y, ty)),
                   "warp_max": lambda x, y: (float_min_max("max", x, y) if ty in FLOAT_TYPES
                                             else max(x, y)),
                   "warp_min": lambda x, y: (float_min_max("min", x, y) if ty in FLOAT_TYPES
                                             else min(x, y))}[op]
        values = list(warp)
        for mask in (16, 8, 4, 2, 1):      # the butterfly's order, which float sums depend on
            values = [combine(values[k], values[k ^ mask]) for k in range(32)]
        return values[lane]
    k = extras[tid]
    source = {"shfl_sync": k, "shfl_up_sync": lane - k, "shfl_down_sync": lane + k,
              "shfl_xor_sync": lane ^ k}[op]
    return warp[source] if 0 <= source < 32 else warp[lane]


def gen_helper(draw):
    """An optional @ptxpy.func: (source lines, (name, param types, return type, evaluator))."""
    g = Gen(draw)
    ptys = [g.pick(ALL_TYPES) for _ in range(draw(1, 3))]
    rty = g.pick(NUM_TYPES)
    params = []
    for j, t in enumerate(ptys):
        g.vars[f"p{j}"] = t
        params.append(f"p{j}: {t}")
    body_lines, body_fn = g.block(2, draw(1, 4))
    ret = g.expr(g.pick(ALL_TYPES) if draw(0, 2) == 0 else rty, 2)   # returned as a cast
    fret = operand_fn(ret, ret.ty)
    lines = ["@ptxpy.func", f"def helper({', '.join(params)}) -> {rty}:"]
    lines += ["    " + line for line in body_lines] + [f"    return {ret.src}", ""]
    rsrc = ret.ty

    def evaluate(args):
        env = {f"p{j}": v for j, v in enumerate(args)}
        body_fn(env)
        return convert(fret(env), rsrc, rty)
    return lines, ("helper", ptys, rty, evaluate)


def input_values(ty: str, rng) -> np.ndarray:
    """64 values of type ty: mostly small, some from the whole range, some extreme."""
    n = NTHREADS
    kind = rng.random(n)
    if ty in INTS:
        lo, hi = limits(ty)
        small = rng.integers(max(lo, -100), min(hi, 100) + 1, n)
        full = rng.integers(lo, hi, n, dtype=np.int64 if ty != "u64" else np.uint64,
                            endpoint=True)
        extremes = [v for v in [lo, hi, 0, 1, -1, lo + 1, hi - 1, 16842753,
                                (1 << 60) + (1 << 52) + 1] if fits(v, ty)]
        special = [extremes[j] for j in rng.integers(0, len(extremes), n)]
        values = [int(s) if k < 0.6 else int(f) if k < 0.85 else int(p)
                  for k, s, f, p in zip(kind, small, full, special)]
        return np.array(values, dtype=np.int64 if ty != "u64" else np.uint64).astype(np_dtype(ty))
    scale = {"f16": 100.0, "bf16": 1e4, "f32": 1e4, "f64": 1e6}[ty]
    quarters = rng.integers(-50, 50, n) * 0.25
    normal = rng.standard_normal(n) * scale
    many_bits = (1 + rng.random(n)) * np.exp2(rng.integers(-20, 40, n).astype(np.float64))
    largest = FLOAT_FORMAT[ty][2] if ty != "f64" else 1.7976931348623157e308
    special = rng.choice([0.0, -0.0, 1.0, -1.0, largest, -largest, np.inf, -np.inf, np.nan,
                          1.0 + 2**-8 + 2**-30, 2.0**-20, 65504.0, 3e38], n)
    values = np.where(kind < 0.55, quarters, np.where(kind < 0.75, normal,
                      np.where(kind < 0.92, many_bits * np.sign(normal), special)))
    with np.errstate(over="ignore"):
        return np.array([round_float(float(v), ty) for v in values]).astype(np_dtype(ty))


def gen_program(draw, memory=False, warp=False, atomic=False, loops=False, returns=False,
                vectors=False, exchange=False):
    """Returns (source, reference(inputs) -> outputs, inputs, output (name, type, shape) list).
    `memory`: with a scratch array in some programs; `warp`: with warp functions at the top
    level; `atomic`: with atomics, on the scratch array and on a counter array; `loops`: loops
    of run-time trip counts; `returns`: early returns; `vectors`: vector loads and stores;
    `exchange`: values traded through shared memory between barriers (the module's docstring)."""
    if returns and (warp or atomic or exchange):
        raise ValueError("early returns go with neither warp functions, atomics nor exchanges")
    memory = memory or atomic
    lines = [HEADER]
    arrays = {"a": "i32", "b": "f32"}
    for name in ARRAY_NAMES[:draw(0, 2)]:
        arrays[name] = NUM_TYPES[draw(0, len(NUM_TYPES) - 1)]
    g = Gen(draw, arrays)
    g.runtime_loops = loops
    g.returns_left = 2 if returns else 0
    g.vectors = vectors
    if draw(0, 2) == 0:
        hl, g.helper = gen_helper(draw)
        lines += hl
    g.readonly["i"] = "i32"
    body, inits = [], []
    nvars = draw(4, 6)
    types = [g.pick(ALL_TYPES if draw(0, 5) else ("bool",)) for _ in range(nvars)]
    for t in types:
        name = g.fresh("v")
        e = g.expr(g.pick(SUBTYPES[t]) if draw(0, 3) == 0 else t, 2)
        body.append(f"{name}: {t} = {e.src}")
        inits.append((name, operand_fn(e, t)))
        g.vars[name] = t
    if draw(0, 1) == 0:   # a floor division that reaches an output unless overwritten
        t = g.pick(INT_TYPES)
        name, e = g.fresh("v"), g.floor_division(t, 2)
        body.append(f"{name}: {t} = {e.src}")
        inits.append((name, e.fn))
        g.vars[name] = t
    mem_fns = []
    if memory and draw(0, 2) != 0:
        kind, ty = g.pick(["global", "local", "shared"]), g.pick(ALL_TYPES)
        if atomic and ty not in ATOMIC_TYPES and draw(0, 3) != 0:
            ty = g.pick(ATOMIC_TYPES)
        g.memory = (kind, "o_mem" if kind == "global" else "m", ty)
        if kind == "local":
            body.append(f"m = ptxpy.local_array({MEM_SLOTS}, {ty})")
        elif kind == "shared":
            body.append(f"m = ptxpy.shared_array(({NTHREADS}, {MEM_SLOTS}), {ty})")
        for slot in range(MEM_SLOTS):
            lines_, f = g.mem_store(slot)
            body += lines_
            mem_fns.append(f)
    acc_init = None
    g.atomic = atomic
    if atomic and draw(0, 2) != 0:
        acc_init = counter_array(g, body)
    if exchange and draw(0, 3) != 0:
        g.exchange = g.pick(ALL_TYPES)
        body.append(f"xs = ptxpy.shared_array({NTHREADS}, {g.exchange})")
    steps = []     # the top level: (fn(env) of each thread, or fn(envs) of all of them)
    for _ in range(draw(1, 6)):
        lines_, f = g.stmt(3)
        body += lines_
        steps.append((f, False))
        if warp and draw(0, 1) == 0:
            lines_, f = g.warp_stmt()
            body += lines_
            steps.append((f, True))
        if g.exchange and draw(0, 1) == 0:
            lines_, f = g.exchange_stmt()
            body += lines_
            steps.append((f, True))
    if g.acc and g.acc[0] == "s_acc":
        body += ["ptxpy.syncthreads()", "if i == 0:"]
        body += [f"    o_acc[0, {k}] = s_acc[{k}]" for k in range(ACC_SLOTS)]
    # one output array per type: the variables of that type, then (for some) a value of
    # another type, converted by the store
    columns: dict[str, list] = {}
    for n, t in g.vars.items():
        columns.setdefault(t, []).append((n, t))
    for t in list(columns):
        if draw(0, 2) == 0:
            n, s = g.pick(list(g.vars.items()))
            if s != t:
                columns[t].append((n, s))
    outputs = list(columns)
    stores = [f"o_{t}[i, {j}] = {n}" for t in outputs for j, (n, _) in enumerate(columns[t])]
    if g.memory and g.memory[0] != "global":
        stores += [f"o_mem[i, {j}] = {g.mem_ref(j)[0]}" for j in range(MEM_SLOTS)]
    body = fill_outputs(body, stores) + stores
    params = [f"{n}: Array[{t}]" for n, t in arrays.items()]
    params += [f"o_{t}: Array[{t}, 2]" for t in outputs]
    if g.acc:
        params.append(f"o_acc: Array[{g.acc[1]}, 2]")
    if g.memory:
        kind, name, mty = g.memory
        params.append(f"o_mem: Array[{mty}, 2]")
    lines += ["@ptxpy.jit", f"def kern({', '.join(params)}):", "    i = ptxpy.global_id(0)"]
    lines += ["    " + line for line in body]
    source = "\n".join(lines) + "\n"

    def reference(inputs):
        results = [[[None] * len(columns[t]) for _ in range(NTHREADS)] for t in outputs]
        memory_rows = []
        values = {n: [int(x) if arrays[n] in INTS else float(x) for x in arr.tolist()]
                  for n, arr in zip(arrays, inputs)}
        envs = []
        acc = list(acc_init or [])      # the counters, which every thread updates
        for tid in range(NTHREADS):
            env = {"i": tid, "@acc": acc}
            for n in arrays:
                env["@" + n] = values[n]
            for name, fn in inits:
                env[name] = fn(env)
            env["@mem"] = [None] * MEM_SLOTS
            for fn in mem_fns:
                fn(env)
            envs.append(env)
        for fn, whole_block in steps:    # the threads in step at the top level
            if whole_block:
                fn(envs)
                continue
            for env in envs:
                if "@returned" not in env:
                    try:
                        fn(env)
                    except Return:
                        env["@returned"] = True
        for tid, env in enumerate(envs):
            for k, t in enumerate(outputs):
                for j, (n, s) in enumerate(columns[t]):
                    results[k][tid][j] = convert(env[n], s, t)
            memory_rows.append(env["@mem"])
        arrays_out = [to_array(r, t) for r, t in zip(results, outputs)]
        if g.acc:
            arrays_out.append(to_array([acc], g.acc[1]))
        return arrays_out + ([to_array(memory_rows, g.memory[2])] if g.memory else [])

    seed = draw(0, 2**31 - 1)
    rng = np.random.default_rng(seed)
    inputs = [input_values(t, rng) for t in arrays.values()]
    out_specs = [(f"o_{t}", t, (NTHREADS, len(columns[t]))) for t in outputs]
    if g.acc:
        out_specs.append(("o_acc", g.acc[1], (1, ACC_SLOTS)))
    if g.memory:
        out_specs.append(("o_mem", g.memory[2], (NTHREADS, MEM_SLOTS)))
    return source, reference, inputs, out_specs


def fill_outputs(body, stores):
    """Each early return's OUTPUTS line becomes the output stores, at its indentation."""
    filled = []
    for line in body:
        if line.strip() == OUTPUTS:
            indent = line[:len(line) - len(line.lstrip())]
            filled += [indent + store for store in stores]
        else:
            filled.append(line)
    return filled


def counter_array(g, body):
    """Declares the counter array (global `o_acc`, or shared `s_acc` copied to `o_acc` at the
    end), one operation per slot, and its start values, set by thread 0 before a barrier.
    Returns the start values."""
    ty = g.pick(ATOMIC_TYPES)
    ops = [g.pick(COUNTER_OPS if ty in INTS else FLOAT_COUNTER_OPS) for _ in range(ACC_SLOTS)]
    name = g.pick(["o_acc", "s_acc"])
    g.acc = (name, ty, ops)
    if name == "s_acc":
        body.append(f"s_acc = ptxpy.shared_array({ACC_SLOTS}, {ty})")
    starts, lines = [], []
    for k in range(ACC_SLOTS):
        v = g.pick(INT_POOL) if ty in INTS else g.pick(FLOAT_LITERALS + [-0.0])
        starts.append(convert_constant(v, ty))
        lines.append(f"    {name}[{k if name == 's_acc' else f'0, {k}'}] = {ty}({v!r})")
    body += ["if i == 0:"] + lines + ["ptxpy.syncthreads()"]
    return starts


def to_array(rows, ty):
    if ty in INTS:
        return np.array(rows, dtype=np.int64 if ty != "u64" else np.uint64).astype(np_dtype(ty))
    if ty == "bool":
        return np.array(rows, dtype=np.bool_)
    with np.errstate(over="ignore", invalid="ignore"):
        return np.array(rows, dtype=np.float64).astype(np_dtype(ty))


def same_values(x, y, ty):
    """Elementwise: same bits, or both NaN."""
    if ty in FLOAT_TYPES:
        width = np.dtype(f"u{BITS[ty] // 8}")
        fx, fy = x.astype(np.float64), y.astype(np.float64)
        return (x.view(width) == y.view(width)) | (np.isnan(fx) & np.isnan(fy))
    return x == y


def check_program(draw, memory=False, warp=False, atomic=False, loops=False, returns=False,
                  vectors=False, exchange=False):
    """Generate, compile + simulate, compare. Raises AssertionError on a mismatch."""
    source, reference, inputs, out_specs = gen_program(draw, memory, warp, atomic, loops, returns,
                                                       vectors, exchange)
    expected = reference(inputs)
    got = run(source, "kern", list(inputs) + [Out(shape, np_dtype(t)) for _, t, shape in out_specs],
              grid=1, block=NTHREADS, racecheck=RACECHECK)
    for (name, t, _), e, g in zip(out_specs, expected, got):
        bad = np.argwhere(~same_values(e, g, t))
        if len(bad):
            tid, col = (int(v) for v in bad[0])
            ins = ", ".join(f"{n}={arr[tid]!r}" for n, arr in zip("abcd", inputs))
            raise AssertionError(
                f"mismatch at thread {tid} ({ins}): {name}[{tid}, {col}] expected {e[tid, col]!r} "
                f"got {g[tid, col]!r}\n{source}")


# ---- the scratch array catches what it is for: compilers broken on purpose ----
def _mismatches(seed: str, n: int, memory: bool, warp: bool = False, atomic: bool = False,
                returns: bool = False, vectors: bool = False, exchange: bool = False) -> int:
    import random

    found = 0
    for k in range(n):
        r = random.Random(f"{seed}:{k}")
        try:
            check_program(lambda lo, hi: r.randint(lo, hi), memory, warp, atomic, returns=returns,
                          vectors=vectors, exchange=exchange)
        except AssertionError:
            found += 1
    return found


def _merge_every_load(monkeypatch):
    from ptxpy.transpiler.passes import cse
    monkeypatch.setattr(cse, "NUMBERED", cse.NUMBERED | {"load"})


def _every_global_array_read_only(monkeypatch):
    from ptxpy.transpiler import ssa_builder
    init = ssa_builder._Array.__init__

    def read_only(self, name, elem, shape, space, base=None, nc=False, decl=None, uid=0, **rest):
        init(self, name, elem, shape, space, base, nc or space == "global", decl, uid, **rest)
    monkeypatch.setattr(ssa_builder._Array, "__init__", read_only)


def test_exchange_programs_catch_a_load_merged_across_a_barrier(monkeypatch):
    """What the exchanges are for: a compiler whose CSE merges two loads of `xs[63 - i]` (or any
    other repeated index) across the stores and barriers between them fails some of seed 32's
    first 24 programs with exchanges, and none of those without. (The simulator runs the block's
    threads in step, so a barrier left out altogether gives the right values: the race check
    finds it, next test.)"""
    _merge_every_load(monkeypatch)
    assert _mismatches("32", 24, memory=False, exchange=True) > 0
    assert _mismatches("32", 24, memory=False) == 0


def test_exchange_programs_without_their_barrier_race(monkeypatch):
    """An exchange whose barrier between the store and the load is left out still matches the
    reference (the block's threads run in step), but the simulator's race check (RACECHECK)
    stops the program at the load, naming another thread's store: in some of seed 32's first
    24 programs with exchanges."""
    exchange = Gen.exchange_stmt

    def without_barrier(self):
        lines, f = exchange(self)
        assert lines[2] == "ptxpy.syncthreads()"
        return lines[:2] + lines[3:], f
    monkeypatch.setattr(Gen, "exchange_stmt", without_barrier)
    import random

    from ptxpy.runtime.simulator import SimulatorError

    races = 0
    for k in range(24):
        r = random.Random(f"32:{k}")
        try:
            check_program(lambda lo, hi: r.randint(lo, hi), exchange=True)
        except SimulatorError as err:
            assert re.search(r"^kernels\.py:\d+: shared memory race: thread \(\d+,0,0\) reads \d+ "
                             r"bytes? at shared offset 0x[0-9a-f]+ that thread \(\d+,0,0\) wrote "
                             r"since the last barrier; block \(0,0,0\)$", str(err)), str(err)
            races += 1
    assert races > 0


@pytest.mark.parametrize("break_compiler", [_merge_every_load, _every_global_array_read_only])
def test_memory_programs_catch_a_load_moved_across_a_store(monkeypatch, break_compiler):
    """What the scratch array is for: a compiler whose CSE merges loads across stores, or that
    reads a written global array through the read-only path, fails some of seed 31's first 16
    programs with memory (programs 3 and 12), and none without."""
    break_compiler(monkeypatch)
    assert _mismatches("31", 16, memory=True) > 0
    assert _mismatches("31", 16, memory=False) == 0


def test_warp_programs_catch_a_shuffle_in_the_wrong_direction(monkeypatch):
    """A compiler whose `shfl_up_sync` reads the lane above instead of the one below
    (`shfl.down`) fails seed 31's first 16 programs with warp functions (programs 2 and 15),
    and none without."""
    from ptxpy.transpiler import lower_intrinsics

    monkeypatch.setitem(lower_intrinsics.HANDLERS, "shfl_up_sync", lower_intrinsics._shfl("down"))
    assert _mismatches("31", 16, memory=False, warp=True) > 0
    assert _mismatches("31", 16, memory=False, warp=False) == 0


@pytest.mark.parametrize("form", ["integer atomics", "compare-and-swap loops"])
def test_atomic_programs_catch_a_float_min_swapped_with_max(monkeypatch, form):
    """A compiler whose float `atomic_min`/`atomic_max` compute max for min and min for max
    fails seed 31's first 16 programs with atomics, and none without: in the integer atomics on
    the bits (f32, global f64: program 3) and in the compare-and-swap loops (f16, bf16, shared
    f64: programs 11, 13 and 14)."""
    from ptxpy.transpiler import lower_intrinsics

    swap = {"min": "max", "max": "min"}
    if form == "integer atomics":
        on_bits = lower_intrinsics._float_min_max
        monkeypatch.setattr(lower_intrinsics, "_float_min_max", lambda b, addr, op, value, space:
                            on_bits(b, addr, swap[op], value, space))
    else:
        combine = lower_intrinsics._combine
        monkeypatch.setattr(lower_intrinsics, "_combine", lambda b, op, old, values: combine(
            b, swap.get(op, op), old, values))
    assert _mismatches("31", 16, memory=False, atomic=True) > 0
    assert _mismatches("31", 16, memory=True) == 0


def test_return_programs_catch_a_return_that_does_not_leave(monkeypatch):
    """A compiler that goes on after a kernel's early return (as if it were `pass`) fails
    seed 31's first 16 programs with early returns, and none without."""
    from ptxpy.transpiler import ssa_builder

    returns = ssa_builder._Builder.s_Return
    monkeypatch.setattr(ssa_builder._Builder, "s_Return", lambda self, s: (
        None if self.scope.func.is_kernel else returns(self, s)))
    assert _mismatches("31", 16, memory=True, returns=True) > 0
    assert _mismatches("31", 16, memory=True) == 0


def test_vector_programs_catch_a_vector_load_read_backwards(monkeypatch):
    """A compiler whose vector loads give the elements in the wrong order fails seed 31's
    first 16 programs with vector access, and none without."""
    import dataclasses

    from ptxpy.transpiler import ssa_builder

    load = ssa_builder._Builder.s_VectorLoad
    monkeypatch.setattr(ssa_builder._Builder, "s_VectorLoad", lambda self, s: load(
        self, dataclasses.replace(s, targets=s.targets[::-1])))
    assert _mismatches("31", 16, memory=True, vectors=True) > 0
    assert _mismatches("31", 16, memory=True) == 0


@pytest.mark.parametrize("seed, number, line", [
    ("3103", 546, "ptxpy.atomic_or(s_acc, 3, (~i))"),
    ("3306", 748, "ptxpy.atomic_min(m, (i, (max(i64(m[i, (i64(v2)) & 3]), i64(a[(i16(v1)) & 63]))) & 3), (v2 ** 2))"),
])
def test_atomic_programs_the_card_once_failed(seed, number, line):
    """Two random programs with atomics and warp functions that stopped the H100 (session 22):
    546, a 64-bit `atomic_or` on shared memory in a loop (a misaligned shared read: ptxas's
    own spin loop), and 748, a bf16 `atomic_min` on shared memory in one branch and an f32
    `atomic_max` on global memory in the other, then divisions and shuffles (an illegal address:
    lanes still in a compare-and-swap loop read a uniform register that others had reused;
    session 23 made the loops warp-uniform). Against the reference, in the simulator here and
    on the card under PTXPY_TEST_DEVICE=gpu."""
    import random

    draws = random.Random(f"{seed}:{number}")
    draw = (lambda lo, hi: draws.randint(lo, hi))
    assert line in gen_program(draw, False, True, True)[0]     # the generator still makes it
    draws = random.Random(f"{seed}:{number}")
    check_program(draw, False, True, True)


ALL_BUT_RETURNS = dict(memory=True, warp=True, atomic=True, loops=True, vectors=True,
                       exchange=True)


@pytest.mark.parametrize("seed, number, flags, line, open_under_the_jit", [
    ("4323", 767, dict(atomic=True, loops=True, vectors=True, exchange=True),
     "ptxpy.atomic_min(s_acc, 3, ((b[i] + bool(c[i])) ** 1))", True),
    ("4706", 1529, ALL_BUT_RETURNS, "ptxpy.atomic_max(o_acc, (0, 3), ((u16(v1) + v1) if", False),
    ("4728", 819, ALL_BUT_RETURNS, "ptxpy.atomic_max(o_acc, (0, 3), u32(a[i]))", False),
])
def test_the_programs_the_drivers_jit_compiled_wrong(monkeypatch, seed, number, flags, line,
                                                     open_under_the_jit):
    """Random programs that the JIT of driver 580 (ptxas 13.0) compiled with one uniform
    register for two values, where a divergent branch's side still needed the first:
    767 of seed 4323 (session 25: `c`'s address and the `if` side's loop bound, a misaligned
    address), 1529 of seed 4706 and 819 of seed 4728 (session 27: a compare-and-swap loop's
    address and a warp function's mask after the `if`, which lanes that skipped it reached
    while the loop `YIELD`ed; an invalid address space). ptxas 13.5 compiles them right.
    1529 and 819 run under the driver's JIT since their float `atomic_max` is an integer
    atomic, not a loop (session 28; `without_fix.py driver-jit,float-min-max-bits` fails
    each). 767 still `YIELD`s (a loop with a shared atomic and a 64-bit `%`): on the card it
    runs with PTXPY_PTXAS=newest (runtime/compiler.py; skipped where no ptxas newer than the
    driver's is installed; `without_fix.py driver-jit` fails it). Against the reference, in
    the simulator here and on the card under PTXPY_TEST_DEVICE=gpu."""
    import random

    if os.environ.get("PTXPY_TEST_DEVICE") == "gpu" and open_under_the_jit:
        from gpu_launcher import newer_ptxas_chosen

        monkeypatch.setenv("PTXPY_PTXAS", "newest")
        if not newer_ptxas_chosen():
            pytest.skip(f"no ptxas newer than the driver's JIT, under which program {number} "
                        "is open")

    draws = random.Random(f"{seed}:{number}")
    draw = (lambda lo, hi: draws.randint(lo, hi))
    assert line in gen_program(draw, **flags)[0]
    draws = random.Random(f"{seed}:{number}")
    check_program(draw, **flags)


# ---- checks of the reference itself (against NumPy, ml_dtypes and JAX, not the compiler) ----
def test_reference_rounding_matches_numpy():
    """round_float and int_to_float against NumPy's and ml_dtypes' conversions."""
    import ml_dtypes

    rng = np.random.default_rng(0)
    doubles = np.concatenate([
        rng.integers(0, 2**64, 20000, dtype=np.uint64).view(np.float64),   # any bit pattern
        rng.standard_normal(20000) * 1e4,
        np.ldexp(1 + rng.integers(0, 2**20, 20000) * 2.0**-20, rng.integers(-160, 130, 20000)),
        [0.0, -0.0, np.inf, -np.inf, np.nan, 65504.0, 65519.99, 65520.0, 2.0**-24, 2.0**-25,
         3 * 2.0**-26, 2.0**-149, 2.0**-150, 3 * 2.0**-151]])
    for ty, dtype in (("f16", np.float16), ("f32", np.float32)):
        with np.errstate(all="ignore"):
            want = doubles.astype(dtype)
        got = to_array([round_float(float(x), ty) for x in doubles], ty)
        assert np.all(same_values(want, got, ty)), ty
    # ml_dtypes rounds float32 -> bf16 once (but float64 -> bf16 through float32: twice)
    with np.errstate(over="ignore", invalid="ignore"):
        singles = doubles.astype(np.float32)
    want = singles.astype(ml_dtypes.bfloat16)
    got = to_array([round_float(float(x), "bf16") for x in singles], "bf16")
    assert np.all(same_values(want, got, "bf16"))
    assert round_float(1 + 2**-8 + 2**-52, "bf16") == 1 + 2**-7     # one rounding, not two
    # integers: NumPy's int64 -> float32/float64 round once; below 2^24 so does ml_dtypes
    ints = rng.integers(-2**63, 2**63, 5000, dtype=np.int64)
    ints = np.concatenate([ints, ints >> rng.integers(0, 63, 5000), [2**63 - 1, -2**63, 0]])
    for ty in ("f16", "f32", "f64"):
        with np.errstate(all="ignore"):
            want = ints.astype(np_dtype(ty))
        got = to_array([int_to_float(int(n), ty) for n in ints], ty)
        assert np.all(same_values(want, got, ty)), ty
    small = ints[np.abs(ints) < 2**24]
    got = to_array([int_to_float(int(n), "bf16") for n in small], "bf16")
    assert np.all(same_values(small.astype(np.float32).astype(ml_dtypes.bfloat16), got, "bf16"))
    assert int_to_float(16842753, "bf16") == 16908288.0          # 2^24 + 2^16 + 1 -> 2^24 + 2^17
    assert int_to_float(-16842753, "bf16") == -16908288.0
    assert int_to_float((1 << 60) + (1 << 52) + 1, "bf16") == float((1 << 60) + (1 << 53))
    assert int_to_float(2**64 - 1, "f32") == 2.0**64 and int_to_float(65520, "f16") == math.inf


def test_reference_promotion_matches_jax():
    """strong_join against jax.numpy.promote_types with 64-bit types enabled (as SPEC 2.1 reads)."""
    jax = __import__("pytest").importorskip("jax")
    import jax.numpy as jnp

    with jax.enable_x64(True):
        for a in ALL_TYPES:
            for b in ALL_TYPES:
                want = np.dtype(jnp.promote_types(np_dtype(a), np_dtype(b)))
                assert np_dtype(strong_join(a, b)) == want, (a, b)


try:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st
except ImportError:  # pragma: no cover
    given = None

if given is not None:
    def random_programs(share):
        """Hypothesis drives the generator: PTXPY_DIFF_EXAMPLES (300) programs over `share`."""
        def decorate(test):
            return settings(max_examples=int(os.environ.get("PTXPY_DIFF_EXAMPLES", "300")) // share,
                            deadline=None, suppress_health_check=list(HealthCheck))(
                given(st.data())(test))
        return decorate

    @random_programs(1)
    def test_random_kernels_match_reference(data):
        check_program(lambda lo, hi: data.draw(st.integers(lo, hi)))

    @random_programs(2)
    def test_random_kernels_with_memory_match_reference(data):
        check_program(lambda lo, hi: data.draw(st.integers(lo, hi)), memory=True)

    @random_programs(2)
    def test_random_kernels_with_warp_functions_match_reference(data):
        check_program(lambda lo, hi: data.draw(st.integers(lo, hi)), warp=True)

    @random_programs(2)
    def test_random_kernels_with_atomics_match_reference(data):
        check_program(lambda lo, hi: data.draw(st.integers(lo, hi)), atomic=True)

    @random_programs(3)
    def test_random_kernels_with_run_time_loop_counts_match_reference(data):
        check_program(lambda lo, hi: data.draw(st.integers(lo, hi)), warp=True, atomic=True,
                      loops=True)

    @random_programs(3)
    def test_random_kernels_with_vector_access_match_reference(data):
        check_program(lambda lo, hi: data.draw(st.integers(lo, hi)), memory=True, warp=True,
                      loops=True, vectors=True)

    @random_programs(3)
    def test_random_kernels_with_exchanges_through_shared_memory_match_reference(data):
        check_program(lambda lo, hi: data.draw(st.integers(lo, hi)), warp=True, loops=True,
                      exchange=True)

    @random_programs(3)
    def test_random_kernels_with_early_returns_match_reference(data):
        check_program(lambda lo, hi: data.draw(st.integers(lo, hi)), memory=True, loops=True,
                      returns=True)


FLAGS = ("--memory", "--warp", "--atomic", "--loops", "--returns", "--vectors", "--exchange")


def main(argv):
    import random
    import time
    import traceback

    flags = [flag for flag in FLAGS if flag in argv]
    switches = [flag in flags for flag in FLAGS]
    argv = [a for a in argv if a not in FLAGS]
    n = int(argv[1]) if len(argv) > 1 else 100
    seed = int(argv[2]) if len(argv) > 2 else 0
    mismatches = errors = 0
    start = time.time()
    for k in range(n):
        r = random.Random(f"{seed}:{k}")
        try:
            check_program(lambda lo, hi: r.randint(lo, hi), *switches)
        except AssertionError as exc:
            if str(exc).startswith("CUDA error"):    # the card's context is lost: stop here
                r = random.Random(f"{seed}:{k}")
                source = gen_program(lambda lo, hi: r.randint(lo, hi), *switches)[0]
                print(f"--- program {k}: {exc}\n{source}", flush=True)
                errors += 1
                n = k + 1
                break
            mismatches += 1
            print(f"--- program {k}: {exc}" if mismatches <= 3 else f"--- program {k}: mismatch",
                  flush=True)
        except Exception:
            errors += 1
            print(f"--- program {k}: internal error", flush=True)
            if errors <= 3:
                traceback.print_exc()
        if (k + 1) % 250 == 0 and k + 1 < n:     # progress, for runs cut short by a time limit
            print(f"... {k + 1} programs, {mismatches} mismatches, {errors} internal errors, "
                  f"{time.time() - start:.0f} s", flush=True)
    print(f"{n} programs, {mismatches} mismatches, {errors} internal errors, seed {seed}"
          f"{''.join(' ' + flag for flag in flags)}, "
          f"{time.time() - start:.0f} s")


if __name__ == "__main__":
    main(sys.argv)
