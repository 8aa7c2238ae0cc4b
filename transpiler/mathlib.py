"""The accurate math library: `ptxpy/libm.py`, read by our own frontend, never imported.

`ptxpy/libm.py` is ptxpy-language source: `@ptxpy.func` device functions such as `exp_f32` and
`sin_f64`. `library_function(name)` parses the file once, type-checks the function and what it
calls once, and hands the typed trees to `lower_intrinsics`, which inlines them where a kernel
calls `math.exp(x)` and the like (docs/design.md, "The math library").

The typed trees have their source locations removed, so every instruction inlined from the
library carries the location of the kernel's call (its `.loc` line and any error point there).
"""
from __future__ import annotations

import ast
import os
import threading
from dataclasses import fields, is_dataclass

from . import pyast, typed
from .errors import CompileError, source_lines

LIBRARY_FILE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "ptxpy", "libm.py")

_lock = threading.Lock()
_tree = None              # Python's ast of the library, read once
_functions: dict = {}     # name -> (typed.FuncDef, {name: typed.FuncDef} of it and its callees)


def library_source() -> str:
    with open(_library_path(), encoding="utf-8") as f:
        return f.read()


def library_function(name: str) -> tuple:
    """The typed `@ptxpy.func` `name` of the library and the device functions it reaches."""
    with _lock:
        if name not in _functions:
            _functions[name] = _check(name)
        return _functions[name]


def _library_path() -> str:
    """ptxpy/libm.py of this installation (the package may live apart from the transpiler)."""
    import ptxpy

    installed = os.path.join(os.path.dirname(os.path.abspath(ptxpy.__file__)), "libm.py")
    return installed if os.path.isfile(installed) else LIBRARY_FILE


def _check(name: str) -> tuple:
    """Type-check `name` from a parse of only what it needs (the imports, the functions it
    calls and the constants they read, found by name in Python's ast of the file): libcst reads
    a few functions instead of the whole library's top level (27 ms of a new process's first
    compile of `math.exp`, before). Anything the names miss falls back to the whole file."""
    global _tree
    source = library_source()
    if _tree is None:
        _tree = pyast.parse(source)
    try:
        try:
            return _typed(source, name, _needed_names(_tree, name))
        except CompileError:
            return _typed(source, name, None)
    except CompileError as err:
        err.located("ptxpy/libm.py", source_lines(source))
        raise CompileError(f"internal error in the math library: {err}") from None


def _typed(source: str, name: str, keep: set | None) -> tuple:
    from .frontend import ProgramChecker, parse_module

    parsed = parse_module(source, "ptxpy/libm.py", keep=keep, tree=_tree)
    parsed.is_library = True      # unlocks the private helpers (calls.LIBRARY_PRIVATE)
    if name not in parsed.funcs:
        raise CompileError(f"the math library has no function '{name}'")
    program = ProgramChecker(parsed)
    fdef, _ = program.func(name, None)
    funcs = dict(program.typed_funcs)
    for func in funcs.values():
        _forget_locations(func)
    return fdef, funcs


def _needed_names(tree: ast.Module, name: str) -> set:
    """`name` and the top-level functions and constants it reaches through the names it reads."""
    from .toplevel import defined_names

    defined = {name: stmt for stmt in tree.body for name in defined_names(stmt)}
    needed, todo = set(), [name]
    while todo:
        current = todo.pop()
        if current in needed or current not in defined:
            continue
        needed.add(current)
        todo.extend(node.id for node in ast.walk(defined[current]) if isinstance(node, ast.Name))
    return needed


def _forget_locations(node) -> None:
    """Set `loc` to None on every node of a typed tree (the builder then keeps the call's)."""
    stack = [node]
    seen = set()
    while stack:
        item = stack.pop()
        if isinstance(item, (list, tuple)):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, typed.Node) or (is_dataclass(item) and not isinstance(item, type)):
            if id(item) in seen:
                continue
            seen.add(id(item))
            if hasattr(item, "loc"):
                item.loc = None
            stack.extend(getattr(item, f.name) for f in fields(item))
