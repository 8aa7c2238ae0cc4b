"""Sparse conditional constant propagation (Wegman-Zadeck) with exact fixed-width folding.

Folding uses `interp.evaluate`, the interpreter's own semantics: wrap-around integers,
truncating `div`/`rem`, floats rounded in their own width (plain Python numbers, no NumPy).
Division by zero and hardware approximations are never folded. Branches on constants become
`br`s and the blocks no executable edge reaches are removed. A few algebraic identities
(`x + 0`, `x * 1`, `select` on a constant, ...) are applied to what is left.
"""
from __future__ import annotations

import math

from ..interp import (APPROX_OPS, PURE_OPS, InterpError, evaluate, foldable, to_python,
                      to_value, wrap_int)
from ..ir import Block, Const, Function, Instr, Undef, Value, pass_users
from .copyprop import replace_all_uses
from .simplifycfg import make_branch, remove_unreachable

TOP = "top"         # no value seen yet (optimistic); compared by identity, as is BOTTOM
BOTTOM = "bottom"   # not a constant


def run(func: Function) -> Function:
    if _may_fold(func):
        solver = _Solver(func)
        solver.solve()
        changed = _replace_constants(func, solver)
        uses = solver.uses
    else:   # the solver would find no constant, and so every branch executable
        changed, uses = False, pass_users(func)
    changed |= remove_unreachable(func)
    changed |= _simplify_all(func, uses)
    func.edits += changed
    return func


def _may_fold(func: Function) -> bool:
    """Whether the solver could find any value constant. The first value it finds constant has
    no argument found constant before it, so it is one of these, with Const arguments of its
    own: a phi with one (tested first: every loop's counter has one), a foldable instruction
    whose arguments all are, a `select` on one, an absorbing `x * 0`, `x & 0`, `b or true`
    (`_absorbing`); and a branch folds only on a constant condition. Without any, every value
    stays non-constant (or undecided) and `_replace_constants` would change nothing."""
    for block in func.blocks:
        for phi in block.phis:
            for arg in phi.args:
                if arg.__class__ is Const:
                    return True
    for block in func.blocks:
        for instr in block.instrs:
            op, args = instr.op, instr.args
            if op not in _FOLDABLE_OPS:
                if op == "cbr" and args[0].__class__ is Const:
                    return True
                continue
            for arg in args:
                if arg.__class__ is not Const:
                    break
            else:
                return True
            if op == "select":
                if args[0].__class__ is Const:
                    return True
            elif op in _ABSORBING_OPS and _absorbing(instr, args) is not None:
                return True
    return False


def _replace_constants(func: Function, solver: "_Solver") -> bool:
    """Replace what the solver proved constant, and fold the branches on constants; whether
    there was any."""
    uses = solver.uses
    folded = {instr for instr, value in solver.lattice.items()
              if value.__class__ is Const and not instr.has_side_effects}
    for instr in folded:
        replace_all_uses(uses, instr, solver.lattice[instr])
        instr.block = None
    changed = bool(folded)
    for block in func.blocks:
        if block not in solver.executable:
            continue
        if folded:
            block.phis = [phi for phi in block.phis if phi.block is not None]
            block.instrs = [instr for instr in block.instrs if instr.block is not None]
        term = block.instrs[-1]
        if term.op == "cbr":
            cond = solver.lattice_of(term.args[0])
            if cond.__class__ is Const:
                make_branch(term, term.targets[0 if cond.value else 1])
                changed = True
    return changed


def _simplify_all(func: Function, uses: dict) -> bool:
    """Apply the algebraic identities, in program order (a replacement feeds later ones);
    whether any applied."""
    changed = False
    for block in func.blocks:
        removed = False
        for instr in block.instrs:
            if instr.op == "cvt":
                changed |= _convert_select(instr, uses)
            if instr.op in _SIMPLIFIED_OPS and (_may_simplify(instr.args)
                                                or instr.op in ("min", "max")):
                if instr.op == "cmp":
                    changed |= _compare_unshifted(instr, uses)
                replacement = simplify(instr)
                if replacement is not None:
                    replace_all_uses(uses, instr, replacement)
                    instr.block = None
                    removed = True
        if removed:
            block.instrs = [instr for instr in block.instrs if instr.block is not None]
            changed = True
    return changed


class _Solver:
    def __init__(self, func: Function):
        self.func = func
        self.uses = pass_users(func)
        self.lattice: dict[Instr, object] = {}
        self.executable: set[Block] = {func.entry}
        self.swept: set[Block] = set()   # executable blocks whose instructions were all visited
        self.edges: set[tuple[Block, Block]] = set()
        self.block_work: list[Block] = [func.entry]
        self.instr_work: list[Instr] = []

    def solve(self) -> None:
        self._drain()
        # values still TOP only because they merge Undefs: give up on them and go on
        while self._resolve_undefs():
            self._drain()

    def _drain(self) -> None:
        instr_work, block_work, swept = self.instr_work, self.block_work, self.swept
        lattice, visit, evaluate, uses = self.lattice, self._visit, self._evaluate, self.uses
        while block_work or instr_work:
            while instr_work:
                instr = instr_work.pop()
                # (a block not swept yet visits the instruction then, with what is known then)
                if instr.block in swept and lattice.get(instr) is not BOTTOM:
                    visit(instr)
            if block_work:
                block = block_work.pop()
                swept.add(block)
                for instr in block.phis:
                    visit(instr)
                for instr in block.instrs:
                    # `visit(instr)`, inline for the usual value: a block is swept once, so
                    # no value of it is in the lattice yet (TOP)
                    if instr.type is None or instr in lattice:
                        visit(instr)
                        continue
                    new = evaluate(instr) if instr.op in _FOLDABLE_OPS else BOTTOM
                    if new is not TOP:
                        lattice[instr] = new
                        users_of = uses.get(instr)
                        if users_of:
                            instr_work.extend(users_of)

    def _resolve_undefs(self) -> bool:
        changed = False
        for block in list(self.executable):
            for phi in block.phis:
                if phi not in self.lattice and any(isinstance(a, Undef) for a in phi.args):
                    self._set(phi, BOTTOM)
                    changed = True
            term = block.terminator
            if term.op == "cbr" and self.lattice_of(term.args[0]) is TOP:
                self._set(term.args[0], BOTTOM)
                self._visit(term)
                changed = True
        return changed

    def lattice_of(self, value: Value):
        cls = value.__class__
        if cls is Instr:
            return self.lattice.get(value, TOP)
        if cls is Const:
            return value
        return BOTTOM

    def _set(self, instr: Instr, value) -> None:
        old = self.lattice.get(instr, TOP)
        if old is value or (old.__class__ is Const and old == value):
            return
        self.lattice[instr] = value
        users_of = self.uses.get(instr)
        if users_of:
            self.instr_work.extend(users_of)

    def _mark_edge(self, src: Block, dst: Block) -> None:
        if (src, dst) in self.edges:
            return
        self.edges.add((src, dst))
        if dst not in self.executable:
            self.executable.add(dst)
            self.block_work.append(dst)
        else:
            self.instr_work.extend(dst.phis)

    def _visit(self, instr: Instr) -> None:
        lattice = self.lattice
        old = lattice.get(instr, TOP)
        if old is BOTTOM:
            return
        op = instr.op
        if instr.type is None:
            if op == "br" or op == "cbr":
                self._visit_branch(instr)
            return
        if op == "phi":
            new = self._merge_phi(instr)
        elif op not in _FOLDABLE_OPS:
            new = BOTTOM
        else:
            new = self._evaluate(instr)
        if new is not old and not (old.__class__ is Const and old == new):
            lattice[instr] = new
            users_of = self.uses.get(instr)
            if users_of:
                self.instr_work.extend(users_of)

    def _visit_branch(self, instr: Instr) -> None:
        if instr.op == "br":
            self._mark_edge(instr.block, instr.targets[0])
            return
        cond = self.lattice_of(instr.args[0])
        if cond is BOTTOM:
            for target in instr.targets:
                self._mark_edge(instr.block, target)
        elif cond.__class__ is Const:
            self._mark_edge(instr.block, instr.targets[0 if cond.value else 1])

    def _merge_phi(self, phi: Instr):
        result = TOP
        block = phi.block
        edges = self.edges
        for pred, arg in zip(block.preds, phi.args):
            if (pred, block) not in edges or arg.__class__ is Undef:
                continue
            value = self.lattice_of(arg)
            if value is TOP:
                continue
            if value is BOTTOM or (result is not TOP and result != value):
                return BOTTOM
            result = value
        return result

    def _evaluate(self, instr: Instr):
        """The lattice value of `instr`, a foldable op (`_FOLDABLE_OPS`)."""
        op = instr.op
        # the lattice values of the args; a BOTTOM one decides but for `select` and the
        # absorbing ops (values are compared by identity: `BOTTOM in values` would call
        # `Const.__eq__` for each)
        lattice, values = self.lattice, []
        bottom_decides = op not in _SELECT_OR_ABSORBING
        constant = True
        for arg in instr.args:
            cls = arg.__class__
            if cls is Instr:
                value = lattice.get(arg, TOP)
                if value.__class__ is not Const:
                    if value is BOTTOM and bottom_decides:
                        return BOTTOM
                    constant = False
            elif cls is Const:
                value = arg
            else:
                if bottom_decides:
                    return BOTTOM
                value, constant = BOTTOM, False
            values.append(value)
        if instr.attrs and not foldable(op, instr.attrs):
            return BOTTOM
        if op == "select" and values[0].__class__ is Const:
            return values[1 if values[0].value else 2]
        if constant:
            return fold(instr, values)
        if op in _ABSORBING_OPS:
            absorbed = _absorbing(instr, values)
            if absorbed is not None:
                return absorbed
        for value in values:
            if value is BOTTOM:
                return BOTTOM
        return TOP


#: ops `interp.foldable` may accept (it has the last word on attributes such as `approx`)
_FOLDABLE_OPS = PURE_OPS - APPROX_OPS
_ABSORBING_OPS = frozenset({"mul", "and", "or"})
_SELECT_OR_ABSORBING = _ABSORBING_OPS | {"select"}


def fold(instr: Instr, consts: list[Const]):
    """The Const `instr` computes from constant args, or BOTTOM where it must not be folded."""
    args = [to_value(c.value, c.type) for c in consts]
    try:
        result = evaluate(instr.op, instr.type, instr.attrs, args, [c.type for c in consts])
    except InterpError:
        return BOTTOM
    return Const(instr.type, to_python(result, instr.type))


def _absorbing(instr: Instr, values: list):
    """A constant result decided by one constant arg alone (`x * 0`, `x & 0`, `b or true`)."""
    t = instr.type
    if instr.op not in ("mul", "and", "or") or not (t.is_int or t.is_bool):
        return None
    absorbing = {"mul": 0, "and": 0, "or": wrap_int(-1, t) if t.is_int else True}[instr.op]
    if t.is_bool:
        absorbing = bool(absorbing)
    for value in values:
        if isinstance(value, Const) and value.value == absorbing:
            return Const(t, absorbing)
    return None


# --- algebraic identities --------------------------------------------------------------------
#: the ops `simplify` has an identity for
_SIMPLIFIED_OPS = frozenset({"select", "add", "sub", "mul", "div", "rem", "floordiv", "floormod",
                             "and", "or", "xor", "min", "max", "shl", "shr", "cmp"})
_RIGHT_IDENTITY = {"add": 0, "sub": 0, "mul": 1, "div": 1, "or": 0, "xor": 0, "shl": 0, "shr": 0}
_LEFT_IDENTITY = {"add": 0, "mul": 1, "or": 0, "xor": 0}


def simplify(instr: Instr) -> Value | None:
    """A value equal to `instr` in every execution, when an identity gives one."""
    op, args, t = instr.op, instr.args, instr.type
    if op == "select":
        if isinstance(args[0], Const):
            return args[1] if args[0].value else args[2]
        return args[1] if _same(args[1], args[2]) else None
    if len(args) != 2 or t is None:
        return None
    a, b = args
    if t.is_int and op in ("and", "or", "min", "max") and _same(a, b):
        return a
    if t.is_int and op in ("min", "max"):
        inner = _repeated_min_max(op, a, b)
        if inner is not None:
            return inner
    if t.is_int and op in ("sub", "xor") and _same(a, b):
        return Const(t, 0)
    if t.is_int:
        if op == "and" and _is(b, wrap_int(-1, t)):
            return a
        if op == "and" and _is(a, wrap_int(-1, t)):
            return b
        if op in _RIGHT_IDENTITY and _is(b, _RIGHT_IDENTITY[op]):
            return a
        if (op == "shl" or op == "shr" and t.kind == "uint") and _shifts_out(b, t):
            return Const(t, 0)
        if op in ("rem", "floormod") and _is(a, 0):
            return Const(t, 0)      # 0 % 0 too, as documented; ptxas got 0 % x wrong in a loop
        if op in _LEFT_IDENTITY and _is(a, _LEFT_IDENTITY[op]):
            return b
    elif t.is_bool:
        if op == "and":
            return a if _is(b, True) else b if _is(a, True) else None
        if op in ("or", "xor"):
            return a if _is(b, False) else b if _is(a, False) else None
    elif t.is_float:
        return _float_identity(op, a, b)
    if op == "cmp" and a.type.is_int and _same(a, b):
        return Const(t, instr.attrs["pred"] in ("eq", "le", "ge"))
    if op == "cmp" and a.type.is_bool and instr.attrs["pred"] in ("eq", "ne"):
        keeps = instr.attrs["pred"] == "eq"      # p == True and p != False are p
        return a if _is(b, keeps) else b if _is(a, keeps) else None
    return None


def _repeated_min_max(op: str, a: Value, b: Value) -> Value | None:
    """`max(max(x, y), y)` -> `max(x, y)` (and so for min, either side). Also a workaround:
    ptxas made `max(max(x, 0), 0) == 0` one `VIMNMX.RELU` whose predicate was wrong for x > 0
    (program 1064 of seed 4026, max_branch_probe.py, H100)."""
    for inner, other in ((a, b), (b, a)):
        if inner.__class__ is Instr and inner.op == op \
                and any(_same(arg, other) for arg in inner.args):
            return inner
    return None


def _convert_select(cvt: Instr, uses: dict) -> bool:
    """`T(int(b))` -> `T(b)` for a bool b, and `T(k1 if c else k2)` -> `T(k1) if c else T(k2)`
    for constants k1, k2: one instruction, not a select and a cvt. Also a workaround: ptxas
    turned `cvt.rn.bf16.s32` (or f16) of `selp.s32 1, 0` in a loop it unrolled into the integer
    1, not 1.0 (program 827, cvtloop_probe.py, H100). Whether it rewrote `cvt`."""
    source = cvt.args[0]
    if source.__class__ is not Instr or cvt.type.is_bool:
        return False
    if source.op == "cvt" and source.args[0].type.is_bool and not source.type.is_bool:
        new_args = [source.args[0]]
    elif (source.op == "select" and source.args[1].__class__ is Const
          and source.args[2].__class__ is Const):
        arms = [fold(cvt, [k]) for k in source.args[1:]]
        if BOTTOM in arms:
            return False
        cvt.op, cvt.attrs = "select", {}
        new_args = [source.args[0], *arms]
    else:
        return False
    uses[source].remove(cvt)
    cvt.args = new_args
    if new_args[0].__class__ is Instr:
        uses.setdefault(new_args[0], []).append(cvt)
    return True


def _shifts_out(count: Value, t) -> bool:
    """A constant shift count (read as unsigned 32-bit, as PTX does) of t's width or more."""
    return isinstance(count, Const) and int(count.value) & 0xFFFFFFFF >= t.bits


_SWAPPED = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}


def _compare_unshifted(cmp: Instr, uses: dict) -> bool:
    """`(x >> k) < C` -> `x < C << k`, and so for <=, >, >=: a shift right is a floor division
    by 2**k in both signednesses, so the bound moves exactly (when it fits the type). `w < warp`
    with `warp = t // 32` becomes `t > 32 * w + 31`, and `warp` need not stay live (nvcc does
    the same). Whether it did."""
    pred = cmp.attrs["pred"]
    a, b = cmp.args
    if isinstance(a, Const) and pred in _SWAPPED:
        a, b, pred = b, a, _SWAPPED[pred]
    if not (pred in _SWAPPED and isinstance(a, Instr) and a.op == "shr"
            and isinstance(b, Const) and isinstance(a.args[1], Const)):
        return False
    t, k = a.type, int(a.args[1].value)
    if not (t.is_int and 0 <= k < t.bits):
        return False
    c = int(b.value)
    bound = c << k if pred in ("lt", "ge") else ((c + 1) << k) - 1
    low, high = (-(1 << (t.bits - 1)), (1 << (t.bits - 1)) - 1) if t.is_signed else (0, (1 << t.bits) - 1)
    if not low <= bound <= high:
        return False
    x = a.args[0]
    cmp.args = [x, Const(t, bound)]
    cmp.attrs = dict(cmp.attrs, pred=pred)
    uses[a].remove(cmp)
    if isinstance(x, Instr):
        uses.setdefault(x, []).append(cmp)
    return True


def _float_identity(op: str, a: Value, b: Value) -> Value | None:
    # x + 0.0 is not x (-0.0 + 0.0 is +0.0), but x - 0.0, x + -0.0, x * 1.0, x / 1.0 are
    if op in ("mul", "div") and _is_float(b, 1.0, False):
        return a
    if op == "mul" and _is_float(a, 1.0, False):
        return b
    if op == "sub" and _is_float(b, 0.0, False):
        return a
    if op == "add" and _is_float(b, 0.0, True):
        return a
    if op == "add" and _is_float(a, 0.0, True):
        return b
    return None


def _may_simplify(args: list) -> bool:
    """Whether an identity could apply: every one needs a constant operand or the same operand
    twice (`select`: the last two), except `_repeated_min_max`, which the caller tries on every
    min and max."""
    a, b = args[-2], args[-1]
    return a is b or a.__class__ is Const or b.__class__ is Const or args[0].__class__ is Const


def _same(a: Value, b: Value) -> bool:
    return a is b or (isinstance(a, Const) and a == b)


def _is(value: Value, number) -> bool:
    return isinstance(value, Const) and value.value == number and type(value.value) is type(number)


def _is_float(value: Value, number: float, negative: bool) -> bool:
    return (isinstance(value, Const) and value.type.is_float and value.value == number
            and (math.copysign(1.0, value.value) < 0) == negative)
