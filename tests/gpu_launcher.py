"""Run PTX on a real GPU with `simulator.run_kernel`'s contract, through cuda-python's driver API.

Shared by the backend tests and the end-to-end kernel harness; skips without a GPU.
"""
import re

import numpy as np
import pytest

from ptxpy.runtime.tensor_map import TensorMapLayout

_CTYPES = {"u64": "c_uint64", "s64": "c_int64", "u32": "c_uint32", "s32": "c_int32",
           "u16": "c_uint16", "s16": "c_int16", "b16": "c_uint16", "u8": "c_uint8", "s8": "c_int8",
           "f32": "c_float", "f64": "c_double"}


def runtime_image(ptx, driver_version, capability):
    """The cubin of `ptx` from the ptxas the runtime would choose (runtime/compiler.py), or
    None where it would take the driver's JIT."""
    from ptxpy.runtime import compiler

    ptxas = compiler.chosen_ptxas(driver_version)
    if ptxas is None:
        return None
    major, minor = capability
    return compiler.assemble(ptxas, ptx, 10 * major + minor)


def newer_ptxas_chosen() -> bool:
    """Whether PTXPY_PTXAS picks a ptxas, not the driver's JIT, under this machine's driver."""
    from cuda.bindings import driver as cu

    from ptxpy.runtime import compiler

    cu.cuInit(0)
    return compiler.chosen_ptxas(int(cu.cuDriverGetVersion()[1])) is not None


def gpu_run_kernel(ptx, kernel, grid, block, args, image=None, shared=0):
    """`simulator.run_kernel`'s contract on a real GPU through cuda-python's driver API
    (`shared`: its `dynamic_shared_bytes`).

    `image`: a cubin of `ptx` to load; without one, the PTX is compiled as the runtime would
    (runtime/compiler.py: by the driver's JIT, or the ptxas PTXPY_PTXAS names)."""
    import ctypes

    from ptxpy.runtime.simulator import TensorMap
    try:
        from cuda.bindings import driver as cu
    except ImportError:
        pytest.skip("cuda-python is not installed")

    def check(result):
        err, *rest = result if isinstance(result, tuple) else (result,)
        assert int(err) == 0, f"CUDA error {err}"
        return rest[0] if len(rest) == 1 else rest

    try:
        no_gpu = int(cu.cuInit(0)[0]) != 0 or check(cu.cuDeviceGetCount()) == 0
    except Exception:   # no driver library at all
        no_gpu = True
    if no_gpu:
        pytest.skip("no CUDA GPU")
    device = check(cu.cuDeviceGet(0))
    ctx = check(cu.cuDevicePrimaryCtxRetain(device))
    check(cu.cuCtxSetCurrent(ctx))
    if image is None:
        attr = cu.CUdevice_attribute
        capability = [check(cu.cuDeviceGetAttribute(getattr(
            attr, f"CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_{part}"), device)) for part in ("MAJOR", "MINOR")]
        image = runtime_image(ptx, check(cu.cuDriverGetVersion()), capability)
    module = check(cu.cuModuleLoadData(image if image is not None else ptx.encode() + b"\0"))
    function = check(cu.cuModuleGetFunction(module, kernel.encode()))
    entry = re.search(r"\.entry\s+" + re.escape(kernel) + r"\s*\(([^)]*)\)", ptx)
    types = re.findall(r"\.param (?:\.align \d+ )?\.(\w+) \w+",
                       entry.group(1) if entry else "")   # not vprintf's
    values, buffers = [], []
    for ptx_type, arg in zip(types, args, strict=True):
        if isinstance(arg, TensorMap):   # encoded for the buffer of its array, as a launch does
            dptr = next(int(d) for d, a in buffers if a is arg.array)
            values.append(ctypes.create_string_buffer(_layout(arg).encode(dptr)))
            continue
        if isinstance(arg, np.ndarray):
            dptr = check(cu.cuMemAlloc(max(arg.nbytes, 1)))
            check(cu.cuMemcpyHtoD(dptr, arg.ctypes.data, arg.nbytes))
            buffers.append((dptr, arg))
            arg = int(dptr)
        elif ptx_type == "b16":   # f16/bf16 scalars travel as their bits
            arg = np.asarray(arg).view(np.uint16).item()
        values.append(getattr(ctypes, _CTYPES[ptx_type])(arg.item() if hasattr(arg, "item") else arg))
    pointers = (ctypes.c_void_p * len(values))(*[ctypes.addressof(v) for v in values])
    grid, block = (tuple(grid) + (1, 1))[:3], (tuple(block) + (1, 1))[:3]
    if shared > 48 * 1024:
        check(cu.cuFuncSetAttribute(
            function, cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, shared))
    check(cu.cuLaunchKernel(function, *grid, *block, shared, 0, ctypes.addressof(pointers), 0))
    check(cu.cuCtxSynchronize())
    for dptr, arg in buffers:
        check(cu.cuMemcpyDtoH(arg.ctypes.data, dptr, arg.nbytes))
        check(cu.cuMemFree(dptr))
    check(cu.cuModuleUnload(module))


def _layout(tmap) -> TensorMapLayout:
    from ptxpy.types import from_numpy

    dtype = from_numpy(tmap.array.dtype)
    return TensorMapLayout(dtype.name, dtype.nbytes, tuple(tmap.array.shape), tuple(tmap.box),
                           tmap.swizzle)
