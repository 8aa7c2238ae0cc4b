"""The simulator's Hopper warpgroup MMA (`wgmma.fence`, `.mma_async`, `.commit_group`,
`.wait_group`) and `fence.proxy.async`, on hand-written sm_90a kernels.

Each kernel copies an image of shared memory, built here in NumPy, into a `.shared .align 1024`
array, builds A's and B's descriptors from a table (one pair per warpgroup), loads d from C,
runs one wgmma.mma_async and stores d. The tests place A (64 x K) and B (K x N) in the image
with the descriptor's layouts (written out below from the spec, element by element) and check
D against A @ B (+ C) in NumPy. The kernels are also assembled with ptxas for sm_90a."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from ptxpy.runtime.simulator import Module, SimulatorError, run_kernel
from ptxpy.transpiler.ptxas import assemble, find_ptxas

HEADER = ".version 8.0\n.target sm_90a\n.address_size 64\n"
SMEM = 49152                  # bytes of the kernels' shared array (the image's size)
ELEMENT = {"bf16": np.dtype(ml_dtypes.bfloat16), "f16": np.dtype(np.float16),
           "tf32": np.dtype(np.float32)}
SWIZZLE = {0: 1, 1: 8, 2: 4, 3: 2}   # descriptor mode -> 16-byte chunks per swizzled row (W)

# ---- the kernel -----------------------------------------------------------------------------


def kernel(n: int, kind: str, scale_d: str = "1", sign_a: int = 1, sign_b: int = 1,
           trans_a: int = 0, trans_b: int = 0, *, barrier: bool = True, before: str = "",
           operands: str | None = None) -> str:
    """`wg(image, words, desc, desc_shift, c, d, scale)`: copy `words` u32 words of block
    `ctaid`'s image into shared memory; thread t takes its descriptors from desc[t >> desc_shift]
    (a pair of u64, plus the shared array's address / 16), scale-d's predicate %p2 from
    `scale != 0` and its N/2 registers d from c[global thread]; then the wgmma sequence, and d to
    d[global thread]. `scale_d` is the operand text (`1`, `0`, `%p2`, `!%p2`); `before` is PTX
    put before the wgmma sequence; `operands` replaces the mma_async operands after d."""
    regs = n // 2
    k = 8 if kind == "tf32" else 16
    types = "tf32.tf32" if kind == "tf32" else f"{kind}.{kind}"
    d = "{" + ", ".join(f"%f{i}" for i in range(regs)) + "}"
    if operands is None:
        operands = f"%rd20, %rd21, {scale_d}, {sign_a}, {sign_b}"
        if kind != "tf32":
            operands += f", {trans_a}, {trans_b}"
    loads = "".join(f"    ld.global.v4.f32 {{%f{4 * j}, %f{4 * j + 1}, %f{4 * j + 2}, %f{4 * j + 3}}}, "
                    f"[%rd12+{16 * j}];\n" for j in range(regs // 4))
    stores = "".join(f"    st.global.v4.f32 [%rd15+{16 * j}], {{%f{4 * j}, %f{4 * j + 1}, "
                     f"%f{4 * j + 2}, %f{4 * j + 3}}};\n" for j in range(regs // 4))
    return HEADER + f"""
.visible .entry wg(.param .u64 wg_image, .param .u32 wg_words, .param .u64 wg_desc,
                   .param .u32 wg_desc_shift, .param .u64 wg_c, .param .u64 wg_d,
                   .param .u32 wg_scale)
{{
    .reg .pred %p<4>;
    .reg .b32 %r<20>;
    .reg .b64 %rd<24>;
    .reg .f32 %f<{max(regs, 4)}>;
    .shared .align 1024 .b8 smem[{SMEM}];

    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r12, %ctaid.x;
    mad.lo.s32 %r13, %r12, %r2, %r1;
    ld.param.u32 %r3, [wg_words];
    ld.param.u64 %rd1, [wg_image];
    cvta.to.global.u64 %rd1, %rd1;
    mul.lo.s32 %r14, %r12, %r3;
    mul.wide.u32 %rd2, %r14, 4;
    add.s64 %rd1, %rd1, %rd2;
    mov.u32 %r10, smem;
    mov.u32 %r4, %r1;
$COPY:
    setp.ge.u32 %p1, %r4, %r3;
    @%p1 bra $COPIED;
    mul.wide.u32 %rd2, %r4, 4;
    add.s64 %rd3, %rd1, %rd2;
    ld.global.u32 %r5, [%rd3];
    shl.b32 %r6, %r4, 2;
    add.s32 %r7, %r10, %r6;
    st.shared.u32 [%r7], %r5;
    add.s32 %r4, %r4, %r2;
    bra.uni $COPY;
$COPIED:
    fence.proxy.async.shared::cta;
    {"bar.sync 0;" if barrier else ""}
    fence.proxy.async;
    ld.param.u32 %r8, [wg_desc_shift];
    shr.u32 %r9, %r1, %r8;
    ld.param.u64 %rd4, [wg_desc];
    cvta.to.global.u64 %rd4, %rd4;
    mul.wide.u32 %rd5, %r9, 16;
    add.s64 %rd6, %rd4, %rd5;
    ld.global.u64 %rd7, [%rd6];
    ld.global.u64 %rd8, [%rd6+8];
    cvt.u64.u32 %rd9, %r10;
    shr.u64 %rd9, %rd9, 4;
    add.s64 %rd20, %rd7, %rd9;
    add.s64 %rd21, %rd8, %rd9;
    ld.param.u32 %r11, [wg_scale];
    setp.ne.u32 %p2, %r11, 0;
    ld.param.u64 %rd10, [wg_c];
    cvta.to.global.u64 %rd10, %rd10;
    mul.wide.u32 %rd11, %r13, {4 * regs};
    add.s64 %rd12, %rd10, %rd11;
{loads}{before}
    wgmma.fence.sync.aligned;
    wgmma.mma_async.sync.aligned.m64n{n}k{k}.f32.{types} {d}, {operands};
    wgmma.commit_group.sync.aligned;
    wgmma.wait_group.sync.aligned 0;
    ld.param.u64 %rd13, [wg_d];
    cvta.to.global.u64 %rd13, %rd13;
    add.s64 %rd15, %rd13, %rd11;
{stores}    ret;
}}
"""


# ---- layouts, from the spec ---------------------------------------------------------------------

@pytest.fixture
def rng():
    return np.random.default_rng(1234)


def element_addresses(start: int, rows: int, kdim: int, size: int, mode: int, lbo: int, sbo: int,
                      trans: bool):
    """The shared byte address of element (r, k) of an operand of `rows` rows (A: m, B: n) and
    K columns whose descriptor has these fields, per element (rows x K)."""
    per_chunk, w = 16 // size, SWIZZLE[mode]
    r, k = np.arange(rows)[:, None], np.arange(kdim)[None, :]
    if not trans:
        c, e = k // per_chunk, k % per_chunk
        if mode == 0:
            off = (r % 8) * 16 + (r // 8) * sbo + c * lbo
        else:
            off = (r % 8) * 16 * w + (r // 8) * sbo + c * 16
    else:
        nc, e, k0, k1 = r // per_chunk, r % per_chunk, k % 8, k // 8
        if mode == 0:
            off = nc * sbo + k0 * 16 + k1 * lbo
        else:
            off = (nc % w) * 16 + (nc // w) * lbo + k0 * 16 * w + k1 * sbo
    addr = start + off + e * size
    if mode:
        addr = addr ^ (((addr >> 7) & (w - 1)) << 4)
    return addr


def descriptor(start: int, lbo: int, sbo: int, mode: int, base: int = 0) -> int:
    return (((start >> 4) & 0x3FFF) | ((lbo >> 4) & 0x3FFF) << 16 | ((sbo >> 4) & 0x3FFF) << 32
            | base << 49 | mode << 62)


def default_offsets(rows: int, kdim: int, size: int, mode: int, trans: bool) -> tuple[int, int]:
    """(LBO, SBO) of a dense layout: core matrices (8 rows of 16 bytes) or swizzle atoms packed."""
    per_chunk, w = 16 // size, SWIZZLE[mode]
    if not trans:   # K-major: LBO steps 16 bytes of K (mode 0), SBO 8 rows
        chunks = kdim // per_chunk
        return (128, 128 * chunks) if mode == 0 else (16, 128 * w)
    if mode == 0:   # MN-major: SBO steps 16 bytes of MN, LBO 8 of K
        return 128 * (rows // per_chunk), 128
    return 128 * w * (kdim // 8), 128 * w    # LBO: the next W chunks of MN; SBO: 8 of K


class Image:
    """A block's shared memory: operands placed at 1024-byte aligned starts; the rest all-ones
    bytes (NaN in every float type), so that a misplaced read shows."""

    def __init__(self):
        self.bytes = np.full(SMEM, 0xFF, np.uint8)
        self.top = 0

    def place(self, values, kind: str, mode: int, trans: bool, offsets=None, start=None) -> int:
        """Lay out `values` (rows x K, A itself or B transposed); return its descriptor."""
        rows, kdim = values.shape
        size = ELEMENT[kind].itemsize
        lbo, sbo = offsets or default_offsets(rows, kdim, size, mode, trans)
        start = self.top if start is None else start
        addr = element_addresses(start, rows, kdim, size, mode, lbo, sbo, trans)
        assert np.unique(addr).size == addr.size and addr.max() + size <= SMEM
        words = self.bytes.view(np.uint32 if size == 4 else np.uint16)
        words[addr // size] = np.asarray(values, ELEMENT[kind]).view(words.dtype)
        self.top = max(self.top, -(-(int(addr.max()) + size) // 1024) * 1024)
        return descriptor(start, lbo, sbo, mode)


def d_layout(n: int):
    """(row, column) of D for each thread of a warpgroup and register of d: (128, N/2) each."""
    tid, i = np.arange(128)[:, None], np.arange(n // 2)[None, :]
    w, lane, j, e = tid // 32, tid % 32, i // 4, i % 4
    return 16 * w + lane // 4 + 8 * (e // 2), 8 * j + 2 * (lane % 4) + e % 2


def to_registers(mats):
    """(warpgroups, 64, N) matrices -> (warpgroups * 128, N/2) register values."""
    rows, cols = d_layout(mats.shape[2])
    return np.concatenate([m[rows, cols] for m in mats]).astype(np.float32)


def from_registers(regs, n: int):
    rows, cols = d_layout(n)
    mats = np.zeros((regs.shape[0] // 128, 64, n), np.float32)
    for g in range(mats.shape[0]):
        mats[g][rows, cols] = regs[128 * g:128 * g + 128]
    return mats


def draw(rng, kind: str, shape, integers=True):
    """Values exact in the type (small integers: every product and sum exact), or normals."""
    x = rng.integers(-4, 5, shape).astype(np.float64) if integers else rng.standard_normal(shape)
    return np.asarray(x, ELEMENT[kind]).astype(np.float64)


def tf32(x):
    return (np.asarray(x, np.float32).view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)


def launch(ptx, n, images, descs, c, *, blocks=1, threads=128, shift=7, scale=1,
           racecheck=None):
    """Run `wg`; images: one Image per block; descs: (A, B) pairs, per warpgroup (or per thread
    with shift 0); c: the registers (threads of the launch, N/2). Returns d as registers."""
    image = np.stack([img.bytes for img in images]).view(np.uint32)
    table = np.array(descs, np.uint64).reshape(-1)
    d = np.zeros((blocks * threads, n // 2), np.float32)
    run_kernel(ptx, "wg", grid=blocks, block=threads, racecheck=racecheck,
               args=[image, SMEM // 4, table, shift, np.ascontiguousarray(c, np.float32), d, scale])
    return d


# ---- products ---------------------------------------------------------------------------------

# (kind, N, A: (mode, MN-major, LBO/SBO or None), B: likewise)
CASES = [
    ("bf16", 64, (0, False, None), (0, False, None)),
    ("bf16", 64, (0, False, (1024, 128)), (0, False, (256, 384))),   # other packings, gaps
    ("f16", 128, (1, False, None), (1, True, None)),
    ("bf16", 256, (2, True, None), (3, False, None)),
    ("f16", 8, (0, True, None), (0, True, None)),
    ("f16", 64, (0, True, (128, 1024)), (0, True, (2048, 256))),
    ("bf16", 128, (3, True, None), (2, True, None)),
    ("f16", 256, (1, True, None), (1, False, None)),
    ("bf16", 8, (1, True, None), (3, True, None)),
    ("tf32", 64, (1, False, None), (1, False, None)),
    ("tf32", 8, (0, False, None), (0, False, (128, 128 * 2 + 128))),
    ("tf32", 256, (2, False, None), (3, False, None)),
    ("tf32", 128, (0, False, (1024, 128)), (2, False, None)),
]


def product(kind, n, a_spec, b_spec, rng, integers=True, warpgroups=1, blocks=1):
    """Operands for each block and warpgroup, placed by the specs: (images, descs, A, B) with
    A: (blocks, warpgroups, 64, K) and B: (blocks, warpgroups, K, N)."""
    kdim = 8 if kind == "tf32" else 16
    images, descs, a_all, b_all = [], None, [], []
    for _ in range(blocks):
        image = Image()
        pairs, a_block, b_block = [], [], []
        for _ in range(warpgroups):
            a = draw(rng, kind, (64, kdim), integers)
            b = draw(rng, kind, (kdim, n), integers)
            if kind == "tf32":     # bits below tf32's precision, which the product ignores
                a, b = a + 2.0 ** -20 * np.sign(a), b - 2.0 ** -21 * np.sign(b)
            pairs.append((image.place(a, kind, a_spec[0], a_spec[1], a_spec[2]),
                          image.place(b.T, kind, b_spec[0], b_spec[1], b_spec[2])))
            a_block.append(a)
            b_block.append(b)
        images.append(image)
        assert descs in (None, pairs)      # every block lays out its operands alike
        descs = pairs
        a_all.append(a_block)
        b_all.append(b_block)
    a, b = np.array(a_all), np.array(b_all)
    if kind == "tf32":
        a, b = tf32(a).astype(np.float64), tf32(b).astype(np.float64)
    return images, descs, a, b


def _case_id(case) -> str:
    def spec(name, mode_trans_offsets):
        mode, trans, offsets = mode_trans_offsets
        return (f"{name}{'-mn' if trans else '-k'}-{('none', 'sw128', 'sw64', 'sw32')[mode]}"
                + (f"-lbo{offsets[0]}-sbo{offsets[1]}" if offsets else ""))
    return f"{case[0]}-n{case[1]}-{spec('A', case[2])}-{spec('B', case[3])}"


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_product_layouts(case, rng):
    kind, n, a_spec, b_spec = case
    images, descs, a, b = product(kind, n, a_spec, b_spec, rng)
    c = draw(rng, "bf16", (1, 64, n))
    ptx = kernel(n, kind, "1", trans_a=int(a_spec[1]), trans_b=int(b_spec[1]))
    d = launch(ptx, n, images, descs, to_registers(c))
    np.testing.assert_array_equal(from_registers(d, n), (a[0] @ b[0] + c).astype(np.float32))


@pytest.mark.parametrize("kind", ["bf16", "f16", "tf32"])
def test_rounds_once_to_f32(kind, rng):
    """Normal values: the sum in f64, rounded to f32 once."""
    n = 32
    images, descs, a, b = product(kind, n, (1, False, None), (0, False, None), rng, integers=False)
    c = rng.standard_normal((1, 64, n)).astype(np.float32)
    d = launch(kernel(n, kind), n, images, descs, to_registers(c))
    want = (a[0] @ b[0] + c.astype(np.float64)).astype(np.float32)
    np.testing.assert_allclose(from_registers(d, n), want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("scale_d, scale, accumulate", [
    ("1", 0, True), ("0", 1, False), ("%p2", 1, True), ("%p2", 0, False),
    ("!%p2", 1, False), ("!%p2", 0, True)])
def test_scale_d(scale_d, scale, accumulate, rng):
    """scale-d as a constant or a (negated) predicate: D = A B + C, or A B, where C is never
    read (NaN here)."""
    n = 16
    images, descs, a, b = product("bf16", n, (0, False, None), (1, False, None), rng)
    c = draw(rng, "bf16", (1, 64, n))
    if not accumulate:
        c[...] = np.nan
    d = launch(kernel(n, "bf16", scale_d), n, images, descs, to_registers(c), scale=scale)
    want = a[0] @ b[0] + (c if accumulate else 0)
    np.testing.assert_array_equal(from_registers(d, n), want.astype(np.float32))


@pytest.mark.parametrize("kind, sign_a, sign_b", [("f16", -1, 1), ("bf16", 1, -1), ("tf32", -1, -1)])
def test_negated_operands(kind, sign_a, sign_b, rng):
    n = 24
    images, descs, a, b = product(kind, n, (2, False, None), (2, False, None), rng)
    c = draw(rng, "bf16", (1, 64, n))
    d = launch(kernel(n, kind, "1", sign_a, sign_b), n, images, descs, to_registers(c))
    want = (sign_a * a[0]) @ (sign_b * b[0]) + c
    np.testing.assert_array_equal(from_registers(d, n), want.astype(np.float32))


def test_two_warpgroups_two_blocks(rng):
    """256 threads: each warpgroup its own descriptors (its own operands); each block its own
    shared memory."""
    n = 64
    images, descs, a, b = product("f16", n, (1, True, None), (0, True, None), rng,
                                  warpgroups=2, blocks=2)
    assert descs[0] != descs[1]
    c = draw(rng, "bf16", (4, 64, n))
    d = launch(kernel(n, "f16", trans_a=1, trans_b=1), n, images, descs, to_registers(c),
               blocks=2, threads=256)
    want = (a @ b).reshape(4, 64, n) + c
    np.testing.assert_array_equal(from_registers(d, n), want.astype(np.float32))


def test_racecheck_sees_the_operand_reads(rng):
    """With the barrier, no race; without it, the copy's stores and the wgmma's reads (loads of
    the warpgroup's threads) race."""
    n = 8
    images, descs, a, b = product("bf16", n, (0, False, None), (0, False, None), rng)
    c = np.zeros((1, 64, n))
    d = launch(kernel(n, "bf16"), n, images, descs, to_registers(c), racecheck=True)
    np.testing.assert_array_equal(from_registers(d, n), (a[0] @ b[0]).astype(np.float32))
    with pytest.raises(SimulatorError, match="shared memory race: thread .* reads 16 bytes"):
        launch(kernel(n, "bf16", barrier=False), n, images, descs, to_registers(c),
               racecheck=True)


LATE_WARP = """
    // warp 0 spins 3000 times first: the others reach the wgmma sequence before it and wait
    mov.u32 %r15, 0;
    setp.ge.u32 %p3, %r1, 32;
    @%p3 bra $LATE_DONE;
$LATE:
    add.s32 %r15, %r15, 1;
    setp.lt.u32 %p3, %r15, 3000;
    @%p3 bra $LATE;
$LATE_DONE:
"""


def test_warps_meet_at_wgmma(rng):
    n = 8
    images, descs, a, b = product("bf16", n, (0, False, None), (0, False, None), rng)
    c = draw(rng, "bf16", (1, 64, n))
    d = launch(kernel(n, "bf16", before=LATE_WARP), n, images, descs, to_registers(c))
    np.testing.assert_array_equal(from_registers(d, n), (a[0] @ b[0] + c).astype(np.float32))


# ---- errors -----------------------------------------------------------------------------------

def simple(rng, n=8, kind="bf16"):
    images, descs, _, _ = product(kind, n, (0, False, None), (0, False, None), rng)
    return images, descs, np.zeros((1, 64, n))


def test_block_of_96_threads(rng):
    images, descs, c = simple(rng)
    with pytest.raises(SimulatorError, match=r"wgmma.fence.sync.aligned;` needs whole warpgroups "
                                             r"of 128 threads \(4 warps\); this block has 96"):
        launch(kernel(8, "bf16"), 8, images, descs, np.zeros((96, 4)), threads=96)


def test_part_of_a_warpgroup(rng):
    """Threads 0 to 63 branch around the wgmma sequence and exit: the others can never meet them."""
    images, descs, c = simple(rng)
    skip = "    setp.lt.u32 %p3, %r1, 64;\n    @%p3 bra $SKIP;\n"
    ptx = kernel(8, "bf16", before=skip).replace("    ret;\n}", "$SKIP:\n    ret;\n}")
    with pytest.raises(SimulatorError, match=r"wgmma.fence.sync.aligned;`: a thread of its "
                                             r"warpgroup has exited"):
        launch(ptx, 8, images, descs, to_registers(c))


def test_part_of_a_warpgroup_at_a_barrier(rng):
    """Threads 0 to 63 skip the wgmma sequence and wait at a barrier after it."""
    images, descs, c = simple(rng)
    skip = "    setp.lt.u32 %p3, %r1, 64;\n    @%p3 bra $SKIP;\n"
    ptx = kernel(8, "bf16", before=skip).replace("    ret;\n}", "$SKIP:\n    bar.sync 0;\n    ret;\n}")
    with pytest.raises(SimulatorError, match="threads of its warpgroup are live but never execute it"):
        launch(ptx, 8, images, descs, to_registers(c))


def test_guarded_mma_async(rng):
    """A guard that is false for some threads: the others execute it alone."""
    images, descs, c = simple(rng)
    ptx = kernel(8, "bf16").replace("    wgmma.mma_async", "    setp.lt.u32 %p3, %r1, 64;\n"
                                    "    @%p3 wgmma.mma_async")
    with pytest.raises(SimulatorError, match="warpgroup"):
        launch(ptx, 8, images, descs, to_registers(c))


def test_descriptors_differ_within_a_warpgroup(rng):
    images, descs, c = simple(rng)
    per_thread = [descs[0]] * 128
    per_thread[37] = (descs[0][0] + 1, descs[0][1])
    with pytest.raises(SimulatorError, match=r"the A descriptor must be the same in all 128 threads "
                                             r"of the warpgroup; .* thread \(37,0,0\)"):
        launch(kernel(8, "bf16"), 8, images, per_thread, to_registers(c), shift=0)


def test_scale_d_differs_within_a_warpgroup(rng):
    images, descs, c = simple(rng)
    ptx = kernel(8, "bf16", "%p2").replace("setp.ne.u32 %p2, %r11, 0;", "setp.lt.u32 %p2, %r1, 100;")
    with pytest.raises(SimulatorError, match=r"scale-d must be the same .* thread \(100,0,0\)"):
        launch(ptx, 8, images, descs, to_registers(c))


def test_nonzero_base_offset(rng):
    images, descs, c = simple(rng)
    bad = [(descs[0][0], descs[0][1] | 3 << 49)]
    with pytest.raises(SimulatorError, match="the B descriptor 0x.* has base offset 3"):
        launch(kernel(8, "bf16"), 8, images, bad, to_registers(c))


def test_operands_outside_shared_memory(rng):
    images, descs, c = simple(rng)
    bad = [(descs[0][0], descriptor(SMEM - 128, 128, 256, 0))]
    with pytest.raises(SimulatorError, match="out-of-bounds shared load of 16 bytes"):
        launch(kernel(8, "bf16"), 8, images, bad, to_registers(c))


@pytest.mark.parametrize("ptx, message", [
    (kernel(8, "bf16", operands="%rd20, %rd21, 1, 1, 1, 0"), "expected 8 operands, found 7"),
    (kernel(8, "tf32", operands="%rd20, %rd21, 1, 1, 1, 0, 0"), "expected 6 operands, found 8"),
    (kernel(16, "f16").replace("%f6, %f7}, %rd20", "%f6}, %rd20"), r"d of .m64n16 is 8 .f32 registers"),
    (kernel(8, "bf16", operands="%rd20, %rd21, 1, 2, 1, 0, 0"), "imm-scale-a is the constant 1 or -1"),
    (kernel(8, "bf16", operands="%rd20, %rd21, 1, 1, 1, 0, 2"), "imm-trans-b is the constant 0 or 1"),
    (kernel(8, "bf16", operands="%rd20, %rd21, %r1, 1, 1, 0, 0"), "scale-d is a predicate"),
    (kernel(8, "bf16", operands="%r10, %rd21, 1, 1, 1, 0, 0"), "64-bit integer register"),
    (kernel(8, "bf16").replace("k16.f32.bf16.bf16", "k8.f32.bf16.bf16"), "needs .m64nNk16"),
    (kernel(8, "bf16").replace("f32.bf16.bf16", "f32.bf16.f16"), "needs .m64nNk16"),
    (kernel(8, "bf16").replace("m64n8k16", "m64n12k16"), "N = 8, 16, ..., 256"),
    (kernel(8, "bf16").replace("wgmma.wait_group.sync.aligned 0", "wgmma.wait_group.sync.aligned 8"),
     "a constant from 0 to 7"),
    (kernel(8, "bf16").replace("wgmma.fence.sync.aligned", "wgmma.fence.aligned"), ".sync.aligned"),
    (kernel(8, "bf16", operands="{%r1, %r2, %r3, %r4}, %rd21, 1, 1, 1, 0, 0"),
     r"\{a0, a1, a2, a3\}, b-desc, scale-d, imm-scale-a, imm-scale-b, imm-trans-b: expected 7 "
     "operands, found 8"),
    (kernel(8, "bf16", operands="{%r1, %r2, %r3}, %rd21, 1, 1, 1, 0"),
     "A in registers is 4 32-bit registers, found 3"),
])
def test_rejected_at_load(ptx, message):
    with pytest.raises(SimulatorError, match=message):
        Module(ptx)


# ---- ptxas ------------------------------------------------------------------------------------

ASSEMBLED = ([kernel(n, kind, "1", trans_a=int(a[1]), trans_b=int(b[1])) for kind, n, a, b in CASES]
             + [kernel(16, "bf16", s) for s in ("0", "%p2", "!%p2")]
             + [kernel(24, "tf32", "1", -1, -1), kernel(24, "f16", "1", -1, 1),
                kernel(8, "bf16", before=LATE_WARP), kernel(8, "bf16", barrier=False)])


@pytest.mark.parametrize("index", range(len(ASSEMBLED)))
def test_kernels_assemble_with_ptxas(index):
    if find_ptxas() is None:
        pytest.skip("ptxas is not available")
    ok, log, _ = assemble(ASSEMBLED[index], "sm_90a")
    assert ok, log


# ---- writes to the operands of products in flight ---------------------------------------------
#
# On the GPU the tensor cores may read a product's A and B in shared memory until a
# wgmma.wait_group retires its group; the simulator reads them when the product is issued,
# and raises where shared memory is written in between. simple()'s operands (N = 8, bf16, no
# swizzle): A at shared bytes 0 to 2047, B at 2048 to 2303.

MMA = "    wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%f0, %f1, %f2, %f3}, "
SEQUENCE = (MMA + "%rd20, %rd21, 1, 1, 1, 0, 0;\n    wgmma.commit_group.sync.aligned;\n"
            "    wgmma.wait_group.sync.aligned 0;\n")
ISSUE = MMA + "%rd20, %rd21, 1, 1, 1, 0, 0;\n"
SECOND = MMA + "%rd22, %rd23, 1, 1, 1, 0, 0;\n"     # A at 4096 to 6143, B at 6144 to 6399
COMMIT = "    wgmma.commit_group.sync.aligned;\n"


def wait(n: int = 0) -> str:
    return f"    wgmma.wait_group.sync.aligned {n};\n"


def by(thread: int, text: str) -> str:
    """`text` (one instruction) executed by one thread of the launch (its global number)."""
    return f"    setp.eq.u32 %p3, %r13, {thread};\n    @%p3 {text}\n"


def store(offset: int, thread: int = 0) -> str:
    return by(thread, f"st.shared.u32 [%r10+{offset}], %r1;")


def flight(sequence: str) -> str:
    """The kernel with `sequence` in place of mma_async, commit_group, wait_group 0; %rd22 and
    %rd23: descriptors of a second product, 4096 bytes further on."""
    ptx = kernel(8, "bf16")
    assert SEQUENCE in ptx
    second = "    add.s64 %rd22, %rd20, 256;\n    add.s64 %rd23, %rd21, 256;\n"
    return ptx.replace(SEQUENCE, second + sequence)


def run_flight(rng, sequence: str, *, blocks: int = 1, threads: int = 128):
    images, descs, _, _ = product("bf16", 8, (0, False, None), (0, False, None), rng,
                                  warpgroups=threads // 128, blocks=blocks)
    launch(flight(sequence), 8, images, descs, np.zeros((blocks * threads, 4)), blocks=blocks,
           threads=threads, racecheck=False)  # (the stores race with the operand reads' threads)


RETIRED = "committed, not yet retired by a wait_group"
IN_FLIGHT = (r"which a wgmma of warpgroup {} \(issued at PTX line \d+, `{}`, {}\) may still be "
             r"reading")
FIRST = IN_FLIGHT.format(0, r"wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 \{%f0, ...,"
                            r" %f3\}, %rd20, %rd21, 1, 1, 1, 0, 0;", RETIRED)


def test_store_to_an_operand_before_the_wait(rng):
    with pytest.raises(SimulatorError, match=r"PTX line \d+: `@%p3 st.shared.u32 \[%r10\+16\], "
                                             r"%r1;` writes shared offset 0x10, " + FIRST +
                                             r".*wgmma.wait_group\); thread \(0,0,0\) block"):
        run_flight(rng, ISSUE + COMMIT + store(16) + wait())


BARRIER = "    bar.sync 0;\n"
WAITED = (r"which a wgmma of warpgroup 0 \(issued at PTX line \d+, `.*`, waited for by each "
          r"warp for its own part\) may still be reading in another warp: a wait_group orders "
          r"only its own warp's instructions; add a barrier after it \(ptxpy.syncthreads\(\)\)")


def test_store_to_an_operand_after_the_wait(rng):
    """After its wait a warp may write the rows of A its own part alone read (thread 0, warp 0:
    row 1 at 16); anything else, once a barrier follows the wait."""
    run_flight(rng, ISSUE + COMMIT + wait() + store(16) + BARRIER + store(2048) + store(512))


@pytest.mark.parametrize("offset, thread", [(2048, 0), (512, 0), (16, 32), (16, 128)])
def test_store_after_the_wait_before_a_barrier(offset, thread, rng):
    """wait_group is per warp: B (at 2048, read by every warp), A's row 16 (at 512, warp 1's),
    or row 1 written by warp 1's thread 32 or by warpgroup 1, are another warp's part, which
    only a barrier after the wait orders before the write."""
    with pytest.raises(SimulatorError, match=rf"writes shared offset {offset:#x}, " + WAITED
                                             + rf"; thread \({thread},0,0\) block \(0,0,0\)$"):
        run_flight(rng, ISSUE + COMMIT + wait() + store(offset, thread), threads=256)


@pytest.mark.parametrize("offset, fails", [(0, False), (2300, False), (4096, True), (6396, True),
                                           (6400, False)])
def test_wait_group_1_retires_the_older_group(offset, fails, rng):
    sequence = ISSUE + COMMIT + SECOND + COMMIT + wait(1) + BARRIER + store(offset) + wait()
    if not fails:
        run_flight(rng, sequence)
        return
    with pytest.raises(SimulatorError, match=f"writes shared offset {offset:#x}, .*%rd22, %rd23"):
        run_flight(rng, sequence)


def test_store_before_the_commit(rng):
    with pytest.raises(SimulatorError, match=r"writes shared offset 0x800, .*not yet committed"):
        run_flight(rng, ISSUE + store(2048) + COMMIT + wait())


def test_groups_count_empty_commits(rng):
    """commit_group with nothing issued since the last makes an empty group: wait_group 1 after
    the product's commit and an empty one retires the product."""
    run_flight(rng, ISSUE + COMMIT + COMMIT + wait(1) + store(0))
    with pytest.raises(SimulatorError, match="writes shared offset 0x0, "):
        run_flight(rng, ISSUE + COMMIT + COMMIT + wait(2) + store(0))


@pytest.mark.parametrize("offset", [2304, 2305, 4095, 8192, SMEM - 4])
def test_writes_to_bytes_no_product_reads(offset, rng):
    write = (store(offset - offset % 4) + by(0, f"st.shared.u8 [%r10+{offset}], %r1;")
             + by(0, f"atom.shared.add.u32 %r16, [%r10+{offset - offset % 4}], 1;"))
    run_flight(rng, ISSUE + COMMIT + write + wait())


GENERIC = "    cvt.u64.u32 %rd22, %r10;\n    cvta.shared.u64 %rd22, %rd22;\n"


WRITES = [pytest.param(write, message, id=name) for name, write, message in [
    ("st.u8", by(0, "st.shared.u8 [%r10+2303], %r1;"),
     "`@%p3 st.shared.u8 .* writes shared offset 0x8ff, "),
    ("st.v4", by(0, "st.shared.v4.u32 [%r10+2288], {%r1, %r1, %r1, %r1};"),
     "writes shared offset 0x8f0, "),
    ("st.v2", by(0, "st.shared.v2.u32 [%r10+2296], {%r1, %r1};"), "writes shared offset 0x8f8, "),
    ("atom", by(0, "atom.shared.add.u32 %r16, [%r10+64], 1;"),
     "`@%p3 atom.shared.add.u32 .* atomically updates shared offset 0x40, "),
    ("red", by(0, "red.shared.add.u32 [%r10+64], 1;"), "atomically updates shared offset 0x40, "),
    ("cas", by(0, "atom.shared.cas.b32 %r16, [%r10+64], 1, 2;"),
     "atomically updates shared offset 0x40, "),
    ("generic", GENERIC + by(0, "st.u32 [%rd22+1024], %r1;"),
     r"`@%p3 st.u32 \[%rd22\+1024\], %r1;` writes shared offset 0x400, "),
    # a store of all the threads, thread t at 2304 - 16t: thread 1 is the first whose bytes a
    # product read
    ("all-threads", "    mul.lo.s32 %r16, %r1, -16;\n    add.s32 %r16, %r16, %r10;\n"
                    "    st.shared.u32 [%r16+2304], %r1;\n", "writes shared offset 0x8f0, "),
]]


@pytest.mark.parametrize("write, message", WRITES)
def test_every_kind_of_write(write, message, rng):
    thread = 1 if "%r16+2304" in write else 0
    with pytest.raises(SimulatorError, match=message + ".*" + FIRST
                       + rf".*; thread \({thread},0,0\) block \(0,0,0\)$"):
        run_flight(rng, ISSUE + COMMIT + write + wait())


def test_store_by_another_warpgroup(rng):
    """Thread 128, of warpgroup 1, stores to warpgroup 0's A while its product is in flight
    (warpgroup 1's own product reads other bytes)."""
    with pytest.raises(SimulatorError, match=r"writes shared offset 0x20, .*"
                                             + IN_FLIGHT.format(0, ".*%rd20, %rd21.*", RETIRED)
                                             + r".*thread \(128,0,0\) block \(0,0,0\)"):
        run_flight(rng, ISSUE + COMMIT + store(32, thread=128) + wait(), threads=256)


def test_store_by_another_warpgroup_to_its_own_operand(rng):
    """Warpgroup 1's A lies at 3072 (after warpgroup 0's A and B, 1024-byte aligned): a store
    there by warpgroup 0's thread 0 names warpgroup 1's product."""
    with pytest.raises(SimulatorError, match=r"writes shared offset 0xc00, .*"
                                             + IN_FLIGHT.format(1, ".*", RETIRED)):
        run_flight(rng, ISSUE + COMMIT + store(3072, thread=0) + wait(), threads=256)


@pytest.mark.parametrize("thread, fails", [(0, True), (128, False), (129, False)])
def test_blocks_have_their_own_products(thread, fails, rng):
    """Two blocks in one batch; only block 0 issues a product. A store to offset 0 of block 1's
    shared memory, by block 1's thread, while block 0's product is in flight is fine."""
    sequence = ("    setp.ne.u32 %p3, %r12, 0;\n    @%p3 bra $NO_MMA;\n"
                + ISSUE + "$NO_MMA:\n" + COMMIT + store(0, thread) + wait())
    if not fails:
        run_flight(rng, sequence, blocks=2)
        return
    with pytest.raises(SimulatorError, match=r"writes shared offset 0x0, .*block \(0,0,0\)"):
        run_flight(rng, sequence, blocks=2)


def cp_async(offset: int) -> str:
    """Thread 0 copies 16 bytes of the image in global memory to shared offset `offset`."""
    return (by(0, f"cp.async.cg.shared.global [%r10+{offset}], [%rd1], 16;")
            + "    cp.async.commit_group;\n")


def test_cp_async_issued_to_an_operand_in_flight(rng):
    """The copy may land any time from its issue: a destination in flight fails there."""
    with pytest.raises(SimulatorError, match=r"`@%p3 cp.async.cg.shared.global \[%r10\+1024\], "
                                             r"\[%rd1\], 16;` writes shared offset 0x400 \(a "
                                             r"cp.async may land any time until the wait that "
                                             r"covers it\), " + FIRST):
        run_flight(rng, ISSUE + COMMIT + cp_async(1024) + "    cp.async.wait_all;\n" + wait())


def test_a_product_reading_a_copy_not_landed(rng):
    """A copy issued before the product and waited for only after it: the product reads bytes
    that may not be there yet, which fails at the product."""
    with pytest.raises(SimulatorError, match=r"PTX line \d+: `wgmma.mma_async.sync.aligned.m64n8k16"
                                             r"\.f32\.bf16\.bf16 \{%f0, \.\.\., %f3\}, %rd20, "
                                             r"%rd21, 1, 1, 1, 0, 0;` reads shared offset 0x810, "
                                             r"where a cp.async \(issued at PTX line \d+, `@%p3 "
                                             r"cp.async.cg.shared.global \[%r10\+2064\], \[%rd1\], "
                                             r"16;`, by thread \(0,0,0\) block \(0,0,0\)\) has "
                                             r"not landed: wait for it"):
        run_flight(rng, cp_async(2064) + ISSUE + COMMIT + "    cp.async.wait_group 0;\n" + wait())


def test_cp_async_after_the_wait(rng):
    """A copy elsewhere in flight across the product, and one to an operand after the
    product's wait and a barrier: both fine."""
    run_flight(rng, cp_async(8192) + ISSUE + COMMIT + wait() + BARRIER
               + "    cp.async.wait_group 0;\n" + cp_async(0) + "    cp.async.wait_all;\n")


def test_flight_kernels_assemble_with_ptxas():
    """One kernel with every instruction the tests above use (it would fail in the simulator)."""
    if find_ptxas() is None:
        pytest.skip("ptxas is not available")
    writes = "".join(case.values[0] for case in WRITES)
    ptx = flight("    setp.ne.u32 %p3, %r12, 0;\n    @%p3 bra $NO_MMA;\n" + cp_async(2064) + ISSUE
                 + "$NO_MMA:\n" + COMMIT + SECOND + COMMIT + wait(1)
                 + writes + store(0) + "    cp.async.wait_group 0;\n" + cp_async(0)
                 + "    cp.async.wait_all;\n" + wait())
    ok, log, _ = assemble(ptx, "sm_90a")
    assert ok, log


def test_matmul_wgmma_copying_too_far_ahead(tmp_path, monkeypatch):
    """examples/matmul_wgmma.py with AHEAD = STAGES - 1 (and wgmma_wait(1)): each step's copies
    go to the buffer the step before's products, still in flight, read. Run as
    tests/test_examples.py runs the examples (PTXPY_INTERPRET=1, the CPU's sizes)."""
    import importlib.util
    import sys
    from pathlib import Path

    import jax
    source = (Path(__file__).resolve().parent.parent / "examples" / "matmul_wgmma.py").read_text()
    line = "AHEAD = STAGES - 1 - INFLIGHT"
    assert source.count(line) == 1
    path = tmp_path / "matmul_wgmma_too_far_ahead.py"
    path.write_text(source.replace(line, "AHEAD = STAGES - 1"))
    monkeypatch.setenv("PTXPY_INTERPRET", "1")
    monkeypatch.setattr(jax, "default_backend", lambda: "cpu")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, path.stem, module)
    spec.loader.exec_module(module)
    with pytest.raises(Exception, match=r"too_far_ahead.py:\d+: `@?.*cp.async.cg.shared.global .*` "
                                        r"writes shared offset 0x[0-9a-f]+ \(a cp.async may land "
                                        r"any time until the wait that covers it\), which a wgmma "
                                        r"of warpgroup [01] \(issued at .*too_far_ahead.py:\d+, "
                                        r"`wgmma.mma_async.sync.aligned.m64n256k16.*\{%f1, ..., "
                                        r"%f128\}.*`, " + RETIRED + r"\)"):
        module.main()
