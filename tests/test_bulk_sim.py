"""Hopper's mbarrier and 1-D bulk copies (cp.async.bulk) in the simulator (docs/simulator.md,
"mbarrier and bulk copies"): hand-written PTX checked against NumPy, the errors of every misuse,
a spin on a barrier nobody completes, and the kernels assembled with `ptxas` for sm_90."""
import numpy as np
import pytest

from ptxpy.runtime.simulator import Module, SimulatorError, run_kernel
from test_simulator_progress import deadline
from ptxpy.transpiler.ptxas import assemble, find_ptxas

HEADER = ".version 8.0\n.target sm_90\n.address_size 64\n"
REGS = """
    .reg .pred %p<8>;
    .reg .b32 %r<32>;
    .reg .b64 %rd<16>;
    .reg .f32 %f<8>;
"""
G2S = "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"
S2G = "cp.async.bulk.global.shared::cta.bulk_group"


def run(ptx: str, name: str, args, **kw):
    with deadline():
        run_kernel(ptx, name, args=args, **kw)


# ---- one thread copies a row; every thread waits, then reads it ------------------------------

# Block b: thread 0 initialises the barrier (count 1), announces 1024 bytes and copies row b of
# x (256 floats) into `tile`; all 256 threads spin on the barrier's phase 0, then write
# out[b, t] = tile[t]. {ISSUE} is the arrive.expect_tx and the copy, in either order.
ROW = HEADER + """
.visible .entry row(.param .u64 row_x, .param .u64 row_out)
{""" + REGS + """
    .shared .align 16 .b8 tile[1024];
    .shared .align 8 .b64 bar;
    ld.param.u64 %rd1, [row_x];
    ld.param.u64 %rd2, [row_out];
    cvta.to.global.u64 %rd1, %rd1;
    cvta.to.global.u64 %rd2, %rd2;
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, bar;
    mov.u32 %r4, tile;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra $L_init_done;
    mbarrier.init.shared.b64 [%r3], 1;
$L_init_done:
    bar.sync 0;
    @%p1 bra $L_wait;
    mul.wide.u32 %rd4, %r2, 1024;
    add.s64 %rd5, %rd1, %rd4;
{ISSUE}
$L_wait:
    mbarrier.try_wait.parity.shared.b64 %p2, [%r3], 0;
    @!%p2 bra $L_wait;
    shl.b32 %r5, %r1, 2;
    add.s32 %r6, %r4, %r5;
    ld.shared.f32 %f1, [%r6];
    mad.lo.s32 %r7, %r2, 256, %r1;
    mul.wide.u32 %rd6, %r7, 4;
    add.s64 %rd7, %rd2, %rd6;
    st.global.f32 [%rd7], %f1;
    ret;
}
"""
ARRIVE_TX = "    mbarrier.arrive.expect_tx.shared.b64 %rd3, [%r3], 1024;\n"
COPY = f"    {G2S} [%r4], [%rd5], 1024, [%r3];\n"


def row(issue: str = ARRIVE_TX + COPY) -> str:
    return ROW.replace("{ISSUE}", issue)


@pytest.mark.parametrize("issue", [ARRIVE_TX + COPY, COPY + ARRIVE_TX], ids=["arrive-first",
                                                                           "copy-first"])
@pytest.mark.parametrize("racecheck", [False, True])
def test_one_thread_copies_a_row_that_all_threads_read(issue, racecheck):
    """Three blocks in one batch (distinct barriers and tiles). Copy first: the copy makes the
    transaction count -1024 and the arrive brings it to 0, landing the bytes there. Under the
    race check, reads after the wait do not race with the copy."""
    x = np.random.default_rng(0).standard_normal((3, 256)).astype(np.float32)
    out = np.zeros_like(x)
    run(row(issue), "row", [x, out], grid=3, block=256, racecheck=racecheck)
    np.testing.assert_array_equal(out, x)


def test_sixty_four_bit_addresses():
    """The barrier and the destination as .shared addresses in 64-bit registers, and
    test_wait instead of try_wait."""
    ptx = row(ARRIVE_TX + COPY).replace("mov.u32 %r3, bar;", "mov.u64 %rd8, bar;")
    ptx = ptx.replace("mov.u32 %r4, tile;", "mov.u64 %rd9, tile;\n    mov.u32 %r4, tile;")
    ptx = ptx.replace("[%r3]", "[%rd8]").replace(f"{G2S} [%r4]", f"{G2S} [%rd9]")
    ptx = ptx.replace("try_wait", "test_wait")
    x = np.arange(512, dtype=np.float32).reshape(2, 256)
    out = np.zeros_like(x)
    run(ptx, "row", [x, out], grid=2, block=256)
    np.testing.assert_array_equal(out, x)


# ---- a read before the wait sees the old bytes ---------------------------------------------

# Each thread writes -1 to tile[t]; after a barrier thread 0 announces and issues the copy on a
# barrier of count 2, so the phase waits for thread 1's arrive after a second barrier. Every
# thread reads tile[t] before (early) and after the wait (late).
EARLY = HEADER + """
.visible .entry early(.param .u64 early_x, .param .u64 early_before, .param .u64 early_after)
{""" + REGS + """
    .shared .align 16 .b8 tile[256];
    .shared .align 8 .b64 bar;
    ld.param.u64 %rd1, [early_x];
    cvta.to.global.u64 %rd1, %rd1;
    mov.u32 %r1, %tid.x;
    mov.u32 %r3, bar;
    mov.u32 %r4, tile;
    shl.b32 %r5, %r1, 2;
    add.s32 %r6, %r4, %r5;
    st.shared.f32 [%r6], 0fBF800000;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra $L_init_done;
    mbarrier.init.shared.b64 [%r3], 2;
$L_init_done:
    bar.sync 0;
    @%p1 bra $L_issued;
    mbarrier.arrive.expect_tx.shared.b64 %rd3, [%r3], 256;
    cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r4], [%rd1], 256, [%r3];
$L_issued:
    ld.shared.f32 %f1, [%r6];
    bar.sync 0;
    setp.ne.u32 %p2, %r1, 1;
    @%p2 bra $L_wait;
    mbarrier.arrive.shared.b64 %rd3, [%r3];
$L_wait:
    mbarrier.try_wait.parity.shared.b64 %p3, [%r3], 0;
    @!%p3 bra $L_wait;
    ld.shared.f32 %f2, [%r6];
    mul.wide.u32 %rd4, %r1, 4;
    ld.param.u64 %rd5, [early_before];
    cvta.to.global.u64 %rd5, %rd5;
    add.s64 %rd6, %rd5, %rd4;
    st.global.f32 [%rd6], %f1;
    ld.param.u64 %rd5, [early_after];
    cvta.to.global.u64 %rd5, %rd5;
    add.s64 %rd6, %rd5, %rd4;
    st.global.f32 [%rd6], %f2;
    ret;
}
"""


def test_a_producer_at_a_higher_pc():
    """Thread 0 jumps past the wait loop to announce and issue the copy: the threads spinning
    on the barrier (at lower pcs, which run first) must hand over to it."""
    ptx = row("    bra.uni $L_produce;").replace(
        "    ret;\n}", "    ret;\n$L_produce:\n" + ARRIVE_TX + COPY + "    bra.uni $L_wait;\n}")
    x = np.random.default_rng(4).standard_normal((2, 256)).astype(np.float32)
    out = np.zeros_like(x)
    run(ptx, "row", [x, out], grid=2, block=256)
    np.testing.assert_array_equal(out, x)


def test_a_read_before_the_wait_sees_the_old_bytes():
    x = np.arange(1, 65, dtype=np.float32)
    before, after = np.zeros(64, np.float32), np.zeros(64, np.float32)
    run(EARLY, "early", [x, before, after], block=64, racecheck=False)
    np.testing.assert_array_equal(before, np.full(64, -1, np.float32))
    np.testing.assert_array_equal(after, x)


def test_the_race_check_reports_a_read_of_a_copy_in_flight():
    """The copy's destination counts as thread 0's store from the issue: thread 1's read
    before the phase completes races with it."""
    x = np.arange(64, dtype=np.float32)
    with pytest.raises(SimulatorError, match=r"PTX line \d+: shared memory race: thread "
                                             r"\(1,0,0\) reads 4 bytes at shared offset 0x4 that "
                                             r"thread \(0,0,0\) wrote since the last barrier"):
        run(EARLY, "early", [x, np.zeros(64, np.float32), np.zeros(64, np.float32)], block=64,
            racecheck=True)


# ---- two barriers, alternately, over several phases ---------------------------------------------

# A double-buffered pipeline over `steps` rows of 64 floats: thread 0 issues row i + 1 into
# buffer (i + 1) % 2 (barrier (i + 1) % 2) while every thread waits for row i in buffer i % 2,
# with parity (i / 2) % 2, and writes out[i, t] = 2 * row[i][t]; a barrier ends each step, so
# the buffer refilled next was read to the end.
PIPELINE = HEADER + """
.visible .entry pipeline(.param .u64 pipe_x, .param .u64 pipe_out, .param .u32 pipe_steps)
{""" + REGS + """
    .shared .align 16 .b8 tiles[512];
    .shared .align 8 .b64 bars[2];
    ld.param.u64 %rd1, [pipe_x];
    ld.param.u64 %rd2, [pipe_out];
    cvta.to.global.u64 %rd1, %rd1;
    cvta.to.global.u64 %rd2, %rd2;
    ld.param.u32 %r20, [pipe_steps];
    mov.u32 %r1, %tid.x;
    mov.u32 %r3, bars;
    mov.u32 %r4, tiles;
    setp.eq.u32 %p1, %r1, 0;
    @!%p1 bra $L_init_done;
    mbarrier.init.shared.b64 [%r3], 1;
    mbarrier.init.shared.b64 [%r3+8], 1;
$L_init_done:
    bar.sync 0;
    @!%p1 bra $L_first_done;
    mbarrier.arrive.expect_tx.shared.b64 %rd3, [%r3], 256;
    cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r4], [%rd1], 256, [%r3];
$L_first_done:
    mov.u32 %r10, 0;
$L_loop:
    add.s32 %r11, %r10, 1;
    setp.lt.u32 %p2, %r11, %r20;
    and.pred %p3, %p1, %p2;
    @!%p3 bra $L_issued;
    and.b32 %r12, %r11, 1;
    shl.b32 %r13, %r12, 3;
    add.s32 %r14, %r3, %r13;
    shl.b32 %r15, %r12, 8;
    add.s32 %r16, %r4, %r15;
    mul.wide.u32 %rd4, %r11, 256;
    add.s64 %rd5, %rd1, %rd4;
    mbarrier.arrive.expect_tx.shared.b64 %rd3, [%r14], 256;
    cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r16], [%rd5], 256, [%r14];
$L_issued:
    and.b32 %r12, %r10, 1;
    shl.b32 %r13, %r12, 3;
    add.s32 %r14, %r3, %r13;
    shr.u32 %r17, %r10, 1;
    and.b32 %r17, %r17, 1;
$L_wait:
    mbarrier.try_wait.parity.shared.b64 %p4, [%r14], %r17;
    @!%p4 bra $L_wait;
    shl.b32 %r15, %r12, 8;
    add.s32 %r16, %r4, %r15;
    shl.b32 %r18, %r1, 2;
    add.s32 %r19, %r16, %r18;
    ld.shared.f32 %f1, [%r19];
    mul.f32 %f2, %f1, 0f40000000;
    mad.lo.s32 %r21, %r10, 64, %r1;
    mul.wide.u32 %rd6, %r21, 4;
    add.s64 %rd7, %rd2, %rd6;
    st.global.f32 [%rd7], %f2;
    bar.sync 0;
    mov.u32 %r10, %r11;
    setp.lt.u32 %p5, %r10, %r20;
    @%p5 bra $L_loop;
    ret;
}
"""


@pytest.mark.parametrize("racecheck", [False, True])
def test_two_barriers_alternate_over_several_phases(racecheck):
    steps = 7
    x = np.random.default_rng(1).standard_normal((steps, 64)).astype(np.float32)
    out = np.zeros_like(x)
    run(PIPELINE, "pipeline", [x, out, steps], block=64, racecheck=racecheck)
    np.testing.assert_array_equal(out, 2 * x)


# ---- arrivals of every thread ------------------------------------------------------------------

# 128 threads: each stores x[t] * (round + 1) to s[t], arrives on a barrier of count 128 and
# waits for the round's phase, then reads s[127 - t]; two rounds (phases 0 and 1), with a
# bar.sync between them so that no store of round 2 overtakes a read of round 1.
ALL_ARRIVE = HEADER + """
.visible .entry all_arrive(.param .u64 all_x, .param .u64 all_out)
{""" + REGS + """
    .shared .align 16 .b8 s[512];
    .shared .align 8 .b64 bar;
    ld.param.u64 %rd1, [all_x];
    ld.param.u64 %rd2, [all_out];
    cvta.to.global.u64 %rd1, %rd1;
    cvta.to.global.u64 %rd2, %rd2;
    mov.u32 %r1, %tid.x;
    mov.u32 %r3, bar;
    mov.u32 %r4, s;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra $L_init_done;
    mbarrier.init.shared.b64 [%r3], 128;
$L_init_done:
    bar.sync 0;
    mul.wide.u32 %rd4, %r1, 4;
    add.s64 %rd5, %rd1, %rd4;
    ld.global.f32 %f1, [%rd5];
    shl.b32 %r5, %r1, 2;
    add.s32 %r6, %r4, %r5;
    sub.s32 %r7, 127, %r1;
    shl.b32 %r8, %r7, 2;
    add.s32 %r9, %r4, %r8;
    mov.u32 %r10, 0;
$L_round:
    cvt.rn.f32.u32 %f2, %r10;
    add.f32 %f2, %f2, 0f3F800000;
    mul.f32 %f3, %f1, %f2;
    st.shared.f32 [%r6], %f3;
    mbarrier.arrive.shared.b64 %rd3, [%r3];
$L_wait:
    mbarrier.try_wait.parity.shared.b64 %p2, [%r3], %r10;
    @!%p2 bra $L_wait;
    ld.shared.f32 %f4, [%r9];
    mad.lo.s32 %r11, %r10, 128, %r1;
    mul.wide.u32 %rd6, %r11, 4;
    add.s64 %rd7, %rd2, %rd6;
    st.global.f32 [%rd7], %f4;
    bar.sync 0;
    add.s32 %r10, %r10, 1;
    setp.lt.u32 %p3, %r10, 2;
    @%p3 bra $L_round;
    ret;
}
"""


@pytest.mark.parametrize("racecheck", [False, True])
def test_every_thread_arrives_on_a_barrier_of_count_128(racecheck):
    """Two blocks in one batch. Under the race check, a phase every thread of the block
    arrived on orders the stores before the arrive and the reads after the wait."""
    x = np.random.default_rng(2).standard_normal(128).astype(np.float32)
    out = np.zeros((2, 128), np.float32)
    run(ALL_ARRIVE, "all_arrive", [x, out], grid=2, block=128, racecheck=racecheck)
    np.testing.assert_array_equal(out, [x[::-1], 2 * x[::-1]])


def test_a_phase_of_fewer_threads_orders_nothing_for_the_race_check():
    """Count 64 in a block of 128, threads 0 to 63 arrive: thread 0 reads s[127], stored by
    thread 127, which did not arrive on the phase thread 0 waits for: reported."""
    ptx = ALL_ARRIVE.replace("mbarrier.init.shared.b64 [%r3], 128;",
                             "mbarrier.init.shared.b64 [%r3], 64;")
    ptx = ptx.replace("    mbarrier.arrive.shared.b64 %rd3, [%r3];\n",
                      "    setp.ge.u32 %p4, %r1, 64;\n    @%p4 bra $L_wait;\n"
                      "    mbarrier.arrive.shared.b64 %rd3, [%r3];\n")
    with pytest.raises(SimulatorError, match=r"shared memory race: thread \(0,0,0\) reads 4 "
                                             r"bytes at shared offset 0x1fc that thread "
                                             r"\(127,0,0\) wrote since the last barrier"):
        run(ptx, "all_arrive", [np.zeros(128, np.float32), np.zeros((2, 128), np.float32)],
            block=128, racecheck=True)


# ---- bulk stores shared -> global --------------------------------------------------------------

# 64 threads write s[t] = 3 x[t]; after a barrier thread 0 stores the first half of s to
# out[0:32] (group 0) and the second half to out[32:64] (group 1), then {WAIT}, then reads
# out[0] and out[32] into seen[0], seen[1], then waits for everything.
STORE = HEADER + """
.visible .entry store(.param .u64 st_x, .param .u64 st_out, .param .u64 st_seen)
{""" + REGS + """
    .shared .align 16 .b8 s[256];
    ld.param.u64 %rd1, [st_x];
    ld.param.u64 %rd2, [st_out];
    ld.param.u64 %rd8, [st_seen];
    cvta.to.global.u64 %rd1, %rd1;
    cvta.to.global.u64 %rd2, %rd2;
    cvta.to.global.u64 %rd8, %rd8;
    mov.u32 %r1, %tid.x;
    mov.u32 %r4, s;
    mul.wide.u32 %rd4, %r1, 4;
    add.s64 %rd5, %rd1, %rd4;
    ld.global.f32 %f1, [%rd5];
    mul.f32 %f1, %f1, 0f40400000;
    shl.b32 %r5, %r1, 2;
    add.s32 %r6, %r4, %r5;
    st.shared.f32 [%r6], %f1;
    fence.proxy.async.shared::cta;
    bar.sync 0;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra $L_done;
    cp.async.bulk.global.shared::cta.bulk_group [%rd2], [%r4], 128;
    cp.async.bulk.commit_group;
    cp.async.bulk.global.shared::cta.bulk_group [%rd2+128], [%r4+128], 128;
    cp.async.bulk.commit_group;
{WAIT}
    ld.global.f32 %f2, [%rd2];
    st.global.f32 [%rd8], %f2;
    ld.global.f32 %f2, [%rd2+128];
    st.global.f32 [%rd8+4], %f2;
{END}
$L_done:
    ret;
}
"""


def store(wait: str, end: str = "    cp.async.bulk.wait_group 0;") -> str:
    return STORE.replace("{WAIT}", wait).replace("{END}", end)


@pytest.mark.parametrize("wait, seen", [
    ("    cp.async.bulk.wait_group 0;", [3, 99]), ("    cp.async.bulk.wait_group.read 0;", [3, 99]),
    ("    cp.async.bulk.wait_group 1;", [3, -7]), ("    cp.async.bulk.wait_group.read 1;", [3, -7]),
    ("    cp.async.bulk.wait_group 2;", [-7, -7])])
@pytest.mark.parametrize("racecheck", [False, True])
def test_bulk_stores_land_at_the_wait_that_covers_them(wait, seen, racecheck):
    """wait_group N writes the thread's copies but those of its N newest groups: after
    wait_group 1 the first half is there, the second not yet (out's old bytes)."""
    x = np.arange(1, 65, dtype=np.float32)
    out, got = np.full(64, -7, np.float32), np.zeros(2, np.float32)
    run(store(wait), "store", [x, out, got], block=64, racecheck=racecheck)
    np.testing.assert_array_equal(out, 3 * x)
    np.testing.assert_array_equal(got, seen)


def test_a_bulk_store_not_waited_for():
    with pytest.raises(SimulatorError, match=r"PTX line \d+: `cp.async.bulk.global.shared::cta."
                                             r"bulk_group \[%rd2\+128\], \[%r4\+128\], 128;`: a "
                                             r"bulk store \(cp.async.bulk\) is still pending when "
                                             r"its thread exits: the kernel must wait for its bulk "
                                             r"stores \(ptxpy.cp_async_bulk_wait\(0\)\) before it "
                                             r"ends; thread \(0,0,0\) block \(0,0,0\)"):
        run(store("    cp.async.bulk.wait_group 1;", ""), "store",
            [np.zeros(64, np.float32), np.zeros(64, np.float32), np.zeros(2, np.float32)],
            block=64)


# ---- errors ----------------------------------------------------------------------------------

def one_thread(body: str, shared: int = 1024, entry: str = "k") -> str:
    """A kernel `k(x)` whose thread 0 runs `body` (%r3: the barrier `bar`, %r4: `tile`, %rd1:
    x's address); the other threads return."""
    return HEADER + f"""
.visible .entry {entry}(.param .u64 k_x)
{{{REGS}
    .shared .align 16 .b8 tile[{shared}];
    .shared .align 8 .b64 bar[2];
    ld.param.u64 %rd1, [k_x];
    cvta.to.global.u64 %rd1, %rd1;
    mov.u32 %r1, %tid.x;
    mov.u32 %r3, bar;
    mov.u32 %r4, tile;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra $L_end;
{body}
$L_end:
    ret;
}}
"""


INIT = "    mbarrier.init.shared.b64 [%r3], 1;\n"
BAR = "bar offset 0x400"     # `bar` follows `tile`: shared offset 1024


def fails(ptx: str, message: str, block: int = 32, **kw):
    with pytest.raises(SimulatorError, match=message):
        run(ptx, "k", [np.zeros(512, np.float32)], block=block, **kw)


@pytest.mark.parametrize("body", [
    "    mbarrier.arrive.shared.b64 %rd3, [%r3];",
    "    mbarrier.arrive.expect_tx.shared.b64 %rd3, [%r3], 16;",
    "    mbarrier.test_wait.parity.shared.b64 %p2, [%r3], 0;",
    "    mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r3], 0;",
    f"    {G2S} [%r4], [%rd1], 16, [%r3];",
    INIT + "    mbarrier.arrive.shared.b64 %rd3, [%r3+8];"])
def test_an_uninitialised_barrier(body):
    offset = "0x408" if "+8" in body else "0x400"
    fails(one_thread(body), rf"PTX line \d+: `.*`: no mbarrier was initialised at shared offset "
                            rf"{offset}: call ptxpy.mbarrier_init \(mbarrier.init\) on it first; "
                            r"thread \(0,0,0\) block \(0,0,0\)$")


def test_a_wait_tells_whether_the_phase_of_its_parity_has_completed():
    """In phase 0, parity 1 counts as completed (the phase before) and parity 0 not; after
    the arrive that completes phase 0, the other way round."""
    def probe(parity: int, slot: int) -> str:
        return (f"    mbarrier.test_wait.parity.shared.b64 %p2, [%r3], {parity};\n"
                f"    selp.u32 %r7, 1, 0, %p2;\n    st.global.u32 [%rd1+{4 * slot}], %r7;\n")
    ptx = one_thread(INIT + probe(0, 0) + probe(1, 1)
                     + "    mbarrier.arrive.shared.b64 %rd3, [%r3];\n" + probe(0, 2) + probe(1, 3))
    out = np.full(4, 7, np.uint32)
    run(ptx, "k", [out], block=32)
    np.testing.assert_array_equal(out, [0, 1, 1, 0])


def test_one_arrive_too_many():
    body = (INIT + "    mbarrier.arrive.expect_tx.shared.b64 %rd3, [%r3], 1024;\n"
            "    mbarrier.arrive.shared.b64 %rd3, [%r3];\n")
    fails(one_thread(body), r"`mbarrier.arrive.shared.b64 %rd3, \[%r3\];`: arrives on the "
                            r"mbarrier at shared offset 0x400, whose phase 0 has had all its 1 "
                            r"arrivals and waits only for its transaction count \(1024 bytes\) "
                            r"to reach 0: one arrive too many; thread \(0,0,0\)")


def test_two_lanes_arriving_together_are_taken_in_lane_order():
    """Count 1, two lanes arrive in one instruction: lane 0 completes phase 0, lane 1 phase 1
    (each arrive's state is the phase it arrived in); with expect_tx lane 1's arrive is one too
    many (phase 0 still waits for bytes)."""
    body = ("    setp.gt.u32 %p1, %r1, 1;\n    @%p1 bra $L_end;\n"
            "    setp.ne.u32 %p2, %r1, 0;\n    @%p2 bra $L_two;\n" + INIT + "$L_two:\n"
            "    bar.sync 0;\n    mbarrier.arrive.shared.b64 %rd3, [%r3];\n"
            "    mbarrier.test_wait.parity.shared.b64 %p3, [%r3], 1;\n"
            "    selp.u32 %r7, 1, 0, %p3;\n    cvt.u64.u32 %rd6, %r7;\n"
            "    add.s64 %rd3, %rd3, %rd6;\n"      # state + (phase 1 done)
            "    mul.wide.u32 %rd4, %r1, 8;\n    add.s64 %rd5, %rd1, %rd4;\n"
            "    st.global.u64 [%rd5], %rd3;\n")
    ptx = HEADER + f"""
.visible .entry k(.param .u64 k_x)
{{{REGS}
    .shared .align 8 .b64 bar[2];
    ld.param.u64 %rd1, [k_x];
    cvta.to.global.u64 %rd1, %rd1;
    mov.u32 %r1, %tid.x;
    mov.u32 %r3, bar;
{body}$L_end:
    ret;
}}
"""
    out = np.zeros(2, np.uint64)
    run(ptx, "k", [out], block=2)
    np.testing.assert_array_equal(out, [0 + 1, 1 + 1])    # phases 0 and 1, and phase 1 done
    fails(ptx.replace("mbarrier.arrive.shared.b64 %rd3, [%r3];",
                      "mbarrier.arrive.expect_tx.shared.b64 %rd3, [%r3], 16;"),
          r"one arrive too many; thread \(1,0,0\) block \(0,0,0\)$", block=2)


def test_transaction_count_beyond_20_bits():
    body = (INIT + "    mbarrier.arrive.expect_tx.shared.b64 %rd3, [%r3+0], 1048575;\n"
            "    mbarrier.init.shared.b64 [%r3+8], 2;\n"
            "    mbarrier.arrive.expect_tx.shared.b64 %rd3, [%r3+8], 1048575;\n"
            "    mbarrier.arrive.expect_tx.shared.b64 %rd3, [%r3+8], 1;\n")
    fails(one_thread(body), r"`mbarrier.arrive.expect_tx.shared.b64 %rd3, \[%r3\+8\], 1;`: the "
                            r"transaction count of the mbarrier at shared offset 0x408 would be "
                            r"1048576 bytes, beyond \+-1048575 \(2\^20 - 1\); thread \(0,0,0\)")


@pytest.mark.parametrize("count", [0, 1 << 20])
def test_init_count_out_of_range_at_run_time(count):
    body = f"    mov.u32 %r7, {count};\n    mbarrier.init.shared.b64 [%r3], %r7;"
    fails(one_thread(body), rf"`mbarrier.init.shared.b64 \[%r3\], %r7;`: an mbarrier's arrival "
                            rf"count must be 1 to 1048575 \(2\^20 - 1\), got {count}; thread")


@pytest.mark.parametrize("body, message", [
    (INIT + "    mbarrier.arrive.shared.b64 %rd3, [%r3+4];",
     r"misaligned shared mbarrier of 8 bytes at 0x404; thread \(0,0,0\)"),
    (INIT + f"    {G2S} [%r4+8], [%rd1], 32, [%r3];",
     r"misaligned shared store of 32 bytes at 0x8; thread \(0,0,0\)"),
    (INIT + f"    {G2S} [%r4], [%rd1+4], 32, [%r3];",
     r"misaligned global load of 32 bytes at 0x[0-9a-f]+4; thread \(0,0,0\)"),
    (INIT + f"    {G2S} [%r4+1024], [%rd1], 32, [%r3];",
     r"out-of-bounds shared store of 32 bytes at 0x400; thread \(0,0,0\)"),
    (INIT + f"    {G2S} [%r4], [%rd1+2032], 32, [%r3];",
     r"out-of-bounds global load of 32 bytes at 0x[0-9a-f]+; thread \(0,0,0\)"),
    (INIT + "    mov.u32 %r7, 40;\n" + f"    {G2S} [%r4], [%rd1], %r7, [%r3];",
     r"a bulk copy's size must be a positive multiple of 16 bytes, got 40; thread \(0,0,0\)"),
    (f"    {S2G} [%rd1+8], [%r4], 16;\n    cp.async.bulk.wait_group 0;",
     r"misaligned global store of 16 bytes at 0x[0-9a-f]+8; thread \(0,0,0\)"),
    (f"    {S2G} [%rd1], [%r4+1040], 16;\n    cp.async.bulk.wait_group 0;",
     r"out-of-bounds shared load of 16 bytes at 0x410; thread \(0,0,0\)"),
])
def test_misaligned_out_of_bounds_and_odd_sizes(body, message):
    fails(one_thread(body), r"PTX line \d+: .*" + message)


def test_a_copy_that_never_lands():
    """expect_tx announces 2048 bytes, the copy brings 1024, and nobody waits: the batch ends
    with the copy pending on a phase that can never complete."""
    body = (INIT + "    mbarrier.arrive.expect_tx.shared.b64 %rd3, [%r3], 2048;\n"
            f"    {G2S} [%r4], [%rd1], 1024, [%r3];\n")
    fails(one_thread(body), rf"PTX line \d+: `{G2S} \[%r4\], \[%rd1\], 1024, \[%r3\];`: this "
                            r"bulk copy of 1024 bytes never landed: the phase of its mbarrier "
                            r"\(shared offset 0x400\) never completed \(0 of 1 arrivals missing, "
                            r"transaction count 1024 bytes at the end\): the bytes announced with "
                            r"expect_tx must equal those its bulk copies bring, and every expected "
                            r"arrival must happen; thread \(0,0,0\) block \(0,0,0\)$")


def test_a_spin_on_a_barrier_nobody_completes():
    """Count 2, but only thread 0 arrives: every thread spins on phase 0 forever, which the
    hang check catches instead of hanging."""
    ptx = ALL_ARRIVE.replace("mbarrier.init.shared.b64 [%r3], 128;",
                             "mbarrier.init.shared.b64 [%r3], 2;")
    ptx = ptx.replace("    mbarrier.arrive.shared.b64 %rd3, [%r3];\n",
                      "    @%p1 bra $L_wait;\n    mbarrier.arrive.shared.b64 %rd3, [%r3];\n")
    with pytest.raises(SimulatorError, match=r"PTX line \d+: the kernel can never finish: 128 "
                                             r"threads loop without changing any register or "
                                             r"memory"):
        run(ptx, "all_arrive", [np.zeros(128, np.float32), np.zeros((2, 128), np.float32)],
            block=128, racecheck=False)


# ---- load-time checks ----------------------------------------------------------------------------

@pytest.mark.parametrize("line, message", [
    ("mbarrier.init.shared.b64 [%r3], 0;", "an mbarrier's arrival count must be 1 to 1048575"),
    ("mbarrier.init.shared.b64 [%r3], 1048576;", "arrival count must be 1 to 1048575"),
    ("mbarrier.arrive.expect_tx.shared.b64 %rd3, [%r3], 1048576;",
     "expect_tx's byte count must be 0 to 1048575"),
    ("mbarrier.arrive.shared::cluster.b64 %rd3, [%r3];", "the simulator supports mbarrier.init"),
    ("mbarrier.try_wait.shared.b64 %p2, [%r3];", "the simulator supports mbarrier.init"),
    ("mbarrier.arrive.release.shared.b64 %rd3, [%r3];", r"\.release needs a scope"),
    ("mbarrier.arrive.acquire.cta.shared.b64 %rd3, [%r3];",
     r"mbarrier.arrive takes the memory order \.release, not \.acquire"),
    ("mbarrier.inval.shared.b64 [%r3];", "the simulator supports mbarrier.init"),
    ("mbarrier.init.shared.b64 [%r3];", r"mbarrier.init takes \[addr\], count"),
    (f"{G2S} [%r4], [%rd1], 40, [%r3];", "size must be a positive multiple of 16 bytes"),
    (f"{G2S} [%r4], [%rd1], 32;", r"takes \[dst\], \[src\], size, \[mbar\]"),
    ("cp.async.bulk.global.shared::cluster.mbarrier::complete_tx::bytes [%rd1], [%r4], 16, [%r3];",
     "the simulator supports cp.async.bulk.shared::cluster.global"),
    ("cp.async.bulk.shared::cta.global.bulk_group [%r4], [%rd1], 16;", "the simulator supports"),
    ("cp.async.bulk.prefetch.L2.global [%rd1], 16;", "the simulator supports"),
    ("cp.async.bulk.wait_group 8;", "takes a constant from 0 to 7"),
    ("cp.async.bulk.wait_group %r1;", "takes a constant from 0 to 7"),
])
def test_rejected_at_load(line, message):
    with pytest.raises(SimulatorError, match=r"PTX line \d+: unsupported instruction `.*`: .*"
                                             + message):
        Module(one_thread("    " + line))


SM80 = [("mbarrier.init.shared.b64 [%r3], 1;", True),
        ("mbarrier.arrive.shared.b64 %rd3, [%r3];", True),
        ("mbarrier.test_wait.parity.shared.b64 %p2, [%r3], 0;", True),
        ("mbarrier.arrive.expect_tx.shared.b64 %rd3, [%r3], 16;", False),
        ("mbarrier.try_wait.parity.shared.b64 %p2, [%r3], 0;", False),
        (f"{G2S} [%r4], [%rd1], 16, [%r3];", False),
        (f"{S2G} [%rd1], [%r4], 16;", False),
        ("cp.async.bulk.commit_group;", False),
        ("cp.async.bulk.wait_group.read 0;", False)]


@pytest.mark.parametrize("line, accepted", SM80)
def test_what_sm_80_accepts(line, accepted):
    ptx = one_thread("    " + line).replace(".target sm_90", ".target sm_80")
    if accepted:
        Module(ptx)
        return
    with pytest.raises(SimulatorError, match=r"needs \.target sm_90 or later \(the module's is "
                                             r"sm_80\)"):
        Module(ptx)


# ---- wgmma operands ----------------------------------------------------------------------------

def wgmma_flight(rng, sequence: str):
    """test_wgmma_sim's kernel (A and B of a product in shared memory from 0 to 2303) with
    `sequence` in place of its product, commit and wait; barrier at shared offset 40960."""
    from test_wgmma_sim import run_flight
    run_flight(rng, sequence)


def by0(text: str) -> str:
    return f"    setp.eq.u32 %p3, %r13, 0;\n    @%p3 {text}\n"


def test_wgmma_reads_a_bulk_copy_not_landed():
    from test_wgmma_sim import COMMIT, ISSUE, wait
    rng = np.random.default_rng(3)
    init = by0("mbarrier.init.shared.b64 [%r10+40960], 1;")
    copy = by0(f"{G2S} [%r10+2064], [%rd1], 16, [%r10+40960];")
    with pytest.raises(SimulatorError, match=r"`wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16."
                                             r"bf16 \{%f0, \.\.\., %f3\}, %rd20, %rd21, 1, 1, 1, "
                                             r"0, 0;` reads shared offset 0x810, where a bulk copy "
                                             r"\(issued at PTX line \d+, `@%p3 cp.async.bulk.*`, "
                                             r"by thread \(0,0,0\) block \(0,0,0\)\) has not "
                                             r"landed: wait for its mbarrier's phase "
                                             r"\(ptxpy.mbarrier_wait\) before the wgmma; read by "
                                             r"warpgroup 0, thread \(0,0,0\) block \(0,0,0\)$"):
        wgmma_flight(rng, init + copy + ISSUE + COMMIT + wait())
    # elsewhere, landing after the product: fine
    elsewhere = by0(f"{G2S} [%r10+8192], [%rd1], 16, [%r10+40960];")
    arrive = by0("mbarrier.arrive.expect_tx.shared.b64 %rd16, [%r10+40960], 16;")
    wgmma_flight(rng, init + elsewhere + ISSUE + COMMIT + arrive + wait())
    # issued onto an operand in flight
    with pytest.raises(SimulatorError, match=r"`@%p3 cp.async.bulk.* writes shared offset 0x400 "
                                             r"\(a bulk copy may land any time until its "
                                             r"mbarrier's phase completes\), which a wgmma"):
        wgmma_flight(rng, init + ISSUE + COMMIT + arrive
                     + by0(f"{G2S} [%r10+1024], [%rd1], 16, [%r10+40960];") + wait())


# ---- ptxas ---------------------------------------------------------------------------------------

ASSEMBLED = ([row(ARRIVE_TX + COPY), row(COPY + ARRIVE_TX), EARLY, PIPELINE, ALL_ARRIVE,
              store("    cp.async.bulk.wait_group.read 1;"), store("    cp.async.bulk.wait_group 0;")]
             + [one_thread("    " + line).replace(".target sm_90", ".target sm_80")
                for line, accepted in SM80 if accepted])


@pytest.mark.parametrize("index", range(len(ASSEMBLED)))
def test_kernels_assemble_with_ptxas(index):
    if find_ptxas() is None:
        pytest.skip("ptxas is not available")
    ptx = ASSEMBLED[index]
    ok, log, _ = assemble(ptx, "sm_80" if ".target sm_80" in ptx else "sm_90")
    assert ok, log
    Module(ptx)
