"""Flash attention (forward), bf16: out = softmax(q k^T / sqrt(d)) v, one pass, on the tensor cores.

What `jax.nn.dot_product_attention(q, k, v, is_causal=...)` computes for bf16 q, k, v of shape
(batch, seq, heads, d), read and written in that layout (a block per 128 query rows of one
head, a grid of (seq / 128, heads, batch)), with FlashAttention-2's algorithm: the seq x seq
scores never leave the chip. Built from `ptxpy.cp_async`, `ptxpy.ldmatrix` and
`ptxpy.mma_sync` (m16n8k16, bf16 products, f32 sums), docs/language.md "Tensor cores":

- each block of 8 warps owns 128 query rows of one head, a warp 16 of them; the warp loads its
  rows' q fragments once (`ldmatrix` from shared memory) and keeps them in registers;
- the block walks the keys in tiles of 64: each tile of k and v is copied by 16-byte
  `cp.async` into one of two shared buffers while the warps compute on the other;
- per tile a warp computes its 16 x 64 scores S = q k^T with `mma_sync` (k's rows are the
  B fragments as they lie: plain `ldmatrix`), keeps each row's running maximum m and sum l
  (the 4 lanes that share a row agree through two `shfl_xor_sync`), rescales its output
  accumulators by exp2(m_old - m_new), and adds P v with `mma_sync`: P's f32 accumulators
  are, converted to bf16, the A fragments of the next product as they stand, and v's B
  fragments come from a transposing `ldmatrix`;
- exponentials are `ex2.approx` (`fast_math=True`) of scores pre-scaled by log2(e) / sqrt(d),
  one `fma` each; at the end each row is divided by its sum and stored as bf16;
- with `causal=True` a block stops at the tile holding its last row, and only the tiles the
  diagonal crosses are masked.

Shared rows are padded by 16 bytes, so that the 8 rows an `ldmatrix` phase reads fall in 8
different groups of banks.

`python examples/attention.py [--seq N] [--heads H] [--head-dim D]` checks the result against
float64 NumPy (and on a GPU against `jax.nn.dot_product_attention`) and, on a GPU, times it
beside XLA's attention and cuDNN's.
"""
import argparse
import math
import time

import jax
import jax.numpy as jnp
import numpy as np

import ptxpy
from ptxpy import Array, Const, bf16, f32

BM = 128            # query rows per block: 16 per warp
BN = 64             # keys per tile
WARPS = BM // 16
THREADS = 32 * WARPS
STAGES = 2          # shared buffers for k and v tiles: one loading, one in use
LOG2E = 1.4426950408889634


def _launch(q, k, v, HEAD=64, CAUSAL=False):
    return (q.shape[1] // BM, q.shape[2], q.shape[0])


@ptxpy.jit(out_shape=lambda q, k, v, HEAD=64, CAUSAL=False: q, grid=_launch, block=THREADS,
           fast_math=True)
def attention_kernel(q: Array[bf16, 4], k: Array[bf16, 4], v: Array[bf16, 4],
                     out: Array[bf16, 4], HEAD: Const[int] = 64, CAUSAL: Const[bool] = False):
    h = ptxpy.block_idx.y             # the head
    item = ptxpy.block_idx.z          # the batch entry
    m0 = ptxpy.block_idx.x * BM
    seq = k.shape[1]
    t = ptxpy.thread_idx.x
    warp = t // 32
    lane = ptxpy.lane_id()
    qs = ptxpy.shared_array((BM, HEAD + 8), bf16)
    ks = ptxpy.shared_array((STAGES, BN, HEAD + 8), bf16)
    vs = ptxpy.shared_array((STAGES, BN, HEAD + 8), bf16)
    qf = ptxpy.local_array((HEAD // 16, 8), bf16)       # this warp's q fragments: registers
    acc = ptxpy.local_array((HEAD // 8, 4), f32)        # its 16 x HEAD output
    s = ptxpy.local_array((BN // 8, 4), f32)            # its 16 x BN scores, then P
    pf = ptxpy.local_array(8, bf16)                     # 16 keys of P: an A fragment
    chunks = HEAD // 8                                  # 16-byte pieces of a row
    rows_per_pass = THREADS // chunks                   # rows one copy by every thread covers
    c = (t % chunks) * 8
    for p in ptxpy.static_range(BM * HEAD // (8 * THREADS)):
        r = t // chunks + rows_per_pass * p
        ptxpy.cp_async(qs[r, c:c + 8], q[item, m0 + r, h, c:c + 8])
    ptxpy.cp_async_commit()
    tiles = seq // BN
    if CAUSAL:
        tiles = ptxpy.cdiv(m0 + BM, BN)
    for p in ptxpy.static_range(BN * HEAD // (8 * THREADS)):     # tile 0
        r = t // chunks + rows_per_pass * p
        ptxpy.cp_async(ks[0, r, c:c + 8], k[item, r, h, c:c + 8])
        ptxpy.cp_async(vs[0, r, c:c + 8], v[item, r, h, c:c + 8])
    ptxpy.cp_async_commit()
    ptxpy.cp_async_wait(1)      # q has landed
    ptxpy.syncthreads()
    for kk in ptxpy.static_range(HEAD // 16):   # lanes 0-15: rows 0-15, d..d+7; 16-31: d+8..
        col = kk * 16 + (lane // 16) * 8
        a0, a1, a2, a3, a4, a5, a6, a7 = ptxpy.ldmatrix(qs[warp * 16 + lane % 16, col:col + 8], 4)
        qf[kk, 0] = a0
        qf[kk, 1] = a1
        qf[kk, 2] = a2
        qf[kk, 3] = a3
        qf[kk, 4] = a4
        qf[kk, 5] = a5
        qf[kk, 6] = a6
        qf[kk, 7] = a7
    for j in ptxpy.static_range(HEAD // 8):
        for e in ptxpy.static_range(4):
            acc[j, e] = 0.0
    scale = LOG2E / math.sqrt(HEAD)
    g = lane // 4
    row0 = m0 + warp * 16 + g          # this lane's two rows: row0 and row0 + 8
    m_a = -math.inf                    # running maxima of the scaled scores, rows row0, row0 + 8
    m_b = -math.inf
    l_a = 0.0                          # this lane's part of the running sums
    l_b = 0.0
    for kt in range(tiles):
        st = kt % STAGES
        ptxpy.cp_async_wait(0)          # tile kt has landed (this thread's copies) ...
        ptxpy.syncthreads()             # ... everyone's, and tile kt - 1's buffer is free
        if kt + 1 < tiles:
            n1 = (kt + 1) * BN
            for p in ptxpy.static_range(BN * HEAD // (8 * THREADS)):
                r = t // chunks + rows_per_pass * p
                ptxpy.cp_async(ks[1 - st, r, c:c + 8], k[item, n1 + r, h, c:c + 8])
                ptxpy.cp_async(vs[1 - st, r, c:c + 8], v[item, n1 + r, h, c:c + 8])
        ptxpy.cp_async_commit()
        for j in ptxpy.static_range(BN // 8):
            for e in ptxpy.static_range(4):
                s[j, e] = 0.0
        for kk in ptxpy.static_range(HEAD // 16):
            for j in ptxpy.static_range(0, BN // 8, 2):     # key tiles j, j + 1: 4 matrices
                key = j * 8 + (lane // 16) * 8 + lane % 8
                col = kk * 16 + ((lane // 8) % 2) * 8
                b0, b1, b2, b3, b4, b5, b6, b7 = ptxpy.ldmatrix(ks[st, key, col:col + 8], 4)
                d0, d1, d2, d3 = ptxpy.mma_sync(
                    (qf[kk, 0], qf[kk, 1], qf[kk, 2], qf[kk, 3], qf[kk, 4], qf[kk, 5], qf[kk, 6],
                     qf[kk, 7]), (b0, b1, b2, b3), (s[j, 0], s[j, 1], s[j, 2], s[j, 3]))
                s[j, 0] = d0
                s[j, 1] = d1
                s[j, 2] = d2
                s[j, 3] = d3
                d0, d1, d2, d3 = ptxpy.mma_sync(
                    (qf[kk, 0], qf[kk, 1], qf[kk, 2], qf[kk, 3], qf[kk, 4], qf[kk, 5], qf[kk, 6],
                     qf[kk, 7]), (b4, b5, b6, b7),
                    (s[j + 1, 0], s[j + 1, 1], s[j + 1, 2], s[j + 1, 3]))
                s[j + 1, 0] = d0
                s[j + 1, 1] = d1
                s[j + 1, 2] = d2
                s[j + 1, 3] = d3
        if CAUSAL:
            if (kt + 1) * BN > m0:       # the diagonal crosses this tile: mask keys past the row
                for j in ptxpy.static_range(BN // 8):
                    col = kt * BN + j * 8 + (lane % 4) * 2
                    for e in ptxpy.static_range(4):
                        if col + e % 2 > row0 + (e // 2) * 8:
                            s[j, e] = -math.inf
        mx_a = s[0, 0]                  # the rows' maxima over the tile, scaled once
        mx_b = s[0, 2]
        for j in ptxpy.static_range(BN // 8):
            mx_a = max(mx_a, s[j, 0], s[j, 1])
            mx_b = max(mx_b, s[j, 2], s[j, 3])
        mx_a = max(mx_a, ptxpy.shfl_xor_sync(mx_a, 1))
        mx_a = max(mx_a, ptxpy.shfl_xor_sync(mx_a, 2))
        mx_b = max(mx_b, ptxpy.shfl_xor_sync(mx_b, 1))
        mx_b = max(mx_b, ptxpy.shfl_xor_sync(mx_b, 2))
        mx_a = max(m_a, mx_a * scale)
        mx_b = max(m_b, mx_b * scale)
        alpha_a = math.exp2(m_a - mx_a)
        alpha_b = math.exp2(m_b - mx_b)
        m_a = mx_a
        m_b = mx_b
        l_a *= alpha_a
        l_b *= alpha_b
        for j in ptxpy.static_range(BN // 8):
            s[j, 0] = math.exp2(ptxpy.fma(s[j, 0], scale, -m_a))
            s[j, 1] = math.exp2(ptxpy.fma(s[j, 1], scale, -m_a))
            s[j, 2] = math.exp2(ptxpy.fma(s[j, 2], scale, -m_b))
            s[j, 3] = math.exp2(ptxpy.fma(s[j, 3], scale, -m_b))
            l_a += s[j, 0] + s[j, 1]
            l_b += s[j, 2] + s[j, 3]
        for j in ptxpy.static_range(HEAD // 8):
            acc[j, 0] *= alpha_a
            acc[j, 1] *= alpha_a
            acc[j, 2] *= alpha_b
            acc[j, 3] *= alpha_b
        for kp in ptxpy.static_range(BN // 16):     # P's keys 16kp..16kp + 15: an A fragment
            for e in ptxpy.static_range(8):
                pf[e] = bf16(s[2 * kp + e // 4, e % 4])
            for j in ptxpy.static_range(0, HEAD // 8, 2):   # v's columns 8j..8j + 15
                col = (j + lane // 16) * 8
                b0, b1, b2, b3, b4, b5, b6, b7 = ptxpy.ldmatrix(
                    vs[st, kp * 16 + lane % 16, col:col + 8], 4, trans=True)
                d0, d1, d2, d3 = ptxpy.mma_sync(
                    (pf[0], pf[1], pf[2], pf[3], pf[4], pf[5], pf[6], pf[7]), (b0, b1, b2, b3),
                    (acc[j, 0], acc[j, 1], acc[j, 2], acc[j, 3]))
                acc[j, 0] = d0
                acc[j, 1] = d1
                acc[j, 2] = d2
                acc[j, 3] = d3
                d0, d1, d2, d3 = ptxpy.mma_sync(
                    (pf[0], pf[1], pf[2], pf[3], pf[4], pf[5], pf[6], pf[7]), (b4, b5, b6, b7),
                    (acc[j + 1, 0], acc[j + 1, 1], acc[j + 1, 2], acc[j + 1, 3]))
                acc[j + 1, 0] = d0
                acc[j + 1, 1] = d1
                acc[j + 1, 2] = d2
                acc[j + 1, 3] = d3
    l_a += ptxpy.shfl_xor_sync(l_a, 1)
    l_a += ptxpy.shfl_xor_sync(l_a, 2)
    l_b += ptxpy.shfl_xor_sync(l_b, 1)
    l_b += ptxpy.shfl_xor_sync(l_b, 2)
    inv_a = 1.0 / l_a
    inv_b = 1.0 / l_b
    for j in ptxpy.static_range(HEAD // 8):
        col = j * 8 + (lane % 4) * 2
        out[item, row0, h, col:col + 2] = (bf16(acc[j, 0] * inv_a), bf16(acc[j, 1] * inv_a))
        out[item, row0 + 8, h, col:col + 2] = (bf16(acc[j, 2] * inv_b), bf16(acc[j, 3] * inv_b))


def attention(q, k, v, causal: bool = False):
    """softmax(q k^T / sqrt(d)) v for q, k, v of shape (batch, seq, heads, d), bf16, as
    `jax.nn.dot_product_attention`; seq a multiple of 128, d one of 64 and 128."""
    _, seq, _, d = q.shape
    if (seq % max(BM, BN) or d not in (64, 128) or q.dtype != jnp.bfloat16
            or not q.shape == k.shape == v.shape):
        raise ValueError(f"attention takes bf16 q, k, v of one shape (batch, seq, heads, d) with "
                         f"seq a multiple of {max(BM, BN)} and d 64 or 128, not {q.shape} {q.dtype}")
    return attention_kernel(q, k, v, HEAD=d, CAUSAL=causal)


def reference(q, k, v, causal: bool) -> np.ndarray:
    """float64 NumPy attention on (batch, seq, heads, d) arrays."""
    q, k, v = (np.asarray(x).astype(np.float64).transpose(0, 2, 1, 3) for x in (q, k, v))
    scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(q.shape[-1])
    if causal:
        seq = q.shape[2]
        scores = np.where(np.tril(np.ones((seq, seq), bool)), scores, -np.inf)
    scores -= scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores)
    weights /= weights.sum(axis=-1, keepdims=True)
    return (weights @ v).transpose(0, 2, 1, 3)


def attention_tflops(fn, q, k, v, causal: bool) -> float:
    """fn(q, k, v)'s rate in TFLOP/s (4 seq^2 d per head, half of it causal): best of 3 x 10."""
    batch, seq, heads, d = q.shape
    fn(q, k, v).block_until_ready()
    seconds = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(10):
            out = fn(q, k, v)
        out.block_until_ready()
        seconds = min(seconds, (time.perf_counter() - start) / 10)
    flops = 4 * batch * heads * seq * seq * d / (2 if causal else 1)
    return flops / seconds / 1e12


def main(seq: int | None = None, heads: int | None = None, head_dim: int = 64,
         batch: int | None = None, timing: bool = True, fn=None, label: str = "attention") -> None:
    """Check `fn` (this file's `attention` unless given) against NumPy, both causal and not,
    and on a GPU against XLA's, timed beside XLA's and cuDNN's attention."""
    fn = fn or attention
    on_gpu = jax.default_backend() == "gpu"
    seq = seq or (4096 if on_gpu else 256)
    heads = heads or (16 if on_gpu else 2)
    batch = batch or (4 if on_gpu else 1)
    keys = jax.random.split(jax.random.key(0), 3)
    shape = (batch, seq, heads, head_dim)
    q, k, v = (jax.random.normal(key, shape, jnp.float32).astype(jnp.bfloat16) for key in keys)
    msg = []
    for causal in (False, True):
        f = jax.jit(lambda q, k, v, causal=causal: fn(q, k, v, causal))
        o = np.asarray(f(q, k, v)).astype(np.float64)
        part = (slice(0, 1), slice(None), slice(0, 2)) if on_gpu else ...   # NumPy's time
        ref = reference(q[part], k[part], v[part], causal)
        error = float(np.max(np.abs(o[part] - ref)))
        # P is rounded to bf16 before P v, and the output to bf16: |v| ~ 1 gives ~1e-2 at most
        assert error < 3e-2, f"causal={causal}: error {error:.2e} against float64 NumPy"
        line = f"causal={causal}: matches float64 NumPy within {error:.1e}"
        if on_gpu and timing:
            xla_out = jax.nn.dot_product_attention(q, k, v, is_causal=causal, implementation="xla")
            beside = float(np.max(np.abs(o - np.asarray(xla_out).astype(np.float64))))
            assert beside < 3e-2, f"causal={causal}: {beside:.2e} from XLA's attention"
            line += f" and XLA's within {beside:.1e}"
            xla = jax.jit(lambda q, k, v, c=causal: jax.nn.dot_product_attention(
                q, k, v, is_causal=c, implementation="xla"))
            cudnn = jax.jit(lambda q, k, v, c=causal: jax.nn.dot_product_attention(
                q, k, v, is_causal=c, implementation="cudnn"))
            line += f"; ptxpy {attention_tflops(f, q, k, v, causal):.1f} TFLOP/s"
            for name, peer in (("XLA", xla), ("cuDNN", cudnn)):
                try:
                    line += f", {name} {attention_tflops(peer, q, k, v, causal):.1f}"
                except Exception as err:     # cuDNN's attention may be missing from the install
                    line += f", {name} unavailable ({type(err).__name__})"
        msg.append(line)
    print(f"{label} of {batch} x {seq} x {heads} x {head_dim} bf16: " + "; ".join(msg))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seq", type=int, default=None, help="sequence length, a multiple of 128")
    parser.add_argument("--heads", type=int, default=None)
    parser.add_argument("--head-dim", type=int, default=64, choices=(64, 128))
    parser.add_argument("--batch", type=int, default=None)
    parser.add_argument("--check-only", action="store_true", help="no timing, no other systems")
    args = parser.parse_args()
    main(args.seq, args.heads, args.head_dim, args.batch, not args.check_only)
