"""Run a test or a probe with one of the backend's GPU workarounds taken out (device checks).

A workaround's edge test should fail on the card without it (docs/design.md, "Testing"):

    python benchmarks/probes/without_fix.py FIX pytest [PYTEST ARGS ...]
    python benchmarks/probes/without_fix.py FIX SCRIPT.py [ARGS ...]

FIX is one of these, or several joined by commas (`driver-jit,float-min-max-bits`):
  loop-predicates         no register rule for loop-carried predicates (session 17's allocator)
  loop-predicates-tested  session 18's first rule: apart only from the values branches test
  neg-f16                 `neg.f16`/`neg.bf16` instead of flipping the sign bit
  f32-known-add           `add`/`sub.rn.f32` on values ptxas knows instead of an fma by 1 or -1
  bool-select             a bool select as (c & a) | (!c & b) instead of a `selp` of 0 or 1
  bool-select-xor         a bool select as b ^ ((a ^ b) & c) (sessions 18-22) instead of a `selp`
  cvt-s16-s8              i8 extended by `cvt.s16.s8` instead of through a 32-bit register
  cvt-select              `T(int(b))` and `T(k1 if c else k2)` left as a cvt of a select
  pred-xor                a bool `^`, `==`, `!=` as `xor.pred` instead of `setp` of 0 or 1
  mul-minus-one           an integer `x * -1` as `mul.lo` instead of `~x + 1`
  shared-64-atomics       64-bit shared atomics as `atom`/`red` (ptxas's own spin loop)
  shared-16-cas           16-bit shared CAS loops on `atom.shared.cas.b16` (not on the word)
  divergent-cas-loops     compare-and-swap loops that each lane leaves on its own (session 22)
  branch-on-ne            branches on an integer `!=` (and on `not c`) as written
  repeated-max            `max(max(x, y), y)` (and min) left as two instructions
  vector-bytes            vector loads of 8-bit integers as `ld.v2`/`ld.v4.s8` (or `.u8`)
  selected-predicates     a `selp`'s predicate register free for another bool while the
                          selected value lives (session 24's allocator)
  xor-all-ones            an integer `x ^ -1` as `xor` instead of `not`
  float-min-max-bits      float `atomic_min`/`atomic_max` as a compare-and-swap loop (until
                          session 28) instead of integer atomics on the bits
  driver-jit              the driver's JIT (ptxas 13.0 under driver 580) for the card's tests
                          even where PTXPY_PTXAS names a newer ptxas (runtime/compiler.py)
"""
import os
import runpy
import sys

import ptxpy.transpiler.backend.convert as convert
import ptxpy.transpiler.backend.isel as isel
import ptxpy.transpiler.backend.regalloc as regalloc
import ptxpy.transpiler.lower_intrinsics as lower_intrinsics
import ptxpy.transpiler.passes.sccp as sccp


def tested_only(mfunc, loops, registers, graph):
    """A loop-carried predicate apart only from an entering value that a branch tests."""
    tested = {block.term.cond for block in mfunc.blocks if block.term and block.term.cond}
    bit_of = registers.bit
    for header, body in loops:
        for pred in header.preds:
            if pred in body:
                continue
            for instr in pred.instrs:
                if instr.phi_copy and instr in registers.copies and instr.srcs[0] in tested:
                    dst, src = bit_of[instr.dsts[0]], bit_of[instr.srcs[0]]
                    graph[dst.bit_length() - 1] |= src
                    graph[src.bit_length() - 1] |= dst


def selector():
    """The instruction selector's class."""
    return next(c for c in vars(isel).values() if isinstance(c, type) and hasattr(c, "neg_abs"))


def neg_instruction():
    neg_abs = selector().neg_abs

    def plain_neg(self, instr):
        t = instr.type
        if instr.op != "neg" or not (t.is_float and t.bits == 16):
            return neg_abs(self, instr)
        dst, (a,) = self.reg(instr), self.srcs(instr, imm=False)
        self.emit(f"neg.{isel.signed_arith(t)}", [dst], [a])
    selector().neg_abs = plain_neg


def and_or_select():
    def bool_select(self, dst, cond, a, b):
        const = isel.ir.Const
        if isinstance(a, const) and not a.value and not isinstance(b, const):
            self.emit("not.pred", [dst], [cond])
            self.emit("and.pred", [dst], [dst, self.src(b)])
            return
        if isinstance(a, const) or isinstance(b, const):
            return select(self, dst, cond, a, b)
        taken, other = self.new("p"), self.new("p")
        self.emit("and.pred", [taken], [cond, self.src(a)])
        self.emit("not.pred", [other], [cond])
        self.emit("and.pred", [other], [other, self.src(b)])
        self.emit("or.pred", [dst], [taken, other])
    select = selector().bool_select
    selector().bool_select = bool_select


def xor_select():
    """`isel.bool_select` as it was from session 18 to 22: predicate logic with `xor`."""
    def bool_select(self, dst, cond, a, b):
        const = isel.ir.Const
        if isinstance(a, const) and isinstance(b, const):
            return select(self, dst, cond, a, b)
        if isinstance(a, const):
            if a.value:
                self.emit("or.pred", [dst], [cond, self.src(b)])
            else:
                both = self.new("p")
                self.emit("and.pred", [both], [self.src(b), cond])
                self.emit("xor.pred", [dst], [self.src(b), both])
            return
        if isinstance(b, const):
            if b.value:
                self.emit("not.pred", [dst], [cond])
                self.emit("or.pred", [dst], [dst, self.src(a)])
            else:
                self.emit("and.pred", [dst], [cond, self.src(a)])
            return
        differ = self.new("p")
        self.emit("xor.pred", [differ], [self.src(a), self.src(b)])
        self.emit("and.pred", [differ], [differ, cond])
        self.emit("xor.pred", [dst], [self.src(b), differ])
    select = selector().bool_select
    selector().bool_select = bool_select


def xor_pred():
    def differ(self, dst, pred, a, b):
        self.emit("xor.pred", [dst], [a, b])
        if pred == "eq":
            self.emit("not.pred", [dst], [dst])
    selector().pred_differ = differ


def s16_s8_extension():
    def extend(sel, dst, src, t):
        sel.emit("cvt.s16.s8" if t.is_signed else "cvt.u16.u8", [dst], [src])
    convert.extend_8_bits = extend


def divergent_swap_loop(b, loaded, attempt, again):
    """`lower_intrinsics._swap_loop` as it was until session 23: a lane leaves when its own
    swap succeeds."""
    key = b.hidden(loaded.type)
    b.write(key, loaded)
    header, retry, done = b.new_block("cas"), b.new_block("casretry"), b.new_block("casdone")
    b.br(header)
    b.start(header)
    seen, expected, result = attempt(b.read(key))
    b.cbr(b.emit("cmp", lower_intrinsics.bool_, [seen, expected], {"pred": "eq"}), done, retry)
    b.seal(retry)
    b.start(retry)
    b.write(key, again(seen))
    b.br(header)
    b.seal(header)
    b.seal(done)
    b.start(done)
    return result


def vector_bytes(self, elems, used, t, addr, ld):
    """8-bit vector loads as they were until session 24: one `ld.v2`/`ld.v4` of the type."""
    self.emit(f"{ld}.v{len(elems)}.{isel.mem(t)}", elems, [addr], vec_dst=True)


def driver_jit():
    """The card's tests load the PTX (the driver's JIT compiles it) whatever PTXPY_PTXAS says."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests"))
    import gpu_launcher
    gpu_launcher.runtime_image = lambda *args: None


FIXES = {"loop-predicates": lambda: setattr(regalloc, "keep_loop_predicates_apart",
                                            lambda *args: None),
         "loop-predicates-tested": lambda: setattr(regalloc, "keep_loop_predicates_apart",
                                                   tested_only),
         "neg-f16": neg_instruction,
         "bool-select": and_or_select,
         "bool-select-xor": xor_select,
         "cvt-s16-s8": s16_s8_extension,
         "pred-xor": xor_pred,
         "shared-64-atomics": lambda: setattr(lower_intrinsics, "_spun_by_ptxas",
                                             lambda op, array: False),
         "shared-16-cas": lambda: setattr(lower_intrinsics, "_halves_spun_by_ptxas",
                                         lambda space: False),
         "divergent-cas-loops": lambda: setattr(lower_intrinsics, "_swap_loop",
                                               divergent_swap_loop),
         "branch-on-ne": lambda: setattr(selector(), "_plan_branch_tests", lambda self: None),
         "mul-minus-one": lambda: setattr(selector(), "times_minus_one",
                                          staticmethod(lambda instr: None)),
         "cvt-select": lambda: setattr(sccp, "_convert_select", lambda *args: False),
         "repeated-max": lambda: setattr(sccp, "_repeated_min_max", lambda *args: None),
         "vector-bytes": lambda: setattr(selector(), "bytes_one_by_one", vector_bytes),
         "selected-predicates": lambda: setattr(regalloc, "keep_selected_predicates_live",
                                               lambda *args: None),
         "f32-known-add": lambda: setattr(selector(), "_known_to_ptxas", lambda self, instr: False),
         "xor-all-ones": lambda: setattr(selector(), "_all_ones_operand",
                                         staticmethod(lambda instr: None)),
         "float-min-max-bits": lambda: setattr(lower_intrinsics, "_float_min_max_on_bits",
                                               lambda op, array: False),
         "driver-jit": driver_jit}


def main():
    for fix in sys.argv[1].split(","):
        FIXES[fix]()
    sys.argv = sys.argv[2:]
    if sys.argv[0] == "pytest":
        import pytest
        sys.exit(pytest.main(sys.argv[1:]))
    runpy.run_path(sys.argv[0], run_name="__main__")


if __name__ == "__main__":
    main()
