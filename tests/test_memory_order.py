"""Memory-ordered accesses (`ptxpy.load_acquire`, `load_relaxed`, `store_release`,
`store_relaxed`) and atomics given an order (`sem=`, `scope=`), end to end: the exact PTX of
each form (assembled by ptxas for sm_80 and sm_90), the default atomics' PTX unchanged, the
fences around the atomics ptxpy writes as several instructions, that no pass caches, merges,
moves or drops them (a spin loop polls memory each iteration), no read-only path for an array
they read, and kernels whose blocks talk through flags, status words and a lock, run in the
simulator against NumPy (and on the GPU: the tests marked `gpu` skip without one); the IR
interpreter, the verifier and `--emit ssa`; the errors.
"""
import os
import re

import numpy as np
import pytest

from kernel_harness import Out, assemble_all, compile_source, run
from ptxpy.cli import main
from ptxpy.runtime.ptx_parser import SimulatorError
from ptxpy.transpiler import driver, interp, ir
from ptxpy.transpiler.cfg import dom_tree, natural_loops
from ptxpy.transpiler.errors import CompileError
from ptxpy.transpiler.passes import PIPELINE
from ptxpy.transpiler.ssa_builder import build_function
from ptxpy.transpiler.verify import IRError, verify
from ptxpy.types import bool_, i32, i64

HEADER = """
import ptxpy
from ptxpy import Array, bf16, f16, f32, f64, i8, i16, i32, i64, u8, u16, u32, u64
"""
SCOPES = ("cta", "cluster", "gpu", "sys")
SEMS = ("relaxed", "acquire", "release", "acq_rel")
TYPES = ("i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64", "f16", "bf16", "f32", "f64")
MEM = {"i8": "s8", "u8": "u8", "i16": "s16", "u16": "u16", "i32": "s32", "u32": "u32",
       "i64": "s64", "u64": "u64", "f16": "b16", "bf16": "b16", "f32": "f32", "f64": "f64"}
NUMPY = {"i8": np.int8, "u8": np.uint8, "i16": np.int16, "u16": np.uint16, "i32": np.int32,
         "u32": np.uint32, "i64": np.int64, "u64": np.uint64, "f16": np.float16,
         "f32": np.float32, "f64": np.float64}
SM90 = ("sm_90",)
ON_GPU = os.environ.get("PTXPY_TEST_DEVICE") == "gpu"
rng = np.random.default_rng(2718)


@pytest.fixture(params=["simulator", pytest.param("gpu", marks=pytest.mark.gpu)])
def device(request, monkeypatch):
    """Where `run` launches: the simulator, or the GPU (the test skips without one)."""
    if request.param == "gpu":
        monkeypatch.setenv("PTXPY_TEST_DEVICE", "gpu")
    else:
        monkeypatch.delenv("PTXPY_TEST_DEVICE", raising=False)
    return request.param


def src(body: str) -> str:
    return HEADER + body


def body_items(ptx: str) -> list:
    """The kernel body in order: labels (`$BB3:`) and instructions (`ld.acquire... ;`), without
    comments and `.loc`."""
    items = []
    for text in ptx[ptx.index("{"):].splitlines():
        text = text.strip()
        if not text or text.startswith(("//", ".loc", ".reg", ".shared", ".local", "{", "}")):
            continue
        items.append(text)
    return items


def opcode(text: str) -> str:
    """The opcode of an instruction, without its guard: `bra`, `ld.acquire.gpu.global.s32`."""
    return re.sub(r"^@!?%p\d+\s+", "", text).split()[0].rstrip(";")


def opcodes(ptx: str) -> list:
    return [opcode(t) for t in body_items(ptx) if not t.endswith(":")]


def loops(items: list) -> list:
    """(label index, branch index) of each backward branch among `items`."""
    labels = {t[:-1]: k for k, t in enumerate(items) if t.endswith(":")}
    found = []
    for k, text in enumerate(items):
        target = re.match(r"^(?:@!?%p\d+\s+)?bra(?:\.uni)?\s+(\$\w+);", text)
        if target and labels.get(target.group(1), k + 1) < k:
            found.append((labels[target.group(1)], k))
    return found


def compile_all(source: str, name: str, archs=("sm_80", "sm_90"), **kw) -> dict:
    """{arch: ptx}, each assembled by ptxas where it is installed."""
    kernels = {arch: compile_source(source, name, arch=arch, **kw) for arch in archs}
    assemble_all(source, name, compiled=kernels, archs=archs, **kw)
    return {arch: kernel.ptx for arch, kernel in kernels.items()}


# --- the PTX of each access -------------------------------------------------------------------

ACCESSES = """
@ptxpy.jit
def k(x: Array[{t}], out: Array[{t}]):
    t = ptxpy.thread_idx.x
    s = ptxpy.shared_array(64, {t})
    s[t] = x[t]
    ptxpy.syncthreads()
    a = ptxpy.load_acquire({a}, t{scope})
    b = ptxpy.load_relaxed({a}, t ^ 1{scope})
    ptxpy.store_release({a}, t ^ 2, a{scope})
    ptxpy.store_relaxed({a}, t ^ 3, b{scope})
    out[t] = a + b
"""


def ordered_opcodes(ptx: str) -> list:
    return [op for op in opcodes(ptx) if re.match(r"(ld|st|atom|red|fence)\.(relaxed|acquire|"
                                                  r"release|acq_rel)\.", op)]


@pytest.mark.parametrize("t", TYPES)
@pytest.mark.parametrize("space", ["global", "shared"])
def test_each_access_of_every_type_is_one_instruction(t, space):
    source = src(ACCESSES.format(t=t, a="x" if space == "global" else "s", scope=""))
    for ptx in compile_all(source, "k").values():
        assert ordered_opcodes(ptx) == [f"ld.acquire.gpu.{space}.{MEM[t]}",
                                        f"ld.relaxed.gpu.{space}.{MEM[t]}",
                                        f"st.release.gpu.{space}.{MEM[t]}",
                                        f"st.relaxed.gpu.{space}.{MEM[t]}"]
        assert f"ld.global.nc.{MEM[t]}" in ptx or space == "global"


@pytest.mark.parametrize("scope", SCOPES)
@pytest.mark.parametrize("space", ["global", "shared"])
def test_each_scope(scope, space):
    source = src(ACCESSES.format(t="u32", a="x" if space == "global" else "s",
                                 scope=f', scope="{scope}"'))
    archs = SM90 if scope == "cluster" else ("sm_80", "sm_90")
    for ptx in compile_all(source, "k", archs=archs).values():
        assert ordered_opcodes(ptx) == [f"ld.acquire.{scope}.{space}.u32",
                                        f"ld.relaxed.{scope}.{space}.u32",
                                        f"st.release.{scope}.{space}.u32",
                                        f"st.relaxed.{scope}.{space}.u32"]


def test_the_shared_memory_of_another_block_of_the_cluster():
    source = src("""
@ptxpy.jit
def k(out: Array[i32]):
    t = ptxpy.thread_idx.x
    s = ptxpy.shared_array(64, i32)
    peer = ptxpy.map_shared_rank(s, ptxpy.cluster_rank() ^ 1)
    ptxpy.store_release(peer, t, t, scope="cluster")
    out[t] = ptxpy.load_acquire(peer, t ^ 1, scope="cluster")
    ptxpy.atomic_add(peer, 0, 1, sem="release", scope="cluster")
""")
    ptx = compile_all(source, "k", archs=SM90)["sm_90"]
    assert ordered_opcodes(ptx) == ["st.release.cluster.shared::cluster.s32",
                                    "ld.acquire.cluster.shared::cluster.s32",
                                    "red.release.cluster.shared::cluster.add.u32"]


VALUES = """
@ptxpy.jit
def k(x: Array[{t}], out: Array[{t}], swapped: Array[{t}], shared: Array[{t}]):
    t = ptxpy.thread_idx.x
    s = ptxpy.shared_array(64, {t})
    ptxpy.store_relaxed(s, t, x[t], scope="cta")
    ptxpy.syncthreads()
    ptxpy.store_release(out, t, ptxpy.load_acquire(x, t))
    ptxpy.store_relaxed(swapped, t, ptxpy.load_relaxed(x, t ^ 1, scope="sys"), scope="sys")
    ptxpy.store_release(shared, t, ptxpy.load_acquire(s, 63 - t, scope="cta"), scope="cta")
"""


@pytest.mark.parametrize("t", [t for t in TYPES if t != "bf16"])
def test_every_type_moves_its_bits(device, t):
    """The simulator (and the GPU) run every form: the element comes back whole."""
    x = rng.integers(-100, 100, 64).astype(NUMPY[t])
    out, swapped, shared = run(src(VALUES.format(t=t)), "k",
                               [x] + [Out(64, NUMPY[t]) for _ in range(3)], 1, 64)
    np.testing.assert_array_equal(out, x)
    np.testing.assert_array_equal(swapped, x[np.arange(64) ^ 1])
    np.testing.assert_array_equal(shared, x[::-1])


# --- atomics given an order -------------------------------------------------------------------

ATOMIC = """
@ptxpy.jit
def k(x: Array[{t}], v: {t}, out: Array[{t}]):
    t = ptxpy.thread_idx.x
    s = ptxpy.shared_array(64, {t})
    {call}
"""


def atomic_ptx(call: str, t: str = "u32", archs=("sm_80", "sm_90")) -> dict:
    return compile_all(src(ATOMIC.format(t=t, call=call)), "k", archs=archs)


@pytest.mark.parametrize("sem", SEMS)
@pytest.mark.parametrize("scope", SCOPES)
@pytest.mark.parametrize("space", ["global", "shared"])
def test_an_atomic_takes_its_order_as_qualifiers(sem, scope, space):
    """`red` where the old value is unused, but only for relaxed and release (PTX's `red` has
    no acquire); no qualifier for relaxed at gpu scope, PTX's default."""
    target = "x" if space == "global" else "s"
    order = "" if (sem, scope) == ("relaxed", "gpu") else f".{sem}.{scope}"
    keywords = f'sem="{sem}", scope="{scope}"'
    archs = SM90 if scope == "cluster" else ("sm_80", "sm_90")
    unused = atomic_ptx(f"ptxpy.atomic_add({target}, t, v, {keywords})", archs=archs)
    used = atomic_ptx(f"out[t] = ptxpy.atomic_add({target}, t, v, {keywords})", archs=archs)
    red = "red" if sem in ("relaxed", "release") else "atom"
    for arch in archs:
        assert [op for op in opcodes(unused[arch]) if op.startswith(("atom", "red", "fence"))] == [
            f"{red}{order}.{space}.add.u32"]
        assert [op for op in opcodes(used[arch]) if op.startswith(("atom", "red", "fence"))] == [
            f"atom{order}.{space}.add.u32"]


@pytest.mark.parametrize("call, t, instruction", [
    ("ptxpy.atomic_sub(x, t, v, {})", "i32", "red{}.global.add.u32"),
    ("ptxpy.atomic_min(x, t, v, {})", "i32", "red{}.global.min.s32"),
    ("ptxpy.atomic_and(x, t, v, {})", "u64", "red{}.global.and.b64"),
    ("ptxpy.atomic_or(s, t, v, {})", "i32", "red{}.shared.or.b32"),
    ("ptxpy.atomic_xor(x, t, v, {})", "u32", "red{}.global.xor.b32"),
    ("ptxpy.atomic_exch(x, t, v, {})", "f32", "atom{}.global.exch.b32"),
    ("ptxpy.atomic_cas(x, t, v, v, {})", "f64", "atom{}.global.cas.b64"),
    ("ptxpy.atomic_add(x, t, v, {})", "f32", "red{}.global.add.f32"),
    ("ptxpy.atomic_add(x, t, v, {})", "f16", "red{}.global.add.noftz.f16"),
])
def test_each_native_atomic_with_an_order(call, t, instruction):
    for keywords, order in (('sem="release", scope="sys"', ".release.sys"),
                            ('scope="cta"', ".relaxed.cta"), ("", "")):
        ptx = atomic_ptx(call.format(keywords), t)
        for text in ptx.values():
            ops = [op for op in opcodes(text) if op.startswith(("atom", "red", "fence"))]
            assert ops == [instruction.format(order)], ops


def test_bf16_atomic_add_is_native_on_sm_90_and_a_fenced_loop_before():
    ptx = atomic_ptx('ptxpy.atomic_add(x, t, v, sem="acq_rel")', "bf16")
    assert [op for op in opcodes(ptx["sm_90"]) if op.startswith(("atom", "red", "fence"))] == [
        "atom.acq_rel.gpu.global.add.noftz.bf16"]
    assert [op for op in opcodes(ptx["sm_80"]) if op.startswith(("atom", "red", "fence"))] == [
        "fence.acq_rel.gpu", "atom.global.cas.b16", "fence.acq_rel.gpu"]


DEFAULTS = [
    ("ptxpy.atomic_add(x, t, v)", "u32"), ("out[t] = ptxpy.atomic_add(x, t, v)", "u32"),
    ("ptxpy.atomic_add(s, t, v)", "i32"), ("ptxpy.atomic_exch(s, t, v)", "f32"),
    ("out[t] = ptxpy.atomic_cas(x, t, v, v)", "i64"), ("ptxpy.atomic_max(x, t, v)", "f32"),
    ("out[t] = ptxpy.atomic_min(s, t, v)", "f64"), ("ptxpy.atomic_max(x, t, v)", "f16"),
    ("ptxpy.atomic_add(s, t, v)", "f16"), ("out[t] = ptxpy.atomic_add(s, t, v)", "u64"),
    ("ptxpy.atomic_add(x, t, v)", "bf16"), ("out[t] = ptxpy.atomic_sub(x, t, v)", "f64"),
]


@pytest.mark.parametrize("call, t", DEFAULTS)
def test_default_atomics_are_what_they_were(call, t):
    """No keyword, or the defaults named: the same instructions, none with a qualifier or a
    fence."""
    plain = atomic_ptx(call, t)
    named = atomic_ptx(call.replace(")", ', sem="relaxed", scope="gpu")'), t)
    for arch, ptx in plain.items():
        assert [i for i in body_items(ptx)] == [i for i in body_items(named[arch])]
        assert not re.search(r"\.(relaxed|acquire|release|acq_rel)\b|fence\.", ptx)


def test_the_default_atomics_exact_instructions():
    found = {call: sorted({op for op in opcodes(atomic_ptx(call, t)["sm_90"])
                           if op.startswith(("atom", "red"))}) for call, t in DEFAULTS[:6]}
    assert found == {"ptxpy.atomic_add(x, t, v)": ["red.global.add.u32"],
                     "out[t] = ptxpy.atomic_add(x, t, v)": ["atom.global.add.u32"],
                     "ptxpy.atomic_add(s, t, v)": ["red.shared.add.u32"],
                     "ptxpy.atomic_exch(s, t, v)": ["atom.shared.exch.b32"],
                     "out[t] = ptxpy.atomic_cas(x, t, v, v)": ["atom.global.cas.b64"],
                     "ptxpy.atomic_max(x, t, v)": ["atom.global.cas.b32", "atom.global.max.s32",
                                                   "atom.global.min.u32", "red.global.max.s32",
                                                   "red.global.min.u32"]}


# --- fences around the atomics of several instructions ----------------------------------------

SEVERAL = [
    ("ptxpy.atomic_max(x, t, v, {})", "f16", "atom{}.global.cas.b16"),         # a loop
    ("ptxpy.atomic_min(s, t % 4, v, {})", "f64", "atom{}.shared.cas.b64"),     # a loop
    ("ptxpy.atomic_add(s, t % 4, v, {})", "f32", "atom{}.shared.cas.b32"),     # ptxas would spin
    ("ptxpy.atomic_add(s, t % 4, v, {})", "f16", "atom{}.shared.cas.b32"),     # on the word
    ("ptxpy.atomic_max(s, t % 4, v, {})", "u64", "atom{}.shared.cas.b64"),     # ptxas would spin
    ("ptxpy.atomic_max(x, t % 4, v, {})", "f32", None),                        # on the bits
]


@pytest.mark.parametrize("call, t, swap", SEVERAL)
@pytest.mark.parametrize("sem", SEMS)
@pytest.mark.parametrize("scope", ["cta", "gpu", "sys"])
def test_fences_order_an_atomic_of_several_instructions(call, t, swap, sem, scope):
    """`fence.acq_rel.<scope>` before the sequence (before the loop's first instruction) for a
    release, after it (after the loop's last branch) for an acquire; its atomics relaxed at
    the scope (no qualifier at gpu scope, PTX's default)."""
    fence = f"fence.acq_rel.{scope}"
    relaxed = "" if scope == "gpu" else f".relaxed.{scope}"
    for ptx in atomic_ptx("out[t] = " + call.format(f'sem="{sem}", scope="{scope}"'), t).values():
        items = [i for i in body_items(ptx)]
        ops = [opcode(i) if not i.endswith(":") else i for i in items]
        fences = [k for k, op in enumerate(ops) if op.startswith("fence")]
        atoms = [k for k, op in enumerate(ops) if op.startswith(("atom", "red"))]
        assert all(ops[k] == fence for k in fences)
        if swap is not None:
            assert {ops[k] for k in atoms} == {swap.format(relaxed)}
        else:   # the integer atomics on the bits, and the compare-and-swap of a stuck NaN
            assert {ops[k] for k in atoms} == {f"atom{relaxed}.global.{op}" for op in
                                               ("max.s32", "min.u32", "cas.b32")}
        before = [k for k in fences if k < atoms[0]]
        after = [k for k in fences if k > atoms[-1]]
        assert len(before) == (sem in ("release", "acq_rel")) and len(after) == (
            sem in ("acquire", "acq_rel")) and len(fences) == len(before) + len(after)
        for start, end in loops(items):
            if any(start < k < end for k in atoms):
                assert all(k < start for k in before) and all(k > end for k in after)
        if swap is not None:
            assert any(start < atoms[0] < end for start, end in loops(items))


ORDERED_ATOMICS = """
@ptxpy.jit
def k(x: Array[f16], y: Array[f64], big: Array[f16], small: Array[f64], twice: Array[f32]):
    t = ptxpy.thread_idx.x
    s = ptxpy.shared_array(1, f64)
    a = ptxpy.shared_array(1, f32)
    if t == 0:
        s[0] = 1e300
        a[0] = 0.0
    ptxpy.syncthreads()
    ptxpy.atomic_max(big, 0, x[t], sem="acq_rel")
    ptxpy.atomic_min(s, 0, y[t], sem="acquire", scope="cta")
    ptxpy.atomic_add(a, 0, f32(y[t]), sem="release", scope="cta")
    ptxpy.syncthreads()
    if t == 0:
        small[0] = s[0]
        twice[0] = a[0]
"""


def test_ordered_atomics_of_several_instructions_compute_what_the_default_does(device):
    x = rng.standard_normal(96).astype(np.float16)
    y = rng.integers(-1000, 1000, 96).astype(np.float64)
    big, small, total = run(src(ORDERED_ATOMICS), "k",
                            [x, y, Out(1, np.float16, -np.inf), Out(1, np.float64),
                             Out(1, np.float32)], 1, 96)
    assert big[0] == x.max() and small[0] == y.min() and total[0] == y.sum()


# --- the optimiser leaves them alone ----------------------------------------------------------

SPIN = """
@ptxpy.jit
def spin(flag: Array[i32], data: Array[f32], out: Array[f32]):
    t = ptxpy.thread_idx.x
    while ptxpy.load_acquire(flag, 0) == 0:
        pass
    while ptxpy.load_relaxed(flag, 4) != 1:
        ptxpy.nanosleep(20)
    a = ptxpy.load_relaxed(flag, 1)
    b = ptxpy.load_relaxed(flag, 1)
    ptxpy.load_acquire(flag, 2)
    ptxpy.store_relaxed(flag, 3, a)
    ptxpy.store_relaxed(flag, 3, b + 1)
    v = data[t]
    ptxpy.load_acquire(flag, 0)
    w = data[t]
    data[t] = v + w
    out[t] = f32(a + b)
"""


def census(func) -> dict:
    """{(op, sem): [blocks]} of the ordered accesses."""
    found = {}
    for block in func.blocks:
        for instr in block.instrs:
            if instr.op in ("ordered_load", "ordered_store"):
                found.setdefault((instr.op, instr.attrs["sem"]), []).append(block)
    return found


def test_no_pass_caches_merges_moves_or_drops_an_ordered_access():
    """Through the pipeline a pass at a time: each polling load stays in its loop, the two
    identical relaxed loads stay two (cse, memforward), the unused acquire stays (dce), the
    overwritten relaxed store stays (memforward), and the load of data after an acquire is not
    the one before it."""
    program = driver.parse(src(SPIN), "kernels.py")
    options = driver.Options("sm_90")
    kernel = driver.compile_kernel(program, "spin", options=options, stop_after="typed").typed
    func = build_function(kernel, options.arch, options.as_dict())
    for name, run_pass in [("built", lambda f: f)] + PIPELINE:
        func = run_pass(func)
        verify(func)
        found = census(func)
        assert {key: len(blocks) for key, blocks in found.items()} == {
            ("ordered_load", "acquire"): 3, ("ordered_load", "relaxed"): 3,
            ("ordered_store", "relaxed"): 2}, name
        in_loops = {block for loop in natural_loops(func, dom_tree(func)) for block in loop.blocks}
        polls = [(op, sem) for (op, sem), blocks in found.items() for block in blocks
                 if block in in_loops]
        assert sorted(polls) == [("ordered_load", "acquire"), ("ordered_load", "relaxed")], name
        assert sum(i.op == "load" for i in func.instrs()) == 2, name
    # the IR interpreter runs them as loads and stores
    flag = np.array([1, 5, 0, 0, 1], np.int32)
    data, out = np.ones(4, np.float32), np.zeros(4, np.float32)
    interp.run_function(func, {"flag": flag, "data": data, "out": out}, {"ntid.x": 4})
    assert flag.tolist() == [1, 5, 0, 6, 1] and out[0] == 10 and data[0] == 2


def test_a_spin_loop_reads_the_flag_on_every_iteration():
    items = body_items(compile_all(src(SPIN), "spin")["sm_90"])
    for poll in ("ld.acquire.gpu.global.s32", "ld.relaxed.gpu.global.s32"):
        k = next(k for k, text in enumerate(items) if opcode(text) == poll)
        assert any(start < k < end for start, end in loops(items)), poll
    ops = [opcode(t) for t in items]
    assert ops.count("ld.acquire.gpu.global.s32") == 3
    assert ops.count("ld.relaxed.gpu.global.s32") == 3
    assert ops.count("st.relaxed.gpu.global.s32") == 2
    assert ops.count("ld.global.f32") == 2 and "ld.global.nc.f32" not in ops


HANDOFF = """
@ptxpy.jit
def handoff(x: Array[f32], flag: Array[i32], out: Array[f32]):
    t = ptxpy.thread_idx.x
    if ptxpy.block_idx.x == {producer}:
        out[t] = x[t] * 2.0
        ptxpy.syncthreads()
        if t == 0:
            ptxpy.store_release(flag, 0, 1)
    else:
        if t == 0:
            while ptxpy.load_acquire(flag, 0) == 0:
                ptxpy.nanosleep(32)
        ptxpy.syncthreads()
        out[64 + t] = out[t] + x[t]
"""


@pytest.mark.parametrize("producer", [0, 1])
def test_a_block_reads_what_another_published_behind_a_flag(device, producer):
    """Block `producer` writes its data, then the flag (store_release); the other block polls
    the flag (load_acquire), then reads the data. With producer 1, block 0 spins first and the
    simulator must hand its turn over."""
    x = rng.integers(-50, 50, 64).astype(np.float32)
    flag, out = run(src(HANDOFF.format(producer=producer)), "handoff",
                    [x, Out(1, np.int32), Out(128, np.float32)], 2, 64)
    np.testing.assert_array_equal(out[:64], 2 * x)
    np.testing.assert_array_equal(out[64:], 3 * x)
    assert flag[0] == 1


CHAINED = """
@ptxpy.jit
def chained(x: Array[i32], ticket: Array[i32], flags: Array[i32], partial: Array[i32],
            out: Array[i32]):
    t = ptxpy.thread_idx.x
    mine = ptxpy.shared_array(1, i32)
    total = ptxpy.shared_array(1, i32)
    if t == 0:
        mine[0] = ptxpy.atomic_add(ticket, 0, 1)     # blocks take their tiles as they start
        total[0] = 0
    ptxpy.syncthreads()
    b = mine[0]
    ptxpy.atomic_add(total, 0, x[b * 64 + t])
    ptxpy.syncthreads()
    if t == 0:
        prefix = 0
        if b > 0:
            while ptxpy.load_acquire(flags, b - 1) == 0:
                pass
            prefix = partial[b - 1]
        partial[b] = prefix + total[0]
        ptxpy.store_release(flags, b, 1)
        out[b] = prefix + total[0]
"""


def test_a_chained_scan_of_block_sums(device):
    """Each block waits for the inclusive prefix of the block before it (published with
    store_release after a plain store of the value) and publishes its own."""
    blocks = 12
    x = rng.integers(-100, 100, 64 * blocks).astype(np.int32)
    ticket, flags, partial, out = run(src(CHAINED), "chained",
                                      [x] + [Out(n, np.int32) for n in (1, blocks, blocks, blocks)],
                                      blocks, 64)
    np.testing.assert_array_equal(out, np.cumsum(x.reshape(blocks, 64).sum(axis=1)))
    assert ticket[0] == blocks and (flags == 1).all()


STATUS = """
@ptxpy.jit
def status(x: Array[i32], words: Array[u64], out: Array[i32]):
    b = ptxpy.block_idx.x
    if ptxpy.thread_idx.x == 0:
        prefix = 0
        if b > 0:
            word = ptxpy.load_relaxed(words, b - 1)
            while word >> 32 == 0:
                word = ptxpy.load_relaxed(words, b - 1)
            prefix = i32(word & 0xFFFFFFFF)
        total = prefix + x[b]
        ptxpy.store_relaxed(words, b, u64(1) << 32 | u64(u32(total)))
        out[b] = total
"""


def test_status_words_with_the_flag_and_the_value_in_one_element(device):
    """Relaxed accesses suffice where the flag and the value are one element, as the status
    words of a decoupled look-back."""
    x = rng.integers(-1000, 1000, 16).astype(np.int32)
    words, out = run(src(STATUS), "status", [x, Out(16, np.uint64), Out(16, np.int32)], 16, 32)
    np.testing.assert_array_equal(out, np.cumsum(x))
    np.testing.assert_array_equal(words >> np.uint64(32), np.ones(16))


LOCK = """
@ptxpy.jit
def locked(x: Array[i32], lock: Array[i32], total: Array[i32], order: Array[i32]):
    b = ptxpy.block_idx.x
    if ptxpy.thread_idx.x == 0:
        while ptxpy.atomic_cas(lock, 0, 0, 1, sem="acquire") != 0:
            ptxpy.nanosleep(16)
        seen = total[1]            # plain reads and writes, inside the lock
        total[0] = total[0] + x[b]
        total[1] = seen + 1
        order[b] = seen
        ptxpy.atomic_exch(lock, 0, 0, sem="release")
"""


def test_a_lock_taken_with_an_acquire_and_left_with_a_release(device):
    x = rng.integers(-1000, 1000, 24).astype(np.int32)
    lock, total, order = run(src(LOCK), "locked", [x, Out(1, np.int32), Out(2, np.int32),
                                                  Out(24, np.int32)], 24, 32)
    assert total.tolist() == [x.sum(), 24] and lock[0] == 0
    assert sorted(order.tolist()) == list(range(24))
    ptx = compile_source(src(LOCK), "locked").ptx
    assert "atom.acquire.gpu.global.cas.b32" in ptx and "atom.release.gpu.global.exch.b32" in ptx


WARPS = """
@ptxpy.jit
def warps(x: Array[f32], out: Array[f32]):
    t = ptxpy.thread_idx.x
    s = ptxpy.shared_array(32, f32)
    flag = ptxpy.shared_array(1, i32)
    if t == 0:
        flag[0] = 0
    ptxpy.syncthreads()
    if t < 32:
        s[t] = x[t] * 2.0
        ptxpy.syncwarp()
        if t == 0:
            ptxpy.store_release(flag, 0, 1, scope="cta")
    else:
        while ptxpy.load_acquire(flag, 0, scope="cta") == 0:
            pass
        out[t - 32] = s[t - 32] + 1.0
"""


def test_a_warp_waits_for_another_through_shared_memory(device):
    """Under the simulator's race check, which follows release and acquire through shared
    memory: warp 0's stores, its syncwarp and thread 0's release come before each thread of
    warp 1's acquire and its read (tests/test_simulator_order.py has the racy forms)."""
    x = rng.integers(-50, 50, 32).astype(np.float32)
    (out,) = run(src(WARPS), "warps", [x, Out(32, np.float32)], 1, 64, racecheck=True)
    np.testing.assert_array_equal(out, 2 * x + 1)
    ptx = compile_source(src(WARPS), "warps").ptx
    assert "st.release.cta.shared.s32" in ptx and "ld.acquire.cta.shared.s32" in ptx


CLUSTER = """
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
            ptxpy.store_release(flag, 0, 1, scope="cluster")
    else:
        ready = ptxpy.map_shared_rank(flag, 0)
        data = ptxpy.map_shared_rank(s, 0)
        if t == 0:
            while ptxpy.load_acquire(ready, 0, scope="cluster") == 0:
                pass
        ptxpy.syncthreads()
        out[t] = data[t] + 1.0
    ptxpy.cluster_sync()
"""


def test_a_block_of_the_cluster_waits_for_another(device):
    """Under the race check: block 0's stores, its barrier and thread 0's release at cluster
    scope come before block 1's thread 0's acquire, its barrier and its threads' reads."""
    x = rng.integers(-50, 50, 32).astype(np.float32)
    (out,) = run(src(CLUSTER), "neighbours", [x, Out(32, np.float32)], 2, 32, archs=SM90,
                 cluster=(2, 1, 1), racecheck=True)
    np.testing.assert_array_equal(out, 2 * x + 1)
    ptx = compile_source(src(CLUSTER), "neighbours", cluster=(2, 1, 1)).ptx
    assert "st.release.cluster.shared.s32" in ptx
    assert "ld.acquire.cluster.shared::cluster.s32" in ptx


def test_the_names_imported_from_ptxpy_and_on_the_host():
    import ptxpy
    from ptxpy.intrinsics import KernelOnlyError

    source = """
from ptxpy import Array, i32, load_acquire, store_release

@ptxpy.jit
def k(flag: Array[i32]):
    store_release(flag, 1, load_acquire(flag, 0, scope="cta") + 1, scope="cta")
"""
    ptx = compile_source("import ptxpy\n" + source, "k").ptx
    assert "ld.acquire.cta.global.s32" in ptx and "st.release.cta.global.s32" in ptx
    for name in ("load_acquire", "load_relaxed", "store_release", "store_relaxed"):
        with pytest.raises(KernelOnlyError, match=f"ptxpy.{name} can only be used inside"):
            getattr(ptxpy, name)(np.zeros(1), 0)


# --- the read-only path, written arrays, debug ------------------------------------------------

READ_ONLY = """
@ptxpy.func
def poll(f: Array[i32]) -> i32:
    return ptxpy.load_acquire(f, 0)

@ptxpy.jit
def reader(flag: Array[i32], x: Array[f32], out: Array[f32]):
    t = ptxpy.thread_idx.x
    v = flag[t] + {read}
    out[t] = x[t] + f32(v)
"""


@pytest.mark.parametrize("read", ["ptxpy.load_acquire(flag, 0)", "ptxpy.load_relaxed(flag, 1)",
                                  "poll(flag)"])
def test_an_array_an_ordered_load_reads_is_never_read_through_the_read_only_path(read):
    for ptx in compile_all(src(READ_ONLY.format(read=read)), "reader").values():
        assert "ld.global.s32" in ptx and "ld.global.nc.s32" not in ptx
        assert "ld.global.nc.f32" in ptx          # x: read only, and only plainly
    plain = compile_source(src(READ_ONLY.format(read="flag[1]")), "reader").ptx
    assert "ld.global.nc.s32" in plain and "ld.global.s32" not in plain
    kernel = compile_source(src(READ_ONLY.format(read=read)), "reader")
    assert [p.written for p in kernel.params] == [False, False, True]


def test_an_array_an_ordered_store_writes_counts_as_written():
    source = src("""
@ptxpy.func
def publish(f: Array[i32]):
    ptxpy.store_release(f, 0, 1)

@ptxpy.jit
def writer(a: Array[i32], b: Array[u8], out: Array[f32]):
    ptxpy.store_relaxed(b, 0, 1, scope="sys")
    publish(a)
""")
    kernel = compile_source(source, "writer")
    assert [p.written for p in kernel.params] == [True, True, False]


DEBUG = """
@ptxpy.jit
def k(flag: Array[i32], out: Array[i32]):
    t = ptxpy.thread_idx.x
    {line}
"""


@pytest.mark.parametrize("line, index", [
    ("out[t] = ptxpy.load_acquire(flag, t + 1)", 4),
    ("ptxpy.store_release(flag, t - 1, t)", -1),
    ("out[t] = ptxpy.atomic_add(flag, t * 2, 1, sem=\"acq_rel\")", 4)])
@pytest.mark.skipif(ON_GPU, reason="the simulator's message")
def test_debug_checks_the_index(line, index):
    source = src(DEBUG.format(line=line))
    message = (f"kernels.py:8: index out of bounds: index {index} is not in \\[0, 4\\) for axis 0 "
               "of 'flag'")
    with pytest.raises(SimulatorError, match=message):
        run(source, "k", [np.zeros(4, np.int32), Out(4, np.int32)], 1, 4, debug=True)


# --- the IR: --emit ssa, the verifier -----------------------------------------------------------

def test_emit_ssa_prints_the_order(tmp_path, capsys):
    path = tmp_path / "kernels.py"
    path.write_text(src(SPIN.replace("ptxpy.nanosleep(20)", "ptxpy.atomic_add(flag, 5, 1, "
                                                            "sem=\"acq_rel\", scope=\"cta\")")))
    assert main(["transpile", str(path), "--emit", "ssa"]) == 0
    out = capsys.readouterr().out
    for text in ("= ordered_load scope=gpu sem=acquire space=global %",
                 "= ordered_load scope=gpu sem=relaxed space=global %",
                 "ordered_store scope=gpu sem=relaxed space=global %",
                 "= atom op=add scope=cta sem=acq_rel space=global %"):
        assert text in out, text


@pytest.mark.parametrize("op, ty, attrs, args", [
    ("ordered_store", None, {"sem": "acquire", "scope": "gpu", "space": "global"}, 2),
    ("ordered_load", i32, {"sem": "release", "scope": "gpu", "space": "global"}, 1),
    ("ordered_load", i32, {"sem": "acquire", "scope": "device", "space": "global"}, 1),
    ("ordered_load", i32, {"sem": "acquire", "scope": "gpu", "space": "local"}, 1),
    ("ordered_load", bool_, {"sem": "acquire", "scope": "gpu", "space": "global"}, 1),
    ("atom", i32, {"op": "add", "space": "global", "sem": "acquire"}, 2),
    ("atom", i32, {"op": "add", "space": "global", "sem": "consume", "scope": "gpu"}, 2),
    ("fence", None, {"scope": "cluster"}, 0),
    ("fence", None, {"sem": "sc", "scope": "gpu"}, 0),
])
def test_the_verifier_checks_the_order(op, ty, attrs, args):
    func = ir.Function("k", [])
    block = func.new_block("entry")
    address = ir.Instr("param", i64, [], {"name": "p", "ptr": True})
    operands = [address, ir.Const(i32, 1)][:args]
    for instr in (address, ir.Instr(op, ty, operands, attrs), ir.Instr("ret", None, [])):
        block.append(instr)
    with pytest.raises(IRError, match=f"{op} needs attrs sem"):
        verify(func)


# --- errors -------------------------------------------------------------------------------------

ERRORS = [
    ('y = ptxpy.load_acquire(flag, 0, scope="device")', "sm_90",
     "kernels.py:7:43: error: the scope of ptxpy.load_acquire is \"cta\", \"cluster\", \"gpu\" or "
     "\"sys\" (a string literal), got '\"device\"'"),
    ('ptxpy.atomic_add(flag, 0, 1, sem="seq_cst")', "sm_90",
     "kernels.py:7:38: error: the sem of ptxpy.atomic_add is \"relaxed\", \"acquire\", "
     "\"release\" or \"acq_rel\" (a string literal), got '\"seq_cst\"'"),
    ("ptxpy.store_release(flag, 0, 1, scope=SCOPE)", "sm_90",
     "kernels.py:7:43: error: the scope of ptxpy.store_release is \"cta\", \"cluster\", \"gpu\" or "
     "\"sys\" (a string literal), got 'SCOPE'"),
    ('y = ptxpy.load_relaxed(flag, 0, "gpu")', "sm_90",
     "kernels.py:7:9: error: ptxpy.load_relaxed() takes 2 arguments (3 given), and scope= by "
     "keyword"),
    ('y = ptxpy.load_acquire(flag, 0, sem="acquire")', "sm_90",
     "kernels.py:7:37: error: ptxpy.load_acquire() got an unexpected keyword argument 'sem' (it "
     "takes scope=)"),
    ("ptxpy.store_release(flag, 0)", "sm_90",
     "kernels.py:7:5: error: ptxpy.store_release() takes 3 arguments (2 given), and scope= by "
     "keyword"),
    ('ptxpy.atomic_add(flag, 0, scope="cta")', "sm_90",
     "kernels.py:7:5: error: ptxpy.atomic_add() takes 3 arguments (2 given), and sem= and scope= "
     "by keyword"),
    ("y = ptxpy.load_acquire(flag[0])", "sm_90",
     "kernels.py:7:28: error: ptxpy.load_acquire takes the array and the index apart: write "
     "ptxpy.load_acquire(flag, 0)"),
    ("y = ptxpy.load_acquire(flag, (0, 1))", "sm_90",
     "kernels.py:7:35: error: array 'flag' has rank 1 but the access gives 2 indices"),
    ("y = ptxpy.load_acquire(n, 0)", "sm_90",
     "kernels.py:7:28: error: ptxpy.load_acquire needs an array, got 'n'"),
    ("y = ptxpy.load_acquire(ready, 0)", "sm_90",
     "kernels.py:7:28: error: ptxpy.load_acquire needs an array of numbers, 'ready' holds bool "
     "(use an array of u8 or i32 for flags)"),
    ("ptxpy.store_relaxed(ready, 0, True)", "sm_90",
     "kernels.py:7:25: error: ptxpy.store_relaxed needs an array of numbers, 'ready' holds bool "
     "(use an array of u8 or i32 for flags)"),
    ("r = ptxpy.local_array(4, i32)\n    r[0] = 1\n    y = ptxpy.load_acquire(r, n)", "sm_90",
     "kernels.py:9:9: error: ptxpy.load_acquire needs a global or shared array (memory that other "
     "threads see); 'r' is a local array"),
    ("r = ptxpy.local_array(4, i32)\n    ptxpy.store_release(r, 0, n)", "sm_90",
     "kernels.py:8:5: error: ptxpy.store_release needs a global or shared array (memory that "
     "other threads see); 'r' is a local array"),
    ('y = ptxpy.load_acquire(flag, 0, scope="cluster")', "sm_80",
     "kernels.py:7:9: error: ptxpy.load_acquire needs sm_90 or newer (scope=\"cluster\": "
     "thread-block clusters); the target is sm_80"),
    ('ptxpy.store_relaxed(flag, 0, 1, scope="cluster")', "sm_80",
     "kernels.py:7:5: error: ptxpy.store_relaxed needs sm_90 or newer (scope=\"cluster\": "
     "thread-block clusters); the target is sm_80"),
    ('ptxpy.atomic_max(flag, 0, 1, sem="release", scope="cluster")', "sm_80",
     "kernels.py:7:5: error: ptxpy.atomic_max needs sm_90 or newer (scope=\"cluster\": "
     "thread-block clusters); the target is sm_80"),
]


@pytest.mark.parametrize("line, arch, first", ERRORS, ids=[e[2].split("error: ")[1][:40]
                                                             for e in ERRORS])
def test_errors_are_located(line, arch, first):
    source = src(f"""SCOPE = "gpu"
@ptxpy.jit
def k(flag: Array[i32], ready: Array[bool], n: i32):
    {line}
""").replace("from ptxpy import Array,", "from ptxpy import Array, bool_,")
    source = source.replace("Array[bool]", "Array[bool_]")
    with pytest.raises(CompileError) as info:
        compile_source(source, "k", arch=arch)
    err = info.value
    lines = str(err).splitlines()
    assert lines[0] == first
    line_number, col = err.loc
    assert lines[0].startswith(f"kernels.py:{line_number}:{col + 1}: error: ")
    assert lines[1] == source.splitlines()[line_number - 1]
    assert lines[2] == " " * col + "^"
