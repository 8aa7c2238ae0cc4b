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


def eager_runner(fn, operands: list, key_parts: dict, owner: str | None = None):
    """A callable that runs `jax.jit(fn)` on operands like `operands` (their shapes, dtypes and
    device): the executable from the disk cache where a process kept it (loaded ahead of the
    call where the kernel's preload found it in `owner`'s index: `prefetch`); else
    `jax.jit(fn)`, whose executable this process keeps when it exits (`keep_pending`). `owner`
    names the kernel whose calls these are (ptxpy/api.py: its file and name), or None."""
    import jax

    device = _single_device(operands) if enabled() else None
    if device is None:
        return jax.jit(fn)
    parts = dict(key_parts, **_environment(device), avals=[(tuple(op.shape), str(op.dtype))
                                                             for op in operands])
    digest = cache.cache_key(parts)
    compiled = _take_prefetched(digest)
    if compiled is None:
        compiled = _load(cache.read_digest("xla", digest), device)
    if compiled is not None:
        _note_use(owner, digest, device)
        return _Runner(compiled, fn)
    jitted = jax.jit(fn)
    _keep_at_exit(parts, jitted, [_argument_type(op) for op in operands], owner, digest, device)
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


def _keep_at_exit(parts: dict, jitted, avals: list, owner, digest: str, device) -> None:
    with _pending_lock:
        kept = len(_pending) < _PENDING_MOST
        if kept:
            _pending.append((parts, jitted, avals))
        _hook_exit()
    if kept:
        _note_use(owner, digest, device)


def _hook_exit() -> None:
    """(with `_pending_lock` held)"""
    global _exit_hook
    if not _exit_hook:
        atexit.register(keep_pending)
        _exit_hook = True


def keep_pending() -> int:
    """Writes the executables of this process's calls that are not kept yet to the disk cache,
    and the kernels' indexes of them (at exit, where the work is on no call's path; tests call
    it); returns how many executables."""
    with _pending_lock:
        pending = list(_pending)
        _pending.clear()
        used = dict(_used)
        _used.clear()
    for parts, jitted, avals in pending:
        _compile_and_store(parts, jitted, avals)
    for owner, entries in used.items():
        _update_index(owner, entries)
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


def _load(payload: bytes | None, device):
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


# --- loading a warm start's executables before its first call ---------------------------------
#
# A kernel's index (disk cache kind `xla-index`, keyed by its owner: file and name) lists the
# executables its calls used in the last process that kept one, most recent first, each with
# its device. When a kernel found in the disk cache is decorated, ptxpy's preload waits for
# the program to set up JAX's GPU (it never does that itself) and loads those executables
# (`prefetch`), so that the first call takes one ready (`_take_prefetched`): loading one is
# about 3 ms of a warm start's 6 on an H100 (BENCHMARKS.md, session 56).

_INDEX_MOST = 8                 # executables listed per kernel
_used: dict = {}                # owner -> [(digest, platform, device id)] of this process's calls
_prefetched: dict = {}          # digest -> a loaded executable no call has taken yet
_prefetching: dict = {}         # digest -> threading.Event set when its load has ended


def _note_use(owner, digest: str, device) -> None:
    if owner is None:
        return
    entry = (digest, device.platform, device.id)
    with _pending_lock:
        entries = _used.setdefault(owner, [])
        if entry not in entries:
            entries.append(entry)
        _hook_exit()


def _index_parts(owner: str) -> dict:
    return {"owner": owner, "python": sys.version_info[:2]}


def _read_index(owner: str) -> list:
    payload = cache.read_bytes("xla-index", _index_parts(owner))
    try:
        entries = pickle.loads(payload) if payload is not None else []
    except Exception:   # written by something else: rewritten at exit
        return []
    return [tuple(e) for e in entries] if isinstance(entries, list) else []


def _update_index(owner: str, entries: list) -> None:
    old = _read_index(owner)
    new = (entries + [e for e in old if e not in entries])[:_INDEX_MOST]
    if new != old:
        cache.write_bytes("xla-index", _index_parts(owner), pickle.dumps(new))


def prefetch(owner: str) -> int:
    """Loads the executables of `owner`'s index that are for devices of a backend JAX has set
    up; returns how many it loaded."""
    if not enabled():
        return 0
    loaded = 0
    for digest, platform, device_id in _read_index(owner):
        device = _started_device(platform, device_id)
        with _pending_lock:
            if device is None or digest in _prefetching:
                continue
            done = _prefetching[digest] = threading.Event()
        try:
            compiled = _load(cache.read_digest("xla", digest), device)
            if compiled is not None:
                _prefetched[digest] = compiled
                loaded += 1
        finally:
            done.set()
    return loaded


def _take_prefetched(digest: str):
    """The executable `prefetch` loaded for `digest`, waiting for a load in progress."""
    loading = _prefetching.get(digest)
    if loading is None:
        return None
    loading.wait()
    return _prefetched.pop(digest, None)


def _started_device(platform: str, device_id: int):
    """The device of `platform` numbered `device_id`, where JAX has set up its backend."""
    for backend in started_backends().values():
        for device in backend.devices():
            if device.platform == platform and device.id == device_id:
                return device
    return None


def started_backends() -> dict:
    """JAX's backends set up so far, by platform, without setting any up ({} where this JAX
    keeps them elsewhere)."""
    try:
        from jax._src import xla_bridge
    except ImportError:
        return {}
    backends = getattr(xla_bridge, "_backends", None)
    if not isinstance(backends, dict) or not backends:
        return {}
    lock = getattr(xla_bridge, "_backend_lock", None)
    if lock is None:
        return dict(backends)
    with lock:     # JAX sets its backends up one at a time under this lock: the CPU's first
        return dict(backends)


def _store(parts: dict, compiled) -> None:
    try:
        from jax.experimental.serialize_executable import serialize

        payload = pickle.dumps(serialize(compiled), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as e:   # a backend that cannot serialize: only a slower next process
        log.info("ptxpy: executable not kept (%s: %s)", type(e).__name__, e)
        return
    cache.write_bytes("xla", parts, payload)
