"""Typing of expressions: literals, names, arrays, operators, conversions.

Weak types (SPEC 2.1): a literal, module constant or `Const` value is a `typed.Constant` with
`weak=True`; it takes the type of the other operand of a binary operator. Operations on two weak
constants are folded here with Python semantics, so a weak expression is always a Constant.
"""
from __future__ import annotations

import difflib
import math

import libcst as cst

from ptxpy.types import Scalar, TupleType, bool_, f32, i32, i64, promote, u64

from . import typed
from .errors import CompileError
from .floatbits import int_to_float, round_to
from .scope import (COMPARE_OPS, CONST_FUNCS, KERNEL_BUILTINS, PTXPY_NAMES,
                    NotConstant, code_of, const_eval, fold_binary, fold_unary, number_literal,
                    arithmetic_problem, qualname_constant, subscript_items)

BINARY_NAMES = {
    cst.Add: "add", cst.Subtract: "sub", cst.Multiply: "mul", cst.Divide: "truediv",
    cst.FloorDivide: "floordiv", cst.Modulo: "mod", cst.LeftShift: "shl", cst.RightShift: "shr",
    cst.BitAnd: "and", cst.BitOr: "or", cst.BitXor: "xor", cst.Power: "pow",
}
OPERATOR_TEXT = {
    "add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "mod": "%", "shl": "<<",
    "shr": ">>", "and": "&", "or": "|", "xor": "^", "pow": "**",
}
COMPARE_NAMES = {
    cst.Equal: "eq", cst.NotEqual: "ne", cst.LessThan: "lt", cst.LessThanEqual: "le",
    cst.GreaterThan: "gt", cst.GreaterThanEqual: "ge",
}
THREAD_NAMES = frozenset(f"{v}.{a}" for v in typed.DIM3_NAMES
                         for a in "xyz")
UNSUPPORTED_EXPRESSIONS = {
    "List": "lists are not supported in kernels",
    "ListComp": "list comprehensions are not supported in kernels",
    "Dict": "dicts are not supported in kernels",
    "DictComp": "dict comprehensions are not supported in kernels",
    "Set": "sets are not supported in kernels",
    "SetComp": "set comprehensions are not supported in kernels",
    "GeneratorExp": "generator expressions are not supported in kernels",
    "Lambda": "lambda functions are not supported in kernels",
    "Await": "'await' is not supported in kernels",
    "Yield": "generators ('yield') are not supported in kernels",
    "NamedExpr": "assignment expressions (':=') are not supported in kernels",
    "StarredElement": "starred expressions ('*x') are not supported in kernels",
    "SimpleString": "strings are only supported as print() arguments and assert messages",
    "ConcatenatedString": "strings are only supported as print() arguments and assert messages",
    "FormattedString": "f-strings are not supported in kernels",
    "TemplatedString": "template strings are not supported in kernels",
    "Ellipsis": "'...' is not a value",
    "Imaginary": "complex numbers are not supported in kernels",
    "Tuple": "tuples are only supported in assignments, return statements and array indices",
}


# --- constants and conversions ---------------------------------------------------------------
def literal_type(value, loc) -> Scalar:
    """The type of a literal: bool, i32 (i64, then u64, where it does not fit), f32."""
    if isinstance(value, bool):
        return bool_
    if isinstance(value, int):
        if -2**31 <= value < 2**31:
            return i32
        if -2**63 <= value < 2**63:
            return i64
        if 0 <= value < 2**64:
            return u64
        raise CompileError(f"integer constant {shown_number(value)} does not fit in 64 bits", loc)
    return f32


def shown_number(value) -> str:
    """An integer as a message shows it: in full up to 30 digits, else its first digits and
    its length (`10715086071862...376 (302 digits)`)."""
    text = str(value)
    digits = len(text.lstrip("-"))
    return text if digits <= 30 else f"{text[:15]}...{text[-3:]} ({digits} digits)"


def literal_value(value, loc):
    """Check that a Python value can be a weak constant; return it."""
    literal_type(value, loc)
    return value


_VALUES = (cst.Subscript, cst.Call, cst.BinaryOperation, cst.UnaryOperation, cst.Integer,
           cst.Float)


def method_problem(node: cst.Attribute) -> str:
    """`x[i].item()`, `(a + b).astype(...)`: NumPy habits on a value."""
    value, attr = code_of(node.value), node.attr.value
    hint = {"item": f": '{value}' is already a number, write {value}",
            "astype": f": convert with a type, as f32{value if value[0] == '(' else f'({value})'}"
            }.get(attr, "")
    return f"'{value}.{attr}': values have no attributes or methods in kernels{hint}"


def weak_constant(value, loc) -> typed.Constant:
    const = typed.Constant(loc, literal_type(value, loc), value)
    const.weak = True
    return const


def folded_constant(value, loc) -> typed.Constant:
    """The result of folding weak constants. An integer beyond 64 bits is allowed here, as an
    intermediate value of a constant expression (`(1 << 64) - 1`, as at module level); it is
    marked `wide`, and `FunctionChecker.expr` refuses it anywhere but as an operand of another
    fold or of a comparison."""
    if isinstance(value, int) and not isinstance(value, bool) and not -2**63 <= value < 2**64:
        const = typed.Constant(loc, i64, value)
        const.weak = const.wide = True
        return const
    return weak_constant(value, loc)


def is_wide(e: typed.Expr) -> bool:
    return getattr(e, "wide", False)


def is_weak(e: typed.Expr) -> bool:
    return getattr(e, "weak", False)


def wrap_int(value: int, t: Scalar) -> int:
    value &= (1 << t.bits) - 1
    if t.is_signed and value >= 1 << (t.bits - 1):
        value -= 1 << t.bits
    return value


def convert_value(value, t: Scalar, loc, weak: bool = True):
    """A Python constant converted to `t` as a cast does (ints wrap, floats truncate and saturate).

    A weak constant's NaN or infinity cannot become an integer (`int(math.nan)` is an error, as
    in Python); a typed one converts as at run time (`u8(f16(70000.0))` is 255, NaN gives 0)."""
    if t.is_bool:
        return bool(value)
    if t.is_int:
        if isinstance(value, float):
            low, high = (-(1 << (t.bits - 1)), (1 << (t.bits - 1)) - 1) if t.is_signed else (0, (1 << t.bits) - 1)
            if math.isnan(value):
                if weak:
                    raise CompileError(f"cannot convert nan to {t}", loc)
                return 0
            if math.isinf(value):
                if weak:
                    raise CompileError(f"cannot convert {value} to {t}", loc)
                return high if value > 0 else low
            return max(low, min(high, int(value)))
        return wrap_int(int(value), t)
    if isinstance(value, int):   # rounded once, also beyond 2^53
        return int_to_float(value, t.name)
    return round_to(float(value), t.name)   # f64: itself; narrower: nearest, too large: +-inf


def convert(e: typed.Expr, t: Scalar) -> typed.Expr:
    """`e` as a value of type `t`: a Cast node, or a constant converted at compile time."""
    if isinstance(e, typed.Constant) and (is_weak(e) or e.type != t):
        return typed.Constant(e.loc, t, convert_value(e.value, t, e.loc, is_weak(e)))
    if e.type == t:
        return e
    return typed.Cast(e.loc, t, e)


def join(exprs: list) -> Scalar:
    """The type a binary operator (or min, max, an if-expression) computes in (SPEC 2.1).

    A weak integer constant that does not fit the other operands' integer type counts as a
    value of its own type (`n < 3000000000` compares in i64) instead of wrapping silently.
    """
    types = [e.type for e in exprs]
    if all(is_weak(e) for e in exprs):
        return _literal_join(types)
    t = _promote_all(types, [is_weak(e) for e in exprs])
    if t.is_int:
        weak = [is_weak(e) and (not e.type.is_int or fits(e.value, t)) for e in exprs]
        if weak != [is_weak(e) for e in exprs]:     # arithmetic on a bool counts in i32
            types = [i32 if ty.is_bool and not is_weak(e) else ty for ty, e in zip(types, exprs)]
        t = _promote_all(types, weak)
    return t


def _promote_all(types: list, weak: list) -> Scalar:
    """The types joined, the typed ones first: `max(i16, 0.5, u64)` is f64, as i16 with u64
    is, whatever the order (one at a time from the left, i16 with 0.5 would be a weak f32)."""
    order = sorted(range(len(types)), key=weak.__getitem__)
    t, t_weak = types[order[0]], weak[order[0]]
    for k in order[1:]:
        t, t_weak = promote(t, types[k], t_weak, weak[k])
    return t


def fits(value, t: Scalar) -> bool:
    """Whether the integer `value` is representable in the integer type `t`."""
    if t.is_signed:
        return -(1 << (t.bits - 1)) <= value < 1 << (t.bits - 1)
    return 0 <= value < 1 << t.bits


def _literal_join(types: list) -> Scalar:
    if any(t.is_float for t in types):
        return f32
    if all(t.is_bool for t in types):
        return bool_
    ints = [t for t in types if t.is_int]
    return max(ints, key=lambda t: (t.bits, t == u64))


def table_load(loc, t: Scalar, name: str, table: tuple, index: typed.Expr) -> typed.TableLoad:
    """`name[index]` read as a `t`: the table's numbers are converted as a cast converts
    constants (`f64(TAPS[k])` reads a table of the doubles Python holds)."""
    return typed.TableLoad(loc, t, name, tuple(convert_value(v, t, loc) for v in table), index)


def table_type(name: str, values: tuple, loc) -> Scalar:
    """The type a run-time index reads a tuple constant's numbers in: the type a variable
    assigned one of them would have, joined over them (f32 for floats, else i32, i64 or u64)."""
    t = _literal_join([literal_type(v, loc) for v in values])
    if t == u64 and min(values) < 0:
        raise CompileError(f"'{name}' mixes negative numbers with numbers from 2**63 on: no "
                           "integer type holds them all, so it cannot be indexed at run time", loc)
    return t


def truthy(e: typed.Expr) -> typed.Expr:
    """`e` as a condition: a bool, or `e != 0` for a number."""
    if e.type == bool_:
        return e
    if isinstance(e, typed.Constant):
        return typed.Constant(e.loc, bool_, bool(e.value))
    zero = typed.Constant(e.loc, e.type, 0.0 if e.type.is_float else 0)
    return typed.Compare(e.loc, bool_, ["ne"], [e, zero], [e.type])


# --- the expression checker ------------------------------------------------------------------
#: (checker class, libcst node class) -> the checker's `_e_NAME` method (looked up by name once)
_EXPR_METHODS: dict = {}


class ExprChecker:
    """Mixin of FunctionChecker: `self.expr(node)` types an expression node.

    Uses: self.parsed, self.scope, self.vars (name -> Scalar), self.arrays (name -> ArrayType),
    self.consts (Const name -> value), self.local_names (names assigned in the function).
    """

    def loc(self, node: cst.CSTNode):
        return self.parsed.top.positions.get(node)   # (`self.parsed.loc(node)`, inline)

    def error(self, message: str, node: cst.CSTNode) -> CompileError:
        return CompileError(message, self.loc(node))

    def expr(self, node: cst.BaseExpression) -> typed.Expr:
        method = _EXPR_METHODS.get((self.__class__, node.__class__)) or self.expr_method(node)
        e = method(self, node)
        if e.__class__ is typed.Constant and is_wide(e):
            literal_type(e.value, e.loc)   # raises: the value does not fit in 64 bits
        return e

    def operand(self, node: cst.BaseExpression) -> typed.Expr:
        """`expr(node)`, where a constant beyond 64 bits may still be folded further."""
        method = _EXPR_METHODS.get((self.__class__, node.__class__)) or self.expr_method(node)
        return method(self, node)

    def expr_method(self, node: cst.BaseExpression):
        method = getattr(self.__class__, "_e_" + type(node).__name__, None)
        if method is None:
            message = UNSUPPORTED_EXPRESSIONS.get(type(node).__name__)
            raise self.error(message or f"unsupported expression '{code_of(node)}'", node)
        _EXPR_METHODS[self.__class__, node.__class__] = method
        return method

    def value(self, node: cst.BaseExpression, wide_ok: bool = False) -> typed.Expr:
        """A scalar value (not a tuple, not a call returning nothing); with `wide_ok`, also a
        constant beyond 64 bits, for folding."""
        e = self.operand(node) if wide_ok else self.expr(node)
        if isinstance(e.type, TupleType):
            raise self.error("a tuple cannot be used as a value here; unpack it: a, b = f(...)", node)
        if e.type is None:
            raise self.error(f"'{code_of(node)}' returns no value", node)
        return e

    def int_value(self, node: cst.BaseExpression, what: str) -> typed.Expr:
        e = self.value(node)
        if not e.type.is_int:
            raise self.error(f"{what} must be an integer, got {e.type}", node)
        return e

    # constants
    def const_value(self, node: cst.BaseExpression, what: str, hint: str = "", shape: bool = False):
        """The Python value of a compile-time expression, or a CompileError naming `what`: a
        number, or with `shape` also a tuple."""
        try:
            value = const_eval(node, self.const_lookup, self.const_callee)
        except NotConstant as err:
            undefined = self.undefined_name_error(err.node)
            if undefined is not None:     # a typo, not a variable: say that
                raise undefined from None
            reason = f" ({err.reason})" if err.reason else ""
            raise self.error(f"{what} must be a compile-time constant: literals, module constants, "
                             f"Const parameters and arithmetic on them{reason}{hint}", node) from None
        if isinstance(value, tuple) and not shape:
            raise self.error(f"{what} must be a number, not the tuple {value!r}", node)
        return value

    def undefined_name_error(self, node) -> CompileError | None:
        """The error for `node` where it is a name defined nowhere (`BLOK`, `ptxpy.WARPSIZE`),
        else None."""
        if node.__class__ is cst.Name:
            name = node.value
            if (self.is_local(name) or name in self.scope.constants or name in self.scope.others
                    or name in self.scope.unevaluated or name in self.parsed.funcs
                    or name in self.parsed.kernels or self.qualname(node) is not None):
                return None
            return self.name_error(node, None)
        if node.__class__ is cst.Attribute:
            qual = self.qualname(node)
            module, _, attr = (qual or "").partition(".")
            known = PTXPY_NAMES if module == "ptxpy" else MATH_NAMES if module == "math" else None
            if known is not None and attr and attr.split(".")[0] not in known:
                return self.name_error(node, qual)
        return None

    def const_callee(self, node: cst.CSTNode):
        return CONST_FUNCS.get(self.qualname(node) or "")

    def const_lookup(self, node: cst.CSTNode):
        if (node.__class__ is cst.Attribute and node.attr.value == "ndim"
                and isinstance(node.value, cst.Name) and node.value.value in self.arrays):
            return self.arrays[node.value.value].rank       # `x.ndim`: the rank, a constant
        if isinstance(node, cst.Name):
            name = node.value
            if name in self.consts:
                return self.consts[name]
            if self.is_local(name):
                raise NotConstant(node, f"'{name}' is a variable")
            if name in ("True", "False"):
                return name == "True"
            if name in self.scope.constants:
                return self.scope.constants[name]
        return qualname_constant(self.qualname(node), node)

    # names
    def is_local(self, name: str) -> bool:
        return (name in self.local_names or name in self.vars or name in self.arrays
                or name in self.consts)

    def qualname(self, node: cst.CSTNode) -> str | None:
        """Like ModuleScope.qualname, but None where a local name shadows the module's."""
        base = node
        while base.__class__ is cst.Attribute:
            base = base.value
        if not isinstance(base, cst.Name) or self.is_local(base.value):
            return None
        return self.scope.qualname(node)

    def _e_Name(self, node: cst.Name) -> typed.Expr:
        name = node.value
        if name in ("True", "False") and not self.is_local(name):
            return weak_constant(name == "True", self.loc(node))
        if name in self.arrays:
            raise self.error(f"array '{name}' cannot be used as a value; index it ({name}[i]) or pass "
                             "it to a @ptxpy.func", node)
        if name in self.consts:
            return weak_constant(self.consts[name], self.loc(node))
        if name in self.vars:
            return typed.Var(self.loc(node), self.vars[name], name)
        if name in self.local_names:
            raise self.error(f"local variable '{name}' is used before it is assigned", node)
        if name in self.scope.constants:
            return weak_constant(self.module_number(node), self.loc(node))
        return self.global_value(node)

    def tuple_constant_subscript(self, node: cst.Subscript) -> typed.Expr:
        """`TABLE[k]`: a weak constant where `k` is known at compile time, else a load from the
        table in `.const` memory."""
        table = self.scope.constants[node.value.value]
        items = subscript_items(node)
        if isinstance(table, tuple) and len(items) == 1 and not self.known_at_compile_time(items[0]):
            return self.table_load(node.value.value, table, items[0], node)
        return weak_constant(self.tuple_constant_item(node), self.loc(node))

    def known_at_compile_time(self, node: cst.BaseExpression) -> bool:
        try:
            const_eval(node, self.const_lookup, self.const_callee)
        except NotConstant:
            return False
        except CompileError:
            return True     # (tuple_constant_item reports it)
        return True

    def table_load(self, name: str, table: tuple, item: cst.BaseExpression,
                   node: cst.Subscript) -> typed.TableLoad:
        if not table or not all(isinstance(v, (int, float)) for v in table):
            raise self.error(f"{code_of(node)}: '{name}' is {table!r}; only a flat tuple of numbers "
                             "can be indexed with a run-time value", node)
        index = self.value(item)
        if not index.type.is_int:
            raise self.error(f"{code_of(node)}: a tuple constant's index must be an integer, got "
                             f"{index.type}", item)
        return table_load(self.loc(node), table_type(name, table, self.loc(node)), name, table,
                          convert(index, index.type))

    def tuple_constant_item(self, node: cst.Subscript):
        """`TILE[0]` of a module's tuple constant: a number known at compile time."""
        try:
            value = const_eval(node, self.const_lookup, self.const_callee)
        except NotConstant as err:
            reason, at = err.reason or "a tuple constant's index must be a compile-time integer", node
            if err.node is not node and err.node is not node.value:    # in the index
                reason, at = reason + " (a tuple constant's index must be a compile-time integer)", err.node
            raise self.error(f"{code_of(node)}: {reason}", at) from None
        if isinstance(value, tuple):
            raise self.error(f"{code_of(node)} is the tuple {value!r}, not a number", node)
        return value

    def module_number(self, node: cst.Name):
        value = self.scope.constants[node.value]
        if isinstance(value, tuple):
            raise self.error(f"'{node.value}' is the tuple constant {value!r}: use it as a shape "
                             f"(ptxpy.shared_array({node.value}, f32)) or take an item of it "
                             f"({node.value}[0])", node)
        return value

    def _e_Attribute(self, node: cst.Attribute) -> typed.Expr:
        base = node.value
        if isinstance(base, cst.Name) and base.value in self.arrays:
            return self.array_attribute(base.value, node)
        if (base.__class__ is cst.Attribute and base.attr.value == "shape"
                and isinstance(base.value, cst.Name) and base.value.value in self.arrays):
            name = base.value.value
            raise self.error(f"'{name}.shape' is a tuple of extents; it has no attribute "
                             f"'{node.attr.value}' (use {name}.shape[0])", node)
        if isinstance(base, cst.Name) and self.is_local(base.value):
            kind = self.vars.get(base.value, "a number")
            raise self.error(f"'{base.value}' is a scalar ({kind}) and has no attribute "
                             f"'{node.attr.value}'", node)
        return self.global_value(node)

    def global_value(self, node: cst.CSTNode) -> typed.Expr:
        qual = self.qualname(node)
        if qual is not None and qual.startswith("ptxpy.") and qual[6:] in THREAD_NAMES:
            return typed.Intrinsic(self.loc(node), i32, qual[6:], [])
        try:
            return weak_constant(qualname_constant(qual, node), self.loc(node))
        except NotConstant:
            raise self.name_error(node, qual) from None

    def name_error(self, node: cst.CSTNode, qual: str | None) -> CompileError:
        text = code_of(node)
        if isinstance(node, cst.Attribute) and qual is None:
            base = node
            while isinstance(base, cst.Attribute):
                base = base.value
            if isinstance(base, _STRINGS):
                return self.error(f"'{text}': string methods and formatting are not supported in "
                                  "kernels; print takes the values as arguments: print(\"x =\", x)",
                                  node)
            if not isinstance(base, cst.Name) and isinstance(node.value, _VALUES):
                return self.error(method_problem(node), node)
            if isinstance(base, cst.Name) and base.value in self.scope.constants:
                kind = "a tuple" if isinstance(self.scope.constants[base.value], tuple) else "a number"
                return self.error(f"'{base.value}' is {kind}; it has no attribute "
                                  f"'{node.attr.value}'", node)
            if isinstance(base, cst.Name) and self.scope.global_qualname(base.value) is None:
                return self.name_error(base, None)
        if isinstance(node, cst.Name) and node.value == "None":
            return self.error("None is not a value in kernels", node)
        if isinstance(node, cst.Name):
            name = node.value
            if name in self.parsed.funcs:
                return self.error(f"@ptxpy.func '{name}' must be called", node)
            if name in self.parsed.kernels:
                return self.error(f"'{name}' is a @ptxpy.jit kernel; kernels cannot be used inside "
                                  "kernels (make it a @ptxpy.func)", node)
            if self.scope.others.get(name) == "function":
                return self.error(f"'{name}' is not a @ptxpy.func; decorate it with @ptxpy.func to "
                                  "call it from a kernel", node)
            if name in self.scope.unevaluated:
                return self.error(f"name '{name}' {self.scope.unevaluated[name]}", node)
            if name in self.scope.others:
                what = self.scope.others[name]
                if what.startswith(_EXPLAINED):
                    return self.error(f"name '{name}' is {what}", node)
                return self.error(f"name '{name}' is {_article(what)} "
                                  "(kernels can use parameters, locals, module constants, "
                                  "@ptxpy.func functions, math and ptxpy)", node)
        if qual is None:
            hint = _name_hint(text) or self.closest_name_hint(text)
            return self.error(f"name '{text}' is not defined{hint}", node)
        return self.error(_qualname_problem(qual, text), node)

    def closest_name_hint(self, name: str) -> str:
        """`; did you mean BLOCK?` for a name close to a module constant, a variable, a
        parameter or a device function."""
        known = [*self.scope.constants, *self.vars, *self.arrays, *self.consts, *self.local_names,
                 *self.parsed.funcs]
        close = difflib.get_close_matches(name, sorted(set(known)), n=1, cutoff=0.75)
        return f"; did you mean {close[0]}?" if close else ""

    # arrays
    def array_attribute(self, name: str, node: cst.Attribute) -> typed.Expr:
        attr, kind = node.attr.value, self.arrays[name]
        loc = self.loc(node)
        if attr == "size":
            size = typed.Shape(loc, i32, name, 0)
            for dim in range(1, kind.rank):
                size = typed.Binary(loc, i32, "mul", size, typed.Shape(loc, i32, name, dim))
            return size
        if attr == "ndim":
            return weak_constant(kind.rank, loc)
        if attr == "shape":
            unpack = ", ".join("nmkl"[:kind.rank]) if kind.rank > 1 else "n,"
            raise self.error(f"'{name}.shape' is a tuple; use one extent ({name}.shape[0]) or "
                             f"unpack it into variables: {unpack} = {name}.shape", node)
        raise self.error(f"arrays have no attribute '{attr}' (use {name}.shape[k], {name}.size or "
                         f"len({name}))", node)

    def _e_Subscript(self, node: cst.Subscript) -> typed.Expr:
        base = node.value
        if (base.__class__ is cst.Attribute and base.attr.value == "shape"
                and base.value.__class__ is cst.Name and base.value.value in self.arrays):
            return self.shape_item(base.value.value, node)
        if isinstance(base, cst.Name) and base.value in self.arrays:
            name = base.value
            indices = self.indices(name, node)
            return typed.Load(self.loc(node), self.arrays[name].elem, name, indices)
        if isinstance(base, cst.Call):
            return self.tuple_item(node)
        if isinstance(base, cst.Name) and base.value in self.scope.constants and not self.is_local(base.value):
            return self.tuple_constant_subscript(node)
        if isinstance(base, cst.Name) and base.value in self.vars:
            raise self.error(f"'{base.value}' is a scalar ({self.vars[base.value]}), not an array", node)
        root = base
        while root.__class__ is cst.Subscript:
            root = root.value
        if isinstance(root, cst.Name) and root.value in self.scope.others and not self.is_local(root.value):
            raise self.name_error(root, None)
        raise self.chained_index_error(node) or self.error(
            f"'{code_of(base)}' cannot be indexed (only arrays can)", node)

    def chained_index_error(self, node: cst.Subscript) -> CompileError | None:
        """For `x[0][1]` on an array `x`: an error saying how to index it; else None."""
        levels, base = [], node
        while base.__class__ is cst.Subscript:
            levels.append(base)
            base = base.value
        levels.reverse()
        items = [subscript_items(level) for level in levels]
        if not (isinstance(base, cst.Name) and base.value in self.arrays) or not all(items):
            return None
        name, kind = base.value, self.arrays[base.value]
        indices = [code_of(item) for level in items for item in level]
        if len(indices) > kind.rank:
            return self.error(f"'{code_of(_element_of(levels, items, kind.rank))}' is an element "
                              f"of '{name}' ({kind.elem}); it cannot be indexed", node)
        example = ", ".join(indices if len(indices) == kind.rank else "ijkl"[:kind.rank])
        hint = f"index it with all {kind.rank} indices at once: {name}[{example}]"
        return self.error(f"'{name}' is an array of rank {kind.rank}; {hint}", node)

    def shape_item(self, name: str, node: cst.Subscript) -> typed.Expr:
        items = subscript_items(node)
        if len(items) != 1:
            raise self.error(f"index {name}.shape with one compile-time integer", node)
        dim = self.const_value(items[0], f"the index of {name}.shape")
        rank = self.arrays[name].rank
        if not isinstance(dim, int) or isinstance(dim, bool):
            raise self.error(f"the index of {name}.shape must be an integer, got {dim!r}", items[0])
        if not -rank <= dim < rank:
            raise self.error(f"{name}.shape[{dim!r}] is out of range: '{name}' has rank {rank}", node)
        return typed.Shape(self.loc(node), i32, name, dim % rank)   # shape[-1]: as in Python

    def index_nodes(self, name: str, node: cst.Subscript) -> list:
        """The index expressions of `name[...]` (no slices), as many as the array's rank."""
        items = []
        for element in node.slice:
            if element.slice.__class__ is cst.Slice:   # (isinstance: an ABC check, slower)
                raise self.error("slices are only supported for vector access: "
                                 "v0, v1 = x[i:i + 2] or x[i:i + 2] = (v0, v1)", element)
            if element.slice.star is not None:
                raise self.error("starred indices are not supported", element)
            value = element.slice.value
            if value.__class__ is cst.Tuple and len(node.slice) == 1:
                items += [e.value for e in value.elements if isinstance(e, cst.Element)]
                if len(items) != len(value.elements):
                    raise self.error("starred indices are not supported", value)
            elif len(node.slice) == 1 and self.tuple_constant(value):
                constant = self.tuple_constant(value)
                if not all(isinstance(k, int) and not isinstance(k, bool) and k >= 0 for k in constant):
                    raise self.error(f"'{value.value}' is {constant!r}: indices must be integers from 0",
                                     value)
                items += [weak_constant(k, self.loc(value)) for k in constant]
            else:
                items.append(value)
        rank = self.arrays[name].rank
        if len(items) != rank:
            plural = "index" if len(items) == 1 else "indices"
            raise self.error(f"array '{name}' has rank {rank} but is indexed with {len(items)} "
                             f"{plural}", node)
        return items

    def tuple_constant(self, node: cst.BaseExpression) -> tuple | None:
        """The value of a module tuple constant named by `node` (`x[TILE]` indexes with its
        items, as in Python), else None."""
        if not (isinstance(node, cst.Name) and node.value in self.scope.constants
                and not self.is_local(node.value) and node.value not in self.consts):
            return None
        value = self.scope.constants[node.value]
        return value if isinstance(value, tuple) else None

    def indices(self, name: str, node: cst.Subscript) -> list:
        return [self.index(item) for item in self.index_nodes(name, node)]

    def index(self, node: cst.BaseExpression | typed.Expr) -> typed.Expr:
        e = node if isinstance(node, typed.Expr) else self.value(node)
        if not e.type.is_int:
            raise self.error(f"array indices must be integers, got {e.type}", node)
        if isinstance(e, typed.Constant) and e.value < 0:
            raise self.error(f"negative index {e.value}: indexing never wraps (a[-1] is not the "
                             "last element)", node)
        return convert(e, e.type)

    def tuple_item(self, node: cst.Subscript) -> typed.Expr:
        value = self.expr(node.value)
        if not isinstance(value.type, TupleType):
            raise self.error(f"'{code_of(node.value)}' cannot be indexed (only arrays can)", node)
        items = subscript_items(node)
        index = self.const_value(items[0], "a tuple index") if len(items) == 1 else None
        size = len(value.type.items)
        if not isinstance(index, int) or isinstance(index, bool) or not -size <= index < size:
            raise self.error(f"a tuple of {size} values needs a constant index from 0 to {size - 1}", node)
        index %= size
        return typed.TupleItem(self.loc(node), value.type.items[index], value, index)

    # literals
    def _e_Integer(self, node: cst.Integer) -> typed.Expr:
        return weak_constant(number_literal(node), self.loc(node))

    def _e_Float(self, node: cst.Float) -> typed.Expr:
        return weak_constant(number_literal(node), self.loc(node))

    # operators
    def _e_BinaryOperation(self, node: cst.BinaryOperation) -> typed.Expr:
        op = type(node.operator)
        if op is cst.MatrixMultiply:
            raise self.error("the '@' operator is not supported in kernels", node.operator)
        if op is cst.Power:
            return self.power(self.value(node.left, True), node.right, node)
        if op is cst.Modulo and isinstance(node.left, _STRINGS):     # "%d" % i
            raise self.error(f"'{code_of(node)}': string formatting is not supported in kernels; "
                             "print takes the values as arguments: print(\"x =\", x)", node)
        left, right = self.value(node.left, True), self.value(node.right, True)
        if is_wide(left) and not is_weak(right) or is_wide(right) and not is_weak(left):
            wide = left if is_wide(left) else right
            literal_type(wide.value, wide.loc)   # raises
        return self.binary(op, left, right, node)

    def binary(self, op: type, left: typed.Expr, right: typed.Expr, node) -> typed.Expr:
        loc, name = self.loc(node), BINARY_NAMES[op]
        if is_weak(left) and is_weak(right):
            return self.fold(op, left.value, right.value, node)
        if name in ("and", "or", "xor", "shl", "shr"):
            return self.bitwise(name, left, right, node)
        t = join([left, right])
        if t.is_bool:
            t = i32          # arithmetic on bools counts in integers, as in Python
        if name == "truediv" and not t.is_float:
            t = f32
        return typed.Binary(loc, t, name, convert(left, t), convert(right, t))

    def bitwise(self, name: str, left, right, node) -> typed.Expr:
        if left.type.is_float or right.type.is_float:
            raise self.error(f"operator '{OPERATOR_TEXT[name]}' needs integer or bool operands, got "
                             f"{left.type} and {right.type}", node)
        t = join([left, right])
        if t.is_float:   # u64 with a signed integer promotes to f64 (as in JAX)
            raise self.error(f"operator '{OPERATOR_TEXT[name]}' needs operands that promote to an "
                             f"integer type, but {left.type} and {right.type} promote to {t}; "
                             "cast one of them", node)
        if name in ("shl", "shr"):
            if isinstance(right, typed.Constant) and right.value < 0:
                raise self.error(f"negative shift count {right.value}", node)
            t = i32 if t.is_bool else t
            shift = convert(right, i32 if right.type.is_bool else right.type)
            return typed.Binary(self.loc(node), t, name, convert(left, t), shift)
        return typed.Binary(self.loc(node), t, name, convert(left, t), convert(right, t))

    def fold(self, op: type, a, b, node) -> typed.Expr:
        try:
            value = fold_binary(op, a, b)
        except (ArithmeticError, ValueError, TypeError) as err:
            raise self.error(f"cannot evaluate this constant expression: {arithmetic_problem(err)}",
                             node) from None
        return folded_constant(value, self.loc(node))

    def power(self, base: typed.Expr, exponent_node, node) -> typed.Expr:
        exponent = self.const_value(exponent_node, "the exponent of '**'",
                                    "; use math.pow for a run-time exponent")
        if isinstance(exponent, bool) or not isinstance(exponent, int):
            raise self.error(f"the exponent of '**' must be a compile-time integer, got {exponent!r} "
                             "(use math.pow or math.sqrt)", exponent_node)
        if is_weak(base):
            return self.fold(cst.Power, base.value, exponent, node)
        if base.type.is_bool:
            base = convert(base, i32)
        if exponent < 0 and not base.type.is_float:
            raise self.error(f"a negative exponent needs a float base, got {base.type}", node)
        return typed.Pow(self.loc(node), base.type, base, exponent)

    def _e_UnaryOperation(self, node: cst.UnaryOperation) -> typed.Expr:
        operand, op, loc = self.value(node.expression, True), node.operator, self.loc(node)
        if isinstance(op, cst.Not):
            cond = truthy(operand)
            if isinstance(cond, typed.Constant):
                return typed.Constant(loc, bool_, not cond.value)
            return typed.Unary(loc, bool_, "not", cond)
        if isinstance(op, cst.BitInvert) and not operand.type.is_int:
            hint = "; use 'not' for bools" if operand.type.is_bool else ""
            raise self.error(f"operator '~' needs an integer, got {operand.type}{hint}", node)
        if is_weak(operand):
            return folded_constant(fold_unary(op, operand.value), loc)
        if operand.type.is_bool:
            operand = convert(operand, i32)
        if isinstance(op, cst.Plus):
            return operand
        return typed.Unary(loc, operand.type, "neg" if isinstance(op, cst.Minus) else "invert", operand)

    def _e_BooleanOperation(self, node: cst.BooleanOperation) -> typed.Expr:
        """`a and b ...` / `a or b ...`; an operand after a compile-time constant that decides
        the result (False for `and`, True for `or`) is never evaluated, so it is not checked
        either (like a dead `if` branch); a constant that does not decide it is dropped."""
        op = "and" if isinstance(node.operator, cst.And) else "or"
        values = []
        for n in _flatten_boolean(node, type(node.operator)):
            v = truthy(self.value(n))
            if isinstance(v, typed.Constant):
                if v.value == (op == "or"):
                    if not values:
                        return typed.Constant(self.loc(node), bool_, v.value)
                    values.append(v)
                    break
                continue
            values.append(v)
        if not values:
            return typed.Constant(self.loc(node), bool_, op == "and")
        if len(values) == 1:
            return values[0]
        return typed.BoolOp(self.loc(node), bool_, op, values)

    def _e_Comparison(self, node: cst.Comparison) -> typed.Expr:
        ops = []
        for target in node.comparisons:
            if type(target.operator) not in COMPARE_NAMES:
                raise self.error(_comparison_problem(target.operator), target.operator)
            ops.append(COMPARE_NAMES[type(target.operator)])
        operands = [self.value(node.left, True)] + [self.value(t.comparator, True)
                                                     for t in node.comparisons]
        loc = self.loc(node)
        if all(is_weak(e) for e in operands):
            pairs = zip(node.comparisons, operands, operands[1:])
            result = all(COMPARE_OPS[type(t.operator)](a.value, b.value) for t, a, b in pairs)
            return typed.Constant(loc, bool_, result)
        for e in operands:
            if is_wide(e):
                literal_type(e.value, e.loc)   # raises: compared with a run-time value
        types = [join([a, b]) for a, b in zip(operands, operands[1:])]
        if all(isinstance(e, typed.Constant) for e in operands):   # typed constants: `i32(K) > 2`
            pairs = zip(node.comparisons, operands, operands[1:], types)
            result = all(COMPARE_OPS[type(t.operator)](convert(a, ty).value, convert(b, ty).value)
                         for t, a, b, ty in pairs)
            return typed.Constant(loc, bool_, result)
        operands = [_constant_for(e, k, types) for k, e in enumerate(operands)]
        return typed.Compare(loc, bool_, ops, operands, types)

    def _e_IfExp(self, node: cst.IfExp) -> typed.Expr:
        cond = truthy(self.value(node.test))
        if isinstance(cond, typed.Constant):
            # a compile-time condition: the other arm is not checked, and the value is the
            # chosen arm's (with its own type), as in Python
            return self.value(node.body if cond.value else node.orelse)
        then, orelse = self.value(node.body), self.value(node.orelse)
        t = join([then, orelse])
        return typed.IfExp(self.loc(node), t, cond, convert(then, t), convert(orelse, t))


def _element_of(levels: list, items: list, rank: int) -> cst.Subscript:
    """The subscript of a chain `x[0][1][2]` that has given the array all its `rank` indices."""
    count = 0
    for level, level_items in zip(levels, items):
        count += len(level_items)
        if count >= rank:
            return level
    return levels[-1]


def _flatten_boolean(node, op_type) -> list:
    if isinstance(node, cst.BooleanOperation) and isinstance(node.operator, op_type):
        return _flatten_boolean(node.left, op_type) + _flatten_boolean(node.right, op_type)
    return [node]


def _constant_for(e: typed.Expr, k: int, types: list) -> typed.Expr:
    """A constant operand of a comparison, converted when all its comparisons agree on a type."""
    if not isinstance(e, typed.Constant):
        return e
    used = {types[j] for j in (k - 1, k) if 0 <= j < len(types)}
    return convert(e, used.pop()) if len(used) == 1 else convert(e, e.type)


def _comparison_problem(op) -> str:
    if isinstance(op, (cst.In, cst.NotIn)):
        return "'in' is not supported in kernels"
    return "'is' comparisons are not supported in kernels; use == or !="


#: what ModuleScope.others says in full about a name (no list of what kernels can use follows)
_EXPLAINED = ("a module constant whose value cannot be computed", "a tuple holding tuples")


def _article(what: str) -> str:
    return what if what.startswith("a ") else f"a {what}"


_STRINGS = (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)
#: CUDA's names of what ptxpy has under another name
CUDA_NAMES = {"threadIdx": "thread_idx", "blockIdx": "block_idx", "blockDim": "block_dim",
              "gridDim": "grid_dim", "__syncthreads": "syncthreads", "syncThreads": "syncthreads",
              "__syncthreads_count": "syncthreads_count", "__syncthreads_and": "syncthreads_and",
              "__syncthreads_or": "syncthreads_or", "__match_any_sync": "match_any_sync",
              "__match_all_sync": "match_all_sync", "__nanosleep": "nanosleep", "__dp4a": "dp4a",
              "warpSize": "WARP_SIZE", "atomicAdd": "atomic_add", "__shfl_sync": "shfl_sync",
              "__popc": "popc", "__popcll": "popc", "__clz": "clz", "__clzll": "clz",
              "__brev": "brev", "__brevll": "brev", "__ffs": "ffs", "__ffsll": "ffs",
              "__mulhi": "mulhi", "__umulhi": "mulhi", "__mul64hi": "mulhi", "__umul64hi": "mulhi",
              "__threadfence": "threadfence", "__threadfence_block": "threadfence_block",
              "__threadfence_system": "threadfence_system", "__syncwarp": "syncwarp",
              "__activemask": "activemask",
              "__shfl_up_sync": "shfl_up_sync", "__shfl_down_sync": "shfl_down_sync",
              "__shfl_xor_sync": "shfl_xor_sync", "__ballot_sync": "ballot_sync",
              "__any_sync": "any_sync", "__all_sync": "all_sync", "__reduce_add_sync": "warp_sum",
              "__reduce_and_sync": "warp_and", "__reduce_or_sync": "warp_or",
              "__reduce_xor_sync": "warp_xor",
              "__reduce_max_sync": "warp_max", "__reduce_min_sync": "warp_min",
              "__pipeline_memcpy_async": "cp_async", "__pipeline_commit": "cp_async_commit",
              "__pipeline_wait_prior": "cp_async_wait"}
#: Numba-CUDA's names (`cuda.X`, written `ptxpy.X`) of what ptxpy spells otherwise
NUMBA_NAMES = {"grid": "Numba's cuda.grid(1) is ptxpy.global_id(0) (cuda.grid(2): "
                       "ptxpy.global_id(0), ptxpy.global_id(1))",
               "gridsize": "Numba's cuda.gridsize(1) is ptxpy.grid_dim.x * ptxpy.block_dim.x",
               "shared": "Numba's cuda.shared.array(shape, dtype) is ptxpy.shared_array(shape, dtype)",
               "local": "Numba's cuda.local.array(shape, dtype) is ptxpy.local_array(shape, dtype)",
               "warpsize": "Numba's cuda.warpsize is ptxpy.WARP_SIZE",
               "laneid": "Numba's cuda.laneid is ptxpy.lane_id()",
               **{numpy: f"ptxpy's {numpy} is ptxpy.{short}" for numpy, short in (
                   ("float16", "f16"), ("bfloat16", "bf16"), ("float32", "f32"),
                   ("float64", "f64"), ("int8", "i8"), ("int16", "i16"), ("int32", "i32"),
                   ("int64", "i64"), ("uint8", "u8"), ("uint16", "u16"), ("uint32", "u32"),
                   ("uint64", "u64"))}}
MATH_NAMES = frozenset(name for name in dir(math) if not name.startswith("_"))


def _name_hint(name: str) -> str:
    """What an undefined name may have meant: a ptxpy name not imported, a CUDA name."""
    if name in PTXPY_NAMES:
        return f" (it is ptxpy.{name}: from ptxpy import {name})"
    if name in CUDA_NAMES:
        return f"; CUDA's {name} is ptxpy.{CUDA_NAMES[name]}"
    return ""


def unknown_attribute(module: str, attr: str, names) -> str:
    """`ptxpy has no attribute 'attr'` (or `module 'math' ...`), with the CUDA name or the
    closest of `names`."""
    if module == "math" and attr == "fma":      # in math from Python 3.13
        return "math.fma is not supported in kernels; ptxpy.fma(a, b, c) is the fused multiply-add"
    shown = "ptxpy" if module == "ptxpy" else f"module '{module}'"
    message = f"{shown} has no attribute '{attr}'"
    if module == "ptxpy" and attr in CUDA_NAMES:
        return f"{message}; CUDA's {attr} is ptxpy.{CUDA_NAMES[attr]}"
    if module == "ptxpy" and attr in NUMBA_NAMES:
        return f"{message}; {NUMBA_NAMES[attr]}"
    close = difflib.get_close_matches(attr, sorted(names), n=2, cutoff=0.7)
    if close:
        return f"{message}; did you mean {' or '.join(f'{module}.{name}' for name in close)}?"
    return message


#: what a kernel writes for a Python builtin it does not have
_BUILTIN_HINTS = {"pow": "; write x ** k (k a constant integer) or math.pow(x, y)",
                  "sum": "; sum in a loop, or across a warp with ptxpy.warp_sum",
                  "isinstance": "; types are known when the kernel compiles"}


def _qualname_problem(qual: str, text: str) -> str:
    module, _, attr = qual.partition(".")
    if not attr:
        if module in ("ptxpy", "math"):
            return f"module '{module}' is not a value"
        return f"module '{module}' cannot be used in a kernel (only math and ptxpy can)"
    if module == "builtins":
        if attr in KERNEL_BUILTINS:
            return f"'{attr}' must be called"
        return f"name '{attr}' is a Python builtin that kernels do not support{_BUILTIN_HINTS.get(attr, '')}"
    if module == "ptxpy":
        dim = attr.split(".")[0]
        if dim in typed.DIM3_NAMES:
            return f"ptxpy.{dim} has the attributes .x, .y and .z"
        if attr in PTXPY_NAMES:
            return f"'{text}' must be called or indexed; it is not a value"
        rest = attr[len(dim) + 1:]
        if dim == "atomic" and f"atomic_{rest}" in PTXPY_NAMES:     # Numba's cuda.atomic.add
            return (f"ptxpy has no attribute 'atomic'; Numba's cuda.atomic.{rest} is "
                    f"ptxpy.atomic_{rest}")
        if dim not in PTXPY_NAMES:
            return unknown_attribute("ptxpy", dim, PTXPY_NAMES)
        return f"ptxpy.{dim} has no attribute '{attr[len(dim) + 1:]}'"
    if module == "math":
        name = attr.split(".")[0]
        if name not in dir(math) or name == "fma":
            return unknown_attribute("math", name, MATH_NAMES)
        return f"'{text}' must be called"
    return f"'{text}' (from module {module}) cannot be used in a kernel (only math and ptxpy can)"
