"""Typing of calls: casts, builtins, math, ptxpy intrinsics and `@ptxpy.func` calls."""
from __future__ import annotations

import math

import libcst as cst

from ptxpy.types import (ArrayType, ConstType, Scalar, TupleType, bf16, bool_, can_convert_implicitly,
                         f16, f32, f64, i8, i16, i32, i64, u8, u16, u32, u64)

from . import typed
from .ir import ATOMIC_SEMS, LANE_MASKS, MEMORY_SCOPES
from .exprs import (MATH_NAMES, THREAD_NAMES, convert, fits, is_weak, join, literal_value,
                    method_problem, table_load, truthy, unknown_attribute, weak_constant)
from .scope import CONST_FUNCS, NotConstant, code_of, qualname_constant, scalar_named

MATH_UNARY = frozenset("sqrt exp exp2 log log2 log10 sin cos tan tanh erf floor ceil trunc fabs "
                       "atan asin acos sinh cosh asinh acosh atanh expm1 log1p cbrt erfc".split())
MATH_PREDICATES = frozenset("isnan isinf isfinite".split())
MATH_BINARY = frozenset(["copysign", "pow", "fmod", "atan2", "hypot"])
MATH_EXPONENT = frozenset(["ldexp", "frexp"])
FAST_UNARY = frozenset("rsqrt fast_exp fast_log fast_sin fast_cos".split())
ATOMICS = frozenset("atomic_add atomic_sub atomic_min atomic_max atomic_and atomic_or atomic_xor "
                    "atomic_exch atomic_cas".split())
#: memory-ordered loads and stores (PTX ld.acquire, ld.relaxed, st.release, st.relaxed): their
#: order (PTX .sem)
ORDERED_ACCESSES = {"load_acquire": "acquire", "load_relaxed": "relaxed",
                    "store_release": "release", "store_relaxed": "relaxed"}
#: the keywords that give an atomic or an ordered access its order, and their choices
ORDER_CHOICES = {"sem": ATOMIC_SEMS, "scope": MEMORY_SCOPES}
SHUFFLES = frozenset("shfl_sync shfl_up_sync shfl_down_sync shfl_xor_sync".split())
VOTES = {"ballot_sync": u32, "any_sync": bool_, "all_sync": bool_}
#: the block's barrier that also counts or votes on a predicate (PTX bar.red): its result type
BLOCK_VOTES = {"syncthreads_count": i32, "syncthreads_and": bool_, "syncthreads_or": bool_}
#: the lanes of the warp holding the same value (PTX match.sync): a u32 mask
MATCHES = frozenset(["match_any_sync", "match_all_sync"])
#: a value of each lane of the warp, combined: the reductions, and the inclusive prefix sum
WARP_REDUCTIONS = frozenset(["warp_sum", "warp_max", "warp_min", "warp_and", "warp_or", "warp_xor",
                             "warp_cumsum"])
#: the warp reductions of an integer's bits
WARP_BITWISE = frozenset(["warp_and", "warp_or", "warp_xor"])
AXIS_INTRINSICS = frozenset(["program_id", "num_programs", "global_id"])
#: integer bit functions of one argument: popc, clz, ffs give i32, brev the argument's type
BIT_UNARY = frozenset(["popc", "clz", "brev", "ffs"])
#: statements without a value: the memory fences and the warp barrier
NO_VALUE = frozenset(["syncthreads", "syncwarp", "threadfence", "threadfence_block",
                      "threadfence_system", "cluster_sync", "cluster_arrive", "cluster_wait",
                      "fence_mbarrier_init"])
#: asynchronous copies from global to shared memory (PTX cp.async)
ASYNC_COPY = frozenset(["cp_async", "cp_async_commit", "cp_async_wait"])
#: the bytes one cp.async copies
ASYNC_COPY_BYTES = (4, 8, 16)
#: Hopper's warpgroup matrix multiply (PTX wgmma) and the fence between its proxies
WGMMA = frozenset(["wgmma", "wgmma_desc", "wgmma_fence", "wgmma_commit", "wgmma_wait",
                   "fence_proxy_async"])
#: the operand types of `ptxpy.wgmma`: the dtype named -> PTX's type (f32 is read as tf32)
WGMMA_TYPES = {"f16": "f16", "bf16": "bf16", "f32": "tf32", "i8": "s8", "u8": "u8"}
FP8_KINDS = ("e4m3", "e5m2")    # the 8-bit float formats (wgmma's, cvt's), named by a string
#: an f32 to its fp8 byte (u8), and back
FP8_CONVERSIONS = {"to_fp8": (f32, u8), "from_fp8": (u8, f32)}
#: Hopper's split barriers in shared memory (PTX mbarrier) and its bulk copies (cp.async.bulk)
MBARRIER = frozenset(["mbarrier_init", "mbarrier_arrive", "mbarrier_arrive_expect_tx",
                      "mbarrier_wait"])
BULK_COPY = frozenset(["cp_async_bulk", "cp_async_bulk_commit", "cp_async_bulk_wait"])
#: Hopper's tensor copies (TMA: cp.async.bulk.tensor) through a tensor map the launch encodes
TENSOR_COPY = frozenset(["tma_load", "tma_store"])
#: a tensor map's limits (cuTensorMapEncodeTiled): box extents, its rows' byte multiple, ranks
TMA_BOX_LIMIT, TMA_ROW_BYTES, TMA_RANKS = 256, 16, range(1, 6)
#: a warpgroup's register limit raised or lowered (PTX setmaxnreg): the counts it allows
SET_MAX_REGISTERS = frozenset(["setmaxnreg_inc", "setmaxnreg_dec"])
MAX_REGISTER_COUNTS = range(24, 257, 8)
#: what each mbarrier call takes after the barrier (count, bytes, parity: u32 operands)
MBARRIER_OPERANDS = {"mbarrier_init": "count", "mbarrier_arrive": None,
                     "mbarrier_arrive_expect_tx": "bytes", "mbarrier_wait": "parity"}
#: an mbarrier's arrival count and transaction bytes are 20-bit (PTX ISA, "mbarrier")
MBARRIER_LIMIT = (1 << 20) - 1
#: the swizzle modes of a wgmma descriptor, in bytes (0: none)
WGMMA_SWIZZLES = (0, 32, 64, 128)
#: helpers only the math library may call: round to nearest even, high half of a product
LIBRARY_PRIVATE = frozenset(["_rint", "_mul_hi"])
SIGNED_OF_WIDTH = {8: i8, 16: i16, 32: i32, 64: i64}
UNSIGNED_OF_WIDTH = {8: u8, 16: u16, 32: u32, 64: u64}
FLOAT_OF_WIDTH = {16: f16, 32: f32, 64: f64}
STATEMENT_ONLY = {
    "builtins.range": "range() can only be the iterable of a for loop",
    "ptxpy.static_range": "ptxpy.static_range() can only be the iterable of a for loop",
    "ptxpy.shared_array": "ptxpy.shared_array() must be assigned to a variable: "
                          "s = ptxpy.shared_array(shape, dtype)",
    "ptxpy.local_array": "ptxpy.local_array() must be assigned to a variable: "
                         "r = ptxpy.local_array(shape, dtype)",
    "builtins.print": "print() can only be used as a statement",
    "ptxpy.map_shared_rank": "ptxpy.map_shared_rank() must be assigned to a variable: "
                             "peer = ptxpy.map_shared_rank(s, rank)",
}
PRINT_FORMATS = {
    "bool": ("%d", i32), "i8": ("%d", i32), "i16": ("%d", i32), "i32": ("%d", i32),
    "u8": ("%u", u32), "u16": ("%u", u32), "u32": ("%u", u32), "i64": ("%lld", None),
    "u64": ("%llu", None), "f16": ("%f", f64), "bf16": ("%f", f64), "f32": ("%f", f64),
    "f64": ("%f", None),
}


class CallChecker:
    """Mixin of FunctionChecker: `self._e_Call(node)` types a call expression."""

    def _e_Call(self, node: cst.Call) -> typed.Expr:
        func = node.func
        if isinstance(func, cst.Name) and not self.is_local(func.value) and func.value in self.parsed.funcs:
            return self.call_func(func.value, node)
        qual = self.qualname(func)
        if self.is_value_not_function(func, qual):
            text = code_of(func)
            raise self.error(f"'{text}' is a value, not a function: write {text} without the "
                             "parentheses", node)
        if qual is None:
            if isinstance(func, cst.Name) and func.value in self.parsed.kernels and not self.is_local(func.value):
                raise self.error(f"'{func.value}' is a @ptxpy.jit kernel; a kernel cannot call another "
                                 "kernel (make it a @ptxpy.func)", node)
            if isinstance(func, (cst.Name, cst.Attribute)) and not self.is_local(_base_name(func)):
                raise self.name_error(func, None)
            if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
                if func.value.value in self.arrays and func.attr.value == "view":
                    raise self.error(f"'{code_of(node)}' must be assigned to a variable: "
                                     f"w = {code_of(node)}", node)
                if func.value.value in self.arrays:
                    raise self.error(f"'{code_of(func)}': arrays have no methods in kernels (their "
                                     "attributes are shape, size and ndim)", node)
                raise self.error(method_problem(func), node)
            if isinstance(func, cst.Lambda):
                raise self.error("lambda functions are not supported in kernels", func)
            raise self.error(f"'{code_of(func)}' is not callable", node)
        if qual in STATEMENT_ONLY:
            raise self.error(STATEMENT_ONLY[qual], node)
        cast_type = scalar_named(qual)
        if cast_type is not None:
            return self.cast(cast_type, qual, node)
        module, _, name = qual.partition(".")
        handler = {"builtins": self.builtin_call, "math": self.math_call,
                   "ptxpy": self.ptxpy_call}.get(module)
        if handler is None or not name or "." in name:
            raise self.name_error(func, qual)
        return handler(name, node)

    def is_value_not_function(self, func: cst.BaseExpression, qual: str | None) -> bool:
        """A call of a number: `ptxpy.WARP_SIZE()`, `math.pi()`, `ptxpy.thread_idx.x()`, a
        module constant, a scalar variable."""
        if isinstance(func, cst.Name) and (func.value in self.vars or func.value in self.consts or (
                func.value in self.scope.constants and not self.is_local(func.value))):
            return True
        if qual is not None and qual.startswith("ptxpy.") and qual[6:] in THREAD_NAMES:
            return True
        try:
            qualname_constant(qual, func)
        except NotConstant:
            return False
        return True

    # arguments
    def args(self, node: cst.Call, label: str, low: int, high: int | None = None,
             keywords: tuple = ()) -> list:
        """The argument nodes in parameter order (None for an omitted one); `keywords` names them."""
        high = low if high is None else high
        positional, named = self.split_args(node, label, keywords[:high])
        if len(positional) > high:
            raise self.error(f"{label}() takes {_count(low, high)} ({len(positional)} given)", node)
        values = positional + [None] * (high - len(positional))
        for key, value in named.items():
            index = keywords.index(key)
            if values[index] is not None:
                raise self.error(f"{label}() got multiple values for argument '{key}'", node)
            values[index] = value
        if any(v is None for v in values[:low]):
            given = sum(v is not None for v in values)
            raise self.error(f"{label}() takes {_count(low, high)} ({given} given)", node)
        return values

    def split_args(self, node: cst.Call, label: str, keywords, hint: str = "") -> tuple:
        """The positional argument nodes and {keyword: node} of a call, each keyword one of
        `keywords` (else an error, `hint` after it), none repeated or before a positional one."""
        positional, named = [], {}
        for arg in node.args:
            if arg.star:
                raise self.error(f"'{arg.star}' arguments are not supported", arg)
            if arg.keyword is None:
                if named:
                    raise self.error("positional argument after a keyword argument", arg)
                positional.append(arg.value)
                continue
            key = arg.keyword.value
            if key in named:
                raise self.error(f"keyword argument repeated: '{key}'", arg)
            if key not in keywords:
                raise self.error(f"{label}() got an unexpected keyword argument '{key}'{hint}", arg)
            named[key] = arg.value
        return positional, named

    # casts and builtins
    def cast(self, t: Scalar, qual: str, node: cst.Call) -> typed.Expr:
        label = qual.split(".")[-1]
        (arg,) = self.args(node, label, 1)
        if qual == "builtins.float" and isinstance(arg, cst.SimpleString):
            return weak_constant(self.float_of_string(arg), self.loc(node))
        value = self.value(arg)
        if t.is_bool:
            return truthy(value)
        if value.__class__ is typed.TableLoad:
            # the table's numbers converted, once each: f64(TAPS[k]) reads a table of doubles
            return table_load(self.loc(node), t, value.table, self.scope.constants[value.table],
                              value.index)
        return convert(value, t)

    def float_of_string(self, node: cst.SimpleString) -> float:
        """`float('inf')`, `float('-inf')`, `float('nan')` (any string Python's float takes):
        a float constant, as `math.inf`."""
        text = node.evaluated_value
        try:
            return float(text)
        except (TypeError, ValueError):
            raise self.error(f"could not convert string to float: {text!r}", node) from None

    def builtin_call(self, name: str, node: cst.Call) -> typed.Expr:
        if name == "abs":
            return self.abs_call(node)
        if name == "divmod":
            return self.divmod_call(node)
        if name in ("min", "max"):
            return self.min_max(name, node)
        if name == "round":
            return self.round_call(node)
        if name == "len":
            (arg,) = self.args(node, "len", 1)
            if (isinstance(arg, cst.Name) and not self.is_local(arg.value)
                    and isinstance(self.scope.constants.get(arg.value), tuple)):
                return weak_constant(len(self.scope.constants[arg.value]), self.loc(node))
            if not (isinstance(arg, cst.Name) and arg.value in self.arrays):
                raise self.error(f"len() needs an array or a tuple module constant, got "
                                 f"'{code_of(arg)}'", arg)
            array = arg.value
            return typed.Shape(self.loc(node), i32, array, 0)
        raise self.name_error(node.func, f"builtins.{name}")

    def abs_call(self, node: cst.Call) -> typed.Expr:
        (arg,) = self.args(node, "abs", 1)
        value = self.value(arg)
        if is_weak(value):
            return weak_constant(abs(value.value), self.loc(node))
        if value.type.is_bool:
            value = convert(value, i32)
        if value.type.kind == "uint":
            return value
        return typed.Intrinsic(self.loc(node), value.type, "abs", [value])

    def divmod_call(self, node: cst.Call) -> typed.Expr:
        """`divmod(a, b)`: the tuple `(a // b, a % b)`, Python's floor division and remainder."""
        a, b = (typed.once(self.value(v)) for v in self.args(node, "divmod", 2))
        items = [self.binary(op, a, b, node) for op in (cst.FloorDivide, cst.Modulo)]
        return typed.TupleExpr(self.loc(node), TupleType(tuple(e.type for e in items)), items)

    def round_call(self, node: cst.Call) -> typed.Expr:
        """`round(x)`: a float rounded to the nearest integer, ties to even as Python rounds,
        kept in its float type (as `math.floor`); an integer is returned unchanged."""
        arg, digits = self.args(node, "round", 1, 2, keywords=("number", "ndigits"))
        if digits is not None:
            raise self.error("round() with ndigits is not supported in kernels (round(x) rounds "
                             "to an integer)", digits)
        value = self.value(arg)
        if is_weak(value):
            if not math.isfinite(value.value):      # Python raises here
                raise self.error(f"cannot round {value.value!r} to an integer", node)
            return weak_constant(round(value.value), self.loc(node))
        if value.type.is_bool:
            return convert(value, i32)
        if not value.type.is_float:
            return value
        return typed.Intrinsic(self.loc(node), value.type, "round", [value])

    def min_max(self, name: str, node: cst.Call) -> typed.Expr:
        keyword = next((a for a in node.args if a.keyword is not None), None)
        if keyword is not None:
            raise self.error(f"keyword arguments are not supported by {name}() (got "
                             f"'{keyword.keyword.value}=')", keyword)
        if len(node.args) < 2 or any(a.star for a in node.args):
            raise self.error(f"{name}() takes two or more numbers as positional arguments "
                             "(iterables are not supported)", node)
        values = [self.value(a.value) for a in node.args]
        if all(is_weak(v) for v in values):
            return weak_constant(_fold_min_max(name, [v.value for v in values]), self.loc(node))
        t = join(values)
        op = name
        if t.is_bool:    # as Python's min(True, False) and jax.numpy's: a bool
            op = "and" if name == "min" else "or"
        result = convert(values[0], t)
        for value in values[1:]:
            result = typed.Binary(self.loc(node), t, op, result, convert(value, t))
        return result

    def nan_min_max(self, name: str, node: cst.Call) -> typed.Expr:
        """`ptxpy.maximum(a, b)`, `ptxpy.minimum(a, b)`: as NumPy's and JAX's, a NaN operand
        gives NaN (Python's and CUDA's max ignore it); on integers and bools as max/min."""
        a, b = (self.value(v) for v in self.args(node, f"ptxpy.{name}", 2))
        plain = "max" if name == "maximum" else "min"
        if is_weak(a) and is_weak(b):
            if a.value != a.value or b.value != b.value:
                return weak_constant(math.nan, self.loc(node))
            return weak_constant(_fold_min_max(plain, [a.value, b.value]), self.loc(node))
        t = join([a, b])
        op = name if t.is_float else ("and" if plain == "min" else "or") if t.is_bool else plain
        return typed.Binary(self.loc(node), t, op, convert(a, t), convert(b, t))

    def array_arg(self, node: cst.BaseExpression, what: str) -> str:
        if isinstance(node, cst.Name) and node.value in self.arrays:
            return node.value
        raise self.error(f"{what} needs an array, got '{code_of(node)}'", node)

    # math
    def math_call(self, name: str, node: cst.Call) -> typed.Expr:
        label = f"math.{name}"
        if name == "log" and len(node.args) == 2:
            return self.log_base(node)
        if name in MATH_UNARY or name in MATH_PREDICATES or name in MATH_BINARY:
            count = 2 if name in MATH_BINARY else 1
            values = [self.value(n) for n in self.args(node, label, count)]
            folded = self.folded_math(name, values, node)
            if folded is not None:
                return folded
            values = promoted_floats(values)
            result = bool_ if name in MATH_PREDICATES else values[0].type
            return typed.Intrinsic(self.loc(node), result, name, values)
        if name == "ldexp":
            return self.ldexp(node)
        if name == "frexp":
            return self.frexp(node)
        supported = MATH_UNARY | MATH_PREDICATES | MATH_BINARY | MATH_EXPONENT
        if name not in MATH_NAMES or name == "fma":
            raise self.error(unknown_attribute("math", name, supported), node.func)
        supported = " ".join(sorted(supported))
        raise self.error(f"math.{name} is not supported in kernels (supported: {supported}, and "
                         "the constants pi e tau inf nan)", node.func)

    def log_base(self, node: cst.Call) -> typed.Expr:
        """`math.log(x, base)`: `log(x) / log(base)`, as Python computes it."""
        values = [self.value(n) for n in self.args(node, "math.log", 2)]
        folded = self.folded_math("log", values, node)
        if folded is not None:
            return folded
        x, base = promoted_floats(values)
        loc = self.loc(node)
        return self.binary(cst.Divide, typed.Intrinsic(loc, x.type, "log", [x]),
                           typed.Intrinsic(loc, base.type, "log", [base]), node)

    def folded_math(self, name: str, values: list, node: cst.Call) -> typed.Expr | None:
        """`math.sqrt(2.0)`, `math.floor(2.5)`: of weak constants, Python's value, itself weak
        (so `d * math.sqrt(2.0)` keeps an f64 `d`'s precision, as Python and CUDA do), an int
        for floor, ceil and trunc; None where an argument is not one, or where Python raises
        (`math.log(0.0)`: then the C value, computed in the argument's type)."""
        if not all(is_weak(v) and isinstance(v, typed.Constant) and type(v.value) in (int, float)
                   for v in values):
            return None
        function = getattr(math, name, None)
        try:
            result = function(*(float(v.value) for v in values))
        except (TypeError, ValueError, OverflowError, ZeroDivisionError):
            return None
        if name in ("floor", "ceil", "trunc"):
            result = int(result)
        return weak_constant(result, self.loc(node))

    def ldexp(self, node: cst.Call) -> typed.Expr:
        """`math.ldexp(x, n)`: x * 2^n rounded once; n any integer (beyond +-2^16 it is clamped:
        the result is already 0 or infinite)."""
        x_node, n_node = self.args(node, "math.ldexp", 2)
        (x,) = self.float_args([x_node])
        n = self.value(n_node)
        if n.type.is_float:
            got = f"the float {n.value!r}" if is_weak(n) else n.type
            raise self.error(f"math.ldexp takes an integer exponent, got {got}", n_node)
        return typed.Intrinsic(self.loc(node), x.type, "ldexp", [x, self.exponent_i32(n)])

    def exponent_i32(self, n: typed.Expr) -> typed.Expr:
        """An integer exponent as i32, clamped to +-2^16 where its type is wider."""
        limit = 1 << 16
        if isinstance(n, typed.Constant):
            return typed.Constant(n.loc, i32, max(-limit, min(limit, int(n.value))))
        if n.type in (i64, u32, u64):
            n = typed.Binary(n.loc, n.type, "min", n, typed.Constant(n.loc, n.type, limit))
            if n.type.is_signed:
                n = typed.Binary(n.loc, n.type, "max", n, typed.Constant(n.loc, n.type, -limit))
        return convert(n, i32)

    def frexp(self, node: cst.Call) -> typed.Expr:
        """`m, e = math.frexp(x)`: x == m * 2^e with 1/2 <= |m| < 1 (m of x's type, e an i32)."""
        (x,) = self.float_args(self.args(node, "math.frexp", 1))
        x = typed.once(x)
        loc = self.loc(node)
        items = [typed.Intrinsic(loc, x.type, "frexp_mantissa", [x]),
                 typed.Intrinsic(loc, i32, "frexp_exponent", [x])]
        return typed.TupleExpr(loc, TupleType((x.type, i32)), items)

    def float_args(self, nodes: list) -> list:
        """Arguments of a float function: promoted together; integers become f32."""
        return promoted_floats([self.value(n) for n in nodes])

    # ptxpy
    def ptxpy_call(self, name: str, node: cst.Call) -> typed.Expr:
        loc, label = self.loc(node), f"ptxpy.{name}"
        if name in AXIS_INTRINSICS:
            return self.axis_intrinsic(name, node)
        if name in ("lane_id", "warp_id", "cluster_rank", "cluster_size") or name in NO_VALUE:
            if name == "syncwarp":
                self.no_member_mask(name, node, 0)
            self.args(node, label, 0)
            return typed.Intrinsic(loc, None if name in NO_VALUE else i32, name, [])
        if name in BIT_UNARY:
            (arg,) = self.args(node, label, 1)
            value = self.bit_operand(self.value(arg), label, arg)
            return typed.Intrinsic(loc, value.type if name == "brev" else i32, name, [value])
        if name == "mulhi":
            return self.mulhi(node)
        if name == "dp4a":
            return self.dp4a(node)
        if name in ("maximum", "minimum"):
            return self.nan_min_max(name, node)
        if name == "activemask" or name in LANE_MASKS:
            self.args(node, label, 0)
            return typed.Intrinsic(loc, u32, name, [])
        if name == "elect_one":
            self.no_member_mask(name, node, 0)
            self.args(node, label, 0)
            return typed.Intrinsic(loc, bool_, name, [])
        if name in FAST_UNARY:
            values = self.float_args(self.args(node, label, 1))
            return typed.Intrinsic(loc, values[0].type, name, values)
        if name == "fma":
            values = self.float_args(self.args(node, label, 3))
            return typed.Intrinsic(loc, values[0].type, name, values)
        if name == "cdiv":
            return self.cdiv(node)
        if name in ATOMICS:
            return self.atomic(name, node)
        if name in ORDERED_ACCESSES:
            return self.ordered_access(name, node)
        if name in SHUFFLES or name in WARP_REDUCTIONS:
            return self.warp_value(name, node)
        if name in MATCHES:
            self.no_member_mask(name, node, 1)
            (arg,) = self.args(node, label, 1)
            return typed.Intrinsic(loc, u32, name, [self.value(arg)])
        if name == "nanosleep":
            (arg,) = self.args(node, label, 1)
            nanoseconds = self.int_value(arg, f"the nanoseconds of {label}")
            return typed.Intrinsic(loc, None, name, [convert(nanoseconds, u32)])
        if name in BLOCK_VOTES:
            (arg,) = self.args(node, label, 1)
            return typed.Intrinsic(loc, BLOCK_VOTES[name], name, [truthy(self.value(arg))])
        if name in VOTES:
            self.no_member_mask(name, node, 1)
            (arg,) = self.args(node, label, 1)
            return typed.Intrinsic(loc, VOTES[name], name, [truthy(self.value(arg))])
        if name == "bitcast":
            return self.bitcast(node)
        if name == "mma_sync":
            return self.mma_sync(node)
        if name in ASYNC_COPY:
            return self.async_copy(name, node)
        if name == "ldmatrix":
            return self.ldmatrix(node)
        if name in WGMMA:
            return self.wgmma_call(name, node)
        if name in MBARRIER:
            return self.mbarrier(name, node)
        if name in BULK_COPY:
            return self.bulk_copy(name, node)
        if name in TENSOR_COPY:
            return self.tensor_copy(name, node)
        if name in SET_MAX_REGISTERS:
            return self.set_max_registers(name, node)
        if name in FP8_CONVERSIONS:
            return self.fp8_conversion(name, node)
        if name in LIBRARY_PRIVATE and getattr(self.parsed, "is_library", False):
            return self.library_private(name, node)
        raise self.name_error(node.func, f"ptxpy.{name}")

    def no_member_mask(self, name: str, node: cst.Call, count: int) -> None:
        """A warp function called as CUDA's is, with a member mask first (`shfl_down_sync(
        0xffffffff, v, 8)`, `ballot_sync(mask, p)`, `syncwarp(mask)`): an error that shows the
        call without it. A shuffle's fourth CUDA argument, the width, is left out too."""
        positional = [a for a in node.args if a.keyword is None and not a.star]
        extra = len(positional) - count
        if len(positional) != len(node.args) or not 1 <= extra <= (2 if name in SHUFFLES else 1):
            return
        kept = ", ".join(code_of(a.value) for a in positional[1:1 + count])
        if extra == 2 and code_of(positional[-1].value) != "32":
            kept += f", width={code_of(positional[-1].value)}"
        raise self.error(f"ptxpy.{name} takes no member mask (the whole warp takes part): "
                         f"write {code_of(node.func)}({kept})", node)

    def bit_operand(self, value: typed.Expr, label: str, node) -> typed.Expr:
        """The integer argument of a bit function, of 32 or 64 bits: a literal takes its own
        type (i32, else i64, else u64); bool is i32; 8- and 16-bit integers widen keeping their
        value, signed ones to i32, unsigned ones to u32 (as CUDA converts them to int or
        unsigned)."""
        if value.type.is_float:
            bits_type = UNSIGNED_OF_WIDTH[value.type.bits]
            hint = "" if is_weak(value) else f"; for a float's bits, {label}(ptxpy.bitcast(x, {bits_type}))"
            raise self.error(f"{label} needs an integer, got {value.type}{hint}", node)
        return convert(value, _bit_type(value.type))

    def mulhi(self, node: cst.Call) -> typed.Expr:
        """`ptxpy.mulhi(a, b)`: the high half of the full product of two integers of one type
        (a literal takes the other's type, as in `a * b`); 8- and 16-bit integers widen to 32
        bits as in `bit_operand`."""
        label = "ptxpy.mulhi"
        nodes = self.args(node, label, 2)
        values = [self.value(n) for n in nodes]
        for value, n in zip(values, nodes):
            if value.type.is_float:
                raise self.error(f"{label} needs integers, got {value.type}", n)
        strong = [v.type for v in values if not is_weak(v)]
        if len({_bit_type(t) for t in strong}) > 1:
            a, b = strong
            raise self.error(f"{label} needs two integers of one type, got {a} and {b}: cast one "
                             f"(e.g. {label}({b}({code_of(nodes[0])}), {code_of(nodes[1])}))", node)
        t = join(values)
        if t.is_float:
            raise self.error(f"{label} needs integers, got {values[0].type} and {values[1].type}", node)
        t = _bit_type(t)
        return typed.Intrinsic(self.loc(node), t, "mulhi", [convert(v, t) for v in values])

    def dp4a(self, node: cst.Call) -> typed.Expr:
        """`ptxpy.dp4a(a, b, c)`: c plus the dot product of the four bytes of a and of b, each
        word's bytes signed for an `i32`, unsigned for a `u32` (PTX dp4a; CUDA's `__dp4a`); an
        `i32`, or a `u32` when both words are, c converted as an assignment would."""
        label = "ptxpy.dp4a"
        a_node, b_node, c_node = self.args(node, label, 3)
        words = [self.byte_word(n, label) for n in (a_node, b_node)]
        result = u32 if all(w.type == u32 for w in words) else i32
        c = self.value(c_node)
        if not can_convert_implicitly(c.type, result, is_weak(c)):
            raise self.error(f"the sum {code_of(c_node)} of {label} is {c.type}; it must convert to "
                             f"{result} as an assignment would (cast it: {result}(...))", c_node)
        return typed.Intrinsic(self.loc(node), result, "dp4a", [*words, convert(c, result)])

    def byte_word(self, node: cst.BaseExpression, label: str) -> typed.Expr:
        """A word of four bytes: an `i32` or `u32` value (an integer literal takes `i32`, else
        `u32` where only that holds it)."""
        value = self.value(node)
        if is_weak(value) and isinstance(value, typed.Constant) and type(value.value) is int:
            if not (fits(value.value, i32) or fits(value.value, u32)):
                raise self.error(f"{label} multiplies words of four bytes: {value.value} does not "
                                 "fit in 32 bits", node)
            return convert(value, i32 if fits(value.value, i32) else u32)
        if value.type not in (i32, u32):
            raise self.error(f"{label} multiplies words of four bytes, i32 or u32, got "
                             f"{value.type} (pack the bytes with ptxpy.bitcast or shifts)", node)
        return value

    def bitcast(self, node: cst.Call) -> typed.Expr:
        """`ptxpy.bitcast(x, T)`: the bits of scalar `x` read as scalar type `T` of the same width."""
        value_node, type_node = self.args(node, "ptxpy.bitcast", 2)
        target = scalar_named(self.qualname(type_node))
        if target is None or target.is_bool:
            raise self.error(f"the second argument of ptxpy.bitcast must be a numeric scalar type "
                             f"(e.g. u32, f64), got '{code_of(type_node)}'", type_node)
        value = self.value(value_node)
        if is_weak(value):
            value = self.weak_bitcast_operand(value, target, value_node)
        if value.type.is_bool:
            raise self.error("ptxpy.bitcast needs a number, got bool", value_node)
        if value.type.bits != target.bits:
            raise self.error(f"ptxpy.bitcast from {value.type} ({value.type.bits} bits) to {target} "
                             f"({target.bits} bits): the widths must be equal", node)
        return typed.Intrinsic(self.loc(node), target, "bitcast", [value])

    def weak_bitcast_operand(self, value: typed.Expr, target: Scalar, node) -> typed.Expr:
        """A literal takes the type of `target`'s width: a float literal f16/f32/f64, an integer
        literal the signed (or, when it does not fit, unsigned) integer type."""
        if value.type.is_float:
            if target.bits not in FLOAT_OF_WIDTH:
                raise self.error(f"a float constant cannot be bitcast to {target} (no float type has "
                                 f"{target.bits} bits)", node)
            return convert(value, FLOAT_OF_WIDTH[target.bits])
        if value.type.is_bool:
            return value
        for t in (SIGNED_OF_WIDTH[target.bits], UNSIGNED_OF_WIDTH[target.bits]):
            if fits(value.value, t):
                return convert(value, t)
        raise self.error(f"the constant {value.value} does not fit in {target.bits} bits", node)

    def library_private(self, name: str, node: cst.Call) -> typed.Expr:
        """Helpers only the math library (ptxpy/libm.py) may call (docs/design.md)."""
        if name == "_rint":
            (value,) = self.float_args(self.args(node, f"ptxpy.{name}", 1))
            return typed.Intrinsic(self.loc(node), value.type, name, [value])
        a, b = [self.value(n) for n in self.args(node, f"ptxpy.{name}", 2)]
        if a.type != b.type or not a.type.is_int:
            raise self.error(f"ptxpy.{name} needs two integers of one type, got {a.type} and {b.type}",
                             node)
        return typed.Intrinsic(self.loc(node), a.type, name, [a, b])

    def axis_intrinsic(self, name: str, node: cst.Call) -> typed.Expr:
        low = 0 if name == "global_id" else 1
        (axis_node,) = self.args(node, f"ptxpy.{name}", low, 1, keywords=("axis",))
        axis = 0 if axis_node is None else self.const_value(axis_node, f"the axis of ptxpy.{name}")
        if type(axis) is not int or axis not in (0, 1, 2):
            raise self.error(f"the axis of ptxpy.{name} must be 0, 1 or 2, got {axis!r}", axis_node)
        axis_const = typed.Constant(self.loc(axis_node or node), i32, axis)
        return typed.Intrinsic(self.loc(node), i32, name, [axis_const])

    def cdiv(self, node: cst.Call) -> typed.Expr:
        a, b = [self.value(n) for n in self.args(node, "ptxpy.cdiv", 2)]
        loc = self.loc(node)
        if a.type.is_float or b.type.is_float:
            raise self.error(f"ptxpy.cdiv needs integers, got {a.type} and {b.type}", node)
        if is_weak(a) and is_weak(b):
            if b.value == 0:
                raise self.error("ptxpy.cdiv by zero", node)
            return weak_constant(CONST_FUNCS["ptxpy.cdiv"](a.value, b.value), loc)
        t = join([a, b])
        t = i32 if t.is_bool else t
        return typed.Intrinsic(loc, t, "cdiv", [convert(a, t), convert(b, t)])

    def atomic(self, name: str, node: cst.Call) -> typed.Expr:
        count = 4 if name == "atomic_cas" else 3
        self.element_as_target(name, node, count)
        args, order = self.ordered_args(node, f"ptxpy.{name}", count, ("sem", "scope"))
        array = self.array_arg(args[0], f"ptxpy.{name}")
        kind = self.arrays[array]
        elem = kind.elem
        if elem.is_bool or (elem.bits < 32 and not elem.is_float):
            raise self.error(f"ptxpy.{name} needs an array of 32- or 64-bit integers or of floats, "
                             f"'{array}' holds {elem}", args[0])
        if elem.is_float and name in ("atomic_and", "atomic_or", "atomic_xor"):
            raise self.error(f"ptxpy.{name} needs an integer array, '{array}' holds {elem}", args[0])
        indices = self.atomic_indices(array, args[1])
        values = [convert(self.value(v), elem) for v in args[2:]]
        self.mark_written(array)
        return typed.Intrinsic(self.loc(node), elem, name, values,
                               {"array": array, "indices": indices, **order})

    def ordered_access(self, name: str, node: cst.Call) -> typed.Expr:
        """`ptxpy.load_acquire(a, idx, scope="gpu")`, `load_relaxed`, and `store_release(a, idx,
        v, scope="gpu")`, `store_relaxed`: one access of an element of a global or shared
        array that no pass caches, merges, moves or removes (PTX ld.acquire, ld.relaxed,
        st.release, st.relaxed at the scope). The target as an atomic's; the value converted
        to the element type as a store does; `scope=` by keyword only."""
        label = f"ptxpy.{name}"
        store = name.startswith("store")
        count = 3 if store else 2
        self.element_as_target(name, node, count)
        args, order = self.ordered_args(node, label, count, ("scope",))
        array = self.array_arg(args[0], label)
        elem = self.arrays[array].elem
        if elem.is_bool:
            raise self.error(f"{label} needs an array of numbers, '{array}' holds bool (use an "
                             "array of u8 or i32 for flags)", args[0])
        indices = self.atomic_indices(array, args[1], "the access")
        extra = {"array": array, "indices": indices, "sem": ORDERED_ACCESSES[name],
                 "scope": order.get("scope", "gpu")}
        if store:
            value = convert(self.value(args[2]), elem)
            self.mark_written(array)
            return typed.Intrinsic(self.loc(node), None, name, [value], extra)
        self.mark_ordered(array)
        return typed.Intrinsic(self.loc(node), elem, name, [], extra)

    def ordered_args(self, node: cst.Call, label: str, count: int, keywords: tuple) -> tuple:
        """The `count` positional argument nodes of an atomic or an ordered access, and the
        order its keywords name ({"sem": "acquire", "scope": "cta"}; only those given): each
        keyword-only, a string literal among its choices (ORDER_CHOICES)."""
        accepted = " and ".join(f"{k}=" for k in keywords)
        positional, named = self.split_args(node, label, keywords, f" (it takes {accepted})")
        if len(positional) != count:
            raise self.error(f"{label}() takes {_count(count, count)} ({len(positional)} given), "
                             f"and {accepted} by keyword", node)
        order = {}
        for key, value in named.items():
            choices = ORDER_CHOICES[key]
            if value.__class__ is not cst.SimpleString or value.evaluated_value not in choices:
                listed = ", ".join(f'"{c}"' for c in choices[:-1]) + f' or "{choices[-1]}"'
                raise self.error(f"the {key} of {label} is {listed} (a string literal), got "
                                 f"'{code_of(value)}'", value)
            order[key] = value.evaluated_value
        return positional, order

    def element_as_target(self, name: str, node: cst.Call, count: int) -> None:
        """CUDA's `atomicAdd(&out[i], v)` written as `ptxpy.atomic_add(out[i], v)`: say how
        ptxpy takes the array and the index."""
        given = [a for a in node.args if a.keyword is None and not a.star]
        first = given[0].value if given else None
        if (len(given) == count - 1 and isinstance(first, cst.Subscript)
                and isinstance(first.value, cst.Name) and first.value.value in self.arrays
                and all(isinstance(e.slice, cst.Index) for e in first.slice)):
            index = ", ".join(code_of(e.slice.value) for e in first.slice)
            index = f"({index})" if len(first.slice) > 1 else index
            rest = [code_of(a.value) for a in given[1:]]
            rest += [f"{a.keyword.value}={code_of(a.value)}" for a in node.args if a.keyword]
            written = ", ".join([first.value.value, index, *rest])
            raise self.error(f"ptxpy.{name} takes the array and the index apart: write "
                             f"ptxpy.{name}({written})", first)

    def atomic_indices(self, array: str, node: cst.BaseExpression, what: str = "the atomic") -> list:
        items = [node]
        if isinstance(node, cst.Tuple):
            if not all(isinstance(e, cst.Element) for e in node.elements):
                raise self.error("starred indices are not supported", node)
            items = [e.value for e in node.elements]
        rank = self.arrays[array].rank
        if len(items) != rank:
            given = f"{len(items)} index" if len(items) == 1 else f"{len(items)} indices"
            raise self.error(f"array '{array}' has rank {rank} but {what} gives {given}", node)
        return [self.index(item) for item in items]

    def warp_value(self, name: str, node: cst.Call) -> typed.Expr:
        label = f"ptxpy.{name}"
        self.no_member_mask(name, node, 1 if name in WARP_REDUCTIONS else 2)
        if name in WARP_REDUCTIONS:
            nodes, width = self.args(node, label, 1), 32
        else:     # a third argument only as `width=`: three positional ones are CUDA's order
            positional = sum(a.keyword is None for a in node.args)
            if positional > 2:
                raise self.error(f"{label}() takes 2 arguments and an optional width= ({positional} "
                                 "given)", node)
            *nodes, width_node = self.args(node, label, 2, 3, keywords=("value", "lane", "width"))
            width = 32 if width_node is None else self.shuffle_width(label, width_node)
        value = self.value(nodes[0])
        if value.type.is_bool:
            raise self.error(f"{label} needs a number, got bool", nodes[0])
        if name in WARP_BITWISE and value.type.is_float:
            raise self.error(f"{label} needs an integer, got {value.type}; for a float's bits, "
                             f"{label}(ptxpy.bitcast(x, u{value.type.bits}))", nodes[0])
        value = convert(value, value.type)
        args = [value]
        if len(nodes) == 2:
            lane = self.int_value(nodes[1], f"the lane argument of {label}")
            args.append(convert(lane, i32))
        extra = {"width": width} if width != 32 else {}
        return typed.Intrinsic(self.loc(node), value.type, name, args, extra)

    def mma_sync(self, node: cst.Call) -> typed.Expr:
        """`d0, d1, d2, d3 = ptxpy.mma_sync((a0, ..., a3), (b0, b1), (c0, ..., c3))`: one warp's
        tensor-core product D = A B + C of a 16x8 tile (PTX's `mma.sync`, fragments as PTX
        lays them out: docs/language.md). A and B of 4 and 2 f32 values (rounded to tf32):
        m16n8k8; of 8 and 4 values, all f16 or all bf16: m16n8k16; C is then 4 f32 values. A
        and B of 16 and 8 values, each all i8 or all u8, and C of 4 i32: m16n8k32, i32 sums."""
        label = "ptxpy.mma_sync"
        usage = (f"{label} takes three tuples (a, b, c): 4, 2 and 4 f32 values (m16n8k8, tf32), "
                 "8 and 4 values all f16 or all bf16 and 4 f32 values (m16n8k16), or 16 and 8 "
                 "values, each all i8 or all u8, and 4 i32 values (m16n8k32)")
        nodes = self.args(node, label, 3)
        parts = []
        for part in nodes:
            if part.__class__ is not cst.Tuple or any(e.__class__ is not cst.Element
                                                       for e in part.elements):
                raise self.error(f"{usage}; got '{code_of(part)}'", part)
            parts.append([e.value for e in part.elements])
        counts = tuple(len(p) for p in parts)
        if counts not in ((4, 2, 4), (8, 4, 4), (16, 8, 4)):
            raise self.error(f"{usage}; got tuples of {counts[0]}, {counts[1]} and {counts[2]}", node)
        a, b, c = ([self.value(n) for n in p] for p in parts)
        if counts[0] == 16:
            return self.mma_8bit(node, label, parts, a, b, c)
        if counts[0] == 4:
            kind = "tf32"
            element = f32
        else:
            strong = {v.type for v in a + b if not is_weak(v)}
            element = strong.pop() if len(strong) == 1 else None
            if element not in (f16, bf16):
                found = ", ".join(sorted(str(t) for t in {v.type for v in a + b}))
                raise self.error(f"the a and b values of an m16n8k16 {label} must be all f16 or "
                                 f"all bf16 (cast them), got {found}", node)
            kind = element.name
        values = self.fragment_values(label, zip((a, b, c), parts, (element, element, f32)))
        return typed.Intrinsic(self.loc(node), TupleType((f32,) * 4), f"mma_{kind}", values)

    def mma_8bit(self, node, label: str, parts: list, a: list, b: list, c: list) -> typed.Expr:
        """m16n8k32: a's values all i8 or all u8, b's too (the two may differ, as PTX's
        `.s8.u8` forms do; a tuple of weak literals alone takes the other's type)."""
        kinds = []
        for name, group in (("a", a), ("b", b)):
            strong = {v.type for v in group if not is_weak(v)}
            if len(strong) > 1 or not strong <= {i8, u8}:
                found = ", ".join(sorted(str(t) for t in {v.type for v in group}))
                raise self.error(f"the {name} values of an m16n8k32 {label} must be all i8 or all "
                                 f"u8 (cast them), got {found}", node)
            kinds.append(strong.pop() if strong else None)
        if kinds == [None, None]:
            raise self.error(f"the a and b values of an m16n8k32 {label} are all literals: cast "
                             "one of them to i8 or u8", node)
        a_type, b_type = (t or kinds[1 - k] for k, t in enumerate(kinds))
        values = self.fragment_values(label, zip((a, b, c), parts, (a_type, b_type, i32)))
        return typed.Intrinsic(self.loc(node), TupleType((i32,) * 4), "mma_int8", values,
                               {"a": WGMMA_TYPES[a_type.name], "b": WGMMA_TYPES[b_type.name]})

    def fragment_values(self, label: str, groups) -> list:
        """The values of (values, their nodes, the type they take) groups, each converted as an
        assignment would (an error asking for a cast where that cannot be implicit)."""
        values = []
        for group, nodes_of, t in groups:
            for value, n in zip(group, nodes_of):
                if not can_convert_implicitly(value.type, t, is_weak(value)):
                    raise self.error(f"{label}: '{code_of(n)}' is {value.type}, where {t} is needed "
                                     f"(cast it: {t}(...))", n)
                values.append(convert(value, t))
        return values

    def async_copy(self, name: str, node: cst.Call) -> typed.Expr:
        """`ptxpy.cp_async(dst, src[, pred])`, `ptxpy.cp_async_commit()`,
        `ptxpy.cp_async_wait([n])`: PTX's cp.async, commit_group and wait_group (wait_all
        without n). dst and src are an element or a slice of one array each, of one element
        type, 4, 8 or 16 bytes; the state spaces (shared, global) are checked where the arrays
        are known, in the SSA builder (a device function's array may be either)."""
        loc, label = self.loc(node), f"ptxpy.{name}"
        if name == "cp_async_commit":
            self.args(node, label, 0)
            return typed.Intrinsic(loc, None, name, [])
        if name == "cp_async_wait":
            (count,) = self.args(node, label, 0, 1)
            if count is None:
                return typed.Intrinsic(loc, None, name, [])
            return typed.Intrinsic(loc, None, name, [], {"n": self.group_count(count, label)})
        dst_node, src_node, pred_node = self.args(node, label, 2, 3)
        dst, src, size = self.copy_operands(node, label, dst_node, src_node)
        if size not in ASYNC_COPY_BYTES:
            raise self.error(f"{label} copies 4, 8 or 16 bytes; {dst[-1]} "
                             f"{self.arrays[dst[0]].elem} element(s) are {size}", node)
        self.mark_written(dst[0])
        args = [] if pred_node is None else [truthy(self.value(pred_node))]
        return typed.Intrinsic(loc, None, name, args, {"dst": dst, "src": src, "bytes": size})

    def group_count(self, count: cst.BaseExpression, label: str) -> int:
        """The n of a wait for copy groups: a constant from 0 to 7."""
        n = self.const_value(count, f"the group count of {label}")
        if type(n) is not int or not 0 <= n <= 7:
            raise self.error(f"{label}(n) needs a constant n from 0 to 7 (the newest groups "
                             f"that may still be in flight), got {n!r}", count)
        return n

    def copy_operands(self, node: cst.Call, label: str, dst_node, src_node) -> tuple:
        """(dst, src, bytes) of a copy between two slices (`async_operand`s) of one element
        type and length."""
        dst = self.async_operand(dst_node, label, "destination")
        src = self.async_operand(src_node, label, "source")
        (dst_array, *_, dst_width), (src_array, *_, src_width) = dst, src
        dst_elem, src_elem = self.arrays[dst_array].elem, self.arrays[src_array].elem
        if dst_elem != src_elem:
            raise self.error(f"{label} copies between arrays of one element type: '{dst_array}' "
                             f"holds {dst_elem}, '{src_array}' {src_elem}", node)
        if dst_width != src_width:
            raise self.error(f"{label}: the destination has {dst_width} element(s), the source "
                             f"{src_width}", node)
        return dst, src, dst_width * dst_elem.nbytes

    def mbarrier(self, name: str, node: cst.Call) -> typed.Expr:
        """`ptxpy.mbarrier_init(bar, count)`, `mbarrier_arrive(bar)`,
        `mbarrier_arrive_expect_tx(bar, bytes)`, `mbarrier_wait(bar, parity)`: PTX's mbarrier
        init, arrive (with expect_tx) and a loop of test_wait / try_wait on the phase parity;
        `bar` an element of a shared `u64` array, the rest integers taken as u32."""
        label, operand = f"ptxpy.{name}", MBARRIER_OPERANDS[name]
        bar_node, *rest = self.args(node, label, 1 if operand is None else 2)
        bar = self.barrier_operand(bar_node, label)
        args = [self.u32_operand(value_node, label, operand) for value_node in rest]
        if args and isinstance(args[0], typed.Constant) and operand != "parity":
            low = 1 if operand == "count" else 0
            if not low <= args[0].value <= MBARRIER_LIMIT:
                raise self.error(f"the {operand} of {label} is from {low} to {MBARRIER_LIMIT} (an "
                                 f"mbarrier counts in 20 bits), got {args[0].value}", rest[0])
        return typed.Intrinsic(self.loc(node), None, name, args, {"bar": bar})

    def barrier_operand(self, node: cst.BaseExpression, label: str) -> tuple:
        """An mbarrier: one element of a (shared) array of u64 or i64, as `async_operand` gives it."""
        array, lead, start, width = self.async_operand(node, label, "barrier")
        if width != 1 or self.arrays[array].elem not in (u64, i64):
            raise self.error(f"the barrier of {label} is one element of a shared array of u64 "
                             f"(bars = ptxpy.shared_array((2,), u64); bars[k]), got "
                             f"'{code_of(node)}'", node)
        self.mark_written(array)
        return array, lead, start, width

    def u32_operand(self, node: cst.BaseExpression, label: str, what: str) -> typed.Expr:
        """An integer (or bool) argument, converted to u32 as PTX takes it."""
        value = self.value(node)
        if not isinstance(value.type, Scalar) or value.type.is_float:
            raise self.error(f"the {what} of {label} is an integer, got '{code_of(node)}' of "
                             f"type {value.type}", node)
        if isinstance(value, typed.Constant) and not 0 <= value.value <= 0xFFFFFFFF:
            raise self.error(f"the {what} of {label} is a u32, got {value.value}", node)
        return convert(value, u32)

    def bulk_copy(self, name: str, node: cst.Call) -> typed.Expr:
        """`ptxpy.cp_async_bulk(dst, src[, bar])`: PTX's cp.async.bulk, one copy of a slice of
        16-byte multiples, global to shared completing on mbarrier `bar`, or shared to global
        (without `bar`) in the thread's bulk group; `cp_async_bulk_commit()` and
        `cp_async_bulk_wait(n, read=False)`: its commit_group and wait_group[.read]. The
        directions are checked in the SSA builder, where the arrays' spaces are known."""
        loc, label = self.loc(node), f"ptxpy.{name}"
        if name == "cp_async_bulk_commit":
            self.args(node, label, 0)
            return typed.Intrinsic(loc, None, name, [])
        if name == "cp_async_bulk_wait":
            count, read_node = self.args(node, label, 1, 2, keywords=("n", "read"))
            n = self.group_count(count, label)
            read = False if read_node is None else self.const_value(read_node, f"read= of {label}")
            if type(read) is not bool:
                raise self.error(f"read= of {label} is True or False, got {read!r}", read_node)
            return typed.Intrinsic(loc, None, name, [], {"n": n, "read": read})
        dst_node, src_node, bar_node, mask_node = self.args(
            node, label, 2, 4, keywords=("dst", "src", "bar", "multicast"))
        if mask_node is not None and bar_node is None:
            raise self.error(f"multicast= of {label} needs the barrier: only copies into shared "
                             "memory are multicast", mask_node)
        dst, src, size = self.copy_operands(node, label, dst_node, src_node)
        if size % 16 or size > MBARRIER_LIMIT:
            raise self.error(f"{label} copies a multiple of 16 bytes (up to {MBARRIER_LIMIT}); "
                             f"{dst[-1]} {self.arrays[dst[0]].elem} element(s) are {size}", node)
        bar = None if bar_node is None else self.barrier_operand(bar_node, label)
        self.mark_written(dst[0])
        mask = [] if mask_node is None else [self.multicast_mask(mask_node, label)]
        return typed.Intrinsic(loc, None, name, mask, {"dst": dst, "src": src, "bytes": size,
                                                       "bar": bar, "multicast": bool(mask)})

    def tensor_copy(self, name: str, node: cst.Call) -> typed.Expr:
        """`ptxpy.tma_load(tile, x[r:r + BM, c:c + BK], bar, swizzle=0)` and
        `ptxpy.tma_store(x[r:r + BM, c:c + BK], tile, swizzle=0)`: PTX's cp.async.bulk.tensor,
        a box of array parameter `x` (every dimension a constant-width slice or an index) to or
        from shared `tile` through a tensor map the launch encodes for that box
        (`FuncDef.tensor_maps`; a device function's pass to the array its caller binds, which
        must be the kernel's parameter). The tile's shape is checked in the SSA builder."""
        label = f"ptxpy.{name}"
        mask_node = None
        if name == "tma_load":
            tile_node, tensor_node, bar_node, swizzle_node, mask_node = self.args(
                node, label, 3, 5, keywords=("dst", "src", "bar", "swizzle", "multicast"))
        else:
            tensor_node, tile_node, swizzle_node = self.args(
                node, label, 2, 3, keywords=("dst", "src", "swizzle"))
        swizzle = 0 if swizzle_node is None else self.const_value(swizzle_node, f"swizzle= of {label}")
        if type(swizzle) is not int or swizzle not in WGMMA_SWIZZLES:
            raise self.error(f"swizzle= of {label} is 0, 32, 64 or 128 (bytes), got {swizzle!r}",
                             swizzle_node)
        array, coords, box = self.tensor_box(tensor_node, label)
        tile = self.tile_operand(tile_node, label)
        elem = self.arrays[array].elem
        if self.arrays[tile[0]].elem != elem:
            raise self.error(f"{label} copies between arrays of one element type: '{array}' holds "
                             f"{elem}, '{tile[0]}' {self.arrays[tile[0]].elem}", node)
        self.check_box(label, array, box, swizzle, tensor_node, swizzle_node)
        self.add_tensor_map(array, (box, swizzle))
        bar = None
        if name == "tma_load":
            bar = self.barrier_operand(bar_node, label)
            self.mark_written(tile[0])
        else:
            self.mark_written(array)
        extra = {"tensor": (array, coords, box), "tile": tile, "swizzle": swizzle, "bar": bar,
                 "bytes": math.prod(box) * elem.nbytes, "multicast": mask_node is not None}
        mask = [] if mask_node is None else [self.multicast_mask(mask_node, label)]
        return typed.Intrinsic(self.loc(node), None, name, mask, extra)

    def multicast_mask(self, node: cst.BaseExpression, label: str) -> typed.Expr:
        """`multicast=mask`: the ranks of the cluster's blocks a copy lands in, one bit each
        (PTX's 16-bit ctaMask)."""
        value = self.value(node)
        if not isinstance(value.type, Scalar) or not value.type.is_int:
            raise self.error(f"multicast= of {label} is an integer, one bit per block of the "
                             f"cluster, got '{code_of(node)}' of type {value.type}", node)
        if isinstance(value, typed.Constant) and not 1 <= value.value <= 0xFFFF:
            raise self.error(f"multicast= of {label} names blocks 0 to 15 of the cluster, one "
                             f"bit each: 1 to 0xffff, got {value.value}", node)
        return convert(value, u16)

    def add_tensor_map(self, array: str, entry: tuple) -> None:
        """Array parameter `array` is passed with a tensor map of (box, swizzle) `entry`."""
        maps = self.tensor_maps.setdefault(array, [])
        if entry not in maps:
            maps.append(entry)

    def tensor_box(self, node: cst.BaseExpression, label: str) -> tuple:
        """(array, start Exprs, box extents) of `x[r:r + BM, c:c + BK]`: an array parameter,
        each dimension a slice of constant width or an index (width 1)."""
        example = "x[r:r + 64, k:k + 64]"
        array = subscripted(node, self.array_params)
        if array is None:
            raise self.error(f"the tensor of {label} is a box of an array parameter, {example}, "
                             f"got '{code_of(node)}'", node)
        rank = self.arrays[array].rank
        if len(node.slice) != rank:
            raise self.error(f"the box of {label} slices or indexes each of the {rank} "
                             f"dimension(s) of '{array}' ({example}), got '{code_of(node)}'", node)
        starts, box = [], []
        for element in node.slice:
            piece = element.slice
            if not isinstance(piece, cst.Slice):
                starts.append(self.index(piece.value))
                box.append(1)
                continue
            if piece.step is not None or piece.upper is None:
                raise self.error(f"each slice of the box of {label} has a constant width, "
                                 f"{example}", element)
            width = self.slice_width(piece)
            if type(width) is not int or not 1 <= width <= TMA_BOX_LIMIT:
                raise self.error(f"the box of {label} is 1 to {TMA_BOX_LIMIT} elements wide in "
                                 f"each dimension, got {width!r}", element)
            starts.append(self.index(piece.lower) if piece.lower is not None
                          else typed.Constant(self.loc(element), i32, 0))
            box.append(width)
        return array, starts, tuple(box)

    def check_box(self, label: str, array: str, box: tuple, swizzle: int, node, swizzle_node):
        """A box a tensor map can describe: its rows a multiple of 16 bytes, as wide as the
        swizzle's span where there is one (the GPU lays narrower rows that far apart)."""
        row = box[-1] * self.arrays[array].elem.nbytes
        if row % TMA_ROW_BYTES:
            raise self.error(f"the rows of the box of {label} are a multiple of {TMA_ROW_BYTES} "
                             f"bytes; {box[-1]} {self.arrays[array].elem} element(s) are {row}", node)
        if swizzle and row != swizzle:     # narrower rows would lie `swizzle` bytes apart
            raise self.error(f"with swizzle={swizzle} the rows of the box of {label} are "
                             f"{swizzle} bytes; {box[-1]} {self.arrays[array].elem} element(s) "
                             f"are {row}", swizzle_node)

    def tile_operand(self, node: cst.BaseExpression, label: str) -> tuple:
        """(array, leading index Exprs, widths) of a tile in shared memory: `s`, `s[k]` or
        `s[k, :, 0:64]`: indices, then whole dimensions (`:` or `0:N`, N None for `:`)."""
        example = "xs[stage, :, :]"
        if isinstance(node, cst.Name) and node.value in self.arrays:
            return node.value, [], [None] * self.arrays[node.value].rank
        array = subscripted(node, self.arrays)
        if array is None:
            raise self.error(f"the tile of {label} is a shared array or its trailing "
                             f"dimensions ({example}), got '{code_of(node)}'", node)
        rank = self.arrays[array].rank
        if len(node.slice) > rank:
            raise self.error(f"'{array}' has {rank} dimension(s), '{code_of(node)}' names "
                             f"{len(node.slice)}", node)
        lead, widths = [], []
        for element in node.slice:
            piece = element.slice
            if not isinstance(piece, cst.Slice):
                if widths:
                    raise self.error(f"the tile of {label} indexes leading dimensions and takes "
                                     f"the rest whole ({example})", element)
                lead.append(self.index(piece.value))
                continue
            lower = 0 if piece.lower is None else self.const_value(piece.lower, "a tile's start")
            upper = None if piece.upper is None else self.const_value(piece.upper, "a tile's end")
            if piece.step is not None or lower != 0:
                raise self.error(f"the tile of {label} takes its trailing dimensions whole "
                                 f"(':' or '0:N'), got '{code_of(piece)}'", element)
            widths.append(upper)
        if not widths and len(lead) == rank:
            raise self.error(f"the tile of {label} is a block of elements ({example}), not one "
                             f"element", node)
        return array, lead, widths + [None] * (rank - len(lead) - len(widths))

    def ldmatrix(self, node: cst.Call) -> typed.Expr:
        """`v0, v1, ... = ptxpy.ldmatrix(s[r, c:c + W], n[, trans=True])`: PTX's `ldmatrix`, a
        warp's load of n (1, 2 or 4) 8 x 8 matrices of 16-bit elements (8 x 4 of 32-bit ones,
        8 x 16 of 8-bit ones) from shared memory, each lane giving one 16-byte row and getting
        its fragment: 32 bits of each matrix, two 16-bit elements (one of 32 bits, four of 8),
        2n (n, 4n) values in all."""
        label = "ptxpy.ldmatrix"
        positional = sum(a.keyword is None for a in node.args)
        if positional > 2:
            raise self.error(f"{label}() takes a row and a count, and an optional trans= "
                             f"({positional} given)", node)
        row_node, count_node, trans_node = self.args(node, label, 2, 3,
                                                     keywords=("row", "count", "trans"))
        array, lead, start, width = self.async_operand(row_node, label, "row")
        elem = self.arrays[array].elem
        if elem.is_bool or elem.bits == 64 or width * elem.nbytes != 16:
            raise self.error(f"each lane of {label} gives a 16-byte row: s[r, c:c + 8] of f16, "
                             f"bf16, i16, u16, s[r, c:c + 4] of f32, i32, u32 or s[r, c:c + 16] "
                             f"of i8, u8; got '{code_of(row_node)}'", row_node)
        count = self.const_value(count_node, f"the matrix count of {label}")
        if type(count) is not int or count not in (1, 2, 4):
            raise self.error(f"{label} loads 1, 2 or 4 matrices, got {count!r}", count_node)
        trans = False
        if trans_node is not None:
            trans = self.const_value(trans_node, f"trans= of {label}")
            if type(trans) is not bool:
                raise self.error(f"trans= of {label} is True or False, got {trans!r}", trans_node)
            if trans and elem.bits != 16:
                raise self.error(f"{label}(..., trans=True) transposes 16-bit elements; '{array}' "
                                 f"holds {elem}", trans_node)
        values = count * (32 // elem.bits)
        return typed.Intrinsic(self.loc(node), TupleType((elem,) * values), "ldmatrix", [],
                               {"row": (array, lead, start, width), "count": count, "trans": trans})

    def wgmma_call(self, name: str, node: cst.Call) -> typed.Expr:
        """`ptxpy.wgmma_fence()`, `wgmma_commit()`, `wgmma_wait(n)`, `fence_proxy_async()`,
        `wgmma_desc(...)` and `wgmma(...)`: PTX's wgmma.fence, commit_group, wait_group,
        fence.proxy.async, a shared-memory matrix descriptor and wgmma.mma_async."""
        loc, label = self.loc(node), f"ptxpy.{name}"
        if name == "wgmma":
            return self.wgmma(node)
        if name == "wgmma_desc":
            return self.wgmma_desc(node)
        if name != "wgmma_wait":
            self.args(node, label, 0)
            return typed.Intrinsic(loc, None, name, [])
        (count,) = self.args(node, label, 1)
        return typed.Intrinsic(loc, None, name, [], {"n": self.group_count(count, label)})

    def set_max_registers(self, name: str, node: cst.Call) -> typed.Expr:
        """`ptxpy.setmaxnreg_inc(n)` / `setmaxnreg_dec(n)`: PTX's setmaxnreg.{inc,dec}, the
        registers per thread of the calling warpgroup raised or lowered to a constant n."""
        label = f"ptxpy.{name}"
        (count_node,) = self.args(node, label, 1, keywords=("count",))
        count = self.const_value(count_node, f"the register count of {label}")
        if type(count) is not int or count not in MAX_REGISTER_COUNTS:
            raise self.error(f"{label}(n) needs a constant n from 24 to 256, a multiple of 8 "
                             f"(registers per thread), got {count!r}", count_node)
        return typed.Intrinsic(self.loc(node), None, name, [], {"n": count})

    def fp8_conversion(self, name: str, node: cst.Call) -> typed.Expr:
        """`ptxpy.to_fp8(x, format)`: an f32 rounded to the fp8 format ("e4m3" or "e5m2"),
        to nearest even, saturating to the largest finite value; its byte as u8.
        `ptxpy.from_fp8(byte, format)`: the value of an fp8 byte as f32 (exact)."""
        label = f"ptxpy.{name}"
        value_node, format_node = self.args(node, label, 2, keywords=("value", "format"))
        source, result = FP8_CONVERSIONS[name]
        if format_node.__class__ is not cst.SimpleString or \
                format_node.evaluated_value not in FP8_KINDS:
            raise self.error(f"the format of {label} is \"e4m3\" or \"e5m2\", got "
                             f"'{code_of(format_node)}'", format_node)
        value = self.value(value_node)
        if not can_convert_implicitly(value.type, source, is_weak(value)):
            raise self.error(f"{label} takes {'an' if source == f32 else 'a'} {source} value "
                             f"(cast it: {source}(...)), got {value.type}", value_node)
        return typed.Intrinsic(self.loc(node), result, name, [convert(value, source)],
                               {"format": format_node.evaluated_value})

    def wgmma_desc(self, node: cst.Call) -> typed.Expr:
        """`ptxpy.wgmma_desc(s[i, j], swizzle, lbo, sbo)`: the u64 descriptor of the matrix
        that starts at shared element s[i, j]: its address, the leading and stride byte
        offsets and the swizzle mode (bytes: 0, 32, 64 or 128), all but the address constants."""
        label = "ptxpy.wgmma_desc"
        ref_node, swizzle_node, lbo_node, sbo_node = self.args(
            node, label, 4, keywords=("ref", "swizzle", "lbo", "sbo"))
        array, lead, start, width = self.async_operand(ref_node, label, "matrix")
        if width != 1:
            raise self.error(f"the matrix of {label} is the element it starts at (s[i, j]), got "
                             f"'{code_of(ref_node)}'", ref_node)
        swizzle = self.const_value(swizzle_node, f"the swizzle of {label}")
        if type(swizzle) is not int or swizzle not in WGMMA_SWIZZLES:
            raise self.error(f"the swizzle of {label} is 0, 32, 64 or 128 (bytes), got {swizzle!r}",
                             swizzle_node)
        offsets = []
        for what, n in (("lbo", lbo_node), ("sbo", sbo_node)):
            value = self.const_value(n, f"{what}= of {label}")
            if type(value) is not int or value % 16 or not 0 <= value < 1 << 18:
                raise self.error(f"{what}= of {label} is a byte offset, a multiple of 16 from 0 "
                                 f"to {(1 << 18) - 16}, got {value!r}", n)
            offsets.append(value)
        return typed.Intrinsic(self.loc(node), u64, "wgmma_desc", [],
                               {"ref": (array, lead, start, 1), "swizzle": swizzle,
                                "lbo": offsets[0], "sbo": offsets[1]})

    def wgmma(self, node: cst.Call) -> typed.Expr:
        """`ptxpy.wgmma(acc, a_desc, b_desc, dtype[, trans_a=, trans_b=, accumulate=])`: a
        warpgroup's acc += A B (acc = A B where `accumulate` is false) on the tensor cores,
        A (64 x K) and B (K x N) in shared memory as their descriptors say, or A in registers
        (a tuple of the thread's fragment in place of a_desc), acc the thread's N / 2 f32
        accumulators (i32 for i8 and u8) in a local array (N from its size, checked where it
        is known)."""
        label = "ptxpy.wgmma"
        positional = sum(a.keyword is None for a in node.args)
        if positional > 4:
            raise self.error(f"{label}() takes acc, a_desc, b_desc and dtype, then trans_a=, "
                             f"trans_b= and accumulate= by keyword ({positional} given)", node)
        acc_node, a_node, b_node, dtype_node, ta_node, tb_node, acc_flag = self.args(
            node, label, 4, 7,
            keywords=("acc", "a_desc", "b_desc", "dtype", "trans_a", "trans_b", "accumulate"))
        acc = self.array_arg(acc_node, f"the accumulators of {label}")
        formats = self.fp8_formats(dtype_node)
        if formats:             # fp8: the arrays hold the bytes (u8 or i8), the name the format
            elem = u8
            kind = formats[0]
        else:
            elem = scalar_named(self.qualname(dtype_node))
            if elem is None or elem.name not in WGMMA_TYPES:
                raise self.error(f"the dtype of {label} is f16, bf16, f32 (tf32 products), i8, u8, "
                                 f"\"e4m3\" or \"e5m2\" (fp8; a pair of them for A and B), got "
                                 f"'{code_of(dtype_node)}'", dtype_node)
            kind = WGMMA_TYPES[elem.name]
        sums = i32 if kind in ("s8", "u8") else f32
        if self.arrays[acc].elem != sums:
            of = f" of {elem}" if sums == i32 else ""
            raise self.error(f"the accumulators of {label}{of} are a local {sums} array; '{acc}' "
                             f"holds {self.arrays[acc].elem}", acc_node)
        trans = []
        for what, n in (("trans_a", ta_node), ("trans_b", tb_node)):
            flag = False if n is None else self.const_value(n, f"{what}= of {label}")
            if type(flag) is not bool:
                raise self.error(f"{what}= of {label} is True or False, got {flag!r}", n)
            if flag and elem.bits != 16:
                what_type = {"tf32": "f32 (tf32)", "s8": "i8", "u8": "u8"}.get(kind, kind)
                raise self.error(f"{label} of {what_type} reads A and B K-major only: {what}=True "
                                 f"needs f16 or bf16", n)
            trans.append(flag)
        a_regs = a_node.__class__ is cst.Tuple
        if a_regs and trans[0]:
            raise self.error(f"trans_a= of {label} needs A in shared memory: a fragment in "
                             "registers is read as it is", ta_node)
        operands = self.wgmma_fragment(a_node, elem, label, kind if formats else elem.name) \
            if a_regs else []
        for what, n in (("a_desc", a_node), ("b_desc", b_node))[len(operands) > 0:]:
            value = self.value(n)
            if not can_convert_implicitly(value.type, u64, is_weak(value)):
                registers = " or a tuple of the thread's fragment" if what == "a_desc" else ""
                raise self.error(f"{what} of {label} is a u64 descriptor (ptxpy.wgmma_desc)"
                                 f"{registers}, got {value.type}", n)
            operands.append(convert(value, u64))
        scale = typed.Constant(self.loc(node), bool_, True) if acc_flag is None else \
            truthy(self.value(acc_flag))
        self.mark_written(acc)
        mixed = {"b": formats[1]} if formats and formats[1] != kind else {}
        return typed.Intrinsic(self.loc(node), None, "wgmma", [*operands, scale],
                               {"acc": acc, "ab": kind, "trans_a": trans[0], "trans_b": trans[1],
                                **({"a_regs": True} if a_regs else {}), **mixed})

    @staticmethod
    def fp8_formats(node) -> tuple:
        """(A's, B's) fp8 formats of a wgmma dtype "e4m3" / "e5m2", or a tuple of two such
        strings (A's, B's); () for another dtype."""
        if node.__class__ is cst.SimpleString and node.evaluated_value in FP8_KINDS:
            return (node.evaluated_value,) * 2
        if node.__class__ is cst.Tuple and len(node.elements) == 2:
            values = [e.value for e in node.elements]
            if all(v.__class__ is cst.SimpleString and v.evaluated_value in FP8_KINDS
                   for v in values):
                return tuple(v.evaluated_value for v in values)
        return ()

    def wgmma_fragment(self, node: cst.Tuple, elem: Scalar, label: str, dtype: str) -> list:
        """A in registers: the thread's fragment of its warp's 16 rows of A, as mma_sync's A
        (8 f16/bf16 values, 4 f32 ones read as tf32, or 16 8-bit ones: i8 or u8, fp8's bytes
        as u8), each converted to the dtype."""
        count = {32: 4, 16: 8, 8: 16}[elem.bits]
        items = node.elements
        if len(items) != count or any(e.__class__ is not cst.Element for e in items):
            raise self.error(f"the A fragment of {label} of {dtype} is a tuple of {count} {elem} "
                             f"values (the thread's elements of A, as mma_sync's a), got "
                             f"'{code_of(node)}'", node)
        values = []
        for item in items:
            value = self.value(item.value)
            if not can_convert_implicitly(value.type, elem, is_weak(value)):
                raise self.error(f"{label}: '{code_of(item.value)}' is {value.type}, where {elem} "
                                 f"is needed (cast it: {elem}(...))", item.value)
            values.append(convert(value, elem))
        return values

    def async_operand(self, node: cst.BaseExpression, label: str, what: str) -> tuple:
        """(array, leading index Exprs, start Expr, width) of `a[i]`, `a[r, j]` or a slice
        `a[r, j:j + W]`."""
        if not (isinstance(node, cst.Subscript) and isinstance(node.value, cst.Name)
                and node.value.value in self.arrays):
            raise self.error(f"the {what} of {label} is an array element or slice (s[i, j:j + 4]), "
                             f"got '{code_of(node)}'", node)
        array = node.value.value
        if any(e.slice.__class__ is cst.Slice for e in node.slice):
            lead, start, width = self.slice_parts(array, node)
            if width < 1:
                raise self.error(f"the {what} of {label} is an empty slice", node)
            return array, lead, start, width
        *lead, start = self.indices(array, node)
        return array, lead, start, 1

    def shuffle_width(self, label: str, node: cst.BaseExpression) -> int:
        """CUDA's `width`: the warp as segments of that many lanes, a constant power of two."""
        width = self.const_value(node, f"the width of {label}")
        if isinstance(width, bool) or not isinstance(width, int) or width not in (1, 2, 4, 8, 16, 32):
            raise self.error(f"the width of {label} must be 1, 2, 4, 8, 16 or 32, got {width!r}", node)
        return width

    # device functions
    def call_func(self, name: str, node: cst.Call) -> typed.Expr:
        decl = self.parsed.funcs[name]
        names = tuple(p.name for p in decl.params)
        required = sum(p.default is None for p in decl.params)
        nodes = self.args(node, name, required, len(names), keywords=names)
        consts = self.const_args(name, decl, nodes)
        fdef, key = self.program.func(name, self.loc(node), consts)
        args, bound = [], {}
        for param, arg in zip(decl.params, nodes):
            if isinstance(param.type, ConstType):
                continue
            if isinstance(param.type, ArrayType):
                array = self.array_arg(arg, f"parameter '{param.name}' of {name}()")
                if self.arrays[array] != param.type:
                    raise self.error(f"parameter '{param.name}' of {name}() is {param.type}, but "
                                     f"'{array}' is {self.arrays[array]}", arg)
                bound[param.name] = array
                args.append(typed.ArrayArg(self.loc(arg), param.type, array))
            elif isinstance(arg, cst.Name) and arg.value in self.arrays:
                raise self.error(f"parameter '{param.name}' of {name}() is {param.type}, but "
                                 f"'{arg.value}' is {self.arrays[arg.value]}", arg)
            else:
                args.append(convert(self.value(arg), param.type))
        for pname in fdef.written_arrays:
            self.mark_written(bound[pname])
        for pname in fdef.ordered_arrays:
            self.mark_ordered(bound[pname])
        for pname, maps in fdef.tensor_maps.items():
            if bound[pname] not in self.array_params:
                raise self.error(f"{name}() copies boxes of its parameter '{pname}' through a "
                                 f"tensor map (ptxpy.tma_load/tma_store): pass it an array "
                                 f"parameter of the kernel, not '{bound[pname]}'", node)
            for entry in maps:
                self.add_tensor_map(bound[pname], entry)
        return typed.Call(self.loc(node), decl.return_type, key, args)

    def const_args(self, name: str, decl, nodes: list) -> dict:
        """The values of the call's arguments for `Const` parameters (the default where left out)."""
        consts = {}
        for param, arg in zip(decl.params, nodes):
            if not isinstance(param.type, ConstType):
                continue
            if arg is None:
                consts[param.name] = param.default
                continue
            value = self.const_value(arg, f"the argument for Const parameter '{param.name}' of {name}()")
            converted = param.type.value_of(value)
            if converted is None:
                raise self.error(f"Const parameter '{param.name}' of {name}() is {param.type} but was "
                                 f"given {value!r}", arg)
            consts[param.name] = literal_value(converted, self.loc(arg))
        return consts

    # print
    def print_stmt(self, node: cst.Call) -> typed.Print:
        sep, end, parts, args = " ", "\n", [], []
        keywords = set()
        for arg in node.args:
            if arg.star:
                raise self.error(f"'{arg.star}' arguments are not supported", arg)
            if arg.keyword is not None:
                if arg.keyword.value in keywords:
                    raise self.error(f"keyword argument repeated: '{arg.keyword.value}'", arg)
                keywords.add(arg.keyword.value)
                if arg.keyword.value not in ("sep", "end"):
                    raise self.error(f"print() got an unsupported keyword argument '{arg.keyword.value}'", arg)
                text = self.string_literal(arg.value, f"print()'s {arg.keyword.value}=")
                sep, end = (text, end) if arg.keyword.value == "sep" else (sep, text)
                continue
            if isinstance(arg.value, (cst.SimpleString, cst.ConcatenatedString)):
                parts.append(_escape(self.string_literal(arg.value, "a print() argument")))
                continue
            value = self.value(arg.value)
            if is_weak(value):
                parts.append(_escape(str(value.value)))
                continue
            fmt, promoted = PRINT_FORMATS[value.type.name]
            parts.append(fmt)
            args.append(convert(value, promoted) if promoted else value)
        return typed.Print(self.loc(node), _escape(sep).join(parts) + _escape(end), args)

    def string_literal(self, node: cst.BaseExpression, what: str) -> str:
        value = None
        if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)):
            value = node.evaluated_value
        if not isinstance(value, str):
            raise self.error(f"{what} must be a string literal", node)
        if "\0" in value:
            raise self.error("print() text cannot contain a NUL character ('\\0')", node)
        return value


def _bit_type(t: Scalar) -> Scalar:
    """The type a bit function computes in: 32- and 64-bit integers their own, bool i32, 8- and
    16-bit integers i32 when signed and u32 when unsigned (their value kept, as CUDA converts
    them to int or unsigned)."""
    if t.is_bool:
        return i32
    if t.bits < 32:
        return i32 if t.is_signed else u32
    return t


def _escape(text: str) -> str:
    return text.replace("%", "%%")


def _count(low: int, high: int) -> str:
    if low == high:
        return f"{low} argument" + ("" if low == 1 else "s")
    return f"{low} to {high} arguments"


def _base_name(node: cst.CSTNode) -> str:
    while isinstance(node, cst.Attribute):
        node = node.value
    return node.value if isinstance(node, cst.Name) else ""


def _fold_min_max(name: str, numbers: list):
    """min/max of constants as the kernel computes them at run time (CUDA's fminf/fmaxf on
    floats: a NaN is ignored unless all are NaN, -0.0 is below 0.0), else as Python's."""
    result = numbers[0]
    for number in numbers[1:]:
        if number != number:            # NaN
            continue
        negative = math.copysign(1, number) < 0
        if result != result or (number == result == 0 and negative != (math.copysign(1, result) < 0)):
            result = number if result != result or negative == (name == "min") else result
        else:
            result = min(result, number) if name == "min" else max(result, number)
    return result


def subscripted(node: cst.BaseExpression, names) -> str | None:
    """The name of `a` in `a[...]` where it is among `names`."""
    if (isinstance(node, cst.Subscript) and isinstance(node.value, cst.Name)
            and node.value.value in names):
        return node.value.value
    return None


def promoted_floats(values: list) -> list:
    """The typed arguments of a float function, promoted together; integers become f32."""
    t = join(values)
    if not t.is_float:
        t = f32
    return [convert(v, t) for v in values]
