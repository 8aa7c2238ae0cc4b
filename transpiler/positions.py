"""Source positions of libcst nodes, computed by one light code-generation pass.

libcst's `PositionProvider` (through a `MetadataWrapper`) walks the tree twice and keeps every
token; this does what its code-generation state does, but only counts lines and columns and
keeps start positions. The result is the same start `(line, col)` for every node but a
`SimpleWhitespace` (nothing points at one; the most common node is not recorded): a node's
syntactic start where libcst records one (expressions exclude their parentheses), else the start
of everything it prints. `tests/test_frontend.py` checks the two agree node for node.

The node types kernels are made of are walked by the handlers below, each the same steps as the
node's `_codegen_impl` in libcst (tokens counted, children walked, syntactic starts recorded)
without libcst's per-node calls and context managers; any other node (and any unusual form of
a handled one, such as `Parameters` with `*` or `/`) runs libcst's own code generation on the
same state.

    starts = module_starts(cst.parse_module(source))
"""
from __future__ import annotations

import re
from contextlib import nullcontext

import libcst as cst
from libcst import MaybeSentinel
from libcst._nodes.internal import CodegenState
from libcst._nodes.op import BaseUnaryOp, _BaseOneTokenOp

_NEWLINE = re.compile(r"\r\n?|\n")
_NOTHING_TO_DO = nullcontext()


class _StartRecorder(CodegenState):
    """A CodegenState that records where nodes start instead of collecting tokens."""

    __slots__ = ("line", "column", "indent_width", "starts")

    def __init__(self, first_line: int, default_indent: str, default_newline: str):
        self.default_indent = default_indent
        self.default_newline = default_newline
        self.provider = None
        self.indent_tokens = []
        self.tokens = []
        self.line, self.column, self.indent_width = first_line, 0, 0
        self.starts: dict = {}

    # --- libcst's CodegenState interface (for the nodes libcst generates itself) ---
    def increase_indent(self, value: str) -> None:
        self.indent_tokens.append(value)
        self.indent_width += len(value)

    def decrease_indent(self) -> None:
        self.indent_width -= len(self.indent_tokens.pop())

    def add_indent_tokens(self) -> None:
        self.column += self.indent_width

    def add_token(self, value: str) -> None:
        if "\n" in value or "\r" in value:
            pieces = _NEWLINE.split(value)
            self.line += len(pieces) - 1
            self.column = len(pieces[-1])
        else:
            self.column += len(value)

    def before_codegen(self, node) -> None:
        # everything the node prints starts here; a syntactic start recorded later wins
        self.starts[node] = (self.line, self.column)

    def after_codegen(self, node) -> None:
        pass

    def pop_trailing_newline(self) -> None:
        pass

    def record_syntactic_position(self, node, *, start_node=None, end_node=None):
        if start_node is None:
            self.starts[node] = (self.line, self.column)
            return _NOTHING_TO_DO
        return _StartOf(self, node, start_node)

    # --- the fast walk ---
    def walk(self, node) -> None:
        """`node._codegen(self)`, by a handler below where there is one."""
        cls = node.__class__
        if cls is _SIMPLE:   # cst.SimpleWhitespace, the most common node (never located): inline
            value = node.value
            if "\n" in value or "\r" in value:
                self.add_token(value)
            else:
                self.column += len(value)
            return
        self.starts[node] = (self.line, self.column)
        handler = _HANDLERS.get(cls)
        if handler is None:
            node._codegen_impl(self)
            return
        handler(self, node)

    def walk_with(self, node, **kwargs) -> None:
        """`node._codegen(self, **kwargs)`: the same with the arguments its parent passes."""
        self.starts[node] = (self.line, self.column)
        handler = _HANDLERS.get(node.__class__)
        if handler is None:
            node._codegen_impl(self, **kwargs)
        else:
            handler(self, node, **kwargs)


_SIMPLE = cst.SimpleWhitespace
_ONE_LINE_GAPS = frozenset({"", " "})   # the usual SimpleWhitespace values


class _StartOf:
    """Context manager: `node` starts where `start_node` (printed inside it) starts."""

    __slots__ = ("recorder", "node", "start_node")

    def __init__(self, recorder: _StartRecorder, node, start_node):
        self.recorder, self.node, self.start_node = recorder, node, start_node

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc) -> bool:
        starts = self.recorder.starts
        starts[self.node] = starts[self.start_node]
        return False


def module_starts(module, first_line: int = 1) -> dict:
    """{node: (line, col)} for every node of a parsed libcst Module (its text starting a line
    of a file: at `first_line`)."""
    recorder = _StartRecorder(first_line, module.default_indent, module.default_newline)
    for part in (*module.header, *module.body, *module.footer):
        recorder.walk(part)
    return recorder.starts


# --- handlers: each mirrors libcst's `_codegen_impl` of its node type ---------------------------
# `walk` records where a node's printing starts; `r.starts[node] = (r.line, r.column)` in a
# handler is libcst's `record_syntactic_position(node)` (its syntactic start), left out where
# nothing is printed before it; `r.column += n` is a token of n characters on one line.
_HANDLERS: dict = {}


def _handles(*classes):
    def register(handler):
        for cls in classes:
            _HANDLERS[cls] = handler
        return handler
    return register


@_handles(cst.SimpleWhitespace, cst.Comment)
def _value_token(r: _StartRecorder, node) -> None:
    r.add_token(node.value)


@_handles(cst.Newline)
def _newline(r: _StartRecorder, node) -> None:
    r.add_token(r.default_newline if node.value is None else node.value)


@_handles(cst.TrailingWhitespace)
def _trailing_whitespace(r: _StartRecorder, node) -> None:
    gap = node.whitespace
    if gap.__class__ is _SIMPLE and gap.value in _ONE_LINE_GAPS:
        r.column += len(gap.value)
    else:
        r.walk(gap)
    if node.comment is not None:
        r.walk(node.comment)
    r.walk(node.newline)


@_handles(cst.EmptyLine)
def _empty_line(r: _StartRecorder, node) -> None:
    if node.indent:
        r.column += r.indent_width
    _trailing_whitespace(r, node)


@_handles(cst.LeftParen, cst.LeftSquareBracket)
def _opening_bracket(r: _StartRecorder, node) -> None:
    r.column += 1   # ( or [
    gap = node.whitespace_after
    if gap.__class__ is _SIMPLE and gap.value in _ONE_LINE_GAPS:
        r.column += len(gap.value)
    else:
        r.walk(gap)


@_handles(cst.RightParen, cst.RightSquareBracket)
def _closing_bracket(r: _StartRecorder, node) -> None:
    gap = node.whitespace_before
    if gap.__class__ is _SIMPLE and gap.value in _ONE_LINE_GAPS:
        r.column += len(gap.value)
    else:
        r.walk(gap)
    r.column += 1


def _one_token_op(r: _StartRecorder, node) -> None:
    # (`r.walk` of the usual whitespace inline: `r.column += len(gap.value)`)
    gap = node.whitespace_before
    if gap.__class__ is _SIMPLE and gap.value in _ONE_LINE_GAPS:
        r.column += len(gap.value)
    else:
        r.walk(gap)
    r.starts[node] = (r.line, r.column)
    r.add_token(node._get_token())
    gap = node.whitespace_after
    if gap.__class__ is _SIMPLE and gap.value in _ONE_LINE_GAPS:
        r.column += len(gap.value)
    else:
        r.walk(gap)


def _unary_op(r: _StartRecorder, node) -> None:
    r.add_token(node._get_token())
    r.walk(node.whitespace_after)


for _cls in vars(cst).values():   # (`__mro__`, not issubclass: ABCs cache every such check)
    if isinstance(_cls, type) and _BaseOneTokenOp in _cls.__mro__ \
            and _cls._codegen_impl is _BaseOneTokenOp._codegen_impl:
        _HANDLERS[_cls] = _one_token_op
    elif isinstance(_cls, type) and BaseUnaryOp in _cls.__mro__ \
            and _cls._codegen_impl is BaseUnaryOp._codegen_impl:
        _HANDLERS[_cls] = _unary_op


# expressions: `_parenthesize` is their lpar, their syntactic start, the body, their rpar
@_handles(cst.Name, cst.Integer, cst.Float, cst.Imaginary)
def _atom(r: _StartRecorder, node) -> None:
    if node.lpar:
        for lpar in node.lpar:
            r.walk(lpar)
        r.starts[node] = (r.line, r.column)
    r.column += len(node.value)   # one line
    for rpar in node.rpar:
        r.walk(rpar)


@_handles(cst.SimpleString)
def _string(r: _StartRecorder, node) -> None:
    if node.lpar:
        for lpar in node.lpar:
            r.walk(lpar)
        r.starts[node] = (r.line, r.column)
    r.add_token(node.value)
    for rpar in node.rpar:
        r.walk(rpar)


def _expression(body):
    """A handler for a parenthesizable expression whose inside `body` walks."""
    def handler(r: _StartRecorder, node) -> None:
        if node.lpar:
            for lpar in node.lpar:
                r.walk(lpar)
            r.starts[node] = (r.line, r.column)
        body(r, node)
        for rpar in node.rpar:
            r.walk(rpar)
    return handler


def _binary(r: _StartRecorder, node) -> None:
    r.walk(node.left)
    r.walk(node.operator)
    r.walk(node.right)


_HANDLERS[cst.BinaryOperation] = _HANDLERS[cst.BooleanOperation] = _expression(_binary)


def _unary(r: _StartRecorder, node) -> None:
    r.walk(node.operator)
    r.walk(node.expression)


def _comparison(r: _StartRecorder, node) -> None:
    r.walk(node.left)
    for comparison in node.comparisons:
        r.walk(comparison)


def _attribute(r: _StartRecorder, node) -> None:
    r.walk(node.value)
    r.walk(node.dot)
    r.walk(node.attr)


def _call(r: _StartRecorder, node) -> None:
    r.walk(node.func)
    r.walk(node.whitespace_after_func)
    r.column += 1   # (
    r.walk(node.whitespace_before_args)
    last = len(node.args) - 1
    for k, arg in enumerate(node.args):
        r.walk_with(arg, default_comma=k != last)
    r.column += 1   # )


def _subscript(r: _StartRecorder, node) -> None:
    r.walk(node.value)
    r.walk(node.whitespace_after_value)
    r.walk(node.lbracket)
    last = len(node.slice) - 1
    for k, element in enumerate(node.slice):
        r.walk_with(element, default_comma=k != last)
    r.walk(node.rbracket)


def _if_exp(r: _StartRecorder, node) -> None:
    r.walk(node.body)
    r.walk(node.whitespace_before_if)
    r.column += 2   # if
    r.walk(node.whitespace_after_if)
    r.walk(node.test)
    r.walk(node.whitespace_before_else)
    r.column += 4   # else
    r.walk(node.whitespace_after_else)
    r.walk(node.orelse)


def _tuple(r: _StartRecorder, node) -> None:
    elements = node.elements
    if len(elements) == 1:
        r.walk_with(elements[0], default_comma=True, default_comma_whitespace=False)
    else:
        for k, element in enumerate(elements):
            r.walk_with(element, default_comma=k < len(elements) - 1,
                   default_comma_whitespace=True)


for _cls, _body in ((cst.UnaryOperation, _unary), (cst.Comparison, _comparison),
                    (cst.Attribute, _attribute), (cst.Call, _call), (cst.Subscript, _subscript),
                    (cst.IfExp, _if_exp), (cst.Tuple, _tuple)):
    _HANDLERS[_cls] = _expression(_body)


@_handles(cst.ComparisonTarget)
def _comparison_target(r: _StartRecorder, node) -> None:
    r.walk(node.operator)
    r.walk(node.comparator)


def _comma(r: _StartRecorder, node, default_comma: bool, default_text: str = ", ") -> None:
    comma = node.comma
    if comma is MaybeSentinel.DEFAULT and default_comma:
        r.add_token(default_text)
    elif comma.__class__ is cst.Comma:
        r.walk(comma)


@_handles(cst.Arg)
def _arg(r: _StartRecorder, node, default_comma: bool = False) -> None:
    r.add_token(node.star)
    r.walk(node.whitespace_after_star)
    if node.keyword is not None:
        r.walk(node.keyword)
    equal = node.equal
    if equal is MaybeSentinel.DEFAULT and node.keyword is not None:
        r.add_token(" = ")
    elif equal.__class__ is cst.AssignEqual:
        r.walk(equal)
    r.walk(node.value)
    _comma(r, node, default_comma)
    r.walk(node.whitespace_after_arg)


@_handles(cst.SubscriptElement)
def _subscript_element(r: _StartRecorder, node, default_comma: bool = False) -> None:
    r.walk(node.slice)
    _comma(r, node, default_comma)


@_handles(cst.Index)
def _index(r: _StartRecorder, node) -> None:
    if node.star is not None:
        r.add_token(node.star)
    if node.whitespace_after_star is not None:
        r.walk(node.whitespace_after_star)
    r.walk(node.value)


@_handles(cst.Element)
def _element(r: _StartRecorder, node, default_comma: bool = False,
             default_comma_whitespace: bool = False) -> None:
    r.walk(node.value)
    _comma(r, node, default_comma, ", " if default_comma_whitespace else ",")


# statements
def _semicolon(r: _StartRecorder, node, default_semicolon: bool) -> None:
    semicolon = node.semicolon
    if isinstance(semicolon, MaybeSentinel):
        if default_semicolon:
            r.add_token("; ")
    elif isinstance(semicolon, cst.Semicolon):
        r.walk(semicolon)


@_handles(cst.SimpleStatementLine)
def _simple_statement_line(r: _StartRecorder, node) -> None:
    for line in node.leading_lines:
        r.walk(line)
    r.column += r.indent_width
    body = node.body
    r.starts[node] = (r.line, r.column)
    if body:
        last = len(body) - 1
        for k, stmt in enumerate(body):
            r.walk_with(stmt, default_semicolon=k != last)
    else:
        r.column += 4   # pass
    r.walk(node.trailing_whitespace)


@_handles(cst.IndentedBlock)
def _indented_block(r: _StartRecorder, node) -> None:
    r.walk(node.header)
    r.increase_indent(r.default_indent if node.indent is None else node.indent)
    if node.body:
        for stmt in node.body:
            r.walk(stmt)
        r.starts[node] = r.starts[node.body[0]]
    else:
        r.column += r.indent_width
        r.starts[node] = (r.line, r.column)
        r.column += 4   # pass
        r.add_token(r.default_newline)
    for line in node.footer:
        r.walk(line)
    r.decrease_indent()


def _small_statement(body):
    """A handler for a small statement: `body`, then its semicolon."""
    def handler(r: _StartRecorder, node, default_semicolon: bool = False) -> None:
        body(r, node)
        _semicolon(r, node, default_semicolon)
    return handler


def _assign(r: _StartRecorder, node) -> None:
    for target in node.targets:
        r.walk(target)
    r.walk(node.value)


def _aug_assign(r: _StartRecorder, node) -> None:
    r.walk(node.target)
    r.walk(node.operator)
    r.walk(node.value)


def _ann_assign(r: _StartRecorder, node) -> None:
    r.walk(node.target)
    r.walk_with(node.annotation, default_indicator=":")
    equal = node.equal
    if equal is MaybeSentinel.DEFAULT and node.value is not None:
        r.add_token(" = ")
    elif isinstance(equal, cst.AssignEqual):
        r.walk(equal)
    if node.value is not None:
        r.walk(node.value)


def _expr(r: _StartRecorder, node) -> None:
    r.walk(node.value)


def _return(r: _StartRecorder, node) -> None:
    r.column += 6   # return
    value = node.value
    if isinstance(node.whitespace_after_return, MaybeSentinel):
        if value is not None:
            r.column += 1
    else:
        r.walk(node.whitespace_after_return)
    if value is not None:
        r.walk(value)


def _keyword(text: str):
    def body(r: _StartRecorder, node) -> None:
        r.column += len(text)
    return body


def _import(r: _StartRecorder, node) -> None:
    r.column += 6   # import
    r.walk(node.whitespace_after_import)
    last = len(node.names) - 1
    for k, name in enumerate(node.names):
        r.walk_with(name, default_comma=k != last)


for _cls, _body in ((cst.Assign, _assign), (cst.AugAssign, _aug_assign),
                    (cst.AnnAssign, _ann_assign), (cst.Expr, _expr), (cst.Return, _return),
                    (cst.Pass, _keyword("pass")), (cst.Break, _keyword("break")),
                    (cst.Continue, _keyword("continue")), (cst.Import, _import)):
    _HANDLERS[_cls] = _small_statement(_body)


@_handles(cst.AssignTarget)
def _assign_target(r: _StartRecorder, node) -> None:
    r.walk(node.target)
    gap = node.whitespace_before_equal
    if gap.__class__ is _SIMPLE and gap.value in _ONE_LINE_GAPS:
        r.column += len(gap.value)
    else:
        r.walk(gap)
    r.column += 1   # =
    gap = node.whitespace_after_equal
    if gap.__class__ is _SIMPLE and gap.value in _ONE_LINE_GAPS:
        r.column += len(gap.value)
    else:
        r.walk(gap)


@_handles(cst.Annotation)
def _annotation(r: _StartRecorder, node, default_indicator: str) -> None:
    before = node.whitespace_before_indicator
    if isinstance(before, MaybeSentinel):
        if default_indicator == "->":
            r.column += 1
    else:
        r.walk(before)
    r.add_token(default_indicator)
    r.walk(node.whitespace_after_indicator)
    r.starts[node] = (r.line, r.column)
    r.walk(node.annotation)


@_handles(cst.ImportAlias)
def _import_alias(r: _StartRecorder, node, default_comma: bool = False) -> None:
    r.walk(node.name)
    if node.asname is not None:
        r.walk(node.asname)
    _comma(r, node, default_comma)


def _compound_start(r: _StartRecorder, node) -> None:
    """Leading lines and indentation; then the statement's syntactic start."""
    for line in node.leading_lines:
        r.walk(line)
    r.column += r.indent_width
    r.starts[node] = (r.line, r.column)


@_handles(cst.If)
def _if(r: _StartRecorder, node, is_elif: bool = False) -> None:
    _compound_start(r, node)
    r.column += 4 if is_elif else 2
    r.walk(node.whitespace_before_test)
    r.walk(node.test)
    r.walk(node.whitespace_after_test)
    r.column += 1   # :
    r.walk(node.body)
    orelse = node.orelse
    if isinstance(orelse, cst.If):
        r.walk_with(orelse, is_elif=True)
    elif orelse is not None:
        r.walk(orelse)


@_handles(cst.Else)
def _else(r: _StartRecorder, node) -> None:
    _compound_start(r, node)
    r.column += 4   # else
    r.walk(node.whitespace_before_colon)
    r.column += 1   # :
    r.walk(node.body)


@_handles(cst.For)
def _for(r: _StartRecorder, node) -> None:
    if node.asynchronous is not None:
        node._codegen_impl(r)
        return
    _compound_start(r, node)
    r.column += 3   # for
    r.walk(node.whitespace_after_for)
    r.walk(node.target)
    r.walk(node.whitespace_before_in)
    r.column += 2   # in
    r.walk(node.whitespace_after_in)
    r.walk(node.iter)
    r.walk(node.whitespace_before_colon)
    r.column += 1   # :
    r.walk(node.body)
    if node.orelse is not None:
        r.walk(node.orelse)


@_handles(cst.While)
def _while(r: _StartRecorder, node) -> None:
    _compound_start(r, node)
    r.column += 5   # while
    r.walk(node.whitespace_after_while)
    r.walk(node.test)
    r.walk(node.whitespace_before_colon)
    r.column += 1   # :
    r.walk(node.body)
    if node.orelse is not None:
        r.walk(node.orelse)


@_handles(cst.FunctionDef)
def _function_def(r: _StartRecorder, node) -> None:
    if node.asynchronous is not None or node.type_parameters is not None:
        node._codegen_impl(r)
        return
    for line in node.leading_lines:
        r.walk(line)
    for decorator in node.decorators:
        r.walk(decorator)
    for line in node.lines_after_decorators:
        r.walk(line)
    r.column += r.indent_width
    r.starts[node] = (r.line, r.column)
    r.column += 3   # def
    r.walk(node.whitespace_after_def)
    r.walk(node.name)
    r.walk(node.whitespace_after_name)
    r.walk(node.whitespace_after_type_parameters)
    r.column += 1   # (
    r.walk(node.whitespace_before_params)
    r.walk(node.params)
    r.column += 1   # )
    if node.returns is not None:
        r.walk_with(node.returns, default_indicator="->")
    r.walk(node.whitespace_before_colon)
    r.column += 1   # :
    r.walk(node.body)


@_handles(cst.Decorator)
def _decorator(r: _StartRecorder, node) -> None:
    _compound_start(r, node)
    r.column += 1   # @
    r.walk(node.whitespace_after_at)
    r.walk(node.decorator)
    r.walk(node.trailing_whitespace)


@_handles(cst.Parameters)
def _parameters(r: _StartRecorder, node) -> None:
    if (node.posonly_params or node.kwonly_params or node.star_kwarg is not None
            or not isinstance(node.star_arg, MaybeSentinel)
            or not isinstance(node.posonly_ind, MaybeSentinel)):
        node._codegen_impl(r)   # `*`, `/` and `**`: libcst's own
        return
    last = len(node.params) - 1
    for k, param in enumerate(node.params):
        r.walk_with(param, default_star="", default_comma=k < last)


@_handles(cst.Param)
def _param(r: _StartRecorder, node, default_star=None, default_comma: bool = False) -> None:
    star = node.star
    if isinstance(star, MaybeSentinel) and default_star is None:
        node._codegen_impl(r, default_star=default_star, default_comma=default_comma)   # libcst raises its error
        return
    r.add_token(default_star if isinstance(star, MaybeSentinel) else star)
    r.walk(node.whitespace_after_star)
    r.walk(node.name)
    if node.annotation is not None:
        r.walk_with(node.annotation, default_indicator=":")
    equal = node.equal
    if equal is MaybeSentinel.DEFAULT and node.default is not None:
        r.add_token(" = ")
    elif equal.__class__ is cst.AssignEqual:
        r.walk(equal)
    if node.default is not None:
        r.walk(node.default)
    _comma(r, node, default_comma)
    r.walk(node.whitespace_after_param)
