"""Scalar and array types of ptxpy, and JAX-style type promotion.

A `Scalar` is one of the names of SPEC 2.1. `Array[T]` and `Array[T, R]` are the annotations of
array parameters, `Const[int]` (float, bool) of compile-time parameters. Promotion follows
`jax.numpy.promote_types` (its lattice is spelled out below) with "weak" literal types.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass


@dataclass(frozen=True)
class Scalar:
    name: str   # 'bool', 'i8' ... 'f64'
    kind: str   # 'bool' | 'int' | 'uint' | 'float'
    bits: int   # 1 for bool

    def __repr__(self) -> str:
        return self.name

    __str__ = __repr__

    def __eq__(self, other):
        # the dataclass's comparison, with a shortcut for the usual case: one of the scalars
        # below compared with itself
        if self is other:
            return True
        if other.__class__ is self.__class__:
            return self.name == other.name and self.kind == other.kind and self.bits == other.bits
        return NotImplemented

    # is_float, is_int, is_signed, is_bool and nbytes are plain attributes, set once per type
    # (the compiler reads them constantly): whether it is a float, an integer, a signed
    # integer, bool; the bytes of one element in memory (bool is one byte, as in NumPy)
    def __post_init__(self) -> None:
        kind = self.kind
        for attr, value in (("is_float", kind == "float"), ("is_int", kind in ("int", "uint")),
                            ("is_signed", kind == "int"), ("is_bool", kind == "bool"),
                            ("nbytes", max(1, self.bits // 8))):
            object.__setattr__(self, attr, value)

    @property
    def numpy(self):
        """The NumPy dtype (NumPy is imported here, not by `import ptxpy`)."""
        import numpy

        return numpy.dtype(NUMPY_NAMES[self.name]) if self.name != "bf16" else _bf16_dtype()

    # Calling a type inside a kernel is a cast; on the host it makes a NumPy scalar.
    def __call__(self, value):
        return self.numpy.type(value)


def _bf16_dtype():
    import ml_dtypes  # shipped with jaxlib
    import numpy

    return numpy.dtype(ml_dtypes.bfloat16)


bool_ = Scalar("bool", "bool", 1)
i8 = Scalar("i8", "int", 8)
i16 = Scalar("i16", "int", 16)
i32 = Scalar("i32", "int", 32)
i64 = Scalar("i64", "int", 64)
u8 = Scalar("u8", "uint", 8)
u16 = Scalar("u16", "uint", 16)
u32 = Scalar("u32", "uint", 32)
u64 = Scalar("u64", "uint", 64)
f16 = Scalar("f16", "float", 16)
bf16 = Scalar("bf16", "float", 16)
f32 = Scalar("f32", "float", 32)
f64 = Scalar("f64", "float", 64)

SCALARS: dict[str, Scalar] = {
    t.name: t for t in (bool_, i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64)
}
#: Python builtin annotations and what they mean.
BUILTIN_NAMES: dict[str, Scalar] = {"bool": bool_, "int": i32, "float": f32}

NUMPY_NAMES = {
    "bool": "bool", "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
    "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64",
    "f16": "float16", "f32": "float32", "f64": "float64", "bf16": "bfloat16",
}


def from_numpy(dtype) -> Scalar:
    """The ptxpy scalar of a NumPy/JAX dtype."""
    import numpy

    name = numpy.dtype(dtype).name
    for ours, theirs in NUMPY_NAMES.items():
        if theirs == name:
            return SCALARS[ours]
    raise TypeError(f"ptxpy has no scalar type for dtype {name}")


@dataclass(frozen=True)
class ArrayType:
    elem: Scalar
    rank: int = 1

    def __repr__(self) -> str:
        return f"Array[{self.elem}, {self.rank}]" if self.rank != 1 else f"Array[{self.elem}]"


@dataclass(frozen=True)
class ConstType:
    """A compile-time parameter: `Const[int]`, `Const[float]`, `Const[bool]`."""
    base: Scalar

    def __repr__(self) -> str:
        return f"Const[{ {'i32': 'int', 'f32': 'float', 'bool': 'bool'}[self.base.name] }]"

    def value_of(self, value):
        """`value` as this parameter's Python value (`int`, `float`, `bool`), or None when it
        is not a number of this kind (2.5 or True for a `Const[int]`). The one rule for
        `-D`, `ptxpy.transpile(defines=...)` and call arguments."""
        kind = type(value)
        is_bool = kind is bool or (kind.__module__ == "numpy" and kind.__name__ in ("bool", "bool_"))
        base = self.base.name
        if base == "bool":
            return bool(value) if is_bool else None
        if is_bool or not isinstance(value, numbers.Real):
            return None
        if base == "i32":
            return int(value) if isinstance(value, numbers.Integral) else None
        try:
            return float(value)
        except OverflowError:   # an int beyond the floats: an infinity, as for a scalar
            return math.inf if value > 0 else -math.inf


@dataclass(frozen=True)
class TupleType:
    items: tuple

    def __repr__(self) -> str:
        return "(" + ", ".join(map(repr, self.items)) + ")"


class _Subscriptable:
    """`Array[f32]`, `Array[f32, 2]`, `Const[int]` as annotations that also work at run time."""

    def __init__(self, name: str, make):
        self._name, self._make = name, make

    def __getitem__(self, item):
        items = item if isinstance(item, tuple) else (item,)
        try:
            return self._make(*items)
        except TypeError:
            # Python evaluates annotations when it defines the function: the compiler, which
            # reads the source, reports the mistake with its line and column at the first call
            return UncheckedAnnotation(self._name, items)


@dataclass(frozen=True)
class UncheckedAnnotation:
    """An `Array[...]` or `Const[...]` with arguments it does not take, as Python evaluated it."""
    name: str
    items: tuple

    def __repr__(self) -> str:
        return f"{self.name}[{', '.join(map(repr, self.items))}]"


def _array(elem, rank: int = 1) -> ArrayType:
    elem = BUILTIN_NAMES.get(getattr(elem, "__name__", None), elem)
    if not isinstance(elem, Scalar) or not 1 <= rank <= 4:
        raise TypeError("Array[T, R] takes a ptxpy scalar type and a rank from 1 to 4")
    return ArrayType(elem, rank)


def _const(base) -> ConstType:
    base = BUILTIN_NAMES.get(getattr(base, "__name__", None), base)
    if base not in (i32, f32, bool_):
        raise TypeError("Const[...] takes int, float or bool")
    return ConstType(base)


Array = _Subscriptable("Array", _array)
Const = _Subscriptable("Const", _const)


# --- promotion -------------------------------------------------------------------------------
# JAX's lattice (jax._src.dtypes): each type's immediate supertypes. 'i*', 'f*' are the weak
# int and float types of literals.
_LATTICE: dict[str, list[str]] = {
    "bool": ["i*"],
    "i*": ["u8", "i8"],
    "u8": ["i16", "u16"], "u16": ["i32", "u32"], "u32": ["i64", "u64"], "u64": ["f*"],
    "i8": ["i16"], "i16": ["i32"], "i32": ["i64"], "i64": ["f*"],
    "f*": ["f16", "bf16"], "f16": ["f32"], "bf16": ["f32"], "f32": ["f64"], "f64": [],
}


def _ancestors(name: str) -> set[str]:
    seen, todo = {name}, [name]
    while todo:
        for up in _LATTICE[todo.pop()]:
            if up not in seen:
                seen.add(up)
                todo.append(up)
    return seen


_UPPER = {name: _ancestors(name) for name in _LATTICE}


def _least_upper_bound(a: str, b: str) -> str:
    common = _UPPER[a] & _UPPER[b]
    # the least upper bound: the common bound whose own upper set contains all the others
    for c in common:
        if common <= _UPPER[c]:
            return c
    raise AssertionError(f"no join for {a}, {b}")


#: (a, b) -> their least upper bound, for every two names of the lattice
_JOINS: dict = {(a, b): _least_upper_bound(a, b) for a in _LATTICE for b in _LATTICE}


def _join(a: str, b: str) -> str:
    return _JOINS[(a, b)]


_WEAK_NAMES = {"bool": "bool", "int": "i*", "uint": "i*", "float": "f*"}


def _lattice_name(t: Scalar, weak: bool) -> str:
    return _WEAK_NAMES[t.kind] if weak else t.name


def promote(a: Scalar, b: Scalar, a_weak: bool = False, b_weak: bool = False) -> tuple[Scalar, bool]:
    """The type a binary operator computes in, and whether it is still weak.

    Weak operands are literals and `Const` values: they take the other side's type
    (`h * 2.0` with `h: f16` is f16). Two weak operands give a weak result.
    """
    joined = _join(_lattice_name(a, a_weak), _lattice_name(b, b_weak))
    if joined == "i*":
        return i32, True
    if joined == "f*":
        if a_weak or b_weak:  # a float literal against an integer: JAX's default float, weak
            return f32, True
        return f64, False  # u64 joined with a signed integer, as jax_enable_x64 gives
    return SCALARS[joined], False


def promote_types(a: Scalar, b: Scalar) -> Scalar:
    """`jax.numpy.promote_types` on two strong types (f32 stands for JAX's default float)."""
    return promote(a, b)[0]


def can_convert_implicitly(src: Scalar, dst: Scalar, src_weak: bool = False) -> bool:
    """Whether assigning a `src` value to a `dst` variable needs no cast: `src` promotes to `dst`."""
    return promote(src, dst, src_weak, False)[0] == dst


def cdiv(a: int, b: int) -> int:
    """Ceiling division (`ptxpy.cdiv`), usable on the host and in kernels."""
    return -(-a // b)
