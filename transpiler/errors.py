"""Errors in the user's kernel: `file.py:LINE:COL: error: message`, the line, and a caret."""
from __future__ import annotations

import re
import sys
import threading
import unicodedata

# str.splitlines also breaks at these, which Python's tokenizer keeps inside a line
_NOT_PYTHON_BREAKS = re.compile("[\v\f\x1c\x1d\x1e\x85\u2028\u2029]")
_PYTHON_BREAK = re.compile(r"\r\n|\r|\n")


def source_lines(text: str) -> list[str]:
    """`text`'s lines as Python numbers them: broken at \\n, \\r\\n and \\r only."""
    if _NOT_PYTHON_BREAKS.search(text) is None:
        return text.splitlines()
    lines = _PYTHON_BREAK.split(text)
    return lines[:-1] if lines[-1] == "" else lines


#: the recursion limit while compiling: the compiler recurses once or a few times per level of
#: an expression's nesting, and Python's default (1000) stops at a few hundred levels
COMPILE_RECURSION_LIMIT = 20000


class DeepRecursion:
    """`with DeepRecursion():` runs its block under a recursion limit of at least
    COMPILE_RECURSION_LIMIT. The limit is the interpreter's, so the blocks of all threads are
    counted: the old limit is back when the last one leaves."""

    _lock = threading.Lock()
    _inside = 0
    _old_limit = 0

    def __enter__(self) -> None:
        with self._lock:
            if not DeepRecursion._inside:
                DeepRecursion._old_limit = sys.getrecursionlimit()
                sys.setrecursionlimit(max(DeepRecursion._old_limit, COMPILE_RECURSION_LIMIT))
            DeepRecursion._inside += 1

    def __exit__(self, *exc) -> bool:
        with self._lock:
            DeepRecursion._inside -= 1
            if not DeepRecursion._inside:
                sys.setrecursionlimit(DeepRecursion._old_limit)
        return False


def display_width(text: str) -> int:
    """The columns `text` takes in a terminal: two for a wide (East Asian) character, none for
    a combining one."""
    if text.isascii():
        return len(text)
    return sum(_char_width(c) for c in text)


def _char_width(c: str) -> int:
    if unicodedata.combining(c):
        return 0
    return 2 if unicodedata.east_asian_width(c) in "WF" else 1


def _shown(text: str) -> str:
    """A source line as printed under a message: tabs expanded, a NUL written as \\0."""
    return text.replace("\0", "\\0").expandtabs(8)


class CompileError(Exception):
    """An error in user code. `loc` is (line, col) with a 1-based line and 0-based col;
    `filename` is None until the error is located in a file (`located`)."""
    kind = "error"

    def __init__(self, message: str, loc=None, filename: str | None = None, source_line: str | None = None):
        super().__init__(message)
        self.message = message
        self.loc = loc
        self.filename = filename
        self.source_line = source_line
        self.notes: list = []    # CompileNotes, printed after the error

    def noted(self, message: str, loc=None) -> "CompileError":
        """This error, with a note at `loc` (line, col) of the same file: `file:LINE:COL: note:
        message`, on a line of its own after the error's caret."""
        self.notes.append(CompileNote(message, loc, self.filename))
        return self

    def located(self, filename: str, source_lines: list[str]) -> "CompileError":
        """Fill in the file and source line (for errors raised deep inside a stage)."""
        self.filename = filename
        if self.loc and 0 < self.loc[0] <= len(source_lines):
            self.source_line = source_lines[self.loc[0] - 1]
        for note in self.notes:
            note.filename = filename
        return self

    def __str__(self) -> str:
        return "\n".join([self._text(), *(str(note) for note in self.notes)])

    def _text(self) -> str:
        where = self.filename or "ptxpy"     # about no file in particular: as usage errors print
        if not self.loc:
            return f"{where}: {self.kind}: {self.message}"
        line, col = self.loc[0], self.loc[1]   # an instruction's loc may also name its statement
        text = f"{where}:{line}:{col + 1}: {self.kind}: {self.message}"
        if self.source_line is not None and self.kind != "note":
            raw = self.source_line.rstrip("\n")
            caret_col = display_width(_shown(raw[:col]))
            text += f"\n{_shown(raw)}\n{' ' * caret_col}^"
        return text


class CompileWarning(CompileError):
    """What the user's code does that is legal but likely a mistake: printed by the CLI as
    `file.py:LINE:COL: warning: message` with the line and a caret, issued from Python as a
    `SourceWarning` at the file and line; never raised by the compiler."""
    kind = "warning"


class CompileNote(CompileError):
    """More about an error, where it is: `file.py:LINE:COL: note: message` (no source line)."""
    kind = "note"


class SourceWarning(UserWarning):
    """The category of the Python warnings a compile issues for its CompileWarnings."""

