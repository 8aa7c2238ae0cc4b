"""What the transpiler hands to the runtime: a kernel's PTX and its parameter list.

The `.param` list of the PTX entry is derived from `params` as docs/ptx-dialect.md says:
an array gives a u64 pointer then one u32 extent per dimension, then the tensor maps (TMA) the
kernel reads it through, 128 opaque bytes each (`TENSOR_MAP`); a scalar is passed by value,
or, when `by_ref` (a traced JAX scalar), as a u64 pointer to one element in global memory (of
type `carrier` when set).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from ptxpy.types import Scalar, f32, i32, u32


@dataclass(frozen=True)
class ParamSpec:
    name: str
    kind: str          # 'array' | 'scalar'
    dtype: Scalar
    rank: int = 0      # arrays: 1..4
    by_ref: bool = False
    written: bool = False  # arrays: whether the kernel stores or atomically updates it
    #: a by-reference 64-bit scalar that JAX holds in 32 bits (jax_enable_x64 off): the
    #: element's type in memory; the kernel widens it to `dtype` as a cast does
    carrier: Scalar | None = None
    #: the `.param` names where the default ones would repeat another's (`unique_ptx_names`)
    ptx_names: tuple = ()
    #: arrays: ((box, swizzle), ...), the tensor maps of `ptxpy.tma_load`/`tma_store` boxes of
    #: it, each a `.param` of type TENSOR_MAP that the launch encodes for the array's pointer
    tensor_maps: tuple = ()

    def ptx_params(self, kernel: str) -> list[tuple[str, str]]:
        """(name, ptx type) of each `.param` this parameter becomes."""
        if self.ptx_names:   # renamed: the same .params under the names kept
            defaults = replace(self, ptx_names=())
            return [(name, t) for name, (_, t) in zip(self.ptx_names, defaults.ptx_params(kernel))]
        base = f"{kernel}_{self.name}"
        if self.kind == "array":
            return ([(base, "u64")] + [(f"{base}_shape{k}", "u32") for k in range(self.rank)]
                    + [(f"{base}_tmap{k}", TENSOR_MAP) for k in range(len(self.tensor_maps))])
        return [(base, "u64" if self.by_ref else PARAM_TYPE[self.dtype.name])]


#: the `.param` type of a tensor map: a CUtensorMap, 128 bytes on a 64-byte boundary
TENSOR_MAP = "align 64 .b8"
TENSOR_MAP_BYTES = 128


def param_size(ptx_type: str) -> tuple[int, int]:
    """(bytes, alignment) of a `.param` of this type."""
    if ptx_type == TENSOR_MAP:
        return TENSOR_MAP_BYTES, 64
    width = max(1, int("".join(c for c in ptx_type if c.isdigit()) or 8) // 8)
    return width, width


#: names the backend declares in every kernel that may use them (printf.ARGS_BUFFER)
RESERVED_PTX_NAMES = frozenset({"printf_args"})


def unique_ptx_names(kernel: str, params: list) -> list:
    """`params` with `.param` names that no two share and that no name in RESERVED_PTX_NAMES
    takes: `def k(x: Array[f32], x_shape0: i32)` would declare `k_x_shape0` twice; the later
    one becomes `k_x_shape0_2`. Where nothing repeats, the parameters are returned as they are."""
    taken = set(RESERVED_PTX_NAMES)
    out = []
    for spec in params:
        defaults = [name for name, _ in spec.ptx_params(kernel)]
        names = []
        for name in defaults:
            unique, n = name, 1
            while unique in taken:
                n += 1
                unique = f"{name}_{n}"
            taken.add(unique)
            names.append(unique)
        out.append(replace(spec, ptx_names=tuple(names)) if names != defaults else spec)
    return out


#: the 32-bit type JAX holds a 64-bit scalar in when jax_enable_x64 is off
NARROW_CARRIER = {"i64": i32, "u64": u32, "f64": f32}

PARAM_TYPE = {
    "bool": "u8", "i8": "s8", "u8": "u8", "i16": "s16", "u16": "u16", "i32": "s32", "u32": "u32",
    "i64": "s64", "u64": "u64", "f16": "b16", "bf16": "b16", "f32": "f32", "f64": "f64",
}


@dataclass
class CompiledKernel:
    name: str
    ptx: str
    params: list[ParamSpec]             # runtime parameters in signature order (no Consts)
    arch: str = "sm_90"
    shared_bytes: int = 0               # static shared memory the kernel declares
    source_file: str = "<string>"
    options: dict = field(default_factory=dict)  # debug, fast_math, consts: for cache keys

    def ptx_params(self) -> list[tuple[str, str]]:
        return [p for spec in self.params for p in spec.ptx_params(self.name)]
