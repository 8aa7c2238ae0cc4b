"""Inclusive prefix sum of an i32 vector in one pass: a "decoupled look-back" scan (Merrill and
Garland, 2016, as CUB's `DeviceScan` does it).

examples/prefix_scan.py reads every element twice and writes it twice (a scan of each tile,
then the tiles' offsets added). Here each block scans one tile of 8192 elements and finds
the sum of all earlier tiles from what the earlier blocks have published, so every element
is read once and written once:

- a block takes the next tile number from a counter (`ptxpy.atomic_add`), so the tiles
  before its own belong to blocks that have already started: waiting on them cannot deadlock;
- it scans its tile in registers (16 elements a thread, four 16-byte loads), the warp totals
  with `ptxpy.warp_cumsum`, the block's through shared memory, and publishes the tile's total
  at once, as the status word `AGGREGATE << 32 | total`: each tile's status is one 64-bit
  word, written with `ptxpy.store_relaxed` and read with `ptxpy.load_relaxed` on
  `state.view(u64)`, so the flag and the sum travel in one store and one load and need no
  fence, acquire or release between them (CUB's layout for 4-byte values);
- warp 0 then looks back over the 32 tiles before its own, a lane each (`_look_back`): it
  waits until every lane's word is set, and adds the sums of the tiles from its own back to
  the nearest one whose flag says `PREFIX` (that tile's inclusive prefix is known, so the
  look-back stops there), else adds all 32 and looks at the 32 tiles before those;
- it publishes its own inclusive prefix (flag `PREFIX`) and every thread adds the earlier
  tiles' sum to its scanned elements.

The status words (and the tile counter, in the last row) start as zeros made by XLA,
`input_output_aliases` passing them in as the state output's buffer (as examples/histogram.py
does for its counts). `IN_START_ORDER = 0` numbers the tiles by block index instead, as CUB
does (the GPU starts blocks in that order), which saves the counter's atomic but relies on
that order.

On an H100 it ran at 1.65-1.74 TB/s (one read and one write) at 2^26-2^28 elements, 1.46x-1.49x
`jnp.cumsum` and 1.14x-1.16x prefix_scan.py's three kernels, which move twice the bytes
(BENCHMARKS.md, session 51; 2-4% faster with 512 threads a block than with 256). With the flag
and the sum in two words, published with `store_release` and read with `load_acquire`, it ran
at 1.40-1.50: the look-back's chain of memory latencies bounds it, not memory, and one load per
look-back step instead of two shortens it.

`python examples/scan_single_pass.py [--size N]` checks the result against `jnp.cumsum` and, on
a GPU, times it beside prefix_scan.py's three-kernel scan and XLA's `jnp.cumsum`.
"""
import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

import ptxpy
from ptxpy import Array, i32, u32, u64

BLOCK = 512
ITEMS = 16                  # elements per thread, consecutive
TILE = BLOCK * ITEMS
WARPS = BLOCK // 32
AGGREGATE = 1               # a tile's flag: its total is published ...
PREFIX = 2                  # ... or the sum of it and every tile before it
IN_START_ORDER = 1          # tiles handed out by the counter (1) or by block index (0)


def _tiles(x):
    return ptxpy.cdiv(x.shape[0], TILE)


@ptxpy.func
def _word(flag: i32, value: i32) -> u64:
    """A tile's status word: `flag` in the high half, `value` in the low."""
    return (u64(flag) << 32) | u64(u32(value))


@ptxpy.func
def _look_back(words: Array[u64, 2], tile: i32, aggregate: i32) -> i32:
    """Run by warp 0 of the block of `tile`: publish the tile's `aggregate`, find the sum of
    every earlier tile's from their status words (`words[j, 0]` for tile j), publish the
    tile's inclusive prefix, and return the earlier tiles' sum."""
    lane = ptxpy.lane_id()
    if tile == 0:
        if lane == 0:
            ptxpy.store_relaxed(words, (0, 0), _word(PREFIX, aggregate))
        return 0
    if lane == 0:
        ptxpy.store_relaxed(words, (tile, 0), _word(AGGREGATE, aggregate))
    earlier = 0
    j = tile - 1 - lane                     # lane 0 looks at the nearest earlier tile
    looking = True
    while looking:
        word = u64(PREFIX) << 32            # before tile 0: a prefix of 0
        if j >= 0:
            word = ptxpy.load_relaxed(words, (j, 0))
        while ptxpy.any_sync(word >> 32 == 0):
            if word >> 32 == 0:
                word = ptxpy.load_relaxed(words, (j, 0))
        value = i32(u32(word & 0xFFFFFFFF))
        prefixes = ptxpy.ballot_sync(word >> 32 == PREFIX)
        if prefixes != 0:                   # the nearest tile with a prefix ends the look-back
            nearest = ptxpy.ffs(prefixes) - 1
            earlier += ptxpy.warp_sum(value if lane <= nearest else 0)
            looking = False
        else:
            earlier += ptxpy.warp_sum(value)
            j -= 32
    if lane == 0:
        ptxpy.store_relaxed(words, (tile, 0), _word(PREFIX, earlier + aggregate))
    return earlier


@ptxpy.jit(out_shape=lambda x, state: [x, state], grid=lambda x, state: (_tiles(x),),
           block=BLOCK, input_output_aliases={1: 1})
def scan_kernel(x: Array[i32], zeros: Array[i32, 2], y: Array[i32], state: Array[i32, 2]):
    """y = cumsum(x); state (tiles + 1, 2), zeros on entry: row k the status word of tile k (a
    u64: the flag in the high half, the published sum in the low), state[tiles, 0] the next
    tile number."""
    n = x.shape[0]
    t = ptxpy.thread_idx.x
    lane = t % 32
    warp = t // 32
    words = state.view(u64)
    shared = ptxpy.shared_array(WARPS + 2, i32)     # warp totals, the tile, the earlier tiles' sum
    tile = ptxpy.block_idx.x
    if IN_START_ORDER:
        if t == 0:
            shared[WARPS] = ptxpy.atomic_add(state, (state.shape[0] - 1, 0), 1)
        ptxpy.syncthreads()
        tile = shared[WARPS]
    i = tile * TILE + t * ITEMS
    v = ptxpy.local_array(ITEMS, i32)
    if i + ITEMS <= n:
        for q in ptxpy.static_range(0, ITEMS, 4):
            a, b, c, d = x[i + q:i + q + 4]
            v[q] = a
            v[q + 1] = b
            v[q + 2] = c
            v[q + 3] = d
    else:
        for q in ptxpy.static_range(ITEMS):
            v[q] = x[i + q] if i + q < n else 0
    for q in ptxpy.static_range(1, ITEMS):
        v[q] += v[q - 1]
    total = v[ITEMS - 1]                    # this thread's
    s = ptxpy.warp_cumsum(total)            # inclusive scan of the warp's totals
    if lane == 31:
        shared[warp] = s
    ptxpy.syncthreads()
    before = s - total                      # the earlier threads' of this block
    aggregate = 0                           # the tile's total
    for w in ptxpy.static_range(WARPS):
        if w < warp:
            before += shared[w]
        aggregate += shared[w]
    if warp == 0:
        earlier = _look_back(words, tile, aggregate)
        if lane == 0:
            shared[WARPS + 1] = earlier
    ptxpy.syncthreads()
    before += shared[WARPS + 1]
    if i + ITEMS <= n:
        for q in ptxpy.static_range(0, ITEMS, 4):
            y[i + q:i + q + 4] = (before + v[q], before + v[q + 1], before + v[q + 2],
                                  before + v[q + 3])
    else:
        for q in ptxpy.static_range(ITEMS):
            if i + q < n:
                y[i + q] = before + v[q]


def cumsum(x):
    """The inclusive prefix sum of an i32 vector (wrapping as jnp.cumsum's does)."""
    y, _ = scan_kernel(x, jnp.zeros((_tiles(x) + 1, 2), jnp.int32))
    return y


def _seconds(f, x) -> float:
    f(x).block_until_ready()
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(20):
            out = f(x)
        out.block_until_ready()
        best = min(best, (time.perf_counter() - start) / 20)
    return best


def main(size: int | None = None) -> None:
    on_gpu = jax.default_backend() == "gpu"
    if size is None:
        size = 1 << 26 if on_gpu else 100_003
    f = jax.jit(cumsum)
    for n in (size, 1, 1000, TILE, TILE + 1, 33 * TILE + 7):
        x = jax.random.randint(jax.random.key(n), (n,), -100, 100, jnp.int32)
        np.testing.assert_array_equal(np.asarray(f(x)), np.asarray(jnp.cumsum(x)))
    line = f"scan_single_pass of {size} i32 elements: matches jnp.cumsum"
    if on_gpu:
        import prefix_scan
        x = jax.random.randint(jax.random.key(0), (size,), -100, 100, jnp.int32)
        moved = 2 * 4 * size            # bytes read and written once
        for name, g in (("ptxpy single pass", f), ("prefix_scan.py (three kernels)",
                                                   jax.jit(prefix_scan.cumsum)),
                        ("XLA jnp.cumsum", jax.jit(jnp.cumsum))):
            seconds = _seconds(g, x)
            line += f"; {name} {seconds * 1e6:.1f} us ({moved / seconds / 1e12:.2f} TB/s)"
    print(line)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=None, help="vector length")
    main(parser.parse_args().size)
