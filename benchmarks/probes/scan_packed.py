"""examples/scan_single_pass.py with each tile's status in one 64-bit word (flag in the high half,
sum in the low) through `state.view(u64)`, written with `ptxpy.store_relaxed` and read with
`ptxpy.load_relaxed`: the look-back's flag and sum arrive in one load, with no acquire or
release fences (CUB's layout for 4-byte values), the look-back in a device function
(`_look_back`, as examples/compact.py has it). The state is (tiles + 1, 2) i32 zeros, the tile
counter in its last row. Correct in the simulator; not yet timed on a GPU:

    python benchmarks/probes/scan_probe.py --sizes 26 28 --only example --source benchmarks/probes/scan_packed.py
"""
import jax
import jax.numpy as jnp
import numpy as np

import ptxpy
from ptxpy import Array, i32, u32, u64

BLOCK = 256
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


if __name__ == "__main__":      # a check against jnp.cumsum (in the simulator without a GPU)
    for n in (1, 1000, TILE + 1, 33 * TILE + 7):
        x = jax.random.randint(jax.random.key(n), (n,), -100, 100, jnp.int32)
        np.testing.assert_array_equal(np.asarray(jax.jit(cumsum)(x)), np.asarray(jnp.cumsum(x)))
    print("scan_packed: matches jnp.cumsum")
