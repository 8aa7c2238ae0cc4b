"""Copy propagation: `mov x` becomes `x`; a phi whose args are all one value (or itself) too.

A phi whose other args are Undef also becomes its one defined value, when that value is
available at the phi (a constant, or defined in a block dominating the phi's own).
"""
from __future__ import annotations

from ..cfg import DomTree, dom_tree
from ..ir import Function, Instr, Undef, Value, pass_users, remove_instr


def replace_all_uses(uses: dict, old: Instr, new: Value) -> None:
    """Make the users of `old` (per the `uses` map from ir.users) use `new`, keeping the map."""
    for user in uses.pop(old, ()):
        user.args = [new if a is old else a for a in user.args]
        if isinstance(new, Instr):
            uses.setdefault(new, []).append(user)


def run(func: Function) -> Function:
    work = [i for i in func.instrs() if i.op == "mov" or i.op == "phi"]
    if not work or not _any_to_replace(work, func):
        return func
    uses = pass_users(func)
    dom, changed = None, False
    while work:
        instr = work.pop()
        if instr.block is None:
            continue
        if instr.op == "mov":
            new = instr.args[0]
        else:
            if dom is None and any(isinstance(a, Undef) for a in instr.args):
                dom = dom_tree(func)   # (only instructions have changed so far)
            new = _trivial_phi_value(instr, dom)
            if new is None:
                continue
        work.extend(u for u in uses.get(instr, ()) if u.is_phi and u is not instr)
        replace_all_uses(uses, instr, new)
        remove_instr(instr)
        changed = True
    func.edits += changed
    return func


def _any_to_replace(work: list, func: Function) -> bool:
    """Whether `run` would replace anything: a `mov`, or a phi trivial as it is (only a
    replacement makes another phi trivial), found without the use map."""
    dom = None
    for instr in work:
        if instr.op == "mov":
            return True
        if dom is None and any(isinstance(a, Undef) for a in instr.args):
            dom = dom_tree(func)
        if _trivial_phi_value(instr, dom) is not None:
            return True
    return False


def _trivial_phi_value(phi: Instr, dom: DomTree | None) -> Value | None:
    values = {a for a in phi.args if a is not phi}
    if not values:
        return Undef(phi.type)
    defined = [v for v in values if not isinstance(v, Undef)]
    if len(values) == 1:
        return next(iter(values))
    if len(defined) != 1:
        return None
    value = defined[0]
    if not isinstance(value, Instr):
        return value
    home = value.block
    if home is phi.block:
        return value if value.is_phi else None
    return value if dom.dominates(home, phi.block) else None
