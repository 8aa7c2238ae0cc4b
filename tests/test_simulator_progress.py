"""Forward progress in the simulator (docs/simulator.md, "Divergence"): spin-waits that finish on
the GPU finish here too, with the GPU's results, because threads spinning in a loop yield to the
other runnable threads (other warps, other blocks of the batch, other lanes of their warp); a
loop that can never finish raises instead of hanging.

Every test runs under a deadline (SIGALRM), so that a regression fails instead of hanging CI.
`PTXPY_TEST_DEVICE=gpu` runs the same kernels on a real GPU (kernel_harness.py).
"""
import contextlib
import os
import signal

import numpy as np
import pytest

from kernel_harness import Out, run
from ptxpy.runtime import simulator
from ptxpy.runtime.simulator import SimulatorError

HEADER = """
import ptxpy
from ptxpy import Array, f32, i32, u32, u64
"""
DEADLINE_S = 60


@contextlib.contextmanager
def deadline(seconds: int = DEADLINE_S):
    """Fail (rather than hang) when the body runs longer than `seconds`."""
    if not hasattr(signal, "SIGALRM"):
        yield
        return

    def expired(signum, frame):
        raise TimeoutError(f"the simulator did not finish within {seconds} s (a spin-wait that "
                           f"never yields to the thread it waits for?)")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def run_within(*args, **kw):
    with deadline():
        return run(*args, **kw)


CROSS_WARP_FLAG = HEADER + """
@ptxpy.jit
def spin_wait(x: Array[f32], out: Array[f32], flag: Array[i32]):
    t = ptxpy.thread_idx.x
    if t == 32:
        while ptxpy.atomic_add(flag, 0, 0) == 0:
            pass
        out[t] = out[0] + 1.0
    if t == 0:
        out[0] = x[0] * 2.0
        ptxpy.atomic_exch(flag, 0, 1)
"""


#: the simulator's hang check: on a GPU these kernels never finish (nothing to compare with)
SIMULATOR_ONLY = pytest.mark.skipif(os.environ.get("PTXPY_TEST_DEVICE") == "gpu",
                                    reason="a kernel that never finishes would hang the GPU")


def test_a_warp_spinning_on_a_flag_lets_the_warp_that_sets_it_run():
    """Thread 32 (warp 1) polls a flag that thread 0 (warp 0, at a higher pc) sets after its
    store: with minimum-pc-first alone, warp 1 would spin forever."""
    x = np.full(64, 3, np.float32)
    out, flag = run_within(CROSS_WARP_FLAG, "spin_wait", [x, Out(64, np.float32),
                                                          Out(1, np.int32)], grid=1, block=64)
    expected = np.zeros(64, np.float32)
    expected[0], expected[32] = 6.0, 7.0
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_array_equal(flag, [1])


BLOCK_LOCK = HEADER + """
@ptxpy.jit
def block_lock(x: Array[f32], out: Array[f32], lock: Array[i32]):
    t = ptxpy.thread_idx.x
    if t == 0:
        while ptxpy.atomic_cas(lock, 0, 0, 1) != 0:
            pass
        out[0] = out[0] + x[ptxpy.block_idx.x]
        out[1] = out[1] + 1.0
        ptxpy.atomic_exch(lock, 0, 0)
"""


@pytest.mark.parametrize("blocks", [4, 33])
def test_blocks_take_a_global_lock_in_turn(blocks):
    """Thread 0 of every block takes one lock with a compare-and-swap loop, does a non-atomic
    read-modify-write of two words, and releases it: the blocks that lost the swap spin until
    the holder (at a higher pc) has run its critical section."""
    x = np.arange(1, blocks + 1, dtype=np.float32)
    out, lock = run_within(BLOCK_LOCK, "block_lock", [x, Out(2, np.float32), Out(1, np.int32)],
                           grid=blocks, block=32)
    np.testing.assert_array_equal(out, [x.sum(), blocks])
    np.testing.assert_array_equal(lock, [0])


WARP_LOCK = HEADER + """
@ptxpy.jit
def warp_lock(x: Array[f32], out: Array[f32], lock: Array[i32]):
    t = ptxpy.thread_idx.x
    done = False
    while not done:
        if ptxpy.atomic_cas(lock, 0, 0, 1) == 0:
            out[0] = out[0] + x[t]
            out[1] = out[1] + 1.0
            ptxpy.atomic_exch(lock, 0, 0)
            done = True
"""


@pytest.mark.parametrize("threads", [4, 32, 96])
def test_lanes_of_one_warp_take_a_lock_in_turn(threads):
    """The Volta-safe per-thread lock: the lanes that lose the swap branch back while the winner
    runs its critical section at a higher pc. From sm_70 the diverged lanes of a warp make
    progress independently, so this finishes on the GPU, and here."""
    x = np.arange(1, threads + 1, dtype=np.float32)
    out, lock = run_within(WARP_LOCK, "warp_lock", [x, Out(2, np.float32), Out(1, np.int32)],
                           grid=1, block=threads)
    np.testing.assert_array_equal(out, [x.sum(), threads])
    np.testing.assert_array_equal(lock, [0])


PING_PONG = HEADER + """
@ptxpy.jit
def ping_pong(turn: Array[i32], log: Array[i32], rounds: i32):
    t = ptxpy.thread_idx.x
    if t % 32 == 0:
        me = t // 32
        for r in range(rounds):
            while ptxpy.atomic_add(turn, 0, 0) % 2 != me:
                pass
            log[ptxpy.atomic_add(turn, 0, 1)] = me
"""


def test_two_warps_hand_a_turn_back_and_forth():
    """Lane 0 of warp 0 and of warp 1 alternate 50 times through one counter, each spinning
    until it is its turn: every hand-over needs the other warp to run."""
    rounds = 50
    turn, log = run_within(PING_PONG, "ping_pong", [Out(1, np.int32), Out(2 * rounds, np.int32,
                                                                          init=-1), rounds],
                           grid=1, block=64)
    np.testing.assert_array_equal(turn, [2 * rounds])
    np.testing.assert_array_equal(log, np.arange(2 * rounds) % 2)


LONG_DIVERGENT_LOOP = HEADER + """
@ptxpy.jit
def long_loop(n: Array[i32], out: Array[u32], mask: Array[u32]):
    t = ptxpy.thread_idx.x
    k = n[t]
    acc = u32(0)
    j = 0
    while j < k:
        acc = acc * u32(3) + u32(j)
        j += 1
    out[t] = acc + ptxpy.shfl_xor_sync(acc, 1)
    mask[t] = ptxpy.ballot_sync(acc % u32(2) == u32(1))
"""


def test_lanes_leaving_a_long_loop_early_still_meet_at_warp_instructions():
    """Per-lane trip counts up to 3000 (past the scheduler's slice, so the lanes that left may
    run on while the others loop): the shuffle and the ballot after the loop still see every
    lane's final value."""
    rng = np.random.default_rng(5)
    n = rng.integers(0, 3000, 64).astype(np.int32)
    out, mask = run_within(LONG_DIVERGENT_LOOP, "long_loop",
                           [n, Out(64, np.uint32), Out(64, np.uint32)], grid=1, block=64)
    acc = np.zeros(64, np.uint64)
    for t in range(64):
        a = 0
        for j in range(int(n[t])):
            a = (a * 3 + j) & 0xFFFFFFFF
        acc[t] = a
    np.testing.assert_array_equal(out, ((acc + acc[np.arange(64) ^ 1]) & 0xFFFFFFFF)
                                  .astype(np.uint32))
    odd = (acc % 2 == 1)
    ballots = [sum(1 << i for i in range(32) if odd[w * 32 + i]) for w in range(2)]
    np.testing.assert_array_equal(mask, np.repeat(ballots, 32).astype(np.uint32))


NEVER_SET = HEADER + """
@ptxpy.jit
def never(flag: Array[i32], out: Array[i32]):
    t = ptxpy.thread_idx.x
    if t == 3:
        while ptxpy.atomic_add(flag, 0, 0) == 0:
            pass
    out[t] = 1
"""


@SIMULATOR_ONLY
def test_a_spin_that_nothing_can_end_raises_at_its_line():
    """No thread ever sets the flag: once every other thread has exited and a whole round of
    the spinning thread's loop changes no register and no memory, the simulator says so."""
    with pytest.raises(SimulatorError, match=r"^kernels\.py:9: the kernel can never finish: 1 "
                       r"thread loops without changing any register or memory, so what it waits "
                       r"for never happens \(of the others, 63 have exited\); "
                       r"thread \(3,0,0\) block \(0,0,0\)$"):
        run_within(NEVER_SET, "never", [Out(1, np.int32), Out(64, np.int32)], grid=1, block=64)


SPIN_PAST_BARRIER = HEADER + """
@ptxpy.jit
def stuck(flag: Array[i32], out: Array[i32]):
    t = ptxpy.thread_idx.x
    if t == 0:
        while ptxpy.atomic_add(flag, 0, 0) == 0:
            pass
    ptxpy.syncthreads()
    if t == 40:
        ptxpy.atomic_exch(flag, 0, 1)
    out[t] = 1
"""


@SIMULATOR_ONLY
def test_a_spin_on_a_thread_held_at_a_barrier_raises():
    """Thread 40 would set the flag only after a barrier that thread 0, spinning on that flag,
    never reaches: a deadlock on the GPU as well."""
    with pytest.raises(SimulatorError, match=r"^kernels\.py:9: the kernel can never finish: 1 "
                       r"thread loops .* \(of the others, 63 wait at a barrier\); "
                       r"thread \(0,0,0\) block \(0,0,0\)$"):
        run_within(SPIN_PAST_BARRIER, "stuck", [Out(1, np.int32), Out(64, np.int32)], grid=1,
                   block=64)


def test_a_long_loop_that_changes_its_registers_is_not_a_hang():
    """A single uniform loop running far past the hang check's rounds finishes normally."""
    source = HEADER + """
@ptxpy.jit
def count(flag: Array[i32], out: Array[i32], iters: i32):
    t = ptxpy.thread_idx.x
    c = 0
    while c < iters:
        c += ptxpy.atomic_add(flag, 0, 0) + 1
    out[t] = c
"""
    (flag, out) = run_within(source, "count", [Out(1, np.int32), Out(32, np.int32), 20000],
                             grid=1, block=32)
    np.testing.assert_array_equal(out, np.full(32, 20000, np.int32))


# ---- spins beside blocks going round a loop through a block barrier -----------------------------
# The simulator releases a block all of whose threads wait at a block barrier at the end of every
# round, so that threads of other blocks spinning meanwhile do not hold it back. Those releases
# do not count as progress for the hang check: a spin that nothing ends beside such a loop still
# raises (at once where the loop changes nothing, after _Batch.BARRIER_ROUNDS rounds where it
# keeps changing a counter), while a spin that the looping block ends finishes.

SPIN_BESIDE_BARRIER_LOOP = HEADER + """
@ptxpy.jit
def beside(flag: Array[i32], out: Array[i32]):
    t = ptxpy.thread_idx.x
    if ptxpy.block_idx.x == 1:
        if t == 3:
            while ptxpy.atomic_add(flag, 0, 0) == 0:
                pass
    else:
        while ptxpy.atomic_add(flag, 1, 0) == 0:
            ptxpy.syncthreads()
    out[t] = 1
"""


@SIMULATOR_ONLY
def test_a_spin_beside_a_block_looping_through_a_barrier_raises():
    """Block 1's thread 3 spins on a flag nobody sets while block 0 goes round a loop through
    syncthreads() on another one: the barrier is released every round, but the batch's state
    repeats, which the hang check sees; it names the spinning thread, not the looping block."""
    with pytest.raises(SimulatorError, match=r"^kernels\.py:10: the kernel can never finish: 1 "
                       r"thread loops without changing any register or memory, so what it waits "
                       r"for never happens \(of the others, 64 go round a loop through a block "
                       r"barrier, 63 have exited\); thread \(3,0,0\) block \(1,0,0\)$"):
        run_within(SPIN_BESIDE_BARRIER_LOOP, "beside", [Out(2, np.int32), Out(64, np.int32)],
                   grid=2, block=64)


SPIN_BESIDE_COUNTING_LOOP = HEADER + """
@ptxpy.jit
def counting(flag: Array[i32], out: Array[i32]):
    t = ptxpy.thread_idx.x
    if ptxpy.block_idx.x == 1:
        if t == 5:
            while ptxpy.atomic_add(flag, 0, 0) == 0:
                pass
    else:
        i = 0
        while ptxpy.atomic_add(flag, 1, 0) == 0:
            ptxpy.syncthreads()
            i += 1
        out[t] = i
"""


@SIMULATOR_ONLY
def test_a_spin_beside_a_counting_barrier_loop_raises_at_the_bound(monkeypatch):
    """The looping block (block 0 here) counts its trips, so the state never repeats: once
    BARRIER_ROUNDS rounds have ended in nothing but its barrier's release, a thread that spun
    with the same registers at the half of them and at the end is taken to wait forever."""
    monkeypatch.setattr(simulator._Batch, "BARRIER_ROUNDS", 64)
    with pytest.raises(SimulatorError, match=r"^kernels\.py:10: the kernel can never finish: 1 "
                       r"thread has looped for 64 rounds without changing any register while the "
                       r"other threads only went round block barriers \(the simulator's bound, "
                       r"_Batch\.BARRIER_ROUNDS\), so what it waits for is taken never to happen "
                       r"\(of the others, 64 go round a loop through a block barrier, 63 have "
                       r"exited\); thread \(5,0,0\) block \(1,0,0\)$"):
        run_within(SPIN_BESIDE_COUNTING_LOOP, "counting", [Out(2, np.int32), Out(64, np.int32)],
                   grid=2, block=64)


MBARRIER_BESIDE_BARRIER_LOOP = HEADER + """
@ptxpy.jit
def never_arrived(flag: Array[i32], out: Array[i32]):
    t = ptxpy.thread_idx.x
    bar = ptxpy.shared_array(1, u64)
    if ptxpy.block_idx.x == 1:
        if t == 0:
            ptxpy.mbarrier_init(bar[0], 1)
            ptxpy.mbarrier_wait(bar[0], 0)
    else:
        i = 0
        while ptxpy.atomic_add(flag, 0, 0) == 0:
            ptxpy.syncthreads()
            i += 1
        out[t] = i
"""


@SIMULATOR_ONLY
@pytest.mark.parametrize("bound", [64, 4096], ids=["small-bound", "default-bound"])
def test_an_mbarrier_wait_nobody_completes_beside_a_barrier_loop_raises(monkeypatch, bound):
    """mbarrier try_wait on a phase no thread arrives on, beside a counting barrier loop in
    another block: within a few seconds at the default bound."""
    monkeypatch.setattr(simulator._Batch, "BARRIER_ROUNDS", bound)
    with pytest.raises(SimulatorError, match=rf"^kernels\.py:\d+: the kernel can never finish: 1 "
                       rf"thread has looped for {bound} rounds without changing any register .*"
                       rf"; thread \(0,0,0\) block \(1,0,0\)$"):
        with deadline(30):
            run(MBARRIER_BESIDE_BARRIER_LOOP, "never_arrived",
                [Out(1, np.int32), Out(64, np.int32)], grid=2, block=64)


HANDED_OVER_AFTER_BARRIERS = HEADER + """
@ptxpy.jit
def after_barriers(flag: Array[i32], out: Array[i32], rounds: i32):
    t = ptxpy.thread_idx.x
    if ptxpy.block_idx.x == 0:
        if t == 0:
            while ptxpy.atomic_add(flag, 0, 0) == 0:
                pass
            ptxpy.atomic_add(flag, 1, 1)
    else:
        acc = 0
        for r in range(rounds):
            acc += t
            ptxpy.syncthreads()
        out[t] = acc
        if t == 0:
            ptxpy.atomic_exch(flag, 0, 1)
"""


def test_a_spin_ended_by_a_block_after_many_barriers_finishes():
    """Block 0's thread 0 spins until block 1 has gone through 300 barriers (300 rounds of
    nothing but its barrier's release, far past the hang check's first comparisons): it
    finishes, with block 1's results."""
    flag, out = run_within(HANDED_OVER_AFTER_BARRIERS, "after_barriers",
                           [Out(2, np.int32), Out(64, np.int32), 300], grid=2, block=64)
    np.testing.assert_array_equal(flag, [1, 1])
    np.testing.assert_array_equal(out, 300 * np.arange(64, dtype=np.int32))
