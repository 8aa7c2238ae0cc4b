"""The frontend: Python source -> typed tree (`typed.TypedModule`), without running the source.

`parse_module` parses a file (Python's `ast` for the syntax, then libcst for the skeleton of its
top level: toplevel.py) and finds its `@ptxpy.jit` kernels and `@ptxpy.func` device functions,
from their headers; `check_kernel` type-checks one kernel specialisation (its `Const` values and
by-reference scalars) together with the device functions it reaches, whose bodies libcst parses
then, once.

    parsed = parse_module(source, "kernels.py")
    typed_module = check_kernel(parsed, "saxpy", consts={"BLOCK": 128})
"""
from __future__ import annotations

import ast
import copy
import difflib
import os
import warnings
from dataclasses import dataclass, field

import libcst as cst

from ptxpy.types import ArrayType, ConstType, Scalar, TupleType

from . import pyast, typed
from .driver import cluster_dims, register_bounds
from .errors import CompileError, DeepRecursion, source_lines
from .scope import ModuleScope, NotConstant, code_of, const_eval, normalize, resolve_type
from .toplevel import (MAX_NESTING, Definition, TopLevel, decorator_at, nested_functions,
                       parse_top_level, too_deeply_nested)
from .typecheck import FunctionChecker, TupleExpr, literal_value

__all__ = ["parse_module", "check_kernel", "kernel_decl", "ParsedModule", "KernelDecl", "FuncDecl",
           "InvalidDecl", "ParamDecl", "TupleExpr"]


@dataclass
class ParamDecl:
    name: str
    type: Scalar | ArrayType | ConstType
    default: object | None
    loc: tuple


@dataclass
class FuncDecl:
    """A `@ptxpy.func` device function: its signature, resolved; its body is checked per use.

    `node` is its full libcst definition, parsed when first asked for (toplevel.py)."""
    name: str
    params: list
    return_type: Scalar | TupleType | None
    loc: tuple
    definition: Definition = field(repr=False)

    @property
    def node(self) -> cst.FunctionDef:
        return self.definition.node()


@dataclass
class KernelDecl:
    """A `@ptxpy.jit` kernel. `return_type` is always None; `node` as for FuncDecl.
    `register_bounds`: (max_registers, launch_bounds), `cluster` (x, y, z) and `flags`
    ({"fast_math": True}, {"debug": True}) its decorator gives as constants, for compiles that
    have no decorator to ask (`ptxpy transpile`, `ptxpy.transpile`)."""
    name: str
    params: list
    loc: tuple
    definition: Definition = field(repr=False)
    return_type: None = None
    register_bounds: tuple = (None, ())
    cluster: tuple = ()
    flags: dict = field(default_factory=dict)

    @property
    def node(self) -> cst.FunctionDef:
        return self.definition.node()


@dataclass
class InvalidDecl:
    """A kernel or device function whose header (decorators, parameters, return annotation) is
    in error. The error is its own: it is raised where the function is compiled or called or
    its signature read, not when its file is parsed, so that the file's other kernels compile."""
    name: str
    loc: tuple
    error: CompileError

    def _raise_error(self):
        raise copy.copy(self.error)     # a fresh exception each time, without an old traceback

    params = return_type = node = property(_raise_error)


@dataclass
class ParsedModule:
    filename: str
    source_lines: list
    scope: ModuleScope = field(repr=False)
    top: TopLevel = field(repr=False)     # its statements (functions: headers only), positions
    kernels: dict = field(default_factory=dict)    # name -> KernelDecl, in source order
    funcs: dict = field(default_factory=dict)      # name -> FuncDecl
    # name -> (typed.FuncDef, names of the device functions it calls): a device function types
    # the same in every kernel specialisation, so it is checked once per parsed module
    checked_funcs: dict = field(default_factory=dict, repr=False)

    @property
    def positions(self) -> dict:
        """node -> (line, col) where it starts (definitions add theirs as they are parsed)."""
        return self.top.positions

    def loc(self, node: cst.CSTNode) -> tuple | None:
        return self.top.positions.get(node)


def parse_module(source: str, filename: str = "<string>", keep: set | None = None,
                 tree: ast.Module | None = None) -> ParsedModule:
    """Parse `source` (never importing or running it) and find its kernels and device functions
    (with `keep`, only those of its top-level names: `toplevel.parse_top_level`; `tree`: Python's
    ast of `source`, when the caller has it already)."""
    lines = source_lines(source)
    try:
        with DeepRecursion():
            return _parse(source, filename, lines, keep, tree)
    except CompileError as err:
        raise err.located(filename, lines) from None
    except RecursionError:
        raise CompileError("the source is nested too deeply to compile", None, filename) from None
    except Exception as err:
        if os.environ.get("PTXPY_TRACEBACK"):
            raise
        raise _internal_error(err, filename) from err


def check_kernel(parsed: ParsedModule, name: str, consts: dict | None = None,
                 by_ref: frozenset = frozenset()) -> typed.TypedModule:
    """Type-check one specialisation of kernel `name`: its Const values and by-ref scalars."""
    try:
        with DeepRecursion():
            return _check(parsed, name, dict(consts or {}), frozenset(by_ref))
    except CompileError as err:
        raise err.located(parsed.filename, parsed.source_lines) from None
    except RecursionError:
        raise CompileError("the kernel is nested too deeply to compile", None,
                           parsed.filename) from None
    except Exception as err:
        if os.environ.get("PTXPY_TRACEBACK"):
            raise
        raise _internal_error(err, parsed.filename) from err


def _internal_error(err: Exception, filename: str) -> CompileError:
    """A bug in the frontend still reaches the user as a CompileError (PTXPY_TRACEBACK=1: raw)."""
    return CompileError(f"internal compiler error: {type(err).__name__}: {err} (please report this; "
                        "PTXPY_TRACEBACK=1 shows the traceback)", None, filename)


# --- parsing ---------------------------------------------------------------------------------
def _parse(source: str, filename: str, lines: list, keep: set | None = None,
           tree: ast.Module | None = None) -> ParsedModule:
    tree = tree or _python_syntax_check(source, lines)
    _check_nesting(tree, lines)
    top = parse_top_level(source, tree, keep)
    scope = ModuleScope(top.statements, None if keep is not None else unevaluated_names(tree))
    parsed = ParsedModule(filename, lines, scope, top)
    for stmt in top.statements:
        if isinstance(stmt, cst.FunctionDef):
            _declare(parsed, stmt)
    _declare_nested(parsed, tree, source)
    return parsed


_COMPOUND_KINDS = {ast.If: "if", ast.For: "for", ast.AsyncFor: "for", ast.While: "while",
                   ast.With: "with", ast.AsyncWith: "with", ast.Try: "try",
                   **{getattr(ast, name): kind for name, kind in (("TryStar", "try"), ("Match", "match"))
                      if hasattr(ast, name)}}


def unevaluated_names(tree: ast.Module) -> dict:
    """Names that top-level compound statements (`if`, `for`, `with`, `try` ...) bind, which
    ptxpy does not evaluate: {name: what an error says after `name 'X'`}."""
    found: dict = {}
    for stmt in tree.body:
        kind = _COMPOUND_KINDS.get(stmt.__class__) or (
            None if isinstance(stmt, (ast.Expr, ast.Assign, ast.AnnAssign, ast.AugAssign,
                                      ast.Import, ast.ImportFrom, ast.FunctionDef,
                                      ast.AsyncFunctionDef, ast.ClassDef, ast.Pass))
            else stmt.__class__.__name__.lower())
        if kind is None:
            continue
        for node in sorted(_bound_in(stmt), key=lambda n: (n.lineno, n.col_offset)):
            found.setdefault(node.id, (
                f"is assigned inside a top-level '{kind}' statement (line {node.lineno}), which "
                f"ptxpy does not evaluate: a module constant is a plain top-level assignment "
                f"({node.id} = ...); or pass the value as a Const parameter"))
    return found


def _bound_in(stmt: ast.stmt):
    """The Name targets `stmt` stores to, outside the functions and classes it defines."""
    stack = [stmt]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            yield node
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                stack.append(child)


def _python_syntax_check(source: str, lines: list) -> ast.Module:
    """Python's own parse of `source` (its SyntaxError as a CompileError)."""
    if "\0" in source:     # (Python's message has no position)
        line = next(k for k, text in enumerate(lines, 1) if "\0" in text)
        raise CompileError("source contains a NUL byte", (line, lines[line - 1].index("\0")))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")   # e.g. SyntaxWarning for `1if x`: not the user's concern here
            return pyast.parse(source)
    except SyntaxError as err:
        line = err.lineno or 1
        text = lines[line - 1] if 0 < line <= len(lines) else ""
        col = max(0, min((err.offset or 1) - 1, len(text)))
        raise CompileError(err.msg or "invalid syntax", (line, col)) from None
    except (MemoryError, RecursionError):     # the parser's stack, or the tree, too deep
        raise CompileError("cannot parse this file: an expression is nested too deeply for "
                           "Python's parser; split it into several statements",
                           _longest_line(lines)) from None
    except ValueError as err:
        raise CompileError(f"cannot parse this file: {err}", (1, 0)) from None


def _longest_line(lines: list) -> tuple:
    """(line, col) of where the longest line's text starts: where a too deep expression is,
    unless it spans many lines."""
    number, text = max(enumerate(lines or [""], 1), key=lambda item: len(item[1]))
    return number, len(text) - len(text.lstrip())


def _check_nesting(tree: ast.Module, lines: list) -> None:
    stmt = too_deeply_nested(tree, lines)
    if stmt is not None:
        text = lines[stmt.lineno - 1]
        raise CompileError(f"this statement nests expressions more than {MAX_NESTING} levels deep, "
                           "too deeply to compile; split it into several statements",
                           (stmt.lineno, len(text) - len(text.lstrip())))


def _declare(parsed: ParsedModule, node: cst.FunctionDef) -> None:
    """Declare a kernel or device function from its header (its body is parsed on use); an
    error in the header is kept as the function's own (InvalidDecl)."""
    name = node.name.value
    for table in (parsed.kernels, parsed.funcs):
        table.pop(name, None)   # a later definition replaces an earlier one, as in Python
    kinds, others = _ptxpy_decorators(parsed, node)
    if not kinds:
        _declare_misspelled(parsed, node, others)
        return
    kind = kinds[0][0]
    try:
        _check_decorators(parsed, kinds, others)
        decl = _declaration(parsed, node, kind == "jit")
        if kind == "jit":
            found = _decorator_constants(parsed, kinds[0][1].decorator)
            decl.register_bounds = register_bounds(found.get("max_registers"),
                                                   found.get("launch_bounds"))
            decl.cluster = cluster_dims(found.get("cluster"))
            decl.flags = {flag: True for flag in ("fast_math", "debug") if found.get(flag)}
    except CompileError as err:
        err = err.located(parsed.filename, parsed.source_lines).with_traceback(None)
        decl = InvalidDecl(name, parsed.loc(node.name), err)
    (parsed.kernels if kind == "jit" else parsed.funcs)[name] = decl


def _declare_nested(parsed: ParsedModule, tree: ast.Module, source: str) -> None:
    """A @ptxpy.jit or @ptxpy.func function below the top level (in a class, a function, an
    `if` block ...) is an error of its own, under Python's name for it ('A.k', 'f.<locals>.k';
    in a block, which binds the module's name, 'k', replacing an earlier definition)."""
    nested = []
    for fn in nested_functions(tree, source):
        kind, deco = _ptxpy_decorator_of(parsed, fn.node)
        if kind is None:
            continue
        loc = decorator_at(deco, parsed.source_lines)
        message = (f"@ptxpy.{kind} function '{fn.node.name}' must be defined at the top level of "
                   f"the module, not inside {fn.inside}")
        error = CompileError(message, loc).located(parsed.filename, parsed.source_lines)
        nested.append((kind, InvalidDecl(fn.qualname, loc, error)))
    if nested:
        _add_in_source_order(parsed, nested)


def _ptxpy_decorator_of(parsed: ParsedModule, node: ast.FunctionDef) -> tuple:
    """('jit' or 'func', its decorator) of a function in Python's tree, or (None, None)."""
    for deco in node.decorator_list:
        dotted = _dotted(deco.func if isinstance(deco, ast.Call) else deco)
        head, _, rest = (dotted or "").partition(".")
        base = parsed.scope.global_qualname(head) if head else None
        qual = normalize(f"{base}.{rest}" if rest else base) if base else None
        if qual in ("ptxpy.jit", "ptxpy.func"):
            return qual[6:], deco
    return None, None


def _dotted(node: ast.expr) -> str | None:
    """'ptxpy.jit' for the expression `ptxpy.jit`; None for anything but a dotted name."""
    attributes = []
    while isinstance(node, ast.Attribute):
        attributes.append(node.attr)
        node = node.value
    return ".".join([node.id, *reversed(attributes)]) if isinstance(node, ast.Name) else None


def _add_in_source_order(parsed: ParsedModule, nested: list) -> None:
    """Add the nested functions' declarations; one under a module name replaces a top-level
    definition of that name above it, as in Python; each table stays in source order."""
    for kind, decl in nested:
        earlier = parsed.kernels.get(decl.name) or parsed.funcs.get(decl.name)
        if earlier is not None and earlier.loc[0] > decl.loc[0]:
            continue     # a top-level definition below it is the one the name has
        parsed.kernels.pop(decl.name, None)
        parsed.funcs.pop(decl.name, None)
        (parsed.kernels if kind == "jit" else parsed.funcs)[decl.name] = decl
    for table in (parsed.kernels, parsed.funcs):
        ordered = sorted(table.items(), key=lambda item: item[1].loc or (0, 0))
        table.clear()
        table.update(ordered)


def _declaration(parsed: ParsedModule, node: cst.FunctionDef, is_kernel: bool) -> KernelDecl | FuncDecl:
    if node.asynchronous is not None:
        raise CompileError("async functions cannot be kernels or device functions", parsed.loc(node))
    name, loc = node.name.value, parsed.loc(node.name)
    if is_kernel:
        _check_entry_name(name, loc)
    params = _params(parsed, node, is_kernel)
    definition = parsed.top.definitions[node]
    if is_kernel:
        _kernel_return(parsed, node)
        return KernelDecl(name, params, loc, definition)
    return FuncDecl(name, params, _func_return(parsed, node), loc, definition)


#: the decorator's keywords that change the PTX whatever the call (read from the source), and
#: the checks of their values
def _flag(name: str):
    def check(value):
        if not isinstance(value, bool):
            raise ValueError(f"{name} must be True or False, got {value!r:.40}")
        return value
    return check


DECORATOR_CONSTANTS = {"max_registers": lambda v: register_bounds(max_registers=v),
                       "launch_bounds": lambda v: register_bounds(launch_bounds=v),
                       "cluster": cluster_dims, "fast_math": _flag("fast_math"),
                       "debug": _flag("debug")}


def _decorator_constants(parsed: ParsedModule, decorator: cst.BaseExpression) -> dict:
    """The DECORATOR_CONSTANTS keywords of `@ptxpy.jit(...)` whose values are compile-time
    constants (a value computed at import is the decorator's alone to pass), checked as the
    decorator checks them: {keyword: value}."""
    found = {}
    for arg in decorator.args if isinstance(decorator, cst.Call) else ():
        if arg.keyword is not None and arg.keyword.value in DECORATOR_CONSTANTS:
            try:
                value = const_eval(arg.value, parsed.scope.lookup, parsed.scope.const_callee)
            except NotConstant:
                continue
            try:
                DECORATOR_CONSTANTS[arg.keyword.value](value)
            except ValueError as err:
                raise CompileError(f"@ptxpy.jit: {err}", parsed.loc(arg.value)) from None
            found[arg.keyword.value] = value
    return found


def _check_entry_name(name: str, loc) -> None:
    """A kernel is a PTX entry of its own name: one that PTX takes and ptxpy's PTX leaves free."""
    if not name.isascii():
        raise CompileError(f"kernel name '{name}' is not ASCII: the kernel is a PTX entry of the "
                           "same name, and PTX names are ASCII (rename it)", loc)
    if name == "_":
        raise CompileError("a kernel cannot be named '_': the kernel is a PTX entry of the same "
                           "name, and PTX takes no '_' alone (rename it)", loc)
    if name == "vprintf":
        raise CompileError("a kernel cannot be named 'vprintf': that is the CUDA function print() "
                           "calls, which the PTX declares (rename it)", loc)


def _declare_misspelled(parsed: ParsedModule, node: cst.FunctionDef, decorators: list) -> None:
    """`@ptxpy.jti`: a kernel whose every use is an error naming the decorator (Python itself
    would fail on it when importing the file)."""
    for deco in decorators:
        message = _misspelled_decorator(parsed, deco.decorator)
        if message is not None:
            err = CompileError(message, parsed.loc(deco)).located(parsed.filename, parsed.source_lines)
            parsed.kernels[node.name.value] = InvalidDecl(node.name.value, parsed.loc(node.name),
                                                          err.with_traceback(None))
            return


def _misspelled_decorator(parsed: ParsedModule, decorator: cst.BaseExpression) -> str | None:
    """What is wrong with a decorator meant to be ptxpy's, or None if it is not one of those:
    `@ptxpy.jti`, `@ptxpy.jit(block=32)(grid=1)`, `@ptxpy.jit` or `@jit` with nothing imported."""
    shown = code_of(decorator)
    expr = decorator.func if isinstance(decorator, cst.Call) else decorator
    inner = expr
    while isinstance(inner, cst.Call):
        inner = inner.func
    qual = parsed.scope.qualname(inner) or ""
    if qual in ("ptxpy.jit", "ptxpy.func"):      # only a call of the decorator's result gets here
        return (f"'@{shown}' calls what @{code_of(inner)}(...) returns; give every option in one "
                f"call, as @{code_of(inner)}(block=..., grid=...)")
    if qual.startswith("ptxpy."):
        close = difflib.get_close_matches(qual[6:], ["jit", "func"], n=1)
        hint = f"; did you mean @ptxpy.{close[0]}?" if close else " (@ptxpy.jit or @ptxpy.func)"
        return f"'@{shown}' is not a ptxpy decorator{hint}"
    head, name = _head_and_last(expr)
    if head is None or name not in ("jit", "func") or parsed.scope.binds(head):
        return None
    add = f"from ptxpy import {name}" if head == name else f"import {head}"
    return f"name '{head}' is not defined (add '{add}' to the file)"


def _head_and_last(expr: cst.BaseExpression) -> tuple:
    """('ptxpy', 'jit') for `ptxpy.jit`, ('jit', 'jit') for `jit`; (None, None) otherwise."""
    if isinstance(expr, cst.Name):
        return expr.value, expr.value
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name):
        return expr.value.value, expr.attr.value
    return None, None


def _ptxpy_decorators(parsed: ParsedModule, node: cst.FunctionDef) -> tuple[list, list]:
    """[(kind, decorator)] of its @ptxpy.jit and @ptxpy.func ('jit', 'func'), and its others."""
    kinds, others = [], []
    for deco in node.decorators:
        expr = deco.decorator.func if isinstance(deco.decorator, cst.Call) else deco.decorator
        qual = parsed.scope.qualname(expr)
        if qual in ("ptxpy.jit", "ptxpy.func"):
            kinds.append((qual[6:], deco))
        else:
            others.append(deco)
    return kinds, others


def _check_decorators(parsed: ParsedModule, kinds: list, others: list) -> None:
    if len(kinds) > 1:
        raise CompileError("a function cannot be both @ptxpy.jit and @ptxpy.func (or decorated twice)",
                           parsed.loc(kinds[1][1]))
    if others:
        raise CompileError(f"unsupported decorator '@{code_of(others[0].decorator)}' on a ptxpy "
                           "function (only @ptxpy.jit or @ptxpy.func)", parsed.loc(others[0]))
    kind, deco = kinds[0]
    if kind == "func" and isinstance(deco.decorator, cst.Call) and deco.decorator.args:
        raise CompileError("@ptxpy.func takes no arguments", parsed.loc(deco.decorator))
    positional = [a for a in (deco.decorator.args if isinstance(deco.decorator, cst.Call) else ())
                  if a.keyword is None]
    if kind == "jit" and positional:    # Numba's @cuda.jit("void(float32[:])")
        raise CompileError("@ptxpy.jit takes no signature or other positional argument: ptxpy "
                           "reads the types from the function's annotations (x: Array[f32], "
                           "n: i32), and its options are keywords (grid=..., block=...)",
                           parsed.loc(positional[0]))


def _params(parsed: ParsedModule, node: cst.FunctionDef, is_kernel: bool) -> list:
    p = node.params
    for star in (p.star_arg, p.star_kwarg):
        if isinstance(star, cst.Param):
            prefix = "*" if star is p.star_arg else "**"
            raise CompileError(f"'{prefix}{star.name.value}' parameters are not supported "
                               "(list every parameter with its type)", parsed.loc(star))
    for marker, kind in ((p.star_arg, "keyword-only"), (p.posonly_ind, "positional-only")):
        if isinstance(marker, (cst.ParamStar, cst.ParamSlash)):
            text = "*" if kind == "keyword-only" else "/"
            raise CompileError(f"{kind} parameters ('{text}' in the parameter list) are not "
                               f"supported; remove the '{text}'", parsed.loc(marker))
    params, seen = [], set()
    for param in [*p.posonly_params, *p.params, *p.kwonly_params]:
        decl = _param(parsed, param, is_kernel)
        if decl.name in seen:
            raise CompileError(f"duplicate parameter '{decl.name}'", decl.loc)
        seen.add(decl.name)
        params.append(decl)
    return params


def _param(parsed: ParsedModule, param: cst.Param, is_kernel: bool) -> ParamDecl:
    name, loc = param.name.value, parsed.loc(param)
    if is_kernel and not name.isascii():
        raise CompileError(f"kernel parameter name '{name}' is not ASCII: it names a PTX "
                           "parameter, and PTX names are ASCII (rename it)", loc)
    if param.annotation is None:
        what = "kernel" if is_kernel else "device function"
        raise CompileError(f"parameter '{name}' of a {what} needs a type annotation "
                           "(e.g. 'x: Array[f32]' or 'n: i32')", loc)
    kind = resolve_type(param.annotation.annotation, parsed.scope, parsed.loc, allow_const=True)
    default = None
    if param.default is not None:
        default = _default(parsed, name, kind, param.default)
    return ParamDecl(name, kind, default, loc)


def _default(parsed: ParsedModule, name: str, kind, node: cst.BaseExpression):
    if not isinstance(kind, ConstType):
        raise CompileError(f"parameter '{name}' has a default value, which only Const parameters may "
                           "have", parsed.loc(node))
    try:
        value = const_eval(node, parsed.scope.lookup, parsed.scope.const_callee)
    except NotConstant:
        if isinstance(node, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
            raise CompileError(f"the default of Const parameter '{name}' must be a number or a "
                               f"bool (it is {kind}), not a string", parsed.loc(node)) from None
        raise CompileError(f"the default of Const parameter '{name}' must be a compile-time constant",
                           parsed.loc(node)) from None
    return const_param_value(name, kind, value, parsed.loc(node))


def const_param_value(name: str, kind: ConstType, value, loc):
    """`value` as the Python value of a `kind` parameter, or a CompileError."""
    converted = kind.value_of(value)
    if converted is None:
        raise CompileError(f"Const parameter '{name}' is {kind} but was given {value!r}", loc)
    return converted


def _kernel_return(parsed: ParsedModule, node: cst.FunctionDef) -> None:
    ann = node.returns
    if ann is not None and not (isinstance(ann.annotation, cst.Name) and ann.annotation.value == "None"):
        raise CompileError("a kernel returns nothing: write its results into output arrays",
                           parsed.loc(ann.annotation))


def _func_return(parsed: ParsedModule, node: cst.FunctionDef):
    ann = node.returns
    if ann is None or (isinstance(ann.annotation, cst.Name) and ann.annotation.value == "None"):
        return None
    kind = resolve_type(ann.annotation, parsed.scope, parsed.loc, allow_tuple=True)
    if isinstance(kind, ArrayType):
        raise CompileError("a device function cannot return an array", parsed.loc(ann.annotation))
    return kind


# --- checking --------------------------------------------------------------------------------
def _check(parsed: ParsedModule, name: str, consts: dict, by_ref: frozenset) -> typed.TypedModule:
    decl = kernel_decl(parsed, name)
    values = _const_values(decl, consts)
    _check_by_ref(decl, by_ref)
    program = ProgramChecker(parsed)
    kernel = FunctionChecker(program, decl, values, by_ref).check()
    return typed.TypedModule(kernel, program.typed_funcs, parsed.filename, parsed.source_lines)


def kernel_decl(parsed: ParsedModule, name: str) -> KernelDecl | InvalidDecl:
    """Kernel `name` of the module; an error naming the file if it has none of that name."""
    decl = parsed.kernels.get(name)
    if decl is None:
        raise CompileError(f"no @ptxpy.jit kernel named '{name}'", None, parsed.filename)
    return decl


def _const_values(decl: KernelDecl, consts: dict) -> dict:
    kinds = {p.name: p for p in decl.params if isinstance(p.type, ConstType)}
    for key in consts:
        if key not in kinds:
            raise CompileError(f"kernel '{decl.name}' has no Const parameter '{key}'", decl.loc)
    values = {}
    for pname, p in kinds.items():
        if pname in consts:
            values[pname] = literal_value(const_param_value(pname, p.type, consts[pname], p.loc), p.loc)
        elif p.default is not None:
            values[pname] = literal_value(p.default, p.loc)
        else:
            raise CompileError(f"Const parameter '{pname}' of kernel '{decl.name}' needs a value "
                               "(it has no default)", p.loc)
    return values


def _check_by_ref(decl: KernelDecl, by_ref: frozenset) -> None:
    scalars = {p.name for p in decl.params if isinstance(p.type, Scalar)}
    for pname in by_ref:
        if pname not in scalars:
            raise CompileError(f"by_ref names '{pname}', which is not a scalar parameter of "
                               f"kernel '{decl.name}'", decl.loc)


def specialisation_key(name: str, consts: dict) -> str:
    """The name of device function `name` checked with Const values `consts`: `f[N=4, S=True]`
    (`f` alone without Const parameters)."""
    if not consts:
        return name
    return f"{name}[{', '.join(f'{k}={v!r}' for k, v in consts.items())}]"


def _base_name(key: str) -> str:
    return key.partition("[")[0]


class ProgramChecker:
    """Checks device functions on demand, once each per parsed module and Const values, and
    detects recursion."""

    def __init__(self, parsed: ParsedModule):
        self.parsed = parsed
        self.typed_funcs: dict = {}     # key -> typed.FuncDef, callees before callers
        self._in_progress: list = []    # keys of device functions being checked, callers first
        self._callees: dict = {}        # key of one in progress -> the keys it calls

    def func(self, name: str, call_loc, consts: dict | None = None) -> tuple:
        """The typed device function `name` for Const values `consts`, and its key (the name
        its calls use)."""
        consts = consts or {}
        key = specialisation_key(name, consts)
        if self._in_progress:
            self._callees[self._in_progress[-1]].append(key)
        if key in self.typed_funcs:
            return self.typed_funcs[key], key
        names = [_base_name(k) for k in self._in_progress]
        if name in names:     # with other Const values too: no recursion (SPEC 2.6)
            cycle = " -> ".join(self._in_progress[names.index(name):] + [key])
            raise CompileError(f"recursive call to '{name}' ({cycle}): recursion is not supported",
                               call_loc)
        if key not in self.parsed.checked_funcs:
            self.parsed.checked_funcs[key] = self._check(name, key, consts)
        self._include(key)
        return self.typed_funcs[key], key

    def _check(self, name: str, key: str, consts: dict) -> tuple:
        self._in_progress.append(key)
        self._callees[key] = []
        try:
            fdef = FunctionChecker(self, self.parsed.funcs[name], consts, frozenset()).check()
        finally:
            self._in_progress.pop()
        return fdef, self._callees.pop(key)

    def _include(self, name: str) -> None:
        """Add checked function `name` (a key) to this kernel's functions, after what it calls."""
        fdef, callees = self.parsed.checked_funcs[name]
        for callee in callees:
            if callee not in self.typed_funcs:
                self._include(callee)
        self.typed_funcs[name] = fdef
