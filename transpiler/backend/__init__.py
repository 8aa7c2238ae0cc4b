"""The backend: optimised SSA (`ir.Function`) -> PTX module text.

isel (IR -> machine instructions on virtual registers) -> outssa (phis -> copies) ->
regalloc (liveness, coalescing, colouring) -> emit (layout, branches, text).
"""
from __future__ import annotations

from .errors import BackendError


def emit_ptx(func) -> str:
    """The complete PTX module (one `.entry`) for the kernel `func`."""
    from .emit import emit_module
    from .isel import select_instructions
    from .outssa import destruct_ssa
    from .regalloc import allocate_registers
    from .target import Target

    target = Target(func.arch)
    mfunc = select_instructions(func, target)
    destruct_ssa(mfunc)
    allocate_registers(mfunc)
    return emit_module(func, mfunc, target)


__all__ = ["BackendError", "emit_ptx"]
