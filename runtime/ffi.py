"""The XLA FFI handler that launches ptxpy kernels, written in Python through ctypes.

One FFI target, `ptxpy_launch`, serves every kernel. Each call site carries one attribute, `plan`:
a 64-bit key into a process-wide table of `LaunchPlan`s (kernel, grid, block, packed by-value
parameters, which parameter slots take which XLA buffer). The key is a hash of the plan's content,
so a persistently cached executable can only ever find the plan it was compiled with.

The handler declares itself command-buffer compatible: it launches exactly one kernel whose
configuration depends only on the attribute, so XLA may capture it into a CUDA graph and replay
it without calling back into Python (docs/jax.md has the measurements).

Struct layouts follow xla/ffi/api/c_api.h (jax.ffi.include_dir()).
"""
from __future__ import annotations

import ctypes
import hashlib
import struct
import threading
import traceback
from dataclasses import dataclass, field
from typing import Callable

from ptxpy.runtime import driver as _driver

TARGET = "ptxpy_launch"

# --- c_api.h ---------------------------------------------------------------------------------

_EXTENSION_METADATA = 1
_STAGE_EXECUTE = 3
_TRAIT_COMMAND_BUFFER_COMPATIBLE = 1
_ERROR_INTERNAL = 13
_ATTR_SCALAR = 3
_DTYPE_S64 = 5


class ExtensionBase(ctypes.Structure):
    pass


ExtensionBase._fields_ = [("struct_size", ctypes.c_size_t), ("type", ctypes.c_int),
                          ("next", ctypes.POINTER(ExtensionBase))]


class ApiVersion(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("extension_start", ctypes.c_void_p),
                ("major_version", ctypes.c_int), ("minor_version", ctypes.c_int)]


class Metadata(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("api_version", ApiVersion),
                ("traits", ctypes.c_uint32)]


class MetadataExtension(ctypes.Structure):
    _fields_ = [("extension_base", ExtensionBase), ("metadata", ctypes.POINTER(Metadata))]


class Args(ctypes.Structure):       # XLA_FFI_Args and XLA_FFI_Rets share this layout
    _fields_ = [("struct_size", ctypes.c_size_t), ("extension_start", ctypes.c_void_p),
                ("size", ctypes.c_int64), ("types", ctypes.c_void_p), ("args", ctypes.c_void_p)]


class Attrs(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("extension_start", ctypes.c_void_p),
                ("size", ctypes.c_int64), ("types", ctypes.POINTER(ctypes.c_int)),
                ("names", ctypes.c_void_p), ("attrs", ctypes.POINTER(ctypes.c_void_p))]


class ScalarAttr(ctypes.Structure):
    _fields_ = [("dtype", ctypes.c_int), ("value", ctypes.POINTER(ctypes.c_int64))]


class CallFrame(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("extension_start", ctypes.POINTER(ExtensionBase)),
                ("api", ctypes.c_void_p), ("ctx", ctypes.c_void_p), ("stage", ctypes.c_int),
                ("args", Args), ("rets", Args), ("attrs", Attrs), ("future", ctypes.c_void_p)]


class ErrorCreateArgs(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("extension_start", ctypes.c_void_p),
                ("message", ctypes.c_char_p), ("errc", ctypes.c_int)]


class StreamGetArgs(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("extension_start", ctypes.c_void_p),
                ("ctx", ctypes.c_void_p), ("stream", ctypes.c_void_p)]


_ErrorCreate = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.POINTER(ErrorCreateArgs))
_StreamGet = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.POINTER(StreamGetArgs))
Handler = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.POINTER(CallFrame))

# XLA_FFI_Api: struct_size, extension_start, api_version (24 bytes), internal_api, then the
# function pointers in this order.
_API_FUNCTIONS = ["Error_Create", "Error_GetMessage", "Error_Destroy", "Handler_Register",
                  "Stream_Get"]
_API_FIRST_FUNCTION = 8 + 8 + ctypes.sizeof(ApiVersion) + 8
_BUFFER_DATA_OFFSET = 24  # XLA_FFI_Buffer: struct_size, extension_start, dtype (+pad), data


_api_functions: dict[tuple[int, str], object] = {}


def _api_function(api: int, name: str, prototype):
    """The ctypes callable of function `name` of the XLA_FFI_Api at `api` (made once)."""
    fn = _api_functions.get((api, name))
    if fn is None:
        slot = api + _API_FIRST_FUNCTION + 8 * _API_FUNCTIONS.index(name)
        fn = _api_functions[(api, name)] = prototype(ctypes.c_void_p.from_address(slot).value)
    return fn


# --- launch plans ----------------------------------------------------------------------------

@dataclass(eq=False)
class LaunchPlan:
    """Everything a launch needs besides XLA's buffers and stream.

    `params` holds the packed parameter values (`offsets[i]` is where `.param` i starts);
    `pointer_slots` are (offset, index) pairs: the data pointer of XLA buffer `index` (operands,
    then results) goes at `offset`. `run(plan, stream, pointers)` performs the launch.
    """
    kernel: str
    image: object
    grid: tuple
    block: tuple
    shared: int
    params: bytes
    offsets: list
    pointer_slots: list
    key: int = 0
    _buffer: ctypes.Array = field(init=False, repr=False)
    _param_ptrs: ctypes.Array = field(init=False, repr=False)
    _lock: threading.Lock = field(init=False, repr=False, default_factory=threading.Lock)

    def __post_init__(self):
        self._buffer = ctypes.create_string_buffer(self.params, max(len(self.params), 8))
        base = ctypes.addressof(self._buffer)
        self._param_ptrs = (ctypes.c_void_p * max(len(self.offsets), 1))(*(base + o for o in self.offsets))

    def fill(self, pointers: list[int]) -> int:
        """Writes the buffer pointers into the parameter block; returns the `void**` to launch with.

        Call with the plan's lock held (`with plan.locked():`).
        """
        for offset, index in self.pointer_slots:
            struct.pack_into("<Q", self._buffer, offset, pointers[index])
        return ctypes.addressof(self._param_ptrs)

    def locked(self):
        return self._lock


_plans: dict[int, LaunchPlan] = {}
_plans_lock = threading.Lock()


def register_plan(plan: LaunchPlan, content_key: tuple) -> int:
    """Stores `plan` under a 63-bit hash of `content_key` and returns that key (the attribute).
    A plan with the same content registered before is kept."""
    digest = hashlib.sha256(repr(content_key).encode()).digest()
    key = int.from_bytes(digest[:8], "little") >> 1
    with _plans_lock:
        if key not in _plans:
            plan.key = key
            _plans[key] = plan
    return key


def plan(key: int) -> LaunchPlan:
    return _plans[key]


# --- the handler -----------------------------------------------------------------------------

class HandlerError(Exception):
    pass


def _stream(frame: CallFrame, api: int) -> int:
    args = StreamGetArgs(ctypes.sizeof(StreamGetArgs), None, frame.ctx, None)
    err = _api_function(api, "Stream_Get", _StreamGet)(ctypes.byref(args))
    if err:
        raise HandlerError("XLA_FFI_Stream_Get failed")
    return args.stream or 0


def _buffer_pointers(table: Args) -> list[int]:
    if table.size == 0:
        return []
    buffers = (ctypes.c_uint64 * table.size).from_address(table.args)
    return [ctypes.c_uint64.from_address(b + _BUFFER_DATA_OFFSET).value for b in buffers]


def _plan_key(attrs: Attrs) -> int:
    if attrs.size != 1 or attrs.types[0] != _ATTR_SCALAR:
        raise HandlerError(f"expected one scalar attribute 'plan', got {attrs.size} attributes")
    scalar = ScalarAttr.from_address(attrs.attrs[0])
    if scalar.dtype != _DTYPE_S64:
        raise HandlerError(f"attribute 'plan' has XLA dtype {scalar.dtype}, expected S64")
    return scalar.value[0]


def _set_metadata(frame: CallFrame) -> None:
    ext = ctypes.cast(frame.extension_start, ctypes.POINTER(MetadataExtension)).contents
    meta = ext.metadata.contents
    meta.api_version.major_version = 0
    meta.api_version.minor_version = 1
    meta.traits = _TRAIT_COMMAND_BUFFER_COMPATIBLE


def _error(api: int, message: str) -> int:
    args = ErrorCreateArgs(ctypes.sizeof(ErrorCreateArgs), None, message.encode(errors="replace"),
                           _ERROR_INTERNAL)
    return _api_function(api, "Error_Create", _ErrorCreate)(ctypes.byref(args))


def make_handler(run: Callable[[LaunchPlan, int, list], None], with_stream: bool = True):
    """A ctypes XLA_FFI_Handler that decodes a call frame and calls `run(plan, stream, pointers)`
    (stream 0 when `with_stream` is false: XLA's CPU backend has none)."""

    def handler(frame_ptr):
        frame = frame_ptr.contents
        api = frame.api
        try:
            if frame.extension_start and frame.extension_start.contents.type == _EXTENSION_METADATA:
                _set_metadata(frame)
                return None
            if frame.stage != _STAGE_EXECUTE:
                return None
            key = _plan_key(frame.attrs)
            entry = _plans.get(key)
            if entry is None:
                raise HandlerError(f"no ptxpy launch plan {key} in this process (an executable "
                                   "compiled in another process cannot run ptxpy kernels)")
            pointers = _buffer_pointers(frame.args) + _buffer_pointers(frame.rets)
            run(entry, _stream(frame, api) if with_stream else 0, pointers)
            return None
        except BaseException as e:  # never let an exception unwind through XLA
            return _error(api, _message(e))

    return Handler(handler)


def _message(e: BaseException) -> str:
    detail = "" if isinstance(e, (HandlerError, RuntimeError)) else "\n" + traceback.format_exc()
    return f"ptxpy: {type(e).__name__}: {e}{detail}"


#: How many times the CUDA handler ran (a CUDA graph replay does not call it).
calls = 0


def run_on_gpu(entry: LaunchPlan, stream: int, pointers: list) -> None:
    """The CUDA launch: the CUfunction of the stream's context, the filled parameters, XLA's stream."""
    global calls
    calls += 1
    with entry.locked():
        params = entry.fill(pointers)
        _driver.launch_on_stream(entry.image, entry.grid, entry.block, entry.shared, stream, params)


# --- registration and the call ---------------------------------------------------------------

_handlers: dict[tuple[str, str], object] = {}   # keeps the ctypes trampolines alive
_register_lock = threading.Lock()


def register_target(name: str = TARGET, platform: str = "CUDA",
                    run: Callable[[LaunchPlan, int, list], None] = run_on_gpu) -> str:
    """Registers (once) the handler `name` for `platform`; returns `name`."""
    import jax

    with _register_lock:
        if (name, platform) not in _handlers:
            handler = make_handler(run, with_stream=platform.upper() in ("CUDA", "GPU"))
            address = ctypes.cast(handler, ctypes.c_void_p).value
            jax.ffi.register_ffi_target(name, jax.ffi.pycapsule(address), platform=platform,
                                        api_version=1)
            _handlers[(name, platform)] = handler
    return name


def call(key: int, operands: list, out_types: list, input_output_aliases: dict | None = None,
         vmap_method: str = "sequential", target: str = TARGET) -> list:
    """`jax.ffi.ffi_call` of plan `key` on `operands`; returns the list of outputs."""
    import jax
    import numpy as np

    fn = jax.ffi.ffi_call(target, list(out_types), vmap_method=vmap_method,
                          input_output_aliases=input_output_aliases or None)
    return list(fn(*operands, plan=np.int64(key)))
