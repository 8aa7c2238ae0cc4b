"""ptxpy: type-annotated Python kernels compiled straight to PTX, run from JAX.

    @ptxpy.jit(out_shape=lambda x: x, grid=lambda x: (ptxpy.cdiv(x.shape[0], 256),), block=256)
    def double(x: Array[f32], out: Array[f32]):
        i = ptxpy.global_id(0)
        if i < x.shape[0]:
            out[i] = 2.0 * x[i]
"""
__version__ = "0.1.0"

import os as _os

_checkout = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))
if _os.path.isfile(_os.path.join(_checkout, "pyproject.toml")) and _os.path.isdir(
        _os.path.join(_checkout, "transpiler")):
    # Imported from a source checkout (the repo root on sys.path shadows the editable
    # install): `ptxpy.transpiler` and `ptxpy.runtime` are the top-level folders.
    __path__.append(_checkout)

# Light imports only: NumPy, JAX, the runtime and the compiler itself load when first used.
from ptxpy import _dataclass_code  # noqa: E402

_dataclass_code.install()    # before any dataclass: libcst's import is half its compiles

from ptxpy.types import (  # noqa: E402
    Array, Const, Scalar, ArrayType, bool_, i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64,
)
from ptxpy.intrinsics import *  # noqa: E402,F401,F403
from ptxpy.intrinsics import __all__ as _intrinsic_names  # noqa: E402
from ptxpy.transpiler.errors import CompileError  # noqa: E402

_API_NAMES = ("jit", "func", "transpile", "Kernel")   # defined in ptxpy.api, imported on first use


def __getattr__(name: str):
    if name in _API_NAMES:
        from ptxpy import api

        value = getattr(api, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'ptxpy' has no attribute {name!r}")


def __dir__() -> list:
    return sorted(set(globals()) | set(_API_NAMES))

__all__ = [
    "jit", "func", "transpile", "Kernel", "CompileError", "Array", "Const", "Scalar", "ArrayType",
    "bool_", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "bf16", "f32", "f64",
    *_intrinsic_names,
]
