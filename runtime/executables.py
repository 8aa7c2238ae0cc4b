"""The XLA executables of eager calls, kept in the disk cache between processes.

An eager call of a kernel runs its FFI call through a compiled `jax.jit` (`PreparedCall.
run_eagerly`). In a new process, JAX's first call of it traces the function, lowers it to
StableHLO, hashes the module for its persistent compilation cache and loads the executable from
there: about 6 ms of a warm start's 7 ms on an H100 (BENCHMARKS.md, session 52). So the first
process that makes a call runs it through `jax.jit` as before and, when it exits, compiles it
ahead of time for the same arguments (`jitted.lower(...).compile()`, which JAX's caches answer)
and writes the executable (`jax.experimental.serialize_executable`) to ptxpy's disk cache
(runtime/cache.py, kind `xla`); a later process loads it and calls it directly. At exit the
work is on no call's path: done on a thread after the first call, it took the GIL from the
call's own wait and cost the H100's cold first call 4-8 ms.

The entry's key names everything the executable depends on: the launch plan's content key
(kernel image, launch shape, packed scalars), the operands' shapes and dtypes, the outputs and
aliases, the installed runtime (`cache.runtime_fingerprint`: the FFI call's attributes are its
own), the device (platform, kind, id) and the backend's version, JAX's and jaxlib's versions,
`XLA_FLAGS` and JAX's 64-bit mode. Only calls whose operands all live on one device
(not sharded) are kept; anything else, a disk cache turned off (`PTXPY_CACHE=0`, or only this
part of it: `PTXPY_EXECUTABLE_CACHE=0`), or an entry that fails to load takes `jax.jit` as
before. A call whose arguments sit on another device than the executable was compiled for is
refused by JAX before it runs (ValueError) and then goes through `jax.jit`. On the H100 a warm
start's first call took 2.3-3.5 ms less, and keeping one executable cost the exit 23-33 ms,
once (BENCHMARKS.md, session 54; before `_argument_type`, whose lowering JAX's caches answer).
"""
from __future__ import annotations

import atexit
import logging
import os
import pickle
import sys
import threading

from . import cache

log = logging.getLogger("ptxpy.executables")


def eager_runner(fn, operands: list, key_parts: dict):
    """A callable that runs `jax.jit(fn)` on operands like `operands` (their shapes, dtypes and
    device): the executable from the disk cache where a process kept it; else `jax.jit(fn)`,
    whose executable this process keeps when it exits (`keep_pending`)."""
    import jax

    device = _single_device(operands) if enabled() else None
    if device is None:
        return jax.jit(fn)
    parts = dict(key_parts, **_environment(device), avals=[(tuple(op.shape), str(op.dtype))
                                                             for op in operands])
    compiled = _load(parts, device)
    if compiled is not None:
        return _Runner(compiled, fn)
    jitted = jax.jit(fn)
    _keep_at_exit(parts, jitted, [_argument_type(op) for op in operands])
    return jitted


def _argument_type(op):
    """`op` as `lower` takes it without the array: with its sharding only where it is committed
    to its device. An uncommitted array's type with its sharding lowers to another module than
    the call did, which JAX's caches do not have: a second XLA compile at exit (30 ms against
    0.5 on the CPU machine)."""
    import jax

    sharding = op.sharding if getattr(op, "committed", True) else None
    return jax.ShapeDtypeStruct(op.shape, op.dtype, sharding=sharding)


_pending: list = []     # (key parts, jitted function, argument types) to keep at exit
_PENDING_MOST = 32      # calls kept by one process (each cost the H100's exit 23-33 ms
                        # before `_argument_type`)
_pending_lock = threading.Lock()
_exit_hook = False


def _keep_at_exit(parts: dict, jitted, avals: list) -> None:
    global _exit_hook
    with _pending_lock:
        if len(_pending) < _PENDING_MOST:
            _pending.append((parts, jitted, avals))
        if not _exit_hook:
            atexit.register(keep_pending)
            _exit_hook = True


def keep_pending() -> int:
    """Writes the executables of this process's calls that are not kept yet to the disk cache
    (at exit, where the work is on no call's path; tests call it); returns how many."""
    with _pending_lock:
        pending = list(_pending)
        _pending.clear()
    for parts, jitted, avals in pending:
        _compile_and_store(parts, jitted, avals)
    return len(pending)


def _compile_and_store(parts: dict, jitted, avals: list) -> None:
    """The executable of `jitted` for `avals` (JAX's caches have it after the calls), into the
    disk cache."""
    try:
        compiled = jitted.lower(*avals).compile()
    except Exception as e:   # the calls themselves went through jax.jit and reported it
        log.info("ptxpy: executable not kept (%s: %s)", type(e).__name__, e)
        return
    _store(parts, compiled)


def enabled() -> bool:
    """Whether executables are kept: with the disk cache on, unless `PTXPY_EXECUTABLE_CACHE=0`."""
    flag = os.environ.get("PTXPY_EXECUTABLE_CACHE", "1").strip().lower()
    return cache.disk_enabled() and flag not in ("", "0", "false", "no", "off")


class _Runner:
    """The compiled call; arguments on another device go through `jax.jit`."""

    __slots__ = ("compiled", "call", "fn", "jitted")

    def __init__(self, compiled, fn):
        self.compiled = self.call = compiled
        self.fn, self.jitted = fn, None

    def __call__(self, *operands):
        try:
            outs = self.call(*operands)
        except ValueError:    # "compiled for input shardings that disagree ...": nothing ran
            if self.jitted is None:
                import jax

                self.jitted = jax.jit(self.fn)
            return self.jitted(*operands)
        if self.call is self.compiled:
            # after its first call, a `Compiled` holds JAX's C++ dispatch of itself; calling that
            # directly skips a Python frame (about 0.3 us a call on the CPU machine)
            self.call = getattr(self.compiled, "_call", None) or self.compiled
        return outs


def _single_device(operands: list):
    """The one device every operand lives on whole, or None."""
    import jax

    devices = set()
    for op in operands:
        if not isinstance(op, jax.Array) or not op.is_fully_addressable:
            return None
        if not isinstance(op.sharding, jax.sharding.SingleDeviceSharding):
            return None
        devices |= op.sharding.device_set
    return next(iter(devices)) if len(devices) == 1 else None


def _environment(device) -> dict:
    import jax
    import jaxlib

    return {"runtime": cache.runtime_fingerprint(),
            "device": (device.platform, device.device_kind, device.id),
            "backend": device.client.platform_version, "jax": jax.__version__,
            "jaxlib": jaxlib.__version__, "xla_flags": os.environ.get("XLA_FLAGS", ""),
            "x64": bool(jax.config.jax_enable_x64), "python": sys.version_info[:2]}


def _load(parts: dict, device):
    payload = cache.read_bytes("xla", parts)
    if payload is None:
        return None
    try:
        from jax.experimental.serialize_executable import deserialize_and_load

        serialized, in_tree, out_tree = pickle.loads(payload)
        return deserialize_and_load(serialized, in_tree, out_tree, backend=device.client,
                                    execution_devices=[device])
    except Exception as e:   # an entry another JAX wrote, or a damaged one: compiled again
        log.info("ptxpy: cached executable not loaded (%s: %s)", type(e).__name__, e)
        return None


def _store(parts: dict, compiled) -> None:
    try:
        from jax.experimental.serialize_executable import serialize

        payload = pickle.dumps(serialize(compiled), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as e:   # a backend that cannot serialize: only a slower next process
        log.info("ptxpy: executable not kept (%s: %s)", type(e).__name__, e)
        return
    cache.write_bytes("xla", parts, payload)
