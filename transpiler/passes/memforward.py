"""Memory forwarding within a block: a load reads what the block last stored or loaded there, and
a store that a later one overwrites before anything reads it is dropped.

`x[i] += a; x[i] *= b` is load, store, load, store of one address: the second load takes the
first store's value, and the first store goes (nvcc does the same). Within one block, while no
instruction between could let another thread's write be seen or see this one's:

- a plain load (`space`, `nc` only) of an address (the same SSA value, of the same type, in the
  same state space) that an earlier load read, or an earlier store wrote, is that value;
- a store to an address that a later store of the same type overwrites, with no load or vector
  load of that state space between them (any load could read it through another address), is
  dropped.

A store to a state space forgets what is known about that space (another address may alias);
an atomic, an ordered load or store (`load_acquire`, `store_release` ...), barrier, fence,
`syncwarp`, `printf`, `cp_async` or anything else with effects forgets everything (shuffles,
votes and `mma` touch no memory; `ldmatrix` only reads, as a load does). Without
synchronisation another thread's access to the same address would be a data race, which CUDA
leaves undefined, so these hold for every thread.
"""
from __future__ import annotations

from ..ir import Function, Instr

_NO_MEMORY = frozenset({"shfl", "vote", "redux", "match", "nanosleep", "activemask", "mma"})


def run(func: Function) -> Function:
    replaced: dict = {}
    dropped = False
    for block in func.blocks:
        dropped |= _forward_block(block, replaced)
    if replaced:
        for block in func.blocks:
            for group in (block.phis, block.instrs):
                for instr in group:
                    if any(a.__class__ is Instr and a in replaced for a in instr.args):
                        instr.args = [replaced.get(a, a) if a.__class__ is Instr else a for a in instr.args]
    func.edits += bool(replaced) or dropped
    return func


def _forward_block(block, replaced: dict) -> bool:
    """Forward the loads of `block` (into `replaced`) and drop its overwritten stores; whether
    it dropped any instruction."""
    known: dict = {}      # (space, address, type) -> the value there
    unread: dict = {}     # (space, address, type) -> a store nothing has read since
    dead = []
    for instr in block.instrs:
        if replaced and any(a.__class__ is Instr and a in replaced for a in instr.args):
            instr.args = [replaced.get(a, a) if a.__class__ is Instr else a for a in instr.args]
        op = instr.op
        if op == "load" and instr.attrs.keys() <= {"space", "nc"}:
            space = instr.attrs.get("space")
            key = (space, instr.args[0], instr.type)
            if key in known:
                replaced[instr] = known[key]
                dead.append(instr)
                continue
            known[key] = instr
            _forget(unread, space)
        elif op in ("load", "vload", "ldmatrix"):     # (ldmatrix: a warp's shared load)
            _forget(unread, instr.attrs.get("space"))
        elif op in ("store", "vstore"):
            space = instr.attrs.get("space")
            _forget(known, space)
            if op == "store":
                key = (space, instr.args[0], instr.args[1].type)
                if key in unread:
                    dead.append(unread[key])
                known[key] = instr.args[1]
                unread[key] = instr
        elif instr.has_side_effects and op not in _NO_MEMORY:
            known.clear()
            unread.clear()
    if dead:
        gone = set(dead)
        block.instrs = [i for i in block.instrs if i not in gone]
        for instr in dead:
            instr.block = None
    return any(i.op == "store" for i in dead)


#: state spaces that may name the same bytes: a block's shared memory is also in its cluster's
_OVERLAPPING = {"shared": ("shared", "shared::cluster"), "shared::cluster": ("shared", "shared::cluster")}


def _forget(table: dict, space) -> None:
    """Drop what `table` holds about state space `space` and those overlapping it (everything
    for an unknown space)."""
    known = ("global", "shared", "local", "shared::cluster")
    spaces = _OVERLAPPING.get(space, (space,))
    for key in [k for k in table if k[0] in spaces or space not in known]:
        del table[key]
