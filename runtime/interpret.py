"""Interpret mode (SPEC 2.6, 2.7): run a kernel's PTX in the CPU simulator, from JAX.

Eager calls run the simulator directly; under `jax.jit` or `jax.vmap` the launch is a
`jax.pure_callback`. Under `jax.vmap` the batch runs as grid axis z of one launch of a batched
specialisation when the kernel allows it, else in sequence (ptxpy.runtime.batching, docs/jax.md).
"""
from __future__ import annotations

import logging
import os
import types

import numpy as np

from ptxpy.runtime import batching
from ptxpy.runtime.ptx_parser import SimulatorError
from ptxpy.runtime.values import is_tracer as _is_tracer
from ptxpy.transpiler.abi import CompiledKernel
from ptxpy.transpiler.launch_shape import launch_shared_bytes

#: Simulator launches made (each runs one grid; a batched vmap makes one); for tests.
launches = 0


def run_interpreted(kernel: CompiledKernel, inputs: list, out_types: list, grid: tuple,
                    block: tuple, input_output_aliases: dict | None = None,
                    respecialise=None) -> list:
    """Run `kernel` in the simulator. `respecialise(batched)` compiles the kernel's batched
    specialisation (ptxpy.runtime.batching); without it vmap runs in sequence."""
    import jax
    import jax.numpy as jnp

    from ptxpy.runtime.launch import check_call, split_params

    # the checks of a GPU launch, so that a call that would fail there fails here too, and the
    # values it would launch (scalars converted to their parameter's type)
    _, inputs, *_ = check_call(kernel, inputs, out_types, grid, block, input_output_aliases,
                               traced_by_value=True)
    aliases = dict(input_output_aliases or {})
    dynamic = [k for k, v in enumerate(inputs) if isinstance(v, jax.Array) or _is_tracer(v)]
    static = [None if k in dynamic else v for k, v in enumerate(inputs)]

    def host_fn(kern, outs, grid_):
        def host(*dynamic_values):
            values = list(static)
            for k, value in zip(dynamic, dynamic_values):
                values[k] = np.asarray(value)
            return tuple(simulate(kern, values, outs, grid_, block, aliases))
        return host

    operands = [inputs[k] for k in dynamic]
    if not any(_is_tracer(v) for v in operands):
        return [jnp.asarray(out) for out in host_fn(kernel, out_types, grid)(*operands)]

    def execute(kern, ops, outs, grid_):
        shapes = [jax.ShapeDtypeStruct(t.shape, t.dtype) for t in outs]
        return jax.pure_callback(_reporting_cleanly(host_fn(kern, outs, grid_)), shapes, *ops,
                                 vmap_method="sequential")

    in_params, out_params = split_params(kernel, len(out_types))
    call = batching.Call(kernel, [in_params[k] for k in dynamic],
                         [tuple(inputs[k].shape) for k in dynamic], out_params, list(out_types),
                         tuple(grid), execute, respecialise,
                         frozenset(dynamic.index(i) for i in aliases if i in dynamic))
    return batching.run(call, operands)


def simulate(kernel: CompiledKernel, inputs: list, out_types: list, grid: tuple, block: tuple,
             aliases: dict | None = None) -> list[np.ndarray]:
    """Launch `kernel` in the simulator on NumPy inputs; return fresh NumPy outputs.

    For a batched specialisation (`kernel.options["batched"]`), the arrays it names have a
    leading batch axis that their shape parameters leave out."""
    from ptxpy.runtime.launch import split_params
    from ptxpy.runtime.simulator import TensorMap, run_kernel

    global launches
    batched = {entry[0] for entry in kernel.options.get("batched", ())}
    outputs = _output_buffers(inputs, out_types, aliases or {})
    in_params, out_params = split_params(kernel, len(outputs))
    given, made = iter(_sharing_outputs(inputs, outputs, aliases or {})), iter(outputs)
    args, shapes, scalars = [], {}, {}
    for spec in kernel.params:
        value = next(made) if spec in out_params else next(given)
        if spec.kind == "array":
            array = np.ascontiguousarray(value)
            if array is not value and spec.written:
                raise ValueError(f"{kernel.name}: output '{spec.name}' must be a contiguous array")
            args.append(array)
            shapes[spec.name] = tuple(int(n) for n in array.shape[1 if spec.name in batched else 0:])
            args.extend(shapes[spec.name])
            args.extend(TensorMap(array, box, swizzle) for box, swizzle in spec.tensor_maps)
        elif spec.by_ref:
            args.append(np.asarray(value, dtype=(spec.carrier or spec.dtype).numpy).reshape(1).copy())
        else:   # a NumPy scalar: the simulator would take a 0-d u64 array for an array
            args.append(np.asarray(value).reshape(())[()])
            scalars[spec.name] = args[-1]
    launches += 1
    run_kernel(kernel.ptx, kernel.name, grid=grid, block=block, args=args,
               dynamic_shared_bytes=launch_shared_bytes(kernel, shapes, tuple(block), scalars))
    return outputs


def _output_buffers(inputs, out_types, aliases) -> list[np.ndarray]:
    """Outputs start as a copy of the input they alias (repeated over the batch when the output
    is batched and the input is not), or else as unwritten memory: all-ones bytes (NaN, -1, the
    maximum; `True` for bool), since on the GPU they hold whatever XLA's buffer held."""
    by_output = {out: inp for inp, out in aliases.items()}
    buffers = []
    for k, t in enumerate(out_types):
        if k in by_output:
            source = np.asarray(inputs[by_output[k]])
            buffers.append(np.array(np.broadcast_to(source, t.shape), dtype=t.dtype, copy=True))
        else:
            buffers.append(_unwritten(t.shape, np.dtype(t.dtype)))
    return buffers


def _unwritten(shape, dtype: np.dtype) -> np.ndarray:
    from ptxpy.runtime.simulator import UNWRITTEN_BYTE

    if dtype == np.bool_:
        return np.ones(shape, dtype)
    raw = np.full(tuple(shape) + (dtype.itemsize,), UNWRITTEN_BYTE, np.uint8)
    return raw.view(dtype).reshape(shape)


def _sharing_outputs(inputs, outputs, aliases) -> list:
    """The inputs as the kernel sees them: one aliased to an output is that output's buffer, as
    on the GPU (a write through either parameter is seen through the other), unless the output
    is batched and the input is not (then the output holds a copy per item)."""
    inputs = list(inputs)
    for inp, out in aliases.items():
        if np.shape(inputs[inp]) == outputs[out].shape:
            inputs[inp] = outputs[out]
    return inputs


# --- errors under jax.jit ------------------------------------------------------------------
#
# An exception raised in a `jax.pure_callback` reaches the caller as the text of a
# JaxRuntimeError, which XLA writes as "CpuCallback error calling callback: " followed by every
# frame from the one that raised outwards (the simulator's, JAX's, the caller's, pytest's ...)
# and the exception; JAX also logs it with its traceback. A simulator error (a failed debug
# check, an access out of bounds) says everything in its message: it is raised with a
# traceback of one frame that has no caller, and JAX's log record of it is dropped.

def _reporting_cleanly(host):
    def callback(*args):
        try:
            return host(*args)
        except SimulatorError as err:
            if os.environ.get("PTXPY_TRACEBACK"):
                raise
            raise err.with_traceback(_one_frame()) from None
    return callback


def _simulator():
    yield


def _one_frame() -> types.TracebackType:
    frame = _simulator().gi_frame    # a generator not yet started has no caller
    return types.TracebackType(None, frame, frame.f_lasti, frame.f_lineno)


def _not_reported_by_simulator(record: logging.LogRecord) -> bool:
    tb = record.exc_info[2] if record.exc_info else None
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is None or tb.tb_frame.f_code is not _simulator.__code__


logging.getLogger("jax._src.callback").addFilter(_not_reported_by_simulator)
