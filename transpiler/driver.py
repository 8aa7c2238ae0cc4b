"""The pipeline, stage by stage: parse -> type-check -> SSA -> passes -> PTX."""
from __future__ import annotations

import gc
import os
import threading
import warnings
from collections import OrderedDict
from dataclasses import dataclass, field, replace

from .abi import CompiledKernel
from .backend.target import sm_number as target_sm
from .errors import CompileError, CompileWarning, DeepRecursion, SourceWarning, source_lines

DEFAULT_ARCH = "sm_90"
SUPPORTED_ARCHS = ("sm_80", "sm_86", "sm_87", "sm_89", "sm_90", "sm_90a", "sm_100", "sm_120")


@dataclass(frozen=True)
class Options:
    arch: str = DEFAULT_ARCH
    fast_math: bool = False
    debug: bool = False
    #: batched specialisation (vmap as grid axis z, docs/jax.md): ((array param, div, mod), ...)
    batched: tuple = ()
    #: array parameters that share memory with an output (`input_output_aliases`): the kernel
    #: reads them through the coherent path, not the read-only one, as it writes that memory
    aliased: tuple = ()
    #: True: every launch of the kernel has blocks of a multiple of 32 threads (the decorator
    #: knows its block): warp reductions need no path for a warp with lanes missing, and
    #: shuffles and votes name all 32 lanes rather than those present. False: no launch has;
    #: warp reductions need only that path. None: not known (both paths, chosen at run time)
    whole_warps: bool | None = None
    #: by-reference 64-bit scalars that arrive in 32 bits (JAX without jax_enable_x64 holds
    #: i64, u64, f64 as i32, u32, f32): the kernel loads that and widens it
    narrow_refs: tuple = ()
    #: array parameters of rank 2 or more with 2**31 elements or more (each extent is below
    #: 2**31, their product need not be): their elements are found with 64-bit arithmetic
    large_arrays: tuple = ()
    #: registers per thread ptxas may use at most (PTX `.maxnreg`; CUDA's `-maxrregcount`)
    max_registers: int | None = None
    #: (threads per block at most[, blocks per SM at least]): PTX `.maxntid` and
    #: `.minnctapersm`, CUDA's `__launch_bounds__`
    launch_bounds: tuple = ()
    #: (x, y, z) blocks per thread-block cluster (PTX `.reqnctapercluster`, CUDA's
    #: `__cluster_dims__`; sm_90), or () for none
    cluster: tuple = ()

    def as_dict(self) -> dict:
        extra = {"batched": self.batched} if self.batched else {}
        if self.max_registers:
            extra["max_registers"] = self.max_registers
        if self.launch_bounds:
            extra["launch_bounds"] = self.launch_bounds
        if self.cluster:
            extra["cluster"] = self.cluster
        if self.narrow_refs:
            extra["narrow_refs"] = self.narrow_refs
        if self.large_arrays:
            extra["large_arrays"] = self.large_arrays
        if self.aliased:
            extra["aliased"] = self.aliased
        if self.whole_warps is not None:
            extra["whole_warps"] = self.whole_warps
        return {"arch": self.arch, "fast_math": self.fast_math, "debug": self.debug, **extra}


@dataclass
class Stages:
    """Every stage's product for one kernel specialisation (for `--emit` and tests)."""
    typed: object = None
    ssa: object = None
    kernel: CompiledKernel | None = None
    timings: dict = field(default_factory=dict)
    #: located CompileWarnings of the SSA build (a variable that may be read unassigned)
    warnings: list = field(default_factory=list)


class _GcPaused:
    """Python's cyclic garbage collector switched off for the `with` block (and back on after,
    exceptions included, if it was on). A compile allocates many objects and frees almost all
    of them by reference counting; with the collector on, the allocations would trigger
    collections, now and then a full one of the whole process. The cycles a compile leaves
    (IR blocks and instructions point at each other) are collected after it, at the next
    allocation, as before. Nested blocks do nothing more. Only the main thread switches the
    collector (it is the whole process's): a compile on another thread, such as the decorator's
    preload, must not switch it back on after the program has switched it off meanwhile."""

    __slots__ = ("was_enabled",)

    def __enter__(self):
        self.was_enabled = gc.isenabled() and threading.current_thread() is threading.main_thread()
        if self.was_enabled:
            gc.disable()
        return self

    def __exit__(self, *exc) -> None:
        if self.was_enabled:
            gc.enable()


def check_arch(arch: str, filename: str | None = None) -> str:
    """`arch`, if ptxpy supports it; else an error about the compile of `filename`."""
    if arch not in SUPPORTED_ARCHS:
        raise CompileError(f"unsupported target '{arch}' (choose from {', '.join(SUPPORTED_ARCHS)})",
                           None, filename)
    return arch


#: what `max_registers` and `launch_bounds` may be (ptxas adjusts or ignores values outside)
REGISTER_LIMITS, THREAD_LIMIT, BLOCKS_PER_SM_LIMIT = range(24, 256), 1024, 32


def register_bounds(max_registers=None, launch_bounds=None) -> tuple:
    """(max_registers or None, launch_bounds as a tuple of one or two ints, or ()), checked;
    `launch_bounds` may be an int (threads) or a tuple or list (threads, blocks per SM); NumPy
    integers count as ints, bools do not. A ValueError says what is wrong, for the caller to
    name the option's owner."""
    count = None if max_registers is None else _integer(max_registers)
    if max_registers is not None and (count is None or count not in REGISTER_LIMITS):
        raise ValueError(f"max_registers must be an int from {REGISTER_LIMITS.start} to "
                         f"{REGISTER_LIMITS.stop - 1}, got {max_registers!r:.40}")
    if launch_bounds is None:
        return count, ()
    given = launch_bounds if isinstance(launch_bounds, (tuple, list)) else (launch_bounds,)
    bounds = tuple(_integer(n) for n in given)
    if not 1 <= len(bounds) <= 2 or None in bounds or not 1 <= bounds[0] <= THREAD_LIMIT or \
            (len(bounds) == 2 and not 1 <= bounds[1] <= BLOCKS_PER_SM_LIMIT):
        raise ValueError(f"launch_bounds must be threads (1 to {THREAD_LIMIT}) or (threads, "
                         f"blocks per SM from 1 to {BLOCKS_PER_SM_LIMIT}), got "
                         f"{launch_bounds!r:.40}")
    return count, bounds


#: blocks a cluster may hold at most (the portable size; 16 needs a non-portable attribute)
CLUSTER_LIMIT = 8


def cluster_dims(cluster=None) -> tuple:
    """`cluster` (an int, or a tuple or list of up to three ints: blocks per cluster along x,
    y, z) as an (x, y, z) tuple, or () for None; checked (at most CLUSTER_LIMIT blocks). A
    ValueError says what is wrong, for the caller to name the option's owner."""
    if cluster is None:
        return ()
    given = cluster if isinstance(cluster, (tuple, list)) else (cluster,)
    dims = tuple(_integer(n) for n in given) + (1,) * (3 - len(given))
    if not 1 <= len(given) <= 3 or None in dims or min(dims) < 1 or \
            dims[0] * dims[1] * dims[2] > CLUSTER_LIMIT:
        raise ValueError(f"cluster must be blocks per cluster, an int or a tuple of up to three "
                         f"positive ints, {CLUSTER_LIMIT} blocks at most in all, got "
                         f"{cluster!r:.40}")
    return dims


def _integer(value) -> int | None:
    """An int or NumPy integer as an int; None for anything else (a bool, a float, a str)."""
    if isinstance(value, bool) or not hasattr(value, "__index__") or \
            type(value).__name__.startswith("bool"):
        return None
    return int(value.__index__())


@dataclass
class Program:
    """A parsed source file: its kernels and device functions, not yet specialised."""
    parsed: object          # frontend.ParsedModule
    filename: str
    source: str

    @property
    def kernels(self) -> dict:
        return self.parsed.kernels


#: parsed files by (filename, source text), most recently used last (see `parse`)
_PROGRAMS: OrderedDict = OrderedDict()
_PROGRAMS_LOCK = threading.Lock()
PROGRAM_CACHE_SIZE = 16


def parse(source: str, filename: str = "<string>") -> Program:
    """The parsed `source`; the same text parsed again is taken from a small cache, with the
    device functions already checked for it (a Program is never changed by compiling it)."""
    key = (filename, source)
    with _PROGRAMS_LOCK:
        program = _PROGRAMS.get(key)
    if program is None:
        with _GcPaused():
            parsed = _located(lambda: _parse_module(source, filename), filename, source)
        program = Program(parsed, filename, source)
    with _PROGRAMS_LOCK:    # ptxpy's preload (ptxpy/api.py) parses on a thread of its own
        program = _PROGRAMS.setdefault(key, program)
        _PROGRAMS.move_to_end(key)
        if len(_PROGRAMS) > PROGRAM_CACHE_SIZE:
            _PROGRAMS.popitem(last=False)
    return program


def clear_caches() -> None:
    """Forget parsed files (benchmarks measure compiles from source with this)."""
    _PROGRAMS.clear()


def import_stages() -> None:
    """Imports the modules a parse and a compile use (libcst above all), compiling nothing."""
    from . import frontend, lower_intrinsics, mathlib, ssa_builder  # noqa: F401
    from .backend import emit, isel, outssa, regalloc  # noqa: F401
    from .passes import optimize  # noqa: F401


def _parse_module(source: str, filename: str):
    from .frontend import parse_module

    return parse_module(source, filename)


def compile_kernel(program: Program, name: str, consts: dict | None = None, by_ref=frozenset(),
                   options: Options = Options(), stop_after: str = "ptx") -> Stages:
    """Compile one specialisation of kernel `name`; `stop_after` in 'typed', 'ssa', 'ptx'."""
    with _GcPaused(), DeepRecursion():
        try:
            return _compile_kernel(program, name, consts, by_ref, options, stop_after)
        except CompileError as err:
            if consts and name in program.kernels:    # the values the error may depend on
                given = ", ".join(f"{key}={value!r}" for key, value in consts.items())
                err.noted(f"kernel '{name}' compiled for Const {given}", program.kernels[name].loc)
            raise


def _compile_kernel(program: Program, name: str, consts, by_ref, options: Options,
                    stop_after: str) -> Stages:
    from .backend import emit_ptx
    from .backend.target import shared_bytes
    from .frontend import check_kernel
    from .passes import optimize
    from .ssa_builder import build_function

    filename, source = program.filename, program.source
    check_arch(options.arch, filename)
    if options.cluster and target_sm(options.arch) < 90:
        raise CompileError(f"kernel '{name}' has a cluster of {options.cluster}, which needs sm_90 "
                           f"or newer; the target is {options.arch}", program.kernels[name].loc,
                           filename).located(filename, source_lines(source))
    stages = Stages()
    stages.typed = _located(lambda: check_kernel(program.parsed, name, consts, frozenset(by_ref)), filename, source)
    if stop_after == "typed":
        return stages
    func = _located(lambda: build_function(stages.typed, options.arch, options.as_dict()), filename, source)
    lines = source_lines(source) if func.warnings else []
    stages.warnings = [CompileWarning(message, loc).located(filename, lines)   # in source order
                       for loc, message in sorted(func.warnings, key=_warning_position)]
    stages.ssa = _located(lambda: optimize(func), filename, source)
    if stop_after == "ssa":
        return stages
    ptx = _located(lambda: emit_ptx(stages.ssa), filename, source)
    static, dynamic = shared_bytes(func.arrays)    # shared arrays past 48 KB are dynamic
    kernel_options = {**options.as_dict(), "consts": dict(consts or {})}
    if dynamic:
        kernel_options["dynamic_shared_bytes"] = dynamic
    launch_sized = tuple(decl.launch for decl in func.arrays if decl.launch)
    if launch_sized:     # (name, element bytes, extents): launch_shape.launch_shared_bytes
        kernel_options["launch_shared"] = launch_sized
    ops = {instr.op for instr in stages.ssa.instrs()}
    if ops & {"mma", "ldmatrix"}:
        kernel_options["whole_warps_only"] = True    # mma.sync, ldmatrix: launch.check_limits
    if ops & {"wgmma", "wgmma_fence", "wgmma_commit", "wgmma_wait", "setmaxnreg"}:
        kernel_options["whole_warpgroups_only"] = True
    stages.kernel = CompiledKernel(name, ptx, list(func.params), options.arch, static, filename,
                                   kernel_options)
    return stages


def decode_source(data: bytes, filename: str) -> str:
    """A source file's bytes as text, decoded as Python decodes a module (UTF-8 unless a
    coding declaration or a BOM says otherwise); an undecodable byte is a located error."""
    import io
    import tokenize

    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as err:
        if not err.msg.startswith("invalid or missing encoding"):   # unknown, contradictory
            raise _bad_coding(data, err.msg, filename) from None
        encoding = "utf-8"         # a first line that is not UTF-8: located below
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as err:
        raise _undecodable(data, err, filename) from None


def _bad_coding(data: bytes, message: str, filename: str) -> CompileError:
    """An unknown or contradictory coding declaration: an error at the name it declares (on
    line 1 or 2, as PEP 263 has it)."""
    import re

    for number, line in enumerate(data.split(b"\n")[:2], start=1):
        line = line[3:] if number == 1 and line.startswith(b"\xef\xbb\xbf") else line   # a BOM
        match = re.match(rb"[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)", line)
        if match:
            text = line.decode("latin-1").rstrip("\r")
            return CompileError(message, (number, match.start(1)), filename, text)
    return CompileError(message, filename=filename)


def _undecodable(data: bytes, err: UnicodeDecodeError, filename: str) -> CompileError:
    line_start = data.rfind(b"\n", 0, err.start) + 1
    line_end = data.find(b"\n", err.start)
    line = data[line_start:line_end if line_end >= 0 else len(data)]
    column = len(data[line_start:err.start].decode(err.encoding, errors="replace"))
    message = (f"byte 0x{data[err.start]:02x} cannot be decoded as {err.encoding} "
               "(save the file as UTF-8 or declare its encoding)")
    return CompileError(message, (data.count(b"\n", 0, err.start) + 1, column), filename,
                        line.decode(err.encoding, errors="replace"))


def transpile(source: str, filename: str = "<string>", arch: str = DEFAULT_ARCH, defines=None,
              fast_math: bool = False, debug: bool = False, kernels=None,
              max_registers: int | None = None, launch_bounds: tuple = (),
              cluster: tuple = ()) -> dict[str, str]:
    """`ptxpy.transpile`: PTX text of every `@ptxpy.jit` kernel in `source` (SPEC 3)."""
    options = Options(check_arch(arch, filename), fast_math, debug, max_registers=max_registers,
                      launch_bounds=tuple(launch_bounds), cluster=tuple(cluster))
    with _GcPaused():
        return _transpile(source, filename, options, defines, kernels)


def _transpile(source: str, filename: str, options: Options, defines, kernels) -> dict[str, str]:
    program = parse(source, filename)
    names = kernel_names(program, kernels)
    for name in unused_defines(defines or {}, [program.kernels[name] for name in names]):
        warnings.warn(f"defines['{name}']: no kernel compiled has a Const parameter '{name}'",
                      stacklevel=4)
    out = {}
    for name in names:
        consts = consts_for(program.kernels[name], defines or {})
        stages = compile_kernel(program, name, consts, options=with_decorator_bounds(program, name, options))
        warn_located(stages.warnings)
        out[name] = with_absolute_file(stages.kernel.ptx, filename)
    return out


def with_decorator_bounds(program: Program, name: str, options: Options) -> Options:
    """`options` for compiling kernel `name` without its decorator at hand (`ptxpy transpile`):
    the `max_registers`, `launch_bounds` and `cluster` its `@ptxpy.jit(...)` writes as
    constants, where `options` give none, and its `fast_math=True` or `debug=True` (so the PTX
    is the one the decorated kernel runs)."""
    decl = program.kernels[name]
    written, bounds = getattr(decl, "register_bounds", (None, ()))
    cluster = getattr(decl, "cluster", ())
    flags = getattr(decl, "flags", {})
    if (written and not options.max_registers) or (bounds and not options.launch_bounds) or \
            (cluster and not options.cluster) or any(not getattr(options, f) for f in flags):
        return replace(options, max_registers=options.max_registers or written,
                       launch_bounds=options.launch_bounds or bounds,
                       cluster=options.cluster or cluster,
                       **{flag: True for flag in flags})
    return options


def warn_located(located: list) -> None:
    """A compile's CompileWarnings as Python warnings, at the kernel source's file and line
    (where Python shows the line itself, as for its own SyntaxWarnings)."""
    for warning in located:
        warnings.warn_explicit(warning.message, SourceWarning, warning.filename or "<string>",
                               warning.loc[0] if warning.loc else 0)


def with_absolute_file(ptx: str, path: str) -> str:
    """`ptx` naming its source by absolute path in `.file` where `path` names a file that
    exists, as nvcc does (`ptxpy transpile` and `ptxpy.transpile` alike, so that the two give
    the same text for the same path). The compile itself keeps the path as given, for its
    messages and the header comment to show."""
    if os.path.isabs(path) or not os.path.isfile(path):
        return ptx
    from .backend.emit import file_directive

    as_given, absolute = file_directive(path), file_directive(os.path.abspath(path))
    return ptx.replace(f"\n{as_given}\n", f"\n{absolute}\n", 1)


def kernel_names(program: Program, wanted=None) -> list:
    """The names of the kernels to compile, in the file's order: `wanted` (each checked to be
    a kernel of the program), or all of the program's when it is empty."""
    from .frontend import kernel_decl

    wanted = dict.fromkeys(wanted or ())
    for name in wanted:         # the first unknown name given is the error
        kernel_decl(program.parsed, name)
    return [name for name in program.kernels if not wanted or name in wanted]


def unused_defines(defines: dict, kernels: list) -> list:
    """The names of `defines` that are a Const parameter of none of `kernels` (most likely
    typos); a kernel whose header is in error counts as having them all."""
    return [name for name in defines if not any(_sets(kernel, name) for kernel in kernels)]


def _sets(kernel_decl, name: str) -> bool:
    try:
        return bool(consts_for(kernel_decl, {name: None}))
    except CompileError:     # its parameters are not known: the error comes when it is compiled
        return True


def consts_for(kernel_decl, defines: dict) -> dict:
    """The `Const` values of a kernel from `-D NAME=VALUE` defines (others take defaults)."""
    names = {p.name for p in kernel_decl.params if type(p.type).__name__ == "ConstType"}
    return {k: v for k, v in defines.items() if k in names}


def _warning_position(warning: tuple) -> tuple:
    loc = warning[0]
    return tuple(loc) if loc else (0, 0)


def _located(step, filename: str, source: str):
    """Run a stage; give a CompileError its file and line; turn a compiler bug into an error."""
    try:
        return step()
    except CompileError as err:
        if err.filename is None or err.source_line is None:
            err.located(filename, source_lines(source))
        raise
    except RecursionError:
        raise CompileError("the kernel is nested too deeply to compile", None, filename)
    except Exception as err:  # a bug in ptxpy: still report it as an error, never a traceback
        if os.environ.get("PTXPY_TRACEBACK"):
            raise
        raise CompileError(f"internal compiler error: {type(err).__name__}: {err} "
                           "(please report this; PTXPY_TRACEBACK=1 shows the traceback)",
                           None, filename) from err
