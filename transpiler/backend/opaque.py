"""Which values ptxas cannot know while compiling a kernel.

ptxas folds arithmetic on values it can compute itself, unrolling loops to find them, and its
folding of an f32 subtraction (or the addition of values of opposite sign) rounds some ties
the wrong way (docs/ptx-dialect.md). A value is opaque to it when it depends on something read
at run time: a parameter, memory, a special register, an atomic, a shuffle or a vote. The
rest (constants, and what is computed from constants only, through any loops) it may know.
"""
from __future__ import annotations

OPAQUE_OPS = frozenset({"param", "sreg", "load", "vload", "extract", "atom", "shfl", "vote"})


def opaque_values(instrs: list, users: dict) -> set:
    """Those of `instrs` (a function's) whose value depends on a run-time input (`users`:
    `ir.users` of the function)."""
    opaque: set = set()
    work = [instr for instr in instrs if instr.op in OPAQUE_OPS]
    while work:
        instr = work.pop()
        if instr not in opaque:
            opaque.add(instr)
            work.extend(users.get(instr, ()))
    return opaque
