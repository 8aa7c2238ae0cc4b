"""The IR verifier: the invariants every pass must keep. Run between passes in tests."""
from __future__ import annotations

from ptxpy.types import f32, i32, u16, u32

from .cfg import DomTree, reverse_postorder
from .ir import (ADDR_TYPE, ATOMIC_SEMS, CMP_PREDICATES, LOAD_SEMS, MEMORY_SCOPES, OPS,
                 STORE_SEMS, Const, Function, Instr, Undef, bool_, format_instr)


class IRError(Exception):
    pass


def verify(func: Function) -> None:
    """Raise IRError naming the first broken invariant."""
    _check_blocks(func)
    dom = DomTree(func)
    defined = {i for i in func.instrs()}
    for block in reverse_postorder(func):
        for pos, instr in enumerate(block.instrs):
            _check_types(instr)
            for arg in instr.args:
                _check_dominates(instr, arg, block, pos, dom, defined)
        for phi in block.phis:
            _check_phi(phi, block, dom, defined)


def _fail(instr: Instr | None, message: str):
    where = f" in `{format_instr(instr)}` ({instr.block})" if instr is not None else ""
    raise IRError(message + where)


def _check_blocks(func: Function) -> None:
    if not func.blocks:
        _fail(None, "function has no blocks")
    if func.entry.preds:
        _fail(None, f"entry block {func.entry} has predecessors")
    names = set()
    for block in func.blocks:
        if block.name in names:
            _fail(None, f"duplicate block name {block.name}")
        names.add(block.name)
        if block.terminator is None:
            _fail(None, f"block {block} has no terminator")
        for instr in block.instrs[:-1]:
            if instr.is_terminator:
                _fail(instr, "terminator before the end of its block")
        for instr in block.all_instrs():
            if instr.block is not block:
                _fail(instr, "instruction's block field is stale")
            if instr.is_phi != (instr in block.phis):
                _fail(instr, "phi outside the phi list, or non-phi inside it")
        targets = block.terminator.targets
        if len(set(targets)) != len(targets):
            _fail(block.terminator, "duplicate branch target")
        for succ in targets:
            if succ not in func.blocks:
                _fail(block.terminator, f"branch to a block {succ} not in the function")
            if succ.preds.count(block) != 1:
                _fail(block.terminator, f"{succ}.preds does not list {block} exactly once")
        for pred in block.preds:
            if block not in pred.succs:
                _fail(None, f"{block}.preds lists {pred}, which does not branch to it")
        for phi in block.phis:
            if len(phi.args) != len(block.preds):
                _fail(phi, f"phi has {len(phi.args)} args for {len(block.preds)} preds")


def _check_dominates(instr, arg, block, pos, dom, defined) -> None:
    if isinstance(arg, (Const, Undef)):
        return
    if not isinstance(arg, Instr) or arg not in defined:
        _fail(instr, f"uses {arg!r}, which is not defined in the function")
    if arg.type is None:
        _fail(instr, f"uses {arg!r}, which defines no value")
    if arg.block is block:
        if not arg.is_phi and block.instrs.index(arg) >= pos:
            _fail(instr, f"uses {arg!r} before its definition")
    elif not dom.dominates(arg.block, block):
        _fail(instr, f"uses {arg!r}, whose definition does not dominate the use")


def _check_phi(phi, block, dom, defined) -> None:
    for pred, arg in zip(block.preds, phi.args):
        if arg.type != phi.type:
            _fail(phi, f"phi arg {arg!r} from {pred} has type {arg.type}")
        if isinstance(arg, Instr) and pred in dom.depth:
            if arg not in defined:
                _fail(phi, f"phi uses {arg!r}, which is not defined in the function")
            if not dom.dominates(arg.block, pred):
                _fail(phi, f"phi arg {arg!r} does not dominate the end of {pred}")


def _check_types(instr: Instr) -> None:
    spec = OPS.get(instr.op)
    if spec is None:
        _fail(instr, f"unknown opcode {instr.op}")
    if spec.nargs is not None and len(instr.args) != spec.nargs:
        _fail(instr, f"{instr.op} takes {spec.nargs} args, has {len(instr.args)}")
    types = [a.type for a in instr.args]
    shape = spec.shape
    if shape == "same" and any(t != instr.type for t in types):
        _fail(instr, f"{instr.op} args must have the result type {instr.type}")
    elif shape == "cmp":
        if instr.type != bool_ or types[0] != types[1]:
            _fail(instr, "cmp needs two args of one type and a bool result")
        if instr.attrs.get("pred") not in CMP_PREDICATES:
            _fail(instr, "cmp needs attrs pred in eq ne lt le gt ge")
    elif shape == "select" and (types[0] != bool_ or types[1] != instr.type or types[2] != instr.type):
        _fail(instr, "select takes (bool, T, T) -> T")
    elif shape == "shift" and (types[0] != instr.type or not types[1].is_int or types[1].bits != 32):
        _fail(instr, "shift takes (T, 32-bit int) -> T")
    elif shape == "wide":
        if types[0] != types[1] or instr.type.bits != 2 * types[0].bits or instr.type.kind != types[0].kind:
            _fail(instr, "mul_wide takes two N-bit ints and gives a 2N-bit int of the same kind")
    elif instr.op == "mma":
        _verify_mma(instr, types)
    elif instr.op == "tf32" and (types[0] != f32 or instr.type != u32):
        _fail(instr, "tf32 takes an f32 and gives its tf32 bits as u32")
    elif instr.op == "wgmma":
        _verify_wgmma(instr, types)
    elif instr.op == "extract" and (not isinstance(instr.args[0], Instr)
                                    or instr.args[0].op not in ("vload", "mma", "ldmatrix", "wgmma")):
        _fail(instr, "extract takes a vload, an mma, an ldmatrix or a wgmma")
    elif instr.op == "ldmatrix":
        _verify_ldmatrix(instr, types)
    elif instr.op == "cp_async":
        _verify_cp_async(instr, types)
    elif instr.op in _MBARRIER_ARGS:
        _verify_mbarrier(instr, types)
    elif instr.op == "cp_async_bulk":
        _verify_bulk_copy(instr, types)
    elif instr.op in ("tma_load", "tma_store"):
        _verify_tensor_copy(instr, types)
    elif instr.op == "tensor_map" and (instr.type != ADDR_TYPE or not instr.attrs.get("name")):
        _fail(instr, f"tensor_map gives the {ADDR_TYPE} address of the parameter attrs name")
    elif instr.op in ("load", "vload", "store", "vstore", "atom", "ordered_load",
                      "ordered_store") and types[0] != ADDR_TYPE:
        _fail(instr, f"{instr.op} address must be {ADDR_TYPE}")
    elif instr.op in ("ordered_load", "ordered_store", "atom", "fence") and not _ordered(instr):
        sems = {"ordered_load": LOAD_SEMS, "ordered_store": STORE_SEMS, "atom": ATOMIC_SEMS,
                "fence": ("acq_rel",)}[instr.op]
        _fail(instr, f"{instr.op} needs attrs sem in {' '.join(sems)} and scope in "
                     f"{' '.join(MEMORY_SCOPES)}" + (
                         " (both or neither)" if instr.op == "atom" else
                         "; without sem, scope in cta gpu sys" if instr.op == "fence" else
                         ", space in global shared shared::cluster, and a type other than "
                         "bool"))
    elif instr.op in ("store",) and instr.attrs.get("space") not in ("global", "shared", "local",
                                                                        "shared::cluster"):
        _fail(instr, "store needs attrs space in global shared local shared::cluster")
    elif instr.op == "load" and instr.attrs.get("space", "global") not in (
            "global", "shared", "local", "const", "shared::cluster"):
        _fail(instr, "load needs attrs space in global shared local const shared::cluster")
    elif instr.op == "mapa" and (instr.type != ADDR_TYPE or types != [ADDR_TYPE, u32]):
        _fail(instr, f"mapa takes a shared {ADDR_TYPE} address and a u32 rank, gives {ADDR_TYPE}")
    elif instr.op == "cluster_barrier" and instr.attrs.get("phase") not in ("arrive", "wait"):
        _fail(instr, "cluster_barrier needs attrs phase arrive or wait")


def _ordered(instr: Instr) -> bool:
    """The order of a memory-ordered access, an atomic (none: relaxed at gpu scope) or a fence
    (none: `membar`) is one PTX has."""
    attrs, op = instr.attrs, instr.op
    sem, scope = attrs.get("sem"), attrs.get("scope")
    if op == "atom":
        return (sem is None and scope is None) or (sem in ATOMIC_SEMS and scope in MEMORY_SCOPES)
    if op == "fence":
        return scope in (MEMORY_SCOPES if sem == "acq_rel" else ("cta", "gpu", "sys") if sem is None
                         else ())
    value = instr.type if op == "ordered_load" else instr.args[1].type
    return (sem in (LOAD_SEMS if op == "ordered_load" else STORE_SEMS) and scope in MEMORY_SCOPES
            and attrs.get("space") in ("global", "shared", "shared::cluster")
            and value is not None and not value.is_bool
            and (op == "ordered_load" or instr.type is None))


_MMA_OPERANDS = {("m16n8k8", "tf32"): ("u32", 4, 2), ("m16n8k16", "f16"): ("f16", 8, 4),
                 ("m16n8k16", "bf16"): ("bf16", 8, 4)}


def _verify_mma(instr, types) -> None:
    attrs = instr.attrs
    if attrs.get("shape") == "m16n8k32":
        kinds = [attrs.get("ab"), attrs.get("b")]
        if not set(kinds) <= {"s8", "u8"}:
            _fail(instr, "an m16n8k32 mma needs attrs ab and b, each s8 or u8")
        names = {"s8": "i8", "u8": "u8"}
        wanted = [names[kinds[0]]] * 16 + [names[kinds[1]]] * 8 + ["i32"] * 4
        if instr.type != i32 or [t.name for t in types] != wanted:
            _fail(instr, f"mma m16n8k32.{kinds[0]}.{kinds[1]} takes 16 and 8 8-bit ints and 4 "
                         "i32 args and gives i32")
        return
    form = _MMA_OPERANDS.get((attrs.get("shape"), attrs.get("ab")))
    if form is None:
        _fail(instr, "mma needs attrs shape/ab m16n8k8/tf32, m16n8k16/f16 or m16n8k16/bf16")
    element, a_count, b_count = form
    wanted = [element] * (a_count + b_count) + ["f32"] * 4
    if instr.type != f32 or [t.name for t in types] != wanted:
        _fail(instr, f"mma {instr.attrs['shape']}.{instr.attrs['ab']} takes {a_count + b_count} "
                     f"{element} and 4 f32 args and gives f32")


def _verify_wgmma(instr, types) -> None:
    attrs = instr.attrs
    n, ab = attrs.get("n"), attrs.get("ab")
    integer = ab in ("s8", "u8")
    shapes = (8, 16, 24, *range(32, 257, 16)) if integer else range(8, 257, 8)
    if n not in shapes or ab not in ("f16", "bf16", "tf32", "s8", "u8", "e4m3", "e5m2") or \
            attrs.get("trans_a") not in (False, True) or attrs.get("trans_b") not in (False, True) or \
            (ab not in ("f16", "bf16") and (attrs["trans_a"] or attrs["trans_b"])):
        _fail(instr, "wgmma needs attrs n (8, 16, ..., 256; for s8 and u8 8, 16, 24, 32, 48, ..., "
                     "256), ab f16, bf16, tf32, s8, u8, e4m3 or e5m2, and trans_a, trans_b (f16 "
                     "and bf16 only)")
    if "b" in attrs and not (ab in ("e4m3", "e5m2") and attrs["b"] in ("e4m3", "e5m2")):
        _fail(instr, "wgmma's attr b (B's format, where it differs from A's) is e4m3 or e5m2, "
                     "with A of the other")
    a_regs = attrs.get("a_regs", False)
    if a_regs not in (False, True) or (a_regs and attrs["trans_a"]):
        _fail(instr, "wgmma's attr a_regs is a bool, and A in registers has no trans_a")
    registers = {"tf32": ["u32"] * 4, "s8": ["i8"] * 16, "u8": ["u8"] * 16,
                 "e4m3": ["u8"] * 16, "e5m2": ["u8"] * 16}.get(ab, [ab] * 8)
    a = registers if a_regs else ["u64"]
    sums = "i32" if integer else "f32"
    if instr.type.name != sums or [t.name for t in types] != [sums] * (n // 2) + a + ["u64", "bool"]:
        _fail(instr, f"wgmma of n {n} takes {n // 2} {sums} accumulators, A's u64 descriptor (or, "
                     "with a_regs, 8 f16/bf16 or 4 u32 tf32 values), B's u64 descriptor and a "
                     f"bool, and gives {sums}")


def _verify_cp_async(instr, types) -> None:
    if types[:2] != [ADDR_TYPE, ADDR_TYPE] or len(types) > 3 or types[2:] not in ([], [u32]):
        _fail(instr, f"cp_async takes two {ADDR_TYPE} addresses and an optional u32 byte count")
    if instr.attrs.get("bytes") not in (4, 8, 16) or instr.attrs.get("space") != "shared":
        _fail(instr, "cp_async needs attrs bytes 4, 8 or 16 and space shared")


#: an mbarrier op's args after the barrier's address, and its result type
_MBARRIER_ARGS = {"mbarrier_init": ([u32], None), "mbarrier_arrive": ([], None),
                  "mbarrier_test": ([u32], bool_)}


def _verify_mbarrier(instr, types) -> None:
    rest, result = _MBARRIER_ARGS[instr.op]
    allowed = (rest, [u32]) if instr.op == "mbarrier_arrive" else (rest,)
    spaces = ("shared", "shared::cluster") if instr.op == "mbarrier_arrive" else ("shared",)
    if types[:1] != [ADDR_TYPE] or types[1:] not in allowed or instr.type != result or \
            instr.attrs.get("space") not in spaces:
        _fail(instr, f"{instr.op} takes the barrier's {ADDR_TYPE} address and {len(rest)} u32 "
                     f"({'a u32 byte count with expect_tx, ' if instr.op == 'mbarrier_arrive' else ''}"
                     f"attrs space shared) and gives {result}")
    if instr.op == "mbarrier_test" and instr.attrs.get("try") not in (False, True):
        _fail(instr, "mbarrier_test needs attrs try, a bool")


def _multicast_mask(instr, types) -> list:
    """The types before a multicast copy's u16 ctaMask (its last argument), checked."""
    if not instr.attrs.get("multicast"):
        return types
    if types[-1:] != [u16] or instr.attrs.get("space") != "shared":
        _fail(instr, f"a multicast {instr.op} into shared memory ends with its u16 mask")
    return types[:-1]


def _verify_bulk_copy(instr, types) -> None:
    types = _multicast_mask(instr, types)
    space, size = instr.attrs.get("space"), instr.attrs.get("bytes")
    wanted = 3 if space == "shared" else 2
    if types != [ADDR_TYPE] * wanted or space not in ("shared", "global") or \
            not isinstance(size, int) or size <= 0 or size % 16:
        _fail(instr, f"cp_async_bulk takes a destination and a source {ADDR_TYPE} address (and "
                     "the mbarrier's, to shared memory), attrs space shared or global and bytes "
                     "a multiple of 16")


def _verify_tensor_copy(instr, types) -> None:
    types = _multicast_mask(instr, types)
    load = instr.op == "tma_load"
    coords = types[2:-1] if load else types[1:-1]
    map_type = types[1] if load else types[0]
    space, size = instr.attrs.get("space"), instr.attrs.get("bytes")
    if not 1 <= len(coords) <= 5 or any(t != i32 for t in coords) or \
            types[0] != ADDR_TYPE or types[-1] != ADDR_TYPE or \
            map_type != ADDR_TYPE or \
            space != ("shared" if load else "global") or \
            (load and (not isinstance(size, int) or size <= 0 or size % 16)):
        _fail(instr, "tma_load takes a shared address, a tensor map's, 1 to 5 i32 coordinates and an "
                     "mbarrier's address (attrs space shared, bytes a multiple of 16); tma_store a "
                     "tensor map's address, the coordinates and a shared address (attrs space global)")


def _verify_ldmatrix(instr, types) -> None:
    t, attrs = instr.type, instr.attrs
    if types != [ADDR_TYPE] or t is None or t.is_bool or t.bits not in (8, 16, 32) or \
            (t.bits == 8 and not t.is_int):
        _fail(instr, f"ldmatrix takes an {ADDR_TYPE} address and gives an 8-bit int or a 16- or "
                     "32-bit type")
    if attrs.get("count") not in (1, 2, 4) or attrs.get("space") != "shared" or \
            attrs.get("trans") not in (False, True) or (attrs["trans"] and t.bits != 16):
        _fail(instr, "ldmatrix needs attrs count 1, 2 or 4, space shared, trans (16-bit only)")
