"""Fuzzing the frontend: any input gives a TypedModule or a CompileError, never another exception
(and, for mutated kernels, the whole pipeline: PTX that assembles, or a CompileError).

Three generators: random token soups, random mutations of valid kernels, and valid kernels with
a random unsupported construct spliced in. Each CompileError must also print as SPEC 2.6 says.
"""
import os
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ptxpy.transpiler import driver, ptxas, typed
from ptxpy.transpiler.errors import CompileError
from ptxpy.transpiler.frontend import check_kernel, parse_module

HEADER = """import math
import ptxpy
from ptxpy import Array, Const, bf16, f16, f32, f64, i8, i16, i32, i64, u8, u16, u32, u64
N = 8
EPS = 1e-6
TILE = (4, N)
"""

VALID_KERNELS = [
    """
@ptxpy.jit
def saxpy(x: Array[f32], y: Array[f32], a: f32, out: Array[f32]):
    i = ptxpy.global_id(0)
    if i < x.shape[0]:
        out[i] = a * x[i] + y[i]
""",
    """
@ptxpy.func
def clamp(v: f32, lo: f32, hi: f32) -> f32:
    return min(max(v, lo), hi)

@ptxpy.func
def dm(a: i32, b: i32) -> tuple[i32, i32]:
    return a // b, a % b

@ptxpy.jit
def loops(x: Array[f32, 2], out: Array[f32], K: Const[int] = 4):
    row = ptxpy.global_id()
    acc = 0.0
    for j in range(x.shape[1]):
        acc += clamp(x[row, j], -1.0, 1.0) * K
    for k in ptxpy.static_range(N):
        if k == 2:
            continue
        acc += k
    q, r = dm(row, 3)
    while q > 0 and r != 1:
        q -= 1
    out[row] = acc if q >= 0 else -acc
""",
    """
@ptxpy.jit
def shared(x: Array[f32], out: Array[f32], h: f16):
    s = ptxpy.shared_array((64, 2), f32)
    m = ptxpy.cdiv(len(x), 2)
    d = ptxpy.shared_array((ptxpy.block_dim.x, max(m, 1)), f32)
    t = ptxpy.thread_idx.x
    d[t, 0] = x[t]
    s[t, 0] = x[t] ** 2
    ptxpy.syncthreads()
    v0, v1, v2, v3 = x[t:t + 4]
    out[t:t + 4] = (v3, v2, v1, v0)
    ptxpy.atomic_add(out, t, math.sqrt(s[t, 0]) + h * 2.0)
    b = ptxpy.ballot_sync(t > 3)
    print("t", t, b, s[t, 0])
    assert t < 64, "too many threads"
    w = ptxpy.shfl_down_sync(x[t], 1) + ptxpy.warp_sum(x[t])
    out[t] = f32(i64(w) >> 1) / 3 + float(int(w)) + EPS
""",
    """
@ptxpy.jit
def views(x: Array[u8, 2], s: Array[i32, 2], out: Array[u32]):
    w = x.view(u32)
    p = s.view(u64)
    t = ptxpy.thread_idx.x
    sh = ptxpy.shared_array(16, u16)
    sw = sh.view(u64)
    if t < w.shape[1]:
        out[t] = w[0, t] + u32(p[t, 0] >> 32) + u32(sw[t % 4]) + ptxpy.warp_cumsum(w[1, t])
        ptxpy.store_release(p, (t, 0), u64(t))
""",
]

UNSUPPORTED = [
    "class A: pass", "def inner(): pass", "f = lambda q: q", "l = [1, 2]", "d = {1: 2}",
    "s = {1}", "c = [q for q in range(3)]", "g = (q for q in range(3))", "try:\n    pass\nexcept Exception:\n    pass",
    "with open('f') as fh: pass", "raise ValueError()", "global N", "nonlocal N", "del x",
    "import os", "from math import sqrt", "(y := 3)", "yield 1", "t = 'text'", "t = f'{N}'",
    "a, *b = 1, 2, 3", "x[1:2:3] = 1", "x[::2]", "async def co(): pass", "match N:\n    case 1:\n        pass",
    "return 1", "break", "continue", "x = 3", "N = x", "print(x)", "for q in [1, 2]: pass",
    "for q in range(1.5): pass", "for q in ptxpy.static_range(n): pass", "x[0] = x", "y = x ** n",
    "y = math.atan2(1.0, 2.0)", "y = ptxpy.global_id(5)", "y = foo(1)", "y = np.zeros(3)",
    "y = x.shape[7]", "y = x[0, 0]", "y = x[1.5]", "y = x[True]", "x.shape[0] = 3", "y = len(n)",
    "y = n(3)", "y = ptxpy.shared_array(n, f32)", "y = ptxpy.atomic_add(n, 0, 1)", "y = sum(x)",
    "y = 1 if n else 2.0\ny = i64(3)", "assert n, n", "print(sep=n)", "y = abs()", "y = min(1)",
    "y = 10 ** 100", "y = 1 // 0", "y = 1.0 % 0.0", "y = n.real", "y = N.bit_length()",
    "y = x @ x", "y = n << 2.0", "y = ~1.5", "y = 1 < 2 in 3", "y = n is None", "y = None",
    "y = ...", "y = 1j", "y = -(-(2 ** 64))", "y = int(math.inf)", "y = ptxpy.cdiv(1, 0)",
    "y: Array[f32] = 3", "y: f32\ny = x", "for q in range(0, 5, 0): pass",
    "for q in ptxpy.static_range(10 ** 9): pass", "for q in ptxpy.static_range(2 ** 64): pass", "y = ptxpy.local_array((0,), f32)",
    "y = ptxpy.local_array((2, 2), q)", "y = ptxpy.fma(1.0)", "y = ptxpy.shfl_sync(True, 1)",
    "y, z = x[0:3]", "y, z = x[n:n + 2]", "x[0:2] = 1", "y = dm(1, 2)", "y = clamp(x)",
    "y = clamp(1.0, 2.0, hi=3.0, lo=1.0)", "y = saxpy(x)", "y = ptxpy.nope()", "y = math.nope",
    "y = ptxpy", "y = math", "y = print", "y = abs", "y = ptxpy.global_id",
    "x[0], x[1] = x[1], x[0]", "y, x[n] = dm(1, 2)", "x[0], y = dm(1, 2)", "x[n], n = n, x[0]",
    "x[0:2], y = 1, 2", "(y, z), x[0] = 1, 2", "x[0], y = print()", "x[0], y = 1",
    "if N > 100:\n    y = undefined_name", "if N:\n    pass\nelse:\n    y = undefined_name",
    "y = undefined_name if N < 0 else 1", "y = N < 0 and undefined_name",
    "for q in ptxpy.static_range(3):\n    q = 1", "for q in ptxpy.static_range(3):\n    y, z = x[q:q + 2 * q]",
    "for q in ptxpy.static_range(3):\n    for q in range(2):\n        pass",
    "for q in ptxpy.static_range(2):\n    t = ptxpy.local_array(q + 1, f32)",
    "for q in ptxpy.static_range(0):\n    y = undefined_name", "for n in ptxpy.static_range(3):\n    pass",
    "y = TILE", "y = TILE[2]", "y = TILE[n]", "y = TILE[0:1]", "y = TILE[0, 1]", "y = TILE()",
    "y = TILE.x", "y = N[0]", "y = TILE[0][0]", "y = ptxpy.shared_array(TILE * 2, f32)",
    "y = ptxpy.local_array(TILE + (0,), f32)", "for q in range(TILE[1.0]): pass",
    "y = ptxpy.WARP_SIZE()", "y = math.pi()", "y = ptxpy.thread_idx.x()", "y = EPS(1)",
    "y = math.fmod(1.0)", "y = math.fmod(x, 0.0)", "y = n % 0.0",
    "y = ptxpy.shared_array(len(x) // 0, f32)", "y = ptxpy.shared_array(len(x) - 2 ** 40, f32)",
    "y = ptxpy.shared_array(-len(x), f32)", "y = ptxpy.shared_array(min(len(x)), f32)",
    "y = ptxpy.shared_array((ptxpy.block_dim.x, 1.5), f32)", "y = ptxpy.shared_array(out.shape[n], f32)",
    "m = len(x)\nm += 1\ny = ptxpy.shared_array(m, f32)", "y = ptxpy.local_array(ptxpy.block_dim.x, f32)",
    "y = ptxpy.shared_array((n % 3, -n), f32)", "n = 2\ny = ptxpy.shared_array(n, f32)",
    "y = ptxpy.shared_array(len(x) % 0, f32)", "y = ptxpy.shared_array(+n - -len(x), f32)",
    "y = ptxpy.shared_array(n % (n - n), f32)", "y = ptxpy.shared_array(-(-2 ** 31), f32)",
    "y = ptxpy.mma_sync((1.0,), (2.0,), (3.0,))", "y = ptxpy.mma_sync(x, x, x)",
    "p, q, r, s = ptxpy.mma_sync((x[0], x[1], x[2], x[3]), (x[n], 1), (0.0, 0.0, 0.0, n))",
    "p, q, r, s = ptxpy.mma_sync((x[0],) * 4, (x[0], x[1]), (0.0, 0.0, 0.0, 0.0))",
    "y = ptxpy.mma_sync((x[0], x[1], x[2], x[3]), (x[n], 1), (0.0, 0.0, 0.0, 0.0))[2]",
    "p, q, r, s = ptxpy.mma_sync((i8(n),) * 16, (u8(1),) * 8, (n, n, n, n))",
    "p, q, r, s = ptxpy.mma_sync((0,) * 16, (1,) * 8, (n, n, n, n))",
    "p, q, r, s = ptxpy.mma_sync((i8(n),) * 15 + (u8(n),), (i8(1),) * 8, (0, 0, 0, 0.5))",
    "y = ptxpy.mma_sync((u8(n),) * 16, (i8(n),) * 8, (x[0], n, n, n))",
    "s = ptxpy.shared_array((8, 16), i8)\np, q, r, t = ptxpy.ldmatrix(s[n, 0:16], 1)",
    "s = ptxpy.shared_array((8, 16), u8)\np, q, r, t = ptxpy.ldmatrix(s[n, 0:16], 1, trans=True)",
    "s = ptxpy.shared_array((8, 2), f64)\np = ptxpy.ldmatrix(s[n, 0:2], 1)",
    "ptxpy.cp_async(x[0:4], x[4:8])", "ptxpy.cp_async(x, x)", "ptxpy.cp_async(x[0:3], out[0:3])",
    "s = ptxpy.shared_array(8, f32)\nptxpy.cp_async(s[0:4], x[n:n + 2])",
    "s = ptxpy.shared_array(8, f32)\nptxpy.cp_async(s[0:4], x[n:n + 4], 1.5)",
    "s = ptxpy.shared_array(8, i32)\nptxpy.cp_async(s[0], x[n])", "ptxpy.cp_async_wait(n)",
    "ptxpy.cp_async_wait(8)", "ptxpy.cp_async_commit(1)", "y = ptxpy.cp_async_wait()",
    "y = ptxpy.ldmatrix(x[0:4], 4)", "y = ptxpy.ldmatrix(x, 1)", "y = ptxpy.ldmatrix(x[0:4], n)",
    "s = ptxpy.shared_array((8, 8), f16)\np, q = ptxpy.ldmatrix(s[n, 0:8], 1, trans=n)",
    "s = ptxpy.shared_array((8, 8), f16)\np, q = ptxpy.ldmatrix(s[n, 0:8], 1, True)",
    "s = ptxpy.shared_array((8, 4), f32)\np = ptxpy.ldmatrix(s[n, 0:4], 1, trans=True)",
    "s = ptxpy.shared_array((8, 4), f32)\np, q = ptxpy.ldmatrix(s[n, 0:4], 1)",
    "s = ptxpy.shared_array((8, 8), f16)\np, q, r, t = ptxpy.ldmatrix(s[n, 0:8], 2)",
    "a = ptxpy.local_array((4, 4), f32)\nptxpy.wgmma(a, (x[0], x[1]), 1, bf16)",
    "a = ptxpy.local_array((4, 4), f32)\nptxpy.wgmma(a, (x[0], x[1], x[2], x[3]), n, f32)",
    "a = ptxpy.local_array((4, 4), f32)\nptxpy.wgmma(a, (x[0], x[1], x[2], x[3]), 1, f32, trans_a=True)",
    "a = ptxpy.local_array(8, f32)\nptxpy.wgmma(a, (x[0], x[0], x[0], x[0], x[0], x[0], x[0], x[0]), 0, f16)",
    "a = ptxpy.local_array(8, f32)\nptxpy.wgmma(a, (*x,), 0, bf16)",
    "a = ptxpy.local_array(8, f32)\nptxpy.wgmma(a, 0, 0, \"e4m3\")",
    "y = ptxpy.to_fp8(x[0], \"e4m3\")", "y = ptxpy.to_fp8(n, \"e5m2\")", "y = ptxpy.to_fp8(x[0])",
    "y = ptxpy.from_fp8(n, 'e4m3')", "y = ptxpy.from_fp8(u8(n), format=\"e5m2\")", "y = ptxpy.from_fp8(u8(1), n)",
    "a = ptxpy.local_array(8, f32)\nptxpy.wgmma(a, 0, 0, \"e5m2\", trans_a=True)",
    "a = ptxpy.local_array(8, f32)\nptxpy.wgmma(a, 0, 0, 'fp8')", "a = ptxpy.local_array(8, f32)\nptxpy.wgmma(a, 0, 0, b'e4m3')",
    "a = ptxpy.local_array(8, i32)\nptxpy.wgmma(a, 0, 0, i8)", "a = ptxpy.local_array(8, i32)\nptxpy.wgmma(a, 0, 0, u8, trans_b=True)",
    "a = ptxpy.local_array(10, i32)\nptxpy.wgmma(a, 0, 0, i8, accumulate=n)",
    "a = ptxpy.local_array(8, f32)\nptxpy.wgmma(a, 0, 0, i8)", "a = ptxpy.local_array(8, i32)\nptxpy.wgmma(a, (n, n), 0, u8)",
    "b = ptxpy.shared_array(2, u64)\nptxpy.mbarrier_wait(b[n])", "ptxpy.mbarrier_init(x[0], 1)",
    "b = ptxpy.shared_array(2, u64)\nptxpy.cp_async_bulk(x[0:4], out[0:4], b[0])",
    "s = ptxpy.shared_array((8, 4), f32)\nb = ptxpy.shared_array(2, u64)\nptxpy.tma_load(s, x[0:8], b[0])",
    "s = ptxpy.shared_array((8, 4), f32)\nb = ptxpy.shared_array(2, u64)\nptxpy.tma_load(s, x[...], b[0])",
    "s = ptxpy.shared_array(8, f32)\nb = ptxpy.shared_array(2, u64)\nptxpy.tma_load(s, x[n:], b[0])",
    "s = ptxpy.shared_array(8, f32)\nb = ptxpy.shared_array(2, u64)\nptxpy.tma_load(s, x[0:8:2], b[0])",
    "s = ptxpy.shared_array(8, f32)\nb = ptxpy.shared_array(2, u64)\nptxpy.tma_load(s[n], x[0:8], b[0])",
    "s = ptxpy.shared_array(8, f32)\nb = ptxpy.shared_array(2, u64)\nptxpy.tma_load(s, x[0:8], b[0], swizzle=n)",
    "s = ptxpy.shared_array(32, f32)\nb = ptxpy.shared_array(2, u64)\nptxpy.tma_load(s, x[0:32], b[0], swizzle=64)",
    "s = ptxpy.shared_array(8, f32)\nb = ptxpy.shared_array(2, u64)\nptxpy.tma_load(x[0:8], s, b[0])",
    "s = ptxpy.shared_array(8, f32)\nptxpy.tma_store(s, x[0:8])", "ptxpy.tma_store(x[0:8], out)",
    "s = ptxpy.shared_array(8, f32)\ny = ptxpy.tma_store(out[0:8], s)",
    "s = ptxpy.shared_array(8, f32)\nptxpy.tma_store(out[0:8], s[0:8:2])",
    "s = ptxpy.shared_array((2, 8), f32)\nptxpy.tma_store(out[0:8], s[:, 0])",
    "ptxpy.setmaxnreg_inc(232)", "ptxpy.setmaxnreg_dec(n)", "ptxpy.setmaxnreg_dec(24.0)",
    "y = ptxpy.setmaxnreg_inc(240)", "ptxpy.setmaxnreg_inc(count=1000)",
    "y = ptxpy.match_any_sync(x)", "y = ptxpy.match_all_sync(0xffffffff, x[0])",
    "ptxpy.nanosleep(x[0])", "y = ptxpy.nanosleep(n)", "y = ptxpy.dp4a(x[0], n, n)",
    "y = ptxpy.dp4a(n, n)", "y = ptxpy.dp4a(n, 2**40, 1)", "y = ptxpy.syncthreads_count()",
    "y = ptxpy.syncthreads_and(x)", "if ptxpy.syncthreads_or(n > 0):\n    out[0] = 1.0",
    "p = ptxpy.map_shared_rank(x, 0)\nout[0] = p[0]", "p = ptxpy.map_shared_rank(n, 0)",
    "s = ptxpy.shared_array(4, f32)\np = ptxpy.map_shared_rank(s)",
    "s = ptxpy.shared_array(4, f32)\np = ptxpy.map_shared_rank(s, x[0])",
    "s = ptxpy.shared_array(4, f32)\np = ptxpy.map_shared_rank(s, n)\np[0, 1] = 1.0",
    "s = ptxpy.shared_array(4, f32)\nn = ptxpy.map_shared_rank(s, 0)",
    "s = ptxpy.shared_array(4, f32)\nout[0] = ptxpy.map_shared_rank(s, 1)[0]",
    "s = ptxpy.shared_array(4, f32)\np = ptxpy.map_shared_rank(s, 1)\nq = ptxpy.map_shared_rank(p, 0)",
    "s = ptxpy.shared_array(2, u64)\np = ptxpy.map_shared_rank(s, 1)\nptxpy.mbarrier_init(p[0], 1)",
    "s = ptxpy.shared_array(4, f32)\np = ptxpy.map_shared_rank(s, 1)\nb = ptxpy.shared_array(2, u64)\n"
    "ptxpy.cp_async_bulk(p[0:4], x[0:4], b[0])",
    "y = ptxpy.cluster_sync()", "ptxpy.cluster_rank(n)", "y = ptxpy.cluster_dim",
    "y = ptxpy.cluster_idx.w", "ptxpy.cluster_wait(1)",
    "y = ptxpy.elect_one(1)", "y = ptxpy.elect_one(0xffffffff, n)", "ptxpy.fence_mbarrier_init(n)",
    "b = ptxpy.shared_array(2, u64)\ns = ptxpy.shared_array(8, f32)\n"
    "ptxpy.cp_async_bulk(s[0:8], x[0:8], b[0], multicast=x[0])",
    "y = ptxpy.load_acquire(x, 0, scope=\"device\")", "y = ptxpy.load_acquire(x, n, \"gpu\")",
    "y = ptxpy.load_acquire(x, n, sem=\"relaxed\")", "y = ptxpy.load_relaxed(x[0])",
    "y = ptxpy.load_relaxed(x, (0, 1))", "y = ptxpy.load_acquire(n, 0)", "ptxpy.store_release(x, 0)",
    "ptxpy.store_release(x[n], 1.0)", "y = ptxpy.store_relaxed(out, n, 1.0, scope=\"cta\")",
    "a = ptxpy.local_array(4, i32)\nptxpy.store_relaxed(a, n, 1)",
    "ptxpy.store_relaxed(out, n, x, scope=\"sys\")", "ptxpy.store_release(out, n, 1.0, scope=N)",
    "ptxpy.atomic_add(out, 0, 1.0, sem=\"seq_cst\")", "ptxpy.atomic_add(out, 0, 1.0, scope=f'gpu')",
    "ptxpy.atomic_cas(out, n, 1.0, 2.0, sem=\"acquire\", scope=\"cluster\")",
    "y = ptxpy.atomic_max(out, n, x[0], \"acq_rel\")", "ptxpy.atomic_or(out, n, 1, order=\"release\")",
    "while ptxpy.load_acquire(x, 0) == 0.0:\n    pass", "ptxpy.load_relaxed(out, n, scope=b'cta')",
    "w = x.view(u8)", "w = x.view(u64)\nv = w.view(u64)", "out[0] = x.view(i32)[0]",
    "w = x.view(n)", "w = x.view(u64, u32)", "w = n.view(u64)", "x.view(u64)",
    "a = ptxpy.local_array(4, i32)\nw = a.view(i64)", "w = x.view(dtype=bool)",
    "w = out.view(f64)\nw = out.view(i64)", "w = x.view(u64)\nw[0] = 1.5",
    "y = ptxpy.warp_cumsum(x[0] > 1.0)", "y = ptxpy.warp_cumsum(0xffffffff, n)",
    "y = ptxpy.warp_cumsum()", "y = ptxpy.warp_cumsum(n, width=8)",
    "y = ptxpy.lanemask_lt(n)", "y = ptxpy.lanemask_gt(width=8)", "ptxpy.lanemask_eq = 1",
    "y: i32 = ptxpy.lanemask_le()", "y = ptxpy.lanemask_ge() + 1.5",
]

TOKENS = [
    "x", "y", "n", "i", "out", "a", "N", "EPS", "ptxpy", "math", "f32", "i32", "Array", "Const",
    "range", "ptxpy.static_range", "ptxpy.global_id(0)", "print", "abs", "min", "(", ")", "[",
    "]", ",", ":", "=", "+=", "==", "<", "+", "-", "*", "/", "//", "%", "**", "&", "|", "~",
    "<<", "not", "and", "or", "if", "else", "elif", "for", "in", "while", "return", "break",
    "continue", "pass", "def", "lambda", "class", "0", "1", "2.5", "1e40", "2**70", "True",
    "None", "'s'", ".", "shape", "\n", "\n    ", "\n        ", " ", "@ptxpy.jit", "@ptxpy.func",
    "->", "tuple", ";", "\\", "#", "\t", "\x00", "é", "1_000", "0x10", "...", "*", "yield",
    "TILE", "[0]", "math.fmod", "ptxpy.shared_array(", "ptxpy.block_dim.x", "len(x)",
    "ptxpy.tma_load(", "ptxpy.tma_store(", "swizzle=128", "u64", "ptxpy.setmaxnreg_dec(",
    "ptxpy.dp4a(", "ptxpy.match_any_sync(", "ptxpy.syncthreads_count(",
    "ptxpy.map_shared_rank(", "ptxpy.cluster_sync()", "ptxpy.cluster_rank()", "ptxpy.elect_one()",
    "multicast=3", "ptxpy.load_acquire(", "ptxpy.store_release(", "scope=\"cta\"",
    "sem=\"acq_rel\"", "ptxpy.lanemask_lt()",
]

KERNEL_HEAD = "\n@ptxpy.jit\ndef k(x: Array[f32], n: i32, out: Array[f32]):\n"
LOC_PREFIX = re.compile(r"^[^\n]*?(:\d+:\d+)?: error: ")


def check_any(source: str) -> None:
    """Parse and check every kernel; only CompileErrors may come out, and they must print."""
    try:
        parsed = parse_module(source, "fuzz.py")
    except CompileError as err:
        assert_prints(err, source)
        return
    for name in parsed.kernels:
        try:
            module = check_kernel(parsed, name)
        except CompileError as err:
            assert_prints(err, source)
        else:
            assert isinstance(module, typed.TypedModule)
            typed.format_module(module)


def assert_prints(err: CompileError, source: str) -> None:
    text = str(err)
    assert LOC_PREFIX.match(text), text
    assert "internal compiler error" not in text, text
    assert err.filename == "fuzz.py"
    if err.loc is not None:
        line, col = err.loc
        assert 1 <= line <= max(1, len(source.splitlines()) + 1), text
        assert col >= 0, text


# PTXPY_FUZZ_EXAMPLES=5000 runs a longer campaign
FUZZ = settings(max_examples=int(os.environ.get("PTXPY_FUZZ_EXAMPLES", 300)), deadline=None,
                suppress_health_check=list(HealthCheck))


@FUZZ
@given(st.lists(st.sampled_from(TOKENS), max_size=40))
def test_token_soup_module(tokens):
    check_any(HEADER + " ".join(tokens))


@FUZZ
@given(st.lists(st.lists(st.sampled_from(TOKENS), min_size=1, max_size=12), min_size=1, max_size=6))
def test_token_soup_kernel_body(lines):
    body = "".join("    " + " ".join(line).replace("\n", " ") + "\n" for line in lines)
    check_any(HEADER + VALID_KERNELS[1] + KERNEL_HEAD + body)


@FUZZ
@given(st.sampled_from(VALID_KERNELS), st.data())
def test_mutated_valid_kernels(kernel, data):
    source = HEADER + kernel
    for _ in range(data.draw(st.integers(1, 3))):
        source = data.draw(mutation(source))
    check_any(source)


@settings(max_examples=max(20, FUZZ.max_examples // 6), deadline=None,
          suppress_health_check=list(HealthCheck))
@given(st.sampled_from(VALID_KERNELS), st.data())
def test_mutated_valid_kernels_through_the_backend(kernel, data):
    """The whole pipeline, to PTX, on mutated kernels: PTX that ptxas assembles, or a located
    error (a mutant named `add_vectéors` once reached ptxas, which takes ASCII names only)."""
    source = HEADER + kernel
    for _ in range(data.draw(st.integers(1, 3))):
        source = data.draw(st.one_of(mutation(source), renamed(source)))
    try:
        kernels = driver.transpile(source, "fuzz.py")
    except CompileError as err:
        assert_prints(err, source)
        return
    for text in kernels.values():
        if ptxas.find_ptxas() is not None:
            ok, log, _ = ptxas.assemble(text, "sm_90")
            assert ok, log


def renamed(source: str):
    """`source` with every use of one of its functions, parameters or arrays given a non-ASCII
    letter, which Python allows and PTX does not."""
    names = sorted(set(re.findall(r"def (\w+)\(|(\w+): [A-Z]|(\w+) = ptxpy\.\w+_array", source)))
    names = sorted({name for group in names for name in group if name})
    return st.sampled_from(names).map(lambda name: re.sub(rf"\b{name}\b", name + "é", source))


def mutation(source: str):
    n = len(source)
    delete = st.tuples(st.integers(0, n), st.integers(0, 6)).map(
        lambda t: source[:t[0]] + source[t[0] + t[1]:])
    insert = st.tuples(st.integers(0, n), st.sampled_from(TOKENS)).map(
        lambda t: source[:t[0]] + t[1] + source[t[0]:])
    lines = source.splitlines()
    swap_lines = st.tuples(st.integers(0, len(lines) - 1), st.integers(0, len(lines) - 1)).map(
        lambda t: "\n".join(_swapped(lines, *t)))
    words = re.findall(r"\w+|\S", source)
    replace_word = st.tuples(st.sampled_from(words), st.sampled_from(TOKENS)).map(
        lambda t: source.replace(t[0], t[1], 1))
    numbers = [match.span() for match in re.finditer(r"(?<![\w.])\d+(\.\d+)?(?![\w.])", source)]
    replace_number = st.tuples(st.sampled_from(numbers), st.sampled_from(EXTREME_NUMBERS)).map(
        lambda t: source[:t[0][0]] + t[1] + source[t[0][1]:])
    return st.one_of(delete, insert, swap_lines, replace_word, replace_number)


#: what a number of a valid kernel becomes in `mutation`: the ends of every type and past them
EXTREME_NUMBERS = ["0", "-1", "31", "32", "64", "255", "65536", "2 ** 31", "2 ** 32", "-2 ** 63",
                   "2 ** 64", "10 ** 30", "(1 << 70)", "1e308", "1e-320", "-0.0", "1e40"]


def _swapped(lines, a, b):
    lines = list(lines)
    lines[a], lines[b] = lines[b], lines[a]
    return lines


@FUZZ
@given(st.sampled_from(UNSUPPORTED), st.sampled_from(VALID_KERNELS), st.data())
def test_unsupported_construct_in_kernel(snippet, kernel, data):
    source = HEADER + VALID_KERNELS[1] + kernel
    lines = source.splitlines()
    body_lines = [k for k, line in enumerate(lines) if line.startswith("    ") and not line.startswith("     ")]
    at = data.draw(st.sampled_from(body_lines))
    indented = "\n".join("    " + part for part in snippet.splitlines())
    check_any("\n".join(lines[:at] + [indented] + lines[at:]))


def test_every_unsupported_snippet_is_a_compile_error_or_accepted():
    for snippet in UNSUPPORTED:
        body = "\n".join("    " + part for part in snippet.splitlines())
        check_any(HEADER + VALID_KERNELS[1] + KERNEL_HEAD + "    i = 0\n" + body + "\n")


def test_valid_kernels_compile():
    for kernel in VALID_KERNELS:
        parsed = parse_module(HEADER + kernel, "fuzz.py")
        for name in parsed.kernels:
            check_kernel(parsed, name)


SCALAR_PARAMS = "b: bool, c: i8, s: u16, n: i32, u: u32, l: i64, q: u64, h: f16, g: bf16, f: f32, d: f64"
ATOMS = ["b", "c", "s", "n", "u", "l", "q", "h", "g", "f", "d", "0", "1", "-1", "7", "255", "300",
         "2147483648", "2**63", "-2**63", "18446744073709551615", "0.5", "1e40", "True", "False",
         "math.pi", "math.inf", "N", "EPS", "K", "x[n]", "x.shape[0]", "len(x)", "x.size",
         "ptxpy.thread_idx.x", "ptxpy.WARP_SIZE"]
BINARY = ["+", "-", "*", "/", "//", "%", "**", "&", "|", "^", "<<", ">>", "<", "<=", "==", "!=",
          "and", "or"]
CALLS = ["abs({})", "min({}, {})", "max({}, {}, {})", "int({})", "float({})", "bool({})",
         "f16({})", "u8({})", "i64({})", "math.sqrt({})", "math.isnan({})", "math.copysign({}, {})",
         "ptxpy.fma({}, {}, {})", "ptxpy.cdiv({}, {})", "ptxpy.shfl_xor_sync({}, {})",
         "ptxpy.warp_max({})", "ptxpy.ballot_sync({})", "ptxpy.atomic_add(x, {}, {})",
         "ptxpy.load_relaxed(x, {})", "ptxpy.atomic_max(x, {}, {}, sem=\"acquire\", scope=\"cta\")",
         "ptxpy.rsqrt({})", "-{}", "~{}", "not {}", "({} if {} else {})", "({} < {} <= {})"]


def expressions():
    return st.recursive(
        st.sampled_from(ATOMS),
        lambda inner: st.one_of(
            st.tuples(inner, st.sampled_from(BINARY), inner).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
            st.tuples(st.sampled_from(CALLS), st.lists(inner, min_size=3, max_size=3)).map(
                lambda t: t[0].format(*t[1]))),
        max_leaves=8)


@FUZZ
@given(expressions(), st.sampled_from(["r = {}", "x[0] = {}", "if {}:\n        pass",
                                       "for i in range({}):\n        pass", "y = x[{}]",
                                       "n = {}", "d += {}", "print({}, {})"]))
def test_random_typed_expressions(expression, statement):
    body = "    " + statement.format(expression, expression) + "\n"
    check_any(HEADER + f"\n@ptxpy.jit\ndef k(x: Array[f32], {SCALAR_PARAMS}, K: Const[int] = 3):\n" + body)
