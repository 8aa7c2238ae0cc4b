"""Reassociation of integer additions so constant offsets end up outermost in addresses.

`s[k, t * 4 + j]` for j = 0..3 in an unrolled loop computes four addresses
`base + sext(i + j) * 4`. Rewritten as `(base + sext(i) * 4) + 4j`, the four share one base (cse
merges them, strength reduction keeps one pointer per loop) and the backend folds each constant
into the access (`ld.shared.f32 %f1, [%rd3+12]`).

- `(x + C) + y` -> `(x + y) + C` and `(x + C) + D` -> `x + (C + D)` on integers of any width:
  exact in wrap-around arithmetic. A signed `x - C` counts as `x + (-C)` in every rule.
- `(x + C) * S` -> `x * S + C*S` and `(x + C) << k` -> `(x << k) + (C << k)` for constants S, k:
  exact too. `s[k + 1, j]` in a tile then shares the base of `s[k, j]` (`[%r4+528]`).
- `mul_wide(x + C, S)` -> `mul_wide(x, S) + C*S`: equal unless `x + C` wraps in 32 bits, and a
  `mul_wide` only computes array offsets, where such an index is out of bounds (caught by
  `debug=True` on the index before any address is formed).

Only additions with a single use are rewritten, so no work is duplicated, except for an index in
a branch arm (`(x + C) + y` feeding a `mul_wide`), where `x + C` often has another use (the bound
test of `if j < n: x[row, j]`): there the one extra `x + y` is shared by every such access once
`hoist` and `cse` have run, and the constant becomes an immediate offset of the access.
"""
from __future__ import annotations

from ..cfg import branch_head
from ..interp import wrap_int
from ..ir import Const, Function, Instr, pass_users


#: Also rewrite a shared `(x + C) + y` where `x + y` exists already (`_joined_exists`). Off: it
#: takes rms_norm_warp from 124 to 97 SASS instructions (nvcc 99), but ptxas then schedules its
#: loads early and uses 39 registers on sm_90 (nvcc 32). On the H100 (`benchmarks/ab_compiler.py`,
#: variant `join-existing`) it made the SIMT matmul 0.3-0.7% faster and rms_norm_warp no faster.
JOIN_EXISTING = False


def run(func: Function) -> Function:
    while _rewrite_all(func):
        func.edits += 1
    return func


def _rewrite_all(func: Function) -> bool:
    """One sweep of the rewrites over the function; whether any applied."""
    changed = False
    uses = pass_users(func)   # (`func.edits` counts every sweep that changed something)
    for block in func.blocks:
        rebuilt = []    # the block's instructions with those the rewrites add before theirs
        for instr in block.instrs:
            if instr.op == "add" and instr.type.is_int:
                changed |= _hoist_constant(instr, uses, rebuilt)
            elif instr.op == "mul_wide":
                changed |= _split_wide(instr, uses, rebuilt)
            elif instr.op in ("mul", "shl") and instr.type.is_int:
                changed |= _distribute(instr, uses, rebuilt)
            rebuilt.append(instr)
        block.instrs = rebuilt
    return changed


def _offset_add(value, uses: dict, shared: bool = False):
    """`value` if it is a single-use `x + C` (C a constant, x not), else None; with `shared`,
    other uses are allowed too."""
    if not (isinstance(value, Instr) and value.op in ("add", "sub")
            and (shared or len(uses.get(value, ())) == 1)):
        return None
    if value.op == "sub":   # x - C as x + (-C), in a signed type (`u[y, x - 1]`: [%rd3+-4])
        a, b = value.args
        ok = value.type.is_signed and isinstance(b, Const) and not isinstance(a, Const)
        return value if ok else None
    consts = [a for a in value.args if isinstance(a, Const)]
    return value if len(consts) == 1 else None


def _split(add: Instr) -> tuple:
    """(x, C) of an offset `x + C`, or of `x - C` as (x, -C)."""
    if add.op == "sub":
        x, const = add.args
        return x, Const(add.type, wrap_int(-int(const.value), add.type))
    const = next(a for a in add.args if isinstance(a, Const))
    other = next(a for a in add.args if not isinstance(a, Const))
    return other, const


def _hoist_constant(instr: Instr, uses: dict, before: list) -> bool:
    """(x + C) + y -> (x + y) + C; (x + C) + D -> x + (C + D). A new instruction goes at the end
    of `before` (the instructions of the block before `instr`), as in the rules below."""
    if any(isinstance(a, Const) for a in instr.args):
        outer = next(a for a in instr.args if isinstance(a, Const))
        inner = next((a for a in instr.args if not isinstance(a, Const)), None)
        inner = _offset_add(inner, uses)
        if inner is None:
            return False
        x, const = _split(inner)
        total = wrap_int(int(const.value) + int(outer.value), instr.type)
        instr.args = [x, Const(instr.type, total)]
        return True
    indexes = (branch_head(instr.block) is not None
               and any(user.op == "mul_wide" for user in uses.get(instr, ())))
    for k, arg in enumerate(instr.args):
        y = instr.args[1 - k]
        inner = _offset_add(arg, uses, shared=indexes)
        if inner is None and JOIN_EXISTING:
            inner = _joined_exists(arg, y, uses)
        if inner is None:
            continue
        x, const = _split(inner)
        joined = Instr("add", instr.type, [x, y], loc=instr.loc)
        before.append(joined)
        joined.block = instr.block
        instr.args = [joined, const]
        return True
    return False


def _joined_exists(arg, y, uses: dict):
    """`arg` = x + C (other uses allowed) when `x + y` is computed already: `row * n + (t * 4 +
    128)` becomes `(row * n + t * 4) + 128`, the first part shared with the chunk at offset 0."""
    inner = _offset_add(arg, uses, shared=True)
    if inner is None:
        return None
    x, _ = _split(inner)
    if any(user.op == "add" and user is not inner and set(map(id, user.args)) == {id(x), id(y)}
           for user in uses.get(x, ())):
        return inner
    return None


def _split_wide(instr: Instr, uses: dict, before: list) -> bool:
    """mul_wide(x + C, S) -> mul_wide(x, S) + C*S, for a constant S."""
    index, scale = instr.args
    inner = _offset_add(index, uses)
    if inner is None and branch_head(instr.block) is not None:
        inner = _offset_add(index, uses, shared=True)
        if inner is not None and not _has_product(inner, scale, uses):
            return False
    if inner is None or not isinstance(scale, Const):
        return False
    x, const = _split(inner)
    if not x.type.is_signed and const.value >= 1 << 31:
        return False          # an unsigned "x - c" spelled as a wrapping add: leave it
    product = Instr("mul_wide", instr.type, [x, scale], dict(instr.attrs), loc=instr.loc)
    before.append(product)
    product.block = instr.block
    instr.op, instr.attrs = "add", {}
    instr.args = [product, Const(instr.type, int(const.value) * int(scale.value))]
    return True


def _has_product(add: Instr, scale: Const, uses: dict) -> bool:
    """Whether `mul_wide(x, scale)` exists already for `add` = x + C: `x[i + 1] if i + 1 < n`
    then addresses from the product of `x[i]` (`[%rd4+4]`) while `i + 1` stays for the test."""
    x, _ = _split(add)
    return any(user.op == "mul_wide" and user.args[0] is x and user.args[1] == scale
               for user in uses.get(x, ()))


def _distribute(instr: Instr, uses: dict, before: list) -> bool:
    """(x + C) * S -> x * S + C*S; (x + C) << k -> (x << k) + (C << k)."""
    t = instr.type
    if instr.op == "shl":
        inner, amount = _offset_add(instr.args[0], uses), instr.args[1]
        if inner is None or not isinstance(amount, Const) or not 0 <= int(amount.value) < t.bits:
            return False
        x, const = _split(inner)
        folded = int(const.value) << int(amount.value)
        scaled = Instr("shl", t, [x, amount], loc=instr.loc)
    else:
        k = next((k for k in (0, 1) if isinstance(instr.args[1 - k], Const)
                  and _offset_add(instr.args[k], uses) is not None), None)
        if k is None:
            return False
        x, const = _split(instr.args[k])
        factor = instr.args[1 - k]
        folded = int(const.value) * int(factor.value)
        scaled = Instr("mul", t, [x, factor], loc=instr.loc)
    before.append(scaled)
    scaled.block = instr.block
    instr.op, instr.attrs = "add", {}
    instr.args = [scaled, Const(t, wrap_int(folded, t))]
    return True
