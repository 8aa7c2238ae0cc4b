"""`launch`: run one compiled kernel from JAX, eagerly or under a transformation.

    outs = launch(kernel, args, out_types, grid, block, input_output_aliases=None)

`args` are the values of `kernel.params` without the outputs (the last `len(out_types)` array
parameters), in order. Everything about the call is checked here, before any CUDA call, and
errors name the kernel and the parameter. The kernel then runs through `jax.ffi.ffi_call` on
XLA's stream (see ptxpy.runtime.ffi). Under `jax.vmap` the batch runs as grid axis z of one
launch of a batched specialisation when `respecialise` is given and the kernel allows it, else
in sequence (ptxpy.runtime.batching, docs/jax.md).
"""
from __future__ import annotations

import math
import numbers
import struct
from typing import NamedTuple

import numpy as np

from ptxpy.runtime import batching, driver, executables, ffi
from ptxpy.runtime.values import is_tracer as _is_tracer
from ptxpy.transpiler import floatbits
from ptxpy.runtime.tensor_map import TensorMapLayout
from ptxpy.transpiler.abi import TENSOR_MAP, CompiledKernel, ParamSpec, param_size
from ptxpy.transpiler.launch_shape import launch_shared_bytes

VMAP_METHOD = "sequential"
_U32_MAX = 2**32 - 1


def launch(kernel: CompiledKernel, args: list, out_types: list, grid, block,
           input_output_aliases: dict[int, int] | None = None, respecialise=None) -> list:
    """Runs `kernel` on `args` and returns its outputs (a list of jax.Array, one per out_type).

    `respecialise(batched)`, when given, compiles the kernel's batched specialisation with that
    compile option (`Kernel._specialise`): under `jax.vmap` the batch then runs as grid axis z
    where the kernel allows it. Without it (hand-written PTX) vmap runs in sequence."""
    return launch_keeping(kernel, args, out_types, grid, block, input_output_aliases,
                          respecialise)[0]


def launch_keeping(kernel: CompiledKernel, args: list, out_types: list, grid, block,
                   input_output_aliases: dict[int, int] | None = None,
                   respecialise=None, owner: str | None = None) -> tuple[list, PreparedCall | None]:
    """`launch`, and the checked eager call that ran (None where the call was traced or its
    arguments are not all JAX arrays and numbers): its `run_eagerly` runs any call whose
    arguments have the same types, shapes, dtypes and scalar values (`_eager_signature`).
    `owner` names the kernel for its index of kept executables (runtime/executables.py)."""
    args, out_types = list(args), list(out_types)
    signature = _eager_signature(kernel, args, out_types, grid, block, input_output_aliases)
    prepared = _eager_calls.get(signature) if signature is not None else None
    if prepared is None or prepared.kernel is not kernel:
        prepared = prepare(kernel, args, out_types, grid, block, input_output_aliases)
        if signature is None:  # traced (or unusual) arguments
            operands = [prepared.values[i] for i in prepared.buffer_positions]
            if not any(_is_tracer(v) for v in operands):    # bind the FFI call directly
                return prepared.bind(prepared.values), None
            # the vmap rule, and the error that names the kernel under jax.grad
            return batching.run(prepared.batching_call(respecialise), operands), None
        if len(_eager_calls) > 4096:
            _eager_calls.clear()
        _eager_calls[signature] = prepared
    if prepared.owner is None:
        prepared.owner = owner
    return prepared.run_eagerly(args), prepared


class PreparedCall:
    """A checked launch: its plan key, the FFI call's operands and outputs, a jitted runner."""

    def __init__(self, kernel, key, values, buffer_positions, out_types, aliases, grid=None,
                 block=None):
        self.kernel, self.key, self.values = kernel, key, values
        self.buffer_positions, self.out_types, self.aliases = buffer_positions, out_types, aliases
        self.grid, self.block = grid, block
        self.owner = None      # the kernel's name for executables' index (`launch_keeping`)
        self._jitted = None

    def batching_call(self, respecialise) -> batching.Call:
        """This call for ptxpy.runtime.batching: `execute` registers a plan for the kernel it is
        given (this one, or a batched specialisation) and binds its FFI call."""
        import jax

        inputs, outputs = split_params(self.kernel, len(self.out_types))
        operands = [self.values[i] for i in self.buffer_positions]
        # no tracer is kept: the vmap rule may run in another trace
        values = [jax.ShapeDtypeStruct(v.shape, v.dtype) if i in self.buffer_positions else v
                  for i, v in enumerate(self.values)]
        shapes = [tuple(v.shape) for v in operands]

        def execute(kernel, ops, out_types, grid):
            if kernel is self.kernel and grid == self.grid and [tuple(o.shape) for o in ops] == shapes:
                key = self.key
            else:
                vals = list(values)
                for i, op in zip(self.buffer_positions, ops):
                    vals[i] = jax.ShapeDtypeStruct(tuple(op.shape), op.dtype)
                key = register(kernel, vals, out_types, grid, self.block)
            return ffi.call(key, list(ops), out_types, self.aliases, VMAP_METHOD)

        return batching.Call(self.kernel, [inputs[i] for i in self.buffer_positions], shapes,
                             outputs, list(self.out_types), self.grid, execute, respecialise,
                             frozenset(self.aliases))

    def bind(self, values: list) -> list:
        operands = [values[i] for i in self.buffer_positions]
        return ffi.call(self.key, operands, self.out_types, self.aliases, VMAP_METHOD)

    def run_eagerly(self, args: list) -> list:
        """Through a compiled `jax.jit` of the FFI call (JAX's C++ dispatch path), kept on disk
        for the next process (runtime/executables.py)."""
        operands = [args[i] for i in self.buffer_positions]
        if self._jitted is None:
            self._jitted = executables.eager_runner(self._ffi_call, operands, {
                "plan": self.key, "outs": [(tuple(t.shape), str(t.dtype)) for t in self.out_types],
                "aliases": sorted(self.aliases.items()), "target": ffi.TARGET,
                "vmap": VMAP_METHOD}, self.owner)
        return list(self._jitted(*operands))

    def runner(self):
        """After a `run_eagerly`: the jitted FFI call it made, which takes the operands
        (`buffer_positions` of the arguments) and returns the outputs' list; else None."""
        return self._jitted

    def _ffi_call(self, *operands) -> list:
        return ffi.call(self.key, list(operands), self.out_types, self.aliases, VMAP_METHOD)


def prepare(kernel: CompiledKernel, args: list, out_types: list, grid, block,
            input_output_aliases: dict[int, int] | None = None) -> PreparedCall:
    """Checks a call (before any CUDA call), loads the kernel, registers its launch plan."""
    inputs, values, out_types, grid, block, aliases = check_call(
        kernel, args, out_types, grid, block, input_output_aliases)
    key = register(kernel, values, out_types, grid, block)
    positions = [i for i, p in enumerate(inputs) if is_buffer(p)]
    ffi_aliases = {positions.index(i): o for i, o in aliases.items()}
    return PreparedCall(kernel, key, values, positions, out_types, ffi_aliases, grid, block)


def check_call(kernel: CompiledKernel, args: list, out_types: list, grid, block,
               input_output_aliases: dict[int, int] | None, traced_by_value: bool = False):
    """Everything about a call that can be checked without a GPU; returns (input params, the
    argument values as launched, out types, grid, block, aliases). `traced_by_value` lets a
    traced value through for a by-value scalar (the simulator takes it; a GPU launch cannot)."""
    inputs, outputs = split_params(kernel, len(out_types))
    values = check_args(kernel, inputs, args, traced_by_value)
    out_types = check_out_types(kernel, outputs, out_types)
    grid, block = check_dims(kernel, "grid", grid), check_dims(kernel, "block", block)
    shared = dynamic_shared_bytes(kernel, block, inputs, values, outputs, out_types)
    check_limits(kernel, grid, block, driver.DeviceLimits(), shared=shared)
    aliases = check_aliases(kernel, inputs, values, out_types, input_output_aliases or {})
    check_writes(kernel, inputs, aliases)
    return inputs, values, out_types, grid, block, aliases


def register(kernel: CompiledKernel, values: list, out_types: list, grid, block) -> int:
    """Loads the kernel on every GPU and registers the launch plan of checked `values` (arrays
    may be `jax.ShapeDtypeStruct`s: only shapes are packed) and `out_types`; returns its key."""
    inputs, outputs = split_params(kernel, len(out_types))
    shared = dynamic_shared_bytes(kernel, block, inputs, values, outputs, out_types)
    image = _prepare_devices(kernel, grid, block, shared)
    _, slots, params, offsets = pack(kernel, inputs, values, outputs, out_types)
    maps = [slot for slot in slots if isinstance(slot, TensorSlot)]
    pointers = [slot for slot in slots if not isinstance(slot, TensorSlot)]
    plan = ffi.LaunchPlan(kernel.name, image, grid, block, image.dynamic_shared, params, offsets,
                          pointers, pdl=waits_for_predecessors(kernel.ptx, kernel.name),
                          tensor_slots=maps)
    key = ffi.register_plan(plan, (kernel.name, image.digest, grid, block, image.dynamic_shared,
                                   params, tuple(slots), plan.pdl))
    ffi.register_target()
    return key


def waits_for_predecessors(ptx: str, name: str) -> bool:
    """Whether kernel `name`'s first instruction is `griddepcontrol.wait` (ptxpy's kernels for
    sm_90 and later begin so): only such a kernel may be launched as a programmatic dependent
    launch, which lets it start before the kernel it depends on has finished."""
    entry = ptx.find(f".entry {name}(")
    if entry < 0:
        entry = ptx.find(f".entry {name}")
    body = ptx.find("{", entry) if entry >= 0 else -1
    if body < 0:
        return False
    for line in ptx[body + 1:].splitlines():
        text = line.strip()
        if text and not text.startswith(("//", ".")):   # declarations, .loc and comments
            return text == "griddepcontrol.wait;"
    return False


_eager_calls: dict[tuple, PreparedCall] = {}
_NUMBER = (bool, int, float, np.number, np.bool_)


def _eager_signature(kernel, args, out_types, grid, block, aliases) -> tuple | None:
    """A hashable summary of an eager call with concrete JAX arrays and plain numbers, which
    fixes its launch plan; None when the call needs the full path (tracers, NumPy arrays ...)."""
    import jax

    parts = [id(kernel), len(out_types)]
    inputs = split_params(kernel, len(out_types))[0] if out_types else []
    if len(inputs) != len(args):
        return None
    for spec, v in zip(inputs, args):
        if is_buffer(spec) and isinstance(v, jax.Array) and not _is_tracer(v):
            parts.append((v.shape, v.dtype))
        elif not spec.by_ref and spec.kind == "scalar" and isinstance(v, _NUMBER):
            parts.append((type(v), v, repr(v)))
        else:
            return None
    try:
        parts.append(tuple((tuple(t.shape), np.dtype(t.dtype)) for t in out_types))
        parts.append(tuple(grid) if not isinstance(grid, (int, np.integer)) else grid)
        parts.append(tuple(block) if not isinstance(block, (int, np.integer)) else block)
        parts.append(tuple(sorted(aliases.items())) if aliases else ())
        return tuple(parts)
    except (AttributeError, TypeError):
        return None


def dynamic_shared_bytes(kernel: CompiledKernel, block=(1, 1, 1), inputs=(), values=(),
                         outputs=(), out_types=()) -> int:
    """Bytes of dynamic shared memory (`.extern .shared`) one launch asks for: the static arrays
    past 48 KB, and the arrays sized at launch for these shapes and this block."""
    if not kernel.options.get("launch_shared"):
        return int(kernel.options.get("dynamic_shared_bytes", 0))
    batched = {entry[0] for entry in kernel.options.get("batched", ())}
    shapes, scalars = {}, {}
    for spec, value in [*zip(inputs, values), *zip(outputs, out_types)]:
        if spec.kind == "array":
            shapes[spec.name] = tuple(int(n) for n in value.shape)[1 if spec.name in batched else 0:]
        elif not spec.by_ref:   # checked already: a 0-d NumPy array (_scalar_value)
            scalars[spec.name] = int(value)
    return launch_shared_bytes(kernel, shapes, block, scalars)


# --- checking --------------------------------------------------------------------------------

def split_params(kernel: CompiledKernel, n_out: int) -> tuple[list, list]:
    """(input params, output params): the outputs are the last `n_out` array parameters."""
    array_positions = [i for i, p in enumerate(kernel.params) if p.kind == "array"]
    if n_out < 1 or n_out > len(array_positions):
        raise ValueError(f"kernel '{kernel.name}': {n_out} outputs requested but it has "
                         f"{len(array_positions)} array parameters (outputs are the last ones)")
    out_positions = set(array_positions[-n_out:])
    inputs = [p for i, p in enumerate(kernel.params) if i not in out_positions]
    outputs = [p for i, p in enumerate(kernel.params) if i in out_positions]
    return inputs, outputs


def check_args(kernel: CompiledKernel, inputs: list[ParamSpec], args: list,
               traced_by_value: bool = False) -> list:
    if len(args) != len(inputs):
        names = ", ".join(p.name for p in inputs)
        raise TypeError(f"kernel '{kernel.name}' takes {len(inputs)} arguments ({names}) "
                        f"but got {len(args)}")
    return [_check_arg(kernel, spec, value, traced_by_value) for spec, value in zip(inputs, args)]


def _check_arg(kernel: CompiledKernel, spec: ParamSpec, value, traced_by_value: bool):
    if spec.kind == "array":
        return _check_array(kernel, spec, value)
    if spec.by_ref:
        return _scalar_buffer(kernel, spec, value)
    if traced_by_value and _is_tracer(value):
        return _scalar_buffer(kernel, spec, value)
    return _scalar_value(kernel, spec, value)


def _where(kernel: CompiledKernel, spec: ParamSpec) -> str:
    return f"kernel '{kernel.name}', parameter '{spec.name}'"


def _check_array(kernel, spec, value):
    import jax

    if (isinstance(value, (numbers.Number, np.generic, jax.ShapeDtypeStruct))
            or not hasattr(value, "shape")):
        raise TypeError(f"{_where(kernel, spec)}: expected an array of {spec.dtype} with rank "
                        f"{spec.rank}, got {type(value).__name__}")
    _check_type(kernel, spec, value.dtype, value.shape, "array")
    _check_tensor_maps(kernel, spec, tuple(value.shape))
    _check_jax_holds(kernel, spec, "an array")
    if isinstance(value, np.ndarray):
        import jax.numpy as jnp
        value = jnp.asarray(value)
    return value


def held_in_32_bits(dtype) -> bool:
    """Whether JAX holds values of this NumPy dtype in 32 bits: a 64-bit one while
    jax_enable_x64 is off."""
    import jax

    return np.dtype(jax.dtypes.canonicalize_dtype(dtype)) != np.dtype(dtype)


def _check_jax_holds(kernel, spec, what: str) -> None:
    """JAX keeps 64-bit elements only with jax_enable_x64; without it a 64-bit array would be
    made 32-bit, and the kernel would read and write past the end of its buffer."""
    if held_in_32_bits(spec.dtype.numpy):
        raise TypeError(f"{_where(kernel, spec)}: {what} of {spec.dtype} needs "
                        "jax.config.update('jax_enable_x64', True); without it JAX holds 64-bit "
                        "values in 32 bits")


def _check_type(kernel, spec, dtype, shape, what: str) -> None:
    dtype = np.dtype(dtype)
    if dtype != spec.dtype.numpy:
        order = " in big-endian byte order, which JAX does not take" * (not dtype.isnative)
        raise TypeError(f"{_where(kernel, spec)}: expected {what} of dtype {spec.dtype} "
                        f"({spec.dtype.numpy.name}), got {dtype.name}{order}")
    if len(shape) != spec.rank:
        raise ValueError(f"{_where(kernel, spec)}: expected {what} of rank {spec.rank}, "
                         f"got shape {tuple(shape)}")
    if any(int(d) < 0 for d in shape):
        raise ValueError(f"{_where(kernel, spec)}: extents cannot be negative, got {tuple(shape)}")
    if any(int(d) > _U32_MAX for d in shape):
        raise ValueError(f"{_where(kernel, spec)}: extents must fit in 32 bits, got {tuple(shape)}")


def is_real_dtype(dtype) -> bool:
    """Whether a scalar of `dtype` is a real number: a bool, an integer or a float, the ml_dtypes
    types JAX uses included (bfloat16, the float8 types, int4)."""
    if getattr(dtype, "kind", None) in ("b", "i", "u", "f"):
        return True
    import jax.numpy as jnp

    try:
        return any(jnp.issubdtype(dtype, kind) for kind in (jnp.integer, jnp.floating))
    except TypeError:   # not a dtype
        return False


def _scalar_value(kernel, spec, value) -> np.ndarray:
    """A by-value scalar as a 0-d NumPy array of the parameter's dtype: converted as a cast
    would, except that an integer or bool parameter takes only integral values in its range."""
    if _is_tracer(value):
        raise TypeError(f"{_where(kernel, spec)}: a traced value cannot be passed by value; "
                        "this parameter must be compiled by reference (ParamSpec.by_ref)")
    if isinstance(value, int) and not isinstance(value, bool):     # Python's, of any size
        if spec.dtype.is_float:
            return _rounded(value, spec.dtype.numpy)
        _check_range(kernel, spec, value, value)
        return np.asarray(value).astype(spec.dtype.numpy)
    host = np.asarray(value)
    if host.size != 1 or not is_real_dtype(host.dtype):
        raise TypeError(f"{_where(kernel, spec)}: expected a {spec.dtype} scalar, got {value!r}")
    host = host.reshape(())
    if not spec.dtype.is_float:
        _check_range(kernel, spec, _integral(kernel, spec, host, value), value)
    elif spec.dtype.name == "bf16" and host.dtype == np.float64:
        # ml_dtypes rounds float64 -> bfloat16 twice (through float32); a cast rounds once
        host = np.asarray(floatbits.round_to(float(host), "bf16"))
    with np.errstate(over="ignore"):    # beyond the type's range: an infinity, as a cast gives
        return host.astype(spec.dtype.numpy)


def _rounded(number: int, dtype: np.dtype) -> np.ndarray:
    """A Python int of any size as a 0-d array of float `dtype`, rounded once to nearest even
    as a cast rounds (NumPy holds only ints of 64 bits; beyond the type's range: an infinity)."""
    import ml_dtypes

    excess = abs(number).bit_length() - (ml_dtypes.finfo(dtype).nmant + 1)
    if excess > 0:      # keep the type's significant bits, so that float() below is exact
        kept, rest = divmod(abs(number), 1 << excess)
        half = 1 << (excess - 1)
        kept += rest > half or (rest == half and kept & 1)
        number = (kept << excess) * (-1 if number < 0 else 1)
    try:
        value = float(number)
    except OverflowError:   # beyond f64's range, and so beyond every float type's
        value = -math.inf if number < 0 else math.inf
    with np.errstate(over="ignore"):
        return np.asarray(value).astype(dtype)


def _integral(kernel, spec, host: np.ndarray, value) -> int:
    if host.dtype.kind in "biu":
        return int(host)
    if not float(host).is_integer():     # a fraction, NaN or an infinity
        raise TypeError(f"{_where(kernel, spec)}: expected an integer ({spec.dtype}), got {value!r}")
    return int(float(host))


def _check_range(kernel, spec, number: int, value) -> None:
    info = None if spec.dtype.is_bool else np.iinfo(spec.dtype.numpy)
    low, high = (0, 1) if info is None else (int(info.min), int(info.max))
    if not low <= number <= high:
        raise ValueError(f"{_where(kernel, spec)}: {value!r} does not fit in {spec.dtype}")


def _scalar_buffer(kernel, spec, value):
    """A by-reference scalar: a one-element JAX array of the parameter's dtype (a JAX value is
    converted as a cast would: a traced one cannot be checked)."""
    import jax.numpy as jnp

    if _is_tracer(value) or hasattr(value, "devices"):
        array = value
    else:   # a number or a NumPy value: checked and converted as by value
        array = jnp.asarray(_scalar_value(kernel, spec, value))
    if int(np.prod(array.shape)) != 1:
        raise ValueError(f"{_where(kernel, spec)}: expected a scalar, got shape {tuple(array.shape)}")
    held = (spec.carrier or spec.dtype).numpy
    array = array.reshape(()).astype(held)
    if np.dtype(array.dtype) != held:
        raise TypeError(f"{_where(kernel, spec)}: JAX made {array.dtype} of a {spec.dtype} value; "
                        "64-bit scalars need jax.config.update('jax_enable_x64', True), or a "
                        "kernel compiled for them held in 32 bits (Options.narrow_refs)")
    return array


def check_out_types(kernel, outputs: list[ParamSpec], out_types: list) -> list:
    import jax

    checked = []
    for spec, t in zip(outputs, out_types):
        if not hasattr(t, "shape") or not hasattr(t, "dtype"):
            raise TypeError(f"{_where(kernel, spec)}: out_types entries must be "
                            f"jax.ShapeDtypeStruct, got {type(t).__name__}")
        _check_type(kernel, spec, t.dtype, t.shape, "output (out_shape's entry)")
        _check_tensor_maps(kernel, spec, tuple(t.shape))
        _check_jax_holds(kernel, spec, "an output")
        checked.append(jax.ShapeDtypeStruct(tuple(int(d) for d in t.shape), t.dtype))
    return checked


def check_dims(kernel: CompiledKernel, what: str, dims) -> tuple[int, int, int]:
    """An int or a tuple of up to three ints -> a 3-tuple, each at least 1."""
    dims = (dims,) if isinstance(dims, (int, np.integer)) else tuple(dims)
    if not 1 <= len(dims) <= 3 or not all(isinstance(d, (int, np.integer)) for d in dims):
        raise TypeError(f"kernel '{kernel.name}': {what} must be an int or a tuple of 1 to 3 ints, "
                        f"got {dims!r}")
    if any(d < 1 for d in dims):
        raise ValueError(f"kernel '{kernel.name}': every {what} dimension must be >= 1, got {dims}")
    return tuple(int(d) for d in dims) + (1,) * (3 - len(dims))


def check_limits(kernel: CompiledKernel, grid, block, limits: driver.DeviceLimits,
                 device: str = "CUDA devices", shared: int | None = None) -> None:
    """`shared`: the launch's dynamic shared memory bytes (dynamic_shared_bytes)."""
    name = f"kernel '{kernel.name}'"
    threads = block[0] * block[1] * block[2]
    if threads % 32 and kernel.options.get("whole_warps_only"):
        raise ValueError(f"{name}: block {block} has {threads} threads, not a multiple of 32: the "
                         "kernel calls ptxpy.mma_sync or ptxpy.ldmatrix, which need every warp whole")
    if threads % 128 and kernel.options.get("whole_warpgroups_only"):
        raise ValueError(f"{name}: block {block} has {threads} threads, not a multiple of 128: the "
                         "kernel calls ptxpy.wgmma or ptxpy.setmaxnreg_*, which need every warpgroup "
                         "(4 warps) whole")
    cluster = kernel.options.get("cluster")
    if cluster and any(g % c for g, c in zip(grid, cluster)):
        raise ValueError(f"{name}: grid {tuple(grid)} is not a whole number of clusters of "
                         f"{tuple(cluster)} blocks (each grid dimension must be a multiple of "
                         "the cluster's)")
    if threads > limits.max_threads_per_block:
        raise ValueError(f"{name}: block {block} has {threads} threads; {device} allow at most "
                         f"{limits.max_threads_per_block} per block")
    for axis, (b, mb, g, mg) in enumerate(zip(block, limits.max_block, grid, limits.max_grid)):
        if b > mb:
            raise ValueError(f"{name}: block dimension {'xyz'[axis]} is {b}; {device} allow at most {mb}")
        if g > mg:
            raise ValueError(f"{name}: grid dimension {'xyz'[axis]} is {g}; {device} allow at most {mg}")
    shared = (dynamic_shared_bytes(kernel) if shared is None else shared) + kernel.shared_bytes
    if limits.arch and shared > limits.max_shared_optin:
        raise ValueError(f"{name}: needs {shared} bytes of shared memory per block; {device} "
                         f"allow at most {limits.max_shared_optin}")


def check_aliases(kernel, inputs, values, out_types, aliases: dict) -> dict[int, int]:
    for i, o in aliases.items():
        if not (isinstance(i, int) and 0 <= i < len(values)) or inputs[i].kind != "array":
            raise ValueError(f"kernel '{kernel.name}': input_output_aliases key {i!r} is not the "
                             "index of an array argument")
        if not (isinstance(o, int) and 0 <= o < len(out_types)):
            raise ValueError(f"kernel '{kernel.name}': input_output_aliases value {o!r} is not "
                             f"an output index (0..{len(out_types) - 1})")
        v, t = values[i], out_types[o]
        if tuple(v.shape) != tuple(t.shape) or np.dtype(v.dtype) != np.dtype(t.dtype):
            raise ValueError(f"kernel '{kernel.name}': argument '{inputs[i].name}' "
                             f"{tuple(v.shape)} {np.dtype(v.dtype).name} cannot alias output {o} "
                             f"{tuple(t.shape)} {np.dtype(t.dtype).name}")
    if len(set(aliases.values())) != len(aliases):
        raise ValueError(f"kernel '{kernel.name}': two inputs alias the same output")
    return dict(aliases)


def check_writes(kernel, inputs, aliases: dict) -> None:
    """A kernel may write only its outputs and the inputs aliased to them: any other input is a
    JAX array, which must not change (XLA may share its buffer with other values)."""
    for i, p in enumerate(inputs):
        if p.kind == "array" and p.written and i not in aliases:
            raise ValueError(f"kernel '{kernel.name}' writes to its input array '{p.name}', which "
                             "JAX passes read-only: make it an output (the last array parameters "
                             f"are the outputs of out_shape), or alias it to one with "
                             f"input_output_aliases={{{i}: <output index>}}")


# --- devices ---------------------------------------------------------------------------------

def gpu_ordinals() -> list[int]:
    """CUDA ordinals of the GPUs this process's JAX uses."""
    import jax

    try:
        devices = jax.local_devices(backend="gpu")
    except RuntimeError:
        devices = []
    if not devices:
        raise RuntimeError("ptxpy: JAX sees no CUDA GPU; run kernels in the simulator "
                           "(interpret=True or PTXPY_INTERPRET=1)")
    return [d.local_hardware_id if d.local_hardware_id is not None else d.id for d in devices]


def _prepare_devices(kernel: CompiledKernel, grid, block, shared: int) -> driver.KernelImage:
    """Loads the kernel on every GPU of this process (never inside a CUDA graph capture) and
    checks the launch, with `shared` bytes of dynamic shared memory, against each device's
    limits (an image per size: each sets its own dynamic shared-memory limit)."""
    ordinals = gpu_ordinals()
    image = driver.kernel_image(kernel.name, kernel.ptx, kernel.arch, shared, kernel.shared_bytes)
    for ordinal in ordinals:
        check_limits(kernel, grid, block, driver.device_limits(ordinal), f"device {ordinal}", shared)
        image.load(ordinal)
        most = image.max_threads_per_block(ordinal)
        threads = block[0] * block[1] * block[2]
        if threads > most:
            raise ValueError(f"kernel '{kernel.name}': block {block} has {threads} threads but the "
                             f"compiled kernel runs at most {most} per block on device {ordinal} "
                             "(it uses too many registers)")
    return image


# --- parameter packing -----------------------------------------------------------------------

def is_buffer(spec: ParamSpec) -> bool:
    """Whether the parameter reaches the kernel as a pointer to an XLA buffer."""
    return spec.kind == "array" or spec.by_ref


def pack(kernel, inputs, values, outputs, out_types):
    """Lays out the `.param` block. Returns (operands, pointer slots, packed bytes, offsets).

    Pointer slots are (byte offset, buffer index) with buffer index counting the operands (the
    array and by-reference arguments, in order) then the outputs; a tensor map's slot is a
    `TensorSlot`, which adds the map's layout (its 128 bytes lie on a 64-byte boundary). In a batched specialisation
    the arrays named by `kernel.options["batched"]` have a leading batch axis, left out of their
    shape parameters.
    """
    batched = {entry[0] for entry in kernel.options.get("batched", ())}
    operands = [v for spec, v in zip(inputs, values) if is_buffer(spec)]
    sources, k = {}, 0
    for spec, v in zip(inputs, values):
        sources[id(spec)] = (k, v)
        k += is_buffer(spec)
    for j, t in enumerate(out_types):
        sources[id(outputs[j])] = (len(operands) + j, t)
    buf, offsets, slots = bytearray(), [], []
    for spec in kernel.params:
        index, value = sources[id(spec)]
        for ptype, data in _param_values(kernel.name, spec, value, spec.name in batched):
            size, align = param_size(ptype)
            buf.extend(b"\0" * (-len(buf) % align))
            offsets.append(len(buf))
            if isinstance(data, TensorMapLayout):
                slots.append(TensorSlot(len(buf), index, data))
                data = b"\0" * size
            elif data is None:
                slots.append((len(buf), index))
                data = b"\0" * 8
            buf.extend(data)
    return operands, slots, bytes(buf), offsets


class TensorSlot(NamedTuple):
    """A tensor map in the parameter block: at `offset`, the map of `layout` at the data
    pointer of XLA buffer `index`."""
    offset: int
    index: int
    layout: TensorMapLayout


def tensor_map_layouts(spec: ParamSpec, shape: tuple) -> list[TensorMapLayout]:
    """The layouts of the tensor maps array parameter `spec` of `shape` is passed with."""
    return [TensorMapLayout(spec.dtype.name, spec.dtype.nbytes, tuple(int(n) for n in shape),
                            box, swizzle) for box, swizzle in spec.tensor_maps]


def _check_tensor_maps(kernel, spec: ParamSpec, shape: tuple) -> None:
    for layout in tensor_map_layouts(spec, shape):
        problem = layout.problem()
        if problem:
            raise ValueError(f"{_where(kernel, spec)}: the kernel copies {layout.box} boxes of it "
                             f"through a tensor map (ptxpy.tma_load/tma_store), and {problem}")


def _param_values(kernel_name: str, spec: ParamSpec, value,
                  batched: bool = False) -> list[tuple[str, bytes | None]]:
    """(ptx type, bytes) of each `.param` of one parameter; bytes None for a buffer pointer."""
    types = [t for _, t in spec.ptx_params(kernel_name)]
    if spec.kind == "array":
        shape = tuple(value.shape)[1 if batched else 0:]
        extents = [(t, struct.pack("<I", int(d))) for t, d in zip(types[1:], shape)]
        return ([(types[0], None)] + extents
                + [(TENSOR_MAP, layout) for layout in tensor_map_layouts(spec, shape)])
    if spec.by_ref:
        return [(types[0], None)]
    return [(types[0], value.tobytes())]
