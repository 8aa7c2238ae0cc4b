"""Caches of compiled code: one in memory per process, one on disk shared between processes.

The disk cache lives in `$XDG_CACHE_HOME/ptxpy` (default `~/.cache/ptxpy`); `PTXPY_CACHE_DIR`
moves it and `PTXPY_CACHE=0` turns it off (the in-memory cache stays on). An entry is named by a
SHA-256 of its key parts (source, compiler version, arch, options ... whatever the caller passes)
plus the ptxpy version and the entry format, so a new compiler never reads an old entry.

Each file holds a header line with the SHA-256 of its payload. A file that fails that check
(truncated, edited, written by something else) is treated as missing: the value is recomputed and
the file rewritten. Files are written to a temporary name in the same folder and moved into place
with `os.replace`, so readers in other processes see either no file or a complete one, and writers
racing on one key all write the same bytes.
"""
from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import pickle
import tempfile
import threading
from pathlib import Path
from typing import Callable

from ptxpy import __version__
from ptxpy._cachedir import cache_dir, disk_enabled  # noqa: F401 (this module's names too)

log = logging.getLogger("ptxpy.cache")

FORMAT = 1
_MAGIC = b"ptxpy-cache"

_memory: dict[tuple[str, str], object] = {}
_memory_lock = threading.Lock()


def cache_key(key_parts: dict) -> str:
    """A stable hex digest of `key_parts` (values that JSON cannot spell are taken by repr)."""
    parts = dict(key_parts, _ptxpy=__version__, _format=FORMAT)
    text = json.dumps(parts, sort_keys=True, default=repr, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def get_or_compile(key_parts: dict, compile_fn: Callable[[], str]) -> str:
    """PTX text for `key_parts`: from memory, else from disk, else `compile_fn()` (then stored)."""
    return _get_or_make("ptx", key_parts, compile_fn, _text_codec)


def get_or_compile_cubin(key_parts: dict, compile_fn: Callable[[], bytes]) -> bytes:
    """Like `get_or_compile`, for binary images (cubins)."""
    return _get_or_make("cubin", key_parts, compile_fn, _bytes_codec)


def get_or_make_object(kind: str, key_parts: dict, make: Callable[[], object]):
    """Like `get_or_compile`, for picklable Python objects (compiled kernels, signatures)."""
    return _get_or_make(kind, key_parts, make, _pickle_codec)


def read_bytes(kind: str, key_parts: dict) -> bytes | None:
    """The disk entry of `key_parts` (None: missing, damaged, or the disk cache off)."""
    if not disk_enabled():
        return None
    return _read_entry(entry_path(kind, key_parts), _bytes_codec)


def read_digest(kind: str, digest: str) -> bytes | None:
    """As `read_bytes`, the entry named by its key's digest (`cache_key(key_parts)`)."""
    if not disk_enabled():
        return None
    return _read_entry(_digest_path(kind, digest), _bytes_codec)


def write_bytes(kind: str, key_parts: dict, payload: bytes) -> None:
    """Writes the disk entry of `key_parts` (atomically; nothing where the disk cache is off)."""
    if disk_enabled():
        _write_entry(entry_path(kind, key_parts), payload)


@functools.lru_cache(maxsize=None)
def compiler_fingerprint() -> str:
    """Names the compiler that is installed: the ptxpy version and the size and modification time
    of every source file of `ptxpy` and `ptxpy.transpiler` (the math library included), so an
    edited or reinstalled compiler never reads entries that an older one wrote."""
    import ptxpy
    import ptxpy.transpiler

    return _sources_fingerprint([os.path.dirname(ptxpy.__file__),
                                 os.path.dirname(ptxpy.transpiler.__file__)], (".py",))


@functools.lru_cache(maxsize=None)
def runtime_fingerprint() -> str:
    """Names the runtime that is installed (its Python and C sources, as `compiler_fingerprint`),
    for entries that depend on how it calls XLA: the eager calls' executables."""
    return _sources_fingerprint([os.path.dirname(os.path.abspath(__file__))], (".py", ".c"))


def _sources_fingerprint(roots: list, suffixes: tuple) -> str:
    sources = []
    for root in roots:
        for folder, subfolders, files in os.walk(root):
            subfolders[:] = [d for d in subfolders if d != "__pycache__"]
            sources += [os.path.join(folder, f) for f in files if f.endswith(suffixes)]
    digest = hashlib.sha256(__version__.encode())
    for path in sorted(sources):
        stat = os.stat(path)
        digest.update(f"{path}:{stat.st_size}:{stat.st_mtime_ns};".encode())
    return digest.hexdigest()


def entry_path(kind: str, key_parts: dict) -> Path:
    """Where the disk entry of `key_parts` lives."""
    return _digest_path(kind, cache_key(key_parts))


def _digest_path(kind: str, digest: str) -> Path:
    return cache_dir() / kind / f"{digest}.{kind}"


def clear_memory() -> None:
    with _memory_lock:
        _memory.clear()


# --- internals -------------------------------------------------------------------------------

class _Codec:
    def __init__(self, encode, decode):
        self.encode, self.decode = encode, decode


_text_codec = _Codec(lambda s: s.encode("utf-8"), lambda b: b.decode("utf-8"))
_bytes_codec = _Codec(bytes, bytes)


def _unpickle(payload: bytes):
    try:
        return pickle.loads(payload)
    except Exception as e:   # an entry from an incompatible build: treat as corrupt
        raise ValueError(str(e)) from None


_pickle_codec = _Codec(lambda v: pickle.dumps(v, protocol=pickle.HIGHEST_PROTOCOL), _unpickle)


def _get_or_make(kind: str, key_parts: dict, make: Callable, codec: _Codec):
    key = cache_key(key_parts)
    with _memory_lock:
        if (kind, key) in _memory:
            return _memory[(kind, key)]
    path = _digest_path(kind, key)
    value = _read_entry(path, codec) if disk_enabled() else None
    if value is None:
        value = make()
        if disk_enabled():
            _write_entry(path, codec.encode(value))
    with _memory_lock:
        return _memory.setdefault((kind, key), value)


def _read_entry(path: Path, codec: _Codec):
    try:
        data = path.read_bytes()
    except OSError:
        return None
    header, sep, payload = data.partition(b"\n")
    if sep and header == _header(payload):
        try:
            return codec.decode(payload)
        except ValueError:
            pass
    log.warning("ptxpy cache: ignoring corrupt entry %s", path)
    return None


def _header(payload: bytes) -> bytes:
    return b"%s %d %s" % (_MAGIC, FORMAT, hashlib.sha256(payload).hexdigest().encode())


def _write_entry(path: Path, payload: bytes) -> None:
    """Atomically writes one entry; a cache that cannot be written is only a slower cache."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(_header(payload) + b"\n" + payload)
            os.replace(tmp, path)
        except BaseException:
            _unlink_quietly(tmp)
            raise
    except OSError as e:
        log.info("ptxpy cache: could not write %s: %s", path, e)


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
