"""Kernels defined in notebook cells (IPython, Jupyter): the names other cells defined.

ptxpy compiles a kernel from the text of the file that defines it. A notebook cell is such a
text (IPython keeps it in `linecache`), but the imports and constants a kernel uses often sit in
earlier cells. For a kernel whose text is a cell (no file on disk), `context_lines` rebuilds
them, as source lines appended after the cell, from the names bound where the kernel was
defined (its function's globals): the `ptxpy` and `math` modules, the names imported from
`ptxpy`, and finite numbers and booleans (module constants). Lines are appended, not
prepended, so the cell's own line numbers stay those of error messages; the frontend resolves
top-level names wherever they stand in the file. Names the cell binds itself are left alone.
Device functions of other cells are not brought in: a kernel's `@ptxpy.func`s live in its cell.
"""
from __future__ import annotations

import ast
import math
import os
import types

from ptxpy.transpiler import pyast


def is_cell(filename: str) -> bool:
    """Whether `filename` names source text that is not a file: a notebook cell."""
    return not os.path.isfile(filename)


def context_lines(namespace: dict, cell_source: str) -> str:
    """Source lines binding the names of `namespace` that a kernel may use and the cell does
    not bind itself (empty if the cell does not parse: its own error comes first)."""
    try:
        bound = _top_level_names(pyast.parse(cell_source))
    except (SyntaxError, ValueError):
        return ""
    exported = _ptxpy_exports()
    lines = []
    for name, value in namespace.items():
        if name in bound or name.startswith("__") or not name.isidentifier():
            continue
        line = _binding(name, value, exported)
        if line:
            lines.append(line)
    return "".join(f"{line}\n" for line in lines)


def _binding(name: str, value, exported: dict) -> str | None:
    import ptxpy

    if isinstance(value, types.ModuleType):
        module = {ptxpy: "ptxpy", math: "math"}.get(value)
        if module is None:
            return None
        return f"import {module}" if name == module else f"import {module} as {name}"
    if _is_number(value) or (type(value) is tuple and all(map(_is_number, value))):
        return f"{name} = {value!r}"
    attribute = exported.get(id(value))
    if attribute is not None:
        return (f"from ptxpy import {attribute}" if name == attribute
                else f"from ptxpy import {attribute} as {name}")
    return None


def _is_number(value) -> bool:
    return isinstance(value, bool) or (isinstance(value, int) and -2**63 <= value < 2**64) or (
        isinstance(value, float) and math.isfinite(value))


def _ptxpy_exports() -> dict:
    """{id(object): name} for what `from ptxpy import NAME` gives, numbers left out (a
    constant equal to WARP_SIZE is not WARP_SIZE)."""
    import ptxpy

    return {id(getattr(ptxpy, name)): name for name in ptxpy.__all__
            if hasattr(ptxpy, name) and not isinstance(getattr(ptxpy, name), (int, float))}


def _top_level_names(module: ast.Module) -> set:
    names = set()
    for statement in module.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(statement.name)
        elif isinstance(statement, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in statement.names)
        elif isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            for target in targets:
                names.update(node.id for node in ast.walk(target) if isinstance(node, ast.Name))
    return names
