"""The SSA IR: functions of basic blocks of typed instructions, with phis.

An `Instr` is also the `Value` it defines (as in LLVM). Every value has a `Scalar` type, or
None for instructions that define nothing (stores, branches). Phi arguments line up with the
block's `preds` list: `phi.args[k]` flows in from `block.preds[k]`. A block's last instruction,
and only that one, is a terminator (`br`, `cbr`, `ret`, `trap`); its successors are its
`targets`. The written spec of every opcode is `OPS` below and docs/design.md ("The IR").
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Iterator

from ptxpy.types import Scalar, SCALARS, bool_, i32, i64, u32

from .launch_shape import describe

Loc = tuple  # (line, col), 1-based line, 0-based col, in the Python source
_INSTR_IDS = itertools.count(1)   # `Instr.id`: printed as `%id`


class Value:
    type: Scalar | None


class Const(Value):
    """A compile-time constant: a Python int, float or bool of `type`."""

    __slots__ = ("type", "value", "_hash")

    def __init__(self, type: Scalar, value):
        self.type = type
        self.value = value
        self._hash = None   # computed when first needed (constants are never changed)

    def __repr__(self) -> str:
        return f"{_const_text(self.value)}:{self.type}"

    def __eq__(self, other):
        return (isinstance(other, Const) and (other.type is self.type or other.type == self.type)
                and _const_key(other.value) == _const_key(self.value))

    def __hash__(self):
        if self._hash is None:
            self._hash = hash((self.type, _const_key(self.value)))
        return self._hash


def _const_key(value):
    # NaN constants are equal to each other for CSE purposes; -0.0 differs from 0.0
    if isinstance(value, float):
        return ("f", repr(value))
    return value


def _const_text(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value)


class Undef(Value):
    """An undefined value (a variable read on a path that never assigned it)."""

    __slots__ = ("type",)

    def __init__(self, type: Scalar):
        self.type = type

    def __repr__(self) -> str:
        return f"undef:{self.type}"


class Instr(Value):
    __slots__ = ("op", "type", "args", "attrs", "targets", "loc", "block", "id")

    def __init__(self, op: str, type: Scalar | None, args=(), attrs=None, targets=(), loc=None):
        self.op = op
        self.type = type
        self.args: list[Value] = list(args)
        self.attrs: dict = dict(attrs) if attrs else {}
        self.targets: list[Block] = list(targets) if targets else []
        self.loc: Loc | None = loc
        self.block: Block | None = None
        self.id = next(_INSTR_IDS)

    @property
    def is_terminator(self) -> bool:
        return self.op in TERMINATORS

    @property
    def is_phi(self) -> bool:
        return self.op == "phi"

    @property
    def has_side_effects(self) -> bool:
        return self.op in EFFECT_OPS

    def __repr__(self) -> str:
        return f"%{self.id}"


class Block:
    __slots__ = ("name", "phis", "instrs", "preds", "func")

    def __init__(self, name: str):
        self.name = name
        self.phis: list[Instr] = []
        self.instrs: list[Instr] = []
        self.preds: list[Block] = []
        self.func: Function | None = None

    @property
    def terminator(self) -> Instr | None:
        instrs = self.instrs
        return instrs[-1] if instrs and instrs[-1].op in TERMINATORS else None

    @property
    def succs(self) -> list[Block]:
        instrs = self.instrs
        return list(instrs[-1].targets) if instrs and instrs[-1].op in TERMINATORS else []

    def all_instrs(self) -> Iterator[Instr]:
        yield from self.phis
        yield from self.instrs

    def append(self, instr: Instr) -> Instr:
        instr.block = self
        (self.phis if instr.op == "phi" else self.instrs).append(instr)
        return instr

    def insert_before_terminator(self, instr: Instr) -> Instr:
        instr.block = self
        pos = len(self.instrs) - (1 if self.terminator else 0)
        self.instrs.insert(pos, instr)
        return instr

    def __repr__(self) -> str:
        return self.name


@dataclass
class SharedDecl:
    """A block-wide `.shared` (or per-thread `.local`) array the function declares, or a table
    of numbers in `.const` memory (declared at module scope, initialized with `values`)."""
    name: str
    elem: Scalar
    count: int
    align: int = 16
    space: str = "shared"   # 'shared' | 'local' | 'const'
    values: tuple = ()      # 'const': the numbers, already of type `elem`
    launch: tuple = ()      # a shared array sized at launch: (source name, extent formulas)
                            # (transpiler/launch_shape.py); its count is then 0
    loc: tuple | None = field(default=None, compare=False)   # where the source declares it

    @property
    def nbytes(self) -> int:
        """The size in bytes; shared arrays in whole 32-bit words, which the compare-and-swap
        loop of a 16-bit atomic reads (lower_intrinsics._cas_loop_in_word)."""
        size = self.elem.nbytes * self.count
        return -(-size // 4) * 4 if self.space == "shared" else size


@dataclass
class Function:
    name: str
    params: list          # transpiler.abi.ParamSpec, in signature order
    blocks: list[Block] = field(default_factory=list)
    arrays: list[SharedDecl] = field(default_factory=list)
    filename: str = "<string>"
    source_lines: list[str] = field(default_factory=list)
    arch: str = "sm_90"
    options: dict = field(default_factory=dict)
    #: passes that changed the function so far: a pass adds one when it changes anything
    #: (`passes.optimize` skips a pass that changed nothing when the function is still the same)
    edits: int = field(default=0, compare=False, repr=False)
    #: while `passes.optimize` runs: analyses computed at some `edits` count, reused while no
    #: pass has changed the function since (`ir.pass_users`), or for `cfg.dom_tree` and
    #: `cfg.block_order` while its control flow is the same (`cfg._same_edges`)
    analyses: dict | None = field(default=None, compare=False, repr=False)
    #: (loc, message) of what the source does that is legal but likely a mistake (the driver
    #: reports them as `file.py:LINE:COL: warning: ...`)
    warnings: list = field(default_factory=list, compare=False, repr=False)

    @property
    def entry(self) -> Block:
        return self.blocks[0]

    def new_block(self, hint: str = "bb") -> Block:
        block = Block(f"{hint}{len(self.blocks)}")
        block.func = self
        self.blocks.append(block)
        return block

    def instrs(self) -> list[Instr]:
        """Every instruction, block by block, phis first (a new list)."""
        return [instr for block in self.blocks for group in (block.phis, block.instrs)
                for instr in group]

    def __str__(self) -> str:
        return format_function(self)


# --- opcodes ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class OpSpec:
    """Typing rule of an opcode: `shape` says how result and argument types relate.

    'same':    args all of the result type
    'cmp':     two args of one type, result bool
    'select':  (bool, T, T) -> T
    'shift':   (T, i32|u32) -> T
    'cvt':     one arg of any scalar type, result any scalar type
    'wide':    two args of a 32-bit (or 16-bit) type, result of twice its width, same signedness
    'free':    checked by the op's own description (memory, intrinsics)
    """
    shape: str
    nargs: int | None      # None: variadic
    effects: bool = False  # must not be removed or moved even when unused


def _ops() -> dict[str, OpSpec]:
    ops = {}
    for name in ("add", "sub", "mul", "div", "rem", "min", "max", "and", "or", "xor",
                 "mul_hi", "copysign", "floordiv", "floormod"):
        ops[name] = OpSpec("same", 2)
    for name in ("neg", "not", "abs", "sqrt", "rsqrt", "rcp", "floor", "ceil", "trunc", "round",
                 "ex2", "lg2", "sin", "cos", "tanh", "mov"):
        ops[name] = OpSpec("same", 1)
    ops["fma"] = OpSpec("same", 3)
    ops["brev"] = OpSpec("same", 1)    # integers of 32 or 64 bits: the bits reversed
    ops["popc"] = OpSpec("free", 1)    # i32 <- a 32- or 64-bit integer: its set bits
    ops["clz"] = OpSpec("free", 1)     # i32 <- a 32- or 64-bit integer: its leading zeros
    ops["bfind"] = OpSpec("free", 1)   # i32 <- a 32- or 64-bit integer read as unsigned: the
    #                                    place of its highest set bit (with shiftamt=True: the
    #                                    left shift that puts it at the top), -1 for zero
    ops["shl"] = OpSpec("shift", 2)
    ops["shr"] = OpSpec("shift", 2)
    ops["cmp"] = OpSpec("cmp", 2)
    ops["isnan"] = OpSpec("free", 1)
    ops["isinf"] = OpSpec("free", 1)
    ops["select"] = OpSpec("select", 3)
    ops["cvt"] = OpSpec("cvt", 1)
    ops["bitcast"] = OpSpec("cvt", 1)
    ops["mul_wide"] = OpSpec("wide", 2)
    ops["phi"] = OpSpec("free", None)
    ops["param"] = OpSpec("free", 0)
    ops["sreg"] = OpSpec("free", 0)
    ops["addr_of"] = OpSpec("free", 0)
    ops["load"] = OpSpec("free", 1)
    ops["vload"] = OpSpec("free", 1)
    ops["extract"] = OpSpec("free", 1)
    ops["store"] = OpSpec("free", 2, effects=True)
    ops["vstore"] = OpSpec("free", None, effects=True)
    ops["atom"] = OpSpec("free", None, effects=True)
    # memory-ordered accesses (attrs sem, scope, space; PTX ld.{relaxed,acquire}.<scope>,
    # st.{relaxed,release}.<scope>): never cached, merged, moved or removed, as an atomic
    ops["ordered_load"] = OpSpec("free", 1, effects=True)     # address -> T
    ops["ordered_store"] = OpSpec("free", 2, effects=True)    # address, T -> none
    ops["shfl"] = OpSpec("free", None, effects=True)   # value, lane[, member mask[, clamp]]
    ops["vote"] = OpSpec("free", None, effects=True)   # predicate[, member mask]
    # a warp's reduction of a 32-bit integer (attrs op: add, min, max; PTX redux.sync), the
    # same in every member lane: value[, member mask]
    ops["redux"] = OpSpec("free", None, effects=True)
    # u32 <- the member lanes whose value (u32 or u64 bits) equals this lane's (attrs mode any),
    # or all of them if all are equal, else 0 (mode all): value[, member mask]
    ops["match"] = OpSpec("free", None, effects=True)
    ops["nanosleep"] = OpSpec("free", 1, effects=True)    # u32 nanoseconds: nanosleep.u32
    # bool <- true in one member lane of those running it, the lowest ([member mask]; PTX
    # elect.sync, sm_90)
    ops["elect"] = OpSpec("free", None, effects=True)
    # c + the dot product of the bytes of words a and b (each i32: signed bytes, u32: unsigned):
    # (a, b, c) -> the type of c, i32 or u32 (PTX dp4a)
    ops["dp4a"] = OpSpec("free", 3)
    # a warp's tensor-core product (PTX mma.sync; attrs shape, ab, and b where m16n8k32 has
    # 8-bit ints): A's, B's, C's elements; its four f32 (i32) results are taken by `extract`
    ops["mma"] = OpSpec("free", None, effects=True)
    ops["tf32"] = OpSpec("free", 1)    # u32 <- f32: rounded to tf32 (cvt.rna.tf32.f32), its bits
    # u8 <- f32 and f32 <- u8 (attrs format e4m3 or e5m2): an fp8 byte and its value
    ops["to_fp8"] = OpSpec("free", 1)
    ops["from_fp8"] = OpSpec("free", 1)
    # an asynchronous copy of attrs bytes (4, 8 or 16) from global to shared memory (PTX
    # cp.async): the shared address, the global address[, u32: the bytes to read, the rest
    # of the destination filled with zeros]
    ops["cp_async"] = OpSpec("free", None, effects=True)
    ops["cp_async_commit"] = OpSpec("free", 0, effects=True)   # cp.async.commit_group
    ops["cp_async_wait"] = OpSpec("free", 0, effects=True)     # [attrs n]: cp.async.wait_group n,
    #                                                            without n cp.async.wait_all
    # a warp's load of attrs count (1, 2, 4) 8x8 matrices of 16-bit elements (8x4 of 32-bit
    # ones) from shared memory (PTX ldmatrix; attrs trans, space): the row this lane points
    # at; the lane's elements are taken by `extract`
    ops["ldmatrix"] = OpSpec("free", 1, effects=True)
    # a warpgroup's tensor-core product (PTX wgmma.mma_async; attrs n, ab, trans_a, trans_b,
    # a_regs): the n / 2 f32 accumulators (i32 for ab s8, u8), A's u64 descriptor (with
    # a_regs, the thread's A fragment: 8 f16/bf16 values, or 4 u32 from `tf32`), B's u64
    # descriptor, bool: add the accumulators; its n / 2 results are taken by `extract`
    ops["wgmma"] = OpSpec("free", None, effects=True)
    ops["wgmma_fence"] = OpSpec("free", 0, effects=True)     # wgmma.fence
    ops["wgmma_commit"] = OpSpec("free", 0, effects=True)    # wgmma.commit_group
    ops["wgmma_wait"] = OpSpec("free", 0, effects=True)      # attrs n: wgmma.wait_group n
    ops["fence_proxy_async"] = OpSpec("free", 0, effects=True)   # fence.proxy.async.shared::cta
    ops["fence_mbarrier_init"] = OpSpec("free", 0, effects=True)  # fence.mbarrier_init.release.cluster
    # setmaxnreg.{attrs action: inc, dec}: the warpgroup's registers per thread set to attrs n
    ops["setmaxnreg"] = OpSpec("free", 0, effects=True)
    # Hopper's mbarrier (attrs space shared): `mbarrier_init` of the barrier's address to a u32
    # arrival count; `mbarrier_arrive` at it[, u32: the transaction bytes it expects first
    # (expect_tx)]; bool <- `mbarrier_test` of it and a u32 parity: whether that phase has
    # completed (attrs try: try_wait, which may suspend a while, else test_wait)
    ops["mbarrier_init"] = OpSpec("free", 2, effects=True)
    ops["mbarrier_arrive"] = OpSpec("free", None, effects=True)
    ops["mbarrier_test"] = OpSpec("free", 2, effects=True)
    # a bulk copy of attrs bytes (a multiple of 16; PTX cp.async.bulk) to the address of attrs
    # space: the destination, the source[, the mbarrier its bytes complete on: global to
    # shared]; without it shared to global, in the thread's bulk group
    ops["cp_async_bulk"] = OpSpec("free", None, effects=True)
    ops["cp_async_bulk_commit"] = OpSpec("free", 0, effects=True)   # cp.async.bulk.commit_group
    ops["cp_async_bulk_wait"] = OpSpec("free", 0, effects=True)     # attrs n, read: wait_group
    # the generic address of tensor map parameter attrs name (a CUtensorMap the launch encodes)
    ops["tensor_map"] = OpSpec("free", 0)
    # a tensor copy (PTX cp.async.bulk.tensor) of a box at i32 coordinates (array order) through
    # a tensor map: `tma_load` of [shared destination, map, coordinates..., mbarrier] (attrs
    # bytes: the box's, space shared), `tma_store` of [map, coordinates..., shared source]
    # (attrs space global), in the thread's bulk group
    ops["tma_load"] = OpSpec("free", None, effects=True)
    ops["tma_store"] = OpSpec("free", None, effects=True)
    # bar.sync; with attrs reduce (popc, and, or) and a bool: bar.red, its i32 count or bool
    ops["barrier"] = OpSpec("free", None, effects=True)
    # the thread-block cluster's barrier, attrs phase arrive (barrier.cluster.arrive: this
    # thread has arrived) or wait (barrier.cluster.wait: for every thread of the cluster to)
    ops["cluster_barrier"] = OpSpec("free", 0, effects=True)
    # the address in the cluster's shared window (space shared::cluster) of a shared address
    # of this block, in the block of the cluster of u32 rank (PTX mapa.shared::cluster)
    ops["mapa"] = OpSpec("free", 2)
    # scope=cta|gpu|sys: membar.<scope>; with sem=acq_rel (scope also cluster):
    # fence.acq_rel.<scope>
    ops["fence"] = OpSpec("free", 0, effects=True)
    ops["warpsync"] = OpSpec("free", None, effects=True)   # [member mask]: bar.warp.sync
    ops["activemask"] = OpSpec("free", 0, effects=True)   # the lanes running it together
    ops["printf"] = OpSpec("free", None, effects=True)
    ops["br"] = OpSpec("free", 0, effects=True)
    ops["cbr"] = OpSpec("free", 1, effects=True)
    ops["ret"] = OpSpec("free", 0, effects=True)
    ops["trap"] = OpSpec("free", 0, effects=True)
    return ops


OPS: dict[str, OpSpec] = _ops()
EFFECT_OPS = frozenset(name for name, spec in OPS.items() if spec.effects)
TERMINATORS = frozenset({"br", "cbr", "ret", "trap"})
CMP_PREDICATES = frozenset({"eq", "ne", "lt", "le", "gt", "ge"})
#: the scopes of a memory-ordered access, an ordered atomic or an acq_rel fence
MEMORY_SCOPES = ("cta", "cluster", "gpu", "sys")
#: the orders (PTX .sem) of `ordered_load`, `ordered_store` and `atom`
LOAD_SEMS, STORE_SEMS = ("relaxed", "acquire"), ("relaxed", "release")
ATOMIC_SEMS = ("relaxed", "acquire", "release", "acq_rel")
#: the lanes of the warp below, at or below, at, at or above, above this thread's (`%lanemask_lt` ...)
LANE_MASKS = frozenset({"lanemask_lt", "lanemask_le", "lanemask_eq", "lanemask_ge", "lanemask_gt"})
#: the thread-block cluster's special registers (sm_90)
CLUSTER_REGISTERS = frozenset(
    f"{reg}.{axis}" for reg in ("clusterid", "cluster_ctaid", "cluster_nctaid") for axis in "xyz"
) | {"cluster_ctarank", "cluster_nctarank"}
SPECIAL_REGISTERS = frozenset(
    f"{reg}.{axis}" for reg in ("tid", "ntid", "ctaid", "nctaid") for axis in "xyz"
) | {"laneid"} | CLUSTER_REGISTERS | LANE_MASKS
ADDR_TYPE = i64   # addresses are 64-bit integers in every state space


# --- printing --------------------------------------------------------------------------------
def format_value(value: Value) -> str:
    return repr(value)


def format_instr(instr: Instr) -> str:
    attrs = "".join(f" {k}={_attr_text(v)}" for k, v in sorted(instr.attrs.items()))
    if instr.is_phi:
        args = ", ".join(f"[{p.name}: {format_value(a)}]"
                         for p, a in zip(instr.block.preds if instr.block else [], instr.args))
    else:
        args = ", ".join(format_value(a) for a in instr.args)
    targets = ", ".join(b.name for b in instr.targets)
    body = " ".join(x for x in (instr.op + attrs, args, ("-> " + targets) if targets else "") if x)
    if instr.type is None:
        return body
    return f"{instr!r}:{instr.type} = {body}"


def _attr_text(value) -> str:
    return value if isinstance(value, str) else repr(value)


def format_function(func: Function) -> str:
    params = ", ".join(f"{p.name}: {_param_text(p)}" for p in func.params)
    lines = [f"func {func.name}({params}) {{"]
    for decl in func.arrays:
        init = f" = {{{', '.join(map(repr, decl.values))}}}" if decl.space == "const" else ""
        extent = ", ".join(map(describe, decl.launch[2])) if decl.launch else decl.count
        lines.append(f"  .{decl.space} {decl.name}: {decl.elem}[{extent}] align {decl.align}{init}")
    for block in func.blocks:
        preds = ", ".join(p.name for p in block.preds)
        lines.append(f"{block.name}:" + (f"    ; preds {preds}" if preds else ""))
        last_line = None
        for instr in block.all_instrs():
            text = "  " + format_instr(instr)
            if instr.loc and instr.loc[0] != last_line:
                last_line = instr.loc[0]
                text = text.ljust(48) + f" ; line {last_line}"
            lines.append(text)
    lines.append("}")
    return "\n".join(lines)


def _param_text(spec) -> str:
    if spec.kind == "array":
        return f"Array[{spec.dtype}, {spec.rank}]"
    if spec.by_ref and spec.carrier is not None:
        return f"{spec.dtype} (by ref, held as {spec.carrier})"
    return f"{spec.dtype}" + (" (by ref)" if spec.by_ref else "")


# --- editing helpers -------------------------------------------------------------------------
def replace_uses(func: Function, old: Value, new: Value) -> None:
    """Make every use of `old` a use of `new`."""
    for instr in func.instrs():
        instr.args = [new if a is old else a for a in instr.args]


def remove_instr(instr: Instr) -> None:
    block = instr.block
    group = block.phis if instr.is_phi else block.instrs
    if group and group[-1] is instr:    # a terminator: no search through a long block
        group.pop()
    else:
        group.remove(instr)
    instr.block = None


def users(func: Function) -> dict[Instr, list[Instr]]:
    """Map each instruction to the instructions that use it (one entry per use)."""
    uses: dict[Instr, list[Instr]] = {}
    for block in func.blocks:
        for group in (block.phis, block.instrs):
            for instr in group:
                for arg in instr.args:
                    if arg.__class__ is Instr:
                        found = uses.get(arg)
                        if found is None:
                            uses[arg] = [instr]
                        else:
                            found.append(instr)
    return uses


def pass_users(func: Function) -> dict[Instr, list[Instr]]:
    """`users(func)` for a pass to take before it changes anything: while `passes.optimize`
    runs, the map an earlier pass took at the same `edits` count is handed on (that pass
    changed nothing, so the map is still exact; a pass keeps the map it edits up to date)."""
    return cached_analysis(func, "users", users)


def cached_analysis(func: Function, name: str, compute):
    """`compute(func)`; while `passes.optimize` runs, the value an earlier call computed at the
    same `func.edits` count (`Function.analyses[name]`), as no pass has changed `func` since."""
    cache = func.analyses
    if cache is None:
        return compute(func)
    found = cache.get(name)
    if found is not None and found[0] == func.edits:
        return found[1]
    value = compute(func)
    cache[name] = (func.edits, value)
    return value


def set_targets(term: Instr, targets: list[Block]) -> None:
    """Point `term` at new targets, keeping pred lists (and so phi arity) consistent."""
    src = term.block
    for old in term.targets:
        if old not in targets:
            _drop_pred(old, src)
    for new in targets:
        if src not in new.preds:
            add_pred(new, src)
    term.targets = list(targets)


def add_pred(block: Block, pred: Block, phi_args: dict | None = None) -> None:
    """Append `pred` to `block.preds`; each phi gets `phi_args[phi]` (or Undef) for it."""
    block.preds.append(pred)
    for phi in block.phis:
        phi.args.append((phi_args or {}).get(phi, Undef(phi.type)))


def _drop_pred(block: Block, pred: Block) -> None:
    k = block.preds.index(pred)
    del block.preds[k]
    for phi in block.phis:
        del phi.args[k]


def scalar(name: str) -> Scalar:
    return SCALARS[name]


__all__ = [
    "Value", "Const", "Undef", "Instr", "Block", "Function", "SharedDecl", "OpSpec", "OPS",
    "EFFECT_OPS", "TERMINATORS", "CMP_PREDICATES", "MEMORY_SCOPES", "LOAD_SEMS", "STORE_SEMS",
    "ATOMIC_SEMS", "SPECIAL_REGISTERS", "CLUSTER_REGISTERS", "ADDR_TYPE", "format_function",
    "format_instr", "replace_uses", "remove_instr", "users", "pass_users", "set_targets", "add_pred",
    "bool_", "i32", "u32", "i64",
]
