"""Variants of the examples timed side by side on the GPU: is a rewrite of an example faster?

    python benchmarks/variants.py [--only rms softmax add sum transpose matmul] [--rounds 2]

Each variant is a copy of an example with a few lines replaced (written to a temporary folder
and imported from there), so a variant is as long as its change. Times are CUPTI kernel
durations of the whole call (`kernels._profiled_time`), variants taking turns `--rounds` times.
For the sum it also lists the kernels of one call of ptxpy and of XLA, with their durations.
Output: a table on stdout and `$OUT/variants.json`.
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import tempfile

import numpy as np

import ptxpy

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "examples"), os.path.join(ROOT, "benchmarks")]
FOLDER = tempfile.mkdtemp(prefix="ptxpy-variants-")
sys.path.insert(0, FOLDER)

MATMUL_LAYOUT = """    tm = (t // 16) * 4             # micro-tile rows tm..tm+3 and tm+64..tm+67
    tn = (t % 16) * 4              # micro-tile columns tn..tn+3 and tn+64..tn+67
    tm2 = tm + HALF_M
    tn2 = tn + HALF_N
"""
# Warp tiles of 32 x 64: a warp's lanes as 4 rows x 8 columns of micro-tiles, so that one
# 128-bit shared load of a warp reads 4 (x) or 8 (y) distinct float4s: one wavefront each.
MATMUL_WARP_LAYOUT = """    warp = t // 32
    lane = t % 32
    tm = (warp // 2) * 32 + (lane // 8) * 4
    tn = (warp % 2) * 64 + (lane % 8) * 4
    tm2 = tm + 16
    tn2 = tn + 32
"""


def variant_module(example: str, name: str, edits: list) -> object:
    """examples/EXAMPLE.py with each (old, new) of `edits` replaced once, imported as NAME; an
    `old` of the form (START, END) replaces the text from START up to END."""
    source = open(os.path.join(ROOT, "examples", example + ".py")).read()
    for old, new in edits:
        if isinstance(old, tuple):
            start, end = source.find(old[0]), source.find(old[1])
            if start < 0 or end < start:
                raise ValueError(f"{example}: no text between {old[0][:40]!r} and {old[1][:40]!r}")
            old = source[start:end]
        if old not in source:
            raise ValueError(f"{example}: the text to replace is not there: {old[:60]!r}")
        source = source.replace(old, new, 1)
    with open(os.path.join(FOLDER, name + ".py"), "w") as f:
        f.write(source)
    return importlib.import_module(name)


def sum_variants():
    import peers
    import reduction
    yield "sum 2^26", "XLA (jnp.sum)", peers.xla("sum")
    yield "sum 2^26", "base (512 threads, up to 8192 blocks: one pass of the loop)", reduction.total
    # session 12's example (1024 blocks of 256 threads, 16 passes) and neighbours of the base
    for block, blocks in ((256, 1024), (256, 16384), (512, 4096)):
        module = variant_module("reduction", f"reduction_{block}_{blocks}", [
            ("BLOCK = 512\n", f"BLOCK = {block}\n"),
            ("MAX_BLOCKS = 8192\n", f"MAX_BLOCKS = {blocks}\n")])
        yield "sum 2^26", f"{block} threads, up to {blocks} blocks", module.total


ADD_BODY_START = "    i = ptxpy.global_id(0) * VEC"
ADD_BODY_END = "\n\ndef main("


def add_body(per_thread: int) -> str:
    """The kernel body with `per_thread` float4s per input per thread, BLOCK * VEC elements
    apart within the block's chunk, all loaded before any is stored."""
    fours = [[f"{v}{u}_{e}" for e in range(4)] for u in range(per_thread) for v in "xy"]
    lines = [f"    base = ptxpy.program_id(0) * (BLOCK * VEC * {per_thread}) + ptxpy.thread_idx.x * VEC\n",
             f"    if base + {per_thread - 1} * BLOCK * VEC + VEC <= n:\n"]
    for u in range(per_thread):
        for k, v in enumerate("xy"):
            names = fours[2 * u + k]
            lines.append(f"        {', '.join(names)} = {v}[base + {u} * BLOCK * VEC:"
                         f"base + {u} * BLOCK * VEC + VEC]\n")
    for u in range(per_thread):
        xs, ys = fours[2 * u], fours[2 * u + 1]
        sums = ", ".join(f"{a} + {b}" for a, b in zip(xs, ys))
        lines.append(f"        out[base + {u} * BLOCK * VEC:base + {u} * BLOCK * VEC + VEC] = ({sums})\n")
    lines += ["    else:\n",
              f"        for u in ptxpy.static_range({per_thread}):\n",
              "            i = base + u * BLOCK * VEC\n",
              "            for j in range(i, min(i + VEC, n)):\n",
              "                out[j] = x[j] + y[j]\n"]
    return "".join(lines)


def add_variants():
    import add_vectors
    import peers
    yield "add 2^28", "XLA (x + y)", peers.xla("add")
    yield "add 2^28", "base (256 threads, one float4 per thread)", add_vectors.add_vectors
    for block in (128, 512):
        module = variant_module("add_vectors", f"add_vectors_b{block}", [
            ("BLOCK = 256 ", f"BLOCK = {block} ")])
        yield "add 2^28", f"{block} threads, one float4 per thread", module.add_vectors
    for per_thread in (2, 4):
        module = variant_module("add_vectors", f"add_vectors_u{per_thread}", [
            ((ADD_BODY_START, ADD_BODY_END), add_body(per_thread)),
            ("BLOCK * VEC),)", f"BLOCK * VEC * {per_thread}),)")])
        yield "add 2^28", f"256 threads, {per_thread} float4s per thread", module.add_vectors


def transpose_variants():
    import transpose
    yield "transpose 8192^2", "base (64 x 64 tile, 64 x 8 threads)", transpose.transpose
    for tile, rows in ((32, 8), (64, 4), (64, 16)):
        module = variant_module("transpose", f"transpose_{tile}_{rows}", [
            ("TILE = 64\n", f"TILE = {tile}\n"), ("ROWS = 8 ", f"ROWS = {rows} ")])
        yield "transpose 8192^2", f"{tile} x {tile} tile, {tile} x {rows} threads", module.transpose


def matmul_variants():
    import matmul
    warp = variant_module("matmul", "matmul_warp", [
        (MATMUL_LAYOUT, MATMUL_WARP_LAYOUT),
        ("row = m0 + tm + r % 4 + (r // 4) * HALF_M", "row = m0 + tm + r % 4 + (r // 4) * 16"),
        ("col2 = col + HALF_N", "col2 = col + 32")])
    rolled = variant_module("matmul", "matmul_rolled", [
        ("for k in ptxpy.static_range(BK):", "for k in range(BK):")])
    yield "matmul 4096^3", "base", matmul.matmul
    yield "matmul 4096^3", "warp tiles 32 x 64", warp.matmul
    yield "matmul 4096^3", "K step a run-time loop", rolled.matmul


def softmax_block_variants():
    """Softmax at 2048 x 8192, one row per block, with the example's launch shape and with
    128, 512 or 1024 threads instead (the row still in registers: 2048 / threads float4s each)."""
    import peers
    import softmax
    case = "softmax 2048x8192"
    yield case, "XLA", peers.xla("softmax")
    yield case, "Pallas", peers.pallas("softmax")
    base = softmax.launch_shape(8192)
    yield case, "base (%d threads, %d float4s each)" % base, softmax.softmax
    for threads in (128, 256, 512, 1024):
        if (threads, 2048 // threads) != base:
            yield case, f"{threads} threads, {2048 // threads} float4s each", \
                fixed_shape("softmax", "softmax_kernel", threads, 2048 // threads)


def fixed_shape(example: str, kernel: str, threads: int, cache: int, *scalars):
    """An example's row kernel with THREADS and CACHE given instead of picked; `scalars` follow
    the arrays (eps)."""
    module = importlib.import_module(example)
    fn = getattr(module, kernel)
    return lambda *arrays: fn(*arrays, *scalars, CACHE=cache, THREADS=threads)


def rms_fixed(threads: int, cache: int):
    return fixed_shape("rms_norm", "rms_norm_kernel", threads, cache, 1e-6)


def rms_candidates(cols: int):
    """(label, fn) for the block sizes other than the example's pick that could run rows of
    `cols` floats: 128 to 1024 threads holding the row in registers where 16 float4s per thread
    suffice (and every thread has one), and 128 or 256 threads reading it twice."""
    import rms_norm
    for threads in (128, 256, 512, 1024):
        cache = ptxpy.cdiv(cols, threads * 4)
        if cache <= 16 and threads * 4 <= cols and (threads, cache) != rms_norm.launch_shape(cols):
            yield f"{threads} threads, {cache} float4s each", rms_fixed(threads, cache)
    for threads in (128, 256):
        yield f"{threads} threads, the row read twice", rms_fixed(threads, 0)


def rms_variants():
    """The example (the launch shape it picks) against every other block size at 2048 x 8192,
    then one block looping over several rows (benchmarks/row_ceiling.py): 256 programs (8 rows
    each) or as many as fit at once, with or without the next row's loads issued before this
    row's sum."""
    import peers
    import rms_norm
    import row_ceiling
    case = "rms_norm 2048x8192"
    yield case, "XLA", peers.xla("rms_norm")
    yield case, "Pallas", peers.pallas("rms_norm")
    yield case, "base (%d threads, %d float4s each)" % rms_norm.launch_shape(8192), \
        lambda x, w: rms_norm.rms_norm(x, w, 1e-6)
    yield from ((case, label, fn) for label, fn in rms_candidates(8192) if "twice" not in label)
    for programs, prefetch in ((256, False), (396, False), (256, True), (264, True)):
        label = f"persistent, {programs} blocks" + (", next row prefetched" if prefetch else "")
        yield case, label, row_ceiling.rms_norm_persistent(programs, prefetch)


RMS_SHAPES = ((4096, 4096), (8192, 1024), (1024, 16384))


def rms_shape_variants():
    """RMS norm at the example's other GPU sizes, the launch shape the example picks against
    the others."""
    import peers
    import rms_norm
    for rows, cols in RMS_SHAPES:
        case = f"rms_norm {rows}x{cols}"
        yield case, "XLA", peers.xla("rms_norm")
        yield case, "base (%d threads, %d float4s each)" % rms_norm.launch_shape(cols), \
            lambda x, w: rms_norm.rms_norm(x, w, 1e-6)
        yield from ((case, label, fn) for label, fn in rms_candidates(cols))


def long_row_variants():
    """Softmax and layer norm with rows of 16384 floats: the launch shape the examples pick
    (512 threads, 8 float4s each in registers) against reading the row twice with 256 threads
    (their shape before) and, for softmax, 256 threads holding 16 float4s."""
    import layer_norm
    import peers
    import softmax
    case = "softmax 1024x16384"
    yield case, "XLA", peers.xla("softmax")
    yield case, "Pallas", peers.pallas("softmax")
    yield case, "base (%d threads, %d float4s each)" % softmax.launch_shape(16384), softmax.softmax
    yield case, "256 threads, 16 float4s each", fixed_shape("softmax", "softmax_kernel", 256, 16)
    yield case, "256 threads, the row read twice", fixed_shape("softmax", "softmax_kernel", 256, 0)
    case = "layer_norm 1024x16384"
    yield case, "XLA", lambda x, g, b: peers.xla("layer_norm")(x, g, b)
    yield case, "base (%d threads, %d float4s each)" % layer_norm.launch_shape(16384), \
        lambda x, g, b: layer_norm.layer_norm(x, g, b, 1e-5)
    yield case, "256 threads, the row read twice", \
        fixed_shape("layer_norm", "layer_norm_kernel", 256, 0, 1e-5)


def ceiling_variants():
    """The bytes of a 2048 x 8192 row kernel with no arithmetic: what any of them can reach."""
    import row_ceiling
    yield "negate 2048x8192", "XLA (-x)", lambda x: -x
    yield "negate 2048x8192", "one row per block, the row in registers", row_ceiling.row_negate
    yield "negate 2048x8192", "flat, one float4 per thread", row_ceiling.flat_negate


SOFTMAX_EXP_ONCE = [
    # step 1 keeps e = exp(x - m_own) in place of x (m_own: this thread's maximum; 0 where the
    # thread saw only -inf, so that no -inf - -inf arises) ...
    ("""                for e in ptxpy.static_range(4):
                    s += ptxpy.fast_exp(vals[4 * k + e] - m)""",
     """                for e in ptxpy.static_range(4):
                    vals[4 * k + e] = ptxpy.fast_exp(vals[4 * k + e] - m_own)
                    s += vals[4 * k + e]"""),
    ("""        for k in ptxpy.static_range(4 * CACHE):      # the values are at hand: no rescaling
            m = max(m, vals[k])
""", """        for k in ptxpy.static_range(4 * CACHE):      # the values are at hand: no rescaling
            m = max(m, vals[k])
        m_own = m if m != -math.inf else 0.0
"""),
    # ... and step 3 scales e by exp(m_own - m) / s: one exp per thread instead of one per value.
    ("""                out[row, j:j + 4] = (ptxpy.fast_exp(vals[4 * k] - m) * inv,
                                     ptxpy.fast_exp(vals[4 * k + 1] - m) * inv,
                                     ptxpy.fast_exp(vals[4 * k + 2] - m) * inv,
                                     ptxpy.fast_exp(vals[4 * k + 3] - m) * inv)""",
     """                out[row, j:j + 4] = (vals[4 * k] * scale, vals[4 * k + 1] * scale,
                                     vals[4 * k + 2] * scale, vals[4 * k + 3] * scale)"""),
    ("""    # 3. Normalise.
    if CACHE > 0:
""", """    # 3. Normalise.
    if CACHE > 0:
        scale = ptxpy.fast_exp(m_own - m) * inv
"""),
]


def softmax_variants():
    yield from softmax_block_variants()
    module = variant_module("softmax", "softmax_exp_once", SOFTMAX_EXP_ONCE)
    yield "softmax 2048x8192", "256 threads, exp once per value", module.softmax


def _rms_inputs(rows, cols):
    return lambda rng: (rng.standard_normal((rows, cols), np.float32), rng.standard_normal(cols, np.float32))


def _rms_reference(x, w):
    return x / np.sqrt(np.mean(x.astype(np.float64) ** 2, -1, keepdims=True) + 1e-6) * w


INPUTS = {
    "rms_norm 2048x8192": _rms_inputs(2048, 8192),
    "softmax 2048x8192": lambda rng: (rng.standard_normal((2048, 8192), np.float32),),
    "negate 2048x8192": lambda rng: (rng.standard_normal((2048, 8192), np.float32),),
    "add 2^28": lambda rng: tuple(rng.standard_normal(1 << 28, np.float32) for _ in range(2)),
    "sum 2^26": lambda rng: (rng.standard_normal(1 << 26, np.float32),),
    "transpose 8192^2": lambda rng: (rng.standard_normal((8192, 8192), np.float32),),
    "matmul 4096^3": lambda rng: tuple(rng.standard_normal((4096, 4096), np.float32) for _ in range(2)),
}
REFERENCE = {"rms_norm 2048x8192": _rms_reference,
             "softmax 2048x8192": lambda x: np.exp(x - x.max(-1, keepdims=True)) / np.exp(x - x.max(-1, keepdims=True)).astype(np.float64).sum(-1, keepdims=True),
             "negate 2048x8192": lambda x: -x.astype(np.float64),
             "add 2^28": lambda x, y: x.astype(np.float64) + y,
             "sum 2^26": lambda x: np.sum(x.astype(np.float64)), "transpose 8192^2": lambda x: x.T,
             "matmul 4096^3": lambda a, b: a.astype(np.float64) @ b}
AMOUNT = {"negate 2048x8192": (8 * 2048 * 8192, "TB/s"), "rms_norm 2048x8192": (8 * 2048 * 8192, "TB/s"), "softmax 2048x8192": (8 * 2048 * 8192, "TB/s"), "add 2^28": (12 << 28, "TB/s"), "sum 2^26": (4 << 26, "TB/s"), "transpose 8192^2": (8 * 8192 ** 2, "TB/s"),
          "matmul 4096^3": (2 * 4096 ** 3, "TFLOP/s")}
INPUTS["softmax 1024x16384"] = lambda rng: (rng.standard_normal((1024, 16384), np.float32),)
REFERENCE["softmax 1024x16384"] = REFERENCE["softmax 2048x8192"]
AMOUNT["softmax 1024x16384"] = (8 * 1024 * 16384, "TB/s")
INPUTS["layer_norm 1024x16384"] = lambda rng: (rng.standard_normal((1024, 16384), np.float32) + 5,
                                               rng.standard_normal(16384, np.float32),
                                               rng.standard_normal(16384, np.float32))
REFERENCE["layer_norm 1024x16384"] = lambda x, g, b: (
    (x - x.mean(-1, keepdims=True, dtype=np.float64))
    / np.sqrt(x.var(-1, keepdims=True, dtype=np.float64) + 1e-5) * g + b)
AMOUNT["layer_norm 1024x16384"] = (8 * 1024 * 16384, "TB/s")
for _rows, _cols in RMS_SHAPES:
    INPUTS[f"rms_norm {_rows}x{_cols}"] = _rms_inputs(_rows, _cols)
    REFERENCE[f"rms_norm {_rows}x{_cols}"] = _rms_reference
    AMOUNT[f"rms_norm {_rows}x{_cols}"] = (8 * _rows * _cols, "TB/s")
GROUPS = {"long-rows": long_row_variants, "ceiling": ceiling_variants, "rms": rms_variants, "rms-shapes": rms_shape_variants, "softmax": softmax_variants, "add": add_variants, "sum": sum_variants, "transpose": transpose_variants, "matmul": matmul_variants}


def kernels_of_one_call(fn, inputs) -> list:
    """[name, duration us] of each GPU kernel of one warm call."""
    import jax

    import kernels
    run = jax.jit(fn)
    jax.block_until_ready(run(*inputs))
    return [[name[:60], dur] for _, dur, name in
            kernels.profiled_kernels(lambda: jax.block_until_ready(run(*inputs)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", default=list(GROUPS), choices=list(GROUPS))
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    result: dict = {}
    for group in args.only:
        group_variants = list(GROUPS[group]())
        for case in dict.fromkeys(c for c, _, _ in group_variants):
            variants = [v for v in group_variants if v[0] == case]
            run_case(case, variants, group, args.rounds, rng, result)
    for key, value in result.items():
        print(f"{key}: {value}")
    with open(os.path.join(os.environ.get("OUT", "."), "variants.json"), "w") as f:
        json.dump(result, f, indent=1)


def run_case(case: str, variants: list, group: str, rounds: int, rng, result: dict) -> None:
    """Check every variant of one case against float64 NumPy, then time them in turns."""
    import jax.numpy as jnp

    import kernels
    import peers
    inputs = INPUTS[case](rng)
    ref = REFERENCE[case](*inputs)
    jax_inputs = [jnp.asarray(a) for a in inputs]
    for _, label, fn in variants:
        out = np.asarray(fn(*jax_inputs), np.float64)
        err = np.linalg.norm(out - ref) / np.linalg.norm(ref)
        if not err < 1e-4:
            raise AssertionError(f"{case} {label}: relative error {err:.2e}")
    if group == "sum":
        result["sum: kernels of one call, ptxpy"] = kernels_of_one_call(variants[1][2], jax_inputs)
        result["sum: kernels of one call, XLA"] = kernels_of_one_call(peers.xla("sum"), jax_inputs)
    amount, unit = AMOUNT[case]
    for round_ in range(rounds):
        for _, label, fn in variants:
            seconds = kernels._profiled_time(fn, jax_inputs)
            rate = round(amount / seconds / 1e12, 3)
            result.setdefault(f"{case}: {label} ({unit})", []).append(rate)
            print(f"round {round_} {case:18} {label:45} {rate:8.3f} {unit}", flush=True)


if __name__ == "__main__":
    main()
