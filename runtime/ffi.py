"""The XLA FFI handler that launches ptxpy kernels, written in Python through ctypes.

One FFI target, `ptxpy_launch`, serves every kernel. Each call site carries one attribute, `plan`:
a 64-bit key into a process-wide table of `LaunchPlan`s (kernel, grid, block, packed by-value
parameters, which parameter slots take which XLA buffer). The key is a hash of the plan's content,
so a persistently cached executable can only ever find the plan it was compiled with.

The handler declares itself command-buffer compatible: it launches exactly one kernel whose
configuration depends only on the attribute, so XLA may put it into a CUDA graph and replay it
without calling back into Python (docs/jax.md has the measurements). Where XLA offers the FFI
record stage (`XLA_FFI_ExecutionStage_RECORD`, xla/ffi/api/record_c_api.h) the handler records
its kernel as a kernel node of XLA's graph instead of being stream-captured, and a kernel that
begins with `griddepcontrol.wait` is recorded as a programmatic dependent launch (PDL): it may
start while the kernel before it drains.

On a GPU the handler XLA calls is the C one of runtime/native.py where it can be built: it
launches and updates graph nodes natively (encoding their tensor maps itself) and passes every
other call to the Python handler here (`make_handler`), which can do everything.

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
from ptxpy.runtime import native as _native
from ptxpy.transpiler.abi import TENSOR_MAP_BYTES

TARGET = "ptxpy_launch"

# --- c_api.h ---------------------------------------------------------------------------------

_EXTENSION_METADATA = 1
_EXTENSION_RECORD = 128
_STAGE_EXECUTE = 3
_STAGE_RECORD = 4
_RECORD_CREATE = 0
_SOURCE_CUBIN = 1
_KERNEL_ARG_HOST_VALUE = 1
_DEFAULT_SHARED_LIMIT = 48 * 1024
_MAPS_KEPT = 64     # tensor maps a plan keeps encoded (by buffer address)
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


class ByteSpan(ctypes.Structure):
    _fields_ = [("ptr", ctypes.c_char_p), ("len", ctypes.c_size_t)]


# --- record_c_api.h --------------------------------------------------------------------------

class Dim3(ctypes.Structure):
    _fields_ = [("x", ctypes.c_int32), ("y", ctypes.c_int32), ("z", ctypes.c_int32)]


class LaunchDims(ctypes.Structure):
    _fields_ = [("grid", Dim3), ("block", Dim3), ("cluster", Dim3)]


class KernelArg(ctypes.Structure):
    _fields_ = [("arg_address", ctypes.c_void_p), ("size", ctypes.c_int64), ("type", ctypes.c_int)]


class KernelArgs(ctypes.Structure):
    _fields_ = [("args", ctypes.POINTER(KernelArg)), ("num_args", ctypes.c_int64)]


_CreateLaunch = ctypes.CFUNCTYPE(
    ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int,
    LaunchDims, ctypes.c_uint32, ctypes.c_int32, ctypes.POINTER(KernelArgs), ctypes.c_void_p,
    ctypes.c_uint32, ctypes.POINTER(ctypes.c_void_p))
_UpdateLaunch = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                 ctypes.POINTER(KernelArgs))
_RequestCapture = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p)


class RecordApi(ctypes.Structure):
    _fields_ = [("create_launch", _CreateLaunch), ("update_launch", _UpdateLaunch),
                ("create_memcpy_d2d", ctypes.c_void_p), ("update_memcpy_d2d", ctypes.c_void_p),
                ("request_stream_capture", _RequestCapture),
                ("create_empty_command", ctypes.c_void_p)]


class RecordFrame(ctypes.Structure):
    _fields_ = [("record_ctx", ctypes.c_void_p), ("api", ctypes.POINTER(RecordApi)),
                ("action", ctypes.c_int), ("commands", ctypes.POINTER(ctypes.c_void_p)),
                ("num_commands", ctypes.POINTER(ctypes.c_int64)), ("max_commands", ctypes.c_int64)]


class ExtensionId(ctypes.Structure):
    _fields_ = [("extension_type", ctypes.c_int64), ("major_version", ctypes.c_int32),
                ("minor_version", ctypes.c_int32)]


class Extension(ctypes.Structure):       # XLA_FFI_Extension, found through the invoke context
    _fields_ = [("struct_size", ctypes.c_size_t), ("id", ExtensionId), ("next", ctypes.c_void_p)]


class RecordExtension(ctypes.Structure):
    _fields_ = [("extension_base", Extension), ("record_frame", ctypes.POINTER(RecordFrame))]


class FindExtensionArgs(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("extension_start", ctypes.c_void_p),
                ("ctx", ctypes.c_void_p), ("extension_type", ctypes.c_int64),
                ("extension", ctypes.POINTER(RecordExtension))]


_ErrorCreate = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.POINTER(ErrorCreateArgs))
_StreamGet = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.POINTER(StreamGetArgs))
_FindExtension = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.POINTER(FindExtensionArgs))
Handler = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.POINTER(CallFrame))

# XLA_FFI_Api: struct_size, extension_start, api_version (24 bytes), internal_api, then the
# function pointers in this order.
_API_FUNCTIONS = ["Error_Create", "Error_GetDetails", "Error_Destroy", "Handler_Register",
                  "Stream_Get", "Type_Register", "InvokeContext_Get", "State_Set", "State_Get",
                  "DeviceMemory_Allocate", "DeviceMemory_Free", "ThreadPool_Schedule",
                  "ThreadPool_NumThreads", "Future_Create", "Future_SetAvailable",
                  "Future_SetError", "RunId_Get", "DeviceOrdinal_Get", "InvokeContext_FindExtension"]
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
    then results) goes at `offset`; `tensor_slots` (launch.TensorSlot) the tensor maps of such
    buffers, encoded for each new pointer (by the C handler at every call it makes).
    `run(plan, stream, pointers)` performs the launch.
    """
    kernel: str
    image: object
    grid: tuple
    block: tuple
    shared: int
    params: bytes
    offsets: list
    pointer_slots: list
    pdl: bool = False      # the kernel begins with griddepcontrol.wait: may be launched with PDL
    key: int = 0
    tensor_slots: list = field(default_factory=list)
    _buffer: ctypes.Array = field(init=False, repr=False)
    _param_ptrs: ctypes.Array = field(init=False, repr=False)
    _lock: threading.Lock = field(init=False, repr=False, default_factory=threading.Lock)
    _kernel_args: KernelArgs | None = field(init=False, repr=False, default=None)
    native: _native.NativePlan | None = field(init=False, repr=False, default=None)
    _native_functions: dict = field(init=False, repr=False, default_factory=dict)
    #: (tensor slot, pointer) -> the map's bytes: XLA hands the same buffers back call after call
    _maps: dict = field(init=False, repr=False, default_factory=dict)

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
        for slot in self.tensor_slots:
            self._buffer[slot.offset:slot.offset + TENSOR_MAP_BYTES] = self._tensor_map(
                slot, pointers[slot.index])
        return ctypes.addressof(self._param_ptrs)

    def _tensor_map(self, slot, pointer: int) -> bytes:
        encoded = self._maps.get((slot, pointer))
        if encoded is None:
            if len(self._maps) >= _MAPS_KEPT:
                self._maps.clear()
            encoded = self._maps[slot, pointer] = slot.layout.encode(pointer)
        return encoded

    def kernel_args(self) -> KernelArgs:
        """The parameter block as record-API host values (XLA copies them when called). Made once:
        the values live in the plan's buffer, which `fill` rewrites in place."""
        if self._kernel_args is None:
            base = ctypes.addressof(self._buffer)
            ends = list(self.offsets[1:]) + [len(self.params)]
            items = [KernelArg(base + o, max(end - o, 1), _KERNEL_ARG_HOST_VALUE)
                     for o, end in zip(self.offsets, ends)]
            array = (KernelArg * max(len(items), 1))(*items)
            self._kernel_args = KernelArgs(array, len(items))
            self._kernel_args._keep = array
        return self._kernel_args

    def locked(self):
        return self._lock

    def make_native(self) -> None:
        """Hands the plan to the C handler (once): its packed parameters, without pointers or
        tensor maps, and where those go. A plan C cannot take stays with the Python handler."""
        if self.native is None:
            template = ctypes.create_string_buffer(self.params, max(len(self.params), 8))
            try:
                native = _native.make_plan(
                    self.key, self.grid, self.block, self.shared,
                    self.shared > _DEFAULT_SHARED_LIMIT, ctypes.addressof(template),
                    len(self.params), self.offsets, self.pointer_slots, self.tensor_slots)
            except ValueError:
                return
            native._template = template
            self.native = native
            _native.add_plan(self.native)

    def tell_native(self, stream: int) -> None:
        """Tells the C handler this plan's CUfunction in `stream`'s context (when it is new),
        after a launch there succeeded."""
        if self.native is None:
            return
        ctx = _driver.stream_context(stream)
        function = int(self.image.function_in(ctx))
        if self._native_functions.get(ctx) != function:
            self._native_functions[ctx] = function
            _native.set_function(self.native, ctx, function)


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
            if _native_handler_registered:
                plan.make_native()
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
    names = (ctypes.POINTER(ByteSpan) * attrs.size).from_address(attrs.names) if attrs.size else []
    index = next((i for i, n in enumerate(names)
                  if ctypes.string_at(n.contents.ptr, n.contents.len) == b"plan"), None)
    if index is None or attrs.types[index] != _ATTR_SCALAR:
        raise HandlerError(f"expected a scalar attribute 'plan' among {attrs.size} attributes")
    scalar = ScalarAttr.from_address(attrs.attrs[index])
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


def _record_frame(frame: CallFrame) -> RecordFrame:
    """The record frame XLA attaches to the invoke context at the record stage."""
    args = FindExtensionArgs(ctypes.sizeof(FindExtensionArgs), None, frame.ctx, _EXTENSION_RECORD,
                             None)
    err = _api_function(frame.api, "InvokeContext_FindExtension", _FindExtension)(ctypes.byref(args))
    if err or not args.extension or not args.extension.contents.record_frame:
        raise HandlerError("XLA called the record stage without the record extension")
    return args.extension.contents.record_frame.contents


def make_handler(run: Callable[[LaunchPlan, int, list], None], with_stream: bool = True,
                 record: Callable | None = None):
    """A ctypes XLA_FFI_Handler that decodes a call frame and calls `run(plan, stream, pointers)`
    (stream 0 when `with_stream` is false: XLA's CPU backend has none); at the record stage it
    calls `record(plan, record_frame, stream_of, pointers)` (`stream_of()` gives the stream), which
    returns an XLA_FFI_Error* or 0."""

    def handler(frame_ptr):
        frame = frame_ptr.contents
        api = frame.api
        try:
            if frame.extension_start and frame.extension_start.contents.type == _EXTENSION_METADATA:
                _set_metadata(frame)
                return None
            recording = frame.stage == _STAGE_RECORD and record is not None
            if frame.stage != _STAGE_EXECUTE and not recording:
                return None
            key = _plan_key(frame.attrs)
            entry = _plans.get(key)
            if entry is None:
                raise HandlerError(f"no ptxpy launch plan {key} in this process (an executable "
                                   "compiled in another process cannot run ptxpy kernels)")
            pointers = _buffer_pointers(frame.args) + _buffer_pointers(frame.rets)
            if recording:
                return record(entry, _record_frame(frame), lambda: _stream(frame, api),
                              pointers) or None
            run(entry, _stream(frame, api) if with_stream else 0, pointers)
            return None
        except BaseException as e:  # never let an exception unwind through XLA
            return _error(api, _message(e))

    return Handler(handler)


def _message(e: BaseException) -> str:
    detail = "" if isinstance(e, (HandlerError, RuntimeError)) else "\n" + traceback.format_exc()
    return f"ptxpy: {type(e).__name__}: {e}{detail}"


_python_counts = [0, 0]     # launches, record-stage calls made by the Python handler


def __getattr__(name: str) -> int:
    """`calls`: how many times a handler launched a kernel at XLA's execute stage (a CUDA graph
    replay calls no handler); `records`: how many times XLA asked a handler to record (create or
    update) a kernel node. Both count the C handler's calls and the Python handler's."""
    if name in ("calls", "records"):
        index = ("calls", "records").index(name)
        return _python_counts[index] + _native.counters()[index]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def run_on_gpu(entry: LaunchPlan, stream: int, pointers: list) -> None:
    """The CUDA launch: the CUfunction of the stream's context, the filled parameters, XLA's stream."""
    _python_counts[0] += 1
    with entry.locked():
        params = entry.fill(pointers)
        _driver.launch_on_stream(entry.image, entry.grid, entry.block, entry.shared, stream, params)
    entry.tell_native(stream)


_cubins: dict[tuple, ctypes.Array] = {}   # XLA keys its loaded kernels by this memory's address


def _cubin_buffer(image, ordinal: int) -> ctypes.Array:
    key = (image.name, image.digest, ordinal)
    buffer = _cubins.get(key)
    if buffer is None:
        buffer = _cubins.setdefault(key, ctypes.create_string_buffer(image.cubin(ordinal)))
    return buffer


def record_on_gpu(entry: LaunchPlan, frame: RecordFrame, stream_of: Callable[[], int],
                  pointers: list) -> int:
    """The record stage: creates (or updates the buffers of) one kernel node in XLA's graph, with
    PDL when the kernel waits for its predecessors. Kernels over the default shared-memory limit
    ask XLA to stream-capture the execute stage instead (XLA loads the kernel itself and would
    not raise its dynamic shared-memory limit)."""
    _python_counts[1] += 1
    api = frame.api.contents
    if entry.shared > _DEFAULT_SHARED_LIMIT:
        return api.request_stream_capture(frame.record_ctx)
    if frame.action != _RECORD_CREATE:     # the buffers moved: new pointers for the same node
        if not frame.commands or frame.num_commands[0] < 1:
            raise HandlerError("XLA asked to update a kernel node it did not pass back")
        with entry.locked():
            entry.fill(pointers)
            return api.update_launch(frame.record_ctx, frame.commands[0],
                                     ctypes.byref(entry.kernel_args()))
    cubin = _cubin_buffer(entry.image, _driver.ordinal_of_context(_driver.stream_context(stream_of())))
    with entry.locked():
        entry.fill(pointers)
        args = entry.kernel_args()
        dims = LaunchDims(Dim3(*entry.grid), Dim3(*entry.block), Dim3(0, 0, 0))
        command = ctypes.c_void_p()
        err = api.create_launch(frame.record_ctx, entry.kernel.encode(), ctypes.addressof(cubin),
                                len(cubin) - 1, _SOURCE_CUBIN, dims, entry.shared, int(entry.pdl),
                                ctypes.byref(args), None, 0, ctypes.byref(command))
    if not err and frame.commands:
        if frame.num_commands[0] >= frame.max_commands:
            raise HandlerError("no room in XLA's command list for the kernel node")
        frame.commands[frame.num_commands[0]] = command.value
        frame.num_commands[0] += 1
    return err


# --- registration and the call ---------------------------------------------------------------

_handlers: dict[tuple[str, str], object] = {}   # keeps the ctypes trampolines alive
_register_lock = threading.Lock()


def register_target(name: str = TARGET, platform: str = "CUDA",
                    run: Callable[[LaunchPlan, int, list], None] = run_on_gpu,
                    record: bool = True) -> str:
    """Registers (once) the handler `name` for `platform`; returns `name`. With `record` false
    the handler serves XLA's execute stage only (XLA stream-captures it into its graphs)."""
    import jax

    with _register_lock:
        if (name, platform) not in _handlers:
            gpu = platform.upper() in ("CUDA", "GPU")
            recorded = gpu and run is run_on_gpu and record
            handler = make_handler(run, with_stream=gpu, record=record_on_gpu if recorded else None)
            address = _native_address(handler) if recorded else None
            _register(jax, name, address or ctypes.cast(handler, ctypes.c_void_p).value, platform,
                      record=recorded)
            _handlers[(name, platform)] = handler    # (only once registered: else tried again)
            if address:
                _use_native_plans()
    return name


#: Whether XLA calls the C handler (runtime/native.py) for the GPU.
_native_handler_registered = False


def _native_address(python_handler) -> int | None:
    """The C handler's address, with `python_handler` behind it; None where it cannot be had."""
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None
    launch, get_ctx = (ctypes.cast(getattr(cuda, f), ctypes.c_void_p).value
                       for f in ("cuLaunchKernel", "cuStreamGetCtx"))
    encode = getattr(cuda, "cuTensorMapEncodeTiled", None)     # drivers of CUDA 12 and later
    return _native.handler_address(python_handler, launch, get_ctx,
                                   ctypes.cast(encode, ctypes.c_void_p).value if encode else None)


def _use_native_plans() -> None:
    global _native_handler_registered
    with _plans_lock:
        _native_handler_registered = True
        for plan in _plans.values():
            plan.make_native()


class HandlerBundle(ctypes.Structure):
    _fields_ = [("instantiate", ctypes.c_void_p), ("prepare", ctypes.c_void_p),
                ("initialize", ctypes.c_void_p), ("execute", ctypes.c_void_p),
                ("record", ctypes.c_void_p)]


class HandlerRegisterArgs(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("extension_start", ctypes.c_void_p),
                ("name", ByteSpan), ("platform", ByteSpan), ("bundle", HandlerBundle),
                ("traits", ctypes.c_uint32)]


_HandlerRegister = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.POINTER(HandlerRegisterArgs))

#: Whether the handler is registered for XLA's record stage as well as the execute stage.
recording_registered = False


def _register(jax, name: str, address: int, platform: str, record: bool) -> None:
    """Registers the handler at `address` for `name`. With `record`, directly through the XLA
    FFI API (JAX's own registration passes the execute stage only) for the execute and record
    stages; where that API has no record stage, through JAX for the execute stage."""
    global recording_registered
    api = _xla_ffi_api(jax, platform) if record else None
    if api is not None and _api_has(api, "InvokeContext_FindExtension"):
        name_bytes, platform_bytes = name.encode(), platform.encode()
        args = HandlerRegisterArgs(HandlerRegisterArgs.traits.offset + 4, None,  # no tail padding
                                   ByteSpan(name_bytes, len(name_bytes)),
                                   ByteSpan(platform_bytes, len(platform_bytes)),
                                   HandlerBundle(None, None, None, address, address),
                                   _TRAIT_COMMAND_BUFFER_COMPATIBLE)
        if not _api_function(api, "Handler_Register", _HandlerRegister)(ctypes.byref(args)):
            recording_registered = True
            return
    jax.ffi.register_ffi_target(name, jax.ffi.pycapsule(address), platform=platform,
                                api_version=1)


def _xla_ffi_api(jax, platform: str) -> int | None:
    """The XLA_FFI_Api of `platform`'s XLA, read from the call frame of the metadata query that
    registering a probe handler through JAX makes; None if no query came."""
    seen: list[int] = []

    def probe(frame_ptr):
        frame = frame_ptr.contents
        seen.append(frame.api)
        if frame.extension_start and frame.extension_start.contents.type == _EXTENSION_METADATA:
            _set_metadata(frame)
        return None

    handler = _handlers[("ptxpy_api_probe", platform)] = Handler(probe)
    jax.ffi.register_ffi_target("ptxpy_api_probe",
                                jax.ffi.pycapsule(ctypes.cast(handler, ctypes.c_void_p).value),
                                platform=platform, api_version=1)
    return seen[0] if seen else None


def _api_has(api: int, name: str) -> bool:
    """Whether the XLA_FFI_Api at `api` (by its struct_size) has function `name`."""
    end = _API_FIRST_FUNCTION + 8 * (_API_FUNCTIONS.index(name) + 1)
    return ctypes.c_size_t.from_address(api).value >= end


def call(key: int, operands: list, out_types: list, input_output_aliases: dict | None = None,
         vmap_method: str = "sequential", target: str = TARGET) -> list:
    """`jax.ffi.ffi_call` of plan `key` on `operands`; returns the list of outputs. A plan whose
    kernel may be launched with PDL carries `uses_pdl=True`, which XLA reads from the call."""
    import jax
    import numpy as np

    fn = jax.ffi.ffi_call(target, list(out_types), vmap_method=vmap_method,
                          input_output_aliases=input_output_aliases or None)
    entry = _plans.get(key)
    if entry is not None and entry.pdl:
        return list(fn(*operands, plan=np.int64(key), uses_pdl=True))
    return list(fn(*operands, plan=np.int64(key)))
