"""Errors in the user's kernel: `file.py:LINE:COL: error: message`, the line, and a caret."""
from __future__ import annotations


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
