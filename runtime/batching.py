"""`jax.vmap` of a kernel call: the batch as grid axis z in one launch, or in sequence.

Both runtimes (the GPU's FFI call in ptxpy.runtime.launch, the simulator's `pure_callback` in
ptxpy.runtime.interpret) describe a traced call as a `Call` and run it with `run`. `run` wraps
the launch in a `jax.custom_batching.custom_vmap` function; its vmap rule decides, per batching
level, how the batch runs (docs/jax.md, "vmap"):

- **grid axis z**, one launch: when the kernel never reads `%ctaid.z`/`%nctaid.z` (no
  `block_idx.z`, `grid_dim.z`, `program_id(2)`, `num_programs(2)`, `global_id(2)`), its grid
  has z == 1, every batched operand is an array (not a traced scalar), the batch has at most
  65535 items (CUDA's grid z limit), and, when the kernel makes vector accesses to global memory
  (`.v2`/`.v4` of up to 16 bytes), every batched array's item is a multiple of the widest one
  (so they stay aligned). The kernel is recompiled as a *batched specialisation* (compile
  option `batched`, see transpiler/ssa_builder.py `batch_item_base`): at entry each batched
  array's base pointer moves to item `(ctaid.z / div) % mod`, and the shape parameters carry
  the per-item shape. Outputs are always batched; unbatched arrays are passed once.
- **in sequence** otherwise: the same `vmap_method="sequential"` loop of unbatched launches as
  before.

Nested vmaps flatten into one batch axis of size `outer * inner`: an array batched at both
levels is reshaped to `(outer * inner, ...)` (no copy); an array batched at only one level
keeps its shape and reads its item through `div`/`mod` (`z / inner` for the outer level,
`z % inner` for the inner one), so nothing is broadcast. A level that cannot be flattened
(a batched scalar, too large a batch, an array batched at two non-adjacent levels) runs in
sequence over the batched launches of the levels inside it. (`custom_vmap` traces each level's
function when it is called, so under nested vmaps the specialisations of the inner levels are
compiled too, though only the outermost flattened one runs.)

Differentiating a launch is an error that names the kernel: `run` wraps it in a
`jax.custom_jvp` whose rule raises it.

`input_output_aliases`: the aliased input is made a full batch (`broadcast`/gather of its items,
one copy, as XLA makes anyway without donation) so the input and output buffers match.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

MAX_BATCH = 65535          # CUDA's limit on grid dimension z
_FULL = (1, 0)             # item index = ctaid.z
_GRID_Z = re.compile(r"%n?ctaid\.z\b")
_VECTOR_ACCESS = re.compile(r"\b(?:ld|st)\.global(?:\.\w+)*?\.v([248])\.[a-z]+(\d+)\b")


@dataclass(eq=False)
class Call:
    """One traced kernel call, per item.

    `operands` are the ParamSpecs of the dynamic operands (arrays and by-reference scalars), in
    the order `run` receives their values, `item_shapes` their shapes in this call; `out_types`
    are the per-item outputs. `execute(kernel, operands, out_types, grid)` performs a launch as
    a primitive that JAX batches in sequence (`kernel.options["batched"]` names the arrays whose
    leading axis is the batch: their shape parameters leave it out). `respecialise(batched)`
    compiles the kernel with that `batched` option; None means the kernel has no source to
    recompile (hand-written PTX): vmap runs in sequence.
    """
    kernel: object
    operands: list
    item_shapes: list
    out_params: list
    out_types: list
    grid: tuple
    execute: Callable
    respecialise: Callable | None = None
    aliased: frozenset = frozenset()      # operand indices aliased to an output
    _batched_kernels: dict = field(default_factory=dict)

    def batched_kernel(self, option: tuple):
        if option not in self._batched_kernels:
            self._batched_kernels[option] = self.respecialise(option)
        return self._batched_kernels[option]


def run(call: Call, operands: list) -> list:
    """The outputs of `call` on `operands`; under `jax.vmap`, batched as described above."""
    if call.respecialise is None:
        def launch(*ops):
            return tuple(call.execute(call.kernel, list(ops), call.out_types, call.grid))
    else:
        launch = _unbatched_fn(call)
    operands = [_as_jax(o) for o in operands]
    return list(_without_derivative(launch, call.kernel.name)(*operands))


def _as_jax(value):
    """`value` with no NumPy array inside: a custom_jvp given one under a trace fails on JAX's
    own assertion ("non-canonical constant"), as a NumPy array that `jax.vmap` batches holds
    one inside its tracer (`jax.jit(lambda: jax.vmap(kernel)(numpy_array))`). Such a tracer
    is copied (`copy` keeps derivatives, so `jax.grad` still meets the kernel's own error)."""
    import jax

    if isinstance(value, (np.ndarray, np.generic)):
        return jax.numpy.asarray(value)
    if isinstance(value, jax.core.Tracer) and isinstance(getattr(value, "val", None),
                                                         (np.ndarray, np.generic)):
        return jax.lax.copy_p.bind(value)
    return value


def _without_derivative(fn, kernel: str):
    """`fn` with a JVP rule that says the kernel has none (JAX's own error would name only the
    pure_callback or FFI call). Arguments that are not differentiated never reach the rule."""
    import jax

    fn = jax.custom_jvp(fn)

    @fn.defjvp
    def refuse(primals, tangents):
        raise TypeError(f"ptxpy kernel '{kernel}' has no derivative rule, so jax.grad (or any JVP "
                        "or VJP) cannot differentiate through it; give the function that calls it "
                        "a backward pass with jax.custom_vjp (examples/jax_model_step.py does)")

    return fn


# --- the custom_vmap functions ---------------------------------------------------------------

def _unbatched_fn(call: Call):
    import jax

    def plain(*ops):
        return tuple(call.execute(call.kernel, list(ops), call.out_types, call.grid))

    fn = jax.custom_batching.custom_vmap(plain)

    @fn.def_vmap
    def rule(axis_size, in_batched, *ops):
        specs = tuple(_FULL if b else None for b in in_batched)
        return _batch_level(call, plain, None, axis_size, in_batched, specs, ops)

    return fn


def _batched_fn(call: Call, size: int, specs: tuple):
    """A custom_vmap function launching the whole batch (`size` items; operand i batched as
    `specs[i]`: None, or (div, mod)) with grid z = size."""
    import jax

    def launch_batch(*ops):
        return tuple(_launch_batch(call, size, specs, list(ops)))

    fn = jax.custom_batching.custom_vmap(launch_batch)

    @fn.def_vmap
    def rule(axis_size, in_batched, *ops):
        flat = _flatten(specs, size, in_batched)
        return _batch_level(call, launch_batch, (size, specs), axis_size, in_batched, flat, ops)

    return fn


def _batch_level(call, current, inner, axis_size, in_batched, new_specs, ops):
    """The vmap rule: one batched launch for this level and the ones inside it (`inner`), or
    `current` (the launch without this level) in sequence."""
    import jax

    n_out = len(call.out_types)
    size = axis_size * (inner[0] if inner else 1)
    if new_specs is not None and why_sequential(call, size, new_specs) is None:
        flat_ops = list(ops)
        for i, b in enumerate(in_batched):
            if b and inner and inner[1][i] == _FULL:   # batched at both levels: merge the axes
                flat_ops[i] = flat_ops[i].reshape((size,) + tuple(flat_ops[i].shape[2:]))
        outs = _batched_fn(call, size, new_specs)(*flat_ops)
        if inner:
            outs = [o.reshape((axis_size, inner[0]) + tuple(o.shape[1:])) for o in outs]
        return tuple(outs), (True,) * n_out
    axes = tuple(0 if b else None for b in in_batched)
    outs = jax.vmap(current, in_axes=axes, axis_size=axis_size)(*ops)
    return tuple(outs), (True,) * n_out


def _flatten(specs: tuple, inner_size: int, outer_batched) -> tuple | None:
    """Operand specs of the batch `outer x inner` flattened to one axis (z = o * inner + i);
    None when an operand cannot be addressed that way."""
    flat = []
    for spec, outer in zip(specs, outer_batched):
        if spec is None:
            flat.append((inner_size, 0) if outer else None)
        elif outer:
            if spec != _FULL:
                return None
            flat.append(_FULL)
        else:
            div, mod = spec
            flat.append((div, mod or inner_size // div))
    return tuple(flat)


def why_sequential(call: Call, size: int, specs: tuple) -> str | None:
    """Why this batch cannot run as grid axis z (None when it can)."""
    ptx = call.kernel.ptx
    if _GRID_Z.search(ptx):
        return "the kernel uses grid axis z"
    if call.grid[2] != 1:
        return "the launch grid has z > 1"
    if size > MAX_BATCH:
        return f"the batch has {size} items (grid z allows {MAX_BATCH})"
    for spec, param in zip(specs, call.operands):
        if spec is not None and param.kind != "array":
            return f"scalar '{param.name}' is batched"
    mapped = [p.name for p in call.kernel.params if p.tensor_maps]
    if mapped:
        return f"the kernel copies boxes of '{mapped[0]}' through a tensor map (ptxpy.tma_load)"
    align = max((int(n) * int(bits) // 8 for n, bits in _VECTOR_ACCESS.findall(ptx)), default=1)
    if align > 1:
        items = [(param, shape) for param, shape, spec in zip(call.operands, call.item_shapes, specs)
                 if spec is not None]
        items += [(param, t.shape) for param, t in zip(call.out_params, call.out_types)]
        for param, shape in items:
            if int(np.prod(shape, dtype=np.int64)) * param.dtype.nbytes % align:
                return (f"the kernel makes {align}-byte vector accesses and an item of "
                        f"'{param.name}' ({tuple(shape)} {param.dtype}) is not a multiple of {align} bytes")
    return None


# --- the batched launch ----------------------------------------------------------------------

def _launch_batch(call: Call, size: int, specs: tuple, ops: list) -> list:
    import jax.numpy as jnp

    if size == 0:                          # an empty batch: nothing to launch
        return [jnp.zeros((0,) + tuple(t.shape), t.dtype) for t in call.out_types]
    specs = list(specs)
    for i in call.aliased:                 # an aliased input must be a whole batch, as its output
        if specs[i] != _FULL:
            ops[i] = _whole_batch(jnp, ops[i], specs[i], size)
            specs[i] = _FULL
    option = tuple(sorted([(p.name, *s) for p, s in zip(call.operands, specs) if s is not None]
                          + [(p.name, *_FULL) for p in call.out_params]))
    kernel = call.batched_kernel(option)
    out_types = [_with_batch(t, size) for t in call.out_types]
    grid = (call.grid[0], call.grid[1], size)
    return list(call.execute(kernel, ops, out_types, grid))


def _whole_batch(jnp, op, spec, size: int):
    if spec is None:
        return jnp.broadcast_to(op[None], (size,) + tuple(op.shape))
    div, mod = spec
    index = np.arange(size) // div
    if mod:
        index = index % mod
    return jnp.take(op, jnp.asarray(index, dtype=jnp.int32), axis=0)


def _with_batch(t, size: int):
    import jax

    return jax.ShapeDtypeStruct((size,) + tuple(t.shape), t.dtype)
