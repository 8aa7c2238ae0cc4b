"""What does an f32 `atomic_max` cost in each form ptxpy has written it in? (device)

Since session 28 ptxpy writes a float `atomic_max` as one integer atomic on the bits
(`lower_intrinsics._float_min_max`, an `atom`); `red_after_load` below is a form measured then
and not kept (faster with no contention, slower with it). From session 23 it was a
compare-and-swap loop that the lanes of a warp leave together (`_swap_loop`), and until session
22 a loop each lane left when its own swap succeeded. This times `atomic_max(out, i & mask,
x[i])` over 2**24 f32 values in the four forms, for a mask that makes every thread contend for
one element, for 256 elements, and for none (each its own), with values of both signs (normal)
and all positive (their absolute values: the integer form then needs one atomic per warp, not
one per sign), with CUDA events around 20 launches after a warm-up.

    python benchmarks/probes/cas_loop_time.py
"""
import ctypes
import functools
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


FORMS = ("integer atom", "load + red", "warp-uniform loop", "divergent loop")


def red_after_load(careful_form, b, addr, op, value, space):
    """A form measured in session 28 and not kept: where the program drops the old value, a
    plain load of the element first, then (where it holds no NaN that the integer order gets
    wrong) the integer atomic as a `red`, which returns nothing."""
    from ptxpy.transpiler import ir, lower_intrinsics as li

    signed = li._FLOAT_BITS[value.type.bits][0]
    bits = b.emit("bitcast", signed, [value])
    nan = b.emit("isnan", li.bool_, [value])
    current = b.emit("load", signed, [addr], {"space": space})
    stuck = b.op("and", li._stuck_nan(b, op, current), b.op("not", nan))
    careful, quick, done = (b.new_block(hint) for hint in ("fnanfix", "fred", "freddone"))
    b.cbr(stuck, careful, quick)
    for block, arm in ((careful, lambda: careful_form(b, addr, op, value, space)),
                       (quick, lambda: li._min_max_on_bits(b, addr, op, bits, nan, space))):
        b.seal(block)
        b.start(block)
        arm()
        b.br(done)
    b.seal(done)
    b.start(done)
    return ir.Undef(value.type)


def ptx(form: str) -> str:
    from ptxpy.transpiler import driver, lower_intrinsics
    from without_fix import divergent_swap_loop

    names = ("_swap_loop", "_float_min_max_on_bits", "_float_min_max")
    today = [getattr(lower_intrinsics, name) for name in names]
    if form == "load + red":
        lower_intrinsics._float_min_max = functools.partial(red_after_load, today[2])
    if form.endswith("loop"):
        lower_intrinsics._float_min_max_on_bits = lambda op, array: False
    if form == "divergent loop":
        lower_intrinsics._swap_loop = divergent_swap_loop
    try:
        return driver.transpile(SOURCE, "amax.py", arch="sm_90")["amax"]
    finally:
        for name, function in zip(names, today):
            setattr(lower_intrinsics, name, function)


def check(result):
    err, *rest = result if isinstance(result, tuple) else (result,)
    assert int(err) == 0, f"CUDA error {err}"
    return rest[0] if len(rest) == 1 else rest


def measure(cu, form: str, x, dx, dout, mask: int, events) -> tuple:
    """Milliseconds per launch of `form` on `x` (already at `dx`), and whether it was right."""
    start, stop = events
    module = check(cu.cuModuleLoadData(ptx(form).encode() + b"\0"))
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
    check(cu.cuModuleUnload(module))
    return ms, np.array_equal(out, want)


def main():
    from cuda.bindings import driver as cu

    check(cu.cuInit(0))
    ctx = check(cu.cuDevicePrimaryCtxRetain(check(cu.cuDeviceGet(0))))
    check(cu.cuCtxSetCurrent(ctx))
    normal = np.random.default_rng(0).standard_normal(N).astype(np.float32)
    dx, dout = check(cu.cuMemAlloc(normal.nbytes)), check(cu.cuMemAlloc(normal.nbytes))
    events = check(cu.cuEventCreate(0)), check(cu.cuEventCreate(0))
    for signs, x in (("both signs", normal), ("positive", np.abs(normal))):
        check(cu.cuMemcpyHtoD(dx, x.ctypes.data, x.nbytes))
        for mask in (0, 255, N - 1):
            for form in FORMS:
                ms, right = measure(cu, form, x, dx, dout, mask, events)
                print(f"{signs:<10}  mask {mask:>8}  {form:<17}  {ms * 1000:9.1f} us  "
                      f"{'right' if right else 'WRONG'}", flush=True)


if __name__ == "__main__":
    main()
