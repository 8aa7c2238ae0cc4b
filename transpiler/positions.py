"""Source positions of libcst nodes, computed by one light code-generation pass.

libcst's `PositionProvider` (through a `MetadataWrapper`) walks the tree twice and keeps every
token; this does what its code-generation state does, but only counts lines and columns and
keeps start positions. The result is the same start `(line, col)` for every node: a node's
syntactic start where libcst records one (expressions exclude their parentheses), else the start
of everything it prints. `tests/test_frontend.py` checks the two agree node for node.

    starts = module_starts(cst.parse_module(source))
"""
from __future__ import annotations

import re
from contextlib import nullcontext

from libcst._nodes.internal import CodegenState

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
        part._codegen(recorder)
    return recorder.starts
