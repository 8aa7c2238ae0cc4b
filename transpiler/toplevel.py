"""What libcst parses of a file: a skeleton of its top level, function bodies when needed.

libcst is the frontend's slowest part, so it reads as little as it can. Python's own parser
(fast, and run first anyway to check the syntax) lists the top-level statements; from them the
*skeleton* is built: the source with the simple statements (imports, module constants), the
decorated functions (kernels and device functions are decorated) and the headers of the other
functions and classes kept where they are, and everything else blanked out: other bodies become
`pass`, compound statements such as `if __name__ == "__main__":` empty lines. libcst parses the
skeleton once; as every kept character stays at its line and column, the node positions are
those of the whole file. In a long file (a library such as ptxpy/libm.py, a script with much
host code: `BODIES_ON_DEMAND_ABOVE`) decorated functions keep only their headers too, and a
function's full definition is parsed on its own when a kernel specialisation first needs it
(`Definition.node`). Host code is never parsed by libcst. Where the skeleton or a definition
does not parse on its own, libcst parses the whole file instead, as it did before any of this.

    top = parse_top_level(source, ast.parse(source))
    top.statements, top.positions, top.definitions[header].node()
"""
from __future__ import annotations

import ast
import itertools
import re
import threading
from dataclasses import dataclass, field

import libcst as cst
from libcst._nodes.base import CSTNode

from .errors import CompileError
from .positions import module_starts

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")   # Python's line breaks: \r\n, \r, \n
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_COMPOUND = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try,
             *(getattr(ast, name) for name in ("Match", "TryStar") if hasattr(ast, name)))
#: files longer than this (lines) have the bodies of their decorated functions parsed on demand:
#: a library or a script with much host code, where most are not needed by one kernel. Below,
#: parsing them with the rest in one go costs less than parsing each header twice.
BODIES_ON_DEMAND_ABOVE = 300


@dataclass
class TopLevel:
    statements: list        # libcst top-level statements in order (functions and classes: headers)
    positions: dict         # node -> (line, col), shared with every Definition
    definitions: dict = field(default_factory=dict)   # function header -> Definition


class Definition:
    """A top-level function's full libcst node, parsed the first time it is asked for."""

    def __init__(self, top: TopLevel, source: str, text: str, first_line: int,
                 node: cst.FunctionDef | None = None):
        self.top, self.source, self.text, self.first_line = top, source, text, first_line
        self._node = node

    def node(self) -> cst.FunctionDef:
        if self._node is None:
            self._node = self._parse()
        return self._node

    def _parse(self) -> cst.FunctionDef:
        try:
            module = libcst_parse(self.text)
        except Exception:
            module = None
        if module is None or len(module.body) != 1 or not isinstance(module.body[0], cst.FunctionDef):
            return self._from_whole_file()
        self.top.positions.update(module_starts(module, first_line=self.first_line))
        return module.body[0]

    def _from_whole_file(self) -> cst.FunctionDef:
        module = parse_with_libcst(self.source)
        starts = module_starts(module)
        for stmt in module.body:
            if isinstance(stmt, cst.FunctionDef) and _header_line(stmt, starts) == self.first_line:
                self.top.positions.update(starts)
                return stmt
        raise CompileError("cannot parse this file: a function was not found again")


class _NodesUnchecked:
    """While inside, libcst's node constructors skip their `_validate` (a sixth of its parse
    time): the tree its own parser builds from text Python has already parsed is valid, and the
    check is for trees built by hand (libcst's source notes it could be moved out of the
    constructor for this reason). The switch is process-wide, so it is counted: validation is
    back as soon as no thread is parsing. `CSTNode.__post_init__` is replaced once, when this
    module is imported, by one that reads the count: assigning it at every parse would empty
    Python's method caches of all of libcst's node classes each time (about 0.05 ms a parse)."""

    _lock = threading.Lock()

    def __enter__(self) -> None:
        global _parsing
        with self._lock:
            _parsing += 1

    def __exit__(self, *exc) -> bool:
        global _parsing
        with self._lock:
            _parsing -= 1
        return False


_parsing = 0    # parses running (`_NodesUnchecked`), in any thread
_VALIDATING = CSTNode.__dict__.get("__post_init__")   # libcst's own


def _validate_unless_parsing(self) -> None:
    if not _parsing:
        _VALIDATING(self)


if _VALIDATING is not None:    # (a libcst that validates elsewhere is left alone)
    CSTNode.__post_init__ = _validate_unless_parsing


def libcst_parse(text: str) -> cst.Module:
    """`cst.parse_module(text)` without libcst's per-node validation."""
    with _NodesUnchecked():
        return cst.parse_module(text)


def parse_with_libcst(source: str) -> cst.Module:
    """libcst's parse of `source`; its errors as CompileErrors."""
    try:
        return libcst_parse(source)
    except cst.ParserSyntaxError as err:
        raise CompileError(f"invalid syntax: {err.message}", (err.raw_line, err.raw_column)) from None
    except Exception as err:  # libcst rejects a few inputs that Python accepts
        raise CompileError(f"cannot parse this file: {err}") from None


def parse_top_level(source: str, tree: ast.Module, keep: set | None = None) -> TopLevel:
    """The file's top level as libcst statements, from its skeleton where that parses. With
    `keep` (top-level names), only the imports and the functions, classes and assignments of
    those names are read, the functions whole (the math library: what one function needs)."""
    lines = _LINE.findall(source)
    body = tree.body if keep is None else [stmt for stmt in tree.body if _is_kept(stmt, keep)]
    bodies_on_demand = keep is None and len(lines) > BODIES_ON_DEMAND_ABOVE
    try:
        module = libcst_parse(_skeleton(body, lines, bodies_on_demand))
    except Exception:
        module = None
    if module is None or not _same_statements(module.body, body):
        return _whole_file(source)
    top = TopLevel(list(module.body), module_starts(module))
    defs = [stmt for stmt in body if isinstance(stmt, _DEFS)]
    parsed = [stmt for stmt in module.body if isinstance(stmt, (cst.FunctionDef, cst.ClassDef))]
    for stmt, node in zip(defs, parsed):
        if isinstance(node, cst.FunctionDef):
            top.definitions[node] = _definition(top, source, lines, stmt, node, bodies_on_demand)
    return top


def _is_kept(stmt: ast.stmt, keep: set) -> bool:
    return isinstance(stmt, (ast.Import, ast.ImportFrom)) or not keep.isdisjoint(defined_names(stmt))


def defined_names(stmt: ast.stmt) -> list:
    """The names a top-level function, class or plain assignment defines (others: none)."""
    if isinstance(stmt, _DEFS):
        return [stmt.name]
    if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        return [t.id for t in targets if isinstance(t, ast.Name)]
    return []


def _definition(top: TopLevel, source: str, lines: list, stmt: ast.stmt, node: cst.FunctionDef,
                bodies_on_demand: bool) -> Definition:
    if _body_kept(stmt, bodies_on_demand):
        return Definition(top, source, "", 0, node=node)   # the skeleton has it whole
    first = _first_line(stmt, lines)
    return Definition(top, source, "".join(lines[first - 1:stmt.end_lineno]), first)


def _whole_file(source: str) -> TopLevel:
    module = parse_with_libcst(source)
    top = TopLevel(list(module.body), module_starts(module))
    for stmt in module.body:
        if isinstance(stmt, cst.FunctionDef):
            top.definitions[stmt] = Definition(top, source, "", 0, node=stmt)
    return top


def _skeleton(body: list, lines: list, bodies_on_demand: bool) -> str:
    """The source with only simple statements, decorated functions (only their headers, bodies
    `pass`, with `bodies_on_demand`) and the headers of other functions and classes."""
    out = [_line_break(line) for line in lines]
    for stmt in body:
        if isinstance(stmt, _COMPOUND):
            continue
        if not isinstance(stmt, _DEFS) or _body_kept(stmt, bodies_on_demand):
            first = _first_line(stmt, lines)
            out[first - 1:stmt.end_lineno] = lines[first - 1:stmt.end_lineno]
            continue
        first, inner = _first_line(stmt, lines), stmt.body[0]
        body_line = _first_line(inner, lines)
        out[first - 1:body_line - 1] = lines[first - 1:body_line - 1]
        line = lines[body_line - 1]
        column = (len(line) - len(line.lstrip()) if body_line < inner.lineno    # a decorated method
                  else _char_column(line, inner.col_offset))
        out[body_line - 1] = line[:column] + "pass" + _line_break(line)
    return "".join(out)


def _body_kept(stmt: ast.stmt, bodies_on_demand: bool) -> bool:
    """Whether the skeleton keeps a top-level statement's body: that of a decorated function
    (kernels and device functions are decorated) unless bodies are parsed on demand."""
    return (isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and bool(stmt.decorator_list)
            and not bodies_on_demand)


def _line_break(line: str) -> str:
    return line[len(line.rstrip("\r\n")):]


def _char_column(line: str, byte_offset: int) -> int:
    """ast's columns count UTF-8 bytes; libcst's and Python strings' count characters."""
    return len(line.encode("utf-8")[:byte_offset].decode("utf-8", errors="ignore"))


def _first_line(stmt: ast.stmt, lines: list) -> int:
    """The line a statement starts on: for a decorated one, the line of its first `@`."""
    if not isinstance(stmt, _DEFS) or not stmt.decorator_list:
        return stmt.lineno
    line = stmt.decorator_list[0].lineno
    while line > 1 and not lines[line - 1].lstrip().startswith("@"):
        line -= 1   # `@(` or `@ \` with the decorator's expression on a later line
    return line


def _header_line(node: cst.FunctionDef, starts: dict) -> int:
    """The first line of a function's text: its first decorator's, else its `def`'s."""
    return starts[node.decorators[0]][0] if node.decorators else starts[node][0]


def _same_statements(parsed: list, body: list) -> bool:
    """Whether libcst found in the skeleton the statements Python did (simple ones by line)."""
    expected, last_line = [], 0
    for stmt in body:
        if isinstance(stmt, _DEFS):
            expected.append((type(stmt) is ast.ClassDef, stmt.name))
        elif not isinstance(stmt, _COMPOUND) and stmt.lineno > last_line:
            expected.append(None)   # a new line of simple statements
        last_line = stmt.end_lineno
    found = []
    for stmt in parsed:
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            found.append((isinstance(stmt, cst.ClassDef), stmt.name.value))
        elif isinstance(stmt, cst.SimpleStatementLine):
            found.append(None)
        else:
            return False
    return found == expected


# --- what libcst must not be given --------------------------------------------------------------
#: expressions nested deeper than this (levels of operators, attributes, calls, subscripts) are
#: an error: libcst's parser, native code, overflows the C stack at about 6000 levels
MAX_NESTING = 4000


def too_deeply_nested(tree: ast.Module, lines: list) -> ast.AST | None:
    """The first statement that libcst would parse whose expressions nest more than MAX_NESTING
    levels deep, or None (`lines`: the source's, without their line breaks). An expression
    that deep takes more characters than that, so only long statements are looked into."""
    line_ends = list(itertools.accumulate(len(line) + 2 for line in lines))   # (+ a break)
    if not line_ends or line_ends[-1] <= MAX_NESTING:
        return None
    pending = [(stmt, _parsed_whole(stmt)) for stmt in reversed(tree.body)
               if not isinstance(stmt, _COMPOUND)]     # compound ones are blanked in the skeleton
    while pending:
        stmt, whole = pending.pop()
        if _length(stmt, line_ends) <= MAX_NESTING:
            continue
        inner = []
        if _nesting(stmt, inner) > MAX_NESTING:
            return stmt
        if whole:
            pending += [(s, True) for s in sorted(inner, key=_start_line, reverse=True)]
    return None


def _parsed_whole(stmt: ast.stmt) -> bool:
    """Whether the skeleton keeps a top-level statement's inner statements (decorated functions)."""
    return not isinstance(stmt, _DEFS) or _body_kept(stmt, False)


def _start_line(stmt: ast.AST) -> int:
    return min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", ())])


def _length(stmt: ast.AST, line_ends: list) -> int:
    """At least the number of characters of `stmt` (those of its whole lines, and more)."""
    start = _start_line(stmt)
    return line_ends[stmt.end_lineno - 1] - (line_ends[start - 2] if start > 1 else 0)


def _nesting(stmt: ast.AST, inner: list) -> int:
    """How many levels libcst nests the expressions of `stmt` (its own, not those of the
    statements in its body: these are added to `inner`). `a and b and c` is one level in
    Python's tree, two in libcst's."""
    deepest, stack = 0, [(child, 1) for child in ast.iter_child_nodes(stmt)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, ast.stmt):
            inner.append(node)
            continue
        deepest = max(deepest, depth)
        step = len(node.values) - 1 if isinstance(node, ast.BoolOp) else 1
        stack += [(child, depth + step) for child in ast.iter_child_nodes(node)]
    return deepest


# --- decorated functions below the top level ----------------------------------------------------
_BLOCK_NAMES = {ast.If: "if", ast.For: "for", ast.AsyncFor: "async for", ast.While: "while",
                ast.With: "with", ast.AsyncWith: "async with", ast.Try: "try",
                **{getattr(ast, kind): keyword for kind, keyword in
                   (("Match", "match"), ("TryStar", "try")) if hasattr(ast, kind)}}
#: a decorator line that is indented: only then can a decorated function be below the top level
_INDENTED_DECORATOR = re.compile(r"^[ \t\f]+@", re.MULTILINE)


@dataclass
class NestedFunction:
    """A decorated function that is not at the top level of its module."""
    node: ast.FunctionDef | ast.AsyncFunctionDef
    inside: str         # what holds it: "class 'A'", "function 'f'", "an 'if' block"
    qualname: str       # Python's name for it: 'A.k', 'f.<locals>.k', 'k' (in a block)


def nested_functions(tree: ast.Module, source: str) -> list:
    """The decorated functions of the module that are not at its top level, in source order."""
    if _INDENTED_DECORATOR.search(source) is None:
        return []
    found, pending = [], [(stmt, None, "") for stmt in reversed(tree.body)]
    while pending:
        stmt, inside, prefix = pending.pop()
        if inside is not None and isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                and stmt.decorator_list:
            found.append(NestedFunction(stmt, inside, prefix + stmt.name))
        inside, prefix = _holder(stmt, inside, prefix)
        pending += [(s, inside, prefix) for s in reversed(list(_inner_statements(stmt)))]
    return found


def _holder(stmt: ast.stmt, inside: str | None, prefix: str) -> tuple:
    """(what, qualname prefix) for the statements in the body of `stmt`."""
    if isinstance(stmt, ast.ClassDef):
        return f"class '{stmt.name}'", f"{prefix}{stmt.name}."
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return f"function '{stmt.name}'", f"{prefix}{stmt.name}.<locals>."
    keyword = _BLOCK_NAMES.get(type(stmt))
    if keyword is None:
        return inside, prefix
    return f"{'an' if keyword[0] in 'aeiou' else 'a'} '{keyword}' block", prefix


def _inner_statements(stmt: ast.stmt):
    for name in ("body", "orelse", "finalbody"):
        yield from getattr(stmt, name, ())
    for part in (*getattr(stmt, "handlers", ()), *getattr(stmt, "cases", ())):
        yield from part.body


def decorator_at(node: ast.expr, lines: list) -> tuple:
    """(line, column) of the `@` of a decorator (its expression's start if not on that line)."""
    text = lines[node.lineno - 1] if node.lineno <= len(lines) else ""
    column = _char_column(text, node.col_offset)
    at = text.rfind("@", 0, column)
    return node.lineno, at if at >= 0 else column
