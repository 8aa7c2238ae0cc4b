"""The peers ptxpy is measured against in benchmarks/kernels.py: XLA (jax.numpy), Triton, Pallas.

Each factory returns a function of the benchmark's inputs, or None where that system has no
such kernel here. Triton kernels follow the Triton tutorials (fused softmax, layer norm, matmul
with IEEE f32 products); the Pallas ones follow the Pallas tutorials.
"""
from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

EPS = 1e-6


# --- XLA -----------------------------------------------------------------------------------
def xla(name: str):
    return {
        "add": lambda x, y: x + y,
        "rms_norm": lambda x, w: x * jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + EPS) * w,
        "softmax": lambda x: jax.nn.softmax(x, axis=-1),
        "layer_norm": _xla_layer_norm,
        "swiglu": _xla_swiglu,
        "sum": lambda x: jnp.sum(x),
        "max": lambda x: jnp.max(x),
        "transpose": lambda x: x.T,
        "matmul": lambda a, b: jnp.dot(a, b, precision=jax.lax.Precision.HIGHEST),
    }.get(name)


def _xla_swiglu(x):
    gate, up = jnp.split(x, 2, axis=-1)
    return jax.nn.silu(gate) * up


def _xla_layer_norm(x, w, b):
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(x - mean), axis=-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + EPS) * w + b


# --- Triton (torch tensors) ----------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def _triton_kernels():
    import triton
    import triton.language as tl

    @triton.jit
    def add_kernel(x, y, out, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out + offs, tl.load(x + offs, mask=mask) + tl.load(y + offs, mask=mask), mask=mask)

    @triton.jit
    def softmax_kernel(x, out, cols, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        offs = tl.arange(0, BLOCK)
        v = tl.load(x + row * cols + offs, mask=offs < cols, other=-float("inf"))
        e = tl.exp(v - tl.max(v, axis=0))
        tl.store(out + row * cols + offs, e / tl.sum(e, axis=0), mask=offs < cols)

    @triton.jit
    def rms_kernel(x, w, out, cols, eps, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        offs = tl.arange(0, BLOCK)
        v = tl.load(x + row * cols + offs, mask=offs < cols, other=0.0)
        r = 1.0 / tl.sqrt(tl.sum(v * v, axis=0) / cols + eps)
        tl.store(out + row * cols + offs, v * r * tl.load(w + offs, mask=offs < cols), mask=offs < cols)

    @triton.jit
    def layer_norm_kernel(x, w, b, out, cols, eps, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        offs = tl.arange(0, BLOCK)
        mask = offs < cols
        v = tl.load(x + row * cols + offs, mask=mask, other=0.0)
        mean = tl.sum(v, axis=0) / cols
        d = tl.where(mask, v - mean, 0.0)
        r = 1.0 / tl.sqrt(tl.sum(d * d, axis=0) / cols + eps)
        y = d * r * tl.load(w + offs, mask=mask) + tl.load(b + offs, mask=mask)
        tl.store(out + row * cols + offs, y, mask=mask)

    @triton.autotune(configs=[
        triton.Config({"BM": 128, "BN": 128, "BK": 32}, num_stages=3, num_warps=8),
        triton.Config({"BM": 128, "BN": 256, "BK": 32}, num_stages=3, num_warps=8),
        triton.Config({"BM": 64, "BN": 128, "BK": 32}, num_stages=4, num_warps=4),
    ], key=["M", "N", "K"])
    @triton.jit
    def matmul_kernel(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        pm, pn = tl.program_id(0), tl.program_id(1)
        rm = pm * BM + tl.arange(0, BM)
        rn = pn * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, K, BK):
            ta = tl.load(a + rm[:, None] * K + (k + rk)[None, :])
            tb = tl.load(b + (k + rk)[:, None] * N + rn[None, :])
            acc += tl.dot(ta, tb, input_precision="ieee")
        tl.store(c + rm[:, None] * N + rn[None, :], acc)

    return dict(add=add_kernel, softmax=softmax_kernel, rms=rms_kernel, ln=layer_norm_kernel,
                matmul=matmul_kernel, triton=triton)


def triton_fn(name: str):
    """A function of torch tensors, or None."""
    try:
        k = _triton_kernels()
    except Exception:           # no Triton
        return None
    import torch
    triton = k["triton"]

    def rows(kernel, x, *extra):
        out = torch.empty_like(x)
        cols = x.shape[1]
        kernel[(x.shape[0],)](x, *extra[:-1], out, cols, *extra[-1:],
                              BLOCK=triton.next_power_of_2(cols), num_warps=16 if cols >= 8192 else 8)
        return out

    if name == "add":
        def add(x, y):
            out = torch.empty_like(x)
            k["add"][(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK=1024)
            return out
        return add
    if name == "softmax":
        def softmax(x):
            out = torch.empty_like(x)
            k["softmax"][(x.shape[0],)](x, out, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]),
                                        num_warps=16 if x.shape[1] >= 8192 else 8)
            return out
        return softmax
    if name == "rms_norm":
        return lambda x, w: rows(k["rms"], x, w, EPS)
    if name == "layer_norm":
        return lambda x, w, b: rows(k["ln"], x, w, b, EPS)
    if name == "matmul":
        def matmul(a, b):
            M, K = a.shape
            N = b.shape[1]
            c = torch.empty((M, N), device=a.device, dtype=a.dtype)
            grid = lambda meta: (triton.cdiv(M, meta["BM"]), triton.cdiv(N, meta["BN"]))
            k["matmul"][grid](a, b, c, M, N, K)
            return c
        return matmul
    return None


# --- Pallas --------------------------------------------------------------------------------
def pallas(name: str):
    try:
        from jax.experimental import pallas as pl
    except Exception:
        return None
    if name == "add":
        def add_kernel(x_ref, y_ref, o_ref):
            o_ref[...] = x_ref[...] + y_ref[...]

        def add(x, y):
            block = 8192
            spec = pl.BlockSpec((block,), lambda i: (i,))
            return pl.pallas_call(add_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                                  grid=(x.shape[0] // block,), in_specs=[spec, spec], out_specs=spec)(x, y)
        return add
    if name == "softmax":
        def softmax_kernel(x_ref, o_ref):
            v = x_ref[...]
            e = jnp.exp(v - jnp.max(v, axis=-1, keepdims=True))
            o_ref[...] = e / jnp.sum(e, axis=-1, keepdims=True)

        def softmax(x):
            spec = pl.BlockSpec((1, x.shape[1]), lambda i: (i, 0))
            return pl.pallas_call(softmax_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                                  grid=(x.shape[0],), in_specs=[spec], out_specs=spec)(x)
        return softmax
    if name == "rms_norm":
        def rms_kernel(x_ref, w_ref, o_ref):
            v = x_ref[...]
            r = jax.lax.rsqrt(jnp.mean(v * v, axis=-1, keepdims=True) + EPS)
            o_ref[...] = v * r * w_ref[...]

        def rms(x, w):
            spec = pl.BlockSpec((1, x.shape[1]), lambda i: (i, 0))
            wspec = pl.BlockSpec((1, x.shape[1]), lambda i: (0, 0))
            return pl.pallas_call(rms_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                                  grid=(x.shape[0],), in_specs=[spec, wspec], out_specs=spec)(x, w[None, :])
        return rms
    return None
