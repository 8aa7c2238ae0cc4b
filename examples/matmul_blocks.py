"""Matrix multiplication as a 2 x 2 grid of output blocks: the Pallas tutorial's `matmul`, in ptxpy.

The tutorial multiplies two 1024 x 1024 f32 matrices with `grid=(2, 2)`: program (i, j) gets
the i-th half of x's rows (512 x 1024) and the j-th half of y's columns (1024 x 512) through
BlockSpecs and computes its 512 x 512 block of z as `x_ref[...] @ y_ref[...]`. On a GPU Pallas
(Triton) stages those operand blocks in shared memory: 2 x 2 MB per program, far beyond the 227
KB an H100 block may have, and the call fails.

This version keeps the tutorial's decomposition (grid (2, 2), program (i, j) owns the output
block z[i*M/2:(i+1)*M/2, j*N/2:(j+1)*N/2]) but computes its block the way a GPU wants:

- the block's 256 threads walk over its output in 64 x 64 sub-tiles;
- for each sub-tile they loop over K in steps of 16: a 64 x 16 tile of x and a 16 x 64 tile of
  y are copied into shared memory (one 128-bit load per thread each), then every thread reads
  4 values of each from shared memory per k and updates a 4 x 4 micro-tile of results held in
  registers: 16 FMAs for 2 vector shared loads;
- x's tile is stored transposed (xs[k, m]) so that a thread's 4 rows are one vector load; its
  rows are padded from 64 to 68 floats, which spreads the transposing stores over more banks.

Shared memory used: 8.5 KB per block. Four blocks can only keep 4 of the H100's 132 SMs busy,
which is the price of the tutorial's 2 x 2 grid: see matmul.py for a matmul whose grid fills
the machine.

`python examples/matmul_blocks.py [--size N]` checks z against jax.numpy (N a multiple of 128).
"""
import argparse

import jax
import jax.numpy as jnp
import numpy as np

import ptxpy
from ptxpy import Array, f32

GRID = 2          # the tutorial's grid: GRID x GRID output blocks
SUB = 64          # output sub-tile computed by the whole block at a time (SUB x SUB)
TK = 16           # K step: the depth of the shared-memory tiles
R = 4             # each thread computes an R x R micro-tile
THREADS = (SUB // R) * (SUB // R)     # 256
PAD = 4           # xs rows padded to SUB + PAD floats (keeps 16-byte alignment for vector loads)


@ptxpy.jit(out_shape=lambda x, y: jax.ShapeDtypeStruct((x.shape[0], y.shape[1]), x.dtype),
           grid=(GRID, GRID), block=THREADS)
def matmul(x: Array[f32, 2], y: Array[f32, 2], z: Array[f32, 2]):
    m_total = x.shape[0]
    k_total = x.shape[1]
    n_total = y.shape[1]
    # Program (i, j)'s output block, as the tutorial's out_specs BlockSpec gives it.
    block_m = m_total // GRID
    block_n = n_total // GRID
    m_begin = ptxpy.program_id(0) * block_m
    n_begin = ptxpy.program_id(1) * block_n

    xs = ptxpy.shared_array((TK, SUB + PAD), f32)    # x tile, transposed: xs[k, m]
    ys = ptxpy.shared_array((TK, SUB), f32)          # y tile: ys[k, n]
    acc = ptxpy.local_array((R, R), f32)             # the micro-tile, in registers

    t = ptxpy.thread_idx.x
    tm = (t // (SUB // R)) * R      # this thread's micro-tile: rows tm..tm+3, columns tn..tn+3
    tn = (t % (SUB // R)) * R       # of the sub-tile
    # Which elements of the x and y tiles this thread copies (four consecutive floats each).
    xm = t // (TK // 4)
    xk = (t % (TK // 4)) * 4
    yk = t // (SUB // 4)
    yn = (t % (SUB // 4)) * 4

    for m0 in range(m_begin, m_begin + block_m, SUB):
        for n0 in range(n_begin, n_begin + block_n, SUB):
            for r in ptxpy.static_range(R):
                for c in ptxpy.static_range(R):
                    acc[r, c] = 0.0
            for k0 in range(0, k_total, TK):
                # Stage the tiles: coalesced 128-bit global loads, x transposed on the way in.
                # (The start is named first: ptxpy rejects x[r, k0 + xk:k0 + xk + 4] today.)
                kx = k0 + xk
                a0, a1, a2, a3 = x[m0 + xm, kx:kx + 4]
                xs[xk, xm] = a0
                xs[xk + 1, xm] = a1
                xs[xk + 2, xm] = a2
                xs[xk + 3, xm] = a3
                ny = n0 + yn
                b0, b1, b2, b3 = y[k0 + yk, ny:ny + 4]
                ys[yk, yn:yn + 4] = (b0, b1, b2, b3)
                ptxpy.syncthreads()
                for k in ptxpy.static_range(TK):
                    a0, a1, a2, a3 = xs[k, tm:tm + 4]
                    b0, b1, b2, b3 = ys[k, tn:tn + 4]
                    # ptxpy does not contract a * b + c into an FMA by itself (it keeps results
                    # bit-identical to NumPy's): ask for it.
                    acc[0, 0] = ptxpy.fma(a0, b0, acc[0, 0])
                    acc[0, 1] = ptxpy.fma(a0, b1, acc[0, 1])
                    acc[0, 2] = ptxpy.fma(a0, b2, acc[0, 2])
                    acc[0, 3] = ptxpy.fma(a0, b3, acc[0, 3])
                    acc[1, 0] = ptxpy.fma(a1, b0, acc[1, 0])
                    acc[1, 1] = ptxpy.fma(a1, b1, acc[1, 1])
                    acc[1, 2] = ptxpy.fma(a1, b2, acc[1, 2])
                    acc[1, 3] = ptxpy.fma(a1, b3, acc[1, 3])
                    acc[2, 0] = ptxpy.fma(a2, b0, acc[2, 0])
                    acc[2, 1] = ptxpy.fma(a2, b1, acc[2, 1])
                    acc[2, 2] = ptxpy.fma(a2, b2, acc[2, 2])
                    acc[2, 3] = ptxpy.fma(a2, b3, acc[2, 3])
                    acc[3, 0] = ptxpy.fma(a3, b0, acc[3, 0])
                    acc[3, 1] = ptxpy.fma(a3, b1, acc[3, 1])
                    acc[3, 2] = ptxpy.fma(a3, b2, acc[3, 2])
                    acc[3, 3] = ptxpy.fma(a3, b3, acc[3, 3])
                ptxpy.syncthreads()       # before the next iteration overwrites the tiles
            nz = n0 + tn
            for r in ptxpy.static_range(R):
                z[m0 + tm + r, nz:nz + 4] = (acc[r, 0], acc[r, 1], acc[r, 2], acc[r, 3])


def check_shapes(x, y) -> None:
    m, k = x.shape
    k2, n = y.shape
    if k != k2 or m % (GRID * SUB) or n % (GRID * SUB) or k % TK:
        raise ValueError(f"matmul_blocks needs M, N multiples of {GRID * SUB} and K of {TK}, "
                         f"got {x.shape} @ {y.shape}")


def main(size: int | None = None) -> None:
    if size is None:
        size = 1024 if jax.default_backend() == "gpu" else 256
    k1, k2 = jax.random.split(jax.random.key(0))
    x = jax.random.normal(k1, (size, size), jnp.float32)
    y = jax.random.normal(k2, (size, size), jnp.float32)
    check_shapes(x, y)
    z = jax.jit(matmul)(x, y)
    expected = jnp.matmul(x, y, precision=jax.lax.Precision.HIGHEST)
    np.testing.assert_allclose(np.asarray(z), np.asarray(expected), rtol=1e-4, atol=1e-3)
    print(f"matmul_blocks of two {size} x {size} matrices on a 2 x 2 grid: matches jax.numpy")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=None, help="matrix size N (N x N)")
    main(parser.parse_args().size)
