"""Kernels that bound what a row kernel at 2048 x 8192 can reach (benchmarks/variants.py, groups
`ceiling` and `rms`): the same bytes as RMS norm or softmax (64 MB read, 64 MB written) with no
arithmetic, laid out as the row kernels are or as a flat vector; and RMS norm with one block
looping over several rows (persistent), optionally loading the next row before reducing the
current one. Rows of exactly 8192 floats (8 float4s per thread of 256)."""
import ptxpy
from ptxpy import Array, Const, f32, i32

BLOCK = 256
WARPS = BLOCK // 32
CACHE = 8           # float4s per thread: 8 * 256 * 4 = 8192 floats, a whole row
COLS = BLOCK * 4 * CACHE


@ptxpy.func
def load_row(x: Array[f32, 2], row: i32, vals: Array[f32]):
    """This thread's CACHE float4s of row `row` into `vals` (registers: constant indices)."""
    t = ptxpy.thread_idx.x
    for k in ptxpy.static_range(CACHE):
        j = (k * BLOCK + t) * 4
        a, b, c, d = x[row, j:j + 4]
        vals[4 * k] = a
        vals[4 * k + 1] = b
        vals[4 * k + 2] = c
        vals[4 * k + 3] = d


@ptxpy.jit(out_shape=lambda x: x, grid=lambda x: (x.shape[0],), block=BLOCK)
def row_negate(x: Array[f32, 2], out: Array[f32, 2]):
    """out = -x, one row per block, the row read in full into registers before any store: the
    row kernels' memory pattern without their arithmetic or their barrier."""
    row = ptxpy.block_idx.x
    t = ptxpy.thread_idx.x
    vals = ptxpy.local_array(4 * CACHE, f32)
    load_row(x, row, vals)
    for k in ptxpy.static_range(CACHE):
        j = (k * BLOCK + t) * 4
        out[row, j:j + 4] = (-vals[4 * k], -vals[4 * k + 1], -vals[4 * k + 2], -vals[4 * k + 3])


@ptxpy.jit(out_shape=lambda x: x, grid=lambda x: (x.size // (4 * BLOCK),), block=BLOCK)
def flat_negate(x: Array[f32, 2], out: Array[f32, 2]):
    """out = -x as a flat vector, one float4 per thread (the add example's shape)."""
    i = ptxpy.global_id(0) * 4
    cols = x.shape[1]
    row = i // cols
    j = i - row * cols
    a, b, c, d = x[row, j:j + 4]
    out[row, j:j + 4] = (-a, -b, -c, -d)


@ptxpy.func
def block_sum_buffered(v: f32, partial: Array[f32], half: i32) -> f32:
    """The sum of `v` over the block, through half `half` of a 2 * WARPS shared buffer: a loop
    that alternates halves needs one barrier per sum (a warp cannot overwrite a half that a
    slower warp still reads, since it passed a barrier since then that the slower warp had not)."""
    t = ptxpy.thread_idx.x
    v = ptxpy.warp_sum(v)
    if t % 32 == 0:
        partial[half * WARPS + t // 32] = v
    ptxpy.syncthreads()
    lane = t % 32
    v = partial[half * WARPS + lane] if lane < WARPS else 0.0
    return ptxpy.warp_sum(v)


def _programs(x, programs):
    return (min(x.shape[0], programs),)


@ptxpy.jit(out_shape=lambda x, w, eps, PROGRAMS=264, PREFETCH=0: x,
           grid=lambda x, w, eps, PROGRAMS=264, PREFETCH=0: _programs(x, PROGRAMS), block=BLOCK)
def rms_persistent(x: Array[f32, 2], w: Array[f32], eps: f32, out: Array[f32, 2],
                   PROGRAMS: Const[int] = 264, PREFETCH: Const[int] = 0):
    """RMS norm of 8192-float rows, PROGRAMS blocks each looping over rows block, block +
    PROGRAMS, ...; with PREFETCH the next row's loads are issued before this row's sum."""
    rows = x.shape[0]
    t = ptxpy.thread_idx.x
    partial = ptxpy.shared_array(2 * WARPS, f32)
    cur = ptxpy.local_array(4 * CACHE, f32)
    nxt = ptxpy.local_array(4 * CACHE, f32)
    row = ptxpy.block_idx.x
    half = 0
    if PREFETCH > 0:
        load_row(x, row, cur)
    while row < rows:
        following = row + PROGRAMS
        if PREFETCH > 0:
            if following < rows:
                load_row(x, following, nxt)
        else:
            load_row(x, row, cur)
        ss = 0.0
        for k in ptxpy.static_range(4 * CACHE):
            ss = ptxpy.fma(cur[k], cur[k], ss)
        scale = ptxpy.rsqrt(block_sum_buffered(ss, partial, half) * (1.0 / COLS) + eps)
        for k in ptxpy.static_range(CACHE):
            j = (k * BLOCK + t) * 4
            w0, w1, w2, w3 = w[j:j + 4]
            out[row, j:j + 4] = (cur[4 * k] * scale * w0, cur[4 * k + 1] * scale * w1,
                                 cur[4 * k + 2] * scale * w2, cur[4 * k + 3] * scale * w3)
        if PREFETCH > 0:
            for k in ptxpy.static_range(4 * CACHE):
                cur[k] = nxt[k]
        row = following
        half = 1 - half


def rms_norm_persistent(programs: int, prefetch: bool):
    def run(x, w):
        assert x.shape[1] == COLS
        return rms_persistent(x, w, 1e-6, PROGRAMS=programs, PREFETCH=int(prefetch))
    return run
