"""`ptxpy.jit`, `ptxpy.func` and `ptxpy.transpile` (SPEC 2.6, 3)."""
from __future__ import annotations

import functools
import hashlib
import inspect
import linecache
import math
import operator
import os
import threading
import time
from collections.abc import Mapping
from typing import NamedTuple

from ptxpy import cells
from ptxpy.runtime import cache
from ptxpy.runtime.values import is_tracer as _is_tracer
from ptxpy.transpiler import driver, pyast
from ptxpy.transpiler.abi import CompiledKernel
from ptxpy.transpiler.errors import CompileError, source_lines
from ptxpy.types import ArrayType, ConstType, from_numpy


def transpile(source: str, filename: str = "<string>", arch: str = "sm_90", defines=None,
              fast_math: bool = False, debug: bool = False, max_registers: int | None = None,
              launch_bounds=None, cluster=None) -> dict[str, str]:
    """PTX text of every `@ptxpy.jit` kernel in `source`: `{kernel_name: ptx_text}`.
    `source` is the text of a module, or its bytes as read from a file (decoded as Python
    decodes a source file). `max_registers`, `launch_bounds` and `cluster` are @ptxpy.jit's."""
    if not isinstance(filename, str):
        raise TypeError(f"transpile: filename must be a str, not {type(filename).__name__}")
    if isinstance(source, (bytes, bytearray)):
        source = driver.decode_source(bytes(source), filename)
    elif not isinstance(source, str):
        raise TypeError(f"transpile: source must be a str or bytes, not {type(source).__name__}")
    if defines is not None and not isinstance(defines, Mapping):
        raise TypeError(f"transpile: defines must be a dict of Const values, not "
                        f"{type(defines).__name__}")
    if not isinstance(arch, str):
        raise TypeError(f"transpile: arch must be a str such as 'sm_90', not {type(arch).__name__}")
    for option, value in (("fast_math", fast_math), ("debug", debug)):
        if not isinstance(value, bool):     # a string such as "no" would read as True
            raise TypeError(f"transpile: {option} must be True or False, got {value!r:.40} "
                            f"({type(value).__name__})")
    try:
        max_registers, launch_bounds = driver.register_bounds(max_registers, launch_bounds)
        cluster = driver.cluster_dims(cluster)
    except ValueError as err:
        raise ValueError(f"transpile: {err}") from None
    try:
        return driver.transpile(source, filename, arch, defines, fast_math, debug,
                                max_registers=max_registers, launch_bounds=launch_bounds,
                                cluster=cluster)
    except CompileError as err:
        raise _shown(err) from None


def _check_function(fn, decorator: str) -> None:
    """A kernel or device function is a `def` whose source ptxpy reads: not a lambda, a class,
    a built-in or a callable object (a TypeError where the decorator is applied)."""
    inner = inspect.unwrap(fn) if hasattr(fn, "__wrapped__") else fn   # under other decorators:
    if inspect.isfunction(inner) and inner.__name__ != "<lambda>":   # the source check names them
        return
    what = ("a lambda" if inspect.isfunction(fn) else f"the class {fn.__name__}" if inspect.isclass(fn)
            else f"the built-in {getattr(fn, '__name__', fn)!r}" if inspect.isbuiltin(fn)
            else f"an object of type {type(fn).__name__}"
            + (f" ({fn.__name__!r})" if hasattr(fn, "__name__") else ""))
    if isinstance(fn, str):     # Numba's @cuda.jit("void(float32[:])")
        raise TypeError(f"{decorator} takes no signature (got {fn!r:.60}): ptxpy reads the types "
                        "from the function's annotations (x: Array[f32], n: i32)")
    raise TypeError(f"{decorator} needs a function defined with def (ptxpy compiles its source), "
                    f"got {what}")


def func(fn):
    """Mark a device function: callable from kernels and other device functions (inlined)."""
    _check_function(fn, "@ptxpy.func")
    @functools.wraps(fn)
    def host_call(*args, **kwargs):
        raise RuntimeError(f"@ptxpy.func {fn.__name__} can only be called from a kernel")
    host_call.__ptxpy_func__ = True
    return host_call


def jit(fn=None, *, out_shape=None, grid=None, block=None, input_output_aliases=None,
        debug: bool = False, fast_math: bool = False, interpret=None, arch=None,
        max_registers: int | None = None, launch_bounds=None, cluster=None):
    """Make a kernel from an annotated function (SPEC 2.6). Usable with or without arguments.
    `max_registers` caps the registers per thread (PTX `.maxnreg`); `launch_bounds`, threads
    or (threads, blocks per SM), is CUDA's `__launch_bounds__` (`.maxntid`, `.minnctapersm`);
    `cluster`, blocks per thread-block cluster (an int or up to three), is CUDA's
    `__cluster_dims__` (`.reqnctapercluster`, sm_90)."""
    def wrap(f):
        _check_function(f, "@ptxpy.jit")
        return Kernel(f, out_shape=out_shape, grid=grid, block=block,
                      input_output_aliases=input_output_aliases, debug=debug,
                      fast_math=fast_math, interpret=interpret, arch=arch,
                      max_registers=max_registers, launch_bounds=launch_bounds, cluster=cluster)
    return wrap(fn) if fn is not None else wrap


_NO_KEY = object()    # `Kernel._prepared_call` without a key: it computes one


def _located_errors(method):
    """A Kernel entry point whose CompileError shows the user's frames only: the message
    locates the error in their source (PTXPY_TRACEBACK=1 keeps ptxpy's frames)."""
    @functools.wraps(method)
    def entry(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except CompileError as err:
            raise _shown(err) from None
    return entry


class Kernel:
    def __init__(self, fn, *, out_shape, grid, block, input_output_aliases, debug, fast_math,
                 interpret, arch, max_registers=None, launch_bounds=None, cluster=None):
        functools.update_wrapper(self, fn)
        _check_arch(arch, self.__name__)
        try:
            self.register_bounds = driver.register_bounds(max_registers, launch_bounds)
            self.cluster = driver.cluster_dims(cluster)
        except ValueError as err:
            raise ValueError(f"@ptxpy.jit of {self.__name__}: {err}") from None
        if self.cluster and arch is not None and driver.target_sm(arch) < 90:
            raise ValueError(f"@ptxpy.jit of {self.__name__}: a cluster needs sm_90 or newer, "
                             f"arch is {arch}")
        for option, value in (("debug", debug), ("fast_math", fast_math)):
            _check_flag(self.__name__, option, value, "True or False")
        if interpret is not None:
            _check_flag(self.__name__, "interpret", interpret, "True, False or None")
        self.fn = fn
        self.out_shape, self.grid, self.block = out_shape, grid, block
        self.input_output_aliases = _aliases(input_output_aliases, self.__name__)
        self.debug, self.fast_math, self.interpret, self.arch = debug, fast_math, interpret, arch
        self._source = None
        self._program = None
        self._params = None
        self._compiled: dict = {}
        self._plans: dict = {}      # _call_key -> _CallPlan (`_prepared_call`)
        warm = self._compiled_before()
        if not warm:
            _preload("compiler", self)
        if interpret is not True and not _interpret_forced():
            _preload("runtime")
            if warm:
                _preload("executables", self)

    # --- source and signature ------------------------------------------------------------
    @property
    def source(self) -> tuple[str, str]:
        """(filename, text) of the file that defines the kernel, read once."""
        if self._source is None:
            # through any decorator under @ptxpy.jit (the compiler reports it, located)
            fn = inspect.unwrap(self.fn)
            filename = inspect.getsourcefile(fn) or inspect.getfile(fn)
            text = "".join(linecache.getlines(filename))
            if not text:
                try:
                    with open(filename, "rb") as f:
                        text = driver.decode_source(f.read(), filename)
                except OSError:
                    raise CompileError(f"cannot read the source of kernel '{self.__name__}' from "
                                       f"'{filename}': ptxpy compiles a kernel from the file that "
                                       "defines it (for source text, use ptxpy.transpile)",
                                       None, filename) from None
            if cells.is_cell(filename):
                text += cells.context_lines(self.fn.__globals__, text)
            self._source = filename, text
        return self._source

    @property
    def program(self) -> driver.Program:
        if self._program is None:
            global _calls_compiling
            if not _calls_compiling and not threading.current_thread().name.startswith(
                    "ptxpy-preload"):
                _calls_compiling = True
            filename, source = self.source
            try:
                program = driver.parse(source, filename)
            except CompileError as err:
                raise _shown(err) from None
            # a function in a function or class is never the top-level kernel of its name
            if "." in self.__qualname__ or self.__name__ not in program.kernels:
                raise self._not_found_error(filename, source)
            self._program = program
        return self._program

    def _not_found_error(self, filename: str, source: str) -> CompileError:
        line = inspect.unwrap(self.fn).__code__.co_firstlineno
        lines = source_lines(source)
        text = lines[line - 1] if 0 < line <= len(lines) else None
        where = (line, len(text) - len(text.lstrip())) if text is not None else None
        if "." in self.__qualname__:     # Python's name for a function in a function or class
            message = (f"kernel '{self.__qualname__}' is defined inside a function or class; "
                       "ptxpy compiles kernels defined at the top level of a module")
        else:
            message = f"{self.__name__} is not decorated with @ptxpy.jit in its source"
        return CompileError(message, where, filename, text)

    @property
    def params(self) -> list:
        """The signature, [Param(name, type)]: from the disk cache when this file was seen
        before, so that a warm start never loads the compiler."""
        if self._params is None:
            try:
                self._params = cache.get_or_make_object("signature", self._cache_key(), lambda: [
                    Param(p.name, p.type) for p in self.program.kernels[self.__name__].params])
            except CompileError as err:   # an error in the kernel's header
                raise _shown(err) from None
        return self._params

    @property
    def __signature__(self) -> inspect.Signature | None:
        """The call's signature: the inputs in call order, outputs left out, Const defaults kept.
        JAX maps `static_argnames` to `static_argnums` (and back) with it. None while the number
        of outputs or the parameters cannot be known; `inspect` then reads `__call__`'s."""
        n_outputs = self._declared_output_count()
        if n_outputs is None:
            return None
        try:
            inputs = {p.name for p in self._inputs(n_outputs)}
            python = inspect.signature(self.fn).parameters.values()
            return inspect.Signature([p.replace(kind=inspect.Parameter.POSITIONAL_OR_KEYWORD)
                                      for p in python if p.name in inputs])
        except Exception:   # an error in the kernel's source or header: the call reports it
            return None

    def _declared_output_count(self) -> int | None:
        """The number of outputs, as far as out_shape tells it without a call."""
        spec = self.out_shape
        if spec is None:
            return None
        if not callable(spec):
            return len(spec) if isinstance(spec, (list, tuple)) else 1
        return next(iter(self._output_counts_like(spec)), None)

    def _compiled_before(self) -> bool:
        """Whether this file's kernel is in the disk cache (then a warm start is likely)."""
        try:
            return cache.disk_enabled() and cache.entry_path("signature", self._cache_key()).exists()
        except (OSError, TypeError, CompileError):    # no source to read: the call will say so
            return False

    def _owner(self) -> str | None:
        """The kernel's name in the index of its calls' kept executables: file and name."""
        try:
            return f"{self.source[0]}:{self.__qualname__}"
        except (OSError, TypeError, CompileError):
            return None

    def _cache_key(self, **specialisation) -> dict:
        filename, source = self.source
        return {"kernel": self.__qualname__, "file": filename,   # a nested function: its own key
                "source_sha256": hashlib.sha256(source.encode()).hexdigest(),
                "compiler": cache.compiler_fingerprint(), **specialisation}

    # --- calls ----------------------------------------------------------------------------
    def __getitem__(self, launch):
        """Numba's and Triton's launch, `kernel[grid, block](...)`: not ptxpy's; say what is."""
        raise TypeError(f"{self.__name__}: a ptxpy kernel is not launched as "
                        f"{self.__name__}[grid, block](...); give grid= and block= to @ptxpy.jit "
                        f"(numbers, or functions of the call's inputs) and call "
                        f"{self.__name__}(inputs...), which returns the outputs")

    def __call__(self, *args, **kwargs):
        try:
            key = _call_key(args, kwargs)
            plan = self._plans.get(key)     # (no plan has the key None)
            if plan is not None and plan.run is not None and not self._interpreting():
                # a call like one checked and launched before: its jitted launch, straight
                given = (*args, *kwargs.values()) if kwargs else args
                outs = plan.run(*[given[k] for k in plan.operands])
                return tuple(outs) if plan.many_outputs else outs[0]
            return self._call(args, kwargs, key)
        except CompileError as err:     # as `_located_errors`, without its frame on every call
            raise _shown(err) from None

    def _call(self, args, kwargs, key):
        call = self._prepared_call(args, kwargs, key)
        if 0 in call.grid:
            outs = self._outputs_without_launch(call)
        elif self._interpreting():
            from ptxpy.runtime.interpret import run_interpreted

            outs = run_interpreted(call.kernel, call.inputs, call.out_types, call.grid, call.block,
                                   self.input_output_aliases, respecialise=call.respecialise)
        elif call.plan is not None and call.plan.launched is not None:
            outs = call.plan.launched.run_eagerly(call.inputs)
        else:
            from ptxpy.runtime.launch import launch_keeping

            outs, launched = launch_keeping(call.kernel, call.inputs, call.out_types, call.grid,
                                            call.block, self.input_output_aliases,
                                            respecialise=call.respecialise, owner=self._owner())
            if call.plan is not None and launched is not None:
                call.plan.note_launched(launched)
        return tuple(outs) if call.many_outputs else outs[0]

    def _outputs_without_launch(self, call: "_Call") -> list:
        """A grid with no blocks launches nothing, as in Triton: each output is the input it
        aliases (unchanged), or else zeros."""
        import jax.numpy as jnp

        source_of = {out: inp for inp, out in self.input_output_aliases.items()}
        return [jnp.asarray(call.inputs[source_of[k]]) if k in source_of
                else jnp.zeros(out.shape, out.dtype) for k, out in enumerate(call.out_types)]

    @_located_errors
    def ptx(self, *args, **kwargs) -> str:
        """The PTX text this call would run (no GPU needed)."""
        return self._prepare(args, kwargs, shapes_only=True).kernel.ptx

    def transpile(self, *args, **kwargs) -> str:
        """Like `ptx`, for `jax.ShapeDtypeStruct`s (or arrays) in place of array arguments."""
        return self.ptx(*args, **kwargs)

    @_located_errors
    def compiled(self, *args, **kwargs) -> CompiledKernel:
        return self._prepare(args, kwargs, shapes_only=True).kernel

    def _interpreting(self) -> bool:
        if _interpret_forced():
            return True
        if self.interpret is not None:
            return bool(self.interpret)
        return not _has_gpu()

    def _prepared_call(self, args, kwargs, key=_NO_KEY) -> "_Call":
        """`_prepare(args, kwargs)`, from the plans of earlier calls whose arguments had the same
        kinds, shapes and dtypes, scalar values and keywords (`_call_key`, or `key` where the
        caller has it): out_shape, grid and block functions are called once for each such call,
        as jax.jit traces once per shape."""
        if key is _NO_KEY:
            key = _call_key(args, kwargs)
        plan = self._plans.get(key) if key is not None else None
        if plan is None:
            call = self._prepare(args, kwargs)
            if key is not None and not self._const_from_an_array(args, kwargs, call):
                if len(self._plans) >= _PLANS_KEPT:
                    self._plans.clear()
                call.plan = self._plans[key] = _CallPlan(
                    call, self._argument_positions(args, kwargs, call))
            return call
        given = (*args, *kwargs.values())
        call = _Call(plan.kernel, [given[k] for k in plan.positions], plan.out_types, plan.grid,
                     plan.block, plan.many_outputs)
        call.respecialise, call.plan = plan.respecialise, plan
        return call

    def _const_from_an_array(self, args, kwargs, call: "_Call") -> bool:
        """Whether a Const parameter took its value from a (0-d) array: `_call_key` holds an
        array's shape and dtype, not its value, so such a call keys no plan."""
        given = dict(zip((p.name for p in self._inputs(len(call.out_types))), args))
        given.update(kwargs)
        return any(isinstance(p.type, ConstType) and _array_like(given.get(p.name))
                   for p in self.params)

    def _argument_positions(self, args, kwargs, call: "_Call") -> list[int]:
        """Where each of `call.inputs` is in (*args, *kwargs.values()), as `_bind` binds them."""
        names = [p.name for p in self._inputs(len(call.out_types))]
        position = dict(zip(names, range(len(args))))
        position.update((name, len(args) + k) for k, name in enumerate(kwargs))
        types = {p.name: p.type for p in self.params}
        return [position[name] for name in names
                if name in position and not isinstance(types[name], ConstType)]

    def _prepare(self, args, kwargs, shapes_only: bool = False) -> "_Call":
        """The checked call; `shapes_only`: array arguments may be `jax.ShapeDtypeStruct`s (for
        `ptx` and `transpile`, which run nothing)."""
        self._refuse_containers(args, kwargs)
        out_types, many = self._computed_out_types(args, kwargs)
        bound, consts = self._bind(args, kwargs, len(out_types))
        self._check_arrays(bound, shapes_only)
        self._check_outputs(out_types)
        name = self.__name__
        grid = _dim3(self._computed("grid", self.grid, args, kwargs), "grid", name, least=0)
        block = _dim3(self._computed("block", self.block, args, kwargs), "block", name)
        self._check_launch_bounds(block)
        by_ref = frozenset(name for name, value in bound if _is_jax_array_scalar(value))
        layout = {"aliased": self._aliased_inputs(bound), "whole_warps": math.prod(block) % 32 == 0,
                  "narrow_refs": self._narrow_refs(by_ref),
                  "large_arrays": self._large_arrays(bound, out_types)}
        kernel = self._specialise(consts, by_ref, **layout)
        call = _Call(kernel, [value for _, value in bound], out_types, grid, block, many)
        call.respecialise = functools.partial(self._specialise, consts, by_ref, **layout)
        return call

    def _check_launch_bounds(self, block: tuple) -> None:
        bounds = self.register_bounds[1]
        if bounds and math.prod(block) > bounds[0]:
            raise ValueError(f"{self.__name__}: a block of {math.prod(block)} threads {block} is "
                             f"more than launch_bounds allows ({bounds[0]})")

    def _computed_out_types(self, args, kwargs) -> tuple[list, bool]:
        spec = self._computed("out_shape", self.out_shape, args, kwargs)
        try:
            out_types, many = _out_types(spec, self.__name__, callable(self.out_shape))
        except TypeError as err:    # what its function returned may come of a refused argument
            if callable(self.out_shape):
                self._raise_argument_error(self.out_shape, args, kwargs, err)
            raise
        n_arrays = sum(isinstance(p.type, ArrayType) for p in self.params)
        if len(out_types) > n_arrays and callable(self.out_shape):
            # more outputs than array parameters: its function returned a refused argument
            # (`lambda x: x` given a list of NumPy scalars), whose error comes first
            self._raise_argument_error(self.out_shape, args, kwargs, None)
        return out_types, many

    def _refuse_containers(self, args, kwargs) -> None:
        """A tuple, list or dict given for a parameter (which takes an array or a number, never
        a pytree): its own error, before out_shape's function reads it as several outputs."""
        if not any(isinstance(v, (tuple, list, dict)) for v in (*args, *kwargs.values())):
            return
        n_outputs = (self._output_count_like(self.out_shape) if callable(self.out_shape)
                     else self._declared_output_count() or 1)
        values, error = self._matching(args, kwargs, n_outputs)
        if error is not None:
            return      # (the call's own error comes later)
        for p in self._inputs(n_outputs):
            value = values.get(p.name)
            if isinstance(value, (tuple, list, dict)) and not isinstance(p.type, ConstType):
                if isinstance(p.type, ArrayType):
                    raise self._not_an_array(p.name, value)
                self._check_scalar(p.name, p.type, value)

    def _computed(self, what: str, spec, args, kwargs):
        """out_shape, grid or block for this call: the value, or what its function returns."""
        _required(spec, what, self.__name__)
        if not callable(spec):
            return spec
        given = self._with_const_defaults(spec, args, kwargs)
        try:
            return spec(*args, **given)
        except Exception as err:    # raised in the user's function: keep its frames below
            failed = err
        # a function that leaves out Const parameters takes the inputs it names, by name
        by_name = None if _accepts(spec, args, given) else self._by_name(spec, args, kwargs)
        if by_name is not None:
            try:
                return spec(**by_name)
            except Exception as err:
                failed = err
        if what == "out_shape":
            self._raise_argument_error(spec, args, kwargs, failed)
        raise TypeError(f"{self.__name__}: {what} could not be computed for this call: "
                        f"{type(failed).__name__}: {failed}") from failed

    def _raise_argument_error(self, out_shape, args, kwargs, err: Exception) -> None:
        """The kernel's own error when out_shape's function failed on arguments that fit no
        number of outputs, that it could not take (its signature mirrors the kernel's inputs), or
        that the kernel refuses (not an array, a wrong dtype or rank, a bad scalar)."""
        n_arrays = sum(isinstance(p.type, ArrayType) for p in self.params)
        fits_none = all(self._matching(args, kwargs, n)[1] for n in range(1, n_arrays + 1))
        if not n_arrays:
            return
        self._raise_if_out_shape_leaves_out_inputs(out_shape, args, kwargs, n_arrays)
        n_outputs = self._output_count_like(out_shape)
        values, error = self._matching(args, kwargs, n_outputs)
        if fits_none or (isinstance(err, TypeError) and not _accepts(out_shape, args, kwargs)):
            if error is not None:
                raise error from None
        if error is None:
            given = [(p.name, values[p.name]) for p in self._inputs(n_outputs)
                     if p.name in values and not isinstance(p.type, ConstType)]
            try:
                self._check_arrays(given, shapes_only=True)
            except (TypeError, ValueError) as refused:
                raise refused from None

    def _raise_if_out_shape_leaves_out_inputs(self, fn, args, kwargs, n_arrays: int) -> None:
        """out_shape's function, whose parameters are some of the kernel's inputs, in order, with
        others left out (often its `Const`s: `lambda x: x`), cannot take a call that binds as the
        kernel's inputs: say so, rather than read its arity as the number of outputs."""
        given = len(args) + len(kwargs)
        n_outputs = len(self.params) - given
        if _accepts(fn, args, kwargs) or not 1 <= n_outputs <= n_arrays:
            return
        if self._matching(args, kwargs, n_outputs)[1] is not None:
            return
        try:
            takes = list(inspect.signature(fn).parameters)
        except (TypeError, ValueError):
            return
        inputs = self._inputs(n_outputs)
        if not _is_subsequence(takes, [p.name for p in inputs]):
            return      # (named as some of the inputs: else the call may be wrong)
        if any(takes == [p.name for p in self._inputs(m)] for m in self._output_counts_like(fn)):
            return      # named as the inputs of its arity's reading: the call passes too many
        consts_left_out = any(isinstance(p.type, ConstType) and p.name not in takes for p in inputs)
        takes, inputs = ", ".join(takes), ", ".join(p.name for p in inputs)
        raise TypeError(f"{self.__name__}: out_shape's function takes ({takes}) but the call passes "
                        f"{given} inputs ({inputs}); give it one parameter per input"
                        f"{', Const parameters included' if consts_left_out else ''}: "
                        f"lambda {inputs}: ...") from None

    def _output_count_like(self, fn) -> int:
        """The number of outputs that leaves the kernel as many inputs as `fn` has parameters;
        1 when none does."""
        return next(iter(self._output_counts_like(fn)), 1)

    def _with_const_defaults(self, fn, args, kwargs) -> dict:
        """`kwargs` and, for a Const parameter the call leaves to its default, that default,
        where `fn` (out_shape's, grid's or block's function) names the parameter without a
        default of its own and the call's positions do not reach it (`lambda x, K: x`)."""
        defaults = self._const_defaults
        if not defaults:
            return kwargs
        params = _parameters(fn)
        if params is None:
            return kwargs
        names = list(params)
        extra = {name: value for name, value in defaults.items()
                 if name in params and name not in kwargs and names.index(name) >= len(args)
                 and params[name].default is inspect.Parameter.empty}
        return {**kwargs, **extra} if extra else kwargs

    def _by_name(self, fn, args, kwargs) -> dict | None:
        """The call's inputs that `fn` names, by name, where its parameters are the kernel's
        inputs but for Const parameters it leaves out (as Triton's grid functions leave out
        `meta`: `lambda x: x` for `k(x, out, K=4)` called `k(x, 3)`); else None."""
        try:
            params = inspect.signature(fn).parameters
        except (TypeError, ValueError):
            return None
        if any(p.kind not in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) for p in params.values()):
            return None
        names = list(params)
        n_outputs = self._outputs_after_named(names)
        if n_outputs is None:
            return None
        values, error = self._matching(args, kwargs, n_outputs)
        inputs = self._inputs(n_outputs)
        if error is not None or any(p.name not in names and not isinstance(p.type, ConstType)
                                    for p in inputs):
            return None
        chosen = {name: values[name] for name in names if name in values}
        for name in names:
            if name not in chosen and params[name].default is inspect.Parameter.empty:
                if name not in self._const_defaults:
                    return None
                chosen[name] = self._const_defaults[name]
        return chosen

    @functools.cached_property
    def _const_defaults(self) -> dict:
        """{name: default} of the Const parameters that have one."""
        return {name: p.default for name, p in inspect.signature(self.fn).parameters.items()
                if p.default is not inspect.Parameter.empty}

    def _output_counts_like(self, fn) -> list[int]:
        """The numbers of outputs that leave the kernel as many inputs as `fn` has parameters
        (none when it takes `*args` or `**kwargs`); where `fn`'s parameters are named as the
        kernel's, the array parameters after the last one it names (`lambda x: x` for
        `k(x, out, K=4)`: one, `out`, though it leaves out K)."""
        try:
            params = inspect.signature(fn).parameters
        except (TypeError, ValueError):
            return []
        kinds = [p.kind for p in params.values()]
        if inspect.Parameter.VAR_POSITIONAL in kinds or inspect.Parameter.VAR_KEYWORD in kinds:
            return []
        after_named = self._outputs_after_named(list(params))
        if after_named is not None:
            return [after_named]
        count = len(kinds)
        n_arrays = sum(isinstance(p.type, ArrayType) for p in self.params)
        return [n for n in range(1, n_arrays + 1) if len(self.params) - n == count]

    def _outputs_after_named(self, names: list) -> int | None:
        """How many array parameters follow the last one of `names`, when `names` are all the
        kernel's parameters and name an array; else None."""
        if not names or not set(names) <= {p.name for p in self.params}:
            return None
        arrays = [p.name for p in self.params if isinstance(p.type, ArrayType)]
        named = [k for k, name in enumerate(arrays) if name in names]
        if not named or named[-1] == len(arrays) - 1:
            return None
        return len(arrays) - 1 - named[-1]

    def _large_arrays(self, bound, out_types) -> tuple:
        """The array parameters given 2**31 elements or more (each extent is below 2**31, their
        product need not be): the kernel computes their element offsets in 64 bits."""
        arrays = [p.name for p in self.params if isinstance(p.type, ArrayType)]
        shapes = [(name, getattr(value, "shape", ())) for name, value in bound]
        shapes += zip(arrays[len(arrays) - len(out_types):], (t.shape for t in out_types))
        return tuple(sorted(name for name, shape in shapes
                            if len(shape) > 1 and math.prod(int(n) for n in shape) >= 1 << 31))

    def _narrow_refs(self, by_ref: frozenset) -> tuple:
        """The by-reference scalars of a 64-bit type while JAX holds those in 32 bits
        (jax_enable_x64 off): the kernel takes the 32-bit value and widens it."""
        if not by_ref:
            return ()
        from ptxpy.runtime.launch import held_in_32_bits

        return tuple(sorted(p.name for p in self.params
                            if p.name in by_ref and held_in_32_bits(p.type.numpy)))

    def _aliased_inputs(self, bound) -> tuple:
        """The names of the array arguments that `input_output_aliases` makes share an output's
        memory (a key that is not an array argument's index is reported by the launch checks)."""
        names = [name for name, _ in bound]
        return tuple(sorted(names[i] for i in self.input_output_aliases
                            if isinstance(i, int) and 0 <= i < len(names)))

    def _specialise(self, consts: dict, by_ref: frozenset, batched: tuple = (),
                    aliased: tuple = (), whole_warps: bool | None = None,
                    narrow_refs: tuple = (), large_arrays: tuple = ()) -> CompiledKernel:
        """The kernel for these Const values and by-reference scalars; `batched` names the
        arrays of a batched specialisation (vmap as grid axis z: ptxpy.runtime.batching),
        `aliased` the array arguments that share memory with an output; `whole_warps`: whether the
        launch's block is a multiple of 32 threads (None: not known); `narrow_refs` the by-reference 64-bit
        scalars JAX holds in 32 bits; `large_arrays` the arrays of 2**31 elements or more."""
        arch = self.arch or _gpu_arch() or driver.DEFAULT_ARCH
        consts_text = repr(tuple(sorted(consts.items())))   # as values, -0.0 == 0.0
        key = (consts_text, by_ref, arch, aliased, whole_warps, narrow_refs, large_arrays,
               tuple(batched))
        if key not in self._compiled:
            options = driver.Options(arch, self.fast_math, self.debug, tuple(batched), aliased,
                                     whole_warps, narrow_refs, large_arrays, *self.register_bounds,
                                     cluster=self.cluster)
            disk_key = self._cache_key(consts=consts_text, by_ref=sorted(by_ref), **options.as_dict())
            self._compiled[key] = cache.get_or_make_object(
                "kernel", disk_key, lambda: self._compile(consts, by_ref, options))
        return self._compiled[key]

    def _compile(self, consts: dict, by_ref: frozenset, options: driver.Options) -> CompiledKernel:
        try:
            stages = driver.compile_kernel(self.program, self.__name__, consts, by_ref, options)
            driver.warn_located(stages.warnings)   # (a kernel from the disk cache warns no more)
            return stages.kernel
        except CompileError as err:
            raise _shown(err) from None

    def _bind(self, args, kwargs, n_outputs: int):
        """Match call arguments to the non-output parameters: [(name, value)] and Const values."""
        values, error = self._matching(args, kwargs, n_outputs)
        if error is not None:
            raise error
        bound, consts = [], {}
        for p in self._inputs(n_outputs):
            if p.name not in values:
                continue    # a Const with a default
            if isinstance(p.type, ConstType):
                consts[p.name] = _const_value(values[p.name], p, self.__name__)
            else:
                bound.append((p.name, values[p.name]))
        return bound, consts

    def _inputs(self, n_outputs: int) -> list:
        """The parameters a call passes when the kernel has `n_outputs` outputs."""
        params = self.params
        array_positions = [k for k, p in enumerate(params) if isinstance(p.type, ArrayType)]
        if n_outputs > len(array_positions):
            raise TypeError(f"{self.__name__}: out_shape has {n_outputs} entries but the kernel has "
                            f"only {len(array_positions)} array parameters")
        outputs = set(array_positions[len(array_positions) - n_outputs:])
        return [p for k, p in enumerate(params) if k not in outputs]

    def _matching(self, args, kwargs, n_outputs: int) -> tuple[dict, TypeError | None]:
        """{name: value} of the arguments as Python binds a call, and the TypeError Python would
        raise for them (None when they bind)."""
        inputs = self._inputs(n_outputs)
        names = [p.name for p in inputs]
        values = dict(zip(names, args))
        errors = [self._count_error(inputs, n_outputs, len(args))] if len(args) > len(inputs) else []
        for name, value in kwargs.items():
            if name not in names:
                errors.append(TypeError(f"{self.__name__}() got an unexpected keyword argument '{name}'"))
            elif name in values:
                errors.append(TypeError(f"{self.__name__}() got multiple values for argument '{name}'"))
            values[name] = value
        errors += [TypeError(f"{self.__name__}() missing argument '{name}'") for name in names
                   if name not in values and name not in self._defaults]
        return values, (errors[0] if errors else None)

    def _count_error(self, inputs: list, n_outputs: int, given: int) -> TypeError:
        optional = sum(p.name in self._defaults for p in inputs)
        least = len(inputs) - optional
        count = f"from {least} to {len(inputs)}" if optional else str(len(inputs))
        outputs = ", ".join(p.name for p in self.params if p not in inputs)
        return TypeError(f"{self.__name__}() takes {count} argument{'s' * (len(inputs) != 1)} "
                         f"({', '.join(p.name for p in inputs)}) but {given} were given; "
                         f"{outputs} {'is the output' if n_outputs == 1 else 'are the outputs'}, "
                         "which the call returns")

    @functools.cached_property
    def _defaults(self) -> frozenset:
        """The parameters with a default value (only Const parameters may have one)."""
        return frozenset(name for name, p in inspect.signature(self.fn).parameters.items()
                         if p.default is not inspect.Parameter.empty)

    def _check_arrays(self, bound, shapes_only: bool = False) -> None:
        """Every argument fits its parameter; `shapes_only`: a jax.ShapeDtypeStruct stands for
        an array."""
        types = {p.name: p.type for p in self.params}
        for name, value in bound:
            expected = types[name]
            if not isinstance(expected, ArrayType):
                self._check_scalar(name, expected, value)
                continue
            shape, dtype = getattr(value, "shape", None), getattr(value, "dtype", None)
            if shape is None or dtype is None:
                raise self._not_an_array(name, value)
            if not shapes_only and _is_shape_struct(value):
                raise TypeError(f"{self.__name__}: argument '{name}' must be an array, got "
                                f"ShapeDtypeStruct (for shapes, {self.__name__}.transpile(...) "
                                "gives the PTX)")
            if _scalar_type_of(dtype) != expected.elem:
                raise TypeError(f"{self.__name__}: argument '{name}' must have dtype {expected.elem}, "
                                f"got {dtype}{_x64_hint(expected.elem, dtype)}")
            if not getattr(dtype, "isnative", True):
                raise TypeError(f"{self.__name__}: argument '{name}' has dtype '{dtype.str}', in "
                                "big-endian byte order, which JAX does not take: convert it with "
                                "x.astype(x.dtype.newbyteorder('='))")
            if len(shape) != expected.rank:
                raise ValueError(f"{self.__name__}: argument '{name}' must have rank {expected.rank}, got shape {tuple(shape)}")
            self._check_extents(f"argument '{name}'", shape)

    def _check_outputs(self, out_types) -> None:
        outputs = [p.name for p in self.params if isinstance(p.type, ArrayType)][-len(out_types):]
        for name, out in zip(outputs, out_types):
            if any(int(n) < 0 for n in out.shape):
                raise ValueError(f"{self.__name__}: output '{name}' has shape {tuple(out.shape)}; "
                                 "an extent cannot be negative")
            self._check_extents(f"output '{name}'", out.shape)

    def _not_an_array(self, name: str, value) -> TypeError:
        return TypeError(f"{self.__name__}: argument '{name}' must be an array, got {type(value).__name__}")

    def _check_scalar(self, name: str, expected, value) -> None:
        """A scalar parameter takes a real number: Python's, NumPy's, or a 0-d array."""
        from ptxpy.runtime.launch import is_real_dtype

        if isinstance(value, (bool, int, float)):
            return
        shape, dtype = getattr(value, "shape", None), getattr(value, "dtype", None)
        if shape is not None and tuple(shape) != ():
            got = f"an array of shape {tuple(shape)}"
        elif dtype is not None and is_real_dtype(dtype):
            return
        else:
            got = f"{value!r:.40} ({type(value).__name__})" if dtype is None else f"a {dtype} value"
        raise TypeError(f"{self.__name__}: argument '{name}' is a scalar ({expected}), got {got}")

    def _check_extents(self, what: str, shape) -> None:
        """Kernels see each extent as an i32 (`a.shape[k]`, SPEC 2.1): larger ones would wrap."""
        for extent in shape:
            if int(extent) >= 1 << 31:
                raise ValueError(f"{self.__name__}: {what} has shape {tuple(shape)}; each extent must "
                                 f"be below 2**31, as kernels read it as an i32")


def _shown(err: CompileError) -> CompileError:
    """`err` as the user sees it: its message locates the error in their source, and the
    compiler's own frames would only hide it (PTXPY_TRACEBACK=1 keeps them)."""
    return err if os.environ.get("PTXPY_TRACEBACK") else err.with_traceback(None)


class Param(NamedTuple):
    """One parameter of a kernel's signature, as `Kernel` binds call arguments to it."""
    name: str
    type: object    # Scalar | ArrayType | ConstType


#: the background loads started in this process ('compiler', 'runtime', 'executables')
_preloads: dict[str, threading.Thread] = {}
#: kernels decorated, not in the disk cache, whose files the compiler's preload has yet to read
_unread: list = []
#: kernels decorated, in the disk cache, whose kept executables the preload has yet to load
_warm: list = []
_preload_lock = threading.Lock()


def _preload(part: str, kernel: "Kernel | None" = None) -> None:
    """Starts loading the compiler or the runtime on a background thread, so that the first
    call, usually made after JAX has set up its GPU, does not wait for it.

    - The compiler (libcst above all, about 0.1 s) when a kernel not yet in the disk cache is
      decorated: a small kernel is compiled, which imports every module a compile needs (only
      the imports where a call has begun compiling by then: the warm-up would take the GIL from
      it), then the kernel's file is parsed (`Kernel.program`), as its first call would (where the
      decoration has read the file's text: with the disk cache on). A warm start loads kernels
      from the disk cache and never needs the compiler. A kernel decorated while the thread
      runs is read by it; one decorated later starts another. Where Python cannot parse on two
      threads at once (`pyast.THREAD_SAFE`: 3.11 before 3.11.8, 3.12 before 3.12.2), the thread
      only imports the compiler's modules, once a process, and parses nothing: a parse of the
      user's program on the main thread, such as pytest's of its test files, could fail.
    - The runtime (ptxpy.runtime.launch and cuda-python's driver bindings, about 35 ms, and the
      C FFI handler) when a kernel that may run on a GPU is decorated on a machine with an NVIDIA
      driver (`_import_runtime`), once a process.
    - The executables that an earlier process kept for the calls of a kernel found in the disk
      cache (`_load_executables`), on the same machines, once the program has set up JAX's GPU.

    `PTXPY_PRELOAD=0` turns them all off."""
    if os.environ.get("PTXPY_PRELOAD", "1").strip().lower() in _OFF:
        return
    queue = {"compiler": _unread if pyast.THREAD_SAFE else None, "executables": _warm}.get(part)
    with _preload_lock:
        if kernel is not None and queue is not None:
            queue.append(kernel)
        running = _preloads.get(part)
        if running is not None and (queue is None or running.is_alive()):
            return
        load = {"compiler": _load_compiler, "runtime": _import_runtime,
                "executables": _load_executables}[part]
        _preloads[part] = threading.Thread(target=load, name=f"ptxpy-preload-{part}", daemon=True)
        _preloads[part].start()


def _preloading(part: str) -> bool:
    """Whether the background load of `part` is still running."""
    thread = _preloads.get(part)
    return thread is not None and thread.is_alive()


_warmed_up = False     # the warm-up compile is done once a process, by the first preload
_calls_compiling = False   # whether a call (not the preload) has needed the compiler yet
_WARM_UP_SOURCE = """
import ptxpy
from ptxpy import Array, f32, i32

@ptxpy.jit
def warm_up(x: Array[f32], n: i32, out: Array[f32]):
    i = ptxpy.global_id(0)
    total = 0.0
    for k in range(n):
        total += x[(i + k) % n]
    if i < n:
        out[i] = total
"""


def _load_compiler() -> None:
    global _warmed_up
    if not pyast.THREAD_SAFE:
        try:
            driver.import_stages()
        except Exception:   # as below: fails again, with its error, where it is used
            pass
        return
    if not _warmed_up:
        _warmed_up = True
        try:
            driver.import_stages()
            # a call that compiles has begun (it waited for these imports): a warm-up compile
            # now would only take the GIL from it
            if not _calls_compiling:
                driver.transpile(_WARM_UP_SOURCE, "<ptxpy preload>")
        except Exception:   # whatever fails here fails again, with its error, where it is used
            pass
    while True:
        with _preload_lock:
            if not _unread:
                return
            kernel = _unread.pop(0)
        if kernel._source is None:
            continue    # read at decoration only with the disk cache on; a cell's context lines
            # (ptxpy/cells.py) are read from the main thread, never while its cell still runs
        try:
            kernel.program    # parses the file (driver.parse keeps it); the disk cache is left
            # alone, so that a kernel never called is not taken for one compiled before
        except Exception:   # as above: the call reports it
            pass


def _import_runtime() -> None:
    """Imports the runtime and builds or loads the C FFI handler (runtime/native.py: a C compile
    of about 0.1 s on a cold disk cache), where an NVIDIA driver is installed, and fingerprints
    the runtime's sources (the kept executables' key). CUDA itself is not initialised here: a
    program may still fork before it uses the GPU."""
    if not _gpu_driver_present():
        return
    try:
        from ptxpy.runtime import cache, launch, native  # noqa: F401

        native.library()
        cache.runtime_fingerprint()
    except Exception:   # as above: a broken install fails again where the runtime is used
        pass


_GPU_WAIT_S = 60.0     # how long the executables' preload waits for the program to set up JAX


def _load_executables() -> None:
    """Loads the executables kept for the calls of the kernels in `_warm` (runtime/
    executables.py, `prefetch`) once the program has set up JAX's backends: it never sets them
    up itself (the program may still choose platforms or memory settings), so it looks at what
    JAX has set up every few milliseconds, for up to `_GPU_WAIT_S`."""
    if not _gpu_driver_present():
        return
    try:
        from ptxpy.runtime import executables
    except Exception:   # as above
        return
    deadline = time.monotonic() + _GPU_WAIT_S
    while not executables.started_backends():
        if time.monotonic() > deadline:
            return
        time.sleep(0.005)
    if not any(b.platform in ("cuda", "gpu") for b in executables.started_backends().values()):
        return
    try:
        from ptxpy.runtime import ffi

        ffi.register_target()    # as the call would: XLA finds the FFI handler as it loads
    except Exception:   # as above
        return
    while True:
        with _preload_lock:
            if not _warm:
                return
            kernel = _warm.pop(0)
        owner = kernel._owner()
        try:
            if owner is not None:
                executables.prefetch(owner)
        except Exception:   # the call loads it itself, or compiles it
            pass


def _gpu_driver_present() -> bool:
    """Whether this machine has NVIDIA's kernel driver loaded (Linux), without touching CUDA."""
    return os.path.exists("/proc/driver/nvidia/version") or os.path.exists("/dev/nvidiactl")


class _Call:
    def __init__(self, kernel, inputs, out_types, grid, block, many_outputs):
        self.kernel, self.inputs, self.out_types = kernel, inputs, out_types
        self.grid, self.block, self.many_outputs = grid, block, many_outputs
        self.respecialise = None    # batched -> CompiledKernel (see Kernel._specialise)
        self.plan = None            # the _CallPlan it was made from or made


class _CallPlan:
    """What a checked call gives every call with the same `_call_key`: all of `_Call` but its
    inputs, and where those are among the arguments; once a GPU launch of it has been checked,
    the runtime's `PreparedCall`, which every later call runs directly (`launched`: the same
    key fixes everything `launch` checks, but the arrays' contents)."""

    def __init__(self, call: _Call, positions: list[int]):
        self.kernel, self.out_types, self.grid, self.block = (call.kernel, call.out_types,
                                                              call.grid, call.block)
        self.many_outputs, self.respecialise, self.positions = (call.many_outputs,
                                                                call.respecialise, positions)
        self.launched = None
        self.run = self.operands = None   # `launched`'s jitted FFI call, the arguments it takes

    def note_launched(self, launched) -> None:
        self.launched = launched
        self.operands = [self.positions[k] for k in launched.buffer_positions]
        self.run = launched.runner()


_PLANS_KEPT = 256    # call plans a kernel keeps (then it starts again)


def _call_key(args, kwargs) -> tuple | None:
    """What `Kernel._prepare` reads of a call's arguments: each one's type, and an array's
    shape, dtype and weak type or a scalar's value; the keywords' names; JAX's 64-bit mode.
    None when an argument is anything else (a traced value, an object): it is prepared anew."""
    parts = []
    for value in (*args, *kwargs.values()) if kwargs else args:
        kind = type(value)
        if kind is _concrete_array_type:    # the common case, inline
            parts.append((kind, value.shape, value.dtype, value.weak_type))
            continue
        part = _argument_key(value)
        if part is None:
            return None
        parts.append(part)
    return tuple(parts), tuple(kwargs), _x64()


def _argument_key(value) -> tuple | None:
    kind = type(value)
    if kind is _concrete_array_type:    # a JAX array with a value: the common case, first
        return kind, value.shape, value.dtype, value.weak_type
    if kind is bool or kind is int:
        return kind, value
    if kind is float:
        return kind, repr(value)     # -0.0 == 0.0, and nan != nan, as numbers
    shape, dtype = getattr(value, "shape", None), getattr(value, "dtype", None)
    if shape is None or dtype is None or _is_tracer(value):
        return None
    import numpy    # (loaded: the value has a dtype)

    part = ((kind, dtype, value.tobytes()) if isinstance(value, numpy.generic)
            else (kind, tuple(shape), dtype, getattr(value, "weak_type", False)))
    try:
        hash(part)
    except TypeError:    # an unhashable dtype, shape or value: no key
        return None
    _note_concrete_array_type(kind)
    return part


_concrete_array_type = None   # JAX's array class (`_argument_key` keys its values without checks)


def _note_concrete_array_type(kind: type) -> None:
    """Remembers `kind` if it is JAX's concrete array class, whose shape is a tuple, dtype a
    NumPy dtype and weak_type a bool: those need no checks in `_argument_key`."""
    global _concrete_array_type
    if _concrete_array_type is None and kind.__name__ == "ArrayImpl":
        try:
            from jax._src.array import ArrayImpl
        except ImportError:   # another JAX: every array takes the checked path
            return
        if kind is ArrayImpl:
            _concrete_array_type = kind


def _parameters(fn):
    """`fn`'s parameters (inspect's mapping), read once per function; None where they cannot
    be read."""
    try:
        return _hashable_parameters(fn)
    except TypeError:       # an unhashable callable object
        return _read_parameters(fn)


def _read_parameters(fn):
    try:
        return inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return None


_hashable_parameters = functools.lru_cache(maxsize=256)(_read_parameters)


def _x64_hint(expected, got) -> str:
    """Why a 64-bit parameter got its 32-bit kind: JAX's 64-bit mode is off (under jax.jit,
    JAX has made the caller's float64 array float32 before the kernel sees it)."""
    if expected.bits != 64 or getattr(got, "itemsize", 0) != 4 or _x64():
        return ""
    kind = {"f": "float", "i": "int", "u": "uint"}.get(getattr(got, "kind", ""))
    if kind is None or str(expected) != f"{kind[0]}64":
        return ""
    return (f" (if it was {kind}64: JAX's 64-bit mode is off, and JAX holds {kind}64 values as "
            f"{got}; jax.config.update('jax_enable_x64', True) turns it on)")


def _x64() -> bool:
    if _jax_config is None:
        _note_jax_config()
    return _jax_config.jax_enable_x64


_jax_config = None     # jax.config, once imported (read at every call)


def _note_jax_config() -> None:
    global _jax_config
    import jax

    _jax_config = jax.config


_OFF = ("", "0", "false", "no", "off")     # environment values that turn a setting off


def _interpret_forced() -> bool:
    """PTXPY_INTERPRET=1: every kernel runs in the simulator. Read at every call (tests and
    notebooks set it between calls), from os.environ's own table where it has one: `get` goes
    through Mapping's and encodes the name each time (`_interpreting` took 1.5 us a call on the
    H100's host, session 54)."""
    value = _environ_table.get(_INTERPRET_KEY) if _environ_table is not None \
        else os.environ.get("PTXPY_INTERPRET")
    if not value:
        return False
    if isinstance(value, bytes):
        value = os.fsdecode(value)
    return value.strip().lower() not in _OFF


# os.environ's table of encoded names and values (CPython on POSIX), which `os.environ[...] =`
# and `del` keep current; None where its layout is not that one
_environ_table = getattr(os.environ, "_data", None)
_INTERPRET_KEY = b"PTXPY_INTERPRET"
if not isinstance(_environ_table, dict) or any(not isinstance(k, bytes) for k in _environ_table):
    _environ_table = None


def _check_arch(arch, kernel: str) -> None:
    if arch is None:    # the GPU's, or the default
        return
    if not isinstance(arch, str):
        raise TypeError(f"@ptxpy.jit of {kernel}: arch must be a str such as 'sm_90', not "
                        f"{type(arch).__name__}")
    if arch not in driver.SUPPORTED_ARCHS:
        raise ValueError(f"@ptxpy.jit of {kernel}: unsupported arch {arch!r} (supported: "
                         f"{', '.join(driver.SUPPORTED_ARCHS)})")


def _check_flag(kernel: str, option: str, value, allowed: str) -> None:
    if not isinstance(value, bool):     # a string such as "no" would read as True
        raise TypeError(f"@ptxpy.jit of {kernel}: {option} must be {allowed}, got {value!r:.40} "
                        f"({type(value).__name__})")


def _aliases(value, kernel: str) -> dict[int, int]:
    """input_output_aliases as {input index: output index}; whether the indices fit the call
    is checked at the call."""
    if value is None:
        return {}
    pairs = list(value.items()) if isinstance(value, Mapping) else []
    indices = [(_index(i), _index(o)) for i, o in pairs]
    if not isinstance(value, Mapping) or any(None in pair for pair in indices):
        raise TypeError(f"@ptxpy.jit of {kernel}: input_output_aliases must be a dict "
                        f"{{input index: output index}} of ints, got {value!r:.60} "
                        f"({type(value).__name__})")
    return dict(indices)


def _is_subsequence(names: list, of: list) -> bool:
    """`names` is `of` with some entries left out, in the same order."""
    rest = iter(of)
    return len(names) < len(of) and all(name in rest for name in names)


def _accepts(fn, args, kwargs) -> bool:
    """Whether `fn`'s signature takes these arguments (True when it cannot be read)."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return True
    try:
        signature.bind(*args, **kwargs)
    except TypeError:
        return False
    return True


def _required(spec, what: str, kernel: str):
    if spec is None:
        raise TypeError(f"{kernel}: @ptxpy.jit needs {what}= to run or specialise a kernel: "
                        f"@ptxpy.jit({what}=...)")
    return spec


def _out_types(spec, kernel: str, computed: bool) -> tuple[list, bool]:
    """([jax.ShapeDtypeStruct], whether the call returns a tuple) of an out_shape value
    (`computed`: the value its function returned)."""
    import jax

    many = isinstance(spec, (list, tuple))
    entries = list(spec) if many else [spec]
    if not entries:
        raise TypeError(f"{kernel}: out_shape has no entries; a kernel returns at least one output")
    for k, entry in enumerate(entries):
        if not _array_like(entry):
            got = f"{spec!r:.60} ({type(spec).__name__})"
            if many:
                got += f", whose entry {k} is {entry!r:.40} ({type(entry).__name__})"
            raise TypeError(f"{kernel}: out_shape must be a jax.ShapeDtypeStruct, an array, a list "
                            "of them, or a function returning one of these; "
                            f"{'its function returned' if computed else 'got'} {got}")
    for k, entry in enumerate(entries):
        if any(_index(n) is None for n in entry.shape):
            traced = any(_is_tracer(n) for n in entry.shape)
            raise TypeError(
                f"{kernel}: out_shape must give each output a shape of ints; "
                f"{'its function returned' if computed else 'got'} "
                f"{'output ' + str(k) + ' ' if many else ''}the shape {tuple(entry.shape)!r:.80}"
                + ("; under jax.jit a traced value cannot size an output: make the size a Const "
                   "parameter, or a static argument of jax.jit" if traced else ""))
    return [jax.ShapeDtypeStruct(tuple(e.shape), e.dtype) for e in entries], many


def _dim3(value, what: str, kernel: str, least: int = 1) -> tuple:
    """(x, y, z) from an int or a tuple of 1 to 3 ints, each at least `least` (a grid may have
    no blocks: the call then launches nothing)."""
    kind = "positive" if least == 1 else "non-negative"
    dims = [_index(d) for d in (value if isinstance(value, (tuple, list)) else (value,))]
    wrong = f"{kernel}: {what} must be a {kind} int or a tuple of 1 to 3 {kind} ints, got {value!r}"
    if any(_is_tracer(d) for d in (value if isinstance(value, (tuple, list)) else (value,))):
        wrong += ("; under jax.jit a traced value cannot size the launch: make it a Const "
                  "parameter, or a static argument of jax.jit (static_argnames)")
    if not 1 <= len(dims) <= 3 or None in dims:
        raise TypeError(wrong)
    if not all(d >= least for d in dims):
        raise ValueError(wrong)
    return tuple(dims) + (1,) * (3 - len(dims))


def _index(value) -> int | None:
    """An int, NumPy integer or concrete 0-d integer array (`ptxpy.cdiv(jnp.int32(10), 3)`) as
    an int; None for anything else (a bool, a float, a traced value)."""
    if isinstance(value, bool) or getattr(getattr(value, "dtype", None), "kind", None) == "b":
        return None
    try:
        return operator.index(value)
    except Exception:   # TypeError, or JAX's error for a traced value
        return None


def _const_value(value, param, kernel: str):
    """A Const argument as its Python value: a number of the parameter's kind (as the CLI's
    -D takes it), or a concrete 0-d array holding one."""
    if hasattr(value, "shape"):
        if tuple(value.shape) != ():
            raise TypeError(f"{kernel}: Const parameter '{param.name}' needs a Python value")
        try:
            value = value.item()
        except Exception:       # a traced value has no item
            raise TypeError(f"{kernel}: Const parameter '{param.name}' needs a compile-time "
                            f"value, got {type(value).__name__}") from None
    converted = param.type.value_of(value)
    if converted is None:
        raise TypeError(f"{kernel}: Const parameter '{param.name}' is {param.type} but was "
                        f"given {value!r}")
    return converted


def _scalar_type_of(dtype):
    """ptxpy's type for a NumPy dtype, None for one it has none for (complex, strings ...)."""
    try:
        return from_numpy(dtype)
    except TypeError:
        return None


def _array_like(value) -> bool:
    return getattr(value, "shape", None) is not None and getattr(value, "dtype", None) is not None


def _is_shape_struct(value) -> bool:
    import jax

    return isinstance(value, jax.ShapeDtypeStruct)


def _is_jax_array_scalar(value) -> bool:
    try:
        import jax
    except ImportError:
        return False
    return isinstance(value, jax.Array) and value.ndim == 0


@functools.lru_cache(maxsize=None)
def _has_gpu() -> bool:
    try:
        import jax

        return bool(jax.devices("gpu"))
    except Exception:
        return False


@functools.lru_cache(maxsize=None)
def _gpu_arch() -> str | None:
    if not _has_gpu():
        return None
    import jax

    capability = getattr(jax.devices("gpu")[0], "compute_capability", None)
    if not capability:
        return None
    major, minor = str(capability).split(".")
    arch = f"sm_{major}{minor}"
    return arch if arch in driver.SUPPORTED_ARCHS else driver.DEFAULT_ARCH
