"""`ptxpy.mma_sync` of 8-bit integers: m16n8k32, A and B of `i8` or `u8` (each its own),
exact `i32` sums (PTX `mma.sync.aligned.m16n8k32.row.col.s32.{s8,u8}.{s8,u8}.s32`), and
`ptxpy.ldmatrix` of 8-bit rows. Checked against NumPy in the simulator (on the GPU with
PTXPY_TEST_DEVICE=gpu), with the fragments laid out as docs/language.md gives them."""
import numpy as np
import pytest

from kernel_harness import Out, compile_source, run
from ptxpy.transpiler.errors import CompileError

HEADER = """
import ptxpy
from ptxpy import Array, f32, i8, i16, i32, u8
"""

# Each warp w multiplies tile w: a[w] (16 x 32), bt[w] (8 x 32: B transposed, so that a lane's
# four bytes of B are contiguous), c[w] (16 x 8) -> d[w]; the fragments' bytes by 4-byte loads
TILES = HEADER + """
@ptxpy.jit
def tiles(a: Array[{A}, 3], bt: Array[{B}, 3], c: Array[i32, 3], d: Array[i32, 3]):
    w = ptxpy.global_id() // 32
    lane = ptxpy.lane_id()
    g = lane // 4
    t = lane % 4
    a0, a1, a2, a3 = a[w, g, 4 * t:4 * t + 4]
    a4, a5, a6, a7 = a[w, g + 8, 4 * t:4 * t + 4]
    a8, a9, a10, a11 = a[w, g, 4 * t + 16:4 * t + 20]
    a12, a13, a14, a15 = a[w, g + 8, 4 * t + 16:4 * t + 20]
    b0, b1, b2, b3 = bt[w, g, 4 * t:4 * t + 4]
    b4, b5, b6, b7 = bt[w, g, 4 * t + 16:4 * t + 20]
    d0, d1, d2, d3 = ptxpy.mma_sync(
        (a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15),
        (b0, b1, b2, b3, b4, b5, b6, b7),
        (c[w, g, 2 * t], c[w, g, 2 * t + 1], c[w, g + 8, 2 * t], c[w, g + 8, 2 * t + 1]))
    d[w, g, 2 * t:2 * t + 2] = (d0, d1)
    d[w, g + 8, 2 * t:2 * t + 2] = (d2, d3)
"""

DTYPES = {"i8": np.int8, "u8": np.uint8}
PTX_TYPES = {"i8": "s8", "u8": "u8"}


def operands(a_type: str, b_type: str, warps: int, rng):
    """Random tiles over each type's whole range."""
    def draw(t, shape):
        info = np.iinfo(DTYPES[t])
        return rng.integers(info.min, info.max + 1, shape).astype(DTYPES[t])
    a, b = draw(a_type, (warps, 16, 32)), draw(b_type, (warps, 32, 8))
    return a, b, rng.integers(-2 ** 24, 2 ** 24, (warps, 16, 8)).astype(np.int32)


def product(a, b, c):
    """NumPy's A B + C in i64, wrapped to i32 as the tensor cores' sums are."""
    exact = a.astype(np.int64) @ b.astype(np.int64) + c
    return exact.astype(np.uint64).astype(np.uint32).view(np.int32)


@pytest.mark.parametrize("a_type, b_type", [("i8", "i8"), ("u8", "u8"), ("i8", "u8"),
                                            ("u8", "i8")])
@pytest.mark.parametrize("warps, block", [(1, 32), (4, 64)])
def test_tiles_of_every_pair_of_types_match_numpy(a_type, b_type, warps, block):
    a, b, c = operands(a_type, b_type, warps, np.random.default_rng(warps))
    source = TILES.replace("{A}", a_type).replace("{B}", b_type)
    (d,) = run(source, "tiles", [a, np.ascontiguousarray(b.transpose(0, 2, 1)), c,
                                 Out(c.shape, np.int32)], warps * 32 // block, block)
    np.testing.assert_array_equal(d, product(a, b, c))


def test_the_ptx_loads_each_fragment_register_as_one_word():
    ptx = compile_source(TILES.replace("{A}", "i8").replace("{B}", "u8"), "tiles").ptx
    assert ptx.count("mma.sync.aligned.m16n8k32.row.col.s32.s8.u8.s32 {") == 1
    assert ptx.count("ld.global.nc.b32") == 6
    assert ".s8" not in ptx.replace(".s32.s8.u8", "") and "prmt" not in ptx


def test_sums_past_the_i32_range_wrap():
    a = np.full((1, 16, 32), 127, np.int8)
    b = np.full((1, 32, 8), 127, np.int8)
    c = np.full((1, 16, 8), 2 ** 31 - 1000, np.int32)
    c[0, 1] = -2 ** 31 + 5
    source = TILES.replace("{A}", "i8").replace("{B}", "i8")
    (d,) = run(source, "tiles", [a, np.ascontiguousarray(b.transpose(0, 2, 1)), c,
                                 Out(c.shape, np.int32)], 1, 32)
    expected = product(a, b, c)
    assert expected[0, 0, 0] == 2 ** 31 - 1000 + 32 * 127 * 127 - 2 ** 32     # wrapped
    np.testing.assert_array_equal(d, expected)


# Fragment values that are not loaded words (computed bytes, a weak literal) are packed:
# two 16-bit pairs and a prmt per register
COMPUTED = HEADER + """
@ptxpy.jit
def computed(a: Array[i8, 2], b: Array[u8, 2], d: Array[i32, 2]):
    lane = ptxpy.lane_id()
    g = lane // 4
    t = lane % 4
    r = 4 * t
    d0, d1, d2, d3 = ptxpy.mma_sync(
        (a[g, r], a[g, r + 1], a[g, r + 2], -a[g, r + 3], a[g + 8, r], a[g + 8, r + 1],
         a[g + 8, r + 2], a[g + 8, r + 3], a[g, r + 16], a[g, r + 17], a[g, r + 18], a[g, r + 19],
         a[g + 8, r + 16], a[g + 8, r + 17], a[g + 8, r + 18], 3),
        (b[r, g], b[r + 1, g], b[r + 2, g], b[r + 3, g], b[r + 16, g], b[r + 17, g],
         b[r + 18, g], b[r + 19, g]),
        (0, 0, 0, 0))
    d[g, 2 * t:2 * t + 2] = (d0, d1)
    d[g + 8, 2 * t:2 * t + 2] = (d2, d3)
"""


def test_computed_fragment_values_are_packed_in_order():
    rng = np.random.default_rng(5)
    a = rng.integers(-127, 128, (16, 32)).astype(np.int8)
    b = rng.integers(0, 256, (32, 8)).astype(np.uint8)
    (d,) = run(COMPUTED, "computed", [a, b, Out((16, 8), np.int32)], 1, 32)
    fragment = a.copy()
    lanes = np.arange(32)
    fragment[lanes // 4, 4 * (lanes % 4) + 3] *= -1
    fragment[8 + lanes // 4, 4 * (lanes % 4) + 19] = 3
    np.testing.assert_array_equal(d, product(fragment, b, np.zeros((16, 8), np.int32)))
    ptx = compile_source(COMPUTED, "computed").ptx
    assert ptx.count("prmt.b32") == 6 and "m16n8k32.row.col.s32.s8.u8.s32" in ptx


# A and B through shared memory and ldmatrix: A's 16 x 32 tile is four 8 x 16 matrices (rows
# 0-7 / 8-15, bytes 0-15 / 16-31), B's (transposed, 8 x 32) two; the k loop accumulates
LDMATRIX = HEADER + """
@ptxpy.jit
def matmul(x: Array[{T}, 2], yt: Array[{T}, 2], z: Array[i32, 2], first: Array[{T}, 2]):
    lane = ptxpy.lane_id()
    xs = ptxpy.shared_array((16, 32), {T})
    ys = ptxpy.shared_array((8, 32), {T})
    d0, d1, d2, d3 = i32(0), i32(0), i32(0), i32(0)
    for k in range(0, x.shape[1], 32):
        for r in ptxpy.static_range(0, 16, 8):
            row = lane // 4 + r
            col = (lane % 4) * 8
            ptxpy.cp_async(xs[row, col:col + 8], x[row, k + col:k + col + 8])
        ptxpy.cp_async(ys[lane // 4, (lane % 4) * 8:(lane % 4) * 8 + 8],
                       yt[lane // 4, k + (lane % 4) * 8:k + (lane % 4) * 8 + 8])
        ptxpy.cp_async_wait()
        ptxpy.syncwarp()
        a = lane % 16
        c = (lane // 16) * 16
        (a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14,
         a15) = ptxpy.ldmatrix(xs[a, c:c + 16], 4)
        b0, b1, b2, b3, b4, b5, b6, b7 = ptxpy.ldmatrix(ys[lane % 8, (lane // 8) % 2 * 16:(lane // 8) % 2 * 16 + 16], 2)
        if k == 0:
            first[lane, 0:4] = (a0, a1, a2, a3)
        d0, d1, d2, d3 = ptxpy.mma_sync(
            (a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15),
            (b0, b1, b2, b3, b4, b5, b6, b7), (d0, d1, d2, d3))
        ptxpy.syncwarp()
    g = lane // 4
    t = lane % 4
    z[g, 2 * t:2 * t + 2] = (d0, d1)
    z[g + 8, 2 * t:2 * t + 2] = (d2, d3)
"""


@pytest.mark.parametrize("kind", ["i8", "u8"])
def test_ldmatrix_of_bytes_feeds_a_matmul_over_k(kind):
    rng = np.random.default_rng(11)
    info = np.iinfo(DTYPES[kind])
    x = rng.integers(info.min, info.max + 1, (16, 96)).astype(DTYPES[kind])
    y = rng.integers(info.min, info.max + 1, (96, 8)).astype(DTYPES[kind])
    source = LDMATRIX.replace("{T}", kind)
    z, first = run(source, "matmul", [x, np.ascontiguousarray(y.T), Out((16, 8), np.int32),
                                      Out((32, 4), DTYPES[kind])], 1, 32)
    np.testing.assert_array_equal(z, product(x, y, np.zeros((16, 8), np.int32)))
    lanes = np.arange(32)
    np.testing.assert_array_equal(first, x[lanes[:, None] // 4, 4 * (lanes[:, None] % 4)
                                           + np.arange(4)])
    ptx = compile_source(source, "matmul").ptx
    assert ptx.count("ldmatrix.sync.aligned.m8n8.x4.shared.b16") == 1
    assert ptx.count("ldmatrix.sync.aligned.m8n8.x2.shared.b16") == 1
    assert "prmt" not in ptx                 # the loaded words go to the mma as they are
    sign = "s" if kind == "i8" else "u"      # only `first`'s bytes are split out
    assert ptx.count(f"cvt.{sign}16.{sign}8") == 2 and ptx.count(f"shr.{sign}16") == 2


def compile_error(body: str) -> str:
    with pytest.raises(CompileError) as info:
        compile_source(HEADER + "\n@ptxpy.jit\ndef k(x: Array[i8], u: Array[u8], y: Array[f32], "
                       "n: Array[i32], s: Array[i16]):\n" + body, "k")
    return str(info.value).splitlines()[0]


A16 = "(" + ", ".join(f"x[{k}]" for k in range(16)) + ")"
B8 = "(" + ", ".join(f"u[{k}]" for k in range(8)) + ")"
C4 = "(n[0], n[1], n[2], n[3])"


@pytest.mark.parametrize("body, message", [
    (f"    d0, d1, d2, d3 = ptxpy.mma_sync({A16.replace('x[3]', 's[3]')}, {B8}, {C4})\n",
     "kernels.py:7:22: error: the a values of an m16n8k32 ptxpy.mma_sync must be all i8 or all "
     "u8 (cast them), got i16, i8"),
    (f"    d0, d1, d2, d3 = ptxpy.mma_sync({A16}, {B8.replace('u[0]', 'x[0]')}, {C4})\n",
     "kernels.py:7:22: error: the b values of an m16n8k32 ptxpy.mma_sync must be all i8 or all "
     "u8 (cast them), got i8, u8"),
    ("    d0, d1, d2, d3 = ptxpy.mma_sync((" + "0, " * 15 + "0), (" + "1, " * 7 + f"1), {C4})\n",
     "kernels.py:7:22: error: the a and b values of an m16n8k32 ptxpy.mma_sync are all literals: "
     "cast one of them to i8 or u8"),
    (f"    d0, d1, d2, d3 = ptxpy.mma_sync({A16}, {B8}, (y[0], n[1], n[2], n[3]))\n",
     "kernels.py:7:" + str(22 + len("ptxpy.mma_sync(") + len(A16) + len(B8) + 5) +
     ": error: ptxpy.mma_sync: 'y[0]' is f32, where i32 is needed (cast it: i32(...))"),
    (f"    d0, d1, d2, d3 = ptxpy.mma_sync({A16}, (" + "u[0], " * 7 + f"2.5), {C4})\n",
     "kernels.py:7:" + str(22 + len("ptxpy.mma_sync(") + len(A16) + 3 + 6 * 7) +
     ": error: ptxpy.mma_sync: '2.5' is f32, where u8 is needed (cast it: u8(...))"),
])
def test_errors(body, message):
    assert compile_error(body) == message


def test_ldmatrix_of_bytes_has_no_transposing_form():
    source = HEADER + """
@ptxpy.jit
def k(out: Array[i8]):
    s = ptxpy.shared_array((8, 16), i8)
    a0, a1, a2, a3 = ptxpy.ldmatrix(s[ptxpy.lane_id() % 8, 0:16], 1, trans=True)
    out[0] = a0
"""
    with pytest.raises(CompileError, match="transposes 16-bit elements; 's' holds i8"):
        compile_source(source, "k")
