"""Where ptxpy's disk cache lives and whether it is on (light: read at `import ptxpy`).

`$XDG_CACHE_HOME/ptxpy` (default `~/.cache/ptxpy`); `PTXPY_CACHE_DIR` moves it and
`PTXPY_CACHE=0` turns it off.
"""
from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """The folder of the on-disk cache (it need not exist yet)."""
    moved = os.environ.get("PTXPY_CACHE_DIR")
    if moved:
        return Path(moved).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(xdg) / "ptxpy"


def disk_enabled() -> bool:
    return os.environ.get("PTXPY_CACHE", "1").strip().lower() not in ("0", "false", "no", "off")
