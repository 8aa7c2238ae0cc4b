"""Errors in the user's kernel: `file.py:LINE:COL: error: message`, the line, and a caret."""
from __future__ import annotations

import re

# str.splitlines also breaks at these, which Python's tokenizer keeps inside a line
_NOT_PYTHON_BREAKS = re.compile("[\v\f\x1c\x1d\x1e\x85\u2028\u2029]")
_PYTHON_BREAK = re.compile(r"\r\n|\r|\n")


def source_lines(text: str) -> list[str]:
    """`text`'s lines as Python numbers them: broken at \\n, \\r\\n and \\r only."""
    if _NOT_PYTHON_BREAKS.search(text) is None:
        return text.splitlines()
    lines = _PYTHON_BREAK.split(text)
    return lines[:-1] if lines[-1] == "" else lines


class CompileError(Exception):
    """An error in user code. `loc` is (line, col) with a 1-based line and 0-based col;
    `filename` is None until the error is located in a file (`located`)."""

    def __init__(self, message: str, loc=None, filename: str | None = None, source_line: str | None = None):
        super().__init__(message)
        self.message = message
        self.loc = loc
        self.filename = filename
        self.source_line = source_line

    def located(self, filename: str, source_lines: list[str]) -> "CompileError":
        """Fill in the file and source line (for errors raised deep inside a stage)."""
        self.filename = filename
        if self.loc and 0 < self.loc[0] <= len(source_lines):
            self.source_line = source_lines[self.loc[0] - 1]
        return self

    def __str__(self) -> str:
        where = self.filename or "ptxpy"     # about no file in particular: as usage errors print
        if not self.loc:
            return f"{where}: error: {self.message}"
        line, col = self.loc
        text = f"{where}:{line}:{col + 1}: error: {self.message}"
        if self.source_line is not None:
            raw = self.source_line.rstrip("\n")
            caret_col = len(raw[:col].expandtabs(8))
            text += f"\n{raw.expandtabs(8)}\n{' ' * caret_col}^"
        return text
