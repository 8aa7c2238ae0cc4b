"""The GPU language of SPEC 2.3-2.5 end to end: shared and local memory, warps, atomics, vector
access, half precision. Source -> PTX -> ptxas (sm_80, sm_90) -> simulator, against NumPy.

`PTXPY_TEST_DEVICE=gpu` runs the same kernels on a real GPU (see kernel_harness.py).
"""
import re

import ml_dtypes
import numpy as np
import pytest

from kernel_harness import Out, compile_source, run
from ptxpy.transpiler.errors import CompileError

HEADER = """
import math
import ptxpy
from ptxpy import Array, Const, bf16, f16, f32, f64, i8, i16, i32, i64, u8, u16, u32, u64
"""

rng = np.random.default_rng(2026)
BF16 = ml_dtypes.bfloat16


def src(body: str) -> str:
    return HEADER + body


def body_of(ptx: str) -> str:
    return ptx[ptx.index("{"):]


# --- shared memory -------------------------------------------------------------------------
def test_shared_block_reduction_tree():
    source = src("""
@ptxpy.jit
def block_sum(x: Array[f32], out: Array[f32]):
    s = ptxpy.shared_array(256, f32)
    t = ptxpy.thread_idx.x
    s[t] = x[ptxpy.global_id(0)]
    ptxpy.syncthreads()
    k = 128
    while k > 0:
        if t < k:
            s[t] += s[t + k]
        ptxpy.syncthreads()
        k //= 2
    if t == 0:
        out[ptxpy.block_idx.x] = s[0]
""")
    x = rng.integers(-50, 50, 1024).astype(np.float32)   # integers: the sum is exact in any order
    (out,) = run(source, "block_sum", [x, Out(4, np.float32)], grid=4, block=256)
    np.testing.assert_array_equal(out, x.reshape(4, 256).sum(axis=1))


def test_arrays_with_non_ascii_names_get_ascii_ptx_symbols():
    """Python allows `puffer_ä`; PTX names are ASCII, so the array's symbol spells é as _xe9."""
    source = src("""
@ptxpy.jit
def reverse(x: Array[f32], out: Array[f32]):
    puffer_ä = ptxpy.shared_array(32, f32)
    lokal_é = ptxpy.local_array(2, f32)
    t = ptxpy.thread_idx.x
    lokal_é[t & 1] = x[t]
    puffer_ä[t] = lokal_é[t & 1] + x[t]
    ptxpy.syncthreads()
    out[t] = puffer_ä[31 - t]
""")
    assert "smem_puffer__xe4" in compile_source(source, "reverse").ptx
    x = np.arange(32, dtype=np.float32)
    (out,) = run(source, "reverse", [x, Out(32, np.float32)], grid=1, block=32)
    np.testing.assert_array_equal(out, (2 * x)[::-1])


def test_shared_2d_tile_transpose_with_padding():
    source = src("""
T = 8

@ptxpy.jit
def transpose(x: Array[f32, 2], out: Array[f32, 2]):
    tile = ptxpy.shared_array((T, T + 1), f32)
    tx = ptxpy.thread_idx.x
    ty = ptxpy.thread_idx.y
    r = ptxpy.block_idx.y * T + ty
    c = ptxpy.block_idx.x * T + tx
    if r < x.shape[0] and c < x.shape[1]:
        tile[ty, tx] = x[r, c]
    ptxpy.syncthreads()
    r2 = ptxpy.block_idx.x * T + ty
    c2 = ptxpy.block_idx.y * T + tx
    if r2 < out.shape[0] and c2 < out.shape[1]:
        out[r2, c2] = tile[tx, ty]
""")
    x = rng.standard_normal((20, 13)).astype(np.float32)
    (out,) = run(source, "transpose", [x, Out((13, 20), np.float32)], grid=(2, 3), block=(8, 8))
    np.testing.assert_array_equal(out, x.T)


def test_several_shared_arrays_of_mixed_types_are_aligned():
    # an i8 array first, then f64 and f16 ones: each must be aligned for its own type
    # (the simulator and ptxas reject misaligned accesses)
    source = src("""
@ptxpy.jit
def mixed(a: Array[i8], b: Array[f64], c: Array[f16], out: Array[f64]):
    s8 = ptxpy.shared_array(3, i8)
    s64 = ptxpy.shared_array((2, 32), f64)
    s16 = ptxpy.shared_array(33, f16)
    t = ptxpy.thread_idx.x
    if t < 3:
        s8[t] = a[t]
    s64[0, t] = b[t]
    s64[1, t] = b[t] * 2.0
    s16[t] = c[t]
    ptxpy.syncthreads()
    out[t] = f64(s8[t % 3]) + s64[1, 31 - t] + f64(s16[(t + 1) % 32])
""")
    a = np.array([5, -7, 100], np.int8)
    b = rng.standard_normal(32)
    c = rng.standard_normal(32).astype(np.float16)
    (out,) = run(source, "mixed", [a, b, c, Out(32, np.float64)], grid=1, block=32)
    t = np.arange(32)
    expect = a[t % 3].astype(np.float64) + (b * 2.0)[31 - t] + c[(t + 1) % 32].astype(np.float64)
    np.testing.assert_array_equal(out, expect)
    ptx = compile_source(source, "mixed").ptx
    aligns = {name: int(a) for a, name in re.findall(r"\.shared \.align (\d+) \.b8 (\w+)\[", ptx)}
    assert aligns["smem_s64"] >= 8 and aligns["smem_s16"] >= 2 and len(aligns) == 3


# --- local arrays --------------------------------------------------------------------------
LOCAL = """
@ptxpy.jit
def local(x: Array[f32], k: i32, out: Array[f32]):
    i = ptxpy.global_id(0)
    r = ptxpy.local_array(4, f32)
    for j in ptxpy.static_range(4):
        r[j] = x[i] * f32(j + 1)
    {dynamic}
    out[i] = r[0] + r[1] * 10.0 + r[2] * 100.0 + r[3] * 1000.0
"""


def test_local_array_with_static_indices_lives_in_registers():
    source = src(LOCAL.format(dynamic="pass"))
    x = rng.integers(-9, 9, 64).astype(np.float32)
    (out,) = run(source, "local", [x, np.int32(0), Out(64, np.float32)], grid=2, block=32)
    np.testing.assert_array_equal(out, x * 4321)
    ptx = compile_source(source, "local").ptx
    assert ".local" not in ptx and "ld.local" not in ptx


def test_local_array_with_a_runtime_index_lives_in_local_memory():
    source = src(LOCAL.format(dynamic="r[(i + k) % 4] = -1.0"))
    x = rng.integers(-9, 9, 64).astype(np.float32)
    (out,) = run(source, "local", [x, np.int32(1), Out(64, np.float32)], grid=2, block=32)
    slots = x[:, None] * np.arange(1, 5, dtype=np.float32)
    slots[np.arange(64), (np.arange(64) + 1) % 4] = -1
    np.testing.assert_array_equal(out, slots @ np.array([1, 10, 100, 1000], np.float32))
    assert "st.local" in compile_source(source, "local").ptx


# --- warps ---------------------------------------------------------------------------------
SHUFFLES = """
@ptxpy.jit
def shuffles(x: Array[{t}], lanes: Array[i32], idx: Array[{t}], up: Array[{t}], down: Array[{t}],
             bfly: Array[{t}]):
    i = ptxpy.global_id(0)
    v = x[i]
    idx[i] = ptxpy.shfl_sync(v, lanes[i])
    up[i] = ptxpy.shfl_up_sync(v, 3)
    down[i] = ptxpy.shfl_down_sync(v, 5)
    bfly[i] = ptxpy.shfl_xor_sync(v, 6)
"""


def _warp_reference(x, lanes):
    n = len(x)
    out = {k: np.empty_like(x) for k in ("idx", "up", "down", "bfly")}
    for i in range(n):
        base, lane = i - i % 32, i % 32
        src_lane = lanes[i] % 32        # shfl.idx takes the lane modulo the width
        out["idx"][i] = x[base + src_lane]
        out["up"][i] = x[i - 3] if lane >= 3 else x[i]
        out["down"][i] = x[i + 5] if lane + 5 < 32 else x[i]
        out["bfly"][i] = x[base + (lane ^ 6)]
    return out


@pytest.mark.parametrize("t,dtype", [("i32", np.int32), ("f32", np.float32), ("i64", np.int64),
                                     ("f64", np.float64), ("f16", np.float16), ("bf16", BF16),
                                     ("u8", np.uint8)])
def test_shuffles_of_every_width(t, dtype):
    source = src(SHUFFLES.format(t=t))
    x = (rng.standard_normal(64) * 100).astype(dtype)
    lanes = rng.integers(0, 64, 64).astype(np.int32)
    outs = run(source, "shuffles", [x, lanes] + [Out(64, dtype) for _ in range(4)], grid=1, block=64)
    expect = _warp_reference(x, lanes)
    for name, got in zip(("idx", "up", "down", "bfly"), outs):
        np.testing.assert_array_equal(got, expect[name], err_msg=name)


def test_votes_and_warp_reductions():
    source = src("""
@ptxpy.jit
def votes(x: Array[i32], f: Array[f64], ballot: Array[u32], anyp: Array[i32], allp: Array[i32],
          s: Array[i32], mx: Array[i32], mn: Array[i32], fs: Array[f64], lane: Array[i32],
          warp: Array[i32]):
    i = ptxpy.global_id(0)
    ballot[i] = ptxpy.ballot_sync(x[i] > 0)
    anyp[i] = i32(ptxpy.any_sync(x[i] > 40))
    allp[i] = i32(ptxpy.all_sync(x[i] > -50))
    s[i] = ptxpy.warp_sum(x[i])
    mx[i] = ptxpy.warp_max(x[i])
    mn[i] = ptxpy.warp_min(x[i])
    fs[i] = ptxpy.warp_sum(f[i])
    lane[i] = ptxpy.lane_id()
    warp[i] = ptxpy.warp_id()
""")
    x = rng.integers(-50, 50, 96).astype(np.int32)
    x[64:] = np.abs(x[64:]) % 40      # the third warp: nothing above 40
    f = rng.integers(-1000, 1000, 96) / 8.0
    outs = run(source, "votes", [x, f, Out(96, np.uint32)] + [Out(96, np.int32)] * 5
               + [Out(96, np.float64), Out(96, np.int32), Out(96, np.int32)], grid=1, block=96)
    ballot, anyp, allp, s, mx, mn, fs, lane, warp = outs
    w = x.reshape(3, 32)
    bits = (w > 0).astype(np.uint64) << np.arange(32, dtype=np.uint64)
    np.testing.assert_array_equal(ballot, np.repeat(bits.sum(axis=1), 32).astype(np.uint32))
    np.testing.assert_array_equal(anyp, np.repeat((w > 40).any(axis=1), 32))
    np.testing.assert_array_equal(allp, np.repeat((w > -50).all(axis=1), 32))
    np.testing.assert_array_equal(s, np.repeat(w.sum(axis=1), 32))
    np.testing.assert_array_equal(mx, np.repeat(w.max(axis=1), 32))
    np.testing.assert_array_equal(mn, np.repeat(w.min(axis=1), 32))
    np.testing.assert_array_equal(fs, np.repeat(f.reshape(3, 32).sum(axis=1), 32))
    np.testing.assert_array_equal(lane, np.arange(96) % 32)
    np.testing.assert_array_equal(warp, np.arange(96) // 32)


WARP_REDUCTIONS = """
@ptxpy.jit
def reduce(x: Array[{t}, 2], s: Array[{t}, 2], mx: Array[{t}, 2], mn: Array[{t}, 2]):
    tx = ptxpy.thread_idx.x
    ty = ptxpy.thread_idx.y
    s[ty, tx] = ptxpy.warp_sum(x[ty, tx])
    mx[ty, tx] = ptxpy.warp_max(x[ty, tx])
    mn[ty, tx] = ptxpy.warp_min(x[ty, tx])
"""


def test_a_known_block_compiles_only_the_warp_reduction_it_needs():
    """`whole_warps` (the decorator's, from the call's block): True leaves the butterfly alone,
    False only the reduction over the lanes present; unknown (`ptxpy transpile`), both."""
    from ptxpy.runtime.simulator import run_kernel
    from ptxpy.transpiler import driver

    program = driver.parse(src(WARP_REDUCTIONS.format(t="f32")), "kernels.py")
    kernels = {}
    for whole, shuffles in ((True, (15, 0, 0)), (False, (0, 15, 3)), (None, (15, 15, 3))):
        options = driver.Options("sm_90", whole_warps=whole)
        kernels[whole] = driver.compile_kernel(program, "reduce", None, frozenset(), options).kernel
        counts = [len(re.findall(rf"shfl\.sync\.{mode}\.", kernels[whole].ptx))
                  for mode in ("bfly", "down", "idx")]
        assert tuple(counts) == shuffles, whole
    x = rng.integers(-1000, 1000, (1, 48)).astype(np.float32)    # exact sums in any order
    outs = [np.zeros((1, 48), np.float32) for _ in range(3)]
    run_kernel(kernels[False].ptx, "reduce", grid=1, block=48,
               args=[a for array in [x] + outs for a in (array, 1, 48)])
    for out, reduce in zip(outs, (np.sum, np.max, np.min)):
        expected = [reduce(x[0, :32])] * 32 + [reduce(x[0, 32:])] * 16
        np.testing.assert_array_equal(out[0], expected)


WARP_CUMSUM = """
@ptxpy.jit
def cumsums(x: Array[i32, 2], f: Array[f32, 2], w: Array[i64, 2], h: Array[f16, 2],
            xs: Array[i32, 2], fs: Array[f32, 2], ws: Array[i64, 2], hs: Array[f16, 2]):
    tx = ptxpy.thread_idx.x
    ty = ptxpy.thread_idx.y
    xs[ty, tx] = ptxpy.warp_cumsum(x[ty, tx])
    fs[ty, tx] = ptxpy.warp_cumsum(f[ty, tx])
    ws[ty, tx] = ptxpy.warp_cumsum(w[ty, tx])
    hs[ty, tx] = ptxpy.warp_cumsum(h[ty, tx])
"""


def _warp_cumsum_reference(a, warps):
    """Each warp's inclusive prefix sums, over the block's threads in linear order."""
    flat = a.reshape(-1)
    return np.concatenate([np.cumsum(flat[k:k + 32], dtype=a.dtype)
                           for k in range(0, flat.size, 32)]).reshape(a.shape)


@pytest.mark.parametrize("block", [(64, 1), (48, 1), (10, 7)])
def test_warp_cumsum_is_each_warp_s_inclusive_prefix_sum(block):
    """`ptxpy.warp_cumsum` in whole warps, in a last warp of 16 lanes, and over a 2-D block
    whose warps cross its rows; i32 wraps, f32 sums of eighths are exact in any order."""
    shape = block[::-1]
    x = rng.integers(-2**31, 2**31, shape).astype(np.int32)
    f = (rng.integers(-1000, 1000, shape) / 8.0).astype(np.float32)
    w = rng.integers(-2**40, 2**40, shape).astype(np.int64)
    h = rng.integers(-8, 8, shape).astype(np.float16)
    outs = run(src(WARP_CUMSUM), "cumsums", [x, f, w, h, Out(shape, np.int32),
                                             Out(shape, np.float32), Out(shape, np.int64),
                                             Out(shape, np.float16)], grid=1, block=block)
    for got, a in zip(outs, (x, f, w, h)):
        np.testing.assert_array_equal(got, _warp_cumsum_reference(a, 32), err_msg=str(a.dtype))


def test_warp_cumsum_names_the_lanes_present_unless_the_blocks_are_whole_warps():
    from ptxpy.transpiler import driver

    program = driver.parse(src(WARP_CUMSUM), "kernels.py")
    for whole, mask in ((True, r"0x0, 0xffffffff;"), (False, r"0x0, %r\d+;"), (None, r"0x0, %r\d+;")):
        options = driver.Options("sm_90", whole_warps=whole)
        ptx = driver.compile_kernel(program, "cumsums", None, frozenset(), options).kernel.ptx
        ups = re.findall(r"shfl\.sync\.up\.b32 [^;]*;", ptx)
        assert len(ups) == 5 * (1 + 1 + 2 + 1), whole     # i32, f32, two halves of i64, f16
        assert all(re.search(mask, up) for up in ups), (whole, ups[:2])


BLOCK_VOTES = """
@ptxpy.jit
def block_votes(x: Array[i32, 2], c: Array[i32, 2], a: Array[i32, 2], o: Array[i32, 2],
                nxt: Array[i32, 2]):
    s = ptxpy.shared_array(128, i32)
    t = ptxpy.thread_idx.y * ptxpy.block_dim.x + ptxpy.thread_idx.x
    n = ptxpy.block_dim.x * ptxpy.block_dim.y
    b = ptxpy.block_idx.x
    v = x[b, t]
    s[t] = v
    c[b, t] = ptxpy.syncthreads_count(v > 0)
    nxt[b, t] = s[(t + 1) % n]          # ordered by the barrier: no race
    a[b, t] = i32(ptxpy.syncthreads_and(v > -5))
    o[b, t] = i32(ptxpy.syncthreads_or(v > 8))
"""


@pytest.mark.parametrize("block", [(96, 1), (100, 1), (10, 7)])
def test_block_votes_count_and_combine_the_block_s_predicates(block):
    """`syncthreads_count`, `syncthreads_and`, `syncthreads_or` (PTX bar.red): a barrier
    whose result, the same in every thread of the block, counts or combines their predicates."""
    n = block[0] * block[1]
    x = rng.integers(-10, 10, (3, n)).astype(np.int32)
    x[1] = np.abs(x[1]) % 8        # block 1: every value above -5, none above 8
    outs = run(src(BLOCK_VOTES), "block_votes", [x] + [Out((3, n), np.int32)] * 4, grid=3,
               block=block, racecheck=True)
    c, a, o, nxt = outs
    np.testing.assert_array_equal(c, np.repeat((x > 0).sum(axis=1, keepdims=True), n, axis=1))
    np.testing.assert_array_equal(a, np.repeat((x > -5).all(axis=1, keepdims=True), n, axis=1))
    np.testing.assert_array_equal(o, np.repeat((x > 8).any(axis=1, keepdims=True), n, axis=1))
    np.testing.assert_array_equal(nxt, np.roll(x, -1, axis=1))
    ptx = compile_source(src(BLOCK_VOTES), "block_votes").ptx
    assert re.findall(r"bar\.red\.(\w+)\.(\w+) %\w+, 0, %p\d+;", ptx) == [
        ("popc", "u32"), ("and", "pred"), ("or", "pred")]


MATCHES = """
@ptxpy.jit
def matches(x: Array[{t}, 2], y: Array[{t}, 2], same: Array[u32, 2], all_same: Array[u32, 2],
            none_same: Array[u32, 2]):
    tx = ptxpy.thread_idx.x
    ty = ptxpy.thread_idx.y
    same[ty, tx] = ptxpy.match_any_sync(x[ty, tx])
    all_same[ty, tx] = ptxpy.match_all_sync(y[ty, tx])
    none_same[ty, tx] = ptxpy.match_all_sync(x[ty, tx])
    ptxpy.nanosleep(u32(tx))
"""


def lanes_alike(values: np.ndarray) -> np.ndarray:
    """Per thread (linear order), the mask of the lanes of its warp whose value has its bits."""
    bits = values.reshape(-1).view(f"u{values.itemsize}")
    out = np.zeros(bits.size, np.uint32)
    for i in range(bits.size):
        warp = range(i // 32 * 32, min(i // 32 * 32 + 32, bits.size))
        out[i] = sum(1 << (j % 32) for j in warp if bits[j] == bits[i])
    return out


@pytest.mark.parametrize("block", [(48, 1), (10, 5), (32, 2)])
@pytest.mark.parametrize("t, dtype", [("i32", np.int32), ("f64", np.float64), ("u8", np.uint8),
                                      ("f16", np.float16)])
def test_match_any_and_all_compare_the_bits_of_the_lanes_present(block, t, dtype):
    """`match_any_sync(v)`: the lanes of the warp whose v has this lane's bits (so -0.0 is not
    0.0); `match_all_sync(v)`: the lanes present if all agree, else 0 (PTX match.sync)."""
    shape = (block[1], block[0])
    x = rng.choice(np.array([0, 1, 2, -0.0 if t.startswith("f") else 3]), shape).astype(dtype)
    y = np.full(shape, 5, dtype)
    same, all_same, none_same = run(src(MATCHES.format(t=t)), "matches",
                                    [x, y] + [Out(shape, np.uint32)] * 3, grid=1, block=block)
    np.testing.assert_array_equal(same.reshape(-1), lanes_alike(x))
    present = lanes_alike(y)
    np.testing.assert_array_equal(all_same.reshape(-1), present)
    mixed = lanes_alike(x) != present
    np.testing.assert_array_equal(none_same.reshape(-1), np.where(mixed, 0, present))
    ptx = compile_source(src(MATCHES.format(t=t)), "matches").ptx
    width = 64 if t == "f64" else 32
    assert len(re.findall(rf"match\.(?:any|all)\.sync\.b{width} %r\d+, %(?:r|rd)\d+, %r\d+;",
                          ptx)) == 3
    assert "nanosleep.u32" in ptx


def test_cuda_s_block_votes_name_ptxpy_s():
    for cuda, ours in (("__syncthreads_count(x[0] > 0)", "syncthreads_count"),
                       ("__match_any_sync(x[0])", "match_any_sync")):
        with pytest.raises(CompileError, match=f"CUDA's __{ours} is ptxpy.{ours}"):
            compile_source(src(f"""
@ptxpy.jit
def k(x: Array[i32]):
    x[0] = {cuda}
"""), "k")


@pytest.mark.parametrize("t, suffix", [("i32", "s32"), ("u32", "u32")])
def test_32_bit_integer_warp_reductions_are_one_redux(t, suffix):
    """On `i32` and `u32` a warp reduction is one `redux.sync` (sm_80), whose member mask is
    the lanes present unless the block is known to be whole warps; no shuffle is left."""
    from ptxpy.transpiler import driver

    program = driver.parse(src(WARP_REDUCTIONS.format(t=t)), "kernels.py")
    for whole in (True, False, None):
        options = driver.Options("sm_80", whole_warps=whole)
        ptx = driver.compile_kernel(program, "reduce", None, frozenset(), options).kernel.ptx
        reduxes = re.findall(rf"redux\.sync\.(add|max|min)\.{suffix} %r\d+, %r\d+, (\S+);", ptx)
        assert [op for op, _ in reduxes] == ["add", "max", "min"], whole
        assert all((mask == "0xffffffff") == bool(whole) for _, mask in reduxes), whole
        assert "shfl.sync" not in ptx


@pytest.mark.parametrize("block", [(48, 1), (10, 5), (32, 2)])
def test_redux_wraps_sums_and_compares_unsigned_u32(block):
    big = np.array([0x7FFFFFF0, 0x7FFFFFFF, 5, 0xFFFFFFFF, 0x80000000], np.int64)
    n = block[0] * block[1]
    x = rng.choice(big, (block[1], block[0]))
    for t, dtype in (("i32", np.int32), ("u32", np.uint32)):
        values = x.astype(np.uint32).astype(dtype)
        s, mx, mn = run(src(WARP_REDUCTIONS.format(t=t)), "reduce",
                        [values] + [Out(values.shape, dtype)] * 3, grid=1, block=block)
        flat = values.reshape(-1)
        for out, reduce in zip((s, mx, mn), (np.sum, np.max, np.min)):
            expected = [reduce(flat[w:w + 32]) for w in range(0, n, 32)
                        for _ in range(min(32, n - w))]
            np.testing.assert_array_equal(out.reshape(-1), np.array(expected).astype(dtype), t)


BITWISE_REDUCTIONS = (WARP_REDUCTIONS.replace("warp_sum", "warp_and")
                      .replace("warp_max", "warp_or").replace("warp_min", "warp_xor"))


@pytest.mark.parametrize("block", [(48, 1), (10, 5), (64, 1)])
@pytest.mark.parametrize("t, dtype", [("i32", np.int32), ("u32", np.uint32), ("i64", np.int64),
                                      ("u8", np.uint8)])
def test_warp_and_or_xor(block, t, dtype):
    """`warp_and`, `warp_or`, `warp_xor` of the lanes present (CUDA's __reduce_and_sync ...):
    one `redux.sync.{and,or,xor}.b32` on 32-bit integers, shuffles on the others."""
    shape = (block[1], block[0])
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, shape, endpoint=True, dtype=dtype)
    x.reshape(-1)[:32] |= dtype(1)          # warp 0: bit 0 set everywhere
    outs = run(src(BITWISE_REDUCTIONS.format(t=t)), "reduce", [x] + [Out(shape, dtype)] * 3,
               grid=1, block=block)
    flat = x.reshape(-1)
    for out, reduce in zip(outs, (np.bitwise_and, np.bitwise_or, np.bitwise_xor)):
        expected = [reduce.reduce(flat[w:w + 32]) for w in range(0, flat.size, 32)
                    for _ in range(min(32, flat.size - w))]
        np.testing.assert_array_equal(out.reshape(-1), np.array(expected, dtype))
    ptx = compile_source(src(BITWISE_REDUCTIONS.format(t=t)), "reduce").ptx
    found = re.findall(r"redux\.sync\.(and|or|xor)\.b32 ", ptx)
    assert found == (["and", "or", "xor"] if t in ("i32", "u32") else [])


def test_bitwise_warp_reductions_need_integers():
    with pytest.raises(CompileError, match=r"ptxpy.warp_and needs an integer, got f32; for a "
                                           r"float's bits, ptxpy.warp_and\(ptxpy.bitcast\(x, u32\)\)"):
        compile_source(src(BITWISE_REDUCTIONS.format(t="f32")), "reduce")


@pytest.mark.parametrize("block", [(7, 1), (20, 1), (48, 1), (10, 5), (32, 2)])
@pytest.mark.parametrize("t,dtype", [("i32", np.int32), ("f32", np.float32), ("f64", np.float64),
                                     ("u8", np.uint8)])
def test_warp_reductions_of_partial_warps(block, t, dtype):
    """A block whose size is not a multiple of 32 has a last warp with lanes missing: each
    warp's reduction covers the lanes it has, and every one of them gets the result."""
    bx, by = block
    x = rng.integers(0, 100 if dtype == np.uint8 else 1000, (by, bx)).astype(dtype)
    if dtype in (np.float32, np.float64):
        x = x / 8                      # sums exact in any order
    s, mx, mn = run(src(WARP_REDUCTIONS.format(t=t)), "reduce", [x] + [Out((by, bx), dtype)] * 3,
                    grid=1, block=block)
    warp = np.arange(bx * by) // 32
    for got, reduce in ((s, np.sum), (mx, np.max), (mn, np.min)):
        flat = x.reshape(-1)
        expected = np.array([reduce(flat[warp == w]) for w in warp]).astype(dtype)
        np.testing.assert_array_equal(got.reshape(-1), expected, err_msg=reduce.__name__)


PARTIAL_WARP_SHUFFLES = """
@ptxpy.jit
def shuffles(x: Array[{t}, 2], lane: Array[i32, 2], out: Array[{t}, 3], votes: Array[u32, 3]):
    tx = ptxpy.thread_idx.x
    ty = ptxpy.thread_idx.y
    v = x[ty, tx]
    k = lane[ty, tx]
    out[ty, tx, 0] = ptxpy.shfl_down_sync(v, 5)
    out[ty, tx, 1] = ptxpy.shfl_xor_sync(v, 6)
    out[ty, tx, 2] = ptxpy.shfl_sync(v, k)
    out[ty, tx, 3] = ptxpy.shfl_up_sync(v, 3)
    votes[ty, tx, 0] = ptxpy.ballot_sync(v > 50)
    votes[ty, tx, 1] = u32(ptxpy.any_sync(v > 95))
    votes[ty, tx, 2] = u32(ptxpy.all_sync(v > 3))
"""


@pytest.mark.parametrize("block", [(40, 1), (10, 5), (7, 1), (32, 2)])
@pytest.mark.parametrize("t,dtype", [("u32", np.uint32), ("f64", np.float64)])
def test_shuffles_and_votes_of_partial_warps_take_the_lanes_present(block, t, dtype):
    """In the last warp of a block that is not whole warps, a shuffle from a lane that does
    not exist gives the caller's own value, as one past the warp's edge does (SPEC 2.5), and a
    vote counts the lanes present: defined on the GPU too, since the PTX names only those."""
    bx, by = block
    threads = bx * by
    x = rng.integers(0, 100, (by, bx)).astype(dtype)
    lanes = rng.integers(-40, 40, (by, bx)).astype(np.int32)
    out, votes = run(src(PARTIAL_WARP_SHUFFLES.format(t=t)), "shuffles",
                     [x, lanes, Out((by, bx, 4), dtype), Out((by, bx, 3), np.uint32)],
                     grid=1, block=block)
    flat, flat_lanes = x.reshape(-1), lanes.reshape(-1)
    expected_out, expected_votes = [], []
    for me in range(threads):
        first = me - me % 32
        present = min(threads - first, 32)
        lane = me % 32
        read = lambda j: flat[first + j] if 0 <= j < present else flat[me]
        expected_out.append([read(lane + 5), read(lane ^ 6), read(flat_lanes[me] % 32), read(lane - 3)])
        mine = flat[first:first + present]
        ballot = sum(1 << k for k in range(present) if mine[k] > 50)
        expected_votes.append([ballot, int((mine > 95).any()), int((mine > 3).all())])
    np.testing.assert_array_equal(out.reshape(threads, 4), np.array(expected_out, dtype))
    np.testing.assert_array_equal(votes.reshape(threads, 3), np.array(expected_votes, np.uint32))


def test_shuffles_name_the_lanes_present_unless_the_blocks_are_whole_warps():
    from ptxpy.transpiler import driver

    source = src(PARTIAL_WARP_SHUFFLES.format(t="u32"))
    program = driver.parse(source, "kernels.py")
    for whole, clamp, members in ((False, r"%r\d+", r"%r\d+"), (True, "0x1f", "0xffffffff")):
        options = driver.Options("sm_90", whole_warps=whole)
        ptx = driver.compile_kernel(program, "shuffles", None, frozenset(), options).kernel.ptx
        shuffles = re.findall(r"shfl\.sync\.(\w+)\.b32 %r\d+, %r\d+, \S+, (\S+), (\S+);", ptx)
        assert sorted(mode for mode, _, _ in shuffles) == ["bfly", "down", "idx", "up"]
        for mode, c, mask in shuffles:
            assert re.fullmatch(members, mask), (whole, mode, mask)
            assert re.fullmatch("0x0" if mode == "up" else clamp, c), (whole, mode, c)
        votes = re.findall(r"vote\.sync\.\w+\.\w+ %\w+, %p\d+, (\S+);", ptx)
        assert len(votes) == 3 and all(re.fullmatch(members, mask) for mask in votes), votes


SEGMENTED_SHUFFLES = """
@ptxpy.jit
def shuffles(x: Array[{t}], lanes: Array[i32], out: Array[{t}, 2]):
    i = ptxpy.thread_idx.x
    v = x[i]
    out[i, 0] = ptxpy.shfl_sync(v, lanes[i], width={w})
    out[i, 1] = ptxpy.shfl_up_sync(v, {d}, width={w})
    out[i, 2] = ptxpy.shfl_down_sync(v, {d}, width={w})
    out[i, 3] = ptxpy.shfl_xor_sync(v, {d}, width={w})
"""


@pytest.mark.parametrize("block", [64, 50, 7])
@pytest.mark.parametrize("w,d", [(8, 3), (16, 1), (4, 2), (1, 1), (2, 1)])
def test_shuffles_with_a_width_stay_in_their_segment(block, w, d):
    """CUDA's `width`: the warp as segments of `w` lanes. idx reads lane `src % w` of the
    caller's segment; up and down give the caller's own value where the source leaves the
    segment (or, in a partial warp, names a lane that does not exist); xor may read an earlier
    segment, not a later one (as CUDA documents)."""
    x = rng.integers(0, 1000, block).astype(np.int32)
    lanes = rng.integers(-40, 40, block).astype(np.int32)
    source = src(SEGMENTED_SHUFFLES.format(t="i32", w=w, d=d))
    (out,) = run(source, "shuffles", [x, lanes, Out((block, 4), np.int32)], grid=1, block=block)
    expected = []
    for me in range(block):
        first, lane = me - me % 32, me % 32
        present = min(block - first, 32)
        low = lane - lane % w
        high = min(low + w, present)       # one past the segment's last lane that exists
        read = lambda j, low=low: x[first + j] if low <= j < high else x[me]   # noqa: E731
        expected.append([read(low + lanes[me] % w), read(lane - d), read(lane + d), read(lane ^ d, 0)])
    np.testing.assert_array_equal(out, np.array(expected, np.int32))


def test_shuffle_width_in_the_ptx_and_its_errors():
    from ptxpy.transpiler import driver

    source = src(SEGMENTED_SHUFFLES.format(t="f64", w=8, d=2))
    ptx = driver.compile_kernel(driver.parse(source, "kernels.py"), "shuffles", None, frozenset(),
                                driver.Options("sm_90", whole_warps=True)).kernel.ptx
    cs = re.findall(r"shfl\.sync\.(\w+)\.b32 %\w+, %\w+, \S+, (\S+), 0xffffffff;", ptx)
    assert sorted(set(cs)) == [("bfly", "0x181f"), ("down", "0x181f"), ("idx", "0x181f"), ("up", "0x1800")]
    for call, message in (("ptxpy.shfl_sync(v, 1, width=3)", "the width of ptxpy.shfl_sync must be 1, 2, 4, 8, 16 or 32, got 3"),
                          ("ptxpy.shfl_sync(v, 1, width=i)", "the width of ptxpy.shfl_sync must be a compile-time constant"),
                          ("ptxpy.shfl_down_sync(0xffffffff, v, 1, 16)",
                           "takes no member mask (the whole warp takes part): write ptxpy.shfl_down_sync(v, 1, width=16)"),
                          ("ptxpy.warp_sum(v, width=16)", "got an unexpected keyword argument 'width'"),
                          ("ptxpy.warp_cumsum(v > 0.0)", "ptxpy.warp_cumsum needs a number, got bool"),
                          ("ptxpy.warp_cumsum(0xffffffff, v)",
                           "takes no member mask (the whole warp takes part): write ptxpy.warp_cumsum(v)")):
        bad = src(f"@ptxpy.jit\ndef k(x: Array[f32]):\n    i = ptxpy.thread_idx.x\n    v = x[i]\n    x[i] = {call}\n")
        with pytest.raises(CompileError, match=re.escape(message)):
            compile_source(bad, "k")


def test_warps_follow_the_linear_thread_index_in_2d_blocks():
    source = src("""
@ptxpy.jit
def ids(lane: Array[i32, 2], warp: Array[i32, 2], first: Array[i32, 2]):
    tx = ptxpy.thread_idx.x
    ty = ptxpy.thread_idx.y
    lane[ty, tx] = ptxpy.lane_id()
    warp[ty, tx] = ptxpy.warp_id()
    first[ty, tx] = ptxpy.shfl_sync(ty * 16 + tx, 0)
""")
    lane, warp, first = run(source, "ids", [Out((4, 16), np.int32)] * 3, grid=1, block=(16, 4))
    linear = np.arange(64).reshape(4, 16)
    np.testing.assert_array_equal(lane, linear % 32)
    np.testing.assert_array_equal(warp, linear // 32)
    np.testing.assert_array_equal(first, linear // 32 * 32)


def test_warp_reduction_ptx_reads_like_hand_written():
    source = src("""
@ptxpy.jit
def row_sums(x: Array[f32, 2], out: Array[f32]):
    row = ptxpy.global_id(0) // 32
    lane = ptxpy.lane_id()
    acc = 0.0
    for j in range(lane * 4, x.shape[1], 128):
        a, b, c, d = x[row, j:j + 4]
        acc += (a + b) + (c + d)
    acc = ptxpy.warp_sum(acc)
    if lane == 0:
        out[row] = acc
""")
    x = rng.integers(-8, 8, (4, 256)).astype(np.float32)
    (out,) = run(source, "row_sums", [x, Out(4, np.float32)], grid=1, block=128)
    np.testing.assert_array_equal(out, x.sum(axis=1))
    ptx = body_of(compile_source(source, "row_sums").ptx)
    lines = [ln.strip() for ln in ptx.splitlines() if ln.strip() and not ln.strip().startswith(("//", ".loc"))]
    assert sum(ln.startswith("shfl.sync.bfly.b32") for ln in lines) == 5
    # a block whose size is not a multiple of 32 takes another path, with only the lanes present
    assert sum(ln.startswith("shfl.sync.down.b32") for ln in lines) == 5
    assert sum(ln.startswith("shfl.sync.idx.b32") for ln in lines) == 1
    assert sum(ln.startswith("ld.global.nc.v4.f32") for ln in lines) == 1
    starts = re.compile(r"mov\.f32 %f1, 0f00000000")  # acc = 0.0
    assert not any(ln.startswith(("cvt.", "mov.b32", "mov.f32 %f", "ld.global.f32")) for ln in lines
                   if not starts.match(ln))
    # the loop's address comes from the index in one mad.wide (no 64-bit pointer carried
    # beside the index the loop test needs: passes/strength.py)
    assert "add.s64" not in ptx and ptx.count("mul.wide") + ptx.count("mad.wide") == 2


# --- atomics -------------------------------------------------------------------------------
ATOMIC_INT = """
@ptxpy.jit
def atomics(x: Array[{t}], acc: Array[{t}], old: Array[{t}]):
    i = ptxpy.global_id(0)
    v = x[i]
    ptxpy.atomic_add(acc, 0, v)
    ptxpy.atomic_min(acc, 1, v)
    ptxpy.atomic_max(acc, 2, v)
    ptxpy.atomic_and(acc, 3, v)
    ptxpy.atomic_or(acc, 4, v)
    ptxpy.atomic_xor(acc, 5, v)
    ptxpy.atomic_sub(acc, 6, v)
    old[i] = ptxpy.atomic_exch(acc, 7, v)
"""


@pytest.mark.parametrize("t,dtype", [("i32", np.int32), ("u32", np.uint32), ("i64", np.int64),
                                     ("u64", np.uint64)])
def test_integer_atomics(t, dtype):
    info = np.iinfo(dtype)
    x = rng.integers(max(info.min, -1000), 1000, 100).astype(dtype)
    init = np.array([0, info.max, info.min, -1 if info.min else info.max, 0, 0, 0, 7], dtype)
    acc, old = run(src(ATOMIC_INT.format(t=t)), "atomics", [x, Out(8, dtype, init), Out(100, dtype)],
                   grid=2, block=50)
    with np.errstate(over="ignore"):
        expect = [x.sum(dtype=dtype), x.min(), x.max(), np.bitwise_and.reduce(x),
                  np.bitwise_or.reduce(x), np.bitwise_xor.reduce(x), dtype(0) - x.sum(dtype=dtype)]
    np.testing.assert_array_equal(acc[:7], np.array(expect, dtype))
    # exchange: the old values and the final one are a permutation of 7 and x
    np.testing.assert_array_equal(np.sort(np.append(old, acc[7])), np.sort(np.append(x, dtype(7))))


def test_atomic_add_returns_unique_tickets_and_cas_builds_a_lock_free_max():
    source = src("""
@ptxpy.jit
def tickets(x: Array[i32], counter: Array[i32], got: Array[i32], best: Array[i32]):
    i = ptxpy.global_id(0)
    got[i] = ptxpy.atomic_add(counter, 0, 1)
    seen = best[0]
    while seen < x[i]:
        prev = ptxpy.atomic_cas(best, 0, seen, x[i])
        if prev == seen:
            break
        seen = prev
""")
    x = rng.integers(0, 10**6, 128).astype(np.int32)
    counter, got, best = run(source, "tickets", [x, Out(1, np.int32), Out(128, np.int32),
                                                 Out(1, np.int32, -1)], grid=4, block=32)
    assert counter[0] == 128
    np.testing.assert_array_equal(np.sort(got), np.arange(128))
    assert best[0] == x.max()


def test_float_and_half_atomic_adds_with_2d_indices():
    source = src("""
@ptxpy.jit
def fadd(x: Array[f32], f: Array[f32, 2], d: Array[f64, 2], h: Array[f16], b: Array[bf16]):
    i = ptxpy.global_id(0)
    ptxpy.atomic_add(f, (i % 2, i % 3), x[i])
    ptxpy.atomic_add(d, (i % 2, i % 3), f64(x[i]))
    ptxpy.atomic_add(h, i % 4, f16(1.0))
    ptxpy.atomic_add(b, i % 4, bf16(0.5))
""")
    x = rng.integers(-64, 64, 96).astype(np.float32) / 4   # exact sums in any order
    f, d, h, b = run(source, "fadd", [x, Out((2, 3), np.float32), Out((2, 3), np.float64),
                                      Out(4, np.float16), Out(4, BF16)], grid=3, block=32)
    expect = np.zeros((2, 3))
    np.add.at(expect, (np.arange(96) % 2, np.arange(96) % 3), x)
    np.testing.assert_array_equal(f, expect.astype(np.float32))
    np.testing.assert_array_equal(d, expect)
    np.testing.assert_array_equal(h, np.full(4, 24, np.float16))
    np.testing.assert_array_equal(b.astype(np.float32), np.full(4, 12, np.float32))


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_atomics_without_an_instruction_use_a_compare_and_swap_loop(arch):
    # 16-bit float min/max/exch/cas and bf16 add before sm_90 (its f32 min/max and f64 min
    # are integer atomics on the bits since session 28)
    source = src("""
@ptxpy.jit
def emulated(x: Array[f32], f: Array[f32], d: Array[f64], h: Array[f16], b: Array[bf16],
             old: Array[f16]):
    i = ptxpy.global_id(0)
    ptxpy.atomic_max(f, 0, x[i])
    ptxpy.atomic_min(f, 1, x[i])
    ptxpy.atomic_min(d, 0, f64(x[i]))
    ptxpy.atomic_max(h, 0, f16(x[i]))
    ptxpy.atomic_add(b, 0, bf16(1.0))
    ptxpy.atomic_sub(b, 1, bf16(0.25))
    old[i] = ptxpy.atomic_exch(h, 1, f16(i))
    ptxpy.atomic_cas(h, 2, f16(7.0), f16(-1.0))
""")
    from ptxpy.runtime.simulator import run_kernel
    from kernel_harness import assemble_all
    kernel = compile_source(source, "emulated", arch=arch)
    assemble_all(source, "emulated")
    x = (rng.standard_normal(64) * 10).astype(np.float32)
    f = np.array([-np.inf, np.inf], np.float32)
    d = np.array([np.inf])
    h = np.array([-np.inf, 100, 7], np.float16)
    b = np.zeros(2, BF16)
    old = np.zeros(64, np.float16)
    args = []
    for a in (x, f, d, h, b, old):
        args += [a, len(a)]
    run_kernel(kernel.ptx, "emulated", grid=2, block=32, args=args)
    assert f[0] == x.max() and f[1] == x.min() and d[0] == x.min()
    assert h[0] == x.astype(np.float16).max() and h[2] == -1
    assert b[0] == 64 and b[1] == -16
    np.testing.assert_array_equal(np.sort(np.append(old, h[1])),
                                  np.sort(np.append(np.arange(64), 100).astype(np.float16)))
    assert ("global.add.noftz.bf16" in kernel.ptx) == (arch == "sm_90")


def _bits(values, dtype):
    return np.asarray(values, dtype).view(np.uint32 if np.dtype(dtype).itemsize == 4 else np.uint64)


def _float_extreme(op: str, candidates):
    """min/max as `max.f32` orders floats: NaNs ignored (NaN if all are), -0.0 below 0.0."""
    numbers = [c for c in candidates if not np.isnan(c)]
    if not numbers:
        return np.nan
    return (max if op == "max" else min)(numbers, key=lambda c: (c, not np.signbit(c)))


def _assert_same_floats(got, expect, dtype):
    got, expect = np.asarray(got, dtype), np.asarray(expect, dtype)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expect))
    numbers = ~np.isnan(expect)
    np.testing.assert_array_equal(_bits(got[numbers], dtype), _bits(expect[numbers], dtype))


FLOAT_ATOMIC_INITS = [np.nan, -np.nan, -0.0, 0.0, -np.inf, np.inf, 1.5, -2.5]


def _float_atomic_values(dtype, count: int):
    """Values for the elements of FLOAT_ATOMIC_INITS (thread t updates element t % 8): numbers
    of both signs, signed zeros, subnormals, infinities and NaNs of both signs; element 7's
    are all NaN (its -2.5 stays)."""
    tiny = np.finfo(dtype).smallest_subnormal
    pool = np.array([1.0, -1.0, 3.25, -7.5, 0.0, -0.0, tiny, -tiny, 2 * tiny, np.inf, -np.inf,
                     np.nan, -np.nan, 1e30, -1e30], dtype)
    values = pool[rng.integers(0, len(pool), count)]
    values[7::8] = np.where(np.arange(count)[7::8] % 16 == 7, np.nan, -np.nan)
    return values


@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("space", ["global", "shared"])
@pytest.mark.parametrize("op", ["min", "max"])
def test_float_atomic_min_max_order_nan_and_signed_zero(op, space, dtype):
    """A float `atomic_min`/`atomic_max` computes what `min`/`max` do (NaN ignored, -0.0 below
    0.0) and returns the element's old value, whatever the element holds: its NaN that the
    integer atomics on the bits (f32, and f64 in global memory) cannot order is replaced by
    `atom.cas`, and the threads that raced to do so run the integer atomic again. One thread
    applies them in order (each old value checked), then 128 threads at once."""
    np_dtype = np.float32 if dtype == "f32" else np.float64
    where = "s" if space == "shared" else "acc"
    declare = f"s = ptxpy.shared_array(8, {dtype})" if space == "shared" else ""
    copy_out = "acc[t] = s[t]" if space == "shared" else "pass"
    source = src(f"""
@ptxpy.jit
def in_order(x: Array[{dtype}], init: Array[{dtype}], acc: Array[{dtype}], old: Array[{dtype}]):
    {declare}
    for e in range(8):
        {where}[e] = init[e]
    for k in range(len(x)):
        old[k] = ptxpy.atomic_{op}({where}, k % 8, x[k])
    for t in range(8):
        {copy_out}

@ptxpy.jit
def at_once(x: Array[{dtype}], init: Array[{dtype}], acc: Array[{dtype}], old: Array[{dtype}]):
    {declare}
    t = ptxpy.thread_idx.x
    if t < 8:
        {where}[t] = init[t]
    ptxpy.syncthreads()
    old[t] = ptxpy.atomic_{op}({where}, t % 8, x[t])
    ptxpy.syncthreads()
    if t < 8:
        {copy_out}
""")
    init = np.array(FLOAT_ATOMIC_INITS, np_dtype)
    init[1] = -init[0]
    x = _float_atomic_values(np_dtype, 128)
    outputs = [Out(8, np_dtype), Out(128, np_dtype)]

    acc, old = run(source, "in_order", [x, init, *outputs], grid=1, block=1)
    current, expect_old = list(init), []
    for k, v in enumerate(x):
        expect_old.append(current[k % 8])
        current[k % 8] = _float_extreme(op, [current[k % 8], v])
    _assert_same_floats(old, expect_old, np_dtype)
    _assert_same_floats(acc, current, np_dtype)

    acc, old = run(source, "at_once", [x, init, *outputs], grid=1, block=128)
    _assert_same_floats(acc, current, np_dtype)     # min and max do not depend on the order
    for t, got in enumerate(old):       # each thread saw the initial value or another's
        seen = [init[t % 8], *x[t % 8::8]]
        assert np.isnan(got) or any(_bits(got, np_dtype) == _bits(c, np_dtype) for c in seen)
        if not np.isnan(got) and not np.isnan(current[t % 8]):
            assert _float_extreme(op, [got, current[t % 8]]) == current[t % 8]
    if (dtype, space) != ("f64", "shared"):      # f64 on shared memory: a compare-and-swap loop
        assert f"{space}.{op}.s" in body_of(
            compile_source(source, "at_once").ptx)


@pytest.mark.parametrize("space", ["global", "shared", "local"])
def test_atomic_cas_compares_bits_in_every_memory(space):
    """`atomic_cas` swaps when the element's bits equal the expected value's, as `atom.cas`
    does: a stored 0.0 is not -0.0, and a NaN read from the element matches itself. A local
    array's atomics are plain read-modify-writes, and once compared values (found by the
    random programs with atomics, seed 3 program 89)."""
    name, at = ("o", "i, ") if space == "global" else ("m", "i, " if space == "shared" else "")
    declare = {"global": "", "shared": "m = ptxpy.shared_array((64, 2), f32)",
               "local": "m = ptxpy.local_array(2, f32)"}[space]
    copy_out = "" if space == "global" else f"o[i, 0] = m[{at}0]\n    o[i, 1] = m[{at}1]"
    source = src(f"""
@ptxpy.jit
def cas(x: Array[f32], o: Array[f32, 2], old: Array[f32, 2]):
    i = ptxpy.global_id(0)
    {declare}
    {name}[{at}0] = x[i]
    {name}[{at}1] = x[i]
    old[i, 0] = ptxpy.atomic_cas({name}, ({at}0), f32(-0.0), f32(5.0))
    old[i, 1] = ptxpy.atomic_cas({name}, ({at}1), {name}[{at}1], f32(7.0))
    {copy_out}
""")
    x = np.array([0.0, -0.0, np.nan, 1.0, -np.inf] * 2, np.float32)
    o, old = run(source, "cas", [x, Out((len(x), 2), np.float32), Out((len(x), 2), np.float32)],
                 grid=1, block=len(x))
    negative_zero = (x == 0) & np.signbit(x)
    np.testing.assert_array_equal(o[:, 0], np.where(negative_zero, 5.0, x))
    np.testing.assert_array_equal(o[:, 1], np.full(len(x), 7.0, np.float32))
    assert np.array_equal(old, np.stack([x, x], axis=1), equal_nan=True)


def test_f32_atomic_add_flushes_subnormals_in_global_memory_only():
    """`atom.add.f32` flushes subnormal inputs and results to zero in global memory, as the PTX
    manual says and the H100 does; in shared memory it keeps them, and so do f16, bf16 and f64
    (benchmarks/probes/atom_probe.py). The old value comes back as it was stored."""
    source = src("""
@ptxpy.jit
def tiny(x: Array[f32], y: Array[f32], g: Array[f32], sh: Array[f32], old: Array[f32]):
    i = ptxpy.global_id(0)
    s = ptxpy.shared_array(64, f32)
    s[i] = x[i]
    g[i] = x[i]
    old[i] = ptxpy.atomic_add(g, i, y[i])
    ptxpy.atomic_add(s, i, y[i])
    sh[i] = s[i]
""")
    tiny, normal = 2.0**-149, 2.0**-126
    x = np.array([tiny, 3 * tiny, normal / 2, normal, 1.0, 0.0, -tiny, normal * 1.5], np.float32)
    y = np.array([tiny, tiny, normal / 2, -tiny, tiny, tiny, 2 * tiny, -normal], np.float32)
    g, sh, old = run(source, "tiny", [x, y] + [Out(len(x), np.float32)] * 3, grid=1, block=len(x))

    def flush(v):
        return np.where(np.abs(v) < normal, np.copysign(np.float32(0), v), v).astype(np.float32)
    np.testing.assert_array_equal(g.view(np.uint32), flush(flush(x) + flush(y)).view(np.uint32))
    np.testing.assert_array_equal(sh, x + y)
    np.testing.assert_array_equal(old.view(np.uint32), x.view(np.uint32))


def test_64_bit_shared_atomics_in_a_loop_of_run_time_length():
    """Every 64-thread block updates shared i64/u64 counters `trips` times per thread. ptxas
    turns a 64-bit shared atomic into its own compare-and-swap loop and, around it, kept the
    outer loop's counter in a register of the whole warp: lanes whose swap lost ran fewer
    trips (the sum came out -2048, not -6140), and in a random program an `atomic_or` read
    shared memory at a misaligned address (H100, session 22, benchmarks/probes/red_probe.py).
    ptxpy writes that loop in PTX itself."""
    source = src("""
@ptxpy.jit
def counters(trips: Array[i32], o: Array[i64], u: Array[u64]):
    i = ptxpy.global_id(0)
    s = ptxpy.shared_array(8, i64)
    t = ptxpy.shared_array(2, u64)
    if i == 0:
        for k in range(8):
            s[k] = i64(100)
        s[3] = i64(-1)
        t[0] = u64(0)
        t[1] = u64(5)
    ptxpy.syncthreads()
    for k in range(trips[0]):
        ptxpy.atomic_add(s, 7, ~i64(i))
    for k in range(trips[0]):
        ptxpy.atomic_add(s, 0, ~i64(i))
        ptxpy.atomic_or(s, 1, i64(i) << 40)
        ptxpy.atomic_xor(s, 2, i64(i) * 1000003)
        ptxpy.atomic_and(s, 3, ~(i64(1) << (i // 8 + 20 * k)))
        ptxpy.atomic_max(s, 4, i64(i) * -7 + k)
        ptxpy.atomic_min(s, 5, i64(i) * 3 - k)
        ptxpy.atomic_sub(s, 6, i64(i))
        ptxpy.atomic_add(t, 0, u64(i) << 33)
        ptxpy.atomic_max(t, 1, u64(i) * u64(k))
    ptxpy.syncthreads()
    if i == 0:
        for k in range(8):
            o[k] = s[k]
        u[0] = t[0]
        u[1] = t[1]
""")
    n, trips = 64, 3
    o, u = run(source, "counters", [np.array([trips], np.int32), Out(8, np.int64), Out(2, np.uint64)],
               grid=1, block=n)
    i, k = np.arange(n, dtype=np.int64), np.arange(trips, dtype=np.int64)
    with np.errstate(over="ignore"):
        xor = np.bitwise_xor.reduce(np.tile(i * 1000003, trips)) ^ 100
        cleared = sum(1 << int(b) for b in set((i[:, None] // 8 + 20 * k).ravel()))
        want = [100 + trips * int((~i).sum()), 100 | np.bitwise_or.reduce(i << 40), xor,
                -1 & ~cleared, max(100, int((i[:, None] * -7 + k).max())),
                min(100, int((i[:, None] * 3 - k).min())), 100 - trips * int(i.sum()),
                100 + trips * int((~i).sum())]
    assert o.tolist() == want
    assert u.tolist() == [trips * int((i << 33).sum()), max(5, (n - 1) * (trips - 1))]


def test_float_shared_atomic_adds_in_a_loop_of_run_time_length():
    """f32, f64, f16 and bf16 `atomic_add` on shared memory, which ptxas would make its own
    compare-and-swap loops, looped a run-time number of times; the values are small integers,
    so every order of the sums gives the same result."""
    source = src("""
@ptxpy.jit
def sums(trips: Array[i32], o: Array[f64, 2]):
    i = ptxpy.global_id(0)
    s = ptxpy.shared_array(1, f32)
    d = ptxpy.shared_array(1, f64)
    h = ptxpy.shared_array(1, f16)
    g = ptxpy.shared_array(1, bf16)
    if i == 0:
        s[0] = f32(1.0)
        d[0] = f64(2.0)
        h[0] = f16(3.0)
        g[0] = bf16(4.0)
    ptxpy.syncthreads()
    for k in range(trips[0]):
        ptxpy.atomic_add(s, 0, f32(i % 5))
        ptxpy.atomic_add(d, 0, f64(i % 7))
        ptxpy.atomic_add(h, 0, f16(i % 3))
        ptxpy.atomic_add(g, 0, bf16(i % 2))
    ptxpy.syncthreads()
    if i == 0:
        o[0, 0] = s[0]
        o[0, 1] = d[0]
        o[0, 2] = h[0]
        o[0, 3] = g[0]
""")
    n, trips = 64, 3
    (o,) = run(source, "sums", [np.array([trips], np.int32), Out((1, 4), np.float64)], grid=1, block=n)
    i = np.arange(n)
    assert o[0].tolist() == [1 + trips * (i % 5).sum(), 2 + trips * (i % 7).sum(),
                             3 + trips * (i % 3).sum(), 4 + trips * (i % 2).sum()]


def test_16_bit_shared_atomics_in_a_branch_then_a_shuffle():
    """f16 and bf16 atomics on shared memory that need a compare-and-swap (min, max, exch,
    cas), from some threads of each warp and contended, then a shuffle. ptxpy swaps the
    aligned 32-bit word holding the element, in a warp-uniform loop (a kernel like this,
    program 748 of seed 3306, failed with an illegal address on the H100 until session 23)."""
    source = src("""
@ptxpy.jit
def halves(x: Array[f32], h: Array[f16], g: Array[bf16], o: Array[f32], old: Array[f16]):
    i = ptxpy.global_id(0)
    s = ptxpy.shared_array(6, f16)
    t = ptxpy.shared_array(3, bf16)
    if i < 6:
        s[i] = f16(0.0)
    if i < 3:
        t[i] = bf16(0.0)
    ptxpy.syncthreads()
    if x[i] > -0.5:
        ptxpy.atomic_min(s, 0, f16(x[i]))
        ptxpy.atomic_max(s, 1, f16(x[i]))
        ptxpy.atomic_max(t, 1, bf16(x[i]))
        old[i] = ptxpy.atomic_exch(s, 3, f16(i))
    else:
        ptxpy.atomic_min(t, 2, bf16(x[i]))
        ptxpy.atomic_cas(s, 5, f16(0.0), f16(x[i]))
        old[i] = f16(-1.0)
    o[i] = ptxpy.shfl_down_sync(x[i], 1)
    ptxpy.syncthreads()
    if i == 0:
        for k in range(6):
            h[k] = s[k]
        for k in range(3):
            g[k] = t[k]
""")
    n = 64
    x = (rng.standard_normal(n) * 4).astype(np.float16).astype(np.float32)
    h, g, o, old = run(source, "halves", [x, Out(6, np.float16), Out(3, BF16), Out(n, np.float32),
                                          Out(n, np.float16)], grid=1, block=n)
    taken = x > -0.5
    lane = np.arange(n) % 32
    np.testing.assert_array_equal(o, np.where(lane < 31, np.roll(x, -1), x))
    assert h[0] == min(0.0, x[taken].min()) and h[1] == max(0.0, x[taken].max())
    assert h[2] == 0 and h[4] == 0
    assert h[5] in x[~taken]      # the first swap from 0.0 wins: some thread's value
    exchanged = np.sort(np.append(old[taken], h[3]).astype(np.float32))
    np.testing.assert_array_equal(exchanged, np.sort(np.append(np.flatnonzero(taken), 0.0)))
    assert float(g[1]) == max(0.0, float(x[taken].astype(BF16).max()))
    assert float(g[2]) == min(0.0, float(x[~taken].astype(BF16).min())) and g[0] == 0


def test_a_warp_function_after_a_contended_compare_and_swap_loop():
    """Lanes leave a float atomic_min's compare-and-swap loop at different iterations (a lane
    whose swap lost retries), then the warp shuffles: the shuffle waits for the whole warp.
    The retry block lies after the shuffle in the PTX (found by the random programs with
    atomics and warp functions, seed 6 program 14, which the simulator once stopped; an f32
    one then, f64 on shared memory since f32 min/max are integer atomics, session 28)."""
    source = src("""
@ptxpy.jit
def late(a: Array[i32], b: Array[f32], lowest: Array[f64], o: Array[f32]):
    i = ptxpy.global_id(0)
    s = ptxpy.shared_array(1, f64)
    if i == 0:
        s[0] = 100.0
    ptxpy.syncthreads()
    v = b[i]
    if a[i] > 2:
        v = v * 2.0
        if a[i] > 4:
            ptxpy.atomic_min(s, 0, f64(b[i]))
    else:
        ptxpy.atomic_min(s, 0, -f64(b[i]))
    o[i] = ptxpy.shfl_down_sync(v, 1)
    ptxpy.syncthreads()
    if i == 0:
        lowest[0] = s[0]
""")
    a = rng.integers(0, 8, 64).astype(np.int32)
    b = rng.standard_normal(64).astype(np.float32)
    lowest, o = run(source, "late", [a, b, Out(1, np.float64), Out(64, np.float32)], grid=1, block=64)
    v = np.where(a > 2, b * np.float32(2), b)
    lane = np.arange(64) % 32
    np.testing.assert_array_equal(o, np.where(lane < 31, np.roll(v, -1), v))
    candidates = np.concatenate([[100.0], b[a > 4], -b[a <= 2]]).astype(np.float64)
    assert lowest[0] == candidates.min()
    assert "atom.shared.cas.b64" in compile_source(source, "late").ptx


def test_shared_memory_histogram_privatised_per_block():
    source = src("""
BINS = 16

@ptxpy.jit
def histogram(x: Array[i32], hist: Array[u32]):
    local = ptxpy.shared_array(BINS, u32)
    t = ptxpy.thread_idx.x
    if t < BINS:
        local[t] = u32(0)
    ptxpy.syncthreads()
    i = ptxpy.global_id(0)
    if i < x.shape[0]:
        ptxpy.atomic_add(local, x[i] % BINS, u32(1))
    ptxpy.syncthreads()
    if t < BINS:
        ptxpy.atomic_add(hist, t, local[t])
""")
    x = rng.integers(-1000, 1000, 1000).astype(np.int32)
    (hist,) = run(source, "histogram", [x, Out(16, np.uint32)], grid=8, block=128)
    np.testing.assert_array_equal(hist, np.bincount(x % 16, minlength=16))
    # the counts' old values are unused: `red`, not `atom`
    assert "red.shared.add.u32" in compile_source(source, "histogram").ptx


# --- vector access -------------------------------------------------------------------------
def test_vector_copy_ptx_is_one_load_and_one_store():
    source = src("""
@ptxpy.jit
def copy4(x: Array[f32], out: Array[f32]):
    i = ptxpy.global_id(0) * 4
    if i < x.shape[0]:
        a, b, c, d = x[i:i + 4]
        out[i:i + 4] = (a, b, c, d)
""")
    x = rng.standard_normal(256).astype(np.float32)
    (out,) = run(source, "copy4", [x, Out(256, np.float32)], grid=2, block=32)
    np.testing.assert_array_equal(out, x)
    ptx = body_of(compile_source(source, "copy4").ptx)
    assert ptx.count("ld.global.nc.v4.f32") == 1 and ptx.count("st.global.v4.f32") == 1
    assert not re.search(r"\bcvt\.", ptx) and "ld.global.f32" not in ptx and "st.global.f32" not in ptx


@pytest.mark.parametrize("t,dtype,width,ptx_type", [
    ("f64", np.float64, 2, "v2.f64"), ("i32", np.int32, 2, "v2.s32"), ("f16", np.float16, 8, "v4.b32"),
    ("bf16", BF16, 4, "v4.b16"), ("u8", np.uint8, 4, None)])
def test_vector_widths_and_types(t, dtype, width, ptx_type):
    names = ", ".join(f"v{k}" for k in range(width))
    rev = ", ".join(f"v{k}" for k in reversed(range(width)))
    source = src(f"""
@ptxpy.jit
def rev(x: Array[{t}], out: Array[{t}]):
    i = ptxpy.global_id(0) * {width}
    {names} = x[i:i + {width}]
    out[i:i + {width}] = ({rev})
""")
    x = (rng.standard_normal(32 * width) * 50).astype(dtype)
    (out,) = run(source, "rev", [x, Out(32 * width, dtype)], grid=1, block=32)
    np.testing.assert_array_equal(out, x.reshape(32, width)[:, ::-1].ravel())
    if ptx_type:
        assert f"ld.global.nc.{ptx_type}" in compile_source(source, "rev").ptx


def test_vector_access_on_the_last_dimension_of_2d_global_and_shared_arrays():
    source = src("""
@ptxpy.jit
def rows(x: Array[f32, 2], out: Array[f32, 2]):
    tile = ptxpy.shared_array((2, 8), f32)
    r = ptxpy.thread_idx.y
    j = ptxpy.thread_idx.x * 4
    a, b = x[r, j:j + 2]
    c, d = x[r, (j + 1) + 1:(j + 1) + 1 + 2]
    tile[r, j:j + 4] = (d, c, b, a)
    ptxpy.syncthreads()
    p, q, s, t = tile[r, j:j + 4]
    out[r, j:j + 4] = (p * 2.0, q, s, t)
""")
    x = rng.standard_normal((2, 8)).astype(np.float32)
    (out,) = run(source, "rows", [x, Out((2, 8), np.float32)], grid=1, block=(2, 2))
    expect = x.reshape(2, 2, 4)[:, :, ::-1].copy()
    expect[:, :, 0] *= 2
    np.testing.assert_array_equal(out, expect.reshape(2, 8))
    ptx = compile_source(source, "rows").ptx
    assert "ld.shared.v4.f32" in ptx and "st.shared.v4.f32" in ptx and "st.global.v4.f32" in ptx


def test_arrays_never_written_are_read_through_the_read_only_path():
    source = src("""
@ptxpy.jit
def rw(x: Array[f32], y: Array[f32], out: Array[f32]):
    i = ptxpy.global_id(0)
    y[i] = y[i] + x[i]
    out[i] = y[i]
""")
    ptx = compile_source(source, "rw").ptx
    assert "ld.global.nc.f32" in ptx and ptx.count("ld.global.nc") == 1


# --- half precision ------------------------------------------------------------------------
def test_half_precision_arithmetic_and_weak_literals():
    source = src("""
@ptxpy.jit
def half(x: Array[f16], y: Array[bf16], h: Array[f16], b: Array[bf16], mixed: Array[f32],
         cmp: Array[i32]):
    i = ptxpy.global_id(0)
    h[i] = x[i] * 2.0 + x[i] / 3.0 - abs(x[i])
    b[i] = y[i] * y[i] + 1.0
    mixed[i] = x[i] + y[i]
    cmp[i] = i32(x[i] < 0.5) + 2 * i32(max(x[i], f16(y[i])) == x[i])
""")
    x = (rng.standard_normal(64) * 4).astype(np.float16)
    y = (rng.standard_normal(64) * 4).astype(BF16)
    h, b, mixed, cmp = run(source, "half", [x, y, Out(64, np.float16), Out(64, BF16),
                                            Out(64, np.float32), Out(64, np.int32)], grid=2, block=32)
    # each operation rounds to the 16-bit type, as f16/bf16 arithmetic does on the GPU
    two, three = np.float16(2), np.float16(3)
    np.testing.assert_array_equal(h, ((x * two) + (x / three)) - np.abs(x))
    np.testing.assert_array_equal(b, (y * y + BF16(1)).astype(BF16))
    np.testing.assert_array_equal(mixed, x.astype(np.float32) + y.astype(np.float32))
    expect_cmp = (x < np.float16(0.5)).astype(np.int32) + 2 * (np.maximum(x, y.astype(np.float16)) == x)
    np.testing.assert_array_equal(cmp, expect_cmp)


def test_unrolled_shared_accesses_share_one_pointer_with_immediate_offsets():
    source = src("""
@ptxpy.jit
def dots(x: Array[f32, 2], out: Array[f32]):
    s = ptxpy.shared_array((16, 64), f32)
    t = ptxpy.thread_idx.x
    for r in range(0, 16, 4):
        s[r + t // 64, t % 64] = x[r + t // 64, t % 64]
    ptxpy.syncthreads()
    acc = 0.0
    for k in range(16):
        for j in ptxpy.static_range(4):
            acc = ptxpy.fma(s[k, t % 16 * 4 + j], s[k, j], acc)
    out[t] = acc
""")
    x = rng.integers(-4, 4, (16, 64)).astype(np.float32)
    (out,) = run(source, "dots", [x, Out(256, np.float32)], grid=1, block=256)
    t = np.arange(256)
    expect = sum(x[:, (t % 16 * 4 + j)] * x[:, j:j + 1] for j in range(4)).sum(axis=0)
    np.testing.assert_array_equal(out, expect)
    ptx = body_of(compile_source(source, "dots").ptx)
    loop = ptx[ptx.index("bar.sync"):]
    assert re.search(r"ld\.shared\.f32 %f\d+, \[%r\d+\+12\]", loop)   # 32-bit shared addresses
    # one pointer per array row walked by k, each advanced once per iteration
    assert loop.count("add.u32") == 2 and "add.s64" not in loop
