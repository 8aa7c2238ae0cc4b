"""Histogram of bytes (256 bins) with shared-memory privatisation.

Every block first counts into its own histogram in shared memory, where atomics are cheap and
contention is spread over 256 bins per block; at the end it adds its non-zero bins to the
global histogram with one global atomic each. (Global atomics for every byte would serialise
every thread that hits a popular bin on one memory location.)

The bytes are read as 32-bit words, four words (16 bytes) per 128-bit load; shifts and masks
take the bytes apart. The block count is sized for the machine and each thread walks the data
in a grid-stride loop, so the per-block merge is paid ~1000 times, not once per 4 KB.

The global histogram starts as zeros passed by the caller and aliased to the output
(`input_output_aliases={2: 0}`, as in `pallas_call`): the kernel's global atomics add to it.

`python examples/histogram.py [--size N]` checks the counts against jnp.bincount.
"""
import argparse

import jax
import jax.numpy as jnp
import numpy as np

import ptxpy
from ptxpy import Array, i32, u32

BINS = 256
BLOCK = 256
MAX_BLOCKS = 1024


def _grid(words, n, zeros):
    return (max(1, min(MAX_BLOCKS, ptxpy.cdiv(words.shape[0], BLOCK * 4 * 8))),)


@ptxpy.func
def count_word(hist: Array[i32], w: u32, first: i32, n: i32):
    """Count the bytes of word `w`, whose first byte has index `first`, that are below n."""
    for k in ptxpy.static_range(4):
        if first + k < n:
            ptxpy.atomic_add(hist, i32((w >> (8 * k)) & 0xFF), 1)


@ptxpy.jit(out_shape=lambda words, n, zeros: zeros, grid=_grid, block=BLOCK,
           input_output_aliases={2: 0})
def histogram(words: Array[u32], n: i32, zeros: Array[i32], counts: Array[i32]):
    # `zeros` is the same buffer as `counts` (aliased): it is only there to be written through.
    hist = ptxpy.shared_array(BINS, i32)
    t = ptxpy.thread_idx.x
    for b in range(t, BINS, BLOCK):          # shared memory is not zeroed on the GPU
        hist[b] = 0
    ptxpy.syncthreads()

    # Grid-stride loop over groups of 4 words (16 bytes).
    i = (ptxpy.block_idx.x * BLOCK + t) * 4
    stride = ptxpy.grid_dim.x * BLOCK * 4
    while i < words.shape[0]:                # words.shape[0] is a multiple of 4
        w0, w1, w2, w3 = words[i:i + 4]
        if 4 * i + 16 <= n:                  # all 16 bytes are data
            for k in ptxpy.static_range(4):      # k is a weak constant: 32-bit shifts
                ptxpy.atomic_add(hist, i32((w0 >> (8 * k)) & 0xFF), 1)
                ptxpy.atomic_add(hist, i32((w1 >> (8 * k)) & 0xFF), 1)
                ptxpy.atomic_add(hist, i32((w2 >> (8 * k)) & 0xFF), 1)
                ptxpy.atomic_add(hist, i32((w3 >> (8 * k)) & 0xFF), 1)
        else:                                # the last group: skip the padding bytes
            count_word(hist, w0, 4 * i, n)
            count_word(hist, w1, 4 * i + 4, n)
            count_word(hist, w2, 4 * i + 8, n)
            count_word(hist, w3, 4 * i + 12, n)
        i += stride
    ptxpy.syncthreads()

    # Merge this block's histogram into the global one.
    for b in range(t, BINS, BLOCK):
        c = hist[b]
        if c != 0:
            ptxpy.atomic_add(counts, b, c)


def byte_histogram(data):
    """256-bin histogram of a uint8 array (any length)."""
    n = data.shape[0]
    padded = jnp.pad(data, (0, -n % 16))                 # whole 16-byte groups
    words = jax.lax.bitcast_convert_type(padded.reshape(-1, 4), jnp.uint32)
    return histogram(words, n, jnp.zeros(BINS, jnp.int32))


def main(size: int | None = None) -> None:
    if size is None:
        size = 1 << 28 if jax.default_backend() == "gpu" else 1_000_003
    f = jax.jit(byte_histogram)
    for n in (size, 1, 37):
        # Skewed data (many zeros and small values), as real data tends to be.
        key = jax.random.key(n)
        data = jnp.minimum(jax.random.exponential(key, (n,)) * 40, 255).astype(jnp.uint8)
        want = jnp.bincount(data, length=BINS)
        np.testing.assert_array_equal(np.asarray(f(data)), np.asarray(want))
    print(f"histogram of {size} bytes: matches jnp.bincount")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=None, help="number of bytes")
    main(parser.parse_args().size)
