"""Lowering of `typed.Intrinsic` calls for the SSA builder: special registers, math, atomics, warps.

Each lowering takes the builder `b` (ssa_builder._Builder) and the intrinsic node and returns the
result value (None for `syncthreads`, `syncwarp` and the fences).

Math (docs/math.md): `sqrt` and `/` are IEEE (correctly rounded) operations; `exp exp2 log log2
log10 sin cos tan tanh erf pow` inline the accurate library function of their type from
`ptxpy/libm.py` (`exp_f32`, `exp_f64`, ...; see `mathlib.py`). Under `fast_math` the f32 ones
that PTX can approximate use the hardware approximations instead, as the `fast_*` functions always
do. f16/bf16 math is computed in f32 and rounded back.
"""
from __future__ import annotations

import math
import types

from ptxpy.types import Scalar, bf16, bool_, f16, f32, f64, i32, i64, u16, u32, u64

from . import ir, mathlib, typed
from .errors import CompileError
from .backend.target import sm_number

LOG2E = 1.4426950408889634
LN2 = 0.6931471805599453
LOG10_2 = 0.3010299956639812

SREG_BASES = {"thread_idx": "tid", "block_idx": "ctaid", "block_dim": "ntid", "grid_dim": "nctaid",
              "cluster_idx": "clusterid", "cluster_dim": "cluster_nctaid",
              "cluster_block_idx": "cluster_ctaid"}
#: math functions computed by the accurate library (ptxpy/libm.py: NAME_f32, NAME_f64)
LIBRARY_MATH = ("exp", "exp2", "log", "log2", "log10", "sin", "cos", "tan", "tanh", "erf", "pow", "fmod",
                "atan", "asin", "acos", "atan2", "sinh", "cosh", "asinh", "acosh", "atanh", "expm1",
                "log1p", "hypot", "cbrt", "erfc")
#: the `fast_*` functions: the accurate function they approximate (used for f64 arguments)
FAST_FUNCTIONS = {"fast_exp": "exp", "fast_log": "log", "fast_sin": "sin", "fast_cos": "cos"}
ATOMIC_OPS = ("add", "sub", "min", "max", "and", "or", "xor", "exch", "cas", "inc", "dec")
#: the attrs that order an atomic where it is PTX's default, relaxed at gpu scope: none
NO_ORDER = types.MappingProxyType({})


def lower_intrinsic(b, e):
    name = e.name
    base, _, axis = name.partition(".")
    if base in SREG_BASES and axis in ("x", "y", "z"):
        if base.startswith("cluster"):
            _needs_sm90(b, e, "thread-block clusters")
        return sreg(b, f"{SREG_BASES[base]}.{axis}")
    if name.startswith("atomic_"):
        return atomic(b, e, name[len("atomic_"):])
    handler = HANDLERS.get(name)
    if handler is None:
        raise CompileError(f"unsupported intrinsic '{name}'", e.loc)
    return handler(b, e)


# --- threads ---------------------------------------------------------------------------------
def sreg(b, name: str):
    return b.emit("sreg", i32, attrs={"name": name})


def _axis(b, e) -> str:
    value = e.args[0] if e.args else e.extra.get("axis", 0)
    value = getattr(value, "value", value)
    if value not in (0, 1, 2):
        raise CompileError("the axis must be the constant 0, 1 or 2", e.loc)
    return "xyz"[value]


def _cdiv(b, e):
    """`ptxpy.cdiv(a, d)` as the host computes it, -(-a // d), for every sign and value: the
    floor quotient, plus one when a remainder is left. (`(a + d - 1) // d` overflows near
    the end of the type: `cdiv(u8(250), 10)` would be 0.)"""
    return ceil_division(b, e.type, *_args(b, e))


def ceil_division(b, ty, a, d):
    """-(-a // d) in type `ty`, on values already of that type."""
    quotient = b.binary("floordiv", ty, a, d)
    rest = b.binary("mod", ty, a, d)
    inexact = b.emit("cmp", bool_, [rest, ir.Const(ty, 0)], {"pred": "ne"})
    return b.emit("select", ty, [inexact, b.op("add", quotient, ir.Const(ty, 1)), quotient])


def _global_id(b, e):
    axis = _axis(b, e)
    block = b.op("mul", sreg(b, f"ctaid.{axis}"), sreg(b, f"ntid.{axis}"))
    return b.op("add", block, sreg(b, f"tid.{axis}"))


def _warp_id(b, e):
    return b.op("shr", _linear_thread(b), ir.Const(i32, 5))


def _linear_thread(b):
    """The thread's linear index in its block: warps are formed from it, as in CUDA."""
    z = b.op("mul", sreg(b, "tid.z"), sreg(b, "ntid.y"))
    yz = b.op("mul", b.op("add", z, sreg(b, "tid.y")), sreg(b, "ntid.x"))
    return b.op("add", yz, sreg(b, "tid.x"))


def _syncthreads(b, e):
    b.emit("barrier", None)
    return None


def _cluster_sreg(b, e, name: str):
    _needs_sm90(b, e, "thread-block clusters")
    return sreg(b, name)


def _cluster_barrier(b, e, *phases: str):
    """`cluster_sync()` (arrive, then wait), `cluster_arrive()`, `cluster_wait()`: the
    thread-block cluster's barrier (CUDA's `cluster.sync()`, `barrier_arrive()`,
    `barrier_wait()`), with release and acquire semantics at cluster scope."""
    _needs_sm90(b, e, "thread-block clusters")
    for phase in phases:
        b.emit("cluster_barrier", None, attrs={"phase": phase})
    return None


def _block_vote(reduce: str):
    """`syncthreads_count(p)`, `syncthreads_and(p)`, `syncthreads_or(p)`: the barrier with the
    block's threads' predicates counted or combined (PTX `bar.red`; CUDA's
    `__syncthreads_count` ...): a `barrier` op with an argument, to every pass a barrier."""
    def lower(b, e):
        (p,) = _args(b, e)
        return b.emit("barrier", i32 if reduce == "popc" else bool_, [b.as_bool(p)],
                      {"reduce": reduce})
    return lower


def _fence(scope: str):
    """`threadfence()` (scope `gpu`), `threadfence_block()` (`cta`), `threadfence_system()`
    (`sys`): `membar.gl`, `membar.cta`, `membar.sys`, as CUDA's `__threadfence*` compile. An
    effect op: no pass moves, merges or removes it, and loads and stores stay on their side
    (no pass moves a load or a store past an instruction with effects; `cse` shares only the
    `nc` loads of arrays the kernel never writes)."""
    def lower(b, e):
        b.emit("fence", None, [], {"scope": scope})
        return None
    return lower


def _syncwarp(b, e):
    """`syncwarp()`: `bar.warp.sync` of the lanes present (see `_shfl`), the full mask where
    the launch's blocks are whole warps."""
    members = [] if b.func.options.get("whole_warps") else [_present_lanes(b)[1]]
    b.emit("warpsync", None, members)
    return None


# --- bits ------------------------------------------------------------------------------------
def _bits(op: str):
    """`popc`, `clz` (i32 results) and `brev` (the argument's type) of a 32- or 64-bit integer."""
    def lower(b, e):
        (x,) = _args(b, e)
        return b.emit(op, x.type if op == "brev" else i32, [x])
    return lower


def _ffs(b, e):
    """`ffs(x)`: the place of the lowest set bit, from 1, or 0 for zero, as CUDA's `__ffs`
    compiles: `brev`, then `bfind.shiftamt` (the highest set bit's distance from the top, so
    the lowest's from the bottom; 0xffffffff for zero), plus one."""
    (x,) = _args(b, e)
    reversed_bits = b.emit("brev", x.type, [x])
    trailing = b.emit("bfind", i32, [reversed_bits], {"shiftamt": True})
    return b.op("add", trailing, ir.Const(i32, 1))


# --- math ------------------------------------------------------------------------------------
def _args(b, e) -> list:
    return [b.ev(a) for a in e.args]


def _math(fn):
    """Wrap a lowering of f32/f64 math so f16/bf16 arguments are computed in f32."""
    def lower(b, e):
        args = _args(b, e)
        ty = e.type if isinstance(e.type, Scalar) and e.type.is_float else args[0].type
        if not ty.is_float:
            args = [b.coerce(a, f32) for a in args]
            return fn(b, e, args)
        if ty in (f16, bf16):
            result = fn(b, e, [b.coerce(a, f32) for a in args])
            return result if result.type == bool_ else b.coerce(result, ty)
        return fn(b, e, [b.coerce(a, ty) for a in args])
    return lower


def _c(x, value: float):
    return ir.Const(x.type, float(value))


def _approx(b, op, x):
    return b.op(op, x, approx=True)


def _approximations(b, x) -> bool:
    """Whether `fast_math` puts the hardware approximations in place of the library here."""
    return b.fast_math and x.type == f32


# hardware approximations (f32 only): docs/math.md gives the error bounds PTX documents
def _fast_exp(b, x):
    return _approx(b, "ex2", b.op("mul", x, _c(x, LOG2E)))


def _fast_log(b, x):
    return b.op("mul", _approx(b, "lg2", x), _c(x, LN2))


FAST_MATH = {
    "exp": lambda b, a: _fast_exp(b, a[0]),
    "exp2": lambda b, a: _approx(b, "ex2", a[0]),
    "log": lambda b, a: _fast_log(b, a[0]),
    "log2": lambda b, a: _approx(b, "lg2", a[0]),
    "log10": lambda b, a: b.op("mul", _approx(b, "lg2", a[0]), _c(a[0], LOG10_2)),
    "sin": lambda b, a: _approx(b, "sin", a[0]),
    "cos": lambda b, a: _approx(b, "cos", a[0]),
    "tan": lambda b, a: b.op("div", _approx(b, "sin", a[0]), _approx(b, "cos", a[0]), approx=True),
    "tanh": lambda b, a: _approx(b, "tanh", a[0]),
    "pow": lambda b, a: _approx(b, "ex2", b.op("mul", a[1], _approx(b, "lg2", a[0]))),
}


def _library_math(name: str):
    """`math.NAME`: the library's NAME_f32 / NAME_f64, or under fast_math the approximation."""
    def lower(b, e, args):
        if _approximations(b, args[0]) and name in FAST_MATH:
            return FAST_MATH[name](b, args)
        return call_library(b, f"{name}_{args[0].type}", args)
    return lower


def _fast(name: str):
    """`ptxpy.fast_NAME`: the approximation on f32; f64 has none, so it gets the accurate one."""
    def lower(b, e, args):
        if args[0].type == f32:
            return FAST_MATH[name](b, args)
        return call_library(b, f"{name}_{args[0].type}", args)
    return lower


def _computed_in(t: Scalar) -> Scalar:
    """The type the math library computes a float type in: f16 and bf16 in f32."""
    return f32 if t in (f16, bf16) else t


def _ldexp(b, e):
    """`math.ldexp(x, n)`; f16 and bf16 through f32, exact until the one rounding back."""
    x, n = _args(b, e)
    wide = _computed_in(x.type)
    result = call_library(b, f"ldexp_{wide}", [b.coerce(x, wide), b.coerce(n, i32)])
    return b.coerce(result, x.type)


def _frexp(part: str):
    """`math.frexp(x)`'s mantissa or exponent; f16 and bf16 through f32 (exactly)."""
    def lower(b, e):
        (x,) = _args(b, e)
        wide = _computed_in(x.type)
        result = call_library(b, f"frexp_{part}_{wide}", [b.coerce(x, wide)])
        return b.coerce(result, x.type) if part == "mantissa" else result
    return lower


def call_library(b, name: str, args: list):
    """Inline the math library's device function `name` with argument values `args`.

    The library's own calls resolve among its functions, and its code is compiled as written:
    exact division and no bounds checks whatever the kernel's fast_math and debug options.
    """
    fdef, funcs = mathlib.library_function(name)
    call_args = []
    for k, (param, value) in enumerate(zip(fdef.params, args)):
        var = f"$libm_{name}_{k}"
        b.write(b.var_key(var, param.type), b.coerce(value, param.type))
        call_args.append(typed.Var(None, param.type, var))
    for func in funcs.values():
        b.in_memory.update(d for d in func.arrays if d.space == "local")   # tables: indexed at run time
    saved = b.module, b.debug, b.fast_math
    b.module = types.SimpleNamespace(funcs=funcs, kernel=saved[0].kernel, filename=saved[0].filename,
                                     source_lines=saved[0].source_lines)
    b.debug = b.fast_math = False
    try:
        return b.x_Call(typed.Call(b.loc, fdef.return_type, name, call_args))
    finally:
        b.module, b.debug, b.fast_math = saved


def _sqrt(b, x):
    if b.fast_math and x.type == f32:
        return _approx(b, "sqrt", x)
    return b.op("sqrt", x)


def _rsqrt(b, x):
    if x.type == f32:
        return _approx(b, "rsqrt", x)
    return b.divide(_c(x, 1.0), b.op("sqrt", x))


def _isfinite(b, x):
    bad = b.op("or", b.emit("isnan", bool_, [x]), b.emit("isinf", bool_, [x]))
    return b.op("not", bad)


def _abs(b, e):
    (x,) = _args(b, e)
    if x.type.is_float and x.type in (f16, bf16):   # the sign bit cleared: a NaN keeps its bits
        bits = b.op("and", b.emit("bitcast", u16, [x]), ir.Const(u16, 0x7FFF))
        return b.emit("bitcast", x.type, [bits])
    return b.op("abs", b.coerce(x, e.type) if isinstance(e.type, Scalar) else x)


def _fma(b, e):
    """`ptxpy.fma(a, b, c)`, rounded once in its type: f16 and bf16 by their own `fma.rn`
    (through f32 it would round twice: the f32 result, then to the half type)."""
    return b.op("fma", *[b.coerce(a, e.type) for a in _args(b, e)])


def _bitcast(b, e):
    (x,) = _args(b, e)
    return b.emit("bitcast", e.type, [x])


MATH = {
    "sqrt": lambda b, e, a: _sqrt(b, a[0]),
    "rsqrt": lambda b, e, a: _rsqrt(b, a[0]),
    "floor": lambda b, e, a: b.op("floor", a[0]),
    "ceil": lambda b, e, a: b.op("ceil", a[0]),
    "trunc": lambda b, e, a: b.op("trunc", a[0]),
    "round": lambda b, e, a: b.op("round", a[0]),
    "fabs": lambda b, e, a: b.op("abs", a[0]),
    "copysign": lambda b, e, a: b.op("copysign", a[0], a[1]),
    "isnan": lambda b, e, a: b.emit("isnan", bool_, [a[0]]),
    "isinf": lambda b, e, a: b.emit("isinf", bool_, [a[0]]),
    "isfinite": lambda b, e, a: _isfinite(b, a[0]),
    "_rint": lambda b, e, a: b.op("round", a[0]),
    **{name: _library_math(name) for name in LIBRARY_MATH},
    **{fast: _fast(name) for fast, name in FAST_FUNCTIONS.items()},
}


# --- atomics ---------------------------------------------------------------------------------
def atomic(b, e, op: str):
    """`ptxpy.atomic_OP(a, idx, v[, sem=, scope=])`: one `atom` where PTX has the instruction
    (its attrs `sem` and `scope` only where they are not PTX's default, relaxed at gpu scope, so
    the default atomics are what they always were); the others, several instructions (a
    compare-and-swap loop, `_float_min_max`), are relaxed atomics at the scope between fences
    (`_fenced`)."""
    if op not in ATOMIC_OPS:
        raise CompileError(f"unsupported atomic 'atomic_{op}'", e.loc)
    sem, scope = e.extra.get("sem", "relaxed"), e.extra.get("scope", "gpu")
    _check_scope(b, e, scope)
    array = b.array(e.extra.get("array"))
    indices = [b.ev(i) for i in e.extra.get("indices", [])]
    values = [b.coerce(b.ev(a), array.elem) for a in e.args]
    if len(values) != (2 if op == "cas" else 1):
        count = 3 if op == "cas" else 2
        raise CompileError(f"atomic_{op} takes {count} arguments after the array", e.loc)
    if array.space in ("reg", "local"):
        return _thread_private_atomic(b, array, indices, op, values)
    if op == "sub":
        op, values = "add", [b.op("neg", values[0])]
    addr = b.element_address(array, indices)
    if _float_min_max_on_bits(op, array):
        return _fenced(b, sem, scope, lambda order: _float_min_max(b, addr, op, values[0],
                                                                   array.space, **order))
    if not _native_atomic(op, array.elem, b.func.arch) or _spun_by_ptxas(op, array):
        return _fenced(b, sem, scope, lambda order: _cas_loop_atomic(b, array, addr, op, values,
                                                                     **order))
    order = {} if (sem, scope) == ("relaxed", "gpu") else {"sem": sem, "scope": scope}
    return b.emit("atom", array.elem, [addr, *values], {"op": op, "space": array.space, **order})


def _check_scope(b, e, scope: str) -> None:
    """The cluster's scope is sm_90's (thread-block clusters)."""
    if scope == "cluster":
        _needs_sm90(b, e, 'scope="cluster": thread-block clusters')


def _fenced(b, sem: str, scope: str, sequence):
    """An atomic of several instructions with order `sem` at `scope`: `sequence(keywords)`
    emits it, `keywords` giving its atomics their attrs as `order=` (relaxed at `scope`; none
    at gpu scope, where relaxed is PTX's default, so the default atomics' sequences are called
    as they always were: tests and probes replace parts of them). `fence.acq_rel.<scope>`
    precedes it for a release (release, acq_rel) and follows it for an acquire (acquire,
    acq_rel): the PTX memory model's release pattern (a fence, then a strong write: the swap
    that succeeds) and acquire pattern (a strong read: the atomic whose old value is returned,
    then a fence). The sequence's other accesses (the loop's first plain load, swaps that fail)
    only find the value to swap. Returns the atomic's result."""
    if sem in ("release", "acq_rel"):
        b.emit("fence", None, [], {"sem": "acq_rel", "scope": scope})
    result = sequence({} if scope == "gpu" else {"order": {"sem": "relaxed", "scope": scope}})
    if sem in ("acquire", "acq_rel"):
        b.emit("fence", None, [], {"sem": "acq_rel", "scope": scope})
    return result


def _ordered_access(b, e):
    """`ptxpy.load_acquire`, `load_relaxed`, `store_release`, `store_relaxed`: one
    `ordered_load` / `ordered_store` (attrs sem, scope, space) of the element: effect ops, which
    no pass caches, merges, moves or removes. In global or shared memory (a view of another
    block's too); a local array is an error, as no other thread sees it. Evaluated in Python's
    order: the indices, then the value."""
    scope = e.extra["scope"]
    _check_scope(b, e, scope)
    array = b.array(e.extra["array"])
    if array.space in ("reg", "local"):
        raise CompileError(f"ptxpy.{e.name} needs a global or shared array (memory that other "
                           f"threads see); '{array.name}' is a local array", e.loc)
    indices = [b.ev(i) for i in e.extra["indices"]]
    attrs = {"sem": e.extra["sem"], "scope": scope, "space": array.space}
    if e.args:
        value = b.coerce(b.ev(e.args[0]), array.elem)
        b.emit("ordered_store", None, [b.element_address(array, indices), value], attrs)
        return None
    return b.emit("ordered_load", array.elem, [b.element_address(array, indices)], attrs)


def _native_atomic(op: str, ty: Scalar, arch: str) -> bool:
    """Whether PTX has `atom.op` for `ty` on `arch` (else a compare-and-swap loop does it)."""
    if ty.bits == 16:
        return op == "add" and (ty == f16 or sm_number(arch) >= 90)
    if ty.is_float:
        return op in ("add", "exch", "cas")
    return True


def _spun_by_ptxas(op: str, array) -> bool:
    """An atomic on shared memory that ptxas makes a compare-and-swap loop of its own
    (`red_probe.py --spin`: 64-bit add, and, or, xor, min, max; f32 and f64 add, `ATOMS.CAST.
    SPIN`; f16 and bf16 add, `ATOMS.CAS` on the word). Its loop does not reconverge before
    what follows, and a loop around it went wrong: an `atomic_add` looped a run-time number
    of times added too little, an `atomic_or` read shared memory at a misaligned address.
    The same loop written in PTX it compiles right (session 22, red_probe.py, H100)."""
    if array.space != "shared":
        return False
    elem = array.elem
    return (elem.bits == 64 and op not in ("cas", "exch")) or (elem.is_float and op == "add")


def _float_min_max_on_bits(op: str, array) -> bool:
    """A float `atomic_min`/`atomic_max` that integer atomics on its bits can do without a loop:
    f32 in global or shared memory, f64 in global memory (64-bit min/max on shared memory is
    itself a loop, `_spun_by_ptxas`)."""
    elem = array.elem
    return (op in ("min", "max") and elem in (f32, f64)
            and (elem.bits == 32 or array.space != "shared"))


#: per width: the signed and unsigned integer types, and the bits of +inf and -inf
_FLOAT_BITS = {32: (i32, u32, 0x7F800000, 0xFF800000),
               64: (i64, u64, 0x7FF0000000000000, 0xFFF0000000000000)}


def _float_min_max(b, addr, op: str, value, space: str, order=NO_ORDER):
    """`atomic_max(a, i, v)` of a float as one integer atomic on the element's bits, as Triton
    does: a v >= +0.0 orders as a signed integer (`atom.max.s32`, a negative element stays
    below it), a negative v as an unsigned one the other way round (`atom.min.u32`, a
    positive element stays above it); `atomic_min` likewise with min and max exchanged. A NaN
    v changes nothing (it takes the operation's identity), and -0.0 counts below 0.0: both as
    `max.f32` does. No loop: a compare-and-swap loop `YIELD`s, and ptxas 13.0 then let lanes
    that skipped a divergent `if` around it overwrite uniform registers the loop's lanes
    still read (program 767's class, docs/ptx-dialect.md).

    One element the integer order gets wrong: a NaN with the sign that sorts it beyond every
    number (+NaN for max, -NaN for min) stays. When the old value is such a NaN and v is not,
    one `atom.cas` swaps v in; if the element changed meanwhile, the integer atomic runs once
    more on what is there. `order`: the attrs (sem, scope) of each atomic."""
    signed, unsigned = _FLOAT_BITS[value.type.bits][:2]
    bits = b.emit("bitcast", signed, [value])
    nan = b.emit("isnan", bool_, [value])
    old = _min_max_on_bits(b, addr, op, bits, nan, space, order)
    stuck = b.op("and", _stuck_nan(b, op, old), b.op("not", nan))

    def replace_the_nan():
        seen = b.emit("bitcast", signed, [b.emit("atom", unsigned, [
            addr, b.emit("bitcast", unsigned, [old]), b.emit("bitcast", unsigned, [bits])],
            {"op": "cas", "space": space, **order})])
        swapped = b.emit("cmp", bool_, [seen, old], {"pred": "eq"})
        def again():
            return _min_max_on_bits(b, addr, op, bits, nan, space, order)
        return _diamond(b, swapped, lambda: old, again, signed, "nanswap")
    result = _diamond(b, stuck, replace_the_nan, lambda: old, signed, "nanfix")
    return b.emit("bitcast", value.type, [result])


def _stuck_nan(b, op: str, bits):
    """Whether the float whose (signed) bits are `bits` is the NaN that `_min_max_on_bits`
    cannot replace: +NaN for max, -NaN for min."""
    signed, unsigned, plus_inf, minus_inf = _FLOAT_BITS[bits.type.bits]
    if op == "max":
        return b.emit("cmp", bool_, [bits, ir.Const(signed, plus_inf)], {"pred": "gt"})
    return b.emit("cmp", bool_, [b.emit("bitcast", unsigned, [bits]),
                                 ir.Const(unsigned, minus_inf)], {"pred": "gt"})


def _min_max_on_bits(b, addr, op: str, bits, nan, space: str, order=NO_ORDER):
    """The integer atomic of `_float_min_max` for the float whose bits (signed) are `bits`;
    returns the element's old bits, signed."""
    signed = bits.type
    unsigned = {32: u32, 64: u64}[signed.bits]
    negative = b.emit("cmp", bool_, [bits, ir.Const(signed, 0)], {"pred": "lt"})
    other = "min" if op == "max" else "max"
    signed_identity = -(1 << (signed.bits - 1)) if op == "max" else (1 << (signed.bits - 1)) - 1
    unsigned_identity = (1 << signed.bits) - 1 if other == "min" else 0

    def as_signed():
        operand = b.emit("select", signed, [nan, ir.Const(signed, signed_identity), bits])
        return b.emit("atom", signed, [addr, operand], {"op": op, "space": space, **order})

    def as_unsigned():
        operand = b.emit("select", unsigned, [nan, ir.Const(unsigned, unsigned_identity),
                                              b.emit("bitcast", unsigned, [bits])])
        return b.emit("bitcast", signed, [b.emit("atom", unsigned, [addr, operand],
                                                 {"op": other, "space": space, **order})])
    return _diamond(b, negative, as_unsigned, as_signed, signed, "fatom")


def _diamond(b, cond, then, orelse, ty: Scalar, hint: str):
    """`then()` where `cond` holds, else `orelse()`, each in a block of its own; their value."""
    result = b.hidden(ty)
    yes, no, join = b.new_block(hint), b.new_block(hint + "else"), b.new_block(hint + "done")
    b.cbr(cond, yes, no)
    for block, arm in ((yes, then), (no, orelse)):
        b.seal(block)
        b.start(block)
        b.write(result, arm())
        b.br(join)
    b.seal(join)
    b.start(join)
    return b.read(result)


def _cas_loop_atomic(b, array, addr, op: str, values: list, order=NO_ORDER):
    """old = a[i]; repeat: new = op(old, v); swap in new if a[i] still holds old (by bits).
    `order`: the attrs (sem, scope) of the compare-and-swap."""
    ty, space = array.elem, array.space
    if ty.bits == 16 and _halves_spun_by_ptxas(space):
        return _cas_loop_in_word(b, array, addr, op, values, order)
    bits_type = {16: u16, 32: u32, 64: u64}[ty.bits]

    def attempt(old):
        new = _combine(b, op, old, values)
        old_bits = b.emit("bitcast", bits_type, [old])
        seen = b.emit("atom", bits_type, [addr, old_bits, b.emit("bitcast", bits_type, [new])],
                      {"op": "cas", "space": space, **order})
        return seen, old_bits, old
    return _swap_loop(b, b.emit("load", ty, [addr], {"space": space}), attempt,
                      lambda seen: b.emit("bitcast", ty, [seen]))


def _halves_spun_by_ptxas(space: str) -> bool:
    """A 16-bit compare-and-swap on shared memory, which ptxas makes a loop of its own on the
    32-bit word (`ATOMS.CAS`, red_probe.py --spin), as it does the 64-bit atomics that went
    wrong (`_spun_by_ptxas`); ptxpy writes that loop in PTX. Not shown to matter on the card:
    program 748 of seed 3306 failed with it and without it, from the loop's divergent exit
    (`_swap_loop`)."""
    return space == "shared"


def _cas_loop_in_word(b, array, addr, op: str, values: list, order=NO_ORDER):
    """The compare-and-swap loop on the aligned 32-bit word holding the 16-bit element: swap
    in the word with the element's half replaced, if the word is unchanged."""
    ty, space = array.elem, array.space
    word = b.op("and", addr, ir.Const(addr.type, -4))
    shift = b.coerce(b.op("shl", b.op("and", addr, ir.Const(addr.type, 2)), ir.Const(addr.type, 3)), u32)
    others = b.op("not", b.op("shl", ir.Const(u32, 0xFFFF), shift))

    def attempt(old_word):
        old = b.emit("bitcast", ty, [b.coerce(b.op("shr", old_word, shift), u16)])
        new_half = b.coerce(b.emit("bitcast", u16, [_combine(b, op, old, values)]), u32)
        new_word = b.op("or", b.op("and", old_word, others), b.op("shl", new_half, shift))
        seen = b.emit("atom", u32, [word, old_word, new_word], {"op": "cas", "space": space,
                                                                **order})
        return seen, old_word, old
    return _swap_loop(b, b.emit("load", u32, [word], {"space": space}), attempt, lambda seen: seen)


def _swap_loop(b, loaded, attempt, again):
    """The loop of a compare-and-swap from the `loaded` value: `attempt(current)` emits one
    try and returns (the bits the swap found, the bits it expected, the atomic's result); a
    failed try retries with `again(found bits)` as the current value. Returns the result.

    The lanes that enter the loop leave it together: each pass, the lanes still to swap try
    once, and a vote over the entering lanes (`activemask`) decides whether to go round
    again. A loop that each lane leaves when its own swap succeeds went wrong on the H100:
    ptxas kept the address in a uniform register (one per warp), code after the loop set
    that register to another value while lanes were still in the loop, and they swapped at
    address 4 (program 748 of seed 3306: cuda-gdb, program748_probe.py)."""
    members = b.emit("activemask", u32, [])
    current, done = b.hidden(loaded.type), b.hidden(bool_)
    b.write(current, loaded)
    b.write(done, ir.Const(bool_, False))
    entry = b.block
    header, trying, tried, finished = (b.new_block(hint) for hint in
                                       ("cas", "castry", "castried", "casdone"))
    b.br(header)
    b.start(header)
    b.cbr(b.read(done), tried, trying)
    b.seal(trying)
    b.start(trying)
    seen, expected, result = attempt(b.read(current))
    old = b.hidden(result.type)
    b.write(old, ir.Const(result.type, 0), block=entry)   # read only once swapped
    b.write(old, result)
    b.write(done, b.emit("cmp", bool_, [seen, expected], {"pred": "eq"}))
    b.write(current, again(seen))
    b.br(tried)
    b.seal(tried)
    b.start(tried)
    pending = b.op("not", b.read(done))
    b.cbr(b.emit("vote", bool_, [pending, members], {"mode": "any"}), header, finished)
    b.seal(header)
    b.seal(finished)
    b.start(finished)
    return b.read(old)


def _combine(b, op: str, old, values: list):
    v = values[-1]
    if op == "exch":
        return v
    if op == "cas":
        bits_type = {16: u16, 32: u32, 64: u64}[old.type.bits]
        same = b.emit("cmp", bool_, [b.emit("bitcast", bits_type, [old]),
                                     b.emit("bitcast", bits_type, [values[0]])], {"pred": "eq"})
        return b.emit("select", old.type, [same, v, old])
    if old.type in (f16, bf16):
        return b.coerce(b.op(op, b.coerce(old, f32), b.coerce(v, f32)), old.type)
    return b.op(op, old, v)


def _thread_private_atomic(b, array, indices, op: str, values: list):
    """An atomic on per-thread memory is an ordinary read-modify-write; `cas` compares bits,
    as `atom.cas` does in global and shared memory (0.0 is not -0.0; a NaN can match)."""
    old = b.load_elem(array, indices)
    if op in ("inc", "dec"):
        raise CompileError(f"atomic_{op} needs global or shared memory", b.loc)
    new = _combine(b, op, old, values) if op in ("cas", "exch") else b.op(op, old, values[-1])
    b.store_elem(array, indices, new)
    return old


# --- warp ------------------------------------------------------------------------------------
def shuffle(b, mode: str, value, lane, members=None, last=None, width: int = 32):
    """`shfl.sync` of any scalar: 32-bit pieces, the value's own when the source is out of range.
    `members`: the lanes taking part (a `u32` mask value), else the whole warp; `last`: the
    `c` operand of idx/down/bfly as an `i32` value (the highest lane they may read, and the
    segment bits of `width`), else the constant one for `width` (segments of `width` lanes,
    CUDA's `width`: `c = (32 - width) << 8 | clamp`)."""
    lane = b.coerce_bits(lane, i32)
    ty = value.type
    if ty.bits == 32:
        extra = [] if members is None else [members]
        if last is not None and mode != "up":
            return b.emit("shfl", ty, [value, lane, members, last], {"mode": mode})
        clamp = (32 - width) << 8 | (0 if mode == "up" else 31)
        return b.emit("shfl", ty, [value, lane, *extra], {"mode": mode, "clamp": clamp})
    again = lambda piece: shuffle(b, mode, piece, lane, members, last, width)
    if ty.is_bool:
        return b.as_bool(again(b.emit("cvt", u32, [value])))
    if ty.bits == 64:
        bits = value if ty == u64 else b.emit("bitcast", u64, [value])
        low = again(b.emit("cvt", u32, [bits]))
        high = again(b.emit("cvt", u32, [b.op("shr", bits, ir.Const(i32, 32))]))
        high = b.op("shl", b.emit("cvt", u64, [high]), ir.Const(i32, 32))
        joined = b.op("or", high, b.emit("cvt", u64, [low]))
        return joined if ty == u64 else b.emit("bitcast", ty, [joined])
    if ty.is_float:
        bits = b.emit("bitcast", u16, [value])
        moved = again(b.emit("cvt", u32, [bits]))
        return b.emit("bitcast", ty, [b.emit("cvt", u16, [moved])])
    wide = i32 if ty.is_signed else u32
    return b.emit("cvt", ty, [again(b.emit("cvt", wide, [value]))])


def _present_lanes(b):
    """The lanes of this thread's warp that exist, lanes 0 to count - 1 (fewer than 32 only in
    the last warp of a block whose size is not a multiple of 32): (count, their `u32` mask)."""
    first = b.op("and", _linear_thread(b), ir.Const(i32, -32))
    count = b.op("min", b.op("sub", _block_threads(b), first), ir.Const(i32, 32))
    members = b.op("sub", b.op("shl", ir.Const(u32, 1), count), ir.Const(u32, 1))  # 1 << 32 is 0
    return count, members


def _block_threads(b):
    return b.op("mul", b.op("mul", sreg(b, "ntid.x"), sreg(b, "ntid.y")), sreg(b, "ntid.z"))


def _shfl(mode: str):
    """Where the launch's blocks may not be whole warps (the compile option `whole_warps`), a
    shuffle names only the lanes present as members, and its clamp is the last of them: a
    source lane that does not exist gives the caller's own value, as past the warp's edge,
    where reading it would be undefined on the GPU."""
    def lower(b, e):
        value, lane = _args(b, e)
        width = e.extra.get("width", 32)
        if isinstance(e.type, Scalar):
            value = b.coerce(value, e.type)
        if b.func.options.get("whole_warps"):
            return shuffle(b, mode, value, lane, width=width)
        count, members = _present_lanes(b)
        last = b.op("sub", count, ir.Const(i32, 1))
        if width < 32 and mode != "up":    # the last lane of this lane's segment that exists
            segment_end = b.op("or", b.op("and", _linear_thread(b), ir.Const(i32, 31)), ir.Const(i32, width - 1))
            last = b.op("or", b.op("min", last, segment_end), ir.Const(i32, (32 - width) << 8))
        return shuffle(b, mode, value, lane, members, last, width)
    return lower


MMA_SHAPES = {"tf32": "m16n8k8", "f16": "m16n8k16", "bf16": "m16n8k16"}


def _mma(kind: str):
    """`ptxpy.mma_sync`: one `mma` (a warp's tensor-core product; its arguments are A's, B's and
    C's elements in order) and the four f32 elements of D taken out of it."""
    def lower(b, e):
        args = _args(b, e)
        if kind == "tf32":     # rounded where CSE and LICM can share and hoist the rounding
            args[:6] = [b.emit("tf32", u32, [v]) for v in args[:6]]
        product = b.emit("mma", f32, args, {"shape": MMA_SHAPES[kind], "ab": kind})
        return [b.emit("extract", f32, [product], {"index": k}) for k in range(4)]
    return lower


def _mma_int8(b, e):
    """`ptxpy.mma_sync` of 8-bit integers: one m16n8k32 `mma` of A's 16 and B's 8 values (ab
    and b: their PTX types, s8 or u8) and C's 4 i32, and the four i32 elements of D."""
    attrs = {"shape": "m16n8k32", "ab": e.extra["a"], "b": e.extra["b"]}
    product = b.emit("mma", i32, _args(b, e), attrs)
    return [b.emit("extract", i32, [product], {"index": k}) for k in range(4)]


def _fp8_conversion(b, e):
    """`ptxpy.to_fp8` / `from_fp8`: PTX's cvt of e4m3x2 / e5m2x2 pairs, sm_89's and later."""
    if sm_number(b.func.arch) < 89:
        raise CompileError(f"ptxpy.{e.name} needs sm_89 or newer (fp8 conversions); the target "
                           f"is {b.func.arch}", e.loc)
    (value,) = _args(b, e)
    return b.emit(e.name, e.type, [value], {"format": e.extra["format"]})


def _cp_async(b, e):
    """`ptxpy.cp_async(dst, src[, pred])`: one `cp_async` of `bytes` from the global address of
    src to the shared address of dst (checked under debug as a vector access is); where `pred`
    is false it reads 0 bytes and fills dst with zeros. Evaluated in Python's order: dst's indices,
    src's, then pred."""
    dst = _async_operand(b, e, e.extra["dst"], "shared", "destination", COPIES)
    src = _async_operand(b, e, e.extra["src"], "global", "source", COPIES)
    pred = b.ev(e.args[0]) if e.args else None
    addresses = [_async_address(b, *dst, None), _async_address(b, *src, pred)]
    size = e.extra["bytes"]
    read = []      # the bytes to read: all, or none where pred is false (one select for CSE)
    if pred is not None:
        read = [b.emit("select", u32, [pred, ir.Const(u32, size), ir.Const(u32, 0)])]
    b.emit("cp_async", None, addresses + read, {"bytes": size, "space": "shared"})


COPIES = "ptxpy.cp_async copies from global to shared memory"
BARRIERS = "an mbarrier lives in shared memory"
BULK_LOADS = "ptxpy.cp_async_bulk with a barrier copies from global to shared memory"
BULK_STORES = "ptxpy.cp_async_bulk without a barrier copies from shared to global memory"


def _barrier_address(b, e, operand):
    """The shared address of an mbarrier operand (checked under debug as an element is)."""
    array, lead, start, _ = _async_operand(b, e, operand, "shared", "barrier", BARRIERS)
    return _async_address(b, array, lead, start, 1, None)


def _mbarrier(b, e):
    """`ptxpy.mbarrier_init` / `mbarrier_arrive` / `mbarrier_arrive_expect_tx`: one
    `mbarrier_init` or `mbarrier_arrive` (with the transaction bytes it expects) on the
    barrier's address; expect_tx is sm_90's."""
    if e.name == "mbarrier_arrive_expect_tx":
        _needs_sm90(b, e, "the transaction count of an mbarrier")
    space = "shared"
    if e.name != "mbarrier_init" and b.array(e.extra["bar"][0]).space == "shared::cluster":
        space = "shared::cluster"       # another block's barrier (ptxpy.map_shared_rank)
        array, lead, start, _ = _async_operand(b, e, e.extra["bar"], space, "barrier", BARRIERS)
        bar = _async_address(b, array, lead, start, 1, None)
    else:
        bar = _barrier_address(b, e, e.extra["bar"])
    args = _args(b, e)
    op = "mbarrier_init" if e.name == "mbarrier_init" else "mbarrier_arrive"
    b.emit(op, None, [bar, *args], {"space": space})


def _mbarrier_wait(b, e):
    """`ptxpy.mbarrier_wait(bar, parity)`: a loop that tests whether the barrier's phase of that
    parity has completed (`try_wait`, which may suspend the thread a while, on sm_90; else
    `test_wait`) until it has."""
    bar = _barrier_address(b, e, e.extra["bar"])
    (parity,) = _args(b, e)
    waiting, done = b.new_block("mbwait"), b.new_block("mbdone")
    b.br(waiting)
    b.start(waiting)
    ready = b.emit("mbarrier_test", bool_, [bar, parity],
                   {"try": sm_number(b.func.arch) >= 90, "space": "shared"})
    b.cbr(ready, done, waiting)
    b.seal(waiting)
    b.seal(done)
    b.start(done)


def _needs_sm90(b, e, what: str) -> None:
    if sm_number(b.func.arch) < 90:
        raise CompileError(f"ptxpy.{e.name} needs sm_90 or newer ({what}); the target is "
                           f"{b.func.arch}", e.loc)


def _cp_async_bulk(b, e):
    """`ptxpy.cp_async_bulk(dst, src[, bar])`: one `cp_async_bulk` of `bytes`, global to shared
    signalling the barrier (attrs space shared), or shared to global (space global). The
    slices are 16-byte aligned (checked under debug)."""
    _needs_sm90(b, e, "bulk copies")
    bar = e.extra["bar"]
    dst_space, src_space, rule = (("shared", "global", BULK_LOADS) if bar is not None
                                  else ("global", "shared", BULK_STORES))
    dst = _async_operand(b, e, e.extra["dst"], dst_space, "destination", rule)
    src = _async_operand(b, e, e.extra["src"], src_space, "source", rule)
    addresses = [_bulk_address(b, *dst), _bulk_address(b, *src)]
    if bar is not None:
        addresses.append(_barrier_address(b, e, bar))
    attrs = {"bytes": e.extra["bytes"], "space": dst_space}
    b.emit("cp_async_bulk", None, addresses + _multicast(b, e, attrs), attrs)


def _fence_mbarrier_init(b, e):
    """`ptxpy.fence_mbarrier_init()`: the block's `mbarrier_init`s are seen by the cluster's
    other blocks (after a `cluster_sync()`) before they arrive there (CUTLASS's
    `fence_barrier_init`)."""
    _needs_sm90(b, e, "thread-block clusters")
    b.emit("fence_mbarrier_init", None)
    return None


def _multicast(b, e, attrs: dict) -> list:
    """A copy's `multicast=mask` (the cluster's blocks it lands in, one bit each): [the u16
    mask], the copy's last argument, and attrs multicast; [] for a copy into this block only."""
    if not e.extra.get("multicast"):
        return []
    attrs["multicast"] = True
    return [b.coerce_bits(b.ev(e.args[0]), u16)]


def _bulk_address(b, array, lead: list, start, width: int):
    """A bulk copy's slice: its first element's address; under debug, the slice checked
    against the array's bounds and its start for 16-byte alignment."""
    return b.span_address(array, lead, start, width, 16, f"misaligned bulk copy of "
                          f"'{array.name}' at byte %lld of it (must be a multiple of 16)")


TENSOR_LOADS = "ptxpy.tma_load copies a box of a global array into shared memory"
TENSOR_STORES = "ptxpy.tma_store copies a tile of shared memory into a box of a global array"
#: the shared address a tensor copy takes is 128-byte aligned (PTX ISA, cp.async.bulk.tensor)
TENSOR_TILE_ALIGN = 128


def _tensor_copy(b, e):
    """`ptxpy.tma_load` / `tma_store`: one `tma_load` (completing on the barrier) or `tma_store`
    (in the bulk group) of the box at the slices' starts, through the array's tensor map."""
    _needs_sm90(b, e, "tensor copies")
    name, starts, box = e.extra["tensor"]
    load = e.name == "tma_load"
    tile = _tile_address(b, e, box, TENSOR_LOADS if load else TENSOR_STORES)
    tensor = b.array(name)      # in a device function, the kernel's array its parameter binds
    ptx_name = b.tensor_map_params.get((tensor.name, (box, e.extra["swizzle"])))
    if ptx_name is None:
        raise CompileError(f"ptxpy.{e.name}: '{name}' is not an array parameter of the kernel",
                           e.loc)
    tmap = b.emit("tensor_map", ir.ADDR_TYPE, attrs={"name": ptx_name})
    coords = [b.coerce(b.ev(start), i32) for start in starts]
    if b.debug:
        _check_row_start(b, name, coords[-1], tensor.elem.nbytes)
        if not load:
            _check_store_start(b, name, coords)
    if load:
        bar = _barrier_address(b, e, e.extra["bar"])
        attrs = {"bytes": e.extra["bytes"], "space": "shared"}
        b.emit("tma_load", None, [tile, tmap, *coords, bar, *_multicast(b, e, attrs)], attrs)
    else:
        b.emit("tma_store", None, [tmap, *coords, tile], {"space": "global"})


def _check_row_start(b, name: str, start, size: int) -> None:
    """Under debug: the box's rows start on a 16-byte boundary of the array (the GPU stops a
    tensor copy whose innermost coordinate times the element size is not a multiple of 16)."""
    if size >= 16:
        return
    misaligned = b.op("and", start, ir.Const(i32, 16 // size - 1))
    aligned = b.emit("cmp", bool_, [misaligned, ir.Const(i32, 0)], {"pred": "eq"})
    b.check(aligned, f"{b.where()}: a box of '{name}' whose rows start at element %d, not on a "
                     f"16-byte boundary (a multiple of {16 // size})\n", [(start, i32)])


def _check_store_start(b, name: str, coords: list) -> None:
    """Under debug: a tensor store's box starts inside the array (the GPU stops one with a
    negative coordinate; a box past the end is clipped)."""
    for axis, start in enumerate(coords):
        inside = b.emit("cmp", bool_, [start, ir.Const(i32, 0)], {"pred": "ge"})
        b.check(inside, f"{b.where()}: ptxpy.tma_store of a box of '{name}' starting at %d on "
                        f"axis {axis} (a store's box starts at 0 or after)\n", [(start, i32)])


def _tile_address(b, e, box: tuple, rule: str):
    """The shared address of a tensor copy's tile: its shape the box's (dimensions of one
    element left out of both), on a 128-byte boundary (a swizzle's pattern with a swizzle)."""
    name, lead, widths = e.extra["tile"]
    array = b.array(name)
    if array.space != "shared":
        where = "in registers" if array.space == "reg" else f"in {array.space} memory"
        raise CompileError(f"{rule}: its tile '{name}' is {where}", e.loc)
    dims = [b.resolve(extent) for extent in array.shape[len(lead):]]
    if not all(isinstance(d, ir.Const) for d in dims):
        raise CompileError(f"{rule}: its tile '{name}' has a constant shape (one sized at launch "
                           "is not supported)", e.loc)
    shape = [int(d.value) for d in dims]
    for width, extent in zip(widths, shape):
        if width is not None and width != extent:
            raise CompileError(f"{rule}: its tile takes the trailing dimensions of '{name}' whole; "
                               f"0:{width} of an extent of {extent} is part of one", e.loc)
    if [n for n in shape if n != 1] != [n for n in box if n != 1]:
        raise CompileError(f"{rule}: the tile {tuple(shape)} and the box {box} differ in shape", e.loc)
    align = max(TENSOR_TILE_ALIGN, 8 * e.extra["swizzle"])
    tile_bytes = math.prod(shape) * array.elem.nbytes
    if lead and tile_bytes % align:
        raise CompileError(f"{rule}: each tile of '{name}' is {tile_bytes} bytes, which puts the "
                           f"next one off the {align}-byte boundary a tensor copy"
                           f"{' with this swizzle' if e.extra['swizzle'] else ''} needs", e.loc)
    _align_shared(b, array, align, e, "a tensor copy")
    indices = [b.ev(i) for i in lead]
    zeros = [ir.Const(i32, 0)] * len(shape)
    if b.debug and indices:
        b.bounds_check(array, indices + zeros)
    return b.element_address(array, indices + zeros, checked=True)


def _cp_async_bulk_commit(b, e):
    _needs_sm90(b, e, "bulk copies")
    b.emit("cp_async_bulk_commit", None)


def _cp_async_bulk_wait(b, e):
    _needs_sm90(b, e, "bulk copies")
    b.emit("cp_async_bulk_wait", None, [], {"n": e.extra["n"], "read": e.extra["read"]})
MATRIX_LOADS = "ptxpy.ldmatrix loads from shared memory"


def _async_operand(b, e, operand, space: str, what: str, rule: str) -> tuple:
    """(array, evaluated leading indices, evaluated start, width) of an operand that must be in
    `space` (`rule` says so in the error)."""
    name, lead, start, width = operand
    array = b.array(name)
    if array.space != space:
        where = "in registers" if array.space == "reg" else f"in {array.space} memory"
        raise CompileError(f"{rule}: its {what} '{name}' is {where}", e.loc)
    return array, [b.ev(i) for i in lead], b.ev(start), width


def _async_address(b, array, lead: list, start, width: int, guard):
    """The address of an element or slice; under debug, checked where `guard` is true."""
    if width > 1:
        return b.vector_address(array, lead, start, width, guard)
    address = b.element_address(array, [*lead, start], checked=True)
    if b.debug:
        b.bounds_check(array, [*lead, start], guard)
    return address


def _ldmatrix(b, e):
    """`ptxpy.ldmatrix`: one `ldmatrix` (a warp's load of `count` matrices from the rows its
    lanes point at) and the lane's elements taken out of it, 16-bit ones two per matrix."""
    array, lead, start, width = _async_operand(b, e, e.extra["row"], "shared", "row", MATRIX_LOADS)
    address = _async_address(b, array, lead, start, width, None)
    count, elem = e.extra["count"], array.elem
    loaded = b.emit("ldmatrix", elem, [address],
                    {"count": count, "trans": e.extra["trans"], "space": "shared"})
    per_matrix = 32 // elem.bits
    return [b.emit("extract", elem, [loaded], {"index": k}) for k in range(count * per_matrix)]


DESCRIPTORS = "ptxpy.wgmma_desc describes a matrix in shared memory"
#: the mode field of a wgmma descriptor (bits 62-63) for each swizzle, in bytes
SWIZZLE_MODES = {0: 0, 128: 1, 64: 2, 32: 3}


def _wgmma_desc(b, e):
    """`ptxpy.wgmma_desc(s[i, j], swizzle, lbo, sbo)`: bits 0-13 the shared address / 16, 16-29
    lbo / 16, 32-45 sbo / 16, 62-63 the swizzle mode (PTX ISA, "Matrix Descriptor Format").
    A swizzle XORs bits of the absolute address: the array is aligned to its pattern (8 rows
    of `swizzle` bytes), so that the rows and chunks the kernel computes are the hardware's."""
    array, lead, start, _ = _async_operand(b, e, e.extra["ref"], "shared", "matrix", DESCRIPTORS)
    swizzle = e.extra["swizzle"]
    if swizzle:
        _align_shared(b, array, 8 * swizzle, e)
    address = b.coerce(_async_address(b, array, lead, start, 1, None), u64)
    field = b.op("shr", b.op("and", address, ir.Const(u64, 0x3FFFF)), ir.Const(i32, 4))
    fixed = ((e.extra["lbo"] >> 4) << 16 | (e.extra["sbo"] >> 4) << 32
             | SWIZZLE_MODES[swizzle] << 62)
    return b.op("or", field, ir.Const(u64, fixed)) if fixed else field


def _align_shared(b, array, align: int, e, what: str = "a swizzled ptxpy.wgmma_desc") -> None:
    """Place shared `array` on an `align`-byte boundary (its declaration, or an error where
    it is sized at launch: those lie on 16-byte boundaries)."""
    base = array.base
    symbol = base.attrs.get("symbol") if base.__class__ is ir.Instr and base.op == "addr_of" else None
    decl = next((d for d in b.func.arrays if d.name == symbol and not d.launch), None)
    if decl is None:
        raise CompileError(f"{what} needs '{array.name}' on a {align}-byte "
                           "boundary, which an array sized at launch is not: give it a constant "
                           "shape", e.loc)
    decl.align = max(decl.align, align)


WGMMA_N = range(8, 257, 8)      # the N of wgmma's m64nNk* shapes
#: of its 8-bit integer shapes (m64nNk32): 8, 16, 24, then multiples of 16
WGMMA_N_8BIT = (8, 16, 24, *range(32, 257, 16))


def _wgmma(b, e):
    """`ptxpy.wgmma(acc, a_desc, b_desc, dtype, ...)`: one `wgmma` reading the accumulators
    (the local array's elements in row-major order), then A's descriptor or its fragment's
    values (attrs a_regs), B's descriptor and scale-d; its results written back to acc."""
    array = b.array(e.extra["acc"])
    if array.space not in ("reg", "local"):
        raise CompileError(f"the accumulators of ptxpy.wgmma are a local array; '{array.name}' "
                           f"is in {array.space} memory", e.loc)
    extents = [d.value for d in array.shape]
    count = math.prod(extents)
    kind = e.extra["ab"]
    if kind in ("s8", "u8"):
        if 2 * count not in WGMMA_N_8BIT:
            raise CompileError(f"ptxpy.wgmma of 8-bit integers takes N / 2 accumulators per "
                               f"thread for a 64 x N tile, N 8, 16, 24 or a multiple of 16 up to "
                               f"256 (4, 8, 12, 16, 24, ..., 128 i32); '{array.name}' has {count}",
                               e.loc)
    elif 2 * count not in WGMMA_N:
        raise CompileError(f"ptxpy.wgmma takes N / 2 accumulators per thread for a 64 x N tile, "
                           f"N a multiple of 8 up to 256 (4, 8, ..., 128 f32); '{array.name}' has "
                           f"{count}", e.loc)
    indices = [list(_row_major_index(k, extents)) for k in range(count)]
    acc = [b.load_elem(array, [ir.Const(i32, i) for i in index]) for index in indices]
    *a, b_desc, scale = (b.ev(arg) for arg in e.args)
    sums = array.elem
    a_regs = e.extra.get("a_regs", False)
    if a_regs and kind == "tf32":       # rounded as mma_sync's tf32 operands are
        a = [b.emit("tf32", u32, [v]) for v in a]
    attrs = {"n": 2 * count, "ab": kind, "trans_a": e.extra["trans_a"],
             "trans_b": e.extra["trans_b"], **({"a_regs": True} if a_regs else {}),
             **({"b": e.extra["b"]} if "b" in e.extra else {})}
    product = b.emit("wgmma", sums, [*acc, *a, b_desc, b.as_bool(scale)], attrs)
    for k, index in enumerate(indices):
        b.store_elem(array, [ir.Const(i32, i) for i in index],
                     b.emit("extract", sums, [product], {"index": k}))


def _row_major_index(flat: int, extents: list) -> tuple:
    """The row-major indices of element `flat` of an array of `extents`."""
    index = []
    for extent in reversed(extents):
        flat, rest = divmod(flat, extent)
        index.append(rest)
    return tuple(reversed(index))


def _hopper(lower):
    """Hopper's own instructions: wgmma is sm_90a's (an `sm_90` target becomes `sm_90a`;
    Blackwell has none), fence.proxy.async sm_90's and later."""
    def checked(b, e):
        sm = sm_number(b.func.arch)
        if sm < 90 or (sm != 90 and e.name != "fence_proxy_async"):
            needs = "sm_90 or newer" if e.name == "fence_proxy_async" else "sm_90 (Hopper: sm_90a)"
            raise CompileError(f"ptxpy.{e.name} needs {needs}; the target is {b.func.arch}", e.loc)
        return lower(b, e)
    return checked


def _set_max_registers(b, e):
    """setmaxnreg: ptxas must know the kernel's registers per thread at its entry, which only
    a register bound of the kernel gives it (without one it drops the instruction)."""
    options = b.func.options
    if not options.get("max_registers") and len(options.get("launch_bounds") or ()) < 2:
        raise CompileError(f"ptxpy.{e.name} needs the kernel's register count at its start: "
                           "give @ptxpy.jit max_registers=N, or launch_bounds=(threads, blocks) "
                           "(`ptxpy transpile --max-registers N` / `--launch-bounds T,B`)", e.loc)
    b.emit("setmaxnreg", None, [], {"n": e.extra["n"], "action": e.name[-3:]})


def _wgmma_wait(b, e):
    b.emit("wgmma_wait", None, [], {"n": e.extra["n"]})


def _cp_async_commit(b, e):
    b.emit("cp_async_commit", None)


def _cp_async_wait(b, e):
    b.emit("cp_async_wait", None, [], {"n": e.extra["n"]} if "n" in e.extra else {})


def _vote(mode: str):
    """A vote takes the lanes present (see `_shfl`)."""
    def lower(b, e):
        (p,) = _args(b, e)
        members = [] if b.func.options.get("whole_warps") else [_present_lanes(b)[1]]
        return b.emit("vote", u32 if mode == "ballot" else bool_, [b.as_bool(p), *members],
                      {"mode": mode})
    return lower


def _elect_one(b, e):
    """`ptxpy.elect_one()`: true in one lane of the warp, the lowest of the lanes present
    (PTX elect.sync; CUTLASS's `elect_one_sync()`), which must all run it together."""
    _needs_sm90(b, e, "elect.sync")
    members = [] if b.func.options.get("whole_warps") else [_present_lanes(b)[1]]
    return b.emit("elect", bool_, members)


def _warp_reduce(op: str):
    """A warp reduces by a butterfly of five shuffles, which needs all 32 lanes: a shuffle from
    a lane that does not exist is undefined on the GPU. Where the block's size is not a
    multiple of 32 its last warp has fewer, so such blocks take only the lanes present
    (`_reduce_present_lanes`). The compile option `whole_warps` (the decorator knows the
    launch's block) leaves only the butterfly where it is True, only that path where False."""
    def lower(b, e):
        (value,) = _args(b, e)
        if isinstance(e.type, Scalar):
            value = b.coerce(value, e.type)
        whole_warps = b.func.options.get("whole_warps")
        if value.type in (i32, u32):
            return _redux(b, op, value, whole_warps)
        if whole_warps is not None:
            return _butterfly(b, op, value) if whole_warps else _reduce_present_lanes(b, op, value)
        threads = _block_threads(b)
        ragged = b.emit("cmp", bool_, [b.op("and", threads, ir.Const(i32, 31)), ir.Const(i32, 0)],
                        {"pred": "ne"})
        result = b.hidden(value.type)
        whole, partial, done = b.new_block("warpfull"), b.new_block("warppart"), b.new_block("warpdone")
        b.cbr(ragged, partial, whole)
        b.seal(whole)
        b.start(whole)
        b.write(result, _butterfly(b, op, value))
        b.br(done)
        b.seal(partial)
        b.start(partial)
        b.write(result, _reduce_present_lanes(b, op, value))
        b.br(done)
        b.seal(done)
        b.start(done)
        return b.read(result)
    return lower


def _warp_cumsum(b, e):
    """`ptxpy.warp_cumsum(v)`: lane k gets v summed over lanes 0 to k of its warp (inclusive;
    CUB's WarpScan::InclusiveSum), by five `shfl.sync.up` of 1, 2, 4, 8 and 16 lanes, each added
    where the source lane is in the warp. An up shuffle reads a lower lane, which exists
    whenever the reading one does, so a warp of fewer lanes needs only their member mask."""
    (value,) = _args(b, e)
    value = b.coerce(value, e.type)
    members = None if b.func.options.get("whole_warps") else _present_lanes(b)[1]
    lane = sreg(b, "laneid")
    for distance in (1, 2, 4, 8, 16):
        below = shuffle(b, "up", value, ir.Const(i32, distance), members)
        inside = b.emit("cmp", bool_, [lane, ir.Const(i32, distance)], {"pred": "ge"})
        value = b.emit("select", value.type, [inside, b.op("add", value, below), value])
    return value


def _redux(b, op: str, value, whole_warps):
    """A 32-bit integer's warp reduction in one `redux.sync` (sm_80), over the lanes present:
    integer sums (wrapping), minima, maxima and bitwise reductions come out the same in any
    order."""
    members = [] if whole_warps else [_present_lanes(b)[1]]
    return b.emit("redux", value.type, [value, *members], {"op": op})


def _match(mode: str):
    """`match_any_sync(v)`: the lanes of the warp whose v has the same bits as this lane's;
    `match_all_sync(v)`: all the lanes present if every one's v has the same bits, else 0
    (PTX `match.{any,all}.sync.b32`/`.b64`, sm_70; CUDA's `__match_any_sync` ...), over the
    lanes present (see `_shfl`)."""
    def lower(b, e):
        (value,) = _args(b, e)
        members = [] if b.func.options.get("whole_warps") else [_present_lanes(b)[1]]
        return b.emit("match", u32, [_bits_of(b, value), *members], {"mode": mode})
    return lower


def _bits_of(b, value):
    """A scalar's bits as a u32 (up to 32 bits, widened) or a u64 (64 bits)."""
    ty = value.type
    if ty.bits == 64:
        return value if ty == u64 else b.emit("bitcast", u64, [value])
    if ty.is_float:
        bits = b.emit("bitcast", u32 if ty.bits == 32 else u16, [value])
        return bits if ty.bits == 32 else b.emit("cvt", u32, [bits])
    return value if ty == u32 else b.emit("cvt", u32, [value])


def _butterfly(b, op: str, value):
    for mask in (16, 8, 4, 2, 1):
        value = b.op(op, value, shuffle(b, "bfly", value, ir.Const(i32, mask)))
    return value


def _reduce_present_lanes(b, op: str, value):
    """op over `value` of the lanes that exist in this thread's warp (`_present_lanes`), the
    same in every lane: a tree of `shfl.down` into lane 0, each step taking only lanes that
    exist, then lane 0's result to all. For a whole warp this combines the values in the
    butterfly's order, so both paths give the same bits."""
    present, members = _present_lanes(b)
    lane = sreg(b, "laneid")
    total = value
    for distance in (16, 8, 4, 2, 1):
        theirs = shuffle(b, "down", total, ir.Const(i32, distance), members)
        there = b.emit("cmp", bool_, [b.op("add", lane, ir.Const(i32, distance)), present], {"pred": "lt"})
        total = b.emit("select", value.type, [there, b.op(op, total, theirs), total])
    return shuffle(b, "idx", total, ir.Const(i32, 0), members)


HANDLERS = {
    "lane_id": lambda b, e: sreg(b, "laneid"),
    "activemask": lambda b, e: b.emit("activemask", u32, []),
    **{name: (lambda b, e, name=name: b.emit("sreg", u32, attrs={"name": name}))
       for name in ir.LANE_MASKS},
    "warp_id": _warp_id,
    "global_id": _global_id,
    "cdiv": _cdiv,
    "program_id": lambda b, e: sreg(b, f"ctaid.{_axis(b, e)}"),
    "num_programs": lambda b, e: sreg(b, f"nctaid.{_axis(b, e)}"),
    "syncthreads": _syncthreads,
    "elect_one": _elect_one,
    "cluster_rank": lambda b, e: _cluster_sreg(b, e, "cluster_ctarank"),
    "cluster_size": lambda b, e: _cluster_sreg(b, e, "cluster_nctarank"),
    "cluster_sync": lambda b, e: _cluster_barrier(b, e, "arrive", "wait"),
    "cluster_arrive": lambda b, e: _cluster_barrier(b, e, "arrive"),
    "cluster_wait": lambda b, e: _cluster_barrier(b, e, "wait"),
    "syncthreads_count": _block_vote("popc"), "syncthreads_and": _block_vote("and"),
    "syncthreads_or": _block_vote("or"),
    "match_any_sync": _match("any"), "match_all_sync": _match("all"),
    "nanosleep": lambda b, e: b.emit("nanosleep", None, _args(b, e)),
    "dp4a": lambda b, e: b.emit("dp4a", e.type, _args(b, e)),
    "abs": _abs,
    "fma": _fma,
    "shfl_sync": _shfl("idx"),
    "shfl_up_sync": _shfl("up"),
    "shfl_down_sync": _shfl("down"),
    "mma_tf32": _mma("tf32"), "mma_f16": _mma("f16"), "mma_bf16": _mma("bf16"),
    "mma_int8": _mma_int8,
    "to_fp8": _fp8_conversion, "from_fp8": _fp8_conversion,
    "cp_async": _cp_async, "cp_async_commit": _cp_async_commit, "cp_async_wait": _cp_async_wait,
    "ldmatrix": _ldmatrix,
    "mbarrier_init": _mbarrier, "mbarrier_arrive": _mbarrier, "mbarrier_arrive_expect_tx": _mbarrier,
    "mbarrier_wait": _mbarrier_wait, "cp_async_bulk": _cp_async_bulk,
    "cp_async_bulk_commit": _cp_async_bulk_commit, "cp_async_bulk_wait": _cp_async_bulk_wait,
    "tma_load": _tensor_copy, "tma_store": _tensor_copy,
    "wgmma": _hopper(_wgmma), "wgmma_desc": _wgmma_desc, "wgmma_wait": _hopper(_wgmma_wait),
    "wgmma_fence": _hopper(lambda b, e: b.emit("wgmma_fence", None)),
    "wgmma_commit": _hopper(lambda b, e: b.emit("wgmma_commit", None)),
    "fence_proxy_async": _hopper(lambda b, e: b.emit("fence_proxy_async", None)),
    "fence_mbarrier_init": _fence_mbarrier_init,
    "setmaxnreg_inc": _hopper(_set_max_registers), "setmaxnreg_dec": _hopper(_set_max_registers),
    "shfl_xor_sync": _shfl("bfly"),
    "ballot_sync": _vote("ballot"),
    "any_sync": _vote("any"),
    "all_sync": _vote("all"),
    "warp_sum": _warp_reduce("add"),
    "warp_cumsum": _warp_cumsum,
    "warp_max": _warp_reduce("max"),
    "warp_min": _warp_reduce("min"),
    "warp_and": _warp_reduce("and"),
    "warp_or": _warp_reduce("or"),
    "warp_xor": _warp_reduce("xor"),
    "bitcast": _bitcast,
    "_mul_hi": lambda b, e: b.op("mul_hi", *_args(b, e)),
    "mulhi": lambda b, e: b.op("mul_hi", *_args(b, e)),
    "popc": _bits("popc"),
    "clz": _bits("clz"),
    "brev": _bits("brev"),
    "ffs": _ffs,
    "load_acquire": _ordered_access, "load_relaxed": _ordered_access,
    "store_release": _ordered_access, "store_relaxed": _ordered_access,
    "threadfence": _fence("gpu"),
    "threadfence_block": _fence("cta"),
    "threadfence_system": _fence("sys"),
    "syncwarp": _syncwarp,
    "ldexp": _ldexp,
    "frexp_mantissa": _frexp("mantissa"),
    "frexp_exponent": _frexp("exponent"),
    **{name: _math(fn) for name, fn in MATH.items()},
}
