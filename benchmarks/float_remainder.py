"""The cost of exact float `%` (docs/language.md): ptxpy's Python `%` (the math library's exact
remainder), the same kernel under `fast_math` (`a - floor(a / b) * b`), and XLA's
`jnp.remainder`, on the GPU (needs CUDA).

    python benchmarks/float_remainder.py

Two cases of 2^26 f32 elements: `x % TWO_PI` (a phase wrapped into [0, 2 pi), x uniform in
[-1000, 1000]: about 8 binades between the operands) and `x % y` of two arrays (x and y normal
with random exponents: 0 to 20 binades apart). Time: the median summed kernel time of 15 calls
from CUPTI records (benchmarks/kernels.py `_profiled_time`); bytes: each input read once and
the output written once.
"""
from __future__ import annotations

import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "benchmarks")]

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import ptxpy  # noqa: E402
from ptxpy import Array, f32  # noqa: E402
from kernels import _profiled_time  # noqa: E402

TWO_PI = 6.2831855
N = 1 << 26
BLOCK = 256


def _grid(x, *rest):
    return (ptxpy.cdiv(x.size, BLOCK * 4),)


# Four elements a thread, one 128-bit access each (as examples/add_vectors.py): N is a
# multiple of 4 * BLOCK.
@ptxpy.jit(out_shape=lambda x: x, grid=_grid, block=BLOCK)
def phase(x: Array[f32], out: Array[f32]):
    i = ptxpy.global_id(0) * 4
    if i + 4 <= len(x):
        x0, x1, x2, x3 = x[i:i + 4]
        out[i:i + 4] = (x0 % TWO_PI, x1 % TWO_PI, x2 % TWO_PI, x3 % TWO_PI)


@ptxpy.jit(out_shape=lambda x: x, grid=_grid, block=BLOCK, fast_math=True)
def phase_fast(x: Array[f32], out: Array[f32]):
    i = ptxpy.global_id(0) * 4
    if i + 4 <= len(x):
        x0, x1, x2, x3 = x[i:i + 4]
        out[i:i + 4] = (x0 % TWO_PI, x1 % TWO_PI, x2 % TWO_PI, x3 % TWO_PI)


@ptxpy.jit(out_shape=lambda x, y: x, grid=_grid, block=BLOCK)
def rem(x: Array[f32], y: Array[f32], out: Array[f32]):
    i = ptxpy.global_id(0) * 4
    if i + 4 <= len(x):
        x0, x1, x2, x3 = x[i:i + 4]
        y0, y1, y2, y3 = y[i:i + 4]
        out[i:i + 4] = (x0 % y0, x1 % y1, x2 % y2, x3 % y3)


@ptxpy.jit(out_shape=lambda x, y: x, grid=_grid, block=BLOCK, fast_math=True)
def rem_fast(x: Array[f32], y: Array[f32], out: Array[f32]):
    i = ptxpy.global_id(0) * 4
    if i + 4 <= len(x):
        x0, x1, x2, x3 = x[i:i + 4]
        y0, y1, y2, y3 = y[i:i + 4]
        out[i:i + 4] = (x0 % y0, x1 % y1, x2 % y2, x3 % y3)


def main():
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.uniform(-1000, 1000, N).astype(np.float32))
    a = jnp.asarray((rng.standard_normal(N) * 2.0 ** rng.integers(0, 20, N)).astype(np.float32))
    b = jnp.asarray((rng.standard_normal(N) + 0.1).astype(np.float32))
    cases = [("x % TWO_PI", (x,), 8 * N, {"ptxpy": phase, "ptxpy fast_math": phase_fast,
                                          "XLA": lambda x: jnp.remainder(x, np.float32(TWO_PI))}),
             ("x % y", (a, b), 12 * N, {"ptxpy": rem, "ptxpy fast_math": rem_fast,
                                       "XLA": jnp.remainder})]
    print(f"{jax.devices()[0].device_kind}; {N} f32 elements")
    for label, args, nbytes, systems in cases:
        exact = np.remainder(*(np.asarray(v) for v in args)) if len(args) == 2 else \
            np.remainder(np.asarray(args[0]), np.float32(TWO_PI))
        for system, fn in systems.items():
            out = np.asarray(jax.jit(fn)(*args))
            same = float(np.mean(out == exact))
            seconds = _profiled_time(fn, args)
            print(f"{label:12} {system:16} {seconds * 1e6:9.1f} us {nbytes / seconds / 1e12:6.2f} TB/s"
                  f"   equal to NumPy's: {same:.4%}")


if __name__ == "__main__":
    main()
