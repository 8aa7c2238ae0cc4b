"""A reference interpreter of the SSA IR for one thread: the semantic oracle of pass tests.

Values are Python bools, ints and floats of each IR type, with the exact fixed-width semantics of
docs/design.md ("The IR"): integers wrap, `div`/`rem` truncate, floats round to nearest in their
own width (a float of a narrow type is the Python float of its value, see floatbits.py).
Memory is NumPy arrays mapped at fake 64-bit addresses (region k at `k << 32`); NumPy is
imported only when a thread runs. `evaluate` is shared with constant folding (passes/sccp.py),
so folding and interpretation agree by design, and folding never imports NumPy.
"""
from __future__ import annotations

import math
import re

from ptxpy.types import Scalar, i32, u8
from .floatbits import (DEFAULT_NAN, MAX_FINITE, bits_of, fp8_byte, fp8_value, from_bits,
                        int_to_float, next_toward, round_to)
from .ir import Const, Function, Instr, Undef, Value

#: `%lanemask_lt` ... of lane k, as u32 values
LANE_MASK_BITS = {"lanemask_lt": lambda k: (1 << k) - 1, "lanemask_le": lambda k: (2 << k) - 1,
                  "lanemask_eq": lambda k: 1 << k, "lanemask_ge": lambda k: 0xFFFFFFFF & -(1 << k),
                  "lanemask_gt": lambda k: 0xFFFFFFFF & -(2 << k)}


def _byte(word: int, k: int, signed: bool) -> int:
    """Byte k (0: the lowest) of a 32-bit word, signed or not."""
    value = (word >> (8 * k)) & 0xFF
    return value - 256 if signed and value >= 128 else value

class InterpError(Exception):
    """The IR cannot go on: a fault, a trap, or an op that needs other threads."""


class Trap(InterpError):
    pass


# --- scalars ---------------------------------------------------------------------------------
def wrap_int(value: int, t: Scalar) -> int:
    """`value` reduced to the range of integer type `t` (two's complement wrap-around)."""
    v = value & ((1 << t.bits) - 1)
    if t.is_signed and v >> (t.bits - 1):
        v -= 1 << t.bits
    return v


def to_value(value, t: Scalar):
    """A Python (or NumPy) number as the value of IR type `t`: wrapped, or rounded to its width."""
    if t.is_bool:
        return bool(value)
    if t.is_int:
        return wrap_int(int(value), t)
    if isinstance(value, int):
        return int_to_float(value, t.name)
    return round_to(float(value), t.name)


def to_python(value, t: Scalar):
    """A Python bool, int or float (floats hold the value exactly) from a value of type `t`."""
    if t.is_bool:
        return bool(value)
    if t.is_int:
        return int(value)
    return float(value)


def to_numpy(value, t: Scalar):
    """The NumPy scalar of IR type `t` for `value` (for tests; imports NumPy)."""
    if t.is_bool:
        import numpy

        return numpy.bool_(bool(value))
    return t.numpy.type(to_value(value, t))


def bits(value, t: Scalar) -> int:
    """The bit pattern of a value of type `t`, as an unsigned int."""
    if t.is_float:
        return bits_of(value, t.name)
    return int(value) & ((1 << t.bits) - 1)


def from_bit_pattern(pattern: int, t: Scalar):
    """The value of type `t` whose bit pattern is `pattern`."""
    if t.is_float:
        return from_bits(pattern, t.name)
    if t.is_bool:
        return pattern != 0
    return wrap_int(pattern, t)


def zero(t: Scalar):
    return to_value(0, t)


# Ops whose result `evaluate` computes exactly as the GPU does (approximations are left out).
APPROX_OPS = frozenset({"rsqrt", "ex2", "lg2", "sin", "cos", "tanh"})
PURE_OPS = frozenset({
    "add", "sub", "mul", "div", "rem", "min", "max", "and", "or", "xor", "not", "neg", "abs",
    "mul_hi", "mul_wide", "shl", "shr", "fma", "sqrt", "rsqrt", "rcp", "floor", "ceil", "trunc",
    "round", "ex2", "lg2", "sin", "cos", "tanh", "copysign", "isnan", "isinf", "cmp", "select",
    "cvt", "bitcast", "mov", "floordiv", "floormod", "popc", "clz", "brev", "bfind", "tf32",
    "to_fp8", "from_fp8",
})
#: bit operations: computed on the argument's bits, whatever the result type
_BIT_OPS = frozenset({"popc", "clz", "brev", "bfind"})


def foldable(op: str, attrs: dict) -> bool:
    """Whether constant folding `op` gives the bits the GPU would compute."""
    return op in PURE_OPS and op not in APPROX_OPS and not attrs.get("approx")


def evaluate(op: str, t: Scalar, attrs: dict, args: list, arg_types: list):
    """The result (a value of type `t`) of pure `op` on values `args` of `arg_types`.

    Raises InterpError on integer division by zero (left for the hardware to define).
    """
    if op == "select":
        return args[1] if args[0] else args[2]
    if op == "mov":
        return args[0]
    if op == "cmp":
        return _compare(attrs["pred"], args[0], args[1], arg_types[0])
    if op in ("isnan", "isinf"):
        return math.isnan(args[0]) if op == "isnan" else math.isinf(args[0])
    if op == "cvt":
        return _convert(args[0], arg_types[0], t, attrs.get("mode"))
    if op == "bitcast":
        return from_bit_pattern(bits(args[0], arg_types[0]), t)
    if op == "tf32":
        return tf32_bits(bits(args[0], arg_types[0]))
    if op == "to_fp8":
        return fp8_byte(float(args[0]), attrs["format"])
    if op == "from_fp8":
        return fp8_value(int(args[0]), attrs["format"])
    if op in _BIT_OPS:
        return wrap_int(_bit_op(op, attrs, bits(args[0], arg_types[0]), arg_types[0].bits), t)
    if t.is_bool:
        return _bool_op(op, [bool(a) for a in args])
    if t.is_int:
        return _int_op(op, t, [int(a) for a in args], arg_types)
    if attrs.get("nan") and op in ("min", "max") and (args[0] != args[0] or args[1] != args[1]):
        return math.nan      # max.NaN: a NaN operand gives NaN
    return _float_op(op, t, [float(a) for a in args])


def tf32_bits(f32_bits: int) -> int:
    """`cvt.rna.tf32.f32`: an f32 (its bits) rounded to 10 fraction bits, ties away from zero;
    the infinities kept, a NaN made 0x7FFFFFFF."""
    if f32_bits & 0x7F800000 == 0x7F800000:
        return 0x7FFFFFFF if f32_bits & 0x7FFFFF else f32_bits
    return (f32_bits + 0x1000) & 0xFFFFE000


def _compare(pred: str, a, b, t: Scalar) -> bool:
    if t.is_float and (math.isnan(a) or math.isnan(b)):
        return pred == "ne"
    a, b = (float(a), float(b)) if t.is_float else (int(a), int(b))
    return {"eq": a == b, "ne": a != b, "lt": a < b, "le": a <= b, "gt": a > b,
            "ge": a >= b}[pred]


def _bool_op(op: str, a: list) -> bool:
    if op == "and":
        return a[0] and a[1]
    if op == "or":
        return a[0] or a[1]
    if op == "xor":
        return a[0] != a[1]
    if op == "not":
        return not a[0]
    raise InterpError(f"{op} is not defined on bool")


def _bit_op(op: str, attrs: dict, x: int, width: int) -> int:
    """PTX popc, clz, brev, bfind(.shiftamt) on the `width`-bit pattern `x` (unsigned)."""
    if op == "popc":
        return bin(x).count("1")
    if op == "clz":
        return width - x.bit_length()
    if op == "brev":
        return int(format(x, f"0{width}b")[::-1], 2)
    if x == 0:          # bfind of zero: 0xffffffff
        return -1
    top = x.bit_length() - 1
    return width - 1 - top if attrs.get("shiftamt") else top


def _trunc_div(a: int, b: int) -> int:
    if b == 0:
        raise InterpError("integer division by zero")
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _int_op(op: str, t: Scalar, a: list, arg_types: list) -> int:
    bits = t.bits
    if op == "add":
        r = a[0] + a[1]
    elif op == "sub":
        r = a[0] - a[1]
    elif op in ("mul", "mul_wide"):
        r = a[0] * a[1]
    elif op == "mul_hi":
        r = (a[0] * a[1]) >> bits
    elif op == "div":
        r = _trunc_div(a[0], a[1])
    elif op == "rem":
        r = a[0] - a[1] * _trunc_div(a[0], a[1])
    elif op in ("floordiv", "floormod"):
        if a[1] == 0:
            raise InterpError("integer division by zero")
        r = a[0] // a[1] if op == "floordiv" else a[0] % a[1]
    elif op in ("min", "max"):
        r = min(a) if op == "min" else max(a)
    elif op == "and":
        r = a[0] & a[1]
    elif op == "or":
        r = a[0] | a[1]
    elif op == "xor":
        r = a[0] ^ a[1]
    elif op == "not":
        r = ~a[0]
    elif op == "neg":
        r = -a[0]
    elif op == "abs":
        r = abs(a[0])
    elif op in ("shl", "shr"):
        # PTX clamps shift amounts (read as unsigned) to the width
        amount = min(a[1] & 0xFFFFFFFF, bits)
        r = a[0] << amount if op == "shl" else a[0] >> amount
    elif op == "fma":
        r = a[0] * a[1] + a[2]
    else:
        raise InterpError(f"{op} is not defined on {t}")
    return wrap_int(r, t)


def _float_op(op: str, t: Scalar, a: list) -> float:
    # computed in f64, then rounded once to t: exact for +, -, *, / and sqrt of t's values
    name = t.name
    if op in _EXACT_IN_F64:
        return round_to(_EXACT_IN_F64[op](*a), name)
    if op in ("min", "max"):
        return _float_min_max(op, a[0], a[1])
    if op == "fma":
        return _fma(t, a[0], a[1], a[2])
    if op in _ROUNDERS:
        return _round_integral(_ROUNDERS[op], a[0])
    if op in APPROX_OPS:
        return round_to(_approximation(op, a[0]), name)
    raise InterpError(f"{op} is not defined on {t}")


# NaN operands: the result is a NaN operand, quieted (`x + 0.0`): of `x + y` and `x * y` the
# right one when both are NaN, of the other operations the left one (as NumPy computes them)
def _add(x: float, y: float) -> float:
    return y + 0.0 if y != y else x + y


def _multiply(x: float, y: float) -> float:
    return y + 0.0 if y != y else x * y


def _divide(x: float, y: float) -> float:
    if y != 0 or x != x:
        return x / y if y != 0 else x + 0.0
    if x == 0:
        return DEFAULT_NAN
    return math.copysign(math.inf, x) * math.copysign(1.0, y)


def _fmod(x: float, y: float) -> float:
    if x != x or y != y:
        return x + 0.0 if x != x else y + 0.0
    if y == 0 or math.isinf(x):
        return DEFAULT_NAN
    return math.fmod(x, y)


def _sqrt(x: float) -> float:
    if x < 0:
        return DEFAULT_NAN
    return math.sqrt(x)


_EXACT_IN_F64 = {
    "add": _add, "sub": lambda x, y: x - y, "mul": _multiply, "div": _divide, "rem": _fmod,
    "neg": lambda x: -x, "abs": abs, "sqrt": _sqrt, "rcp": lambda x: _divide(1.0, x),
    "copysign": math.copysign,
}


def _round_integral(rounder, x: float) -> float:
    """floor/ceil/trunc/rint of a float, as a float (keeping -0.0, inf and nan)."""
    if x != x:
        return x + 0.0
    if math.isinf(x) or abs(x) >= 2.0 ** 52:
        return x
    return math.copysign(float(rounder(x)), x)


_ROUNDERS = {"floor": math.floor, "ceil": math.ceil, "trunc": math.trunc, "round": round}


def _approximation(op: str, x: float) -> float:
    """The interpreter's value of a hardware approximation (never folded): NumPy's, in f64."""
    import numpy

    functions = {"rsqrt": lambda v: 1.0 / numpy.sqrt(v), "ex2": numpy.exp2, "lg2": numpy.log2,
                 "sin": numpy.sin, "cos": numpy.cos, "tanh": numpy.tanh}
    with numpy.errstate(all="ignore"):
        return float(functions[op](numpy.float64(x)))


def _float_min_max(op: str, x: float, y: float) -> float:
    # PTX min/max: a NaN operand is ignored; -0.0 is below +0.0
    if math.isnan(x):
        return y
    if math.isnan(y):
        return x
    if x == y:
        x_negative = math.copysign(1.0, x) < 0
        take_x = x_negative if op == "min" else not x_negative
        return x if take_x else y
    return (x if x < y else y) if op == "min" else (x if x > y else y)


def _fma(t: Scalar, a: float, b: float, c: float) -> float:
    if not (math.isfinite(a) and math.isfinite(b) and math.isfinite(c)):
        return round_to(_add(_multiply(a, b), c), t.name)
    from fractions import Fraction   # imported when first needed: it imports `decimal`

    exact = Fraction(a) * Fraction(b) + Fraction(c)
    if exact == 0:  # the sign of an exact zero sum follows IEEE addition
        return round_to(a * b + c, t.name)
    return round_exact(exact, t, "rn")


def round_exact(exact, t: Scalar, mode: str) -> float:
    """The float of type `t` nearest the Fraction `exact` under rounding `mode` (rn rz rm rp)."""
    from fractions import Fraction

    name = t.name
    try:
        x = round_to(float(exact), name)
    except OverflowError:
        x = math.copysign(math.inf, exact)
    if math.isinf(x):
        largest = math.copysign(MAX_FINITE[name], exact)
        if mode == "rn" or (mode == "rp" and exact > 0) or (mode == "rm" and exact < 0):
            return x
        return largest
    if Fraction(x) == exact:
        return x
    if Fraction(x) > exact:
        low, high = next_toward(x, name, up=False), x
    else:
        low, high = x, next_toward(x, name, up=True)
    if mode == "rm" or (mode == "rz" and exact > 0):
        return low
    if mode == "rp" or mode == "rz":
        return high
    below = exact - Fraction(low) if math.isfinite(low) else None
    above = Fraction(high) - exact if math.isfinite(high) else None
    if below is None or above is None:
        return high if below is None else low
    if below != above:
        return low if below < above else high
    even_low = bits_of(low, name) % 2 == 0
    return low if even_low else high


_FLOAT_TO_INT = {"rzi": math.trunc, "rni": round, "rmi": math.floor, "rpi": math.ceil}


def _convert(x, src: Scalar, dst: Scalar, mode: str | None):
    if dst.is_bool:
        return bool(x != 0)
    if src.is_bool:
        return to_value(1 if x else 0, dst)
    if dst.is_int:
        if src.is_int:
            return wrap_int(int(x), dst)
        return _float_to_int(float(x), dst, mode or "rzi")
    if src.is_float:
        if mode in _FLOAT_TO_INT:
            x = _round_integral(_FLOAT_TO_INT[mode], x)
        if dst == src:
            return x
        if x != x and dst.bits > src.bits:   # NumPy widens f16 and bf16 NaNs as they are
            return x + 0.0 if dst.name == "f64" and src.name != "f16" else x
        if not math.isfinite(x) or dst.bits > src.bits or x == 0:   # (a Fraction has no -0)
            return round_to(x, dst.name)
        return round_exact(_fraction(x), dst, _float_mode(mode))
    value = int(x)
    if value == 0:
        return 0.0
    return round_exact(_fraction(value), dst, _float_mode(mode))


def _fraction(number):
    from fractions import Fraction

    return Fraction(number)


def _float_mode(mode: str | None) -> str:
    return mode if mode in ("rn", "rz", "rm", "rp") else "rn"


def _float_to_int(x: float, dst: Scalar, mode: str) -> int:
    # PTX float->int conversions saturate, and NaN becomes 0
    if math.isnan(x):
        return 0
    low = -(1 << (dst.bits - 1)) if dst.is_signed else 0
    high = (1 << (dst.bits - 1)) - 1 if dst.is_signed else (1 << dst.bits) - 1
    if math.isinf(x):
        return high if x > 0 else low
    return max(low, min(high, _FLOAT_TO_INT[mode](x)))


# --- memory ----------------------------------------------------------------------------------
REGION_SHIFT = 32


class Memory:
    """NumPy arrays mapped at fake addresses: array k starts at (k + 1) << 32."""

    def __init__(self):
        self.regions: list = []   # flat uint8 views of NumPy arrays
        self._bases: dict[int, int] = {}

    def map(self, array) -> int:
        if not array.flags.c_contiguous:
            raise InterpError("arrays given to the interpreter must be C-contiguous")
        key = id(array)
        if key not in self._bases:
            self.regions.append(array.reshape(-1).view("uint8"))
            self._bases[key] = len(self.regions) << REGION_SHIFT
        return self._bases[key]

    def _bytes(self, addr: int, nbytes: int):
        region, offset = (addr >> REGION_SHIFT) - 1, addr & ((1 << REGION_SHIFT) - 1)
        if not 0 <= region < len(self.regions):
            raise InterpError(f"out-of-bounds access: address {addr:#x} is in no array")
        raw = self.regions[region]
        if offset + nbytes > raw.size:
            raise InterpError(f"out-of-bounds access: {nbytes} bytes at offset {offset} of a "
                              f"{raw.size}-byte array")
        if offset % nbytes:
            raise InterpError(f"misaligned {nbytes}-byte access at offset {offset}")
        return raw[offset:offset + nbytes]

    def load(self, addr: int, t: Scalar):
        raw = self._bytes(addr, t.nbytes)
        if t.is_bool:
            return bool(raw[0] != 0)
        return from_bit_pattern(int.from_bytes(raw.tobytes(), "little"), t)

    def store(self, addr: int, t: Scalar, value) -> None:
        raw = self._bytes(addr, t.nbytes)
        if t.is_bool:
            raw[0] = 1 if value else 0
        else:
            raw[:] = list(bits(value, t).to_bytes(t.nbytes, "little"))


# --- execution -------------------------------------------------------------------------------
_SHAPE_NAME = re.compile(r"(.*)_shape(\d+)$")


def run_function(func: Function, args: dict, sregs: dict, shared: dict | None = None, *,
                 printed: list | None = None, max_steps: int = 1_000_000,
                 lone_thread: bool = False) -> None:
    """Run `func` as one thread. `args` maps parameter names (with or without the `kernel_`
    prefix) to scalars or NumPy arrays (written in place); `sregs` maps `tid.x`... to ints;
    `shared` maps `.shared` array names to NumPy arrays (fresh zeros when absent).
    `printed` collects the text of `printf`s. Barriers, shuffles and votes need other threads
    (the simulator runs them) unless `lone_thread`: then the thread is the only active one of its
    block and warp, so `bar.sync` returns at once, a shuffle reads the thread's own value, a
    ballot holds only its own lane's bit, and any/all/uni are its own predicate."""
    _Thread(func, args, sregs, shared or {}, printed, lone_thread).run(max_steps)


class _Thread:
    def __init__(self, func, args, sregs, shared, printed, lone_thread=False):
        import numpy

        self.numpy, self.ndarray = numpy, numpy.ndarray
        self.func, self.args, self.sregs = func, args, sregs
        self.printed, self.lone_thread = printed, lone_thread
        self.memory = Memory()
        self.barriers: dict = {}     # address -> a lone thread's mbarrier state
        self.values: dict[Instr, object] = {}
        self.symbols = {}
        region = None      # where the arrays sized at launch lie, one after another
        for decl in func.arrays:
            if decl.launch:
                if region is None:
                    from .backend.target import shared_limit

                    region = self.memory.map(numpy.zeros(shared_limit(func.arch), numpy.uint8))
                self.symbols[decl.name] = region
                continue
            given = shared.get(decl.name) if decl.space == "shared" else None
            if decl.space == "const":
                given = numpy.array(decl.values, dtype=decl.elem.numpy)
            array = given if given is not None else numpy.zeros(decl.count, dtype=decl.elem.numpy)
            self.symbols[decl.name] = self.memory.map(array)

    def value(self, v: Value):
        if isinstance(v, Instr):
            return self.values[v]
        if isinstance(v, Const):
            return to_value(v.value, v.type)
        if isinstance(v, Undef):
            return zero(v.type)
        raise InterpError(f"not a value: {v!r}")

    def run(self, max_steps: int) -> None:
        block, pred, steps = self.func.entry, None, 0
        while True:
            if pred is not None and block.phis:
                k = block.preds.index(pred)
                incoming = [self.value(phi.args[k]) for phi in block.phis]
                self.values.update(zip(block.phis, incoming))
            for instr in block.instrs:
                steps += 1
                if steps > max_steps:
                    raise InterpError(f"more than {max_steps} instructions executed")
                op = instr.op
                if op == "br":
                    pred, block = block, instr.targets[0]
                elif op == "cbr":
                    taken = instr.targets[0 if self.value(instr.args[0]) else 1]
                    pred, block = block, taken
                elif op == "ret":
                    return
                elif op == "trap":
                    raise Trap(f"trap at {instr.loc}")
                else:
                    self.values[instr] = self.execute(instr)
                    continue
                break

    def execute(self, instr: Instr):
        op = instr.op
        if op in PURE_OPS:
            args = [self.value(a) for a in instr.args]
            return evaluate(op, instr.type, instr.attrs, args, [a.type for a in instr.args])
        handler = getattr(self, "op_" + op, None)
        if handler is None:
            raise InterpError(f"the interpreter has no `{op}`")
        return handler(instr)

    def op_param(self, instr: Instr):
        name = instr.attrs["name"]
        value = self._argument(name)
        if instr.attrs.get("ptr"):
            if not isinstance(value, self.ndarray):
                raise InterpError(f"pointer parameter {name} needs a NumPy array")
            return self.memory.map(value)
        return to_value(value, instr.type)

    def _argument(self, name: str):
        prefix = self.func.name + "_"
        names = [name] + ([name[len(prefix):]] if name.startswith(prefix) else [])
        for key in names:
            if key in self.args:
                return self.args[key]
        for key in names:
            match = _SHAPE_NAME.match(key)
            if match and isinstance(self.args.get(match.group(1)), self.ndarray):
                return self.args[match.group(1)].shape[int(match.group(2))]
        raise InterpError(f"no argument for parameter {name}")

    def op_sreg(self, instr: Instr):
        return self.sreg(instr.attrs["name"])

    def sreg(self, name: str) -> int:
        if name in self.sregs:
            return wrap_int(int(self.sregs[name]), i32)
        if name == "laneid":
            return self.sregs.get("tid.x", 0) % 32
        if name in LANE_MASK_BITS:
            return LANE_MASK_BITS[name](self.sreg("laneid"))     # a u32
        if name.startswith("clusterid"):     # a lone thread's block is a cluster of its own
            return self.sreg("ctaid" + name[len("clusterid"):])
        return 1 if name.startswith(("ntid", "nctaid", "cluster_ncta")) else 0

    def op_addr_of(self, instr: Instr):
        return self.symbols[instr.attrs["symbol"]]

    def op_load(self, instr: Instr):
        return self.memory.load(int(self.value(instr.args[0])), instr.type)

    def op_ordered_load(self, instr: Instr):
        return self.op_load(instr)      # one thread at a time: every order holds

    def op_ordered_store(self, instr: Instr):
        self.op_store(instr)

    def op_vload(self, instr: Instr):
        base, size = int(self.value(instr.args[0])), instr.type.nbytes
        if base % (size * instr.attrs["n"]):
            raise InterpError("misaligned vector load")
        return tuple(self.memory.load(base + k * size, instr.type) for k in range(instr.attrs["n"]))

    def op_extract(self, instr: Instr):
        return self.value(instr.args[0])[instr.attrs["index"]]

    def op_store(self, instr: Instr):
        addr, value = instr.args
        self.memory.store(int(self.value(addr)), value.type, self.value(value))

    def op_vstore(self, instr: Instr):
        base, items = int(self.value(instr.args[0])), instr.args[1:]
        size = items[0].type.nbytes
        if base % (size * len(items)):
            raise InterpError("misaligned vector store")
        for k, item in enumerate(items):
            self.memory.store(base + k * size, item.type, self.value(item))

    def op_cp_async(self, instr: Instr):
        """A lone thread's copy: done at once (its wait comes before any read it makes)."""
        dst, src = (int(self.value(a)) for a in instr.args[:2])
        size = instr.attrs["bytes"]
        if dst % size or src % size:
            raise InterpError("misaligned cp.async")
        read = min(size, int(self.value(instr.args[2]))) if len(instr.args) > 2 else size
        for k in range(size):
            self.memory.store(dst + k, u8, self.memory.load(src + k, u8) if k < read else 0)

    def op_cp_async_commit(self, instr: Instr):
        pass

    op_cp_async_wait = op_cp_async_commit

    def op_mbarrier_init(self, instr: Instr):
        """A lone thread's mbarrier: [phase, expected arrivals, pending arrivals, tx bytes]."""
        count = int(self.value(instr.args[1]))
        self.barriers[self._barrier(instr)] = [0, count, count, 0]

    def op_mbarrier_arrive(self, instr: Instr):
        state = self._barrier_state(instr)
        if len(instr.args) > 1:
            state[3] += int(self.value(instr.args[1]))
        if state[2] == 0:
            raise InterpError("mbarrier arrive on a phase whose arrivals are all done")
        state[2] -= 1
        self._complete_phase(state)

    def op_mbarrier_test(self, instr: Instr):
        return self._barrier_state(instr)[0] % 2 != int(self.value(instr.args[1])) % 2

    def _own_copy(self, instr: Instr) -> list:
        """A copy's arguments without a multicast mask, which for a lone thread's block (a
        cluster of one) can only name that block."""
        if not instr.attrs.get("multicast"):
            return instr.args
        if int(self.value(instr.args[-1])) != 1:
            raise InterpError(f"a copy multicast to blocks {self.value(instr.args[-1]):#x} of a "
                              "cluster of one")
        return instr.args[:-1]

    def op_fence_mbarrier_init(self, instr: Instr):
        pass

    def op_cp_async_bulk(self, instr: Instr):
        """A lone thread's bulk copy: done at once, its bytes completing on the barrier."""
        args = self._own_copy(instr)
        dst, src = (int(self.value(a)) for a in args[:2])
        size = instr.attrs["bytes"]
        if dst % 16 or src % 16:
            raise InterpError("misaligned cp.async.bulk")
        for k in range(size):
            self.memory.store(dst + k, u8, self.memory.load(src + k, u8))
        if len(args) > 2:
            state = self._barrier_state(instr, 2)
            state[3] -= size
            self._complete_phase(state)

    def op_cp_async_bulk_commit(self, instr: Instr):
        pass

    op_cp_async_bulk_wait = op_cp_async_bulk_commit

    def op_tensor_map(self, instr: Instr):
        """The map as (array, box, swizzle): the array its array parameter's argument."""
        name = instr.attrs["name"]
        for spec in self.func.params:
            names = [n for n, _ in spec.ptx_params(self.func.name)]
            if name in names:
                k = names.index(name) - 1 - spec.rank
                array = self._argument(names[0])
                return (array, *spec.tensor_maps[k])
        raise InterpError(f"no tensor map parameter {name}")

    def op_tma_load(self, instr: Instr):
        """A lone thread's tensor load: done at once (zeros outside the array), its bytes
        completing on the barrier."""
        args = self._own_copy(instr)
        (array, box, swizzle), coords = self.value(args[1]), args[2:-1]
        outer, inner = self._tensor_tile(array, box, coords)
        padded = self.numpy.zeros(box, array.dtype)
        padded[inner] = array[outer]
        self._tile_bytes(int(self.value(args[0])), swizzle, padded, store=False)
        state = self._barrier_state(instr, len(args) - 1)
        state[3] -= padded.nbytes
        self._complete_phase(state)

    def op_tma_store(self, instr: Instr):
        """A lone thread's tensor store: done at once; the box's part inside the array."""
        (array, box, swizzle), coords = self.value(instr.args[0]), instr.args[1:-1]
        outer, inner = self._tensor_tile(array, box, coords)
        padded = self.numpy.zeros(box, array.dtype)
        self._tile_bytes(int(self.value(instr.args[-1])), swizzle, padded, store=True)
        array[outer] = padded[inner]

    def _tensor_tile(self, array, box: tuple, coords: list) -> tuple:
        """The slices of the array (outer) and of the box (inner) that overlap."""
        outer, inner = [], []
        for coord, extent, size in zip(coords, box, array.shape):
            start = int(self.value(coord))
            low, high = max(start, 0), min(start + extent, size)
            high = max(high, low)
            outer.append(slice(low, high))
            inner.append(slice(low - start, high - start))
        return tuple(outer), tuple(inner)

    def _tile_bytes(self, address: int, swizzle: int, tile, store: bool) -> None:
        """Moves the tile's bytes to (or, for a store, from) shared memory at `address`, each
        16-byte chunk at its swizzled place: address bits 4.. XORed with bits 7.. (3 of them
        for swizzle 128, 2 for 64, 1 for 32)."""
        if address % 128:
            raise InterpError("misaligned tensor copy (its shared address is 128-byte aligned)")
        raw = tile.reshape(-1).view("uint8")
        mask = {0: 0, 32: 1, 64: 3, 128: 7}[swizzle]
        for chunk in range(0, raw.size, 16):
            at = address + chunk
            at ^= ((at >> 7) & mask) << 4
            for k in range(16):
                if store:
                    raw[chunk + k] = self.memory.load(at + k, u8)
                else:
                    self.memory.store(at + k, u8, int(raw[chunk + k]))

    def _barrier(self, instr: Instr, index: int = 0) -> int:
        address = int(self.value(instr.args[index]))
        if address % 8:
            raise InterpError("misaligned mbarrier")
        return address

    def _barrier_state(self, instr: Instr, index: int = 0) -> list:
        state = self.barriers.get(self._barrier(instr, index))
        if state is None:
            raise InterpError("mbarrier used before mbarrier_init")
        return state

    @staticmethod
    def _complete_phase(state: list) -> None:
        if state[2] == 0 and state[3] == 0:
            state[0] += 1
            state[2] = state[1]

    def op_atom(self, instr: Instr):
        addr = int(self.value(instr.args[0]))
        t, kind = instr.type, instr.attrs["op"]
        operands = [self.value(a) for a in instr.args[1:]]
        old = self.memory.load(addr, t)
        self.memory.store(addr, t, _atomic_result(kind, t, old, operands))
        return old

    def op_printf(self, instr: Instr):
        values = tuple(to_python(self.value(a), a.type) for a in instr.args)
        fmt = re.sub(r"%l+([dius])", r"%\1", instr.attrs["fmt"])
        text = fmt % values if values else fmt
        if self.printed is not None:
            self.printed.append(text)
        else:
            print(text, end="")

    def op_barrier(self, instr: Instr):
        self.require_lone_thread("bar.sync")
        if instr.attrs.get("reduce") == "popc":
            return int(bool(self.value(instr.args[0])))
        if instr.attrs.get("reduce"):
            return bool(self.value(instr.args[0]))

    def op_fence(self, instr: Instr):
        pass        # threads run one at a time here: memory is always ordered

    def op_warpsync(self, instr: Instr):
        self.require_lone_thread("bar.warp.sync")

    def op_shfl(self, instr: Instr):
        self.require_lone_thread("shfl")
        return self.value(instr.args[0])

    def op_mma(self, instr: Instr):
        raise InterpError("mma.sync needs the simulator (a whole warp)")

    def op_ldmatrix(self, instr: Instr):
        raise InterpError("ldmatrix needs the simulator (a whole warp)")

    def op_wgmma(self, instr: Instr):
        raise InterpError("wgmma needs the simulator (a whole warpgroup)")

    op_wgmma_fence = op_wgmma_commit = op_wgmma_wait = op_wgmma

    def op_fence_proxy_async(self, instr: Instr):
        pass        # one memory, one proxy here

    def op_setmaxnreg(self, instr: Instr):
        pass        # registers are not counted here

    def op_match(self, instr: Instr):
        self.require_lone_thread("match")
        return 1 << self.sreg("laneid")

    def op_dp4a(self, instr: Instr):
        a, b, c = (self.value(v) for v in instr.args)
        total = c + sum(_byte(a, k, instr.args[0].type.name == "i32")
                        * _byte(b, k, instr.args[1].type.name == "i32") for k in range(4))
        bits = total & 0xFFFFFFFF
        return bits - (1 << 32) if instr.type.name == "i32" and bits >> 31 else bits

    def op_nanosleep(self, instr: Instr):
        pass

    def op_elect(self, instr: Instr):
        self.require_lone_thread("elect.sync")
        return True

    def op_cluster_barrier(self, instr: Instr):
        self.require_lone_thread("barrier.cluster")

    def op_mapa(self, instr: Instr):
        """A lone thread's block is a cluster of its own: rank 0, its own shared memory."""
        if int(self.value(instr.args[1])) != 0:
            raise InterpError(f"mapa to block {self.value(instr.args[1])} of a cluster of one")
        return self.value(instr.args[0])

    def op_redux(self, instr: Instr):
        self.require_lone_thread("redux")
        return self.value(instr.args[0])

    def op_vote(self, instr: Instr):
        members = instr.args[1] if len(instr.args) > 1 else None
        if getattr(members, "op", None) != "activemask":   # (a compare-and-swap loop's vote over
            self.require_lone_thread("vote")                #  the lanes entering: run alone here)
        taken = bool(self.value(instr.args[0]))
        if instr.attrs["mode"] == "ballot":
            return 1 << self.sreg("laneid") if taken else 0
        return taken

    def op_activemask(self, instr: Instr):
        return 1 << self.sreg("laneid")   # threads run here one at a time

    def require_lone_thread(self, op: str) -> None:
        if not self.lone_thread:
            raise InterpError(f"{op} needs the simulator (more than one thread)")


def _atomic_result(kind: str, t: Scalar, old, operands):
    if kind == "exch":
        return operands[0]
    if kind == "cas":     # by bits, as atom.cas.b32 compares
        return operands[1] if bits(old, t) == bits(operands[0], t) else old
    value = operands[0]
    if kind == "inc":
        return to_value(0 if int(old) >= int(value) else int(old) + 1, t)
    if kind == "dec":
        return value if int(old) == 0 or int(old) > int(value) else to_value(int(old) - 1, t)
    return evaluate(kind, t, {}, [old, value], [t, t])


__all__ = ["InterpError", "Trap", "Memory", "run_function", "evaluate", "foldable",
           "to_value", "to_numpy", "to_python", "wrap_int", "round_exact", "bits",
           "from_bit_pattern", "PURE_OPS", "APPROX_OPS"]
