"""Flash attention (forward), bf16, on Hopper's warpgroup tensor cores (`ptxpy.wgmma`, sm_90a).

examples/attention.py's algorithm (FlashAttention-2: one pass over the keys, a running
maximum and sum per row, the output rescaled as the maximum grows) with both products on
`wgmma.mma_async` instead of `mma.sync`, on the same (batch, seq, heads, d) layout; docs/language.md
"Warpgroup matrix multiply":

- each block, one warpgroup (128 threads), owns 64 query rows of one head (two warpgroups
  of 64 rows each, BM = 128, ran 0.91-0.98x as fast on the H100: BENCHMARKS.md, session 41);
  q's tile is copied once into shared memory, each tile of 64 keys of v by `cp.async` into
  one of two buffers while the warpgroup computes on the other, and of k into one buffer, the
  next tile's copies started once every warp's S = q k^T is done (a barrier after S): at d 128
  that is 64 KB of shared memory instead of 80, room for 3 blocks an SM instead of 2 (two k
  buffers ran 0.94-0.97x as fast at d 128, 0.98-1.01x at d 64: BENCHMARKS.md, session 42);
- every tile lies as the tensor cores read it with the 128-byte swizzle, in blocks of 64
  columns (128 bytes a row), a row's 16-byte chunk c at chunk c ^ (row % 8): q and k are then
  the K-major A and B of S = q k^T (K = d), v the MN-major B of P v (`trans_b=True`);
- per tile a warpgroup computes its 64 x 64 scores with d / 16 `wgmma` into 32 f32 registers
  per thread, laid out as `mma_sync`'s fragments, so the running softmax is attention.py's;
  P, rounded to bf16, stays in registers: a thread's P values of 16 keys are its fragment of
  A for the second product (the accumulators' layout is the A fragment's, as in FlashAttention-3),
  and 4 `wgmma` with A in registers add P v into the d / 2 output registers per thread (P
  through shared memory instead, with a fence and a barrier, ran 0.91-0.98x as fast on the
  H100; FlashAttention-3's pipelining within the warpgroup, the next tile's S issued with this
  tile's P v and its softmax run while P v is in flight, 0.88-0.98x, its registers and third
  buffer leaving room for 4 blocks an SM instead of 5: BENCHMARKS.md, session 42);
- exponentials are `ex2.approx` (`fast_math=True`); `causal=True` stops each block at the
  tile that holds its last row and masks only where the diagonal crosses.

`python examples/attention_wgmma.py [--seq N] [--heads H] [--head-dim D]` checks the result
against float64 NumPy (and on a GPU against XLA's attention) and, on a GPU, times it beside
XLA's and cuDNN's `jax.nn.dot_product_attention`. In the simulator it runs a small problem.
"""
import argparse
import math

import jax.numpy as jnp

import ptxpy
from ptxpy import Array, Const, bf16, f32, i32

import attention  # noqa: E402  (examples/attention.py: the checks and timing)

BM = 64             # query rows per block: 64 per warpgroup (one warpgroup a block)
BN = 64             # keys per tile
WARPGROUPS = BM // 64
THREADS = 128 * WARPGROUPS
STAGES = 2          # shared buffers for v tiles: one loading, one in use (k has one)
LOG2E = 1.4426950408889634
SWIZZLE = 128       # bytes
ATOM = 8 * SWIZZLE  # the swizzle's pattern: 8 rows of 128 bytes


@ptxpy.func
def load_tile(a: Array[bf16, 4], s: Array[bf16, 4], ROWS: Const[int], HEAD: Const[int],
              stage: i32, item: i32, h: i32, r0: i32, t: i32):
    """Start the copies of a[item, r0:r0 + ROWS, h, :] into s[stage], in blocks of 64 columns, each
    row's 16-byte chunk c at chunk c ^ (row % 8)."""
    for i in ptxpy.static_range(0, ROWS * HEAD // 8, THREADS):
        chunk = i + t
        row = chunk // (HEAD // 8)
        c = chunk % (HEAD // 8)
        col = ((c % 8) ^ (row % 8)) * 8
        ptxpy.cp_async(s[stage, c // 8, row, col:col + 8], a[item, r0 + row, h, c * 8:c * 8 + 8])


def _launch(q, k, v, HEAD=64, CAUSAL=False):
    return (q.shape[1] // BM, q.shape[2], q.shape[0])


@ptxpy.jit(out_shape=lambda q, k, v, HEAD=64, CAUSAL=False: q, grid=_launch, block=THREADS,
           fast_math=True)
def attention_wgmma_kernel(q: Array[bf16, 4], k: Array[bf16, 4], v: Array[bf16, 4],
                           out: Array[bf16, 4], HEAD: Const[int] = 64,
                           CAUSAL: Const[bool] = False):
    h = ptxpy.block_idx.y             # the head
    item = ptxpy.block_idx.z          # the batch entry
    m0 = ptxpy.block_idx.x * BM
    seq = k.shape[1]
    t = ptxpy.thread_idx.x
    g = t // 128                       # this thread's warpgroup: rows 64g..64g + 63
    w = (t % 128) // 32                # its warp: rows 16w..16w + 15 of those
    lane = t % 32
    qs = ptxpy.shared_array((1, HEAD // 64, BM, 64), bf16)
    ks = ptxpy.shared_array((1, HEAD // 64, BN, 64), bf16)
    vs = ptxpy.shared_array((STAGES, HEAD // 64, BN, 64), bf16)
    s = ptxpy.local_array((BN // 8, 4), f32)       # the 64 x BN scores' fragment
    p = ptxpy.local_array((BN // 8, 4), bf16)      # P's, the A fragments of P v
    acc = ptxpy.local_array((HEAD // 8, 4), f32)   # the 64 x HEAD output's fragment
    load_tile(q, qs, BM, HEAD, 0, item, h, m0, t)
    tiles = seq // BN
    if CAUSAL:
        tiles = ptxpy.cdiv(m0 + BM, BN)
    load_tile(k, ks, BN, HEAD, 0, item, h, 0, t)
    load_tile(v, vs, BN, HEAD, 0, item, h, 0, t)
    ptxpy.cp_async_commit()
    for j in ptxpy.static_range(HEAD // 8):
        for e in ptxpy.static_range(4):
            acc[j, e] = 0.0
    scale = LOG2E / math.sqrt(HEAD)
    r = 16 * w + lane // 4             # this lane's rows of the warpgroup's: r and r + 8
    row0 = m0 + 64 * g + r
    m_a = -math.inf                    # running maxima of the scaled scores, rows row0, row0 + 8
    m_b = -math.inf
    l_a = 0.0                          # this lane's part of the running sums
    l_b = 0.0
    for kt in range(tiles):
        st = kt % STAGES
        ptxpy.cp_async_wait(0)          # tile kt has landed (this thread's copies),
        ptxpy.fence_proxy_async()       # is visible to the tensor cores,
        ptxpy.syncthreads()             # and everyone's is; v's buffer of tile kt - 1 is free
        if kt + 1 < tiles:
            load_tile(v, vs, BN, HEAD, 1 - st, item, h, (kt + 1) * BN, t)
        ptxpy.cp_async_commit()
        ptxpy.wgmma_fence()
        for kk in ptxpy.static_range(HEAD // 16):   # S = q k^T: both K-major, K = HEAD
            a = ptxpy.wgmma_desc(qs[0, kk // 4, 64 * g, (kk % 4) * 16], SWIZZLE, 16, ATOM)
            b = ptxpy.wgmma_desc(ks[0, kk // 4, 0, (kk % 4) * 16], SWIZZLE, 16, ATOM)
            ptxpy.wgmma(s, a, b, bf16, accumulate=kk > 0)
        ptxpy.wgmma_commit()
        ptxpy.wgmma_wait(0)
        ptxpy.syncthreads()             # every warp's S is done: k's buffer is free
        if kt + 1 < tiles:
            load_tile(k, ks, BN, HEAD, 0, item, h, (kt + 1) * BN, t)
        ptxpy.cp_async_commit()
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
            p0 = math.exp2(ptxpy.fma(s[j, 0], scale, -m_a))
            p1 = math.exp2(ptxpy.fma(s[j, 1], scale, -m_a))
            p2 = math.exp2(ptxpy.fma(s[j, 2], scale, -m_b))
            p3 = math.exp2(ptxpy.fma(s[j, 3], scale, -m_b))
            l_a += p0 + p1
            l_b += p2 + p3
            p[j, 0] = bf16(p0)
            p[j, 1] = bf16(p1)
            p[j, 2] = bf16(p2)
            p[j, 3] = bf16(p3)
        for j in ptxpy.static_range(HEAD // 8):
            acc[j, 0] *= alpha_a
            acc[j, 1] *= alpha_a
            acc[j, 2] *= alpha_b
            acc[j, 3] *= alpha_b
        ptxpy.wgmma_fence()             # acc and p were written
        for kk in ptxpy.static_range(BN // 16):     # acc += P v: P's keys 16kk.., v MN-major
            b = ptxpy.wgmma_desc(vs[st, 0, kk * 16, 0], SWIZZLE, BN * 128, ATOM)
            ptxpy.wgmma(acc, (p[2 * kk, 0], p[2 * kk, 1], p[2 * kk, 2], p[2 * kk, 3],
                              p[2 * kk + 1, 0], p[2 * kk + 1, 1], p[2 * kk + 1, 2],
                              p[2 * kk + 1, 3]), b, bf16, trans_b=True)
        ptxpy.wgmma_commit()
        ptxpy.wgmma_wait(0)
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


def attention_wgmma(q, k, v, causal: bool = False):
    """softmax(q k^T / sqrt(d)) v for q, k, v of shape (batch, seq, heads, d), bf16, as
    `jax.nn.dot_product_attention`; seq a multiple of 64, d one of 64 and 128."""
    _, seq, _, d = q.shape
    if (seq % max(BM, BN) or d not in (64, 128) or q.dtype != jnp.bfloat16
            or not q.shape == k.shape == v.shape):
        raise ValueError(f"attention_wgmma takes bf16 q, k, v of one shape (batch, seq, heads, "
                         f"d) with seq a multiple of {max(BM, BN)} and d 64 or 128, not {q.shape} {q.dtype}")
    return attention_wgmma_kernel(q, k, v, HEAD=d, CAUSAL=causal)


def main(seq: int | None = None, heads: int | None = None, head_dim: int = 64,
         batch: int | None = None, timing: bool = True) -> None:
    attention.main(seq, heads, head_dim, batch, timing, fn=attention_wgmma,
                   label="attention_wgmma")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seq", type=int, default=None, help="sequence length, a multiple of 64")
    parser.add_argument("--heads", type=int, default=None)
    parser.add_argument("--head-dim", type=int, default=64, choices=(64, 128))
    parser.add_argument("--batch", type=int, default=None)
    parser.add_argument("--check-only", action="store_true", help="no timing, no other systems")
    args = parser.parse_args()
    main(args.seq, args.heads, args.head_dim, args.batch, not args.check_only)
