"""A PTX simulator: runs the PTX that ptxpy (or nvcc) emits on the CPU with NumPy.

    mod = Module(ptx_text)
    run_kernel(mod, "saxpy", grid=(4,), block=(256,), args=[x, n, y, n, 2.0, out, n])

Threads are simulated many blocks at a time: every register is a NumPy array over the threads
of a batch (or a scalar while its value is the same for all of them), and each instruction is
one NumPy operation over the batch under an active mask. Divergence is handled by a per-thread
program counter with "minimum pc first" scheduling, which reconverges structured control flow,
and time slices at loops' backward branches, so that spin-waits on other threads progress.
docs/simulator.md describes the semantics, accuracy and limits.
"""
from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass

import numpy as np

from .ptx_parser import (Addr, Function, Imm, Instr, Pair, Paren, Reg, SimulatorError,
                         SinkOperand, Sym, TensorAddr, VarDecl, Vec, parse)

try:
    import ml_dtypes
    BF16 = np.dtype(ml_dtypes.bfloat16)
except ImportError:  # bf16 instructions then raise SimulatorError
    BF16 = None

__all__ = ["SimulatorError", "Module", "run_kernel", "TensorMap"]

GLOBAL_BASE = 1 << 36         # first global allocation
SHARED_WINDOW = 1 << 48       # generic address of shared offset 0
LOCAL_WINDOW = 1 << 49        # generic address of local offset 0
PARAM_WINDOW = 3 << 48        # generic address of kernel parameter offset 0 (cvta.param)
WINDOW_SIZE = 1 << 32
CLUSTER_WINDOW = 1 << 30      # shared::cluster address of rank r's shared offset a: + r * 2^24 + a
CLUSTER_RANK_SPAN = 1 << 24   # (mapa's result; a u32 for every rank of a cluster of up to 16)
MAX_CLUSTER = 16              # CTAs in a cluster (8 portable; 16 with the non-portable opt-in)
BATCH_THREADS = 1 << 17       # threads simulated together (whole blocks)
UNWRITTEN_BYTE = 0xFF        # what shared, local and unaliased output memory start as
RACECHECK_BYTES = 1 << 28     # at most this much race-check state per batch (fewer blocks)
U64 = np.uint64
U32 = np.uint32


@dataclass(frozen=True, eq=False)
class TensorMap:
    """A CUtensorMap for the simulator: a tiled view of a C-contiguous NumPy array, the argument
    of a `.param .align 64 .b8 NAME[128]` kernel parameter (docs/simulator.md, "Tensor
    copies"). The array is placed in simulated global memory as an array passed for a `.u64`
    parameter is (the same object passed for one shares that allocation) and updated in place
    after the launch; `box` gives the box extents, outermost first (NumPy order, one per
    axis); `swizzle` the shared-memory swizzle in bytes (0, 32, 64 or 128)."""
    array: np.ndarray
    box: tuple
    swizzle: int = 0

# ---- types -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class PtxType:
    name: str
    kind: str       # 's' signed, 'u' unsigned, 'b' bits, 'f' float, 'p' predicate, 'x' packed pair
    bits: int
    dtype: np.dtype | None

    @property
    def nbytes(self) -> int:
        return max(1, self.bits // 8)


def _uint(nbytes: int) -> np.dtype:
    return np.dtype(f"uint{8 * nbytes}")


def _sint(nbytes: int) -> np.dtype:
    return np.dtype(f"int{8 * nbytes}")


def _make_types() -> dict[str, PtxType]:
    types = {}
    for bits in (8, 16, 32, 64):
        types[f"s{bits}"] = PtxType(f"s{bits}", "s", bits, np.dtype(f"int{bits}"))
        types[f"u{bits}"] = PtxType(f"u{bits}", "u", bits, np.dtype(f"uint{bits}"))
        types[f"b{bits}"] = PtxType(f"b{bits}", "b", bits, np.dtype(f"uint{bits}"))
    types["f16"] = PtxType("f16", "f", 16, np.dtype(np.float16))
    types["bf16"] = PtxType("bf16", "f", 16, BF16)
    types["f32"] = PtxType("f32", "f", 32, np.dtype(np.float32))
    types["f64"] = PtxType("f64", "f", 64, np.dtype(np.float64))
    types["pred"] = PtxType("pred", "p", 1, np.dtype(bool))
    types["f16x2"] = PtxType("f16x2", "x", 32, np.dtype(np.uint32))
    types["bf16x2"] = PtxType("bf16x2", "x", 32, np.dtype(np.uint32))
    return types


TYPES = _make_types()
T_U32, T_U64, T_PRED, T_F64 = TYPES["u32"], TYPES["u64"], TYPES["pred"], TYPES["f64"]
T_F32 = TYPES["f32"]
T_S32 = TYPES["s32"]
T_U16 = TYPES["u16"]
_PAIR_ELEM = {"f16x2": "f16", "bf16x2": "bf16"}
_EXP_MASK = {"f16": 0x7C00, "bf16": 0x7F80, "f32": 0x7F800000, "f64": 0x7FF0000000000000}


def _storage(t: PtxType) -> np.dtype:
    return np.dtype(bool) if t.kind == "p" else _uint(t.nbytes)


def _as_type(raw, t: PtxType):
    """Raw register bits as type t; narrower types take the low bits, wider ones extend."""
    d, want = raw.dtype, t.dtype
    if d == want:
        return raw
    if want is None:
        raise SimulatorError("bf16 needs the ml_dtypes package (shipped with jaxlib)")
    if t.kind == "p":
        return raw != 0
    if d == np.bool_:
        return raw.astype(want)
    if d.itemsize == want.itemsize:
        return raw.view(want)
    if d.itemsize > want.itemsize:
        return raw.astype(_uint(want.itemsize)).view(want)
    if t.kind == "s":
        return raw.view(_sint(d.itemsize)).astype(want)
    return raw.view(_uint(d.itemsize)).astype(_uint(want.itemsize)).view(want)


def _to_storage(value, storage: np.dtype, signed: bool):
    """A typed value as register bits (sign- or zero-extended into wider registers)."""
    d = value.dtype
    if d == storage:
        return value
    if storage == np.bool_:
        return value != 0
    if d == np.bool_:
        return value.astype(storage)
    if d.itemsize == storage.itemsize:
        return value.view(storage)
    if d.itemsize > storage.itemsize:
        return value.view(_uint(d.itemsize)).astype(storage)
    if signed:
        return value.view(_sint(d.itemsize)).astype(_sint(storage.itemsize)).view(storage)
    return value.view(_uint(d.itemsize)).astype(storage)


def _imm(imm: Imm, t: PtxType):
    """An immediate operand as a NumPy scalar of type t."""
    if t.kind == "p":
        return np.bool_(imm.value != 0)
    if t.kind == "f":
        if t.dtype is None:
            raise SimulatorError("bf16 needs the ml_dtypes package (shipped with jaxlib)")
        if imm.kind == "f32":
            value = np.float64(np.uint32(imm.value).view(np.float32))
        elif imm.kind == "f64":
            value = np.uint64(imm.value).view(np.float64)
        else:
            value = np.float64(imm.value)
        return _narrow(np.asarray(value), t)[()]
    bits = int(imm.value)
    if imm.kind in ("f32", "f64") and t.bits < 32:
        raise SimulatorError(f"float immediate for .{t.name}")
    return np.array(bits & ((1 << t.bits) - 1), dtype=_uint(t.nbytes)).view(t.dtype)[()]


def _is_scalar(value) -> bool:
    return np.ndim(value) == 0


# ---- floating-point rounding -----------------------------------------------------------------

def _two_sum(a, b):
    """s = fl(a + b) and the exact error: a + b == s + err."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _two_prod(a, b):
    """p = fl(a * b) and the exact error (Dekker), valid away from the exponent extremes."""
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def _split(a):
    c = 134217729.0 * a
    hi = c - (c - a)
    return hi, a - hi


def _round_odd(x, err, udtype):
    """The neighbour of x (x = fl(exact), err = exact - x) with an odd last bit when inexact."""
    x = np.asarray(x)
    bits = x.view(udtype)
    one = udtype.type(1)
    fix = (err != 0) & ((bits & one) == 0) & np.isfinite(x)
    away = ((err > 0) == (x > 0)) | (x == 0)
    stepped = np.where(away, bits + one, bits - one)
    return np.where(fix, stepped, bits).astype(udtype).view(x.dtype)


def _to_f32_odd(x64):
    f = np.asarray(x64).astype(np.float32)
    return _round_odd(f, x64 - f.astype(np.float64), np.dtype(np.uint32))


def _narrow(x64, t: PtxType):
    """Round float64 values to type t, to nearest even (bf16 via round-to-odd f32: no double rounding)."""
    if t.name == "f64":
        return x64
    if t.name == "bf16":
        if BF16 is None:
            raise SimulatorError("bf16 needs the ml_dtypes package (shipped with jaxlib)")
        return _to_f32_odd(x64).astype(BF16)
    return np.asarray(x64).astype(t.dtype)


def _narrow_exact(s, err, t: PtxType):
    """Round the exact value s + err (s = fl64 of it) to type t with a single rounding."""
    if t.name == "f64":
        return s
    return _narrow(_round_odd(s, err, np.dtype(np.uint64)), t)


def _fma(a, b, c, t: PtxType):
    """a*b + c rounded once to t (Boldo-Melquiond emulation for f64)."""
    a64, b64, c64 = (np.asarray(v).astype(np.float64) for v in (a, b, c))
    if t.name != "f64":  # the product of two f32/f16/bf16 values is exact in f64
        s, err = _two_sum(a64 * b64, c64)
        return _narrow_exact(s, err, t)
    p, e = _two_prod(a64, b64)
    hi, lo = _two_sum(c64, p)
    s, err = _two_sum(lo, e)
    z = hi + _round_odd(s, err, np.dtype(np.uint64))
    naive = a64 * b64 + c64
    safe = (np.isfinite(naive) & (np.abs(a64) < 2.0 ** 995) & (np.abs(b64) < 2.0 ** 995)
            & ((p == 0) | (np.abs(p) > 2.0 ** -969)))
    out = np.where(safe & (z != 0), z, naive)   # an exact zero takes its sign as a*b + c gives it
    rare = ~safe & np.isfinite(a64) & np.isfinite(b64) & np.isfinite(c64)
    if np.any(rare):   # tiny products, huge operands: exactly, with fractions (float() rounds once)
        a64, b64, c64, naive, out, rare = np.broadcast_arrays(a64, b64, c64, naive, out, rare)
        out = np.array(out, dtype=np.float64)
        for i in zip(*np.nonzero(rare)) if out.ndim else [()]:
            out[i] = _fma_exact(float(a64[i]), float(b64[i]), float(c64[i]), float(naive[i]))
    return out


def _fma_exact(a: float, b: float, c: float, naive: float) -> float:
    from fractions import Fraction

    exact = Fraction(a) * Fraction(b) + Fraction(c)
    if exact == 0:
        return naive            # the sign of an exact zero: as a*b + c gives it
    try:
        return float(exact)
    except OverflowError:
        return float("inf") if exact > 0 else float("-inf")


def _flush(x, t: PtxType):
    """.ftz: subnormal values become zero of the same sign."""
    udtype = _uint(t.nbytes)
    bits = np.asarray(x).view(udtype)
    sign = udtype.type(1 << (t.bits - 1))
    exp = udtype.type(_EXP_MASK[t.name])
    return np.where((bits & exp) == 0, bits & sign, bits).astype(udtype).view(t.dtype)


def _saturate(x):
    """.sat on floats: clamp to [0, 1], NaN to 0."""
    x = np.asarray(x)
    x64 = x.astype(np.float64)
    return np.where(np.isnan(x64), 0.0, np.clip(x64, 0.0, 1.0)).astype(x.dtype)


def _step(x, away: bool):
    """The next float of the same type one step away from (or towards) zero."""
    x = np.asarray(x)
    udtype = _uint(x.dtype.itemsize)
    bits = x.view(udtype)
    one = udtype.type(1)
    return (bits + one if away else bits - one).astype(udtype).view(x.dtype)


def _round_directed(x64, t: PtxType, mode: str):
    """Round float64 values to type t: rn (nearest even), rz, rm, rp."""
    r = np.asarray(_narrow(x64, t))
    if mode == "rn" or t.name == "f64":
        return r
    back = r.astype(np.float64)
    if mode == "rz":
        fix, away = np.abs(back) > np.abs(x64), False
        return np.where(fix, _step(r, away), r)
    down = back > x64 if mode == "rm" else back < x64
    # rm: step towards -inf; that is away from zero for negative values
    neg = np.signbit(back)
    away_if = neg if mode == "rm" else ~neg
    stepped = np.where(away_if, _step(r, True), _step(r, False))
    return np.where(down, stepped, r)


# ---- integer helpers -------------------------------------------------------------------------

def _mulhi_u64(a, b):
    m32, s32 = U64(0xFFFFFFFF), U64(32)
    a0, a1, b0, b1 = a & m32, a >> s32, b & m32, b >> s32
    p00, p01, p10, p11 = a0 * b0, a0 * b1, a1 * b0, a1 * b1
    mid = (p00 >> s32) + (p01 & m32) + (p10 & m32)
    return p11 + (p01 >> s32) + (p10 >> s32) + (mid >> s32)


def _mul_hi(a, b, t: PtxType):
    if t.bits == 64:
        ua, ub = np.asarray(a).view(U64), np.asarray(b).view(U64)
        hi = _mulhi_u64(ua, ub)
        if t.kind == "s":
            hi = hi - np.where(a < 0, ub, U64(0)) - np.where(b < 0, ua, U64(0))
        return hi.astype(U64).view(t.dtype)
    wide = np.int64 if t.kind == "s" else np.uint64
    prod = np.asarray(a).astype(wide) * np.asarray(b).astype(wide)
    return (prod >> wide(t.bits)).astype(t.dtype)


def _mul_wide(a, b, t: PtxType):
    wide = TYPES[f"{'s' if t.kind == 's' else 'u'}{2 * t.bits}"]
    return np.asarray(a).astype(wide.dtype) * np.asarray(b).astype(wide.dtype), wide


def _int_div(a, b, t: PtxType, want_rem: bool):
    """Truncating division; x/0 and x%0 give all ones, as the H100 does (division by zero
    probe, session 34: benchmarks/probes/division_by_zero_probe.py)."""
    a, b = np.asarray(a), np.asarray(b)
    zero = b == 0
    if t.kind == "s":
        minus1 = b == -1
        safe = np.where(zero | minus1, 1, b).astype(t.dtype)
        rem = np.fmod(a, safe)
        quo = ((a - rem) // safe).astype(t.dtype)
        quo = np.where(minus1, (-a).astype(t.dtype), quo)
        rem = np.where(minus1, 0, rem)
    else:
        safe = np.where(zero, 1, b).astype(t.dtype)
        quo, rem = a // safe, a % safe
    all_ones = np.array((1 << t.bits) - 1, _uint(t.nbytes)).view(t.dtype)
    return np.where(zero, all_ones, rem if want_rem else quo).astype(t.dtype)


def _shift(a, n, t: PtxType, left: bool):
    """shl/shr with PTX clamping: shifts >= width give 0, or sign fill for shr.s*."""
    n = np.asarray(n).astype(np.uint64)
    amount = np.minimum(n, U64(t.bits - 1)).astype(t.dtype)
    big = n >= t.bits
    if left:
        return np.where(big, 0, a << amount).astype(t.dtype)
    if t.kind == "s":
        return (a >> amount).astype(t.dtype)
    return np.where(big, 0, a >> amount).astype(t.dtype)


def _width_mask(bits: int):
    return U64((1 << bits) - 1)


def _bfe(a, pos, length, t: PtxType):
    bits = t.bits
    u = np.asarray(a).view(_uint(t.nbytes)).astype(U64)
    pos = np.asarray(pos).astype(U64) & U64(0xFF)
    length = np.asarray(length).astype(U64) & U64(0xFF)
    valid = np.minimum(length, np.where(pos >= bits, U64(0), U64(bits) - np.minimum(pos, U64(bits))))
    vmask = np.where(valid >= 64, ~U64(0), (U64(1) << np.minimum(valid, U64(63))) - U64(1))
    shifted = np.where(pos >= bits, U64(0), u >> np.minimum(pos, U64(63)))
    field = shifted & vmask
    if t.kind == "s":
        top = np.minimum(pos + length - U64(1), U64(bits - 1))
        sbit = np.where(length == 0, U64(0), (u >> np.minimum(top, U64(63))) & U64(1))
        field = np.where(sbit == 1, field | (~vmask & _width_mask(bits)), field)
    return (field & _width_mask(bits)).astype(_uint(t.nbytes)).view(t.dtype)


def _bfi(f, b, pos, length, t: PtxType):
    bits = t.bits
    f64_, b64_ = (np.asarray(v).view(_uint(t.nbytes)).astype(U64) for v in (f, b))
    pos = np.asarray(pos).astype(U64) & U64(0xFF)
    length = np.asarray(length).astype(U64) & U64(0xFF)
    n = np.minimum(length, U64(bits))
    low = np.where(n >= 64, ~U64(0), (U64(1) << np.minimum(n, U64(63))) - U64(1))
    shift = np.minimum(pos, U64(63))
    mask = (low << shift) & _width_mask(bits)
    out = np.where(pos >= bits, b64_, (b64_ & ~mask) | ((f64_ << shift) & mask))
    return (out & _width_mask(bits)).astype(_uint(t.nbytes)).view(t.dtype)


def _clz(x, bits: int):
    x = np.asarray(x).astype(U64)
    width = _width_mask(bits)
    n = np.zeros(np.shape(x), np.uint32)
    for s in (32, 16, 8, 4, 2, 1):
        if s >= bits:
            continue
        top_zero = (x >> U64(bits - s)) == 0
        n = n + np.where(top_zero, np.uint32(s), np.uint32(0))
        x = np.where(top_zero, (x << U64(s)) & width, x)
    return n + ((x >> U64(bits - 1)) == 0).astype(np.uint32)


def _brev(x, bits: int):
    x = np.asarray(x).astype(U64)
    for s, pattern in ((1, 0x5555555555555555), (2, 0x3333333333333333), (4, 0x0F0F0F0F0F0F0F0F),
                       (8, 0x00FF00FF00FF00FF), (16, 0x0000FFFF0000FFFF), (32, 0x00000000FFFFFFFF)):
        if s >= bits:
            break
        m = U64(pattern & ((1 << bits) - 1))
        x = ((x >> U64(s)) & m) | ((x & m) << U64(s))
    return (x & _width_mask(bits)).astype(_uint(bits // 8))


def _prmt(a, b, sel):
    a, b, sel = (np.asarray(v).astype(U64) for v in (a, b, sel))
    pool = (b << U64(32)) | a
    out = np.zeros(np.broadcast(a, b, sel).shape, U64)
    for i in range(4):
        s = (sel >> U64(4 * i)) & U64(0xF)
        byte = (pool >> ((s & U64(7)) * U64(8))) & U64(0xFF)
        byte = np.where((s & U64(8)) != 0, np.where(byte & U64(0x80), U64(0xFF), U64(0)), byte)
        out |= byte << U64(8 * i)
    return out.astype(np.uint32)


def _lop3(a, b, c, lut: int):
    out = np.zeros(np.broadcast(a, b, c).shape, np.uint32)
    for i in range(8):
        if lut >> i & 1:
            out |= (a if i & 4 else ~a) & (b if i & 2 else ~b) & (c if i & 1 else ~c)
    return out


# ---- modifiers and errors --------------------------------------------------------------------

class _Mods:
    """The dot-separated modifiers of an opcode; every one must be consumed or it is an error."""

    def __init__(self, ins: Instr, where: str):
        parts = ins.parts
        self.ins, self.where, self.base = ins, where, parts[0]
        self.rest = parts[1:]
        self.used = [False] * len(self.rest)

    def take(self, *names: str) -> str | None:
        for k, part in enumerate(self.rest):
            if not self.used[k] and part in names:
                self.used[k] = True
                return part
        return None

    def take_prefixed(self, prefix: str) -> str | None:
        for k, part in enumerate(self.rest):
            if not self.used[k] and part.startswith(prefix):
                self.used[k] = True
                return part
        return None

    def types(self) -> list[PtxType]:
        found = []
        for k, part in enumerate(self.rest):
            if not self.used[k] and part in TYPES:
                self.used[k] = True
                found.append(TYPES[part])
        return found

    def one_type(self, allowed=None) -> PtxType:
        found = self.types()
        if len(found) != 1:
            self.fail("expected exactly one type")
        if allowed is not None and found[0].name not in allowed:
            self.fail(f"type .{found[0].name} is not supported here")
        return found[0]

    def done(self):
        left = [p for p, u in zip(self.rest, self.used) if not u]
        if left:
            self.fail("unsupported modifier " + ", ".join("." + p for p in left))

    def fail(self, why: str):
        raise SimulatorError(f"{self.where}: unsupported instruction `{self.ins.text}`: {why}")


def _site(where: str, ins: Instr) -> str:
    """A compile-time position: the source line and the PTX line."""
    return where if where.startswith("PTX line") else f"{where} (PTX line {ins.line})"


# ---- memory ----------------------------------------------------------------------------------

class _Alloc:
    __slots__ = ("base", "size", "buf", "owner", "label", "written")

    def __init__(self, base: int, size: int, data, owner, label: str):
        self.base, self.size, self.owner, self.label = base, size, owner, label
        self.buf = np.zeros(max(16, -(-size // 16) * 16), np.uint8)
        if data is not None and size:
            self.buf[:size] = data
        self.written = False


class _GlobalMemory:
    """The flat global address space: allocations at 256-byte aligned addresses with wide gaps."""

    def __init__(self):
        self.allocs: list[_Alloc] = []
        self.next_base = GLOBAL_BASE

    def add(self, size: int, data=None, owner=None, label: str = "") -> _Alloc:
        alloc = _Alloc(self.next_base, size, data, owner, label)
        self.allocs.append(alloc)
        gap = max(1 << 20, size)
        self.next_base = -(-(self.next_base + size + gap) // 256) * 256
        self.bases = np.array([a.base for a in self.allocs], U64)
        self.sizes = np.array([a.size for a in self.allocs], np.int64)
        return alloc

    def find(self, addr: int) -> _Alloc | None:
        k = int(np.searchsorted(self.bases, U64(addr), "right")) - 1
        if k >= 0 and addr - self.allocs[k].base < self.allocs[k].size:
            return self.allocs[k]
        return None

    def segments(self, addr, size: int):
        """[(alloc, byte offsets, selection)] for the addresses, or (None, bad lanes)."""
        lo, hi = int(addr.min()), int(addr.max())
        k = int(np.searchsorted(self.bases, U64(lo), "right")) - 1
        if k >= 0 and hi - int(self.bases[k]) <= int(self.sizes[k]) - size:
            return [(self.allocs[k], (addr - self.bases[k]).astype(np.int64), None)], None
        ks = np.searchsorted(self.bases, addr, "right") - 1
        kk = np.maximum(ks, 0)
        off = (addr - self.bases[kk]).astype(np.int64)
        ok = (ks >= 0) & (off <= self.sizes[kk] - size)
        if not ok.all():
            return None, ~ok
        segs = []
        for k in np.unique(kk):
            sel = np.flatnonzero(kk == k)
            segs.append((self.allocs[int(k)], off[sel], sel))
        return segs, None


# ---- the compiled kernel ---------------------------------------------------------------------

PLAIN, BRA, EXIT, BAR, TRAP, WSYNC, CARRIVE, CWAIT = range(8)
_SPECIAL = {"%tid", "%ntid", "%ctaid", "%nctaid", "%cluster_ctaid", "%cluster_nctaid", "%clusterid",
            "%nclusterid"}
_SPECIAL_FLAT = {"%laneid", "%warpid", "%lanemask_eq", "%lanemask_lt", "%lanemask_le",
                 "%lanemask_gt", "%lanemask_ge", "%nwarpid", "%cluster_ctarank",
                 "%cluster_nctarank", "%is_explicit_cluster"}


def _is_special(name: str) -> bool:
    head, _, axis = name.partition(".")
    return (head in _SPECIAL and axis in ("x", "y", "z")) or name in _SPECIAL_FLAT


class _Op:
    __slots__ = ("kind", "fn", "guard", "target", "ins", "where", "members", "reduce")

    def __init__(self, kind, fn=None, target=None, members=None):
        self.kind, self.fn, self.target, self.members = kind, fn, target, members
        self.guard = self.ins = self.where = self.reduce = None


def _align_up(x: int, a: int) -> int:
    return -(-x // a) * a


_LAUNCH_CLUSTER = (".explicitcluster", ".maxclusterrank", ".blocksareclusters")


def _cluster_directives(fn: Function):
    """The kernel's cluster dimensions from `.reqnctapercluster X[, Y[, Z]]` ((1, 1, 1), one CTA
    a cluster, without it), and whether it asks for cluster dimensions given at launch instead
    (`.explicitcluster`, `.maxclusterrank` without `.reqnctapercluster`)."""
    dims = fn.directives.get(".reqnctapercluster")
    if dims is None:
        return (1, 1, 1), any(d in fn.directives for d in _LAUNCH_CLUSTER)
    if not 1 <= len(dims) <= 3 or any(d < 1 for d in dims):
        raise SimulatorError(f"PTX line {fn.line}: kernel {fn.name}: .reqnctapercluster takes 1 to "
                             f"3 positive numbers, got {', '.join(map(str, dims)) or 'none'}")
    dims = tuple(dims) + (1,) * (3 - len(dims))
    if dims[0] * dims[1] * dims[2] > MAX_CLUSTER:
        raise SimulatorError(f"PTX line {fn.line}: kernel {fn.name}: a cluster of "
                             f"({','.join(map(str, dims))}) has "
                             f"{dims[0] * dims[1] * dims[2]} CTAs; at most {MAX_CLUSTER} (8 "
                             f"portably) make a cluster")
    return dims, False


class _Kernel:
    """One `.entry`, compiled: parameter, shared and local layouts and one closure per instruction."""

    def __init__(self, module: "Module", fn: Function):
        self.module, self.fn, self.name = module, fn, fn.name
        self.params = fn.params
        self.param_offsets, self.param_size = self._layout(fn.params)
        shared = [v for v in module.ptx.globals if v.space == "shared"]
        shared += [v for v in fn.vars if v.space == "shared"]
        shared.sort(key=lambda v: v.count == 0)   # extern (dynamic) arrays go last
        self.shared_offsets, self.shared_static = self._layout(shared)
        self.dynamic_shared = [v.name for v in shared if v.count == 0]
        self.local_offsets, self.local_size = self._layout([v for v in fn.vars if v.space == "local"])
        self.local_pad = _align_up(self.local_size, 16)
        self.regs: dict[str, PtxType] = {}
        for name, tname in fn.regs.items():
            if tname not in TYPES:
                raise SimulatorError(f"PTX line {fn.line}: unsupported register type .{tname} of {name}")
            self.regs[name] = TYPES[tname]
        for var in fn.vars:
            if var.space == "param":
                if var.count is not None or var.type not in TYPES:
                    raise SimulatorError(f"PTX line {var.line}: unsupported call parameter {var.name}")
                self.regs[var.name] = TYPES[var.type]
        self.initial = {name: _storage(t).type(0) for name, t in self.regs.items()}
        self.cluster, self.launch_cluster = _cluster_directives(fn)
        self.code = [self._compile(ins) for ins in fn.body]
        self.cluster_barrier = any(op.kind in (CARRIVE, CWAIT) for op in self.code)

    @staticmethod
    def _layout(decls: list[VarDecl]):
        offsets, size = {}, 0
        for var in decls:
            t = TYPES.get(var.type)
            if t is None:
                raise SimulatorError(f"PTX line {var.line}: unsupported type .{var.type} of {var.name}")
            align = var.align or t.nbytes * var.vec
            size = _align_up(size, align)
            offsets[var.name] = (size, t)
            size += t.nbytes * var.vec * (var.count or 1)
        return offsets, size

    def where(self, ins: Instr) -> str:
        return self.module.where(ins)

    def param_decl(self, name: str) -> VarDecl:
        return next(decl for decl in self.params if decl.name == name)

    def _compile(self, ins: Instr) -> _Op:
        base = ins.parts[0]
        compiler = _COMPILERS.get(base)
        where = _site(self.where(ins), ins)
        if compiler is None:
            raise SimulatorError(f"{where}: unsupported instruction `{ins.text}`: "
                                 f"opcode '{base}' is not implemented by the simulator")
        mods = _Mods(ins, where)
        op = compiler(self, ins, mods)
        mods.done()
        op.ins, op.where = ins, self.where(ins)
        if ins.guard is not None:
            op.guard = self.reader(ins.guard, T_PRED, ins)
        if op.kind == BRA:
            label = ins.operands[0]
            if not isinstance(label, Sym) or label.name not in self.fn.labels:
                mods.fail("unknown branch target")
            op.target = self.fn.labels[label.name]
        return op

    # operands
    def reader(self, op, t: PtxType, ins: Instr):
        """A function ctx -> value of type t for a source operand."""
        if isinstance(op, Imm):
            value = _imm(op, t)
            return lambda ctx: value
        if isinstance(op, Sym):
            address = self.symbol_address(op, None, ins)
            if t.bits < 64 and op.name not in self.shared_offsets and op.name not in self.local_offsets:
                self._bad(ins, f"the address of {op.name} needs 64 bits (only .shared and .local "
                               f"variables have 32-bit addresses)")
            value = _imm(Imm(address, "int"), t)
            return lambda ctx: value
        if isinstance(op, Reg):
            name = op.name
            if _is_special(name):
                if op.neg:
                    self._bad(ins, f"cannot negate {name}")
                return lambda ctx: _as_type(ctx.special(name), t)
            self._reg_type(name, ins)
            if op.neg:
                if t.kind != "p":
                    self._bad(ins, f"`!{name}` on a non-predicate operand")
                return lambda ctx: ~ctx.regs[name]
            return lambda ctx: _as_type(ctx.regs[name], t)
        self._bad(ins, f"unsupported source operand {op!r}")

    def writer(self, op, t: PtxType, ins: Instr):
        """A function (ctx, value of type t, mask) storing into a destination register."""
        if isinstance(op, SinkOperand):
            return lambda ctx, value, mask: None
        if not isinstance(op, Reg) or op.neg or _is_special(op.name):
            self._bad(ins, f"bad destination operand {op!r}")
        name = op.name
        storage = _storage(self._reg_type(name, ins))
        signed = t.kind == "s"

        def write(ctx, value, mask):
            bits = _to_storage(value, storage, signed)
            if mask is None:
                ctx.regs[name] = bits
            else:
                ctx.regs[name] = np.where(mask, bits, ctx.regs[name])
        return write

    def _reg_type(self, name: str, ins: Instr) -> PtxType:
        t = self.regs.get(name)
        if t is None:
            self._bad(ins, f"undeclared register {name}")
        return t

    def _bad(self, ins: Instr, why: str):
        raise SimulatorError(f"{_site(self.where(ins), ins)}: unsupported instruction `{ins.text}`: {why}")

    def symbol_address(self, sym: Sym, space: str | None, ins: Instr) -> int:
        """Address of a variable: in its own state space, or generic when space == 'generic'."""
        name = sym.name
        if name in self.shared_offsets:
            off = self.shared_offsets[name][0]
            return off + sym.offset + (SHARED_WINDOW if space == "generic" else 0)
        if name in self.local_offsets:
            off = self.local_offsets[name][0]
            return off + sym.offset + (LOCAL_WINDOW if space == "generic" else 0)
        if name in self.module.global_addresses:
            return self.module.global_addresses[name] + sym.offset
        if name in self.param_offsets and space in (None, "generic", "param"):
            # a kernel parameter: its offset in param space (mov), or generic (cvta.param)
            off = self.param_offsets[name][0]
            return off + sym.offset + (PARAM_WINDOW if space == "generic" else 0)
        self._bad(ins, f"unknown variable {name}")

    def address(self, op, space: str, ins: Instr):
        """A function ctx -> uint64 address (scalar or array) for an `[...]` operand."""
        if not isinstance(op, Addr):
            self._bad(ins, "expected an address operand [...]")
        off = U64(op.offset % (1 << 64))
        if op.base is None:
            return lambda ctx: off
        if isinstance(op.base, Sym):
            value = U64(self.symbol_address(op.base, space, ins) + op.offset)
            return lambda ctx: value
        if not isinstance(op.base, Reg) or op.base.neg or _is_special(op.base.name):
            self._bad(ins, f"address base {op.base!r} is not a register")
        base_type = self._reg_type(op.base.name, ins)
        bits = base_type.bits if base_type.kind in "bus" else None
        if bits == 32 and space in ("shared", "local", "shared::cluster"):
            # a 32-bit address register (as nvcc emits for .shared): an offset in the window,
            # computed modulo 2^32 with the immediate offset
            read32 = self.reader(op.base, T_U32, ins)
            off32 = U32(op.offset % (1 << 32))
            return lambda ctx: np.add(read32(ctx), off32, dtype=U32).astype(U64)
        if bits != 64:
            self._bad(ins, f"a .{base_type.name} address register for {space} memory (addresses "
                           f"are 64-bit registers, or 32-bit ones for .shared, .shared::cluster "
                           f"and .local)")
        read = self.reader(op.base, T_U64, ins)
        return lambda ctx: read(ctx) + off


# ---- instruction compilers: data movement and integers ---------------------------------------

def _c_mov(k: _Kernel, ins: Instr, m: _Mods) -> _Op:
    t = m.one_type()
    d, a = _operands(k, ins, 2)
    if isinstance(d, Vec):
        return _unpack(k, ins, t, d, a)
    if isinstance(a, Vec):
        return _pack(k, ins, t, d, a)
    read, write = k.reader(a, t, ins), k.writer(d, t, ins)
    return _Op(PLAIN, lambda ctx, mask: write(ctx, read(ctx), mask))


def _unpack(k, ins, t, d: Vec, a) -> _Op:
    width = t.bits // len(d.items)
    part = TYPES[f"b{width}"]
    read = k.reader(a, TYPES[f"b{t.bits}"], ins)
    writes = [k.writer(item, part, ins) for item in d.items]

    def run(ctx, mask):
        value = np.asarray(read(ctx)).astype(U64)
        for i, write in enumerate(writes):
            write(ctx, ((value >> U64(i * width)) & _width_mask(width)).astype(part.dtype), mask)
    return _Op(PLAIN, run)


def _pack(k, ins, t, d, a: Vec) -> _Op:
    width = t.bits // len(a.items)
    whole = TYPES[f"b{t.bits}"]
    reads = [k.reader(item, TYPES[f"b{width}"], ins) for item in a.items]
    write = k.writer(d, whole, ins)

    def run(ctx, mask):
        value = U64(0)
        for i, read in enumerate(reads):
            value = value | (np.asarray(read(ctx)).astype(U64) << U64(i * width))
        write(ctx, np.asarray(value).astype(whole.dtype), mask)
    return _Op(PLAIN, run)


def _operands(k: _Kernel, ins: Instr, count: int) -> list:
    if len(ins.operands) != count:
        k._bad(ins, f"expected {count} operands, found {len(ins.operands)}")
    return ins.operands


def _simple(k, ins, types_in, t_out, fn) -> _Op:
    """d = fn(a, b, ...) with typed reads and a typed write."""
    ops = _operands(k, ins, 1 + len(types_in))
    reads = [k.reader(op, ti, ins) for op, ti in zip(ops[1:], types_in)]
    write = k.writer(ops[0], t_out, ins)
    if len(reads) == 1:
        r0, = reads
        return _Op(PLAIN, lambda ctx, mask: write(ctx, fn(r0(ctx)), mask))
    if len(reads) == 2:
        r0, r1 = reads
        return _Op(PLAIN, lambda ctx, mask: write(ctx, fn(r0(ctx), r1(ctx)), mask))
    return _Op(PLAIN, lambda ctx, mask: write(ctx, fn(*[r(ctx) for r in reads]), mask))


_INT_TYPES = {"s16", "u16", "s32", "u32", "s64", "u64", "s8", "u8"}
_FLOAT_TYPES = {"f16", "bf16", "f32", "f64", "f16x2", "bf16x2"}


def _c_arith(k: _Kernel, ins: Instr, m: _Mods) -> _Op:
    types = [p for p in m.rest if p in TYPES]
    if types and types[-1] in _FLOAT_TYPES:
        return _float_arith(k, ins, m)
    return _int_arith(k, ins, m)


def _int_arith(k, ins, m: _Mods) -> _Op:
    op = m.base
    half = m.take("lo", "hi", "wide")
    sat = m.take("sat")
    t = m.one_type(_INT_TYPES | {"b16", "b32", "b64"} if op in ("add", "sub") else _INT_TYPES)
    if op in ("mul", "mad") and half is None:
        m.fail("mul/mad on integers need .lo, .hi or .wide")
    if half and op not in ("mul", "mad"):
        m.fail(f"modifier .{half}")
    if sat and not (op in ("add", "sub") and t.name == "s32"):
        m.fail("modifier .sat")
    if op == "mad":
        return _mad_int(k, ins, t, half)
    if op == "mul":
        if half == "wide":
            wide = TYPES[f"{'s' if t.kind == 's' else 'u'}{2 * t.bits}"]
            return _simple(k, ins, [t, t], wide, lambda a, b: _mul_wide(a, b, t)[0])
        if half == "hi":
            return _simple(k, ins, [t, t], t, lambda a, b: _mul_hi(a, b, t))
        return _simple(k, ins, [t, t], t, lambda a, b: np.multiply(a, b, dtype=t.dtype))
    if sat:
        sign = 1 if op == "add" else -1
        return _simple(k, ins, [t, t], t, lambda a, b: np.clip(
            np.asarray(a).astype(np.int64) + sign * np.asarray(b).astype(np.int64),
            -2 ** 31, 2 ** 31 - 1).astype(np.int32))
    unary = {"abs": lambda a: np.abs(a).astype(t.dtype), "neg": lambda a: np.negative(a).astype(t.dtype)}
    if op in unary:
        return _simple(k, ins, [t], t, unary[op])
    binary = {
        "add": lambda a, b: np.add(a, b, dtype=t.dtype),
        "sub": lambda a, b: np.subtract(a, b, dtype=t.dtype),
        "min": np.minimum, "max": np.maximum,
        "div": lambda a, b: _int_div(a, b, t, False),
        "rem": lambda a, b: _int_div(a, b, t, True),
    }
    if op not in binary:
        m.fail(f"'{op}' on integers")
    return _simple(k, ins, [t, t], t, binary[op])


def _mad_int(k, ins, t, half) -> _Op:
    if half == "wide":
        wide = TYPES[f"{'s' if t.kind == 's' else 'u'}{2 * t.bits}"]
        return _simple(k, ins, [t, t, wide], wide,
                       lambda a, b, c: np.add(_mul_wide(a, b, t)[0], c, dtype=wide.dtype))
    if half == "hi":
        return _simple(k, ins, [t, t, t], t, lambda a, b, c: np.add(_mul_hi(a, b, t), c, dtype=t.dtype))
    return _simple(k, ins, [t, t, t], t,
                   lambda a, b, c: np.add(np.multiply(a, b, dtype=t.dtype), c, dtype=t.dtype))


def _c_logic(k: _Kernel, ins: Instr, m: _Mods) -> _Op:
    t = m.one_type({"pred", "b16", "b32", "b64", "b8"})
    op = m.base
    if t.kind == "p":
        fns = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor,
               "not": np.logical_not, "cnot": np.logical_not}
    else:
        fns = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor,
               "not": np.invert, "cnot": lambda a: (np.asarray(a) == 0).astype(t.dtype)}
    arity = 1 if op in ("not", "cnot") else 2
    return _simple(k, ins, [t] * arity, t, fns[op])


def _c_shift(k: _Kernel, ins: Instr, m: _Mods) -> _Op:
    t = m.one_type({"b16", "b32", "b64", "s16", "s32", "s64", "u16", "u32", "u64"})
    left = m.base == "shl"
    if left and t.kind == "s":
        t = TYPES[f"b{t.bits}"]
    return _simple(k, ins, [t, T_U32], t, lambda a, n: _shift(a, n, t, left))


def _bfind(a, t: PtxType, shiftamt: bool):
    """bfind: the place of the most significant 1 bit (for .s types, of the most significant bit
    unlike the sign bit), or with .shiftamt the left shift that puts it at the top; 0xffffffff
    where there is none."""
    x = np.asarray(a)
    if t.kind == "s":
        x = np.where(x < 0, ~x, x)
    leading = _clz(x.view(_uint(t.nbytes)), t.bits)
    found = leading if shiftamt else np.uint32(t.bits - 1) - leading
    return np.where(leading == t.bits, np.uint32(0xFFFFFFFF), found).astype(np.uint32)


def _c_bfind(k: _Kernel, ins: Instr, m: _Mods) -> _Op:
    shiftamt = m.take("shiftamt") is not None
    t = m.one_type({"u32", "u64", "s32", "s64"})
    return _simple(k, ins, [t], T_U32, lambda a: _bfind(a, t, shiftamt))


def _c_bits(k: _Kernel, ins: Instr, m: _Mods) -> _Op:
    op = m.base
    t = m.one_type({"b32", "b64"} if op != "bfe" else {"u32", "u64", "s32", "s64"})
    if op == "popc":
        return _simple(k, ins, [t], T_U32, lambda a: np.bitwise_count(a).astype(np.uint32))
    if op == "clz":
        return _simple(k, ins, [t], T_U32, lambda a: _clz(a, t.bits))
    if op == "brev":
        return _simple(k, ins, [t], t, lambda a: _brev(a, t.bits))
    if op == "bfe":
        return _simple(k, ins, [t, T_U32, T_U32], t, lambda a, p, n: _bfe(a, p, n, t))
    return _simple(k, ins, [t, t, T_U32, T_U32], t, lambda f, b, p, n: _bfi(f, b, p, n, t))


def _c_prmt(k, ins, m: _Mods) -> _Op:
    m.one_type({"b32"})
    return _simple(k, ins, [T_U32] * 3, T_U32, _prmt)


def _c_dp4a(k, ins, m: _Mods) -> _Op:
    """dp4a.{s32,u32}.{s32,u32} d, a, b, c: c + the dot product of a's and b's four bytes, each
    word's bytes signed (.s32) or not; d wraps to 32 bits, signed when either word is."""
    found = m.types()
    if len(found) != 2 or any(t.name not in ("s32", "u32") for t in found):
        m.fail("dp4a needs two types, .s32 or .u32 each")
    signed = [t.name == "s32" for t in found]
    t_out = T_S32 if any(signed) else T_U32

    def dot(a, b, c):
        total = np.asarray(c).astype(np.int64)
        for shift in (0, 8, 16, 24):
            total = total + _bytes_at(a, shift, signed[0]) * _bytes_at(b, shift, signed[1])
        wrapped = (total & 0xFFFFFFFF).astype(np.uint32)
        return wrapped.astype(np.int32) if any(signed) else wrapped
    return _simple(k, ins, [T_U32, T_U32, t_out], t_out, dot)


def _bytes_at(word, shift: int, signed: bool):
    """The byte at `shift` of each 32-bit word, as int64, signed or not."""
    value = (np.asarray(word).astype(np.int64) >> shift) & 0xFF
    return np.where(value >= 128, value - 256, value) if signed else value


def _c_lop3(k, ins, m: _Mods) -> _Op:
    m.one_type({"b32"})
    ops = _operands(k, ins, 5)
    if not isinstance(ops[4], Imm):
        k._bad(ins, "lop3 needs an immediate lookup table")
    lut = int(ops[4].value) & 0xFF
    reads = [k.reader(op, T_U32, ins) for op in ops[1:4]]
    write = k.writer(ops[0], T_U32, ins)
    return _Op(PLAIN, lambda ctx, mask: write(
        ctx, _lop3(*[np.asarray(r(ctx)) for r in reads], lut), mask))


def _c_shf(k, ins, m: _Mods) -> _Op:
    left = m.take("l", "r") == "l"
    wrap = m.take("wrap", "clamp") == "wrap"
    m.one_type({"b32"})

    def funnel(a, b, c):
        a, b, c = (np.asarray(v).astype(U64) for v in (a, b, c))
        n = c & U64(31) if wrap else np.minimum(c, U64(32))
        pair = (b << U64(32)) | a
        out = (pair << n) >> U64(32) if left else pair >> n
        return (out & U64(0xFFFFFFFF)).astype(np.uint32)
    return _simple(k, ins, [T_U32] * 3, T_U32, funnel)


# ---- floating point --------------------------------------------------------------------------

def _float_arith(k, ins, m: _Mods) -> _Op:
    op = m.base
    rnd = m.take("rn", "rz", "rm", "rp")
    ftz, sat = m.take("ftz") is not None, m.take("sat") is not None
    approx = m.take("approx", "full")
    nan_mode = m.take("NaN") is not None
    t = m.one_type(_FLOAT_TYPES)
    if rnd not in (None, "rn"):
        m.fail(f"rounding mode .{rnd} on float {op}")
    if op in ("fma", "mad") and rnd is None:
        m.fail(f"{op} on floats needs .rn")
    if op in ("mul", "mad") and t.kind == "f" and m.take("lo", "hi", "wide"):
        m.fail("integer modifier on a float type")
    if approx and op != "div":
        m.fail(f"modifier .{approx}")
    if op == "div" and t.name == "f32" and not (approx or rnd):
        m.fail("div.f32 needs .rn, .full or .approx")
    fn = _float_fn(op, approx, nan_mode, m)
    return _float_op(k, ins, t, fn, ftz, sat)


def _float_fn(op: str, approx, nan_mode: bool, m: _Mods):
    """fn(t, *values) -> values of type t."""
    def via64(f):
        return lambda t, *xs: _narrow(f(*[np.asarray(x).astype(np.float64) for x in xs]), t)

    native = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide}
    if op in native:
        f = native[op]
        if op == "div" and approx == "approx":
            return _approx_divide(via64(f))
        return lambda t, a, b: f(a, b).astype(t.dtype) if t.name in ("f32", "f64") else via64(f)(t, a, b)
    if op in ("fma", "mad"):
        return lambda t, a, b, c: _fma(a, b, c, t)
    if op in ("min", "max"):
        return via64(lambda a, b: _minmax(a, b, op == "min", nan_mode))
    if op == "abs":
        return lambda t, a: _sign_bits(a, t, "abs")
    if op == "neg":
        return lambda t, a: _sign_bits(a, t, "neg")
    m.fail(f"'{op}' on floats")


def _approx_divide(divide):
    """`div.approx.f32`, `a * (1 / b)` on the GPU: where `|b|` is above 2^126 the reciprocal is
    below the normal range and flushed, so the quotient is a signed 0 (NaN for an infinite
    `a`), as the PTX ISA says, not the exact quotient (a subnormal or tiny normal)."""
    def fn(t, a, b):
        out = divide(t, a, b)
        flushed = np.isfinite(b) & (np.abs(np.asarray(b, np.float64)) > 2.0**126)
        if not np.any(flushed):
            return out
        zero = np.copysign(np.zeros_like(np.asarray(b, np.float64)), b)
        return np.where(flushed, (np.asarray(a, np.float64) * zero).astype(t.dtype), out)
    return fn


def _sign_bits(a, t: PtxType, what: str):
    udtype = _uint(t.nbytes)
    bits = np.asarray(a).view(udtype)
    sign = udtype.type(1 << (t.bits - 1))
    out = bits & ~sign if what == "abs" else bits ^ sign
    return np.asarray(out).astype(udtype).view(t.dtype)


def _minmax(a, b, is_min: bool, nan_mode: bool):
    if nan_mode:
        out = np.minimum(a, b) if is_min else np.maximum(a, b)
    else:
        out = np.fmin(a, b) if is_min else np.fmax(a, b)
    both_zero = (a == 0) & (b == 0)
    # -0.0 is below +0.0 for min and max, as on the GPU
    signed_zero = np.where(np.signbit(a) | np.signbit(b) if is_min else np.signbit(a) & np.signbit(b),
                           -0.0, 0.0)
    return np.where(both_zero, signed_zero, out)


def _float_op(k, ins, t: PtxType, fn, ftz: bool, sat: bool) -> _Op:
    """A float instruction on scalars or packed f16x2/bf16x2 pairs, with .ftz and .sat."""
    elem = TYPES[_PAIR_ELEM[t.name]] if t.kind == "x" else t
    if elem.dtype is None:
        k._bad(ins, "bf16 needs the ml_dtypes package")

    def compute(*xs):
        if ftz:
            xs = [_flush(x, elem) for x in xs]
        out = np.asarray(fn(elem, *xs)).astype(elem.dtype)
        if sat:
            out = _saturate(out)
        return _flush(out, elem) if ftz else out

    if t.kind != "x":
        return _simple(k, ins, [t] * _arity(ins), t, compute)

    def packed(*words):
        shape = np.broadcast_shapes(*[np.shape(w) for w in words])
        words = np.broadcast_arrays(*[np.atleast_1d(np.asarray(w, np.uint32)) for w in words])
        halves = [np.ascontiguousarray(w).view(np.uint16).view(elem.dtype) for w in words]
        out = np.ascontiguousarray(compute(*halves)).view(np.uint32)
        return out.reshape(shape)
    return _simple(k, ins, [t] * _arity(ins), t, packed)


def _arity(ins: Instr) -> int:
    return len(ins.operands) - 1


_TRANSCENDENTAL = {
    "sqrt": np.sqrt, "rsqrt": lambda x: 1.0 / np.sqrt(x), "rcp": lambda x: 1.0 / x,
    "ex2": np.exp2, "lg2": np.log2, "sin": np.sin, "cos": np.cos, "tanh": np.tanh,
}


def _c_unary_float(k, ins, m: _Mods) -> _Op:
    """sqrt rsqrt rcp ex2 lg2 sin cos tanh: computed in float64 and rounded to the type."""
    op = m.base
    mode = m.take("rn", "approx", "rz", "rm", "rp")
    ftz = m.take("ftz") is not None
    t = m.one_type({"f32", "f64", "f16", "bf16"})
    needs_approx = op in ("rsqrt", "ex2", "lg2", "sin", "cos", "tanh")
    if mode not in ("rn", "approx") or (needs_approx and mode != "approx"):
        m.fail(f"{op} needs " + (".approx" if needs_approx else ".rn or .approx"))
    f = _TRANSCENDENTAL[op]
    if op in ("sqrt", "rcp") and mode == "rn" and t.name in ("f32", "f64"):
        # correctly rounded in the type itself
        fn = (lambda t_, a: np.sqrt(a)) if op == "sqrt" else (lambda t_, a: (t_.dtype.type(1) / a))
    else:
        fn = lambda t_, a: _narrow(f(np.asarray(a).astype(np.float64)), t_)
    return _float_op(k, ins, t, fn, ftz, False)


def _c_copysign(k, ins, m: _Mods) -> _Op:
    t = m.one_type({"f32", "f64"})
    return _simple(k, ins, [t, t], t, lambda a, b: np.copysign(b, a).astype(t.dtype))


def _c_testp(k, ins, m: _Mods) -> _Op:
    what = m.take("notanumber", "nan", "infinite", "finite", "normal", "subnormal", "number")
    what = "nan" if what == "notanumber" else what
    t = m.one_type({"f32", "f64"})
    if what is None:
        m.fail("testp needs a test")
    tiny = np.finfo(t.dtype).tiny
    tests = {
        "nan": np.isnan, "number": lambda a: ~np.isnan(a), "infinite": np.isinf,
        "finite": np.isfinite, "normal": lambda a: np.isfinite(a) & (np.abs(a) >= tiny),
        "subnormal": lambda a: (a != 0) & (np.abs(a) < tiny),
    }
    return _simple(k, ins, [t], T_PRED, tests[what])


# ---- compare, select, convert ----------------------------------------------------------------

_CMP = {"eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs",
        "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan"}


def _compare(cmp: str, t: PtxType):
    ordered = {"eq": np.equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
               "ge": np.greater_equal}
    if t.kind == "f":
        def f(a, b):
            a, b = np.asarray(a).astype(np.float64), np.asarray(b).astype(np.float64)
            nan = np.isnan(a) | np.isnan(b)
            if cmp in ordered:
                return ordered[cmp](a, b)
            if cmp == "ne":
                return (a != b) & ~nan
            if cmp == "num":
                return ~nan
            if cmp == "nan":
                return nan
            if cmp == "neu":
                return a != b
            return ordered[cmp[:-1]](a, b) | nan
        return f
    unsigned = {"lo": np.less, "ls": np.less_equal, "hi": np.greater, "hs": np.greater_equal}
    if cmp in unsigned:
        udtype = _uint(t.nbytes)
        return lambda a, b: unsigned[cmp](np.asarray(a).view(udtype), np.asarray(b).view(udtype))
    if cmp == "ne":
        return np.not_equal
    if cmp not in ordered:
        return None
    return ordered[cmp]


def _c_setp(k, ins, m: _Mods) -> _Op:
    cmp = m.take(*_CMP)
    combine = m.take("and", "or", "xor")
    ftz = m.take("ftz") is not None
    t = m.one_type()
    fn = _compare(cmp, t) if cmp else None
    if fn is None:
        m.fail(f"comparison .{cmp} on .{t.name}")
    ops = ins.operands
    if len(ops) != (4 if combine else 3):
        k._bad(ins, "wrong number of operands")
    dests = (ops[0].first, ops[0].second) if isinstance(ops[0], Pair) else (ops[0], None)
    ra, rb = k.reader(ops[1], t, ins), k.reader(ops[2], t, ins)
    rc = k.reader(ops[3], T_PRED, ins) if combine else None
    wp = k.writer(dests[0], T_PRED, ins)
    wq = k.writer(dests[1], T_PRED, ins) if dests[1] is not None else None
    join = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}.get(combine)

    def run(ctx, mask):
        a, b = ra(ctx), rb(ctx)
        if ftz:
            a, b = _flush(a, t), _flush(b, t)
        p = np.asarray(fn(a, b))
        q = ~p
        if join is not None:
            c = rc(ctx)
            p, q = join(p, c), join(q, c)
        wp(ctx, p, mask)
        if wq is not None:
            wq(ctx, q, mask)
    return _Op(PLAIN, run)


def _c_selp(k, ins, m: _Mods) -> _Op:
    t = m.one_type()
    return _simple(k, ins, [t, t, T_PRED], t, lambda a, b, c: np.where(c, a, b).astype(t.dtype))


_INT_ROUND = {"rni": np.rint, "rzi": np.trunc, "rmi": np.floor, "rpi": np.ceil}


def _c_cvt(k, ins, m: _Mods) -> _Op:
    if m.take("tf32"):
        return _cvt_tf32(k, ins, m)
    fp8 = m.take("e4m3x2", "e5m2x2")
    if fp8:
        return _cvt_fp8(k, ins, m, fp8[:4])
    rnd = m.take("rn", "rz", "rm", "rp", "rni", "rzi", "rmi", "rpi")
    ftz, sat = m.take("ftz") is not None, m.take("sat") is not None
    types = m.types()
    if len(types) != 2:
        m.fail("cvt needs a destination and a source type")
    dst, src = types
    if dst.kind == "x":
        return _cvt_pack(k, ins, m, dst, src, rnd)
    if dst.kind == "p" or src.kind in ("p", "x"):
        m.fail("cvt between these types")
    fn = _cvt_fn(dst, src, rnd, ftz, sat, m)
    return _simple(k, ins, [src], dst, fn)


def _cvt_tf32(k, ins, m: _Mods) -> _Op:
    """cvt.rna.tf32.f32: the f32 rounded to 10 fraction bits, ties away from zero, in a .b32
    (the infinities kept, a NaN made the canonical 0x7FFFFFFF)."""
    if m.take("rna") is None or m.one_type({"f32"}) is None:
        m.fail("only cvt.rna.tf32.f32 is supported")

    def rounded(a):
        bits = np.asarray(a, np.float32).view(np.uint32)
        special = (bits & np.uint32(0x7F800000)) == np.uint32(0x7F800000)
        near = (bits + np.uint32(0x1000)) & np.uint32(0xFFFFE000)
        nan = special & ((bits & np.uint32(0x7FFFFF)) != 0)
        return np.where(nan, np.uint32(0x7FFFFFFF), np.where(special, bits, near)).astype(np.uint32)
    return _simple(k, ins, [T_F32], T_U32, rounded)


def _cvt_fn(dst: PtxType, src: PtxType, rnd, ftz: bool, sat: bool, m: _Mods):
    if src.kind == "f" and dst.kind == "f":
        return _cvt_float(dst, src, rnd, ftz, sat, m)
    if src.kind == "f":
        if rnd not in _INT_ROUND:
            m.fail("float to integer cvt needs .rni, .rzi, .rmi or .rpi")
        return lambda a: _float_to_int(_flush(a, src) if ftz and src.name == "f32" else a,
                                       dst, _INT_ROUND[rnd])
    if dst.kind == "f":
        if rnd not in (None, "rn", "rz", "rm", "rp"):
            m.fail(f"rounding .{rnd} for integer to float")
        mode = rnd or "rn"

        def int_to_float(a):
            if mode == "rn" and dst.name in ("f32", "f64", "f16"):
                out = np.asarray(a).astype(dst.dtype)
            elif mode == "rn" and dst.name == "bf16":
                out = _narrow_exact(*_int_as_sum(a), dst)   # once: the f64 may be rounded
            else:
                out = _round_directed(np.asarray(a).astype(np.float64), dst, mode)
            return _saturate(out) if sat else out
        return int_to_float
    if rnd is not None:
        m.fail(f"rounding .{rnd} for integer to integer")
    return lambda a: _int_to_int(a, dst, src, sat)


def _int_as_sum(a):
    """Integers as s + err exactly: s the nearest float64, err the rest (0 below 2^53)."""
    a = np.asarray(a)
    if a.dtype.itemsize < 8:
        return a.astype(np.float64), np.zeros(a.shape)
    low = a & a.dtype.type(0xFFFFFFFF)
    lo, hi = low.astype(np.float64), (a - low).astype(np.float64)   # both exact in float64
    s = hi + lo                                                       # Knuth's TwoSum
    b = s - hi
    return s, (hi - (s - b)) + (lo - b)


def _cvt_float(dst: PtxType, src: PtxType, rnd, ftz: bool, sat: bool, m: _Mods):
    narrowing = dst.bits < src.bits or (dst.name == "bf16" and src.name == "f16") or (
        dst.name == "f16" and src.name == "bf16")
    if rnd in _INT_ROUND and dst.name != src.name:
        m.fail("integer rounding between different float types")
    if narrowing and rnd not in ("rn", "rz", "rm", "rp"):
        m.fail("narrowing float cvt needs .rn, .rz, .rm or .rp")

    def convert(a):
        if ftz and src.name == "f32":
            a = _flush(a, src)
        x = np.asarray(a).astype(np.float64)
        if rnd in _INT_ROUND:
            out = _narrow(_INT_ROUND[rnd](x), dst)
        else:
            out = _round_directed(x, dst, rnd or "rn")
        out = np.asarray(out).astype(dst.dtype)
        if sat:
            out = _saturate(out)
        return _flush(out, dst) if ftz and dst.name == "f32" else out
    return convert


def _int_range(t: PtxType) -> tuple[int, int]:
    if t.kind == "s":
        return -(1 << (t.bits - 1)), (1 << (t.bits - 1)) - 1
    return 0, (1 << t.bits) - 1


def _float_to_int(a, dst: PtxType, rounding):
    """Round, saturate to the integer range; NaN -> 0, except 64-bit results, where the H100
    gives 0x8000000000000000 (measured on the device)."""
    x = rounding(np.asarray(a).astype(np.float64))
    lo, hi = _int_range(dst)
    big = x >= float(hi + 1)
    small = x <= float(lo)
    inner = np.where(big | small | np.isnan(x), 0.0, x)
    out = inner.astype(np.int64 if dst.kind == "s" or dst.bits < 64 else np.uint64).astype(dst.dtype)
    out = np.where(big, np.array(hi).astype(dst.dtype), out)
    out = np.where(small, np.array(lo).astype(dst.dtype), out)
    nan_value = np.array(1 << 63, dtype=np.uint64).astype(dst.dtype) if dst.bits == 64 else dst.dtype.type(0)
    return np.where(np.isnan(x), nan_value, out).astype(dst.dtype)


def _int_to_int(a, dst: PtxType, src: PtxType, sat: bool):
    a = np.asarray(a)
    if sat:
        lo, hi = _int_range(dst)
        info = np.iinfo(src.dtype)
        if info.min < lo:
            a = np.where(a < src.dtype.type(lo), src.dtype.type(lo), a)
        if hi < info.max:
            a = np.where(a > src.dtype.type(hi), src.dtype.type(hi), a)
    if dst.kind == "s" and src.kind == "s":
        return a.astype(dst.dtype)
    if dst.bits > src.bits:  # widening: sign-extend signed sources
        return a.astype(dst.dtype)
    return a.view(_uint(src.nbytes)).astype(_uint(dst.nbytes)).view(dst.dtype)


_FP8_MAX = {"e4m3": 448.0, "e5m2": 57344.0}


def _fp8_dtype(fmt: str):
    import ml_dtypes      # (JAX's dependency: its float8 types are PTX's e4m3 and e5m2)
    return ml_dtypes.float8_e4m3fn if fmt == "e4m3" else ml_dtypes.float8_e5m2


def _cvt_fp8(k, ins, m: _Mods, fmt: str) -> _Op:
    """cvt.rn.satfinite.{e4m3,e5m2}x2.f32 d, a, b: d (.b16) = {fp8(a) in the high byte, fp8(b)
    in the low one}, to nearest even, finite values and infinities beyond the largest finite
    value saturated to it, a NaN 0x7F; and cvt.rn.f16x2.{e4m3,e5m2}x2 d, a: the two bytes of a
    (.b16) as f16 values (exact), the low byte's in the low half."""
    rnd = m.take("rn")
    satfinite = m.take("satfinite") is not None
    types = [t.name for t in m.types()]
    dtype = _fp8_dtype(fmt)
    if rnd and satfinite and types == ["f32"]:
        def byte(x):
            x = np.asarray(x, np.float32)
            limit = np.float32(_FP8_MAX[fmt])
            out = np.clip(x, -limit, limit).astype(dtype).view(np.uint8).astype(np.uint16)
            return np.where(np.isnan(x), np.uint16(0x7F), out)

        return _simple(k, ins, [T_F32, T_F32], TYPES["b16"],
                       lambda a, b: (byte(a) << np.uint16(8)) | byte(b))
    if rnd and not satfinite and types == ["f16x2"]:
        def halves(a):
            a = np.asarray(a).astype(np.uint16)
            lo, hi = ((a >> np.uint16(s)) & np.uint16(0xFF) for s in (0, 8))
            value = lambda v: v.astype(np.uint8).view(dtype).astype(np.float16).view(np.uint16)  # noqa: E731
            return (value(hi).astype(np.uint32) << np.uint32(16)) | value(lo).astype(np.uint32)

        return _simple(k, ins, [TYPES["b16"]], TYPES["f16x2"], halves)
    m.fail(f"cvt of {fmt}x2 needs .rn.satfinite.{fmt}x2.f32 or .rn.f16x2.{fmt}x2")


def _cvt_pack(k, ins, m: _Mods, dst: PtxType, src: PtxType, rnd) -> _Op:
    """cvt.rn.f16x2.f32 d, a, b: d = {cvt(a) in the high half, cvt(b) in the low half}."""
    if src.name != "f32" or rnd != "rn":
        m.fail("packed cvt needs .rn and an .f32 source")
    elem = TYPES[_PAIR_ELEM[dst.name]]

    def pack(a, b):
        hi = np.asarray(_narrow(np.asarray(a).astype(np.float64), elem)).view(np.uint16).astype(np.uint32)
        lo = np.asarray(_narrow(np.asarray(b).astype(np.float64), elem)).view(np.uint16).astype(np.uint32)
        return (hi << np.uint32(16)) | lo
    return _simple(k, ins, [src, src], dst, pack)


def _c_cvta(k, ins, m: _Mods) -> _Op:
    to = m.take("to") is not None
    space = m.take("global", "shared", "local", "const", "param", "param::entry", "shared::cta")
    t = m.one_type({"u32", "u64"})
    if space is None and m.take("shared::cluster"):
        m.fail("generic addresses of shared::cluster memory (other CTAs' shared memory) are not "
               "supported: access it with ld/st/atom.shared::cluster and mapa's address")
    if space is None:
        m.fail("cvta needs a state space")
    space = "shared" if space == "shared::cta" else space
    space = "param" if space == "param::entry" else space
    window = {"shared": SHARED_WINDOW, "local": LOCAL_WINDOW, "param": PARAM_WINDOW}.get(space, 0)
    shift = U64((-window if to else window) % (1 << 64))
    d, a = _operands(k, ins, 2)
    read = k.reader(a, T_U64, ins)
    write = k.writer(d, t, ins)
    return _Op(PLAIN, lambda ctx, mask: write(
        ctx, np.asarray(read(ctx) + shift).astype(U64).astype(t.dtype), mask))


# ---- memory instructions ---------------------------------------------------------------------

_CACHE_MODS = ("ca", "cg", "cs", "lu", "cv", "wb", "wt", "nc", "volatile", "weak", "relaxed",
               "acquire", "release", "cta", "gpu", "sys", "cluster")


def _shared_space(m: _Mods, space: str | None) -> str | None:
    """`.shared::cta` is `.shared`; `.shared::cluster` (any CTA of the cluster) is its own."""
    if space is None:
        space = m.take("shared::cta", "shared::cluster")
    return "shared" if space == "shared::cta" else space


def _mem_mods(m: _Mods):
    space = _shared_space(m, m.take("global", "shared", "local", "param", "const")) or "generic"
    while m.take(*_CACHE_MODS) or m.take_prefixed("L1::") or m.take_prefixed("L2::"):
        pass
    vec = m.take("v2", "v4")
    t = m.one_type()
    if t.kind in ("p", "x"):
        m.fail(f"memory access of type .{t.name}")
    return space, (int(vec[1]) if vec else 1), t


def _c_ld(k, ins, m: _Mods) -> _Op:
    space, nvec, t = _mem_mods(m)
    d, a = _operands(k, ins, 2)
    items = d.items if isinstance(d, Vec) else (d,)
    if len(items) != nvec:
        k._bad(ins, "vector size does not match the destination")
    writes = [k.writer(item, t, ins) for item in items]
    if space == "param":
        return _ld_param(k, ins, a, t, writes[0])
    addr = k.address(a, space, ins)

    def run(ctx, mask):
        lanes = None if mask is None else np.flatnonzero(mask)
        count = ctx.n if lanes is None else lanes.size
        if count == 0:
            return
        where = _broadcast_u64(addr(ctx), lanes, count)
        segs = ctx.locate(space, where, lanes, t.nbytes * nvec, "load", ins)
        for comp, write in enumerate(writes):
            value = _gather(segs, count, t.dtype, comp)
            write(ctx, _spread(value, lanes, ctx.n), mask)
    return _Op(PLAIN, run)


def _ld_param(k: _Kernel, ins, a, t: PtxType, write) -> _Op:
    if not isinstance(a, Addr) or not isinstance(a.base, Sym):
        k._bad(ins, "ld.param needs [name]")
    name = a.base.name
    if name in k.param_offsets:
        if _is_tensor_map_param(k.param_decl(name)):
            k._bad(ins, f"{name} is a tensor map (a .b8 [128] parameter), which is opaque: pass "
                        f"its address (mov, cvta.param) to the tensor instructions instead")
        offset = k.param_offsets[name][0] + a.offset
        if offset + t.nbytes > k.param_size:
            k._bad(ins, "read past the end of the parameters")
        return _Op(PLAIN, lambda ctx, mask: write(ctx, ctx.launch.param(offset, t.dtype), mask))
    if name in k.regs and a.offset == 0:
        read = k.reader(Reg(name), t, ins)
        return _Op(PLAIN, lambda ctx, mask: write(ctx, read(ctx), mask))
    k._bad(ins, f"unknown parameter {name}")


def _c_st(k, ins, m: _Mods) -> _Op:
    space, nvec, t = _mem_mods(m)
    a, v = _operands(k, ins, 2)
    items = v.items if isinstance(v, Vec) else (v,)
    if len(items) != nvec:
        k._bad(ins, "vector size does not match the source")
    if space == "param":
        if not (isinstance(a, Addr) and isinstance(a.base, Sym) and a.offset == 0 and a.base.name in k.regs):
            k._bad(ins, "st.param only to a call parameter declared in the body")
        write = k.writer(Reg(a.base.name), t, ins)
        read = k.reader(v, t, ins)
        return _Op(PLAIN, lambda ctx, mask: write(ctx, read(ctx), mask))
    reads = [k.reader(item, t, ins) for item in items]
    addr = k.address(a, space, ins)

    def run(ctx, mask):
        lanes = None if mask is None else np.flatnonzero(mask)
        count = ctx.n if lanes is None else lanes.size
        if count == 0:
            return
        where = _broadcast_u64(addr(ctx), lanes, count)
        segs = ctx.locate(space, where, lanes, t.nbytes * nvec, "store", ins)
        for comp, read in enumerate(reads):
            _scatter(segs, _pick(read(ctx), lanes, count), t.dtype, comp)
    return _Op(PLAIN, run)


def _broadcast_u64(value, lanes, count: int):
    value = np.asarray(value).astype(U64)
    if value.ndim == 0:
        return np.full(count, value, U64)
    return value if lanes is None else value[lanes]


def _pick(value, lanes, count: int):
    value = np.asarray(value)
    if value.ndim == 0:
        return np.full(count, value, value.dtype)
    return value if lanes is None else value[lanes]


def _spread(value, lanes, n: int):
    """Per-active-lane values as a full-batch array (inactive lanes are masked out later)."""
    if lanes is None:
        return value
    full = np.zeros(n, value.dtype)
    full[lanes] = value
    return full


def _gather(segs, count: int, dtype, comp: int):
    out = None
    for buf, off, sel, _ in segs:
        view = buf.view(dtype)
        values = view[off // dtype.itemsize + comp]
        if sel is None:
            return values
        if out is None:
            out = np.empty(count, dtype)
        out[sel] = values
    return out


def _scatter(segs, values, dtype, comp: int):
    for buf, off, sel, alloc in segs:
        view = buf.view(dtype)
        view[off // dtype.itemsize + comp] = values if sel is None else values[sel]
        if alloc is not None:
            alloc.written = True


# ---- atomics ---------------------------------------------------------------------------------

_ATOM_TYPES = {
    "add": {"u32", "s32", "u64", "s64", "f32", "f64", "f16", "bf16"},
    "min": {"u32", "s32", "u64", "s64"}, "max": {"u32", "s32", "u64", "s64"},
    "and": {"b32", "b64"}, "or": {"b32", "b64"}, "xor": {"b32", "b64"},
    "exch": {"b32", "b64"}, "cas": {"b16", "b32", "b64"}, "inc": {"u32"}, "dec": {"u32"},
}
_ACCUMULATE = {"add": np.add, "min": np.minimum, "max": np.maximum, "and": np.bitwise_and,
               "or": np.bitwise_or, "xor": np.bitwise_xor}


def _c_atom(k, ins, m: _Mods) -> _Op:
    reduce_only = m.base == "red"
    space = _shared_space(m, m.take("global", "shared")) or "generic"
    while m.take("relaxed", "acquire", "release", "acq_rel", "cta", "gpu", "sys", "cluster", "noftz"):
        pass
    op = m.take(*_ATOM_TYPES)
    if op is None:
        m.fail("unknown atomic operation")
    t = m.one_type(_ATOM_TYPES[op])
    ops = _operands(k, ins, (2 if reduce_only else 3) + (op == "cas"))
    if reduce_only:
        write, a, rest = None, ops[0], ops[1:]
    else:
        write, a, rest = k.writer(ops[0], t, ins), ops[1], ops[2:]
    addr = k.address(a, space, ins)
    reads = [k.reader(x, t, ins) for x in rest]
    apply = _atomic_fn(op, t)
    # atom/red.add.f32 flushes subnormal inputs and results to zero in global memory (PTX
    # manual; on the H100 too), not in shared memory (benchmarks/probes/atom_probe.py)
    flushes = op == "add" and t.name == "f32"

    def run(ctx, mask):
        lanes = None if mask is None else np.flatnonzero(mask)
        count = ctx.n if lanes is None else lanes.size
        if count == 0:
            return
        where = _broadcast_u64(addr(ctx), lanes, count)
        segs = ctx.locate(space, where, lanes, t.nbytes, "atomic", ins)
        args = [_pick(r(ctx), lanes, count).astype(t.dtype) for r in reads]
        olds = np.empty(count, t.dtype)
        for buf, off, sel, alloc in segs:
            part = [x if sel is None else x[sel] for x in args]
            if flushes and alloc is not None:
                old = _atomic_apply(buf.view(t.dtype), off // t.nbytes, [_flush(part[0], t)],
                                    "add.ftz", t, _flushing_add)
            else:
                old = _atomic_apply(buf.view(t.dtype), off // t.nbytes, part, op, t, apply)
            if sel is None:
                olds = old
            else:
                olds[sel] = old
            if alloc is not None:
                alloc.written = True
        if write is not None:
            write(ctx, _spread(olds, lanes, ctx.n), mask)
    return _Op(PLAIN, run)


def _atomic_fn(op: str, t: PtxType):
    """new = f(old, value[, compare]) for one round of non-conflicting lanes."""
    if op == "add" and t.name in ("f16", "bf16"):
        return lambda old, v: _narrow(old.astype(np.float64) + v.astype(np.float64), t)
    table = {
        "add": lambda old, v: np.add(old, v, dtype=t.dtype), "min": np.minimum, "max": np.maximum,
        "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor,
        "exch": lambda old, v: v,
        "cas": lambda old, cmp, v: np.where(old == cmp, v, old),
        "inc": lambda old, v: np.where(old >= v, 0, old + np.uint32(1)).astype(np.uint32),
        "dec": lambda old, v: np.where((old == 0) | (old > v), v, old - np.uint32(1)).astype(np.uint32),
    }
    return table[op]


def _flushing_add(old, v):
    return _flush(np.add(_flush(old, T_F32), v, dtype=np.float32), T_F32)


def _atomic_apply(view, elem, args, op: str, t: PtxType, apply):
    """Apply the lanes' atomics in increasing lane order; return each lane's old value."""
    n = elem.size
    order = np.argsort(elem, kind="stable")
    es = elem[order]
    first = np.empty(n, bool)
    first[0] = True
    first[1:] = es[1:] != es[:-1]
    starts = np.flatnonzero(first)
    ends = np.append(starts[1:], n) - 1
    vals = [x[order] for x in args]
    if op == "add" and t.kind in ("u", "s"):
        olds = _atomic_int_add(view, es, vals[0], first, starts, ends)
    elif op == "exch":
        olds = np.empty(n, t.dtype)
        olds[1:] = vals[0][:-1]
        olds[starts] = view[es[starts]]
        view[es[ends]] = vals[0][ends]
    elif op in _ACCUMULATE and t.name not in ("f16", "bf16") and starts.size * 8 <= n:
        olds = _atomic_grouped(view, es, vals[0], starts, ends, _ACCUMULATE[op])
    else:
        olds = _atomic_rounds(view, es, vals, first, starts, apply)
    out = np.empty(n, t.dtype)
    out[order] = olds
    return out


def _atomic_int_add(view, es, vs, first, starts, ends):
    dtype = view.dtype
    inclusive = np.cumsum(vs, dtype=dtype)
    exclusive = inclusive - vs
    group = np.cumsum(first) - 1
    within = exclusive - exclusive[starts][group]
    base = view[es]
    olds = (base + within).astype(dtype)
    view[es[ends]] = (olds[ends] + vs[ends]).astype(dtype)
    return olds


def _atomic_grouped(view, es, vs, starts, ends, ufunc):
    olds = np.empty(es.size, view.dtype)
    for s, e in zip(starts, ends):
        seq = np.concatenate(([view[es[s]]], vs[s:e + 1]))
        acc = ufunc.accumulate(seq, dtype=view.dtype)
        olds[s:e + 1] = acc[:-1]
        view[es[s]] = acc[-1]
    return olds


def _atomic_rounds(view, es, vals, first, starts, apply):
    """Round r applies every address's r-th lane: no two lanes of a round share an address."""
    n = es.size
    group = np.cumsum(first) - 1
    rank = np.arange(n) - starts[group]
    by_rank = np.argsort(rank, kind="stable")
    bounds = np.flatnonzero(np.diff(rank[by_rank])) + 1
    olds = np.empty(n, view.dtype)
    for pos in np.split(by_rank, bounds):
        idx = es[pos]
        old = view[idx]
        view[idx] = apply(old, *[v[pos] for v in vals])
        olds[pos] = old
    return olds


# ---- control flow, barriers, warps -----------------------------------------------------------

def _c_bra(k, ins, m: _Mods) -> _Op:
    m.take("uni")
    _operands(k, ins, 1)
    return _Op(BRA)


def _c_exit(k, ins, m: _Mods) -> _Op:
    m.take("uni")
    return _Op(EXIT)


def _c_trap(k, ins, m: _Mods) -> _Op:
    return _Op(TRAP)


def _c_bar(k, ins, m: _Mods) -> _Op:
    if m.base == "barrier" and m.take("cluster"):
        return _c_barrier_cluster(k, ins, m)
    if m.base == "bar" and m.take("warp"):
        m.take("sync")
        members = k.reader(_operands(k, ins, 1)[0], T_U32, ins)
        return _Op(WSYNC, lambda ctx, mask: ctx.check_converged(mask, members(ctx), ins),
                   members=members)
    if m.take("red"):
        return _c_bar_red(k, ins, m)
    if not m.take("sync"):
        m.fail("only bar.sync, barrier.sync and bar.red are supported")
    m.take("aligned")
    ops = ins.operands
    if not ops or len(ops) > 2:
        k._bad(ins, "bar.sync takes a barrier number and an optional thread count")
    count = k.reader(ops[1], T_U32, ins) if len(ops) == 2 else None
    op = _Op(BAR)
    op.fn = count
    return op


def _c_bar_red(k, ins, m: _Mods) -> _Op:
    """bar.red.popc.u32 d, 0, p / bar.red.{and,or}.pred d, 0, p: bar.sync 0 whose release
    also gives every thread of the block the count of its threads' true p, or their and / or
    (_Batch._release_barrier runs `reduce`)."""
    mode = m.take("popc", "and", "or")
    t = m.one_type({"u32", "pred"})
    ops = ins.operands
    if mode is None or (mode == "popc") != (t.name == "u32") or len(ops) != 3:
        m.fail("bar.red needs .popc.u32 or .and/.or.pred, a destination, barrier 0 and a predicate")
    barrier = ops[1]
    if not isinstance(barrier, Imm) or barrier.value != 0:
        k._bad(ins, "the simulator supports barrier 0 only")
    read, write = k.reader(ops[2], T_PRED, ins), k.writer(ops[0], t, ins)

    def reduce(ctx, at):
        """The threads `at` (bool per thread) are released from the barrier together."""
        flags = np.broadcast_to(np.asarray(read(ctx), bool), (ctx.n,)) & at
        count = flags.reshape(ctx.B, ctx.T).sum(axis=1)
        present = at.reshape(ctx.B, ctx.T).sum(axis=1)
        per_block = {"popc": count, "and": count == present, "or": count > 0}[mode]
        values = np.repeat(per_block, ctx.T)
        write(ctx, values.astype(np.uint32) if mode == "popc" else values, at)
    op = _Op(BAR)
    op.reduce = reduce
    return op


def _c_barrier_cluster(k, ins, m: _Mods) -> _Op:
    """barrier.cluster.arrive{.release|.relaxed}{.aligned} and barrier.cluster.wait{.acquire}
    {.aligned}: _Batch._cluster_arrive and _cluster_wait (memory is always coherent here, so
    the orderings change nothing)."""
    what = m.take("arrive", "wait")
    if what == "arrive":
        m.take("release", "relaxed")
    elif what == "wait":
        m.take("acquire")
    else:
        m.fail("only barrier.cluster.arrive and barrier.cluster.wait are supported")
    m.take("aligned")
    _needs_sm(k, m, 90)
    if ins.operands:
        k._bad(ins, f"barrier.cluster.{what} takes no operands")
    return _Op(CARRIVE if what == "arrive" else CWAIT)


def _c_mapa(k, ins, m: _Mods) -> _Op:
    """mapa.shared::cluster.{u32,u64} d, a, r: the shared::cluster address of shared::cta
    address `a` in the shared memory of the cluster's CTA of rank `r`: CLUSTER_WINDOW +
    r * CLUSTER_RANK_SPAN + a (a shared::cluster address given for `a` is first taken back to
    its offset)."""
    if not m.take("shared::cluster"):
        m.fail("only mapa.shared::cluster is supported (generic addresses of other CTAs' shared "
               "memory are not)")
    t = m.one_type({"u32", "u64"})
    _needs_sm(k, m, 90)
    d, a, r = _operands(k, ins, 3)
    read_a, read_r, write = k.reader(a, t, ins), k.reader(r, T_U32, ins), k.writer(d, t, ins)

    def run(ctx, mask):
        lanes = None if mask is None else np.flatnonzero(mask)
        count = ctx.n if lanes is None else lanes.size
        if count == 0:
            return
        addr = _pick(read_a(ctx), lanes, count).astype(np.int64)
        rank = _pick(read_r(ctx), lanes, count).astype(np.int64)
        csize = ctx.launch.cluster_size
        mapped = (addr >= CLUSTER_WINDOW) & (addr < CLUSTER_WINDOW + csize * CLUSTER_RANK_SPAN)
        offset = np.where(mapped, (addr - CLUSTER_WINDOW) % CLUSTER_RANK_SPAN, addr)
        bad_rank = rank >= csize
        bad_addr = (offset < 0) | (offset >= ctx.launch.shared_size)
        if bad_rank.any() or bad_addr.any():
            i = int(np.argmax(bad_rank | bad_addr))
            lane = i if lanes is None else int(lanes[i])
            if bad_rank[i]:
                why = (f"rank {int(rank[i])} is no CTA of the cluster (its %cluster_nctarank is "
                       f"{csize}: ranks 0 to {csize - 1})")
            else:
                why = (f"address {int(addr[i]):#x} is not in the CTA's shared memory "
                       f"({ctx.launch.shared_size} bytes)")
            raise SimulatorError(f"{ctx.kernel.where(ins)}: `{ins.text}`: {why}; "
                                 f"{ctx.describe(lane)}")
        value = (CLUSTER_WINDOW + rank * CLUSTER_RANK_SPAN + offset).astype(t.dtype)
        write(ctx, _spread(value, lanes, ctx.n), mask)
    return _Op(PLAIN, run)


def _c_fence(k, ins, m: _Mods) -> _Op:
    """membar/fence (fence.proxy.async too): the simulator runs one thread group at a time, and
    wgmma reads shared memory when issued, so memory is always ordered (writes to an operand
    still in flight are caught apart: _WgmmaReads). fence.mbarrier_init.release.cluster (sm_90)
    too: mbarrier.init is seen by every CTA of the cluster at once."""
    if m.base == "fence" and "mbarrier_init" in m.rest:
        _needs_sm(k, m, 90)
    m.used = [True] * len(m.rest)
    order = _fence_order(ins)
    if order is None:
        return _Op(PLAIN, lambda ctx, mask: None)
    # (the race check follows the fences of a kernel with strong shared accesses: fenced)
    return _Op(PLAIN, lambda ctx, mask: ctx.fenced(mask, *order))


def _c_griddepcontrol(k, ins, m: _Mods) -> _Op:
    """griddepcontrol.wait / .launch_dependents: the simulator runs one grid at a time, so the
    grids before it have always finished."""
    m.take("wait", "launch_dependents")
    return _Op(PLAIN, lambda ctx, mask: None)


def _c_shfl(k, ins, m: _Mods) -> _Op:
    m.take("sync")
    mode = m.take("up", "down", "bfly", "idx")
    m.one_type({"b32"})
    if mode is None:
        m.fail("shfl needs .up, .down, .bfly or .idx")
    ops = ins.operands
    if len(ops) not in (4, 5):
        k._bad(ins, "wrong number of operands")
    d, p = (ops[0].first, ops[0].second) if isinstance(ops[0], Pair) else (ops[0], None)
    ra, rb, rc = (k.reader(x, T_U32, ins) for x in ops[1:4])
    rmask = k.reader(ops[4], T_U32, ins) if len(ops) == 5 else (lambda ctx: np.uint32(0xFFFFFFFF))
    wd = k.writer(d, T_U32, ins)
    wp = k.writer(p, T_PRED, ins) if p is not None else None

    def run(ctx, mask):
        ctx.check_converged(mask, rmask(ctx), ins)
        value, valid = ctx.shuffle(ra(ctx), rb(ctx), rc(ctx), mode, mask, ins)
        wd(ctx, value, mask)
        if wp is not None:
            wp(ctx, valid, mask)
    return _Op(WSYNC, run, members=rmask)


def _c_vote(k, ins, m: _Mods) -> _Op:
    m.take("sync")
    mode = m.take("any", "all", "uni", "ballot")
    t = m.one_type({"pred", "b32"})
    if mode is None or (mode == "ballot") != (t.name == "b32"):
        m.fail("vote needs .any/.all/.uni with .pred or .ballot with .b32")
    ops = ins.operands
    rp = k.reader(ops[1], T_PRED, ins)
    rmask = k.reader(ops[2], T_U32, ins) if len(ops) == 3 else (lambda ctx: np.uint32(0xFFFFFFFF))
    write = k.writer(ops[0], t, ins)

    def run(ctx, mask):
        members = np.asarray(rmask(ctx)).astype(np.uint32)
        ctx.check_converged(mask, members, ins)
        active = ctx.active_array(mask)
        yes = ctx.warp_bits(active & rp(ctx)) & members
        present = ctx.warp_bits(active) & members
        result = {"ballot": yes, "any": yes != 0, "all": yes == present,
                  "uni": (yes == 0) | (yes == present)}[mode]
        write(ctx, result, mask)
    return _Op(WSYNC, run, members=rmask)


def _c_elect(k, ins, m: _Mods) -> _Op:
    """elect.sync d|p, membermask (sm_90): of the member lanes executing it, the lowest is the
    leader; every one gets its lane number in d (`_` drops it) and p true in the leader only."""
    if not m.take("sync"):
        m.fail("elect needs .sync")
    _needs_sm(k, m, 90)
    ops = ins.operands
    if len(ops) != 2 or not isinstance(ops[0], Pair):
        k._bad(ins, "elect.sync takes d|p and a member mask")
    d, p = ops[0].first, ops[0].second
    wd = None if isinstance(d, SinkOperand) else k.writer(d, T_U32, ins)
    wp = k.writer(p, T_PRED, ins)
    rmask = k.reader(ops[1], T_U32, ins)

    def run(ctx, mask):
        members = np.asarray(rmask(ctx)).astype(np.uint32)
        ctx.check_converged(mask, members, ins)
        lane = ctx.special("%laneid").astype(np.uint32)
        chosen = ctx.warp_bits(ctx.active_array(mask)) & members
        lowest = chosen & (~chosen + np.uint32(1))        # the lowest set bit
        leader = np.zeros(lowest.shape, np.uint32)
        for bit in range(32):           # its lane number (lowest is 0 where no lane is chosen)
            leader[lowest == np.uint32(1 << bit)] = bit
        if wd is not None:
            wd(ctx, np.broadcast_to(leader, lane.shape), mask)
        wp(ctx, (lowest != 0) & (lane == leader), mask)
    return _Op(WSYNC, run, members=rmask)


def _c_match(k, ins, m: _Mods) -> _Op:
    """match.any.sync.b32/.b64 d, a, membermask: per lane, the member lanes executing it whose
    a equals its own; match.all.sync.b32/.b64 d, a, membermask: all those lanes if every a is
    equal, else 0."""
    m.take("sync")
    mode = m.take("any", "all")
    t = m.one_type({"b32", "b64"})
    ops = ins.operands
    if mode is None or len(ops) != 3 or isinstance(ops[0], Pair):
        m.fail("match needs .any or .all, a destination, a value and a member mask")
    read, rmask = k.reader(ops[1], T_U64 if t.name == "b64" else T_U32, ins), k.reader(ops[2], T_U32, ins)
    write = k.writer(ops[0], T_U32, ins)

    def run(ctx, mask):
        members = np.broadcast_to(np.asarray(rmask(ctx)).astype(np.uint32), (ctx.n,))
        ctx.check_converged(mask, members, ins)
        tid = ctx.special("%tid_linear")
        named = ctx.active_array(mask) & (((members >> (tid % 32)) & 1) == 1)
        values = np.broadcast_to(np.asarray(read(ctx)), (ctx.n,))
        same = np.zeros(ctx.n, np.uint32)
        thread = np.arange(ctx.n)
        for lane in range(32):      # lane's value against every lane's: a bit per lane
            wanted = thread - tid % 32 + lane
            source = np.clip(wanted, 0, ctx.n - 1)
            ok = (wanted == source) & named[source] & (tid // 32 == tid[source] // 32) & \
                (thread // ctx.T == source // ctx.T) & (values[source] == values)
            same |= np.where(ok, np.uint32(1 << lane), np.uint32(0))
        if mode == "all":
            present = ctx.warp_bits(named)
            same = np.where(same == present, present, np.uint32(0))
        write(ctx, same, mask)
    return _Op(WSYNC, run, members=rmask)


def _c_nanosleep(k, ins, m: _Mods) -> _Op:
    """nanosleep.u32 t: the simulator's threads never sleep (a spinning thread hands over to the
    others anyway: _polls)."""
    m.one_type({"u32"})
    _operands(k, ins, 1)
    return _Op(PLAIN, lambda ctx, mask: None)


def _c_redux(k, ins, m: _Mods) -> _Op:
    """redux.sync.{add,min,max}.{s32,u32} and redux.sync.{and,or,xor}.b32 d, a, membermask:
    the member lanes' a reduced (a sum wrapping modulo 2^32), in every member lane."""
    m.take("sync")
    op = m.take("add", "min", "max", "and", "or", "xor")
    bitwise = op in ("and", "or", "xor")
    t = m.one_type({"b32"} if bitwise else {"s32", "u32"})
    if bitwise:
        t = T_U32
    ops = ins.operands
    if op is None or len(ops) != 3:
        m.fail("redux needs .add, .min, .max, .and, .or or .xor, a destination, a value and a "
               "member mask")
    read, rmask = k.reader(ops[1], t, ins), k.reader(ops[2], T_U32, ins)
    write = k.writer(ops[0], t, ins)
    signed = t.name == "s32"

    def run(ctx, mask):
        members = np.broadcast_to(np.asarray(rmask(ctx)).astype(np.uint32), (ctx.n,))
        ctx.check_converged(mask, members, ins)
        tid = ctx.special("%tid_linear")
        warp = (np.arange(ctx.n) // ctx.T) * (-(-ctx.T // 32)) + tid // 32
        named = ctx.active_array(mask) & (((members >> (tid % 32)) & 1) == 1)
        values = np.broadcast_to(np.asarray(read(ctx)).astype(np.int64), (ctx.n,))
        if not signed:
            values = values & 0xFFFFFFFF
        slots = int(warp[-1]) + 1
        if op == "add":
            totals = np.zeros(slots, np.int64)
            np.add.at(totals, warp[named], values[named])
            totals &= 0xFFFFFFFF
        elif bitwise:
            ufunc = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[op]
            totals = np.full(slots, 0xFFFFFFFF if op == "and" else 0, np.int64)
            ufunc.at(totals, warp[named], values[named])
        else:
            start = np.iinfo(np.int64).max if op == "min" else np.iinfo(np.int64).min
            totals = np.full(slots, start, np.int64)
            (np.minimum if op == "min" else np.maximum).at(totals, warp[named], values[named])
        result = totals[warp]
        write(ctx, (result.astype(np.uint32).astype(np.int32) if signed
                    else result.astype(np.uint32)), mask)
    return _Op(WSYNC, run, members=rmask)


# mma.sync fragments (PTX ISA, "Matrix Fragments for mma.m16n8k8/k16"): for each register
# element, its (row, column) as functions of the lane's group g = lane // 4 and t = lane % 4
_MMA_C = [(lambda g, t: g, lambda g, t: 2 * t), (lambda g, t: g, lambda g, t: 2 * t + 1),
          (lambda g, t: g + 8, lambda g, t: 2 * t), (lambda g, t: g + 8, lambda g, t: 2 * t + 1)]
_MMA_LAYOUTS = {   # shape: (K, A's elements, B's elements)
    "m16n8k8": (8, [(lambda g, t: g, lambda g, t: t), (lambda g, t: g + 8, lambda g, t: t),
                    (lambda g, t: g, lambda g, t: t + 4), (lambda g, t: g + 8, lambda g, t: t + 4)],
                [(lambda g, t: t, lambda g, t: g), (lambda g, t: t + 4, lambda g, t: g)]),
    "m16n8k16": (16, [(lambda g, t, i=i: g + 8 * ((i >> 1) & 1),
                       lambda g, t, i=i: 2 * t + (i & 1) + 8 * (i >> 2)) for i in range(8)],
                 [(lambda g, t, i=i: 2 * t + (i & 1) + 8 * (i >> 1), lambda g, t: g)
                  for i in range(4)]),
    "m16n8k32": (32, [(lambda g, t, i=i: g + 8 * ((i >> 2) & 1),
                       lambda g, t, i=i: 4 * t + (i & 3) + 16 * (i >> 3)) for i in range(16)],
                 [(lambda g, t, i=i: 4 * t + (i & 3) + 16 * (i >> 2), lambda g, t: g)
                  for i in range(8)]),
}


def _fragment_elements(reads, ctx, kind: str) -> list:
    """Each 32-bit register's element(s) as f64 arrays over the threads, in fragment order:
    one tf32 (its low 13 bits dropped), two f16/bf16, the low half first, or four s8/u8, the
    lowest byte first."""
    out = []
    for read in reads:
        word = np.broadcast_to(np.asarray(read(ctx)).astype(np.uint32), (ctx.n,))
        if kind in ("s8", "u8", "e4m3", "e5m2"):
            for shift in range(0, 32, 8):
                byte = ((word >> np.uint32(shift)) & np.uint32(0xFF)).astype(np.uint8)
                if kind in ("e4m3", "e5m2"):
                    out.append(_fp8_values(byte, kind))
                else:
                    out.append((byte.view(np.int8) if kind == "s8" else byte).astype(np.float64))
        elif kind == "tf32":
            out.append((word & np.uint32(0xFFFFE000)).view(np.float32).astype(np.float64))
        else:
            halves = TYPES[kind].dtype
            for half in (word & np.uint32(0xFFFF), word >> np.uint32(16)):
                out.append(half.astype(np.uint16).view(halves).astype(np.float64))
    return out


def _c_mma(k, ins, m: _Mods) -> _Op:
    """mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32, .m16n8k16 with f16 or bf16 A and B,
    and .m16n8k32[.satfinite].s32 with s8 or u8 A and B: each warp's D = A B + C, from the
    fragments its 32 lanes hold. The products and their sum are computed in f64 and rounded to
    f32 once (the tensor cores' order and intermediate precision are unspecified); tf32
    operands lose their low 13 bits. Integer sums are exact and wrap modulo 2^32 (.satfinite:
    clamp to the s32 range)."""
    m.take("sync")
    m.take("aligned")
    shape = m.take("m16n8k8", "m16n8k16", "m16n8k32")
    m.take("row")
    m.take("col")
    satfinite = m.take("satfinite") is not None
    kind = b_kind = m.take("tf32") if shape == "m16n8k8" else None
    if kind is not None:
        m.take("tf32")
        types = m.types()
    else:
        types = m.types()
        names = [t.name for t in types]
        if len(types) == 4 and shape == "m16n8k16" and names[1] == names[2] in ("f16", "bf16"):
            kind = b_kind = names[1]
            types = [types[0], types[3]]
        elif len(types) == 4 and shape == "m16n8k32" and {names[1], names[2]} <= {"s8", "u8"} \
                and names[0] == names[3] == "s32":
            kind, b_kind = names[1], names[2]
            types = [T_F32, T_F32]
    if shape is None or kind is None or [t.name for t in types] != ["f32", "f32"] or \
            (satfinite and shape != "m16n8k32"):
        m.fail("mma.sync needs .m16n8k8.row.col.f32.tf32.tf32.f32, "
               ".m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32 or "
               ".m16n8k32.row.col[.satfinite].s32.{s8,u8}.{s8,u8}.s32")
    integer = shape == "m16n8k32"
    sums = TYPES["s32"] if integer else T_F32
    ops = ins.operands
    size, a_layout, b_layout = _MMA_LAYOUTS[shape]
    if len(ops) != 4 or not all(isinstance(op, Vec) for op in ops) or \
            [len(op.items) for op in ops] != [4, 4, 2, 4]:     # A and B: 32-bit registers
        k._bad(ins, "mma.sync takes {d0..d3}, {a0..a3}, {b0, b1}, {c0..c3}")
    writes = [k.writer(item, sums, ins) for item in ops[0].items]
    read_a = [k.reader(item, T_U32, ins) for item in ops[1].items]
    read_b = [k.reader(item, T_U32, ins) for item in ops[2].items]
    read_c = [k.reader(item, sums, ins) for item in ops[3].items]

    def run(ctx, mask):
        lanes = ctx.whole_warps(mask, ins)        # (warps, 32) thread numbers
        g, t = np.arange(32) // 4, np.arange(32) % 4
        warps = np.arange(lanes.shape[0])[:, None]
        a = np.zeros((lanes.shape[0], 16, size))
        b = np.zeros((lanes.shape[0], size, 8))
        c = np.zeros((lanes.shape[0], 16, 8))
        for matrix, layout, values in ((a, a_layout, _fragment_elements(read_a, ctx, kind)),
                                       (b, b_layout, _fragment_elements(read_b, ctx, b_kind)),
                                       (c, _MMA_C, [np.broadcast_to(np.asarray(r(ctx), np.float64),
                                                                    (ctx.n,)) for r in read_c])):
            for (row, col), value in zip(layout, values):
                matrix[warps, row(g, t), col(g, t)] = value[lanes]
        if integer:        # exact in f64: |a b| < 2^21, c < 2^31
            d = (a @ b + c).astype(np.int64)
            if satfinite:
                d = np.clip(d, -2 ** 31, 2 ** 31 - 1)
            d = d.astype(np.uint64).astype(np.uint32).view(np.int32)    # modulo 2^32
        else:
            d = (a @ b + c).astype(np.float32)
        for (row, col), write in zip(_MMA_C, writes):
            out = np.zeros(ctx.n, d.dtype)
            out[lanes] = d[warps, row(g, t), col(g, t)]
            write(ctx, out, mask)
    return _Op(WSYNC, run, members=lambda ctx: np.uint32(0xFFFFFFFF))


def _c_ldmatrix(k, ins, m: _Mods) -> _Op:
    """ldmatrix.sync.aligned.m8n8.x{1,2,4}[.trans].shared.b16: a warp's load of 1, 2 or 4 8x8
    matrices of 16-bit elements, lanes 8i to 8i + 7 giving the 16-byte rows of matrix i. Lane l
    gets, per matrix, row l // 4's elements 2(l % 4) and 2(l % 4) + 1 (with .trans, column
    l // 4's), the first in the register's low half."""
    m.take("sync")
    m.take("aligned")
    count = m.take("x1", "x2", "x4")
    trans = m.take("trans") is not None
    m.take("shared", "shared::cta")
    if not m.take("m8n8") or count is None or m.one_type({"b16"}).name != "b16":
        m.fail("ldmatrix needs .m8n8, .x1/.x2/.x4 and .b16")
    count = int(count[1])
    ops = ins.operands
    if len(ops) != 2 or not isinstance(ops[0], Vec) or len(ops[0].items) != count:
        k._bad(ins, f"ldmatrix .x{count} takes {{{count} registers}}, [address]")
    writes = [k.writer(item, T_U32, ins) for item in ops[0].items]
    addr = k.address(ops[1], "shared", ins)

    def run(ctx, mask):
        lanes = ctx.whole_warps(mask, ins)         # (warps, 32) thread numbers
        where = _broadcast_u64(addr(ctx), None, ctx.n)
        lane = np.arange(32)
        g, t = lane // 4, lane % 4
        for i, write in enumerate(writes):
            givers = lanes[:, 8 * i:8 * i + 8].reshape(-1)      # each warp's rows, in order
            segs = ctx.locate("shared", where[givers], givers, 16, "load", ins)
            rows = np.stack([_gather(segs, givers.size, np.dtype(np.uint16), c)
                             for c in range(8)], axis=1).reshape(-1, 8, 8)   # warp, row, column
            first, second = ((rows[:, 2 * t, g], rows[:, 2 * t + 1, g]) if trans
                             else (rows[:, g, 2 * t], rows[:, g, 2 * t + 1]))
            out = np.zeros(ctx.n, np.uint32)
            out[lanes] = first.astype(np.uint32) | (second.astype(np.uint32) << np.uint32(16))
            write(ctx, out, mask)
    return _Op(WSYNC, run, members=lambda ctx: np.uint32(0xFFFFFFFF))


# ---- warpgroup MMA (wgmma, sm_90a) ----------------------------------------------------------

WARPGROUP = "warpgroup"     # the members of a WSYNC op that waits for its whole warpgroup
_WGMMA_SHAPE = re.compile(r"m64n(\d+)k(\d+)$")
_SWIZZLE_CHUNKS = (1, 8, 4, 2)   # by descriptor mode (none, 128B, 64B, 32B): 16-byte chunks per row
_ELEMENT_BYTES = {"tf32": 4, "f16": 2, "bf16": 2, "s8": 1, "u8": 1, "e4m3": 1, "e5m2": 1}


def _c_wgmma(k, ins, m: _Mods) -> _Op:
    """wgmma.fence, wgmma.commit_group, wgmma.wait_group N and wgmma.mma_async (all
    .sync.aligned): instructions of a whole warpgroup, four consecutive warps (threads 128q to
    128q + 127 of a block), whose threads meet there as a warp's lanes meet at mma.sync. The
    simulator runs mma_async to completion when it is issued (_c_wgmma_mma), so the fence,
    commit and wait have no effect on data: they check that the warpgroup executes them
    together, and commit_group closes the products in flight into a group, wait_group retires
    groups (_WgmmaReads: writes to the operands of products in flight raise)."""
    what = m.take("fence", "commit_group", "wait_group", "mma_async")
    if what is None or not m.take("sync") or not m.take("aligned"):
        m.fail("wgmma needs .fence, .commit_group, .wait_group or .mma_async, with .sync.aligned")
    if what == "mma_async":
        return _c_wgmma_mma(k, ins, m)
    if what == "wait_group":
        (count,) = _operands(k, ins, 1)
        if not isinstance(count, Imm) or count.kind != "int" or not 0 <= count.value <= 7:
            k._bad(ins, "wgmma.wait_group takes a constant from 0 to 7")
        newest = int(count.value)

        def run(ctx, mask):
            groups = ctx.whole_warpgroups(mask, ins)
            if ctx.wgmma_reads is not None:
                ctx.wgmma_reads.wait(groups, newest)
        return _Op(WSYNC, run, members=WARPGROUP)
    _operands(k, ins, 0)
    if what == "commit_group":
        def commit(ctx, mask):
            groups = ctx.whole_warpgroups(mask, ins)
            if ctx.wgmma_reads is not None:
                ctx.wgmma_reads.commit(groups)
        return _Op(WSYNC, commit, members=WARPGROUP)
    return _Op(WSYNC, lambda ctx, mask: ctx.whole_warpgroups(mask, ins), members=WARPGROUP)


def _c_setmaxnreg(k, ins, m: _Mods) -> _Op:
    """setmaxnreg.{inc,dec}.sync.aligned.u32 N: the warpgroup's registers per thread set to N
    (24 to 256, a multiple of 8). The simulator has no register file to share out: it checks
    that the whole warpgroup executes it together, as the card requires."""
    if m.take("inc", "dec") is None or not m.take("sync") or not m.take("aligned"):
        m.fail("setmaxnreg needs .inc or .dec, with .sync.aligned")
    m.one_type({"u32"})
    (count,) = _operands(k, ins, 1)
    if not isinstance(count, Imm) or count.kind != "int" or count.value not in range(24, 257, 8):
        k._bad(ins, "setmaxnreg takes a constant from 24 to 256, a multiple of 8")
    return _Op(WSYNC, lambda ctx, mask: ctx.whole_warpgroups(mask, ins), members=WARPGROUP)


def _c_wgmma_mma(k, ins, m: _Mods) -> _Op:
    """wgmma.mma_async.sync.aligned.m64nNk16.f32.{f16,bf16}.{f16,bf16} d, a-desc, b-desc,
    scale-d, imm-scale-a, imm-scale-b, imm-trans-a, imm-trans-b and .m64nNk8.f32.tf32.tf32
    (no transposes), N = 8, 16, ..., 256: each warpgroup's D (64 x N, in its threads' N/2 f32
    registers d) = A B + (scale-d ? D : 0), A (64 x K) and B (K x N) read from shared memory
    through the descriptors (_wgmma_operand), which must be the same in all of a warpgroup's
    threads, as scale-d must. Or A in registers, `{a0, a1, a2, a3}` in place of a-desc, with
    no imm-trans-a (_wgmma_register_a). imm-scale-a/b = -1 negate A/B. Run synchronously, when issued:
    the operands are read and d written at once; the chunks read stay in flight
    (_WgmmaReads) until a wait_group retires the product's group, and a write to one before
    that raises. Products and sum in f64, rounded to f32 once, as mma.sync; tf32 operands lose
    their low 13 bits."""
    shape = m.take_prefixed("m64n")
    found = _WGMMA_SHAPE.match(shape or "")
    satfinite = m.take("satfinite") is not None
    fp8 = m.take("e4m3", "e5m2")
    b_kind = None
    if m.take("tf32"):
        m.take("tf32")
        kind, types = "tf32", [t.name for t in m.types()]
        usage = ".m64nNk8.f32.tf32.tf32 d, a-desc, b-desc, scale-d, imm-scale-a, imm-scale-b"
    elif fp8:
        kind, b_kind = fp8, m.take("e4m3", "e5m2") or fp8    # (B's format may differ)
        types = [t.name for t in m.types()]
        usage = ".m64nNk32.f32.{e4m3,e5m2}.{e4m3,e5m2} d, a-desc, b-desc, scale-d, " \
                "imm-scale-a, imm-scale-b"
    else:
        types = [t.name for t in m.types()]
        same = len(types) == 3 and types[1] == types[2]
        kind = types[1] if same and types[1] in ("f16", "bf16", "s8", "u8") else None
        types = types[:1]
        usage = (".m64nNk16.f32.{f16,bf16}.{f16,bf16} d, a-desc, b-desc, scale-d, imm-scale-a, "
                 "imm-scale-b, imm-trans-a, imm-trans-b")
    integer = kind in ("s8", "u8")
    b_kind = b_kind or kind
    if integer:
        usage = ".m64nNk32[.satfinite].s32.{s8,u8}.{s8,u8} (one type) d, a-desc, b-desc, scale-d"
    kdim = {"tf32": 8, "s8": 32, "u8": 32, "e4m3": 32, "e5m2": 32}.get(kind, 16)
    n = int(found.group(1)) if found else 0
    shapes = (8, 16, 24, *range(32, 257, 16)) if integer else range(8, 257, 8)
    if (kind is None or types != ["s32" if integer else "f32"] or not found
            or int(found.group(2)) != kdim or n not in shapes or (satfinite and not integer)):
        m.fail(f"wgmma.mma_async needs {usage} (N = 8, 16, ..., 256; for s8 and u8 8, 16, 24, "
               f"32, 48, ..., 256)")
    ops = ins.operands
    a_regs = len(ops) > 1 and isinstance(ops[1], Vec)     # A in registers: no imm-trans-a
    if a_regs and len(ops[1].items) != 4:
        k._bad(ins, f"A in registers is 4 32-bit registers, found {len(ops[1].items)}")
    if integer:
        if len(ops) != 4 or not isinstance(ops[0], Vec):
            k._bad(ins, f"wgmma.mma_async{usage}: expected 4 operands, found {len(ops)}")
        return _wgmma_integer(k, ins, ops, kind, n, satfinite)
    transposes = kind in ("f16", "bf16")      # (imm-trans-a and -b; with A in registers only b)
    expected = 8 - (a_regs and transposes) if transposes else 6
    if len(ops) != expected or not isinstance(ops[0], Vec):
        if a_regs:
            usage = usage.replace("a-desc", "{a0, a1, a2, a3}").replace(" imm-trans-a,", "")
        k._bad(ins, f"wgmma.mma_async{usage}: expected {expected} operands, found {len(ops)}")
    if len(ops[0].items) != n // 2:
        k._bad(ins, f"d of .m64n{n} is {n // 2} .f32 registers, found {len(ops[0].items)}")
    writes = [k.writer(item, T_F32, ins) for item in ops[0].items]
    read_c = [k.reader(item, T_F32, ins) for item in ops[0].items]
    read_a = [k.reader(item, T_U32, ins) for item in ops[1].items] if a_regs else \
        _wgmma_descriptor(k, ins, ops[1])
    read_b = _wgmma_descriptor(k, ins, ops[2])
    read_scale = _wgmma_scale_d(k, ins, ops[3])
    sign_a, sign_b = (_wgmma_imm(k, ins, op, (1, -1), name)
                      for op, name in zip(ops[4:6], ("imm-scale-a", "imm-scale-b")))
    trans = ops[6:8] or (None, None)
    if a_regs:
        trans = (None, ops[6] if transposes else None)
    trans_a, trans_b = (bool(_wgmma_imm(k, ins, op, (0, 1), name)) for op, name in
                        zip(trans, ("imm-trans-a", "imm-trans-b")))
    rows, cols = _wgmma_d_layout(n)

    def run(ctx, mask):
        groups = ctx.whole_warpgroups(mask, ins)        # (warpgroups, 128) thread numbers
        a, b, scale = _wgmma_inputs(ctx, groups, ins, (read_a, read_b, read_scale), a_regs, n,
                                    kdim, (kind, b_kind), (trans_a, trans_b))
        a, b = sign_a * a, sign_b * b
        c = np.zeros((groups.shape[0], 64, n))
        for i, read in enumerate(read_c):
            value = np.broadcast_to(np.asarray(read(ctx), np.float64), (ctx.n,))
            c[:, rows[i], cols[i]] = value[groups]
        c = np.where(scale.astype(bool)[:, None, None], c, 0.0)    # scale-d 0: D is never read
        d = (a @ b.transpose(0, 2, 1) + c).astype(np.float32)
        for i, write in enumerate(writes):
            out = np.zeros(ctx.n, np.float32)
            out[groups] = d[:, rows[i], cols[i]]
            write(ctx, out, mask)
    return _Op(WSYNC, run, members=WARPGROUP)


def _wgmma_integer(k, ins, ops, kind: str, n: int, satfinite: bool) -> _Op:
    """wgmma.mma_async.sync.aligned.m64nNk32[.satfinite].s32.{s8,u8}.{s8,u8} d, a-desc, b-desc,
    scale-d: as the floating-point products, both operands K-major, exact: the sum wraps modulo
    2^32 (.satfinite: clamps to the s32 range)."""
    if len(ops[0].items) != n // 2:
        k._bad(ins, f"d of .m64n{n} is {n // 2} .s32 registers, found {len(ops[0].items)}")
    t_s32 = TYPES["s32"]
    writes = [k.writer(item, t_s32, ins) for item in ops[0].items]
    read_c = [k.reader(item, t_s32, ins) for item in ops[0].items]
    a_regs = isinstance(ops[1], Vec)
    read_a = [k.reader(item, T_U32, ins) for item in ops[1].items] if a_regs else \
        _wgmma_descriptor(k, ins, ops[1])
    read_b = _wgmma_descriptor(k, ins, ops[2])
    read_scale = _wgmma_scale_d(k, ins, ops[3])
    rows, cols = _wgmma_d_layout(n)

    def run(ctx, mask):
        groups = ctx.whole_warpgroups(mask, ins)
        a, b, scale = _wgmma_inputs(ctx, groups, ins, (read_a, read_b, read_scale), a_regs, n,
                                    32, (kind, kind), (False, False))
        c = np.zeros((groups.shape[0], 64, n), np.int64)
        for i, read in enumerate(read_c):
            value = np.broadcast_to(np.asarray(read(ctx)).astype(np.int64), (ctx.n,))
            c[:, rows[i], cols[i]] = value[groups]
        c = np.where(scale.astype(bool)[:, None, None], c, 0)
        d = a.astype(np.int64) @ b.astype(np.int64).transpose(0, 2, 1) + c
        if satfinite:
            d = np.clip(d, -2 ** 31, 2 ** 31 - 1)
        d = d.astype(np.uint64).astype(np.uint32).view(np.int32)    # modulo 2^32
        for i, write in enumerate(writes):
            out = np.zeros(ctx.n, np.int32)
            out[groups] = d[:, rows[i], cols[i]]
            write(ctx, out, mask)
    return _Op(WSYNC, run, members=WARPGROUP)


def _wgmma_inputs(ctx, groups, ins, reads, a_regs: bool, n: int, kdim: int, kinds, trans):
    """A (64 x K), B (N x K) and scale-d of each warpgroup's product, A from its registers or
    its descriptor, B from its descriptor (of (A's, B's) `kinds` and `trans` flags); the
    shared chunks read put in flight."""
    read_a, read_b, read_scale = reads
    desc_b, scale = (_per_warpgroup(ctx, groups, read(ctx), what, ins)
                     for read, what in ((read_b, "the B descriptor"), (read_scale, "scale-d")))
    if a_regs:
        a, where_a = _wgmma_register_a(ctx, groups, read_a, kinds[0]), None
    else:
        desc_a = _per_warpgroup(ctx, groups, read_a(ctx), "the A descriptor", ins)
        a, where_a = _wgmma_operand(ctx, groups, desc_a, 64, kdim, kinds[0], trans[0], "A", ins)
    b, where_b = _wgmma_operand(ctx, groups, desc_b, n, kdim, kinds[1], trans[1], "B", ins)
    _in_flight(ctx, groups, where_a, where_b, kdim, kinds[0], trans[0], ins)
    return a, b, scale


def _in_flight(ctx, groups, where_a, where_b, kdim: int, kind: str, trans_a: bool, ins):
    """A product's shared chunks (A's, None for A in registers, then B's) stay in flight until
    it is retired (_WgmmaReads), each with the warp whose part alone reads it (-1: all)."""
    if where_a is None:
        where_a = where_b[:, :0]
    owners = np.concatenate([_a_chunk_warps(where_a.shape[1], kdim, kind, trans_a),
                             np.full(where_b.shape[1], -1)])
    offsets = np.concatenate([where_a, where_b], axis=1)
    if ctx.async_copies.pending or ctx.mbarriers.copies:
        _check_landed(ctx, groups, offsets, ins)
    if ctx.wgmma_reads is None:
        ctx.wgmma_reads = _WgmmaReads(ctx)
    ctx.wgmma_reads.issue(groups, offsets, owners, ins)


def _a_chunk_warps(count: int, kdim: int, kind: str, trans: bool):
    """The warp of the warpgroup whose part of the product alone reads each of A's `count`
    16-byte chunks, in _wgmma_chunks' order: warp w computes rows 16w to 16w + 15 of D from
    A's rows 16w to 16w + 15 (a K-major chunk is part of one row, an MN-major one of 8 or 4)."""
    if not count:
        return np.zeros(0, np.int64)
    per_chunk = 16 // _ELEMENT_BYTES.get(kind, 2)
    if trans:
        return np.repeat(np.arange(0, 64, per_chunk) // 16, kdim)
    return np.repeat(np.arange(64) // 16, kdim // per_chunk)


def _wgmma_register_a(ctx, groups, reads, kind: str):
    """Per warpgroup, A (64 x K, f64) from its threads' four registers: warp w of the
    warpgroup holds rows 16w to 16w + 15 as mma.sync's A fragment of m16n8k16 (f16, bf16),
    m16n8k8 (tf32) or m16n8k32 (8-bit: s8, u8, e4m3, e5m2)."""
    shape = {"tf32": "m16n8k8", "f16": "m16n8k16", "bf16": "m16n8k16"}.get(kind, "m16n8k32")
    size, layout, _ = _MMA_LAYOUTS[shape]
    tid = np.arange(128)
    g, t, w = (tid % 32) // 4, tid % 4, tid // 32
    a = np.zeros((groups.shape[0], 64, size))
    for (row, col), value in zip(layout, _fragment_elements(reads, ctx, kind)):
        a[:, 16 * w + row(g, t), col(g, t)] = value[groups]
    return a


def _wgmma_descriptor(k, ins, op):
    """A reader of a 64-bit matrix descriptor: a .b64/.u64/.s64 register or an immediate."""
    if isinstance(op, Reg) and not _is_special(op.name):
        t = k._reg_type(op.name, ins)
        if t.bits != 64 or t.kind not in "bus":
            k._bad(ins, f"a matrix descriptor is a 64-bit integer register, not .{t.name} "
                        f"{op.name}")
    elif not isinstance(op, Imm) or op.kind != "int":
        k._bad(ins, f"a matrix descriptor is a 64-bit register or an integer constant, not {op!r}")
    return k.reader(op, T_U64, ins)


def _wgmma_scale_d(k, ins, op):
    """A reader of scale-d: a predicate register (or its negation `!%p`), or the constant 0 or 1."""
    if isinstance(op, Imm):
        if op.kind != "int" or op.value not in (0, 1):
            k._bad(ins, "scale-d is a predicate or the constant 0 or 1")
    elif not isinstance(op, Reg) or _is_special(op.name) or k._reg_type(op.name, ins).kind != "p":
        k._bad(ins, f"scale-d is a predicate or the constant 0 or 1, not {op!r}")
    return k.reader(op, T_PRED, ins)


def _wgmma_imm(k, ins, op, allowed, name: str) -> int:
    if op is None:
        return allowed[0]       # tf32: no imm-trans operands
    if not isinstance(op, Imm) or op.kind != "int" or op.value not in allowed:
        k._bad(ins, f"{name} is the constant {' or '.join(map(str, allowed))}")
    return int(op.value)


def _wgmma_d_layout(n: int):
    """Per register i of d and thread of the warpgroup: D's row and column (the PTX ISA's
    wgmma D fragment: mma.sync's m16n8 C fragment, once per 8 columns, warp w holding rows
    16w to 16w + 15)."""
    tid, i = np.arange(128)[None, :], np.arange(n // 2)[:, None]
    lane, e = tid % 32, i % 4
    return 16 * (tid // 32) + lane // 4 + 8 * (e // 2), 8 * (i // 4) + 2 * (lane % 4) + e % 2


def _per_warpgroup(ctx, groups, value, what: str, ins):
    """A value that must be the same in all 128 threads of each warpgroup: one per warpgroup;
    an error naming the first thread where it differs."""
    value = np.broadcast_to(np.asarray(value), (ctx.n,))[groups]
    differs = value != value[:, :1]
    if differs.any():
        g, lane = np.argwhere(differs)[0]
        raise SimulatorError(
            f"{ctx.kernel.where(ins)}: `{ins.text}`: {what} must be the same in all 128 threads "
            f"of the warpgroup; it is {_show(value[g, lane])} here and {_show(value[g, 0])} in "
            f"thread {ctx.thread_index(int(groups[g, 0]) % ctx.T)}; "
            f"{ctx.describe(int(groups[g, lane]))}")
    return value[:, 0]


def _show(value) -> str:
    return str(bool(value)) if value.dtype == np.bool_ else hex(int(value))


def _wgmma_operand(ctx, groups, desc, rows: int, kdim: int, kind: str, trans: bool, name: str, ins):
    """Per warpgroup, the rows x K matrix X of f64 values that its descriptor describes (A[m, k] =
    X(m, k), B[k, n] = X(n, k)), read from its block's shared memory in 16-byte chunks, chunk c as
    a load of the warpgroup's thread c % 128 (so the race check sees it); and the chunks' offsets
    in the batch's shared buffer, (warpgroups, chunks)."""
    start, lbo, sbo, base, mode = _descriptor_fields(desc)
    if base.any():
        g = int(np.argmax(base != 0))
        raise SimulatorError(f"{ctx.kernel.where(ins)}: `{ins.text}`: the {name} descriptor "
                             f"{int(desc[g]):#x} has base offset {int(base[g])}; only 0 is "
                             f"supported; {ctx.describe(int(groups[g, 0]))}")
    size = _ELEMENT_BYTES.get(kind, 2)
    per_chunk = 16 // size
    addr = _wgmma_chunks(start, lbo, sbo, mode, rows, kdim, per_chunk, trans)   # (groups, i, j)
    count = addr[0].size
    lanes = groups[:, np.arange(count) % 128].reshape(-1)
    segs = ctx.locate("shared", addr.reshape(-1).astype(U64), lanes, 16, "load", ins)
    dtype = np.dtype({4: np.uint32, 2: np.uint16, 1: np.uint8}[size])
    chunks = np.stack([_gather(segs, lanes.size, dtype, e) for e in range(per_chunk)], axis=1)
    chunks = chunks.reshape(addr.shape + (per_chunk,))
    if trans:     # chunks (row // per_chunk, k) hold rows row // per_chunk * per_chunk + e
        chunks = chunks.transpose(0, 1, 3, 2)
    bits = chunks.reshape(groups.shape[0], rows, kdim)
    offsets = segs[0][1].reshape(groups.shape[0], count)
    if kind == "tf32":
        return (bits & np.uint32(0xFFFFE000)).view(np.float32).astype(np.float64), offsets
    if kind in ("e4m3", "e5m2"):
        return _fp8_values(bits, kind), offsets
    return bits.view(TYPES[kind].dtype).astype(np.float64), offsets


def _fp8_values(bits, kind: str):
    """The f64 values of fp8 bytes: e4m3 (NVIDIA's, OCP's E4M3: no infinities, NaN at
    S.1111.111) or e5m2 (IEEE-like: infinities and NaNs at exponent 31)."""
    import ml_dtypes      # (JAX's dependency: its float8 types are these)
    dtype = ml_dtypes.float8_e4m3fn if kind == "e4m3" else ml_dtypes.float8_e5m2
    return bits.view(dtype).astype(np.float64)


def _descriptor_fields(desc):
    """A wgmma matrix descriptor's fields as int64 arrays: the start address, the leading and
    stride byte offsets (all in bytes), the base offset and the swizzle mode."""
    desc = np.asarray(desc).astype(U64)

    def field(shift: int, bits: int):
        return ((desc >> U64(shift)) & U64((1 << bits) - 1)).astype(np.int64)
    return field(0, 14) << 4, field(16, 14) << 4, field(32, 14) << 4, field(49, 3), field(62, 2)


def _wgmma_chunks(start, lbo, sbo, mode, rows: int, kdim: int, per_chunk: int, trans: bool):
    """The shared addresses of an operand's 16-byte chunks, per warpgroup (its descriptor's
    fields, one per warpgroup), as (warpgroups, rows, K / per_chunk) for a K-major operand (chunk
    (r, c): row r, columns c * per_chunk on) or (warpgroups, rows / per_chunk, K) for an MN-major
    one (chunk (c, k): column k, rows c * per_chunk on). Core matrices are 8 rows of 16 bytes;
    with a swizzle of W 16-byte chunks per row (mode 1, 2, 3: W = 8, 4, 2), the XOR of address
    bits 4-6 with bits 7-9 (CuTe's Swizzle<log2 W, 4, 3>) is applied to the whole address."""
    start, lbo, sbo, mode = (x[:, None, None] for x in (start, lbo, sbo, mode))
    width = np.array(_SWIZZLE_CHUNKS)[mode]
    if trans:
        c, kk = np.arange(rows // per_chunk)[:, None], np.arange(kdim)[None, :]
        plain = c * sbo + (kk % 8) * 16 + (kk // 8) * lbo
        swizzled = (c % width) * 16 + (c // width) * lbo + (kk % 8) * 16 * width + (kk // 8) * sbo
    else:
        r, c = np.arange(rows)[:, None], np.arange(kdim // per_chunk)[None, :]
        plain = (r % 8) * 16 + (r // 8) * sbo + c * lbo
        swizzled = (r % 8) * 16 * width + (r // 8) * sbo + c * 16
    return _swizzle(start + np.where(mode == 0, plain, swizzled), width)


def _swizzle(addr, width):
    """The swizzled shared addresses of 16-byte chunks at `addr` for rows of `width` chunks
    (8, 4, 2 for the 128-, 64- and 32-byte swizzles; 1: none): address bits 4 to 3 + log2
    width XORed with bits 7 on (CuTe's Swizzle<log2 width, 4, 3>), on the whole address.
    The same for wgmma's descriptors and tensor copies."""
    return addr ^ (((addr >> 7) & (width - 1)) << 4)


class _WgmmaReads:
    """The wgmma products of a batch whose shared operands the GPU may still be reading
    (docs/simulator.md, "Warpgroup matrix multiply"). Warpgroups are numbered by the batch's
    thread number // 128 (128 threads of one block); `commits` counts each one's commit_groups.
    Per mma_async executed, `pending` holds [the instruction, its warpgroups, the group each
    product joins (its warpgroup's commits before it: committed once that count has grown), the
    16-byte chunks of the batch's shared buffer each read (warpgroups, chunks), the warp of the
    warpgroup whose part alone reads each chunk (-1: all four, B's), and whether each product
    was waited for], until a barrier of the block after its wait_group retires it. `count` holds,
    per chunk, how many reads of products not yet retired it has (the buffer is per block, so
    counts are too), `products` how many such products there are: while it is 0, a write costs
    one comparison.

    A wait_group is per warp on the GPU (its .sync): it orders a warp's own part of a product
    (its 16 rows of A, and B) before that warp's later instructions, and the other warps' parts
    before another thread's only through a barrier after their waits. So a product waited for
    blocks every write to its chunks but one by the warp that alone read them, until the
    block's next barrier (release).

    Every write to shared memory goes through check: stores and atomics (_Batch.locate), and a
    cp.async's destination at its issue (it may land any time until its wait: _Batch.locate
    too), and a bulk copy's at its issue. A product issued over a copy still pending fails at
    the product (_check_landed)."""

    def __init__(self, batch: "_Batch"):
        self.batch = batch
        self.count = np.zeros(batch.shared.size // 16, np.int32)
        self.commits = np.zeros(-(-batch.n // 128), np.int64)
        self.products = 0
        self.pending = []

    def issue(self, groups, offsets, owners, ins):
        """Warpgroups `groups` (warpgroups, 128) issued `ins`, reading the chunks at byte
        `offsets` (warpgroups, chunks) of the batch's shared buffer, chunk c by the warp
        `owners[c]` of the warpgroup alone (-1: by all four)."""
        chunks = (offsets >> 4).astype(np.int32)
        self._add(chunks, 1)
        wgs = groups[:, 0] // 128
        self.products += wgs.size
        self.pending.append([ins, wgs, self.commits[wgs].copy(), chunks, owners,
                             np.zeros(wgs.size, bool)])

    def commit(self, groups):
        """commit_group: each warpgroup's products issued since its last commit become its newest
        group (an empty one if none)."""
        self.commits[groups[:, 0] // 128] += 1

    def wait(self, groups, newest: int):
        """wait_group `newest`: each warpgroup's committed groups but the `newest` latest are
        done for the warps that waited (each for its own part): waited for, not yet retired."""
        if not self.products:
            return
        waiting = np.zeros(self.commits.size, bool)
        waiting[groups[:, 0] // 128] = True
        for ins, wgs, joined, chunks, owners, waited in self.pending:
            waited |= waiting[wgs] & (joined < self.commits[wgs] - newest)

    def release(self, blocks):
        """A barrier released `blocks` (bool per block of the batch): their products waited for
        are done for every thread."""
        if self.products:
            self._retire(lambda wgs: blocks[wgs // (self.batch.T // 128)])

    def release_warpgroups(self, groups):
        """An mbarrier phase completed that every thread of warpgroups `groups` (numbers in the
        batch) arrived on: their products waited for (before the arrivals, as a pipeline's
        "stage is free" barrier has them) are done for the threads that wait for the phase,
        here for every thread."""
        if self.products:
            arrived = np.zeros(self.commits.size, bool)
            arrived[groups] = True
            self._retire(lambda wgs: arrived[wgs])

    def _retire(self, retiring):
        """Retire the products waited for by the warpgroups that `retiring(wgs)` marks."""
        kept = []
        for entry in self.pending:
            ins, wgs, joined, chunks, owners, waited = entry
            done = waited & retiring(wgs)
            if done.any():
                self._add(chunks[done], -1)
                self.products -= int(done.sum())
                if done.all():
                    continue
                entry[1:] = [wgs[~done], joined[~done], chunks[~done], owners, waited[~done]]
            kept.append(entry)
        self.pending = kept

    def _add(self, chunks, sign: int):
        """Count a read (sign 1) or its end (-1) for every entry of `chunks` (repeats too)."""
        flat = np.sort(chunks, axis=None)
        first = np.flatnonzero(np.concatenate(([True], flat[1:] != flat[:-1])))
        times = np.diff(np.append(first, flat.size)).astype(np.int32)
        self.count[flat[first]] += times if sign > 0 else -times

    def check(self, offsets, lanes, size: int, what: str, ins):
        """Writes of `size` bytes at byte `offsets` of the batch's shared buffer by `lanes`
        (`what`: "store" or "atomic"): an error if one reaches a chunk a product not yet retired
        read, unless the writer's warp alone read it and has waited for the product.
        (A cp.async's or bulk copy's destination counts from its issue: one issued before the
        product onto its operands fails at the product, _check_landed.)"""
        steps = [0] if size <= 16 and size & (size - 1) == 0 else \
            np.minimum(np.arange(0, size + 15, 16), size - 1)    # a byte of each chunk, and the last
        touched = (offsets[:, None] + np.asarray(steps)) >> 4
        hit = (self.count[touched] != 0).any(axis=1)
        if not hit.any():
            return
        for i in np.flatnonzero(hit):
            lane = int(lanes[i])
            for chunk in np.unique(touched[i][self.count[touched[i]] != 0]):
                found = self._blocking(lane, int(chunk))
                if found is not None:
                    byte = next(b for b in range(int(offsets[i]), int(offsets[i]) + size)
                                if b >> 4 == chunk)
                    self._raise(lane, byte, found, what, ins)

    def _blocking(self, lane: int, chunk: int):
        """(warpgroup, mma_async, whether committed, whether waited for) of the oldest product
        not yet retired that read `chunk` (of the block whose shared memory holds it: `lane`'s,
        or another CTA's of its cluster through shared::cluster) and is not done for `lane`."""
        per_block, block = self.batch.T // 128, chunk * 16 // self.batch.launch.shared_pad
        warp = lane % 128 // 32
        for ins, wgs, joined, chunks, owners, waited in self.pending:
            for wg, group, read, done in zip(wgs, joined, chunks, waited):
                if wg // per_block != block:
                    continue
                at = np.flatnonzero(read == chunk)
                if at.size and not (done and wg == lane // 128 and (owners[at] == warp).all()):
                    return int(wg), ins, bool(group < self.commits[wg]), bool(done)
        return None

    def _raise(self, lane: int, byte: int, found, what: str, ins):
        batch = self.batch
        block = byte // batch.launch.shared_pad
        offset = byte - block * batch.launch.shared_pad
        # (through shared::cluster or a multicast copy, another CTA's shared memory)
        place = "" if block == lane // batch.T else f" of block {batch.block_index(block)}"
        wg, product, committed, waited = found
        where = batch.kernel.where
        # d's registers: the first and the last
        text = re.sub(r"\{([^{},]+),[^{}]*,([^{},]+)\}", r"{\1, ...,\2}", product.text)
        if waited:
            reading = (f"which a wgmma of warpgroup {wg * 128 % batch.T // 128} (issued at "
                       f"{where(product)}, `{text}`, waited for by each warp for its own part) "
                       f"may still be reading in another warp: a wait_group orders only its own "
                       f"warp's instructions; add a barrier after it (ptxpy.syncthreads())")
        else:
            state = "committed, not yet retired by a wait_group" if committed else \
                "not yet committed"
            reading = (f"which a wgmma of warpgroup {wg * 128 % batch.T // 128} (issued at "
                       f"{where(product)}, `{text}`, {state}) may still be reading: wait for "
                       f"it first (ptxpy.wgmma_wait / wgmma.wait_group)")
        if ins.parts[0] == "cp":
            until = ("its mbarrier's phase completes" if "bulk" in ins.parts else
                     "the wait that covers it")
            head = (f"{where(ins)}: `{ins.text}` writes shared offset {offset:#x}{place} (a "
                    f"{_copy_kind(ins)} may land any time until {until})")
        else:
            verb = "writes" if what == "store" else "atomically updates"
            head = f"{where(ins)}: `{ins.text}` {verb} shared offset {offset:#x}{place}"
        raise SimulatorError(f"{head}, {reading}; {batch.describe(lane)}")


# ---- cp.async ------------------------------------------------------------------------------------

def _c_cp(k, ins, m: _Mods) -> _Op:
    """cp.async.{ca,cg}.shared.global [dst], [src], cp-size{, src-size}; cp.async.commit_group;
    cp.async.wait_group N; cp.async.wait_all. A copy reads its source when issued and writes
    its destination when a wait of the issuing thread covers its group (_AsyncCopies): a read
    of the destination before that sees what was there, as the GPU may."""
    if not m.take("async"):
        m.fail("only cp.async is supported")
    if m.take("bulk"):
        return _c_cp_bulk(k, ins, m)
    if m.take("commit_group"):
        return _Op(PLAIN, lambda ctx, mask: ctx.async_copies.commit(mask))
    if m.take("wait_all"):
        return _Op(PLAIN, lambda ctx, mask: ctx.async_copies.wait(mask, None))
    if m.take("wait_group"):
        (count,) = _operands(k, ins, 1)
        if not isinstance(count, Imm):
            k._bad(ins, "cp.async.wait_group takes a constant")
        n = int(_imm(count, T_U32))
        return _Op(PLAIN, lambda ctx, mask: ctx.async_copies.wait(mask, n))
    level = m.take("ca", "cg")
    if level is None or not m.take("shared", "shared::cta") or not m.take("global"):
        m.fail("cp.async needs .ca or .cg, .shared and .global")
    ops = ins.operands
    if len(ops) not in (3, 4) or not isinstance(ops[2], Imm):
        k._bad(ins, "cp.async takes [dst], [src], cp-size and an optional src-size")
    size = int(_imm(ops[2], T_U32))
    if size not in (4, 8, 16) or (level == "cg" and size != 16):
        k._bad(ins, "cp-size must be 4, 8 or 16 (16 with .cg)")
    dst, src = k.address(ops[0], "shared", ins), k.address(ops[1], "global", ins)
    read_size = k.reader(ops[3], T_U32, ins) if len(ops) == 4 else (lambda ctx: np.uint32(size))

    def run(ctx, mask):
        lanes = np.arange(ctx.n) if mask is None else np.flatnonzero(mask)
        if lanes.size:
            ctx.async_copies.issue(ins, lanes, _broadcast_u64(dst(ctx), None, ctx.n)[lanes],
                                   _broadcast_u64(src(ctx), None, ctx.n)[lanes],
                                   _pick(read_size(ctx), lanes, lanes.size).astype(np.int64), size)
    return _Op(PLAIN, run)


class _AsyncCopies:
    """A batch's cp.async copies in flight: per copy its threads, each with the group it joins
    (the thread's commits before it), its destination offsets in the batch's shared memory and
    the bytes read."""

    def __init__(self, batch: "_Batch"):
        self.batch = batch
        self.commits = np.zeros(batch.n, np.int64)
        self.pending = []     # [instruction, lanes, groups, offsets, bytes (lanes x size)]

    def issue(self, ins, lanes, dst, src, read_size, size: int):
        batch = self.batch
        segs = _Batch.locate(batch, "shared", dst, lanes, size, "store", ins)
        offsets = segs[0][1]
        read_size = np.minimum(read_size, size)
        data = np.zeros((lanes.size, size), np.uint8)
        reading = np.flatnonzero(read_size > 0)
        misaligned = (src[reading] & U64(size - 1)) != 0
        if misaligned.any():
            batch._fault("misaligned", "global", "load", size, src[reading], lanes[reading],
                         misaligned, ins)
        for count in np.unique(read_size[reading]):
            which = reading[read_size[reading] == count]
            found = batch.locate("global", src[which], lanes[which], int(count), "load", ins)
            for byte in range(int(count)):
                data[which, byte] = _gather(found, which.size, np.dtype(np.uint8), byte)
        races = getattr(batch, "races", None)
        if races is not None:     # the write may land any time from here to the wait: both count
            races.access("store", offsets, lanes, size, ins)
        self.pending.append([ins, lanes, self.commits[lanes].copy(), offsets, data])

    def commit(self, mask):
        if mask is None:
            self.commits += 1
        else:
            self.commits[mask] += 1

    def wait(self, mask, newest: int | None):
        """Complete the copies of the threads in `mask` but those of their `newest` latest
        committed groups (None: every copy, committed or not)."""
        active = self.batch.active_array(mask)
        kept = []
        for entry in self.pending:
            ins, lanes, groups, offsets, data = entry
            done = active[lanes]
            if newest is not None:
                done &= groups < self.commits[lanes] - newest
            if done.any():
                self._write(ins, lanes[done], offsets[done], data[done])
                if done.all():
                    continue
                entry[1:] = [lanes[~done], groups[~done], offsets[~done], data[~done]]
            kept.append(entry)
        self.pending = kept

    def _write(self, ins, lanes, offsets, data):
        """Land a copy (its destination was checked against the products in flight at its
        issue, and each product against the copies pending at its own: _check_landed)."""
        batch = self.batch
        batch.shared[offsets[:, None] + np.arange(data.shape[1])] = data
        races = getattr(batch, "races", None)
        if races is not None:
            races.access("store", offsets, lanes, data.shape[1], ins)


def _copy_kind(ins: Instr) -> str:
    return ("tensor copy" if "tensor" in ins.parts else "bulk copy" if "bulk" in ins.parts
            else "cp.async")


def _check_landed(batch, groups, offsets, reader):
    """A wgmma of warpgroups `groups` (warpgroups, 128) reading the 16-byte chunks at
    `offsets` (warpgroups, chunks) of the batch's shared buffer: an error if a copy not yet
    landed writes one of them (the tensor cores would read whatever is there): a cp.async
    that no wait of its thread has covered, or a bulk copy whose mbarrier phase has not
    completed."""
    flights = [(ins, lanes, dst, data.shape[1])
               for ins, lanes, _, dst, data in batch.async_copies.pending]
    flights += [(ins, np.full(dst.size, lane), dst, data.shape[1])
                for copies in batch.mbarriers.copies.values() for ins, lane, dst, data in copies]
    landing = np.full(batch.shared.size // 16, -1, np.int64)       # per chunk: a flight
    for k, (ins, lanes, dst, size) in enumerate(flights):
        landing[(dst[:, None] + np.arange(0, size, 16)) >> 4] = k
    read = (offsets >> 4).astype(np.int64)
    hit = landing[read] >= 0
    if not hit.any():
        return
    wg, at = (int(i) for i in np.argwhere(hit)[0])
    ins, lanes, dst, size = flights[int(landing[read[wg, at]])]
    chunk = int(read[wg, at])
    writer = int(lanes[np.flatnonzero((dst >> 4 <= chunk) & (chunk <= (dst + size - 1) >> 4))[0]])
    offset = chunk * 16 % batch.launch.shared_pad     # (a multicast copy's writer: another CTA)
    where = batch.kernel.where
    text = re.sub(r"\{([^{},]+),[^{}]*,([^{},]+)\}", r"{\1, ...,\2}", reader.text)
    fix = ("wait for its mbarrier's phase (ptxpy.mbarrier_wait)" if "bulk" in ins.parts else
           "wait for it (ptxpy.cp_async_wait), then fence_proxy_async() and a barrier,")
    raise SimulatorError(
        f"{where(reader)}: `{text}` reads shared offset {offset:#x}, where a {_copy_kind(ins)} "
        f"(issued at {where(ins)}, `{ins.text}`, by {batch.describe(writer)}) has not landed: "
        f"{fix} before the wgmma; read by warpgroup {int(groups[wg, 0]) % batch.T // 128}, "
        f"{batch.describe(int(groups[wg, 0]))}")


# ---- mbarrier and cp.async.bulk (sm_90) ----------------------------------------------------------

_MBARRIER_MAX = (1 << 20) - 1     # an mbarrier's arrival and transaction counts are 20-bit


def _target_sm(k: _Kernel) -> int | None:
    """The number of the module's `.target` architecture (90 for sm_90a), None without one."""
    for target in k.module.ptx.target:
        found = re.match(r"sm_(\d+)", target)
        if found:
            return int(found.group(1))
    return None


def _needs_sm(k: _Kernel, m: _Mods, sm: int):
    arch = _target_sm(k)
    if arch is not None and arch < sm:
        m.fail(f"needs .target sm_{sm} or later (the module's is sm_{arch})")


def _count_operand(k: _Kernel, ins: Instr, op, low: int, what: str):
    """A reader of a u32 count (register or constant); a constant outside low .. 2^20 - 1 is
    refused at load time."""
    if isinstance(op, Imm) and (op.kind != "int" or not low <= op.value <= _MBARRIER_MAX):
        k._bad(ins, f"{what} must be {low} to {_MBARRIER_MAX} (2^20 - 1)")
    return k.reader(op, T_U32, ins)


def _lanes_of(ctx, mask):
    return np.arange(ctx.n) if mask is None else np.flatnonzero(mask)


def _per_lane(value, lanes, dtype):
    """A register's (or a constant's) value for each of `lanes`."""
    value = np.asarray(value)
    return (np.full(lanes.size, value) if value.ndim == 0 else value[lanes]).astype(dtype)


# the forms _c_mbarrier takes (its refusal of others says so)
_MBARRIER_FORMS = ("the simulator supports mbarrier.init, .arrive, .arrive.expect_tx, .expect_tx "
                   "and .complete_tx, each .shared[::cta].b64 or (but init) .shared::cluster.b64, "
                   "and .test_wait.parity and .try_wait.parity, each .shared[::cta].b64")
# the memory order each operation may name, always with a scope (.cta or .cluster)
_MBARRIER_ORDER = {"arrive": "release", "test_wait": "acquire", "try_wait": "acquire",
                   "expect_tx": "relaxed", "complete_tx": "relaxed"}


def _c_mbarrier(k, ins, m: _Mods) -> _Op:
    """mbarrier.init, .arrive{.expect_tx}, .expect_tx, .complete_tx, .test_wait.parity and
    .try_wait.parity, each .shared[::cta].b64: Hopper's split barriers, 8-byte objects in shared
    memory whose state the batch keeps apart (_Mbarriers). arrive{.expect_tx} (with the sink `_`
    as its destination), expect_tx and complete_tx also take .shared::cluster: the barrier of
    any CTA of the cluster, by a shared::cluster address (mapa's; a shared::cta one names the
    thread's own CTA's). `.release`/`.acquire`/`.relaxed` with `.cta`/`.cluster` change nothing
    (memory is always coherent here). A wait never blocks (it tells whether the phase of that
    parity has completed); ptxpy spins on it, and it polls (_polls), so a spinning thread
    hands over to the threads that will arrive."""
    what = m.take("init", "arrive", "test_wait", "try_wait", "expect_tx", "complete_tx")
    expect_tx = what == "arrive" and m.take("expect_tx") is not None
    waits = what in ("test_wait", "try_wait")
    has_parity = waits and m.take("parity") is not None
    order = _MBARRIER_ORDER.get(what)
    sem = m.take(order) if order else None
    wrong = m.take("relaxed", "acquire", "release", "acq_rel", "sc")
    if wrong and what:
        m.fail(f"mbarrier.{what} takes the memory order .{order}, not .{wrong}" if order else
               f"mbarrier.{what} takes no memory order (.{wrong})")
    scope = m.take("cta", "cluster") if order else None
    space = m.take("shared", "shared::cta", "shared::cluster")
    remote = space == "shared::cluster"
    if (what is None or (waits and not has_parity) or space is None or not m.take("b64")
            or (remote and what not in ("arrive", "expect_tx", "complete_tx"))):
        m.fail(_MBARRIER_FORMS)
    if sem is None and scope is not None:
        name = f"mbarrier.{what}{'.expect_tx' * expect_tx}{'.parity' * waits}"
        m.fail(f"the scope .{scope} needs the memory order before it ({name}.{order}.{scope}), "
               f"as ptxas requires")
    if sem is not None and scope is None:
        m.fail(f".{sem} needs a scope after it, .cta or .cluster, as ptxas requires")
    later = (expect_tx or remote or scope == "cluster"
             or what in ("try_wait", "expect_tx", "complete_tx"))
    _needs_sm(k, m, 90 if later else 80)
    space = "shared::cluster" if remote else "shared"
    ops = ins.operands
    if what == "init":
        if len(ops) != 2:
            k._bad(ins, "mbarrier.init takes [addr], count")
        return _mbarrier_init(k, ins, ops)
    if what in ("expect_tx", "complete_tx"):
        if len(ops) != 2:
            k._bad(ins, f"mbarrier.{what} takes [addr], txCount")
        return _mbarrier_tx(k, ins, ops, space, what)
    if what == "arrive":
        if len(ops) not in ((3,) if expect_tx else (2, 3)):
            k._bad(ins, "mbarrier.arrive takes state, [addr] (and tx with .expect_tx, or an "
                        "optional count without it)")
        if remote and not isinstance(ops[0], SinkOperand):
            m.fail("an arrive on .shared::cluster returns no state: its destination must be the "
                   "sink `_` (ptxas refuses a register there); " + _MBARRIER_FORMS)
        if len(ops) == 3 and not expect_tx:
            _needs_sm(k, m, 90)      # (the count)
        return _mbarrier_arrive(k, ins, ops, space, expect_tx)
    if len(ops) != 3 and not (what == "try_wait" and len(ops) == 4):
        k._bad(ins, f"mbarrier.{what} takes a predicate, [addr], parity"
                    + (" and an optional suspendTimeHint" if what == "try_wait" else ""))
    done = k.writer(ops[0], T_PRED, ins)
    bar = k.address(ops[1], "shared", ins)
    parity = k.reader(ops[2], T_U32, ins)
    if len(ops) == 4:
        k.reader(ops[3], T_U32, ins)     # the suspend time hint: a wait never blocks here

    def run(ctx, mask):
        lanes = _lanes_of(ctx, mask)
        if lanes.size:
            keys = ctx.mbarriers.offsets(bar(ctx), lanes, ins)
            wanted = _per_lane(parity(ctx), lanes, np.int64)
            flags = ctx.mbarriers.completed(ins, lanes, keys, wanted)
            races = getattr(ctx, "races", None)
            if isinstance(races, _OrderedRaces) and flags.any():
                races.mbarrier_waited(keys[flags], lanes[flags])
            done(ctx, _spread(flags, None if mask is None else lanes, ctx.n), mask)
    return _Op(PLAIN, run)


def _mbarrier_init(k, ins, ops) -> _Op:
    bar = k.address(ops[0], "shared", ins)
    count = _count_operand(k, ins, ops[1], 1, "an mbarrier's arrival count")

    def run(ctx, mask):
        lanes = _lanes_of(ctx, mask)
        if lanes.size:
            keys = ctx.mbarriers.offsets(bar(ctx), lanes, ins)
            ctx.mbarriers.init(ins, lanes, keys, _per_lane(count(ctx), lanes, np.int64))
    return _Op(PLAIN, run)


def _mbarrier_arrive(k, ins, ops, space: str, expect_tx: bool) -> _Op:
    """arrive{.expect_tx}: `state` gets the phase arrived in (`_`: nobody); with a count (not
    with .expect_tx) the thread makes that many arrivals."""
    state = k.writer(ops[0], T_U64, ins)
    bar = k.address(ops[1], space, ins)
    tx = (_count_operand(k, ins, ops[2], 0, "expect_tx's byte count") if expect_tx
          else (lambda ctx: np.uint32(0)))
    count = (_count_operand(k, ins, ops[2], 1, "an arrive's count")
             if len(ops) == 3 and not expect_tx else None)

    def run(ctx, mask):
        lanes = _lanes_of(ctx, mask)
        if lanes.size:
            keys = ctx.mbarriers.offsets(bar(ctx), lanes, ins, space)
            counts = None if count is None else _per_lane(count(ctx), lanes, np.int64)
            phases = ctx.mbarriers.arrive(ins, lanes, keys, _per_lane(tx(ctx), lanes, np.int64),
                                          counts)
            state(ctx, _spread(phases.astype(U64), None if mask is None else lanes, ctx.n), mask)
    return _Op(PLAIN, run)


def _mbarrier_tx(k, ins, ops, space: str, what: str) -> _Op:
    """expect_tx (raises the transaction count) and complete_tx (lowers it), without an
    arrival; either may complete the phase (no arrival pending, the count back at 0)."""
    bar = k.address(ops[0], space, ins)
    tx = _count_operand(k, ins, ops[1], 0, f"{what}'s byte count")
    sign = 1 if what == "expect_tx" else -1

    def run(ctx, mask):
        lanes = _lanes_of(ctx, mask)
        if lanes.size:
            keys = ctx.mbarriers.offsets(bar(ctx), lanes, ins, space)
            ctx.mbarriers.add_tx(ins, lanes, keys, sign * _per_lane(tx(ctx), lanes, np.int64))
    return _Op(PLAIN, run)


_BULK_LOAD = ("async", "bulk", "shared::cluster", "global", "mbarrier::complete_tx::bytes")
_BULK_STORE = ("async", "bulk", "global", "shared::cta", "bulk_group")


def _c_cp_bulk(k, ins, m: _Mods) -> _Op:
    """cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [dst], [src], size,
    [mbar] (global -> shared: the source is read at the issue, which completes `size` bytes of
    the barrier's transaction count; the bytes land when its phase completes: _Mbarriers), and
    with .multicast::cluster, [dst], [src], size, [mbar], ctaMask (the same into each CTA of
    the cluster that ctaMask names, at the same offsets: _multicast);
    cp.async.bulk.global.shared::cta.bulk_group [dst], [src], size (shared -> global: the
    source is read at the issue, the destination written by a wait_group of the thread that
    covers its group: _BulkStores); cp.async.bulk.commit_group; cp.async.bulk.wait_group[.read]
    N. Sizes are multiples of 16 bytes, addresses 16-byte aligned. The tensor forms:
    _c_cp_bulk_tensor."""
    _needs_sm(k, m, 90)
    if m.take("tensor"):
        return _c_cp_bulk_tensor(k, ins, m)
    if m.take("commit_group"):
        _operands(k, ins, 0)
        return _Op(PLAIN, lambda ctx, mask: ctx.bulk_stores.commit(mask))
    if m.take("wait_group"):
        m.take("read")
        (count,) = _operands(k, ins, 1)
        if not isinstance(count, Imm) or count.kind != "int" or not 0 <= count.value <= 7:
            k._bad(ins, "cp.async.bulk.wait_group takes a constant from 0 to 7")
        newest = int(count.value)
        return _Op(PLAIN, lambda ctx, mask: ctx.bulk_stores.wait(mask, newest))
    form, multicast = _without_multicast(m.rest)
    if form not in (_BULK_LOAD, _BULK_STORE) or (multicast and form != _BULK_LOAD):
        m.fail("the simulator supports cp.async.bulk.shared::cluster.global.mbarrier::"
               "complete_tx::bytes[.multicast::cluster] and cp.async.bulk.global.shared::cta."
               "bulk_group")
    m.used = [True] * len(m.rest)
    shape = 4 if form == _BULK_LOAD else 3
    ops = ins.operands
    if len(ops) != shape + multicast:
        k._bad(ins, "a bulk copy takes [dst], [src], size" + (", [mbar]" if shape == 4 else "")
               + (", ctaMask" if multicast else ""))
    cta_mask = _cta_mask(k, ins, ops[4]) if multicast else None
    if isinstance(ops[2], Imm) and (ops[2].kind != "int" or ops[2].value <= 0 or ops[2].value % 16):
        k._bad(ins, "a bulk copy's size must be a positive multiple of 16 bytes")
    to_shared = shape == 4
    dst = k.address(ops[0], "shared" if to_shared else "global", ins)
    src = k.address(ops[1], "global" if to_shared else "shared", ins)
    size = k.reader(ops[2], T_U32, ins)
    bar = k.address(ops[3], "shared", ins) if to_shared else None

    def run(ctx, mask):
        lanes = _lanes_of(ctx, mask)
        if not lanes.size:
            return
        sizes = _per_lane(size(ctx), lanes, np.int64)
        where_to, where_from = (_per_lane(a(ctx), lanes, U64) for a in (dst, src))
        if to_shared:
            keys = ctx.mbarriers.offsets(bar(ctx), lanes, ins)
            copies = _bulk_load(ctx, ins, lanes, where_to, where_from, sizes, cta_mask is None)
            if cta_mask is None:
                ctx.mbarriers.complete_tx(ins, lanes, keys, copies)
            else:
                _multicast(ctx, ins, lanes, keys, copies,
                           _per_lane(cta_mask(ctx), lanes, np.int64))
        else:
            _bulk_store(ctx, ins, lanes, where_to, where_from, sizes)
    return _Op(PLAIN, run)


def _without_multicast(mods) -> tuple:
    """(an instruction's modifiers without `.multicast::cluster`, whether it had it): ptxas
    takes it anywhere after the state spaces, the PTX ISA puts it after the completion
    mechanism."""
    form = tuple(mod for mod in mods if mod != "multicast::cluster")
    return form, len(form) != len(mods)


def _cta_mask(k, ins, op):
    """A multicast copy's ctaMask: a 16-bit operand, a .b16/.u16/.s16 register (ptxas refuses
    others) or a constant, bit r naming the CTA of rank r of the cluster; a constant outside 1 ..
    0xffff is refused at load time (ptxas takes it), a register's value is checked at run time
    (_multicast)."""
    if isinstance(op, Imm):
        if op.kind != "int" or not 1 <= op.value <= 0xFFFF:
            k._bad(ins, f"ctaMask must be a 16-bit mask naming at least one CTA of the cluster "
                        f"(1 to 0xffff), got {op.value}")
    elif not isinstance(op, Reg) or op.neg or _is_special(op.name):
        k._bad(ins, "ctaMask must be a .b16 register or a constant")
    else:
        t = k._reg_type(op.name, ins)
        if t.bits != 16 or t.kind not in ("b", "u", "s"):
            k._bad(ins, f"ctaMask is a 16-bit operand: {op.name} is a .{t.name} register (ptxas "
                        f"refuses it; cvt.u16.u32 it into a .b16 register)")
    return k.reader(op, T_U16, ins)


def _landing_checks(ctx, ins, offsets, lane: int, width: int, own: bool):
    """A copy of `lane` into runs of `width` bytes at `offsets` of the batch's shared buffer,
    from its issue on: a write onto an operand of a wgmma still in flight is an error
    (_WgmmaReads), and in the thread's own CTA it counts as the thread's store for the race
    check (the write may land any time from here to the phase's end)."""
    lanes = np.full(offsets.size, lane)
    reads = ctx.wgmma_reads
    if reads is not None and reads.products:
        reads.check(offsets, lanes, width, "store", ins)
    races = getattr(ctx, "races", None)
    if races is not None and own:
        races.access("store", offsets, lanes, width, ins)


def _multicast(ctx, ins, lanes, keys, copies, masks):
    """Multicast copies (.multicast::cluster) of `lanes`, each its (destination offsets, bytes)
    in its own CTA's shared memory and its own CTA's barrier `keys`: the copy goes to the same
    offsets of each CTA of the cluster whose rank's bit `masks` sets (its own need not be one),
    and signals the barrier at the same offset there. A mask naming no CTA or a rank beyond the
    cluster, and a CTA whose threads have all exited, are errors; each destination is checked
    as a copy's is (_landing_checks)."""
    launch, T = ctx.launch, ctx.T
    pad, size = launch.shared_pad, launch.cluster_size
    out_lanes, out_keys, out_copies = [], [], []
    for i, lane in enumerate(lanes.tolist()):
        mask = int(masks[i]) & 0xFFFF
        if mask == 0 or mask >> size:
            why = ("names no CTA" if mask == 0 else
                   f"names rank {mask.bit_length() - 1}, but the cluster has {size} CTA"
                   f"{'s' * (size != 1)} (ranks 0 to {size - 1})")
            raise SimulatorError(f"{ctx.kernel.where(ins)}: `{ins.text}`: ctaMask {mask:#x} "
                                 f"{why}; {ctx.describe(lane)}")
        block = lane // T
        first = block - block % size          # the batch's block of rank 0 of the cluster
        offsets, data = copies[i]
        ranks = [r for r in range(size) if mask >> r & 1]
        for rank in ranks:                    # (every destination alive before any bookkeeping)
            if first + rank != block:
                shift = (first + rank - block) * pad
                at = U64(CLUSTER_WINDOW + rank * CLUSTER_RANK_SPAN) + (offsets - block * pad
                                                                      ).astype(U64)
                ctx._check_alive(offsets + shift, at, np.full(offsets.size, lane), "store", ins)
        for rank in ranks:
            shift = (first + rank - block) * pad
            _landing_checks(ctx, ins, offsets + shift, lane, data.shape[1], first + rank == block)
            out_lanes.append(lane)
            out_keys.append(int(keys[i]) + shift)
            out_copies.append((offsets + shift, data))
    ctx.mbarriers.complete_tx(ins, np.array(out_lanes, np.int64), np.array(out_keys, np.int64),
                              out_copies)


# ---- tensor copies (cp.async.bulk.tensor, TMA) ------------------------------------------------

_TENSOR_DIMS = {f"{n}d": n for n in range(1, 6)}
_TENSOR_LOADS = (("shared::cluster", "global", "mbarrier::complete_tx::bytes"),
                 ("shared::cluster", "global", "tile", "mbarrier::complete_tx::bytes"))
_TENSOR_STORES = (("global", "shared::cta", "bulk_group"),
                  ("global", "shared::cta", "tile", "bulk_group"))
_SWIZZLE_WIDTH = {0: 1, 32: 2, 64: 4, 128: 8}      # TensorMap.swizzle: 16-byte chunks per row


class _MapInfo:
    """A TensorMap argument, checked and placed at the launch: its parameter's name, the
    array's allocation, shape, element strides and elements (`values`, a flat view of the
    allocation as unsigned integers of the element size), the box and its swizzle."""

    def __init__(self, name: str, alloc: _Alloc, array: np.ndarray, box: tuple, swizzle: int):
        self.name, self.alloc, self.box, self.swizzle = name, alloc, box, swizzle
        self.shape, self.rank, self.itemsize = array.shape, array.ndim, array.itemsize
        self.strides = tuple(stride // array.itemsize for stride in array.strides)
        self.values = alloc.buf[:alloc.size].view(_uint(array.itemsize))
        self.nbytes = int(np.prod(box)) * array.itemsize


def _is_tensor_map_param(decl: VarDecl) -> bool:
    """Whether a kernel parameter is declared as a CUtensorMap is (nvcc's `const
    __grid_constant__ CUtensorMap`): `.param .align 64 .b8 NAME[128]`."""
    return decl.type == "b8" and decl.count == 128 and decl.vec == 1


def _check_tensor_map(decl: VarDecl, arg):
    """What cuTensorMapEncodeTiled would reject in a TensorMap argument; returns its array,
    box and swizzle."""
    def fail(why: str):
        raise SimulatorError(f"parameter {decl.name} (a tensor map): {why}")
    if not isinstance(arg, TensorMap):
        fail(f"pass a ptxpy.runtime.simulator.TensorMap, got {type(arg).__name__}")
    if decl.align is None or decl.align % 64:
        fail(f"declare it .param .align 64 .b8 {decl.name}[128] (a CUtensorMap is 64-byte "
             f"aligned), not .align {decl.align or 1}")
    array = arg.array
    if not isinstance(array, np.ndarray):
        fail(f"TensorMap.array must be a NumPy array, got {type(array).__name__}")
    if not 1 <= array.ndim <= 5:
        fail(f"a tensor map's rank must be 1 to 5, got an array of {array.ndim} dimensions")
    if array.dtype.hasobject or array.itemsize not in (1, 2, 4, 8):
        fail(f"the element size must be 1, 2, 4 or 8 bytes, got {array.dtype}")
    if 0 in array.shape:
        fail(f"every dimension must be at least 1, got shape {array.shape}")
    if not array.flags.c_contiguous:
        fail("the array must be C-contiguous (np.ascontiguousarray)")
    bad = [axis for axis in range(array.ndim - 1) if array.strides[axis] % 16]
    if bad:
        fail(f"the stride of every dimension but the innermost must be a multiple of 16 bytes: "
             f"axis {bad[0]} of shape {array.shape} ({array.dtype}) has "
             f"{array.strides[bad[0]]} bytes")
    try:
        box = tuple(int(b) for b in arg.box)
    except (TypeError, ValueError):
        fail(f"TensorMap.box must be a tuple of ints, got {arg.box!r}")
    if len(box) != array.ndim:
        fail(f"the box {box} needs one extent per dimension of the array (shape {array.shape})")
    if any(not 1 <= b <= 256 for b in box):
        fail(f"every box extent must be 1 to 256, got box {box}")
    row = box[-1] * array.itemsize
    if row % 16:
        fail(f"the innermost box extent times the element size must be a multiple of 16 bytes, "
             f"got {box[-1]} x {array.itemsize} = {row}")
    swizzle = arg.swizzle
    if swizzle not in _SWIZZLE_WIDTH:
        fail(f"swizzle must be 0, 32, 64 or 128 (bytes), got {swizzle!r}")
    if swizzle and row > swizzle:
        fail(f"with swizzle {swizzle} the innermost box extent times the element size must be "
             f"at most {swizzle} bytes, got {box[-1]} x {array.itemsize} = {row}")
    return array, box, int(swizzle)


def _c_cp_bulk_tensor(k, ins, m: _Mods) -> _Op:
    """cp.async.bulk.tensor.Nd.shared::cluster.global[.tile].mbarrier::complete_tx::bytes
    [dst], [tensorMap, {c0, ...}], [mbar] (global -> shared: as cp.async.bulk's, the box is
    read at the issue, completes its bytes of the barrier's transaction count, and lands when
    the barrier's phase completes; with .multicast::cluster and a ctaMask after [mbar], into
    each CTA of the cluster the mask names: _multicast) and cp.async.bulk.tensor.Nd.global.
    shared::cta[.tile].bulk_group [tensorMap, {c0, ...}], [src] (shared -> global: the box is
    read at the issue and its elements inside the array written at the wait_group that covers
    it). The map is a TensorMap kernel parameter, by its generic address (or its param-space
    one); the
    coordinates, s32 and innermost first, place the box (_tensor_box; where it may start:
    _check_start); in shared memory its rows follow each other from a 128-byte aligned address,
    each 16-byte chunk moved by the map's swizzle (_tensor_chunks)."""
    form, multicast = _without_multicast(m.rest)
    dims = _TENSOR_DIMS.get(form[3]) if len(form) > 3 else None
    if (form[:3] != ("async", "bulk", "tensor") or dims is None
            or form[4:] not in _TENSOR_LOADS + _TENSOR_STORES
            or (multicast and form[4:] not in _TENSOR_LOADS)):
        m.fail("the simulator supports cp.async.bulk.tensor.{1d,...,5d}.shared::cluster.global"
               "[.tile].mbarrier::complete_tx::bytes[.multicast::cluster] and "
               "cp.async.bulk.tensor.{1d,...,5d}.global.shared::cta[.tile].bulk_group")
    m.used = [True] * len(m.rest)
    load = form[4:] in _TENSOR_LOADS
    ops = ins.operands
    cta_mask = None
    if multicast:
        if len(ops) != 4:
            k._bad(ins, "a multicast tensor copy takes [dst], [tensorMap, {coordinates}], "
                        "[mbar], ctaMask")
        cta_mask = _cta_mask(k, ins, ops[3])
        ops = ops[:3]
    kinds = (Addr, TensorAddr, Addr) if load else (TensorAddr, Addr)
    if len(ops) != len(kinds) or not all(isinstance(op, kind) for op, kind in zip(ops, kinds)):
        k._bad(ins, "a tensor copy takes " + ("[dst], [tensorMap, {coordinates}], [mbar]" if load
                                              else "[tensorMap, {coordinates}], [src]"))
    tensor = ops[1] if load else ops[0]
    if len(tensor.coords) != dims:
        k._bad(ins, f"a .{dims}d tensor copy takes {dims} coordinates, got {len(tensor.coords)}")
    if not isinstance(tensor.addr.base, Reg):
        k._bad(ins, "the tensor map's address must be in a register (mov.b64 and cvta.param.u64 "
                    "of the parameter's name)")
    tmap = k.address(tensor.addr, "generic", ins)
    for c in tensor.coords:
        if isinstance(c, Reg) and not _is_special(c.name) and k._reg_type(c.name, ins).bits != 32:
            k._bad(ins, f"the coordinates are .s32: {c.name} is a .{k._reg_type(c.name, ins).name} "
                        f"register")
    coords = [k.reader(c, T_S32, ins) for c in tensor.coords]
    shared = k.address(ops[0] if load else ops[1], "shared", ins)
    bar = k.address(ops[2], "shared", ins) if load else None

    def run(ctx, mask):
        lanes = _lanes_of(ctx, mask)
        if not lanes.size:
            return
        maps = _per_lane(tmap(ctx), lanes, U64)
        at = np.stack([_per_lane(c(ctx), lanes, np.int64) for c in coords])[::-1]   # NumPy order
        where = _per_lane(shared(ctx), lanes, U64)
        keys = ctx.mbarriers.offsets(bar(ctx), lanes, ins) if load else None
        copies = []
        for i, lane in enumerate(lanes.tolist()):
            info = _tensor_map(ctx, ins, maps[i], lane, dims)
            _check_start(ctx, ins, lane, info, at[:, i], load)
            if load:
                copies.append(_tensor_load(ctx, ins, lane, info, int(where[i]), at[:, i],
                                           cta_mask is None))
            else:
                _tensor_store(ctx, ins, lane, info, int(where[i]), at[:, i])
        if cta_mask is not None:
            _multicast(ctx, ins, lanes, keys, copies, _per_lane(cta_mask(ctx), lanes, np.int64))
        elif load:
            ctx.mbarriers.complete_tx(ins, lanes, keys, copies)
    return _Op(PLAIN, run)


def _c_prefetch(k, ins, m: _Mods) -> _Op:
    """prefetch.tensormap [a] (a tensor map's generic address) and prefetch.param.tensormap
    [a] (its param-space address): nothing to do once the address is checked to be a map's."""
    space = "param" if m.take("param") else "generic"
    if not m.take("tensormap"):
        m.fail("the simulator supports prefetch.tensormap and prefetch.param.tensormap only")
    _needs_sm(k, m, 90)
    addr = k.address(_operands(k, ins, 1)[0], space, ins)

    def run(ctx, mask):
        lanes = _lanes_of(ctx, mask)
        for lane, at in zip(lanes.tolist(), _per_lane(addr(ctx), lanes, U64)):
            _tensor_map(ctx, ins, at, lane, None)
    return _Op(PLAIN, run)


def _tensor_map(ctx, ins, addr, lane: int, dims: int | None) -> _MapInfo:
    """The TensorMap whose parameter is at `addr` (generic, or in param space), with `dims`
    dimensions unless None; anything else is an error."""
    addr = int(addr)
    param = addr - PARAM_WINDOW if PARAM_WINDOW <= addr < PARAM_WINDOW + WINDOW_SIZE else addr
    info = ctx.launch.tensor_maps.get(param)
    where = ctx.kernel.where(ins)
    if info is None:
        raise SimulatorError(
            f"{where}: `{ins.text}`: {addr:#x} is not the address of a tensor map (the generic "
            f"address of a .b8 [128] kernel parameter given a TensorMap, from mov.b64 and "
            f"cvta.param.u64 of its name); {ctx.describe(lane)}")
    if dims is not None and info.rank != dims:
        raise SimulatorError(
            f"{where}: `{ins.text}`: the tensor map {info.name} has {info.rank} dimension"
            f"{'s' * (info.rank != 1)} (an array of shape {info.shape}), but this is a .{dims}d "
            f"tensor copy; {ctx.describe(lane)}")
    return info


def _check_start(ctx, ins, lane: int, info: _MapInfo, coords, load: bool):
    """Where a box may start (`coords` in NumPy order), as an H100 showed: 16-byte aligned in
    global memory (its innermost coordinate times the element size a multiple of 16, as its
    rows are, cuTensorMapEncodeTiled's strides being multiples of 16), and for a store at no
    negative coordinate (a store's box may reach past the end, but not before the start). The
    card stops the kernel with CUDA_ERROR_ILLEGAL_INSTRUCTION otherwise."""
    inner = int(coords[-1])
    if inner * info.itemsize % 16:
        why = (f"the innermost coordinate times the element size must be a multiple of 16 bytes "
               f"(a box starts 16-byte aligned in global memory", f"got {inner} x "
               f"{info.itemsize} = {inner * info.itemsize}")
    elif not load and (coords < 0).any():
        why = ("a tensor store's coordinates must not be negative (its box may reach past the "
               "end of the array, not before its start", "got {" +
               ", ".join(str(c) for c in coords.tolist()[::-1]) + "}")
    else:
        return
    raise SimulatorError(
        f"{ctx.kernel.where(ins)}: `{ins.text}`: {why[0]}; the GPU stops the kernel with an "
        f"illegal instruction), {why[1]} for the tensor map {info.name}; {ctx.describe(lane)}")


def _tensor_box(info: _MapInfo, coords):
    """For a box at `coords` (NumPy order): per box element, the index of the array element it
    is (clipped into the array) and whether that is inside the array, both of the box's shape."""
    flat = np.zeros((1,) * info.rank, np.int64)
    inside = np.ones((1,) * info.rank, bool)
    for axis, (start, extent, n, stride) in enumerate(zip(coords.tolist(), info.box, info.shape,
                                                          info.strides)):
        index = start + np.arange(extent, dtype=np.int64)
        shape = [1] * info.rank
        shape[axis] = extent
        inside = inside & ((index >= 0) & (index < n)).reshape(shape)
        flat = flat + (np.clip(index, 0, n - 1) * stride).reshape(shape)
    return np.broadcast_to(flat, info.box), np.broadcast_to(inside, info.box)


def _tensor_chunks(ctx, ins, lane: int, info: _MapInfo, addr: int, what: str):
    """The offsets in the batch's shared buffer of the box's 16-byte chunks (in the box's
    order) at the shared address `addr` (128-byte aligned): its rows (innermost extent) one
    after the other, each taking the swizzle's bytes when it is narrower (the rest of them left
    alone), each chunk swizzled on its whole address, as an H100 lays them out; and the lane
    once per chunk."""
    row = info.box[-1] * info.itemsize
    pitch, rows = max(row, info.swizzle), info.nbytes // row
    size = (rows - 1) * pitch + row
    one, lanes = np.array([addr], U64), np.array([lane])
    if addr % 128:
        raise SimulatorError(f"{ctx.kernel.where(ins)}: misaligned shared {what} of {size} bytes "
                             f"at {addr:#x} (a tensor copy's shared memory address must be "
                             f"128-byte aligned); {ctx.describe(lane)}")
    _, bad = ctx._segments("shared", one, lanes, size)
    if bad is not None:
        ctx._fault("out-of-bounds", "shared", what, size, one, lanes, bad, ins)
    starts = addr + np.arange(rows, dtype=np.int64)[:, None] * pitch + np.arange(0, row, 16)
    chunks = _swizzle(starts.reshape(-1), _SWIZZLE_WIDTH[info.swizzle]).astype(U64)
    lanes = np.full(chunks.size, lane)
    segs, bad = ctx._segments("shared", chunks, lanes, 16)
    if bad is not None:
        ctx._fault("out-of-bounds", "shared", what, 16, chunks, lanes, bad, ins)
    return segs[0][1], lanes


def _tensor_load(ctx, ins, lane: int, info: _MapInfo, addr: int, coords, check: bool = True):
    """Read a box global -> shared at its issue: (destination chunk offsets, bytes (chunks,
    16)), elements outside the array zero. The destination counts as the thread's store from
    here (race check, products in flight), as a bulk copy's does (unless `check` is off: a
    multicast copy's destinations are checked each apart, _multicast)."""
    offsets, _ = _tensor_chunks(ctx, ins, lane, info, addr, "store")
    if check:
        _landing_checks(ctx, ins, offsets, lane, 16, True)
    flat, inside = _tensor_box(info, coords)
    values = info.values[flat]
    values[~inside] = 0
    return offsets, values.reshape(-1).view(np.uint8).reshape(-1, 16)


def _tensor_store(ctx, ins, lane: int, info: _MapInfo, addr: int, coords):
    """Issue a box shared -> global: shared memory is read (a load of the thread, for the race
    check) now; the elements inside the array join the thread's bulk group (_BulkStores), to
    be written by the wait_group that covers it; those outside are dropped."""
    offsets, lanes = _tensor_chunks(ctx, ins, lane, info, addr, "load")
    races = getattr(ctx, "races", None)
    if races is not None:
        races.access("load", offsets, lanes, 16, ins)
    values = ctx.shared[offsets[:, None] + np.arange(16)].reshape(-1).view(info.values.dtype)
    flat, inside = _tensor_box(info, coords)
    kept = values.reshape(info.box)[inside]
    dst = (U64(info.alloc.base) + (flat[inside] * info.itemsize).astype(U64))[None, :]
    ctx.bulk_stores.issue(ins, np.array([lane]), dst,
                          kept.view(np.uint8).reshape(1, kept.size, info.itemsize))


def _bulk_sizes(ctx, ins, lanes, sizes):
    """(size, positions into `lanes`) per distinct size of a bulk copy instruction; a size
    that is not a positive multiple of 16 is an error."""
    bad = (sizes <= 0) | (sizes % 16 != 0)
    if bad.any():
        i = int(np.argmax(bad))
        raise SimulatorError(f"{ctx.kernel.where(ins)}: `{ins.text}`: a bulk copy's size must be "
                             f"a positive multiple of 16 bytes, got {int(sizes[i])}; "
                             f"{ctx.describe(int(lanes[i]))}")
    for size in np.unique(sizes).tolist():
        yield size, np.flatnonzero(sizes == size)


def _bulk_segments(ctx, space: str, addr, lanes, size: int, what: str, ins):
    """Resolve one side of bulk copies of `size` bytes: 16-byte aligned, inside its memory
    (no race or wgmma check: the callers make those)."""
    misaligned = (addr & U64(15)) != 0
    if misaligned.any():
        ctx._fault("misaligned", space, what, size, addr, lanes, misaligned, ins)
    segs, bad = ctx._segments(space, addr, lanes, size)
    if bad is not None:
        ctx._fault("out-of-bounds", space, what, size, addr, lanes, bad, ins)
    return segs


def _read_rows(segs, count: int, size: int):
    """The `size` bytes at each address of resolved segments, as an array (count, size)."""
    data = np.empty((count, size), np.uint8)
    for buf, off, sel, _ in segs:
        rows = buf[off[:, None] + np.arange(size)]
        if sel is None:
            data[:] = rows
        else:
            data[sel] = rows
    return data


def _bulk_load(ctx, ins, lanes, dst, src, sizes, check: bool = True) -> list:
    """Read the sources of bulk copies global -> shared; per lane (destination offsets in the
    batch's shared buffer (one), bytes (1, size)). The destination counts as the thread's store
    from here (race check, products in flight), as a cp.async's does (unless `check` is off:
    a multicast copy's destinations are checked each apart, _multicast)."""
    copies = [None] * lanes.size
    races = getattr(ctx, "races", None) if check else None
    reads = ctx.wgmma_reads if check else None
    for size, which in _bulk_sizes(ctx, ins, lanes, sizes):
        who = lanes[which]
        offsets = _bulk_segments(ctx, "shared", dst[which], who, size, "store", ins)[0][1]
        found = _bulk_segments(ctx, "global", src[which], who, size, "load", ins)
        if reads is not None and reads.products:
            reads.check(offsets, who, size, "store", ins)
        if races is not None:     # the write may land any time from here to the phase's end
            races.access("store", offsets, who, size, ins)
        data = _read_rows(found, which.size, size)
        for i, at in enumerate(which.tolist()):
            copies[at] = (offsets[i:i + 1], data[i:i + 1])
    return copies


def _bulk_store(ctx, ins, lanes, dst, src, sizes):
    """Issue bulk copies shared -> global: the source is read (a load of the thread, for the
    race check) now, the destination written at the wait_group that covers the copy."""
    races = getattr(ctx, "races", None)
    for size, which in _bulk_sizes(ctx, ins, lanes, sizes):
        who = lanes[which]
        _bulk_segments(ctx, "global", dst[which], who, size, "store", ins)
        found = _bulk_segments(ctx, "shared", src[which], who, size, "load", ins)
        if races is not None:
            races.access("load", found[0][1], who, size, ins)
        ctx.bulk_stores.issue(ins, who, dst[which], _read_rows(found, which.size, size))


class _Mbarriers:
    """A batch's mbarriers, by their offset in the batch's shared buffer (each block's are its
    own): per barrier [phase, expected arrivals, pending arrivals, transaction count], and the
    bulk copies global -> shared that signal it, [(instruction, thread, destination offset,
    bytes)], which land (their bytes are written) when its current phase completes: when no
    arrival is pending and the transaction count is 0 (docs/simulator.md, "mbarrier and bulk
    copies"). Under the race check, arrivals are releases and waits acquires
    (_OrderedRaces.mbarrier_arrived). A copy's destination is
    `offsets` (k,) of runs of w bytes, its bytes (k, w): one run for cp.async.bulk, the 16-byte
    chunks of the (swizzled) box for cp.async.bulk.tensor."""

    def __init__(self, batch: "_Batch"):
        self.batch = batch
        self.state: dict[int, list[int]] = {}
        self.copies: dict[int, list] = {}
        self.remote_arrived: set[int] = set()    # (race check) arrived on by other CTAs
        self.wgmma_arrived: dict[int, np.ndarray] = {}

    def offsets(self, addr, lanes, ins, space: str = "shared"):
        """The barriers at `space` addresses `addr` (per lane, or one for all): their offsets
        in the batch's shared buffer (an mbarrier is 8 bytes, 8-byte aligned). A shared::cluster
        address may name another CTA's barrier (one whose threads have all exited: an error)."""
        addr = _per_lane(addr, lanes, U64)
        return _Batch.locate(self.batch, space, addr, lanes, 8, "mbarrier", ins)[0][1]

    def init(self, ins, lanes, keys, counts):
        bad = (counts < 1) | (counts > _MBARRIER_MAX)
        if bad.any():
            i = int(np.argmax(bad))
            self._fail(ins, int(lanes[i]), f"an mbarrier's arrival count must be 1 to "
                                           f"{_MBARRIER_MAX} (2^20 - 1), got {int(counts[i])}")
        races = getattr(self.batch, "races", None)
        for key, count in zip(keys.tolist(), counts.tolist()):
            self.state[key] = [0, count, count, 0]
            if isinstance(races, _OrderedRaces):      # a barrier used again starts afresh
                races.mbarrier_init(key)

    def arrive(self, ins, lanes, keys, tx, counts=None):
        """Arrivals of `lanes` (`counts` each, one if None), one by one in lane order, each
        after adding its `tx` to the transaction count; returns the phase each arrived in. A
        lane's barrier may be another CTA's (mbarrier.arrive.shared::cluster)."""
        if counts is not None:
            bad = (counts < 1) | (counts > _MBARRIER_MAX)
            if bad.any():
                i = int(np.argmax(bad))
                self._fail(ins, int(lanes[i]), f"an arrive's count must be 1 to {_MBARRIER_MAX} "
                                               f"(2^20 - 1), got {int(counts[i])}")
        phases = np.zeros(lanes.size, np.int64)
        for key, at in self._by_barrier(keys):
            state = self._state(key, int(lanes[at[0]]), ins)
            done = 0
            while done < at.size:
                phase, expected, pending, count = state
                rest = at[done:]
                fit = (min(pending, rest.size) if counts is None else
                       int(np.searchsorted(np.cumsum(counts[rest]), pending, side="right")))
                if fit == 0:
                    lane = int(lanes[rest[0]])
                    if pending == 0:
                        self._fail(ins, lane, f"arrives on the mbarrier at "
                                   f"{self._place(key, lane)}, whose phase {phase} has had all "
                                   f"its {expected} arrivals and waits only for its transaction "
                                   f"count ({count} bytes) to reach 0: one arrive too many")
                    self._fail(ins, lane, f"arrives {int(counts[rest[0]])} times on the mbarrier "
                               f"at {self._place(key, lane)}, whose phase {phase} has only "
                               f"{pending} of its {expected} arrivals pending: an arrive's "
                               f"count must not exceed them")
                turn = rest[:fit]
                phases[turn] = phase
                total = turn.size if counts is None else int(counts[turn].sum())
                txs = count + np.cumsum(tx[turn])
                self._check_tx(ins, key, lanes[turn], txs)
                state[2], state[3] = pending - total, int(txs[-1])
                done += turn.size
                self._note_arrivals(key, lanes[turn])
                self._note_product_arrivals(key, lanes[turn])
                self._complete(key, state)
        return phases

    def complete_tx(self, ins, lanes, keys, copies):
        """Bulk copies issued by `lanes` (lane order), (destination offsets, bytes) each: a copy
        joins its barrier's copies, then completes its size of the transaction count (which
        may complete the phase: then it lands at once). A multicast copy is one per
        destination CTA, each with that CTA's barrier and destination."""
        for lane, key, (offsets, data) in zip(lanes.tolist(), keys.tolist(), copies):
            state = self._state(key, lane, ins)
            self.copies.setdefault(key, []).append((ins, lane, offsets, data))
            state[3] -= data.size
            self._check_tx(ins, key, np.array([lane]), np.array([state[3]]))
            self._complete(key, state)

    def add_tx(self, ins, lanes, keys, deltas):
        """mbarrier.expect_tx (deltas > 0) and .complete_tx (< 0) of `lanes`, one by one in
        lane order: the transaction count moves without an arrival, which completes the phase
        where no arrival is pending and the count comes back to 0."""
        for lane, key, delta in zip(lanes.tolist(), keys.tolist(), deltas.tolist()):
            state = self._state(key, lane, ins)
            state[3] += delta
            self._check_tx(ins, key, np.array([lane]), np.array([state[3]]))
            self._complete(key, state)

    def completed(self, ins, lanes, keys, parity):
        """test_wait/try_wait.parity: whether the phase of each lane's parity has completed
        (the current phase's parity differs)."""
        distinct, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
        phases = np.array([self._state(key, int(lanes[at]), ins)[0]
                           for key, at in zip(distinct.tolist(), first.tolist())], np.int64)
        return (phases[inverse.reshape(-1)] & 1) != (parity & 1)

    def finish(self):
        """At the batch's end: a bulk copy that never landed is an error."""
        for key, copies in self.copies.items():
            ins, lane, _, data = copies[0]
            phase, expected, pending, count = self.state[key]
            raise SimulatorError(
                f"{self.batch.kernel.where(ins)}: `{ins.text}`: this {_copy_kind(ins)} of "
                f"{data.size} bytes never landed: the phase of its mbarrier "
                f"({self._place(key, lane)}) never completed ({pending} of {expected} "
                f"arrivals missing, transaction count {count} bytes at the end): the bytes "
                f"announced with expect_tx must equal those its bulk copies bring, and every "
                f"expected arrival must happen; {self.batch.describe(lane)}")

    def snapshot(self):
        """The barriers' state (for the hang check)."""
        return tuple(sorted((key, tuple(state)) for key, state in self.state.items()))

    def _complete(self, key: int, state):
        if state[2] == 0 and state[3] == 0:
            state[0] += 1
            state[2] = state[1]
            for copy in self.copies.pop(key, ()):
                self._land(*copy)
            self._order_phase(key)
            self._order_clusters(key)
            self._release_products(key)

    def _note_product_arrivals(self, key: int, lanes):
        """While wgmma products may be reading shared memory, which threads of which warpgroups
        (by their number in the batch: those of other CTAs too, through shared::cluster)
        arrived in the barrier's current phase (_release_products)."""
        reads = self.batch.wgmma_reads
        if reads is not None and reads.products and self.batch.T % 128 == 0:
            arrived = self.wgmma_arrived.setdefault(key, {})
            groups = lanes // 128
            for group in np.unique(groups).tolist():
                threads = arrived.setdefault(group, np.zeros(128, bool))
                threads[lanes[groups == group] % 128] = True

    def _release_products(self, key: int):
        """A completed phase that whole warpgroups arrived on (of any CTA of the cluster)
        retires the products they had waited for (_WgmmaReads.release_warpgroups)."""
        arrived = self.wgmma_arrived.pop(key, None)
        if not arrived:
            return
        whole = [group for group, threads in arrived.items() if threads.all()]
        if whole:
            self.batch.wgmma_reads.release_warpgroups(np.array(whole, np.int64))

    def _note_arrivals(self, key: int, lanes):
        """Under the race check (which follows the memory order in every kernel with an
        mbarrier.arrive: _memory_order), each arrival is a release into the barrier's current
        phase (_OrderedRaces.mbarrier_arrived); arrivals from other CTAs of the cluster also
        mark the barrier for _order_clusters."""
        races = getattr(self.batch, "races", None)
        if races is not None:
            races.mbarrier_arrived(key, lanes)
            if (lanes // self.batch.T != key // self.batch.launch.shared_pad).any():
                self.remote_arrived.add(key)

    def _order_phase(self, key: int):
        """Under the race check, the barrier's phase completed: a wait that sees it acquires
        what its arrivals published (_OrderedRaces.mbarrier_completed)."""
        races = getattr(self.batch, "races", None)
        if races is not None:
            races.mbarrier_completed(key)

    def _order_clusters(self, key: int):
        """Under the race check, a completed phase that a thread of another CTA arrived on
        (mbarrier.arrive.release.cluster.shared::cluster) orders that thread's accesses, and
        those a block barrier of its CTA orders before it, before those of the barrier's waiters:
        the check, which does not follow which threads wait, takes every access of the cluster's
        CTAs before it to be ordered before every access after it (_SharedRaces.across)."""
        if key in self.remote_arrived:
            self.remote_arrived.discard(key)
            batch = self.batch
            csize = batch.launch.cluster_size
            first = key // batch.launch.shared_pad // csize * csize
            blocks = np.zeros(batch.B, bool)
            blocks[first:first + csize] = True
            batch.races.release_cluster(blocks)

    def _land(self, ins, lane: int, offsets, data):
        """Write a bulk copy's bytes: checked as its thread's store (the race check), then
        forgotten there, since the threads that wait for the phase are ordered after it (a
        multicast copy's bytes in another CTA than its thread's are not checked, as other
        accesses of other CTAs' shared memory are not)."""
        width = data.shape[1]
        batch = self.batch
        batch.shared[offsets[:, None] + np.arange(width)] = data
        races = getattr(batch, "races", None)
        if races is not None and offsets[0] // batch.launch.shared_pad == lane // batch.T:
            races.landed(offsets, np.full(offsets.size, lane), width, ins)

    def _state(self, key: int, lane: int, ins):
        state = self.state.get(key)
        if state is None:
            self._fail(ins, lane, f"no mbarrier was initialised at {self._place(key, lane)}: "
                                  f"call ptxpy.mbarrier_init (mbarrier.init) on it first")
        return state

    def _check_tx(self, ins, key: int, lanes, counts):
        bad = np.abs(counts) > _MBARRIER_MAX
        if bad.any():
            i = int(np.argmax(bad))
            self._fail(ins, int(lanes[i]), f"the transaction count of the mbarrier at "
                       f"{self._place(key, int(lanes[i]))} would be {int(counts[i])} "
                       f"bytes, beyond +-{_MBARRIER_MAX} (2^20 - 1)")

    @staticmethod
    def _by_barrier(keys):
        """(offset, positions in lane order) per distinct barrier of `keys`."""
        order = np.argsort(keys, kind="stable")
        distinct, first = np.unique(keys[order], return_index=True)
        return zip(distinct.tolist(), np.split(order, first[1:]))

    def _place(self, key: int, lane: int) -> str:
        """`shared offset 0x400` of a barrier (in its block's shared memory), `of block
        (1,0,0)` added where that is not `lane`'s block (a shared::cluster arrive, a multicast
        copy)."""
        batch = self.batch
        block, offset = divmod(key, batch.launch.shared_pad)
        where = f"shared offset {offset:#x}"
        return where if block == lane // batch.T else f"{where} of block {batch.block_index(block)}"

    def _fail(self, ins, lane: int, why: str):
        raise SimulatorError(f"{self.batch.kernel.where(ins)}: `{ins.text}`: {why}; "
                             f"{self.batch.describe(lane)}")


class _BulkStores(_AsyncCopies):
    """A batch's bulk copies shared -> global in flight, as _AsyncCopies keeps cp.async's
    (per copy its threads, the bulk group each joins, the global destinations and the bytes
    read from shared memory at the issue); a wait_group writes their destinations. A tensor
    store's destinations are its elements inside the array, (lanes, elements) addresses, and
    its bytes (lanes, elements, element size)."""

    def issue(self, ins, lanes, dst, data):
        self.pending.append([ins, lanes, self.commits[lanes].copy(), dst, data])

    def finish(self):
        """At the batch's end: a bulk store no wait_group covered is an error."""
        if self.pending:
            ins, lanes = self.pending[0][:2]
            kind = ("tensor store (cp.async.bulk.tensor)" if "tensor" in ins.parts else
                    "bulk store (cp.async.bulk)")
            raise SimulatorError(
                f"{self.batch.kernel.where(ins)}: `{ins.text}`: a {kind} "
                f"is still pending when its thread exits: the kernel must wait for its bulk "
                f"stores (ptxpy.cp_async_bulk_wait(0)) before it ends; "
                f"{self.batch.describe(int(lanes[0]))}")

    def _write(self, ins, lanes, dst, data):
        if dst.ndim == 2:     # tensor stores: per lane the elements' addresses, their bytes
            for where, values in zip(dst, data):
                if where.size:
                    self._write(ins, lanes, where, values)
            return
        size = data.shape[1]
        for buf, off, sel, alloc in self.batch._segments("global", dst, lanes, size)[0]:
            buf[off[:, None] + np.arange(size)] = data if sel is None else data[sel]
            alloc.written = True


def _c_activemask(k, ins, m: _Mods) -> _Op:
    m.one_type({"b32"})
    write = k.writer(_operands(k, ins, 1)[0], T_U32, ins)
    return _Op(PLAIN, lambda ctx, mask: write(ctx, ctx.warp_bits(ctx.active_array(mask)), mask))


# ---- vprintf -----------------------------------------------------------------------------------

_FORMAT = re.compile(rb"%([-+ #0]*)(\d+|\*)?(?:\.(\d+|\*))?(hh|h|ll|l|j|z|t|L)?([diouxXeEfFgGaAcsp%])")


def _c_call(k, ins, m: _Mods) -> _Op:
    m.take("uni")
    ops = ins.operands
    if ops and isinstance(ops[0], Paren):
        ret, ops = ops[0].items, ops[1:]
    else:
        ret = ()
    if len(ops) != 2 or not isinstance(ops[0], Sym) or ops[0].name != "vprintf":
        k._bad(ins, "only calls to vprintf are supported")
    args = ops[1].items if isinstance(ops[1], Paren) else ()
    if len(args) != 2:
        k._bad(ins, "vprintf takes two parameters")
    rfmt, rargs = (k.reader(_as_reg(a), T_U64, ins) for a in args)
    write = k.writer(_as_reg(ret[0]), TYPES["s32"], ins) if ret else None

    def run(ctx, mask):
        lanes = np.arange(ctx.n) if mask is None else np.flatnonzero(mask)
        fmts = _pick(rfmt(ctx), lanes, lanes.size)
        bufs = _pick(rargs(ctx), lanes, lanes.size)
        counts = np.zeros(ctx.n, np.int32)
        out = []
        for i, lane in enumerate(lanes):
            text, used = _vprintf(ctx, int(fmts[i]), int(bufs[i]), int(lane), ins)
            out.append(text)
            ctx.last_printed[int(lane)] = (text, ins)
            counts[lane] = used
        sys.stdout.write("".join(out))
        if write is not None:
            write(ctx, counts, mask)
    return _Op(PLAIN, run)


def _as_reg(op):
    """Call parameters declared in the body (`.param .b64 param0`) are named without a %."""
    return Reg(op.name) if isinstance(op, Sym) and op.offset == 0 else op


def _vprintf(ctx, fmt_addr: int, args_addr: int, lane: int, ins) -> tuple[str, int]:
    fmt = ctx.read_cstring(fmt_addr, lane, ins)
    out, pos, offset, used = [], 0, 0, 0

    def take(size: int) -> bytes:
        nonlocal offset
        offset = _align_up(offset, size)
        data = ctx.read_generic(args_addr + offset, size, lane, ins)
        offset += size
        return data

    for match in _FORMAT.finditer(fmt):
        out.append(fmt[pos:match.start()].decode("utf-8", "replace"))
        pos = match.end()
        flags, width, prec, length, conv = (g.decode() if g else g for g in match.groups())
        if conv == "%":
            out.append("%")
            continue
        if width == "*":
            width = str(int.from_bytes(take(4), "little", signed=True))
        if prec == "*":
            prec = str(int.from_bytes(take(4), "little", signed=True))
        spec = "%" + (flags or "") + (width or "") + ("." + prec if prec is not None else "")
        out.append(_format_one(ctx, spec, conv, length, take, lane, ins))
        used += 1
    out.append(fmt[pos:].decode("utf-8", "replace"))
    return "".join(out), used


def _format_one(ctx, spec: str, conv: str, length, take, lane, ins) -> str:
    if conv in "eEfFgGaA":
        value = np.frombuffer(take(8), np.float64)[0].item()
        return value.hex() if conv in "aA" else (spec + conv) % value
    if conv == "s":
        address = int.from_bytes(take(8), "little")
        return (spec + "s") % ctx.read_cstring(address, lane, ins).decode("utf-8", "replace")
    if conv == "p":
        return (spec + "s") % hex(int.from_bytes(take(8), "little"))
    size = 8 if length in ("l", "ll", "j", "z", "t") else 4
    raw = take(size)
    signed = conv in "di"
    value = int.from_bytes(raw, "little", signed=signed)
    if conv == "c":
        return (spec + "c") % chr(value & 0xFF)
    if length == "h":
        value = value & 0xFFFF if not signed else np.int16(value & 0xFFFF).item()
    if length == "hh":
        value = value & 0xFF if not signed else np.int8(value & 0xFF).item()
    return (spec + ("d" if conv in "diu" else conv)) % value


_COMPILERS = {
    "mov": _c_mov, "add": _c_arith, "sub": _c_arith, "mul": _c_arith, "mad": _c_arith,
    "fma": _c_arith, "div": _c_arith, "rem": _c_arith, "abs": _c_arith, "neg": _c_arith,
    "min": _c_arith, "max": _c_arith,
    "and": _c_logic, "or": _c_logic, "xor": _c_logic, "not": _c_logic, "cnot": _c_logic,
    "shl": _c_shift, "shr": _c_shift, "popc": _c_bits, "clz": _c_bits, "brev": _c_bits,
    "bfind": _c_bfind,
    "bfe": _c_bits, "bfi": _c_bits, "prmt": _c_prmt, "lop3": _c_lop3, "shf": _c_shf,
    "sqrt": _c_unary_float, "rsqrt": _c_unary_float, "rcp": _c_unary_float, "ex2": _c_unary_float,
    "lg2": _c_unary_float, "sin": _c_unary_float, "cos": _c_unary_float, "tanh": _c_unary_float,
    "copysign": _c_copysign, "testp": _c_testp, "setp": _c_setp, "selp": _c_selp, "cvt": _c_cvt,
    "cvta": _c_cvta, "ld": _c_ld, "ldu": _c_ld, "st": _c_st, "atom": _c_atom, "red": _c_atom,
    "bra": _c_bra, "ret": _c_exit, "exit": _c_exit, "trap": _c_trap, "bar": _c_bar,
    "barrier": _c_bar, "membar": _c_fence, "fence": _c_fence, "shfl": _c_shfl, "vote": _c_vote, "elect": _c_elect, "mma": _c_mma,
    "activemask": _c_activemask, "call": _c_call, "griddepcontrol": _c_griddepcontrol,
    "cp": _c_cp, "ldmatrix": _c_ldmatrix, "wgmma": _c_wgmma, "mbarrier": _c_mbarrier,
    "prefetch": _c_prefetch, "setmaxnreg": _c_setmaxnreg, "redux": _c_redux,
    "match": _c_match, "nanosleep": _c_nanosleep, "dp4a": _c_dp4a, "mapa": _c_mapa,
}

# ---- execution ---------------------------------------------------------------------------------


class _Launch:
    """Everything one kernel launch shares between its batches."""

    def __init__(self, kernel: _Kernel, grid, block, args, dynamic_shared: int):
        self.kernel, self.grid, self.block = kernel, grid, block
        self.T = block[0] * block[1] * block[2]
        self.memory = _GlobalMemory()
        kernel.module.place_globals(self.memory)
        self.tensor_maps: dict[int, _MapInfo] = {}     # by parameter offset
        self.params = self._params(kernel, args)
        self.shared_size = kernel.shared_static + dynamic_shared
        self.shared_pad = _align_up(self.shared_size, 16)
        self._param_cache = {}
        self.cluster = kernel.cluster           # CTAs a cluster along x, y, z ((1, 1, 1): none)
        self.cluster_size = self.cluster[0] * self.cluster[1] * self.cluster[2]
        self.nclusters = tuple(g // c for g, c in zip(grid, self.cluster))

    def block_ids(self, first: int, count: int) -> np.ndarray:
        """The linear block indices (x fastest) of the launch's blocks `first` to `first +
        count - 1` in the order they are simulated: increasing, or with clusters cluster by
        cluster (clusters in increasing linear cluster index), each cluster's CTAs in rank
        order (x fastest), so that a batch of whole clusters holds each one's CTAs adjacent."""
        if self.cluster_size == 1:
            return np.arange(first, first + count, dtype=np.int64)
        pos = np.arange(first, first + count, dtype=np.int64)
        c, r = pos // self.cluster_size, pos % self.cluster_size
        (cx, cy, _), (nx, ny, _), (gx, gy, _) = self.cluster, self.nclusters, self.grid
        x = (c % nx) * cx + r % cx
        y = ((c // nx) % ny) * cy + (r // cx) % cy
        z = (c // (nx * ny)) * self.cluster[2] + r // (cx * cy)
        return x + gx * (y + gy * z)

    def block_text(self, b: int) -> str:
        """`(x,y,z)` of the block of linear index b."""
        gx, gy, _ = self.grid
        return f"({b % gx},{(b // gx) % gy},{b // (gx * gy)})"

    def _params(self, kernel: _Kernel, args) -> np.ndarray:
        decls = kernel.params
        if len(args) != len(decls):
            raise SimulatorError(f"kernel {kernel.name} takes {len(decls)} parameters, got {len(args)}")
        buf = np.zeros(max(16, _align_up(kernel.param_size, 16)), np.uint8)
        by_id: dict[int, _Alloc] = {}
        for decl, arg in zip(decls, args):
            offset, t = kernel.param_offsets[decl.name]
            if decl.count is not None and _is_tensor_map_param(decl):
                array, box, swizzle = _check_tensor_map(decl, arg)
                self.tensor_maps[offset] = _MapInfo(decl.name, self._allocate(decl, array, by_id),
                                                    array, box, swizzle)
                continue
            if decl.count is not None:
                raise SimulatorError(f"parameter {decl.name}: array parameters are not supported")
            if isinstance(arg, TensorMap):
                raise SimulatorError(f"parameter {decl.name} (.{t.name}): a TensorMap goes only "
                                     f"to a tensor map parameter, .param .align 64 .b8 NAME[128]")
            value = self._param_value(decl, t, arg, by_id)
            buf[offset:offset + t.nbytes] = np.frombuffer(value.tobytes(), np.uint8)
        return buf

    def _allocate(self, decl: VarDecl, arg: np.ndarray, by_id) -> _Alloc:
        """The array's allocation in global memory: one per array object (by_id)."""
        alloc = by_id.get(id(arg))
        if alloc is None:
            if arg.dtype.hasobject:
                raise SimulatorError(f"parameter {decl.name}: object arrays are not supported")
            data = np.ascontiguousarray(arg).view(np.uint8).reshape(-1)
            alloc = self.memory.add(data.size, data, owner=arg, label=decl.name)
            by_id[id(arg)] = alloc
        return alloc

    def _param_value(self, decl: VarDecl, t: PtxType, arg, by_id):
        if isinstance(arg, np.ndarray) and t.name in ("u64", "b64", "s64"):
            return np.array(self._allocate(decl, arg, by_id).base, U64)
        if isinstance(arg, np.ndarray):
            if arg.size != 1:
                raise SimulatorError(f"parameter {decl.name} (.{t.name}) needs a scalar, got an array")
            arg = arg.reshape(())[()]
        return _param_scalar(decl, t, arg)

    def param(self, offset: int, dtype):
        key = (offset, dtype)
        value = self._param_cache.get(key)
        if value is None:
            value = self.params[offset:offset + dtype.itemsize].view(dtype)[0]
            self._param_cache[key] = value
        return value

    def copy_back(self):
        for alloc in self.memory.allocs:
            owner = alloc.owner
            if owner is None or not alloc.written:
                continue
            if not owner.flags.writeable:
                raise SimulatorError(f"the kernel wrote to parameter {alloc.label}, a read-only array")
            owner[...] = alloc.buf[:alloc.size].view(owner.dtype).reshape(owner.shape)


def _param_scalar(decl: VarDecl, t: PtxType, arg):
    if t.kind == "f":
        if t.dtype is None:
            raise SimulatorError("bf16 needs the ml_dtypes package")
        return np.asarray(_narrow(np.array(float(arg)), t))
    is_float = isinstance(arg, (float, np.floating)) or (
        isinstance(arg, np.generic) and arg.dtype.kind not in "iub")
    if is_float and t.bits == 16 and isinstance(arg, np.generic) and arg.dtype.itemsize == 2:
        return np.asarray(arg).view(np.uint16).view(t.dtype)   # f16/bf16 bits for a .b16 param
    if is_float:
        hint = (": pass np.float16(...), ml_dtypes.bfloat16(...) or the raw bits as an int"
                if t.bits == 16 else "")
        raise SimulatorError(f"parameter {decl.name} (.{t.name}) needs an integer, got {arg!r}{hint}")
    return np.array(int(arg) & ((1 << t.bits) - 1), _uint(t.nbytes)).view(t.dtype)


class _Batch:
    """The threads of blocks `first_block` to `first_block + nblocks - 1` of the launch's order
    (_Launch.block_ids: increasing linear block index, or whole clusters), simulated together.
    Block b of the batch is the launch's block `self.blocks[b]` (linear index); its threads are
    the batch's threads b*T to b*T + T - 1 and its shared memory is bytes b*shared_pad on."""

    def __init__(self, launch: _Launch, first_block: int, nblocks: int):
        kernel = launch.kernel
        self.launch, self.kernel = launch, kernel
        self.first_block, self.B, self.T = first_block, nblocks, launch.T
        self.blocks = launch.block_ids(first_block, nblocks)
        self.n = nblocks * launch.T
        self.regs = dict(kernel.initial)
        # all-ones bytes, as the GPU's shared and local memory hold whatever was there: a NaN
        # in every float type, -1 in signed integers, the maximum in unsigned ones
        self.shared = np.full(max(16, nblocks * launch.shared_pad), UNWRITTEN_BYTE, np.uint8)
        self.local = np.full(max(16, self.n * kernel.local_pad), UNWRITTEN_BYTE, np.uint8)
        self._special = {}
        self.live = np.ones(self.n, bool)
        self.last_printed: dict[int, tuple[str, Instr]] = {}   # thread -> (its last vprintf text, the call)
        self.async_copies = _AsyncCopies(self)
        self.mbarriers = _Mbarriers(self)
        self.bulk_stores = _BulkStores(self)
        self.wgmma_reads: _WgmmaReads | None = None    # from the first wgmma.mma_async on
        # the cluster barrier (barrier.cluster), where the kernel has one: per thread, its
        # arrivals and its completed waits; per cluster of the batch, its completed phases;
        # `cluster_waiting` marks the threads of `waiting` that wait at barrier.cluster.wait
        self.clusters = self.cluster_waiting = None
        if kernel.cluster_barrier:
            per = launch.cluster_size * launch.T
            self.clusters = np.arange(self.n) // per     # each thread's cluster in the batch
            self.arrivals = np.zeros(self.n, np.int64)
            self.waits = np.zeros(self.n, np.int64)
            self.phases = np.zeros(max(1, self.n // per), np.int64)
            self.cluster_waiting = np.zeros(self.n, bool)

    # special registers
    def special(self, name: str):
        value = self._special.get(name)
        if value is None:
            value = self._special[name] = self._compute_special(name)
        return value

    def _compute_special(self, name: str):
        bx, by, bz = self.launch.block
        gx, gy, gz = self.launch.grid
        head, _, axis = name.partition(".")
        i = "xyz".find(axis)
        if head == "%ntid":
            return np.uint32(self.launch.block[i])
        if head == "%nctaid":
            return np.uint32(self.launch.grid[i])
        if head == "%tid":
            t = self.special("%tid_linear")
            return ((t % bx, (t // bx) % by, t // (bx * by))[i]).astype(np.uint32)
        if head == "%ctaid":
            b = np.repeat(self.blocks, self.T)
            return ((b % gx, (b // gx) % gy, b // (gx * gy))[i]).astype(np.uint32)
        if name == "%tid_linear":
            return np.tile(np.arange(self.T, dtype=np.int64), self.B)
        if head in _SPECIAL or name in ("%cluster_ctarank", "%cluster_nctarank",
                                        "%is_explicit_cluster"):
            return self._cluster_special(name, head, i)
        lane = (self.special("%tid_linear") % 32).astype(np.uint32)
        one = np.uint32(1)
        flat = {
            "%laneid": lambda: lane, "%warpid": lambda: (self.special("%tid_linear") // 32).astype(np.uint32),
            "%nwarpid": lambda: np.uint32(-(-self.T // 32)),
            "%lanemask_eq": lambda: one << lane, "%lanemask_lt": lambda: (one << lane) - one,
            "%lanemask_le": lambda: ((one << lane) - one) | (one << lane),
            "%lanemask_gt": lambda: ~(((one << lane) - one) | (one << lane)),
            "%lanemask_ge": lambda: ~((one << lane) - one),
        }
        return flat[name]()

    def _cluster_special(self, name: str, head: str, i: int):
        """The cluster special registers; without .reqnctapercluster a cluster is one CTA."""
        launch = self.launch
        cluster = launch.cluster
        if name == "%cluster_nctarank":
            return np.uint32(launch.cluster_size)
        if name == "%is_explicit_cluster":
            return np.bool_(launch.kernel.fn.directives.get(".reqnctapercluster") is not None)
        if name == "%cluster_ctarank":
            if launch.cluster_size == 1:
                return np.uint32(0)
            x, y, z = (self.special(f"%cluster_ctaid.{a}") for a in "xyz")
            return (x + cluster[0] * (y + cluster[1] * z)).astype(np.uint32)
        if head == "%cluster_nctaid":
            return np.uint32(cluster[i])
        if head == "%nclusterid":
            return np.uint32(launch.nclusters[i])
        ctaid = self.special(f"%ctaid.{'xyz'[i]}")
        if head == "%cluster_ctaid":
            return np.uint32(0) if cluster[i] == 1 else ctaid % np.uint32(cluster[i])
        return ctaid if cluster[i] == 1 else ctaid // np.uint32(cluster[i])    # %clusterid

    def describe(self, lane: int) -> str:
        return f"thread {self.thread_index(lane % self.T)} block {self.block_index(lane // self.T)}"

    def thread_index(self, t: int) -> str:
        """`(x,y,z)` of the thread of linear index t within its block."""
        bx, by, _ = self.launch.block
        return f"({t % bx},{(t // bx) % by},{t // (bx * by)})"

    def block_index(self, b: int) -> str:
        """`(x,y,z)` of the batch's b-th block."""
        return self.launch.block_text(int(self.blocks[b]))

    # memory
    def locate(self, space: str, addr, lanes, size: int, what: str, ins):
        """Resolve per-lane addresses to [(buffer, byte offsets, selection, allocation)]."""
        misaligned = (addr & U64(size - 1)) != 0 if size & (size - 1) == 0 else addr != addr
        if misaligned.any():
            self._fault("misaligned", space, what, size, addr, lanes, misaligned, ins)
        segs, bad = self._segments(space, addr, lanes, size)
        if bad is not None:
            self._fault("out-of-bounds", space, what, size, addr, lanes, bad, ins)
        if space == "shared::cluster" and self.launch.cluster_size > 1:
            self._check_alive(segs[0][1], addr, lanes, what, ins)
        reads = self.wgmma_reads
        if (reads is not None and reads.products and what != "load"
                and space in ("shared", "generic", "shared::cluster")):
            for buf, off, sel, _ in segs:     # a write to an operand of a wgmma in flight?
                if buf is self.shared:
                    who = np.arange(self.n) if lanes is None else lanes
                    reads.check(off, who if sel is None else who[sel], size, what, ins)
        return segs

    def _segments(self, space: str, addr, lanes, size: int):
        if space in ("global", "const"):
            segs, bad = self.launch.memory.segments(addr, size)
            return ([(a.buf, off, sel, a) for a, off, sel in segs] if segs else None), bad
        if space == "shared":
            return self._window(addr, lanes, size, self.shared, self.launch.shared_size,
                                self.launch.shared_pad, self.T)
        if space == "local":
            return self._window(addr, lanes, size, self.local, self.kernel.local_size,
                                self.kernel.local_pad, 1)
        if space == "shared::cluster":
            return self._cluster_window(addr, lanes, size)
        return self._generic(addr, lanes, size)

    def _cluster_window(self, addr, lanes, size):
        """shared::cluster addresses: below CLUSTER_WINDOW an offset in the thread's own CTA's
        shared memory (its shared::cta address), else CLUSTER_WINDOW + rank * CLUSTER_RANK_SPAN
        + offset in that of the CTA of that rank of its cluster (mapa's result)."""
        launch, limit = self.launch, self.launch.shared_size
        csize = launch.cluster_size
        who = np.arange(addr.size) if lanes is None else lanes
        block = who // self.T
        remote = addr >= U64(CLUSTER_WINDOW)
        rel = np.where(remote, addr - U64(CLUSTER_WINDOW), addr).astype(U64)
        rank = (rel // U64(CLUSTER_RANK_SPAN)).astype(np.int64)
        offset = np.where(remote, rel % U64(CLUSTER_RANK_SPAN), addr)
        bad = offset > U64(max(limit - size, 0)) if limit >= size else np.ones(addr.shape, bool)
        bad |= remote & (rank >= csize)
        if bad.any():
            return None, bad
        if remote.any():
            block = np.where(remote, block - block % csize + rank, block)
        return [(self.shared, block * launch.shared_pad + offset.astype(np.int64), None, None)], None

    def _check_alive(self, offsets, addr, lanes, what: str, ins):
        """A shared::cluster access to a CTA whose threads have all exited: its shared memory
        is gone (the PTX ISA requires a CTA to outlive the accesses to it)."""
        target = offsets // self.launch.shared_pad
        gone = ~self.live.reshape(self.B, self.T).any(axis=1)[target]
        if gone.any():
            i = int(np.argmax(gone))
            lane = i if lanes is None else int(lanes[i])
            raise SimulatorError(
                f"{self.kernel.where(ins)}: `{ins.text}` {_NOW[what]} shared::cluster memory at "
                f"{int(addr[i]):#x}, but block {self.block_index(int(target[i]))} of the cluster "
                f"has exited, so its shared memory is gone; keep it alive with a cluster barrier "
                f"(ptxpy.cluster_sync()) before it exits; {self.describe(lane)}")

    def _window(self, addr, lanes, size, buf, limit, pad, group):
        bad = addr > U64(max(limit - size, 0)) if limit >= size else np.ones(addr.shape, bool)
        if bad.any():
            return None, bad
        owner = (np.arange(addr.size) if lanes is None else lanes) // group
        return [(buf, owner * pad + addr.astype(np.int64), None, None)], None

    def _generic(self, addr, lanes, size):
        kinds = np.zeros(addr.size, np.int8)
        kinds[(addr >= U64(SHARED_WINDOW)) & (addr < U64(SHARED_WINDOW + WINDOW_SIZE))] = 1
        kinds[(addr >= U64(LOCAL_WINDOW)) & (addr < U64(LOCAL_WINDOW + WINDOW_SIZE))] = 2
        segs, bad = [], np.zeros(addr.size, bool)
        windows = ((0, "global", 0), (1, "shared", SHARED_WINDOW), (2, "local", LOCAL_WINDOW))
        for code, space, base in windows:
            idx = np.flatnonzero(kinds == code)
            if idx.size == 0:
                continue
            sub_lanes = idx if lanes is None else lanes[idx]
            part, part_bad = self._segments(space, addr[idx] - U64(base), sub_lanes, size)
            if part_bad is not None:
                bad[idx[part_bad]] = True
                continue
            segs += [(b, off, idx if sel is None else idx[sel], a) for b, off, sel, a in part]
        return (None, bad) if bad.any() else (segs, None)

    def _fault(self, kind, space, what, size, addr, lanes, bad, ins):
        i = int(np.argmax(bad))
        lane = i if lanes is None else int(lanes[i])
        raise SimulatorError(f"{self.kernel.where(ins)}: {kind} {space} {what} of {size} bytes "
                             f"at {int(addr[i]):#x}; {self.describe(lane)}")

    def read_generic(self, address: int, size: int, lane: int, ins) -> bytes:
        addr = np.array([address], U64)
        segs = self.locate("generic", addr, np.array([lane]), size, "load", ins)
        buf, off, _, _ = segs[0]
        return buf[int(off[0]):int(off[0]) + size].tobytes()

    def read_cstring(self, address: int, lane: int, ins) -> bytes:
        out = bytearray()
        while True:
            byte = self.read_generic(address + len(out), 1, lane, ins)
            if byte == b"\0":
                return bytes(out)
            out += byte

    # warps
    def active_array(self, mask):
        return np.ones(self.n, bool) if mask is None else mask

    def warp_bits(self, flags):
        """Per thread: the 32-bit mask of its warp's lanes where flags is true."""
        flags = np.broadcast_to(np.asarray(flags, bool), (self.n,))
        t = self.special("%tid_linear")
        warp = (np.arange(self.n) // self.T) * (-(-self.T // 32)) + t // 32
        weights = np.where(flags, np.ldexp(1.0, (t % 32).astype(np.int32)), 0.0)
        bits = np.bincount(warp, weights, minlength=int(warp[-1]) + 1).astype(np.uint32)
        return bits[warp]

    def whole_warps(self, mask, ins):
        """The thread numbers of each warp running an instruction that needs all 32 lanes (an
        `mma.sync`), as an array (warps, 32); an error where a warp is partial or split."""
        t = self.special("%tid_linear")
        lane = t % 32
        active = self.active_array(mask)
        short = active & (t - lane + 32 > self.T)
        if short.any():
            thread = int(np.argmax(short))
            raise SimulatorError(f"{self.kernel.where(ins)}: `{ins.text}` needs whole warps of 32 "
                                 f"threads; this block of {self.T} has a last warp of "
                                 f"{self.T % 32}; {self.describe(thread)}")
        missing = active & (self.warp_bits(active) != np.uint32(0xFFFFFFFF))
        if missing.any():
            thread = int(np.argmax(missing))
            raise SimulatorError(f"{self.kernel.where(ins)}: `{ins.text}`: every lane of the warp "
                                 f"must execute it together, and some do not; {self.describe(thread)}")
        starts = np.flatnonzero(active & (lane == 0))
        return starts[:, None] + np.arange(32)[None, :]

    def whole_warpgroups(self, mask, ins):
        """The thread numbers of each warpgroup (4 warps: threads 128q to 128q + 127 of a block)
        running a `wgmma` instruction, as an array (warpgroups, 128); an error where the block is
        not whole warpgroups or some threads of a warpgroup do not execute it together."""
        active = self.active_array(mask)
        if self.T % 128:
            thread = int(np.argmax(active))
            raise SimulatorError(f"{self.kernel.where(ins)}: `{ins.text}` needs whole warpgroups "
                                 f"of 128 threads (4 warps); this block has {self.T} threads; "
                                 f"{self.describe(thread)}")
        missing = active & (self.warpgroup_count(active) != 128)
        if missing.any():
            thread = int(np.argmax(missing))
            raise SimulatorError(f"{self.kernel.where(ins)}: `{ins.text}`: every thread of the "
                                 f"warpgroup (threads {thread % self.T // 128 * 128} to "
                                 f"{thread % self.T // 128 * 128 + 127}) must execute it together, "
                                 f"and some do not; {self.describe(thread)}")
        starts = np.flatnonzero(active & (self.special("%tid_linear") % 128 == 0))
        return starts[:, None] + np.arange(128)[None, :]

    def warpgroup_count(self, flags):
        """Per thread: how many threads of its warpgroup (threads 128q to 128q + 127 of its
        block; the last one possibly partial) have flags true."""
        flags = np.broadcast_to(np.asarray(flags, bool), (self.n,))
        group = ((np.arange(self.n) // self.T) * (-(-self.T // 128))
                 + self.special("%tid_linear") // 128)
        return np.bincount(group, flags, minlength=int(group[-1]) + 1).astype(np.int64)[group]

    def fenced(self, mask, acquire: bool, release: bool, wide: bool):
        """membar/fence: memory is always ordered here (_RacecheckBatch follows them)."""

    def check_converged(self, mask, members, ins):
        if mask is None and self.live.all():
            return
        active = self.active_array(mask)
        missing = self.warp_bits(self.live & ~active) & np.asarray(members, np.uint32)
        bad = active & (missing != 0)
        if bad.any():
            lane = int(np.argmax(bad))
            raise SimulatorError(f"{self.kernel.where(ins)}: `{ins.text}`: lanes named in the member "
                                 f"mask are live but not executing it; {self.describe(lane)}")

    def shuffle(self, value, b, c, mode: str, mask=None, ins=None):
        t = self.special("%tid_linear")
        lane = t % 32
        b = np.asarray(b).astype(np.int64) & 31
        c = np.asarray(c).astype(np.int64)
        clamp, seg = c & 31, (c >> 8) & 31
        max_lane = (lane & seg) | (clamp & ~seg)
        min_lane = lane & seg
        if mode == "up":
            j = lane - b
            ok = j >= max_lane
        else:
            j = {"down": lane + b, "bfly": lane ^ b, "idx": min_lane | (b & ~seg)}[mode]
            ok = j <= max_lane
        ok = ok & (t - lane + j < self.T) & (j >= 0)
        src = np.where(ok, np.arange(self.n) - lane + j, np.arange(self.n))
        gone = self.active_array(mask) & ~self.live[src]
        if gone.any():     # (a lane that returned before the call: its registers are undefined)
            reader = int(np.argmax(gone))
            raise SimulatorError(f"{self.kernel.where(ins)}: `{ins.text}`: reads lane "
                                 f"{int(j[reader] if np.ndim(j) else j)}, which has exited; "
                                 f"{self.describe(reader)}")
        value = np.asarray(value)
        return (value if value.ndim == 0 else value[src]), ok

    # scheduling
    # Fairness (docs/simulator.md, "Divergence"): threads that have taken backward branches worth
    # SLICE since the last hand-over, while other threads could run, yield: every other runnable
    # thread runs (until it blocks, exits, reaches a waiting pc or yields too) before they run
    # again. An iteration of a loop that polls memory (an `atom`, or a volatile, relaxed or
    # acquire `ld`, between the branch and its target) weighs POLL_WEIGHT, any other 1, so a
    # spin-wait hands over after a few iterations while ordinary loops keep min-pc order.
    SLICE = 1024
    POLL_WEIGHT = 64
    ALONE_SLICE = 1 << 16       # with no other runnable thread: for the hang check only
    # rounds whose only progress is block barriers released at their end after which a thread
    # that spun through all of them without changing a register is taken to wait forever
    # (_HangCheck; a power of two)
    BARRIER_ROUNDS = 1 << 12

    def run(self):
        code, end = self.kernel.code, len(self.kernel.code)
        self.pc = np.zeros(self.n, np.int32)
        self.waiting = np.zeros(self.n, bool)
        self.warp_waiting = np.zeros(self.n, bool)    # at a shfl/vote, for the rest of the warp
        self.deferred = None       # runnable threads that yielded in this round (None: none)
        self.spins = 0             # backward-branch weight since the last hand-over
        self.releases = 0          # barrier releases so far (progress, for the hang check)
        self.round_released = None  # threads released at the end of the last round (or None)
        self.hang = _HangCheck(self.BARRIER_ROUNDS)
        weights = _loop_weights(self.kernel, self.POLL_WEIGHT)
        slice_, alone_slice = self.SLICE, self.ALONE_SLICE
        live = self.live
        while True:
            runnable = live & ~self.waiting & ~self.warp_waiting
            if not runnable.any():
                if self.clusters is not None and (self._cluster_update() or (
                        self.warp_waiting.any() and self._release_whole_blocks())):
                    # (with cluster waits, a block barrier's release may let threads arrive
                    # that others wait for, whom lanes at a warp instruction wait for)
                    self.releases += 1
                    self.spins = 0
                    continue
                if self.warp_waiting.any():
                    self._warp_deadlock()
                if not self.waiting.any():
                    self.mbarriers.finish()
                    self.bulk_stores.finish()
                    return
                self._release_barrier()
                self.releases += 1
                self.spins = 0
                continue
            pcs = np.where(runnable, self.pc, end)
            deferred = self.deferred
            if deferred is None:        # minimum pc first
                cur = int(pcs.min())
                group = pcs == cur
                if cur >= end:   # fell off the end of the body: an implicit ret
                    live &= ~group
                    if self.clusters is not None:
                        self._cluster_update()
                    continue
                stop = int(np.where(group, end, pcs).min())
                behind, limit = -1, slice_ if stop < end else alone_slice
            else:                       # the threads that have not yielded, minimum pc first
                cur = int(np.where(deferred, end, pcs).min())
                if cur >= end:          # all have had their turn (or fell off the end)
                    live &= ~(runnable & ~deferred)
                    if self.clusters is not None:
                        self._cluster_update()
                    self._new_round()
                    continue
                group = pcs == cur
                deferred &= ~group      # yielded threads at that pc run with it again
                if not deferred.any():
                    self.deferred = None
                stop = int(np.where(pcs > cur, pcs, end).min())
                behind = int(np.where(pcs < cur, pcs, -1).max())   # the highest lower pc
                limit = slice_ if behind >= 0 or stop < end else alone_slice
            yielded = self._run_group(code, cur, None if group.all() else group, stop, end,
                                      weights, limit, behind)
            if yielded is not None:
                self.spins = 0
                self.deferred = yielded if self.deferred is None else self.deferred | yielded

    def _new_round(self):
        """Every runnable thread has yielded once since the last round: start the next. Blocks
        all of whose threads wait at a block barrier are released first: threads of other
        blocks that spin (on an mbarrier or a flag that a CTA of their cluster sets after that
        barrier) never stop being runnable, so the barrier would otherwise wait for them. Those
        releases are not progress for the hang check (`releases`), which would otherwise never
        see a spin beside a block going round a loop through a barrier: its state comparison
        covers them, and BARRIER_ROUNDS bounds such rounds where the state keeps changing."""
        self.deferred = None
        self.round_released = None
        if self.waiting.any():
            before = self.waiting.copy()
            if self._release_whole_blocks():
                self.round_released = before & ~self.waiting
                self.spins = 0
        self.hang.round(self)

    def _run_group(self, code, cur: int, group, stop: int, end: int, weights=None,
                   limit: int = 1 << 62, behind: int = -1):
        """Run the threads at pc `cur` until they diverge, block, exit or reach pc `stop`, or
        take a backward branch: once their turn's `limit` is spent (then return them: they
        yield), or to a pc at or below `behind`, the highest pc of other runnable threads below
        `cur` (then stop there, so that the scheduler finds where they meet again)."""
        live = self.live
        yielded = False
        while cur < stop and cur < end:
            op = code[cur]
            mask = group
            if op.guard is not None:
                g = op.guard(self)
                if np.ndim(g) == 0:
                    if not g:
                        cur += 1
                        continue
                else:
                    mask = g if group is None else group & g
            kind = op.kind
            if kind == PLAIN:
                op.fn(self, mask)
                cur += 1
            elif kind == BRA:
                if mask is not group:
                    if not mask.any():
                        cur += 1
                        continue
                    stay = ~mask if group is None else group & ~mask
                    if stay.any():      # they part
                        if op.target <= cur and weights is not None:
                            self.spins += weights[cur]
                        self.pc[mask] = op.target
                        self.pc[stay] = cur + 1
                        return None
                if op.target <= cur and weights is not None:     # a loop goes round
                    self.spins += weights[cur]
                    if self.spins >= limit or op.target <= behind:
                        yielded = self.spins >= limit
                        cur = op.target
                        break
                cur = op.target
            elif kind == EXIT:
                if mask is None:
                    live[:] = False
                    return None
                live &= ~mask
                group = ~mask if group is None else group & ~mask
                if not group.any():
                    if self.clusters is not None:
                        self._cluster_update()
                    return None
                cur += 1
                if self.clusters is not None and self._cluster_update():
                    break       # exited threads let cluster waits complete: reschedule
            elif kind == BAR:
                self._arrive(op, cur, group, mask)
                return None
            elif kind == WSYNC:
                # lanes waiting here (never all of them: then group would be None) join
                here = self.warp_waiting & (self.pc == cur) if group is not None else None
                if here is not None and here.any():
                    self.warp_waiting &= ~here
                    group = group | here
                    mask = group if op.guard is None else group & op.guard(self)
                wait = self._lanes_to_wait(op, mask)
                if wait is not None:
                    self.warp_waiting |= wait
                    self.pc[wait] = cur
                    group = ~wait if group is None else group & ~wait
                    mask = ~wait if mask is None else mask & ~wait
                    if not group.any():
                        return None
                if mask is None or mask.any():
                    op.fn(self, mask)
                cur += 1
            elif kind == CARRIVE:
                cur += 1
                if self._cluster_arrive(op, mask):
                    break       # the arrivals let cluster waits complete: reschedule
            elif kind == CWAIT:
                if self._cluster_wait(op, cur, group, mask):
                    return None
                cur += 1
            else:  # TRAP
                hit = np.ones(self.n, bool) if mask is None else mask
                if hit.any():
                    raise SimulatorError(self._trap_message(op, code[cur - 1] if cur else None,
                                                            int(np.argmax(hit))))
                cur += 1
        if group is None:
            self.pc[:] = cur
        else:
            self.pc[group] = cur
        if yielded:
            return np.ones(self.n, bool) if group is None else group
        return None

    def _state(self, memory: bool):
        """A copy of everything that decides how the batch goes on (for the hang check)."""
        regs = {name: value.copy() if isinstance(value, np.ndarray) else value
                for name, value in self.regs.items()}
        mem = None
        if memory:
            mem = [a.buf.copy() for a in self.launch.memory.allocs]
            mem += [self.shared.copy(), self.local.copy()]
        return (self.pc.copy(), self.live.copy(), self.waiting.copy(), self.warp_waiting.copy(),
                self.spins, regs, self.mbarriers.snapshot(), self._pending(), mem)

    def _pending(self):
        """What else decides how the batch goes on (for the hang check): the copies and
        products in flight, and where each thread stands at the cluster barrier (its arrivals
        and the completed phases beyond its waits: the counts themselves only grow)."""
        mbarriers, reads = self.mbarriers, self.wgmma_reads
        counts = (len(self.async_copies.pending), len(self.bulk_stores.pending),
                  sum(len(c) for c in mbarriers.copies.values()),
                  0 if reads is None else reads.products)
        if self.clusters is None:
            return counts, None
        return counts, np.concatenate([self.arrivals - self.waits,
                                       self.phases[self.clusters] - self.waits,
                                       self.cluster_waiting])

    def _same_state(self, old) -> bool:
        pc, live, waiting, warp_waiting, spins, regs, mbarriers, pending, mem = old
        now = self._pending()
        if not (spins == self.spins and np.array_equal(pc, self.pc)
                and mbarriers == self.mbarriers.snapshot() and pending[0] == now[0]
                and (pending[1] is None or np.array_equal(pending[1], now[1]))
                and np.array_equal(live, self.live) and np.array_equal(waiting, self.waiting)
                and np.array_equal(warp_waiting, self.warp_waiting)
                and regs.keys() == self.regs.keys()):
            return False
        for name, value in self.regs.items():
            if not np.array_equal(regs[name], value):
                return False
        if mem is None:
            return True
        now = [a.buf for a in self.launch.memory.allocs] + [self.shared, self.local]
        return len(now) == len(mem) and all(np.array_equal(a, b) for a, b in zip(mem, now))

    def _hang_error(self, stuck=None, rounds: int = 0):
        """The batch can never finish: its state repeats (or, with `stuck`, those threads have
        spun for `rounds` rounds in which the others only went round block barriers)."""
        runnable = self.live & ~self.waiting & ~self.warp_waiting
        looping = None       # threads going round a loop through a block barrier
        if self.round_released is not None and (runnable & ~self.round_released).any():
            looping = runnable & self.round_released
            runnable &= ~self.round_released
        others = []
        if stuck is not None:
            if (runnable & ~stuck).any():
                others.append(f"{int((runnable & ~stuck).sum())} run on")
            runnable = stuck
        if looping is not None:
            others.append(f"{int(looping.sum())} go round a loop through a block barrier")
        lane = int(np.argmax(runnable))
        where = self.kernel.code[int(self.pc[lane])].where
        count = int(runnable.sum())
        if self.waiting.any():
            others.append(f"{int(self.waiting.sum())} wait at a barrier")
        if self.warp_waiting.any():
            others.append(f"{int(self.warp_waiting.sum())} wait at a warp instruction")
        if (~self.live).any():
            others.append(f"{int((~self.live).sum())} have exited")
        later = ""
        blocks = self.launch.grid[0] * self.launch.grid[1] * self.launch.grid[2]
        if self.first_block + self.B < blocks:
            after = int(self.launch.block_ids(self.first_block + self.B, 1)[0])
            later = (f"; blocks from {self.launch.block_text(after)} on run only after these "
                     f"{self.B} blocks finish")
        several = count > 1
        if stuck is None:
            what = (f"loop{'' if several else 's'} without changing any register or memory, so "
                    f"what {'they wait' if several else 'it waits'} for never happens")
        else:
            what = (f"{'have' if several else 'has'} looped for {rounds} rounds without changing "
                    f"any register while the other threads only went round block barriers "
                    f"(the simulator's bound, _Batch.BARRIER_ROUNDS), so what "
                    f"{'they wait' if several else 'it waits'} for is taken never to happen")
        raise SimulatorError(
            f"{where}: the kernel can never finish: {count} thread{'s' if several else ''} "
            f"{what}{' (of the others, ' + ', '.join(others) + ')' if others else ''}{later}; "
            f"{self.describe(lane)}")

    def _spinning(self):
        """The threads that spin at this round's end: runnable, not just released from a block
        barrier."""
        spinning = self.live & ~self.waiting & ~self.warp_waiting
        if self.round_released is not None:
            spinning &= ~self.round_released
        return spinning

    def _spinners(self):
        """The threads that spin (_spinning), with every thread's pc and registers (for the
        hang check's bound)."""
        regs = {name: value.copy() if isinstance(value, np.ndarray) else value
                for name, value in self.regs.items()}
        return self._spinning(), self.pc.copy(), regs

    def _still(self, old):
        """The threads that spin now and spun at `old` (_spinners) with the same pc and the
        same registers (a register written for the first time since counts as changed)."""
        spinning, pc, regs = old
        same = spinning & (pc == self.pc) & self._spinning()
        for name, value in self.regs.items():
            if not same.any():
                break
            before = regs.get(name)
            if before is None:
                return np.zeros_like(same)
            if before is not value:
                same &= np.broadcast_to(np.asarray(before) == np.asarray(value), same.shape)
        return same

    def _trap_message(self, trap: _Op, before: _Op | None, lane: int) -> str:
        """What the thread printed just before trapping (a debug check's message, as
        `kernels.py:6: assertion failed: ...`), else where it trapped; then which thread."""
        text, call = self.last_printed.get(lane, (None, None))
        if before is not None and call is before.ins and text.strip():
            return f"{text.rstrip()}; {self.describe(lane)}"
        return f"{trap.where}: kernel trapped; {self.describe(lane)}"

    def _arrive(self, op: _Op, cur: int, group, mask):
        if op.fn is not None:
            count = np.asarray(op.fn(self))
            if (count != self.T).any():
                raise SimulatorError(f"{op.where}: `{op.ins.text}`: barriers with a thread count "
                                     "other than the block size are not supported")
        arrive = np.ones(self.n, bool) if mask is None else mask
        self.waiting |= arrive
        self.pc[arrive] = cur
        self.barrier_op = op
        rest = ~arrive if group is None else group & ~arrive
        self.pc[rest] = cur + 1

    def _lanes_to_wait(self, op: _Op, mask):
        """The lanes of `mask` at a warp-synchronous instruction whose member mask names a live
        lane not executing it with them: as the PTX ISA says, they wait for it (None if none).
        At a wgmma instruction (members WARPGROUP) they wait for the live threads of their
        warpgroup."""
        if mask is None and self.live.all():
            return None
        active = self.active_array(mask)
        if op.members is WARPGROUP:      # a wgmma: for the whole warpgroup
            wait = active & (self.warpgroup_count(self.live & ~active) != 0)
            return wait if wait.any() else None
        members = np.asarray(op.members(self)).astype(np.uint32)
        missing = self.warp_bits(self.live & ~active) & members
        wait = active & (missing != 0)
        return wait if wait.any() else None

    def _warp_deadlock(self):
        """Every lane still running waits at a shfl/vote (or threads at a wgmma) for lanes that
        cannot come: they wait at another instruction or a barrier, or skipped this one."""
        lane = int(np.argmax(self.warp_waiting))
        op = self.kernel.code[int(self.pc[lane])]
        if op.members is WARPGROUP:
            exited = self.warpgroup_count(~self.live)[lane] != 0
            why = ("a thread of its warpgroup has exited instead of executing it with this thread"
                   if exited else "threads of its warpgroup are live but never execute it with "
                   "this thread") + "; all 128 threads of a warpgroup must execute it together"
            raise SimulatorError(f"{op.where}: `{op.ins.text}`: {why}; {self.describe(lane)}")
        members = np.broadcast_to(np.asarray(op.members(self)).astype(np.uint32), (self.n,))[lane]
        exited = int(self.warp_bits(~self.live)[lane]) & int(members)
        if exited:     # they were live when this lane arrived
            first = (exited & -exited).bit_length() - 1
            why = (f"lane {first} of the warp, named in the member mask, has exited (a `return` "
                   f"before the call, or a branch that skipped it) instead of executing it with "
                   f"this lane; every lane of the warp must make a warp call together")
        else:
            why = "lanes named in the member mask are live but never execute it with this lane"
        raise SimulatorError(f"{op.where}: `{op.ins.text}`: {why}; {self.describe(lane)}")

    def _release_barrier(self):
        """No thread can run and some wait: release every block whose threads all wait at a
        block barrier (bar.sync); one where some wait while the others have exited, or (with
        cluster waits) where nothing can be released, can never go on."""
        if self.cluster_waiting is not None and self.cluster_waiting.any():
            self._release_with_cluster_waits()
            return
        waiting = self.waiting.reshape(self.B, self.T)
        complete = waiting.all(axis=1)
        stuck = waiting.any(axis=1) & ~complete
        if stuck.any():
            self._stuck_barrier(int(np.argmax(stuck)), waiting)
        self._release_blocks(complete)

    def _stuck_barrier(self, b: int, waiting):
        lane = b * self.T + int(np.argmax(waiting[b]))
        exited = int((~self.live.reshape(self.B, self.T)[b]).sum())
        where = self.kernel.code[int(self.pc[lane])].where
        raise SimulatorError(f"{where}: barrier can never complete: {int(waiting[b].sum())} of "
                             f"{self.T} threads wait and {exited} have exited; {self.describe(lane)}")

    def _barrier_released(self, blocks, cluster: bool = False):
        """A block barrier released these blocks (bool per block of the batch), or (`cluster`)
        a cluster barrier phase completed for them: a wgmma's operands waited for are free."""
        if self.wgmma_reads is not None:
            self.wgmma_reads.release(blocks)

    # the cluster barrier: each thread counts its arrivals and its completed waits. Phase k of
    # a cluster completes when every live thread of it has arrived k times (exited threads
    # count as arrived); a thread's j-th wait completes once phase j has. A wait that cannot
    # complete yet makes its thread wait (in `waiting` and `cluster_waiting`), until an arrival
    # or an exit completes the phase (_cluster_update).
    def _cluster_arrive(self, op: _Op, mask) -> bool:
        active = self.active_array(mask)
        again = active & (self.arrivals > self.waits)
        if again.any():
            lane = int(np.argmax(again))
            raise SimulatorError(
                f"{op.where}: `{op.ins.text}`: this thread arrives at the cluster barrier again "
                f"without having waited (barrier.cluster.wait) for its previous arrival; every "
                f"arrive must be followed by a wait before the next; {self.describe(lane)}")
        self.arrivals[active] += 1
        return self._cluster_update()

    def _cluster_wait(self, op: _Op, cur: int, group, mask) -> bool:
        """barrier.cluster.wait: the threads whose phase has completed go on; the others wait
        (True: the group stops here)."""
        active = self.active_array(mask)
        early = active & (self.arrivals <= self.waits)
        if early.any():
            lane = int(np.argmax(early))
            raise SimulatorError(
                f"{op.where}: `{op.ins.text}`: this thread waits at the cluster barrier without "
                f"having arrived there (barrier.cluster.arrive) since its last wait; "
                f"{self.describe(lane)}")
        ready = active & (self.waits < self.phases[self.clusters])
        self.waits[ready] += 1
        block = active & ~ready
        if not block.any():
            return False
        self.waiting |= block
        self.cluster_waiting |= block
        self.pc[block] = cur
        rest = ~block if group is None else group & ~block
        self.pc[rest] = cur + 1
        return True

    def _cluster_update(self) -> bool:
        """Complete the cluster barrier phases whose live threads have all arrived, and release
        the waits they complete; True if some thread was released."""
        per = self.launch.cluster_size * self.T
        least = np.where(self.live, self.arrivals, np.iinfo(np.int64).max).reshape(-1, per).min(axis=1)
        done = least > self.phases
        if done.any():
            self.phases = np.maximum(self.phases, least)
            self.releases += 1
            self._barrier_released(np.repeat(done, self.launch.cluster_size), cluster=True)
        cw = self.cluster_waiting
        if not cw.any():
            return False
        ready = cw & (self.waits < self.phases[self.clusters])
        if not ready.any():
            return False
        self.waits[ready] += 1
        cw &= ~ready
        self.waiting &= ~ready
        self.pc[ready] += 1
        self.releases += 1
        return True

    def _release_with_cluster_waits(self):
        """_release_barrier while threads wait at the cluster barrier (none of which can go on:
        _cluster_update came first): release the blocks whose threads all wait at a block
        barrier, else nothing ever can be."""
        at_block = self.waiting & ~self.cluster_waiting
        waiting = at_block.reshape(self.B, self.T)
        complete = waiting.all(axis=1)
        gone = (waiting | ~self.live.reshape(self.B, self.T)).all(axis=1)
        stuck = waiting.any(axis=1) & ~complete & gone
        if stuck.any():
            self._stuck_barrier(int(np.argmax(stuck)), waiting)
        if not complete.any():
            self._cluster_deadlock()
        self._release_blocks(complete)

    def _release_whole_blocks(self) -> bool:
        """Release the blocks whose threads all wait at a block barrier (not at the cluster
        barrier); False if there are none."""
        at_block = self.waiting if self.cluster_waiting is None else \
            self.waiting & ~self.cluster_waiting
        complete = at_block.reshape(self.B, self.T).all(axis=1)
        if not complete.any():
            return False
        self._release_blocks(complete)
        return True

    def _release_blocks(self, complete):
        """Release the block barrier of these blocks (bool per block), all of whose threads
        wait there."""
        self._barrier_released(complete)
        released = np.repeat(complete, self.T)
        for pc in np.unique(self.pc[released]).tolist():
            op = self.kernel.code[pc]
            if op.reduce is not None:
                op.reduce(self, released & (self.pc == pc))
        self.pc[released] += 1
        self.waiting &= ~released

    def _cluster_deadlock(self):
        """Threads wait at the cluster barrier, the others at block barriers (bar.sync) that
        cannot complete either: say who has not arrived."""
        need = np.where(self.cluster_waiting, self.waits + 1, np.iinfo(np.int64).max)
        lane = int(np.argmin(need))     # of the earliest phase waited for
        per = self.launch.cluster_size * self.T
        first = lane // per * per
        missing = self.live[first:first + per] & (self.arrivals[first:first + per] < need[lane])
        where = self.kernel.code[int(self.pc[lane])].where
        count = int(missing.sum())
        other = first + int(np.argmax(missing))
        raise SimulatorError(
            f"{where}: cluster barrier can never complete: {count} of {per} threads of the "
            f"cluster have not arrived (they wait at a block barrier that the threads of their "
            f"block waiting at the cluster barrier never reach: {self.describe(other)} at "
            f"{self.kernel.code[int(self.pc[other])].where}); {self.describe(lane)}")


def _polls(ins: Instr) -> bool:
    """Whether an instruction can see another thread's store: what a spin-wait loops on."""
    parts = ins.parts
    return (parts[0] == "atom"
            or (parts[0] == "ld" and not {"volatile", "relaxed", "acquire"}.isdisjoint(parts))
            or (parts[0] == "mbarrier" and parts[1] in ("test_wait", "try_wait")))


def _loop_weights(kernel: _Kernel, poll_weight: int) -> list[int]:
    """Per pc, the weight of branching backward there (0 where it cannot): `poll_weight` when
    some instruction from the target to the branch polls memory, else 1. Cached per kernel."""
    cached = getattr(kernel, "_loop_weights", None)
    if cached is not None and cached[0] == poll_weight:
        return cached[1]
    code = kernel.code
    polls = np.cumsum([0] + [op.ins is not None and _polls(op.ins) for op in code])
    weights = [0] * len(code)
    for pc, op in enumerate(code):
        if op.kind == BRA and op.target <= pc:
            weights[pc] = poll_weight if polls[pc + 1] > polls[op.target] else 1
    kernel._loop_weights = (poll_weight, weights)
    return weights


class _HangCheck:
    """Detects a batch that can never finish: at round ends (every runnable thread has yielded)
    with no thread exited and no barrier released since the previous ones (but block barriers
    released at round ends: _Batch._new_round), from the 4th such round on at powers of two, it
    compares the batch's state with the next round's (registers and pcs first, then all of memory
    too). The scheduler is deterministic, so an identical state repeats forever.

    A state can keep changing while nothing but those round-end releases happens: a thread
    spins on what nobody sets while another block goes round a loop through a barrier with a
    counter. So it also counts the rounds that ended in such a release, and at `bound` of them,
    then at every power of two, takes the threads that spun with the same pc and the same
    registers at that round and at the half of it (_Batch._still) to wait forever."""

    START = 4

    def __init__(self, bound: int = 1 << 62):
        self.mark, self.rounds, self.snap, self.at = None, 0, None, 0
        self.bound, self.barrier_rounds, self.spinners = bound, 0, None

    def round(self, batch: "_Batch"):
        mark = (int(batch.live.sum()), batch.releases)
        if mark != self.mark:
            self.mark, self.rounds, self.snap = mark, 0, None
            self.barrier_rounds, self.spinners = 0, None
            return
        if batch.round_released is not None:
            self.barrier_rounds += 1
            n = self.barrier_rounds
            if 2 * n >= self.bound and n & (n - 1) == 0:
                if self.spinners is not None:
                    stuck = batch._still(self.spinners)
                    if stuck.any():
                        batch._hang_error(stuck, n)
                self.spinners = batch._spinners()
        self.rounds += 1
        r = self.rounds
        if self.snap is not None and r == self.at + 1:
            if batch._same_state(self.snap):
                if self.snap[-1] is not None:
                    batch._hang_error()
                self.snap, self.at = batch._state(memory=True), r
                return
            self.snap = None
        if r >= self.START and r & (r - 1) == 0:
            self.snap, self.at = batch._state(memory=False), r


# ---- shared-memory race check (racecheck=True) -------------------------------------------------

_NOW = {"load": "reads", "store": "writes", "atomic": "atomically updates",
        "cas": "atomically updates", "mbarrier": "signals an mbarrier in",
        "sload": "reads", "sstore": "writes"}
_EARLIER = {"load": "read", "store": "wrote", "atomic": "atomically updated",
            "cas": "atomically updated", "sload": "read", "sstore": "wrote"}
# The earlier kinds of access, by other threads in the same barrier interval, that each kind
# races with. A plain load and an atom.cas do not: a compare-and-swap loop (ptxpy's for the
# atomics PTX lacks, CUDA's atomicCAS idiom) seeds its first try with a plain load, and a
# stale value only makes that try fail.
_CONFLICTS = {"load": ("store", "atomic"), "store": ("store", "load", "atomic", "cas"),
              "atomic": ("store", "load"), "cas": ("store",)}


class _SharedRaces:
    """Per byte of a batch's shared memory, which threads (linear index within the block, -1
    for none) accessed it since their block's last barrier, each with its warp's `syncwarp`
    epoch at the access: the plain writer (a second unordered one is a race), and for plain
    reads, atomics and compare-and-swaps two slots (_record_accessors says what they keep).

    Two accesses by threads of one warp are ordered when the warp made a `bar.warp.sync` of all
    its lanes between them (its epoch moved on); accesses by different warps only by a barrier.

    With clusters of several CTAs, `across` keeps per byte the same records over the accesses
    of every CTA of the cluster since the cluster's last barrier phase, each thread as
    rank * T + its index in its block: those of threads of other CTAs than the byte's
    (through .shared::cluster) race with those of the byte's CTA and of other CTAs, until a
    cluster barrier phase completes or a phase of an mbarrier of the cluster that a thread of
    another CTA arrived on (_cluster_access)."""
    BYTES_PER_BYTE = 42     # seven (int16 thread, int32 epoch) records
    CLUSTER_BYTES_PER_BYTE = 16     # and with clusters, seven int16 threads and a scratch

    def __init__(self, batch: _Batch):
        self.batch, self.T = batch, batch.T
        self.pad = batch.launch.shared_pad
        self.warps_per_block = -(-self.T // 32)
        self.epoch = np.zeros(batch.B * self.warps_per_block, np.int32)
        size = batch.shared.size

        def slot():
            return np.full(size, -1, np.int16), np.zeros(size, np.int32)
        self.seen = {"store": (slot(),), "load": (slot(), slot()), "atomic": (slot(), slot()),
                     "cas": (slot(), slot())}
        self.csize = getattr(batch.launch, "cluster_size", 1)
        self.across = None
        if self.csize > 1:
            def ids():
                return np.full(size, -1, np.int16)
            self.across = {"store": (ids(),), "load": (ids(), ids()), "atomic": (ids(), ids()),
                           "cas": (ids(), ids())}
            # per block: whether threads of other CTAs accessed its bytes since then
            self.touched = np.zeros(batch.B, bool)
            self.recorded = set()      # the kinds of access ever recorded there
            self.scratch = ids()

    def release(self, blocks):
        """A barrier released these blocks (bool per block of the batch): a new interval."""
        self._clear(self.seen.values(), blocks)

    def release_cluster(self, blocks):
        """These blocks' clusters (bool per block of the batch, whole clusters) passed a cluster
        barrier phase or an mbarrier phase a thread of another CTA arrived on: their accesses
        of each other's shared memory are ordered."""
        if self.across is not None:
            self._clear(self.across.values(), blocks)
            self.touched[blocks] = False

    def _clear(self, kinds, blocks):
        end = self.batch.B * self.pad
        for slots in kinds if end else ():
            for ids in slots:
                if isinstance(ids, tuple):
                    ids = ids[0]
                ids[:end].reshape(self.batch.B, self.pad)[blocks] = -1

    def landed(self, off, lanes, size: int, ins):
        """A bulk copy's bytes landing at its mbarrier's phase completion: checked as its
        thread's store, then forgotten as a store, because the threads that read them after
        waiting for that phase are ordered after the copy (the wait orders them as a barrier
        would; a read by a thread that did not wait is not caught)."""
        self.access("store", off, lanes, size, ins)
        ids, _ = self.seen["store"][0]
        ids[(off[:, None] + np.arange(size)).reshape(-1)] = -1

    def warp_synced(self, warps):
        """These warps (bool per warp of the batch) made a bar.warp.sync of all their lanes."""
        self.epoch[warps] += 1

    def access(self, what: str, off, lanes, size: int, ins, order=None):
        """Check, then record, one instruction's shared accesses: `size` bytes from byte `off`
        of the batch's shared buffer for each lane (`order` is _OrderedRaces's)."""
        byte = off[:, None] + np.arange(size)
        lanes = np.asarray(lanes)
        tid = (lanes % self.T).astype(np.int16)[:, None]
        epoch = self.epoch[(lanes // self.T) * self.warps_per_block + tid[:, 0] // 32][:, None]
        races = []
        for earlier in _CONFLICTS[what]:
            other = self._other(earlier, byte, tid, epoch)
            bad = (other >= 0).any(axis=1)
            if bad.any():
                races.append((int(np.argmax(bad)), earlier, other))
        if races:
            self._race(what, min(races, key=lambda race: race[0]), off, lanes, size, ins)
        shape = byte.shape
        byte, tid, epoch = (byte.reshape(-1), np.broadcast_to(tid, shape).reshape(-1),
                            np.broadcast_to(epoch, shape).reshape(-1))
        if what == "store":
            self._same_instruction_stores(byte.reshape(shape), off, lanes, size, ins)
            ids, epochs = self.seen["store"][0]
            ids[byte], epochs[byte] = tid, epoch
        else:
            self._record_accessors(self.seen[what], byte, tid, epoch)
        if self.across is not None:
            self._cluster_access(what, off, lanes, size, ins)

    def remote(self, what: str, off, lanes, size: int, ins, order=None):
        """Accesses of other CTAs' shared memory (.shared::cluster): checked against those of
        threads of other CTAs than each lane's since the cluster's last barrier phase."""
        self._cluster_access(what, off, np.asarray(lanes), size, ins, remote=True)

    def _cluster_access(self, what: str, off, lanes, size: int, ins, remote: bool = False):
        """Check, then record, one instruction's accesses in the cluster's records (`across`):
        one races with an earlier access of a kind it conflicts with (_CONFLICTS) by a thread of
        another CTA, and a store with a store of a lane of another CTA in the same instruction.
        `remote`: of other CTAs' shared memory, else each lane's own CTA's: those need no check
        in a block whose bytes no other CTA accessed since the cluster's last barrier phase."""
        T, span = self.T, self.csize * self.T
        byte = off[:, None] + np.arange(size)
        who = (lanes % span).astype(np.int16)[:, None]     # rank * T + thread
        slots = self.across[what]
        first = slots[0]
        if not remote and not self.touched[off // self.pad].any():
            # only the owners' threads have accessed these bytes: one of them suffices
            first[byte] = who
            self.recorded.add(what)
            return
        rank = who // T
        found = None
        for earlier in _CONFLICTS[what]:
            if earlier not in self.recorded:
                continue
            for ids in self.across[earlier]:
                o = ids[byte]
                other = np.where((o >= 0) & (o // T != rank), o, -1)
                bad = (other >= 0).any(axis=1)
                if bad.any():
                    i = int(np.argmax(bad))
                    if found is None or i < found[0]:
                        found = (i, earlier, other)
        if remote and what == "store" and found is None:
            found = self._cross_cta_stores(byte, who, rank, self.scratch)
        if found is not None:
            self._cluster_race(what, found, off, lanes, size, ins)
        if remote:
            self.touched[off // self.pad] = True
        self.recorded.add(what)
        byte = byte.reshape(-1)
        who = np.broadcast_to(who, (lanes.size, size)).reshape(-1)
        if len(slots) == 1:          # the store: the newest writer
            first[byte] = who
            return
        # reads, atomics: the first accessor, and one of another CTA (then every later
        # access by any CTA races with one of them); of lanes of several CTAs on one byte, any
        # one is first, and any one of another CTA than its the second
        second = slots[1]
        a = first[byte]
        first[byte] = np.where(a >= 0, a, who)
        a = first[byte]
        second[byte] = np.where((second[byte] < 0) & (a // T != who // T), who, second[byte])

    @staticmethod
    def _cross_cta_stores(byte, who, rank, scratch):
        """Lanes of one store of other CTAs' shared memory that write the same byte from
        different CTAs: (the lane of the higher rank, "store", per lane the other thread)."""
        lanes, size = byte.shape
        flat = byte.reshape(-1)
        ranks = np.broadcast_to(rank, byte.shape).reshape(-1)
        scratch[flat] = ranks          # (a byte of lanes of two CTAs: one rank wins)
        if (scratch[flat] == ranks).all():
            return None
        order = np.lexsort((ranks, flat))
        clash = np.flatnonzero((flat[order][1:] == flat[order][:-1])
                               & (ranks[order][1:] != ranks[order][:-1]))
        if clash.size == 0:
            return None
        later, earlier = order[clash + 1] // size, order[clash] // size
        i = int(later.min())
        other = np.full(byte.shape, -1, np.int64)
        other[i, 0] = int(who[int(earlier[np.argmax(later == i)]), 0])
        return i, "store", other

    def _cluster_race(self, what: str, found, off, lanes, size: int, ins):
        i, earlier, other = found
        batch, T = self.batch, self.T
        lane = int(lanes[i])
        who = int(other[i][np.argmax(other[i] >= 0)])
        block = lane // T
        owner = int(off[i]) // self.pad
        offset = int(off[i]) - owner * self.pad
        first = block - block % self.csize       # the cluster's first block in the batch
        raise SimulatorError(
            f"{batch.kernel.where(ins)}: shared memory race: thread "
            f"{batch.thread_index(lane % T)} {_NOW[what]} {size} byte{'s' * (size != 1)} at "
            f"shared offset {offset:#x} of block {batch.block_index(owner)} that thread "
            f"{batch.thread_index(who % T)} of block {batch.block_index(first + who // T)} "
            f"{_EARLIER[earlier]} since the last cluster barrier; block {batch.block_index(block)}")

    def _other(self, kind: str, byte, tid, epoch):
        """Per lane and byte: a thread other than the lane's, not ordered before it by a
        `syncwarp` of their warp, that made a `kind` access, or -1."""
        other = None
        for ids, epochs in self.seen[kind]:
            o = ids[byte]
            ordered = (o // 32 == tid // 32) & (epochs[byte] < epoch)
            found = np.where((o != tid) & ~ordered, o, -1)
            other = found if other is None else np.where(other >= 0, other, found)
        return other

    @staticmethod
    def _record_accessors(slots, byte, tid, epoch):
        """Record reads (or atomics) in two slots per byte, so that for any later access the
        slots name an unordered other thread if any access since the barrier was one:
        - once threads of two warps have made the access, the slots hold one of each, and every
          later access by anyone races with one of them (an absorbing state);
        - while one warp has, they hold up to two distinct threads of its newest epoch (older
          ones are ordered before all its later accesses and are dropped)."""
        (a, ea), (b, eb) = slots
        order = np.argsort(byte, kind="stable")
        byte, tid, epoch = byte[order], tid[order], epoch[order]
        ub, starts = np.unique(byte, return_index=True)
        starts_here = np.zeros(byte.size, np.int64)
        starts_here[starts] = 1
        group = np.cumsum(starts_here) - 1
        t0, e0 = tid[starts], epoch[starts]
        w0 = t0 // 32
        elsewhere = tid // 32 != w0[group]
        other_warp = _first_per_group(group, elsewhere, tid, ub.size)
        other_epoch = _first_per_group(group, elsewhere, epoch, ub.size)
        second = _first_per_group(group, (tid // 32 == w0[group]) & (tid != t0[group]), tid,
                                  ub.size)
        ta, tb, old_ea, old_eb = a[ub], b[ub], ea[ub], eb[ub]
        two_warps = (ta >= 0) & (tb >= 0) & (ta // 32 != tb // 32)
        other_before = (ta >= 0) & (ta // 32 != w0) & ~two_warps
        live_a = (ta >= 0) & (ta // 32 == w0) & (old_ea == e0) & (ta != t0)
        live_b = (tb >= 0) & (tb // 32 == w0) & (old_eb == e0) & (tb != t0)
        same_warp_b = np.where(second >= 0, second, np.where(live_a, ta, np.where(live_b, tb, -1)))
        new_a = np.where(two_warps | other_before, ta, t0)
        new_ea = np.where(two_warps | other_before, old_ea, e0)
        new_b = np.where(other_warp >= 0, other_warp,
                         np.where(two_warps, tb, np.where(other_before, t0, same_warp_b)))
        new_eb = np.where(other_warp >= 0, other_epoch, np.where(two_warps, old_eb, e0))
        new_a = np.where(other_warp >= 0, t0, new_a)
        new_ea = np.where(other_warp >= 0, e0, new_ea)
        a[ub], ea[ub], b[ub], eb[ub] = new_a, new_ea, new_b, new_eb

    def _same_instruction_stores(self, byte, off, lanes, size: int, ins):
        """Two lanes of one store instruction that write the same byte (their threads are not
        ordered): a write-write race, reported for the later lane."""
        flat = byte.reshape(-1)
        order = np.argsort(flat, kind="stable")
        dup = np.flatnonzero(flat[order][1:] == flat[order][:-1])
        if dup.size == 0:
            return
        later = order[dup + 1] // size
        i = int(later.min())
        earlier = int(order[dup[np.argmax(later == i)]] // size)
        self._report(i, off, lanes, size, ins, "store",
                     f"that thread {self.batch.thread_index(int(lanes[earlier]) % self.T)} "
                     "also writes in the same instruction")

    def _race(self, what: str, race, off, lanes, size: int, ins):
        """Report the race of the first lane with one: (lane index, earlier kind, other ids)."""
        i, earlier, other = race
        who = int(other[i][np.argmax(other[i] >= 0)])
        self._report(i, off, lanes, size, ins, what,
                     f"that thread {self.batch.thread_index(who)} {_EARLIER[earlier]} "
                     "since the last barrier")

    def _report(self, i: int, off, lanes, size: int, ins, what: str, clause: str):
        lane, batch = int(lanes[i]), self.batch
        block = lane // self.T
        offset = int(off[i]) - block * self.pad
        raise SimulatorError(
            f"{batch.kernel.where(ins)}: shared memory race: thread {batch.thread_index(lane % self.T)} "
            f"{_NOW[what]} {size} byte{'s' * (size != 1)} at shared offset {offset:#x} {clause}; "
            f"block {batch.block_index(block)}")


def _first_per_group(group, where, values, ngroups: int):
    """Per group (sorted group ids): values at the first position where `where`, or -1."""
    out = np.full(ngroups, -1, values.dtype)
    hit = np.flatnonzero(where)
    if hit.size:
        groups, first = np.unique(group[hit], return_index=True)
        out[groups] = values[hit[first]]
    return out


# ---- the race check with memory-ordered accesses -----------------------------------------------

# What each kind of access races with where strong accesses are told apart (_OrderedRaces):
# `sload` is a strong load (ld.relaxed, ld.acquire, ld.volatile), `sstore` a strong store
# (st.relaxed, st.release, st.volatile); the atomics (`atomic`, `cas`) are strong too. Two
# strong accesses never race (the PTX memory model's morally strong pairs); a strong and a
# plain one race as a plain pair would (a plain load and a compare-and-swap still do not).
_ORDERED_CONFLICTS = {
    "load": ("store", "atomic", "sstore"),
    "store": ("store", "load", "atomic", "cas", "sload", "sstore"),
    "atomic": ("store", "load"),
    "cas": ("store",),
    "sload": ("store",),
    "sstore": ("store", "load"),
}
_STRONG_LDST = frozenset({"relaxed", "acquire", "release", "volatile"})
_ATOM_ORDER = frozenset({"relaxed", "acquire", "release", "acq_rel", "cta", "cluster", "gpu",
                         "sys"})
_NOT_SHARED = frozenset({"global", "local", "param", "const", "param::entry", "param::func"})
# a strong access of scope .cta is not morally strong with a thread of another CTA: in the
# cluster's records (_OrderedRaces.across) it counts as this plain access
_CTA_ONLY = {"sload": "load", "sstore": "store", "atomic": "store", "cas": "store"}


class _Order:
    """How a strong shared access orders: `acquire` (it joins what the release whose value it
    reads published), `release` (it publishes what its thread did before it), `wide` (its scope
    holds the whole cluster: .cluster, .gpu, .sys; not .cta)."""
    __slots__ = ("acquire", "release", "wide")

    def __init__(self, acquire: bool, release: bool, wide: bool):
        self.acquire, self.release, self.wide = acquire, release, wide


def _fence_order(ins: Instr):
    """(acquire, release, wide) of a membar/fence that orders memory accesses (membar.level and
    fence.sc / fence.acq_rel, the default, are both; fence.acquire and fence.release one), or
    None (fence.proxy.*, fence.mbarrier_init, fence.op_restrict)."""
    parts = ins.parts
    rest = set(parts[1:])
    if parts[0] not in ("membar", "fence") or {"proxy", "mbarrier_init", "op_restrict"} & rest:
        return None
    if parts[0] == "fence" and "acquire" in rest and "release" not in rest:
        return True, False, "cta" not in rest
    if parts[0] == "fence" and "release" in rest and "acquire" not in rest:
        return False, True, "cta" not in rest
    return True, True, "cta" not in rest


def _memory_order(kernel: "_Kernel") -> tuple[bool, bool]:
    """(ordered, fences) of a kernel, for the race check: `ordered` where it has a strong `ld`
    or `st` (.relaxed, .acquire, .release, .volatile) or an `atom`/`red` with an order or a
    scope on shared memory (or a generic address), an `mbarrier.arrive` (a release; its
    waits acquire), or a fence and an atomic there: its batches
    check with _OrderedRaces, the others with _SharedRaces as before. `fences`: ordered, with
    fences (which the check then follows). Cached per kernel."""
    cached = getattr(kernel, "_memory_order", None)
    if cached is None:
        strong = atomics = fences = False
        for op in kernel.code:
            ins = op.ins
            if ins is None:
                continue
            parts = ins.parts
            rest = set(parts[1:])
            if parts[0] in ("ld", "st"):
                strong |= bool(rest & _STRONG_LDST) and not rest & _NOT_SHARED
            elif parts[0] in ("atom", "red") and "global" not in rest:
                atomics = True
                strong |= bool(rest & _ATOM_ORDER)
            elif parts[0] in ("membar", "fence"):
                fences |= _fence_order(ins) is not None
            elif parts[0] == "mbarrier" and parts[1] == "arrive":
                strong = True      # arrivals release, waits acquire (_OrderedRaces)
        ordered = strong or (fences and atomics)
        cached = kernel._memory_order = (ordered, ordered and fences)
    return cached


class _Records:
    """One kind of access, per byte: up to three accessors (ta, ca), (tb, cb), (tc, cc) as
    (thread, its clock at the access; thread -1 for none) of which none is ordered before a
    later access of the same kind, or, once more have made it, two of them and in c a summary
    of the others: tc = -2 - one of them, cc their warp's `syncwarp` epoch at the latest (in
    `seen`; -1 where they are of several warps) or their CTA's rank (in `across`; where they are
    of several CTAs, -2 - one of another CTA than tc's)."""
    __slots__ = ("ta", "ca", "tb", "cb", "tc", "cc")

    def __init__(self, size: int):
        self.ta, self.tb, self.tc = (np.full(size, -1, np.int16) for _ in range(3))
        self.ca, self.cb, self.cc = (np.zeros(size, np.int32) for _ in range(3))

    def clear(self, end: int, B: int, pad: int, blocks):
        for ids in (self.ta, self.tb, self.tc) if end else ():
            ids[:end].reshape(B, pad)[blocks] = -1

    def forget(self, byte):
        self.ta[byte] = self.tb[byte] = self.tc[byte] = -1


class _OrderedRaces(_SharedRaces):
    """The race check of a kernel with strong accesses of shared memory (_memory_order): it
    tells them apart (_ORDERED_CONFLICTS) and follows the synchronisation of the PTX memory
    model through shared memory, as happens-before between the accesses of the threads of a
    cluster (one block without clusters):

    - every thread has a clock (`clk`) that its releases, `syncwarp`s and barriers move on, and
      each record keeps the accessing thread's clock;
    - `vc[lane, column]`, a vector clock per thread over the cluster's threads (column rank *
      T + thread), holds for each other thread the clock up to which that thread's accesses
      happen before the lane's next one: it grows when the lane's acquire reads what a
      release wrote (or a relaxed read then an acquire fence: `ac_own`, `ac_far`), and at a
      `syncwarp` (its warp) or barrier (its block) by the knowledge the others had gained;
    - a release (st.release, an atom with .release / .acq_rel, or a fence before a strong
      write: `rc_id`) publishes its thread's knowledge, its own clock and those its last
      barrier and `syncwarp` ordered (`bar_floor`, `warp_floor`), in a table row that the
      written bytes name (`rel_id`; a plain store names none, an atomic carries the row of the
      write it read on, joined with its own, as the release sequences do);
    - an access is ordered after a recorded one by another thread when the lane knows that
      thread's clock at it (`vc`), or they are lanes of one warp and a `syncwarp` came between
      (`warp_floor`), or (in the cluster's records) threads of one block with a barrier
      between (`bar_floor`).

    A record ordered before a newer access of its kind is dropped (what races with a later
    access races with the newer one too), so three records per kind and byte mostly suffice;
    beyond them the summary in c keeps the check sound, not exact (it orders only through a
    `syncwarp` of their one warp, or in the cluster's records not at all).

    Conservative (may report what is no race; misses none): the mixed-size observation of a
    release (a read of bytes that different writes left is no acquire of any), several lanes
    of one atomic instruction on one address (each reads what was there before the
    instruction; a compare-and-swap of several lanes ends a release sequence), what a
    fence.sc orders beyond fence.acq_rel (its order among fence.sc's), synchronisation through
    global memory, and the summaries above."""
    BYTES_PER_BYTE = 6 * 18 + 4         # six kinds of three records, the release row
    CLUSTER_BYTES_PER_BYTE = 6 * 18 + 2    # and six more across CTAs, a scratch
    KINDS = ("store", "load", "atomic", "cas", "sload", "sstore")
    TABLE_ROWS = 64       # release rows at first (the table grows, and drops unnamed rows)

    def __init__(self, batch: _Batch, fences: bool):
        self.batch, self.T = batch, batch.T
        T = self.T
        self.pad = batch.launch.shared_pad
        self.warps_per_block = -(-T // 32)
        self.csize = getattr(batch.launch, "cluster_size", 1)
        n, size = batch.B * T, batch.shared.size
        self.C = C = self.csize * T
        self.epoch = np.zeros(batch.B * self.warps_per_block, np.int32)
        lane = np.arange(n)
        self.lane_block, self.lane_tid = lane // T, lane % T
        self.lane_col = (self.lane_block % self.csize) * T + self.lane_tid
        self.lane_warp = self.lane_block * self.warps_per_block + self.lane_tid // 32
        self.clk = np.ones(n, np.int32)
        self.vc = np.zeros((n, C), np.int32)
        self.warp_floor = np.zeros(n, np.int32)
        self.bar_floor = np.zeros(n, np.int32)
        self.dirty_w = np.zeros(n, bool)     # vc grew since the warp's last syncwarp
        self.dirty_b = np.zeros(n, bool)     # since the block's last barrier
        self.ac_own = np.zeros((n, C), np.int32) if fences else None
        self.ac_far = np.zeros((n, C), np.int32) if fences and self.csize > 1 else None
        self.rc_id = np.zeros(n, np.int32)
        self.rel_id = np.zeros(size, np.int32)
        rows = self.TABLE_ROWS
        self.tvec = np.zeros((rows, C), np.int32)    # row 0: nothing published
        self.tblk = np.full(rows, -2, np.int64)      # the releases' block (-1: several)
        self.twide = np.zeros(rows, bool)            # all of them of a scope beyond .cta
        self.tnext = 1
        self.pending = None       # a compare-and-swap's release row, until its result shows
        self.arriving = {}        # per mbarrier: what its current phase's arrivals published
        self.phase_done = {}      # and what those of its last completed phase did
        self.orders = {}
        self.seen = {kind: _Records(size) for kind in self.KINDS}
        self.recorded = set()
        self.across = None
        if self.csize > 1:
            self.across = {kind: _Records(size) for kind in self.KINDS}
            self.across_recorded = set()
            self.touched = np.zeros(batch.B, bool)
            self.scratch = np.full(size, -1, np.int16)

    @classmethod
    def block_bytes(cls, launch, fences: bool) -> int:
        """The state per block: the records, the vector clocks (and those of the relaxed reads
        an acquire fence would join) and room for the release rows."""
        csize = launch.cluster_size
        per_byte = cls.BYTES_PER_BYTE + (cls.CLUSTER_BYTES_PER_BYTE if csize > 1 else 0)
        clocks = 4 * launch.T * csize * launch.T * (3 + (2 if fences else 0))
        return per_byte * max(1, launch.shared_pad) + clocks

    def classify(self, what: str, ins):
        """(kind, _Order or None) of a shared access by `ins` (`what`: load, store, atomic)."""
        found = self.orders.get(id(ins))
        if found is None:
            rest = set(ins.parts[1:])
            wide = "cta" not in rest
            if what == "atomic":
                found = ("cas" if "cas" in rest else "atomic",
                         _Order(bool(rest & {"acquire", "acq_rel"}),
                                bool(rest & {"release", "acq_rel"}), wide))
            elif rest & _STRONG_LDST:
                found = ("sload" if what == "load" else "sstore",
                         _Order("acquire" in rest, "release" in rest, wide))
            else:
                found = (what, None)
            self.orders[id(ins)] = found
        return found

    # barriers
    def release(self, blocks):
        """A barrier released these blocks: a new interval; each thread's clock moves on past
        its `bar_floor`, and every thread of the block gets what any of them had learnt."""
        self._clear_blocks(self.seen, blocks)
        lanes = np.flatnonzero(np.repeat(blocks, self.T))
        self.bar_floor[lanes] = self.warp_floor[lanes] = self.clk[lanes]
        self.clk[lanes] += 1
        dirty = lanes[self.dirty_b[lanes]]
        for b in np.unique(self.lane_block[dirty]).tolist():
            rows = slice(b * self.T, (b + 1) * self.T)
            learnt = self.vc[dirty[self.lane_block[dirty] == b]].max(axis=0)
            np.maximum(self.vc[rows], learnt, out=self.vc[rows])
        self.dirty_b[lanes] = self.dirty_w[lanes] = False

    # mbarriers: an arrive is a release into its phase, a wait that sees the phase complete
    # an acquire of what every arrival of the phase published
    def mbarrier_arrived(self, key: int, lanes):
        """Arrivals of these lanes on the barrier at `key`, in its current phase."""
        self._settle()
        row = self._export(lanes).max(axis=0)
        phase = self.arriving.get(key)
        self.arriving[key] = row if phase is None else np.maximum(phase, row)
        self.clk[lanes] += 1

    def mbarrier_init(self, key: int):
        self.arriving.pop(key, None)
        self.phase_done.pop(key, None)

    def mbarrier_completed(self, key: int):
        """The barrier's current phase completed: what its arrivals published is what a wait
        for it acquires (until the next phase completes: a wait by parity sees only the last)."""
        self.phase_done[key] = self.arriving.pop(key, None)

    def mbarrier_waited(self, keys, lanes):
        """These lanes' waits saw the last completed phase of their barriers (`keys`)."""
        for key in np.unique(keys).tolist():
            row = self.phase_done.get(key)
            if row is not None:
                mine = lanes[keys == key]
                self.vc[mine] = np.maximum(self.vc[mine], row)
                self.dirty_w[mine] = self.dirty_b[mine] = True

    def release_cluster(self, blocks):
        if self.across is not None:
            self._clear_blocks(self.across, blocks)
            self.touched[blocks] = False

    def _clear_blocks(self, records, blocks):
        end = self.batch.B * self.pad
        for rec in records.values():
            rec.clear(end, self.batch.B, self.pad, blocks)

    def warp_synced(self, warps):
        """These warps made a bar.warp.sync of all their lanes: their lanes' clocks move on
        past their `warp_floor`, and every lane gets what any of them had learnt."""
        self.epoch[warps] += 1
        lanes = np.flatnonzero(warps[self.lane_warp])
        self.warp_floor[lanes] = self.clk[lanes]
        self.clk[lanes] += 1
        dirty = lanes[self.dirty_w[lanes]]
        for w in np.unique(self.lane_warp[dirty]).tolist():
            block, first = divmod(w, self.warps_per_block)
            start = block * self.T + first * 32
            rows = slice(start, min(start + 32, (block + 1) * self.T))
            learnt = self.vc[dirty[self.lane_warp[dirty] == w]].max(axis=0)
            np.maximum(self.vc[rows], learnt, out=self.vc[rows])
        self.dirty_w[lanes] = False

    def landed(self, off, lanes, size: int, ins):
        self.access("store", off, lanes, size, ins)
        self.seen["store"].forget((off[:, None] + np.arange(size)).reshape(-1))

    # accesses
    def access(self, what: str, off, lanes, size: int, ins, order=None):
        """Check, then record, one instruction's accesses of each lane's own CTA's shared
        memory, then what they publish or learn (_effects)."""
        self._settle()
        lanes, off = np.asarray(lanes), np.asarray(off)
        byte = off[:, None] + np.arange(size)
        found = None
        for earlier in _ORDERED_CONFLICTS[what]:
            if earlier in self.recorded:
                other = self._unordered(self.seen[earlier], byte, lanes)
                found = self._first(found, other, earlier)
        if found is not None:
            self._race(what, found, off, lanes, size, ins)
        if what == "store":
            self._same_instruction_stores(byte, off, lanes, size, ins)
        who = np.repeat(lanes, size)
        self._record(self.seen[what], byte.reshape(-1), self.lane_tid[who], who,
                     self._before_seen, self._summary_seen)
        self.recorded.add(what)
        if self.across is not None:
            self._across(what, order, off, lanes, size, ins, remote=False)
        self._effects(what, order, byte, off, lanes)

    def remote(self, what: str, off, lanes, size: int, ins, order=None):
        self._settle()
        lanes, off = np.asarray(lanes), np.asarray(off)
        self._across(what, order, off, lanes, size, ins, remote=True)
        self._effects(what, order, off[:, None] + np.arange(size), off, lanes)

    @staticmethod
    def _first(found, other, earlier):
        """The race of the lowest lane so far: (lane index, earlier kind, other threads)."""
        if other is not None:
            bad = (other >= 0).any(axis=1)
            if bad.any():
                i = int(np.argmax(bad))
                if found is None or i < found[0]:
                    return i, earlier, other
        return found

    def _before_seen(self, o, c, tid, lane, byte=None):
        """Whether thread o's access at clock c (of lane's block) is ordered before lane's next:
        its own, known to the lane, or of its warp before a `syncwarp`."""
        o = o.astype(np.int64)
        same_warp = o // 32 == tid // 32
        return ((o == tid) | (self.vc[lane, self.lane_col[lane] - tid + o] >= c)
                | (same_warp & (c <= self.warp_floor[lane - tid + o])))

    def _before_across(self, o, c, col, lane, byte):
        """The same for column o's access, in the cluster's records (through a barrier of their
        block too), where it may be dropped for the lane's: where the lane's thread is of the
        bytes' CTA or of o's (else a later access by a thread of the lane's CTA, which the check
        does not hold against the lane's, would go unchecked against o's)."""
        o, T = o.astype(np.int64), self.T
        other = lane - col + o
        same_block = o // T == col // T
        same_warp = same_block & ((o % T) // 32 == (col % T) // 32)
        owner = (byte // self.pad) % self.csize
        return (((o == col) | (self.vc[lane, o] >= c)
                 | (same_block & (c <= self.bar_floor[other]))
                 | (same_warp & (c <= self.warp_floor[other])))
                & (same_block | (col // T == owner)))

    def _summary_seen(self, t, lanes):
        """(key, value) of threads t entering a summary: their warp, its `syncwarp` epoch."""
        t = t.astype(np.int64)
        return t // 32, self.epoch[self.lane_block[lanes] * self.warps_per_block + t // 32]

    def _summary_across(self, t, lanes):
        t = t.astype(np.int64) // self.T
        return t, t

    def _unordered(self, rec: _Records, byte, lanes):
        """Per lane and byte: a thread of the lane's block whose recorded access is not ordered
        before the lane's, or -1 (None where nothing is recorded)."""
        tid = self.lane_tid[lanes][:, None]
        lane = lanes[:, None]
        out = None
        for t_arr, c_arr, slot in ((rec.ta, rec.ca, 0), (rec.tb, rec.cb, 1), (rec.tc, rec.cc, 2)):
            o = t_arr[byte]
            if slot < 2:
                live = (o >= 0) & (o != tid)
                if not live.any():
                    continue
                c = c_arr[byte]
                bad = live & ~self._before_seen(np.maximum(o, 0), c, tid, lane)
                found = np.where(bad, o, -1)
            else:
                single = (o >= 0) & (o != tid)
                several = o <= -2
                if not (single.any() or several.any()):
                    continue
                c = c_arr[byte]
                rep = np.where(several, -2 - o, o).astype(np.int64)
                bad = single & ~self._before_seen(np.maximum(o, 0), c, tid, lane)
                warp_ok = ((c >= 0) & (rep // 32 == tid // 32)
                           & (self.epoch[self.lane_warp[lanes]][:, None] > c))
                bad |= several & ~warp_ok
                # name another thread than the lane's own where the summary's one is
                ta, tb = rec.ta[byte], rec.tb[byte]
                alt = np.where((ta >= 0) & (ta != tid), ta,
                               np.where((tb >= 0) & (tb != tid), tb, rep))
                found = np.where(bad, np.where(rep != tid, rep, alt), -1)
            out = found if out is None else np.where(out >= 0, out, found)
        return out

    def _unordered_across(self, rec: _Records, byte, lanes):
        """Per lane and byte: a thread of another CTA (rank * T + thread) whose recorded access
        is not ordered before the lane's, or -1 (None where nothing is recorded)."""
        T = self.T
        rank = (self.lane_col[lanes] // T)[:, None]
        lane = lanes[:, None]
        out = None
        for t_arr, c_arr in ((rec.ta, rec.ca), (rec.tb, rec.cb), (rec.tc, rec.cc)):
            o = t_arr[byte]
            live = (o >= 0) & (o // T != rank)
            if not live.any():
                continue
            bad = live & ~(self.vc[lane, np.maximum(o, 0)] >= c_arr[byte])
            found = np.where(bad, o, -1)
            out = found if out is None else np.where(out >= 0, out, found)
        o = rec.tc[byte]
        several = o <= -2
        if several.any():
            c = rec.cc[byte]
            rep = -2 - o.astype(np.int64)
            # of several CTAs: name the one of another CTA than the lane's
            found = np.where(several & ~((c >= 0) & (c == rank)),
                             np.where(rep // T != rank, rep, -2 - c.astype(np.int64)), -1)
            out = found if out is None else np.where(out >= 0, out, found)
        return out

    def _record(self, rec: _Records, byte, who, lanes, before, summary):
        """Record accesses (flat: bytes, the record's thread, lanes). A record ordered before a
        new access of its byte (`before`) is dropped; the ones left and the new ones fill a, b
        and c in that order, and where more than three are left c becomes a summary of the
        third on (`summary`: their key, value); a summary stays one, dropped only where a new
        access is ordered after it (a `syncwarp` of its one warp, in `seen`)."""
        clk = self.clk[lanes]
        order = np.argsort(byte, kind="stable")
        byte, who, lanes, clk = byte[order], who[order], lanes[order], clk[order]
        ub, start, count = np.unique(byte, return_index=True, return_counts=True)
        ng, m = ub.size, byte.size
        g = np.repeat(np.arange(ng), count)
        rank_in = np.arange(m) - start[g]
        ta, ca, tb, cb, tc, cc = (rec.ta[ub], rec.ca[ub], rec.tb[ub], rec.cb[ub], rec.tc[ub],
                                  rec.cc[ub])

        def ordered(live, t, c, fn):
            """Per group: whether the old record (t, c), where live, is before a new access."""
            if not live.any():
                return live
            e = live[g]
            hit = np.zeros(m, bool)
            hit[e] = fn(t[g][e].astype(np.int64), c[g][e], who[e], lanes[e], byte[e])
            return np.bincount(g[hit], minlength=ng) > 0

        keep_a = (ta >= 0) & ~ordered(ta >= 0, ta, ca, before)
        keep_b = (tb >= 0) & ~ordered(tb >= 0, tb, cb, before)
        keep_c = (tc >= 0) & ~ordered(tc >= 0, tc, cc, before)
        several = tc <= -2
        if summary == self._summary_seen:
            def warp_after(rep, c, tid, lane, _byte):
                return ((c >= 0) & (rep // 32 == tid // 32)
                        & (self.epoch[self.lane_warp[lane]] > c))
            keep_s = several & ~ordered(several, -2 - tc.astype(np.int64), cc, warp_after)
        else:
            keep_s = several
        # the records left, in order, then the new accesses
        olds_t = np.stack([ta, tb, tc], axis=1).astype(np.int64)
        olds_c = np.stack([ca, cb, cc], axis=1)
        kept = np.stack([keep_a, keep_b, keep_c], axis=1)
        pick = np.argsort(~kept, axis=1, kind="stable")
        olds_t = np.take_along_axis(olds_t, pick, axis=1)
        olds_c = np.take_along_axis(olds_c, pick, axis=1)
        n_old = kept.sum(axis=1)
        slots_t = np.where(np.arange(3) < n_old[:, None], olds_t, -1)
        slots_c = np.where(np.arange(3) < n_old[:, None], olds_c, 0)
        pos = n_old[g] + rank_in
        new = pos < 3
        slots_t[g[new], pos[new]] = who[new]
        slots_c[g[new], pos[new]] = clk[new]
        total = n_old + count
        over = keep_s | (total > 3)
        new_tc = slots_t[:, 2].copy()
        new_cc = slots_c[:, 2].copy()
        if over.any():
            # the summary: the old one, the third record and the new accesses past it
            block = self.lane_block[lanes[start]]
            rep = np.where(keep_s, -2 - tc.astype(np.int64), slots_t[:, 2])
            third = over & (slots_t[:, 2] >= 0)
            beyond = pos >= 3
            members_t = np.concatenate([slots_t[third, 2], who[beyond].astype(np.int64)])
            members_g = np.concatenate([np.flatnonzero(third), g[beyond]])
            key, value = summary(members_t, self._lane_of_block(block[members_g]))
            rep_key, _ = summary(np.maximum(rep, 0), self._lane_of_block(block))
            lo = np.full(ng, np.iinfo(np.int64).max)
            hi = np.full(ng, np.iinfo(np.int64).min)
            top = np.where(keep_s, cc, -1).astype(np.int64)
            np.minimum.at(lo, members_g, key)
            np.maximum.at(hi, members_g, key)
            np.maximum.at(top, members_g, value)
            mixed = ((lo != np.iinfo(np.int64).max) & ((lo != rep_key) | (hi != rep_key)))
            mixed |= keep_s & (cc < 0)
            several_of = np.full(ng, -1, np.int64)
            if summary == self._summary_across:
                # across: of several CTAs, c keeps -2 - a thread of another CTA than tc's
                apart = np.flatnonzero(key != rep_key[members_g])
                groups, first = np.unique(members_g[apart], return_index=True)
                several_of[groups] = -2 - members_t[apart[first]]
                several_of = np.where(keep_s & (cc <= -2), cc, several_of)
            new_tc = np.where(over, -2 - rep, new_tc)
            new_cc = np.where(over, np.where(mixed, several_of, top), new_cc)
        rec.ta[ub], rec.ca[ub] = slots_t[:, 0], slots_c[:, 0]
        rec.tb[ub], rec.cb[ub] = slots_t[:, 1], slots_c[:, 1]
        rec.tc[ub], rec.cc[ub] = new_tc, new_cc

    def _lane_of_block(self, block):
        """A lane of each of these blocks (what _summary_* read of a lane: its block)."""
        return np.asarray(block, np.int64) * self.T

    def _across(self, what: str, order, off, lanes, size: int, ins, remote: bool):
        """Check, then record, accesses in the cluster's records: each against those of
        threads of other CTAs, where they may be any (`remote`, or a block whose bytes another
        CTA accessed since the cluster's last barrier phase)."""
        kind = _CTA_ONLY.get(what, what) if order is not None and not order.wide else what
        byte = off[:, None] + np.arange(size)
        col = self.lane_col[lanes]
        if remote or self.touched[off // self.pad].any():
            found = None
            for earlier in _ORDERED_CONFLICTS[kind]:
                if earlier in self.across_recorded:
                    other = self._unordered_across(self.across[earlier], byte, lanes)
                    found = self._first(found, other, earlier)
            if remote and kind == "store" and found is None:
                found = self._cross_cta_stores(byte, col.astype(np.int16)[:, None],
                                               (col // self.T)[:, None], self.scratch)
            if found is not None:
                self._cluster_race(kind, found, off, lanes, size, ins)
        if remote:
            self.touched[off // self.pad] = True
        who = np.repeat(lanes, size)
        self._record(self.across[kind], byte.reshape(-1), self.lane_col[who], who,
                     self._before_across, self._summary_across)
        self.across_recorded.add(kind)

    # what the accesses publish and learn
    def _effects(self, what: str, order, byte, off, lanes):
        if order is None:
            if what == "store":
                self.rel_id[byte] = 0      # a plain write ends any release sequence there
            return
        if what == "sload":
            self._observe(byte, lanes, order)
        elif what == "sstore":
            if order.release:
                ids = self._alloc(self._export(lanes), self.lane_block[lanes], order.wide)
            else:
                ids = self._fence_rows(lanes, order.wide)
            self.rel_id[byte] = ids[:, None]
        else:
            self._observe(byte, lanes, order)
            self._rmw(off, lanes, byte.shape[1], order, what == "cas")
        if order.release:
            self.clk[lanes] += 1

    def _observe(self, byte, lanes, order: _Order):
        """A strong read of these bytes: where one release row names them all and its scope
        and the read's make them morally strong, an acquire joins it to the lane's vector
        clock, a relaxed read to what the lane's next acquire fence joins."""
        ids = self.rel_id[byte]
        first = ids[:, 0]
        use = (first != 0) & (ids == first[:, None]).all(axis=1)
        if not use.any():
            return
        lanes, first = lanes[use], first[use]
        own = self.tblk[first] == self.lane_block[lanes]
        far = ~own & self.twide[first] & order.wide
        if order.acquire:
            ok = own | far
            if ok.any():
                lanes = lanes[ok]
                self.vc[lanes] = np.maximum(self.vc[lanes], self.tvec[first[ok]])
                self.dirty_w[lanes] = self.dirty_b[lanes] = True
        elif self.ac_own is not None:
            if own.any():
                mine = lanes[own]
                self.ac_own[mine] = np.maximum(self.ac_own[mine], self.tvec[first[own]])
            if self.ac_far is not None and far.any():
                theirs = lanes[far]
                self.ac_far[theirs] = np.maximum(self.ac_far[theirs], self.tvec[first[far]])

    def _export(self, lanes):
        """What these lanes publish (rows over the cluster's columns): what they know, the
        clocks their last barrier and `syncwarp` ordered, their own clock."""
        T = self.T
        out = self.vc[lanes]
        rows = np.arange(lanes.size)[:, None]
        tid = self.lane_tid[lanes]
        first = (lanes - tid)[:, None]
        base = (self.lane_col[lanes] - tid)[:, None]
        t = np.arange(T)
        out[rows, base + t] = np.maximum(out[rows, base + t], self.bar_floor[first + t])
        w = np.minimum((tid // 32 * 32)[:, None] + np.arange(32), T - 1)
        out[rows, base + w] = np.maximum(out[rows, base + w], self.warp_floor[first + w])
        out[rows[:, 0], self.lane_col[lanes]] = self.clk[lanes]
        return out

    def _fence_rows(self, lanes, wide: bool):
        """The release rows of the lanes' last release fences (0: none), for a strong write
        (one of scope .cta narrows a wider fence's to its CTA)."""
        ids = self.rc_id[lanes]
        narrow = (ids != 0) & self.twide[ids] & (not wide)
        if narrow.any():
            rows = ids[narrow]
            new = self._alloc(self.tvec[rows], self.tblk[rows], False)
            ids = self.rc_id[lanes]       # (_alloc may have renumbered them)
            ids[narrow] = new
        return ids

    def _rmw(self, off, lanes, size: int, order: _Order, cas: bool):
        """The write of an atomic: per address, the release row of the write it read on
        (where the chain of morally strong writes holds), joined with the lanes' own (a
        release's, or their last release fence's for a relaxed one); of a compare-and-swap,
        only once its result shows that it wrote (_settle)."""
        k = lanes.size
        if order.release:
            mine, has = self._export(lanes), np.ones(k, bool)
            mine_wide = np.full(k, order.wide)
        else:
            rows = self._fence_rows(lanes, order.wide)
            has = rows != 0
            mine = self.tvec[rows] if has.any() else None
            mine_wide = self.twide[rows] | ~has
        uoff, inv, count = np.unique(off, return_inverse=True, return_counts=True)
        ng = uoff.size
        words = uoff[:, None] + np.arange(size)
        ids = self.rel_id[words]
        old = np.where((ids == ids[:, :1]).all(axis=1), ids[:, 0], 0)
        block = self.lane_block[lanes]
        lo = np.full(ng, np.iinfo(np.int64).max)
        hi = np.full(ng, -1, np.int64)
        np.minimum.at(lo, inv, block)
        np.maximum.at(hi, inv, block)
        one_block = lo == hi
        linked = one_block | order.wide            # the lanes' writes, one after another
        old_ok = ((old != 0) & linked
                  & ((one_block & (self.tblk[old] == lo)) | (self.twide[old] & order.wide)))
        ours = np.bincount(inv, has, minlength=ng) > 0
        # the chain's block (-1: several) and whether all of it is wide, these writes included
        wide = np.full(ng, order.wide)
        np.logical_and.at(wide, inv, mine_wide)
        wide &= np.where(old_ok, self.twide[old], True)
        blk = np.where(one_block & np.where(old_ok, self.tblk[old] == lo, True), lo, -1)
        # the chain goes on through these writes, carrying only what it did
        through = (old_ok & ~ours & (blk == self.tblk[old]) & (wide == self.twide[old]))
        new_ids = np.zeros(ng, np.int32)
        need = (ours | old_ok) & linked & ~through
        if need.any():
            rows = np.zeros((ng, self.C), np.int32)
            if mine is not None:
                np.maximum.at(rows, inv, mine)
            rows[old_ok] = np.maximum(rows[old_ok], self.tvec[old[old_ok]])
            sel = np.flatnonzero(need)
            new_ids[sel] = self._alloc(rows[sel], blk[sel], wide[sel])
        if cas:
            self.pending = (words, new_ids, through, count, self.batch.shared[words].copy())
        else:
            write = ~through
            self.rel_id[words[write]] = new_ids[write][:, None]

    def _settle(self):
        """A compare-and-swap's write, now that it happened or not: where its bytes changed
        its row (one lane) or none (several: which one wrote is not followed)."""
        if self.pending is None:
            return
        words, new_ids, through, count, before = self.pending
        self.pending = None
        changed = (self.batch.shared[words] != before).any(axis=1)
        write = changed & ~(through & (count == 1))
        self.rel_id[words[write]] = np.where(count == 1, new_ids, 0)[write][:, None]

    def _alloc(self, rows, blk, wide):
        """Table rows for these releases; their ids."""
        k = len(rows)
        if self.tnext + k > len(self.tvec):
            self._compact(k)
        ids = np.arange(self.tnext, self.tnext + k)
        self.tvec[ids], self.tblk[ids], self.twide[ids] = rows, blk, wide
        self.tnext += k
        return ids.astype(np.int32)

    def _compact(self, k: int):
        """Keep the rows some byte or fence still names (renumbered), with room for k more."""
        live = np.unique(np.concatenate([self.rel_id[self.rel_id > 0],
                                         self.rc_id[self.rc_id > 0]]))
        cap = len(self.tvec)
        if 2 * (live.size + 1 + k) > cap:
            cap = max(2 * cap, 2 * (live.size + 1 + k))
        vec = np.zeros((cap, self.C), np.int32)
        blk = np.full(cap, -2, np.int64)
        wide = np.zeros(cap, bool)
        m = live.size
        vec[1:m + 1], blk[1:m + 1] = self.tvec[live], self.tblk[live]
        wide[1:m + 1] = self.twide[live]
        remap = np.zeros(self.tnext, np.int32)
        remap[live] = np.arange(1, m + 1)
        self.rel_id[:] = remap[self.rel_id]
        self.rc_id[:] = remap[self.rc_id]
        self.tvec, self.tblk, self.twide, self.tnext = vec, blk, wide, m + 1

    def fence(self, lanes, acquire: bool, release: bool, wide: bool):
        """membar/fence by these lanes: an acquire fence joins what their relaxed reads saw
        published (by their own CTA, or at any scope beyond .cta by others where it is wide); a
        release fence makes their next strong writes publish what they did before it."""
        self._settle()
        if acquire and self.ac_own is not None:
            learnt = self.ac_own[lanes]
            if wide and self.ac_far is not None:
                learnt = np.maximum(learnt, self.ac_far[lanes])
            self.vc[lanes] = np.maximum(self.vc[lanes], learnt)
            self.dirty_w[lanes] = self.dirty_b[lanes] = True
        if release:
            self.rc_id[lanes] = self._alloc(self._export(lanes), self.lane_block[lanes], wide)
            self.clk[lanes] += 1


class _RacecheckBatch(_Batch):
    """A batch that checks its shared-memory accesses for races between barriers."""

    def __init__(self, launch: _Launch, first_block: int, nblocks: int):
        super().__init__(launch, first_block, nblocks)
        self.ordered, fences = _memory_order(launch.kernel)
        self.races = _OrderedRaces(self, fences) if self.ordered else _SharedRaces(self)

    def locate(self, space: str, addr, lanes, size: int, what: str, ins):
        segs = super().locate(space, addr, lanes, size, what, ins)
        if space in ("shared", "generic", "shared::cluster"):
            for buf, off, sel, _ in segs:
                if buf is self.shared:
                    who = np.arange(self.n) if lanes is None else lanes
                    who = who if sel is None else who[sel]
                    if self.ordered:
                        kind, order = self.races.classify(what, ins)
                    else:
                        kind = "cas" if what == "atomic" and "cas" in ins.parts else what
                        order = None
                    if space == "shared::cluster" and self.launch.cluster_size > 1:
                        own = off // self.launch.shared_pad == who // self.T
                        if not own.all():    # other CTAs' shared memory
                            self.races.remote(kind, off[~own], who[~own], size, ins, order)
                            off, who = off[own], who[own]
                            if not who.size:
                                continue
                    self.races.access(kind, off, who, size, ins, order)
        return segs

    def fenced(self, mask, acquire: bool, release: bool, wide: bool):
        """membar/fence: followed by the race check of a kernel with strong shared accesses."""
        if self.ordered:
            lanes = np.flatnonzero(self.active_array(mask))
            if lanes.size:
                self.races.fence(lanes, acquire, release, wide)

    def _barrier_released(self, blocks, cluster: bool = False):
        """A block barrier, or a completed cluster barrier phase, starts a new interval (the
        latter for the accesses of other CTAs' shared memory too)."""
        super()._barrier_released(blocks, cluster)
        self.races.release(blocks)
        if cluster:
            self.races.release_cluster(blocks)

    def check_converged(self, mask, members, ins):
        """bar.warp.sync: a new epoch for each warp whose every lane makes it (a partial member
        mask orders only some lanes, which the check does not follow: it orders none)."""
        super().check_converged(mask, members, ins)
        t = self.special("%tid_linear")
        warp = (np.arange(self.n) // self.T) * self.races.warps_per_block + t // 32
        named = (np.broadcast_to(np.asarray(members, np.uint32), (self.n,)) >> (t % 32)) & 1
        syncing = self.active_array(mask) & (named == 1)
        count = np.bincount(warp[syncing], minlength=self.races.epoch.size)
        lanes = np.bincount(warp, minlength=self.races.epoch.size)
        self.races.warp_synced((count == lanes) & (count > 0))


def _batching(launch: _Launch, racecheck: bool | None):
    """A launch's batch class and blocks per batch: fewer blocks under the race check, whose
    state takes BYTES_PER_BYTE bytes per byte of shared memory."""
    if racecheck is None:
        racecheck = os.environ.get("PTXPY_SIM_RACECHECK", "").strip().lower() not in (
            "", "0", "false", "no", "off")
    per_batch = max(1, BATCH_THREADS // launch.T)
    if racecheck:
        ordered, fences = _memory_order(launch.kernel)
        if ordered:
            state = _OrderedRaces.block_bytes(launch, fences)
        else:
            per_byte = _SharedRaces.BYTES_PER_BYTE + (
                _SharedRaces.CLUSTER_BYTES_PER_BYTE if launch.cluster_size > 1 else 0)
            state = per_byte * max(1, launch.shared_pad)
        per_batch = max(1, min(per_batch, RACECHECK_BYTES // state))
    cluster = launch.cluster_size      # whole clusters (at least one) a batch
    per_batch = max(cluster, per_batch // cluster * cluster)
    return (_RacecheckBatch if racecheck else _Batch), per_batch


# ---- public API --------------------------------------------------------------------------------

class Module:
    """Parsed and compiled PTX. Compiling checks every instruction: anything the simulator does not
    implement raises SimulatorError here, naming the instruction and its line."""

    def __init__(self, ptx: str):
        self.ptx = parse(ptx)
        self.global_addresses: dict[str, int] = {}
        self._global_layout()
        self.kernels = {name: _Kernel(self, fn) for name, fn in self.ptx.functions.items()
                        if fn.kind == "entry" and fn.defined}

    def _global_layout(self):
        probe = _GlobalMemory()
        for var in self.ptx.globals:
            if var.space in ("global", "const"):
                size = TYPES[var.type].nbytes * var.vec * (var.count or 1) if var.type in TYPES else 0
                self.global_addresses[var.name] = probe.add(size).base

    def place_globals(self, memory: _GlobalMemory):
        """Allocate the module's .global/.const variables, with their initializers."""
        for var in self.ptx.globals:
            if var.space not in ("global", "const"):
                continue
            t = TYPES.get(var.type)
            if t is None or t.kind in ("p", "x"):
                raise SimulatorError(f"PTX line {var.line}: unsupported type .{var.type} of {var.name}")
            count = var.vec * (var.count or 1)
            data = np.zeros(count, t.dtype)
            for i, item in enumerate(var.init or []):
                data[i] = _imm(item, t)
            memory.add(data.nbytes, data.view(np.uint8), label=var.name)

    def where(self, ins: Instr) -> str:
        """The Python (or CUDA) source position of an instruction, else its PTX line."""
        if ins.loc is not None and ins.loc[1] > 0 and ins.loc[0] in self.ptx.files:
            return f"{self.ptx.files[ins.loc[0]]}:{ins.loc[1]}"
        return f"PTX line {ins.line}"

    def run(self, kernel_name: str, grid=1, block=1, args=(), *, dynamic_shared_bytes: int = 0,
            racecheck: bool | None = None):
        """One launch. `racecheck`: check shared memory for races (docs/simulator.md); None
        (the default) takes it from the environment variable PTXPY_SIM_RACECHECK."""
        kernel = self.kernels.get(kernel_name)
        if kernel is None:
            raise SimulatorError(f"no kernel {kernel_name!r} in the module "
                                 f"(kernels: {', '.join(sorted(self.kernels)) or 'none'})")
        grid, block = _dims(grid, "grid"), _dims(block, "block")
        if block[0] * block[1] * block[2] > 1024:
            raise SimulatorError(f"block {block} has more than 1024 threads")
        if not kernel.dynamic_shared and dynamic_shared_bytes:
            raise SimulatorError("dynamic shared memory given, but the kernel declares "
                                 "no extern .shared array")
        if kernel.launch_cluster:
            raise SimulatorError(f"kernel {kernel_name} asks for cluster dimensions given at "
                                 f"launch (.explicitcluster or .maxclusterrank without "
                                 f".reqnctapercluster), which the simulator does not support: "
                                 f"give them with .reqnctapercluster")
        cluster = kernel.cluster
        if any(g % c for g, c in zip(grid, cluster)):
            raise SimulatorError(f"grid ({','.join(map(str, grid))}) is not a whole number of "
                                 f"clusters of ({','.join(map(str, cluster))}) (kernel "
                                 f"{kernel_name}'s .reqnctapercluster)")
        launch = _Launch(kernel, grid, block, list(args), dynamic_shared_bytes)
        blocks = grid[0] * grid[1] * grid[2]
        batch_class, per_batch = _batching(launch, racecheck)
        with np.errstate(all="ignore"):
            for first in range(0, blocks, per_batch):
                batch_class(launch, first, min(per_batch, blocks - first)).run()
        launch.copy_back()


def _dims(value, what: str) -> tuple[int, int, int]:
    dims = (value,) if isinstance(value, (int, np.integer)) else tuple(value)
    if not 1 <= len(dims) <= 3 or any(int(d) < 0 for d in dims):
        raise SimulatorError(f"{what} must be an int or a tuple of 1 to 3 non-negative ints, got {value!r}")
    dims = tuple(int(d) for d in dims) + (1,) * (3 - len(dims))
    return dims


def run_kernel(mod_or_ptx, kernel_name: str, grid=1, block=1, args=(), *,
               dynamic_shared_bytes: int = 0, racecheck: bool | None = None) -> None:
    """Run one kernel launch on the CPU; arrays passed for .u64 parameters are updated in place.
    `racecheck` as for Module.run."""
    module = mod_or_ptx if isinstance(mod_or_ptx, Module) else Module(mod_or_ptx)
    module.run(kernel_name, grid, block, args, dynamic_shared_bytes=dynamic_shared_bytes,
               racecheck=racecheck)
