"""Bit intrinsics (`ptxpy.popc clz brev ffs mulhi`), memory fences (`threadfence`,
`threadfence_block`, `threadfence_system`) and `syncwarp`, end to end: source -> PTX -> ptxas
(sm_80, sm_90) -> simulator, against Python's integers; the same values folded at compile time;
where the fences land and that no pass moves, merges or drops them; and the messages for calls
written as in CUDA (a member mask first, CUDA's names).
"""
import dataclasses
import os
import re

import numpy as np
import pytest

from kernel_harness import Out, compile_source, run
from ptxpy.runtime.ptx_parser import SimulatorError
from ptxpy.transpiler import driver, interp, ptxas, typed
from ptxpy.transpiler.cfg import dom_tree, natural_loops
from ptxpy.transpiler.errors import CompileError
from ptxpy.transpiler.frontend import check_kernel, parse_module
from ptxpy.transpiler.passes import PIPELINE
from ptxpy.transpiler.ssa_builder import build_function
from ptxpy.transpiler.verify import verify

HEADER = """
import ptxpy
from ptxpy import Array, Const, i8, i16, i32, i64, u8, u16, u32, u64
"""
WIDE = {"i32": np.int32, "u32": np.uint32, "i64": np.int64, "u64": np.uint64}
NARROW = {"i8": np.int8, "u8": np.uint8, "i16": np.int16, "u16": np.uint16}
rng = np.random.default_rng(20260)


def src(body: str) -> str:
    return HEADER + body


# --- references (on bit patterns: unsigned Python ints of `width` bits) ----------------------
def popc(p: int, width: int) -> int:
    return bin(p).count("1")


def clz(p: int, width: int) -> int:
    return width - p.bit_length()


def brev(p: int, width: int) -> int:
    return int(format(p, f"0{width}b")[::-1], 2)


def ffs(p: int, width: int) -> int:
    return (p & -p).bit_length()


def signed(p: int, width: int) -> int:
    return p - (1 << width) if p >> (width - 1) else p


def mulhi(a: int, b: int, width: int, is_signed: bool) -> int:
    """The high half of the full product of the patterns a, b read as `width`-bit integers."""
    if is_signed:
        a, b = signed(a, width), signed(b, width)
    return ((a * b) >> width) & ((1 << width) - 1)


def width_of(t: str) -> int:
    return int(t[1:])


def patterns(t: str, randoms: int = 40) -> list:
    """Edge values as bit patterns: 0, 1, -1 (all ones), the signed min and max, each power of
    two, each mask 2^k - 1, alternating bits, and random values of every magnitude."""
    width = width_of(t)
    ones = (1 << width) - 1
    values = {0, 1, 2, 3, ones, ones - 1, 1 << (width - 1), (1 << (width - 1)) - 1,
              (1 << (width - 1)) + 1, int("55" * (width // 8), 16), int("AA" * (width // 8), 16)}
    values |= {1 << k for k in range(width)} | {(1 << k) - 1 for k in range(width)}
    for _ in range(randoms):
        value = int(rng.integers(0, 1 << 62)) << 2 | int(rng.integers(0, 4))
        values.add((value >> int(rng.integers(0, width))) & ones)
    return sorted(values)


def to_array(values: list, t: str) -> np.ndarray:
    """Bit patterns as a NumPy array of type t."""
    width = width_of(t)
    unsigned = np.array(values, dtype=np.uint64).astype({8: np.uint8, 16: np.uint16, 32: np.uint32,
                                                          64: np.uint64}[width])
    return unsigned.view(np.dtype({**WIDE, **NARROW}[t]))


def bits_of(array: np.ndarray) -> list:
    width = array.dtype.itemsize * 8
    return [int(v) & ((1 << width) - 1) for v in array.tolist()]


def ptx_body(ptx: str) -> str:
    return ptx[ptx.index("{"):]


BIT_KERNEL = """
@ptxpy.jit
def bits_{t}(x: Array[{t}], counts: Array[i32, 2], reversed: Array[{t}]):
    i = ptxpy.global_id(0)
    if i < x.shape[0]:
        v = x[i]
        counts[i, 0] = ptxpy.popc(v)
        counts[i, 1] = ptxpy.clz(v)
        counts[i, 2] = ptxpy.ffs(v)
        reversed[i] = ptxpy.brev(v)
"""


def run_bits(t: str, values: list):
    x = to_array(values, t)
    n = len(values)
    counts, reversed_ = run(src(BIT_KERNEL.format(t=t)), f"bits_{t}",
                            [x, Out((n, 3), np.int32), Out(n, WIDE[t])],
                            grid=(n + 63) // 64, block=64)
    return counts, reversed_


@pytest.mark.parametrize("t", list(WIDE))
def test_popc_clz_ffs_brev_at_run_time(t):
    values, width = patterns(t), width_of(t)
    counts, reversed_ = run_bits(t, values)
    expected = [[popc(p, width), clz(p, width), ffs(p, width)] for p in values]
    np.testing.assert_array_equal(counts, np.array(expected, np.int32))
    assert bits_of(reversed_) == [brev(p, width) for p in values]
    ptx = compile_source(src(BIT_KERNEL.format(t=t)), f"bits_{t}").ptx
    b = f"b{width}"
    for instruction in (f"popc.{b}", f"clz.{b}", f"brev.{b}", f"bfind.shiftamt.u{width}"):
        assert instruction in ptx, instruction


def folded_kernel(t: str, values: list) -> str:
    lines = [f"@ptxpy.jit\ndef folded_{t}(counts: Array[i32, 2], reversed: Array[{t}]):"]
    for k, p in enumerate(values):
        lines += [f"    counts[{k}, 0] = ptxpy.popc({t}({p:#x}))",
                  f"    counts[{k}, 1] = ptxpy.clz({t}({p:#x}))",
                  f"    counts[{k}, 2] = ptxpy.ffs({t}({p:#x}))",
                  f"    reversed[{k}] = ptxpy.brev({t}({p:#x}))"]
    return src("\n".join(lines) + "\n")


@pytest.mark.parametrize("t", list(WIDE))
def test_constant_arguments_fold_to_the_run_time_values(t):
    values = patterns(t, randoms=6)[::3] + [0, (1 << width_of(t)) - 1]
    source = folded_kernel(t, values)
    ptx = compile_source(source, f"folded_{t}").ptx
    assert not re.search(r"\b(popc|clz|brev|bfind)\.", ptx), "not folded"
    n = len(values)
    folded = run(source, f"folded_{t}", [Out((n, 3), np.int32), Out(n, WIDE[t])], grid=1, block=1)
    at_run_time = run_bits(t, values)
    np.testing.assert_array_equal(folded[0], at_run_time[0])
    np.testing.assert_array_equal(folded[1], at_run_time[1])


MULHI_KERNEL = """
@ptxpy.jit
def high_{t}(a: Array[{t}], b: Array[{t}], hi: Array[{t}]):
    i = ptxpy.global_id(0)
    if i < a.shape[0]:
        hi[i] = ptxpy.mulhi(a[i], b[i])
"""


def mulhi_pairs(t: str) -> list:
    width = width_of(t)
    ones = (1 << width) - 1
    edges = [0, 1, 2, ones, ones - 1, 1 << (width - 1), (1 << (width - 1)) - 1, 1 << (width // 2),
             int(rng.integers(0, 1 << 62)) & ones, 3 << (width - 3)]
    pairs = [(a, b) for a in edges for b in edges]
    for _ in range(100):
        a, b = (int(rng.integers(0, 1 << 63)) * 2 + int(rng.integers(0, 2)) for _ in range(2))
        pairs.append((a & ones, (b >> int(rng.integers(0, width))) & ones))
    return pairs


def run_mulhi(t: str, pairs: list) -> list:
    a = to_array([p[0] for p in pairs], t)
    b = to_array([p[1] for p in pairs], t)
    (hi,) = run(src(MULHI_KERNEL.format(t=t)), f"high_{t}", [a, b, Out(len(pairs), WIDE[t])],
                grid=(len(pairs) + 63) // 64, block=64)
    return bits_of(hi)


@pytest.mark.parametrize("t", list(WIDE))
def test_mulhi_at_run_time(t):
    pairs, width = mulhi_pairs(t), width_of(t)
    assert run_mulhi(t, pairs) == [mulhi(a, b, width, t[0] == "i") for a, b in pairs]
    ptx = compile_source(src(MULHI_KERNEL.format(t=t)), f"high_{t}").ptx
    assert f"mul.hi.{'s' if t[0] == 'i' else 'u'}{width} " in ptx


@pytest.mark.parametrize("t", list(WIDE))
def test_mulhi_of_constants_folds_to_the_run_time_value(t):
    pairs = mulhi_pairs(t)[::9]
    lines = [f"@ptxpy.jit\ndef folded_{t}(hi: Array[{t}]):"]
    lines += [f"    hi[{k}] = ptxpy.mulhi({t}({a:#x}), {t}({b:#x}))" for k, (a, b) in enumerate(pairs)]
    source = src("\n".join(lines) + "\n")
    assert "mul.hi" not in compile_source(source, f"folded_{t}").ptx
    (folded,) = run(source, f"folded_{t}", [Out(len(pairs), WIDE[t])], grid=1, block=1)
    assert bits_of(folded) == run_mulhi(t, pairs)


NARROW_KERNEL = """
@ptxpy.jit
def narrow_{t}(x: Array[{t}], counts: Array[i32, 2], reversed: Array[{w}], hi: Array[{w}]):
    i = ptxpy.global_id(0)
    if i < x.shape[0]:
        v = x[i]
        counts[i, 0] = ptxpy.popc(v)
        counts[i, 1] = ptxpy.clz(v)
        counts[i, 2] = ptxpy.ffs(v)
        counts[i, 3] = ptxpy.popc(v > 0)
        reversed[i] = ptxpy.brev(v)
        hi[i] = ptxpy.mulhi(v, x[x.shape[0] - 1 - i])
"""


@pytest.mark.parametrize("t", list(NARROW))
def test_narrow_integers_widen_to_32_bits_keeping_their_value(t):
    """i8/i16 widen to i32 (sign-extended), u8/u16 to u32 (zero-extended), as CUDA converts
    them to int or unsigned; bool is i32."""
    w = "i32" if t[0] == "i" else "u32"
    values = patterns(t, randoms=10)
    x = to_array(values, t)
    n = len(values)
    counts, reversed_, hi = run(src(NARROW_KERNEL.format(t=t, w=w)), f"narrow_{t}",
                                [x, Out((n, 4), np.int32), Out(n, WIDE[w]), Out(n, WIDE[w])],
                                grid=1, block=n)
    wide = [int(v) & 0xFFFFFFFF for v in x.tolist()]      # the value kept, in 32 bits
    expected = [[popc(p, 32), clz(p, 32), ffs(p, 32), int(int(v) > 0)]
                for p, v in zip(wide, x.tolist())]
    np.testing.assert_array_equal(counts, np.array(expected, np.int32))
    assert bits_of(reversed_) == [brev(p, 32) for p in wide]
    assert bits_of(hi) == [mulhi(a, b, 32, w == "i32") for a, b in zip(wide, wide[::-1])]
    kernel = driver.compile_kernel(driver.parse(src(NARROW_KERNEL.format(t=t, w=w)), "kernels.py"),
                                   f"narrow_{t}", stop_after="typed").typed.kernel
    assert intrinsic_types(kernel) == {"popc": {"i32"}, "clz": {"i32"}, "ffs": {"i32"},
                                       "brev": {w}, "mulhi": {w}, "global_id": {"i32"}}


def intrinsic_types(node) -> dict:
    """{intrinsic name: the types it has} in a typed tree."""
    found, todo = {}, [node]
    while todo:
        item = todo.pop()
        if isinstance(item, (list, tuple)):
            todo.extend(item)
        elif dataclasses.is_dataclass(item):
            if isinstance(item, typed.Intrinsic):
                found.setdefault(item.name, set()).add(str(item.type))
            todo.extend(getattr(item, f.name) for f in dataclasses.fields(item))
    return found


DP4A = """
@ptxpy.jit
def dots(a: Array[i32], b: Array[i32], c: Array[i32], ss: Array[i32], uu: Array[u32],
         su: Array[i32]):
    i = ptxpy.global_id(0)
    if i < a.shape[0]:
        ss[i] = ptxpy.dp4a(a[i], b[i], c[i])
        uu[i] = ptxpy.dp4a(u32(a[i]), u32(b[i]), u32(c[i]))
        su[i] = ptxpy.dp4a(a[i], u32(b[i]), 7)
"""


def dp4a_reference(a, b, c, signed_a: bool, signed_b: bool, out_type):
    """c + the dot product of the words' bytes, in Python ints, wrapped to 32 bits."""
    bytes_a = a.view(np.int8 if signed_a else np.uint8).reshape(-1, 4).astype(np.int64)
    bytes_b = b.view(np.int8 if signed_b else np.uint8).reshape(-1, 4).astype(np.int64)
    total = (bytes_a * bytes_b).sum(axis=1) + c
    return (total & 0xFFFFFFFF).astype(np.uint32).astype(out_type)


def test_dp4a_of_signed_and_unsigned_bytes():
    """`ptxpy.dp4a` (PTX dp4a, sm_61): each word's bytes signed for i32, unsigned for u32."""
    a, b, c = (rng.integers(-2**31, 2**31, 200).astype(np.int32) for _ in range(3))
    a[:4] = b[:4] = -1          # 0xFF bytes: -1 signed, 255 unsigned
    a[4:8] = 0x7F7F7F7F
    ss, uu, su = run(src(DP4A), "dots", [a, b, c] + [Out(200, np.int32), Out(200, np.uint32),
                                                     Out(200, np.int32)], grid=2, block=128)
    np.testing.assert_array_equal(ss, dp4a_reference(a, b, c.astype(np.int64), True, True, np.int32))
    np.testing.assert_array_equal(uu, dp4a_reference(a, b, c.view(np.uint32).astype(np.int64),
                                                     False, False, np.uint32))
    np.testing.assert_array_equal(su, dp4a_reference(a, b, 7, True, False, np.int32))
    ptx = compile_source(src(DP4A), "dots").ptx
    assert re.findall(r"dp4a\.(\w+)\.(\w+) ", ptx) == [("s32", "s32"), ("u32", "u32"), ("s32", "u32")]


def test_the_ir_interpreter_computes_dp4a():
    program = driver.parse(src(DP4A), "kernels.py")
    func = driver.compile_kernel(program, "dots", None, frozenset(), driver.Options()).ssa
    a, b, c = (np.array([v], np.int32) for v in (-0x01020304, 0x7F80FF01, 1000))
    outs = {"ss": np.zeros(1, np.int32), "uu": np.zeros(1, np.uint32), "su": np.zeros(1, np.int32)}
    interp.run_function(func, {"a": a, "b": b, "c": c, **outs},
                        {"tid.x": 0, "ntid.x": 1, "ctaid.x": 0}, lone_thread=True)
    assert outs["ss"][0] == dp4a_reference(a, b, 1000, True, True, np.int32)[0]
    assert outs["uu"][0] == dp4a_reference(a, b, 1000, False, False, np.uint32)[0]
    assert outs["su"][0] == dp4a_reference(a, b, 7, True, False, np.int32)[0]


def test_result_types_of_the_wide_integers():
    body = "".join(f"""
@ptxpy.jit
def types_{t}(x: Array[{t}], y: Array[i32]):
    y[0] = ptxpy.popc(x[0]) + ptxpy.clz(x[0]) + ptxpy.ffs(x[0])
    x[1] = ptxpy.brev(x[0]) + ptxpy.mulhi(x[0], x[1])
""" for t in WIDE)
    program = driver.parse(src(body), "kernels.py")
    for t in WIDE:
        kernel = driver.compile_kernel(program, f"types_{t}", stop_after="typed").typed.kernel
        assert intrinsic_types(kernel) == {"popc": {"i32"}, "clz": {"i32"}, "ffs": {"i32"},
                                           "brev": {t}, "mulhi": {t}}


def test_literals_take_their_own_type():
    """A literal argument is i32, or i64 where it does not fit (then u64), as everywhere."""
    source = src("""
@ptxpy.jit
def literals(out: Array[i64]):
    out[0] = ptxpy.clz(1)
    out[1] = ptxpy.clz(0x80000000)
    out[2] = ptxpy.clz(u32(0x80000000))
    out[3] = ptxpy.popc(-1)
    out[4] = ptxpy.brev(1)
    out[5] = ptxpy.mulhi(0x40000000, 8)
    out[6] = ptxpy.mulhi(0x4000000000, 8)
    out[7] = ptxpy.ffs(0x8000000000000000)
""")
    (out,) = run(source, "literals", [Out(8, np.int64)], grid=1, block=1)
    assert out.tolist() == [31, 32, 0, 32, -(1 << 31), 2, 0, 64]


# --- memory fences and syncwarp ------------------------------------------------------------------
FENCES = {"threadfence": "membar.gl", "threadfence_block": "membar.cta",
          "threadfence_system": "membar.sys"}


def lines_of(ptx: str) -> list:
    """The PTX instructions of the body in order, each as (source line, instruction text)."""
    found, line = [], None
    for text in ptx_body(ptx).splitlines():
        text = text.strip()
        marker = re.match(r"// line (\d+):", text)
        if marker:
            line = int(marker.group(1))
        elif text and not text.startswith(("//", ".loc", "{", "}", "$")) and not text.endswith(":"):
            found.append((line, text))
    return found


PUBLISH = """
@ptxpy.jit
def publish(data: Array[i32], flag: Array[i32], seen: Array[i32]):
    i = ptxpy.global_id(0)
    ready = flag[i]
    data[i] = i * 3 + ready
    ptxpy.{name}()
    flag[i] = 1
    seen[i] = data[i] + ready
"""


@pytest.mark.parametrize("name", list(FENCES))
def test_a_fence_keeps_the_loads_and_stores_on_their_sides(name):
    source = src(PUBLISH.format(name=name))
    # lines of the source: 8 `ready = flag[i]`, 9 the store, 10 the fence, 11-12 after it
    instrs = lines_of(compile_source(source, "publish").ptx)
    fences = [k for k, (_, text) in enumerate(instrs) if text.startswith("membar")]
    assert [instrs[k] for k in fences] == [(10, FENCES[name] + ";")]
    fence = fences[0]
    memory = [(k, line, text) for k, (line, text) in enumerate(instrs) if text.startswith(("ld.global", "st.global"))]
    before = [(line, text.split()[0]) for k, line, text in memory if k < fence]
    after = [(line, text.split()[0]) for k, line, text in memory if k > fence]
    assert before == [(8, "ld.global.s32"), (9, "st.global.s32")]
    assert after == [(11, "st.global.s32"), (12, "ld.global.s32"), (12, "st.global.s32")]
    data, flag, seen = run(source, "publish", [Out(64, np.int32, 5), Out(64, np.int32, 2),
                                               Out(64, np.int32)], grid=2, block=32)
    np.testing.assert_array_equal(data, np.arange(64) * 3 + 2)
    np.testing.assert_array_equal(flag, np.ones(64))
    np.testing.assert_array_equal(seen, np.arange(64) * 3 + 4)


LAST_BLOCK = """
@ptxpy.jit
def total(x: Array[i32], partial: Array[i32], count: Array[u32], out: Array[i32]):
    t = ptxpy.thread_idx.x
    b = ptxpy.block_idx.x
    s = ptxpy.shared_array(64, i32)
    i = ptxpy.global_id(0)
    s[t] = x[i] if i < x.shape[0] else 0
    ptxpy.syncthreads()
    if t == 0:
        acc = 0
        for k in range(64):
            acc += s[k]
        partial[b] = acc
        ptxpy.threadfence()
        ticket = ptxpy.atomic_add(count, 0, u32(1))
        if ticket == u32(ptxpy.num_programs(0) - 1):
            grand = 0
            for k in range(ptxpy.num_programs(0)):
                grand += partial[k]
            out[0] = grand
"""


def test_threadfence_reduction_of_the_last_block():
    """CUDA's threadFenceReduction: each block publishes its sum, fences, takes a ticket; the
    last block adds the sums. The partial sum's store stays before the fence, the atomic after."""
    source = src(LAST_BLOCK)
    instrs = [text for _, text in lines_of(compile_source(source, "total").ptx)]
    fence = instrs.index("membar.gl;")
    stores = [k for k, text in enumerate(instrs) if text.startswith("st.global")]
    atomic = next(k for k, text in enumerate(instrs) if text.startswith("atom.global.add.u32"))
    assert stores[0] < fence < atomic
    x = rng.integers(-1000, 1000, 1000).astype(np.int32)
    blocks = (len(x) + 63) // 64
    partial, count, out = run(source, "total", [x, Out(blocks, np.int32), Out(1, np.uint32),
                                                 Out(1, np.int32)], grid=blocks, block=64)
    assert out[0] == x.sum() and count[0] == blocks


PASSES_KERNEL = """
@ptxpy.jit
def fences(x: Array[i32], out: Array[i32], n: i32):
    t = ptxpy.thread_idx.x
    out[t] = x[t]
    ptxpy.threadfence()
    ptxpy.threadfence()
    acc = 0
    for k in range(n):
        ptxpy.threadfence_block()
        acc += x[k]
    if t < 3:
        ptxpy.threadfence_system()
    ptxpy.syncwarp()
    out[t] = acc
"""


def fence_census(func) -> dict:
    """{(op, scope): [blocks]} of the fences and warp barriers."""
    found = {}
    for block in func.blocks:
        for instr in block.instrs:
            if instr.op in ("fence", "warpsync"):
                found.setdefault((instr.op, instr.attrs.get("scope")), []).append(block)
    return found


def test_no_pass_moves_merges_or_drops_a_fence():
    """Run the pipeline a pass at a time: two identical fences stay two (cse), a fence in a loop
    stays in it (licm), one alone in a short `if` stays behind the branch (speculate), an unused
    syncwarp stays (dce), and the store before the first fence stays before it."""
    program = driver.parse(src(PASSES_KERNEL), "kernels.py")
    options = driver.Options("sm_90")
    kernel = driver.compile_kernel(program, "fences", options=options, stop_after="typed").typed
    func = build_function(kernel, options.arch, options.as_dict())
    for name, run_pass in [("built", lambda f: f)] + PIPELINE:
        func = run_pass(func)
        verify(func)
        census = fence_census(func)
        assert sorted((op, scope, len(blocks)) for (op, scope), blocks in census.items()) == [
            ("fence", "cta", 1), ("fence", "gpu", 2), ("fence", "sys", 1), ("warpsync", None, 1)], name
        loops = natural_loops(func, dom_tree(func))
        assert any(census[("fence", "cta")][0] in loop.blocks for loop in loops), name
        guarded = census[("fence", "sys")][0]
        assert len(guarded.preds) == 1 and guarded.preds[0].terminator.op == "cbr", name
        first = census[("fence", "gpu")][0]
        ops = [i.op for i in first.instrs]
        assert "store" in ops and ops.index("store") < ops.index("fence"), name
    ptx = compile_source(src(PASSES_KERNEL), "fences").ptx
    counts = {opcode: len(re.findall(rf"\b{re.escape(opcode)};", ptx))
              for opcode in ("membar.gl", "membar.cta", "membar.sys")}
    assert counts == {"membar.gl": 2, "membar.cta": 1, "membar.sys": 1}
    assert len(re.findall(r"bar\.warp\.sync ", ptx)) == 1
    x = np.arange(40, dtype=np.int32)
    (out,) = run(src(PASSES_KERNEL), "fences", [x, Out(40, np.int32), 5], grid=1, block=40)
    np.testing.assert_array_equal(out, np.full(40, 10))
    # the IR interpreter: a fence is nothing to one thread, syncwarp needs it to be alone
    out = np.zeros(1, np.int32)
    interp.run_function(func, {"x": x[:1].copy(), "out": out, "n": 1}, {"ntid.x": 1},
                        lone_thread=True)
    assert out[0] == 0
    with pytest.raises(interp.InterpError, match="bar.warp.sync needs the simulator"):
        interp.run_function(func, {"x": x[:1].copy(), "out": out, "n": 1}, {"ntid.x": 1})


EXCHANGE = """
@ptxpy.jit
def exchange(x: Array[i32], out: Array[i32]):
    t = ptxpy.thread_idx.x
    s = ptxpy.shared_array(64, i32)
    s[t] = x[t] * 3
    ptxpy.syncwarp()
    out[t] = s[t ^ 1]
"""


def test_syncwarp_names_the_lanes_present_unless_the_blocks_are_whole_warps():
    program = driver.parse(src(EXCHANGE), "kernels.py")
    for whole, mask in ((False, r"%r\d+"), (True, "0xffffffff")):
        options = driver.Options("sm_90", whole_warps=whole)
        ptx = driver.compile_kernel(program, "exchange", None, frozenset(), options).kernel.ptx
        syncs = re.findall(r"bar\.warp\.sync (\S+);", ptx)
        assert len(syncs) == 1 and re.fullmatch(mask, syncs[0]), (whole, syncs)
        if ptxas.find_ptxas() is not None:
            for arch in ("sm_80", "sm_90"):
                kernel = driver.compile_kernel(program, "exchange", None, frozenset(),
                                               driver.Options(arch, whole_warps=whole)).kernel
                ok, log, _ = ptxas.assemble(kernel.ptx, arch)
                assert ok, log


@pytest.mark.parametrize("threads", [64, 48])
def test_syncwarp_orders_a_warp_exchange_through_shared_memory(threads):
    instrs = [(line, text.split()[0]) for line, text in
              lines_of(compile_source(src(EXCHANGE), "exchange").ptx)]
    sync = instrs.index((10, "bar.warp.sync"))
    assert (9, "st.shared.s32") in instrs[:sync] and (11, "ld.shared.s32") in instrs[sync:]
    x = rng.integers(-100, 100, threads).astype(np.int32)
    (out,) = run(src(EXCHANGE), "exchange", [x, Out(threads, np.int32)], grid=1, block=threads,
                 racecheck=True)
    np.testing.assert_array_equal(out, x[np.arange(threads) ^ 1] * 3)


# lane t writes s[t], reads s[t ^ D], then writes s[t] again: both steps need a barrier
WARP_EXCHANGE = """
@ptxpy.jit
def exchange(x: Array[i32], out: Array[i32]):
    t = ptxpy.thread_idx.x
    s = ptxpy.shared_array(64, i32)
    s[t] = x[t]
    SYNC
    v = s[t ^ D]
    SYNC
    s[t] = v * 2
    ptxpy.syncthreads()
    out[t] = s[t]
"""


@pytest.mark.parametrize("distance, sync, race", [
    (1, "ptxpy.syncwarp()", None),
    (1, "pass", r"kernels.py:11: shared memory race: thread \(0,0,0\) reads 4 bytes at shared offset "
                r"0x4 that thread \(1,0,0\) wrote since the last barrier"),
    # a syncwarp orders the lanes of one warp only: s[t ^ 32] is another warp's
    (32, "ptxpy.syncwarp()", r"kernels.py:11: shared memory race: thread \(0,0,0\) reads 4 bytes "
                             r"at shared offset 0x80 that thread \(32,0,0\) wrote"),
    (32, "ptxpy.syncthreads()", None),
])
def test_the_race_check_orders_the_lanes_of_a_warp_by_syncwarp(distance, sync, race):
    """`syncwarp` ends a warp's interval for its own lanes (read after write, and write after
    read through the second one), not for other warps. (The race check is the simulator's: on
    a GPU only the race-free kernels run.)"""
    if race is not None and os.environ.get("PTXPY_TEST_DEVICE") == "gpu":
        pytest.skip("the simulator's race check")
    source = src(WARP_EXCHANGE.replace("SYNC", sync).replace("D]", f"{distance}]"))
    x = rng.integers(-100, 100, 64).astype(np.int32)
    args = [x, Out(64, np.int32)]
    if race is not None:
        with pytest.raises(SimulatorError, match=race):
            run(source, "exchange", args, grid=1, block=64, racecheck=True)
        return
    (out,) = run(source, "exchange", args, grid=1, block=64, racecheck=True)
    np.testing.assert_array_equal(out, x[np.arange(64) ^ distance] * 2)


@pytest.mark.skipif(os.environ.get("PTXPY_TEST_DEVICE") == "gpu", reason="the simulator's race check")
def test_a_syncwarp_after_one_warp_reads_does_not_order_another_warps_store():
    """Warp 0 reads s[0..31], syncs its warp; then warp 1 writes s[0..31]: a race (only a block
    barrier orders warp 1 after warp 0's reads), found although warp 0's epoch moved on."""
    source = src("""
@ptxpy.jit
def k(x: Array[i32], out: Array[i32]):
    t = ptxpy.thread_idx.x
    s = ptxpy.shared_array(32, i32)
    if t < 32:
        s[t] = x[t]
    ptxpy.syncthreads()
    v = 0
    if t < 32:
        v = s[t]
    ptxpy.syncwarp()
    if t >= 32:
        s[t - 32] = x[t]
    out[t] = v
""")
    with pytest.raises(SimulatorError, match=r"thread \(32,0,0\) writes 4 bytes at shared offset "
                                             r"0x0 that thread \(0,0,0\) read since the last barrier"):
        run(source, "k", [np.arange(64, dtype=np.int32), Out(64, np.int32)], grid=1, block=64,
            racecheck=True)


@pytest.mark.skipif(os.environ.get("PTXPY_TEST_DEVICE") == "gpu",
                    reason="the simulator's check: on a GPU a divergent bar.warp.sync is undefined")
def test_syncwarp_from_divergent_code_stops_the_simulator():
    source = src(EXCHANGE.replace("    ptxpy.syncwarp()\n", "    if t < 16:\n        ptxpy.syncwarp()\n"))
    with pytest.raises(SimulatorError, match=r"bar\.warp\.sync .*named in the member mask"):
        run(source, "exchange", [np.zeros(32, np.int32), Out(32, np.int32)], grid=1, block=32,
            racecheck=False)


# --- messages ----------------------------------------------------------------------------------
ERROR_HEADER = ("import ptxpy\nfrom ptxpy import Array, f32, i32, u32, shfl_down_sync, "
                "ballot_sync\n@ptxpy.jit\ndef k(x: Array[f32], n: Array[u32]):\n")
ERRORS = [
    ("x[0] = ptxpy.shfl_down_sync(0xffffffff, x[1], 8)",
     "ptxpy.shfl_down_sync takes no member mask (the whole warp takes part): write "
     "ptxpy.shfl_down_sync(x[1], 8)"),
    ("x[0] = shfl_down_sync(0xffffffff, x[1], 8)",
     "ptxpy.shfl_down_sync takes no member mask (the whole warp takes part): write "
     "shfl_down_sync(x[1], 8)"),
    ("x[0] = ptxpy.shfl_sync(0xffffffff, x[1], 3)",
     "ptxpy.shfl_sync takes no member mask (the whole warp takes part): write "
     "ptxpy.shfl_sync(x[1], 3)"),
    ("x[0] = ptxpy.shfl_up_sync(0xffffffff, x[1], 1)",
     "ptxpy.shfl_up_sync takes no member mask (the whole warp takes part): write "
     "ptxpy.shfl_up_sync(x[1], 1)"),
    ("x[0] = ptxpy.shfl_xor_sync(0xffffffff, x[1], 16)",
     "ptxpy.shfl_xor_sync takes no member mask (the whole warp takes part): write "
     "ptxpy.shfl_xor_sync(x[1], 16)"),
    ("x[0] = ptxpy.shfl_xor_sync(0xffffffff, x[1], 16, 32)",
     "ptxpy.shfl_xor_sync takes no member mask (the whole warp takes part): write "
     "ptxpy.shfl_xor_sync(x[1], 16)"),
    ("x[0] = ptxpy.shfl_down_sync(0xffffffff, x[1], 4, 8)",
     "ptxpy.shfl_down_sync takes no member mask (the whole warp takes part): write "
     "ptxpy.shfl_down_sync(x[1], 4, width=8)"),
    ("n[0] = ptxpy.ballot_sync(0xffffffff, x[1] > 0)",
     "ptxpy.ballot_sync takes no member mask (the whole warp takes part): write "
     "ptxpy.ballot_sync(x[1] > 0)"),
    ("n[0] = ballot_sync(0xffffffff, x[1] > 0)",
     "ptxpy.ballot_sync takes no member mask (the whole warp takes part): write ballot_sync(x[1] > 0)"),
    ("n[0] = ptxpy.any_sync(0xffffffff, x[1] > 0)",
     "ptxpy.any_sync takes no member mask (the whole warp takes part): write ptxpy.any_sync(x[1] > 0)"),
    ("n[0] = ptxpy.all_sync(0xffffffff, x[1] > 0)",
     "ptxpy.all_sync takes no member mask (the whole warp takes part): write ptxpy.all_sync(x[1] > 0)"),
    ("x[0] = ptxpy.warp_sum(0xffffffff, x[1])",
     "ptxpy.warp_sum takes no member mask (the whole warp takes part): write ptxpy.warp_sum(x[1])"),
    ("ptxpy.syncwarp(0xffffffff)",
     "ptxpy.syncwarp takes no member mask (the whole warp takes part): write ptxpy.syncwarp()"),
    ("x[0] = ptxpy.shfl_down_sync(x[1], 8, 3, 2, 1)", "ptxpy.shfl_down_sync() takes 2 arguments and an optional width= (5 given)"),
    ("n[0] = __popc(n[1])", "name '__popc' is not defined; CUDA's __popc is ptxpy.popc"),
    ("n[0] = __popcll(n[1])", "name '__popcll' is not defined; CUDA's __popcll is ptxpy.popc"),
    ("n[0] = __clz(n[1])", "name '__clz' is not defined; CUDA's __clz is ptxpy.clz"),
    ("n[0] = __brev(n[1])", "name '__brev' is not defined; CUDA's __brev is ptxpy.brev"),
    ("n[0] = __ffs(n[1])", "name '__ffs' is not defined; CUDA's __ffs is ptxpy.ffs"),
    ("n[0] = __umulhi(n[1], n[2])", "name '__umulhi' is not defined; CUDA's __umulhi is ptxpy.mulhi"),
    ("__threadfence()", "name '__threadfence' is not defined; CUDA's __threadfence is ptxpy.threadfence"),
    ("__threadfence_block()",
     "name '__threadfence_block' is not defined; CUDA's __threadfence_block is ptxpy.threadfence_block"),
    ("__syncwarp()", "name '__syncwarp' is not defined; CUDA's __syncwarp is ptxpy.syncwarp"),
    ("n[0] = ptxpy.__popc(n[1])", "ptxpy has no attribute '__popc'; CUDA's __popc is ptxpy.popc"),
    ("n[0] = ptxpy.__umulhi(n[1], n[2])", "ptxpy has no attribute '__umulhi'; CUDA's __umulhi is ptxpy.mulhi"),
    ("ptxpy.__threadfence()", "ptxpy has no attribute '__threadfence'; CUDA's __threadfence is ptxpy.threadfence"),
    ("ptxpy.__syncwarp()", "ptxpy has no attribute '__syncwarp'; CUDA's __syncwarp is ptxpy.syncwarp"),
    ("n[0] = ptxpy.popc(x[1])",
     "ptxpy.popc needs an integer, got f32; for a float's bits, ptxpy.popc(ptxpy.bitcast(x, u32))"),
    ("n[0] = ptxpy.brev(1.5)", "ptxpy.brev needs an integer, got f32"),
    ("n[0] = ptxpy.mulhi(n[1], i32(x[1]))",
     "ptxpy.mulhi needs two integers of one type, got u32 and i32: cast one (e.g. "
     "ptxpy.mulhi(i32(n[1]), i32(x[1])))"),
    ("n[0] = ptxpy.mulhi(n[1], x[1])", "ptxpy.mulhi needs integers, got f32"),
    ("n[0] = ptxpy.dp4a(x[1], n[1], 0)", "ptxpy.dp4a multiplies words of four bytes, i32 or u32, "
     "got f32 (pack the bytes with ptxpy.bitcast or shifts)"),
    ("n[0] = ptxpy.dp4a(n[1], n[2], x[0])", "the sum x[0] of ptxpy.dp4a is f32; it must convert "
     "to u32 as an assignment would (cast it: u32(...))"),
    ("n[0] = ptxpy.dp4a(n[1], 2**40, 0)", "ptxpy.dp4a multiplies words of four bytes: "
     "1099511627776 does not fit in 32 bits"),
    ("n[0] = __dp4a(n[1], n[2], 0)", "name '__dp4a' is not defined; CUDA's __dp4a is ptxpy.dp4a"),
    ("y = ptxpy.threadfence()", "'ptxpy.threadfence()' returns no value"),
    ("ptxpy.threadfence_system(1)", "ptxpy.threadfence_system() takes 0 arguments (1 given)"),
]


@pytest.mark.parametrize("line,message", ERRORS, ids=[e[0] for e in ERRORS])
def test_messages(line, message):
    source = ERROR_HEADER + "    " + line + "\n"
    with pytest.raises(CompileError) as info:
        check_kernel(parse_module(source, "kernels.py"), "k")
    first = str(info.value).splitlines()[0]
    assert first.split(": error: ", 1)[1] == message
    assert first.startswith("kernels.py:5:")


def test_the_new_names_are_kernel_only_on_the_host():
    import ptxpy

    for name in ("popc", "clz", "brev", "ffs", "mulhi", "threadfence", "threadfence_block",
                 "threadfence_system", "syncwarp", "dp4a", "match_any_sync", "nanosleep",
                 "syncthreads_count", "setmaxnreg_inc", "warp_xor"):
        with pytest.raises(ptxpy.KernelOnlyError, match=f"ptxpy.{name} can only be used inside"):
            getattr(ptxpy, name)()
