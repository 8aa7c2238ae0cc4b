"""The compiled code of the methods `dataclasses` generates for libcst's and the compiler's
classes, kept on disk.

`@dataclass` writes each class's `__init__`, `__repr__`, `__eq__`, `__hash__` ... as source text
and compiles it with `exec` every time the class is created: Python's bytecode cache does not
hold them. libcst defines about 200 node classes, so importing it compiled about 1,000 such
functions in every new process, 70-80 ms of its 130-140 ms import on the CPU machine
(BENCHMARKS.md, session 56). `install()` (called first thing by `import ptxpy`) puts a
look-up-first `exec` in the `dataclasses` module's namespace: a text compiled by an earlier
process is taken from this cache's file, the rest compiled as `exec` would (same file name, no
inherited flags) and the file rewritten at exit. Only texts of libcst's and the compiler's modules
are kept, and past `_MOST` entries (texts of old libcst versions piling up) only those of the
process that writes.

The file sits in the disk cache's folder (`PTXPY_CACHE_DIR`; nothing is read or written with
`PTXPY_CACHE=0`), one per Python build (marshal's format of code objects is Python's own), with
a CRC-32 of its content: a file that fails it, or fails to load, is ignored and replaced.
"""
from __future__ import annotations

import atexit
import dataclasses
import marshal
import os
import sys
import threading

from ptxpy._cachedir import cache_dir, disk_enabled

_HEADER = b"ptxpy-dataclass-code 1\n"
_KEPT_MODULES = ("libcst", "ptxpy.transpiler")   # what `import ptxpy` alone does not load
_MOST = 4000      # one import of libcst and the compiler: about 700

_codes: dict | None = None      # source text -> code object, read from the file when first needed
_used: dict = {}                # the entries this process looked up or compiled
_new = False                    # whether this process compiled a kept text the file lacked
_lock = threading.Lock()


def path() -> str:
    import zlib     # (not at `import ptxpy`: only when libcst is imported)

    build = zlib.crc32(sys.version.encode())
    return os.path.join(cache_dir(), "dataclass-code",
                        f"{sys.implementation.cache_tag}-{build:08x}.bin")


def install() -> bool:
    """Routes `dataclasses`' compiles through the cache; False where the disk cache is off or
    something else already replaced `dataclasses.exec`."""
    if not disk_enabled() or "exec" in vars(dataclasses):
        return False
    dataclasses.exec = _exec
    atexit.register(save)
    return True


def _exec(source, globals=None, locals=None):
    if source.__class__ is str:
        if globals is not None and globals.get("__name__", "").startswith(_KEPT_MODULES):
            source = _code_of(source)
        else:   # compiled here, a text would take this module's __future__ flags
            source = compile(source, "<string>", "exec", dont_inherit=True)
    return exec(source, globals, locals)


def _code_of(text: str):
    global _new
    codes = _codes if _codes is not None else _read()
    code = codes.get(text)
    if code is None:
        # what `exec(text)` in `dataclasses` compiles: file "<string>", no __future__ flags
        code = codes[text] = compile(text, "<string>", "exec", dont_inherit=True)
        _new = True
    _used[text] = code
    return code


def _read() -> dict:
    global _codes
    with _lock:
        if _codes is None:
            _codes = _load(path())
    return _codes


def _load(file: str) -> dict:
    import zlib

    try:
        with open(file, "rb") as f:
            data = f.read()
        header, check, payload = data.split(b"\n", 2)
        if header + b"\n" != _HEADER or int(check, 16) != zlib.crc32(payload):
            return {}
        codes = marshal.loads(payload)
        return codes if isinstance(codes, dict) else {}
    except Exception:    # missing, damaged or from another Python: compiled afresh
        return {}


def save() -> bool:
    """Writes the file again if this process compiled a kept text it lacked (at exit)."""
    global _new
    if not _new:
        return False
    _new = False
    import zlib

    codes = dict(_codes if len(_codes) <= _MOST else _used)
    payload = marshal.dumps(codes)
    file = path()
    temporary = f"{file}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(file), exist_ok=True)
        with open(temporary, "wb") as f:
            f.write(_HEADER + b"%08x\n" % zlib.crc32(payload) + payload)
        os.replace(temporary, file)    # readers see the old file or the new one, whole
    except OSError:     # a read-only cache folder: only slower imports
        try:
            os.remove(temporary)
        except OSError:
            pass
        return False
    return True
