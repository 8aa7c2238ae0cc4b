"""Instruction selection: IR instructions -> PTX machine instructions on virtual registers.

The result keeps SSA form: each IR value gets one virtual register of its type's class and
phis stay per block (outssa.py replaces them). Folds done here: a 64-bit `add` of a constant
into the address of the loads/stores using it (`[%rd1+16]`), `addr_of` into `[smem_s+8]`, and
an integer `mul`/`mul_wide` used only by an `add` into `mad.lo`/`mad.wide`.

Addresses of `.shared` and `.local` memory are computed in 32 bits, as nvcc and Triton do
(`mov.u32 %r1, smem_s;` `mad.lo.u32 %r3, %r2, 4, %r1;` `ld.shared.f32 %f1, [%r3+12];`): the IR's
addresses are i64 in every space, but the i64 values that only ever become `.shared`/`.local`
addresses (`_plan_narrow`) get a 32-bit register instead. Their arithmetic (`add sub mul shl`,
`mul_wide` of 32-bit ints, sign/zero extension of 32-bit ints, phis) is done modulo 2^32, which
gives the low 32 bits of the 64-bit result, and a `.shared`/`.local` address is a 32-bit offset
in its window (PTX ISA, "Addresses as Operands": 32-bit address registers are zero-extended).
"""
from __future__ import annotations

from ptxpy.types import Scalar, bool_, f32

from .. import ir
from ..cfg import reverse_postorder
from . import convert, printf
from .errors import BackendError
from .machine import (Addr, Imm, MBlock, MFunction, MInstr, Phi, Sym, TensorAddr, Terminator, VReg,
                      Vec)
from .opaque import Opaque
from .ptxtypes import (arith, bits, half_bits, immediate, mem, reg_bits, reg_class, signed_arith)
from .target import Target, extern_shared_name, shared_layout

MOV_TYPE = {"p": "pred", "rs": "u16", "h": "b16", "hb": "b16", "r": "u32", "rd": "u64",
            "f": "f32", "fd": "f64"}
FULL_MASK = Imm("0xffffffff")
_MEMORY_OPS = ("load", "vload", "store", "vstore", "atom", "cp_async", "ldmatrix", "mbarrier_init",
               "mbarrier_arrive", "mbarrier_test", "cp_async_bulk", "tma_load", "ordered_load",
               "ordered_store")
#: state spaces whose addresses fit in 32 bits: their address arithmetic is done in 32 bits
NARROW_SPACES = ("shared", "local", "shared::cluster")
_U32_MASK = 0xFFFFFFFF
_INT_OPCODE = {"add": "add", "sub": "sub", "mul": "mul.lo", "div": "div", "rem": "rem",
               "min": "min", "max": "max", "mul_hi": "mul.hi"}
_BITWISE = ("and", "or", "xor")
_ROUNDING = {"floor": "rmi", "ceil": "rpi", "trunc": "rzi", "round": "rni"}
_APPROX_F32 = ("ex2", "lg2", "sin", "cos", "tanh")
_UNSIGNED_CMP = {"lt": "lo", "le": "ls", "gt": "hi", "ge": "hs", "eq": "eq", "ne": "ne"}


def _extends32(instr: ir.Instr) -> bool:
    """A `cvt` widening a 32-bit int: its low 32 bits are its operand."""
    return (instr.op == "cvt" and instr.args[0].type.is_int and instr.args[0].type.bits == 32
            and instr.type.is_int and not instr.attrs.get("mode"))


def _rounded_from_f32(value) -> bool:
    """Whether `value` is an f32 rounded to nearest into f16 or bf16 (one `cvt.rn`)."""
    return (value.__class__ is ir.Instr and value.op == "cvt" and value.type.name in ("f16", "bf16")
            and value.args[0].type == f32 and value.attrs.get("mode") in (None, "rn"))


BYTE_KINDS = ("s8", "u8", "e4m3", "e5m2")      # fragments of four bytes a register


def _per_word(kind: str) -> int:
    """Values per 32-bit register of an A fragment: one tf32, two f16/bf16, four bytes."""
    return 1 if kind == "tf32" else 4 if kind in BYTE_KINDS else 2


def _fragment_args(wgmma: ir.Instr) -> list:
    """The A fragment's values of a wgmma with A in registers (after its accumulators)."""
    return wgmma.args[wgmma.attrs["n"] // 2:-2]


def _one_loaded_word(values: list) -> bool:
    """Whether four 8-bit values are, in order, the bytes of one word of a 4-byte vload or of
    an 8-bit ldmatrix (its extracts 4w to 4w + 3)."""
    first = values[0]
    if first.__class__ is not ir.Instr or first.op != "extract":
        return False
    source, index = first.args[0], first.attrs["index"]
    if index % 4 or not (source.op == "ldmatrix" or (source.op == "vload"
                                                      and source.attrs.get("n") == 4)):
        return False
    return all(v.__class__ is ir.Instr and v.op == "extract" and v.args[0] is source
               and v.attrs["index"] == index + k for k, v in enumerate(values))


#: IR opcode -> the `ISel` method lowering it (looked up by name once)
_OP_HANDLERS: dict = {}


def _op_handler(instr: ir.Instr):
    handler = getattr(ISel, "op_" + instr.op, None)
    if handler is None:
        raise BackendError(f"the backend cannot lower `{ir.format_instr(instr)}`"
                           f" (opcode {instr.op!r})")
    _OP_HANDLERS[instr.op] = handler
    return handler


def select_instructions(func: ir.Function, target: Target) -> MFunction:
    return ISel(func, target).run()


def copy_instr(dst: VReg, src, loc=None) -> MInstr:
    """`dst <- src` for a register or immediate source (a predicate immediate is '1' or '0')."""
    if dst.cls == "p" and isinstance(src, Imm):
        return MInstr("setp.ne.u32", [dst], [src, Imm("0")], loc)
    return MInstr(f"mov.{MOV_TYPE[dst.cls]}", [dst], [src], loc)


def _check_written(blocks: list) -> None:
    """Every register read is written somewhere. An instruction left out (`ISel.skipped`)
    while something still reads its result would read whatever the register held: 0 in the
    simulator, anything on the card (session 23's first `_plan_branch_tests`)."""
    written = {phi.dst for block in blocks for phi in block.phis}
    written.update(dst for block in blocks for instr in block.instrs for dst in instr.dsts)
    for block in blocks:
        readers = [(instr.uses, instr) for instr in block.instrs]
        readers += [(phi.args, "a phi") for phi in block.phis]
        readers.append((block.term.uses if block.term else [], "a branch"))
        for regs, reader in readers:
            for reg in regs:
                if reg.__class__ is VReg and reg not in written:
                    text = reader if isinstance(reader, str) else f"`{reader.text()}`"
                    raise BackendError(f"{reg!r} is read by {text} in {block.name} but never written")


class ISel:
    def __init__(self, func: ir.Function, target: Target):
        self.func = func
        self.target = target
        self.vregs: dict[ir.Instr, VReg] = {}
        self.users = ir.users(func)
        self.instrs = func.instrs()
        reachable = set(reverse_postorder(func))
        self.order = [b for b in func.blocks if b in reachable]
        self.mblocks = {b: MBlock(b.name) for b in self.order}
        self.params = self._param_table()
        self.symbols = {decl.name: decl for decl in func.arrays}
        self.extern_offsets = shared_layout(func.arrays)
        self.extern_base = extern_shared_name(func.name)
        self.skipped: set[ir.Instr] = set()
        self.branch_tests: dict = {}   # cbr -> (the value it tests, whether its negation)
        self.tested_equal: set[ir.Instr] = set()     # integer `!=`s a branch tests as `==`
        self.emitted_equal: set[ir.Instr] = set()    # those emitted as `==` (only branches use them)
        self.mad_of: dict[ir.Instr, ir.Instr] = {}   # add -> the mul it absorbs
        self.narrow: set[ir.Instr] = set()           # i64 values computed in 32 bits only
        self.narrow_copy: set[ir.Instr] = set()      # i64 values also needed in 32 bits
        self.narrow_mad: dict[ir.Instr, ir.Instr] = {}   # narrow add -> mul_wide it recomputes
        self.opaque = Opaque()     # which values ptxas cannot know while compiling
        self.nregs: dict[ir.Instr, VReg] = {}        # the 32-bit registers of both
        self.block: MBlock | None = None
        self.loc = None
        self.strings = printf.StringTable()
        self.printf_buffer = 0          # bytes the largest printf's arguments take

    # --- driver -------------------------------------------------------------------------
    def run(self) -> MFunction:
        self._plan_folds()
        self._plan_branch_tests()
        self._plan_narrow()
        self._plan_accumulators()
        self._plan_paired_conversions()
        self._plan_fragment_packing()
        self._plan_byte_words()
        for block in self.order:
            self._lower_block(block)
        blocks = [self.mblocks[b] for b in self.order]
        _check_written(blocks)
        return MFunction(self.func.name, blocks, self.target.version, self.target.arch,
                         self.strings, self.printf_buffer)

    def _plan_accumulators(self) -> None:
        """A wgmma's result takes the register of its accumulator where the accumulator is read
        by this wgmma alone (the usual chain: phi -> wgmma -> wgmma ... -> phi): the
        instruction then updates its registers in place, with no `mov` before it, and the
        allocator has hundreds fewer registers to place (planned in program order, before any
        register is named, so each chain's link finds its input's register)."""
        for block in self.order:
            for instr in block.instrs:
                if instr.op != "wgmma":
                    continue
                results = {u.attrs["index"]: u for u in self.users.get(instr, [])}
                seen, repeated = set(), set()     # an accumulator given twice keeps its own
                for arg in instr.args:
                    (repeated if arg in seen else seen).add(arg)
                for k, value in enumerate(instr.args[:instr.attrs["n"] // 2]):
                    result = results.get(k)
                    if (result is not None and value.__class__ is ir.Instr
                            and result not in self.vregs and value not in repeated
                            and self.users.get(value) == [instr]):
                        self.vregs[result] = self.reg(value)

    def _plan_paired_conversions(self) -> None:
        """Two f32 values rounded to f16 (bf16) that make one 32-bit register of an mma's or a
        wgmma's fragment are converted together, by one `cvt.rn.f16x2.f32` (`_fragment_words`),
        where neither conversion has another use: those `cvt`s are not emitted (`skipped`)."""
        pairs = []                  # (lo, hi) of every fragment register of 16-bit floats
        for instr in self.instrs:
            if instr.op == "mma" and instr.attrs["ab"] in ("f16", "bf16"):
                values = instr.args[:12]
            elif instr.op == "wgmma" and instr.attrs.get("a_regs") and instr.attrs["ab"] in ("f16", "bf16"):
                values = _fragment_args(instr)
            else:
                continue
            pairs += [(values[k], values[k + 1]) for k in range(0, len(values), 2)]
        if not pairs:
            self.paired = frozenset()
            return
        uses = {}                   # a rounding -> its uses as a half of a fragment register
        for pair in pairs:
            for value in pair:
                uses[value] = uses.get(value, 0) + 1
        paired = {v for v in uses if _rounded_from_f32(v)
                  and len(self.users.get(v, [])) == uses[v]}
        while True:                 # a half pairs only with a half that pairs
            unpaired = {v for lo, hi in pairs for v in (lo, hi)
                        if v in paired and not (lo in paired and hi in paired)}
            if not unpaired:
                break
            paired -= unpaired
        self.paired = frozenset(paired)
        self.skipped |= paired

    def _plan_fragment_packing(self) -> None:
        """Each 32-bit register of a wgmma's A fragment (two f16/bf16 values, or a tf32) is
        written right after the later of its values is computed (after a block's phis, for a
        phi), not at the wgmma: so a batch whose fragments were computed before its
        `wgmma_fence()` writes no register between its products, where ptxas would fence again
        (its note C7519), and a loop's fragments carried from the last iteration are packed at
        its top. Of two values that both dominate the wgmma, the later in reverse postorder is
        dominated by the other."""
        self.pack_after: dict = {}     # instr, or block (after its phis) -> (wgmma, word)s
        self.packed: dict = {}         # (wgmma, word) -> its register, once written
        products = [i for i in self.instrs if i.op == "wgmma" and i.attrs.get("a_regs")]
        if not products:
            return
        position = {}
        for b, block in enumerate(self.order):
            position.update((phi, (b, -1)) for phi in block.phis)
            position.update((instr, (b, i)) for i, instr in enumerate(block.instrs))
        for instr in products:
            values = _fragment_args(instr)
            size = _per_word(instr.attrs["ab"])
            for word in range(len(values) // size):
                parts = [v.args[0] if v in self.paired else v       # (not emitted: its source)
                         for v in values[word * size:word * size + size]]
                parts = [v for v in parts if v in position]
                if not parts:
                    continue
                anchor = max(parts, key=position.get)
                if anchor.is_phi:
                    anchor = self.order[position[anchor][0]]
                self.pack_after.setdefault(anchor, []).append((instr, word))

    def _pack_fragments(self, anchor) -> None:
        for wgmma, word in self.pack_after.get(anchor, []):
            size = _per_word(wgmma.attrs["ab"])
            values = _fragment_args(wgmma)[word * size:word * size + size]
            (self.packed[wgmma, word],) = self._fragment_words(values, wgmma.attrs["ab"])

    def _plan_byte_words(self) -> None:
        """A 32-bit register of an 8-bit fragment (an mma's A or B, a wgmma's A in registers)
        whose four bytes are, in order, one loaded word (the extracts of a 4-byte vload, or of
        one register of an 8-bit ldmatrix) takes that word as loaded, where those extracts
        have no other use: the vload is one `ld.b32` (`word_loads`), the ldmatrix's word is
        not split, the extracts are not emitted (`skipped`), and `_fragment_words` finds the
        word in `words`."""
        self.words: dict = {}          # (vload or ldmatrix, word) -> its 32-bit register
        self.word_loads: set = set()
        groups = []                    # every 8-bit fragment register's four values
        for instr in self.instrs:
            if instr.op == "mma" and instr.attrs["shape"] == "m16n8k32":
                groups += [instr.args[k:k + 4] for k in range(0, 24, 4)]
            elif instr.op == "wgmma" and instr.attrs.get("a_regs") and instr.attrs["ab"] in BYTE_KINDS:
                values = _fragment_args(instr)
                groups += [values[k:k + 4] for k in range(0, 16, 4)]
        if not groups:
            return
        whole = [g for g in groups if _one_loaded_word(g)]
        while True:                    # a byte's every use is in a group that is a whole word
            uses = {}
            for group in whole:
                for value in group:
                    uses[value] = uses.get(value, 0) + 1
            kept = [g for g in whole if all(len(self.users[v]) == uses[v] for v in g)]
            if len(kept) == len(whole):
                break
            whole = kept
        vloads = {}                    # a vload -> its whole-word groups
        for group in whole:
            source = group[0].args[0]
            if source.op == "vload":
                vloads.setdefault(source, []).append(group)
            else:
                self.skipped.update(group)
        for vload, its_groups in vloads.items():   # a vload loads as a word if all of it is one
            if len(self.users[vload]) == 4:
                self.word_loads.add(vload)
                self.skipped.update(its_groups[0])

    def _lower_block(self, block: ir.Block) -> None:
        mblock = self.block = self.mblocks[block]
        live_preds = [k for k, p in enumerate(block.preds) if p in self.mblocks]
        mblock.preds = [self.mblocks[block.preds[k]] for k in live_preds]
        for phi in block.phis:
            if phi in self.narrow:
                args = [None if isinstance(phi.args[k], ir.Undef) else self.nsrc(phi.args[k])
                        for k in live_preds]
                mblock.phis.append(Phi(self.nsrc(phi), args, phi.loc))
                continue
            args = [self._phi_arg(phi.args[k]) for k in live_preds]
            mblock.phis.append(Phi(self.reg(phi), args, phi.loc))
        for phi in block.phis:
            if phi in self.narrow_copy:
                self.loc = phi.loc
                self._narrow_copy(phi)
        self._pack_fragments(block)
        for instr in block.instrs:
            self.loc = instr.loc
            if instr in self.skipped:
                continue
            if instr in self.narrow:
                self._narrow_op(instr)
                continue
            handler = _OP_HANDLERS.get(instr.op) or _op_handler(instr)
            handler(self, instr)
            if instr in self.narrow_copy:
                self._narrow_copy(instr)
            if instr in self.pack_after:
                self._pack_fragments(instr)

    def _phi_arg(self, value):
        if isinstance(value, ir.Undef):
            return None
        if isinstance(value, ir.Const):
            return self.const_imm(value.type, value.value)
        return self.reg(value)

    # --- registers, operands, emission --------------------------------------------------
    def reg(self, instr: ir.Instr) -> VReg:
        vreg = self.vregs.get(instr)
        if vreg is None:
            vreg = self.vregs[instr] = VReg(reg_class(instr.type))
        return vreg

    def new(self, t_or_cls) -> VReg:
        return VReg(t_or_cls if isinstance(t_or_cls, str) else reg_class(t_or_cls))

    def emit(self, opcode: str, dsts, srcs, **kw) -> MInstr:
        instr = MInstr(opcode, list(dsts), list(srcs), self.loc, **kw)
        self.block.instrs.append(instr)
        return instr

    def const_imm(self, t: Scalar, value) -> Imm:
        """An immediate a `mov` (or, for bool, `setp`) of class t accepts."""
        if t.is_bool:
            return Imm("1" if value else "0")
        if t.name in ("f16", "bf16"):
            return Imm(f"0x{half_bits(t, value):04X}")
        return Imm(immediate(t, value))

    def src(self, value: ir.Value, imm: bool = True):
        """The operand for `value`: its register, or an immediate where PTX takes one."""
        if isinstance(value, ir.Instr):
            return self.reg(value)
        const = value.value if isinstance(value, ir.Const) else 0   # undef: any value will do
        if imm:
            text = immediate(value.type, const)
            if text is not None:
                return Imm(text)
        return self.materialise(value.type, const)

    def materialise(self, t: Scalar, value) -> VReg:
        dst = self.new(t)
        self.block.instrs.append(copy_instr(dst, self.const_imm(t, value), self.loc))
        return dst

    def srcs(self, instr: ir.Instr, imm: bool = True) -> list:
        return [self.src(a, imm) for a in instr.args]

    # --- fold planning ------------------------------------------------------------------
    def _plan_folds(self) -> None:
        for instr in self.instrs:
            if self._is_addr_part(instr) and self._only_in_addresses(instr):
                self.skipped.add(instr)
        fused_wide: dict = {}     # (index, scale) -> the block of its first mad.wide
        for instr in self.instrs:
            if instr.op == "add" and instr not in self.skipped and instr.type.is_int:
                mul = self._mad_candidate(instr)
                if mul is not None and mul.op == "mul_wide" and self._repeated_wide(mul, fused_wide):
                    continue
                if mul is not None:
                    self.mad_of[instr] = mul
                    self.skipped.add(mul)

    def _plan_branch_tests(self) -> None:
        """A branch on `not c` branches on `c` to the other target; a branch on an integer
        `x != y` tests `x == y` (a `setp.eq` of its own) to the other target. Where the test of
        a `setp.ne` was false, ptxas took x for y and dropped the inversion of `~x` in a LOP3:
        `if i != 0: ... else: ~i & 3` gave 0, `not (i != 5)`: `~i & 3` gave 1 (H100, program 98
        of seed 3708, known_index_probe.py); after `setp.eq` it was right. The `not`s that only
        branches use are not emitted, and a `!=` that only branches use is emitted as `==`."""
        through = set()      # the `not`s and `!=`s some branch looks through
        for instr in self.instrs:
            if instr.op != "cbr":
                continue
            cond, negated = instr.args[0], False
            while cond.__class__ is ir.Instr and cond.op == "not" and cond.type.is_bool:
                through.add(cond)
                cond, negated = cond.args[0], not negated
            if (cond.__class__ is ir.Instr and cond.op == "cmp" and cond.attrs["pred"] == "ne"
                    and cond.args[0].type.is_int):
                self.tested_equal.add(cond)
                through.add(cond)
                negated = not negated
            self.branch_tests[instr] = (cond, negated)
        left_out, changed = set(through), True   # those only branches (and each other) use
        while changed:
            changed = False
            for value in list(left_out):
                if not all(u.op == "cbr" or u in left_out for u in self.users.get(value, [])):
                    left_out.discard(value)
                    changed = True
        self.skipped |= {value for value in left_out if value.op == "not"}
        self.emitted_equal = self.tested_equal & left_out   # one `setp.eq` for every branch

    @staticmethod
    def _repeated_wide(mul: ir.Instr, fused_wide: dict) -> bool:
        """Whether `mul` repeats, in another block, the product of an earlier `mad.wide` (cse
        computes an index's address again after a barrier). ptxas merges two such `mad.wide`s
        into one 64-bit product kept live in two registers from the first to the second; a
        `mul.wide` + `add.s64` it instead forms again from the 32-bit index where it is used
        (`scan_tiles`: 23 registers on sm_80 against 22)."""
        index, scale = mul.args
        key = (index, scale.value if isinstance(scale, ir.Const) else scale)
        first = fused_wide.setdefault(key, mul.block)
        return first is not mul.block

    def _is_addr_part(self, instr: ir.Instr) -> bool:
        if instr.op == "addr_of":
            return True
        return (instr.op == "add" and instr.type.bits == 64
                and sum(isinstance(a, ir.Const) for a in instr.args) == 1)

    def _only_in_addresses(self, instr: ir.Instr) -> bool:
        users = self.users.get(instr, [])
        for user in users:
            in_addr = user.op in _MEMORY_OPS and user.args[0] is instr and instr not in user.args[1:]
            chained = (user.op == "add" and self._is_addr_part(user)
                       and self._only_in_addresses(user))
            if not (in_addr or chained):
                return False
        return bool(users)

    def _mad_candidate(self, add: ir.Instr) -> ir.Instr | None:
        if add.type.bits < 32:    # 8- and 16-bit arithmetic is done in 32 bits (in_32_bits)
            return None
        for arg in add.args:
            if (isinstance(arg, ir.Instr) and arg.op in ("mul", "mul_wide") and arg.block is add.block
                    and self.users.get(arg) == [add] and arg not in self.skipped
                    and (arg.op == "mul_wide" or arg.type == add.type)):
                if arg.op == "mul_wide" and arg.args[0].type.bits != 32 and arg.args[0].type.bits != 16:
                    return None
                if add.args[0] is arg and add.args[1] is arg:
                    return None
                return arg
        return None

    # --- 32-bit addresses for .shared and .local ---------------------------------------------
    def _plan_narrow(self) -> None:
        """Find the i64 values to compute in 32 bits: the largest set whose every use is the
        address of a `.shared`/`.local` access or an operand of another such value where only
        its low 32 bits matter (add, sub, mul, the shifted value of shl, a phi)."""
        narrow = {i for i in self.instrs if self._narrowable(i)}
        changed = True
        while changed:
            changed = False
            for instr in list(narrow):
                users = self.users.get(instr)
                if not users or not all(self._narrow_use(instr, u, narrow) for u in users):
                    narrow.discard(instr)
                    changed = True
        self.narrow = narrow
        for instr in narrow:
            if instr.op == "add" and instr not in self.mad_of and instr not in self.skipped:
                for arg in instr.args:   # a shared `mul_wide` is recomputed as a 32-bit mad
                    if isinstance(arg, ir.Instr) and arg.op == "mul_wide" and arg not in narrow \
                            and not (instr.args[0] is arg and instr.args[1] is arg):
                        self.narrow_mad[instr] = arg
                        break
            for arg in self._narrow_operands(instr):
                if (isinstance(arg, ir.Instr) and arg not in narrow
                        and self.narrow_mad.get(instr) is not arg):
                    self.narrow_copy.add(arg)

    def _narrowable(self, instr: ir.Instr) -> bool:
        t, op = instr.type, instr.op
        if t is None or not t.is_int or t.bits != 64:
            return False
        if op in ("add", "sub", "mul", "shl", "phi"):
            return True
        if op == "mul_wide":
            return instr.args[0].type.bits == 32
        if op == "mapa":
            return True
        if op == "cvt":
            return _extends32(instr)
        if op == "addr_of":
            decl = self.symbols.get(instr.attrs.get("symbol"))
            return decl is not None and decl.space in NARROW_SPACES
        return False

    def _narrow_use(self, value: ir.Instr, user: ir.Instr, narrow: set) -> bool:
        if user.op in _MEMORY_OPS:
            return (user.attrs.get("space", "global") in NARROW_SPACES and user.args[0] is value
                    and value not in user.args[1:])
        return user in narrow and value in self._narrow_operands(user)

    @staticmethod
    def _narrow_operands(instr: ir.Instr) -> list:
        """The operands of a narrow value whose low 32 bits it needs (not a shift amount,
        nor the 32-bit operands of mul_wide and cvt)."""
        if instr.op == "shl":
            return [instr.args[0]] if instr.args[1] is not instr.args[0] else []
        if instr.op in ("add", "sub", "mul", "phi"):
            return list(instr.args)
        if instr.op == "mapa":
            return [instr.args[0]]
        return []

    def nsrc(self, value: ir.Value):
        """The 32-bit operand holding the low half of the i64 `value`."""
        if isinstance(value, ir.Const):
            low = int(value.value) & _U32_MASK
            return Imm(str(low - (1 << 32) if low >> 31 else low))   # -8, not 4294967288
        if isinstance(value, ir.Undef):
            return Imm("0")
        if _extends32(value) and (value in self.narrow or value in self.narrow_copy):
            return self.src(value.args[0])   # the extended 32-bit value: its own register
        reg = self.nregs.get(value)
        if reg is None:
            reg = self.nregs[value] = VReg("r")
        return reg

    def _narrow_op(self, instr: ir.Instr) -> None:
        op = instr.op
        if op == "cvt":
            return
        dst = self.nsrc(instr)
        if op == "addr_of":
            self.emit("mov.u32", [dst], [self._symbol_address(instr)])
        elif op == "mapa":
            self.target.require((7, 8), 90, "mapa")
            self.emit("mapa.shared::cluster.u32", [dst],
                      [self.nsrc(instr.args[0]), self.src(instr.args[1])])
        elif op == "mul_wide":
            self._mul32(dst, *self.srcs(instr))
        elif op == "shl":
            value = self.nsrc(instr.args[0])
            if self._shift_in_range(dst, "shl.b32", value, instr.args[1], 32):
                self.emit("shl.b32", [dst], [value, self.src(instr.args[1])])
        elif op == "add" and (instr in self.mad_of or instr in self.narrow_mad):
            mul = self.mad_of.get(instr) or self.narrow_mad[instr]
            other = instr.args[1] if instr.args[0] is mul else instr.args[0]
            a, b = self.srcs(mul) if mul.op == "mul_wide" else [self.nsrc(x) for x in mul.args]
            self.emit("mad.lo.u32", [dst], self._one_imm([a, b]) + [self.nsrc(other)])
        else:
            opcode = {"add": "add.u32", "sub": "sub.u32", "mul": "mul.lo.u32"}[op]
            self.emit(opcode, [dst], self._one_imm([self.nsrc(a) for a in instr.args]))

    def _narrow_copy(self, instr: ir.Instr) -> None:
        """The low half of an i64 value that is also used in 64 bits."""
        if _extends32(instr):
            return       # nsrc gives the 32-bit source itself
        if instr.op == "mul_wide" and instr.args[0].type.bits == 32:
            self._mul32(self.nsrc(instr), *self.srcs(instr))
        else:
            self.emit("cvt.u32.u64", [self.nsrc(instr)], [self.reg(instr)])

    def _mul32(self, dst: VReg, a, b) -> None:
        """dst = low 32 bits of a * b (a shift for a power of two)."""
        if isinstance(a, Imm) and not isinstance(b, Imm):
            a, b = b, a
        if isinstance(b, Imm) and not isinstance(a, Imm):
            factor = int(b.text, 0) & _U32_MASK
            if factor and factor & (factor - 1) == 0:
                self.emit("shl.b32", [dst], [a, Imm(str(factor.bit_length() - 1))])
                return
        self.emit("mul.lo.u32", [dst], self._one_imm([a, b]))

    def _one_imm(self, operands: list) -> list:
        """At most one immediate among the operands (the first is moved to a register)."""
        if sum(isinstance(x, Imm) for x in operands) > 1:
            reg = self.new("r")
            self.emit("mov.u32", [reg], [operands[0]])
            operands = [reg, *operands[1:]]
        return operands

    def address(self, value: ir.Value, space: str = "global") -> Addr:
        offset = 0
        while isinstance(value, ir.Instr) and value in self.skipped and value.op == "add":
            const, = (a for a in value.args if isinstance(a, ir.Const))
            offset += int(const.value)
            value = next(a for a in value.args if not isinstance(a, ir.Const))
        if isinstance(value, ir.Instr) and value.op == "addr_of":
            name = self._symbol(value)
            if name in self.extern_offsets:
                return Addr(Sym(self.extern_base), self.extern_offsets[name] + offset)
            return Addr(Sym(name), offset)
        narrow = space in NARROW_SPACES and value in self.narrow
        base = self.nsrc(value) if narrow else self.src(value, imm=False)
        if not -(1 << 31) <= offset < (1 << 31):
            # an address's immediate offset is 32 bits: a larger constant part of the index is
            # added first (x[i + 600000000] of an f32 array is 2.4e9 bytes on)
            moved = self.new("r" if narrow else "rd")
            self.emit("add.u32" if narrow else "add.s64", [moved],
                      [base, Imm(str(offset % (1 << 32) if narrow else offset))])
            return Addr(moved, 0)
        return Addr(base, offset)

    def _symbol_address(self, instr: ir.Instr) -> Sym:
        """The operand of `mov` that takes an array's address: its name, or `smem+OFFSET`
        inside the `.extern .shared` array (target.shared_layout)."""
        name = self._symbol(instr)
        if name in self.extern_offsets:
            offset = self.extern_offsets[name]
            return Sym(f"{self.extern_base}+{offset}" if offset else self.extern_base)
        return Sym(name)

    def _symbol(self, instr: ir.Instr) -> str:
        name = instr.attrs.get("symbol")
        if name not in self.symbols:
            raise BackendError(f"addr_of names {name!r}, which is not among the function's arrays")
        return name

    # --- parameters and special registers ------------------------------------------------
    def _param_table(self) -> dict:
        table = {}
        for spec in self.func.params:
            for name, ptx_type in spec.ptx_params(self.func.name):
                table[name] = (ptx_type, spec)
        return table

    def op_param(self, instr: ir.Instr) -> None:
        name = instr.attrs.get("name", "")
        if name not in self.params:
            name = f"{self.func.name}_{name}"
        if name not in self.params:
            raise BackendError(f"param {instr.attrs.get('name')!r} is not a .param of "
                               f"{self.func.name} (have {', '.join(self.params)})")
        ptx_type, spec = self.params[name]
        dst = self.reg(instr)
        if instr.attrs.get("ptr"):
            self.emit("ld.param.u64", [dst], [Addr(Sym(name))])
            self.emit("cvta.to.global.u64", [dst], [dst])
        elif spec.by_ref and spec.kind == "scalar":
            pointer = self.new("rd")
            self.emit("ld.param.u64", [pointer], [Addr(Sym(name))])
            self.emit("cvta.to.global.u64", [pointer], [pointer])
            self.load_scalar(dst, instr.type, Addr(pointer), "ld.global")
        else:
            self.load_scalar(dst, instr.type, Addr(Sym(name)), "ld.param", ptx_type)

    def load_scalar(self, dst: VReg, t: Scalar, addr: Addr, prefix: str, ptx_type=None) -> None:
        if t.is_bool:
            byte = self.new("rs")
            self.emit(f"{prefix}.u8", [byte], [addr])
            self.emit("setp.ne.u16", [dst], [byte, Imm("0")])
        else:
            self.emit(f"{prefix}.{ptx_type or mem(t)}", [dst], [addr])

    def op_sreg(self, instr: ir.Instr) -> None:
        name = instr.attrs.get("name")
        if name not in ir.SPECIAL_REGISTERS and name != "warpid":
            raise BackendError(f"unknown special register {name!r}")
        if name in ir.CLUSTER_REGISTERS:
            self.target.require((7, 8), 90, f"%{name}")
        self.emit("mov.u32", [self.reg(instr)], [Sym("%" + name)])

    def op_addr_of(self, instr: ir.Instr) -> None:
        self.emit("mov.u64", [self.reg(instr)], [self._symbol_address(instr)])

    # --- arithmetic -----------------------------------------------------------------------
    def op_add(self, instr):
        if instr in self.mad_of:
            return self._mad(instr, self.mad_of[instr])
        self.binary(instr)

    op_sub = op_mul = op_div = op_rem = op_min = op_max = op_mul_hi = op_copysign = \
        lambda self, instr: self.binary(instr)

    def op_and(self, instr):
        self.bitwise(instr)

    op_or = op_xor = op_and

    def binary(self, instr: ir.Instr) -> None:
        t, op = instr.type, instr.op
        if t.is_bool:
            raise BackendError(f"{op} is not defined on bool")
        if t.name in ("f16", "bf16"):
            return self.half_binary(instr)
        dst = self.reg(instr)
        if t.is_float:
            self.float_binary(instr, dst)
        elif op == "mul_hi" and t.bits == 8:
            a, b = self.srcs(instr)
            self.emit(f"mul.lo.{arith(t)}", [dst], [a, b])
            self.emit(f"shr.{arith(t)}", [dst], [dst, Imm("8")])
        elif op == "mul" and (negated := self.times_minus_one(instr)) is not None:
            # ptxas makes `x * -1` a negation, which it can then lose (negate); found again
            # with the constant first, `(-1) * v` (session 22, program 423 of seed 3109, H100)
            self.negate(dst, self.src(negated, imm=False), t)
        elif op == "sub" and isinstance(instr.args[0], ir.Const) and (
                t.bits >= 32 or instr.args[0].value == 0):     # 8/16-bit c - x: in_32_bits
            self.subtract_from(dst, int(instr.args[0].value), self.src(instr.args[1], imm=False), t)
        elif t.bits < 32 and op in ("add", "sub", "mul", "div", "rem", "min", "max"):
            self.in_32_bits(instr, dst, _INT_OPCODE[op])
        elif op in _INT_OPCODE:     # 32 and 64 bits (and 16-bit mul_hi): no wrap to redo
            self.emit(f"{_INT_OPCODE[op]}.{arith(t)}", [dst], self.srcs(instr))
        else:
            raise BackendError(f"{op} is not defined on {t}")

    @staticmethod
    def times_minus_one(instr: ir.Instr):
        """The other operand of an integer `mul` by -1 (all ones), else None."""
        all_ones = (1 << instr.type.bits) - 1
        a, b = instr.args
        for constant, other in ((a, b), (b, a)):
            if isinstance(constant, ir.Const) and not isinstance(other, ir.Const) and \
                    int(constant.value) & all_ones == all_ones:
                return other
        return None

    def float_binary(self, instr: ir.Instr, dst: VReg) -> None:
        t, op = instr.type, instr.op
        a, b = self.srcs(instr)
        if op == "div":
            mode = "approx" if instr.attrs.get("approx") and t.bits == 32 else "rn"
            self.emit(f"div.{mode}.{arith(t)}", [dst], [a, b])
        elif op == "copysign":
            # PTX copysign d, a, b: the sign of a, the magnitude of b
            self.emit(f"copysign.{arith(t)}", [dst], self.srcs(instr, imm=False)[::-1])
        elif op in ("add", "sub") and t.bits == 32 and self._known_to_ptxas(instr):
            self.add_as_fma(instr, dst)
        elif op in ("add", "sub", "mul"):
            # `.rn` stops ptxas from contracting mul+add into fma: results then match the
            # simulator and NumPy bit for bit (contraction belongs in an IR pass, explicit `fma`)
            self.emit(f"{op}.rn.{arith(t)}", [dst], [a, b])
        elif op in ("min", "max") and instr.attrs.get("nan") and t.bits == 64:
            # no max.NaN.f64: where an operand is NaN the result is a + b, a quiet NaN
            unordered, total = self.new("p"), self.new("fd")
            self.emit(f"{op}.f64", [dst], [a, b])
            self.emit("setp.nan.f64", [unordered], self.srcs(instr, imm=False))
            self.emit("add.rn.f64", [total], [a, b])
            self.emit("selp.f64", [dst], [total, dst, unordered])
        elif op in ("min", "max"):
            nan = ".NaN" if instr.attrs.get("nan") else ""
            self.emit(f"{op}{nan}.{arith(t)}", [dst], [a, b])
        else:
            raise BackendError(f"{op} is not defined on {t}")

    def _known_to_ptxas(self, instr: ir.Instr) -> bool:
        return not any(self.opaque(arg) for arg in instr.args)

    def add_as_fma(self, instr: ir.Instr, dst: VReg) -> None:
        """f32 a + b or a - b as one fma by 1 or -1 (the same rounding, once). ptxas folds
        an f32 subtraction of values it knows (or an addition of opposite signs) with some
        ties rounded down: 100000 - 1.00390625 came out 99998.9921875, not 99999.0; an fma
        it folds right (benchmarks/probes/ffold_probe.py, reduced/program-528.py, H100)."""
        a, b = instr.args
        one = Imm(immediate(f32, 1.0))
        if instr.op == "sub" and isinstance(b, ir.Instr):
            operands = [self.reg(b), Imm(immediate(f32, -1.0)), self.src(a)]
        elif instr.op == "sub":      # a - c: a * 1 + (-c)
            negated = -b.value if isinstance(b, ir.Const) else 0.0
            operands = [self.src(a, imm=False), one, Imm(immediate(f32, negated))]
        elif isinstance(a, ir.Instr):
            operands = [self.reg(a), one, self.src(b)]
        else:
            operands = [self.src(b, imm=False), one, self.src(a)]
        self.emit("fma.rn.f32", [dst], operands)

    def half_binary(self, instr: ir.Instr) -> None:
        t, op, dst = instr.type, instr.op, self.reg(instr)
        a, b = self.srcs(instr, imm=False)
        native_rn = t.name == "f16" or self.target.bf16_arith
        if op in ("add", "sub", "mul") and native_rn:
            if t.name == "bf16":
                self.target.require((7, 8), 90, f"{op}.bf16")
            self.emit(f"{op}.rn.{t.name}", [dst], [a, b])
        elif op in ("add", "sub", "mul"):
            self.bf16_via_fma(op, dst, a, b)
        elif op in ("min", "max"):
            nan = ".NaN" if instr.attrs.get("nan") else ""
            self.emit(f"{op}{nan}.{t.name}", [dst], [a, b])
        elif op == "copysign":
            magnitude, sign = self.new("rs"), self.new("rs")
            self.emit("and.b16", [magnitude], [a, Imm("0x7FFF")])
            self.emit("and.b16", [sign], [b, Imm("0x8000")])
            self.emit("or.b16", [dst], [magnitude, sign])
        elif op == "div":
            self.via_f32(instr, lambda d, x, y: self.emit("div.rn.f32", [d], [x, y]), [a, b])
        else:
            raise BackendError(f"{op} is not defined on {t}")

    def bf16_via_fma(self, op: str, dst: VReg, a: VReg, b: VReg) -> None:
        # before sm_90 only fma.rn exists for bf16; a*1+b, a*b+(-0), b*(-1)+a are exact up
        # to fma's single rounding, so they round exactly like add/mul/sub would
        one = {"add": 0x3F80, "sub": 0xBF80}
        if op == "mul":
            self.emit("fma.rn.bf16", [dst], [a, b, self._half_const(0x8000)])
        elif op == "add":
            self.emit("fma.rn.bf16", [dst], [a, self._half_const(one[op]), b])
        else:
            self.emit("fma.rn.bf16", [dst], [b, self._half_const(one[op]), a])

    def _half_const(self, bits16: int) -> VReg:
        dst = self.new("hb")
        self.emit("mov.b16", [dst], [Imm(f"0x{bits16:04X}")])
        return dst

    def bitwise(self, instr: ir.Instr) -> None:
        t, dst = instr.type, self.reg(instr)
        if t.is_bool and instr.op == "xor":
            a, b = instr.args
            if isinstance(a, ir.Const):
                a, b = b, a
            if isinstance(b, ir.Const):      # v ^ True is not v (sccp drops v ^ False)
                self.emit("not.pred" if b.value else "mov.pred", [dst], [self.src(a, imm=False)])
            else:
                self.pred_differ(dst, "ne", *self.srcs(instr, imm=False))
        elif t.is_bool:
            self.emit(f"{instr.op}.pred", [dst], self.srcs(instr, imm=False))
        elif t.is_int and instr.op == "xor" and (inverted := self._all_ones_operand(instr)):
            self.emit(f"not.{bits(t)}", [dst], [self.src(inverted, imm=False)])
        elif t.is_int:
            self.emit(f"{instr.op}.{bits(t)}", [dst], self.srcs(instr))
        else:
            raise BackendError(f"{instr.op} is not defined on {t}")

    @staticmethod
    def _all_ones_operand(instr: ir.Instr):
        """The other operand of an integer `x ^ c` whose constant c sets every bit of the
        register (-1), which is then emitted as `not`. In a loop that ptxas 13.0 evaluates
        while compiling, `x ^= -1` from x = 2**31 - 1 came out unchanged (an index & 63 gave
        63, not 0); `not` it evaluated right (program 845 of seed 4713, H100)."""
        width = reg_bits(reg_class(instr.type))
        a, b = instr.args
        if isinstance(a, ir.Const):
            a, b = b, a
        if isinstance(b, ir.Const) and not isinstance(a, ir.Const) \
                and b.value & ((1 << width) - 1) == (1 << width) - 1:
            return a
        return None

    def negate(self, dst: VReg, a, t: Scalar) -> None:
        """-a for an integer, as ~a + 1. ptxas folds `neg` (and `0 - a`, `a * -1`) into the
        operand of the three-way min/max it makes of two chained ones, and there loses the
        sign when it is the second operand of the inner one: min(min(x, -a), c) gave
        min(x, a, c). Its 16-bit neg of -32768 also widened to 32768. ~a + 1 it computes as
        written (benchmarks/probes/min_probe.py, abs_probe.py, H100)."""
        self.subtract_from(dst, 0, a, t)

    def subtract_from(self, dst: VReg, constant: int, a, t: Scalar) -> None:
        """constant - a for an integer, as ~a + (constant + 1). In a loop that ptxas evaluates
        while compiling, it got `(2 - x) & x` wrong for x = 2**31 - 1 (1, not 3); the same
        as ~x + 3 it got right (benchmarks/probes/variants.py 1467, H100)."""
        inverted = self.new(dst.cls)
        self.emit(f"not.{bits(t)}", [inverted], [a])
        self.emit(f"add.{arith(t)}", [dst], [inverted, Imm(immediate(t, constant + 1))])
        self.normalise(dst, t)

    def in_32_bits(self, instr: ir.Instr, dst: VReg, opcode: str) -> None:
        """8- and 16-bit integer arithmetic as a C compiler does it: the operands extended to
        32 bits, a 32-bit op, and the result wrapped back explicitly. ptxas's range analysis of
        16-bit ops misses their wrap-around: `i8(x) - i16(y) <= i16(y)` was compiled as if the
        difference could not overflow, and `div.s16 x, -1` of -32768 widened to 32768; and
        `max.s16(17, 0 or 1) == 17` came out false (benchmarks/probes/variants.py,
        abs_probe.py, H100)."""
        t = instr.type
        wide = "s32" if t.is_signed else "u32"
        args = list(instr.args)
        if opcode in ("add", "mul.lo", "min", "max") and isinstance(args[0], ir.Const):
            args.reverse()      # the constant as the immediate
        operands = []
        for arg in args:
            if isinstance(arg, ir.Const):     # an immediate, or for the first operand a mov
                operands.append(Imm(str(int(arg.value))))
                if len(operands) == 1:
                    operands[0] = self.new("r")
                    self.emit(f"mov.{wide[0]}32", [operands[0]], [Imm(str(int(arg.value)))])
                continue
            operands.append(self.new("r"))
            self.emit(f"cvt.{wide}.{arith(t)}", [operands[-1]], [self.src(arg, imm=False)])
        self.emit(f"{opcode}.{wide}", [operands[0]], operands)
        if t.bits == 8:
            convert.extend_8_bits(self, dst, operands[0], t)
        else:
            self.emit("cvt.u16.u32", [dst], [operands[0]])

    def normalise(self, reg: VReg, t: Scalar) -> None:
        """Re-extend an 8-bit int kept in a 16-bit register after an op that may carry out."""
        if t.is_int and t.bits == 8:
            convert.extend_8_bits(self, reg, reg, t)

    def _mad(self, add: ir.Instr, mul: ir.Instr) -> None:
        other = add.args[1] if add.args[0] is mul else add.args[0]
        a, b = self.srcs(mul)
        c = self.src(other)
        if mul.op == "mul_wide":
            opcode = f"mad.wide.{arith(mul.args[0].type)}"
        else:
            opcode = f"mad.lo.{arith(add.type)}"
        self.emit(opcode, [self.reg(add)], [a, b, c])

    def op_mul_wide(self, instr: ir.Instr) -> None:
        t = instr.args[0].type
        if t.bits == 8:   # normalised 8-bit values multiply exactly in 16 bits
            self.emit(f"mul.lo.{arith(t)}", [self.reg(instr)], self.srcs(instr))
        else:
            self.emit(f"mul.wide.{arith(t)}", [self.reg(instr)], self.srcs(instr))

    def op_shl(self, instr):
        self.shift(instr, "shl." + bits(instr.type))

    def op_shr(self, instr):
        self.shift(instr, "shr." + arith(instr.type))

    def shift(self, instr: ir.Instr, opcode: str) -> None:
        if not instr.type.is_int:
            raise BackendError(f"{instr.op} is not defined on {instr.type}")
        dst = self.reg(instr)
        width = int(bits(instr.type)[1:])
        value, count = self.srcs(instr)
        if not self._shift_in_range(dst, opcode, value, instr.args[1], width):
            return
        self.emit(opcode, [dst], [value, count])
        if instr.op == "shl":
            self.normalise(dst, instr.type)

    def _shift_in_range(self, dst, opcode: str, value, count: ir.Value, width: int) -> bool:
        """False where a constant count of `width` or more was handled here: PTX clamps it,
        but the H100's compiler takes some such immediates mod the width (`shl.b64 x, 66`
        shifted by 2), so the result is written out: 0, or the sign for `shr.s`."""
        if not isinstance(count, ir.Const) or int(count.value) & _U32_MASK < width:
            return True
        if opcode.startswith("shr.s"):
            self.emit(opcode, [dst], [value, Imm(str(width - 1))])
        else:
            self.emit(f"mov.b{width}", [dst], [Imm("0")])
        return False

    def op_fma(self, instr: ir.Instr) -> None:
        t, dst = instr.type, self.reg(instr)
        if t.is_int and t.bits < 32:
            self.in_32_bits(instr, dst, "mad.lo")
        elif t.is_int:
            self.emit(f"mad.lo.{signed_arith(t)}", [dst], self.srcs(instr))
        elif t.name in ("f16", "bf16"):
            self.emit(f"fma.rn.{t.name}", [dst], self.srcs(instr, imm=False))
        elif t.is_float:
            self.emit(f"fma.rn.{arith(t)}", [dst], self.srcs(instr))
        else:
            raise BackendError(f"fma is not defined on {t}")

    # --- unary ---------------------------------------------------------------------------
    def op_neg(self, instr):
        self.neg_abs(instr)

    op_abs = op_neg

    def neg_abs(self, instr: ir.Instr) -> None:
        t, dst = instr.type, self.reg(instr)
        (a,) = self.srcs(instr, imm=False)
        if t.is_bool:
            raise BackendError(f"{instr.op} is not defined on bool")
        if instr.op == "abs" and t.kind == "uint":
            self.emit(f"mov.{MOV_TYPE[dst.cls]}", [dst], [a])
            return
        if t.is_int and instr.op == "neg":
            self.negate(dst, a, t)
            return
        if instr.op == "abs" and t.is_int and t.bits >= 16:
            # ptxas takes abs.s16/.s32 (and so .s64) as never negative, and drops code that
            # depends on the sign of abs(MIN) == MIN (a remainder, a widening); max(x, ~x + 1)
            # it computes as written (benchmarks/probes/abs_probe.py, min_probe.py, H100)
            negated = self.new(dst.cls)
            self.negate(negated, a, t)
            self.emit(f"max.{arith(t)}", [dst], [a, negated])
            return
        if instr.op == "abs" and t == f32:
            # ptxas takes abs.f32 as never NaN: `abs(x) >= 0` came out true for a NaN x.
            # Clearing the sign bit it computes as written (benchmarks/probes/fabs_probe.py)
            self.emit("and.b32", [dst], [a, Imm("0x7FFFFFFF")])
            return
        if instr.op == "neg" and t.is_float and t.bits == 16:
            # ptxas folded neg.bf16 (and neg.f16) of a 0-or-1 value into a select of -1.0 and
            # +0.0, losing -0.0 (benchmarks/probes/reduced/program-872.py, and the f16 case of
            # its edge test); flipping the sign bit it keeps
            self.emit("xor.b16", [dst], [a, Imm("0x8000")])
            return
        self.emit(f"{instr.op}.{signed_arith(t)}", [dst], [a])
        self.normalise(dst, t)

    def op_not(self, instr: ir.Instr) -> None:
        t, dst = instr.type, self.reg(instr)
        if not (t.is_bool or t.is_int):
            raise BackendError(f"not is not defined on {t}")
        self.emit(f"not.{bits(t)}", [dst], self.srcs(instr, imm=False))
        self.normalise(dst, t)

    def op_mov(self, instr: ir.Instr) -> None:
        self.block.instrs.append(copy_instr(self.reg(instr), self.src(instr.args[0]), self.loc))

    def op_sqrt(self, instr):
        self.float_unary(instr, lambda t, approx: "sqrt.approx.f32" if approx and t == f32
                         else f"sqrt.rn.{arith(t)}")

    def op_rsqrt(self, instr):
        self.float_unary(instr, lambda t, approx: f"rsqrt.approx.{arith(t)}")

    def op_rcp(self, instr):
        def opcode(t, approx):
            if approx:
                return "rcp.approx.f32" if t == f32 else "rcp.approx.ftz.f64"
            return f"rcp.rn.{arith(t)}"
        self.float_unary(instr, opcode)

    def op_floor(self, instr):
        mode = _ROUNDING[instr.op]
        t = instr.type
        if t.name == "f16" or (t.name == "bf16" and self.target.bf16_arith):
            if t.name == "bf16":
                self.target.require((7, 8), 90, "cvt.bf16.bf16")
            self.emit(f"cvt.{mode}.{t.name}.{t.name}", [self.reg(instr)], self.srcs(instr, imm=False))
            return
        self.float_unary(instr, lambda t, approx: f"cvt.{mode}.{arith(t)}.{arith(t)}")

    op_ceil = op_trunc = op_round = op_floor

    def op_ex2(self, instr):
        def opcode(t, approx):
            if t != f32:
                raise BackendError(f"{instr.op} exists only for f32 (got {instr.type})")
            return f"{instr.op}.approx.f32"
        self.float_unary(instr, opcode)

    op_lg2 = op_sin = op_cos = op_tanh = op_ex2

    def float_unary(self, instr: ir.Instr, opcode) -> None:
        """One PTX instruction on f32/f64; f16 and bf16 compute in f32 and round back."""
        t = instr.type
        if not t.is_float:
            raise BackendError(f"{instr.op} is not defined on {t}")
        approx = bool(instr.attrs.get("approx"))
        if t.bits == 16:
            name = opcode(f32, approx)
            self.via_f32(instr, lambda d, x: self.emit(name, [d], [x]), self.srcs(instr, imm=False))
        else:
            self.emit(opcode(t, approx), [self.reg(instr)], self.srcs(instr, imm=False))

    def via_f32(self, instr: ir.Instr, compute, args: list) -> None:
        wide = [self.to_f32(a, instr.args[k].type) for k, a in enumerate(args)]
        result = self.new("f")
        compute(result, *wide)
        self.emit(f"cvt.rn.{instr.type.name}.f32", [self.reg(instr)], [result])

    def to_f32(self, reg: VReg, t: Scalar) -> VReg:
        if t == f32:
            return reg
        wide = self.new("f")
        convert.convert(self, wide, reg, t, f32, None)
        return wide

    # --- predicates: compare, test, select ------------------------------------------------
    def op_isnan(self, instr):
        self.float_test(instr, "notanumber")

    def op_isinf(self, instr):
        self.float_test(instr, "infinite")

    def float_test(self, instr: ir.Instr, test: str) -> None:
        t = instr.args[0].type
        if not t.is_float:
            raise BackendError(f"{instr.op} takes a float, not {t}")
        (a,) = self.srcs(instr, imm=False)
        if t.bits == 16:
            a, t = self.to_f32(a, t), f32
        self.emit(f"testp.{test}.{arith(t)}", [self.reg(instr)], [a])

    def op_cmp(self, instr: ir.Instr) -> None:
        pred = "eq" if instr in self.emitted_equal else instr.attrs["pred"]
        self.compare(self.reg(instr), pred, instr)

    def compare(self, dst: VReg, pred: str, instr: ir.Instr) -> None:
        """dst = the comparison `pred` of the arguments of `instr` (a `cmp`)."""
        t = instr.args[0].type
        if t.is_bool:
            return self.bool_cmp(dst, pred, *self.srcs(instr, imm=False))
        if t.bits == 16 and t.is_float:
            a, b = self.srcs(instr, imm=False)
            if t.name == "bf16" and not self.target.bf16_arith:
                a, b, t = self.to_f32(a, t), self.to_f32(b, t), f32
            elif t.name == "bf16":
                self.target.require((7, 8), 90, "setp.bf16")
        else:
            a, b = self.srcs(instr)
        if t.is_float:
            cond = "neu" if pred == "ne" else pred
        else:
            cond = _UNSIGNED_CMP[pred] if t.kind == "uint" else pred
        self.emit(f"setp.{cond}.{arith(t)}", [dst], [a, b])

    def pred_differ(self, dst: VReg, pred: str, a: VReg, b: VReg) -> None:
        """dst = (a != b) (`ne`, a bool `^`) or (a == b) (`eq`) for predicates, compared as 0 or 1
        in 32-bit registers. ptxas merged `xor.pred` (and `xor.b32` of the same 0 or 1) with an
        `or` and an `and` of the same inputs into one PLOP3 and got `(v3 | v4) ^ v3` wrong for
        v4 == v3 from a loop (program 51, variants.py 51, plop_probe.py; H100)."""
        bits_a, bits_b = self.new("r"), self.new("r")
        self.emit("selp.u32", [bits_a], [Imm("1"), Imm("0"), a])
        self.emit("selp.u32", [bits_b], [Imm("1"), Imm("0"), b])
        self.emit(f"setp.{pred}.b32", [dst], [bits_a, bits_b])

    def bool_cmp(self, dst: VReg, pred: str, a: VReg, b: VReg) -> None:
        if pred in ("eq", "ne"):
            self.pred_differ(dst, pred, a, b)
            return
        # with false < true: a<b is !a&b, a<=b is !a|b, a>b is a&!b, a>=b is a|!b
        negated, other = (a, b) if pred in ("lt", "le") else (b, a)
        inverse = self.new("p")
        self.emit("not.pred", [inverse], [negated])
        self.emit("and.pred" if pred in ("lt", "gt") else "or.pred", [dst], [inverse, other])

    def op_select(self, instr: ir.Instr) -> None:
        t, dst = instr.type, self.reg(instr)
        cond = self.src(instr.args[0], imm=False)
        if t.is_bool:
            return self.bool_select(dst, cond, instr.args[1], instr.args[2])
        a, b = (self.src(v, imm=t.bits > 16 or not t.is_float) for v in instr.args[1:])
        self.emit(f"selp.{bits(t) if t.bits == 16 and t.is_float else arith(t)}", [dst], [a, b, cond])

    def bool_select(self, dst: VReg, cond: VReg, a: ir.Value, b: ir.Value) -> None:
        """dst = a if cond else b for bools, as a `selp` of 0 or 1 in a 32-bit register. ptxas
        merged the predicate logic of selects with the `or`s and `and`s beside them into PLOP3s
        and got them wrong: `(c & a) | (!c & b)` with b = c | a came out false (program 564),
        and `b ^ (b & c)` (`c ? false : b`) beside `c | b` gave the wrong value in a loop
        (program 775 of seed 3847, H100), as `xor.pred` did in `pred_differ`."""
        if isinstance(a, ir.Const) and isinstance(b, ir.Const):
            if bool(a.value) == bool(b.value):
                self.block.instrs.append(copy_instr(dst, self.const_imm(bool_, a.value), self.loc))
            elif a.value:
                self.emit("mov.pred", [dst], [cond])
            else:
                self.emit("not.pred", [dst], [cond])
            return
        bits = self.new("r")
        self.emit("selp.u32", [bits], [self.bit_of(a), self.bit_of(b), cond])
        self.emit("setp.ne.u32", [dst], [bits, Imm("0")])

    def bit_of(self, value: ir.Value):
        """A bool as 0 or 1: an immediate, or a 32-bit register."""
        if isinstance(value, ir.Const):
            return Imm("1" if value.value else "0")
        bit = self.new("r")
        self.emit("selp.u32", [bit], [Imm("1"), Imm("0"), self.src(value)])
        return bit

    # --- conversions -----------------------------------------------------------------------
    def op_cvt(self, instr: ir.Instr) -> None:
        source = instr.args[0]
        a = self.src(source, imm=False)
        convert.convert(self, self.reg(instr), a, source.type, instr.type, instr.attrs.get("mode"))

    def op_bitcast(self, instr: ir.Instr) -> None:
        source, t = instr.args[0], instr.type
        if source.type.bits != t.bits or t.is_bool:
            raise BackendError(f"bitcast {source.type} -> {t}: widths differ")
        dst, a = self.reg(instr), self.src(source, imm=False)
        if a.cls == dst.cls:
            self.block.instrs.append(copy_instr(dst, a, self.loc))
        else:
            self.emit(f"mov.{bits(t)}", [dst], [a])

    # --- memory -----------------------------------------------------------------------------
    def _space(self, instr: ir.Instr) -> str:
        space = instr.attrs.get("space", "global")
        if space not in ("global", "shared", "local", "const", "shared::cluster"):
            raise BackendError(f"{instr.op}: unknown state space {space!r}")
        if space == "shared::cluster":
            self.target.require((7, 8), 90, "the shared::cluster state space")
        return space

    def _ld(self, instr: ir.Instr) -> str:
        space = self._space(instr)
        nc = ".nc" if instr.attrs.get("nc") and space == "global" else ""
        return f"ld.{space}{nc}"

    def op_load(self, instr: ir.Instr) -> None:
        self.load_scalar(self.reg(instr), instr.type, self.address(instr.args[0], self._space(instr)),
                         self._ld(instr))

    def op_store(self, instr: ir.Instr) -> None:
        space = self._space(instr)
        addr, value = self.address(instr.args[0], space), instr.args[1]
        if value.type.is_bool and isinstance(value, ir.Const):   # a constant: its byte directly
            self.emit(f"st.{space}.u8", [], [addr, Imm("1" if value.value else "0")])
        elif value.type.is_bool:
            byte = self.new("rs")
            self.emit("selp.u16", [byte], [Imm("1"), Imm("0"), self.src(value, imm=False)])
            self.emit(f"st.{space}.u8", [], [addr, byte])
        else:
            self.emit(f"st.{space}.{mem(value.type)}", [], [addr, self.src(value)])

    def _order(self, instr: ir.Instr) -> str:
        """`.sem.scope` of a memory-ordered access or an atomic given an order (`""` for an
        atomic without one: PTX's default, relaxed at gpu scope)."""
        sem, scope = instr.attrs.get("sem"), instr.attrs.get("scope")
        if sem is None and scope is None:
            return ""
        if scope == "cluster":
            self.target.require((7, 8), 90, "the cluster scope")
        return f".{sem}.{scope}"

    def op_ordered_load(self, instr: ir.Instr) -> None:
        """`ld.{relaxed,acquire}.<scope>.<space>.<type>`: a strong load, never merged or cached."""
        space = self._space(instr)
        self.emit(f"ld{self._order(instr)}.{space}.{mem(instr.type)}", [self.reg(instr)],
                  [self.address(instr.args[0], space)])

    def op_ordered_store(self, instr: ir.Instr) -> None:
        """`st.{relaxed,release}.<scope>.<space>.<type>`."""
        space = self._space(instr)
        addr, value = self.address(instr.args[0], space), instr.args[1]
        self.emit(f"st{self._order(instr)}.{space}.{mem(value.type)}", [], [addr, self.src(value)])

    def op_vload(self, instr: ir.Instr) -> None:
        n, t = instr.attrs.get("n"), instr.type
        elems = [self.new(t) for _ in range(n)] if n in (2, 4, 8) else None
        if elems is None:
            raise BackendError(f"vload of {n} elements (2, 4 or 8 are supported)")
        used = set()
        for user in self.users.get(instr, []):
            if user.op != "extract":
                raise BackendError("a vload's value may only be used by extract")
            elems[user.attrs["index"]] = self.reg(user)
            used.add(user.attrs["index"])
        addr, ld = self.address(instr.args[0], self._space(instr)), self._ld(instr)
        if instr in self.word_loads:      # all four bytes make one register of a fragment
            self.words[instr, 0] = word = self.new("r")
            self.emit(f"{ld}.b32", [word], [addr])
        elif t.bits == 16 and n == 8:
            words = [self.new("r") for _ in range(4)]
            self.emit(f"{ld}.v4.b32", words, [addr], vec_dst=True)
            for k, word in enumerate(words):
                self.emit("mov.b32", elems[2 * k:2 * k + 2], [word], vec_dst=True)
        elif n == 8:
            raise BackendError(f"vload of 8 {t} elements: only 16-bit types have an 8-wide form")
        elif t.is_int and t.bits == 8:
            self.bytes_one_by_one(elems, used, t, addr, ld)
        elif t.is_bool:
            bytes_ = [self.new("rs") for _ in range(n)]
            self.emit(f"{ld}.v{n}.u8", bytes_, [addr], vec_dst=True)
            for byte, elem in zip(bytes_, elems):
                self.emit("setp.ne.u16", [elem], [byte, Imm("0")])
        else:
            self.emit(f"{ld}.v{n}.{mem(t)}", elems, [addr], vec_dst=True)

    def bytes_one_by_one(self, elems: list, used: set, t: Scalar, addr: Addr, ld: str) -> None:
        """The used elements of a vector of 8-bit integers, each by its own `ld.s8`/`ld.u8`.
        A workaround: after `ld.v4.s8` (and after one 32-bit load and a `bfe.s32` per byte, tried
        too), ptxas converted `cvt.rn.f32.u32` of an element sign-extended to 32 bits as a signed
        byte (`I2F.S8`: -125, not 4294967171; program 285 of seed 4150, vector_probe.py, H100);
        from a scalar byte load it was right."""
        for k, elem in enumerate(elems):
            if k in used:
                self.emit(f"{ld}.{mem(t)}", [elem], [Addr(addr.base, addr.offset + k)])

    def op_to_fp8(self, instr: ir.Instr) -> None:
        """`cvt.rn.satfinite.e4m3x2.f32 d, 0.0, x` (`.e5m2x2`): the pair's high byte is 0.0's,
        so the 16-bit register holds the u8 byte zero-extended."""
        fmt = instr.attrs["format"]
        self.target.require((7, 8), 89, f"cvt to {fmt}")
        self.emit(f"cvt.rn.satfinite.{fmt}x2.f32", [self.reg(instr)],
                  [Imm("0f00000000"), self.src(instr.args[0], imm=False)])

    def op_from_fp8(self, instr: ir.Instr) -> None:
        """`cvt.rn.f16x2.e4m3x2` of the byte (and a zero byte above it), then the low half's
        f16 to f32: every fp8 value is an f16 value."""
        fmt = instr.attrs["format"]
        self.target.require((7, 8), 89, f"cvt from {fmt}")
        pair, low, high = self.new("r"), self.new("h"), self.new("h")
        self.emit(f"cvt.rn.f16x2.{fmt}x2", [pair], [self.src(instr.args[0], imm=False)])
        self.emit("mov.b32", [low, high], [pair], vec_dst=True)
        self.emit("cvt.f32.f16", [self.reg(instr)], [low])

    def op_tf32(self, instr: ir.Instr) -> None:
        self.emit("cvt.rna.tf32.f32", [self.reg(instr)], [self.src(instr.args[0], imm=False)])

    def op_extract(self, instr: ir.Instr) -> None:
        if instr.args[0].op not in ("vload", "mma", "ldmatrix", "wgmma"):
            raise BackendError("extract takes a vload, an mma, an ldmatrix or a wgmma")

    def op_mma(self, instr: ir.Instr) -> None:
        """`mma.sync.aligned` on 32-bit registers: tf32 operands as `tf32` gave them, f16/bf16
        operands packed two to a register (the lower-numbered element in the low half, as
        PTX's fragments have them)."""
        shape, kind = instr.attrs["shape"], instr.attrs["ab"]
        if shape == "m16n8k32":       # 8-bit ints: A and B of two types (ab, b), i32 sums
            a, b = self._fragment_words(instr.args[:16], kind), self._fragment_words(
                instr.args[16:24], instr.attrs["b"])
            types = f"s32.{kind}.{instr.attrs['b']}.s32"
        else:
            n_ab = 6 if kind == "tf32" else 12
            words = self._fragment_words(instr.args[:n_ab], kind)
            a, b = words[:len(words) * 2 // 3], words[len(words) * 2 // 3:]
            types = f"f32.{kind}.{kind}.f32"
        c = [self.src(v, imm=False) for v in instr.args[-4:]]
        d = [self.new(instr.type) for _ in range(4)]
        for user in self.users.get(instr, []):
            if user.op != "extract":
                raise BackendError("an mma's value may only be used by extract")
            d[user.attrs["index"]] = self.reg(user)
        self.emit(f"mma.sync.aligned.{shape}.row.col.{types}", d, [Vec(a), Vec(b), Vec(c)],
                  vec_dst=True)

    def op_wgmma(self, instr: ir.Instr) -> None:
        """`wgmma.mma_async.sync.aligned.m64n{n}k{16|8|32}.f32.{ab}.{ab}` (k32 for fp8;
        `k32.s32.{ab}.{ab}` for 8-bit integers, without the immediates after scale-d; no
        imm-trans for tf32 and fp8, which are K-major only): its accumulator registers
        are C in and D out. A result planned into its accumulator's register
        (`_plan_accumulators`, the usual case) needs nothing; another first takes its
        accumulator by a `mov`, which the allocator coalesces where it can. So a loop's
        accumulators keep their registers, which no instruction touches while a product is in
        flight. A in registers is `{a0, a1, a2, a3}` in place of A's descriptor, with no
        imm-trans-a, packed where its values are computed (`_plan_fragment_packing`)."""
        self.target.require_wgmma("wgmma.mma_async")
        n, kind = instr.attrs["n"], instr.attrs["ab"]
        acc = instr.args[:n // 2]
        d = [self.new(instr.type) for _ in acc]
        for user in self.users.get(instr, []):
            if user.op != "extract":
                raise BackendError("a wgmma's value may only be used by extract")
            d[user.attrs["index"]] = self.reg(user)
        for reg, value in zip(d, acc):
            source = self.src(value)
            if source is not reg:
                self.block.instrs.append(copy_instr(reg, source, self.loc))
        *a, b_desc, scale = instr.args[n // 2:]
        scale = Imm(str(int(scale.value))) if isinstance(scale, ir.Const) else self.src(scale)
        a_regs = instr.attrs.get("a_regs", False)
        if a_regs:
            size = _per_word(kind)
            words = [self.packed.pop((instr, k), None) for k in range(len(a) // size)]
            a = Vec([word or self._fragment_words(a[k * size:k * size + size], kind)[0]
                     for k, word in enumerate(words)])
        else:
            a = self.src(a[0])
        b_desc = self.src(b_desc)
        if kind in ("s8", "u8"):          # K-major only, neither negated: no immediates
            self.emit(f"wgmma.mma_async.sync.aligned.m64n{n}k32.s32.{kind}.{kind}", d,
                      [a, b_desc, scale], vec_dst=True, reads_dsts=True)
            return
        k = {"tf32": 8, "e4m3": 32, "e5m2": 32}.get(kind, 16)
        flags = [Imm("1"), Imm("1")]      # imm-scale-a, imm-scale-b: A and B as they are
        if kind in ("f16", "bf16"):       # imm-trans-a (none with A in registers), imm-trans-b
            trans = ["trans_b"] if a_regs else ["trans_a", "trans_b"]
            flags += [Imm(str(int(instr.attrs[t]))) for t in trans]
        b_kind = instr.attrs.get("b", kind)      # (fp8: A's and B's formats may differ)
        self.emit(f"wgmma.mma_async.sync.aligned.m64n{n}k{k}.f32.{kind}.{b_kind}", d,
                  [a, b_desc, scale, *flags], vec_dst=True, reads_dsts=True)

    def _fragment_words(self, values: list, kind: str) -> list:
        """The 32-bit registers of an A fragment: tf32 values as `tf32` gave them, f16/bf16
        values packed two to a register (the lower-numbered element in the low half), 8-bit
        ones four to a register (`_byte_word`)."""
        if kind == "tf32":
            return [self.src(v, imm=False) for v in values]
        if kind in BYTE_KINDS:
            return [self._byte_word(values[k:k + 4]) for k in range(0, len(values), 4)]
        words = [self.new("r") for _ in range(len(values) // 2)]
        for word, lo, hi in zip(words, values[::2], values[1::2]):
            if lo in self.paired:       # both halves: one cvt of the two f32 values
                sources = [self.src(hi.args[0], imm=False), self.src(lo.args[0], imm=False)]
                self.emit(f"cvt.rn.{kind}x2.f32", [word], sources)
            else:
                self.emit("mov.b32", [word], [Vec([self.src(lo, imm=False),
                                                   self.src(hi, imm=False)])])
        return words

    def _byte_word(self, values: list) -> VReg:
        """Four 8-bit values in one 32-bit register, the first in the lowest byte: the word
        they were loaded as (`_plan_byte_words`), or two 16-bit pairs and a `prmt` of their
        low bytes."""
        if _one_loaded_word(values):
            word = self.words.get((values[0].args[0], values[0].attrs["index"] // 4))
            if word is not None:
                return word
        pairs = [self.new("r"), self.new("r")]
        for pair, k in zip(pairs, (0, 2)):
            self.emit("mov.b32", [pair], [Vec([self.src(values[k], imm=False),
                                               self.src(values[k + 1], imm=False)])])
        word = self.new("r")
        self.emit("prmt.b32", [word], [*pairs, Imm("0x6420")])
        return word

    def op_wgmma_fence(self, instr: ir.Instr) -> None:
        self.target.require_wgmma("wgmma.fence")
        self.emit("wgmma.fence.sync.aligned", [], [])

    def op_wgmma_commit(self, instr: ir.Instr) -> None:
        self.target.require_wgmma("wgmma.commit_group")
        self.emit("wgmma.commit_group.sync.aligned", [], [])

    def op_wgmma_wait(self, instr: ir.Instr) -> None:
        self.target.require_wgmma("wgmma.wait_group")
        self.emit("wgmma.wait_group.sync.aligned", [], [Imm(str(instr.attrs["n"]))])

    def op_setmaxnreg(self, instr: ir.Instr) -> None:
        self.target.require_wgmma("setmaxnreg")
        self.emit(f"setmaxnreg.{instr.attrs['action']}.sync.aligned.u32", [],
                  [Imm(str(instr.attrs["n"]))])

    def op_fence_mbarrier_init(self, instr: ir.Instr) -> None:
        self.target.require((8, 0), 90, "fence.mbarrier_init")
        self.emit("fence.mbarrier_init.release.cluster", [], [])

    def op_fence_proxy_async(self, instr: ir.Instr) -> None:
        self.target.require((8, 0), 90, "fence.proxy.async")
        self.emit("fence.proxy.async.shared::cta", [], [])

    def op_ldmatrix(self, instr: ir.Instr) -> None:
        """`ldmatrix.sync.aligned.m8n8.x{1,2,4}[.trans].shared.b16` into 32-bit registers, each
        then split into the lane's two 16-bit elements (the lower-numbered in the low half),
        moved into its 32-bit element, or split into four bytes (`_split_bytes`; an 8-bit
        mma takes the register itself, `_plan_byte_words`)."""
        t, count = instr.type, instr.attrs["count"]
        per_word = 32 // t.bits
        elems = [None] * (count * per_word)
        for user in self.users.get(instr, []):
            if user.op != "extract":
                raise BackendError("an ldmatrix's value may only be used by extract")
            if user not in self.skipped:
                elems[user.attrs["index"]] = self.reg(user)
        words = [self.new("r") for _ in range(count)]
        trans = ".trans" if instr.attrs.get("trans") else ""
        self.emit(f"ldmatrix.sync.aligned.m8n8.x{count}{trans}.shared.b16", words,
                  [self.address(instr.args[0], "shared")], vec_dst=True)
        for k, word in enumerate(words):
            parts = elems[per_word * k:per_word * k + per_word]
            if per_word == 4:
                self.words[instr, k] = word
                self._split_bytes(word, parts, t)
                continue
            parts = [reg or self.new(t) for reg in parts]
            if per_word == 2:
                self.emit("mov.b32", parts, [word], vec_dst=True)
            else:
                self.emit("mov.b32", parts, [word])

    def _split_bytes(self, word: VReg, bytes_: list, t: Scalar) -> None:
        """The bytes of `word` wanted (registers, None where not) into 16-bit registers,
        sign- (i8) or zero-extended (u8): each half's low byte by a `cvt`, its high one by a
        shift."""
        sign = "s" if t.is_signed else "u"
        for half in range(2):
            lo, hi = bytes_[2 * half:2 * half + 2]
            if lo is None and hi is None:
                continue
            wanted = self.new("rs")
            pair = [wanted, self.new("rs")] if half == 0 else [self.new("rs"), wanted]
            self.emit("mov.b32", pair, [word], vec_dst=True)
            if lo is not None:
                self.emit(f"cvt.{sign}16.{sign}8", [lo], [wanted])
            if hi is not None:
                self.emit(f"shr.{sign}16", [hi], [wanted, Imm("8")])

    def op_vstore(self, instr: ir.Instr) -> None:
        values, space = instr.args[1:], self._space(instr)
        addr, t, n = self.address(instr.args[0], space), values[0].type, len(values)
        regs = [self.src(v, imm=False) for v in values]
        if t.bits == 16 and n == 8:
            words = [self.new("r") for _ in range(4)]
            for k, word in enumerate(words):
                self.emit("mov.b32", [word], [Vec(regs[2 * k:2 * k + 2])])
            self.emit(f"st.{space}.v4.b32", [], [addr, Vec(words)])
        elif n not in (2, 4):
            raise BackendError(f"vstore of {n} {t} elements is not supported")
        elif t.is_bool:
            bytes_ = [self.new("rs") for _ in range(n)]
            for byte, reg in zip(bytes_, regs):
                self.emit("selp.u16", [byte], [Imm("1"), Imm("0"), reg])
            self.emit(f"st.{space}.v{n}.u8", [], [addr, Vec(bytes_)])
        else:
            self.emit(f"st.{space}.v{n}.{mem(t)}", [], [addr, Vec(regs)])

    def op_cp_async(self, instr: ir.Instr) -> None:
        """`cp.async.ca` (4 or 8 bytes; `.cg` for 16, which skips L1 as CUTLASS's copies do);
        a third arg is `src-size`, the bytes to read (the rest of the destination is zeroed)."""
        self.target.require((7, 0), 80, "cp.async")
        size = instr.attrs["bytes"]
        dst, src = self.address(instr.args[0], "shared"), self.address(instr.args[1], "global")
        operands = [dst, src, Imm(str(size))]
        if len(instr.args) > 2:
            read = instr.args[2]
            if not (isinstance(read, ir.Const) and read.value >= size):
                operands.append(self.src(read))
        level = "cg" if size == 16 else "ca"
        self.emit(f"cp.async.{level}.shared.global", [], operands)

    def op_cp_async_commit(self, instr: ir.Instr) -> None:
        self.emit("cp.async.commit_group", [], [])

    def op_cp_async_wait(self, instr: ir.Instr) -> None:
        if "n" in instr.attrs:
            self.emit("cp.async.wait_group", [], [Imm(str(instr.attrs["n"]))])
        else:
            self.emit("cp.async.wait_all", [], [])

    def op_mbarrier_init(self, instr: ir.Instr) -> None:
        self.target.require((7, 0), 80, "mbarrier.init")
        self.emit("mbarrier.init.shared.b64", [],
                  [self.address(instr.args[0], "shared"), self.src(instr.args[1])])

    def op_mbarrier_arrive(self, instr: ir.Instr) -> None:
        """`mbarrier.arrive[.expect_tx]`: its state result (for test_wait without .parity) is
        never read, as PTX's sink `_` would say (PTX 7.8+; a register keeps sm_80's 7.0). At
        another block's barrier (space shared::cluster) PTX allows only the sink, and the
        arrival releases this thread's memory accesses to the cluster."""
        if instr.attrs.get("space") == "shared::cluster":
            self.target.require((8, 0), 90, "mbarrier.arrive.shared::cluster")
            bar = self.address(instr.args[0], "shared::cluster")
            tx = [self.src(instr.args[1])] if len(instr.args) > 1 else []
            kind = ".expect_tx" if tx else ""
            self.emit(f"mbarrier.arrive{kind}.release.cluster.shared::cluster.b64", [],
                      [Sym("_"), bar, *tx])
            return
        state = self.new("rd")
        bar = self.address(instr.args[0], "shared")
        if len(instr.args) > 1:
            self.target.require((8, 0), 90, "mbarrier.arrive.expect_tx")
            self.emit("mbarrier.arrive.expect_tx.shared.b64", [state],
                      [bar, self.src(instr.args[1])])
        else:
            self.target.require((7, 0), 80, "mbarrier.arrive")
            self.emit("mbarrier.arrive.shared.b64", [state], [bar])

    def op_mbarrier_test(self, instr: ir.Instr) -> None:
        kind = "try" if instr.attrs["try"] else "test"
        if instr.attrs["try"]:
            self.target.require((7, 8), 90, "mbarrier.try_wait")
        else:
            self.target.require((7, 1), 80, "mbarrier.test_wait.parity")
        self.emit(f"mbarrier.{kind}_wait.parity.shared.b64", [self.reg(instr)],
                  [self.address(instr.args[0], "shared"), self.src(instr.args[1])])

    def op_cp_async_bulk(self, instr: ir.Instr) -> None:
        """`cp.async.bulk`: global to shared completing on an mbarrier (its transaction bytes),
        or shared to global in the thread's bulk group."""
        self.target.require((8, 0), 90, "cp.async.bulk")
        size = Imm(str(instr.attrs["bytes"]))
        if instr.attrs["space"] == "shared":
            dst, src = self.address(instr.args[0], "shared"), self.address(instr.args[1], "global")
            bar = self.address(instr.args[2], "shared")
            multicast, mask = self._multicast(instr)
            self.emit(f"cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"
                      f"{multicast}", [], [dst, src, size, bar, *mask])
        else:
            dst, src = self.address(instr.args[0], "global"), self.address(instr.args[1], "shared")
            self.emit("cp.async.bulk.global.shared::cta.bulk_group", [], [dst, src, size])

    def op_tensor_map(self, instr: ir.Instr) -> None:
        """A tensor map parameter's generic address, as cp.async.bulk.tensor takes it."""
        name = instr.attrs["name"]
        if name not in self.params:
            raise BackendError(f"tensor_map {name!r} is not a .param of {self.func.name}")
        self.target.require((7, 7), 70, "cvta.param")
        dst = self.reg(instr)
        self.emit("mov.b64", [dst], [Sym(name)])
        self.emit("cvta.param.u64", [dst], [dst])

    def op_tma_load(self, instr: ir.Instr) -> None:
        """cp.async.bulk.tensor: a box of the map's tensor into shared memory, its bytes
        completing on the mbarrier."""
        multicast, mask = self._multicast(instr)
        dst, tmap, *coords, bar = instr.args[:-1] if mask else instr.args
        self.target.require((8, 0), 90, "cp.async.bulk.tensor")
        self.emit(f"cp.async.bulk.tensor.{len(coords)}d.shared::cluster.global.tile"
                  f".mbarrier::complete_tx::bytes{multicast}", [],
                  [self.address(dst, "shared"), self._tensor_box(tmap, coords),
                   self.address(bar, "shared"), *mask])

    def _multicast(self, instr: ir.Instr) -> tuple:
        """A copy's `.multicast::cluster` qualifier and [its 16-bit ctaMask operand] (the
        copy's last argument), or ('', [])."""
        if not instr.attrs.get("multicast"):
            return "", []
        return ".multicast::cluster", [self.src(instr.args[-1], imm=False)]

    def op_tma_store(self, instr: ir.Instr) -> None:
        """cp.async.bulk.tensor: a tile of shared memory into the box of the map's tensor (what
        lies outside the tensor is not written), in the thread's bulk group."""
        tmap, *coords, src = instr.args
        self.target.require((8, 0), 90, "cp.async.bulk.tensor")
        self.emit(f"cp.async.bulk.tensor.{len(coords)}d.global.shared::cta.tile.bulk_group", [],
                  [self._tensor_box(tmap, coords), self.address(src, "shared")])

    def _tensor_box(self, tmap: ir.Value, coords: list) -> TensorAddr:
        """`[tmap, {c0, ...}]`: PTX names the coordinates innermost first."""
        return TensorAddr(self.src(tmap, imm=False), [self.src(c) for c in reversed(coords)])

    def op_cp_async_bulk_commit(self, instr: ir.Instr) -> None:
        self.target.require((8, 0), 90, "cp.async.bulk.commit_group")
        self.emit("cp.async.bulk.commit_group", [], [])

    def op_cp_async_bulk_wait(self, instr: ir.Instr) -> None:
        self.target.require((8, 0), 90, "cp.async.bulk.wait_group")
        read = ".read" if instr.attrs["read"] else ""
        self.emit(f"cp.async.bulk.wait_group{read}", [], [Imm(str(instr.attrs["n"]))])

    def op_atom(self, instr: ir.Instr) -> None:
        op, space, t = instr.attrs.get("op"), self._space(instr), instr.type
        if space == "local":
            raise BackendError("atomics on local memory are not supported")
        type_ = self._atom_type(op, t)
        addr = self.address(instr.args[0], space)
        values = [self.src(v, imm=t.bits > 16) for v in instr.args[1:]]
        order = self._order(instr)
        # red has no acquire (.sem relaxed or release only): an acquire's old value goes unread
        if (not self.users.get(instr) and op not in ("cas", "exch")
                and instr.attrs.get("sem") not in ("acquire", "acq_rel")):
            self.emit(f"red{order}.{space}.{op}.{type_}", [], [addr, *values])
        else:
            self.emit(f"atom{order}.{space}.{op}.{type_}", [self.reg(instr)], [addr, *values])

    def _atom_type(self, op: str, t: Scalar) -> str:
        if op == "cas" and t.bits == 16 and not t.is_float:
            return "b16"      # the compare-and-swap loops of 16-bit atomics
        if t.is_bool or (t.is_int and t.bits < 32):
            raise BackendError(f"atomic {op} on {t} is not supported (32- and 64-bit types only)")
        if op == "add":
            if t.name == "f16":
                return "noftz.f16"
            if t.name == "bf16":
                self.target.require((7, 8), 90, "atom.add.bf16")
                return "noftz.bf16"
            return arith(t).replace("s", "u") if t.is_int else arith(t)
        if t.bits == 16:
            raise BackendError(f"atomic {op} on {t} is not supported")
        if op in ("min", "max"):
            if t.is_float:
                raise BackendError(f"atomic {op} on {t} is not supported by PTX")
            return arith(t)
        if op in ("and", "or", "xor", "exch", "cas"):
            return bits(t)
        if op in ("inc", "dec"):
            if t.name != "u32":
                raise BackendError(f"atomic {op} exists only for u32, not {t}")
            return "u32"
        raise BackendError(f"unknown atomic operation {op!r}")

    # --- warp, block, misc ---------------------------------------------------------------------
    def op_shfl(self, instr: ir.Instr) -> None:
        mode, t = instr.attrs.get("mode"), instr.type
        if mode not in ("up", "down", "bfly", "idx") or t.bits != 32:
            raise BackendError(f"shfl {mode} on {t}: needs mode up/down/bfly/idx and a 32-bit type")
        value, lane = self.src(instr.args[0], imm=False), self.src(instr.args[1])
        members = self.src(instr.args[2]) if len(instr.args) > 2 else FULL_MASK
        if len(instr.args) > 3:    # the clamp (the last lane it may read) as a value
            clamp = self.src(instr.args[3])
        else:
            clamp = instr.attrs.get("clamp", 0 if mode == "up" else 0x1F)
            clamp = Imm(hex(clamp) if isinstance(clamp, int) else str(clamp))
        self.emit(f"shfl.sync.{mode}.b32", [self.reg(instr)], [value, lane, clamp, members])

    def op_vote(self, instr: ir.Instr) -> None:
        mode = instr.attrs.get("mode")
        if mode not in ("any", "all", "ballot"):
            raise BackendError(f"unknown vote mode {mode!r}")
        opcode = "vote.sync.ballot.b32" if mode == "ballot" else f"vote.sync.{mode}.pred"
        members = self.src(instr.args[1]) if len(instr.args) > 1 else FULL_MASK
        self.emit(opcode, [self.reg(instr)], [self.src(instr.args[0], imm=False), members])

    def op_elect(self, instr: ir.Instr) -> None:
        """elect.sync d|p: p true in the lowest member lane running it; d, its lane number, is
        never read (a register: ptxas takes the sink `_` there too)."""
        self.target.require((8, 0), 90, "elect.sync")
        members = self.src(instr.args[0]) if instr.args else FULL_MASK
        self.emit("elect.sync", [self.new("r"), self.reg(instr)], [members], paired_dst=True)

    def op_redux(self, instr: ir.Instr) -> None:
        op, t = instr.attrs["op"], instr.type
        if op not in ("add", "min", "max", "and", "or", "xor") or t.name not in ("i32", "u32"):
            raise BackendError(f"redux {op} on {t}: needs add/min/max/and/or/xor and a 32-bit integer")
        members = self.src(instr.args[1]) if len(instr.args) > 1 else FULL_MASK
        kind = "b32" if op in ("and", "or", "xor") else "s32" if t.name == "i32" else "u32"
        self.emit(f"redux.sync.{op}.{kind}", [self.reg(instr)],
                  [self.src(instr.args[0], imm=False), members])

    def op_match(self, instr: ir.Instr) -> None:
        mode, bits = instr.attrs["mode"], instr.args[0].type.bits
        members = self.src(instr.args[1]) if len(instr.args) > 1 else FULL_MASK
        self.emit(f"match.{mode}.sync.b{bits}", [self.reg(instr)],
                  [self.src(instr.args[0], imm=False), members])

    def op_dp4a(self, instr: ir.Instr) -> None:
        a, b, c = instr.args
        signs = ".".join("s32" if v.type.name == "i32" else "u32" for v in (a, b))
        self.emit(f"dp4a.{signs}", [self.reg(instr)],
                  [self.src(a, imm=False), self.src(b), self.src(c)])

    def op_nanosleep(self, instr: ir.Instr) -> None:
        self.emit("nanosleep.u32", [], [self.src(instr.args[0])])

    def op_cluster_barrier(self, instr: ir.Instr) -> None:
        """barrier.cluster.arrive (release) / barrier.cluster.wait (acquire), without .aligned
        (the threads of a warp may reach them apart, as cooperative groups' cluster.sync())."""
        self.target.require((7, 8), 90, "barrier.cluster")
        self.emit(f"barrier.cluster.{instr.attrs['phase']}", [], [])

    def op_mapa(self, instr: ir.Instr) -> None:
        self.target.require((7, 8), 90, "mapa")
        self.emit("mapa.shared::cluster.u64", [self.reg(instr)],
                  [self.src(instr.args[0], imm=False), self.src(instr.args[1])])

    def op_barrier(self, instr: ir.Instr) -> None:
        reduce = instr.attrs.get("reduce")
        if reduce is None:
            self.emit("bar.sync", [], [Imm("0")])
            return
        opcode = "bar.red.popc.u32" if reduce == "popc" else f"bar.red.{reduce}.pred"
        self.emit(opcode, [self.reg(instr)], [Imm("0"), self.src(instr.args[0], imm=False)])

    def op_activemask(self, instr: ir.Instr) -> None:
        self.emit("activemask.b32", [self.reg(instr)], [])

    def op_fence(self, instr: ir.Instr) -> None:
        if instr.attrs.get("sem") == "acq_rel":   # the fences of an ordered atomic's loop
            self.emit(f"fence{self._order(instr)}", [], [])
            return
        # CUDA's __threadfence_block, __threadfence, __threadfence_system (fence.sc.<scope>)
        scope = {"cta": "cta", "gpu": "gl", "sys": "sys"}.get(instr.attrs.get("scope"))
        if scope is None:
            raise BackendError(f"unknown fence scope {instr.attrs.get('scope')!r}")
        self.emit(f"membar.{scope}", [], [])

    def op_warpsync(self, instr: ir.Instr) -> None:
        members = self.src(instr.args[0]) if instr.args else FULL_MASK
        self.emit("bar.warp.sync", [], [members])

    # --- bit operations ---------------------------------------------------------------------
    def op_popc(self, instr: ir.Instr) -> None:
        self.bit_op(instr, instr.op)

    op_clz = op_brev = op_popc

    def op_bfind(self, instr: ir.Instr) -> None:
        self.bit_op(instr, "bfind.shiftamt" if instr.attrs.get("shiftamt") else "bfind")

    def bit_op(self, instr: ir.Instr, opcode: str) -> None:
        """popc, clz, brev (`.b32`/`.b64`) and bfind (`.u32`/`.u64`) of a 32- or 64-bit integer."""
        t = instr.args[0].type
        if not t.is_int or t.bits not in (32, 64):
            raise BackendError(f"{instr.op} needs a 32- or 64-bit integer, not {t}")
        suffix = f"u{t.bits}" if instr.op == "bfind" else f"b{t.bits}"
        self.emit(f"{opcode}.{suffix}", [self.reg(instr)], [self.src(instr.args[0], imm=False)])

    def op_floordiv(self, instr: ir.Instr) -> None:
        raise BackendError(f"{instr.op} reached the backend: passes/ranges.py and "
                           f"passes/lower_floor.py must rewrite it first")

    op_floormod = op_floordiv

    def op_printf(self, instr: ir.Instr) -> None:
        printf.lower_printf(self, instr)

    # --- terminators --------------------------------------------------------------------------
    def op_br(self, instr: ir.Instr) -> None:
        self.block.term = Terminator("br", [self.mblocks[instr.targets[0]]], loc=self.loc)

    def op_cbr(self, instr: ir.Instr) -> None:
        cond, negated = self.branch_tests.get(instr, (instr.args[0], False))
        if cond in self.tested_equal and cond not in self.emitted_equal:
            test = self.new("p")
            self.compare(test, "eq", cond)
        else:
            test = self.src(cond, imm=False)
        targets = [self.mblocks[b] for b in instr.targets]
        self.block.term = Terminator("cbr", targets[::-1] if negated else targets, test,
                                     loc=self.loc)

    def op_ret(self, instr: ir.Instr) -> None:
        self.block.term = Terminator("ret", loc=self.loc)

    def op_trap(self, instr: ir.Instr) -> None:
        self.block.term = Terminator("trap", loc=self.loc)
