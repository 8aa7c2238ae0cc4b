"""The CUDA driver through cuda-python: contexts, module loading, launches.

ptxpy runs in the *primary* context of each device, the one JAX (XLA) uses, so device pointers
from JAX arrays and XLA's streams are valid for the functions loaded here. A kernel's PTX is
assembled to a cubin once per (PTX, GPU arch, driver version, compiler): by the driver's JIT
(`cuLink*`), or by the `ptxas` that PTXPY_PTXAS names (runtime/compiler.py); the cubin is kept in
the disk cache beside the PTX, then loaded with `cuModuleLoadData` once per device context.

Every failing CUDA call raises `CudaError`, which names the call, the kernel and the device.
Nothing here runs at import time: importing this module needs no GPU.
"""
from __future__ import annotations

import ctypes
import hashlib
import threading
from dataclasses import dataclass

from ptxpy.runtime import cache, compiler

try:  # cuda-python >= 12.6 spells it cuda.bindings; older releases cuda.cuda
    from cuda.bindings import driver as cu
except ImportError:  # pragma: no cover - depends on the installed cuda-python
    try:
        from cuda import cuda as cu
    except ImportError:
        cu = None

#: Static shared memory a kernel may use without opting in (CUDA's limit on all archs).
DEFAULT_SHARED_LIMIT = 48 * 1024


class CudaError(RuntimeError):
    """A CUDA driver call failed. `call`, `kernel`, `code` and `code_name` say which and how."""

    def __init__(self, call: str, code: int, kernel: str | None = None, device: int | None = None,
                 detail: str = ""):
        self.call, self.code, self.kernel, self.device = call, code, kernel, device
        self.code_name, description = _describe(code)
        where = "".join([f" for kernel '{kernel}'" if kernel else "",
                         f" on device {device}" if device is not None else ""])
        msg = f"{call} failed{where}: {self.code_name} ({code}): {description}"
        super().__init__(msg + (f"\n{detail.strip()}" if detail.strip() else ""))


def _describe(code: int) -> tuple[str, str]:
    if cu is None:
        return f"CUDA error {code}", ""
    try:
        result = cu.CUresult(code)
    except ValueError:
        return f"CUDA error {code}", ""
    try:  # the driver's own wording, when a driver is there to ask
        text = cu.cuGetErrorString(result)[1]
    except Exception:  # noqa: BLE001 - cuda-python raises its own types when libcuda is missing
        text = b""
    return result.name, (text.decode() if text else "")


def check(result: tuple, call: str, kernel: str | None = None, device: int | None = None,
          detail: str = ""):
    """Unpacks a cuda-python result tuple, raising CudaError unless it is CUDA_SUCCESS."""
    err, *values = result
    if int(err) != 0:
        raise CudaError(call, int(err), kernel, device, detail)
    return values[0] if len(values) == 1 else tuple(values) if values else None


def available() -> bool:
    """Whether cuda-python and a CUDA driver with at least one device are present."""
    if cu is None:
        return False
    try:
        _init()
        return check(cu.cuDeviceGetCount(), "cuDeviceGetCount") > 0
    except Exception:  # noqa: BLE001 - no driver library, no device, ...
        return False


# --- devices and contexts --------------------------------------------------------------------

_lock = threading.RLock()
_contexts: dict[int, object] = {}          # ordinal -> primary CUcontext
_ordinal_of_context: dict[int, int] = {}   # int(CUcontext) -> ordinal
_initialized = False


def _init() -> None:
    global _initialized
    if cu is None:
        raise RuntimeError("ptxpy needs cuda-python to run kernels on a GPU (pip install cuda-python)")
    if not _initialized:
        check(cu.cuInit(0), "cuInit")
        _initialized = True


def primary_context(ordinal: int):
    """The primary context of device `ordinal` (the one JAX uses), retained once."""
    with _lock:
        if ordinal not in _contexts:
            _init()
            dev = check(cu.cuDeviceGet(ordinal), "cuDeviceGet", device=ordinal)
            ctx = check(cu.cuDevicePrimaryCtxRetain(dev), "cuDevicePrimaryCtxRetain", device=ordinal)
            _contexts[ordinal] = ctx
            _ordinal_of_context[int(ctx)] = ordinal
        return _contexts[ordinal]


def ordinal_of_context(ctx: int) -> int:
    """The device of a context handle (a primary context JAX created, possibly unseen so far)."""
    with _lock:
        if ctx not in _ordinal_of_context:
            with pushed(ctx):
                dev = check(cu.cuCtxGetDevice(), "cuCtxGetDevice")
            ordinal = int(dev)
            primary_context(ordinal)
            _ordinal_of_context.setdefault(ctx, ordinal)
        return _ordinal_of_context[ctx]


class pushed:
    """`with pushed(ctx):` makes `ctx` current on this thread for the block."""

    def __init__(self, ctx):
        self.ctx = ctx if not isinstance(ctx, int) else cu.CUcontext(ctx)

    def __enter__(self):
        check(cu.cuCtxPushCurrent(self.ctx), "cuCtxPushCurrent")

    def __exit__(self, *exc):
        check(cu.cuCtxPopCurrent(), "cuCtxPopCurrent")


@dataclass(frozen=True)
class DeviceLimits:
    max_threads_per_block: int = 1024
    max_block: tuple = (1024, 1024, 64)
    max_grid: tuple = (2**31 - 1, 65535, 65535)
    max_shared_optin: int = DEFAULT_SHARED_LIMIT
    arch: int = 0          # compute capability as 90 for sm_90; 0 when unknown


_limits: dict[int, DeviceLimits] = {}


def device_limits(ordinal: int) -> DeviceLimits:
    """Launch limits of device `ordinal`, read once from the driver."""
    with _lock:
        if ordinal not in _limits:
            _init()
            dev = check(cu.cuDeviceGet(ordinal), "cuDeviceGet", device=ordinal)
            a = cu.CUdevice_attribute

            def get(name: str) -> int:
                attr = getattr(a, f"CU_DEVICE_ATTRIBUTE_{name}")
                return int(check(cu.cuDeviceGetAttribute(attr, dev), "cuDeviceGetAttribute",
                                 device=ordinal))

            _limits[ordinal] = DeviceLimits(
                max_threads_per_block=get("MAX_THREADS_PER_BLOCK"),
                max_block=tuple(get(f"MAX_BLOCK_DIM_{c}") for c in "XYZ"),
                max_grid=tuple(get(f"MAX_GRID_DIM_{c}") for c in "XYZ"),
                max_shared_optin=get("MAX_SHARED_MEMORY_PER_BLOCK_OPTIN"),
                arch=10 * get("COMPUTE_CAPABILITY_MAJOR") + get("COMPUTE_CAPABILITY_MINOR"),
            )
        return _limits[ordinal]


def driver_version() -> int:
    _init()
    return int(check(cu.cuDriverGetVersion(), "cuDriverGetVersion"))


# --- modules ---------------------------------------------------------------------------------

def arch_number(arch: str) -> int:
    """`'sm_90a'` -> 90."""
    digits = "".join(ch for ch in arch.removeprefix("sm_").removeprefix("compute_") if ch.isdigit())
    return int(digits) if digits else 0


class KernelImage:
    """One kernel specialisation: its PTX, and its CUfunction in each context it is loaded in.

    `dynamic_shared` bytes of dynamic shared memory are requested at each launch; above 48 KB the
    function's CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES is raised when it is loaded.
    """

    def __init__(self, name: str, ptx: str, arch: str = "sm_90", dynamic_shared: int = 0,
                 static_shared: int = 0):
        self.name, self.ptx, self.arch = name, ptx, arch
        self.dynamic_shared, self.static_shared = dynamic_shared, static_shared
        self.digest = hashlib.sha256(ptx.encode()).hexdigest()
        self._functions: dict[int, object] = {}     # int(CUcontext) -> CUfunction
        self._max_threads: dict[int, int] = {}      # ordinal -> CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK
        self._lock = threading.Lock()

    def function_in(self, ctx: int):
        """The CUfunction in context `ctx` (an int handle), loading the module if needed."""
        fn = self._functions.get(ctx)
        if fn is None:
            self._load(ordinal_of_context(ctx))
            fn = self._functions.get(ctx)
        if fn is None:
            raise CudaError("cuStreamGetCtx", 201, self.name,  # CUDA_ERROR_INVALID_CONTEXT
                            detail="XLA's stream is not in the device's primary context")
        return fn

    def load(self, ordinal: int):
        """Loads the kernel on device `ordinal` (once) and returns its CUfunction."""
        ctx = int(primary_context(ordinal))
        fn = self._functions.get(ctx)
        return fn if fn is not None else self._load(ordinal)

    def max_threads_per_block(self, ordinal: int) -> int:
        self.load(ordinal)
        return self._max_threads[ordinal]

    def _load(self, ordinal: int):
        ctx = primary_context(ordinal)
        with self._lock:
            if int(ctx) in self._functions:
                return self._functions[int(ctx)]
            self._check_arch(ordinal)
            with pushed(ctx):
                image = self.cubin(ordinal)
                module = check(cu.cuModuleLoadData(image), "cuModuleLoadData", self.name, ordinal)
                fn = check(cu.cuModuleGetFunction(module, self.name.encode()),
                           "cuModuleGetFunction", self.name, ordinal)
                self._configure(fn, ordinal)
            self._functions[int(ctx)] = fn
            return fn

    def _check_arch(self, ordinal: int) -> None:
        have, want = device_limits(ordinal).arch, arch_number(self.arch)
        if want > have or (self.arch.endswith("a") and want != have):
            raise CudaError("cuModuleLoadData", 209, self.name, ordinal,  # CUDA_ERROR_NO_BINARY_FOR_GPU
                            f"the kernel targets {self.arch} but device {ordinal} is sm_{have}")

    def _configure(self, fn, ordinal: int) -> None:
        attr = cu.CUfunction_attribute
        if self.dynamic_shared + self.static_shared > DEFAULT_SHARED_LIMIT:
            check(cu.cuFuncSetAttribute(fn, attr.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                        self.dynamic_shared),
                  "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)", self.name, ordinal)
        self._max_threads[ordinal] = int(check(
            cu.cuFuncGetAttribute(attr.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, fn),
            "cuFuncGetAttribute(MAX_THREADS_PER_BLOCK)", self.name, ordinal))

    def cubin(self, ordinal: int) -> bytes:
        """The cubin for device `ordinal`'s arch (the current context's), from the caches, or
        from the driver's JIT, or from the ptxas PTXPY_PTXAS names (runtime/compiler.py)."""
        sm, driver = device_limits(ordinal).arch, driver_version()
        ptxas = compiler.chosen_ptxas(driver)
        key = {"kind": "cubin", "name": self.name, "ptx_sha256": self.digest, "sm": sm,
               "driver": driver, "compiler": str(ptxas or "driver")}
        if ptxas is None:
            return cache.get_or_compile_cubin(key, lambda: jit_ptx(self.ptx, self.name, ordinal))
        return cache.get_or_compile_cubin(key, lambda: self._assemble(ptxas, sm, ordinal))

    def _assemble(self, ptxas, sm: int, ordinal: int) -> bytes:
        try:
            return compiler.assemble(ptxas, self.ptx, sm)
        except compiler.PtxasError as e:
            raise CudaError("ptxas", 218, self.name, ordinal, str(e)) from None  # CUDA_ERROR_INVALID_PTX


_LOG_SIZE = 1 << 16


def jit_ptx(ptx: str, kernel: str, ordinal: int) -> bytes:
    """PTX -> cubin with the driver's JIT (cuLink*), for the current context's device."""
    error_log = bytearray(_LOG_SIZE)
    state = _link_create(error_log, kernel, ordinal)
    try:
        data = ptx.encode() + b"\0"

        def log() -> str:
            return error_log.split(b"\0", 1)[0].decode(errors="replace")

        try:
            check(cu.cuLinkAddData(state, cu.CUjitInputType.CU_JIT_INPUT_PTX, data, len(data),
                                   f"{kernel}.ptx".encode(), 0, [], []), "cuLinkAddData", kernel, ordinal)
            ptr, size = check(cu.cuLinkComplete(state), "cuLinkComplete", kernel, ordinal)
        except CudaError as e:
            raise CudaError(e.call, e.code, kernel, ordinal, "ptxas: " + log()) from None
        return ctypes.string_at(int(ptr), int(size))
    finally:
        cu.cuLinkDestroy(state)


def _link_create(error_log: bytearray, kernel: str, ordinal: int):
    """cuLinkCreate with an error-log buffer (without one if this cuda-python cannot pass it)."""
    opt = cu.CUjit_option
    keys = [opt.CU_JIT_ERROR_LOG_BUFFER, opt.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES]
    try:
        result = cu.cuLinkCreate(len(keys), keys, [error_log, len(error_log)])
    except TypeError:
        result = cu.cuLinkCreate(0, [], [])
    return check(result, "cuLinkCreate", kernel, ordinal)


_images: dict[tuple, KernelImage] = {}


def kernel_image(name: str, ptx: str, arch: str, dynamic_shared: int = 0,
                 static_shared: int = 0) -> KernelImage:
    """The process-wide KernelImage of one specialisation (PTX text and dynamic shared size)."""
    key = (name, hashlib.sha256(ptx.encode()).hexdigest(), arch, dynamic_shared)
    with _lock:
        if key not in _images:
            _images[key] = KernelImage(name, ptx, arch, dynamic_shared, static_shared)
        return _images[key]


# --- launching -------------------------------------------------------------------------------

_stream_contexts: dict[int, int] = {}   # XLA's streams live as long as its client


def stream_context(stream: int) -> int:
    """The context (int handle) a stream belongs to, remembered per stream."""
    ctx = _stream_contexts.get(stream)
    if ctx is None:
        ctx = int(check(cu.cuStreamGetCtx(stream), "cuStreamGetCtx"))
        if len(_stream_contexts) > 4096:
            _stream_contexts.clear()
        _stream_contexts[stream] = ctx
    return ctx


_STALE_HANDLE = (201, 400)  # CUDA_ERROR_INVALID_CONTEXT, CUDA_ERROR_INVALID_HANDLE


def launch_on_stream(image: KernelImage, grid: tuple, block: tuple, shared: int, stream: int,
                     params: int) -> None:
    """Launches `image` on `stream` (in the stream's context) with `params`, a `void**`."""
    err = _launch(image.function_in(stream_context(stream)), grid, block, shared, stream, params)
    if err in _STALE_HANDLE and _stream_contexts.pop(stream, None) is not None:
        # a stream address reused by another context: look the context up again
        err = _launch(image.function_in(stream_context(stream)), grid, block, shared, stream, params)
    if err:
        raise CudaError("cuLaunchKernel", err, image.name,
                        detail=f"grid={grid} block={block} dynamic shared={shared} bytes")


def _launch(fn, grid, block, shared, stream, params) -> int:
    err, = cu.cuLaunchKernel(fn, grid[0], grid[1], grid[2], block[0], block[1], block[2],
                             shared, stream, params, 0)
    return int(err)
