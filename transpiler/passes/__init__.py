"""The optimisation pipeline over the SSA IR (docs/design.md, "The IR").

Every pass is `run(func) -> func`: it may edit `func` in place and keeps `verify.verify` passing.
A pass that changes anything adds one to `func.edits` (once per run is enough); `optimize`
relies on that to skip a pass that would find nothing to do.
"""
from __future__ import annotations

from ..ir import Function, format_function, users
from ..verify import IRError, verify
from . import (contract, copyprop, cse, dce, hoist, licm, lower_floor, memforward, narrow, ranges,
               reassoc, sccp, simplifycfg, speculate, strength, widen)

PIPELINE: list = [
    ("simplifycfg", simplifycfg.run),
    ("sccp", sccp.run),
    ("copyprop", copyprop.run),
    ("cse", cse.run),
    ("narrow", narrow.run),       # i64 arithmetic only ever truncated -> i32
    ("widen", widen.run),         # u64(a) * u64(b) -> mul_wide, its high half -> mul_hi
    ("dce", dce.run),
    ("ranges", ranges.run),       # before lower_floor: what it proves needs no fix-up
    ("lower_floor", lower_floor.run),
    ("sccp", sccp.run),
    ("copyprop", copyprop.run),
    ("reassoc", reassoc.run),     # constant offsets outermost in addresses, then merged by cse
    ("hoist", hoist.run),         # address arithmetic out of guarded arms, so cse can merge it
    ("cse", cse.run),
    ("memforward", memforward.run),   # after cse: one address is one value
    ("speculate", speculate.run), # short safe arms -> selects (shared loads at constant offsets)
    ("licm", licm.run),
    ("strength", strength.run),   # after licm: needs preheaders and hoisted bases
    ("sccp", sccp.run),           # folds the start and step offsets strength left in preheaders
    ("cse", cse.run),
    ("contract", contract.run),   # fast_math only: a*b + c -> fma, after cse counted the uses
    ("dce", dce.run),
    ("simplifycfg", simplifycfg.run),
]


def optimize(func: Function, verify_each: bool = False, pipeline: list | None = None) -> Function:
    """Run `pipeline` (by default `PIPELINE`) over `func`; with `verify_each`, check the IR after
    every pass, and that a pass which reported no change (`Function.edits`) left it as it was.

    A pass is skipped where it changed nothing the last time it ran and no pass has changed the
    function since: on the same IR it would change nothing again."""
    idle_at: dict = {}   # pass name -> `func.edits` when it last ran without changing anything
    func.analyses = {}   # (`cfg.dom_tree`: while only the passes change the function)
    try:
        for name, run in PIPELINE if pipeline is None else pipeline:
            edits = func.edits
            if idle_at.get(name) == edits:
                continue
            text = format_function(func) if verify_each else None
            func = run(func)
            if func.edits == edits:
                idle_at[name] = edits
            if verify_each:
                _check(func, name, None if func.edits != edits else text)
                _check_users(func, name)
    finally:
        func.analyses = None
    return func


def _check_users(func: Function, name: str) -> None:
    """That the use map `ir.pass_users` would hand to the next pass is `ir.users(func)`."""
    found = func.analyses.get("users")
    if found is not None and found[0] == func.edits:
        kept = {instr: list(found_users) for instr, found_users in found[1].items() if found_users}
        if kept != users(func):
            raise IRError(f"pass {name} left a use map that differs from the function's")


def _check(func: Function, name: str, unchanged_text: str | None) -> None:
    """`verify`, and with `unchanged_text`, that the function still prints as that."""
    try:
        verify(func)
    except IRError as error:
        raise IRError(f"after pass {name}: {error}") from error
    if unchanged_text is not None and format_function(func) != unchanged_text:
        raise IRError(f"pass {name} changed the function without counting it in `edits`")
