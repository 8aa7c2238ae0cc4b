"""Strength reduction of address arithmetic in loops, and multiplications by powers of two.

For an induction variable `i = phi(start, i + step)` of a loop with a preheader and one latch
(`step` a constant or loop-invariant), an address that memory ops use and that is affine in
`i` (a chain of invariant adds, constant scalings `mul`/`mul_wide`/`shl` and widening `cvt`s,
e.g. `x + mul_wide(row * n + i, 4)`) becomes its own phi, advanced by the scaled `step` each
iteration, when the pointers then replace `i` altogether (nothing else uses it: not the loop
test, not a value computed from it), or when the address is a `.shared`/`.local` one (32 bits
wide in the backend, like `i`). Where `i` stays live, a 64-bit global pointer beside it would
only add registers (ptxas computes such addresses in one instruction per access itself). Like
nvcc, this assumes the index arithmetic does not wrap around. Integer `mul` by 2^k becomes
`shl`.
"""
from __future__ import annotations

from ..cfg import Loop, dom_tree, natural_loops
from ..ir import ADDR_TYPE, Const, Function, Instr, Value, pass_users, remove_instr, u32
from ..interp import wrap_int
from .copyprop import replace_all_uses


def run(func: Function) -> Function:
    loops = natural_loops(func, dom_tree(func))
    changed = False
    if loops:
        uses = pass_users(func)
        for loop in loops:
            changed |= _reduce_loop(loop, uses)
    for block in func.blocks:
        for instr in block.instrs:
            changed |= _mul_to_shift(instr)
    func.edits += changed
    return func


def _mul_to_shift(instr: Instr) -> bool:
    if instr.op != "mul" or not instr.type.is_int:
        return False
    for k in (1, 0):
        factor = instr.args[k]
        if isinstance(factor, Const):
            magnitude = factor.value & ((1 << instr.type.bits) - 1)
            if magnitude > 1 and magnitude & (magnitude - 1) == 0:
                instr.op = "shl"
                instr.args = [instr.args[1 - k], Const(u32, magnitude.bit_length() - 1)]
                return True
    return False


def _reduce_loop(loop: Loop, uses: dict) -> bool:
    """Give the loop's reducible addresses their own pointers; whether there were any."""
    preheader, header = loop.preheader(), loop.header
    if preheader is None or len(header.preds) != 2:
        return False
    reduced = False
    latch = header.preds[1 - header.preds.index(preheader)]
    for phi in list(header.phis):
        step = _induction_step(phi, header.preds.index(latch), loop)
        if step is None:
            continue
        start = phi.args[header.preds.index(preheader)]
        chains = [c for c in _derived(phi, loop, uses) if _is_reducible_address(c, uses)]
        if chains and not _dies_when_reduced(phi, phi.args[header.preds.index(latch)], chains,
                                             uses):
            chains = [c for c in chains if _narrow_address(c[-1][0], uses)]
        for chain in chains:
            address = chain[-1][0]
            if address.block is None:  # already replaced through another chain
                continue
            init = _clone(chain, phi, start, preheader, offset_only=False)
            increment = _clone(chain, phi, step, preheader, offset_only=True)
            pointer = Instr("phi", ADDR_TYPE, loc=address.loc)
            advanced = latch.insert_before_terminator(
                Instr("add", ADDR_TYPE, [pointer, increment], loc=address.loc))
            pointer.args = [init if p is preheader else advanced for p in header.preds]
            header.append(pointer)
            uses[pointer] = [advanced]
            replace_all_uses(uses, address, pointer)
            remove_instr(address)
            reduced = True
    return reduced


def _dies_when_reduced(iv: Instr, following: Instr, chains: list, uses: dict) -> bool:
    """Whether nothing but the address chains (and its own increment) uses `iv`, so that the
    pointers replace it. Where it stays live (a loop test, a value computed from it), a 64-bit
    pointer beside it costs two more registers for every global address, while ptxas computes
    `base + i * 4` in one IMAD.WIDE or LEA per access: BENCHMARKS.md, session 10."""
    in_chains = {id(instr) for chain in chains for instr, _ in chain}
    addresses = {id(chain[-1][0]) for chain in chains}
    allowed = in_chains | {id(following)}
    if any(id(user) not in allowed for user in uses.get(iv, ())):
        return False
    if any(user is not iv for user in uses.get(following, ())):
        return False
    return all(id(user) in in_chains for chain in chains for instr, _ in chain
               if id(instr) not in addresses for user in uses.get(instr, ()))


def _narrow_address(address: Instr, uses: dict) -> bool:
    """Only `.shared`/`.local` accesses use it: the backend addresses those with 32-bit
    registers, so its pointer costs no more registers than the index."""
    users_of = [u for u in uses.get(address, ()) if u.op in MEMORY_OPS]
    users_of += [v for u in uses.get(address, ()) if u.op not in MEMORY_OPS
                 for v in uses.get(u, ()) if v.op in MEMORY_OPS]
    return bool(users_of) and all(u.attrs.get("space") in ("shared", "local") for u in users_of)


def _invariant(value: Value, loop: Loop) -> bool:
    return not isinstance(value, Instr) or value.block not in loop.blocks


def _induction_step(phi: Instr, latch_index: int, loop: Loop) -> Value | None:
    """`step` when `phi` is `phi(start, phi + step)` (or `phi - C`), else None."""
    following = phi.args[latch_index]
    if not phi.type.is_int or not isinstance(following, Instr) or len(following.args) != 2:
        return None
    a, b = following.args
    if following.op == "add" and (a is phi or b is phi):
        step = b if a is phi else a
        if _counts_down_unsigned(step):
            return None
        return step if _invariant(step, loop) else None
    if following.op == "sub" and a is phi and isinstance(b, Const) and (
            phi.type.is_signed or phi.type.bits == 64):
        return Const(phi.type, wrap_int(-b.value, phi.type))
    return None


def _counts_down_unsigned(step: Value) -> bool:
    """An unsigned constant step from the top half of a type narrower than addresses:
    `v -= 3` on a u16 is `v + 65533`, which a zero-extending `cvt` or `mul_wide` of the
    scaled step would turn into a jump forward (as would `v - 3` read as `v + wrap(-3)`).
    In u64, the address's own width, the step wraps as the address does."""
    return (isinstance(step, Const) and step.type.is_int and not step.type.is_signed
            and step.type.bits < 64 and step.value >= 1 << (step.type.bits - 1))


MAX_CHAIN = 6


def _derived(iv: Instr, loop: Loop, uses: dict):
    """Chains [(instr, link kind)] of loop values affine in `iv`: each link adds an invariant
    ('shift'), scales by a constant ('scale') or sign/zero-extends ('widen') the one before."""
    todo = [(iv, [])]
    while todo:
        value, chain = todo.pop()
        if len(chain) >= MAX_CHAIN:
            continue
        for user in uses.get(value, ()):
            kind = _link(user, value, loop)
            if kind is not None and user.block in loop.blocks:
                longer = chain + [(user, kind)]
                yield longer
                todo.append((user, longer))


def _link(instr: Instr, value: Instr, loop: Loop) -> str | None:
    op, args = instr.op, instr.args
    if instr.type is None:
        return None
    if op == "cvt":
        src = args[0].type
        return "widen" if src.is_int and instr.type.is_int and instr.type.bits > src.bits \
            and not instr.attrs.get("mode") else None
    if len(args) != 2 or not instr.type.is_int:
        return None
    a, b = args
    if op == "add" and a is not b:
        return "shift" if _invariant(b if a is value else a, loop) else None
    if op == "sub" and a is value:
        return "shift" if _invariant(b, loop) else None
    if op == "shl":
        return "scale" if a is value and isinstance(b, Const) else None
    if op in ("mul", "mul_wide") and a is not b:
        return "scale" if isinstance(b if a is value else a, Const) else None
    return None


MEMORY_OPS = frozenset({"load", "vload", "store", "vstore", "atom", "ordered_load", "ordered_store"})


def _is_reducible_address(chain: list, uses: dict) -> bool:
    """An address worth its own phi: an i64 `base + offset` that memory ops use, where the
    offset scales or widens the induction variable (a bare `i + base` would gain nothing)."""
    address, kind = chain[-1]
    if len(chain) > 1 and chain[-2][0].type == ADDR_TYPE and _constant_offset(address):
        return False   # `pointer + C`: the backend folds C into the access ([%rd1+12])
    return (kind == "shift" and address.type == ADDR_TYPE
            and any(k != "shift" for _, k in chain) and _used_as_address(address, uses))


def _constant_offset(instr: Instr) -> bool:
    return instr.op == "add" and any(isinstance(a, Const) for a in instr.args)


def _used_as_address(address: Instr, uses: dict, depth: int = 0) -> bool:
    """Memory ops use `address`, or `address + C` (which the backend folds into the access)."""
    for user in uses.get(address, ()):
        if user.op in MEMORY_OPS and user.args[0] is address:
            return True
        if depth == 0 and user.type == ADDR_TYPE and _constant_offset(user) \
                and _used_as_address(user, uses, 1):
            return True
    return False


def _clone(chain: list, iv: Instr, replacement: Value, block, offset_only: bool) -> Value:
    """Copies of `chain` at the end of `block` computing its value with `replacement` for `iv`;
    with `offset_only`, the invariant shifts are left out (what one step of `iv` adds)."""
    mapping: dict[int, Value] = {id(iv): replacement}
    current: Value = replacement
    for instr, kind in chain:
        if offset_only and kind == "shift":
            mapping[id(instr)] = current
        else:
            current = Instr(instr.op, instr.type, [mapping.get(id(a), a) for a in instr.args],
                            instr.attrs, loc=instr.loc)
            block.insert_before_terminator(current)
            mapping[id(instr)] = current
    return current
