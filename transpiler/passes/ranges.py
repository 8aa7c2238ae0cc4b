"""Integer value ranges (intervals), and the floor fix-ups of `//` and `%` they make unneeded.

Every integer value gets an interval [lo, hi] of its type's values (unsigned types count from 0)
that holds each time the value is computed:

- special registers are bounded by the launch limits (`tid` < 1024, 1 <= `ntid` <= 1024,
  `ctaid` < 2^31, 1 <= `nctaid` < 2^31, `laneid` < 32), array shapes lie in [0, 2^31)
  (an assumption: a shape is an `i32`, yet the launcher accepts extents up to 2^32 - 1, which
  read as negative), constants are exact; loads, other parameters and anything not modelled
  may be any value of their type;
- each operation is computed exactly on the operand intervals and then wrapped as ptxpy
  integers wrap: if the exact result can leave the type's range (other than as a whole, by a
  multiple of 2^bits), it may be any value of the type;
- a branch on a comparison bounds its operands in the blocks that only that branch reaches
  (and on the phi edges it feeds): in the body of `for k in range(n)`, `k <= n.hi - 1`, so
  `k + 1` cannot wrap.

Phis are solved by ascending iteration that widens a phi to its type's limit in a direction it
keeps growing in (so loops terminate), then a few descending rounds recover the bounds that the
branches imply (`while w < 6: w += 1` gives w in [0, 6]).

For a >= 0 and b >= 0, or a <= 0 and b < 0, Python's floor semantics and C's truncation agree
(b == 0 is undefined either way), so `floordiv`/`floormod` become `div`/`rem`; a division of a
non-negative value by a power of two becomes a shift or a mask. Where only the divisor's sign is
known, the `divisor_sign` attribute tells passes/lower_floor.py, which then tests only the
remainder's sign.
"""
from __future__ import annotations

from collections import Counter
from typing import Callable, Iterator, Optional

from ..cfg import dom_tree, facts_along_dominators
from ..ir import Block, Const, Function, Instr, Undef, Value, u32
from ptxpy.types import Scalar

Interval = tuple  # (lo, hi), lo <= hi, both values of the interval's type

_SREG_BOUNDS = {"tid": (0, 1023), "ntid": (1, 1024), "ctaid": (0, 2**31 - 1),
                "nctaid": (1, 2**31 - 1), "laneid": (0, 31), "cluster_ctarank": (0, 15),
                "cluster_nctarank": (1, 16), "cluster_ctaid": (0, 15), "cluster_nctaid": (1, 16),
                "clusterid": (0, 2**31 - 1)}
_SHAPE_BOUNDS = (0, 2**31 - 1)
_WIDEN_AFTER = 2        # growths of a phi before it is widened
_DESCENDING_ROUNDS = 2
_NEGATED = {"lt": "ge", "le": "gt", "gt": "le", "ge": "lt", "eq": "ne", "ne": "eq"}
_SWAPPED = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le", "eq": "eq", "ne": "ne"}


def run(func: Function) -> Function:
    divisions = [i for b in func.blocks for i in b.instrs
                 if i.op in ("floordiv", "floormod", "div", "rem") and i.type.is_int]
    if not divisions:
        return func
    ranges = Ranges(func, needed_by=divisions)
    changed = False
    for instr in divisions:
        a, b = (ranges.at(arg, instr.block) for arg in instr.args)
        if a is not None and b is not None:
            changed |= _rewrite_division(instr, a, b)
    func.edits += changed
    return func


def _rewrite_division(instr: Instr, a: Interval, b: Interval) -> bool:
    """What the intervals of its operands allow of `instr`; whether that changed it."""
    nonnegative = a[0] >= 0 and b[0] >= 0
    if not (nonnegative or (a[1] <= 0 and b[1] < 0)):
        if (instr.op in ("floordiv", "floormod") and not isinstance(instr.args[1], Const)
                and (b[0] >= 0 or b[1] < 0)):
            sign = 1 if b[0] >= 0 else -1   # a cheaper fix-up
            if instr.attrs.get("divisor_sign") != sign:
                instr.attrs["divisor_sign"] = sign
                return True
        return False
    divisor = instr.args[1]
    is_div = instr.op in ("div", "floordiv")
    if nonnegative and isinstance(divisor, Const) and _is_power_of_two(divisor.value):
        k = divisor.value.bit_length() - 1
        instr.op = "shr" if is_div else "and"
        mask = Const(divisor.type, divisor.value - 1)
        instr.args = [instr.args[0], Const(u32, k) if is_div else mask]
        return True
    if instr.op in ("floordiv", "floormod"):
        instr.op = "div" if is_div else "rem"
        return True
    return False


def _is_power_of_two(value: int) -> bool:
    return value > 0 and value & (value - 1) == 0


# --- the analysis ------------------------------------------------------------------------------
class Ranges:
    """Intervals of a function's integer values; `at(value, block)` is the interval of `value`
    where `block` uses it, or None where no execution reaches that use.

    With `needed_by`, only the values those instructions' args depend on are solved (a value's
    interval depends only on its inputs, so theirs come out the same as in a whole solve)."""

    def __init__(self, func: Function, needed_by: Optional[list] = None):
        dom = dom_tree(func)
        blocks = dom.order   # (reverse postorder; only read)
        self.shapes = _shape_params(func)
        # per block, {value: ((pred, other), ...)}: `value pred other` holds there
        self.facts = facts_along_dominators(
            dom, lambda facts, term, block: _by_value(_branch_facts(term, block), facts))
        self.edge_facts = {(p, b): _by_value(_branch_facts(p.terminator, b))
                           for b in blocks for p in b.preds if p in self.facts}
        order = [i for b in blocks for group in (b.phis, b.instrs) for i in group
                 if _is_int(i.type)]
        if needed_by is not None:
            solved = self._inputs_closure(needed_by)
            order = [i for i in order if i in solved]
        self.order = order
        self.state: dict[Instr, Interval] = {}
        self.dependents: dict[Value, set] = {}
        for instr in self.order:
            for value in self._inputs(instr):
                self.dependents.setdefault(value, set()).add(instr)
        self._ascend()
        self._descend()

    def _inputs_closure(self, instrs: list) -> set:
        """The instructions the intervals of `instrs`' args (where they are used) depend on."""
        todo = []
        for instr in instrs:
            facts = self.facts.get(instr.block, {})
            for arg in instr.args:
                todo.append(arg)
                todo.extend(other for _, other in facts.get(arg, ()))
        found: set = set()
        while todo:
            value = todo.pop()
            if value.__class__ is Instr and value not in found and _is_int(value.type):
                found.add(value)   # (other values count as any value: their inputs do not)
                todo.extend(self._inputs(value))
        return found

    def at(self, value: Value, block: Block) -> Optional[Interval]:
        return self._refined(self.range(value), value, self.facts.get(block, {}))

    def range(self, value: Value) -> Optional[Interval]:
        """The interval of `value` wherever it is used."""
        if isinstance(value, Const):
            return (int(value.value), int(value.value))
        if isinstance(value, Undef):
            return _full(value.type)
        return self.state.get(value)

    def _ascend(self) -> None:
        growths: Counter = Counter()

        def grow(instr: Instr) -> bool:
            old = self.state.get(instr)
            new = _join(old, self._evaluate(instr))
            if new == old:
                return False
            if instr.op == "phi" and old is not None:
                growths[instr] += 1
                if growths[instr] > _WIDEN_AFTER:
                    new = _widen(old, new, instr.type)
            self.state[instr] = new
            return True
        self._sweep(grow)

    def _descend(self) -> None:
        # from a post-fixpoint, re-evaluating with monotone transfers stays a post-fixpoint
        def narrow(instr: Instr) -> bool:
            old = self.state.get(instr)
            new = _meet(old, self._evaluate(instr))
            if new == old:
                return False
            if new is None:
                del self.state[instr]
            else:
                self.state[instr] = new
            return True
        self._sweep(narrow, _DESCENDING_ROUNDS)

    def _sweep(self, update: Callable[[Instr], bool], rounds: Optional[int] = None) -> None:
        """Apply `update` in reverse postorder to the instructions whose inputs changed (all at
        first), until none did or after `rounds` passes."""
        pending = set(self.order)
        while pending and rounds != 0:
            rounds = None if rounds is None else rounds - 1
            for instr in self.order:
                if instr in pending:
                    pending.discard(instr)
                    if update(instr):
                        pending |= self.dependents.get(instr, set())

    def _inputs(self, instr: Instr) -> Iterator[Value]:
        """The values `instr`'s interval is computed from, the bounds of branch facts included."""
        if instr.op == "phi":
            uses = [(arg, (self.facts.get(pred, {}), self.edge_facts.get((pred, instr.block), {})))
                    for arg, pred in zip(instr.args, instr.block.preds)]
        else:
            uses = [(arg, (self.facts.get(instr.block, {}),)) for arg in instr.args]
        for arg, fact_sets in uses:
            yield arg
            for facts in fact_sets:
                yield from (other for _, other in facts.get(arg, ()))

    def _evaluate(self, instr: Instr) -> Optional[Interval]:
        block = instr.block
        if instr.op == "phi":
            result = None
            for arg, pred in zip(instr.args, block.preds):
                result = _join(result, self._incoming(arg, pred, block))
            return result
        # a bool operand is 0 or 1; float operands reach only cvt and bitcast, which check types
        args = [self.at(a, block) if _is_int(a.type) else (0, 1) for a in instr.args]
        if any(a is None for a in args):
            return None
        if instr.op == "param":
            exact = _SHAPE_BOUNDS if instr.attrs.get("name") in self.shapes else None
        else:
            transfer = _TRANSFER.get(instr.op)
            exact = transfer(instr, *args) if transfer else None
        return _wrap(exact, instr.type)

    def _incoming(self, arg: Value, pred: Block, block: Block) -> Optional[Interval]:
        if (pred, block) not in self.edge_facts:
            return None   # an unreachable predecessor
        interval = self.at(arg, pred)
        return self._refined(interval, arg, self.edge_facts[(pred, block)])

    def _refined(self, interval, value: Value, facts: dict) -> Optional[Interval]:
        for pred, other in facts.get(value, ()):
            interval = _bounded_by(interval, pred, self.range(other))
        return interval


def _shape_params(func: Function) -> set[str]:
    """The `.param` names that hold array extents."""
    return {name for spec in func.params if spec.kind == "array"
            for name, t in spec.ptx_params(func.name)[1:] if t == "u32"}


def _is_int(t: Optional[Scalar]) -> bool:
    return t is not None and t.is_int


# --- facts from branches -------------------------------------------------------------------------
def _by_value(facts: list, base: Optional[dict] = None) -> dict:
    merged = dict(base or {})
    for value, pred, other in facts:
        merged[value] = merged.get(value, ()) + ((pred, other),)
    return merged


def _branch_facts(term: Instr, target: Block) -> list:
    """(value, pred, other) comparisons that hold on the edge from `term`'s block to `target`."""
    if term is None or term.op != "cbr":
        return []
    return _conditions(term.args[0], target is term.targets[0])


def _conditions(cond: Value, holds: bool) -> list:
    if not isinstance(cond, Instr):
        return []
    if cond.op == "cmp" and cond.args[0].type.is_int:
        pred = cond.attrs["pred"] if holds else _NEGATED[cond.attrs["pred"]]
        x, y = cond.args
        return [(v, p, w) for v, p, w in ((x, pred, y), (y, _SWAPPED[pred], x))
                if isinstance(v, Instr)]
    if cond.op == "not":
        return _conditions(cond.args[0], not holds)
    if (cond.op, holds) in (("and", True), ("or", False)):
        return _conditions(cond.args[0], holds) + _conditions(cond.args[1], holds)
    return []


def _bounded_by(x: Optional[Interval], pred: str, y: Optional[Interval]) -> Optional[Interval]:
    """`x` where `x pred y` holds for some value of `y`; None if it cannot."""
    if x is None or y is None:
        return None
    lo, hi = x
    if pred in ("lt", "le"):
        hi = min(hi, y[1] - (pred == "lt"))
    elif pred in ("gt", "ge"):
        lo = max(lo, y[0] + (pred == "gt"))
    elif pred == "eq":
        lo, hi = max(lo, y[0]), min(hi, y[1])
    elif y[0] == y[1]:   # ne a single value: it can only trim an end
        lo, hi = lo + (lo == y[0]), hi - (hi == y[0])
    return (lo, hi) if lo <= hi else None


# --- the lattice -------------------------------------------------------------------------------
def _limits(t: Scalar) -> Interval:
    if t.is_signed:
        return (-(1 << (t.bits - 1)), (1 << (t.bits - 1)) - 1)
    return (0, (1 << t.bits) - 1)


def _full(t: Scalar) -> Interval:
    return _limits(t) if _is_int(t) else None


def _wrap(exact: Optional[Interval], t: Scalar) -> Interval:
    """The values of `t` that the exact results `exact` wrap to (None: any value)."""
    low, high = _limits(t)
    if exact is None:
        return (low, high)
    lo, hi = exact
    periods = (lo - low) >> t.bits    # whole multiples of 2^bits below `t`'s range
    lo, hi = lo - (periods << t.bits), hi - (periods << t.bits)
    return (lo, hi) if hi <= high else (low, high)


def _join(a: Optional[Interval], b: Optional[Interval]) -> Optional[Interval]:
    if a is None or b is None:
        return a if b is None else b
    return (min(a[0], b[0]), max(a[1], b[1]))


def _meet(a: Optional[Interval], b: Optional[Interval]) -> Optional[Interval]:
    if a is None or b is None:
        return None
    lo, hi = max(a[0], b[0]), min(a[1], b[1])
    return (lo, hi) if lo <= hi else None


def _widen(old: Interval, new: Interval, t: Scalar) -> Interval:
    low, high = _limits(t)
    return (low if new[0] < old[0] else old[0], high if new[1] > old[1] else old[1])


# --- transfer functions: exact (unwrapped) result interval, or None for any value ---------------
def _corners(fn: Callable, a: Interval, b: Interval) -> Interval:
    values = [fn(x, y) for x in a for y in b]
    return (min(values), max(values))


def _divide(fn: Callable) -> Callable:
    """A division, monotone in each operand while the divisor keeps its sign; None if b may be 0."""
    def transfer(instr, a, b):
        return None if b[0] <= 0 <= b[1] else _corners(fn, a, b)
    return transfer


def _truncated_quotient(x: int, y: int) -> int:
    q = abs(x) // abs(y)
    return q if (x < 0) == (y < 0) else -q


def _truncated_remainder(instr, a, b):
    if b[0] <= 0 <= b[1]:
        return None
    largest = max(-b[0], b[1]) - 1     # |r| < |b|, and r has the sign of a
    return (max(a[0], -largest) if a[0] < 0 else 0, min(a[1], largest) if a[1] > 0 else 0)


def _floor_remainder(instr, a, b):
    if b[0] > 0:
        return (0, min(b[1] - 1, a[1]) if a[0] >= 0 else b[1] - 1)
    if b[1] < 0:
        return (max(b[0] + 1, a[0]) if a[1] <= 0 else b[0] + 1, 0)
    return None


def _and(instr, a, b):
    bounds = [x[1] for x in (a, b) if x[0] >= 0]
    return (0, min(bounds)) if bounds else None


def _or_xor(instr, a, b):
    if a[0] < 0 or b[0] < 0:
        return None
    lowest = max(a[0], b[0]) if instr.op == "or" else 0
    return (lowest, (1 << max(a[1], b[1]).bit_length()) - 1)


def _not(instr, a):
    if instr.type.is_signed:
        return (-a[1] - 1, -a[0] - 1)
    top = _limits(instr.type)[1]
    return (top - a[1], top - a[0])


def _abs(instr, a):
    if not instr.type.is_signed:
        return None
    if a[0] >= 0:
        return a
    if a[1] <= 0:
        return (-a[1], -a[0])
    return (0, max(-a[0], a[1]))


def _shift(fn: Callable) -> Callable:
    def transfer(instr, a, s):
        bits = instr.type.bits
        # PTX reads the amount as unsigned and clamps it to the width
        amounts = (0, bits) if s[0] < 0 else (s[0], min(s[1], bits))
        return _corners(fn, a, amounts)
    return transfer


def _convert(instr, a):
    return a if _is_int(instr.args[0].type) or instr.args[0].type.is_bool else None


def _sreg(instr):
    return _SREG_BOUNDS.get(instr.attrs.get("name", "").split(".")[0])


def _fma(instr, a, b, c):
    product = _corners(lambda x, y: x * y, a, b)
    return (product[0] + c[0], product[1] + c[1])


_TRANSFER: dict[str, Callable] = {
    "add": lambda instr, a, b: (a[0] + b[0], a[1] + b[1]),
    "sub": lambda instr, a, b: (a[0] - b[1], a[1] - b[0]),
    "mul": lambda instr, a, b: _corners(lambda x, y: x * y, a, b),
    "mul_wide": lambda instr, a, b: _corners(lambda x, y: x * y, a, b),
    "fma": _fma,
    "min": lambda instr, a, b: (min(a[0], b[0]), min(a[1], b[1])),
    "max": lambda instr, a, b: (max(a[0], b[0]), max(a[1], b[1])),
    "div": _divide(_truncated_quotient),
    "floordiv": _divide(lambda x, y: x // y),
    "rem": _truncated_remainder,
    "floormod": _floor_remainder,
    "and": _and,
    "or": _or_xor,
    "xor": _or_xor,
    "not": _not,
    "neg": lambda instr, a: (-a[1], -a[0]),
    "abs": _abs,
    "shl": _shift(lambda x, k: x << k),
    "shr": _shift(lambda x, k: x >> k),
    "cvt": _convert,
    "bitcast": _convert,
    "mov": lambda instr, a: a,
    "select": lambda instr, cond, a, b: _join(a, b),
    "sreg": _sreg,
}
