"""Which values ptxas cannot know while compiling a kernel.

ptxas folds arithmetic on values it can compute itself, unrolling loops to find them, and its
folding of an f32 subtraction (or the addition of values of opposite sign) rounds some ties
the wrong way (docs/ptx-dialect.md). A value is opaque to it when it depends on something read
at run time: a parameter, memory, a special register, an atomic, a shuffle or a vote. The
rest (constants, and what is computed from constants only, through any loops) it may know.
"""
from __future__ import annotations

from .. import ir

OPAQUE_OPS = frozenset({"param", "sreg", "load", "vload", "extract", "atom", "shfl", "vote", "redux", "match",
                        "activemask", "mma", "ldmatrix", "wgmma", "ordered_load"})


class Opaque:
    """`opaque(value)`: whether `value` depends on a run-time input. A search back through
    the arguments, which ends at the first opaque instruction it meets (in a kernel on data,
    one or two steps); answers are kept for the next questions."""

    def __init__(self):
        self.known: dict = {}   # instruction -> whether it is opaque, where settled

    def __call__(self, value: ir.Value) -> bool:
        if value.__class__ is not ir.Instr:
            return False
        found = self.known.get(value)
        if found is not None:
            return found
        known = self.known
        seen = [value]     # breadth first: the nearest inputs first
        for instr in seen:
            if instr.op in OPAQUE_OPS or known.get(instr):
                known[value] = True
                return True
            for arg in instr.args:
                if arg.__class__ is ir.Instr and arg not in seen and known.get(arg) is not False:
                    seen.append(arg)
        for instr in seen:      # nothing opaque behind any of them
            known[instr] = False
        return False
