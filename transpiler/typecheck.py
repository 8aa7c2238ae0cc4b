"""Type-checking of one function body: statements, variables and their one type each.

`FunctionChecker(program, decl, consts, by_ref).check()` returns a `typed.FuncDef`. Expressions
are typed by the `ExprChecker` and `CallChecker` mixins.
"""
from __future__ import annotations

import math

import libcst as cst

from ptxpy.types import ArrayType, ConstType, Scalar, TupleType, can_convert_implicitly, i32, i64, u32

from . import typed
from .calls import CallChecker
from .errors import CompileError
from .launch_shape import describe, is_formula
from .shape_formula import ShapeFormulas
from .exprs import ExprChecker, convert, fits, is_weak, join, literal_value, truthy
from .scope import code_of, resolve_type, scalar_named

__all__ = ["FunctionChecker", "TupleExpr", "literal_value"]

TupleExpr = typed.TupleExpr   # where it was defined before typed.py had it

MAX_UNROLL = 4096
MAX_SHARED_BYTES = 227 * 1024   # shared memory per block on any target (sm_90: past 48 KB, dynamic)
MAX_LOCAL_BYTES = 512 * 1024   # local memory per thread (CUDA's limit from sm_20 on)
AUG_OPS = {getattr(cst, name + "Assign"): getattr(cst, name) for name in (
    "Add", "Subtract", "Multiply", "Divide", "FloorDivide", "Modulo", "Power", "LeftShift",
    "RightShift", "BitAnd", "BitOr", "BitXor", "MatrixMultiply")}
UNSUPPORTED_STATEMENTS = {
    "FunctionDef": "nested functions (closures) are not supported; define a @ptxpy.func at "
                   "module level",
    "ClassDef": "classes are not supported in kernels",
    "Try": "try statements are not supported in kernels",
    "TryStar": "try statements are not supported in kernels",
    "With": "with statements are not supported in kernels",
    "Match": "match statements are not supported in kernels",
    "Raise": "raise is not supported in kernels (use assert, checked under debug=True)",
    "Global": "global declarations are not supported in kernels",
    "Nonlocal": "nonlocal declarations are not supported in kernels",
    "Del": "del is not supported in kernels",
    "Import": "imports inside kernels are not supported; import at module level",
    "ImportFrom": "imports inside kernels are not supported; import at module level",
    "TypeAlias": "type aliases are not supported in kernels",
}


def _shown(shape, at_launch: bool) -> str:
    """A shape as the message shows it (extents known at launch as written)."""
    if not at_launch or not isinstance(shape, tuple) or not any(map(is_formula, shape)):
        return repr(shape)
    return "(" + ", ".join(describe(n) for n in shape) + ("," if len(shape) == 1 else "") + ")"


class FunctionChecker(ExprChecker, CallChecker, ShapeFormulas):
    def __init__(self, program, decl, consts: dict, by_ref: frozenset):
        self.program, self.decl, self.by_ref = program, decl, by_ref
        self.parsed, self.scope = program.parsed, program.parsed.scope
        self.is_kernel = decl.name in self.parsed.kernels and self.parsed.kernels[decl.name] is decl
        self.consts = dict(consts)
        self.vars: dict = {}          # scalar params and locals -> Scalar
        self.int_literal_starts: dict = {}   # local first assigned an int literal -> that int
        self.locals: dict = {}        # locals only, in order of first assignment
        self.arrays: dict = {}        # array name -> ArrayType
        self.array_params: set = set()
        self.scalar_params: set = set()
        self.decls: list = []
        self.written: set = set()
        self.ordered: set = set()     # array params read by load_acquire/load_relaxed
        self.tensor_maps: dict = {}   # array param -> [(box, swizzle)]: tensor maps it is passed with
        self.loop_depth = 0
        self.local_names, self.annotations = set(), {}
        self.static_vars: set = set()   # static_range variables bound as constants in self.consts
        self.statements_unrolled = 0    # statements typed again for unrolled iterations
        self.unroll_site = None         # the outermost static_range being typed
        self.array_nodes: dict = {}     # array name -> the shared_array/local_array call declaring it
        self.views: dict = {}           # array name -> the array it maps (map_shared_rank, .view)
        self.temporaries = 0            # hidden locals made so far ($t0, $t1, ...)
        self.assign_counts: dict = {}   # local name -> how many places assign it
        self.launch_values: dict = {}   # local assigned once, unannotated -> its value's node

    # --- the function ---------------------------------------------------------------------
    def check(self) -> typed.FuncDef:
        node = self.decl.node
        params = self.bind_params()
        self.collect_names(node.body)
        body = self.block(node.body)
        if not self.is_kernel and self.decl.return_type is not None and not _always_returns(body):
            raise CompileError(f"@ptxpy.func '{self.decl.name}' must end with a return statement "
                               f"(it returns {self.decl.return_type})", self.decl.loc)
        return typed.FuncDef(self.decl.loc, self.decl.name, params, self.decl.return_type, body,
                             self.is_kernel, dict(self.locals), list(self.decls), set(self.written),
                             {k: tuple(v) for k, v in self.tensor_maps.items()}, set(self.ordered))

    def bind_params(self) -> list:
        params = []
        for p in self.decl.params:
            if isinstance(p.type, ConstType):
                continue    # its value is in self.consts
            if isinstance(p.type, ArrayType):
                self.arrays[p.name] = p.type
                self.array_params.add(p.name)
            else:
                self.vars[p.name] = p.type
                self.scalar_params.add(p.name)
            params.append(typed.Param(p.name, p.type, p.name in self.by_ref))
        return params

    def collect_names(self, body) -> None:
        """Every name the function assigns (local throughout, as in Python) and annotations."""
        collector = _NameCollector()
        collector.statement(body)
        self.local_names = collector.names
        self.assign_counts = collector.counts
        for name, ann_node in collector.annotated:
            t = resolve_type(ann_node, self.scope, self.loc)
            if not isinstance(t, Scalar):
                raise self.error("local variables must have a scalar type", ann_node)
            known = self.annotations.get(name, self.vars.get(name))
            if known is not None and known != t:
                raise self.error(f"'{name}' is declared {known} and annotated {t}", ann_node)
            if name in self.arrays or name in self.consts:
                raise self.error(f"cannot annotate parameter '{name}'", ann_node)
            self.annotations[name] = t

    # --- blocks ---------------------------------------------------------------------------
    def block(self, suite) -> list:
        out = []
        for stmt in suite.body:
            out += self.statement(stmt)
        return out

    def statement(self, stmt) -> list:
        """One line or compound statement of a block, typed."""
        if stmt.__class__ is cst.SimpleStatementLine:   # (isinstance: an ABC check, slower)
            out = []
            for small in stmt.body:
                out += self.small_statement(small)
            return out
        return self.compound_statement(stmt)

    def small_statement(self, node) -> list:
        method = getattr(self, "_s_" + type(node).__name__, None)
        if method is None:
            message = UNSUPPORTED_STATEMENTS.get(type(node).__name__, "unsupported statement")
            raise self.error(message, node)
        return method(node)

    def compound_statement(self, node) -> list:
        if getattr(node, "asynchronous", None) is not None:
            raise self.error("async statements are not supported in kernels", node)
        return self.small_statement(node)

    # --- simple statements ----------------------------------------------------------------
    def _s_Pass(self, node) -> list:
        return [typed.Pass(self.loc(node))]

    def _s_Break(self, node) -> list:
        self.require_loop("break", node)
        return [typed.Break(self.loc(node))]

    def _s_Continue(self, node) -> list:
        self.require_loop("continue", node)
        return [typed.Continue(self.loc(node))]

    def require_loop(self, what: str, node) -> None:
        if self.loop_depth == 0:
            raise self.error(f"'{what}' outside a loop", node)

    def _s_Expr(self, node: cst.Expr) -> list:
        value = node.value
        if isinstance(value, (cst.SimpleString, cst.ConcatenatedString, cst.Ellipsis)):
            return []   # docstrings and `...`
        if isinstance(value, cst.Call) and self.qualname(value.func) == "builtins.print":
            return [self.print_stmt(value)]
        e = self.expr(value)
        if isinstance(e, (typed.Call, typed.Intrinsic)):
            return [typed.ExprStmt(self.loc(node), e)]
        return []       # a value without effects: checked, then dropped

    def _s_Assert(self, node: cst.Assert) -> list:
        cond = truthy(self.value(node.test))
        if node.msg is None:
            message = code_of(node.test)
        else:
            message = self.string_literal(node.msg, "the message of assert")
        return [typed.Assert(self.loc(node), cond, message)]

    def _s_Return(self, node: cst.Return) -> list:
        value = node.value
        if isinstance(value, cst.Name) and value.value == "None" and not self.is_local("None"):
            value = None
        rtype = self.decl.return_type
        if self.is_kernel and value is not None:
            raise self.error("a kernel cannot return a value; write results into an output array", node)
        if value is None:
            if rtype is not None:
                raise self.error(f"'{self.decl.name}' must return {a_type(rtype)} value", node)
            return [typed.Return(self.loc(node), None)]
        if rtype is None:
            raise self.error(f"'{self.decl.name}' has no return annotation; annotate it (-> f32) to "
                             "return a value", node)
        return [typed.Return(self.loc(node), self.return_value(value, rtype))]

    def return_value(self, node, rtype) -> typed.Expr:
        if isinstance(rtype, Scalar):
            return convert(self.value(node), rtype)
        if isinstance(node, cst.Tuple):
            values = [self.value(e.value) for e in _elements(self, node)]
            if len(values) != len(rtype.items):
                raise self.error(f"'{self.decl.name}' returns {rtype}, not {len(values)} values", node)
            items = [convert(v, t) for v, t in zip(values, rtype.items)]
            return typed.TupleExpr(self.loc(node), rtype, items)
        value = self.expr(node)
        if value.type != rtype:
            raise self.error(f"'{self.decl.name}' returns {rtype}, got {value.type}", node)
        return value

    # --- assignments ----------------------------------------------------------------------
    def _s_Assign(self, node: cst.Assign) -> list:
        if len(node.targets) > 1:
            return self.chained_assign(node)
        target, value = node.targets[0].target, node.value
        if target.__class__ is cst.Name:
            if value.__class__ is cst.Call and self.qualname(value.func) in (
                    "ptxpy.shared_array", "ptxpy.local_array"):
                return self.declare_array(target.value, value)
            if value.__class__ is cst.Call and self.qualname(value.func) == "ptxpy.map_shared_rank":
                return self.map_shared(target.value, value)
            if (value.__class__ is cst.Call and value.func.__class__ is cst.Attribute
                    and value.func.attr.value == "view" and value.func.value.__class__ is cst.Name
                    and value.func.value.value in self.arrays):
                return self.view_array(target.value, value)
            assigned = self.assign_name(target, self.expr(value), value)
            if self.assign_counts.get(target.value) == 1 and target.value not in self.annotations:
                self.launch_values[target.value] = value   # may size a shared array (shape_formula)
            return [assigned]
        if isinstance(target, (cst.Tuple, cst.List)):
            return self.tuple_assign(target, value, node)
        if isinstance(target, cst.Subscript):
            return [self.store(target, value)]
        raise self.assign_target_error(target)

    def assign_target_error(self, target) -> CompileError:
        if (isinstance(target, cst.Attribute) and target.attr.value == "shape"
                or isinstance(target, cst.Subscript) and isinstance(target.value, cst.Attribute)
                and target.value.attr.value == "shape"):
            return self.error("cannot assign to the shape of an array", target)
        if isinstance(target, cst.StarredElement):
            return self.error("starred assignment is not supported in kernels", target)
        return self.error(f"cannot assign to '{code_of(target)}'", target)

    def chained_assign(self, node: cst.Assign) -> list:
        """`a = x[i] = e`: as in Python, `e` is evaluated once, then assigned to each target
        from left to right (an element's indices evaluated when it is stored)."""
        targets = [t.target for t in node.targets]
        for target in targets:
            if not (isinstance(target, cst.Name) or isinstance(target, cst.Subscript)
                    and not any(e.slice.__class__ is cst.Slice for e in target.slice)):
                raise self.error("chained assignment (a = b = ...) works with variables and array "
                                 "elements", target)
        value = self.expr(node.value)
        if isinstance(value.type, TupleType) or value.type is None:
            return [self.assign_name(targets[0], value, node.value)]   # raises
        out = []
        if not isinstance(value, typed.Constant):
            held = self.temporary(value.type)
            out.append(typed.Assign(self.loc(node.value), [held], [value]))
            value = typed.Var(self.loc(node.value), value.type, held)
        for target in targets:
            if isinstance(target, cst.Name):
                out.append(self.assign_name(target, value, node.value))
            else:
                out.append(self.store_target(target, value))
        return out

    def assign_name(self, target: cst.Name, value: typed.Expr, value_node) -> typed.Assign:
        if isinstance(value.type, TupleType):
            raise self.error(f"cannot assign a tuple of {len(value.type.items)} values to one variable;"
                             " unpack it: a, b = f(...)", value_node)
        if value.type is None:
            raise self.error(f"'{code_of(value_node)}' returns no value", value_node)
        self.check_assignable(target.value, target)
        converted = self.bind(target.value, value, value_node)
        return typed.Assign(self.loc(target), [target.value], [converted])

    def bind(self, name: str, value: typed.Expr, node) -> typed.Expr:
        """`value` converted to variable `name`'s one type (which this may fix now)."""
        self.check_assignable(name, node)
        known = self.variable_type(name)
        if known is None:
            converted = convert(value, value.type)
            self.declare_local(name, converted.type)
            if is_weak(value) and value.type.is_int and isinstance(value, typed.Constant):
                self.int_literal_starts[name] = value.value
            return converted
        if not can_convert_implicitly(value.type, known, is_weak(value)):
            raise self.error(f"cannot assign {value.type} to variable '{name}' of type {known}; "
                             + (_widening_shift_hint(value, known)
                                or self.int_start_hint(name, value.type, known)
                                or f"use {known}(...) to convert"), node)
        if is_weak(value) and value.type.is_int and known.is_int and not fits(value.value, known):
            raise self.error(f"{value.value} does not fit in variable '{name}' of type {known}; use "
                             f"{known}(...) to wrap it", node)
        self.declare_local(name, known)
        return convert(value, known)

    def int_start_hint(self, name: str, t: Scalar, known: Scalar) -> str:
        """For `acc = 0` then `acc += x[i]` (a float): the literal that made `acc` an integer."""
        start = self.int_literal_starts.get(name)
        if start is None or not t.is_float or name in self.annotations:
            return ""
        return (f"'{name}' is {known} because its first value is the integer {start}: start it "
                f"as a float ({name} = {float(start)!r}), or use {known}(...) to convert")

    def variable_type(self, name: str) -> Scalar | None:
        return self.vars.get(name, self.annotations.get(name))

    def declare_local(self, name: str, t: Scalar) -> None:
        """Give `name` its one type (kept if it has one), from here on readable."""
        self.vars.setdefault(name, t)
        if name not in self.decl_param_names():
            self.locals.setdefault(name, t)

    def decl_param_names(self) -> set:
        return {p.name for p in self.decl.params}

    def check_assignable(self, name: str, node) -> None:
        if name in self.arrays:
            raise self.error(f"cannot assign to array '{name}' (arrays cannot be reassigned)", node)
        if name in self.static_vars:
            raise self.error(f"cannot assign to '{name}' inside its ptxpy.static_range loop: it is a "
                             "compile-time constant in each unrolled iteration (use another name)",
                             node)
        if name in self.consts:
            raise self.error(f"cannot assign to Const parameter '{name}'", node)

    def tuple_assign(self, target, value, node) -> list:
        elements = self.target_elements(target)
        if any(isinstance(e, cst.Subscript) for e in elements):
            return self.tuple_assign_stores(target, elements, value, node)
        names = [e.value for e in elements]
        if len(set(names)) != len(names):
            raise self.error("a variable is assigned twice in one tuple assignment", target)
        if isinstance(value, cst.Subscript) and any(isinstance(e.slice, cst.Slice) for e in value.slice):
            return [self.vector_load(names, target, value)]
        if isinstance(value, (cst.Tuple, cst.List)):
            items = _elements(self, value)
            if len(items) != len(names):
                raise self.error(f"cannot unpack {len(items)} values into {len(names)} variables", node)
            values = [self.value(item.value) for item in items]
            converted = [self.bind(n, v, item) for n, v, item in zip(names, values, items)]
            return [typed.Assign(self.loc(target), names, converted)]
        extents = self.whole_shape(value)
        if extents is not None:      # `n, m = x.shape`
            if len(extents) != len(names):
                raise self.error(f"cannot unpack the {len(extents)} extents of '{code_of(value)}' "
                                 f"into {len(names)} variables", node)
            converted = [self.bind(n, v, value) for n, v in zip(names, extents)]
            return [typed.Assign(self.loc(target), names, converted)]
        return [self.unpack_call(names, target, value, node)]

    def whole_shape(self, node) -> list | None:
        """`x.shape` of an array `x`: its extents (i32 each), else None."""
        if not (node.__class__ is cst.Attribute and node.attr.value == "shape"
                and node.value.__class__ is cst.Name and node.value.value in self.arrays):
            return None
        name, loc = node.value.value, self.loc(node)
        return [typed.Shape(loc, i32, name, dim) for dim in range(self.arrays[name].rank)]

    def target_elements(self, target) -> list:
        """The targets of `a, x[i] = ...`: variable names and array elements (libcst nodes)."""
        if isinstance(target, cst.List):
            raise self.error("use a tuple, not a list, on the left of an assignment", target)
        out = []
        for element in target.elements:
            if isinstance(element, cst.StarredElement):
                raise self.error("starred assignment is not supported in kernels", element)
            item = element.value
            if isinstance(item, cst.Subscript) and any(isinstance(e.slice, cst.Slice) for e in item.slice):
                raise self.error("a vector store cannot be part of a tuple assignment; assign it "
                                 "on its own line", item)
            if not isinstance(item, (cst.Name, cst.Subscript)):
                raise self.error("tuple assignment targets must be variable names or array "
                                 "elements", element)
            out.append(item)
        return out

    def target_names(self, target) -> list:
        names = []
        for item in self.target_elements(target):
            if not isinstance(item, cst.Name):
                raise self.error("tuple assignment targets must be variable names", item)
            names.append(item.value)
        if len(set(names)) != len(names):
            raise self.error("a variable is assigned twice in one tuple assignment", target)
        return names

    def tuple_assign_stores(self, target, elements: list, value_node, node) -> list:
        """`x[i], x[j] = x[j], x[i]`, `a, out[i] = f(...)`: as in Python, every value on the right
        is evaluated before anything is assigned; then the targets are assigned left to right,
        an element's indices evaluated when it is stored (after the targets before it)."""
        if isinstance(value_node, cst.Subscript) and any(isinstance(e.slice, cst.Slice)
                                                         for e in value_node.slice):
            raise self.error("a vector load assigns variables: v0, v1 = x[i:i + 2]", target)
        loc = self.loc(target)
        names = [e.value for e in elements if isinstance(e, cst.Name)]
        if len(set(names)) != len(names):
            raise self.error("a variable is assigned twice in one tuple assignment", target)
        if isinstance(value_node, (cst.Tuple, cst.List)):
            items = _elements(self, value_node)
            if len(items) != len(elements):
                raise self.error(f"cannot unpack {len(items)} values into {len(elements)} targets", node)
            values = [self.value(item.value) for item in items]
            value_nodes = [item.value for item in items]
            unpacked = None
        else:
            whole = self.expr(value_node)
            if whole.type is None:
                raise self.error(f"'{code_of(value_node)}' returns no value", value_node)
            if not isinstance(whole.type, TupleType):
                raise self.error(f"cannot unpack {a_type(whole.type)} value into {len(elements)} targets",
                                 value_node)
            if len(whole.type.items) != len(elements):
                raise self.error(f"cannot unpack {len(whole.type.items)} values into {len(elements)} "
                                 "targets", node)
            temps = [self.temporary(t) for t in whole.type.items]
            unpacked = typed.Assign(loc, temps, [whole])
            values = [typed.Var(loc, t, name) for name, t in zip(temps, whole.type.items)]
            value_nodes = [value_node] * len(elements)
        # The values go into temporaries first (constants and a call's items need none); the
        # targets are typed and assigned left to right after them.
        first: list = []

        def hold(v: typed.Expr) -> typed.Expr:
            if unpacked is not None or isinstance(v, typed.Constant):
                return v
            name = self.temporary(v.type)
            first.append((name, v))
            return typed.Var(loc, v.type, name)

        after = []
        for element, value, vnode in zip(elements, values, value_nodes):
            if isinstance(element, cst.Name):
                if unpacked is not None:
                    converted = self.unpack_into(element.value, value, element)
                else:
                    converted = self.bind(element.value, value, vnode)
                after.append(typed.Assign(self.loc(element), [element.value], [hold(converted)]))
            else:
                array = self.store_array(element)
                indices = self.indices(array, element)
                held = hold(convert(value, self.arrays[array].elem))
                after.append(self.store_value(array, indices, held, element))
        out = [unpacked] if unpacked is not None else []
        if first:
            out.append(typed.Assign(loc, [n for n, _ in first], [v for _, v in first]))
        return out + after

    def unpack_into(self, name: str, value: typed.Expr, node) -> typed.Expr:
        """An item of a tuple-valued call for variable `name`, which takes the item's type."""
        self.check_assignable(name, node)
        known = self.variable_type(name)
        if known is not None and known != value.type:
            raise self.error(f"cannot unpack {a_type(value.type)} value into variable '{name}' of type "
                             f"{known}; unpack into new variables, then convert", node)
        self.declare_local(name, value.type)
        return value

    def temporary(self, t: Scalar) -> str:
        """A fresh hidden local of type `t` (its name cannot clash with a Python name)."""
        name = f"$t{self.temporaries}"
        self.temporaries += 1
        self.locals[name] = t
        self.vars[name] = t
        return name

    def unpack_call(self, names: list, target, value_node, node) -> typed.Assign:
        value = self.expr(value_node)
        if not isinstance(value.type, TupleType):
            raise self.error(f"cannot unpack {a_type(value.type)} value into {len(names)} variables", value_node)
        if len(value.type.items) != len(names):
            raise self.error(f"cannot unpack {len(value.type.items)} values into {len(names)} variables",
                             node)
        for name, t in zip(names, value.type.items):
            self.check_assignable(name, target)
            known = self.variable_type(name)
            if known is not None and known != t:
                raise self.error(f"cannot unpack {a_type(t)} value into variable '{name}' of type {known}; "
                                 "unpack into new variables, then convert", target)
            self.declare_local(name, t)
        return typed.Assign(self.loc(target), names, [value])

    def _s_AnnAssign(self, node: cst.AnnAssign) -> list:
        if not isinstance(node.target, cst.Name):
            raise self.error("only variables can be annotated", node.target)
        if node.value is None:
            return []   # a declaration: the variable is assigned later
        return [self.assign_name(node.target, self.expr(node.value), node.value)]

    def _s_AugAssign(self, node: cst.AugAssign) -> list:
        op = AUG_OPS[type(node.operator)]
        target = node.target
        if isinstance(target, cst.Name):
            current = self.expr(target)
            value = self.apply(op, current, node)
            return [self.assign_name(target, value, node)]
        if isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name) \
                and target.value.value in self.arrays:
            array = target.value.value
            held, indices = self.held_indices(self.indices(array, target))
            current = typed.Load(self.loc(target), self.arrays[array].elem, array, indices)
            value = self.apply(op, current, node)
            return [*held, self.store_value(array, indices, value, node)]
        raise self.assign_target_error(target)

    def held_indices(self, indices: list) -> tuple:
        """`a[f()] += e` evaluates `f()` once, as Python does: indices other than constants and
        variables go into temporaries, read by both the load and the store.
        Returns (assignments to the temporaries, the indices to use)."""
        held, used = [], []
        for index in indices:
            if isinstance(index, (typed.Constant, typed.Var)):
                used.append(index)
                continue
            name = self.temporary(index.type)
            held.append(typed.Assign(index.loc, [name], [index]))
            used.append(typed.Var(index.loc, index.type, name))
        return held, used

    def apply(self, op: type, current: typed.Expr, node: cst.AugAssign) -> typed.Expr:
        if op is cst.Power:
            return self.power(current, node.value, node)
        if op is cst.MatrixMultiply:
            raise self.error("the '@' operator is not supported in kernels", node.operator)
        return self.binary(op, current, self.value(node.value), node)

    # --- arrays ---------------------------------------------------------------------------
    def store(self, target: cst.Subscript, value_node) -> typed.Stmt:
        array = self.store_array(target)
        if any(e.slice.__class__ is cst.Slice for e in target.slice):
            return self.vector_store(array, target, value_node)
        indices = self.indices(array, target)
        return self.store_value(array, indices, self.value(value_node), target)

    def store_array(self, target: cst.Subscript) -> str:
        """The array an element assignment `a[...] = ...` stores into."""
        base = target.value
        if not (isinstance(base, cst.Name) and base.value in self.arrays):
            if isinstance(base, cst.Name) and base.value in self.vars:
                raise self.error(f"'{base.value}' is a scalar ({self.vars[base.value]}), not an "
                                 "array", target)
            raise self.chained_index_error(target) or self.assign_target_error(target)
        return base.value

    def store_target(self, target: cst.Subscript, value: typed.Expr) -> typed.Store:
        array = self.store_array(target)
        return self.store_value(array, self.indices(array, target), value, target)

    def store_value(self, array: str, indices: list, value: typed.Expr, node) -> typed.Store:
        self.mark_written(array)
        return typed.Store(self.loc(node), array, indices, convert(value, self.arrays[array].elem))

    def mark_written(self, array: str) -> None:
        array = self.views.get(array, array)
        if array in self.array_params:
            self.written.add(array)

    def mark_ordered(self, array: str) -> None:
        """`array` is read by a memory-ordered load: not through the read-only path (`nc`)."""
        array = self.views.get(array, array)
        if array in self.array_params:
            self.ordered.add(array)

    def vector_slice(self, array: str, sub: cst.Subscript) -> tuple:
        """(leading index Exprs, start Expr, width) of `array[..., start:start + W]`."""
        kind = self.arrays[array]
        lead, start, width = self.slice_parts(array, sub)
        if width not in (2, 4, 8) or (width == 8 and kind.elem.bits != 16):
            raise self.error(f"vector access of {width} {kind.elem} elements is not supported (2 or 4 "
                             "elements, or 8 of a 16-bit type)", sub)
        return lead, start, width

    def slice_parts(self, array: str, sub: cst.Subscript) -> tuple:
        """(leading index Exprs, start Expr, width) of `array[..., start:start + W]`, any W."""
        kind = self.arrays[array]
        *leading, last = sub.slice
        if (len(sub.slice) != kind.rank or not isinstance(last.slice, cst.Slice)
                or any(isinstance(e.slice, cst.Slice) for e in leading)):
            raise self.error("vector access slices the last dimension and indexes the others: "
                             "x[i:i + 4] or x[r, j:j + 4]", sub)
        piece = last.slice
        if piece.step is not None or piece.upper is None:
            raise self.error("vector access needs the form x[i:i + W]", sub)
        width = self.slice_width(piece)
        if type(width) is not int:
            raise self.error(f"the width of a vector access must be an integer, got {width!r}", sub)
        start = (self.index(piece.lower) if piece.lower is not None
                 else typed.Constant(self.loc(sub), i32, 0))
        lead = [self.index(e.slice.value) for e in leading]
        return lead, start, width

    def slice_width(self, piece: cst.Slice) -> int:
        """W of `x[i:i + W]`, `x[:W]`, `x[i + 2:i + 4]`, `x[4:8]`: the bounds' constant difference."""
        what = "the width of a vector access (x[i:i + 4])"
        if piece.lower is None:
            return self.const_value(piece.upper, what)
        lower_base, lower_offset = self.base_and_offset(piece.lower)
        for upper_base, upper_offset in self.bases_and_offsets(piece.upper):
            if piece.lower.deep_equals(upper_base):             # x[b + i:b + i + 4]
                return self.const_value(upper_offset, what)
            if lower_base.deep_equals(upper_base):              # x[i + 2:i + 4]
                return self.const_value(upper_offset, what) - self.const_value(lower_offset, what)
        return self.const_value(piece.upper, what) - self.const_value(piece.lower, what)

    def bases_and_offsets(self, node: cst.BaseExpression) -> list:
        """The readings of `node` as base + offset: `4 + i` is (4, i) and (i, 4)."""
        readings = [self.base_and_offset(node)]
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
            readings.append((node.right, node.left))
        return readings

    @staticmethod
    def base_and_offset(node: cst.BaseExpression) -> tuple:
        """`i + 4` -> (i, 4); `4 + i` -> (i, 4); `i - 2` -> (i, -2); `i` -> (i, 0)."""
        if isinstance(node, cst.BinaryOperation):
            if isinstance(node.operator, cst.Add):
                return node.left, node.right
            if isinstance(node.operator, cst.Subtract):
                return node.left, cst.UnaryOperation(cst.Minus(), node.right)
        return node, cst.Integer("0")

    def vector_load(self, names: list, target, sub: cst.Subscript) -> typed.VectorLoad:
        if not (isinstance(sub.value, cst.Name) and sub.value.value in self.arrays):
            raise self.error("slices are only supported on arrays, for vector access", sub)
        array = sub.value.value
        lead, start, width = self.vector_slice(array, sub)
        if len(names) != width:
            raise self.error(f"a vector load of {width} elements needs {width} variables, got "
                             f"{len(names)}", target)
        elem = self.arrays[array].elem
        for name in names:
            self.check_assignable(name, target)
            known = self.variable_type(name)
            if known is not None and known != elem:
                raise self.error(f"variable '{name}' is {known}, but '{array}' holds {elem} "
                                 "(vector loads do not convert)", target)
            self.declare_local(name, elem)
        return typed.VectorLoad(self.loc(target), names, array, start, width, lead)

    def vector_store(self, array: str, target: cst.Subscript, value_node) -> typed.VectorStore:
        lead, start, width = self.vector_slice(array, target)
        if not isinstance(value_node, cst.Tuple):
            raise self.error(f"a vector store takes a tuple of {width} values: "
                             f"{array}[i:i + {width}] = (a, b, ...)", value_node)
        items = _elements(self, value_node)
        if len(items) != width:
            raise self.error(f"a vector store of {width} elements needs {width} values, got "
                             f"{len(items)}", value_node)
        elem = self.arrays[array].elem
        values = [convert(self.value(item.value), elem) for item in items]
        self.mark_written(array)
        return typed.VectorStore(self.loc(target), array, start, values, lead)

    def declare_array(self, name: str, call: cst.Call) -> list:
        space = "shared" if self.qualname(call.func) == "ptxpy.shared_array" else "local"
        label = f"ptxpy.{space}_array"
        shape_node, dtype_node = self.args(call, label, 2, keywords=("shape", "dtype"))
        at_launch = False
        try:
            shape = self.const_value(shape_node, f"the shape of {label}", shape=True)
        except CompileError:
            if space != "shared":
                raise
            shape = self.launch_shape(shape_node, label)   # sized at launch (launch_shape.py)
            at_launch = True
        shape = shape if isinstance(shape, tuple) else (shape,)
        # (a formula is a tuple: only the launch-sized path makes one, never a constant)
        if not 1 <= len(shape) <= 4 or not all((at_launch and is_formula(n)) or (
                isinstance(n, int) and not isinstance(n, bool) and n > 0) for n in shape):
            raise self.error(f"the shape of {label} must be a positive int or a tuple of 1 to 4 "
                             f"positive ints, got {_shown(shape, at_launch)}", shape_node)
        elem = scalar_named(self.qualname(dtype_node))
        if elem is None:
            raise self.error(f"the dtype of {label} must be a ptxpy scalar type such as f32, got "
                             f"'{code_of(dtype_node)}'", dtype_node)
        if name in self.arrays:
            if self.array_nodes.get(name) is call:     # again, in another unrolled iteration
                if self.redeclared_same(name, elem, shape, space):
                    return []
                raise self.error(f"array '{name}' changes its shape or dtype between the iterations "
                                 "of ptxpy.static_range; declare it once, before the loop", call)
            raise self.error(f"array '{name}' is already declared", call)
        if name in self.vars or name in self.annotations or name in self.consts:
            raise self.error(f"'{name}' is a scalar variable; it cannot also name an array", call)
        self.arrays[name] = ArrayType(elem, len(shape))
        self.array_nodes[name] = call
        self.decls.append(typed.ArrayDecl(name, elem, tuple(shape), space, self.loc(call)))
        self.check_shared_size(call)
        return []

    def map_shared(self, name: str, call: cst.Call) -> list:
        """`peer = ptxpy.map_shared_rank(s, rank)`: `peer` names shared array `s` of the block
        of that rank in the thread-block cluster (distributed shared memory; the SSA builder
        checks that `s` is in shared memory). `peer` may be mapped again, to the same array."""
        label = "ptxpy.map_shared_rank"
        array_node, rank_node = self.args(call, label, 2, keywords=("array", "rank"))
        source = array_node.value if isinstance(array_node, cst.Name) else None
        if source not in self.arrays or source in self.views:
            raise self.error(f"{label} takes a shared array (s = ptxpy.shared_array(...)) and the "
                             f"rank of a block in the cluster, got '{code_of(array_node)}'",
                             array_node)
        rank = convert(self.int_value(rank_node, f"the rank of {label}"), u32)
        if name in self.views:
            if self.views[name] != source:
                raise self.error(f"'{name}' maps '{self.views[name]}'; it cannot map another "
                                 f"array ('{source}')", call)
        else:
            self.check_new_array_name(name, call)
        self.arrays[name] = self.arrays[source]
        self.views[name] = source
        return [typed.MapShared(self.loc(call), name, source, rank)]

    def view_array(self, name: str, call: cst.Call) -> list:
        """`w = a.view(T)`: `w` names the memory of array `a` (a parameter or a shared array) as
        elements of scalar type `T`, as wide as `a`'s or wider (NumPy's `ndarray.view`, CUDA's
        `reinterpret_cast`); the SSA builder checks where `a` lives."""
        source = call.func.value.value
        label = f"{source}.view"
        (dtype_node,) = self.args(call, label, 1, keywords=("dtype",))
        elem = scalar_named(self.qualname(dtype_node))
        kind = self.arrays[source]
        if elem is None or elem.name == "bool":
            raise self.error(f"{label} takes a ptxpy scalar type other than bool, such as u64, got "
                             f"'{code_of(dtype_node)}'", dtype_node)
        if source in self.views:
            raise self.error(f"'{source}' is itself a view of '{self.views[source]}'; take the "
                             f"view of '{self.views[source]}'", call)
        if kind.elem.name == "bool":
            raise self.error(f"'{source}' holds bool; views of bool arrays are not supported", call)
        if elem.nbytes < kind.elem.nbytes:
            raise self.error(f"{label}({elem}): a view's elements must be at least as wide as the "
                             f"array's ({kind.elem}, {kind.elem.nbytes} bytes); pass the array "
                             f"in narrower elements instead "
                             f"(jax.lax.bitcast_convert_type on the caller's side)", dtype_node)
        if name in self.views:
            if (self.views[name], self.arrays[name].elem) != (source, elem):
                raise self.error(f"'{name}' already names a view of '{self.views[name]}' as "
                                 f"{self.arrays[name].elem}; use another name", call)
        else:
            self.check_new_array_name(name, call)
        self.arrays[name] = ArrayType(elem, kind.rank)
        self.views[name] = source
        return [typed.ViewArray(self.loc(call), name, source, elem)]

    def check_new_array_name(self, name: str, node) -> None:
        """`name` may name a new view: no array or scalar has it."""
        if name in self.arrays:
            raise self.error(f"array '{name}' is already declared", node)
        if name in self.vars or name in self.annotations or name in self.consts:
            raise self.error(f"'{name}' is a scalar variable; it cannot also name an array", node)

    def redeclared_same(self, name: str, elem, shape: tuple, space: str) -> bool:
        decl = next(d for d in self.decls if d.name == name)
        return (decl.elem, tuple(decl.shape), decl.space) == (elem, tuple(shape), space)

    def check_shared_size(self, node) -> None:
        """The arrays so far fit every target (the SSA builder checks the target's own limit)."""
        for space, limit, what in (("shared", MAX_SHARED_BYTES, ""), ("local", MAX_LOCAL_BYTES, " per thread")):
            total = sum(math.prod(decl.shape) * decl.elem.nbytes for decl in self.decls
                        if decl.space == space and not any(map(is_formula, decl.shape)))
            if total > limit:
                limit_is = (f"no target gives a block more than {limit} ({limit // 1024} KB, sm_90)"
                            if space == "shared" else f"the limit is {limit}")
                raise self.error(f"{space} arrays take {total} bytes{what}; {limit_is}", node)

    # --- control flow ---------------------------------------------------------------------
    def _s_If(self, node: cst.If) -> list:
        cond = truthy(self.value(node.test))
        if isinstance(cond, typed.Constant):
            # a compile-time condition (`if constexpr`): the dead branch is neither typed nor
            # compiled, so it may hold code that is only valid for other constant values
            if cond.value:
                return self.block(node.body)
            if isinstance(node.orelse, cst.If):
                return self._s_If(node.orelse)
            if isinstance(node.orelse, cst.Else):
                return self.block(node.orelse.body)
            return []
        body = self.block(node.body)
        orelse = []
        if node.orelse.__class__ is cst.If:
            orelse = self._s_If(node.orelse)
        elif node.orelse.__class__ is cst.Else:
            orelse = self.block(node.orelse.body)
        return [typed.If(self.loc(node), cond, body, orelse)]

    def _s_While(self, node: cst.While) -> list:
        if node.orelse is not None:
            raise self.error("while ... else is not supported in kernels", node.orelse)
        cond = truthy(self.value(node.test))
        return [typed.While(self.loc(node), cond, self.loop_body(node.body))]

    def loop_body(self, suite) -> list:
        self.loop_depth += 1
        try:
            return self.block(suite)
        finally:
            self.loop_depth -= 1

    def _s_For(self, node: cst.For) -> list:
        if node.orelse is not None:
            raise self.error("for ... else is not supported in kernels", node.orelse)
        if not isinstance(node.target, cst.Name):
            raise self.error("the loop variable must be a single name", node.target)
        it = node.iter
        qual = self.qualname(it.func) if isinstance(it, cst.Call) else None
        if qual == "builtins.range":
            return [self.range_loop(node, it)]
        if qual == "ptxpy.static_range":
            return [self.static_loop(node, it)]
        if isinstance(it, cst.Call) and isinstance(it.func, cst.Name) and it.func.value == "range":
            what = "a local variable" if self.is_local("range") else "a name the module defines"
            raise self.error(f"'range' here is {what}, which hides the builtin range(); rename it",
                             it.func)
        raise self.error("for loops can only iterate over range(...) or ptxpy.static_range(...)", it)

    def range_loop(self, node: cst.For, call: cst.Call) -> typed.For:
        nodes = [n for n in self.args(call, "range", 1, 3) if n is not None]
        values = []
        for n in nodes:
            v = self.value(n)
            if v.type.is_float:
                raise self.error(f"range() arguments must be integers, got {v.type}", n)
            values.append(convert(v, i32) if v.type.is_bool else v)
        t = _range_type(values)
        if t.is_float:   # u64 with a signed integer promotes to f64 (as in JAX)
            raise self.error(f"range() arguments promote to {t}; cast them to one integer type", call)
        t = self.loop_var_type(node.target, t, node)
        values = [convert(v, t) for v in values]
        if len(values) == 1:
            values.insert(0, typed.Constant(self.loc(call), t, 0))
        if len(values) == 2:
            values.append(typed.Constant(self.loc(call), t, 1))
        start, stop, step = values
        sign = 0
        if isinstance(step, typed.Constant):
            sign = self.step_sign(nodes[2] if len(nodes) == 3 else call)
        body = self.loop_body(node.body)
        return typed.For(self.loc(node), node.target.value, start, stop, step, sign, body)

    def step_sign(self, step_node) -> int:
        """+1 or -1 for a constant step, from its value before any wrap to an unsigned type."""
        if isinstance(step_node, cst.Call):
            return 1
        value = self.const_value(step_node, "the step of range()")
        if value == 0:
            raise self.error("range() step must not be zero", step_node)
        return 1 if value > 0 else -1

    def loop_var_type(self, target: cst.Name, t: Scalar, node) -> Scalar:
        name = target.value
        self.check_assignable(name, target)
        known = self.variable_type(name)
        if known is None:
            self.declare_local(name, t)
            return t
        if not known.is_int or not can_convert_implicitly(t, known):
            raise self.error(f"loop variable '{name}' is {known}, but the range gives {t}", target)
        self.declare_local(name, known)
        return known

    def static_loop(self, node: cst.For, call: cst.Call) -> typed.StaticFor:
        nodes = [n for n in self.args(call, "ptxpy.static_range", 1, 3) if n is not None]
        bounds = [self.const_value(n, "an argument of ptxpy.static_range") for n in nodes]
        for n, b in zip(nodes, bounds):
            if isinstance(b, bool) or not isinstance(b, int):
                raise self.error(f"ptxpy.static_range arguments must be integers, got {b!r}", n)
        if len(bounds) == 3 and bounds[2] == 0:
            raise self.error("ptxpy.static_range() step must not be zero", nodes[2])
        values = range(*bounds)
        count = _range_length(values)
        if count > MAX_UNROLL:
            raise self.error(f"ptxpy.static_range of {count} iterations is too long to unroll "
                             f"(at most {MAX_UNROLL})", call)
        name = node.target.value
        self.static_loop_var(node.target, values)
        if not values:      # no iterations: like a dead branch, the body is not typed
            return typed.StaticFor(self.loc(node), name, [], [], [])
        if not _mentions(node.body, name):
            # the body reads nothing of the variable: one typing serves every iteration
            body = self.loop_body(node.body)
            return typed.StaticFor(self.loc(node), name, list(values), body)
        # In each unrolled iteration the variable is a weak compile-time constant, like a Const
        # parameter: the body is typed once per value.
        # A statement of the body that does not mention the variable types the same in every
        # iteration (variable types only ever get added), so the first iteration's is reused.
        stmts = list(node.body.body)
        varying = [_mentions(stmt, name) for stmt in stmts]
        first: list = []
        bodies = []
        self.static_vars.add(name)
        self.loop_depth += 1
        outermost = self.unroll_site is None
        if outermost:
            self.unroll_site = node
        try:
            for k, value in enumerate(values):
                self.statements_unrolled += len(stmts) if k == 0 else sum(varying)
                if self.statements_unrolled > typed.MAX_STATEMENTS:
                    err = self.error(f"unrolling this ptxpy.static_range, with the loops inside "
                                     f"it, gives more than {typed.MAX_STATEMENTS} statements; use "
                                     "range() for a loop that need not be unrolled", self.unroll_site)
                    err.whole_loop = True
                    raise err
                self.consts[name] = value
                try:
                    if k == 0:
                        first = [self.statement(stmt) for stmt in stmts]
                        pieces = first
                    else:
                        pieces = [self.statement(stmt) if vary else done
                                  for stmt, vary, done in zip(stmts, varying, first)]
                    bodies.append([s for piece in pieces for s in piece])
                except CompileError as err:
                    if k > 0 and not getattr(err, "whole_loop", False):
                        err.message = f"{err.message} (in the unrolled iteration where {name} = {value})"
                        err.args = (err.message,)
                    raise
        finally:
            self.loop_depth -= 1
            self.consts.pop(name, None)
            self.static_vars.discard(name)
            if outermost:
                self.unroll_site = None
        return typed.StaticFor(self.loc(node), name, list(values), bodies[0] if bodies else [], bodies)

    def static_loop_var(self, target: cst.Name, values: range) -> None:
        """Give a static_range variable its type for reads after the loop (where it holds the
        last value): the variable's type if it has one and every value fits it, else i32 (i64
        where the values do not fit); none after an empty range that leaves it unassigned."""
        name = target.value
        self.check_assignable(name, target)
        ends = [v for part in (values[:1], values[-1:]) for v in part]
        known = self.variable_type(name)
        if known is not None:
            if not known.is_int:
                raise self.error(f"loop variable '{name}' is {known}, not an integer", target)
            if not all(fits(v, known) for v in ends):
                raise self.error(f"loop variable '{name}' is {known}, but ptxpy.static_range gives "
                                 f"values from {values[0]} to {values[-1]} that do not fit it", target)
            self.declare_local(name, known)
            return
        if not values:   # never assigned, as in a dead `if False:` branch: a later read is an error
            return
        self.declare_local(name, i32 if all(fits(v, i32) for v in ends) else i64)


class _NameCollector:
    """Names a function body assigns, and its annotated assignments (not inside nested scopes).

    Only statements can assign (walrus `:=` is rejected later), so this walks statements alone,
    in source order, without libcst's visitor machinery (which rebuilds every node it visits).
    """

    # the fields of each statement kind that hold statements (or clauses holding statements)
    NESTED = {
        "SimpleStatementLine": ("body",), "SimpleStatementSuite": ("body",), "IndentedBlock": ("body",),
        "If": ("body", "orelse"), "Else": ("body",), "For": ("body", "orelse"),
        "While": ("body", "orelse"), "With": ("body",),
        "Try": ("body", "handlers", "orelse", "finalbody"),
        "TryStar": ("body", "handlers", "orelse", "finalbody"),
        "ExceptHandler": ("body",), "ExceptStarHandler": ("body",), "Finally": ("body",),
        "Match": ("cases",), "MatchCase": ("body",),
    }

    def __init__(self):
        self.names: set = set()
        self.counts: dict = {}      # name -> how many targets assign it
        self.annotated: list = []

    def _add(self, target) -> None:
        if isinstance(target, cst.Name):
            self.names.add(target.value)
            self.counts[target.value] = self.counts.get(target.value, 0) + 1
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._add(element.value)

    def statement(self, node) -> None:
        kind = type(node)
        if kind is cst.Assign:
            for target in node.targets:
                self._add(target.target)
        elif kind is cst.AnnAssign:
            self._add(node.target)
            if isinstance(node.target, cst.Name):
                self.annotated.append((node.target.value, node.annotation.annotation))
        elif kind is cst.AugAssign or kind is cst.For:
            self._add(node.target)
        for field_name in self.NESTED.get(kind.__name__, ()):
            child = getattr(node, field_name)
            if isinstance(child, (list, tuple)):
                for item in child:
                    self.statement(item)
            elif child is not None:
                self.statement(child)


def _mentions(node, name: str) -> bool:
    """Whether the name `name` occurs anywhere in the libcst tree `node` (a cheap, conservative
    scan of the node's fields, without libcst's visitor machinery)."""
    stack = [node]
    while stack:
        item = stack.pop()
        if item.__class__ is cst.Name:
            if item.value == name:
                return True
            continue
        if isinstance(item, (list, tuple)):
            stack.extend(item)
        elif isinstance(item, cst.CSTNode):
            names = _NODE_FIELDS.get(item.__class__)
            if names is None:
                names = _NODE_FIELDS[item.__class__] = _child_fields(item.__class__)
            for field_name in names:
                stack.append(getattr(item, field_name))
    return False


_NODE_FIELDS: dict = {}     # libcst node kind -> the fields _mentions looks into
_LAYOUT_FIELDS = frozenset({"leading_lines", "lines_after_decorators", "header", "footer",
                            "trailing_whitespace", "comma", "semicolon", "colon", "dot", "lpar",
                            "rpar", "indent"})


def _child_fields(kind: type) -> tuple:
    """The dataclass fields of a libcst node kind that may hold nodes (not whitespace, commas,
    parentheses ...)."""
    from dataclasses import fields
    return tuple(f.name for f in fields(kind)
                 if not f.name.startswith("whitespace") and f.name not in _LAYOUT_FIELDS)


def _elements(checker, node) -> list:
    for element in node.elements:
        if not isinstance(element, cst.Element):
            raise checker.error("starred expressions ('*x') are not supported in kernels", element)
    return list(node.elements)


def _always_returns(body: list) -> bool:
    if not body:
        return False
    last = body[-1]
    if isinstance(last, typed.Return):
        return True
    if isinstance(last, typed.If):
        return _always_returns(last.body) and _always_returns(last.orelse)
    if isinstance(last, typed.While):
        return isinstance(last.cond, typed.Constant) and last.cond.value and not _has_break(last.body)
    return False


def _has_break(body: list) -> bool:
    for s in body:
        if isinstance(s, typed.Break):
            return True
        if isinstance(s, typed.If) and (_has_break(s.body) or _has_break(s.orelse)):
            return True
    return False


def _range_type(values: list) -> Scalar:
    """The type of a range loop's variable: the arguments' promoted type, where a constant
    step counts by its size alone (its sign sets the direction): `range(n, 0, -3)` with
    `n: u64` counts in u64, as `range(n)` does."""
    if len(values) == 3 and is_weak(values[2]) and values[2].type.is_int:
        t = join(values[:2])
        if t.is_int and fits(abs(values[2].value) if not t.is_signed else values[2].value, t):
            return t
    return join(values)


def _widening_shift_hint(value: typed.Expr, known: Scalar, depth: int = 0) -> str:
    """Where a shift of a `known` value by a count of another signedness widened the result
    (`x << r`, x: u32, r: i32 shifts in i64, as NumPy promotes): the fix is a count of x's own
    type, `x << u32(r)`, not a cast of the wider result."""
    if depth > 4 or not isinstance(value, (typed.Binary, typed.Unary, typed.Cast)):
        return ""
    if isinstance(value, typed.Binary) and value.op in ("shl", "shr"):
        left, count = value.left, value.right
        source = left.operand.type if isinstance(left, typed.Cast) else left.type
        if source == known and count.type != known and value.type != known:
            op = "<<" if value.op == "shl" else ">>"
            return (f"the shift count's type {count.type} made `{known} {op} {count.type}` shift in "
                    f"{value.type} (they promote to it); give the count the value's type: "
                    f"x {op} {known}(count)")
    children = ([value.left, value.right] if isinstance(value, typed.Binary)
                else [value.operand])
    return next((hint for child in children
                 if (hint := _widening_shift_hint(child, known, depth + 1))), "")


def _range_length(values: range) -> int:
    """len(values), which Python gives only up to sys.maxsize."""
    try:
        return len(values)
    except OverflowError:
        step = values.step
        if step > 0:
            return (values.stop - values.start + step - 1) // step
        return (values.start - values.stop - step - 1) // -step


def a_type(t) -> str:
    """`t` with its article, as the name is read: an i32, an f16, a u8, a bf16."""
    return f"{'an' if str(t)[:1] in 'aefhilmnorsx' else 'a'} {t}"
