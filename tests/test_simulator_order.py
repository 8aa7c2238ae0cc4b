"""The simulator's shared-memory race check (racecheck=True) with memory-ordered accesses: strong
accesses (`ld.relaxed/.acquire/.volatile`, `st.relaxed/.release/.volatile`, atomics) never race
with each other, and release/acquire synchronisation through shared memory (release and acquire
accesses, fences around relaxed ones, release sequences of atomics, at scopes that hold both
threads) orders the plain accesses around it (docs/simulator.md, "Race check"). Hand-written PTX
flag handoffs in every form, ptxpy kernels (a flag, a lock, a warp that one lane polls for, a
block of a cluster), and random accesses against a model that keeps every access and derives
happens-before from its definition.
"""
import re

import numpy as np
import pytest

from kernel_harness import Out, run
from ptxpy.runtime.ptx_parser import SimulatorError
from ptxpy.runtime.simulator import (_CTA_ONLY, _ORDERED_CONFLICTS, Module, _memory_order,
                                     _Order, _OrderedRaces, run_kernel)

PTX_HEADER = """.version 8.0
.target sm_90
.address_size 64
"""

# Warp 0 writes data[t] = 3t + 1, makes a `syncwarp`, and thread 0 PUBLISHes the flag; each
# thread of warp 1 POLLs the flag until it is set, does AFTER, and reads data[t - 32] into out.
HANDOFF = PTX_HEADER + """.file 1 "kernels.py"
.visible .entry handoff(.param .u64 out)
{
    .reg .pred %p<4>;
    .reg .b32 %r<16>;
    .reg .b64 %rd<4>;
    .shared .align 4 .b32 data[32];
    .shared .align 4 .b32 flag;
    mov.u32 %r1, %tid.x;
    setp.eq.u32 %p1, %r1, 0;
    @%p1 st.shared.u32 [flag], 0;
    bar.sync 0;
    setp.ge.u32 %p2, %r1, 32;
    @%p2 bra $CONSUMER;
    mov.u32 %r2, data;
    shl.b32 %r3, %r1, 2;
    add.s32 %r4, %r2, %r3;
    mad.lo.u32 %r5, %r1, 3, 1;
    .loc 1 5 4
    st.shared.u32 [%r4], %r5;
    bar.warp.sync -1;
    @!%p1 bra $END;
    .loc 1 6 4
    PUBLISH
    bra $END;
$CONSUMER:
    .loc 1 8 4
$POLL:
    POLL
    setp.eq.u32 %p3, %r6, 0;
    @%p3 bra $POLL;
    AFTER
    sub.u32 %r7, %r1, 32;
    mov.u32 %r2, data;
    shl.b32 %r3, %r7, 2;
    add.s32 %r4, %r2, %r3;
    .loc 1 9 4
    ld.shared.u32 %r8, [%r4];
    ld.param.u64 %rd1, [out];
    mul.wide.u32 %rd2, %r7, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r8;
$END:
    ret;
}
"""
REL, ACQ = "st.release.cta.shared.u32 [flag], 1;", "ld.acquire.cta.shared.u32 %r6, [flag];"
RLX_ST, RLX_LD = "st.relaxed.cta.shared.u32 [flag], 1;", "ld.relaxed.cta.shared.u32 %r6, [flag];"
ST, LD = "st.shared.u32 [flag], 1;", "ld.shared.u32 %r6, [flag];"
FENCE = "fence.acq_rel.cta;"
# the data read (line 9) or the flag (line 8: warp 1 polls after thread 0 has published)
DATA_RACE = ("kernels.py:9: shared memory race: thread (32,0,0) reads 4 bytes at shared offset "
             "0x0 that thread (0,0,0) wrote since the last barrier; block (0,0,0)")
FLAG_RACE = ("kernels.py:8: shared memory race: thread (32,0,0) reads 4 bytes at shared offset "
             "0x80 that thread (0,0,0) wrote since the last barrier; block (0,0,0)")


def handoff(publish: str, poll: str, after: str = "") -> str:
    return HANDOFF.replace("PUBLISH", publish).replace("POLL\n", poll + "\n").replace(
        "AFTER", after)


@pytest.mark.parametrize("publish, poll, after", [
    (REL, ACQ, ""),
    (REL, RLX_LD, FENCE),                      # a relaxed poll, then an acquire fence
    (FENCE + " " + RLX_ST, RLX_LD, FENCE),     # a fence, then a relaxed store: a release
    ("membar.cta; st.volatile.shared.u32 [flag], 1;", "ld.volatile.shared.u32 %r6, [flag];",
     "membar.cta;"),                           # membar is fence.sc; volatile is relaxed.sys
    ("fence.release.cluster; " + RLX_ST, RLX_LD, "fence.acquire.cluster;"),
    ("atom.release.cta.shared.exch.b32 %r9, [flag], 1;",
     "atom.acquire.cta.shared.or.b32 %r6, [flag], 0;", ""),
    ("red.release.cta.shared.add.u32 [flag], 1;", ACQ, ""),
    ("atom.release.cta.shared.cas.b32 %r9, [flag], 0, 1;", ACQ, ""),
    # a relaxed atomic after the release continues its release sequence
    (REL + " atom.relaxed.cta.shared.add.u32 %r9, [flag], 1;", ACQ, ""),
    # generic addresses of the flag
    ("cvta.shared.u64 %rd1, flag; st.release.cta.u32 [%rd1], 1;",
     "cvta.shared.u64 %rd1, flag; ld.acquire.cta.u32 %r6, [%rd1];", ""),
])
def test_a_flag_handoff_with_release_and_acquire_passes(publish, poll, after):
    out = np.zeros(32, np.uint32)
    run_kernel(handoff(publish, poll, after), "handoff", 1, 64, [out], racecheck=True)
    np.testing.assert_array_equal(out, 3 * np.arange(32) + 1)


@pytest.mark.parametrize("publish, poll, after, race", [
    (ST, LD, "", FLAG_RACE),                  # a plain flag: the flag itself races
    (REL, LD, "", FLAG_RACE),                 # a strong and a plain access race
    (ST, ACQ, "", FLAG_RACE),
    (FENCE + " " + ST, ACQ, "", FLAG_RACE),   # a fence orders only with a strong write
    (RLX_ST, RLX_LD, "", DATA_RACE),          # relaxed: the flag is fine, the data is not
    (RLX_ST, RLX_LD, FENCE, DATA_RACE),       # an acquire fence needs a release to see
    (REL, RLX_LD, "", DATA_RACE),             # ... and a relaxed read a fence after it
    (REL, RLX_LD, "fence.release.cta;", DATA_RACE),   # (a release fence is no acquire)
    # a relaxed store after the release is a release only with a fence before it (PTX's
    # "release then strong write" pattern is not followed: conservative)
    (REL + " " + RLX_ST, ACQ, "", DATA_RACE),
    # a compare-and-swap that fails writes nothing, so publishes nothing
    ("atom.release.cta.shared.cas.b32 %r9, [flag], 5, 1; " + RLX_ST, ACQ, "", DATA_RACE),
    # a plain store after the release ends its sequence
    (REL + " " + ST, ACQ, "", FLAG_RACE),
])
def test_a_flag_handoff_without_synchronisation_is_reported(publish, poll, after, race):
    out = np.zeros(32, np.uint32)
    with pytest.raises(SimulatorError) as err:
        run_kernel(handoff(publish, poll, after), "handoff", 1, 64, [out], racecheck=True)
    assert str(err.value) == race
    run_kernel(handoff(publish, poll, after), "handoff", 1, 64, [out], racecheck=False)
    np.testing.assert_array_equal(out, 3 * np.arange(32) + 1)


# thread a makes the FIRST access, then thread b the SECOND, to word 1 of a shared array
PAIR = PTX_HEADER + """.file 1 "kernels.py"
.visible .entry pair(.param .u32 a, .param .u32 b)
{
    .reg .pred %p<3>;
    .reg .b32 %r<12>;
    .shared .align 4 .b32 xs[4];
    mov.u32 %r1, %tid.x;
    ld.param.u32 %r2, [a];
    ld.param.u32 %r3, [b];
    setp.eq.u32 %p1, %r1, %r2;
    setp.eq.u32 %p2, %r1, %r3;
    .loc 1 4 4
    @%p1 FIRST
    .loc 1 5 4
    @%p2 SECOND
    ret;
}
"""
SLD, SST = "ld.relaxed.cta.shared.u32 %r9, [xs+4];", "st.release.cta.shared.u32 [xs+4], %r1;"
VLD, VST = "ld.volatile.shared.u32 %r9, [xs+4];", "st.volatile.shared.u32 [xs+4], %r1;"
PLD, PST = "ld.shared.u32 %r9, [xs+4];", "st.shared.u32 [xs+4], %r1;"
ATOM = "atom.acq_rel.cta.shared.add.u32 %r9, [xs+4], 1;"
CAS = "atom.relaxed.cta.shared.cas.b32 %r9, [xs+4], 0, 1;"


@pytest.mark.parametrize("first, second, race", [
    (SST, SLD, None), (SST, SST, None), (SLD, SST, None), (VST, SLD, None), (SST, VST, None),
    (ATOM, SST, None), (SST, ATOM, None), (SLD, ATOM, None), (CAS, SST, None), (SLD, PLD, None),
    (PLD, SLD, None), (CAS, PLD, None),
    (SST, PLD, "reads 4 bytes at shared offset 0x4 that thread (2,0,0) wrote"),
    (PLD, SST, "writes 4 bytes at shared offset 0x4 that thread (2,0,0) read"),
    (PST, SLD, "reads 4 bytes at shared offset 0x4 that thread (2,0,0) wrote"),
    (SLD, PST, "writes 4 bytes at shared offset 0x4 that thread (2,0,0) read"),
    (PST, SST, "writes 4 bytes at shared offset 0x4 that thread (2,0,0) wrote"),
    (SST, PST, "writes 4 bytes at shared offset 0x4 that thread (2,0,0) wrote"),
    (VST, PLD, "reads 4 bytes at shared offset 0x4 that thread (2,0,0) wrote"),
    (PST, ATOM, "atomically updates 4 bytes at shared offset 0x4 that thread (2,0,0) wrote"),
    (ATOM, PLD, "reads 4 bytes at shared offset 0x4 that thread (2,0,0) atomically updated"),
])
def test_strong_accesses_race_only_with_plain_ones(first, second, race):
    ptx = PAIR.replace("FIRST", first).replace("SECOND", second)
    if race is None:
        run_kernel(ptx, "pair", 1, 8, [2, 5], racecheck=True)
    else:
        with pytest.raises(SimulatorError) as err:
            run_kernel(ptx, "pair", 1, 8, [2, 5], racecheck=True)
        assert str(err.value) == (f"kernels.py:5: shared memory race: thread (5,0,0) {race} since "
                                  "the last barrier; block (0,0,0)")
    run_kernel(ptx, "pair", 1, 8, [5, 5], racecheck=True)        # one thread is no race


def test_two_lanes_of_one_strong_store_to_the_same_bytes_do_not_race():
    ptx = PAIR.replace("@%p1 FIRST", "st.relaxed.cta.shared.u32 [xs], %r1;").replace(
        "@%p2 SECOND", "")
    run_kernel(ptx, "pair", 1, 64, [0, 0], racecheck=True)
    with pytest.raises(SimulatorError, match="also writes in the same instruction"):
        run_kernel(ptx.replace("st.relaxed.cta.shared", "st.shared"), "pair", 1, 64, [0, 0],
                   racecheck=True)


def test_only_kernels_with_strong_shared_accesses_take_the_ordered_check():
    """The others keep the check as it was (its state, its cost)."""
    def ordered(ptx, name):
        return _memory_order(Module(ptx).kernels[name])

    assert ordered(handoff(REL, ACQ), "handoff") == (True, False)
    assert ordered(handoff(REL, RLX_LD, FENCE), "handoff") == (True, True)
    assert ordered(handoff(ST, LD), "handoff") == (False, False)
    assert ordered(handoff(ST, LD, "membar.cta;"), "handoff") == (False, False)  # no atomics
    assert ordered(handoff(ST, "atom.shared.or.b32 %r6, [flag], 0;", "membar.cta;"),
                   "handoff") == (True, True)       # a fence beside a (relaxed) atomic
    assert ordered(handoff(ST, "atom.shared.or.b32 %r6, [flag], 0;"), "handoff") == (False, False)
    glob = handoff(ST, LD, "ld.param.u64 %rd1, [out]; ld.acquire.gpu.global.u32 %r9, [%rd1];")
    assert ordered(glob, "handoff") == (False, False)   # strong accesses of global memory only


def test_global_memory_is_not_checked():
    """Two threads of a block write and read one global word without a barrier: no report."""
    ptx = PTX_HEADER + """
.visible .entry k(.param .u64 out)
{
    .reg .pred %p<2>;
    .reg .b32 %r<4>;
    .reg .b64 %rd<2>;
    mov.u32 %r1, %tid.x;
    ld.param.u64 %rd1, [out];
    setp.eq.u32 %p1, %r1, 0;
    @%p1 st.global.u32 [%rd1], 7;
    @!%p1 ld.global.u32 %r2, [%rd1];
    @!%p1 st.release.gpu.global.u32 [%rd1+4], %r2;
    ret;
}
"""
    out = np.zeros(2, np.uint32)
    run_kernel(ptx, "k", 1, 64, [out], racecheck=True)
    assert out.tolist() == [7, 7]


def _hand_written() -> list:
    """Every hand-written kernel the tests above run."""
    kernels = []
    for test in (test_a_flag_handoff_with_release_and_acquire_passes,
                 test_a_flag_handoff_without_synchronisation_is_reported):
        for mark in test.pytestmark:
            kernels += [handoff(*params[:3]) for params in mark.args[1]]
    for mark in test_strong_accesses_race_only_with_plain_ones.pytestmark:
        kernels += [PAIR.replace("FIRST", first).replace("SECOND", second)
                    for first, second, _ in mark.args[1]]
    return kernels


def test_the_hand_written_kernels_assemble():
    from ptxpy.transpiler import ptxas
    if ptxas.find_ptxas() is None:
        pytest.skip("no ptxas")
    for ptx in _hand_written():
        ok, log, _ = ptxas.assemble(ptx, "sm_90")
        assert ok, f"{log}\n{ptx}"


# ---- ptxpy kernels ----------------------------------------------------------------------------

HEADER = """
import ptxpy
from ptxpy import Array, f32, i32
"""

# thread 0 writes the block's data, then sets the flag; warp 1's lane 32 polls for it and passes
# it on to its warp with a syncwarp; the warp reads the data
FLAG = HEADER + """
@ptxpy.jit
def flagged(x: Array[f32], out: Array[f32]):
    t = ptxpy.thread_idx.x
    s = ptxpy.shared_array(32, f32)
    flag = ptxpy.shared_array(1, i32)
    if t == 0:
        flag[0] = 0
    ptxpy.syncthreads()
    if t == 0:
        for i in range(32):
            s[i] = x[i] * 2.0
        PUBLISH
    elif t >= 32:
        if t == 32:
            while POLL == 0:
                pass
            AFTER
        ptxpy.syncwarp()
        out[t - 32] = s[t - 32] + 1.0
"""
RELEASE = 'ptxpy.store_release(flag, 0, 1, scope="cta")'
ACQUIRE = 'ptxpy.load_acquire(flag, 0, scope="cta")'
RELAXED = 'ptxpy.load_relaxed(flag, 0, scope="cta")'


def flagged(publish: str, poll: str, after: str = "pass") -> str:
    return FLAG.replace("PUBLISH", publish).replace("POLL", poll).replace("AFTER", after)


@pytest.mark.parametrize("publish, poll, after", [
    (RELEASE, ACQUIRE, "pass"),
    (RELEASE, RELAXED, "ptxpy.threadfence_block()"),
    ('ptxpy.threadfence_block()\n        ptxpy.store_relaxed(flag, 0, 1, scope="cta")', RELAXED,
     "ptxpy.threadfence_block()"),
    ('ptxpy.atomic_exch(flag, 0, 1, sem="release", scope="cta")',
     'ptxpy.atomic_add(flag, 0, 0, sem="acquire", scope="cta")', "pass"),
])
def test_a_ptxpy_flag_handoff_passes_the_race_check(publish, poll, after):
    x = np.random.default_rng(3).integers(-50, 50, 32).astype(np.float32)
    (out,) = run(flagged(publish, poll, after), "flagged", [x, Out(32, np.float32)], 1, 64,
                 racecheck=True, assemble=False)
    np.testing.assert_array_equal(out, 2 * x + 1)


def test_a_ptxpy_flag_handoff_without_an_acquire_is_reported():
    x = np.zeros(32, np.float32)
    racy = flagged(RELEASE, RELAXED)       # a relaxed poll with no fence after it
    with pytest.raises(SimulatorError) as err:
        run(racy, "flagged", [x, Out(32, np.float32)], 1, 64, racecheck=True, assemble=False)
    assert re.fullmatch(r"kernels\.py:\d+: shared memory race: thread \(32,0,0\) reads 4 bytes "
                        r"at shared offset 0x0 that thread \(0,0,0\) wrote since the last "
                        r"barrier; block \(0,0,0\)", str(err.value)), str(err.value)
    # without the syncwarp lane 32's acquire orders nothing for the other lanes of its warp
    racy = flagged(RELEASE, ACQUIRE).replace("        ptxpy.syncwarp()\n", "")
    with pytest.raises(SimulatorError, match=r"thread \(33,0,0\) reads 4 bytes at shared offset "
                                             r"0x4 that thread \(0,0,0\) wrote"):
        run(racy, "flagged", [x, Out(32, np.float32)], 1, 64, racecheck=True, assemble=False)


# every thread adds its x to a shared total inside a lock taken with an acquire and left with a
# release (LEAVE)
LOCK = HEADER + """
@ptxpy.jit
def locked(x: Array[i32], out: Array[i32]):
    t = ptxpy.thread_idx.x
    lock = ptxpy.shared_array(1, i32)
    total = ptxpy.shared_array(1, i32)
    if t == 0:
        lock[0] = 0
        total[0] = 0
    ptxpy.syncthreads()
    while ptxpy.atomic_cas(lock, 0, 0, 1, sem="acquire", scope="cta") != 0:
        pass
    total[0] = total[0] + x[t]
    LEAVE
    ptxpy.syncthreads()
    if t == 0:
        out[0] = total[0]
"""


def test_a_lock_in_shared_memory_orders_its_critical_sections():
    x = np.arange(64).astype(np.int32)
    leave = 'ptxpy.store_release(lock, 0, 0, scope="cta")'
    (out,) = run(LOCK.replace("LEAVE", leave), "locked", [x, Out(1, np.int32)], 1, 64,
                 racecheck=True, assemble=False)
    assert out[0] == x.sum()
    for racy, message in [
            ('ptxpy.store_relaxed(lock, 0, 0, scope="cta")', "reads 4 bytes at shared offset "
                                                             "0x10 that thread"),
            ("lock[0] = 0", "writes 4 bytes at shared offset 0x0 that thread")]:
        with pytest.raises(SimulatorError, match=message):
            run(LOCK.replace("LEAVE", racy), "locked", [x, Out(1, np.int32)], 1, 64,
                racecheck=True, assemble=False)


# block 1 of the cluster waits for block 0's flag, then reads block 0's data
CLUSTER = HEADER + """
@ptxpy.jit
def neighbours(x: Array[f32], out: Array[f32]):
    t = ptxpy.thread_idx.x
    s = ptxpy.shared_array(32, f32)
    flag = ptxpy.shared_array(1, i32)
    if t == 0:
        flag[0] = 0
    ptxpy.cluster_sync()
    if ptxpy.cluster_rank() == 0:
        s[t] = x[t] * 2.0
        ptxpy.syncthreads()
        if t == 0:
            ptxpy.store_release(flag, 0, 1, scope="SCOPE")
    else:
        ready = ptxpy.map_shared_rank(flag, 0)
        data = ptxpy.map_shared_rank(s, 0)
        if t == 0:
            while ptxpy.load_acquire(ready, 0, scope="SCOPE") == 0:
                pass
        BARRIER
        out[t] = data[t] + 1.0
    ptxpy.cluster_sync()
"""


@pytest.mark.parametrize("scope", ["cluster", "gpu"])
def test_a_block_of_the_cluster_reads_what_another_published(scope):
    """Through the barriers of both blocks: block 0's threads' stores, its barrier, thread 0's
    release; block 1's thread 0's acquire, its barrier, its threads' reads."""
    x = np.arange(32).astype(np.float32)
    source = CLUSTER.replace("SCOPE", scope).replace("BARRIER", "ptxpy.syncthreads()")
    (out,) = run(source, "neighbours", [x, Out(32, np.float32)], 2, 32, cluster=(2, 1, 1),
                 racecheck=True, assemble=False)
    np.testing.assert_array_equal(out, 2 * x + 1)


@pytest.mark.parametrize("scope, barrier, message", [
    # .cta: the flag's accesses of two CTAs are not morally strong, so they race
    ("cta", "ptxpy.syncthreads()",
     r"thread \(0,0,0\) writes 4 bytes at shared offset 0x80 of block \(0,0,0\) that thread "
     r"\(0,0,0\) of block \(1,0,0\) read"),
    # no barrier in block 1: its thread 0's acquire orders nothing for the others
    ("cluster", "pass", r"thread \(1,0,0\) reads 4 bytes at shared offset 0x4 of block "
                        r"\(0,0,0\) that thread \(1,0,0\) of block \(0,0,0\) wrote"),
])
def test_a_cluster_handoff_without_synchronisation_is_reported(scope, barrier, message):
    x = np.arange(32).astype(np.float32)
    source = CLUSTER.replace("SCOPE", scope).replace("BARRIER", barrier)
    with pytest.raises(SimulatorError, match=message):
        run(source, "neighbours", [x, Out(32, np.float32)], 2, 32, cluster=(2, 1, 1),
            racecheck=True, assemble=False)


# ---- random accesses against a model that keeps every access -----------------------------------

class _FakeBatch:
    """What _OrderedRaces reads of a batch: `B` blocks of T threads (one cluster where B > 1),
    `pad` bytes of shared memory each."""

    def __init__(self, T: int, pad: int, B: int = 1):
        from types import SimpleNamespace
        self.T, self.B, self.first_block = T, B, 0
        self.shared = np.zeros(pad * B, np.uint8)
        self.launch = SimpleNamespace(shared_pad=pad, block=(T, 1, 1), grid=(B, 1, 1),
                                      cluster_size=B)
        self.kernel = SimpleNamespace(where=lambda ins: "k.py:1")

    def thread_index(self, t: int) -> str:
        return f"({t},0,0)"

    def block_index(self, b: int) -> str:
        return f"({b},0,0)"


class _Model:
    """Every access since the cluster's start, with happens-before derived from its definition
    (threads as lanes: block * T + thread): each thread knows the set of events before its
    next one, from program order, `syncwarp`s of its warp, barriers of its block, and the
    release patterns its acquire patterns observed (a release, or a release fence then a strong
    write, read by an acquire, or by a strong read then an acquire fence, through any chain of
    atomics), where the PTX memory model makes them synchronise: each link of the chain and the
    pattern's first and last operation morally strong (one CTA, or scopes beyond .cta). A race:
    two conflicting accesses (a .cta-scoped strong one of another CTA's thread counting as
    plain) unordered, except two threads of one CTA on another CTA's bytes (not checked)."""

    def __init__(self, T: int, B: int = 1):
        self.T = T
        self.known = [set() for _ in range(T * B)]
        self.fenced = [None] * (T * B)                 # (published, fence wide)
        self.pending = [[] for _ in range(T * B)]      # (published, first thread, its wide)
        self.chain = {}                                # word: [(writer, wide, release)]
        self.history = []                              # (thread, kind, wide, word, event)
        self.count = 0

    def _strong_pair(self, a, a_wide, b, b_wide) -> bool:
        return a == b or a // self.T == b // self.T or (a_wide and b_wide)

    def _join(self, lanes):
        together = set().union(*(self.known[t] for t in lanes))
        for t in lanes:
            self.known[t] = set(together)

    def barrier(self, block: int = 0):
        self._join(range(block * self.T, (block + 1) * self.T))

    def cluster_barrier(self):
        self._join(range(len(self.known)))

    def syncwarp(self, warp: int, block: int = 0):
        first = block * self.T + 32 * warp
        self._join(range(first, min(first + 32, (block + 1) * self.T)))

    def fence(self, lanes, acquire: bool, release: bool, wide: bool = True):
        for t in lanes:
            if acquire:
                for published, first, first_wide in self.pending[t]:
                    if self._strong_pair(first, first_wide, t, wide):
                        self.known[t] |= published
            if release:
                self.fenced[t] = (set(self.known[t]), wide)

    def mbarrier_arrive(self, key: int, lanes):
        """An arrive (a release into the barrier's current phase) by each of these threads."""
        phases = self.__dict__.setdefault("arriving", {})
        for t in lanes:
            phases[key] = phases.get(key, set()) | self.known[t]

    def mbarrier_complete(self, key: int):
        self.__dict__.setdefault("completed", {})[key] = self.__dict__.get(
            "arriving", {}).pop(key, set())

    def mbarrier_wait(self, key: int, lanes):
        """Waits that see the barrier's last completed phase: each acquires its arrivals."""
        for t in lanes:
            self.known[t] |= self.__dict__.get("completed", {}).get(key, set())

    def races(self, kind: str, wide: bool, lanes, words, per_block: int) -> set:
        found = set()
        for t, w in zip(lanes, words):
            for o, k, o_wide, ow, event in self.history:
                if ow != w or o == t or event in self.known[t]:
                    continue
                owner, bo, bt = w // per_block, o // self.T, t // self.T
                if bo == bt and bo != owner:
                    continue
                mine, theirs = kind, k
                if bo != bt:
                    mine = mine if wide else _CTA_ONLY.get(mine, mine)
                    theirs = theirs if o_wide else _CTA_ONLY.get(theirs, theirs)
                if theirs in _ORDERED_CONFLICTS[mine]:
                    found.add(o)
        return found

    def access(self, kind: str, order, lanes, words):
        """One instruction: its lanes unordered among themselves, each a new event."""
        wide = order is None or order.wide
        events = list(range(self.count, self.count + len(lanes)))
        self.count += len(lanes)
        self.history += [(t, kind, wide, w, e) for t, w, e in zip(lanes, words, events)]
        writes = []
        for t, w, event in zip(lanes, words, events):
            release = None
            if order is not None and order.release:
                release = (self.known[t] | {event}, t, wide)
            elif kind in ("sstore", "atomic") and self.fenced[t] is not None:
                release = (set(self.fenced[t][0]), t, self.fenced[t][1])
            if kind in ("sload", "atomic"):
                # back along the chain from its last write while each link is morally strong
                reader, reader_wide = t, wide
                for writer, writer_wide, published in reversed(self.chain.get(w, [])):
                    if not self._strong_pair(writer, writer_wide, reader, reader_wide):
                        break
                    if published is not None:
                        if not order.acquire:
                            self.pending[t].append(published)
                        elif self._strong_pair(published[1], published[2], t, wide):
                            self.known[t] |= published[0]
                    reader, reader_wide = writer, writer_wide
            writes.append((w, (t, wide, release)))
        for t, event in zip(lanes, events):
            self.known[t].add(event)
        for w, entry in writes:
            if kind == "store":
                self.chain[w] = []
            elif kind == "sstore":
                self.chain[w] = [entry]
            elif kind == "atomic":
                self.chain[w] = self.chain.get(w, []) + [entry]


class _Trial:
    """One random run: the check (_OrderedRaces on a fake batch: one block of 80 threads, or a
    cluster of B blocks of T) and the model side by side. Each access goes to both: the check
    must raise exactly where the model finds a race, naming a thread the model names (a summary
    of more than three accessors may report what is ordered: counted apart), and pass where it
    finds none. Words of `n_words` per block: word w is block w // n_words's."""

    def __init__(self, n_words: int, stats: dict, T: int = 80, B: int = 1):
        self.T, self.n_words, self.pad = T, n_words, 4 * n_words
        self.races = _OrderedRaces(_FakeBatch(T, self.pad, B), fences=True)
        self.model = _Model(T, B)
        self.stats = stats

    def access(self, kind: str, order, lanes, words) -> bool:
        """False where the check raised (the run ends there)."""
        lanes, words = [int(t) for t in lanes], [int(w) for w in words]
        model, T = self.model, self.T
        expected = model.races(kind, order is None or order.wide, lanes, words, self.n_words)
        self.stats["ordered"] += sum(
            1 for t, w in zip(lanes, words) for o, k, _, ow, event in model.history
            if ow == w and k in _ORDERED_CONFLICTS[kind] and o != t and event in model.known[t])
        off = np.array([w // self.n_words * self.pad + 4 * (w % self.n_words) for w in words])
        who = np.array(lanes)
        own = off // self.pad == who // T
        try:
            if not own.all():          # as _RacecheckBatch.locate does it
                self.races.remote(kind, off[~own], who[~own], 4, None, order)
            if own.any():
                self.races.access(kind, off[own], who[own], 4, None, order)
        except SimulatorError as err:
            named = re.search(r"that thread \((\d+),0,0\)(?: of block \((\d+),0,0\))?.*"
                              r"block \((\d+),0,0\)$", str(err))
            other = int(named.group(1)) + T * int(named.group(2) or named.group(3))
            if other in expected:
                self.stats["checked"] += 1
            else:
                byte = np.repeat(off, 4) + np.tile(np.arange(4), len(off))
                records = list(self.races.seen.values()) + list(
                    (self.races.across or {}).values())
                assert any((rec.tc[byte] <= -2).any() for rec in records), (str(err), expected)
                self.stats["summarised"] += 1
            return False
        assert not expected, (kind, lanes, words, expected)
        model.access(kind, order, lanes, words)
        return True

    def fence(self, lanes, acquire: bool, release: bool, wide: bool = True):
        self.races.fence(np.asarray(lanes), acquire, release, wide)
        self.model.fence([int(t) for t in lanes], acquire, release, wide)

    def mbarrier(self, what: str, key: int, lanes=()):
        """An arrive, a phase's completion or a wait that sees it, on barrier `key`, in both."""
        lanes = np.asarray(lanes, np.int64)
        if what == "arrive":
            self.races.mbarrier_arrived(key, lanes)
            self.model.mbarrier_arrive(key, [int(t) for t in lanes])
        elif what == "complete":
            self.races.mbarrier_completed(key)
            self.model.mbarrier_complete(key)
        else:
            self.races.mbarrier_waited(np.full(lanes.size, key), lanes)
            self.model.mbarrier_wait(key, [int(t) for t in lanes])

    def syncwarp(self, warp: int, block: int = 0):
        warps = np.zeros(self.races.epoch.size, bool)
        warps[block * self.races.warps_per_block + warp] = True
        self.races.warp_synced(warps)
        self.model.syncwarp(warp, block)

    def barrier(self, block: int = 0):
        self.races.release(np.arange(self.races.batch.B) == block)
        self.model.barrier(block)

    def cluster_barrier(self):
        everyone = np.ones(self.races.batch.B, bool)
        self.races.release(everyone)
        self.races.release_cluster(everyone)
        self.model.cluster_barrier()


def _stats():
    return {"checked": 0, "summarised": 0, "passed": 0, "ordered": 0}


@pytest.mark.parametrize("seed", range(6))
def test_random_accesses_find_what_the_model_finds(seed):
    """Random accesses of 4 words (plain, strong, atomics of every order: one lane a word for
    the writes), fences, `syncwarp`s and barriers by a few threads."""
    rng = np.random.default_rng(seed)
    stats = _stats()
    for _ in range(150):
        trial = _Trial(4, stats)
        actors = rng.choice(80, 4, replace=False)
        for _step in range(12):
            roll = rng.random()
            if roll < 0.04:
                trial.barrier()
                continue
            if roll < 0.12:
                trial.syncwarp(int(rng.integers(3)))
                continue
            count = int(rng.integers(1, 4))
            lanes = rng.choice(actors, count, replace=False)
            if roll < 0.24:
                trial.fence(lanes, *[(True, True), (True, False), (False, True)][rng.integers(3)])
                continue
            kind = str(rng.choice(["load", "store", "sload", "sstore", "atomic"],
                                  p=[0.15, 0.05, 0.3, 0.3, 0.2]))
            order = None
            if kind == "sload":
                order = _Order(bool(rng.integers(2)), False, True)
            elif kind == "sstore":
                order = _Order(False, bool(rng.integers(2)), True)
            elif kind == "atomic":
                sem = int(rng.integers(4))
                order = _Order(sem in (1, 3), sem in (2, 3), True)
            if kind in ("store", "sstore", "atomic"):
                words = rng.choice(4, count, replace=False)
            else:
                words = rng.integers(0, 4, count)
            if not trial.access(kind, order, lanes, words):
                break
        else:
            stats["passed"] += 1
    assert stats["checked"] > 60 and stats["passed"] > 15 and stats["summarised"] == 0, stats


@pytest.mark.parametrize("seed", range(6))
def test_random_accesses_around_mbarriers_find_what_the_model_finds(seed):
    """Plain and strong accesses of 4 words by a few threads, with arrivals on two mbarriers,
    their phases completing and waits that see them (`syncwarp`s and barriers now and then):
    an arrive releases what its thread knows into the phase, a wait acquires the phase's."""
    rng = np.random.default_rng(100 + seed)
    stats = _stats()
    for _ in range(150):
        trial = _Trial(4, stats)
        actors = rng.choice(80, 4, replace=False)
        for _step in range(12):
            roll = rng.random()
            count = int(rng.integers(1, 4))
            lanes = rng.choice(actors, count, replace=False)
            key = 8 * int(rng.integers(2))
            if roll < 0.02:
                trial.barrier()
            elif roll < 0.05:
                trial.syncwarp(int(rng.integers(3)))
            elif roll < 0.25:
                trial.mbarrier("arrive", key, lanes)
            elif roll < 0.32:
                trial.mbarrier("complete", key)
            elif roll < 0.42:         # a whole handoff: arrivals, the phase, others' waits
                trial.mbarrier("arrive", key, lanes)
                trial.mbarrier("complete", key)
                trial.mbarrier("wait", key, rng.choice(actors, count, replace=False))
            elif roll < 0.55:
                trial.mbarrier("wait", key, lanes)
            else:
                kind = str(rng.choice(["load", "store", "sload", "sstore"], p=[0.55, 0.15, 0.15, 0.15]))
                order = (None if kind in ("load", "store") else
                         _Order(kind == "sload", kind == "sstore", True))
                words = (rng.choice(4, count, replace=False) if "store" in kind
                         else rng.integers(0, 4, count))
                if not trial.access(kind, order, lanes, words):
                    break
        else:
            stats["passed"] += 1
    assert stats["checked"] > 30 and stats["passed"] > 15 and stats["ordered"] > 20, stats
    assert stats["summarised"] == 0, stats


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("blocks", [1, 2])
def test_random_handoffs_find_what_the_model_finds(seed, blocks, monkeypatch):
    """Rounds of a message passed through flag words 0 and 1 (of a random CTA of the cluster
    where there are two): a thread writes data words 2 to 4, then publishes a flag in one of
    the release patterns (or, now and then, not: a relaxed or plain write), another observes a
    flag in one of the acquire patterns (or not), makes a `syncwarp` now and then, and it and
    maybe a lane of its warp read data; `syncwarp`s and barriers between; in a cluster, now and
    then a flag whose accesses and fences are of scope .cta (one scope a flag: the check
    publishes a release sequence that mixes scopes at the narrowest, where the model follows
    each release in it). Most runs meet a race sooner or later; along the way many conflicting
    pairs are ordered through the flags, and the check must agree with the model on each."""
    if seed == 0:         # a table of two rows: it drops the rows no byte names all the time
        monkeypatch.setattr(_OrderedRaces, "TABLE_ROWS", 2)
    rng = np.random.default_rng(100 + 10 * blocks + seed)
    stats = _stats()
    T = 80 if blocks == 1 else 40
    plain = None
    flag = 0

    wide = {}

    def scope():
        return wide[flag]

    def word(w):         # word w of a random CTA
        return int(w) + 5 * int(rng.integers(blocks))

    def publish(trial, p, w):
        how = int(rng.choice(7, p=[0.25, 0.2, 0.2, 0.1, 0.1, 0.1, 0.05]))
        if how in (1, 4):
            trial.fence([p], how == 1 and bool(rng.integers(2)), True, scope())
        kind, order = [("sstore", _Order(False, True, scope())), ("sstore", _Order(0, 0, scope())),
                       ("atomic", _Order(bool(rng.integers(2)), True, scope())),
                       ("atomic", _Order(0, 0, scope())),   # continues the release sequence
                       ("atomic", _Order(0, 0, scope())), ("sstore", _Order(0, 0, scope())),
                       ("store", plain)][how]
        return trial.access(kind, order, [p], [w])

    def observe(trial, c, w):
        how = int(rng.choice(6, p=[0.3, 0.25, 0.2, 0.1, 0.1, 0.05]))
        kind, order = [("sload", _Order(True, False, scope())), ("sload", _Order(0, 0, scope())),
                       ("atomic", _Order(True, bool(rng.integers(2)), scope())),
                       ("atomic", _Order(False, bool(rng.integers(2)), scope())),
                       ("sload", _Order(0, 0, scope())), ("load", plain)][how]
        if not trial.access(kind, order, [c], [w]):
            return False
        if how == 1 or (how == 3 and rng.random() < 0.5):
            trial.fence([c], True, bool(rng.integers(2)), scope())
        return True

    def between(trial):
        roll = rng.random()
        if roll < 0.05:
            trial.barrier(int(rng.integers(blocks)))
        elif roll < 0.2:
            trial.syncwarp(int(rng.integers(-(-T // 32))), int(rng.integers(blocks)))

    for _ in range(150):
        trial = _Trial(5, stats, T=T, B=blocks)
        actors = [int(t) for t in rng.choice(T * blocks, 3, replace=False)]
        wide = {f: blocks == 1 or rng.random() > 0.25 for f in (0, 1, 5, 6)}
        ok = True
        for _round in range(3):
            p = actors[rng.integers(3)]
            for w in rng.choice(range(2, 5), int(rng.integers(1, 3)), replace=False):
                kind = "store" if rng.random() < 0.8 else "sstore"
                ok = ok and trial.access(kind, _Order(0, 0, True) if kind == "sstore" else plain,
                                         [p], [word(w)])
            between(trial)
            flag = f = word(rng.integers(2))
            ok = ok and publish(trial, p, f)
            between(trial)
            c = actors[rng.integers(3)]
            flag = f if rng.random() < 0.85 else f + 1 - 2 * (f % 5)
            ok = ok and observe(trial, c, flag)
            if not ok:
                break
            if rng.random() < 0.5:
                trial.syncwarp(c % T // 32, c // T)
            readers = [c] + [a for a in actors if a != c and a // 32 == c // 32
                             and a // T == c // T][:rng.integers(2)]
            kind = "load" if rng.random() < 0.85 else "sload"
            if not trial.access(kind, _Order(0, 0, True) if kind == "sload" else plain, readers,
                                [word(w) for w in rng.integers(2, 5, len(readers))]):
                break
        else:
            stats["passed"] += 1
    assert stats["ordered"] > 60 and stats["checked"] > 60 and stats["passed"] > 8, stats
    assert stats["summarised"] == 0, stats


def test_more_than_three_readers_make_a_summary():
    """Past three accessors of a kind a byte keeps two and a summary of the rest: a `syncwarp`
    of their one warp orders it, a barrier clears it; where it holds threads of several warps,
    an access that release/acquire orders after all of them is still reported (conservative)."""
    def fresh():
        return _OrderedRaces(_FakeBatch(80, 16), fences=False)

    off = np.array([0])
    races = fresh()
    races.access("load", np.zeros(5, np.int64), np.arange(5), 4, None)   # five lanes of warp 0
    assert races.seen["load"].tc[0] == -2 - 2 and races.seen["load"].cc[0] == 0
    with pytest.raises(SimulatorError,
                       match=r"thread \(1,0,0\) writes .* that thread \(0,0,0\) read"):
        races.access("store", off, np.array([1]), 4, None)
    races.warp_synced(np.arange(3) == 0)
    races.access("store", off, np.array([1]), 4, None)                   # after the syncwarp
    # readers 0, 32, 64, 65 (three warps) each release a flag that thread 40 acquires
    races = fresh()
    readers = [0, 32, 64, 65]
    for r in readers:
        races.access("load", off, np.array([r]), 4, None)
    for i, r in enumerate(readers):
        races.access("sstore", np.array([4 + 4 * (i % 3)]), np.array([r]), 4, None,
                     _Order(False, True, True))
        races.access("sload", np.array([4 + 4 * (i % 3)]), np.array([40]), 4, None,
                     _Order(True, False, True))
    with pytest.raises(SimulatorError, match=r"thread \(40,0,0\) writes 4 bytes"):
        races.access("store", off, np.array([40]), 4, None)
    # three readers are followed exactly
    races = fresh()
    for i, r in enumerate(readers[:3]):
        races.access("load", off, np.array([r]), 4, None)
        races.access("sstore", np.array([4 + 4 * i]), np.array([r]), 4, None,
                     _Order(False, True, True))
        races.access("sload", np.array([4 + 4 * i]), np.array([40]), 4, None,
                     _Order(True, False, True))
    races.access("store", off, np.array([40]), 4, None)
    races.release(np.array([True]))


@pytest.mark.parametrize("seed", range(6))
def test_random_accesses_of_a_cluster_find_what_the_model_finds(seed):
    """Two blocks of 40 threads, a cluster: random accesses (a thread's own CTA's words or the
    other's, through .shared::cluster), fences and strong accesses of scope .cta now and then,
    `syncwarp`s, block and cluster barriers."""
    rng = np.random.default_rng(200 + seed)
    stats = _stats()
    T, per_block = 40, 3
    for _ in range(120):
        trial = _Trial(per_block, stats, T=T, B=2)
        actors = rng.choice(2 * T, 8, replace=False)
        for _step in range(10):
            roll = rng.random()
            if roll < 0.03:
                trial.cluster_barrier()
                continue
            if roll < 0.07:
                trial.barrier(int(rng.integers(2)))
                continue
            if roll < 0.12:
                trial.syncwarp(int(rng.integers(2)), int(rng.integers(2)))
                continue
            count = int(rng.integers(1, 5))
            lanes = rng.choice(actors, count, replace=False)
            wide = rng.random() > 0.3
            if roll < 0.24:
                trial.fence(lanes, *[(True, True), (True, False), (False, True)][rng.integers(3)],
                            wide)
                continue
            kind = str(rng.choice(["load", "store", "sload", "sstore", "atomic"],
                                  p=[0.2, 0.03, 0.3, 0.27, 0.2]))
            order = None
            if kind == "sload":
                order = _Order(bool(rng.integers(2)), False, wide)
            elif kind == "sstore":
                order = _Order(False, bool(rng.integers(2)), wide)
            elif kind == "atomic":
                sem = int(rng.integers(4))
                order = _Order(sem in (1, 3), sem in (2, 3), wide)
            if kind in ("store", "sstore", "atomic"):
                lanes = lanes[:3]
                words = rng.choice(2 * per_block, lanes.size, replace=False)
            else:
                words = rng.integers(0, 2 * per_block, count)
            if not trial.access(kind, order, lanes, words):
                break
        else:
            stats["passed"] += 1
    assert stats["checked"] > 60 and stats["passed"] > 2, stats
    assert stats["summarised"] <= stats["checked"] // 20, stats


# --- mbarriers: an arrive releases, a wait that sees its phase complete acquires ---------------

# Warp 0 produces 32 values a step into a ring of two stages, warp 1 adds them up; the stages go
# back and forth through mbarriers only ("full": the producer's arrivals, "empty": the
# consumer's), no bar.sync between the steps. {CONSUME} and {REFILL} are a step's two sides.
RING = """
import ptxpy
from ptxpy import Array, f32, u64

@ptxpy.jit
def ring(x: Array[f32], out: Array[f32]):
    buf = ptxpy.shared_array((2, 32), f32)
    full = ptxpy.shared_array((2,), u64)
    empty = ptxpy.shared_array((2,), u64)
    t = ptxpy.thread_idx.x
    lane = t % 32
    if t == 0:
        for s in ptxpy.static_range(2):
            ptxpy.mbarrier_init(full[s], 32)
            ptxpy.mbarrier_init(empty[s], EMPTY_ARRIVALS)
    ptxpy.syncthreads()
    steps = x.shape[0] // 32
    acc = 0.0
    for step in range(steps):
        s = step % 2
        if t < 32:
            if step >= 2:
                {REFILL}
            buf[s, lane] = x[step * 32 + lane]
            ptxpy.mbarrier_arrive(full[s])
        else:
            ptxpy.mbarrier_wait(full[s], (step // 2) % 2)
            {CONSUME}
    if t >= 32:
        out[lane] = acc
"""
WAIT_EMPTY = "ptxpy.mbarrier_wait(empty[s], (step // 2 - 1) % 2)"
READ_THEN_ARRIVE = """acc += buf[s, lane]
            ptxpy.mbarrier_arrive(empty[s])"""


def ring_source(consume=READ_THEN_ARRIVE, refill=WAIT_EMPTY, empty_arrivals=32):
    return (RING.replace("{CONSUME}", consume).replace("{REFILL}", refill)
            .replace("EMPTY_ARRIVALS", str(empty_arrivals)))


def run_ring(source):
    x = np.arange(32 * 6, dtype=np.float32)
    (out,) = run(source, "ring", [x, Out(32, np.float32)], grid=1, block=64, racecheck=True,
                 archs=("sm_90",))
    np.testing.assert_array_equal(out, x.reshape(6, 32).sum(axis=0))


def test_a_ring_handed_back_and_forth_through_mbarriers_does_not_race():
    run_ring(ring_source())


def test_a_stage_handed_back_before_it_is_read_races_with_its_refill():
    early = """ptxpy.mbarrier_arrive(empty[s])
            acc += buf[s, lane]"""
    with pytest.raises(SimulatorError, match=r"shared memory race: thread \(\d+,0,0\) (writes|reads) "
                                             r"4 bytes .* since the last barrier"):
        run_ring(ring_source(consume=early))


def test_one_lane_arrives_for_its_warp_after_a_syncwarp():
    """The consumer's lanes read, make a syncwarp, and lane 0 alone arrives (a count of 1): the
    other lanes' reads come before its arrive, so before the refill."""
    one = """acc += buf[s, lane]
            ptxpy.syncwarp()
            if lane == 0:
                ptxpy.mbarrier_arrive(empty[s])"""
    run_ring(ring_source(consume=one, empty_arrivals=1))


def test_one_lane_arriving_for_its_warp_without_a_syncwarp_races():
    one = """acc += buf[s, lane]
            if lane == 0:
                ptxpy.mbarrier_arrive(empty[s])"""
    with pytest.raises(SimulatorError, match=r"writes 4 bytes at shared offset 0x\w+ that thread "
                                             r"\((3[3-9]|[4-5]\d|6[0-3]),0,0\) read"):
        run_ring(ring_source(consume=one, empty_arrivals=1))


def test_one_lane_waits_for_its_warp_and_a_syncwarp_passes_the_phase_on():
    """Only the producer's lane 0 waits for the empty phase; a syncwarp hands what it acquired
    to the other lanes before they refill."""
    waits = """if lane == 0:
                    ptxpy.mbarrier_wait(empty[s], (step // 2 - 1) % 2)
                ptxpy.syncwarp()"""
    run_ring(ring_source(refill=waits))


def test_lanes_that_did_not_wait_race_with_the_reads_they_overwrite():
    waits = """if lane == 0:
                    ptxpy.mbarrier_wait(empty[s], (step // 2 - 1) % 2)"""
    with pytest.raises(SimulatorError, match=r"thread \(([1-9]|[12]\d|3[01]),0,0\) writes 4 bytes "
                                             r"at shared offset 0x\w+ that thread \(\d+,0,0\) "
                                             r"read"):
        run_ring(ring_source(refill=waits))


def test_mbarrier_arrivals_put_a_kernel_on_the_memory_ordered_check():
    from kernel_harness import compile_source

    kernel = compile_source(ring_source(), "ring", None, arch="sm_90")
    module = Module(kernel.ptx)
    assert _memory_order(module.kernels["ring"]) == (True, False)
