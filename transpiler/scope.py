"""Module-level names of a kernel's source file, resolved without running it.

`ModuleScope` reads the top level of a parsed module: imports of `ptxpy`, `ptxpy.types` and
`math` (with any alias), module constants (evaluated here with Python semantics), and the
`@ptxpy.jit`/`@ptxpy.func` functions. `qualname` turns a name or attribute chain into a
qualified name such as 'ptxpy.global_id' or 'math.sqrt'. `const_eval` evaluates compile-time
expressions; `resolve_type` reads annotations.
"""
from __future__ import annotations

import builtins
import math
import operator

import libcst as cst

from ptxpy import intrinsics
from ptxpy.types import SCALARS, ArrayType, ConstType, Scalar, TupleType, bool_, f32, i32

from .errors import CompileError

#: Names that `from ptxpy import ...` (or `ptxpy.X`) may bring into a kernel: `ptxpy.__all__`
#: (its bool type is `bool_`; Python's `bool` stays the builtin under `from ptxpy import *`).
PTXPY_NAMES = frozenset(
    [name for name in SCALARS if name != "bool"]
    + ["bool_", "Array", "Const", "jit", "func", "transpile", "Kernel", "CompileError", "Scalar",
       "ArrayType"]
    + list(intrinsics.__all__))
MATH_CONSTANTS = {"pi": math.pi, "e": math.e, "inf": math.inf, "nan": math.nan, "tau": math.tau}
#: Python builtins a kernel may use.
KERNEL_BUILTINS = frozenset("abs min max int float bool len print range divmod".split())
PYTHON_BUILTINS = frozenset(dir(builtins))
_SUBMODULES = {"ptxpy.types": "ptxpy", "ptxpy.intrinsics": "ptxpy", "ptxpy.api": "ptxpy"}
_MAX_INT_BITS = 4096  # constant folding gives up beyond this (guards `2 ** 10 ** 9`)


class NotConstant(Exception):
    """The expression is not a compile-time constant (carries the offending node)."""

    def __init__(self, node: cst.CSTNode, reason: str = ""):
        super().__init__(reason)
        self.node = node
        self.reason = reason


# --- compile-time arithmetic (shared by module constants and kernel constant folding) --------
def _floordiv(a, b):
    return a // b


BINARY_OPS = {
    cst.Add: operator.add, cst.Subtract: operator.sub, cst.Multiply: operator.mul,
    cst.Divide: operator.truediv, cst.FloorDivide: _floordiv, cst.Modulo: operator.mod,
    cst.Power: operator.pow, cst.LeftShift: operator.lshift, cst.RightShift: operator.rshift,
    cst.BitAnd: operator.and_, cst.BitOr: operator.or_, cst.BitXor: operator.xor,
}
COMPARE_OPS = {
    cst.Equal: operator.eq, cst.NotEqual: operator.ne, cst.LessThan: operator.lt,
    cst.LessThanEqual: operator.le, cst.GreaterThan: operator.gt, cst.GreaterThanEqual: operator.ge,
}


def fold_binary(op_type: type, a, b):
    """`a op b` on Python numbers; raises ArithmeticError/ValueError/TypeError as Python does."""
    if isinstance(a, bool) and isinstance(b, bool) and op_type in (cst.BitAnd, cst.BitOr, cst.BitXor):
        return BINARY_OPS[op_type](a, b)
    if op_type is cst.Power and isinstance(a, int) and isinstance(b, int):
        if b > _MAX_INT_BITS or (abs(a) > 1 and b * max(1, int(abs(a)).bit_length()) > _MAX_INT_BITS):
            raise OverflowError("integer power too large")
    if op_type is cst.LeftShift and isinstance(b, int) and b > _MAX_INT_BITS:
        raise OverflowError("shift too large")
    if op_type in (cst.LeftShift, cst.RightShift, cst.BitAnd, cst.BitOr, cst.BitXor) and (
            isinstance(a, float) or isinstance(b, float)):
        raise TypeError("bitwise operators need integers")
    result = BINARY_OPS[op_type](a, b)
    if isinstance(result, complex):
        raise ValueError("complex result")
    if isinstance(result, int) and not isinstance(result, bool) and result.bit_length() > _MAX_INT_BITS:
        raise OverflowError("integer too large")
    return result


def fold_unary(op: cst.BaseUnaryOp, v):
    if isinstance(op, cst.Minus):
        return -v
    if isinstance(op, cst.Plus):
        return +v
    if isinstance(op, cst.Not):
        return not v
    if isinstance(v, float):
        raise TypeError("~ needs an integer")
    return ~v


def number_literal(node: cst.CSTNode):
    """The value of an Integer/Float literal, or raise NotConstant (imaginary numbers)."""
    if node.__class__ is cst.Integer:
        return int(node.value, 0)      # what node.evaluated_value gives, without ast.literal_eval
    if isinstance(node, cst.Float):
        return float(node.value)       # float() reads Python's float literals (and their '_')
    raise NotConstant(node, "complex numbers are not supported")


def const_eval(node: cst.BaseExpression, lookup, callee=None):
    """Evaluate a compile-time expression with Python semantics.

    `lookup(node)` returns the value of a Name or Attribute, or raises NotConstant; `callee(node)`
    the Python function a called name stands for, or None. Supports
    number literals, True/False, unary and binary operators, comparisons, `and`/`or`, `x if c
    else y`, tuples, and calls of abs/min/max/int/float/bool/ptxpy.cdiv on constants.
    """
    if isinstance(node, (cst.Integer, cst.Float, cst.Imaginary)):
        return number_literal(node)
    if isinstance(node, (cst.Name, cst.Attribute)):
        return lookup(node)
    if isinstance(node, cst.UnaryOperation):
        return _checked(node, fold_unary, node.operator, const_eval(node.expression, lookup, callee))
    if isinstance(node, cst.BinaryOperation) and type(node.operator) in BINARY_OPS:
        left, right = const_eval(node.left, lookup, callee), const_eval(node.right, lookup, callee)
        return _checked(node, fold_binary, type(node.operator), left, right)
    if isinstance(node, cst.Comparison):
        return _eval_compare(node, lookup, callee)
    if isinstance(node, cst.BooleanOperation):
        left = const_eval(node.left, lookup, callee)
        if isinstance(node.operator, cst.And):
            return const_eval(node.right, lookup, callee) if left else left
        return left if left else const_eval(node.right, lookup, callee)
    if isinstance(node, cst.IfExp):
        chosen = node.body if const_eval(node.test, lookup, callee) else node.orelse
        return const_eval(chosen, lookup, callee)
    if isinstance(node, cst.Tuple):
        return tuple(_element(e, lookup, callee) for e in node.elements)
    if isinstance(node, cst.Subscript):
        return _eval_tuple_item(node, lookup, callee)
    if isinstance(node, cst.Call):
        return _eval_call(node, lookup, callee)
    raise NotConstant(node)


def _checked(node, fn, *args):
    try:
        return fn(*args)
    except (ArithmeticError, ValueError, TypeError) as err:
        raise NotConstant(node, f"cannot evaluate this constant expression ({arithmetic_problem(err)})") from None


def arithmetic_problem(err: Exception) -> str:
    """Python's error of a constant expression, in words: `7.0 % 0.0` says only 'float
    modulo', `2.0 ** 2000` an errno tuple."""
    if isinstance(err, OverflowError):
        return "the result is too large for a float" if "int" not in str(err) else str(err)
    if isinstance(err, ZeroDivisionError) and "zero" not in str(err):
        return f"{err} by zero"
    return str(err)


def _element(e, lookup, callee):
    if not isinstance(e, cst.Element):
        raise NotConstant(e, "starred expressions are not supported")
    return const_eval(e.value, lookup, callee)


def _eval_compare(node: cst.Comparison, lookup, callee):
    left = const_eval(node.left, lookup, callee)
    for target in node.comparisons:
        if type(target.operator) not in COMPARE_OPS:
            raise NotConstant(node)
        right = const_eval(target.comparator, lookup, callee)
        if not _checked(node, COMPARE_OPS[type(target.operator)], left, right):
            return False
        left = right
    return True


def _eval_tuple_item(node: cst.Subscript, lookup, callee):
    """`TILE[0]` of a tuple constant (one integer index, negative ones from the end)."""
    if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
        raise NotConstant(node, "index a tuple constant with one integer")
    value = const_eval(node.value, lookup, callee)
    index = const_eval(node.slice[0].slice.value, lookup, callee)
    if not isinstance(value, tuple):
        raise NotConstant(node.value, f"{code_of(node.value)} is a number, not a tuple")
    if not isinstance(index, int) or isinstance(index, bool):
        raise NotConstant(node, f"the index {index!r} is not an integer")
    if not -len(value) <= index < len(value):
        raise NotConstant(node, f"index {index!r} is out of range for the tuple {value!r}")
    return value[index]


def _eval_call(node: cst.Call, lookup, callee):
    func = callee(node.func) if callee is not None else None
    if func is None or any(a.keyword or a.star for a in node.args):
        raise NotConstant(node)
    args = [a.value.evaluated_value if func is float and isinstance(a.value, cst.SimpleString)
            else const_eval(a.value, lookup, callee) for a in node.args]    # float('-inf')
    return _checked(node, func, *args)


CONST_FUNCS = {
    "builtins.abs": abs, "builtins.min": min, "builtins.max": max, "builtins.int": int,
    "builtins.float": float, "builtins.bool": bool, "ptxpy.cdiv": lambda a, b: -(-a // b),
    "builtins.len": len,     # of a tuple constant (an array is not a compile-time value)
    "builtins.round": round,
    **{f"math.{name}": getattr(math, name) for name in
       ("sqrt exp exp2 log log2 log10 sin cos tan tanh erf erfc floor ceil trunc fabs fmod copysign "
        "pow atan asin acos atan2 sinh cosh asinh acosh atanh expm1 log1p hypot cbrt ldexp frexp").split()
       if hasattr(math, name)},
}


# --- the module's top level ------------------------------------------------------------------
class ModuleScope:
    """What each top-level name means, in the order Python would have bound them."""

    def __init__(self, statements: list, unevaluated: dict | None = None):
        """`statements`: the module's top-level libcst statements, in order. `unevaluated`:
        names bound only where ptxpy does not look (in a top-level `if`, `for`, `with` ...),
        with what to say about them: `name 'X' ...`."""
        self.modules: dict[str, str] = {}      # local name -> 'ptxpy' | 'math' | other module
        self.imported: dict[str, str] = {}     # local name -> 'ptxpy.X' | 'math.X' | 'mod.X'
        self.constants: dict[str, object] = {}
        self.others: dict[str, str] = {}       # name -> what it is (for error messages)
        self.star_ptxpy = False
        for stmt in statements:
            self._statement(stmt)
        self.unevaluated = {name: text for name, text in (unevaluated or {}).items()
                            if not self.binds(name)}

    # bindings
    def _forget(self, name: str) -> None:
        for table in (self.modules, self.imported, self.constants, self.others):
            table.pop(name, None)

    def _statement(self, stmt: cst.CSTNode) -> None:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                self._small(small)
        elif isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            self._forget(stmt.name.value)
            kind = "class" if isinstance(stmt, cst.ClassDef) else "function"
            self.others[stmt.name.value] = kind

    def _small(self, small: cst.CSTNode) -> None:
        if isinstance(small, cst.Import):
            for alias in small.names:
                self._import(alias)
        elif isinstance(small, cst.ImportFrom):
            self._import_from(small)
        elif isinstance(small, cst.Assign) and _unpacked_names(small):
            self._bind_unpacked(_unpacked_names(small), small.value)
        elif isinstance(small, cst.Assign):
            names = [t.target.value for t in small.targets if isinstance(t.target, cst.Name)]
            self._bind_value(names, small.value, len(names) == len(small.targets))
        elif isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name) and small.value:
            self._bind_value([small.target.value], small.value, True)
        elif isinstance(small, cst.AugAssign) and isinstance(small.target, cst.Name):
            name = small.target.value
            if name in self.constants and type(small.operator).__name__.endswith("Assign"):
                self._aug_constant(name, small)

    def _bind_value(self, names: list, value: cst.BaseExpression, simple: bool) -> None:
        failed = None
        try:
            result = const_eval(value, self.lookup, self.const_callee) if simple else None
        except NotConstant as err:
            result = None
            if err.reason.startswith("cannot evaluate"):     # constant, but its value fails
                failed = err.reason[len("cannot evaluate this constant expression "):].strip("()")
        for name in names:
            self._forget(name)
            if failed is not None:
                self.others[name] = f"a module constant whose value cannot be computed: {failed}"
            elif _is_number(result) or _is_number_tuple(result):
                self.constants[name] = result
            elif isinstance(result, tuple):
                self.others[name] = ("a tuple holding tuples or other values, which ptxpy does not "
                                     "take as a constant: tuple constants are flat tuples of numbers")
            else:
                self.others[name] = "a module-level variable that is not a compile-time constant"

    def _bind_unpacked(self, names: list, value: cst.BaseExpression) -> None:
        """`A, B = 4, 5`: each name a constant, as Python binds them."""
        try:
            result = const_eval(value, self.lookup, self.const_callee)
        except NotConstant:
            result = None
        items = result if isinstance(result, tuple) and len(result) == len(names) else None
        for k, name in enumerate(names):
            self._forget(name)
            if items is not None and _is_number(items[k]):
                self.constants[name] = items[k]
            else:
                self.others[name] = "a module-level variable that is not a compile-time constant"

    def _aug_constant(self, name: str, node: cst.AugAssign) -> None:
        op = getattr(cst, type(node.operator).__name__[:-len("Assign")], None)
        try:
            value = fold_binary(op, self.constants[name], const_eval(node.value, self.lookup, self.const_callee))
        except (NotConstant, ArithmeticError, ValueError, TypeError, KeyError):
            value = None
        self._forget(name)
        if _is_number(value):
            self.constants[name] = value
        else:
            self.others[name] = "a module-level variable that is not a compile-time constant"

    def _import(self, alias: cst.ImportAlias) -> None:
        dotted = dotted_name(alias.name)
        if dotted is None:
            return
        if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
            local = alias.asname.name.value
            self._forget(local)
            self.modules[local] = _SUBMODULES.get(dotted, dotted)
        else:
            top = dotted.split(".")[0]
            self._forget(top)
            self.modules[top] = top

    def _import_from(self, node: cst.ImportFrom) -> None:
        module = dotted_name(node.module) if node.module is not None and not node.relative else None
        if module is None:
            return
        module = _SUBMODULES.get(module, module)
        if isinstance(node.names, cst.ImportStar):
            self.star_ptxpy = self.star_ptxpy or module == "ptxpy"
            return
        for alias in node.names:
            if not isinstance(alias.name, cst.Name):
                continue
            local = alias.asname.name.value if alias.asname is not None else alias.name.value
            self._forget(local)
            if module == "ptxpy" and alias.name.value in ("types", "intrinsics"):
                self.modules[local] = "ptxpy"
            else:
                self.imported[local] = f"{module}.{alias.name.value}"

    # lookups
    def binds(self, name: str) -> bool:
        """Whether the module binds `name` (imports, assigns or defines it)."""
        return (self.global_qualname(name) not in (None, f"builtins.{name}")
                or name in self.constants or name in self.others)

    def global_qualname(self, name: str) -> str | None:
        """'ptxpy', 'math', 'ptxpy.f32', 'math.sqrt', 'numpy', 'builtins.abs', ... or None."""
        if name in self.modules:
            return self.modules[name]
        if name in self.imported:
            return self.imported[name]
        if name in self.constants or name in self.others:
            return None
        if self.star_ptxpy and name in PTXPY_NAMES:
            return f"ptxpy.{name}"
        if name in PYTHON_BUILTINS:
            return f"builtins.{name}"
        return None

    def qualname(self, node: cst.CSTNode) -> str | None:
        """The qualified name of a module-level Name/Attribute chain (no locals considered)."""
        if node.__class__ is cst.Name:
            return self.global_qualname(node.value)
        if isinstance(node, cst.Attribute):
            base = self.qualname(node.value)
            return normalize(f"{base}.{node.attr.value}") if base else None
        return None

    def lookup(self, node: cst.CSTNode):
        """Module-constant lookup for `const_eval`."""
        if isinstance(node, cst.Name):
            if node.value in ("True", "False"):
                return node.value == "True"
            if node.value in self.constants:
                return self.constants[node.value]
        return qualname_constant(self.qualname(node), node)

    def const_callee(self, node: cst.CSTNode):
        """The Python function for `const_eval` of a call: abs, min, max, int, ... or None."""
        return CONST_FUNCS.get(self.qualname(node) or "")


def qualname_constant(qual: str | None, node: cst.CSTNode):
    if qual is not None and qual.startswith("math.") and qual[5:] in MATH_CONSTANTS:
        return MATH_CONSTANTS[qual[5:]]
    if qual == "ptxpy.WARP_SIZE":
        return intrinsics.WARP_SIZE
    raise NotConstant(node)


def normalize(qual: str) -> str:
    for sub, top in _SUBMODULES.items():
        if qual.startswith(sub + "."):
            return top + qual[len(sub):]
    return qual


def dotted_name(node: cst.CSTNode) -> str | None:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = dotted_name(node.value)
        return f"{base}.{node.attr.value}" if base else None
    return None


def _is_number(value) -> bool:
    return isinstance(value, (bool, int, float))


def _is_number_tuple(value) -> bool:
    """A tuple constant (`TILE = (32, 33)`): a shape, or numbers its items give (`TILE[0]`)."""
    return isinstance(value, tuple) and all(_is_number(item) for item in value)


# --- annotations -----------------------------------------------------------------------------
def resolve_type(node: cst.BaseExpression, scope: ModuleScope, loc, allow_const: bool = False,
                 allow_tuple: bool = False):
    """The ptxpy type an annotation denotes: Scalar, ArrayType, ConstType or TupleType."""
    if node.__class__ is cst.Subscript:   # (isinstance: an ABC check, slower)
        return _subscript_type(node, scope, loc, allow_const, allow_tuple)
    if node.__class__ is cst.SimpleString:    # a quoted annotation, `x: "Array[f32]"`, as Python reads it
        return _quoted_type(node, scope, loc, allow_const, allow_tuple)
    scalar = scalar_named(scope.qualname(node))
    if scalar is not None:
        return scalar
    qual = scope.qualname(node)
    if qual == "ptxpy.Array":
        raise CompileError("Array needs an element type: Array[f32] or Array[f32, 2]", loc(node))
    if qual == "ptxpy.Const":
        raise CompileError("Const needs a type: Const[int], Const[float] or Const[bool]", loc(node))
    _check_imported(node, scope, loc)
    if isinstance(node, cst.Name) and node.value in PTXPY_NAMES and scope.binds(node.value):
        raise CompileError(f"'{node.value}' is defined again in this module, so it no longer names "
                           f"ptxpy's {node.value}; rename that definition", loc(node))
    raise CompileError(f"unsupported type annotation '{code_of(node)}' (use a ptxpy scalar type, "
                       "bool, int, float, Array[T] or Array[T, R])", loc(node))


def _quoted_type(node: cst.SimpleString, scope: ModuleScope, loc, allow_const, allow_tuple):
    """The type a quoted annotation names; its errors at the string."""
    try:
        inner = cst.parse_expression(node.evaluated_value.strip())
    except Exception:
        raise CompileError(f"unsupported type annotation {code_of(node)}: its text is not a type "
                           "(use a ptxpy scalar type, bool, int, float, Array[T] or Array[T, R])",
                           loc(node)) from None
    if inner.__class__ is cst.SimpleString:
        raise CompileError(f"unsupported type annotation {code_of(node)}", loc(node))
    return resolve_type(inner, scope, lambda _: loc(node), allow_const, allow_tuple)


def _check_imported(node: cst.CSTNode, scope: ModuleScope, loc) -> None:
    """An error if `node` names something of ptxpy's (`Array`, `f32`) that the module does not
    import."""
    if node.__class__ is cst.Name and node.value in PTXPY_NAMES and not scope.binds(node.value):
        name = node.value
        raise CompileError(f"'{name}' is not imported (from ptxpy import {name})", loc(node))


def scalar_named(qual: str | None) -> Scalar | None:
    if qual is None:
        return None
    if qual in ("builtins.bool", "builtins.int", "builtins.float"):
        return {"bool": bool_, "int": i32, "float": f32}[qual[9:]]
    if qual.startswith("ptxpy."):
        name = qual[6:]
        return bool_ if name == "bool_" else SCALARS.get(name) if name != "bool" else None
    return None


def _unpacked_names(node: cst.Assign) -> list | None:
    """The names of `A, B = ...` (one target, a tuple or list of plain names), else None."""
    if len(node.targets) != 1 or node.targets[0].target.__class__ not in (cst.Tuple, cst.List):
        return None
    elements = node.targets[0].target.elements
    if not all(isinstance(e, cst.Element) and isinstance(e.value, cst.Name) for e in elements):
        return None
    return [e.value.value for e in elements]


def subscript_items(node: cst.Subscript) -> list:
    items = []
    for element in node.slice:
        if not isinstance(element.slice, cst.Index) or element.slice.star is not None:
            return []
        items.append(element.slice.value)
    return items


def _subscript_type(node: cst.Subscript, scope: ModuleScope, loc, allow_const, allow_tuple):
    qual = scope.qualname(node.value)
    items = subscript_items(node)
    if qual == "ptxpy.Array" and items:
        return _array_type(node, items, scope, loc)
    if qual == "ptxpy.Const" and len(items) == 1:
        if not allow_const:
            raise CompileError("Const[...] is only allowed on parameters of kernels and device "
                               "functions", loc(node))
        return _const_type(items[0], scope, loc)
    if qual in ("builtins.tuple", "typing.Tuple") and items and allow_tuple:
        kinds = [resolve_type(item, scope, loc) for item in items]
        if not all(isinstance(k, Scalar) for k in kinds):
            raise CompileError("a returned tuple can only hold scalars", loc(node))
        return TupleType(tuple(kinds))
    _check_imported(node.value, scope, loc)
    raise CompileError(f"unsupported type annotation '{code_of(node)}'", loc(node))


_CONST_BASES = ("builtins.int", "builtins.float", "builtins.bool", "ptxpy.i32", "ptxpy.f32",
                "ptxpy.bool_")


def _const_type(item: cst.BaseExpression, scope: ModuleScope, loc) -> ConstType:
    """`Const[item]`: int, float or bool (or i32, f32, bool_)."""
    qual = scope.qualname(item)
    if qual in _CONST_BASES:
        return ConstType(scalar_named(qual))
    if scalar_named(qual) is not None:
        raise CompileError(f"Const[{code_of(item)}] is not supported: Const takes int, float or "
                           "bool (also written i32, f32, bool_)", loc(item))
    _check_imported(item, scope, loc)
    raise CompileError(f"Const[{code_of(item)}] takes int, float or bool", loc(item))


def _array_type(node, items, scope, loc) -> ArrayType:
    elem = resolve_type(items[0], scope, loc)
    if not isinstance(elem, Scalar):
        raise CompileError("the element type of an Array must be a scalar type", loc(items[0]))
    rank = 1
    if len(items) == 2:
        try:
            rank = const_eval(items[1], scope.lookup)
        except NotConstant:
            rank = None
        if not isinstance(rank, int) or isinstance(rank, bool):
            raise CompileError("the rank of an Array must be an integer constant", loc(items[1]))
    if len(items) > 2 or not 1 <= rank <= 4:
        raise CompileError("Array[T, R] takes an element type and a rank from 1 to 4", loc(node))
    return ArrayType(elem, rank)


_EMPTY_MODULE = cst.Module(body=[])


def code_of(node: cst.CSTNode) -> str:
    """The source text of a node (for messages)."""
    try:
        return _EMPTY_MODULE.code_for_node(node)
    except Exception:  # a node libcst cannot print back: name its kind instead
        return type(node).__name__
