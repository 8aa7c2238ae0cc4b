"""The optimisation pipeline over the SSA IR (docs/design.md, "The IR").

Every pass is `run(func) -> func`: it may edit `func` in place and keeps `verify.verify` passing.
"""
from __future__ import annotations

from ..ir import Function
from ..verify import IRError, verify
from . import (contract, copyprop, cse, dce, hoist, licm, lower_floor, ranges, reassoc, sccp,
               simplifycfg, speculate, strength)

PIPELINE: list = [
    ("simplifycfg", simplifycfg.run),
    ("sccp", sccp.run),
    ("copyprop", copyprop.run),
    ("cse", cse.run),
    ("dce", dce.run),
    ("ranges", ranges.run),       # before lower_floor: what it proves needs no fix-up
    ("lower_floor", lower_floor.run),
    ("sccp", sccp.run),
    ("copyprop", copyprop.run),
    ("reassoc", reassoc.run),     # constant offsets outermost in addresses, then merged by cse
    ("hoist", hoist.run),         # address arithmetic out of guarded arms, so cse can merge it
    ("cse", cse.run),
    ("speculate", speculate.run), # short safe arms -> selects (shared loads at constant offsets)
    ("licm", licm.run),
    ("strength", strength.run),   # after licm: needs preheaders and hoisted bases
    ("sccp", sccp.run),           # folds the start and step offsets strength left in preheaders
    ("cse", cse.run),
    ("contract", contract.run),   # fast_math only: a*b + c -> fma, after cse counted the uses
    ("dce", dce.run),
    ("simplifycfg", simplifycfg.run),
]


def optimize(func: Function, verify_each: bool = False) -> Function:
    """Run `PIPELINE` over `func`; with `verify_each`, check the IR after every pass."""
    for name, run in PIPELINE:
        func = run(func)
        if verify_each:
            try:
                verify(func)
            except IRError as error:
                raise IRError(f"after pass {name}: {error}") from error
    return func
