"""`ptxpy.wgmma(acc, a_desc, b_desc, dtype, ...)`, `ptxpy.wgmma_desc(s[i], swizzle, lbo, sbo)`,
`wgmma_fence`, `wgmma_commit`, `wgmma_wait` and `fence_proxy_async`: Hopper's warpgroup matrix
multiply (PTX `wgmma.mma_async`, sm_90a). Checked against NumPy in the simulator (on the GPU
with PTXPY_TEST_DEVICE=gpu, where the layouts below are the hardware's to agree with): A and B
of every operand type, K-major and MN-major, with and without each swizzle, N from 8 to 256,
accumulate run-time and constant, two warpgroups; the compile-time errors and the PTX.

A kernel copies A and B into one shared array at element offsets NumPy computes from the
layout under test (`offsets`), so the test, not the kernel, decides where each element lies."""
import os
import re

import ml_dtypes
import numpy as np
import pytest

from kernel_harness import Out, compile_source, run
from ptxpy.runtime.ptx_parser import SimulatorError
from ptxpy.transpiler.errors import CompileError

ON_GPU = os.environ.get("PTXPY_TEST_DEVICE") == "gpu"
HOPPER = ("sm_90",)       # (assembled for sm_90a: an sm_90 kernel with wgmma targets it)

HEADER = """
import ptxpy
from ptxpy import Array, bf16, f16, f32, i8, i32, u8, u64
"""
TYPES = {"bf16": ml_dtypes.bfloat16, "f16": np.float16, "f32": np.float32, "i8": np.int8,
         "u8": np.uint8}
FP8 = {"e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2}   # held as u8 bytes
INTEGER = {"s8": "i8", "u8": "u8"}      # the wgmma's 8-bit kinds: the dtype named
SWIZZLE_W = {0: 1, 32: 2, 64: 4, 128: 8}     # 16-byte chunks in a swizzled row

# the operands are in shared memory (published); each thread's accumulators are loaded from c,
# and after the product stored to out, D's fragment as docs/language.md gives it
ACC_IN = """    ptxpy.fence_proxy_async()
    ptxpy.syncthreads()
    g = t // 128
    lane = t % 32
    q = lane % 4
    row = 64 * g + 16 * ((t % 128) // 32) + lane // 4
    acc = ptxpy.local_array(({N8}, 4), {ACC})
    for j in ptxpy.static_range({N8}):
        for e in ptxpy.static_range(4):
            acc[j, e] = c[row + 8 * (e // 2), 8 * j + 2 * q + e % 2]
    ptxpy.wgmma_fence()
"""
ACC_OUT = """    ptxpy.wgmma_commit()
    ptxpy.wgmma_wait(0)
    for j in ptxpy.static_range({N8}):
        for e in ptxpy.static_range(4):
            out[row + 8 * (e // 2), 8 * j + 2 * q + e % 2] = acc[j, e]
"""
KERNEL = HEADER + """
@ptxpy.jit
def mm(a: Array[{T}, 1], a_at: Array[i32, 1], b: Array[{T}, 1], b_at: Array[i32, 1],
       c: Array[{ACC}, 2], flag: i32, out: Array[{ACC}, 2]):
    s = ptxpy.shared_array(({SIZE},), {T})
    t = ptxpy.thread_idx.x
    for i in range(t, a_at.shape[0], ptxpy.block_dim.x):
        s[a_at[i]] = a[i]
    for i in range(t, b_at.shape[0], ptxpy.block_dim.x):
        s[b_at[i]] = b[i]
""" + ACC_IN + """    da = ptxpy.wgmma_desc(s[{A_START} + g * {A_SIZE}], {SWIZZLE}, {A_LBO}, {A_SBO})
    db = ptxpy.wgmma_desc(s[{B_START}], {SWIZZLE}, {B_LBO}, {B_SBO})
    ptxpy.wgmma(acc, da, db, {DTYPE}, {TRANS}accumulate=flag != 0)
""" + ACC_OUT


def layout(rows: int, k: int, esize: int, swizzle: int, mn_major: bool):
    """(byte offset of each element (rows x k) of an operand from its descriptor's start,
    lbo, sbo, bytes spanned) for a canonical layout of the PTX ISA's wgmma ("Shared Memory
    Matrix Layout"), the start taken 1024-byte aligned (the swizzle XORs address bits)."""
    w, per_chunk = SWIZZLE_W[swizzle], 16 // esize
    r, kk = np.meshgrid(np.arange(rows), np.arange(k), indexing="ij")
    if not mn_major:
        chunk, e = kk // per_chunk, kk % per_chunk
        if swizzle == 0:     # 8 x 16-byte core matrices: the k chunks lbo apart, 8-row groups sbo
            lbo, sbo = 128, 128 * (k // per_chunk)
            off = (r % 8) * 16 + (r // 8) * sbo + chunk * lbo
        else:                # rows of 16w bytes, 8-row atoms sbo apart (lbo unused: 16)
            lbo, sbo = 16, 128 * w
            off = (r % 8) * 16 * w + (r // 8) * sbo + chunk * 16
    else:
        chunk, e, k0, k1 = r // per_chunk, r % per_chunk, kk % 8, kk // 8
        if swizzle == 0:     # core matrices of 8 k rows x 16 bytes: k groups lbo, chunks sbo
            lbo, sbo = 128, 128 * (k // 8)
            off = chunk * sbo + k0 * 16 + k1 * lbo
        else:                # 8 k rows of 16w bytes per atom; atoms along k sbo, along mn lbo
            sbo = 128 * w
            lbo = sbo * (k // 8)
            off = (chunk % w) * 16 + (chunk // w) * lbo + k0 * 16 * w + k1 * sbo
    off = off + e * esize
    if swizzle:
        off = off ^ (((off >> 7) & (w - 1)) << 4)
    span = -(-(int(off.max()) + esize) // 1024) * 1024
    return off, lbo, sbo, span


def wgmma_case(kind: str, n: int, swizzle: int, trans_a=False, trans_b=False, groups=1,
               flag=1, seed=0, a=None, b=None, b_kind=None):
    """Run one wgmma of a 64 x n tile per warpgroup (of random A and B, or of `a` and `b`, the
    accumulators then zeros; B of fp8 format `b_kind` where it differs); compare with NumPy."""
    t = "f32" if kind == "tf32" else "u8" if kind in FP8 else INTEGER.get(kind, kind)
    dtype = FP8.get(kind, TYPES[t])
    esize = np.dtype(dtype).itemsize
    k = 32 // esize
    rng = np.random.default_rng(seed)
    if a is not None:
        c = np.zeros((groups * 64, n), np.float32)
    elif kind in INTEGER:    # the whole range of the type, and sums past 2^24
        info = np.iinfo(dtype)
        a = rng.integers(info.min, info.max + 1, (groups * 64, k)).astype(np.int64)
        b = rng.integers(info.min, info.max + 1, (k, n)).astype(np.int64)
        c = rng.integers(-2 ** 30, 2 ** 30, (groups * 64, n)).astype(np.int64)
    else:
        a = rng.integers(-8, 9, (groups * 64, k)).astype(np.float32) / 4
        b = rng.integers(-8, 9, (k, n)).astype(np.float32) / 4
        c = rng.integers(-64, 65, (groups * 64, n)).astype(np.float32)
    sums = np.int32 if kind in INTEGER else np.float32
    a_off, a_lbo, a_sbo, a_span = layout(64, k, esize, swizzle, trans_a)
    b_off, b_lbo, b_sbo, b_span = layout(n, k, esize, swizzle, trans_b)
    a_size = a_span // esize          # elements per warpgroup's A
    a_at = np.concatenate([a_off.ravel() // esize + g * a_size for g in range(groups)])
    b_start = groups * a_size
    b_at = b_off.ravel() // esize + b_start
    trans = "".join(f"{name}=True, " for name, on in (("trans_a", trans_a), ("trans_b", trans_b)) if on)
    dtype_arg = f'("{kind}", "{b_kind}")' if b_kind else f'"{kind}"' if kind in FP8 else t
    source = (KERNEL.replace("{DTYPE}", dtype_arg)
              .replace("{T}", t).replace("{SIZE}", str(b_start + b_span // esize))
              .replace("{N8}", str(n // 8)).replace("{A_START}", "0").replace("{A_SIZE}", str(a_size))
              .replace("{B_START}", str(b_start)).replace("{SWIZZLE}", str(swizzle))
              .replace("{A_LBO}", str(a_lbo)).replace("{A_SBO}", str(a_sbo))
              .replace("{B_LBO}", str(b_lbo)).replace("{B_SBO}", str(b_sbo)).replace("{TRANS}", trans)
              .replace("{ACC}", "i32" if kind in INTEGER else "f32"))
    a_values = np.concatenate([a[64 * g:64 * g + 64].ravel() for g in range(groups)]).astype(dtype)
    b_values = b.T.ravel().astype(FP8[b_kind] if b_kind else dtype)
    if kind in FP8:          # the kernel's arrays hold the bytes
        a_values, b_values = a_values.view(np.uint8), b_values.view(np.uint8)
    (out,) = run(source, "mm", [a_values, a_at.astype(np.int32), b_values,
                                b_at.astype(np.int32), c.astype(sums), np.int32(flag),
                                Out((groups * 64, n), sums)],
                 1, 128 * groups, archs=HOPPER)
    if kind in INTEGER:
        expected = a @ b + (c if flag else 0)
        np.testing.assert_array_equal(out, expected.astype(np.int32))
        return
    expected = a.astype(np.float64) @ b.astype(np.float64) + (c if flag else 0)
    np.testing.assert_array_equal(out, expected.astype(np.float32))


@pytest.mark.parametrize("kind", ["s8", "u8", "e4m3", "e5m2"])
@pytest.mark.parametrize("swizzle, n", [(0, 8), (32, 24), (64, 48), (128, 256)])
def test_8_bit_integers_and_fp8(kind, swizzle, n):
    wgmma_case(kind, n, swizzle)


@pytest.mark.parametrize("a_kind, b_kind", [("e4m3", "e5m2"), ("e5m2", "e4m3")])
def test_fp8_of_two_formats(a_kind, b_kind):
    wgmma_case(a_kind, 64, 128, b_kind=b_kind)
    ptx = compile_source(HEADER + """
@ptxpy.jit
def k(x: Array[u8, 1]):
    s = ptxpy.shared_array((1024,), u8)
    acc = ptxpy.local_array((4, 4), f32)
    d = ptxpy.wgmma_desc(s[0], 0, 128, 256)
    ptxpy.wgmma(acc, d, d, ("{A}", "{B}"))
""".replace("{A}", a_kind).replace("{B}", b_kind), "k").ptx
    assert f"wgmma.mma_async.sync.aligned.m64n32k32.f32.{a_kind}.{b_kind} {{" in ptx


@pytest.mark.parametrize("kind", ["s8", "e4m3"])
@pytest.mark.parametrize("flag", [0, 1])
def test_8_bit_types_two_warpgroups_and_accumulate(kind, flag):
    wgmma_case(kind, 64, 128, groups=2, flag=flag)


def test_fp8_values_are_decoded_as_the_formats_give_them():
    """Every finite byte of each format, one at a time in A's first column against B = 1s:
    D's first column is A's values (exact in f32), NaNs and infinities left out."""
    for kind, dtype in FP8.items():
        codes = np.arange(256, dtype=np.uint8)
        values = codes.view(dtype).astype(np.float64)
        finite = codes[np.isfinite(values)]
        for start in range(0, finite.size, 64):
            chunk = finite[start:start + 64]
            a = np.zeros((64, 32))
            a[:chunk.size, 0] = chunk.view(dtype).astype(np.float64)
            wgmma_case(kind, 8, 128, flag=0, a=a, b=np.ones((32, 8)))


@pytest.mark.parametrize("kind", ["bf16", "f16", "tf32"])
@pytest.mark.parametrize("swizzle", [0, 32, 64, 128])
def test_k_major_operands_of_each_type_and_swizzle(kind, swizzle):
    wgmma_case(kind, 64, swizzle)


@pytest.mark.parametrize("kind", ["bf16", "f16"])
@pytest.mark.parametrize("swizzle", [0, 32, 64, 128])
@pytest.mark.parametrize("trans_a, trans_b", [(False, True), (True, False), (True, True)])
def test_mn_major_operands(kind, swizzle, trans_a, trans_b):
    wgmma_case(kind, 128, swizzle, trans_a, trans_b)


@pytest.mark.parametrize("n", [8, 16, 136, 256])
def test_each_width_n(n):
    wgmma_case("bf16", n, 128, trans_b=True)


@pytest.mark.parametrize("flag", [0, 1])
def test_accumulate_false_at_run_time_ignores_the_accumulators(flag):
    wgmma_case("f16", 32, 64, flag=flag)


def test_two_warpgroups_with_their_own_a():
    wgmma_case("bf16", 64, 128, trans_b=True, groups=2)


# A in registers: each thread gives its fragment of A (mma_sync's A, warp w holding rows 16w to
# 16w + 15 of its warpgroup's 64), straight from global memory; B through shared memory as above,
# one region per k step. Two steps put two products with their own fragments in one batch.
RS_KERNEL = HEADER + """
@ptxpy.jit
def mm(a: Array[{T}, 2], b: Array[{T}, 1], b_at: Array[i32, 1], c: Array[{ACC}, 2], flag: i32,
       out: Array[{ACC}, 2]):
    s = ptxpy.shared_array(({SIZE},), {T})
    t = ptxpy.thread_idx.x
    for i in range(t, b_at.shape[0], ptxpy.block_dim.x):
        s[b_at[i]] = b[i]
""" + ACC_IN + """    for step in ptxpy.static_range({STEPS}):
        k = {K} * step
{LOADS}        db = ptxpy.wgmma_desc(s[{B_SIZE} * step], {SWIZZLE}, {B_LBO}, {B_SBO})
        ptxpy.wgmma(acc, {FRAGMENT}, db, {DTYPE}, {TRANS}accumulate=step > 0 or flag != 0)
""" + ACC_OUT
FRAGMENTS = {   # the thread's A elements, (row, column) as the PTX ISA's fragment figures give
    16: "(a[row, k + 2 * q], a[row, k + 2 * q + 1], a[row + 8, k + 2 * q], "
        "a[row + 8, k + 2 * q + 1], a[row, k + 2 * q + 8], a[row, k + 2 * q + 9], "
        "a[row + 8, k + 2 * q + 8], a[row + 8, k + 2 * q + 9])",
    8: "(a[row, k + q], a[row + 8, k + q], a[row, k + q + 4], a[row + 8, k + q + 4])",
    32: "(" + ", ".join(f"a[row + {8 * ((i >> 2) & 1)}, k + 4 * q + {(i & 3) + 16 * (i >> 3)}]"
                        for i in range(16)) + ")",
}


# 8-bit A by 4-byte slices: each register's four bytes one word load (no packing)
WORD_LOADS = "".join(f"        a{4 * j}, a{4 * j + 1}, a{4 * j + 2}, a{4 * j + 3} = "
                     f"a[row + {8 * (j % 2)}, k + 4 * q + {16 * (j // 2)}:k + 4 * q + "
                     f"{16 * (j // 2) + 4}]\n" for j in range(4))


def register_a_case(kind: str, n: int, swizzle: int, trans_b=False, groups=1, flag=1, steps=1,
                    seed=1, words=False):
    """Run `steps` wgmmas with A in registers on a 64 x n tile per warpgroup; compare with NumPy.
    `words`: 8-bit A loaded four bytes at a time (WORD_LOADS)."""
    t = "f32" if kind == "tf32" else "u8" if kind in FP8 else INTEGER.get(kind, kind)
    dtype = FP8.get(kind, TYPES[t])
    esize = np.dtype(dtype).itemsize
    k = 32 // esize
    rng = np.random.default_rng(seed)
    a = rng.integers(-8, 9, (groups * 64, k * steps)).astype(np.float32) / 4
    b = rng.integers(-8, 9, (k * steps, n)).astype(np.float32) / 4
    c = rng.integers(-64, 65, (groups * 64, n)).astype(np.float32)
    sums = np.float32
    if kind in INTEGER:          # integers over the type's range, i32 sums
        info = np.iinfo(dtype)
        a, b = (rng.integers(info.min, info.max + 1, x.shape) for x in (a, b))
        c, sums = c.astype(np.int32), np.int32
    b_off, b_lbo, b_sbo, b_span = layout(n, k, esize, swizzle, trans_b)
    b_size = b_span // esize
    b_at = np.concatenate([b_off.ravel() // esize + step * b_size for step in range(steps)])
    b_values = np.concatenate([b[k * step:k * step + k].T.ravel() for step in range(steps)])
    source = (RS_KERNEL.replace("{DTYPE}", f'"{kind}"' if kind in FP8 else t)
              .replace("{T}", t).replace("{SIZE}", str(steps * b_size))
              .replace("{N8}", str(n // 8)).replace("{STEPS}", str(steps)).replace("{K}", str(k))
              .replace("{B_SIZE}", str(b_size)).replace("{SWIZZLE}", str(swizzle))
              .replace("{B_LBO}", str(b_lbo)).replace("{B_SBO}", str(b_sbo))
              .replace("{LOADS}", WORD_LOADS if words else "")
              .replace("{FRAGMENT}", "(" + ", ".join(f"a{i}" for i in range(16)) + ")" if words
                       else FRAGMENTS[k])
              .replace("{TRANS}", "trans_b=True, " if trans_b else "")
              .replace("{ACC}", "i32" if kind in INTEGER else "f32"))
    a_values, b_values = a.astype(dtype), b_values.astype(dtype)
    if kind in FP8:              # the kernel's arrays hold the bytes
        a_values, b_values = a_values.view(np.uint8), b_values.view(np.uint8)
    (out,) = run(source, "mm", [a_values, b_values, b_at.astype(np.int32), c, np.int32(flag),
                                Out((groups * 64, n), sums)],
                 1, 128 * groups, archs=HOPPER)
    if kind in INTEGER:
        expected = a.astype(np.int64) @ b.astype(np.int64) + (c if flag else 0)
        np.testing.assert_array_equal(out, expected.astype(np.int32))
        return source
    expected = a.astype(np.float64) @ b.astype(np.float64) + (c if flag else 0)
    np.testing.assert_array_equal(out, expected.astype(np.float32))
    return source


@pytest.mark.parametrize("kind", ["bf16", "f16", "tf32", "s8", "u8", "e4m3", "e5m2"])
def test_a_in_registers_of_each_type(kind):
    register_a_case(kind, 64, 128)


@pytest.mark.parametrize("kind", ["s8", "e4m3"])
def test_8_bit_a_in_registers_two_steps_and_warpgroups(kind):
    register_a_case(kind, 32, 64, groups=2, steps=2)


@pytest.mark.parametrize("kind", ["u8", "e5m2"])
def test_8_bit_a_in_registers_loaded_as_words(kind):
    source = register_a_case(kind, 64, 128, steps=2, words=True)
    ptx = compile_source(source, "mm").ptx
    assert ptx.count("ld.global.nc.b32") == 8 and "prmt" not in ptx


@pytest.mark.parametrize("kind, trans_b", [("bf16", True), ("f16", False), ("tf32", False)])
def test_a_in_registers_two_steps_in_one_batch(kind, trans_b):
    register_a_case(kind, 32, 64, trans_b=trans_b, steps=2)


@pytest.mark.parametrize("n, flag", [(8, 1), (256, 0)])
def test_a_in_registers_each_width_and_accumulate_false(n, flag):
    register_a_case("bf16", n, 128, trans_b=True, flag=flag)


def test_a_in_registers_two_warpgroups():
    register_a_case("f16", 64, 32, groups=2, steps=2)


# flash attention's P @ V: f32 products converted to bf16 fragments before the batch, B (k, n)
# K-major in rows of 64 k with the 128-byte swizzle
PREPACKED = HEADER + """
@ptxpy.jit
def k(p: Array[f32, 2], y: Array[bf16, 2], out: Array[f32, 2]):
    s = ptxpy.shared_array((64, 64), bf16)
    t = ptxpy.thread_idx.x
    for i in range(t, 64 * 64, 128):
        n = i // 64
        c = (i % 64) // 8
        s[n, (c ^ (n % 8)) * 8 + i % 8] = y[i % 64, n]
    ptxpy.fence_proxy_async()
    ptxpy.syncthreads()
    lane = t % 32
    row = 16 * (t // 32) + lane // 4
    q = lane % 4
    pb = ptxpy.local_array((4, 8), bf16)
    for kk in ptxpy.static_range(4):
        for e in ptxpy.static_range(8):
            pb[kk, e] = bf16(p[row + 8 * ((e // 2) % 2), 16 * kk + 2 * q + e % 2 + 8 * (e // 4)])
    acc = ptxpy.local_array((8, 4), f32)
    ptxpy.wgmma_fence()
    for kk in ptxpy.static_range(4):
        ptxpy.wgmma(acc, (pb[kk, 0], pb[kk, 1], pb[kk, 2], pb[kk, 3], pb[kk, 4], pb[kk, 5],
                          pb[kk, 6], pb[kk, 7]),
                    ptxpy.wgmma_desc(s[0, 16 * kk], 128, 16, 1024), bf16, accumulate=kk > 0)
    ptxpy.wgmma_commit()
    ptxpy.wgmma_wait(0)
    for j in ptxpy.static_range(8):
        for e in ptxpy.static_range(4):
            out[row + 8 * (e // 2), 8 * j + 2 * q + e % 2] = acc[j, e]
"""


def test_fragments_computed_before_the_fence_are_packed_before_it():
    """A fragment's registers are written where its values are computed, here before
    `wgmma_fence()`, so no register is written between the batch's wgmmas (ptxas fences again
    before such a wgmma: its note C7519)."""
    rng = np.random.default_rng(3)
    p = (rng.integers(-8, 9, (64, 64)) / 4).astype(np.float32)
    y = (rng.integers(-8, 9, (64, 64)) / 4).astype(ml_dtypes.bfloat16)
    (out,) = run(PREPACKED, "k", [p, y, Out((64, 64), np.float32)], 1, 128, archs=HOPPER)
    expected = p.astype(np.float64) @ y.astype(np.float64)
    np.testing.assert_array_equal(out, expected.astype(np.float32))
    ptx = compile_source(PREPACKED, "k").ptx
    batch = ptx[ptx.index("wgmma.fence"):ptx.index("wgmma.commit_group")]
    products = re.findall(r"wgmma\.mma_async\.sync\.aligned\.m64n64k16\.f32\.bf16\.bf16 "
                          r"\{[^}]*\}, \{(%r\d+), (%r\d+), (%r\d+), (%r\d+)\}, %rd\d+, [01], 1, "
                          r"1, 0;", batch)
    assert len(products) == 4 and len({r for p in products for r in p}) == 16
    assert "mov.b32" not in batch and "cvt" not in batch
    # each register's two f32 values rounded to bf16 together (_plan_paired_conversions)
    assert ptx.count("cvt.rn.bf16x2.f32") == 16 and "cvt.rn.bf16.f32" not in ptx


LOOP_CARRIED = HEADER + """
@ptxpy.jit
def k(x: Array[f16, 2], y: Array[f16, 2], n: i32, out: Array[f32, 2]):
    s = ptxpy.shared_array((8, 64), f16)       # B (k, n): 16 x 32, K-major, no swizzle
    t = ptxpy.thread_idx.x
    for i in range(t, 16 * 32, 128):
        kk = i % 16
        c = i // 16
        s[(c // 8) * 2 + kk // 8, (c % 8) * 8 + kk % 8] = y[kk, c]
    ptxpy.fence_proxy_async()
    ptxpy.syncthreads()
    lane = t % 32
    row = 16 * (t // 32) + lane // 4
    q = lane % 4
    a = ptxpy.local_array((8,), f16)
    for e in ptxpy.static_range(8):
        a[e] = x[row + 8 * ((e // 2) % 2), 2 * q + e % 2 + 8 * (e // 4)]
    acc = ptxpy.local_array((4, 4), f32)
    for it in range(n):          # acc += (x + it) y, the fragment carried round the loop
        ptxpy.wgmma_fence()
        ptxpy.wgmma(acc, (a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]),
                    ptxpy.wgmma_desc(s[0, 0], 0, 128, 256), f16, accumulate=it > 0)
        ptxpy.wgmma_commit()
        ptxpy.wgmma_wait(0)
        for e in ptxpy.static_range(8):
            a[e] += 1
    for j in ptxpy.static_range(4):
        for e in ptxpy.static_range(4):
            out[row + 8 * (e // 2), 8 * j + 2 * q + e % 2] = acc[j, e]
"""


def test_fragments_carried_round_a_loop_are_packed_at_its_top():
    rng = np.random.default_rng(4)
    x = rng.integers(-4, 5, (64, 16)).astype(np.float16)
    y = rng.integers(-4, 5, (16, 32)).astype(np.float16)
    (out,) = run(LOOP_CARRIED, "k", [x, y, np.int32(3), Out((64, 32), np.float32)], 1, 128,
                 archs=HOPPER)
    expected = sum((x.astype(np.float64) + it) @ y.astype(np.float64) for it in range(3))
    np.testing.assert_array_equal(out, expected.astype(np.float32))
    ptx = compile_source(LOOP_CARRIED, "k").ptx
    batch = ptx[ptx.index("wgmma.fence"):ptx.index("wgmma.commit_group")]
    assert batch.count("wgmma.mma_async") == 1 and "mov.b32" not in batch
    assert ptx.count("mov.b32 %r") == 4     # once, at the loop's top


# a loop of steps over K with the accumulators in registers throughout, and accumulate=False
# on the first step (no zeros written), as a matmul's main loop is
LOOP = HEADER + """
@ptxpy.jit
def loop(x: Array[bf16, 2], y: Array[bf16, 2], out: Array[f32, 2]):
    xs = ptxpy.shared_array((64, 64), bf16)     # A: 64 x 64, K-major, 128-byte swizzle
    ys = ptxpy.shared_array((32, 16), bf16)     # B: N = 32, K-major, 32-byte swizzle
    acc = ptxpy.local_array((16,), f32)
    t = ptxpy.thread_idx.x
    for kt in range(x.shape[1] // 64):
        ptxpy.syncthreads()
        for i in range(t, 64 * 8, 128):          # 16-byte chunk i % 8 of row i // 8
            r = i // 8
            c = i % 8
            for e in ptxpy.static_range(8):
                xs[r, (c ^ (r % 8)) * 8 + e] = x[r, kt * 64 + c * 8 + e]
        ptxpy.fence_proxy_async()
        ptxpy.syncthreads()
        ptxpy.wgmma_fence()
        for k in ptxpy.static_range(0, 64, 16):
            ptxpy.syncthreads()
            for i in range(t, 32 * 2, 128):
                r = i // 2
                c = i % 2
                for e in ptxpy.static_range(8):
                    ys[r, (c ^ ((r // 4) % 2)) * 8 + e] = y[kt * 64 + k + c * 8 + e, r]
            ptxpy.fence_proxy_async()
            ptxpy.syncthreads()
            ptxpy.wgmma(acc, ptxpy.wgmma_desc(xs[0, k], 128, 16, 1024),
                        ptxpy.wgmma_desc(ys[0, 0], 32, 16, 256), bf16,
                        accumulate=kt + k > 0)
            ptxpy.wgmma_commit()
            ptxpy.wgmma_wait(0)
    lane = t % 32
    row = 16 * (t // 32) + lane // 4
    for j in ptxpy.static_range(4):
        for e in ptxpy.static_range(4):
            out[row + 8 * (e // 2), 8 * j + 2 * (lane % 4) + e % 2] = acc[4 * j + e]
"""


def test_a_loop_over_k_with_a_kernel_swizzling_its_own_tiles():
    rng = np.random.default_rng(5)
    x = (rng.integers(-8, 9, (64, 192)) / 4).astype(ml_dtypes.bfloat16)
    y = (rng.integers(-8, 9, (192, 32)) / 4).astype(ml_dtypes.bfloat16)
    (out,) = run(LOOP, "loop", [x, y, Out((64, 32), np.float32)], 1, 128, archs=HOPPER)
    expected = x.astype(np.float64) @ y.astype(np.float64)
    np.testing.assert_array_equal(out, expected.astype(np.float32))


@pytest.mark.skipif(ON_GPU, reason="the simulator's check")
def test_a_buffer_reloaded_after_the_wait_needs_a_barrier():
    """wgmma_wait is per warp: without the barrier after it, a thread's store to B (read by every
    warp's part of the product) may land while another warp's part still reads it."""
    source = LOOP.replace("            ptxpy.syncthreads()\n            for i in range(t, 32 * 2",
                          "            for i in range(t, 32 * 2")
    assert source != LOOP
    x = np.zeros((64, 128), ml_dtypes.bfloat16)
    y = np.zeros((128, 32), ml_dtypes.bfloat16)
    with pytest.raises(SimulatorError, match=r"kernels.py:\d+: `st.shared.* writes shared offset "
                                             r"0x[0-9a-f]+, which a wgmma of warpgroup 0 .* may "
                                             r"still be reading in another warp: .*add a barrier "
                                             r"after it \(ptxpy.syncthreads\(\)\)"):
        run(source, "loop", [x, y, Out((64, 32), np.float32)], 1, 128, archs=HOPPER)


# --- compile-time errors, the launch check and the PTX --------------------------------------------

def compile_error(body: str, arch: str = "sm_90") -> str:
    """The first line of the CompileError of a kernel with this body (its line 13 onwards)."""
    with pytest.raises(CompileError) as info:
        compile_source(HEADER + """
@ptxpy.jit
def k(x: Array[bf16, 2], n: i32):
    s = ptxpy.shared_array((64, 64), bf16)
    acc = ptxpy.local_array((8, 4), f32)
    wrong = ptxpy.local_array((6,), f32)
    ints = ptxpy.local_array((32,), i32)
    d = ptxpy.wgmma_desc(s[0, 0], 128, 16, 1024)
""" + body, "k", arch=arch)
    return str(info.value).splitlines()[0]


@pytest.mark.parametrize("body, message", [
    ("    ptxpy.wgmma(wrong, d, d, bf16)\n",
     "kernels.py:12:5: error: ptxpy.wgmma takes N / 2 accumulators per thread for a 64 x N tile, "
     "N a multiple of 8 up to 256 (4, 8, ..., 128 f32); 'wrong' has 6"),
    ("    ptxpy.wgmma(ints, d, d, bf16)\n",
     "kernels.py:12:17: error: the accumulators of ptxpy.wgmma are a local f32 array; 'ints' "
     "holds i32"),
    ("    ptxpy.wgmma(s, d, d, bf16)\n",
     "kernels.py:12:17: error: the accumulators of ptxpy.wgmma are a local f32 array; 's' holds "
     "bf16"),
    ("    ptxpy.wgmma(acc, d, d, i32)\n",
     "kernels.py:12:28: error: the dtype of ptxpy.wgmma is f16, bf16, f32 (tf32 products), i8, u8, "
     "\"e4m3\" or \"e5m2\" (fp8; a pair of them for A and B), got 'i32'"),
    ("    ptxpy.wgmma(acc, d, d, \"e4m4\")\n",
     "kernels.py:12:28: error: the dtype of ptxpy.wgmma is f16, bf16, f32 (tf32 products), i8, u8, "
     "\"e4m3\" or \"e5m2\" (fp8; a pair of them for A and B), got '\"e4m4\"'"),
    ("    ptxpy.wgmma(acc, d, d, (\"e4m3\", bf16))\n",
     "kernels.py:12:29: error: the dtype of ptxpy.wgmma is f16, bf16, f32 (tf32 products), i8, u8, "
     "\"e4m3\" or \"e5m2\" (fp8; a pair of them for A and B), got '(\"e4m3\", bf16)'"),
    ("    ptxpy.wgmma(ints, d, d, \"e5m2\")\n",
     "kernels.py:12:17: error: the accumulators of ptxpy.wgmma are a local f32 array; 'ints' "
     "holds i32"),
    ("    ptxpy.wgmma(acc, d, d, \"e4m3\", trans_b=True)\n",
     "kernels.py:12:44: error: ptxpy.wgmma of e4m3 reads A and B K-major only: trans_b=True needs "
     "f16 or bf16"),
    ("    v = x[0, 0]\n    ptxpy.wgmma(acc, (v, v, v, v, v, v, v, v), d, \"e4m3\")\n",
     "kernels.py:13:23: error: the A fragment of ptxpy.wgmma of e4m3 is a tuple of 16 u8 values "
     "(the thread's elements of A, as mma_sync's a), got '(v, v, v, v, v, v, v, v)'"),
    ("    ptxpy.wgmma(acc, d, d, i8)\n",
     "kernels.py:12:17: error: the accumulators of ptxpy.wgmma of i8 are a local i32 array; 'acc' "
     "holds f32"),
    ("    ptxpy.wgmma(ints, d, d, u8, trans_b=True)\n",
     "kernels.py:12:41: error: ptxpy.wgmma of u8 reads A and B K-major only: trans_b=True needs "
     "f16 or bf16"),
    ("    v = x[0, 0]\n    ptxpy.wgmma(ints, (v, v, v, v, v, v, v, v, v, v, v, v, v, v, v, v), d, "
     "i8)\n",
     "kernels.py:13:24: error: ptxpy.wgmma: 'v' is bf16, where i8 is needed (cast it: i8(...))"),
    ("    ints20 = ptxpy.local_array((20,), i32)\n    ptxpy.wgmma(ints20, d, d, i8)\n",
     "kernels.py:13:5: error: ptxpy.wgmma of 8-bit integers takes N / 2 accumulators per thread "
     "for a 64 x N tile, N 8, 16, 24 or a multiple of 16 up to 256 (4, 8, 12, 16, 24, ..., 128 "
     "i32); 'ints20' has 20"),
    ("    ptxpy.wgmma(acc, d, d, f32, trans_b=True)\n",
     "kernels.py:12:41: error: ptxpy.wgmma of f32 (tf32) reads A and B K-major only: "
     "trans_b=True needs f16 or bf16"),
    ("    ptxpy.wgmma(acc, d, d, bf16, trans_a=1)\n",
     "kernels.py:12:42: error: trans_a= of ptxpy.wgmma is True or False, got 1"),
    ("    ptxpy.wgmma(acc, d, 1.5, bf16)\n",
     "kernels.py:12:25: error: b_desc of ptxpy.wgmma is a u64 descriptor (ptxpy.wgmma_desc), got "
     "f32"),
    ("    ptxpy.wgmma(acc, d, d, bf16, True)\n",
     "kernels.py:12:5: error: ptxpy.wgmma() takes acc, a_desc, b_desc and dtype, then trans_a=, "
     "trans_b= and accumulate= by keyword (5 given)"),
    ("    ptxpy.wgmma(acc, 2.5, d, bf16)\n",
     "kernels.py:12:22: error: a_desc of ptxpy.wgmma is a u64 descriptor (ptxpy.wgmma_desc) or a "
     "tuple of the thread's fragment, got f32"),
    ("    ptxpy.wgmma(acc, (x[0, 0], x[0, 1]), d, bf16)\n",
     "kernels.py:12:23: error: the A fragment of ptxpy.wgmma of bf16 is a tuple of 8 bf16 values "
     "(the thread's elements of A, as mma_sync's a), got '(x[0, 0], x[0, 1])'"),
    ("    ptxpy.wgmma(acc, (1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0), d, f32)\n",
     "kernels.py:12:23: error: the A fragment of ptxpy.wgmma of f32 is a tuple of 4 f32 values "
     "(the thread's elements of A, as mma_sync's a), got '(1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, "
     "8.0)'"),
    ("    v = x[0, 0]\n    ptxpy.wgmma(acc, (v, v, v, v, v, v, v, v), d, bf16, trans_a=True)\n",
     "kernels.py:13:65: error: trans_a= of ptxpy.wgmma needs A in shared memory: a fragment in "
     "registers is read as it is"),
    ("    v = x[0, 0]\n    ptxpy.wgmma(acc, (v, v, v, v, v, v, v, 1.5 * n), d, bf16)\n",
     "kernels.py:13:44: error: ptxpy.wgmma: '1.5 * n' is f32, where bf16 is needed (cast it: "
     "bf16(...))"),
    ("    e = ptxpy.wgmma_desc(x[0, 0], 128, 16, 1024)\n",
     "kernels.py:12:9: error: ptxpy.wgmma_desc describes a matrix in shared memory: its matrix "
     "'x' is in global memory"),
    ("    e = ptxpy.wgmma_desc(s[0, 0:8], 128, 16, 1024)\n",
     "kernels.py:12:26: error: the matrix of ptxpy.wgmma_desc is the element it starts at "
     "(s[i, j]), got 's[0, 0:8]'"),
    ("    e = ptxpy.wgmma_desc(s[0, 0], 16, 16, 1024)\n",
     "kernels.py:12:35: error: the swizzle of ptxpy.wgmma_desc is 0, 32, 64 or 128 (bytes), "
     "got 16"),
    ("    e = ptxpy.wgmma_desc(s[0, 0], 128, 8, 1024)\n",
     "kernels.py:12:40: error: lbo= of ptxpy.wgmma_desc is a byte offset, a multiple of 16 from 0 "
     "to 262128, got 8"),
    ("    e = ptxpy.wgmma_desc(s[0, 0], 128, 16, 1 << 18)\n",
     "kernels.py:12:44: error: sbo= of ptxpy.wgmma_desc is a byte offset, a multiple of 16 from 0 "
     "to 262128, got 262144"),
    ("    ptxpy.wgmma_wait(8)\n",
     "kernels.py:12:22: error: ptxpy.wgmma_wait(n) needs a constant n from 0 to 7 (the newest "
     "groups that may still be in flight), got 8"),
    ("    ptxpy.wgmma_wait()\n",
     "kernels.py:12:5: error: ptxpy.wgmma_wait() takes 1 argument (0 given)"),
    ("    ptxpy.wgmma_fence(1)\n",
     "kernels.py:12:5: error: ptxpy.wgmma_fence() takes 0 arguments (1 given)"),
])
def test_errors(body, message):
    assert compile_error(body) == message


def test_a_swizzled_descriptor_needs_an_array_of_constant_shape():
    with pytest.raises(CompileError) as info:
        compile_source(HEADER + """
@ptxpy.jit
def k(x: Array[bf16, 2], out: Array[u64, 1]):
    s = ptxpy.shared_array((ptxpy.block_dim.x, 64), bf16)
    out[0] = ptxpy.wgmma_desc(s[0, 0], 128, 16, 1024)
    out[1] = ptxpy.wgmma_desc(s[0, 0], 0, 128, 256)
""", "k")
    assert str(info.value).splitlines()[0] == (
        "kernels.py:8:14: error: a swizzled ptxpy.wgmma_desc needs 's' on a 1024-byte boundary, "
        "which an array sized at launch is not: give it a constant shape")


@pytest.mark.parametrize("arch, name, needs", [
    ("sm_80", "wgmma_fence", "sm_90 (Hopper: sm_90a)"),
    ("sm_100", "wgmma_commit", "sm_90 (Hopper: sm_90a)"),
    ("sm_89", "fence_proxy_async", "sm_90 or newer"),
])
def test_hopper_targets_only(arch, name, needs):
    assert compile_error(f"    ptxpy.{name}()\n", arch) == (
        f"kernels.py:12:5: error: ptxpy.{name} needs {needs}; the target is {arch}")


def test_wgmma_in_sm_90a_ptx():
    ptx = compile_source(LOOP, "loop").ptx
    assert re.search(r"^\.version 8\.0\n\.target sm_90a$", ptx, flags=re.M)
    assert ".shared .align 1024 .b8 smem_xs[8192];" in ptx
    assert ".shared .align 256 .b8 smem_ys[1024];" in ptx
    mma = re.findall(r"wgmma\.mma_async\.sync\.aligned\.m64n32k16\.f32\.bf16\.bf16 "
                     r"\{(%f\d+(?:, %f\d+)*)\}, %rd\d+, %rd\d+, (!?%p\d+), 1, 1, 0, 0;", ptx)
    assert len(mma) == 4 and len(mma[0][0].split(", ")) == 16
    # the accumulators keep their registers through the loop: no instruction but the
    # wgmma writes them before the stores after it
    accumulators = set(mma[0][0].split(", "))
    assert all(set(m[0].split(", ")) == accumulators for m in mma)
    body = ptx[ptx.index("wgmma.fence"):ptx.rindex("wgmma.wait_group")]
    written = re.findall(r"^\s+(?!wgmma)\S+ (%f\d+),", body, flags=re.M)
    assert not accumulators & set(written)
    for name in ("fence", "commit_group"):
        assert f"wgmma.{name}.sync.aligned;" in ptx
    assert "wgmma.wait_group.sync.aligned 0;" in ptx
    assert "fence.proxy.async.shared::cta;" in ptx


def test_a_constant_accumulate_is_an_immediate():
    source = KERNEL.replace("accumulate=flag != 0", "accumulate=False")
    for key, value in (("{DTYPE}", "f16"), ("{T}", "f16"), ("{SIZE}", "8192"), ("{N8}", "1"), ("{A_START}", "0"),
                       ("{A_SIZE}", "0"), ("{B_START}", "4096"), ("{SWIZZLE}", "0"),
                       ("{A_LBO}", "128"), ("{A_SBO}", "256"), ("{B_LBO}", "128"),
                       ("{B_SBO}", "256"), ("{TRANS}", ""), ("{ACC}", "f32")):
        source = source.replace(key, value)
    ptx = compile_source(source, "mm").ptx
    assert re.search(r"wgmma\.mma_async\.sync\.aligned\.m64n8k16\.f32\.f16\.f16 \{%f\d+, %f\d+, "
                     r"%f\d+, %f\d+\}, %rd\d+, %rd\d+, 0, 1, 1, 0, 0;", ptx)


def test_the_descriptor_bits():
    """start / 16 in bits 0-13, lbo / 16 in 16-29, sbo / 16 in 32-45, the swizzle mode in 62-63:
    the kernel writes its descriptors out (the array's address is the simulator's or the GPU's,
    so only the fixed bits and the distance between two starts are compared)."""
    source = HEADER + """
@ptxpy.jit
def descs(out: Array[u64, 1]):
    s = ptxpy.shared_array((4096,), f16)
    out[0] = ptxpy.wgmma_desc(s[0], 128, 16, 1024)
    out[1] = ptxpy.wgmma_desc(s[16], 64, 4096, 512)
    out[2] = ptxpy.wgmma_desc(s[1024], 32, 262128, 256)
    out[3] = ptxpy.wgmma_desc(s[8], 0, 128, 256)
"""
    (out,) = run(source, "descs", [Out(4, np.uint64)], 1, 1, archs=HOPPER)
    start = out & 0x3FFF
    assert list(start - start[0]) == [0, 2, 128, 1]
    assert list(out >> 14 << 14) == [1 << 62 | 1 << 16 | 64 << 32, 2 << 62 | 256 << 16 | 32 << 32,
                                      3 << 62 | 16383 << 16 | 16 << 32, 8 << 16 | 16 << 32]
    assert int(start[0]) * 16 % 1024 == 0       # the array is aligned for the 128-byte swizzle


@pytest.mark.skipif(ON_GPU, reason="the simulator's check; on the GPU a partial warpgroup hangs "
                                   "or is undefined")
def test_the_simulator_requires_whole_warpgroups():
    with pytest.raises(SimulatorError, match="128"):
        run(LOOP, "loop", [np.zeros((64, 64), ml_dtypes.bfloat16),
                           np.zeros((64, 32), ml_dtypes.bfloat16), Out((64, 32), np.float32)],
            1, 96, archs=HOPPER)


def test_the_launch_check_asks_for_whole_warpgroups():
    from ptxpy.runtime import launch

    kernel = compile_source(LOOP, "loop")
    assert kernel.options.get("whole_warpgroups_only")
    limits = launch.driver.DeviceLimits(arch=90)
    launch.check_limits(kernel, (1, 1, 1), (256, 1, 1), limits)
    with pytest.raises(ValueError, match=r"block \(96, 1, 1\) has 96 threads, not a multiple of "
                                         r"128: the kernel calls ptxpy.wgmma"):
        launch.check_limits(kernel, (1, 1, 1), (96, 1, 1), limits)


# The simulator's check of a wgmma reading shared bytes a cp.async has not landed yet (the
# tensor cores would read whatever is there): without the wait it raises, with it it runs
UNLANDED = HEADER + """
@ptxpy.jit
def unlanded(x: Array[bf16, 2], out: Array[f32, 2]):
    s = ptxpy.shared_array((64, 64), bf16)
    t = ptxpy.thread_idx.x
    for r in ptxpy.static_range(0, 64, 16):
        row = t // 8 + r
        c = (t % 8) * 8
        ptxpy.cp_async(s[row, c:c + 8], x[row, c:c + 8])
    ptxpy.cp_async_commit()
    {WAIT}
    ptxpy.fence_proxy_async()
    ptxpy.syncthreads()
    acc = ptxpy.local_array((8, 4), f32)
    ptxpy.wgmma_fence()
    d = ptxpy.wgmma_desc(s[0, 0], 0, 128, 1024)
    ptxpy.wgmma(acc, d, d, bf16, accumulate=False)
    ptxpy.wgmma_commit()
    ptxpy.wgmma_wait(0)
    for j in ptxpy.static_range(8):
        for e in ptxpy.static_range(4):
            out[t, 4 * j + e] = acc[j, e]
"""


@pytest.mark.skipif(ON_GPU, reason="the simulator's check; on the GPU the product reads stale bytes")
def test_a_wgmma_reading_bytes_a_copy_has_not_landed_is_an_error():
    x = np.ones((64, 64), ml_dtypes.bfloat16)
    args = [x, Out((128, 32), np.float32)]
    (out,) = run(UNLANDED.replace("{WAIT}", "ptxpy.cp_async_wait(0)"), "unlanded", args, 1, 128,
                 archs=HOPPER)
    np.testing.assert_array_equal(out, 16.0)      # every element: K = 16 ones times ones
    with pytest.raises(SimulatorError, match=r"`wgmma\.mma_async\.sync\.aligned\.m64n64k16\.f32\."
                                             r"bf16\.bf16 \{%f\d+, \.\.\., %f\d+\}, %rd\d+, %rd\d+, "
                                             r"0, 1, 1, 0, 0;` reads shared offset 0x0, where a "
                                             r"cp\.async \(issued at kernels\.py:12, `cp\.async\.cg"):
        run(UNLANDED.replace("{WAIT}", "pass"), "unlanded", args, 1, 128, archs=HOPPER)
