"""iota, out[i] = i: the Pallas tutorial's second program, in ptxpy.

Pallas's version launches a grid of `size` programs and lets program `i` write `o_ref[i] = i`
(`pl.program_id(0)`). `iota_per_program` below is that program word for word: one block of one
thread per element. It is correct, and a fine way to learn what `program_id` means, but on a GPU
it wastes 31 of the 32 lanes of every warp and launches one block per element.

`iota` is how to write it for speed: 256 threads per block, each writing four consecutive
elements with one 128-bit vector store, in a grid-stride loop so that a grid sized for the
machine (a few blocks per SM) covers any length.

The length is a `Const[int]` parameter, as the tutorial's `iota(size)` is a Python function of
it: the call passes only `size`, and `o`, the output, is made by the runtime from `out_shape`.

`python examples/iota.py [--size N]` checks both against jax.numpy.
"""
import argparse

import jax
import jax.numpy as jnp
import numpy as np

import ptxpy
from ptxpy import Array, Const, i32

BLOCK = 256
VEC = 4
MAX_BLOCKS = 132 * 8     # enough blocks to fill an H100 (132 SMs); more adds nothing


@ptxpy.jit(out_shape=lambda size: jax.ShapeDtypeStruct((size,), jnp.int32),
           grid=lambda size: (size,), block=1)
def iota_per_program(size: Const[int], o: Array[i32]):
    # The Pallas kernel: program i writes element i.
    i = ptxpy.program_id(0)
    o[i] = i


def _iota_grid(size):
    return (max(1, min(MAX_BLOCKS, ptxpy.cdiv(size, BLOCK * VEC))),)


@ptxpy.jit(out_shape=lambda size: jax.ShapeDtypeStruct((size,), jnp.int32),
           grid=_iota_grid, block=BLOCK)
def iota(size: Const[int], o: Array[i32]):
    n = size                         # a compile-time constant: one specialisation per length
    stride = ptxpy.num_programs(0) * BLOCK * VEC
    i = ptxpy.global_id(0) * VEC
    # Grid-stride loop over whole groups of four elements.
    while i + VEC <= n:
        o[i:i + VEC] = (i, i + 1, i + 2, i + 3)
        i += stride
    # At most one thread reaches here with a partial group (n not a multiple of 4).
    while i < n:
        o[i] = i
        i += 1


def main(size: int | None = None) -> None:
    if size is None:
        size = 1 << 26 if jax.default_backend() == "gpu" else 1_000_003
    # The tutorial's call: iota(8).
    np.testing.assert_array_equal(np.asarray(iota_per_program(8)), np.arange(8))
    np.testing.assert_array_equal(np.asarray(iota(8)), np.arange(8))

    out = jax.jit(iota, static_argnums=0)(size)
    np.testing.assert_array_equal(np.asarray(out), np.asarray(jnp.arange(size, dtype=jnp.int32)))
    small = min(size, 4096)          # one block per element: keep it short
    np.testing.assert_array_equal(np.asarray(iota_per_program(small)), np.arange(small))
    print(f"iota over {size} elements: matches jax.numpy")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=None, help="output length")
    main(parser.parse_args().size)
