"""Radix sort of 32-bit keys (u32, i32 or f32) in one sweep per digit: CUB's "Onesweep"
(`DeviceRadixSort::SortKeys` / `SortPairs`; Adinets and Merrill, 2022): `jnp.sort`,
`jnp.argsort` and `jax.lax.sort_key_val` of 1-D vectors.

The keys are sorted by 8-bit digits, lowest first, in four stable passes. A signed or float
key is first mapped to an unsigned one that orders the same way (the sign bit flipped; a
negative float's bits all flipped), in the first pass's loads, and mapped back in the last
pass's stores. Floats order as JAX orders them: -0.0 equal to 0.0, every NaN after +inf and
equal to the others. So the sort returns each -0.0 as 0.0 and each NaN as the canonical NaN;
the argsort's indices are `jnp.argsort`'s.

- `digit_counts` counts every digit of every key once, for all four passes (shared-memory
  histograms, merged with global atomics into zeros made by XLA, as examples/histogram.py does).
  Where a digit's keys start in a pass's output is the sum of the counts of the digits below it.
- `sort_pass` moves the keys by one digit. A block takes the next tile of 4096 keys from a
  counter (`ptxpy.atomic_add`), so the tiles before its own belong to blocks that have started.
  - Each warp ranks its 512 keys, 32 at a time: `ptxpy.match_any_sync` of the digit gives the
    lanes holding the same digit, and a key's rank among them is the bits of those lanes below
    its own (`ptxpy.popc`), plus what the warp counted of that digit before (kept per warp and
    digit in shared memory). So equal digits keep their order: the sort is stable.
  - Thread `d` of the block then handles digit `d` (of BLOCK threads, 256 or more): it adds
    the warps' counts, publishes the tile's count of `d` at once and looks back over the
    earlier tiles' status words for `d`, one at a time, until one holds the sum of its tile and all before it
    (the decoupled look-back of examples/compact.py, by each thread for its own digit). Each
    status word is 64 bits, the flag in the high half and the count in the low, read and
    written with `ptxpy.load_relaxed` / `ptxpy.store_relaxed` on `state.view(u64)`.
  - The tile's keys are gathered by digit in shared memory, then written out in order of their
    place in the tile, so neighbouring threads write neighbouring places of each digit's run.
  - Values (32 bits each) move with their keys the same way. For `radix_argsort` the first
    pass makes them, each key's index, instead of reading them.

Every key is read once by the counts and read and written once per pass. The status words of all
four passes start as zeros made by XLA, passed through `input_output_aliases`.

`python examples/radix_sort.py [--size N]` checks the results against NumPy's `sort` and
stable `argsort` and, on a GPU, times them beside XLA's `jnp.sort` and `jnp.argsort`. On an
H100 (BENCHMARKS.md, session 52) the sort of 2^26 f32 keys took 2.70 ms, 0.92x XLA's
`jnp.sort` (CUB's radix sort); the argsort 3.31 ms, 1.13x faster than `jnp.argsort`, and
`sort_pairs` 3.46 ms, 1.10x faster than `jax.lax.sort_key_val` (the argsort was 15x faster
at 2^28 in session 50, where XLA's leaves its fast path); on an H200, 2.68 / 10.44 ms at
2^26 / 2^28, 0.85x XLA's (session 51). That is about 14 times a copy of the keys, where four
passes move them 4.5 times: the ranking and the look-back bound it (14-21% less time without
the look-back), not memory. Tiles of 8, 12, 20 or 24 keys a thread, blocks of 384 or 512
threads and digit counts made before the ranking were not faster; at most 64 registers a
thread (4 blocks an SM) made the sort 3% faster but the argsort 10% and `sort_pairs` 13%
slower (H100), so the kernels have no register cap.
"""
import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

import ptxpy
from ptxpy import Array, Const, i32, u32, u64

BITS = 8                    # bits of a digit
RADIX = 1 << BITS           # values of a digit
PASSES = 32 // BITS
BLOCK = 256                 # threads of sort_pass: a multiple of 32, RADIX or more (one a digit)
WARPS = BLOCK // 32
ITEMS = 16                  # keys per thread
EARLY = 0                   # 1: publish the tile's digit counts before ranking its keys (no faster)
TILE = BLOCK * ITEMS
AGGREGATE = 1               # a status word's flag: the tile's count of the digit is published ...
PREFIX = 2                  # ... or the count of it in that tile and every tile before it
UNSIGNED, SIGNED, FLOAT = 0, 1, 2     # the kinds of key
NONE, GIVEN, INDEX = 0, 1, 2          # the values moved with the keys: none, given, the indices
COUNT_BLOCKS = 1024         # most blocks of digit_counts (a grid-stride loop covers the rest)
SIGN = 0x80000000           # a float's sign bit
MAGNITUDE = 0x7FFFFFFF      # the other bits
INF = 0x7F800000            # +inf's bits: a float with more in its other bits is a NaN
NAN = 0x7FC00000            # the canonical NaN
DTYPES = {jnp.dtype(jnp.uint32): UNSIGNED, jnp.dtype(jnp.int32): SIGNED,
          jnp.dtype(jnp.float32): FLOAT}


@ptxpy.func
def _to_radix(key: u32, KIND: Const[int]) -> u32:
    """The unsigned key that orders as `key` does in its kind. Floats order as `jnp.sort`
    orders them: -0.0 as 0.0, and every NaN as one value after +inf (so they become 0.0 and
    the canonical NaN)."""
    if KIND == FLOAT:
        if key & u32(MAGNITUDE) > u32(INF):
            key = u32(NAN)
        elif key == u32(SIGN):
            key = u32(0)
        return key ^ (u32(i32(key) >> 31) | u32(SIGN))     # negative: every bit flipped
    elif KIND == SIGNED:
        return key ^ u32(SIGN)
    return key


@ptxpy.func
def _from_radix(key: u32, KIND: Const[int]) -> u32:
    """The key whose `_to_radix` is `key`."""
    if KIND == FLOAT:
        return key ^ (u32(i32(~key) >> 31) | u32(SIGN))
    elif KIND == SIGNED:
        return key ^ u32(SIGN)
    return key


@ptxpy.func
def _digit(key: u32, shift: i32) -> i32:
    return i32((key >> shift) & (RADIX - 1))


@ptxpy.func
def _count_key(hist: Array[i32, 2], key: u32):
    for p in ptxpy.static_range(PASSES):
        ptxpy.atomic_add(hist, (p, _digit(key, BITS * p)), 1)


def _count_grid(keys, zeros, KIND=UNSIGNED):
    return (max(1, min(COUNT_BLOCKS, ptxpy.cdiv(keys.shape[0], RADIX * 4 * 8))),)


@ptxpy.jit(out_shape=lambda keys, zeros, KIND=UNSIGNED: zeros, grid=_count_grid, block=RADIX,
           input_output_aliases={1: 0})
def digit_counts(keys: Array[u32], zeros: Array[i32, 2], counts: Array[i32, 2],
                 KIND: Const[int] = UNSIGNED):
    """counts[p, d] += how many keys have digit d in pass p (`zeros` is `counts`, aliased)."""
    n = keys.shape[0]
    tid = ptxpy.thread_idx.x
    hist = ptxpy.shared_array((PASSES, RADIX), i32)
    for p in ptxpy.static_range(PASSES):
        hist[p, tid] = 0
    ptxpy.syncthreads()
    i = (ptxpy.block_idx.x * RADIX + tid) * 4
    while i < n:
        if i + 4 <= n:
            a, b, c, d = keys[i:i + 4]
            _count_key(hist, _to_radix(a, KIND))
            _count_key(hist, _to_radix(b, KIND))
            _count_key(hist, _to_radix(c, KIND))
            _count_key(hist, _to_radix(d, KIND))
        else:
            for q in ptxpy.static_range(3):
                if i + q < n:
                    _count_key(hist, _to_radix(keys[i + q], KIND))
        i += ptxpy.grid_dim.x * RADIX * 4
    ptxpy.syncthreads()
    for p in ptxpy.static_range(PASSES):
        seen = hist[p, tid]
        if seen != 0:
            ptxpy.atomic_add(counts, (p, tid), seen)


@ptxpy.func
def _exclusive_sum(v: i32, sums: Array[i32]) -> i32:
    """The sum of `v` over the block's earlier threads (every thread calls it; `sums` has a
    place for each warp)."""
    lane = ptxpy.thread_idx.x % 32
    warp = ptxpy.thread_idx.x // 32
    s = ptxpy.warp_cumsum(v)
    if lane == 31:
        sums[warp] = s
    ptxpy.syncthreads()
    before = s - v
    for w in ptxpy.static_range(WARPS):
        if w < warp:
            before += sums[w]
    ptxpy.syncthreads()                     # every thread has read sums: it may be used again
    return before


@ptxpy.func
def _word(flag: i32, value: i32) -> u64:
    """A status word: `flag` in the high half, `value` in the low."""
    return (u64(flag) << 32) | u64(u32(value))


@ptxpy.func
def _publish(words: Array[u64, 2], row0: i32, tile: i32, digit: i32, count: i32):
    """Publish `count`, the tile's keys of `digit` (tile j's word for the digit is
    `words[row0 + j, digit]`): as the prefix itself in tile 0."""
    if tile == 0:
        ptxpy.store_relaxed(words, (row0, digit), _word(PREFIX, count))
    else:
        ptxpy.store_relaxed(words, (row0 + tile, digit), _word(AGGREGATE, count))


@ptxpy.func
def _look_back(words: Array[u64, 2], row0: i32, tile: i32, digit: i32, count: i32) -> i32:
    """How many keys of `digit` the tiles before `tile` have, from their words; then publish
    the prefix of this one (its `count` published already)."""
    if tile == 0:
        return 0
    earlier = 0
    j = tile - 1
    looking = True
    while looking:
        word = ptxpy.load_relaxed(words, (row0 + j, digit))
        while word >> 32 == 0:              # tile j has not published its count yet
            word = ptxpy.load_relaxed(words, (row0 + j, digit))
        earlier += i32(u32(word & 0xFFFFFFFF))
        if word >> 32 == PREFIX:
            looking = False
        else:
            j -= 1
    ptxpy.store_relaxed(words, (row0 + tile, digit), _word(PREFIX, earlier + count))
    return earlier


def _tiles(keys):
    return ptxpy.cdiv(keys.shape[0], TILE)


def _pass_outputs(keys, values, counts, state, p, KIND=UNSIGNED, VALUES=NONE):
    moved_values = jax.ShapeDtypeStruct((keys.shape[0] if VALUES != NONE else 1,), jnp.uint32)
    return [keys, moved_values, state]


@ptxpy.jit(out_shape=_pass_outputs, block=BLOCK, input_output_aliases={3: 2},
           grid=lambda keys, values, counts, state, p, KIND=UNSIGNED, VALUES=NONE: (_tiles(keys),))
def sort_pass(keys: Array[u32], values: Array[u32], counts: Array[i32, 2], state: Array[i32, 2],
              p: i32, out: Array[u32], out_values: Array[u32], status: Array[i32, 2],
              KIND: Const[int] = UNSIGNED, VALUES: Const[int] = NONE):
    """out = keys stably sorted by digit p (the keys of pass 0 mapped by `_to_radix`, those
    written by pass PASSES - 1 mapped back), out_values = the values moved with them (VALUES:
    NONE, then both are one-element placeholders; GIVEN; INDEX, each key's index in `keys`).
    status: zeros on entry (aliased to `state`), the rows of pass p from p * (tiles + 1): a row
    of status words for each tile, then the counter."""
    n = keys.shape[0]
    tiles = ptxpy.cdiv(n, TILE)
    tid = ptxpy.thread_idx.x
    lane = tid % 32
    warp = tid // 32
    row0 = p * (tiles + 1)
    shift = BITS * p
    words = status.view(u64)
    # per warp and digit: the keys the warp has ranked, later where its run starts in the tile
    runs = ptxpy.shared_array((WARPS, RADIX), i32)
    staged = ptxpy.shared_array(TILE, u32)          # the tile's keys in their sorted order
    staged_values = ptxpy.shared_array(TILE if VALUES != NONE else 1, u32)      # and values
    moved = ptxpy.shared_array(RADIX, i32)          # per digit: output place minus tile place
    sums = ptxpy.shared_array(WARPS + 1, i32)
    early = ptxpy.shared_array(RADIX if EARLY else 1, i32)     # the tile's count of each digit
    digit_thread = BLOCK == RADIX or tid < RADIX     # thread d keeps the books of digit d
    if tid == 0:
        sums[WARPS] = ptxpy.atomic_add(status, (row0 + tiles, 0), 1)
    if digit_thread:
        if EARLY:
            early[tid] = 0
        for w in ptxpy.static_range(WARPS):
            runs[w, tid] = 0
    ptxpy.syncthreads()
    tile = sums[WARPS]
    first = tile * TILE + warp * (32 * ITEMS) + lane    # the warp's keys: 32 at a time
    key = ptxpy.local_array(ITEMS, u32)
    value = ptxpy.local_array(ITEMS, u32)
    for q in ptxpy.static_range(ITEMS):
        i = first + 32 * q
        key[q] = u32(0xFFFFFFFF)            # past the end: the largest key, after all others
        if i < n:
            key[q] = keys[i]
            if VALUES == GIVEN:
                value[q] = values[i]
            elif VALUES == INDEX:
                value[q] = u32(i)
    if p == 0:      # after all the loads: computing on a key would wait for it before the next load
        for q in ptxpy.static_range(ITEMS):
            if first + 32 * q < n:
                key[q] = _to_radix(key[q], KIND)

    if EARLY:       # count the tile's digits and publish the counts before ranking
        for q in ptxpy.static_range(ITEMS):
            ptxpy.atomic_add(early, _digit(key[q], shift), 1)
        ptxpy.syncthreads()
        if digit_thread:
            _publish(words, row0, tile, tid, early[tid])

    rank = ptxpy.local_array(ITEMS, i32)    # among the warp's keys of its digit
    lower = ptxpy.lanemask_lt()             # the lanes below this one
    for q in ptxpy.static_range(ITEMS):
        d = _digit(key[q], shift)
        peers = ptxpy.match_any_sync(d)
        below = ptxpy.popc(peers & lower)
        before = runs[warp, d]
        rank[q] = before + below
        ptxpy.syncwarp()                    # every lane has read runs[warp, d] ...
        if below == 0:
            runs[warp, d] = before + ptxpy.popc(peers)
        ptxpy.syncwarp()                    # ... before its lowest lane adds to it
    ptxpy.syncthreads()

    total = 0                               # the tile's keys of digit tid
    in_output = 0                           # the keys of digit tid in the output
    if digit_thread:
        for w in ptxpy.static_range(WARPS):
            c = runs[w, tid]
            runs[w, tid] = total
            total += c
        in_output = counts[p, tid]
        if not EARLY:
            _publish(words, row0, tile, tid, total)     # as soon as it is known
    place = _exclusive_sum(total, sums)     # where digit tid's run starts in the tile
    start = _exclusive_sum(in_output, sums)     # where digit tid's keys start in the output
    if digit_thread:
        for w in ptxpy.static_range(WARPS):
            runs[w, tid] += place
        earlier = _look_back(words, row0, tile, tid, total)
        moved[tid] = start + earlier - place
    ptxpy.syncthreads()
    for q in ptxpy.static_range(ITEMS):
        j = runs[warp, _digit(key[q], shift)] + rank[q]
        staged[j] = key[q]
        if VALUES != NONE:
            staged_values[j] = value[q]
    ptxpy.syncthreads()
    # The padding keys sort last in the tile: its first `valid` places hold its real keys.
    valid = min(TILE, n - tile * TILE)
    for q in ptxpy.static_range(ITEMS):
        j = q * BLOCK + tid
        if j < valid:
            k = staged[j]
            place = moved[_digit(k, shift)] + j
            out[place] = k if p != PASSES - 1 else _from_radix(k, KIND)
            if VALUES != NONE:
                out_values[place] = staged_values[j]


def _sort(x, values, first_values: int):
    """(x sorted, `values` moved with it); first_values: what the first pass moves."""
    kind = DTYPES[jnp.dtype(x.dtype)]
    keys = jax.lax.bitcast_convert_type(x, jnp.uint32)
    counts = digit_counts(keys, jnp.zeros((PASSES, RADIX), jnp.int32), KIND=kind)
    state = jnp.zeros((PASSES * (_tiles(keys) + 1), 2 * RADIX), jnp.int32)
    moving = first_values
    for p in range(PASSES):
        keys, values, state = sort_pass(keys, values, counts, state, p, KIND=kind, VALUES=moving)
        moving = GIVEN if moving != NONE else NONE
    return jax.lax.bitcast_convert_type(keys, x.dtype), values


def radix_sort(x):
    """`jnp.sort(x)` of a 1-D vector of u32, i32 or f32 (each -0.0 comes back as 0.0, each NaN
    as the canonical NaN: `_to_radix`)."""
    if x.shape[0] == 0:
        return x
    return _sort(x, jnp.zeros((1,), jnp.uint32), NONE)[0]


def radix_argsort(x):
    """`jnp.argsort(x)` (stable) of a 1-D vector of u32, i32 or f32, as i32 indices: ties,
    -0.0 and 0.0, and NaNs (last) keep their order, as JAX's."""
    if x.shape[0] == 0:
        return jnp.zeros((0,), jnp.int32)
    return _sort(x, jnp.zeros((1,), jnp.uint32), INDEX)[1].view(jnp.int32)


def sort_pairs(keys, values):
    """(keys sorted, values moved with them: `jax.lax.sort_key_val`, stable) of 1-D vectors of
    u32, i32 or f32 keys and 32-bit values."""
    if keys.shape[0] == 0:
        return keys, values
    moved = _sort(keys, jax.lax.bitcast_convert_type(values, jnp.uint32), GIVEN)
    return moved[0], jax.lax.bitcast_convert_type(moved[1], values.dtype)


def _seconds(f, x) -> float:
    jax.block_until_ready(f(x))
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(10):
            out = f(x)
        jax.block_until_ready(out)
        best = min(best, (time.perf_counter() - start) / 10)
    return best


def _keys(n: int, dtype, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype == np.float32:
        return rng.standard_normal(n, dtype=np.float32) * 1e3
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)


def main(size: int | None = None) -> None:
    on_gpu = jax.default_backend() == "gpu"
    if size is None:
        size = 1 << 26 if on_gpu else 20_011
    f = jax.jit(radix_sort)
    cases = [(size, np.float32), (size, np.uint32), (size, np.int32), (1, np.float32),
             (TILE, np.int32), (TILE + 1, np.uint32), (3 * TILE - 5, np.float32)]
    for n, dtype in cases:
        x = _keys(n, dtype, n)
        np.testing.assert_array_equal(np.asarray(f(x)), np.sort(x))
    odd = np.array([np.nan, 1.0, -np.inf, -0.0, 0.0, np.inf, -np.nan, -1.0, 3.0], np.float32)
    np.testing.assert_array_equal(np.asarray(f(odd)), np.sort(odd))  # NaNs last, as NumPy's
    few = np.random.default_rng(1).integers(0, 3, 3 * TILE + 100).astype(np.uint32) << 9
    np.testing.assert_array_equal(np.asarray(f(few)), np.sort(few))   # a few digits, many ties
    for keys in (few, _keys(size, np.float32, 2), odd):     # stable: ties keep their order
        np.testing.assert_array_equal(np.asarray(jax.jit(radix_argsort)(keys)),
                                      np.argsort(keys, kind="stable"))
    values = np.arange(few.size, dtype=np.float32) * 0.5
    got_keys, got_values = jax.jit(sort_pairs)(few, values)
    order = np.argsort(few, kind="stable")
    np.testing.assert_array_equal(np.asarray(got_keys), few[order])
    np.testing.assert_array_equal(np.asarray(got_values), values[order])
    line = f"radix sort of {size} keys (f32, u32, i32): matches NumPy's sort and stable argsort"
    if on_gpu:
        x = jax.random.normal(jax.random.key(0), (size,), jnp.float32)
        for name, g in (("ptxpy sort", f), ("XLA jnp.sort", jax.jit(jnp.sort)),
                        ("ptxpy argsort", jax.jit(radix_argsort)),
                        ("XLA jnp.argsort", jax.jit(jnp.argsort))):
            seconds = _seconds(g, x)
            line += f"; {name} {seconds * 1e3:.3f} ms ({size / seconds / 1e9:.2f} G keys/s)"
    print(line)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=None, help="number of keys")
    main(parser.parse_args().size)
