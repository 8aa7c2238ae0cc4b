"""Machine code: PTX instructions on virtual registers, grouped in blocks.

Instruction selection produces it in SSA form (phis kept per block), out-of-SSA replaces the
phis with copies, register allocation gives every virtual register a number, and emission
prints it. Registers belong to the PTX register classes of docs/ptx-dialect.md.
"""
from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field

#: register class -> type in its `.reg` declaration, in declaration order
REG_DECL = {"p": ".pred", "rs": ".b16", "h": ".b16", "hb": ".b16", "r": ".b32",
            "rd": ".b64", "f": ".f32", "fd": ".f64"}


def ascii_text(text: str) -> str:
    """`text` with control characters but tab and non-ASCII characters escaped (`\\x0a`,
    `\\xe9`, `\\u2713`): ptxas rejects other bytes, even in comments."""
    escaped = text.encode("ascii", "backslashreplace").decode("ascii")
    return re.sub(r"[\x00-\x08\x0a-\x1f\x7f]", lambda m: f"\\x{ord(m.group()):02x}", escaped)


#: `VReg.id`s, counting up over the process (a module-level counter, not a class attribute:
#: writing one of VReg's at every new register would undo the interpreter's attribute caches)
_VREG_IDS = itertools.count(1)


class VReg:
    __slots__ = ("cls", "id", "number")

    def __init__(self, cls: str):
        assert cls in REG_DECL, cls
        self.cls = cls
        self.id = next(_VREG_IDS)
        self.number: int | None = None   # set by the register allocator

    def __repr__(self) -> str:
        return f"%{self.cls}{self.number}" if self.number is not None else f"%{self.cls}v{self.id}"


class Imm:
    """An immediate operand, as printed (compares and hashes by its text; never changed)."""

    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text

    def __eq__(self, other):
        if other.__class__ is not Imm:
            return NotImplemented
        return self.text == other.text

    def __hash__(self) -> int:
        return hash((self.text,))

    def __repr__(self) -> str:
        return self.text


@dataclass(slots=True)
class Addr:
    """`[base+offset]`: base a 64-bit register or a variable's name."""
    base: object
    offset: int = 0

    def __repr__(self) -> str:
        if self.offset:
            return f"[{self.base!r}+{self.offset}]"   # a negative offset is spelled +-N
        return f"[{self.base!r}]"


@dataclass(slots=True)
class Vec:
    items: list

    def __repr__(self) -> str:
        return "{" + ", ".join(repr(x) for x in self.items) + "}"


@dataclass(slots=True)
class TensorAddr:
    """`[tmap, {c0, c1}]`: a tensor map's address and a box's coordinates (innermost first)."""
    base: object
    coords: list

    def __repr__(self) -> str:
        return f"[{self.base!r}, {Vec(self.coords)!r}]"


class Sym:
    """A name used as an operand: a special register (`%tid.x`) or a variable (`smem_s`);
    compares and hashes by its name, never changed."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __eq__(self, other):
        if other.__class__ is not Sym:
            return NotImplemented
        return self.name == other.name

    def __hash__(self) -> int:
        return hash((self.name,))

    def __repr__(self) -> str:
        return self.name


def operand_regs(op) -> list[VReg]:
    if isinstance(op, VReg):
        return [op]
    if isinstance(op, Addr):
        return [op.base] if isinstance(op.base, VReg) else []
    if isinstance(op, Vec):
        return [x for x in op.items if isinstance(x, VReg)]
    if isinstance(op, TensorAddr):
        return [x for x in (op.base, *op.coords) if isinstance(x, VReg)]
    return []


@dataclass(eq=False, slots=True)
class MInstr:
    opcode: str                      # e.g. 'add.s32', 'ld.global.nc.f32'
    dsts: list                       # VRegs written
    srcs: list                       # VReg | Imm | Addr | Vec | Sym
    loc: tuple | None = None
    vec_dst: bool = False            # print dsts as one `{a, b, ...}` operand
    guard: tuple | None = None       # (pred VReg, negated)
    phi_copy: bool = False           # a copy out-of-SSA made for a phi
    raw: bool = False                # `opcode` is a whole line of text (`{`, `.param ...;`, `call ...;`)
    reads_dsts: bool = False         # the dsts are read too (wgmma's accumulators: C in, D out)
    paired_dst: bool = False         # print the two dsts as one `d|p` operand (elect.sync)

    @property
    def uses(self) -> list[VReg]:
        regs = list(self.dsts) if self.reads_dsts else []
        for op in self.srcs:
            if op.__class__ is VReg:
                regs.append(op)
            elif op.__class__ is not Imm:
                regs.extend(operand_regs(op))
        if self.guard:
            regs.append(self.guard[0])
        return regs

    @property
    def is_copy(self) -> bool:
        """A register-to-register move within one class: the allocator may coalesce it."""
        return (self.opcode.startswith("mov.") and len(self.dsts) == 1 and len(self.srcs) == 1
                and isinstance(self.srcs[0], VReg) and self.srcs[0].cls == self.dsts[0].cls
                and not self.guard and not self.vec_dst)

    def text(self) -> str:
        if self.raw:
            return self.opcode
        dsts = [Vec(self.dsts)] if self.vec_dst else self.dsts
        ops = ", ".join(map(repr, [*dsts, *self.srcs]))
        if self.paired_dst:
            ops = "|".join(map(repr, self.dsts)) + "".join(f", {op!r}" for op in self.srcs)
        guard = ""
        if self.guard:
            guard = ("@!" if self.guard[1] else "@") + repr(self.guard[0]) + " "
        return f"{guard}{self.opcode}" + (f" {ops};" if ops else ";")


@dataclass(eq=False, slots=True)
class Phi:
    dst: VReg
    args: list        # one operand per pred (VReg | Imm | None for undef)
    loc: tuple | None = None


@dataclass(eq=False, slots=True)
class Terminator:
    kind: str                         # 'br' | 'cbr' | 'ret' | 'trap'
    targets: list = field(default_factory=list)   # MBlocks: [dest] or [then, else]
    cond: VReg | None = None          # cbr: branch to targets[0] when cond holds
    loc: tuple | None = None

    @property
    def uses(self) -> list[VReg]:
        return [self.cond] if self.cond is not None else []


@dataclass(eq=False, slots=True)
class MBlock:
    name: str
    instrs: list = field(default_factory=list)
    phis: list = field(default_factory=list)
    preds: list = field(default_factory=list)
    term: Terminator | None = None

    @property
    def succs(self) -> list:
        return list(self.term.targets) if self.term else []

    def __repr__(self) -> str:
        return self.name


@dataclass
class MFunction:
    name: str
    blocks: list                # entry first; emission order after layout
    ptx_version: tuple          # (major, minor)
    target: str
    strings: object = None      # printf.StringTable: the format strings of its printfs
    printf_buffer: int = 0      # bytes of the per-thread `.local` buffer for printf arguments
