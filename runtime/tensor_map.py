"""Tensor maps (CUDA's `CUtensorMap`) for `ptxpy.tma_load` and `ptxpy.tma_store`.

A kernel that copies boxes of array `x` through the tensor memory accelerator takes, after
`x`'s pointer and extents, one 128-byte `.param` per (box, swizzle) it uses (`ParamSpec.
tensor_maps`). The map describes `x` as the launch passes it: its address, extents and row
strides (C order), the box, the swizzle, zeros for what lies outside. `TensorMapLayout` is all
of it but the address; `arguments()` are the driver's (`cuTensorMapEncodeTiled`) but the
address, and `encode(address)` asks the driver for the 128 bytes. The C FFI handler encodes a
map per launch from the same arguments (runtime/native.py, `TensorMapSlot`); the Python one
encodes a map for each new buffer address it sees and keeps the last few (runtime/ffi.py,
`LaunchPlan.fill`). The simulator takes a `simulator.TensorMap` instead.
"""
from __future__ import annotations

import ctypes
import math
from dataclasses import dataclass
from typing import NamedTuple

from ptxpy.transpiler.abi import TENSOR_MAP_BYTES

#: CUtensorMapDataType by element type (8- and 16-bit integers are moved as unsigned bits)
DATA_TYPES = {"bool": 0, "u8": 0, "i8": 0, "u16": 1, "i16": 1, "u32": 2, "i32": 3, "u64": 4,
              "i64": 5, "f16": 6, "f32": 7, "f64": 8, "bf16": 9}
#: CUtensorMapSwizzle by swizzle bytes
SWIZZLES = {0: 0, 32: 1, 64: 2, 128: 3}
L2_PROMOTION_128B = 2
#: the driver's limits on a tiled map (cuTensorMapEncodeTiled): strides are multiples of 16
#: bytes under 2**40, extents 1 to 2**32
STRIDE_ALIGN, STRIDE_LIMIT, EXTENT_LIMIT = 16, 1 << 40, 1 << 32


class EncodeArguments(NamedTuple):
    """cuTensorMapEncodeTiled's arguments but the map and the address, in the driver's order:
    the sequences are innermost dimension first."""
    data_type: int
    rank: int
    dims: tuple
    strides: tuple      # bytes, of every dimension but the innermost
    box: tuple
    element_strides: tuple
    interleave: int
    swizzle: int
    l2_promotion: int
    oob_fill: int


@dataclass(frozen=True)
class TensorMapLayout:
    """A tiled tensor map without its address: `shape` and `box` in NumPy order."""
    dtype: str
    itemsize: int
    shape: tuple
    box: tuple
    swizzle: int

    def problem(self) -> str | None:
        """Why the driver would refuse this map (None when it would not)."""
        if any(n < 1 for n in self.shape):
            return f"an array of shape {self.shape} is empty"
        if any(n > EXTENT_LIMIT for n in self.shape):
            return f"its extents are at most {EXTENT_LIMIT}, got {self.shape}"
        for stride in self.strides():
            if stride % STRIDE_ALIGN or stride >= STRIDE_LIMIT:
                return (f"the rows of a tensor map are a multiple of {STRIDE_ALIGN} bytes apart: "
                        f"shape {self.shape} of {self.dtype} has rows of {self.shape[-1]} "
                        f"element(s), {self.shape[-1] * self.itemsize} bytes")
        return None

    def strides(self) -> list[int]:
        """The byte strides of every dimension but the innermost, innermost first."""
        return [math.prod(self.shape[k:]) * self.itemsize for k in range(len(self.shape) - 1, 0, -1)]

    def arguments(self) -> EncodeArguments:
        """What the driver is asked to encode (both handlers encode from these)."""
        rank = len(self.shape)
        return EncodeArguments(DATA_TYPES[self.dtype], rank, tuple(reversed(self.shape)),
                               tuple(self.strides()), tuple(reversed(self.box)), (1,) * rank, 0,
                               SWIZZLES[self.swizzle], L2_PROMOTION_128B, 0)

    def encode(self, address: int) -> bytes:
        """The 128-byte CUtensorMap of this layout at device `address`."""
        a = self.arguments()
        u64s, u32s = ctypes.c_uint64 * a.rank, ctypes.c_uint32 * a.rank
        strides = (ctypes.c_uint64 * max(a.rank - 1, 1))(*a.strides)
        out = _aligned_map()
        code = _encode_tiled()(
            ctypes.c_void_p(ctypes.addressof(out) + _offset(out)), a.data_type, a.rank,
            ctypes.c_void_p(address), u64s(*a.dims), strides, u32s(*a.box),
            u32s(*a.element_strides), a.interleave, a.swizzle, a.l2_promotion, a.oob_fill)
        if code:
            from ptxpy.runtime.driver import CudaError
            raise CudaError("cuTensorMapEncodeTiled", code,
                            detail=f"a map of {self} at {address:#x}")
        start = _offset(out)
        return bytes(out[start:start + TENSOR_MAP_BYTES])


def _aligned_map() -> ctypes.Array:
    return ctypes.create_string_buffer(TENSOR_MAP_BYTES + 64)


def _offset(buffer: ctypes.Array) -> int:
    """Where in `buffer` a 64-byte boundary lies (a CUtensorMap is 64-byte aligned)."""
    return -ctypes.addressof(buffer) % 64


_function = None


def _encode_tiled():
    """The driver's cuTensorMapEncodeTiled (libcuda, which cuda-python loads too)."""
    global _function
    if _function is None:
        function = ctypes.CDLL("libcuda.so.1").cuTensorMapEncodeTiled
        function.restype = ctypes.c_int
        function.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p,
                             ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                             ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int]
        _function = function
    return _function
