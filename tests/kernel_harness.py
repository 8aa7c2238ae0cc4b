"""Compile kernel source end to end, assemble it, run it in the simulator (shared by tests)."""
from __future__ import annotations

import os

import numpy as np

from ptxpy.transpiler import driver, ptxas
from ptxpy.transpiler.abi import CompiledKernel
from ptxpy.transpiler.launch_shape import launch_shared_bytes

ARCHS = ("sm_80", "sm_90")


class Out:
    """An output array of the given shape and dtype (the kernel's last array parameters)."""

    def __init__(self, shape, dtype, init=None):
        self.shape = tuple(np.atleast_1d(shape)) if not isinstance(shape, tuple) else shape
        self.dtype = np.dtype(dtype)
        self.init = init


def compile_source(source: str, name: str, consts=None, arch="sm_90", debug=False,
                   fast_math=False, by_ref=(), max_registers=None, launch_bounds=(),
                   cluster=()) -> CompiledKernel:
    program = driver.parse(source, "kernels.py")
    options = driver.Options(arch, fast_math, debug, max_registers=max_registers,
                             launch_bounds=launch_bounds, cluster=cluster)
    return driver.compile_kernel(program, name, consts, frozenset(by_ref), options).kernel


def assemble_all(source: str, name: str, consts=None, compiled=None, archs=ARCHS, **kw) -> dict:
    """Assemble for every arch in `archs`; return {arch: registers}. Fails the test on an error.

    `compiled` maps an arch to its kernel where the caller has compiled it already."""
    registers = {}
    if ptxas.find_ptxas() is None:
        return registers
    for arch in archs:
        kernel = (compiled or {}).get(arch) or compile_source(source, name, consts, arch=arch, **kw)
        ok, log, regs = ptxas.assemble(kernel.ptx, arch)
        assert ok, f"ptxas {arch} rejected {name}:\n{log}\n{kernel.ptx}"
        registers[arch] = regs
    return registers


def run(source: str, name: str, args: list, grid, block, consts=None, debug=False,
        fast_math=False, assemble=True, racecheck=None, archs=ARCHS, arch="sm_90", **bounds):
    """Compile for `arch`, assemble (for `archs`: sm_80, sm_90) and simulate; return the
    outputs (a list of arrays).

    `args` lists the call's inputs in parameter order, with `Out(...)` for each output array.
    `racecheck`: the simulator's shared-memory race check (None: PTXPY_SIM_RACECHECK decides).
    `bounds`: max_registers=, launch_bounds=, cluster= (driver.Options).
    """
    from ptxpy.runtime.simulator import TensorMap, run_kernel

    kernel = compile_source(source, name, consts, arch=arch, debug=debug, fast_math=fast_math,
                            **bounds)
    if assemble:
        assemble_all(source, name, consts, compiled={arch: kernel}, archs=archs, debug=debug,
                     fast_math=fast_math, **bounds)
    values, outputs = [], []
    for value in args:
        if isinstance(value, Out):
            array = (np.full(value.shape, value.init, value.dtype) if value.init is not None
                     else np.zeros(value.shape, value.dtype))
            outputs.append(array)
            value = array
        values.append(value)
    ptx_args, shapes, scalars = [], {}, {}
    for spec, value in zip(kernel.params, values):
        if spec.kind == "array":
            ptx_args.append(value)
            ptx_args.extend(int(n) for n in value.shape)
            ptx_args.extend(TensorMap(value, box, swizzle) for box, swizzle in spec.tensor_maps)
            shapes[spec.name] = tuple(value.shape)
        else:
            ptx_args.append(value)
            if not spec.by_ref:
                scalars[spec.name] = value
    assert len(values) == len(kernel.params), "wrong number of arguments for the kernel"
    # arrays past 48 KB and arrays sized at launch
    dynamic_shared = launch_shared_bytes(kernel, shapes, _dim3(block), scalars)
    if os.environ.get("PTXPY_TEST_DEVICE") == "gpu":   # the same kernels on a real GPU
        from gpu_launcher import gpu_run_kernel

        gpu_run_kernel(kernel.ptx, kernel.name, _dim3(grid), _dim3(block), ptx_args,
                       shared=dynamic_shared)
    else:
        run_kernel(kernel.ptx, kernel.name, grid=grid, block=block, args=ptx_args,
                   dynamic_shared_bytes=dynamic_shared, racecheck=racecheck)
    return outputs


def _dim3(value) -> tuple:
    return (value, 1, 1) if isinstance(value, int) else tuple(value) + (1,) * (3 - len(value))
