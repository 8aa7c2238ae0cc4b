"""`ptxpy.ldmatrix(row, n[, trans=True])`: PTX `ldmatrix.sync.aligned.m8n8.x{n}[.trans].shared.b16`,
a warp's load of 1, 2 or 4 8 x 8 matrices of 16-bit elements (8 x 4 of 32-bit ones) from shared
memory, lanes 8i..8i+7 giving the rows of matrix i. Checked against NumPy in the simulator (on
the GPU with PTXPY_TEST_DEVICE=gpu): the fragments of every element type, plain and transposed,
rows at addresses chosen per lane, the fragments of `ptxpy.mma_sync`, the whole-warp checks,
the compile-time errors and the PTX."""
import os
import re

import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import ptxpy
from kernel_harness import Out, compile_source, run
from ptxpy import Array, f16
from ptxpy.runtime.ptx_parser import SimulatorError
from ptxpy.transpiler.errors import CompileError

ON_GPU = os.environ.get("PTXPY_TEST_DEVICE") == "gpu"

HEADER = """
import ptxpy
from ptxpy import Array, bf16, f16, f32, f64, i16, i32, u8, u16, u32
"""

TYPES = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "i16": np.int16, "u16": np.uint16,
         "f32": np.float32, "i32": np.int32, "u32": np.uint32}
LANE = np.arange(32)
G, T = LANE // 4, LANE % 4


def distinct(dtype, shape, rng):
    """Distinct finite values of a 16- or 32-bit type (drawn as bit patterns)."""
    size = int(np.prod(shape))
    if np.dtype(dtype).itemsize == 2:      # below the largest finite f16 and bf16, either sign
        bits = rng.choice(0x7B00, size, replace=False) | (rng.integers(0, 2, size) << 15)
        return bits.astype(np.uint16).view(dtype).reshape(shape)
    bits = rng.choice(0x3F000000, size, replace=False) | (rng.integers(0, 2, size) << 31)
    return bits.astype(np.uint32).view(dtype).reshape(shape)


def bits(x):
    x = np.asarray(x)
    return x.view(np.uint16 if x.dtype.itemsize == 2 else np.uint32)


def fragments(matrices, trans: bool):
    """What each lane gets from `matrices` (n x 8 x 8, or n x 8 x 4 of 32-bit elements):
    (32, 2n) or (32, n), matrix by matrix, as PTX's ldmatrix lays them out."""
    if matrices.shape[2] == 4:
        return np.stack([m[G, T] for m in matrices], axis=1)
    pick = ((lambda m: (m[2 * T, G], m[2 * T + 1, G])) if trans
            else (lambda m: (m[G, 2 * T], m[G, 2 * T + 1])))
    return np.stack([v for m in matrices for v in pick(m)], axis=1)


# Thread gid copies row gid of x into row t of its block's tile, then gives row t as its
# ldmatrix row: warp w's matrix i is x's rows 32w + 8i..32w + 8i + 7 (all its lanes give a row,
# also those that x1 and x2 ignore). Lane l writes its values to out[gid, :].
LOAD = HEADER + """
@ptxpy.jit
def load(x: Array[{T}, 2], out: Array[{T}, 2]):
    s = ptxpy.shared_array((96, {W}), {T})
    t = ptxpy.thread_idx.x
    gid = ptxpy.global_id()
    for k in range({W}):
        s[t, k] = x[gid, k]
    ptxpy.syncthreads()
    {VALUES}, = ptxpy.ldmatrix(s[t, 0:{W}], {N}{TRANS})
{STORES}"""


def load_source(type_name: str, n: int, trans: bool) -> tuple[str, int, int]:
    """(source, row width, values per lane) of LOAD."""
    width = 8 if np.dtype(TYPES[type_name]).itemsize == 2 else 4
    values = n * (2 if width == 8 else 1)
    names = ", ".join(f"v{k}" for k in range(values))
    source = (LOAD.replace("{T}", type_name).replace("{W}", str(width)).replace("{N}", str(n))
              .replace("{TRANS}", ", trans=True" if trans else "").replace("{VALUES}", names)
              .replace("{STORES}", "".join(f"    out[gid, {k}] = v{k}\n" for k in range(values))))
    return source, width, values


def check_loads(type_name: str, n: int, trans: bool, block: int, grid: int = 2):
    source, width, values = load_source(type_name, n, trans)
    threads = grid * block
    x = distinct(TYPES[type_name], (threads, width), np.random.default_rng(n + block))
    (out,) = run(source, "load", [x, Out((threads, values), x.dtype)], grid, block)
    warps = x.reshape(threads // 32, 4, 8, width)
    expected = np.concatenate([fragments(w[:n], trans) for w in warps])
    np.testing.assert_array_equal(bits(out), bits(expected))


@pytest.mark.parametrize("type_name", ["f16", "bf16", "i16", "u16"])
@pytest.mark.parametrize("n, block", [(1, 64), (2, 96), (4, 64), (4, 96)])
def test_16_bit_fragments(type_name, n, block):
    """x1, x2, x4 of each 16-bit type: lane l gets row l // 4, columns 2(l % 4), 2(l % 4) + 1."""
    check_loads(type_name, n, False, block)


@pytest.mark.parametrize("type_name", ["f16", "bf16", "i16", "u16"])
@pytest.mark.parametrize("n, block", [(1, 96), (2, 64), (4, 96)])
def test_transposed_16_bit_fragments(type_name, n, block):
    """trans=True: lane l gets rows 2(l % 4), 2(l % 4) + 1 of column l // 4."""
    check_loads(type_name, n, True, block)


@pytest.mark.parametrize("type_name", ["f32", "i32", "u32"])
@pytest.mark.parametrize("n, block", [(1, 64), (2, 96), (4, 64)])
def test_32_bit_fragments(type_name, n, block):
    """8 x 4 matrices of 32-bit elements: lane l gets row l // 4, column l % 4."""
    check_loads(type_name, n, False, block)


# Lane gid gives row rows[gid] of a 64 x 32 f16 array, at column cols[gid] (a multiple of 8):
# any 16-byte aligned row of shared memory, in any order, also one row for several lanes.
ANYWHERE = HEADER + """
@ptxpy.jit
def anywhere(x: Array[f16, 2], rows: Array[i32], cols: Array[i32], out: Array[f16, 2]):
    s = ptxpy.shared_array((64, 32), f16)
    t = ptxpy.thread_idx.x
    for k in range(32):
        s[t, k] = x[t, k]
    ptxpy.syncthreads()
    r = rows[t]
    c = cols[t]
    v0, v1, v2, v3, v4, v5, v6, v7 = ptxpy.ldmatrix(s[r, c:c + 8], 4{TRANS})
    out[t, 0:8] = (v0, v1, v2, v3, v4, v5, v6, v7)
"""


@pytest.mark.parametrize("trans", [False, True])
@pytest.mark.parametrize("repeats", [False, True])
def test_each_lane_gives_the_address_of_its_own_row(trans, repeats):
    rng = np.random.default_rng(5 + repeats)
    x = distinct(np.float16, (64, 32), rng)
    rows = (rng.integers(0, 64, 64) if repeats else rng.permutation(64)).astype(np.int32)
    cols = (8 * rng.integers(0, 4, 64)).astype(np.int32)
    source = ANYWHERE.replace("{TRANS}", ", trans=True" if trans else "")
    (out,) = run(source, "anywhere", [x, rows, cols, Out((64, 8), np.float16)], 1, 64)
    given = np.stack([x[r, c:c + 8] for r, c in zip(rows, cols)]).reshape(2, 4, 8, 8)
    expected = np.concatenate([fragments(warp, trans) for warp in given])
    np.testing.assert_array_equal(bits(out), bits(expected))


# --- the fragments of ptxpy.mma_sync --------------------------------------------------------

# Warp w of the launch multiplies a[w] (16 x 16) by b[w] (16 x 8, row-major k x n) and adds
# c[w]: A's fragment is an x4 load of the 16 x 16 tile, B's an x2 transposed load.
MMA_HALF = HEADER + """
@ptxpy.jit
def mma_{T}(a: Array[{T}, 3], b: Array[{T}, 3], c: Array[f32, 3], d: Array[f32, 3]):
    sa = ptxpy.shared_array((2, 16, 16), {T})
    sb = ptxpy.shared_array((2, 16, 8), {T})
    w = ptxpy.global_id() // 32
    v = ptxpy.thread_idx.x // 32
    lane = ptxpy.lane_id()
    for k in range(8):
        sa[v, lane // 2, (lane % 2) * 8 + k] = a[w, lane // 2, (lane % 2) * 8 + k]
    for k in range(4):
        sb[v, lane // 2, (lane % 2) * 4 + k] = b[w, lane // 2, (lane % 2) * 4 + k]
    ptxpy.syncthreads()
    r = lane % 16
    col = (lane // 16) * 8
    a0, a1, a2, a3, a4, a5, a6, a7 = ptxpy.ldmatrix(sa[v, r, col:col + 8], 4)
    b0, b1, b2, b3 = ptxpy.ldmatrix(sb[v, r, 0:8], 2, trans=True)
    g = lane // 4
    t = lane % 4
    d0, d1, d2, d3 = ptxpy.mma_sync(
        (a0, a1, a2, a3, a4, a5, a6, a7), (b0, b1, b2, b3),
        (c[w, g, 2 * t], c[w, g, 2 * t + 1], c[w, g + 8, 2 * t], c[w, g + 8, 2 * t + 1]))
    d[w, g, 2 * t:2 * t + 2] = (d0, d1)
    d[w, g + 8, 2 * t:2 * t + 2] = (d2, d3)
"""

# m16n8k8 tf32: A (16 x 8 f32) from an x4 load; B (8 x 8) stored transposed (n x k) in shared
# memory, from an x2 load: lane l gets b[l % 4, l // 4] and b[l % 4 + 4, l // 4].
MMA_TF32 = HEADER + """
@ptxpy.jit
def mma_tf32(a: Array[f32, 3], b: Array[f32, 3], c: Array[f32, 3], d: Array[f32, 3]):
    sa = ptxpy.shared_array((2, 16, 8), f32)
    sbt = ptxpy.shared_array((2, 8, 8), f32)
    w = ptxpy.global_id() // 32
    v = ptxpy.thread_idx.x // 32
    lane = ptxpy.lane_id()
    for k in range(4):
        sa[v, lane // 2, (lane % 2) * 4 + k] = a[w, lane // 2, (lane % 2) * 4 + k]
    for k in range(2):
        sbt[v, lane // 4, (lane % 4) * 2 + k] = b[w, (lane % 4) * 2 + k, lane // 4]
    ptxpy.syncthreads()
    r = lane % 16
    col = (lane // 16) * 4
    a0, a1, a2, a3 = ptxpy.ldmatrix(sa[v, r, col:col + 4], 4)
    kb = ((lane // 8) % 2) * 4
    b0, b1 = ptxpy.ldmatrix(sbt[v, lane % 8, kb:kb + 4], 2)
    g = lane // 4
    t = lane % 4
    d0, d1, d2, d3 = ptxpy.mma_sync(
        (a0, a1, a2, a3), (b0, b1),
        (c[w, g, 2 * t], c[w, g, 2 * t + 1], c[w, g + 8, 2 * t], c[w, g + 8, 2 * t + 1]))
    d[w, g, 2 * t:2 * t + 2] = (d0, d1)
    d[w, g + 8, 2 * t:2 * t + 2] = (d2, d3)
"""


@pytest.mark.parametrize("kind", ["f16", "bf16", "tf32"])
@pytest.mark.parametrize("warps, block", [(1, 32), (4, 64)])
def test_mma_sync_of_fragments_loaded_by_ldmatrix(kind, warps, block):
    """Small integers: every product and sum exact, so D equals NumPy's A @ B + C."""
    rng = np.random.default_rng(warps + len(kind))
    k = 8 if kind == "tf32" else 16
    dtype = np.float32 if kind == "tf32" else TYPES[kind]
    a = rng.integers(-8, 9, (warps, 16, k)).astype(dtype)
    b = rng.integers(-8, 9, (warps, k, 8)).astype(dtype)
    c = rng.integers(-8, 9, (warps, 16, 8)).astype(np.float32)
    source = MMA_TF32 if kind == "tf32" else MMA_HALF.replace("{T}", kind)
    (d,) = run(source, f"mma_{kind}", [a, b, c, Out(c.shape, np.float32)], warps * 32 // block,
               block)
    expected = a.astype(np.float64) @ b.astype(np.float64) + c
    np.testing.assert_array_equal(d, expected.astype(np.float32))


# --- whole warps ------------------------------------------------------------------------------

# Through JAX: x (threads x 8 f16), one thread per row, an x4 load of the block's rows.
@ptxpy.jit(out_shape=lambda x: x, grid=1, block=lambda x: x.shape[0])
def rows_x4(x: Array[f16, 2], out: Array[f16, 2]):
    s = ptxpy.shared_array((64, 8), f16)
    t = ptxpy.thread_idx.x
    for k in range(8):
        s[t, k] = x[t, k]
    ptxpy.syncthreads()
    v0, v1, v2, v3, v4, v5, v6, v7 = ptxpy.ldmatrix(s[t, 0:8], 4)
    out[t, 0:8] = (v0, v1, v2, v3, v4, v5, v6, v7)


@pytest.mark.skipif(ON_GPU, reason="the simulator's check; on the GPU a partial warp is undefined")
def test_the_simulator_requires_whole_warps():
    source, width, values = load_source("f16", 4, False)
    x = distinct(np.float16, (48, width), np.random.default_rng(0))
    with pytest.raises(SimulatorError, match="needs whole warps of 32 threads; this block of 48 "
                                             "has a last warp of 16"):
        run(source, "load", [x, Out((48, values), np.float16)], 1, 48)


def test_through_jax_a_block_of_partial_warps_is_an_error_before_launch():
    x = distinct(np.float16, (64, 8), np.random.default_rng(1))
    out = rows_x4(jnp.asarray(x))
    expected = np.concatenate([fragments(w, False) for w in x.reshape(2, 4, 8, 8)])
    np.testing.assert_array_equal(bits(np.asarray(out)), bits(expected))
    with pytest.raises(ValueError, match=r"block \(48, 1, 1\) has 48 threads, not a multiple of "
                                         "32: the kernel calls ptxpy.mma_sync or ptxpy.ldmatrix"):
        rows_x4(jnp.asarray(x[:48]))


# --- compile-time errors and the PTX -----------------------------------------------------------

def compile_error(body: str) -> str:
    """The first line of the CompileError of a kernel with this body (its line 12 onwards)."""
    with pytest.raises(CompileError) as info:
        compile_source(HEADER + """
@ptxpy.jit
def k(x: Array[f16, 2], n: i32):
    h = ptxpy.shared_array((16, 16), f16)
    w = ptxpy.shared_array((16, 8), f32)
    d = ptxpy.shared_array((16, 4), f64)
    b = ptxpy.shared_array((16, 16), u8)
    r = ptxpy.lane_id()
""" + body, "k")
    return str(info.value).splitlines()[0]


ROW = ("each lane of ptxpy.ldmatrix gives a 16-byte row: s[r, c:c + 8] of f16, bf16, i16, u16, "
       "s[r, c:c + 4] of f32, i32, u32 or s[r, c:c + 16] of i8, u8; got ")


@pytest.mark.parametrize("body, message", [
    ("    v0, v1 = ptxpy.ldmatrix(x[r, 0:8], 1)\n",
     "kernels.py:12:14: error: ptxpy.ldmatrix loads from shared memory: its row 'x' is in global "
     "memory"),
    ("    l = ptxpy.local_array((2, 8), f16)\n"
     "    v0, v1 = ptxpy.ldmatrix(l[0, 0:8], 1)\n",
     "kernels.py:13:14: error: ptxpy.ldmatrix loads from shared memory: its row 'l' is in "
     "registers"),
    ("    v0, v1 = ptxpy.ldmatrix(h[r, 0:4], 1)\n", f"kernels.py:12:29: error: {ROW}'h[r, 0:4]'"),
    ("    v0, v1 = ptxpy.ldmatrix(h[r, 0], 1)\n", f"kernels.py:12:29: error: {ROW}'h[r, 0]'"),
    ("    v0, v1 = ptxpy.ldmatrix(w[r, 0:8], 2)\n", f"kernels.py:12:29: error: {ROW}'w[r, 0:8]'"),
    ("    v0, v1 = ptxpy.ldmatrix(d[r, 0:2], 2)\n", f"kernels.py:12:29: error: {ROW}'d[r, 0:2]'"),
    ("    v0, v1 = ptxpy.ldmatrix(b[r, 0:8], 1)\n", f"kernels.py:12:29: error: {ROW}'b[r, 0:8]'"),
    ("    v0, v1 = ptxpy.ldmatrix(h[r, 0:8], 3)\n",
     "kernels.py:12:40: error: ptxpy.ldmatrix loads 1, 2 or 4 matrices, got 3"),
    ("    v0, v1 = ptxpy.ldmatrix(h[r, 0:8], 8)\n",
     "kernels.py:12:40: error: ptxpy.ldmatrix loads 1, 2 or 4 matrices, got 8"),
    ("    v0, v1 = ptxpy.ldmatrix(h[r, 0:8], 1, trans=1)\n",
     "kernels.py:12:49: error: trans= of ptxpy.ldmatrix is True or False, got 1"),
    ("    v0, v1 = ptxpy.ldmatrix(w[r, 0:4], 2, trans=True)\n",
     "kernels.py:12:49: error: ptxpy.ldmatrix(..., trans=True) transposes 16-bit elements; 'w' "
     "holds f32"),
    ("    v0, v1 = ptxpy.ldmatrix(r, 1)\n",
     "kernels.py:12:29: error: the row of ptxpy.ldmatrix is an array element or slice "
     "(s[i, j:j + 4]), got 'r'"),
    ("    v0, v1 = ptxpy.ldmatrix(h, 1)\n",
     "kernels.py:12:29: error: the row of ptxpy.ldmatrix is an array element or slice "
     "(s[i, j:j + 4]), got 'h'"),
    ("    v0, v1 = ptxpy.ldmatrix(h[r, 0:8], 1, True)\n",
     "kernels.py:12:14: error: ptxpy.ldmatrix() takes a row and a count, and an optional trans= "
     "(3 given)"),
])
def test_errors(body, message):
    assert compile_error(body) == message


@pytest.mark.parametrize("body, message", [
    ("    v0, v1 = ptxpy.ldmatrix(h[r, 0:8], n)\n",
     r"kernels.py:12:40: error: the matrix count of ptxpy.ldmatrix must be a compile-time "
     r"constant"),
    ("    v0, v1 = ptxpy.ldmatrix(h[r, 0:8], 1, trans=n > 0)\n",
     r"kernels.py:12:49: error: trans= of ptxpy.ldmatrix must be a compile-time constant"),
    ("    v0, v1, v2 = ptxpy.ldmatrix(h[r, 0:8], 1)\n",
     r"kernels.py:12:5: error: cannot unpack 2 values into 3 variables$"),
    ("    v0, v1 = ptxpy.ldmatrix(h[r, 0:8])\n",
     r"kernels.py:12:14: error: ptxpy.ldmatrix\(\) takes 2 to 3 arguments \(1 given\)$"),
])
def test_errors_of_values_known_only_at_run_time_and_of_the_call(body, message):
    assert re.match(message, compile_error(body))


def test_the_ptx_names_each_form_of_the_instruction():
    """The harness has assembled these kernels for sm_80 and sm_90 in the tests above."""
    half = compile_source(MMA_HALF.replace("{T}", "f16"), "mma_f16").ptx
    assert half.count("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {") == 1
    assert half.count("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {") == 1
    tf32 = compile_source(MMA_TF32, "mma_tf32").ptx
    assert tf32.count("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {") == 1
    assert tf32.count("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {") == 1
    for n, trans in [(1, False), (1, True), (2, False), (4, True)]:
        ptx = compile_source(load_source("u16", n, trans)[0], "load").ptx
        form = f"ldmatrix.sync.aligned.m8n8.x{n}{'.trans' if trans else ''}.shared.b16 {{"
        assert ptx.count(form) == 1 and ptx.count("ldmatrix.sync") == 1, ptx
    keywords = load_source("u16", 2, False)[0].replace("(s[t, 0:8], 2)",
                                                        "(row=s[t, 0:8], count=2, trans=False)")
    assert "count=2" in keywords
    ptx = compile_source(keywords, "load").ptx
    assert ptx.count("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {") == 1, ptx
