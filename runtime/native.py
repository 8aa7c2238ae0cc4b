"""The C fast path of the FFI handler (runtime/native_handler.c): built, loaded, fed plans.

XLA calls ptxpy's handler at every eager launch and, inside a CUDA graph, every time the
buffers of a recorded kernel node move between two runs (a jitted step whose outputs are kept
while the next step runs moves them every time). Through Python that costs about 16 us per
kernel; the C handler does those two calls natively and passes everything else (creating graph
nodes, a first launch in a context, errors) to the Python handler in runtime/ffi.py. A plan's
tensor maps (`ptxpy.tma_load`/`tma_store`) are encoded by C at every such call, straight into
the parameters on its stack, with libcuda's cuTensorMapEncodeTiled and the arguments of
runtime/tensor_map.py (`TensorMapLayout.arguments`); a map the driver refuses sends the call to
Python, which reports the error.

The C file is compiled on first use with the system's C compiler (`$CC`, else `cc`), about
0.1 s, into the disk cache (runtime/cache.py: keyed by the source and the compiler), and
loaded from there afterwards. The runtime's preload (ptxpy/api.py, `_preload`) does this on a
background thread as soon as a kernel is decorated on a machine with an NVIDIA driver, so that
a first call seldom waits for it. Without a C compiler, or with `PTXPY_NATIVE_HANDLER=0`, the
Python handler does everything, as before.
"""
from __future__ import annotations

import ctypes
import hashlib
import logging
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

from ptxpy.transpiler.abi import TENSOR_MAP_BYTES

log = logging.getLogger("ptxpy.native")

SOURCE = Path(__file__).with_name("native_handler.c")
MAX_CONTEXTS = 8
MAX_TENSOR_RANK = 5       # cuTensorMapEncodeTiled's
TENSOR_MAP_ALIGN = 64


class TensorMapSlot(ctypes.Structure):
    """A tensor map in the parameter block (`TensorMapSlot` in native_handler.c): at `offset`,
    the map of XLA buffer `index`'s data pointer; the rest are cuTensorMapEncodeTiled's
    arguments (runtime/tensor_map.py, `EncodeArguments`)."""
    _fields_ = [("offset", ctypes.c_int64), ("index", ctypes.c_int64),
                ("dims", ctypes.c_uint64 * MAX_TENSOR_RANK),
                ("strides", ctypes.c_uint64 * (MAX_TENSOR_RANK - 1)),
                ("box", ctypes.c_uint32 * MAX_TENSOR_RANK),
                ("element_strides", ctypes.c_uint32 * MAX_TENSOR_RANK),
                ("data_type", ctypes.c_int32), ("rank", ctypes.c_uint32),
                ("interleave", ctypes.c_int32), ("swizzle", ctypes.c_int32),
                ("l2_promotion", ctypes.c_int32), ("oob_fill", ctypes.c_int32)]


class NativePlan(ctypes.Structure):
    """The C handler's view of a launch plan (`Plan` in native_handler.c)."""
    _fields_ = [("key", ctypes.c_int64), ("grid", ctypes.c_uint32 * 3),
                ("block", ctypes.c_uint32 * 3), ("shared", ctypes.c_uint32),
                ("stream_capture", ctypes.c_int32), ("num_params", ctypes.c_int64),
                ("param_bytes", ctypes.c_int64), ("params", ctypes.c_void_p),
                ("offsets", ctypes.POINTER(ctypes.c_int64)), ("num_slots", ctypes.c_int64),
                ("slot_offsets", ctypes.POINTER(ctypes.c_int64)),
                ("slot_indices", ctypes.POINTER(ctypes.c_int64)),
                ("num_maps", ctypes.c_int64), ("maps", ctypes.POINTER(TensorMapSlot)),
                ("contexts", ctypes.c_void_p * MAX_CONTEXTS),
                ("functions", ctypes.c_void_p * MAX_CONTEXTS)]


_Handler = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p)
_library: ctypes.CDLL | None = None
_tried = False
_lock = threading.Lock()


def enabled() -> bool:
    return os.environ.get("PTXPY_NATIVE_HANDLER", "1").strip().lower() not in ("0", "false", "no", "off")


def compiler() -> str | None:
    return shutil.which(os.environ.get("CC") or "cc")


def build(folder: Path) -> Path | None:
    """Compiles native_handler.c into `folder` (once per source and compiler); the library's
    path, or None when there is no C compiler or it fails."""
    cc = compiler()
    if cc is None:
        log.info("no C compiler: the FFI handler stays in Python")
        return None
    source = SOURCE.read_bytes()
    digest = hashlib.sha256(source + cc.encode()).hexdigest()[:16]
    target = folder / f"ptxpy-handler-{digest}.so"
    if target.exists():
        return target
    folder.mkdir(parents=True, exist_ok=True)
    fd, partial = tempfile.mkstemp(suffix=".so", dir=folder)
    os.close(fd)
    done = subprocess.run([cc, "-O2", "-shared", "-fPIC", "-o", partial, str(SOURCE)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        os.unlink(partial)
        log.warning("building the C FFI handler failed, the Python one is used:\n%s", done.stderr)
        return None
    os.replace(partial, target)     # other processes see no file or a whole one
    return target


def library() -> ctypes.CDLL | None:
    """The loaded C handler library (built on first call), or None."""
    global _library, _tried
    with _lock:
        if not _tried:
            _tried = True
            _library = _load() if enabled() else None
        return _library


def _load() -> ctypes.CDLL | None:
    from ptxpy.runtime import cache
    folder = cache.cache_dir() / "native" if cache.disk_enabled() else Path(tempfile.mkdtemp())
    try:
        path = build(folder)
        if path is None:
            return None
        lib = ctypes.CDLL(str(path))
    except OSError as e:
        log.warning("loading the C FFI handler failed, the Python one is used: %s", e)
        return None
    lib.ptxpy_native_add_plan.argtypes = [ctypes.POINTER(NativePlan)]
    lib.ptxpy_native_set_function.argtypes = [ctypes.POINTER(NativePlan), ctypes.c_void_p,
                                              ctypes.c_void_p]
    lib.ptxpy_native_init.argtypes = [ctypes.c_void_p] * 4
    lib.ptxpy_native_counters.argtypes = [ctypes.POINTER(ctypes.c_int64)]
    return lib


def handler_address(python_handler, launch_kernel: int, stream_get_ctx: int,
                    encode_tiled: int | None) -> int | None:
    """The C handler's address, set up to call `python_handler` (a ctypes function) for what it
    does not do itself; None without the library. The driver functions are addresses; without
    `encode_tiled` (cuTensorMapEncodeTiled) plans with tensor maps go to Python."""
    lib = library()
    if lib is None:
        return None
    lib.ptxpy_native_init(ctypes.cast(python_handler, ctypes.c_void_p), launch_kernel,
                          stream_get_ctx, encode_tiled)
    return ctypes.cast(lib.ptxpy_native_handler, ctypes.c_void_p).value


def make_plan(key: int, grid, block, shared: int, stream_capture: bool, params: int,
              param_bytes: int, offsets: list, pointer_slots: list,
              tensor_slots: list = ()) -> NativePlan:
    """A NativePlan over the packed parameters at address `params` (which must outlive it);
    `tensor_slots` are launch.TensorSlots."""
    ints = ctypes.c_int64 * max(len(offsets), 1)
    slots = ctypes.c_int64 * max(len(pointer_slots), 1)
    maps = (TensorMapSlot * max(len(tensor_slots), 1))(
        *(tensor_map_slot(slot, param_bytes) for slot in tensor_slots))
    plan = NativePlan(key=key, grid=(ctypes.c_uint32 * 3)(*grid),
                      block=(ctypes.c_uint32 * 3)(*block), shared=shared,
                      stream_capture=int(stream_capture), num_params=len(offsets),
                      param_bytes=param_bytes, params=params, num_slots=len(pointer_slots),
                      num_maps=len(tensor_slots), maps=maps)
    plan._arrays = (ints(*offsets), slots(*(o for o, _ in pointer_slots)),
                    slots(*(i for _, i in pointer_slots)), maps)
    plan.offsets, plan.slot_offsets, plan.slot_indices = (
        ctypes.cast(a, ctypes.POINTER(ctypes.c_int64)) for a in plan._arrays[:3])
    return plan


def tensor_map_slot(slot, param_bytes: int) -> TensorMapSlot:
    """The C view of launch.TensorSlot `slot` (its layout's encoding arguments)."""
    a = slot.layout.arguments()
    if not 1 <= a.rank <= MAX_TENSOR_RANK or slot.offset % TENSOR_MAP_ALIGN or \
            slot.offset + TENSOR_MAP_BYTES > param_bytes:
        raise ValueError(f"no native tensor map of rank {a.rank} at offset {slot.offset} of "
                         f"{param_bytes} parameter bytes")
    return TensorMapSlot(slot.offset, slot.index, (ctypes.c_uint64 * MAX_TENSOR_RANK)(*a.dims),
                         (ctypes.c_uint64 * (MAX_TENSOR_RANK - 1))(*a.strides),
                         (ctypes.c_uint32 * MAX_TENSOR_RANK)(*a.box),
                         (ctypes.c_uint32 * MAX_TENSOR_RANK)(*a.element_strides), a.data_type,
                         a.rank, a.interleave, a.swizzle, a.l2_promotion, a.oob_fill)


def add_plan(plan: NativePlan) -> bool:
    lib = library()
    return bool(lib and lib.ptxpy_native_add_plan(ctypes.byref(plan)))


def set_function(plan: NativePlan, ctx: int, function: int) -> bool:
    lib = library()
    return bool(lib and lib.ptxpy_native_set_function(ctypes.byref(plan), ctx, function))


def counters() -> tuple[int, int, int]:
    """(launches, node updates, calls passed to Python) the C handler has made; never builds
    the library (a process without a GPU reads zeros)."""
    lib = _library
    if lib is None:
        return (0, 0, 0)
    out = (ctypes.c_int64 * 3)()
    lib.ptxpy_native_counters(out)
    return tuple(out)
