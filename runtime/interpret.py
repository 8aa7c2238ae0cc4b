"""Interpret mode (SPEC 2.6, 2.7): run a kernel's PTX in the CPU simulator, from JAX.

Eager calls run the simulator directly; under `jax.jit` or `jax.vmap` the launch is a
`jax.pure_callback` (vmap runs the batch in sequence, one launch per element).
"""
from __future__ import annotations

import numpy as np

from ptxpy.transpiler.abi import CompiledKernel


def run_interpreted(kernel: CompiledKernel, inputs: list, out_types: list, grid: tuple,
                    block: tuple, input_output_aliases: dict | None = None) -> list:
    import jax
    import jax.numpy as jnp

    aliases = dict(input_output_aliases or {})
    dynamic = [k for k, v in enumerate(inputs) if isinstance(v, jax.Array) or _is_tracer(v)]

    def host(*dynamic_values):
        values = list(inputs)
        for k, value in zip(dynamic, dynamic_values):
            values[k] = np.asarray(value)
        return tuple(simulate(kernel, values, out_types, grid, block, aliases))

    if any(_is_tracer(inputs[k]) for k in dynamic):
        shapes = [jax.ShapeDtypeStruct(t.shape, t.dtype) for t in out_types]
        outs = jax.pure_callback(host, shapes, *[inputs[k] for k in dynamic],
                                 vmap_method="sequential")
        return list(outs)
    return [jnp.asarray(out) for out in host(*[inputs[k] for k in dynamic])]


def simulate(kernel: CompiledKernel, inputs: list, out_types: list, grid: tuple, block: tuple,
             aliases: dict | None = None) -> list[np.ndarray]:
    """Launch `kernel` in the simulator on NumPy inputs; return fresh NumPy outputs."""
    from ptxpy.runtime.simulator import run_kernel

    outputs = _output_buffers(inputs, out_types, aliases or {})
    array_params = [k for k, spec in enumerate(kernel.params) if spec.kind == "array"]
    output_params = array_params[len(array_params) - len(outputs):]
    given, made = iter(inputs), iter(outputs)
    args = []
    for k, spec in enumerate(kernel.params):
        value = next(made) if k in output_params else next(given)
        if spec.kind == "array":
            array = np.ascontiguousarray(value)
            if array is not value and spec.written:
                raise ValueError(f"{kernel.name}: output '{spec.name}' must be a contiguous array")
            args.append(array)
            args.extend(int(n) for n in array.shape)
        elif spec.by_ref:
            args.append(np.asarray(value, dtype=spec.dtype.numpy).reshape(1).copy())
        else:
            args.append(value)
    run_kernel(kernel.ptx, kernel.name, grid=grid, block=block, args=args)
    return outputs


def _output_buffers(inputs, out_types, aliases) -> list[np.ndarray]:
    """Outputs start as zeros, or as a copy of the input they alias."""
    by_output = {out: inp for inp, out in aliases.items()}
    buffers = []
    for k, t in enumerate(out_types):
        if k in by_output:
            buffers.append(np.array(inputs[by_output[k]], dtype=t.dtype, copy=True))
        else:
            buffers.append(np.zeros(t.shape, dtype=t.dtype))
    return buffers


def _is_tracer(value) -> bool:
    import jax

    return isinstance(value, jax.core.Tracer)
