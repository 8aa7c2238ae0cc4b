"""Speculation of short branch arms: `if c: s += v` becomes `s = c ? s + v : s`.

An arm of at most `MAX_ARM` cheap instructions that cannot fault and has no effect is moved into
the block that branches, and each phi of the join becomes a `select` on the branch's condition.
The arms of unrolled guarded sums are the case that matters:

    for w in ptxpy.static_range(WARPS - 1):
        if w < warp:
            before += warp_totals[w]

Each arm loads one word of a shared array at a constant offset. As branches they load one word
at a time, each under its own predicate; as selects the loads are unconditional, ptxas merges
the neighbouring words into `ld.shared.v4` and the sum needs fewer registers (the prefix scan's
`scan_tiles`: 25 registers, nvcc 22, before; nvcc compiles the C the same way). A load is
speculated only from a `.shared` or `.local` array at a constant offset inside the array, which
cannot fault and reads a value that is discarded when the guard is false; global loads, which
may be out of bounds exactly when the guard is false, stay behind their branch.

Runs after `reassoc`/`hoist`/`cse` (so an access is `array + C`) and before `licm`.
"""
from __future__ import annotations

from ..ir import Const, Function, Instr, set_targets, users
from .copyprop import replace_all_uses
from .simplifycfg import merge_into

MAX_ARM = 3     # instructions per arm, the terminator not counted

CHEAP_OPS = frozenset({"add", "sub", "mul", "min", "max", "and", "or", "xor", "neg", "not",
                       "abs", "shl", "shr", "mul_wide", "cmp", "select", "cvt", "bitcast",
                       "mov", "fma"})
LOCAL_SPACES = ("shared", "local")


def run(func: Function) -> Function:
    sizes = {decl.name: decl.nbytes for decl in func.arrays}
    uses = None
    places: dict = {}   # a block that took another's place in the layout -> that (first) block
    for head in reversed(func.blocks[:]):    # inner branches first: see _absorb_join
        term = head.terminator
        if term is None or term.op != "cbr" or term.targets[0] is term.targets[1]:
            continue
        shape = _shape(head, sizes)
        if shape is not None:
            uses = uses if uses is not None else users(func)   # arms' values keep their uses
            _convert(head, *shape, uses)
            _absorb_join(func, head, shape[0], uses, places)
    if uses is not None:
        func.blocks = _laid_out(func.blocks, places)
        func.edits += 1
    return func


def _laid_out(blocks: list, places: dict) -> list:
    """`blocks` less those emptied (arms moved out, blocks merged away), each block in `places`
    at its place. (Removing each from the list as it went was quadratic in unrolled code.)"""
    at = {place: block for block, place in places.items() if block.instrs}
    return [at[b] if b in at else b for b in blocks
            if b in at or (b.instrs and b not in places)]


def _absorb_join(func: Function, head, join, uses: dict, places: dict) -> None:
    """Merge `join` into `head` where `head` is now its only predecessor, so that a converted
    branch nested in an arm of another (`if nan: k = NAN elif k == SIGN: k = 0`) leaves that
    arm one short block, which the outer branch's conversion then takes in turn: no branch on
    a loaded value is left between one load and the next."""
    if join.preds != [head] or join is func.entry or join is head:
        return
    if len(join.instrs) <= len(head.instrs):
        merge_into(head, join, lambda: uses)     # (join, emptied, leaves the layout)
    else:
        _prepend_into(head, join, uses)
        places[join] = places.get(head, head)


def _prepend_into(head, join, uses: dict) -> None:
    """`merge_into(head, join)` built the other way round: `head`'s instructions go to the
    front of `join`, which takes `head`'s name and predecessors (and, in `run`, its place). In
    a run of unrolled converted branches each join holds the rest of the run, merged first
    (the pass goes backwards): moving the shorter side keeps the merges linear, not quadratic."""
    for phi in join.phis:      # each of one argument, as in merge_into
        replace_all_uses(uses, phi, phi.args[0])
        phi.block = None
    moved = head.instrs[:-1]   # less head's `br join`
    for instr in head.phis:
        instr.block = join
    for instr in moved:
        instr.block = join
    join.phis, join.instrs, join.preds = head.phis, moved + join.instrs, head.preds
    for pred in head.preds:
        term = pred.instrs[-1]
        term.targets = [join if target is head else target for target in term.targets]
    join.name = head.name
    head.phis, head.instrs, head.preds = [], [], []


def _shape(head, sizes):
    """(join, then-arm or None, else-arm or None) when `head`'s branch is a triangle or a
    diamond of speculable arms, else None."""
    then, other = head.terminator.targets
    then_join = _arm_join(then, head, sizes)
    else_join = _arm_join(other, head, sizes)
    if then_join is other:                      # if c: arm
        return other, then, None
    if else_join is then:                       # if not c: arm
        return then, None, other
    if then_join is not None and then_join is else_join:    # if c: arm else: arm
        return then_join, then, other
    return None


def _arm_join(arm, head, sizes):
    """The block `arm` jumps to, when `arm` is entered only from `head` and its instructions
    can run unconditionally."""
    if arm.preds != [head] or arm.phis or len(arm.instrs) > MAX_ARM + 1:
        return None
    term = arm.instrs[-1]
    if term.op != "br" or term.targets[0] is arm or term.targets[0] is head:
        return None
    if all(_speculable(instr, sizes) for instr in arm.instrs[:-1]):
        return term.targets[0]
    return None


def _speculable(instr: Instr, sizes: dict) -> bool:
    if instr.op in CHEAP_OPS:     # none of them traps on the GPU, whatever its operands
        return True
    return instr.op == "load" and _safe_load(instr, sizes)


def _safe_load(load: Instr, sizes: dict) -> bool:
    """A load of an array in `.shared`/`.local` at a constant offset inside the array."""
    if set(load.attrs) != {"space"} or load.attrs["space"] not in LOCAL_SPACES:
        return False
    address, offset = load.args[0], 0
    if isinstance(address, Instr) and address.op == "add" and isinstance(address.args[1], Const):
        address, offset = address.args[0], int(address.args[1].value)
    if not (isinstance(address, Instr) and address.op == "addr_of"):
        return False
    size = sizes.get(address.attrs.get("symbol"))
    return size is not None and 0 <= offset <= size - load.type.nbytes


def _convert(head, join, then_arm, else_arm, uses) -> None:
    """Move the arms into `head`, turn `join`'s phis into selects and branch straight to it."""
    term = head.terminator
    cond = term.args[0]
    moved = {}
    for arm in (then_arm, else_arm):
        if arm is not None:
            for instr in arm.instrs[:-1]:
                head.insert_before_terminator(instr)
                moved[instr] = arm
    i_then = join.preds.index(then_arm or head)
    i_else = join.preds.index(else_arm or head)
    merged = {}
    for phi in join.phis:
        a, b = phi.args[i_then], phi.args[i_else]
        if a is b or (isinstance(a, Const) and a == b):
            merged[phi] = a
        else:
            ours = {v for v, arm in moved.items() if arm is then_arm and uses.get(v) == [phi]}
            theirs = {v for v, arm in moved.items() if arm is else_arm and uses.get(v) == [phi]}
            merged[phi] = (_select_operand(head, cond, a, b, ours, uses)
                           or _select_operand(head, cond, b, a, theirs, uses, negated=True)
                           or _add_uses(uses, head.insert_before_terminator(
                               Instr("select", phi.type, [cond, a, b], loc=phi.loc))))
    set_targets(term, [join])             # head -> join (a diamond's join gains head as a pred)
    term.op, term.args = "br", []
    for arm in (then_arm, else_arm):
        if arm is not None:
            set_targets(arm.instrs[-1], [])   # the arm leaves join's preds and phis
            arm.instrs, arm.preds = [], []     # (emptied: leaves the layout)
    k = join.preds.index(head)
    for phi in join.phis:
        phi.args[k] = merged[phi]
        if merged[phi].__class__ is Instr:
            uses.setdefault(merged[phi], []).append(phi)


def _add_uses(uses: dict, instr: Instr) -> Instr:
    """Record `instr` (new) as a user of its operands, so that `uses` stays a superset of the
    uses (a later `_absorb_join` replaces a phi through it)."""
    for arg in instr.args:
        if arg.__class__ is Instr:
            uses.setdefault(arg, []).append(instr)
    return instr


def _select_operand(head, cond, taken, kept, rewritable, uses, negated=False):
    """`c ? s + v : s` as `s + (c ? v : 0)`, as nvcc writes it: the sum stays one chain and the
    loads it adds stay independent (ptxas then merges neighbouring ones). `taken` is the value
    on the arm's path, `kept` the one on the other path; `rewritable`, what the arm computed for
    this phi alone. Returns the new phi value, or None."""
    if not (taken in rewritable and taken.op in _IDENTITY and not taken.type.is_bool
            and kept in taken.args):
        return None
    k = taken.args.index(kept)
    if taken.op == "sub" and k != 0:
        return None
    addend = taken.args[1 - k]
    zero = Const(taken.type, _IDENTITY[taken.op](taken.type))
    pair = [zero, addend] if negated else [addend, zero]
    chosen = _add_uses(uses, Instr("select", taken.type, [cond, *pair], loc=taken.loc))
    head.instrs.insert(head.instrs.index(taken), chosen)
    chosen.block = head
    taken.args[1 - k] = chosen
    uses[chosen] = [taken]
    return taken


# the operand that leaves `s op operand` equal to s (-0.0, not 0.0: -0.0 + 0.0 is +0.0)
_IDENTITY = {
    "add": lambda t: -0.0 if t.is_float else 0,
    "sub": lambda t: 0.0 if t.is_float else 0,
    "or": lambda t: 0,
    "xor": lambda t: 0,
}
