"""Thread-block clusters (sm_90): `@ptxpy.jit(cluster=...)` (PTX `.reqnctapercluster`), the
cluster's special registers, its barrier (`cluster_sync`, `cluster_arrive`, `cluster_wait`) and
distributed shared memory (`ptxpy.map_shared_rank`: `mapa`, `ld/st/atom.shared::cluster`).
Results against NumPy in the simulator (on the GPU with PTXPY_TEST_DEVICE=gpu); the errors of
the compiler, the decorator, `ptxpy.transpile` and the command line."""
import os
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import ptxpy
from kernel_harness import Out, compile_source, run
from ptxpy import Array, f32, i32
from ptxpy.cli import main
from ptxpy.runtime.ptx_parser import SimulatorError
from ptxpy.transpiler import ptxas
from ptxpy.transpiler.errors import CompileError

ON_GPU = os.environ.get("PTXPY_TEST_DEVICE") == "gpu"
needs_ptxas = pytest.mark.skipif(ptxas.find_ptxas() is None, reason="no ptxas")
SM90 = ("sm_90",)

HEADER = """
import ptxpy
from ptxpy import Array, f32, i32
"""

# each block reads its partner's shared array backwards
SWAP = HEADER + """
@ptxpy.jit
def swap(x: Array[f32, 1], out: Array[f32, 1]):
    t = ptxpy.thread_idx.x
    b = ptxpy.block_idx.x
    s = ptxpy.shared_array(64, f32)
    s[t] = x[b * 64 + t]
    ptxpy.cluster_sync()
    peer = ptxpy.map_shared_rank(s, ptxpy.cluster_rank() ^ 1)
    out[b * 64 + t] = peer[63 - t]
    ptxpy.cluster_sync()
"""

# every thread of the cluster adds into rank 0's shared accumulator
ATOMIC_SUM = HEADER + """
@ptxpy.jit
def atomic_sum(x: Array[f32, 1], out: Array[f32, 1]):
    t = ptxpy.thread_idx.x
    acc = ptxpy.shared_array(1, f32)
    if t == 0:
        acc[0] = 0.0
    ptxpy.cluster_sync()
    root = ptxpy.map_shared_rank(acc, 0)
    ptxpy.atomic_add(root, 0, x[ptxpy.block_idx.x * 128 + t])
    ptxpy.cluster_sync()
    if ptxpy.cluster_rank() == 0 and t == 0:
        out[ptxpy.cluster_idx.x] = acc[0]
"""

# each block sums its part in shared memory; rank 0 adds the blocks' sums in rank order
PARTIAL_SUMS = HEADER + """
@ptxpy.jit
def partial_sums(x: Array[f32, 1], out: Array[f32, 1]):
    t = ptxpy.thread_idx.x
    part = ptxpy.shared_array(128, f32)
    part[t] = x[ptxpy.block_idx.x * 128 + t]
    ptxpy.syncthreads()
    half = 64
    while half > 0:
        if t < half:
            part[t] += part[t + half]
        ptxpy.syncthreads()
        half //= 2
    ptxpy.cluster_sync()
    if ptxpy.cluster_rank() == 0 and t == 0:
        total = 0.0
        for r in range(ptxpy.cluster_size()):
            peer = ptxpy.map_shared_rank(part, r)
            total += peer[0]
        out[ptxpy.cluster_idx.x] = total
    ptxpy.cluster_sync()
"""

# the cluster's registers of every block of a 2-D grid
REGISTERS = HEADER + """
@ptxpy.jit
def registers(out: Array[i32, 3]):
    if ptxpy.thread_idx.x == 0:
        b = ptxpy.block_idx.y * ptxpy.grid_dim.x + ptxpy.block_idx.x
        out[b, 0, 0] = ptxpy.cluster_rank()
        out[b, 0, 1] = ptxpy.cluster_size()
        out[b, 1, 0] = ptxpy.cluster_idx.x
        out[b, 1, 1] = ptxpy.cluster_idx.y
        out[b, 2, 0] = ptxpy.cluster_block_idx.x
        out[b, 2, 1] = ptxpy.cluster_block_idx.y
        out[b, 3, 0] = ptxpy.cluster_dim.x
        out[b, 3, 1] = ptxpy.cluster_dim.y
"""

# arrive, work on this block's own data, then wait before reading the next block's
SPLIT = HEADER + """
@ptxpy.jit
def split(x: Array[f32, 1], out: Array[f32, 1], twice: Array[f32, 1]):
    t = ptxpy.thread_idx.x
    b = ptxpy.block_idx.x
    s = ptxpy.shared_array(32, f32)
    s[t] = x[b * 32 + t]
    ptxpy.cluster_arrive()
    twice[b * 32 + t] = 2.0 * x[b * 32 + t]
    ptxpy.cluster_wait()
    n = ptxpy.cluster_size()
    after = ptxpy.map_shared_rank(s, (ptxpy.cluster_rank() + 1) % n)
    out[b * 32 + t] = after[t]
    ptxpy.cluster_sync()
"""

# 4-wide loads from the partner's shared memory, and stores into it
VECTORS = HEADER + """
@ptxpy.jit
def vectors(x: Array[f32, 1], out: Array[f32, 1]):
    t = ptxpy.thread_idx.x
    b = ptxpy.block_idx.x
    s = ptxpy.shared_array(128, f32)
    given = ptxpy.shared_array(32, f32)
    s[t] = x[b * 128 + t]
    s[t + 32] = x[b * 128 + t + 32]
    s[t + 64] = x[b * 128 + t + 64]
    s[t + 96] = x[b * 128 + t + 96]
    ptxpy.cluster_sync()
    peer = ptxpy.map_shared_rank(s, ptxpy.cluster_rank() ^ 1)
    a0, a1, a2, a3 = peer[4 * t:4 * t + 4]
    other = ptxpy.map_shared_rank(given, ptxpy.cluster_rank() ^ 1)
    other[t] = a0 + a1 + a2 + a3
    ptxpy.cluster_sync()
    out[b * 32 + t] = given[t]
"""

# a view of the block's own shared memory names the same bytes as the array
OWN = HEADER + """
@ptxpy.jit
def own(out: Array[f32, 1]):
    s = ptxpy.shared_array(1, f32)
    me = ptxpy.map_shared_rank(s, ptxpy.cluster_rank())
    if ptxpy.thread_idx.x == 0:
        s[0] = 1.0
        first = me[0]
        s[0] = 7.0
        second = me[0]
        me[0] = 9.0
        out[ptxpy.block_idx.x * 3] = first
        out[ptxpy.block_idx.x * 3 + 1] = second
        out[ptxpy.block_idx.x * 3 + 2] = s[0]
    ptxpy.cluster_sync()
"""


def rng_values(n: int, seed: int = 0) -> np.ndarray:
    """Small integers as f32: every sum of them is exact, in any order."""
    return np.random.default_rng(seed).integers(-50, 50, n).astype(np.float32)


def test_a_block_reads_its_partner_s_shared_memory():
    x = rng_values(256)
    (out,) = run(SWAP, "swap", [x, Out(256, np.float32)], 4, 64, archs=SM90, cluster=(2, 1, 1))
    expected = x.reshape(2, 2, 64)[:, ::-1, ::-1].reshape(256)
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("cluster", [2, 4, 8])
def test_atomics_into_rank_0_s_shared_memory(cluster):
    x = rng_values(128 * 8, seed=cluster)
    (out,) = run(ATOMIC_SUM, "atomic_sum", [x, Out(8 // cluster, np.float32)], 8, 128,
                 archs=SM90, cluster=(cluster, 1, 1))
    np.testing.assert_array_equal(out, x.reshape(8 // cluster, -1).sum(axis=1))


@pytest.mark.parametrize("cluster", [(2, 1, 1), (4, 1, 1)])
def test_rank_0_adds_the_blocks_partial_sums(cluster):
    x = rng_values(128 * 8, seed=7)
    n = 8 // cluster[0]
    (out,) = run(PARTIAL_SUMS, "partial_sums", [x, Out(n, np.float32)], 8, 128, archs=SM90,
                 cluster=cluster)
    np.testing.assert_array_equal(out, x.reshape(n, -1).sum(axis=1))


def test_the_cluster_s_registers_in_a_2d_grid():
    grid, cluster = (4, 2, 1), (2, 2, 1)
    (out,) = run(REGISTERS, "registers", [Out((8, 4, 2), np.int32)], grid, 32, archs=SM90,
                 cluster=cluster)
    by, bx = np.divmod(np.arange(8), 4)
    cx, cy = bx % 2, by % 2
    expected = np.stack([np.stack([cy * 2 + cx, np.full(8, 4)], 1),
                         np.stack([bx // 2, by // 2], 1),
                         np.stack([cx, cy], 1),
                         np.stack([np.full(8, 2), np.full(8, 2)], 1)], 1)
    np.testing.assert_array_equal(out, expected)


def test_without_a_cluster_each_block_is_a_cluster_of_one():
    (out,) = run(REGISTERS, "registers", [Out((8, 4, 2), np.int32)], (4, 2, 1), 32, archs=SM90)
    by, bx = np.divmod(np.arange(8), 4)
    ones, zeros = np.ones(8), np.zeros(8)
    expected = np.stack([np.stack([zeros, ones], 1), np.stack([bx, by], 1),
                         np.stack([zeros, zeros], 1), np.stack([ones, ones], 1)], 1)
    np.testing.assert_array_equal(out, expected)


def test_arrive_and_wait_apart():
    x = rng_values(32 * 8, seed=3)
    out, twice = run(SPLIT, "split", [x, Out(256, np.float32), Out(256, np.float32)], 8, 32,
                     archs=SM90, cluster=(4, 1, 1))
    blocks = x.reshape(2, 4, 32)
    np.testing.assert_array_equal(out, np.roll(blocks, -1, axis=1).reshape(256))
    np.testing.assert_array_equal(twice, 2 * x)


def test_vector_loads_from_and_stores_into_a_partner():
    x = rng_values(128 * 4, seed=5)
    (out,) = run(VECTORS, "vectors", [x, Out(128, np.float32)], 4, 32, archs=SM90,
                 cluster=(2, 1, 1))
    # block b ^ 1 reads block b's floats, sums them and stores the sums back into block b
    np.testing.assert_array_equal(out, x.reshape(128, 4).sum(axis=1))


def test_a_view_of_the_own_block_is_the_same_memory():
    (out,) = run(OWN, "own", [Out(6, np.float32)], 2, 32, archs=SM90, cluster=(2, 1, 1))
    np.testing.assert_array_equal(out, [1, 7, 9, 1, 7, 9])


@needs_ptxas
def test_the_ptx():
    ptx = compile_source(SWAP, "swap", cluster=(2, 1, 1)).ptx
    head = ptx[ptx.index(".visible .entry"):]
    assert head[head.index(")\n") + 2:head.index("{")].split() == [".reqnctapercluster", "2,",
                                                                    "1,", "1"]
    for line in ("barrier.cluster.arrive;", "barrier.cluster.wait;", "mov.u32 %r3, %cluster_ctarank;",
                 "mapa.shared::cluster.u32", "ld.shared::cluster.f32"):
        assert line in ptx
    assert "red.shared::cluster.add.f32" in compile_source(ATOMIC_SUM, "atomic_sum").ptx
    assert "ld.shared::cluster.v4.f32" in compile_source(VECTORS, "vectors").ptx


@pytest.mark.skipif(ON_GPU, reason="the simulator's checks")
def test_a_rank_outside_the_cluster_stops_under_debug():
    with pytest.raises(SimulatorError, match=r"kernels.py:12: ptxpy.map_shared_rank: rank 2 is "
                                             r"not a block of the cluster, which has 2"):
        run(SWAP.replace("ptxpy.cluster_rank() ^ 1", "2"), "swap",
            [np.zeros(256, np.float32), Out(256, np.float32)], 4, 64, archs=SM90,
            cluster=(2, 1, 1), debug=True)


@pytest.mark.parametrize("body, message", [
    ("peer = ptxpy.map_shared_rank(x, 0)\n    out[0] = peer[0]",
     "ptxpy.map_shared_rank maps a shared array \\(ptxpy.shared_array\\); 'x' is an array "
     "parameter, in global memory"),
    ("out[0] = ptxpy.map_shared_rank(s, 0)[0]",
     r"ptxpy.map_shared_rank\(\) must be assigned to a variable"),
    ("peer = ptxpy.map_shared_rank(s, 0)\n    peer = ptxpy.map_shared_rank(t, 1)",
     "'peer' maps 's'; it cannot map another array \\('t'\\)"),
    ("peer = ptxpy.map_shared_rank(s, 0.5)", "the rank of ptxpy.map_shared_rank must be an "
                                             "integer, got f32"),
    ("peer = ptxpy.map_shared_rank(s, 0)\n    again = ptxpy.map_shared_rank(peer, 1)",
     "ptxpy.map_shared_rank takes a shared array"),
    ("k = 1\n    k = ptxpy.map_shared_rank(s, 0)", "'k' is a scalar variable"),
])
def test_misuses_of_map_shared_rank(body, message):
    source = HEADER + f"""
@ptxpy.jit
def bad(x: Array[f32, 1], out: Array[f32, 1]):
    s = ptxpy.shared_array(4, f32)
    t = ptxpy.shared_array(4, f32)
    {body}
"""
    with pytest.raises(CompileError, match=message):
        compile_source(source, "bad")


@pytest.mark.parametrize("name", ["cluster_sync()", "cluster_rank()", "cluster_dim.x"])
def test_clusters_on_sm_80_are_an_error(name):
    source = HEADER + f"""
@ptxpy.jit
def old(out: Array[i32, 1]):
    out[0] = 1
    ptxpy.{name}
"""
    with pytest.raises(CompileError, match=r"kernels.py:8:5: error: ptxpy\.cluster_[\w.]+ needs "
                                           r"sm_90 or newer \(thread-block clusters\); the "
                                           r"target is sm_80"):
        compile_source(source, "old", arch="sm_80")
    with pytest.raises(CompileError, match=r"kernel 'swap' has a cluster of \(2, 1, 1\), which "
                                           r"needs sm_90 or newer; the target is sm_80"):
        compile_source(SWAP, "swap", arch="sm_80", cluster=(2, 1, 1))


# --- the decorator, ptxpy.transpile, the command line -------------------------------------------

@ptxpy.jit(out_shape=lambda x: x, grid=lambda x: (x.shape[0] // 64,), block=64, cluster=2)
def swapped(x: Array[f32, 1], out: Array[f32, 1]):
    t = ptxpy.thread_idx.x
    b = ptxpy.block_idx.x
    s = ptxpy.shared_array(64, f32)
    s[t] = x[b * 64 + t]
    ptxpy.cluster_sync()
    peer = ptxpy.map_shared_rank(s, ptxpy.cluster_rank() ^ 1)
    out[b * 64 + t] = peer[63 - t]
    ptxpy.cluster_sync()


def test_the_decorator_eager_and_under_jit():
    x = jnp.arange(512, dtype=jnp.float32)
    expected = np.arange(512, dtype=np.float32).reshape(4, 2, 64)[:, ::-1, ::-1].reshape(512)
    np.testing.assert_array_equal(np.asarray(swapped(x)), expected)
    np.testing.assert_array_equal(np.asarray(jax.jit(lambda v: swapped(v) + 1)(x)), expected + 1)
    assert ".reqnctapercluster 2, 1, 1" in swapped.ptx(x)


def test_a_grid_of_part_of_a_cluster_is_an_error_before_launch():
    with pytest.raises(ValueError, match=r"kernel 'swapped': grid \(3, 1, 1\) is not a whole "
                                         r"number of clusters of \(2, 1, 1\) blocks"):
        swapped(jnp.zeros(192, jnp.float32))


@pytest.mark.parametrize("cluster, shown", [
    (0, "0"), (9, "9"), ((4, 4), r"\(4, 4\)"), ((2, 1, 1, 1), r"\(2, 1, 1, 1\)"), ("2", "'2'"),
    (2.0, "2.0"), (True, "True"), ((), r"\(\)"),
])
def test_bad_clusters_are_an_error_of_the_decorator(cluster, shown):
    with pytest.raises(ValueError, match=r"@ptxpy.jit of swapped: cluster must be blocks per "
                                         r"cluster, an int or a tuple of up to three positive "
                                         r"ints, 8 blocks at most in all, got " + shown):
        ptxpy.jit(swapped.fn, out_shape=lambda x: x, grid=1, block=64, cluster=cluster)
    with pytest.raises(ValueError, match="a cluster needs sm_90 or newer, arch is sm_80"):
        ptxpy.jit(swapped.fn, grid=1, block=64, cluster=2, arch="sm_80")


def test_numpy_integers_and_lists_are_clusters():
    kernel = ptxpy.jit(swapped.fn, out_shape=lambda x: x, grid=2, block=64,
                       cluster=[np.int64(2), 1])
    assert kernel.cluster == (2, 1, 1)


def test_transpile_takes_the_cluster_and_reads_the_decorator_s():
    source = SWAP.replace("@ptxpy.jit", "@ptxpy.jit(cluster=(2, 1))")
    assert ".reqnctapercluster 2, 1, 1" in ptxpy.transpile(source)["swap"]
    assert ".reqnctapercluster 2, 2, 1" in ptxpy.transpile(source, cluster=(2, 2))["swap"]
    assert ".reqnctapercluster 4, 1, 1" in ptxpy.transpile(SWAP, cluster=4)["swap"]
    with pytest.raises(ValueError, match="transpile: cluster must be"):
        ptxpy.transpile(SWAP, cluster=(3, 3))
    with pytest.raises(CompileError, match=r"<string>:5:20: error: @ptxpy.jit: cluster must be "
                                           r"blocks per cluster"):
        ptxpy.transpile(SWAP.replace("@ptxpy.jit", "@ptxpy.jit(cluster=16)"))


def test_the_command_line_takes_the_cluster(tmp_path, capsys):
    path = tmp_path / "k.py"
    path.write_text(SWAP.replace("@ptxpy.jit", "@ptxpy.jit(cluster=2)"))
    assert main(["transpile", str(path)]) == 0
    assert ".reqnctapercluster 2, 1, 1" in (tmp_path / "swap.ptx").read_text()
    assert main(["transpile", str(path), "--cluster", "2,2"]) == 0
    assert ".reqnctapercluster 2, 2, 1" in (tmp_path / "swap.ptx").read_text()
    capsys.readouterr()
    assert main(["transpile", str(path), "--cluster", "two"]) == 2
    assert "--cluster expects integers X[,Y[,Z]], got 'two'" in capsys.readouterr().err
    assert main(["transpile", str(path), "--cluster", "4,4"]) == 2
    assert "--cluster must be blocks per cluster" in capsys.readouterr().err


# --- multicast copies and other blocks' mbarriers -----------------------------------------------

# each block of a pair copies one half of x's 16 x 32 tile into both blocks (a tensor copy and a
# bulk copy, multicast), and each writes out the whole tile; then the blocks hand a barrier
# phase to each other: each arrives on its own barrier and on the other's, of count 2
MULTICAST = HEADER.replace("f32, i32", "f32, i32, u64") + """
@ptxpy.jit
def multicast(x: Array[f32, 2], out: Array[f32, 2], flat: Array[f32, 1]):
    tile = ptxpy.shared_array((2, 8, 32), f32)
    row = ptxpy.shared_array(64, f32)
    bar = ptxpy.shared_array(3, u64)
    t = ptxpy.thread_idx.x
    r = ptxpy.cluster_rank()
    if t == 0:
        ptxpy.mbarrier_init(bar[0], 1)
        ptxpy.mbarrier_init(bar[1], 2)
        ptxpy.mbarrier_init(bar[2], 1)
    ptxpy.fence_mbarrier_init()
    ptxpy.cluster_sync()
    if t == 0:
        ptxpy.mbarrier_arrive_expect_tx(bar[0], 16 * 32 * 4)
        ptxpy.mbarrier_arrive_expect_tx(bar[2], 64 * 4)
        if r == 0:
            ptxpy.tma_load(tile[0], x[0:8, 0:32], bar[0], multicast=0b11)
            ptxpy.cp_async_bulk(row[0:32], x[0, 0:32], bar[2], multicast=3)
        else:
            ptxpy.tma_load(tile[1], x[8:16, 0:32], bar[0], multicast=0b11)
            ptxpy.cp_async_bulk(row[32:64], x[15, 0:32], bar[2], multicast=3)
    ptxpy.mbarrier_wait(bar[0], 0)
    ptxpy.mbarrier_wait(bar[2], 0)
    b = ptxpy.block_idx.x
    for i in range(t, 512, 64):
        out[b * 16 + i // 32, i % 32] = tile[i // 256, (i // 32) % 8, i % 32]
    flat[b * 64 + t] = row[t]
    ptxpy.syncthreads()
    if t == 0:
        theirs = ptxpy.map_shared_rank(bar, r ^ 1)
        ptxpy.mbarrier_arrive(theirs[1])
        ptxpy.mbarrier_arrive(bar[1])
    ptxpy.mbarrier_wait(bar[1], 0)
    ptxpy.cluster_sync()
"""


def test_multicast_copies_land_in_both_blocks():
    x = rng_values(16 * 32, seed=11).reshape(16, 32)
    out, flat = run(MULTICAST, "multicast", [x, Out((32, 32), np.float32), Out(128, np.float32)],
                    2, 64, archs=SM90, cluster=(2, 1, 1))
    np.testing.assert_array_equal(out, np.concatenate([x, x]))
    np.testing.assert_array_equal(flat, np.concatenate([x[0], x[15], x[0], x[15]]))


@needs_ptxas
def test_the_ptx_of_multicast_and_of_another_block_s_barrier():
    ptx = compile_source(MULTICAST, "multicast", cluster=(2, 1, 1)).ptx
    for text in ("fence.mbarrier_init.release.cluster;",
                 "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 ".multicast::cluster [smem_tile], [", "], [smem_bar], %rs",
                 "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster",
                 "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%r"):
        assert text in ptx, text


@pytest.mark.parametrize("call, message", [
    ("ptxpy.tma_load(tile, x[0:8, 0:32], bar[0], multicast=0)",
     r"multicast= of ptxpy.tma_load names blocks 0 to 15 of the cluster, one bit each: 1 to "
     r"0xffff, got 0"),
    ("ptxpy.tma_load(tile, x[0:8, 0:32], bar[0], multicast=0x10000)", "got 65536"),
    ("ptxpy.tma_load(tile, x[0:8, 0:32], bar[0], multicast=1.0)",
     "multicast= of ptxpy.tma_load is an integer, one bit per block of the cluster, got '1.0'"),
    ("ptxpy.cp_async_bulk(x[0, 0:32], tile[0, 0:32], multicast=3)",
     "multicast= of ptxpy.cp_async_bulk needs the barrier: only copies into shared memory are "
     "multicast"),
    ("theirs = ptxpy.map_shared_rank(bar, 1)\n    ptxpy.mbarrier_init(theirs[0], 1)",
     "an mbarrier lives in shared memory: its barrier 'theirs' is in shared::cluster memory"),
    ("theirs = ptxpy.map_shared_rank(bar, 1)\n    ptxpy.mbarrier_wait(theirs[0], 0)",
     "its barrier 'theirs' is in shared::cluster memory"),
])
def test_misuses_of_multicast_and_of_another_block_s_barrier(call, message):
    source = HEADER.replace("f32, i32", "f32, i32, u64") + f"""
@ptxpy.jit
def bad(x: Array[f32, 2]):
    tile = ptxpy.shared_array((8, 32), f32)
    bar = ptxpy.shared_array(2, u64)
    {call}
"""
    with pytest.raises(CompileError, match=message):
        compile_source(source, "bad")


def test_fence_mbarrier_init_on_sm_80_is_an_error():
    source = HEADER + """
@ptxpy.jit
def old(out: Array[i32, 1]):
    ptxpy.fence_mbarrier_init()
"""
    with pytest.raises(CompileError, match=r"ptxpy.fence_mbarrier_init needs sm_90 or newer"):
        compile_source(source, "old", arch="sm_80")


# --- elect.sync ---------------------------------------------------------------------------------

ELECT = HEADER + """
@ptxpy.jit
def elect(out: Array[i32, 1]):
    t = ptxpy.thread_idx.x
    if ptxpy.elect_one():
        ptxpy.atomic_add(out, t // 32, t + 1)
"""


@pytest.mark.parametrize("block", [64, 50])
def test_elect_one_picks_the_lowest_lane_present(block):
    (out,) = run(ELECT, "elect", [Out(2, np.int32)], 1, block, archs=SM90)
    np.testing.assert_array_equal(out, [1, 33])


@needs_ptxas
def test_the_ptx_of_elect_one():
    ptx = compile_source(ELECT, "elect").ptx
    assert re.search(r"elect\.sync %r\d+\|%p\d+, %r\d+;", ptx), ptx
    with pytest.raises(CompileError, match="ptxpy.elect_one needs sm_90 or newer"):
        compile_source(ELECT, "elect", arch="sm_80")
    with pytest.raises(CompileError, match="ptxpy.elect_one takes no member mask"):
        compile_source(ELECT.replace("elect_one()", "elect_one(0xffffffff)"), "elect")
