"""Find NVIDIA's `ptxas` and assemble PTX text with it (for `--check` and the tests)."""
from __future__ import annotations

import glob
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile


def installed_ptxas() -> list[str]:
    """Every `ptxas` found, in this order: $PTXAS, the PATH, /usr/local/cuda, the
    `nvidia-cuda-nvcc` wheel."""
    candidates = [os.environ.get("PTXAS"), shutil.which("ptxas"), "/usr/local/cuda/bin/ptxas"]
    for site in sys.path:
        candidates += sorted(glob.glob(os.path.join(site, "nvidia", "cu*", "bin", "ptxas")))
        candidates.append(os.path.join(site, "nvidia", "cuda_nvcc", "bin", "ptxas"))
    found = []
    for path in candidates:
        if path and os.path.isfile(path) and os.access(path, os.X_OK):
            real = os.path.realpath(path)
            if real not in map(os.path.realpath, found):
                found.append(path)
    return found


def find_ptxas() -> str | None:
    """$PTXAS when it is set (whether or not it can run: running it says why not), else the
    first of `installed_ptxas()`, or None."""
    chosen = os.environ.get("PTXAS")
    if chosen:
        return chosen
    found = installed_ptxas()
    return found[0] if found else None


def ptxas_version(path: str) -> tuple[int, int, int] | None:
    """(major, minor, build) from `ptxas --version` ("release 13.5, V13.5.37"), None if it
    does not say."""
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    found = re.search(r"V(\d+)\.(\d+)\.(\d+)", out)
    return tuple(int(g) for g in found.groups()) if found else None


class PtxasUnusable(OSError):
    """`ptxas` could not be started, or it succeeded without writing the cubin. An OSError, as
    the errors it replaces were, so that code catching those still catches it."""


def run_ptxas(ptxas: str, ptx: str, options: list[str]) -> tuple[bytes | None, str]:
    """(the cubin, or None if ptxas failed; its messages) of `ptxas OPTIONS` on `ptx`;
    PtxasUnusable when `ptxas` is no working ptxas."""
    with tempfile.TemporaryDirectory(prefix="ptxpy-") as tmp:
        src, out = os.path.join(tmp, "kernel.ptx"), os.path.join(tmp, "kernel.cubin")
        with open(src, "w") as f:
            f.write(ptx)
        proc = _run([ptxas, *options, src, "-o", out])
        messages = proc.stdout + proc.stderr
        if proc.returncode < 0:      # killed by a signal: ptxas itself crashed, it printed nothing
            messages += f"ptxas crashed ({_signal_name(-proc.returncode)}) on this PTX\n"
        if proc.returncode > 0 and not messages.strip():    # a ptxas rejecting PTX says why
            raise PtxasUnusable(f"ptxas '{ptxas}' exited with status {proc.returncode} and "
                                "printed nothing")
        if proc.returncode != 0:
            return None, messages
        try:
            with open(out, "rb") as f:
                return f.read(), messages
        except FileNotFoundError:
            message = f"ptxas '{ptxas}' exited with status 0 but wrote no output"
            raise PtxasUnusable(message) from None


def _run(command: list[str]) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(command, capture_output=True, text=True, errors="replace")
    except OSError as err:
        raise PtxasUnusable(f"cannot run ptxas '{command[0]}': {err.strerror or err}") from err


def assemble(ptx: str, arch: str = "sm_90") -> tuple[bool, str, int | None]:
    """(ok, ptxas's messages, registers per thread from `ptxas -v`, None when not reported);
    PtxasUnusable when the ptxas found does not work. PTX whose target is arch-specific
    (`sm_90a`, which an `sm_90` kernel using wgmma becomes) is assembled for that target."""
    ptxas = find_ptxas()
    if ptxas is None:
        return False, "ptxas not found (install nvidia-cuda-nvcc or put ptxas on the PATH)", None
    specific = re.search(r"^\s*\.target\s+(sm_\d+a)\b", ptx, flags=re.M)
    if specific and specific.group(1).rstrip("a") == arch.rstrip("a"):
        arch = specific.group(1)
    cubin, messages = run_ptxas(ptxas, ptx, ["-v", f"-arch={arch}"])
    found = re.search(r"Used (\d+) registers", messages)
    return cubin is not None, messages, int(found.group(1)) if found else None


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
