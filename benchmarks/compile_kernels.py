"""The kernels of benchmarks/compile_time.py, in ptxpy and (the same code) in Numba-CUDA."""
from __future__ import annotations

SAXPY = '''
import ptxpy
from ptxpy import Array, f32

@ptxpy.jit
def saxpy(x: Array[f32], y: Array[f32], a: f32, out: Array[f32]):
    i = ptxpy.global_id(0)
    if i < x.shape[0]:
        out[i] = a * x[i] + y[i]
'''

ROW_SUM = '''
import ptxpy
from ptxpy import Array, f32

@ptxpy.jit
def row_sum(x: Array[f32, 2], out: Array[f32]):
    row = ptxpy.global_id(0)
    if row < x.shape[0]:
        acc = 0.0
        for j in range(x.shape[1]):
            acc += x[row, j]
        out[row] = acc
'''

RMS_NORM = '''
import math
import ptxpy
from ptxpy import Array, f32

@ptxpy.jit
def rms_norm(x: Array[f32, 2], w: Array[f32], out: Array[f32, 2], eps: f32):
    row = ptxpy.global_id(0)
    if row >= x.shape[0]:
        return
    n = x.shape[1]
    ss = 0.0
    for j in range(n):
        ss += x[row, j] * x[row, j]
    scale = 1.0 / math.sqrt(ss / n + eps)
    for j in range(n):
        out[row, j] = x[row, j] * scale * w[j]
'''

# About 100 lines: a fused epilogue with device functions, loops, branches and integer math.
BIG = '''
import math
import ptxpy
from ptxpy import Array, f32, i32

@ptxpy.func
def clamp(v: f32, lo: f32, hi: f32) -> f32:
    if v < lo:
        return lo
    if v > hi:
        return hi
    return v

@ptxpy.func
def gelu(v: f32) -> f32:
    inner = 0.7978845608 * (v + 0.044715 * v * v * v)
    e = math.exp(-2.0 * abs(inner))
    t = (1.0 - e) / (1.0 + e)
    if inner < 0.0:
        t = -t
    return 0.5 * v * (1.0 + t)

@ptxpy.func
def hash_index(i: i32, n: i32) -> i32:
    h = i * 1103515245 + 12345
    h = h ^ (h >> 16)
    h = h * 73244475
    h = h ^ (h >> 16)
    return (h & 0x7FFFFFFF) % n

@ptxpy.func
def row_stats(x: Array[f32, 2], row: i32) -> tuple[f32, f32]:
    n = x.shape[1]
    mean = 0.0
    for j in range(n):
        mean += x[row, j]
    mean = mean / n
    var = 0.0
    for j in range(n):
        d = x[row, j] - mean
        var += d * d
    return mean, var / n

@ptxpy.jit
def epilogue(x: Array[f32, 2], bias: Array[f32], gamma: Array[f32], beta: Array[f32],
             scale: f32, drop: f32, seed: i32, out: Array[f32, 2], stats: Array[f32, 2]):
    row = ptxpy.global_id(0)
    rows = x.shape[0]
    cols = x.shape[1]
    if row >= rows:
        return
    mean, var = row_stats(x, row)
    inv = 1.0 / math.sqrt(var + 1e-5)
    stats[row, 0] = mean
    stats[row, 1] = inv
    kept = 0
    total = 0.0
    peak = -3.0e38
    for j in range(cols):
        v = (x[row, j] - mean) * inv
        v = v * gamma[j] + beta[j]
        v = v + bias[j]
        v = gelu(v) * scale
        r = hash_index(row * cols + j + seed, 1000)
        if r < drop * 1000.0:
            v = 0.0
        else:
            v = v / (1.0 - drop)
            kept += 1
        v = clamp(v, -8.0, 8.0)
        if v > peak:
            peak = v
        total += v
        out[row, j] = v
    stats[row, 2] = total
    stats[row, 3] = peak
    # a second pass: subtract the mean of the kept values from every other column
    if kept > 0:
        shift = total / kept
        j = 0
        while j < cols:
            if j % 2 == 0:
                out[row, j] = out[row, j] - shift
            j += 1
    # tail statistics over the first 8 columns, unrolled
    head = 0.0
    for k in ptxpy.static_range(8):
        if k < cols:
            head += out[row, k] * (k + 1)
    stats[row, 4] = head
    # an integer checksum of the signs
    signs = 0
    for j in range(cols):
        if out[row, j] > 0.0:
            signs = signs * 3 + 1
        elif out[row, j] < 0.0:
            signs = signs * 3 + 2
        else:
            signs = signs * 3
        signs = signs % 1000003
    stats[row, 5] = f32(signs)
    lo = min(stats[row, 0], stats[row, 1], stats[row, 2])
    hi = max(stats[row, 0], stats[row, 1], stats[row, 2])
    stats[row, 6] = lo
    stats[row, 7] = hi
'''


def _lines(source: str) -> int:
    return len([l for l in source.strip().splitlines() if l.strip()])


KERNELS = {name: (src, _lines(src)) for name, src in
           [("saxpy", SAXPY), ("row_sum", ROW_SUM), ("rms_norm", RMS_NORM), ("epilogue", BIG)]}


def numba_kernel(name: str):
    """A fresh Numba function and signature for kernel `name` (the same code as above)."""
    import math

    from numba import cuda, float32, int32

    if name == "saxpy":
        def saxpy(x, y, a, out):
            i = cuda.grid(1)
            if i < x.shape[0]:
                out[i] = a * x[i] + y[i]
        return saxpy, (float32[::1], float32[::1], float32, float32[::1])
    if name == "row_sum":
        def row_sum(x, out):
            row = cuda.grid(1)
            if row < x.shape[0]:
                acc = float32(0.0)
                for j in range(x.shape[1]):
                    acc += x[row, j]
                out[row] = acc
        return row_sum, (float32[:, ::1], float32[::1])
    if name == "rms_norm":
        def rms_norm(x, w, out, eps):
            row = cuda.grid(1)
            if row >= x.shape[0]:
                return
            n = x.shape[1]
            ss = float32(0.0)
            for j in range(n):
                ss += x[row, j] * x[row, j]
            scale = float32(1.0) / math.sqrt(ss / n + eps)
            for j in range(n):
                out[row, j] = x[row, j] * scale * w[j]
        return rms_norm, (float32[:, ::1], float32[::1], float32[:, ::1], float32)
    return _numba_epilogue(cuda, float32, int32, math)


def _numba_epilogue(cuda, float32, int32, math):
    # Numba types @cuda.jit(device=True) functions through the CUDA driver, which a machine
    # without a GPU lacks; the helpers are inlined by hand here (less work for Numba, not more).
    def epilogue(x, bias, gamma, beta, scale, drop, seed, out, stats):
        row = cuda.grid(1)
        rows = x.shape[0]
        cols = x.shape[1]
        if row >= rows:
            return
        n = x.shape[1]
        mean = float32(0.0)
        for j in range(n):
            mean += x[row, j]
        mean = mean / n
        var = float32(0.0)
        for j in range(n):
            d = x[row, j] - mean
            var += d * d
        var = var / n
        inv = float32(1.0) / math.sqrt(var + float32(1e-5))
        stats[row, 0] = mean
        stats[row, 1] = inv
        kept = 0
        total = float32(0.0)
        peak = float32(-3.0e38)
        for j in range(cols):
            v = (x[row, j] - mean) * inv
            v = v * gamma[j] + beta[j]
            v = v + bias[j]
            inner = float32(0.7978845608) * (v + float32(0.044715) * v * v * v)
            e = math.exp(float32(-2.0) * abs(inner))
            t = (float32(1.0) - e) / (float32(1.0) + e)
            if inner < 0:
                t = -t
            v = float32(0.5) * v * (float32(1.0) + t) * scale
            h = int32(int32(row * cols + j + seed) * 1103515245 + 12345)
            h = h ^ (h >> 16)
            h = int32(h * 73244475)
            h = h ^ (h >> 16)
            r = (h & 0x7FFFFFFF) % 1000
            if r < drop * float32(1000.0):
                v = float32(0.0)
            else:
                v = v / (float32(1.0) - drop)
                kept += 1
            if v < -8.0:
                v = float32(-8.0)
            elif v > 8.0:
                v = float32(8.0)
            if v > peak:
                peak = v
            total += v
            out[row, j] = v
        stats[row, 2] = total
        stats[row, 3] = peak
        if kept > 0:
            shift = total / kept
            j = 0
            while j < cols:
                if j % 2 == 0:
                    out[row, j] = out[row, j] - shift
                j += 1
        head = float32(0.0)
        for k in range(8):
            if k < cols:
                head += out[row, k] * (k + 1)
        stats[row, 4] = head
        signs = 0
        for j in range(cols):
            if out[row, j] > 0:
                signs = signs * 3 + 1
            elif out[row, j] < 0:
                signs = signs * 3 + 2
            else:
                signs = signs * 3
            signs = signs % 1000003
        stats[row, 5] = float32(signs)
        lo = min(stats[row, 0], stats[row, 1], stats[row, 2])
        hi = max(stats[row, 0], stats[row, 1], stats[row, 2])
        stats[row, 6] = lo
        stats[row, 7] = hi

    sig = (float32[:, ::1], float32[::1], float32[::1], float32[::1], float32, float32, int32,
           float32[:, ::1], float32[:, ::1])
    return epilogue, sig
