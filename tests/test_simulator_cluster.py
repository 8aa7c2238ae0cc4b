"""Hopper thread-block clusters in the simulator (docs/simulator.md, "Thread-block clusters"):
hand-written sm_90 PTX with `.reqnctapercluster`, the cluster special registers,
`barrier.cluster`, `mapa` and `ld`/`st`/`atom`/`red` on `.shared::cluster`, multicast bulk and
tensor copies (`.multicast::cluster`, sm_90a) and mbarrier operations on other CTAs' barriers
(`.shared::cluster`), checked against NumPy; the errors of every misuse; whole clusters a
batch; the race check; and every kernel assembled with `ptxas`."""
import re

import numpy as np
import pytest

from ptxpy.runtime import simulator
from ptxpy.runtime.simulator import Module, SimulatorError, run_kernel
from ptxpy.transpiler.ptxas import assemble, find_ptxas
from test_simulator_progress import deadline

HEADER = ".version 8.0\n.target sm_90\n.address_size 64\n"
REGS = """
    .reg .pred %p<8>;
    .reg .b32 %r<48>;
    .reg .b64 %rd<16>;
    .reg .f32 %f<8>;
"""
SYNC = "    barrier.cluster.arrive.release.aligned;\n    barrier.cluster.wait.acquire.aligned;\n"
# (where some threads of a warp have exited or branched away: the forms without .aligned)
SYNC_UNALIGNED = "    barrier.cluster.arrive;\n    barrier.cluster.wait;\n"


def run(ptx, name: str, grid, block, args, **kw):
    with deadline():
        run_kernel(ptx, name, grid, block, args, **kw)


def cluster_directive(cluster) -> str:
    return "" if cluster is None else ".reqnctapercluster " + ", ".join(map(str, cluster)) + "\n"


# ---- the special registers -------------------------------------------------------------------

SPECIALS = (["%ctaid." + a for a in "xyz"] + ["%cluster_ctarank", "%cluster_nctarank"]
            + ["%cluster_ctaid." + a for a in "xyz"] + ["%cluster_nctaid." + a for a in "xyz"]
            + ["%clusterid." + a for a in "xyz"] + ["%nclusterid." + a for a in "xyz"])


def specials_kernel(cluster) -> str:
    """Thread 0 of each block writes the registers of SPECIALS and %is_explicit_cluster (as
    0 / 1) at out[linear block index, :]."""
    stores = "".join(f"    mov.u32 %r{10 + i}, {name};\n    st.global.u32 [%rd3+{4 * i}], %r{10 + i};\n"
                     for i, name in enumerate(SPECIALS))
    return HEADER + """
.visible .entry specials(.param .u64 specials_out)
""" + cluster_directive(cluster) + "{" + REGS + """
    ld.param.u64 %rd1, [specials_out];
    cvta.to.global.u64 %rd1, %rd1;
    mov.u32 %r1, %tid.x;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra $L_done;
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ctaid.y;
    mov.u32 %r4, %ctaid.z;
    mov.u32 %r5, %nctaid.x;
    mov.u32 %r6, %nctaid.y;
    mad.lo.u32 %r7, %r4, %r6, %r3;
    mad.lo.u32 %r7, %r7, %r5, %r2;
    mul.lo.u32 %r7, %r7, """ + str(len(SPECIALS) + 1) + """;
    mul.wide.u32 %rd2, %r7, 4;
    add.s64 %rd3, %rd1, %rd2;
""" + stores + """    mov.pred %p2, %is_explicit_cluster;
    selp.u32 %r9, 1, 0, %p2;
    st.global.u32 [%rd3+""" + str(4 * len(SPECIALS)) + """], %r9;
$L_done:
    ret;
}
"""


def expected_specials(grid, cluster):
    explicit = cluster is not None
    cluster = tuple(cluster or ()) + (1,) * (3 - len(cluster or ()))
    rows = []
    for z in range(grid[2]):
        for y in range(grid[1]):
            for x in range(grid[0]):
                ctaid = np.array([x, y, z])
                c = np.array(cluster)
                local = ctaid % c
                rank = local[0] + c[0] * (local[1] + c[1] * local[2])
                rows.append([*ctaid, rank, c.prod(), *local, *c, *(ctaid // c),
                             *(np.array(grid) // c), int(explicit)])
    return np.array(rows, np.uint32)


@pytest.mark.parametrize("grid, cluster", [((4, 2, 1), (2, 2, 1)), ((2, 2, 4), (1, 2, 2)),
                                           ((6, 1, 1), (3,)), ((2, 4, 1), (1, 2)),
                                           ((3, 2, 1), None)],
                         ids=["4x2-by-2x2", "2x2x4-by-1x2x2", "6-by-3", "2x4-by-1x2",
                              "no-cluster"])
def test_special_registers(grid, cluster):
    """Each block's %ctaid, %cluster_ctarank, %cluster_nctarank, %cluster_ctaid,
    %cluster_nctaid, %clusterid, %nclusterid and %is_explicit_cluster, against NumPy; without
    .reqnctapercluster every block is a cluster of one."""
    out = np.zeros((np.prod(grid), len(SPECIALS) + 1), np.uint32)
    run(specials_kernel(cluster), "specials", grid, 64, [out])
    np.testing.assert_array_equal(out, expected_specials(grid, cluster))


# ---- reading a peer's shared memory: mapa + ld.shared::cluster --------------------------------

MAPA_U32 = """
    mapa.shared::cluster.u32 %r9, %r7, %r8;
    ld.shared::cluster.u32 %r10, [%r9];
    and.b32 %r11, %r1, 15;
    shl.b32 %r11, %r11, 4;
    add.u32 %r12, %r5, %r11;
    mapa.shared::cluster.u32 %r13, %r12, %r8;
    ld.shared::cluster.v4.u32 {%r14, %r15, %r16, %r17}, [%r13];
"""
MAPA_U64 = """
    cvt.u64.u32 %rd4, %r7;
    mapa.shared::cluster.u64 %rd5, %rd4, %r8;
    ld.relaxed.cluster.shared::cluster.u32 %r10, [%rd5];
    mapa.shared::cluster.u64 %rd6, s, %r8;
    and.b32 %r11, %r1, 15;
    mul.wide.u32 %rd7, %r11, 16;
    add.s64 %rd8, %rd6, %rd7;
    ld.shared::cluster.v4.u32 {%r14, %r15, %r16, %r17}, [%rd8];
"""


def exchange_kernel(cluster, mapa: str) -> str:
    """Block b (linear index), rank r of n, thread t: s[t] = 100000 b + 1000 r + t; cluster
    sync; read the CTA of rank (r + 1) % n: its s[t] and (a vector) its s[4 (t % 16) ..
    + 3]; cluster sync (so that no CTA exits while its peer reads it); out[b, t, 0] = the
    first, out[b, t, 4:] the vector."""
    return HEADER + """
.visible .entry exchange(.param .u64 exchange_out)
""" + cluster_directive(cluster) + "{" + REGS + """
    .shared .align 16 .b32 s[64];
    ld.param.u64 %rd1, [exchange_out];
    cvta.to.global.u64 %rd1, %rd1;
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %cluster_ctarank;
    mov.u32 %r3, %cluster_nctarank;
    mov.u32 %r20, %ctaid.x;
    mov.u32 %r21, %ctaid.y;
    mov.u32 %r22, %nctaid.x;
    mad.lo.u32 %r23, %r21, %r22, %r20;
    mad.lo.u32 %r4, %r2, 1000, %r1;
    mad.lo.u32 %r4, %r23, 100000, %r4;
    mov.u32 %r5, s;
    shl.b32 %r6, %r1, 2;
    add.u32 %r7, %r5, %r6;
    st.shared.u32 [%r7], %r4;
""" + SYNC + """    add.u32 %r8, %r2, 1;
    rem.u32 %r8, %r8, %r3;
""" + mapa + SYNC + """    mad.lo.u32 %r24, %r23, 64, %r1;
    mul.wide.u32 %rd2, %r24, 32;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r10;
    st.global.v4.u32 [%rd3+16], {%r14, %r15, %r16, %r17};
    ret;
}
"""


def expected_exchange(grid, cluster):
    """What exchange_kernel writes (grid and cluster 2-D)."""
    cx, cy = cluster[0], cluster[1] if len(cluster) > 1 else 1
    n = cx * cy
    out = np.zeros((grid[1], grid[0], 64, 8), np.uint32)
    t = np.arange(64)
    for by in range(grid[1]):
        for bx in range(grid[0]):
            rank = bx % cx + cx * (by % cy)
            peer = (rank + 1) % n
            px, py = bx - bx % cx + peer % cx, by - by % cy + peer // cx
            base = 100000 * (py * grid[0] + px) + 1000 * peer
            out[by, bx, :, 0] = base + t
            out[by, bx, :, 4:] = base + 4 * (t[:, None] % 16) + np.arange(4)
    return out.reshape(-1, 64, 8)


@pytest.mark.parametrize("mapa", [MAPA_U32, MAPA_U64], ids=["u32", "u64"])
@pytest.mark.parametrize("grid, cluster", [((4, 1, 1), (2,)), ((4, 2, 1), (4, 1, 1)),
                                           ((4, 4, 1), (2, 2, 1))])
def test_each_cta_reads_its_peer_through_mapa(grid, cluster, mapa):
    out = np.zeros((np.prod(grid), 64, 8), np.uint32)
    run(exchange_kernel(cluster, mapa), "exchange", grid, 64, [out])
    np.testing.assert_array_equal(out, expected_exchange(grid, cluster))


def test_several_clusters_in_several_batches(monkeypatch):
    """With a batch of 64 threads (one block), every batch still holds one whole cluster of 4
    CTAs, their ranks in order; the answers do not change."""
    monkeypatch.setattr(simulator, "BATCH_THREADS", 64)
    batches = []
    original = simulator._Batch.run
    monkeypatch.setattr(simulator._Batch, "run",
                        lambda self: batches.append(self.blocks.tolist()) or original(self))
    grid, cluster = (4, 4, 1), (2, 2, 1)
    out = np.zeros((16, 64, 8), np.uint32)
    run(exchange_kernel(cluster, MAPA_U32), "exchange", grid, 64, [out])
    np.testing.assert_array_equal(out, expected_exchange(grid, cluster))
    assert batches == [[0, 1, 4, 5], [2, 3, 6, 7], [8, 9, 12, 13], [10, 11, 14, 15]]
    batches.clear()
    monkeypatch.setattr(simulator, "BATCH_THREADS", 64 * 8)     # two clusters a batch
    run(exchange_kernel(cluster, MAPA_U32), "exchange", grid, 64, [out])
    np.testing.assert_array_equal(out, expected_exchange(grid, cluster))
    assert batches == [[0, 1, 4, 5, 2, 3, 6, 7], [8, 9, 12, 13, 10, 11, 14, 15]]


def test_a_kernel_without_clusters_keeps_its_batches(monkeypatch):
    """Without .reqnctapercluster, batches are consecutive blocks, as they always were."""
    monkeypatch.setattr(simulator, "BATCH_THREADS", 64 * 3)
    batches = []
    original = simulator._Batch.run
    monkeypatch.setattr(simulator._Batch, "run",
                        lambda self: batches.append(self.blocks.tolist()) or original(self))
    out = np.zeros((8, len(SPECIALS) + 1), np.uint32)
    run(specials_kernel(None), "specials", (4, 2, 1), 64, [out])
    np.testing.assert_array_equal(out, expected_specials((4, 2, 1), None))
    assert batches == [[0, 1, 2], [3, 4, 5], [6, 7]]


# ---- stores into a peer: st.shared::cluster ---------------------------------------------------

STORE_TO_PEER = HEADER + """
.visible .entry store_to_peer(.param .u64 stp_out)
.reqnctapercluster 4, 1, 1
{""" + REGS + """
    .shared .align 16 .b32 s[64];
    .shared .align 8 .b32 pairs[128];
    ld.param.u64 %rd1, [stp_out];
    cvta.to.global.u64 %rd1, %rd1;
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %cluster_ctarank;
    mov.u32 %r3, %ctaid.x;
    add.u32 %r8, %r2, 1;
    and.b32 %r8, %r8, 3;
    mad.lo.u32 %r4, %r3, 1000, %r1;
    mov.u32 %r5, s;
    shl.b32 %r6, %r1, 2;
    add.u32 %r7, %r5, %r6;
    mapa.shared::cluster.u32 %r9, %r7, %r8;
    st.shared::cluster.u32 [%r9], %r4;
    mov.u32 %r10, pairs;
    shl.b32 %r11, %r1, 3;
    add.u32 %r12, %r10, %r11;
    mapa.shared::cluster.u32 %r13, %r12, %r8;
    add.u32 %r14, %r4, 500;
    st.relaxed.cluster.shared::cluster.v2.u32 [%r13], {%r4, %r14};
""" + SYNC + """    ld.shared::cta.u32 %r15, [%r7];
    ld.shared::cta.v2.u32 {%r16, %r17}, [%r12];
    mad.lo.u32 %r18, %r3, 64, %r1;
    mul.lo.u32 %r18, %r18, 3;
    mul.wide.u32 %rd2, %r18, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r15;
    st.global.u32 [%rd3+4], %r16;
    st.global.u32 [%rd3+8], %r17;
    ret;
}
"""


@pytest.mark.parametrize("racecheck", [False, True])
def test_a_store_into_a_peer_is_read_there_after_the_cluster_barrier(racecheck):
    """Each CTA stores (a scalar and a .v2 vector) into the next rank's shared memory; after
    the cluster barrier each reads its own (ld.shared::cta): what the previous rank wrote."""
    out = np.zeros((8, 64, 3), np.uint32)
    run(STORE_TO_PEER, "store_to_peer", 8, 64, [out], racecheck=racecheck)
    b, t = np.arange(8)[:, None], np.arange(64)[None, :]
    writer = b - b % 4 + (b % 4 + 3) % 4
    np.testing.assert_array_equal(out[:, :, 0], writer * 1000 + t)
    np.testing.assert_array_equal(out[:, :, 1], writer * 1000 + t)
    np.testing.assert_array_equal(out[:, :, 2], writer * 1000 + t + 500)


# ---- atomics into rank 0's shared memory ----------------------------------------------------

ATOMICS = HEADER + """
.visible .entry cluster_atomics(.param .u64 ca_out, .param .u64 ca_old)
.maxntid 64, 1, 1
.reqnctapercluster 2, 2, 1
.minnctapersm 1
{""" + REGS + """
    .shared .align 16 .b32 counter[4];
    .shared .align 4 .f32 fsum;
    ld.param.u64 %rd1, [ca_out];
    cvta.to.global.u64 %rd1, %rd1;
    ld.param.u64 %rd9, [ca_old];
    cvta.to.global.u64 %rd9, %rd9;
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %cluster_ctarank;
    mov.u32 %r20, %ctaid.x;
    mov.u32 %r21, %ctaid.y;
    mov.u32 %r22, %nctaid.x;
    mad.lo.u32 %r23, %r21, %r22, %r20;
    mad.lo.u32 %r24, %r23, 64, %r1;
    add.u32 %r25, %r24, 1;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra $L_init_done;
    mov.u32 %r30, 0;
    st.shared.v4.u32 [counter], {%r30, %r30, %r30, %r30};
    mov.f32 %f1, 0f00000000;
    st.shared.f32 [fsum], %f1;
$L_init_done:
""" + SYNC + """    mov.u32 %r5, counter;
    mapa.shared::cluster.u32 %r6, %r5, 0;
    atom.shared::cluster.add.u32 %r7, [%r6], %r25;
    red.shared::cluster.add.u32 [%r6+4], 1;
    atom.relaxed.cluster.shared::cluster.max.s32 %r8, [%r6+8], %r24;
    atom.shared::cluster.cas.b32 %r9, [%r6+12], 0, %r25;
    mov.u32 %r10, fsum;
    mapa.shared::cluster.u32 %r11, %r10, 0;
    mov.f32 %f2, 0f3F800000;
    atom.shared::cluster.add.f32 %f3, [%r11], %f2;
    mul.wide.u32 %rd10, %r24, 8;
    add.s64 %rd11, %rd9, %rd10;
    st.global.v2.u32 [%rd11], {%r7, %r9};
""" + SYNC + """    or.b32 %r12, %r2, %r1;
    setp.ne.u32 %p2, %r12, 0;
    @%p2 bra $L_done;
    mov.u32 %r13, %clusterid.x;
    mov.u32 %r14, %clusterid.y;
    mov.u32 %r15, %nclusterid.x;
    mad.lo.u32 %r16, %r14, %r15, %r13;
    mul.wide.u32 %rd2, %r16, 32;
    add.s64 %rd3, %rd1, %rd2;
    ld.shared::cta.v4.u32 {%r31, %r32, %r33, %r34}, [counter];
    st.global.v4.u32 [%rd3], {%r31, %r32, %r33, %r34};
    ld.shared.f32 %f4, [fsum];
    st.global.f32 [%rd3+16], %f4;
$L_done:
    ret;
}
"""


@pytest.mark.parametrize("racecheck", [False, True])
def test_atomics_into_rank_0s_shared_memory(racecheck):
    """Every thread of a 2x2 cluster of 64-thread CTAs adds to counters in rank 0's shared
    memory (atom add, red add, atom max, atom cas, atom add.f32); after the cluster barrier
    rank 0 writes them. The old values form one chain per cluster; one cas per cluster wins.
    Under the race check, thread 0's initialising stores and the atomics after the barrier do
    not race: the completed cluster barrier phase starts a new interval. (.reqnctapercluster
    stands between .maxntid and .minnctapersm.)"""
    grid = (4, 4, 1)
    out = np.zeros((4, 8), np.uint32)
    old = np.zeros((16 * 64, 2), np.uint32)
    run(ATOMICS, "cluster_atomics", grid, 64, [out, old], racecheck=racecheck)
    gid = np.arange(16 * 64).reshape(2, 2, 2, 2, 64)   # (cluster y, y in it, cluster x, x in it, t)
    members = gid.transpose(0, 2, 1, 3, 4).reshape(4, -1)     # by cluster (y, x): its threads
    for c in range(4):
        mine = members[c]
        value = mine + 1
        assert out[c, 0] == value.sum()
        assert out[c, 1] == 4 * 64
        assert out[c, 2] == mine.max()
        assert out[c, 4].view(np.float32) == 256.0
        olds = old[mine, 0]
        assert len(set(olds.tolist())) == mine.size and olds.min() == 0
        assert set((olds + value).tolist()) - set(olds.tolist()) == {int(value.sum())}
        winners = mine[old[mine, 1] == 0]
        assert winners.size == 1 and out[c, 3] == winners[0] + 1
        assert (old[mine[mine != winners[0]], 1] == out[c, 3]).all()


# ---- split arrive and wait -------------------------------------------------------------------

SPLIT = HEADER + """
.visible .entry split(.param .u64 split_out)
.reqnctapercluster 2, 1, 1
{""" + REGS + """
    .shared .align 4 .b32 s[64];
    ld.param.u64 %rd1, [split_out];
    cvta.to.global.u64 %rd1, %rd1;
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %cluster_ctarank;
    mov.u32 %r3, %ctaid.x;
    // rank 1 works before it arrives (a loop of 100 * (t + 1) iterations): rank 0 waits
    mul.lo.u32 %r20, %r2, %r1;
    add.u32 %r20, %r20, %r2;
    mul.lo.u32 %r20, %r20, 100;
    mov.u32 %r21, 0;
    mov.u32 %r22, 0;
$L_before:
    setp.ge.u32 %p1, %r21, %r20;
    @%p1 bra $L_before_done;
    add.u32 %r22, %r22, %r21;
    add.u32 %r21, %r21, 1;
    bra.uni $L_before;
$L_before_done:
    mad.lo.u32 %r4, %r3, 1000, %r1;
    mov.u32 %r5, s;
    shl.b32 %r6, %r1, 2;
    add.u32 %r7, %r5, %r6;
    st.shared.u32 [%r7], %r4;
    barrier.cluster.arrive.release;
    // work between the arrive and the wait: sum of 0 .. t
    mov.u32 %r23, 0;
    mov.u32 %r24, 0;
$L_between:
    setp.gt.u32 %p2, %r23, %r1;
    @%p2 bra $L_between_done;
    add.u32 %r24, %r24, %r23;
    add.u32 %r23, %r23, 1;
    bra.uni $L_between;
$L_between_done:
    barrier.cluster.wait.acquire;
    xor.b32 %r8, %r2, 1;
    mapa.shared::cluster.u32 %r9, %r7, %r8;
    ld.shared::cluster.u32 %r10, [%r9];
    barrier.cluster.arrive.relaxed.aligned;
    barrier.cluster.wait.aligned;
    mad.lo.u32 %r11, %r3, 64, %r1;
    mul.lo.u32 %r11, %r11, 3;
    mul.wide.u32 %rd2, %r11, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r10;
    st.global.u32 [%rd3+4], %r24;
    st.global.u32 [%rd3+8], %r22;
    ret;
}
"""


@pytest.mark.parametrize("racecheck", [False, True])
def test_split_arrive_and_wait_with_work_between(racecheck):
    out = np.zeros((4, 64, 3), np.uint32)
    run(SPLIT, "split", 4, 64, [out], racecheck=racecheck)
    b, t = np.arange(4)[:, None], np.arange(64)[None, :]
    np.testing.assert_array_equal(out[:, :, 0], (b ^ 1) * 1000 + t)
    np.testing.assert_array_equal(out[:, :, 1], np.broadcast_to(t * (t + 1) // 2, (4, 64)))
    work = np.where(b % 2 == 1, 100 * (t + 1), 0)
    np.testing.assert_array_equal(out[:, :, 2], work * (work - 1) // 2)


# ---- the cluster barrier without clusters, exited threads, block barriers beside it -----------

def local_exchange(cluster, sync: str) -> str:
    """s[t] = 1000 b + t; {sync}; out[b, t] = s[t ^ 1] (its own CTA's, through
    ld.shared::cluster of its shared::cta address); threads 48 to 63 of rank 1 exit first."""
    return HEADER + """
.visible .entry local_exchange(.param .u64 le_out)
""" + cluster_directive(cluster) + "{" + REGS + """
    .shared .align 4 .b32 s[64];
    ld.param.u64 %rd1, [le_out];
    cvta.to.global.u64 %rd1, %rd1;
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %cluster_ctarank;
    mov.u32 %r3, %ctaid.x;
    setp.eq.u32 %p1, %r2, 1;
    setp.ge.u32 %p2, %r1, 48;
    and.pred %p3, %p1, %p2;
    @%p3 bra $L_done;
    mad.lo.u32 %r4, %r3, 1000, %r1;
    mov.u32 %r5, s;
    shl.b32 %r6, %r1, 2;
    add.u32 %r7, %r5, %r6;
    st.shared.u32 [%r7], %r4;
""" + sync + """    xor.b32 %r8, %r1, 1;
    shl.b32 %r9, %r8, 2;
    add.u32 %r10, %r5, %r9;
    ld.shared::cluster.u32 %r11, [%r10];
    mad.lo.u32 %r12, %r3, 64, %r1;
    mul.wide.u32 %rd2, %r12, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r11;
$L_done:
    ret;
}
"""


@pytest.mark.parametrize("cluster", [None, (2,)], ids=["one-cta", "two-ctas"])
@pytest.mark.parametrize("racecheck", [False, True])
def test_the_cluster_barrier_orders_a_ctas_own_threads(cluster, racecheck):
    """barrier.cluster works in a kernel without .reqnctapercluster (a cluster of one CTA: a
    block barrier), and exited threads count as arrived (threads 48 to 63 of odd blocks exit
    first). Under the race check the barrier's phase starts a new interval."""
    out = np.full((4, 64), 7, np.uint32)
    run(local_exchange(cluster, SYNC_UNALIGNED), "local_exchange", 4, 64, [out], racecheck=racecheck)
    b, t = np.arange(4)[:, None], np.arange(64)[None, :]
    expected = np.broadcast_to(b * 1000 + (t ^ 1), (4, 64)).copy()
    if cluster is not None:       # (without clusters every CTA is rank 0: none exits)
        expected[1::2, 48:] = 7
    np.testing.assert_array_equal(out, expected)


def test_without_the_cluster_barrier_the_race_check_reports_the_race():
    out = np.zeros((4, 64), np.uint32)
    with pytest.raises(SimulatorError, match=re.escape(
            "shared memory race: thread (0,0,0) reads 4 bytes at shared offset 0x4 that thread "
            "(1,0,0) wrote since the last barrier; block (0,0,0)")):
        run(local_exchange((2,), ""), "local_exchange", 4, 64, [out], racecheck=True)


BLOCK_AND_CLUSTER = HEADER + """
.visible .entry block_and_cluster(.param .u64 bc_out)
.reqnctapercluster 2, 1, 1
{""" + REGS + """
    .shared .align 4 .b32 s[64];
    .shared .align 4 .b32 total;
    ld.param.u64 %rd1, [bc_out];
    cvta.to.global.u64 %rd1, %rd1;
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %cluster_ctarank;
    mov.u32 %r3, %ctaid.x;
    setp.lt.u32 %p1, %r1, 10;
    bar.red.popc.u32 %r4, 0, %p1;
    setp.ne.u32 %p2, %r1, 0;
    @%p2 bra $L_skip;
    st.shared.u32 [total], %r4;
$L_skip:
    bar.sync 0;
""" + SYNC + """    xor.b32 %r8, %r2, 1;
    mov.u32 %r5, total;
    mapa.shared::cluster.u32 %r9, %r5, %r8;
    ld.shared::cluster.u32 %r10, [%r9];
    add.u32 %r10, %r10, %r4;
""" + SYNC + """    mad.lo.u32 %r12, %r3, 64, %r1;
    mul.wide.u32 %rd2, %r12, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r10;
    ret;
}
"""


@pytest.mark.parametrize("racecheck", [False, True])
def test_block_barriers_and_bar_red_beside_the_cluster_barrier(racecheck):
    out = np.zeros((4, 64), np.uint32)
    run(BLOCK_AND_CLUSTER, "block_and_cluster", 4, 64, [out], racecheck=racecheck)
    np.testing.assert_array_equal(out, np.full((4, 64), 20))


# rank 0: lane 1 waits at the cluster barrier before a shfl.sync, at which the other lanes wait
# for it; rank 1 passes a block barrier before it arrives. Nothing can run until that block
# barrier is released: then rank 1 arrives, lane 1's wait completes and the shuffle happens.
WARP_AFTER_CLUSTER_WAIT = HEADER + """
.visible .entry warp_wait(.param .u64 ww_out)
.reqnctapercluster 2, 1, 1
{""" + REGS + """
    ld.param.u64 %rd1, [ww_out];
    cvta.to.global.u64 %rd1, %rd1;
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %cluster_ctarank;
    setp.ne.u32 %p1, %r2, 0;
    @%p1 bra $L_rank1;
    add.u32 %r3, %r1, 100;
    barrier.cluster.arrive;
    setp.eq.u32 %p2, %r1, 1;
    @%p2 bra $L_wait_first;
$L_shfl:
    shfl.sync.idx.b32 %r4, %r3, 1, 31, -1;
    @%p2 bra $L_store;
    barrier.cluster.wait;
$L_store:
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r4;
    ret;
$L_wait_first:
    barrier.cluster.wait;
    bra.uni $L_shfl;
$L_rank1:
    barrier.sync 0;
    barrier.cluster.arrive;
    barrier.cluster.wait;
    ret;
}
"""


def test_a_block_barrier_is_released_for_lanes_that_wait_at_a_warp_instruction():
    out = np.zeros(32, np.uint32)
    run(WARP_AFTER_CLUSTER_WAIT, "warp_wait", 2, 32, [out])
    np.testing.assert_array_equal(out, np.full(32, 101))


# Clusters of (1,2,1) in grid (2,2): the batch holds blocks (0,0), (0,1), (1,0), (1,1) in that
# order. Each block copies its 64 words of x into shared memory with cp.async, adds them all to
# a global counter and to rank 0's shared `total`, and after a cluster barrier writes its
# neighbour's word and rank 0's total.
REORDERED = HEADER + """
.visible .entry reordered(.param .u64 ro_x, .param .u64 ro_out, .param .u64 ro_count)
.reqnctapercluster 1, 2, 1
{""" + REGS + """
    .shared .align 16 .b32 s[64];
    .shared .align 4 .b32 total;
    ld.param.u64 %rd1, [ro_x];
    cvta.to.global.u64 %rd1, %rd1;
    ld.param.u64 %rd2, [ro_out];
    cvta.to.global.u64 %rd2, %rd2;
    ld.param.u64 %rd3, [ro_count];
    cvta.to.global.u64 %rd3, %rd3;
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %cluster_ctarank;
    mov.u32 %r20, %ctaid.x;
    mov.u32 %r21, %ctaid.y;
    mov.u32 %r22, %nctaid.x;
    mad.lo.u32 %r23, %r21, %r22, %r20;
    mad.lo.u32 %r24, %r23, 64, %r1;
    mul.wide.u32 %rd4, %r24, 4;
    add.s64 %rd5, %rd1, %rd4;
    mov.u32 %r5, s;
    shl.b32 %r6, %r1, 2;
    add.u32 %r7, %r5, %r6;
    cp.async.ca.shared.global [%r7], [%rd5], 4;
    cp.async.commit_group;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra $L_zeroed;
    mov.u32 %r30, 0;
    st.shared.u32 [total], %r30;
$L_zeroed:
    cp.async.wait_all;
    bar.sync 0;
""" + SYNC + """    add.u32 %r8, %r1, 1;
    and.b32 %r8, %r8, 63;
    shl.b32 %r9, %r8, 2;
    add.u32 %r10, %r5, %r9;
    ld.shared.u32 %r11, [%r10];
    ld.shared.u32 %r12, [%r7];
    red.global.add.u32 [%rd3], %r12;
    mov.u32 %r13, total;
    mapa.shared::cluster.u32 %r14, %r13, 0;
    red.shared::cluster.add.u32 [%r14], %r12;
""" + SYNC + """    ld.shared::cluster.u32 %r15, [%r14];
""" + SYNC + """    mul.wide.u32 %rd6, %r24, 8;
    add.s64 %rd7, %rd2, %rd6;
    st.global.v2.u32 [%rd7], {%r11, %r15};
    ret;
}
"""


@pytest.mark.parametrize("racecheck", [False, True])
def test_async_copies_and_atomics_in_reordered_blocks(racecheck):
    x = np.arange(4 * 64, dtype=np.uint32) * 3 + 1
    out = np.zeros((4, 64, 2), np.uint32)
    count = np.zeros(1, np.uint32)
    run(REORDERED, "reordered", (2, 2), 64, [x, out, count], racecheck=racecheck)
    rows = x.reshape(4, 64)
    np.testing.assert_array_equal(out[:, :, 0], np.roll(rows, -1, axis=1))
    cluster_of = np.array([0, 1, 0, 1])      # block b = (b % 2, b // 2) is in cluster (b % 2, 0)
    sums = np.array([rows[[0, 2]].sum(), rows[[1, 3]].sum()])
    np.testing.assert_array_equal(out[:, :, 1], np.repeat(sums[cluster_of], 64).reshape(4, 64))
    assert count[0] == x.sum()


# ---- errors ------------------------------------------------------------------------------------

def test_a_grid_that_is_not_whole_clusters_is_an_error():
    out = np.zeros((3, 64, 8), np.uint32)
    with pytest.raises(SimulatorError, match=re.escape(
            "grid (3,1,1) is not a whole number of clusters of (2,1,1)")):
        run_kernel(exchange_kernel((2,), MAPA_U32), "exchange", 3, 64, [out])
    with pytest.raises(SimulatorError, match=re.escape(
            "grid (4,3,1) is not a whole number of clusters of (2,2,1)")):
        run_kernel(exchange_kernel((2, 2, 1), MAPA_U32), "exchange", (4, 3), 64, [out])


def one_kernel(body: str, cluster=(2,), shared: str = "    .shared .align 16 .b32 s[64];\n") -> str:
    return HEADER + """
.visible .entry k(.param .u64 k_out)
""" + cluster_directive(cluster) + "{" + REGS + shared + """
    ld.param.u64 %rd1, [k_out];
    cvta.to.global.u64 %rd1, %rd1;
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %cluster_ctarank;
    mov.u32 %r3, %cluster_nctarank;
    mov.u32 %r5, s;
""" + body + """    ret;
}
"""


def line_of(ptx: str, text: str) -> int:
    return next(i for i, line in enumerate(ptx.splitlines(), 1) if text in line)


WAIT_WITHOUT_ARRIVE = one_kernel("""    barrier.cluster.arrive;
    barrier.cluster.wait;
    barrier.cluster.wait;
""")
ARRIVE_TWICE = one_kernel("""    barrier.cluster.arrive;
    barrier.cluster.arrive;
    barrier.cluster.wait;
""")
# rank 0 waits at the cluster barrier; in rank 1, threads 0-31 wait at a block barrier that
# threads 32-63 reach only after the cluster barrier, which waits for threads 0-31
DEADLOCK = one_kernel("""    setp.ne.u32 %p1, %r2, 0;
    @%p1 bra $L_rank1;
    barrier.cluster.arrive;
    barrier.cluster.wait;
    ret;
$L_rank1:
    setp.lt.u32 %p2, %r1, 32;
    @%p2 bra $L_low;
    barrier.cluster.arrive;
    barrier.cluster.wait;
    barrier.sync 0;
    ret;
$L_low:
    barrier.sync 0;
    barrier.cluster.arrive;
    barrier.cluster.wait;
""")
# rank 0 waits at the cluster barrier; in rank 1, threads 0-31 exit and 32-63 wait at a block
# barrier: that one can never complete
STUCK_BLOCK = one_kernel("""    setp.ne.u32 %p1, %r2, 0;
    @%p1 bra $L_rank1;
    barrier.cluster.arrive;
    barrier.cluster.wait;
    ret;
$L_rank1:
    setp.lt.u32 %p2, %r1, 32;
    @%p2 bra $L_out;
    barrier.sync 0;
$L_out:
""")
# rank 1 exits at once; rank 0 passes a block barrier (by then rank 1 has exited), then reads
EXITED = one_kernel("""    setp.ne.u32 %p1, %r2, 0;
    @%p1 bra $L_out;
    barrier.sync 0;
    mapa.shared::cluster.u32 %r6, %r5, 1;
    ld.shared::cluster.u32 %r7, [%r6];
$L_out:
""")
# the same in the second cluster only
EXITED_LATER = EXITED.replace("    setp.ne.u32 %p1, %r2, 0;\n", """    mov.u32 %r20, %clusterid.x;
    setp.eq.u32 %p5, %r20, 0;
    @%p5 bra $L_out;
    setp.ne.u32 %p1, %r2, 0;
""")
EXITED_STORE = EXITED.replace("ld.shared::cluster.u32 %r7, [%r6];",
                              "st.shared::cluster.u32 [%r6], %r1;")
RANK_OUT_OF_RANGE = one_kernel("""    mapa.shared::cluster.u32 %r6, %r5, %r3;
""")
ADDRESS_OUT_OF_RANGE = one_kernel("""    add.u32 %r7, %r5, 256;
    mapa.shared::cluster.u32 %r6, %r7, 0;
""")
OUT_OF_BOUNDS = one_kernel("""    mapa.shared::cluster.u32 %r6, %r5, 1;
    ld.shared::cluster.u32 %r7, [%r6+256];
""")
MISALIGNED = one_kernel("""    mapa.shared::cluster.u32 %r6, %r5, 1;
    atom.shared::cluster.add.u32 %r7, [%r6+2], 1;
""")
BAD_RANK_ADDRESS = one_kernel("""    mov.u32 %r6, 0x42000000;
    ld.shared::cluster.u32 %r7, [%r6];
""")


@pytest.mark.parametrize("ptx, grid, message", [
    (WAIT_WITHOUT_ARRIVE, 2,
     f"PTX line {line_of(WAIT_WITHOUT_ARRIVE, 'wait;') + 1}: `barrier.cluster.wait;`: this thread "
     "waits at the cluster barrier without having arrived there (barrier.cluster.arrive) since "
     "its last wait; thread (0,0,0) block (0,0,0)"),
    (ARRIVE_TWICE, 2,
     f"PTX line {line_of(ARRIVE_TWICE, 'arrive;') + 1}: `barrier.cluster.arrive;`: this thread "
     "arrives at the cluster barrier again without having waited (barrier.cluster.wait) for its "
     "previous arrival; every arrive must be followed by a wait before the next; thread (0,0,0) "
     "block (0,0,0)"),
    (DEADLOCK, 2,
     f"PTX line {line_of(DEADLOCK, 'wait;')}: cluster barrier can never complete: 32 of 128 "
     "threads of the cluster have not arrived (they wait at a block barrier that the threads of "
     "their block waiting at the cluster barrier never reach: thread (0,0,0) block (1,0,0) at "
     f"PTX line {line_of(DEADLOCK, '$L_low:') + 1}); thread (0,0,0) block (0,0,0)"),
    (STUCK_BLOCK, 2,
     f"PTX line {line_of(STUCK_BLOCK, 'barrier.sync')}: barrier can never complete: 32 of 64 "
     "threads wait and 32 have exited; thread (32,0,0) block (1,0,0)"),
    (EXITED, 2,
     f"PTX line {line_of(EXITED, 'ld.shared::cluster')}: `ld.shared::cluster.u32 %r7, [%r6];` "
     "reads shared::cluster memory at 0x41000000, but block (1,0,0) of the cluster has exited, "
     "so its shared memory is gone; keep it alive with a cluster barrier (ptxpy.cluster_sync()) "
     "before it exits; thread (0,0,0) block (0,0,0)"),
    (EXITED_STORE, 2,
     f"PTX line {line_of(EXITED_STORE, 'st.shared::cluster')}: `st.shared::cluster.u32 [%r6], "
     "%r1;` writes shared::cluster memory at 0x41000000, but block (1,0,0) of the cluster has "
     "exited, so its shared memory is gone; keep it alive with a cluster barrier "
     "(ptxpy.cluster_sync()) before it exits; thread (0,0,0) block (0,0,0)"),
    (RANK_OUT_OF_RANGE, 2,
     f"PTX line {line_of(RANK_OUT_OF_RANGE, 'mapa')}: `mapa.shared::cluster.u32 %r6, %r5, %r3;`: "
     "rank 2 is no CTA of the cluster (its %cluster_nctarank is 2: ranks 0 to 1); thread (0,0,0) "
     "block (0,0,0)"),
    (ADDRESS_OUT_OF_RANGE, 2,
     f"PTX line {line_of(ADDRESS_OUT_OF_RANGE, 'mapa')}: `mapa.shared::cluster.u32 %r6, %r7, 0;`: "
     "address 0x100 is not in the CTA's shared memory (256 bytes); thread (0,0,0) block (0,0,0)"),
    (OUT_OF_BOUNDS, 2,
     f"PTX line {line_of(OUT_OF_BOUNDS, 'ld.shared')}: out-of-bounds shared::cluster load of 4 "
     "bytes at 0x41000100; thread (0,0,0) block (0,0,0)"),
    (MISALIGNED, 2,
     f"PTX line {line_of(MISALIGNED, 'atom')}: misaligned shared::cluster atomic of 4 bytes at "
     "0x41000002; thread (0,0,0) block (0,0,0)"),
    (BAD_RANK_ADDRESS, 2,
     f"PTX line {line_of(BAD_RANK_ADDRESS, 'ld.shared')}: out-of-bounds shared::cluster load of "
     "4 bytes at 0x42000000; thread (0,0,0) block (0,0,0)"),
], ids=["wait-without-arrive", "arrive-twice", "deadlock", "stuck-block-barrier", "exited-load",
        "exited-store", "mapa-rank", "mapa-address", "out-of-bounds", "misaligned", "bad-rank"])
def test_misuse_is_an_error(ptx, grid, message):
    out = np.zeros(64, np.uint32)
    with pytest.raises(SimulatorError) as err:
        run(ptx, "k", grid, 64, [out])
    assert str(err.value) == message


@pytest.mark.parametrize("racecheck", [False, True])
def test_the_exited_check_in_a_later_batch(monkeypatch, racecheck):
    """The exited CTA's block is named in the launch's terms in any batch."""
    monkeypatch.setattr(simulator, "BATCH_THREADS", 64)
    with pytest.raises(SimulatorError, match=re.escape(
            "but block (3,0,0) of the cluster has exited, so its shared memory is gone; keep it "
            "alive with a cluster barrier (ptxpy.cluster_sync()) before it exits; thread (0,0,0) "
            "block (2,0,0)")):
        run(EXITED_LATER, "k", 4, 64, [np.zeros(64, np.uint32)], racecheck=racecheck)


# a spin in block (0,0,0) on a flag that block (3,1,0), of the other cluster, sets
SPIN = HEADER + """
.visible .entry spin(.param .u64 spin_flag)
.reqnctapercluster 2, 2, 1
{""" + REGS + """
    ld.param.u64 %rd1, [spin_flag];
    cvta.to.global.u64 %rd1, %rd1;
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ctaid.y;
    or.b32 %r4, %r1, %r2;
    or.b32 %r4, %r4, %r3;
    setp.ne.u32 %p1, %r4, 0;
    @%p1 bra $L_set;
$L_spin:
    ld.volatile.global.u32 %r5, [%rd1];
    setp.eq.u32 %p2, %r5, 0;
    @%p2 bra $L_spin;
$L_set:
    setp.ne.u32 %p3, %r1, 0;
    setp.ne.u32 %p4, %r2, 3;
    or.pred %p3, %p3, %p4;
    setp.ne.or.u32 %p3, %r3, 1, %p3;
    @%p3 bra $L_done;
    st.volatile.global.u32 [%rd1], 1;
$L_done:
    ret;
}
"""


def test_a_spin_on_a_cluster_of_a_later_batch_names_the_next_block(monkeypatch):
    """Clusters of 4 CTAs of grid (4,2): the first batch is blocks (0,0), (1,0), (0,1), (1,1);
    the next starts at (2,0,0). In one batch the spin finishes."""
    flag = np.zeros(1, np.uint32)
    run(SPIN, "spin", (4, 2), 32, [flag])
    assert flag[0] == 1
    monkeypatch.setattr(simulator, "BATCH_THREADS", 32 * 4)
    flag[0] = 0
    with pytest.raises(SimulatorError) as err:
        run(SPIN, "spin", (4, 2), 32, [flag])
    assert str(err.value) == (
        f"PTX line {line_of(SPIN, 'ld.volatile')}: the kernel can never finish: 1 thread loops "
        "without changing any register or memory, so what it waits for never happens (of the "
        "others, 127 have exited); blocks from (2,0,0) on run only after these 4 blocks "
        "finish; thread (0,0,0) block (0,0,0)")


def test_cluster_dimensions_given_at_launch_are_not_supported():
    ptx = exchange_kernel(None, MAPA_U32).replace("{\n", ".explicitcluster\n{\n", 1)
    with pytest.raises(SimulatorError, match=re.escape(
            "kernel exchange asks for cluster dimensions given at launch (.explicitcluster or "
            ".maxclusterrank without .reqnctapercluster), which the simulator does not support")):
        run_kernel(ptx, "exchange", 2, 64, [np.zeros((2, 64, 8), np.uint32)])


@pytest.mark.parametrize("line, message", [
    ("getctarank.shared::cluster.u32 %r6, %r5;", "opcode 'getctarank' is not implemented"),
    ("mapa.u64 %rd2, %rd1, 1;", "only mapa.shared::cluster is supported"),
    ("cvta.shared::cluster.u64 %rd2, %rd1;", "generic addresses of shared::cluster memory"),
    ("barrier.cluster.sync;", "only barrier.cluster.arrive and barrier.cluster.wait"),
    ("barrier.cluster.wait.release;", "unsupported modifier .release"),
    ("ld.shared::cluster.u32 %r6, [%rd1];", None),      # accepted (a 64-bit address)
    ("ld.shared::cluster.u16 %r6, [%f1];", "address register"),
    ("mbarrier.arrive.shared::cluster.b64 _, [%r5];", None),       # accepted (a remote arrive)
    ("mbarrier.arrive.shared::cluster.b64 %rd2, [%r5];", "must be the sink `_`"),
])
def test_unsupported_cluster_instructions_are_refused_at_load(line, message):
    ptx = one_kernel(f"    {line}\n")
    if message is None:
        Module(ptx)
        return
    with pytest.raises(SimulatorError, match=re.escape(message)) as err:
        Module(ptx)
    assert line.split(" ")[0] in str(err.value)


def test_barrier_cluster_needs_sm_90():
    ptx = one_kernel(SYNC, cluster=None).replace(".target sm_90", ".target sm_80")
    with pytest.raises(SimulatorError, match=re.escape("needs .target sm_90 or later")):
        Module(ptx)


def test_more_than_16_ctas_a_cluster_is_refused():
    with pytest.raises(SimulatorError, match=re.escape(
            "a cluster of (4,4,2) has 32 CTAs; at most 16")):
        Module(one_kernel("", cluster=(4, 4, 2)))


# ---- multicast copies, remote mbarrier operations ----------------------------------------------
#
# A TMA-multicast pipeline: each CTA of a cluster of 2 loads half of its cluster's tile into the
# shared memory of both (.multicast::cluster, ctaMask 0b11), each CTA's barrier expecting the
# whole tile; or each loads the whole tile into its peer only (the issuing CTA not among the
# destinations, ctaMask computed at run time). Then each CTA writes its tile out.

HEADER_A = HEADER.replace("sm_90", "sm_90a")   # (multicast: ptxas advises sm_90a)
TENSOR_MC = ("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
             ".multicast::cluster")
BULK_MC = "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
MC_ROWS, MC_COLS = 16, 32       # a cluster's tile of x (float32): 2048 bytes, two halves of 8 rows


def mc_issue(kind: str, mode: str) -> str:
    """Thread 0's copies (%r2 rank, %r4 tile, %r3 bar, %r5 %clusterid.x, %rd1 x, %rd4 the map)."""
    if mode == "peer":      # both halves into the peer only: ctaMask 1 << (rank ^ 1)
        mask = ("    xor.b32 %r16, %r2, 1;\n    mov.u32 %r18, 1;\n    shl.b32 %r17, %r18, %r16;\n"
                "    cvt.u16.u32 %rs1, %r17;\n")
        halves, operand = [(0, "%r4"), (1, "%r4+1024")], "%rs1"
    else:                   # own half into both: ctaMask 0b11 (a register or a constant)
        mask = "    mov.b16 %rs1, 3;\n" if mode == "halves-register" else ""
        halves, operand = [(None, "%r11")], "%rs1" if mode == "halves-register" else "3"
    text = mask + "    shl.b32 %r10, %r2, 10;\n    add.u32 %r11, %r4, %r10;\n"
    for half, dst in halves:
        if kind == "tensor":    # row: 16 * cluster + 8 * (rank or the half)
            text += ("    shl.b32 %r12, %r5, 4;\n"
                     + ("    shl.b32 %r13, %r2, 3;\n" if half is None else
                        f"    mov.u32 %r13, {8 * half};\n")
                     + "    add.u32 %r14, %r12, %r13;\n    mov.u32 %r15, 0;\n"
                     f"    {TENSOR_MC} [{dst}], [%rd4, {{%r15, %r14}}], [%r3], {operand};\n")
        else:                   # x + 2048 * cluster + 1024 * (rank or the half)
            text += ("    mul.wide.u32 %rd8, %r5, 2048;\n    add.s64 %rd9, %rd1, %rd8;\n"
                     + ("    cvt.u64.u32 %rd10, %r10;\n" if half is None else
                        f"    mov.u64 %rd10, {1024 * half};\n")
                     + "    add.s64 %rd9, %rd9, %rd10;\n"
                     f"    {BULK_MC} [{dst}], [%rd9], 1024, [%r3], {operand};\n")
    return text


def multicast_kernel(kind: str, mode: str) -> str:
    """`mc(tmap, x, out)`, 128 threads a CTA: thread 0 inits the barrier (count 1), a cluster
    barrier, thread 0 arrives with expect_tx of the whole tile and issues its copies; every
    thread waits for the phase and stores 16 bytes of the tile at out[%ctaid.x]; a cluster
    barrier before the exit."""
    return HEADER_A + """
.visible .entry mc(.param .align 64 .b8 mc_tmap[128], .param .u64 mc_x, .param .u64 mc_out)
.reqnctapercluster 2
{""" + REGS + """    .reg .b16 %rs<4>;
    .shared .align 1024 .b8 tile[2048];
    .shared .align 8 .b64 bar;
    ld.param.u64 %rd1, [mc_x];
    cvta.to.global.u64 %rd1, %rd1;
    ld.param.u64 %rd2, [mc_out];
    cvta.to.global.u64 %rd2, %rd2;
    mov.b64 %rd3, mc_tmap;
    cvta.param.u64 %rd4, %rd3;
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %cluster_ctarank;
    mov.u32 %r3, bar;
    mov.u32 %r4, tile;
    mov.u32 %r5, %clusterid.x;
    mov.u32 %r6, %ctaid.x;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra $L_initialised;
    mbarrier.init.shared::cta.b64 [%r3], 1;
    fence.mbarrier_init.release.cluster;
$L_initialised:
""" + SYNC_UNALIGNED + """    @%p1 bra $L_wait;
    mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [%r3], 2048;
""" + mc_issue(kind, mode) + """$L_wait:
    mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 %p2, [%r3], 0;
    @!%p2 bra $L_wait;
    shl.b32 %r7, %r1, 4;
    add.u32 %r8, %r4, %r7;
    ld.shared.v4.f32 {%f0, %f1, %f2, %f3}, [%r8];
    mul.wide.u32 %rd5, %r6, 2048;
    add.s64 %rd6, %rd2, %rd5;
    cvt.u64.u32 %rd7, %r7;
    add.s64 %rd6, %rd6, %rd7;
    st.global.v4.f32 [%rd6], {%f0, %f1, %f2, %f3};
""" + SYNC_UNALIGNED + """    ret;
}
"""


MC_MODES = ["halves-register", "halves-constant", "peer"]


@pytest.mark.parametrize("racecheck", [False, True])
@pytest.mark.parametrize("mode", MC_MODES)
@pytest.mark.parametrize("kind, swizzle", [("tensor", 0), ("tensor", 128), ("bulk", 0)])
def test_multicast_copies_fill_every_cta_of_the_cluster(monkeypatch, kind, swizzle, mode,
                                                         racecheck):
    """Two clusters of 2: each CTA's tile is its cluster's rows of x (with the map's swizzle,
    the same layout in every CTA), whichever CTA copied which half; in one batch and in a
    batch per cluster."""
    from test_tma_sim import swizzled
    nclusters = 2
    x = np.arange(nclusters * MC_ROWS * MC_COLS, dtype=np.float32).reshape(-1, MC_COLS) * 0.5
    tmap = simulator.TensorMap(x, (8, MC_COLS), swizzle)
    tiles = x.reshape(nclusters, -1)
    if swizzle:
        tiles = np.stack([swizzled(t.view(np.uint8), 0, swizzle).view(np.float32) for t in tiles])
    want = np.repeat(tiles, 2, axis=0)
    for batch_threads in (None, 256):
        if batch_threads:
            monkeypatch.setattr(simulator, "BATCH_THREADS", batch_threads)
        out = np.zeros((2 * nclusters, MC_ROWS * MC_COLS), np.float32)
        run(multicast_kernel(kind, mode), "mc", 2 * nclusters, 128, [tmap, x, out],
            racecheck=racecheck)
        np.testing.assert_array_equal(out, want)


def handshake_kernel(variant: str) -> str:
    """`hs(out)`, 64 threads a CTA, a cluster of 2. Rank 1 stores 1000 + t into rank 0's
    data[t], then (a bar.sync after its stores) thread 0 arrives on rank 0's barrier through
    shared::cluster; rank 0's barrier also takes its own thread 0's arrival, and rank 0's
    threads wait for the phase, read data[t] (to out[t]), store 2000 + t into rank 1's data[t]
    and signal rank 1's barrier the same way, on which rank 1 waits before reading data[t]
    (to out[64 + t]). variant: "plain"; "count" (rank 0's barrier expects 3 and rank 1 arrives
    with count 2); "through-cluster" (rank 0's own arrival through .shared::cluster with its
    shared::cta address, the remote ones through 64-bit mapa addresses)."""
    count0 = 3 if variant == "count" else 2
    if variant == "through-cluster":
        own = "    mbarrier.arrive.shared::cluster.b64 _, [%r3];\n"
        remote = ("    mapa.shared::cluster.u64 %rd3, bar, %r9;\n"
                  "    mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%rd3]{};\n")
    else:
        own = "    mbarrier.arrive.release.cta.shared::cta.b64 %rd2, [%r3];\n"
        remote = "    mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%r10]{};\n"
    return HEADER + """
.visible .entry hs(.param .u64 hs_out)
.reqnctapercluster 2
{""" + REGS + """    .shared .align 16 .b32 data[64];
    .shared .align 8 .b64 bar;
    ld.param.u64 %rd1, [hs_out];
    cvta.to.global.u64 %rd1, %rd1;
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %cluster_ctarank;
    mov.u32 %r3, bar;
    mov.u32 %r4, data;
    shl.b32 %r5, %r1, 2;
    add.u32 %r6, %r4, %r5;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra $L_initialised;
    setp.eq.u32 %p2, %r2, 0;
    selp.u32 %r7, """ + str(count0) + """, 1, %p2;
    mbarrier.init.shared.b64 [%r3], %r7;
    fence.mbarrier_init.release.cluster;
$L_initialised:
""" + SYNC_UNALIGNED + """    xor.b32 %r9, %r2, 1;
    mapa.shared::cluster.u32 %r8, %r6, %r9;
    mapa.shared::cluster.u32 %r10, %r3, %r9;
    mul.wide.u32 %rd4, %r1, 4;
    setp.ne.u32 %p3, %r2, 0;
    @%p3 bra $L_rank1;
    @%p1 bra $L_wait0;
""" + own + """$L_wait0:
    mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 %p4, [%r3], 0;
    @!%p4 bra $L_wait0;
    ld.shared.u32 %r11, [%r6];
    add.s64 %rd5, %rd1, %rd4;
    st.global.u32 [%rd5], %r11;
    add.u32 %r12, %r1, 2000;
    st.shared::cluster.u32 [%r8], %r12;
    bar.sync 0;
    @%p1 bra $L_done;
""" + remote.format("") + """    bra.uni $L_done;
$L_rank1:
    add.u32 %r12, %r1, 1000;
    st.shared::cluster.u32 [%r8], %r12;
    bar.sync 0;
    @%p1 bra $L_wait1;
""" + remote.format(", 2" if variant == "count" else "") + """$L_wait1:
    mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 %p4, [%r3], 0;
    @!%p4 bra $L_wait1;
    ld.shared.u32 %r11, [%r6];
    add.s64 %rd5, %rd1, %rd4;
    st.global.u32 [%rd5+256], %r11;
$L_done:
    ret;
}
"""


HANDSHAKES = ["plain", "count", "through-cluster"]


@pytest.mark.parametrize("racecheck", [False, True])
@pytest.mark.parametrize("variant", HANDSHAKES)
def test_remote_arrives_hand_data_across_the_cluster(variant, racecheck):
    out = np.zeros(128, np.uint32)
    run(handshake_kernel(variant), "hs", 2, 64, [out], racecheck=racecheck)
    np.testing.assert_array_equal(out, np.r_[1000:1064, 2000:2064])


# rank 1's thread 0 works rank 0's barrier (count 2) through shared::cluster between cluster
# barriers: arrive.expect_tx 32 and expect_tx 16; rank 0 arrives (out[0]: the phase is not
# complete, 48 bytes missing); rank 1 completes 48 bytes (out[1]: complete)
TX = one_kernel("""    mov.u32 %r3, bar;
    mov.u32 %r10, 0;
    mapa.shared::cluster.u32 %r6, %r3, %r10;
    setp.ne.u32 %p1, %r1, 0;
    setp.ne.u32 %p2, %r2, 0;
    or.pred %p3, %p1, %p2;
    not.pred %p5, %p1;
    and.pred %p4, %p5, %p2;
    @%p3 bra $L_a;
    mbarrier.init.shared.b64 [%r3], 2;
    fence.mbarrier_init.release.cluster;
$L_a:
""" + SYNC_UNALIGNED + """    @!%p4 bra $L_b;
    mbarrier.arrive.expect_tx.release.cluster.shared::cluster.b64 _, [%r6], 32;
    mbarrier.expect_tx.relaxed.cluster.shared::cluster.b64 [%r6], 16;
$L_b:
""" + SYNC_UNALIGNED + """    @%p3 bra $L_c;
    mbarrier.arrive.shared.b64 %rd2, [%r3];
    mbarrier.test_wait.parity.shared.b64 %p6, [%r3], 0;
    selp.u32 %r7, 1, 0, %p6;
    st.global.u32 [%rd1], %r7;
$L_c:
""" + SYNC_UNALIGNED + """    @!%p4 bra $L_d;
    mbarrier.complete_tx.shared::cluster.b64 [%r6], 48;
$L_d:
""" + SYNC_UNALIGNED + """    @%p3 bra $L_e;
    mbarrier.test_wait.parity.acquire.cta.shared::cta.b64 %p6, [%r3], 0;
    selp.u32 %r7, 1, 0, %p6;
    st.global.u32 [%rd1+4], %r7;
$L_e:
""", shared="    .shared .align 16 .b32 s[64];\n    .shared .align 8 .b64 bar;\n")


@pytest.mark.parametrize("racecheck", [False, True])
def test_expect_tx_and_complete_tx_on_a_peers_barrier(racecheck):
    out = np.full(64, 7, np.uint32)
    run(TX, "k", 2, 64, [out], racecheck=racecheck)
    assert out[:2].tolist() == [0, 1]


# errors: each kernel's thread (0,0,0) block (0,0,0) (rank 0) fails first
MC_SHARED = ("    .reg .b16 %rs<4>;\n    .shared .align 128 .b32 s[64];\n"
             "    .shared .align 8 .b64 bar;\n")


def mc_kernel(body: str) -> str:
    """one_kernel (sm_90a: ptxas advises it for multicast) with `bar` (shared offset 0x100) in
    %r6 and .b16 registers %rs."""
    return one_kernel("    mov.u32 %r6, bar;\n" + body, shared=MC_SHARED).replace(
        ".target sm_90\n", ".target sm_90a\n")


ONE = "    setp.ne.u32 %p2, %r1, 0;\n    @%p2 bra $L_out;\n"      # thread 0 of each CTA only


MASK_RANK = mc_kernel(ONE + f"""    mov.b16 %rs1, 5;
    {BULK_MC} [%r5], [%rd1], 16, [%r6], %rs1;
$L_out:
""")
MASK_RANK_CONSTANT = mc_kernel(ONE + f"""    {BULK_MC} [%r5], [%rd1], 16, [%r6], 4;
$L_out:
""")
MASK_ZERO = mc_kernel(ONE + f"""    mov.b16 %rs1, 0;
    {BULK_MC} [%r5], [%rd1], 16, [%r6], %rs1;
$L_out:
""")
# rank 1 exits at once; rank 0 passes a block barrier (by then rank 1 has exited), then
# multicasts into both / arrives on rank 1's barrier
MC_EXITED = mc_kernel(f"""    setp.ne.u32 %p1, %r2, 0;
    @%p1 bra $L_out;
    barrier.sync 0;
""" + ONE + f"""    mbarrier.init.shared.b64 [%r6], 1;
    {BULK_MC} [%r5+16], [%rd1], 16, [%r6], 3;
$L_out:
""")
ARRIVE_EXITED = mc_kernel("""    setp.ne.u32 %p1, %r2, 0;
    @%p1 bra $L_out;
    barrier.sync 0;
    mapa.shared::cluster.u32 %r7, %r6, 1;
    mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%r7];
$L_out:
""")
# rank 1 never initialises its barrier
REMOTE_UNINITIALISED = mc_kernel("""    setp.ne.u32 %p1, %r2, 0;
    @%p1 bra $L_out;
    mapa.shared::cluster.u32 %r7, %r6, 1;
    mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%r7];
$L_out:
""" + SYNC_UNALIGNED)
MC_UNINITIALISED = mc_kernel(ONE + f"""    setp.ne.u32 %p1, %r2, 0;
    @%p1 bra $L_out;
    mbarrier.init.shared.b64 [%r6], 1;
    {BULK_MC} [%r5], [%rd1], 16, [%r6], 3;
$L_out:
""" + SYNC_UNALIGNED)
COUNT_TOO_MANY = mc_kernel("""    mbarrier.init.shared.b64 [%r6], 2;
    mbarrier.arrive.shared.b64 %rd2, [%r6], 3;
""")


def mc_line(ptx: str) -> int:
    return line_of(ptx, "multicast::cluster") if "multicast" in ptx else line_of(ptx, "arrive")


MC_ERRORS = [
    (MASK_RANK, "`: ctaMask 0x5 names rank 2, but the cluster has 2 CTAs (ranks 0 to 1); thread "
                "(0,0,0) block (0,0,0)"),
    (MASK_RANK_CONSTANT, "`: ctaMask 0x4 names rank 2, but the cluster has 2 CTAs (ranks 0 to "
                         "1); thread (0,0,0) block (0,0,0)"),
    (MASK_ZERO, "`: ctaMask 0x0 names no CTA; thread (0,0,0) block (0,0,0)"),
    (MC_EXITED, "` writes shared::cluster memory at 0x41000010, but block (1,0,0) of the cluster "
                "has exited, so its shared memory is gone; keep it alive with a cluster barrier "
                "(ptxpy.cluster_sync()) before it exits; thread (0,0,0) block (0,0,0)"),
    (ARRIVE_EXITED, "` signals an mbarrier in shared::cluster memory at 0x41000100, but block "
                    "(1,0,0) of the cluster has exited, so its shared memory is gone; keep it "
                    "alive with a cluster barrier (ptxpy.cluster_sync()) before it exits; thread "
                    "(0,0,0) block (0,0,0)"),
    (REMOTE_UNINITIALISED, "`: no mbarrier was initialised at shared offset 0x100 of block "
                           "(1,0,0): call ptxpy.mbarrier_init (mbarrier.init) on it first; "
                           "thread (0,0,0) block (0,0,0)"),
    (MC_UNINITIALISED, "`: no mbarrier was initialised at shared offset 0x100 of block (1,0,0): "
                       "call ptxpy.mbarrier_init (mbarrier.init) on it first; thread (0,0,0) "
                       "block (0,0,0)"),
    (COUNT_TOO_MANY, "`: arrives 3 times on the mbarrier at shared offset 0x100, whose phase 0 "
                     "has only 2 of its 2 arrivals pending: an arrive's count must not exceed "
                     "them; thread (0,0,0) block (0,0,0)"),
]


@pytest.mark.parametrize("racecheck", [False, True])
@pytest.mark.parametrize("ptx, message", MC_ERRORS,
                         ids=["mask-rank", "mask-rank-constant", "mask-zero", "multicast-exited",
                              "arrive-exited", "remote-uninitialised", "multicast-uninitialised",
                              "count-too-many"])
def test_multicast_and_remote_arrive_misuse(ptx, message, racecheck):
    text = next(line.strip() for i, line in enumerate(ptx.splitlines(), 1) if i == mc_line(ptx))
    with pytest.raises(SimulatorError) as err:
        run(ptx, "k", 2, 64, [np.zeros(64, np.uint32)], racecheck=racecheck)
    assert str(err.value) == f"PTX line {mc_line(ptx)}: `{text}" + message


def test_multicast_onto_a_peers_wgmma_operand_in_flight():
    """Both CTAs issue a wgmma reading their shared memory (A at 0 to 2047); rank 0 multicasts
    16 bytes into rank 1's A (ctaMask 0b10) while rank 1's product is not yet waited for: an
    error naming rank 1's block; after rank 1's wait and a barrier (and a cluster barrier), the
    same copy is fine."""
    from test_wgmma_sim import COMMIT, ISSUE, launch, product, wait
    rng = np.random.default_rng(5)
    init = "    setp.eq.u32 %p3, %r1, 0;\n    @%p3 mbarrier.init.shared.b64 [%r10+40960], 1;\n"
    sync = "    barrier.cluster.arrive.aligned;\n    barrier.cluster.wait.aligned;\n"
    copy = (f"    mov.u32 %r15, %cluster_ctarank;\n    setp.eq.u32 %p0, %r15, 0;\n"
            f"    setp.eq.and.u32 %p0, %r1, 0, %p0;\n"
            f"    @%p0 {BULK_MC} [%r10+1024], [%rd1], 16, [%r10+40960], 2;\n")
    arrive = ("    mov.u32 %r15, %cluster_ctarank;\n    setp.eq.u32 %p0, %r15, 1;\n"
              "    setp.eq.and.u32 %p0, %r1, 0, %p0;\n"
              "    @%p0 mbarrier.arrive.expect_tx.shared.b64 %rd16, [%r10+40960], 16;\n")
    flying = wgmma_cluster_kernel(init + ISSUE + COMMIT + sync + copy + wait())
    landing = wgmma_cluster_kernel(init + ISSUE + COMMIT + wait() + "    bar.sync 0;\n" + sync
                                   + copy + arrive + sync)
    images, descs, _, _ = product("bf16", 8, (0, False, None), (0, False, None), rng, blocks=2)
    args = (8, images, descs, np.zeros((256, 4)))
    with pytest.raises(SimulatorError, match=r"`@%p0 cp.async.bulk.shared::cluster.* writes shared "
                                             r"offset 0x400 of block \(1,0,0\) \(a bulk copy may "
                                             r"land any time until its mbarrier's phase "
                                             r"completes\), which a wgmma of warpgroup 0 \(issued "
                                             r"at PTX line \d+, `wgmma.mma_async.*`, committed, "
                                             r"not yet retired by a wait_group\) may still be "
                                             r"reading: .*; thread \(0,0,0\) block \(0,0,0\)$"):
        with deadline():
            launch(flying, *args, blocks=2, racecheck=False)
    with deadline():
        launch(landing, *args, blocks=2, racecheck=False)
    if find_ptxas() is not None:
        for ptx in (flying, landing):
            ok, log, _ = assemble(ptx, "sm_90a")
            assert ok and "warning" not in log, log


def released_kernel(whole: bool) -> str:
    """Both CTAs' products are waited for (wgmma.wait_group 0, no barrier after); rank 1's
    threads (`whole`: all 128, else thread 0 alone) arrive on rank 0's "stage free" barrier at
    40960 (count 128 or 1) through shared::cluster; rank 0's thread 0 waits for its phase, then
    multicasts 16 bytes into rank 1's A (ctaMask 0b10), signalling rank 1's barrier at 40968."""
    from test_wgmma_sim import COMMIT, ISSUE, wait
    sync = "    barrier.cluster.arrive;\n    barrier.cluster.wait;\n"
    return wgmma_cluster_kernel(f"""    setp.eq.u32 %p3, %r1, 0;
    @%p3 mbarrier.init.shared.b64 [%r10+40960], {128 if whole else 1};
    @%p3 mbarrier.init.shared.b64 [%r10+40968], 1;
""" + sync + ISSUE + COMMIT + wait() + f"""    mov.u32 %r15, %cluster_ctarank;
    setp.eq.u32 %p0, %r15, 1;
    add.u32 %r16, %r10, 40960;
    mapa.shared::cluster.u32 %r17, %r16, 0;
    {"" if whole else "setp.eq.and.u32 %p1, %r1, 0, %p0;"}
    @{"%p0" if whole else "%p1"} mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%r17];
    @%p0 bra $L_consumer;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra $L_join;
$L_spin:
    mbarrier.try_wait.parity.acquire.cluster.shared.b64 %p1, [%r10+40960], 0;
    @!%p1 bra $L_spin;
    {BULK_MC} [%r10+1024], [%rd1], 16, [%r10+40968], 2;
    bra.uni $L_join;
$L_consumer:
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra $L_join;
    mbarrier.arrive.expect_tx.shared.b64 %rd16, [%r10+40968], 16;
$L_join:
""" + sync)


def test_remote_arrivals_of_a_whole_warpgroup_free_its_operands():
    """A phase that a whole warpgroup of another CTA arrived on (after waiting for its
    product) retires that product, as a local one does: the multicast into its A is fine.
    With one thread's arrival only, the product's other warps may still read: an error."""
    from test_wgmma_sim import launch, product
    rng = np.random.default_rng(6)
    images, descs, _, _ = product("bf16", 8, (0, False, None), (0, False, None), rng, blocks=2)
    args = (8, images, descs, np.zeros((256, 4)))
    with deadline():
        launch(released_kernel(True), *args, blocks=2, racecheck=False)
    with pytest.raises(SimulatorError, match=r"`cp.async.bulk.shared::cluster.* writes shared "
                                             r"offset 0x400 of block \(1,0,0\) .*which a wgmma of "
                                             r"warpgroup 0 \(issued at PTX line \d+, `.*`, waited "
                                             r"for by each warp for its own part\) may still be "
                                             r"reading in another warp"):
        with deadline():
            launch(released_kernel(False), *args, blocks=2, racecheck=False)
    if find_ptxas() is not None:
        for whole in (True, False):
            ok, log, _ = assemble(released_kernel(whole), "sm_90a")
            assert ok and "warning" not in log, log


def wgmma_cluster_kernel(sequence: str) -> str:
    """test_wgmma_sim's flight kernel (sm_90a) with `sequence` in place of its product, in
    clusters of 2; the barrier at shared offset 40960."""
    from test_wgmma_sim import flight
    ptx = flight(sequence)
    head = "                   .param .u32 wg_scale)\n"
    assert head in ptx
    return ptx.replace(head, head + ".reqnctapercluster 2\n")


MC_LOAD = ["    .reg .b16 %rs<4>;\n", "    .shared .align 128 .b32 s[64];\n"]


@pytest.mark.parametrize("line, message, ptxas_refuses", [
    ("mbarrier.arrive.shared::cluster.b64 %rd2, [%r6];",
     "an arrive on .shared::cluster returns no state: its destination must be the sink `_` "
     "(ptxas refuses a register there)", True),
    ("mbarrier.arrive.release.shared.b64 %rd2, [%r6];",
     ".release needs a scope after it, .cta or .cluster, as ptxas requires", True),
    ("mbarrier.arrive.cluster.shared.b64 %rd2, [%r6];",
     "the scope .cluster needs the memory order before it (mbarrier.arrive.release.cluster), as "
     "ptxas requires", True),
    ("mbarrier.try_wait.parity.cluster.shared.b64 %p1, [%r6], 0;",
     "the scope .cluster needs the memory order before it (mbarrier.try_wait.parity.acquire."
     "cluster)", True),
    ("mbarrier.arrive.acquire.cta.shared.b64 %rd2, [%r6];",
     "mbarrier.arrive takes the memory order .release, not .acquire", True),
    ("mbarrier.init.release.cta.shared.b64 [%r6], 1;",
     "mbarrier.init takes no memory order (.release)", True),
    ("mbarrier.try_wait.parity.shared::cluster.b64 %p1, [%r6], 0;",
     "the simulator supports mbarrier.init", True),
    ("mbarrier.init.shared::cluster.b64 [%r6], 1;", "the simulator supports mbarrier.init", True),
    ("mbarrier.arrive.shared.b64 %rd2, [%r6], 0;", "an arrive's count must be 1 to 1048575", True),
    (f"{BULK_MC} [%r5], [%rd1], 16, [%r6], %r7;",
     "ctaMask is a 16-bit operand: %r7 is a .b32 register", True),
    (f"{BULK_MC} [%r5], [%rd1], 16, [%r6];", r"a bulk copy takes [dst], [src], size, [mbar], "
                                             "ctaMask", True),
    (f"{BULK_MC} [%r5], [%rd1], 16, [%r6], 0;", "ctaMask must be a 16-bit mask naming at least "
                                                "one CTA of the cluster (1 to 0xffff), got 0",
     False),
    (f"{BULK_MC} [%r5], [%rd1], 16, [%r6], 65536;", "(1 to 0xffff), got 65536", False),
    ("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group.multicast::cluster "
     "[%rd1, {%r1, %r1}], [%r5], %rs1;", "the simulator supports cp.async.bulk.tensor", True),
    ("cp.async.bulk.global.shared::cta.bulk_group.multicast::cluster [%rd1], [%r5], 16, %rs1;",
     "the simulator supports cp.async.bulk.shared::cluster.global", True),
])
def test_cluster_mbarrier_and_multicast_forms_refused_at_load(line, message, ptxas_refuses):
    """Refused at load time, naming the instruction; those ptxas refuses too, it does (the
    constants ctaMask 0 and 65536 it takes)."""
    ptx = mc_kernel(f"    {line}\n")
    with pytest.raises(SimulatorError, match=re.escape(message)) as err:
        Module(ptx)
    assert f"unsupported instruction `{line}`" in str(err.value)
    if find_ptxas() is not None:
        assert assemble(ptx, "sm_90")[0] != ptxas_refuses


MC_ACCEPTED = [
    "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%r6], %r1;",
    "mbarrier.arrive.release.cta.shared::cluster.b64 _, [%r6];",
    "mbarrier.arrive.expect_tx.shared::cluster.b64 _, [%r6], 64;",
    "mbarrier.arrive.release.cluster.shared.b64 %rd2, [%r6];",
    "mbarrier.arrive.release.cta.shared::cta.b64 _, [%r6], 2;",
    "mbarrier.arrive.expect_tx.release.cluster.shared::cta.b64 %rd2, [%r6], 64;",
    "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 %p1, [%r6], 0;",
    "mbarrier.try_wait.parity.acquire.cta.shared.b64 %p1, [%r6], 1, 1000;",
    "mbarrier.test_wait.parity.acquire.cluster.shared.b64 %p1, [%r6], 0;",
    "mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%r6], 16;",
    "mbarrier.complete_tx.relaxed.cluster.shared::cluster.b64 [%r6], 16;",
    "fence.mbarrier_init.release.cluster;",
    "cp.async.bulk.shared::cluster.global.multicast::cluster.mbarrier::complete_tx::bytes "
    "[%r5], [%rd1], 16, [%r6], 0xffff;",
]


@pytest.mark.parametrize("line", MC_ACCEPTED)
def test_cluster_mbarrier_forms_accepted_at_load(line):
    Module(mc_kernel(f"    {line}\n"))


@pytest.mark.parametrize("line", ["fence.mbarrier_init.release.cluster;",
                                  "mbarrier.arrive.shared.b64 %rd2, [%r6], 2;",
                                  "mbarrier.arrive.shared::cluster.b64 _, [%r6];",
                                  "mbarrier.arrive.release.cluster.shared.b64 %rd2, [%r6];"])
def test_cluster_mbarrier_forms_need_sm_90(line):
    ptx = mc_kernel(f"    {line}\n").replace(".target sm_90a", ".target sm_80")
    with pytest.raises(SimulatorError, match=re.escape("needs .target sm_90 or later")):
        Module(ptx)
    # (with sm_80, what sm_80 takes: plain arrive and test_wait with .release/.acquire.cta)
    Module(mc_kernel("    mbarrier.arrive.release.cta.shared.b64 %rd2, [%r6];\n"
                     "    mbarrier.test_wait.parity.acquire.cta.shared.b64 %p1, [%r6], 0;\n",
                     ).replace(".target sm_90a", ".target sm_80").replace(
                         ".reqnctapercluster 2\n", ""))


# ---- the race check across CTAs: .shared::cluster accesses of other CTAs' shared memory -------

def remote_pair(first: str, between: str, second: str, cluster=(2,)) -> str:
    """`first`, `between`, `second`, a cluster barrier, then out[linear block, t] = %r10 (0
    unless a load set it). The pieces may use: %r7, the thread's s[t] (shared::cta), %r9, rank
    0's s[t] (mapa); %p1: not rank 0, %p2: rank 1, %p3: rank 2."""
    return one_kernel("""    shl.b32 %r6, %r1, 2;
    add.u32 %r7, %r5, %r6;
    mapa.shared::cluster.u32 %r9, %r7, 0;
    setp.ne.u32 %p1, %r2, 0;
    setp.eq.u32 %p2, %r2, 1;
    setp.eq.u32 %p3, %r2, 2;
    mov.u32 %r10, 0;
""" + first + between + second + SYNC + """    mov.u32 %r11, %ctaid.x;
    mov.u32 %r12, %ctaid.y;
    mov.u32 %r13, %nctaid.x;
    mad.lo.u32 %r14, %r12, %r13, %r11;
    mad.lo.u32 %r15, %r14, 64, %r1;
    mul.wide.u32 %rd2, %r15, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r10;
""", cluster=cluster)


WRITE_REMOTE = "    @%p1 st.shared::cluster.u32 [%r9], %r1;\n"      # ranks > 0 write rank 0's s[t]
READ_OWN = "    @!%p1 ld.shared.u32 %r10, [%r7];\n"               # rank 0 reads its own s[t]
WRITE_OWN = "    @!%p1 st.shared.u32 [%r7], %r1;\n"
ADD_REMOTE = "    @%p1 red.shared::cluster.add.u32 [%r9], 1;\n"
READ_REMOTE = "    @%p1 ld.shared::cluster.u32 %r10, [%r9];\n"


def _race(what: str, owner: str, other: str, did: str, block: str) -> str:
    return (f"shared memory race: thread (0,0,0) {what} 4 bytes at shared offset 0x0 of block "
            f"{owner} that thread (0,0,0) of block {other} {did} since the last cluster "
            f"barrier; block {block}")


# (kernel, grid, the race reported: each kernel's first one is thread 0's)
REMOTE_RACES = {
    "remote-write-then-own-read": (remote_pair(WRITE_REMOTE, "", READ_OWN), 4,
                                   _race("reads", "(0,0,0)", "(1,0,0)", "wrote", "(0,0,0)")),
    "own-read-then-remote-write": (remote_pair(READ_OWN, "", WRITE_REMOTE), 4,
                                   _race("writes", "(0,0,0)", "(0,0,0)", "read", "(1,0,0)")),
    "a-block-barrier-between": (remote_pair(WRITE_REMOTE, "    bar.sync 0;\n", READ_OWN), 4,
                                _race("reads", "(0,0,0)", "(1,0,0)", "wrote", "(0,0,0)")),
    "own-write-then-remote-atomic": (remote_pair(WRITE_OWN, "", ADD_REMOTE), 4,
                                     _race("atomically updates", "(0,0,0)", "(0,0,0)", "wrote",
                                           "(1,0,0)")),
    "two-ctas-write-in-one-instruction": (remote_pair(WRITE_REMOTE, "", "", cluster=(3,)), 6,
                                          _race("writes", "(0,0,0)", "(1,0,0)", "wrote",
                                                "(2,0,0)")),
    "remote-read-then-remote-write": (
        remote_pair("    @%p2 ld.shared::cluster.u32 %r10, [%r9];\n", "",
                    "    @%p3 st.shared::cluster.u32 [%r9], %r1;\n", cluster=(3,)), 3,
        _race("writes", "(0,0,0)", "(1,0,0)", "read", "(2,0,0)")),
    "reordered-blocks": (remote_pair(WRITE_REMOTE, "", READ_OWN, cluster=(1, 2)), (2, 2),
                         _race("reads", "(0,0,0)", "(0,1,0)", "wrote", "(0,0,0)")),
}


@pytest.mark.parametrize("case", list(REMOTE_RACES))
def test_the_race_check_reports_races_on_other_ctas_shared_memory(case):
    """An access of another CTA's shared memory (mapa + ld/st/red.shared::cluster) and an
    access of the same bytes by a thread of another CTA (the owner's own, or a third's) with no
    cluster barrier between race; a block barrier orders neither. The race check reports the
    first, naming both threads' blocks and the block whose shared memory it is; without the
    check the kernels run."""
    ptx, grid, message = REMOTE_RACES[case]
    out = np.zeros(6 * 64, np.uint32)
    run(ptx, "k", grid, 64, [out], racecheck=False)
    with pytest.raises(SimulatorError, match=re.escape(message)):
        run(ptx, "k", grid, 64, [out], racecheck=True)


T64 = np.arange(64, dtype=np.uint32)
ZERO = np.zeros(64, np.uint32)
REMOTE_ORDERED = {
    # ranks > 0 write rank 0's s[t]; a cluster barrier; rank 0 reads it (out: per block)
    "cluster-barrier-between": (remote_pair(WRITE_REMOTE, SYNC, READ_OWN), 4,
                                [T64, ZERO, T64, ZERO]),
    "split-arrive-and-wait": (remote_pair(WRITE_REMOTE, "    barrier.cluster.arrive;\n"
                                          "    barrier.cluster.wait;\n", READ_OWN), 4,
                              [T64, ZERO, T64, ZERO]),
    # rank 0 writes its s[t]; a cluster barrier; ranks 1 and 2 read it
    "own-write-then-remote-reads": (remote_pair(WRITE_OWN, SYNC, READ_REMOTE, cluster=(3,)), 3,
                                    [ZERO, T64, T64]),
    # rank 0 reads its s[t] (zeroed before a first barrier) as ranks 1 and 2 do: reads of
    # reads do not race
    "own-and-remote-reads": (remote_pair("    st.shared.u32 [%r7], 5;\n" + SYNC, READ_REMOTE,
                                         READ_OWN, cluster=(3,)), 3, [ZERO + 5] * 3),
    # every rank adds 1 to rank 0's s[t] (zeroed before a first barrier) atomically, then,
    # after a cluster barrier, rank 0 reads it: atomics of atomics do not race
    "own-and-remote-atomics": (remote_pair(
        "    st.shared.u32 [%r7], 0;\n" + SYNC + ADD_REMOTE
        + "    @!%p1 atom.shared.add.u32 %r16, [%r7], 1;\n", SYNC, READ_OWN, cluster=(3,)), 3,
        [ZERO + 3, ZERO, ZERO]),
}


@pytest.mark.parametrize("case", list(REMOTE_ORDERED))
def test_the_race_check_takes_the_cluster_barrier_to_order_other_ctas_accesses(case):
    """The same accesses with a cluster barrier (arrive and wait) between them, and accesses
    that never race (reads and reads, atomics and atomics), pass the race check."""
    ptx, grid, expected = REMOTE_ORDERED[case]
    out = np.full((len(expected), 64), 7, np.uint32)
    run(ptx, "k", grid, 64, [out], racecheck=True)
    np.testing.assert_array_equal(out, np.stack(expected))


# ---- ptxas -------------------------------------------------------------------------------------

ASSEMBLED = ([specials_kernel(c) for c in [(2, 2, 1), (1, 2, 2), (3,), (1, 2), None]]
             + [exchange_kernel(c, m) for c in [(2,), (4, 1, 1), (2, 2, 1)]
                for m in (MAPA_U32, MAPA_U64)]
             + [STORE_TO_PEER, ATOMICS, SPLIT, local_exchange(None, SYNC_UNALIGNED),
                local_exchange((2,), SYNC_UNALIGNED), local_exchange((2,), ""), BLOCK_AND_CLUSTER,
                WARP_AFTER_CLUSTER_WAIT, REORDERED,
                WAIT_WITHOUT_ARRIVE, ARRIVE_TWICE, DEADLOCK, STUCK_BLOCK, EXITED, EXITED_LATER, EXITED_STORE,
                RANK_OUT_OF_RANGE, ADDRESS_OUT_OF_RANGE, OUT_OF_BOUNDS, MISALIGNED,
                BAD_RANK_ADDRESS, SPIN]
             + [multicast_kernel(kind, mode) for kind in ("tensor", "bulk") for mode in MC_MODES]
             + [handshake_kernel(v) for v in HANDSHAKES]
             + [TX] + [ptx for ptx, _ in MC_ERRORS]
             + [ptx for ptx, _, _ in REMOTE_RACES.values()]
             + [ptx for ptx, _, _ in REMOTE_ORDERED.values()]
             + [mc_kernel(f"    {line}\n") for line in MC_ACCEPTED])


@pytest.mark.parametrize("index", range(len(ASSEMBLED)))
def test_kernels_assemble_with_ptxas(index):
    if find_ptxas() is None:
        pytest.skip("ptxas is not available")
    ok, log, _ = assemble(ASSEMBLED[index], "sm_90")   # (sm_90a where the PTX names it)
    assert ok, log
    assert "warning" not in log, log
    Module(ASSEMBLED[index])
