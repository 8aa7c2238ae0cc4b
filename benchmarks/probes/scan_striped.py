"""examples/scan_single_pass.py with coalesced loads and stores: a thread's 16 elements of a
tile are 4 runs of 4 (one 16-byte access each) at a stride of 4 * BLOCK elements, so a warp's
access covers 512 neighbouring bytes, where the example's thread reads 16 neighbouring
elements and a warp's access spans 2 KB at a 64-byte stride. Each run is scanned as the
example scans its thread's elements, the warp scans take the four runs' totals together, and
one barrier gives every thread the block's totals for each run. The look-back is the
example's of session 48 (flag and sum in two words, `store_release` / `load_acquire`; a copy:
a kernel cannot import another file's). On an H100 (BENCHMARKS.md, session 50) it ran at 1.56 /
1.65 TB/s at 2^26 / 2^28, against 1.40 / 1.50 for that example and 1.60 / 1.70 for the
one-word status words the example has now: the coalescing gained a little, the status word
more. `python benchmarks/probes/scan_probe.py --source benchmarks/probes/scan_striped.py`.
"""
import argparse

import jax
import jax.numpy as jnp
import numpy as np

import ptxpy
from ptxpy import Array, i32

BLOCK = 256
ITEMS = 16                  # elements per thread: 4 in each of the tile's SEGMENTS
SEGMENTS = ITEMS // 4       # a tile is SEGMENTS runs of 4 * BLOCK elements, 16 bytes a thread
TILE = BLOCK * ITEMS
WARPS = BLOCK // 32
AGGREGATE = 1               # a tile's flag: its total is published ...
PREFIX = 2                  # ... or the sum of it and every tile before it
COUNTER = 3                 # the row of `state` whose first element hands out tile numbers
IN_START_ORDER = 1          # tiles handed out by the counter (1) or by block index (0)


def _tiles(x):
    return ptxpy.cdiv(x.shape[0], TILE)


@ptxpy.jit(out_shape=lambda x, state: [x, state], grid=lambda x, state: (_tiles(x),),
           block=BLOCK, input_output_aliases={1: 1})
def scan_kernel(x: Array[i32], zeros: Array[i32, 2], y: Array[i32], state: Array[i32, 2]):
    """y = cumsum(x); state (4, tiles), zeros on entry: row 0 the tiles' flags, rows
    AGGREGATE and PREFIX their published sums, state[COUNTER, 0] the next tile number."""
    n = x.shape[0]
    t = ptxpy.thread_idx.x
    lane = t % 32
    warp = t // 32
    totals = ptxpy.shared_array(SEGMENTS * WARPS + 2, i32)  # warp totals, the tile, the earlier sum
    tile = ptxpy.block_idx.x
    if IN_START_ORDER:
        if t == 0:
            totals[SEGMENTS * WARPS] = ptxpy.atomic_add(state, (COUNTER, 0), 1)
        ptxpy.syncthreads()
        tile = totals[SEGMENTS * WARPS]
    first = tile * TILE + 4 * t             # element e of segment q: first + 4 * BLOCK * q + e
    whole = tile * TILE + TILE <= n
    v = ptxpy.local_array(ITEMS, i32)       # this thread's 4 elements of each segment, scanned
    for q in ptxpy.static_range(SEGMENTS):
        j = first + 4 * BLOCK * q
        if whole:
            a, b, c, d = x[j:j + 4]
        else:
            a = x[j] if j < n else 0
            b = x[j + 1] if j + 1 < n else 0
            c = x[j + 2] if j + 2 < n else 0
            d = x[j + 3] if j + 3 < n else 0
        v[4 * q] = a
        v[4 * q + 1] = a + b
        v[4 * q + 2] = a + b + c
        v[4 * q + 3] = a + b + c + d
    scanned = ptxpy.local_array(SEGMENTS, i32)  # inclusive scans over the warp, per segment
    for q in ptxpy.static_range(SEGMENTS):
        s = v[4 * q + 3]
        for k in ptxpy.static_range(5):
            up = ptxpy.shfl_up_sync(s, 1 << k)
            if lane >= 1 << k:
                s += up
        scanned[q] = s
        if lane == 31:
            totals[q * WARPS + warp] = s
    ptxpy.syncthreads()
    before = ptxpy.local_array(SEGMENTS, i32)   # what comes before each segment's 4 elements
    aggregate = 0                           # the tile's total so far
    for q in ptxpy.static_range(SEGMENTS):
        before[q] = aggregate + scanned[q] - v[4 * q + 3]
        for w in ptxpy.static_range(WARPS):
            total = totals[q * WARPS + w]
            if w < warp:
                before[q] += total
            aggregate += total
    if warp == 0:
        earlier = 0                         # the sum of every tile before this one
        if tile == 0:
            if lane == 0:
                state[PREFIX, 0] = aggregate
                ptxpy.store_release(state, (0, 0), PREFIX)
        else:
            if lane == 0:
                state[AGGREGATE, tile] = aggregate
                ptxpy.store_release(state, (0, tile), AGGREGATE)
            back = tile - 1 - lane          # lane 0 looks at the nearest earlier tile
            looking = True
            while looking:
                flag = PREFIX               # before tile 0: a prefix of 0
                if back >= 0:
                    flag = ptxpy.load_acquire(state, (0, back))
                while ptxpy.any_sync(flag == 0):
                    if flag == 0:
                        flag = ptxpy.load_acquire(state, (0, back))
                value = 0
                if back >= 0:
                    value = state[flag, back]   # row AGGREGATE or PREFIX, as the flag says
                prefixes = ptxpy.ballot_sync(flag == PREFIX)
                if prefixes != 0:           # the nearest tile with a prefix ends the look-back
                    nearest = ptxpy.ffs(prefixes) - 1
                    earlier += ptxpy.warp_sum(value if lane <= nearest else 0)
                    looking = False
                else:
                    earlier += ptxpy.warp_sum(value)
                    back -= 32
            if lane == 0:
                state[PREFIX, tile] = earlier + aggregate
                ptxpy.store_release(state, (0, tile), PREFIX)
        if lane == 0:
            totals[SEGMENTS * WARPS + 1] = earlier
    ptxpy.syncthreads()
    earlier = totals[SEGMENTS * WARPS + 1]
    for q in ptxpy.static_range(SEGMENTS):
        j = first + 4 * BLOCK * q
        add = earlier + before[q]
        if whole:
            y[j:j + 4] = (add + v[4 * q], add + v[4 * q + 1], add + v[4 * q + 2],
                          add + v[4 * q + 3])
        else:
            for e in ptxpy.static_range(4):
                if j + e < n:
                    y[j + e] = add + v[4 * q + e]


def cumsum(x):
    """The inclusive prefix sum of an i32 vector (wrapping as jnp.cumsum's does)."""
    y, _ = scan_kernel(x, jnp.zeros((4, _tiles(x)), jnp.int32))
    return y


def main(size: int | None = None) -> None:
    on_gpu = jax.default_backend() == "gpu"
    if size is None:
        size = 1 << 26 if on_gpu else 100_003
    f = jax.jit(cumsum)
    for n in (size, 1, 1000, TILE, TILE + 1, 33 * TILE + 7):
        x = jax.random.randint(jax.random.key(n), (n,), -100, 100, jnp.int32)
        np.testing.assert_array_equal(np.asarray(f(x)), np.asarray(jnp.cumsum(x)))
    print(f"scan_striped of {size} i32 elements: matches jnp.cumsum")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=None, help="vector length")
    main(parser.parse_args().size)
