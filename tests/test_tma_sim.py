"""Hopper's tensor copies (cp.async.bulk.tensor, TMA) in the simulator (docs/simulator.md,
"Tensor copies"): hand-written PTX with TensorMap arguments checked against NumPy (boxes at the
edges of the array, the swizzled layouts, ranks 1 to 5, stores clipped at the edges, a round
trip) and against what an H100 did with the same kernels (rows narrower than the swizzle), the
errors of every misuse, and the kernels assembled with `ptxas` for sm_90."""
import numpy as np
import pytest

from ptxpy.runtime.simulator import Module, SimulatorError, TensorMap, run_kernel
from test_simulator_progress import deadline
from ptxpy.transpiler.ptxas import assemble, find_ptxas

HEADER = ".version 8.0\n.target sm_90\n.address_size 64\n"
REGS = """
    .reg .pred %p<8>;
    .reg .b32 %r<40>;
    .reg .b64 %rd<16>;
"""
G2S = "cp.async.bulk.tensor.{n}d.shared::cluster.global{tile}.mbarrier::complete_tx::bytes"
S2G = "cp.async.bulk.tensor.{n}d.global.shared::cta{tile}.bulk_group"


def g2s(n: int, tile: bool = True) -> str:
    return G2S.format(n=n, tile=".tile" if tile else "")


def s2g(n: int, tile: bool = True) -> str:
    return S2G.format(n=n, tile=".tile" if tile else "")


def coords(n: int, first: int = 20) -> str:
    """`{%r20, %r21, ...}`: n coordinate registers, innermost first."""
    return "{" + ", ".join(f"%r{first + i}" for i in range(n)) + "}"


def run(ptx, name: str, args, **kw):
    with deadline():
        run_kernel(ptx, name, args=args, **kw)


def box_of(x: np.ndarray, at, box) -> np.ndarray:
    """NumPy's box of `x` at `at` (NumPy order): x[at + j] where inside x, else 0."""
    grids = np.ix_(*[np.arange(a, a + b) for a, b in zip(at, box)])
    inside = np.ones(tuple(box), bool)
    for axis, g in enumerate(grids):
        inside &= (g >= 0) & (g < x.shape[axis])
    clipped = tuple(np.clip(g, 0, n - 1) for g, n in zip(grids, x.shape))
    return np.where(inside, x[clipped], np.zeros((), x.dtype))


def swizzled(dense: np.ndarray, base: int, swizzle: int) -> np.ndarray:
    """The shared-memory image, from shared address `base`, of the bytes `dense` stored with a
    swizzle: the 16-byte chunk at address a goes to a with its bits 4-6 XORed with bits 7-9
    (128 bytes), bits 4-5 with bits 7-8 (64) or bit 4 with bit 7 (32)."""
    bits = {0: 0, 32: 1, 64: 2, 128: 3}[swizzle]
    out = np.full(dense.size, 0xAB, np.uint8)
    for i in range(dense.size // 16):
        a = base + 16 * i
        s = a ^ (((a >> 7) & ((1 << bits) - 1)) << 4)
        out[s - base:s - base + 16] = dense[16 * i:16 * i + 16]
    return out


# ---- loads: one thread copies a box into shared memory, every thread copies it out -------------

def load_kernel(n: int, nbytes: int, offset: int = 0, block: int = 128, tile: bool = True,
                name: str = "load") -> str:
    """`load(tmap, out, c0, ..., c{n-1})`: thread 0 initialises a barrier, announces `nbytes`
    and loads the box at (c0, ..., innermost first) to shared address tile + `offset`; every
    thread waits for phase 0, then copies the `nbytes` there to out word by word; thread 0
    also writes that shared address to the word after them."""
    params = ",\n    ".join([f".param .align 64 .b8 {name}_tmap[128]", f".param .u64 {name}_out"]
                           + [f".param .u32 {name}_c{i}" for i in range(n)])
    loads = "".join(f"    ld.param.u32 %r{20 + i}, [{name}_c{i}];\n" for i in range(n))
    return HEADER + f"""
.visible .entry {name}(
    {params})
{{{REGS}
    .shared .align 1024 .b8 tile[{nbytes + offset}];
    .shared .align 8 .b64 bar;
    ld.param.u64 %rd2, [{name}_out];
    cvta.to.global.u64 %rd2, %rd2;
    mov.b64 %rd3, {name}_tmap;
    cvta.param.u64 %rd4, %rd3;
{loads}    mov.u32 %r1, %tid.x;
    mov.u32 %r3, bar;
    mov.u32 %r4, tile;
    add.s32 %r4, %r4, {offset};
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra $L_init_done;
    mbarrier.init.shared.b64 [%r3], 1;
    st.global.u32 [%rd2+{nbytes}], %r4;
$L_init_done:
    bar.sync 0;
    @%p1 bra $L_wait;
    mbarrier.arrive.expect_tx.shared.b64 %rd5, [%r3], {nbytes};
    {g2s(n, tile)} [%r4], [%rd4, {coords(n)}], [%r3];
$L_wait:
    mbarrier.try_wait.parity.shared.b64 %p2, [%r3], 0;
    @!%p2 bra $L_wait;
    mov.u32 %r5, %r1;
$L_copy:
    setp.ge.u32 %p3, %r5, {nbytes // 4};
    @%p3 bra $L_end;
    shl.b32 %r6, %r5, 2;
    add.s32 %r7, %r4, %r6;
    ld.shared.u32 %r8, [%r7];
    mul.wide.u32 %rd6, %r5, 4;
    add.s64 %rd7, %rd2, %rd6;
    st.global.u32 [%rd7], %r8;
    add.s32 %r5, %r5, {block};
    bra.uni $L_copy;
$L_end:
    ret;
}}
"""


def load(x: np.ndarray, box, at, swizzle: int = 0, offset: int = 0, racecheck: bool = False,
         tile: bool = True, block: int = 128):
    """Run load_kernel on a TensorMap of x with the box at `at` (NumPy order): (the bytes it
    copied out of shared memory, the shared address of the box)."""
    nbytes = int(np.prod(box)) * x.itemsize
    out = np.zeros(nbytes + 4, np.uint8)
    ptx = load_kernel(x.ndim, nbytes, offset, block, tile)
    run(ptx, "load", [TensorMap(x, tuple(box), swizzle), out] + list(at)[::-1], block=block,
        racecheck=racecheck)
    return out[:nbytes], int(out[nbytes:].view(np.uint32)[0])


X = np.random.default_rng(0).standard_normal((100, 68)).astype(np.float32)   # rows of 272 bytes
EDGES = [(0, 0), (35, 36), (64, 32), (64, 64), (-5, -8), (90, 60), (-63, -28), (-64, 0),
         (100, 68)]


@pytest.mark.parametrize("at", EDGES, ids=[f"{r},{c}" for r, c in EDGES])
@pytest.mark.parametrize("racecheck", [False, True])
def test_a_2d_load_of_a_64_by_32_box(at, racecheck):
    """The box at the corner, inside, across the bottom and right edges, before the start
    (negative coordinates), and wholly outside: elements outside the array are zero."""
    got, _ = load(X, (64, 32), at, racecheck=racecheck)
    want = box_of(X, at, (64, 32))
    np.testing.assert_array_equal(got.view(np.float32).reshape(64, 32), want)


def test_a_2d_load_without_tile_and_with_several_blocks():
    """`.tile` left out (the default mode); block b loads the box at (b, 4b) in its own shared
    memory and barrier (four blocks in one batch)."""
    box, blocks = (8, 16), 4
    ptx = load_kernel(2, 512, tile=False, block=32)
    ptx = ptx.replace("    mov.u32 %r1, %tid.x;\n", "    mov.u32 %r1, %tid.x;\n"
                      "    mov.u32 %r9, %ctaid.x;\n    add.s32 %r21, %r21, %r9;\n"
                      "    shl.b32 %r10, %r9, 2;\n    add.s32 %r20, %r20, %r10;\n"
                      "    mul.lo.s32 %r11, %r9, 516;\n    cvt.u64.u32 %rd8, %r11;\n"
                      "    add.s64 %rd2, %rd2, %rd8;\n")
    assert "tensor.2d.shared::cluster.global.mbarrier" in ptx
    out = np.zeros((blocks, 516), np.uint8)
    run(ptx, "load", [TensorMap(X, box), out, 0, 0], grid=blocks, block=32)
    for b in range(blocks):
        want = box_of(X, (b, 4 * b), box)
        np.testing.assert_array_equal(out[b, :512].view(np.float32).reshape(box), want)


# ---- swizzled layouts -------------------------------------------------------------------------

F16 = np.random.default_rng(1).standard_normal((40, 72)).astype(np.float16)  # rows of 144 bytes
SWIZZLES = [   # (array, box, swizzle, box position, offset of the box from a 1024-aligned tile)
    (F16, (16, 64), 128, (3, 8), 0),       # rows of 128 bytes
    (F16, (16, 64), 128, (30, 40), 0),     # across the bottom and right edges: zeros too
    (X, (8, 32), 128, (10, 20), 0),
    (X, (8, 32), 128, (10, 20), 128),      # the pattern follows the address, not the box
    (X, (8, 32), 128, (-3, 52), 384),
    (X, (12, 16), 64, (7, 8), 0),
    (X, (12, 16), 64, (95, -4), 256),
    (F16, (10, 16), 32, (2, 8), 0),
    (F16, (8, 16), 32, (35, 64), 128),
    (X, (8, 8), 32, (1, 4), 0),
]


@pytest.mark.parametrize("x, box, swizzle, at, offset", SWIZZLES)
def test_swizzled_loads(x, box, swizzle, at, offset):
    """The bytes in shared memory (copied out verbatim) are NumPy's box with the XOR of the
    swizzle applied to each 16-byte chunk's shared address."""
    got, base = load(x, box, at, swizzle, offset)
    assert base % 1024 == offset
    dense = box_of(x, at, box).reshape(-1).view(np.uint8)
    np.testing.assert_array_equal(got, swizzled(dense, base, swizzle))
    assert not np.array_equal(got, dense) or swizzle == 0


def test_the_128_byte_swizzle_rotates_chunks_by_row():
    """Independently of the model: with rows of 128 bytes from a 1024-aligned address, chunk j
    of row r lies at chunk j ^ (r % 8) of that row."""
    got, _ = load(X, (16, 32), (0, 0), 128)
    rows = got.reshape(16, 8, 16)
    want = X[:16, :32].reshape(-1).view(np.uint8).reshape(16, 8, 16)
    for r in range(16):
        for j in range(8):
            np.testing.assert_array_equal(rows[r, j ^ (r % 8)], want[r, j])


# Before the copy every thread fills the 1024 bytes of the tile with 0xAB.
FILL = """    mov.u32 %r5, %r1;
$L_fill:
    setp.ge.u32 %p3, %r5, 256;
    @%p3 bra $L_filled;
    shl.b32 %r6, %r5, 2;
    add.s32 %r7, %r4, %r6;
    st.shared.u32 [%r7], 0xABABABAB;
    add.s32 %r5, %r5, 128;
    bra.uni $L_fill;
$L_filled:
    fence.proxy.async.shared::cta;
"""
# What an H100 left in the tile, run with this kernel and these boxes: per 16-byte chunk,
# `row.chunk` of the box, or `-` where the 0xAB bytes stayed.
NARROW = {
    ((4, 16), 128): "0.0 0.1 0.2 0.3 - - - - 1.1 1.0 1.3 1.2 - - - - 2.2 2.3 2.0 2.1 - - - - "
                    "3.3 3.2 3.1 3.0",
    ((4, 8), 64): "0.0 0.1 - - 1.0 1.1 - - 2.1 2.0 - - 3.1 3.0",
    ((4, 8), 128): "0.0 0.1 - - - - - - 1.1 1.0 - - - - - - - - 2.0 2.1 - - - - - - 3.1 3.0",
    ((8, 8), 128): "0.0 0.1 - - - - - - 1.1 1.0 - - - - - - - - 2.0 2.1 - - - - - - 3.1 3.0 "
                   "- - - - - - - - 4.0 4.1 - - - - - - 5.1 5.0 - - - - - - - - 6.0 6.1 "
                   "- - - - - - 7.1 7.0",
}


@pytest.mark.parametrize("box, swizzle", list(NARROW))
def test_rows_narrower_than_the_swizzle_take_its_bytes(box, swizzle):
    """A box whose rows are narrower than its swizzle: each row starts a swizzle's bytes after
    the last, its chunks swizzled as usual, the rest of those bytes left alone; the
    transaction count is the box's bytes alone. The chunks where an H100 put each row."""
    cols = box[1]
    x = np.arange(8 * cols, dtype=np.uint32).reshape(8, cols)
    ptx = load_kernel(2, 1024).replace("    setp.ne.u32 %p1", FILL + "    setp.ne.u32 %p1", 1)
    ptx = ptx.replace("[%r3], 1024;", f"[%r3], {x[:box[0]].nbytes};")
    out = np.zeros(1028, np.uint8)
    run(ptx, "load", [TensorMap(x, box, swizzle), out, 0, 0], block=128)
    chunks = out[:1024].view(np.uint32).reshape(64, 4)
    seen = ["-" if c[0] == 0xABABABAB else f"{c[0] // cols}.{c[0] % cols // 4}" for c in chunks]
    want = NARROW[box, swizzle].split()
    assert seen == want + ["-"] * (64 - len(want))


def test_a_store_of_rows_narrower_than_the_swizzle():
    """The store reads the same layout: rows of 64 bytes, 128 bytes apart (as on an H100)."""
    box = np.arange(128, dtype=np.float32).reshape(8, 16)
    image = np.full((8, 8, 4), -1, np.float32)
    for r in range(8):
        for j in range(4):
            image[r, j ^ r] = box[r, 4 * j:4 * j + 4]
    y = np.zeros((8, 16), np.float32)
    run(store_kernel(2, 1024), "store", [image, TensorMap(y, (8, 16), 128), y,
                                         np.zeros(1, np.float32), 0, 0], block=64)
    np.testing.assert_array_equal(y, box)


# ---- other ranks -----------------------------------------------------------------------------

X1 = np.arange(100, dtype=np.float32)
X3 = np.random.default_rng(2).standard_normal((5, 20, 12)).astype(np.float32)
X5 = np.arange(2 * 3 * 4 * 5 * 8, dtype=np.int16).reshape(2, 3, 4, 5, 8)
RANKS = [(X1, (32,), (0,)), (X1, (32,), (80,)), (X1, (64,), (-8,)),
         (X3, (1, 8, 4), (2, 3, 4)), (X3, (1, 8, 4), (4, 14, 8)), (X3, (3, 4, 8), (-1, -2, 4)),
         (X5, (1, 2, 2, 3, 8), (1, 2, 3, 3, 0)), (X5, (2, 2, 2, 2, 16), (0, -1, 1, 4, -8))]


@pytest.mark.parametrize("x, box, at", RANKS)
def test_loads_of_other_ranks(x, box, at):
    """1-D, 3-D (a box with an extent-1 dimension) and 5-D boxes (int16 elements)."""
    got, _ = load(x, box, at, block=64)
    np.testing.assert_array_equal(got.view(x.dtype).reshape(box), box_of(x, at, box))


# ---- the race check --------------------------------------------------------------------------

def test_the_race_check_reports_a_read_of_a_tensor_copy_in_flight():
    """A barrier of count 2: thread 0 issues the copy, thread 1 reads the box, then arrives.
    The box counts as thread 0's store from the issue, so the read races with it."""
    ptx = load_kernel(2, 512).replace("[%r3], 1;", "[%r3], 2;")
    ptx = ptx.replace("    @%p1 bra $L_wait;\n    mbarrier.arrive.expect_tx",
                      "    @%p1 bra $L_mid;\n    mbarrier.arrive.expect_tx")
    ptx = ptx.replace("$L_wait:\n", "$L_mid:\n    setp.ne.u32 %p4, %r1, 1;\n    @%p4 bra $L_wait;\n"
                      "    ld.shared.u32 %r9, [%r4+16];\n"
                      "    mbarrier.arrive.shared.b64 %rd5, [%r3];\n$L_wait:\n")
    out = np.zeros(516, np.uint8)
    run(ptx, "load", [TensorMap(X, (8, 16)), out, 4, 2], block=128, racecheck=False)
    np.testing.assert_array_equal(out[:512].view(np.float32).reshape(8, 16), X[2:10, 4:20])
    with pytest.raises(SimulatorError, match=r"PTX line \d+: shared memory race: thread "
                                             r"\(1,0,0\) reads 4 bytes at shared offset 0x10 "
                                             r"that thread \(0,0,0\) wrote since the last "
                                             r"barrier; block \(0,0,0\)$"):
        run(ptx, "load", [TensorMap(X, (8, 16)), np.zeros(516, np.uint8), 0, 0], block=128,
            racecheck=True)


# ---- wgmma operands ----------------------------------------------------------------------------

def test_wgmma_reads_a_tensor_copy_not_landed():
    """test_wgmma_sim's kernel (A and B of a product in shared memory from 0 to 2303, a map
    parameter added): a tensor copy into B whose barrier phase has not completed when the
    product is issued (the tensor cores would read whatever is there)."""
    from test_wgmma_sim import COMMIT, ISSUE, SMEM, flight, product, wait

    def by0(text: str) -> str:
        return f"    setp.eq.u32 %p3, %r13, 0;\n    @%p3 {text}\n"
    rng = np.random.default_rng(5)
    sequence = (by0("mbarrier.init.shared.b64 [%r10+40960], 1;")
                + "    mov.b64 %rt0, wg_tmap;\n    cvta.param.u64 %rt1, %rt0;\n"
                + "    mov.u32 %rc, 0;\n"
                + by0(f"{g2s(2)} [%r10+2048], [%rt1, {{%rc, %rc}}], [%r10+40960];")
                + ISSUE + COMMIT + wait())
    ptx = flight(sequence).replace("    .reg .f32 %f<4>;\n", "    .reg .f32 %f<4>;\n"
                                   "    .reg .b64 %rt<2>;\n    .reg .b32 %rc;\n")
    ptx = ptx.replace(".param .u32 wg_scale)",
                      ".param .u32 wg_scale, .param .align 64 .b8 wg_tmap[128])")
    images, descs, _, _ = product("bf16", 8, (0, False, None), (0, False, None), rng)
    args = [np.stack([img.bytes for img in images]).view(np.uint32), SMEM // 4,
            np.array(descs, np.uint64).reshape(-1), 7, np.zeros((128, 4), np.float32),
            np.zeros((128, 4), np.float32), 1, TensorMap(X, (1, 4))]
    with pytest.raises(SimulatorError, match=r"`wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16."
                                             r"bf16 \{%f0, \.\.\., %f3\}, %rd20, %rd21, 1, 1, 1, "
                                             r"0, 0;` reads shared offset 0x800, where a tensor "
                                             r"copy \(issued at PTX line \d+, `@%p3 cp.async.bulk."
                                             r"tensor.*`, by thread \(0,0,0\) block \(0,0,0\)\) "
                                             r"has not landed: wait for its mbarrier's phase "
                                             r"\(ptxpy.mbarrier_wait\) before the wgmma; read by "
                                             r"warpgroup 0, thread \(0,0,0\) block \(0,0,0\)$"):
        run(ptx, "wg", args, block=128, racecheck=False)
    # announced and landed before the product: fine
    arrive = by0("mbarrier.arrive.expect_tx.shared.b64 %rt0, [%r10+40960], 16;")
    run(ptx.replace(ISSUE, arrive + ISSUE), "wg", args, block=128, racecheck=False)


# ---- stores: every thread fills the box in shared memory, thread 0 stores it -----------------

def store_kernel(n: int, nbytes: int, wait: str = "    cp.async.bulk.wait_group 0;") -> str:
    """`store(vals, tmap, y, seen, c0, ...)`: every thread copies the `nbytes` of vals to the
    shared tile word by word; after fence.proxy.async and a barrier thread 0 stores the box at
    (c0, ..., innermost first) into the map's array y, commits, runs `wait`, then copies the
    first word of y, read through y's own pointer, to seen."""
    params = ",\n    ".join([".param .u64 st_vals", ".param .align 128 .b8 st_tmap[128]",
                             ".param .u64 st_y", ".param .u64 st_seen"]
                           + [f".param .u32 st_c{i}" for i in range(n)])
    loads = "".join(f"    ld.param.u32 %r{20 + i}, [st_c{i}];\n" for i in range(n))
    return HEADER + f"""
.visible .entry store(
    {params})
{{{REGS}
    .shared .align 1024 .b8 tile[{nbytes}];
    ld.param.u64 %rd1, [st_vals];
    cvta.to.global.u64 %rd1, %rd1;
    mov.u64 %rd3, st_tmap;
    cvta.param.u64 %rd4, %rd3;
{loads}    mov.u32 %r1, %tid.x;
    mov.u32 %r4, tile;
    mov.u32 %r5, %r1;
$L_fill:
    setp.ge.u32 %p3, %r5, {nbytes // 4};
    @%p3 bra $L_filled;
    mul.wide.u32 %rd6, %r5, 4;
    add.s64 %rd7, %rd1, %rd6;
    ld.global.u32 %r8, [%rd7];
    shl.b32 %r6, %r5, 2;
    add.s32 %r7, %r4, %r6;
    st.shared.u32 [%r7], %r8;
    add.s32 %r5, %r5, 64;
    bra.uni $L_fill;
$L_filled:
    fence.proxy.async.shared::cta;
    bar.sync 0;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra $L_end;
    prefetch.tensormap [%rd4];
    {s2g(n)} [%rd4, {coords(n)}], [%r4];
    cp.async.bulk.commit_group;
{wait}
    ld.param.u64 %rd8, [st_y];
    cvta.to.global.u64 %rd8, %rd8;
    ld.global.u32 %r9, [%rd8];
    ld.param.u64 %rd9, [st_seen];
    cvta.to.global.u64 %rd9, %rd9;
    st.global.u32 [%rd9], %r9;
$L_end:
    ret;
}}
"""


@pytest.mark.parametrize("at", [(0, 0), (35, 36), (70, 48), (90, 0), (0, 48), (100, 0),
                                (200, 0), (0, 68)])
@pytest.mark.parametrize("wait", ["    cp.async.bulk.wait_group 0;",
                                  "    cp.async.bulk.wait_group.read 0;"])
@pytest.mark.parametrize("racecheck", [False, True])
def test_a_tensor_store_clipped_at_the_edges(at, wait, racecheck):
    """The elements of the box inside y are written, the others dropped (past the bottom and
    right edges, or wholly outside): the rest of y keeps its values. y is passed for a .u64
    parameter and as the map's array: one allocation, so its first element read through the
    pointer after the wait is the one the store wrote."""
    box = (64, 32)
    vals = np.random.default_rng(3).standard_normal(box).astype(np.float32)
    y = np.full((100, 68), -7, np.float32)
    seen = np.zeros(1, np.float32)
    run(store_kernel(2, vals.nbytes, wait=wait), "store",
        [vals, TensorMap(y, box), y, seen] + list(at)[::-1], block=64, racecheck=racecheck)
    want = np.full((100, 68), -7, np.float32)
    rows = slice(max(at[0], 0), max(min(at[0] + 64, 100), 0))
    cols = slice(max(at[1], 0), max(min(at[1] + 32, 68), 0))
    want[rows, cols] = vals[rows.start - at[0]:rows.stop - at[0],
                            cols.start - at[1]:cols.stop - at[1]]
    np.testing.assert_array_equal(y, want)
    assert seen[0] == want[0, 0]


def test_a_swizzled_3d_store():
    """The source is read from shared memory through the swizzle: the shared bytes that are
    the swizzled image of a box store that box."""
    y = np.zeros((3, 10, 32), np.float16)
    box = (2, 4, 32)
    want = np.random.default_rng(4).standard_normal(box).astype(np.float16)
    tile = swizzled(want.reshape(-1).view(np.uint8), 0, 64).copy()
    inverse = np.empty_like(tile)      # the swizzle is its own inverse on whole rows
    inverse[:] = swizzled(tile, 0, 64)
    np.testing.assert_array_equal(inverse.view(np.float16).reshape(box), want)
    run(store_kernel(3, want.nbytes), "store",
        [tile, TensorMap(y, box, 64), y, np.zeros(1, np.float32), 0, 7, 2], block=64)
    expect = np.zeros_like(y)
    expect[2:, 7:, :] = want[:1, :3, :]
    np.testing.assert_array_equal(y, expect)


# ---- a round trip: load and store every tile ---------------------------------------------------

ROUND_TRIP = HEADER + """
.visible .entry copy(
    .param .align 64 .b8 copy_src[128],
    .param .align 64 .b8 copy_dst[128])
{""" + REGS + """
    .shared .align 1024 .b8 tile[8192];
    .shared .align 8 .b64 bar;
    mov.u32 %r1, %tid.x;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra $L_end;
    mov.b64 %rd1, copy_src;
    cvta.param.u64 %rd2, %rd1;
    mov.b64 %rd3, copy_dst;
    cvta.param.u64 %rd4, %rd3;
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ctaid.y;
    shl.b32 %r20, %r2, 5;
    shl.b32 %r21, %r3, 6;
    mov.u32 %r4, tile;
    mov.u32 %r5, bar;
    prefetch.tensormap [%rd2];
    mbarrier.init.shared.b64 [%r5], 1;
    mbarrier.arrive.expect_tx.shared.b64 %rd5, [%r5], 8192;
    cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
        [%r4], [%rd2, {%r20, %r21}], [%r5];
$L_wait:
    mbarrier.try_wait.parity.shared.b64 %p2, [%r5], 0;
    @!%p2 bra $L_wait;
    cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%rd4, {%r20, %r21}], [%r4];
    cp.async.bulk.commit_group;
    cp.async.bulk.wait_group.read 0;
$L_end:
    ret;
}
"""


@pytest.mark.parametrize("swizzle", [0, 128])
@pytest.mark.parametrize("racecheck", [False, True])
def test_a_round_trip_copies_the_array_tile_by_tile(swizzle, racecheck):
    """Blocks (2, 3) cover the 100 x 68 array with 64 x 32 boxes (partial at the edges): each
    loads its box and stores it back into another array, which becomes a copy."""
    y = np.full_like(X, np.nan)
    run(ROUND_TRIP, "copy", [TensorMap(X, (64, 32), swizzle), TensorMap(y, (64, 32), swizzle)],
        grid=(3, 2), block=32, racecheck=racecheck)
    np.testing.assert_array_equal(y, X)


# ---- errors ----------------------------------------------------------------------------------

def one_thread(body: str, target: str = "sm_90", tmap: str = ".param .align 64 .b8 k_tmap[128]",
               entry: str = "k") -> str:
    """A kernel `k(tmap, x)` whose thread 0 runs `body` (%r3: the barrier `bar`, %r4: `tile`
    (8192 bytes, 1024-aligned), %rd1: x's address, %rd4: the map's generic address, %rd3 its
    param-space one, %r20 and %r21 zero); the other threads return."""
    return HEADER.replace("sm_90", target) + f"""
.visible .entry {entry}(
    {tmap},
    .param .u64 k_x)
{{{REGS}
    .shared .align 1024 .b8 tile[8192];
    .shared .align 8 .b64 bar;
    ld.param.u64 %rd1, [k_x];
    cvta.to.global.u64 %rd1, %rd1;
    mov.b64 %rd3, k_tmap;
    cvta.param.u64 %rd4, %rd3;
    mov.u32 %r1, %tid.x;
    mov.u32 %r3, bar;
    mov.u32 %r4, tile;
    mov.u32 %r20, 0;
    mov.u32 %r21, 0;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra $L_end;
{body}
$L_end:
    ret;
}}
"""


INIT = "    mbarrier.init.shared.b64 [%r3], 1;\n"
LOAD2 = f"    {g2s(2)} [%r4], [%rd4, {{%r20, %r21}}], [%r3];\n"
STORE2 = f"    {s2g(2)} [%rd4, {{%r20, %r21}}], [%r4];\n"
WAITED = INIT + "    mbarrier.arrive.expect_tx.shared.b64 %rd5, [%r3], 2048;\n" + LOAD2 + """\
$L_wait:
    mbarrier.try_wait.parity.shared.b64 %p2, [%r3], 0;
    @!%p2 bra $L_wait;
"""


def fails(ptx: str, message: str, tmap=None, x=None, **kw):
    tmap = TensorMap(X, (64, 8)) if tmap is None else tmap
    with pytest.raises(SimulatorError, match=message):
        run(ptx, "k", [tmap, np.zeros(64, np.float32) if x is None else x], block=32, **kw)


@pytest.mark.parametrize("tmap, message", [
    (TensorMap(X, (64, 3)), r"the innermost box extent times the element size must be a "
                            r"multiple of 16 bytes, got 3 x 4 = 12"),
    (TensorMap(X, (512, 4)), r"every box extent must be 1 to 256, got box \(512, 4\)"),
    (TensorMap(X, (0, 4)), r"every box extent must be 1 to 256, got box \(0, 4\)"),
    (TensorMap(X, (8, 32), 64), r"with swizzle 64 the innermost box extent times the element "
                                r"size must be at most 64 bytes, got 32 x 4 = 128"),
    (TensorMap(X, (8, 16), 32), r"with swizzle 32 .* at most 32 bytes, got 16 x 4 = 64"),
    (TensorMap(X, (8, 16), 16), r"swizzle must be 0, 32, 64 or 128 \(bytes\), got 16"),
    (TensorMap(X, (8,)), r"the box \(8,\) needs one extent per dimension of the array "
                         r"\(shape \(100, 68\)\)"),
    (TensorMap(np.zeros((100, 70), np.float32), (8, 8)),
     r"the stride of every dimension but the innermost must be a multiple of 16 bytes: axis 0 "
     r"of shape \(100, 70\) \(float32\) has 280 bytes"),
    (TensorMap(np.zeros((64, 64), np.float32)[:, :32], (8, 8)),
     r"the array must be C-contiguous"),
    (TensorMap(np.zeros((2,) * 6, np.float32), (1,) * 6), r"a tensor map's rank must be 1 to 5, "
                                                          r"got an array of 6 dimensions"),
    (TensorMap(np.zeros((), np.float32), ()), r"a tensor map's rank must be 1 to 5, got an "
                                              r"array of 0 dimensions"),
    (TensorMap(np.zeros((4, 4), np.complex128), (4, 1)),
     r"the element size must be 1, 2, 4 or 8 bytes, got complex128"),
    (TensorMap(np.zeros((0, 4), np.float32), (1, 4)), r"every dimension must be at least 1"),
    (TensorMap([[1.0] * 4], (1, 4)), r"TensorMap.array must be a NumPy array, got list"),
    (np.zeros(32, np.uint8), r"pass a ptxpy.runtime.simulator.TensorMap, got ndarray"),
    (1234, r"pass a ptxpy.runtime.simulator.TensorMap, got int"),
])
def test_what_cu_tensor_map_encode_tiled_would_reject(tmap, message):
    fails(one_thread(WAITED), r"^parameter k_tmap \(a tensor map\): " + message, tmap=tmap)


def test_a_tensor_map_parameter_needs_its_alignment():
    ptx = one_thread(WAITED, tmap=".param .align 8 .b8 k_tmap[128]")
    fails(ptx, r"^parameter k_tmap \(a tensor map\): declare it \.param \.align 64 \.b8 "
               r"k_tmap\[128\] \(a CUtensorMap is 64-byte aligned\), not \.align 8$")


def test_a_tensor_map_for_another_parameter():
    with pytest.raises(SimulatorError, match=r"^parameter k_x \(\.u64\): a TensorMap goes only "
                                             r"to a tensor map parameter"):
        run(one_thread(WAITED), "k", [TensorMap(X, (64, 8)), TensorMap(X, (64, 8))], block=32)


def test_other_array_parameters_stay_unsupported():
    ptx = one_thread("", tmap=".param .align 8 .b8 k_tmap[64]")
    fails(ptx, r"^parameter k_tmap: array parameters are not supported$")


@pytest.mark.parametrize("body, message", [
    (INIT + f"    {g2s(3)} [%r4], [%rd4, {{%r20, %r21, %r20}}], [%r3];",
     r"the tensor map k_tmap has 2 dimensions \(an array of shape \(100, 68\)\), but this is a "
     r"\.3d tensor copy"),
    (f"    {s2g(1)} [%rd4, {{%r20}}], [%r4];", r"the tensor map k_tmap has 2 dimensions"),
    (INIT + f"    {g2s(2)} [%r4+16], [%rd4, {{%r20, %r21}}], [%r3];",
     r"misaligned shared store of 2048 bytes at 0x10 \(a tensor copy's shared memory address "
     r"must be 128-byte aligned\)"),
    (f"    {s2g(2)} [%rd4, {{%r20, %r21}}], [%r4+64];",
     r"misaligned shared load of 2048 bytes at 0x40 \(a tensor copy's shared memory address "
     r"must be 128-byte aligned\)"),
    (INIT + f"    {g2s(2)} [%r4+6272], [%rd4, {{%r20, %r21}}], [%r3];",
     r"out-of-bounds shared store of 2048 bytes at 0x1880"),
    (INIT + f"    {g2s(2)} [%r4], [%rd1, {{%r20, %r21}}], [%r3];",
     r"0x[0-9a-f]+ is not the address of a tensor map \(the generic address of a \.b8 \[128\] "
     r"kernel parameter given a TensorMap, from mov\.b64 and cvta\.param\.u64 of its name\)"),
    (f"    add.s64 %rd6, %rd4, 8;\n    {s2g(2)} [%rd6, {{%r20, %r21}}], [%r4];",
     r"0x3000000000008 is not the address of a tensor map"),
    ("    prefetch.tensormap [%rd1];", r"is not the address of a tensor map"),
    (INIT + "    mov.u32 %r20, 3;\n" + LOAD2,
     r"the innermost coordinate times the element size must be a multiple of 16 bytes \(a box "
     r"starts 16-byte aligned in global memory; the GPU stops the kernel with an illegal "
     r"instruction\), got 3 x 4 = 12 for the tensor map k_tmap"),
    ("    mov.u32 %r20, 3;\n    mov.u32 %r21, 7;\n" + STORE2, r"got 3 x 4 = 12 for the tensor map"),
    ("    mov.u32 %r21, -1;\n" + STORE2,
     r"a tensor store's coordinates must not be negative \(its box may reach past the end of "
     r"the array, not before its start; the GPU stops the kernel with an illegal instruction\), "
     r"got \{0, -1\} for the tensor map k_tmap"),
    (f"    {g2s(2)} [%r4], [%rd4, {{%r20, %r21}}], [%r3];",
     r"no mbarrier was initialised at shared offset 0x2000: call ptxpy.mbarrier_init "
     r"\(mbarrier.init\) on it first"),
])
def test_misuses_at_run_time(body, message):
    fails(one_thread(body), r"^PTX line \d+: .*" + message + r".*; thread \(0,0,0\) block "
                                                                r"\(0,0,0\)$")


def test_a_tensor_copy_that_never_lands():
    """expect_tx announces 4096 bytes, the box brings 2048 (64 x 8 f32), and nobody waits."""
    body = (INIT + "    mbarrier.arrive.expect_tx.shared.b64 %rd5, [%r3], 4096;\n" + LOAD2)
    fails(one_thread(body),
          rf"^PTX line \d+: `{g2s(2)} \[%r4\], \[%rd4, \{{%r20, %r21\}}\], \[%r3\];`: this tensor "
          r"copy of 2048 bytes never landed: the phase of its mbarrier \(shared offset 0x2000\) "
          r"never completed \(0 of 1 arrivals missing, transaction count 2048 bytes at the end\): "
          r"the bytes announced with expect_tx must equal those its bulk copies bring, and every "
          r"expected arrival must happen; thread \(0,0,0\) block \(0,0,0\)$")


def test_a_partial_box_still_counts_all_its_bytes():
    """A box wholly outside the array brings zeros, and all its bytes complete the phase."""
    body = (INIT + "    mbarrier.arrive.expect_tx.shared.b64 %rd5, [%r3], 2048;\n"
            "    mov.u32 %r20, -100;\n" + LOAD2 + "$L_wait:\n"
            "    mbarrier.try_wait.parity.shared.b64 %p2, [%r3], 0;\n    @!%p2 bra $L_wait;\n"
            "    ld.shared.u32 %r9, [%r4+2044];\n    st.global.u32 [%rd1], %r9;\n")
    x = np.full(64, 7, np.float32)
    run(one_thread(body), "k", [TensorMap(X, (64, 8)), x], block=32)
    assert x[0] == 0


def test_a_tensor_store_not_waited_for():
    fails(one_thread(STORE2 + "    cp.async.bulk.commit_group;\n    cp.async.bulk.wait_group 1;"),
          rf"^PTX line \d+: `{s2g(2)} \[%rd4, \{{%r20, %r21\}}\], \[%r4\];`: a tensor store "
          r"\(cp.async.bulk.tensor\) is still pending when its thread exits: the kernel must wait "
          r"for its bulk stores \(ptxpy.cp_async_bulk_wait\(0\)\) before it ends; thread "
          r"\(0,0,0\) block \(0,0,0\)$")


def test_the_param_space_address_and_immediate_coordinates():
    """Without cvta.param the map's param-space address works too; coordinates may be
    constants (negative ones as well)."""
    body = (INIT + "    mbarrier.arrive.expect_tx.shared.b64 %rd5, [%r3], 2048;\n"
            f"    {g2s(2)} [%r4], [%rd3, {{4, -60}}], [%r3];\n$L_wait:\n"
            "    mbarrier.try_wait.parity.shared.b64 %p2, [%r3], 0;\n    @!%p2 bra $L_wait;\n"
            "    prefetch.param.tensormap [%rd3];\n"
            "    mov.u32 %r5, 0;\n$L_copy:\n    shl.b32 %r6, %r5, 2;\n    add.s32 %r7, %r4, %r6;\n"
            "    ld.shared.u32 %r8, [%r7];\n    mul.wide.u32 %rd6, %r5, 4;\n"
            "    add.s64 %rd7, %rd1, %rd6;\n    st.global.u32 [%rd7], %r8;\n"
            "    add.s32 %r5, %r5, 1;\n    setp.lt.u32 %p3, %r5, 512;\n    @%p3 bra $L_copy;\n")
    out = np.zeros(512, np.float32)
    run(one_thread(body), "k", [TensorMap(X, (64, 8)), out], block=32)
    np.testing.assert_array_equal(out.reshape(64, 8), box_of(X, (-60, 4), (64, 8)))


CVTA = "    mov.b64 %rd3, load_tmap;\n    cvta.param.u64 %rd4, %rd3;\n"
CVTA_FORMS = ["    cvta.param.u64 %rd4, load_tmap;\n",
              "    cvta.param::entry.u64 %rd4, load_tmap;\n",
              "    mov.u64 %rd3, load_tmap;\n    cvta.param::entry.u64 %rd4, %rd3;\n"]


@pytest.mark.parametrize("cvta", CVTA_FORMS)
def test_other_forms_of_the_maps_address(cvta):
    """cvta.param of the parameter's name itself, and cvta.param::entry (PTX 8.3)."""
    ptx = load_kernel(2, 512).replace(CVTA, cvta).replace(".version 8.0", ".version 8.3")
    out = np.zeros(516, np.uint8)
    run(ptx, "load", [TensorMap(X, (8, 16)), out, 4, 2], block=128)
    np.testing.assert_array_equal(out[:512].view(np.float32).reshape(8, 16), X[2:10, 4:20])


def test_ld_param_of_a_tensor_map_is_rejected():
    with pytest.raises(SimulatorError, match=r"PTX line \d+: unsupported instruction "
                                             r"`ld.param.u64 %rd6, \[k_tmap\];`: k_tmap is a "
                                             r"tensor map \(a .b8 \[128\] parameter\), which is "
                                             r"opaque"):
        Module(one_thread("    ld.param.u64 %rd6, [k_tmap];"))


@pytest.mark.parametrize("line, message", [
    (f"{g2s(2)} [%r4], [%rd4, {{%r20, %r21, %r20}}], [%r3];",
     r"a \.2d tensor copy takes 2 coordinates, got 3"),
    (f"{g2s(2)} [%r4], [%rd4, {{%r20, %r21}}];",
     r"a tensor copy takes \[dst\], \[tensorMap, \{coordinates\}\], \[mbar\]"),
    (f"{s2g(2)} [%r4], [%rd4, {{%r20, %r21}}];",
     r"a tensor copy takes \[tensorMap, \{coordinates\}\], \[src\]"),
    (f"{g2s(2)} [%r4], [%rd4], [%r3];", r"a tensor copy takes \[dst\], \[tensorMap"),
    (f"{g2s(2)} [%r4], [%r20, {{%r20, %r21}}], [%r3];", r"a \.b32 address register for generic"),
    (f"{g2s(2)} [%r4], [k_tmap, {{%r20, %r21}}], [%r3];",
     r"the tensor map's address must be in a register"),
    (f"{g2s(2)} [%r4], [%rd4, {{%r20, %rd1}}], [%r3];",
     r"the coordinates are \.s32: %rd1 is a \.b64 register"),
    ("cp.async.bulk.tensor.6d.shared::cluster.global.tile.mbarrier::complete_tx::bytes "
     "[%r4], [%rd4, {%r20, %r21, %r20, %r21, %r20, %r21}], [%r3];",
     "the simulator supports cp.async.bulk.tensor"),
    ("cp.async.bulk.tensor.2d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes "
     "[%r4], [%rd4, {%r20, %r21}], [%r3], {%rs1};", "the simulator supports cp.async.bulk.tensor"),
    ("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group.multicast::cluster "
     "[%rd4, {%r20, %r21}], [%r4], %r20;", "the simulator supports cp.async.bulk.tensor"),
    ("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group.L2::cache_hint "
     "[%rd4, {%r20, %r21}], [%r4], %rd1;", "the simulator supports cp.async.bulk.tensor"),
    ("cp.async.bulk.prefetch.tensor.2d.L2.global.tile [%rd4, {%r20, %r21}];",
     "the simulator supports cp.async.bulk.tensor"),
    ("cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group "
     "[%rd4, {%r20, %r21}], [%r4];", "the simulator supports cp.async.bulk.tensor"),
    ("prefetch.global.L2 [%rd1];", "the simulator supports prefetch.tensormap"),
    ("prefetch.const.tensormap [%rd1];", r"unsupported modifier \.const"),
])
def test_rejected_at_load(line, message):
    with pytest.raises(SimulatorError, match=r"PTX line \d+: unsupported instruction `.*`: .*"
                                             + message):
        Module(one_thread("    " + line))


@pytest.mark.parametrize("line", [LOAD2, STORE2, "    prefetch.tensormap [%rd4];\n"])
def test_sm_80_rejects_them(line):
    with pytest.raises(SimulatorError, match=r"needs \.target sm_90 or later \(the module's is "
                                             r"sm_80\)"):
        Module(one_thread(line, target="sm_80"))


# ---- ptxas ---------------------------------------------------------------------------------------

ASSEMBLED = ([load_kernel(n, 1024) for n in range(1, 6)]
             + [load_kernel(2, 512, 128, tile=False), store_kernel(2, 8192),
                store_kernel(3, 512, wait="    cp.async.bulk.wait_group.read 0;"), ROUND_TRIP,
                one_thread(WAITED), one_thread(STORE2 + "    cp.async.bulk.commit_group;\n"
                                               "    cp.async.bulk.wait_group 0;"),
                one_thread("    prefetch.param.tensormap [%rd3];\n"
                           "    prefetch.tensormap [%rd4];\n")]
             + [load_kernel(2, 512).replace(CVTA, cvta).replace(".version 8.0", ".version 8.3")
                for cvta in CVTA_FORMS]
             + [load_kernel(2, 1024).replace("    setp.ne.u32 %p1",
                                             FILL + "    setp.ne.u32 %p1", 1)])


@pytest.mark.parametrize("index", range(len(ASSEMBLED)))
def test_kernels_assemble_with_ptxas(index):
    if find_ptxas() is None:
        pytest.skip("ptxas is not available")
    ptx = ASSEMBLED[index]
    ok, log, _ = assemble(ptx, "sm_90")
    assert ok, log
    Module(ptx)
