"""Which compiler turns a kernel's PTX into the cubin the driver loads.

By default the driver's own JIT (`cuLink*`), which is ptxas as it was when the driver was built,
and which every workaround in the backend was checked against on the card. Driver 580's
(CUDA 13.0) sometimes keeps a value in a uniform register (`URn`, one per warp) that lanes on one
side of a divergent branch still need while lanes on the other side, which the warp runs first,
write that register: random program 767 read a wrong address on the H100 that way. ptxas 13.5
builds it right, and a cubin from a newer ptxas of the same major version loads on the older
driver (CUDA's minor-version compatibility); but ptxas 13.5.37 has a bug of its own (it takes
the known low one-bits of a 32-bit product for zeros: two random programs, docs/ptx-dialect.md,
benchmarks/probes/known_bits_probe.py) that the driver's JIT has not, so it is a choice, not
the default:

`PTXPY_PTXAS=newest` takes the newest installed `ptxas` of the driver's major version when it
is newer than the driver; `PTXPY_PTXAS=PATH` that ptxas (when its major version is the
driver's); unset or `driver`, the driver's JIT.
"""
from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass

from ptxpy.runtime import cache
from ptxpy.transpiler.ptxas import installed_ptxas, ptxas_version, run_ptxas


@dataclass(frozen=True)
class Ptxas:
    path: str
    version: tuple[int, int, int]

    def __str__(self):
        return "ptxas " + ".".join(map(str, self.version))


@functools.lru_cache(maxsize=None)
def _version(path: str):
    """ptxas_version(path), kept in the disk cache by the file's size and time (running
    `ptxas --version` takes about 8 ms, more than a whole warm start may)."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    key = {"kind": "ptxas version", "path": os.path.realpath(path), "size": stat.st_size,
           "mtime_ns": stat.st_mtime_ns}
    text = cache.get_or_compile(key, lambda: ".".join(map(str, ptxas_version(path) or ())))
    return tuple(int(part) for part in text.split(".")) if text else None


def chosen_ptxas(driver_version: int) -> Ptxas | None:
    """The ptxas to assemble with under a driver of `driver_version` (cuDriverGetVersion's
    1000 * major + 10 * minor) as PTXPY_PTXAS says, or None for the driver's JIT."""
    setting = os.environ.get("PTXPY_PTXAS", "driver")
    if setting in ("", "driver"):
        return None
    newest = setting == "newest"
    major, minor = driver_version // 1000, driver_version % 1000 // 10
    usable = []
    for path in installed_ptxas() if newest else [setting]:
        version = _version(path)
        if version and version[0] == major and (not newest or version[1] > minor):
            usable.append(Ptxas(path, version))
    return max(usable, key=lambda p: p.version, default=None)


def target_arch(ptx: str, device_arch: int) -> str:
    """ptxas's `-arch` for a device of compute capability `device_arch` (90 for sm_90): the
    PTX's own target where it is arch-specific (`sm_90a`), else the device's."""
    target = re.search(r"^\s*\.target\s+(sm_\d+a)\b", ptx, flags=re.M)
    return target.group(1) if target else f"sm_{device_arch}"


class PtxasError(RuntimeError):
    pass


def assemble(ptxas: Ptxas, ptx: str, device_arch: int) -> bytes:
    """The cubin ptxas makes of `ptx` for a device of compute capability `device_arch`;
    PtxasError with its messages if it fails."""
    arch = target_arch(ptx, device_arch)
    cubin, messages = run_ptxas(ptxas.path, ptx, [f"-arch={arch}"])
    if cubin is None:
        raise PtxasError(f"{ptxas} (-arch={arch}): {messages.strip()}")
    return cubin
