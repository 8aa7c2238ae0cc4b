"""What does a warp-uniform compare-and-swap loop cost against one each lane leaves alone? (device)

ptxpy writes float `atomic_max` (and the other atomics without a PTX instruction) as a
compare-and-swap loop that the lanes of a warp leave together (`lower_intrinsics._swap_loop`,
session 23); until session 22 each lane left when its own swap succeeded. This times
`atomic_max(out, i & mask, x[i])` over 2**24 f32 values in both forms, for a mask that makes
every thread contend for one element, for 256 elements, and for none (each its own), with CUDA
events around 20 launches after a warm-up.

    python benchmarks/probes/cas_loop_time.py
"""
import ctypes
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

SOURCE = """
import ptxpy
from ptxpy import Array, f32, i32

@ptxpy.jit
def amax(x: Array[f32], out: Array[f32], mask: i32):
    i = ptxpy.global_id(0)
    if i < len(x):
        ptxpy.atomic_max(out, i & mask, x[i])
"""
N = 1 << 24
LAUNCHES = 20


def ptx(uniform: bool) -> str:
    from ptxpy.transpiler import driver, lower_intrinsics
    from without_fix import divergent_swap_loop

    today = lower_intrinsics._swap_loop
    if not uniform:
        lower_intrinsics._swap_loop = divergent_swap_loop
    try:
        return driver.transpile(SOURCE, "amax.py", arch="sm_90")["amax"]
    finally:
        lower_intrinsics._swap_loop = today


def check(result):
    err, *rest = result if isinstance(result, tuple) else (result,)
    assert int(err) == 0, f"CUDA error {err}"
    return rest[0] if len(rest) == 1 else rest


def main():
    from cuda.bindings import driver as cu

    check(cu.cuInit(0))
    ctx = check(cu.cuDevicePrimaryCtxRetain(check(cu.cuDeviceGet(0))))
    check(cu.cuCtxSetCurrent(ctx))
    x = np.random.default_rng(0).standard_normal(N).astype(np.float32)
    dx, dout = check(cu.cuMemAlloc(x.nbytes)), check(cu.cuMemAlloc(x.nbytes))
    check(cu.cuMemcpyHtoD(dx, x.ctypes.data, x.nbytes))
    start, stop = check(cu.cuEventCreate(0)), check(cu.cuEventCreate(0))
    for mask in (0, 255, N - 1):
        for uniform in (True, False):
            module = check(cu.cuModuleLoadData(ptx(uniform).encode() + b"\0"))
            fn = check(cu.cuModuleGetFunction(module, b"amax"))
            values = [ctypes.c_uint64(int(dx)), ctypes.c_uint32(N), ctypes.c_uint64(int(dout)),
                      ctypes.c_uint32(N), ctypes.c_int32(mask)]
            args = (ctypes.c_void_p * len(values))(*[ctypes.addressof(v) for v in values])
            check(cu.cuMemsetD32(dout, 0xFF800000, N))       # -inf
            launch = lambda: check(cu.cuLaunchKernel(fn, N // 256, 1, 1, 256, 1, 1, 0, 0,
                                                     ctypes.addressof(args), 0))
            launch()
            check(cu.cuEventRecord(start, 0))
            for _ in range(LAUNCHES):
                launch()
            check(cu.cuEventRecord(stop, 0))
            check(cu.cuEventSynchronize(stop))
            ms = check(cu.cuEventElapsedTime(start, stop)) / LAUNCHES
            out = np.empty(N, np.float32)
            check(cu.cuMemcpyDtoH(out.ctypes.data, dout, out.nbytes))
            want = np.full(N, -np.inf, np.float32)
            np.maximum.at(want, np.arange(N) & mask, x)
            right = "right" if np.array_equal(out, want) else "WRONG"
            print(f"mask {mask:>8}  {'warp-uniform' if uniform else 'divergent   '}  "
                  f"{ms * 1000:9.1f} us  {right}", flush=True)
            check(cu.cuModuleUnload(module))


if __name__ == "__main__":
    main()
