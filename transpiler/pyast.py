"""Python's own parser (`ast.parse`), as the compiler calls it from any thread.

CPython 3.11.0-3.11.7 and 3.12.0-3.12.1 count the depth of the conversion of a parse into
`ast` objects in state shared by the whole interpreter (CPython issue gh-106905, fixed in 3.11.8
and 3.12.2). A parse on one thread that lets another thread run (a garbage collection inside it
can) and a parse on that other thread then fail with "SystemError: AST constructor recursion
depth mismatch". On those versions the compiler's own parses take a lock, and the compiler's
background preload (ptxpy/api.py) parses nothing: it cannot lock out a parse of the user's
program, such as pytest's rewriting of test files while the tests are collected.
"""
from __future__ import annotations

import ast
import sys
import threading


def thread_safe(version: tuple) -> bool:
    """Whether Python `version` (as `sys.version_info`) can parse on two threads at once."""
    release = tuple(version[:3])
    return not ((3, 11) <= release < (3, 11, 8) or (3, 12) <= release < (3, 12, 2))


THREAD_SAFE = thread_safe(sys.version_info)
_lock = threading.Lock()


def parse(source: str) -> ast.Module:
    """`ast.parse(source)`, one at a time where Python needs it (`THREAD_SAFE`)."""
    if THREAD_SAFE:
        return ast.parse(source)
    with _lock:
        return ast.parse(source)
