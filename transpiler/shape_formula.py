"""The type checker's reading of a shared array extent known only at launch: the source
expression as a formula of transpiler/launch_shape.py, or a located error saying what such an
extent may be built from."""
from __future__ import annotations

import libcst as cst

from .errors import CompileError
from .launch_shape import I32_MAX, I32_MIN, LaunchShapeError, evaluate
from .scope import NotConstant, code_of, const_eval, subscript_items

ALLOWED = ("a compile-time constant, or known at launch: built from ptxpy.block_dim, x.shape[k] "
           "of the kernel's array parameters, its integer scalar parameters and constants "
           "(+ - * // % ptxpy.cdiv min max)")
_BINARY = {cst.Add: "+", cst.Subtract: "-", cst.Multiply: "*", cst.FloorDivide: "//",
           cst.Modulo: "%"}
_CALLS = {"ptxpy.cdiv": "cdiv", "builtins.min": "min", "builtins.max": "max"}


class ShapeFormulas:
    """Mixin for FunctionChecker (uses const_lookup, const_callee, qualname, arrays,
    array_params, vars, scalar_params, assign_counts, is_kernel, error)."""

    def launch_shape(self, node: cst.BaseExpression, label: str) -> tuple:
        """The extents of a shape that is not all known at compile time."""
        if node.__class__ is not cst.Tuple:
            return (self.launch_extent(node, label),)
        extents = []
        for element in node.elements:
            if not isinstance(element, cst.Element):
                raise self.error(f"the shape of {label} cannot be starred", element)
            extents.append(self.launch_extent(element.value, label))
        return tuple(extents)

    def launch_extent(self, node: cst.BaseExpression, label: str):
        """An int where `node` is a compile-time constant, else its formula."""
        try:
            value = const_eval(node, self.const_lookup, self.const_callee)
        except NotConstant:
            formula = self.extent_formula(node, label)
            if _reads_launch(formula):
                return formula
            try:                      # constants only, through a variable: known now
                value = evaluate(formula, {}, (1, 1, 1))
            except LaunchShapeError as err:
                raise self.error(str(err), node) from None
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(f"an extent of {label} must be an int, got {value!r}", node)
        if not I32_MIN <= value <= I32_MAX:
            raise self.error(f"{value} is past the 32-bit integers the kernel computes a shape "
                             "known at launch in", node)
        return value

    def extent_formula(self, node: cst.BaseExpression, label: str):
        kind = node.__class__
        if kind is cst.BinaryOperation and type(node.operator) in _BINARY:
            op = _BINARY[type(node.operator)]
            left, right = self.launch_extent(node.left, label), self.launch_extent(node.right, label)
            if op in ("//", "%") and right == 0:
                raise self.error(f"integer {'division' if op == '//' else 'modulo'} by zero", node)
            return (op, left, right)
        if kind is cst.UnaryOperation and type(node.operator) in (cst.Minus, cst.Plus):
            inner = self.launch_extent(node.expression, label)
            return ("neg", inner) if type(node.operator) is cst.Minus else inner
        if kind is cst.Attribute:
            qual = self.qualname(node) or ""
            if qual.startswith("ptxpy.block_dim.") and qual[-1] in "xyz" and len(qual) == 17:
                return ("block_dim", qual[-1])
        if kind is cst.Subscript:
            shape = self.parameter_extent(node, label)
            if shape is not None:
                return shape
        if kind is cst.Call:
            return self.call_formula(node, label)
        if kind is cst.Name and node.value in self.scalar_params:
            return self.scalar_extent(node, label)
        if kind is cst.Name and self.is_local(node.value):
            bound = self.launch_values.get(node.value)
            if bound is not None:    # assigned once (`n = x.shape[0]`), before this
                try:
                    return self.launch_extent(bound, label)
                except CompileError:
                    pass
            raise self.error(f"'{node.value}' is a variable; the shape of {label} must be {ALLOWED}, "
                             "or a variable assigned once, before it, from such an expression", node)
        if kind is cst.Name or kind is cst.Attribute:
            self.expr(node)           # an undefined name (CUDA's blockDim.x ...) says so
        if kind is cst.List:
            raise self.error(f"the shape of {label} is a tuple, not a list: "
                             f"{code_of(node).replace('[', '(', 1)[:-1]})", node)
        raise self.error(f"'{code_of(node)}' is not known at launch: the shape of {label} must be "
                         f"{ALLOWED}", node)

    def parameter_extent(self, node: cst.Subscript, label: str):
        """`x.shape[k]` of one of the kernel's array parameters: ("shape", x, k)."""
        base = node.value
        if not (base.__class__ is cst.Attribute and base.attr.value == "shape"
                and isinstance(base.value, cst.Name) and base.value.value in self.arrays):
            return None
        name = base.value.value
        items = subscript_items(node)
        rank = self.arrays[name].rank
        try:
            axis = const_eval(items[0], self.const_lookup, self.const_callee) if len(items) == 1 else None
        except NotConstant:
            axis = None
        if isinstance(axis, bool) or not isinstance(axis, int) or not -rank <= axis < rank:
            raise self.error(f"'{code_of(node)}': index {name}.shape with one compile-time integer "
                             f"in [{-rank}, {rank})", node)
        return self.parameter_axis(name, axis % rank, node)

    def parameter_axis(self, name: str, axis: int, node: cst.CSTNode):
        if name not in self.array_params:
            raise self.error(f"'{code_of(node)}': a shared array sized at launch takes its extents "
                             "from the kernel's array parameters, not from another shared or "
                             "local array", node)
        if not self.is_kernel:
            raise self.error(f"'{code_of(node)}': in a @ptxpy.func a shared array sized at launch may "
                             "use ptxpy.block_dim and constants only (the launch does not know "
                             f"which array '{name}' is); declare it in the kernel", node)
        return ("shape", name, axis)

    def scalar_extent(self, node: cst.Name, label: str):
        """A scalar parameter of the kernel, as the launch passes it: ("scalar", name)."""
        name = node.value
        if not self.is_kernel:
            raise self.error(f"'{name}': in a @ptxpy.func a shared array sized at launch may use "
                             "ptxpy.block_dim and constants only (the launch does not know which "
                             f"value '{name}' is); declare it in the kernel", node)
        if self.assign_counts.get(name):
            raise self.error(f"'{name}' is assigned in the kernel, and the shape of {label} is "
                             f"computed from parameter '{name}' as the launch passes it: give the "
                             "new value another name", node)
        ty = self.vars[name]
        if ty.is_float or ty.is_bool:
            raise self.error(f"parameter '{name}' is {ty}: an extent of {label} must be an integer",
                             node)
        return ("scalar", name)

    def call_formula(self, node: cst.Call, label: str):
        qual = self.qualname(node.func) or ""
        op = _CALLS.get(qual)
        if qual == "builtins.len" and len(node.args) == 1 and not node.args[0].keyword:
            arg = node.args[0].value
            if isinstance(arg, cst.Name) and arg.value in self.arrays:
                return self.parameter_axis(arg.value, 0, node)
        if op is None or any(a.keyword or a.star for a in node.args):
            raise self.error(f"'{code_of(node)}' is not known at launch: the shape of {label} must be "
                             f"{ALLOWED}", node)
        if (len(node.args) != 2) if op == "cdiv" else (len(node.args) < 2):
            raise self.error(f"'{code_of(node.func)}' takes {'2' if op == 'cdiv' else 'at least 2'} "
                             f"arguments here, got {len(node.args)}", node)
        formula = self.launch_extent(node.args[0].value, label)
        for arg in node.args[1:]:
            formula = (op, formula, self.launch_extent(arg.value, label))
            if op == "cdiv" and formula[2] == 0:
                raise self.error("ptxpy.cdiv by zero", node)
        return formula


def _reads_launch(formula) -> bool:
    if isinstance(formula, int):
        return False
    if formula[0] in ("block_dim", "shape", "scalar"):
        return True
    return any(_reads_launch(operand) for operand in formula[1:])
