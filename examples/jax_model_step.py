"""A ptxpy kernel inside a JAX model: one training step of a residual MLP block, under jax.jit.

    h   = rms_norm(x) * g            <- the ptxpy kernel from rms_norm.py (one block per row)
    u   = h @ w_in                   <- everything else is ordinary JAX
    out = x + swiglu(u) @ w_out
    loss = mean((out - target) ** 2)

ptxpy kernels are XLA custom calls without a derivative rule, so `jax.grad` cannot see inside
one. `jax.custom_vjp` supplies it: the forward pass runs the ptxpy kernel, the backward pass is
the RMS norm gradient written in jax.numpy. With that, `jax.value_and_grad` differentiates the
whole block, and `train_step` (forward, backward, SGD update) is one `jax.jit` program in which
the ptxpy launch sits between XLA's matmuls.

The step is checked against the same model with a jax.numpy RMS norm.

`python examples/jax_model_step.py [--tokens T --dim D]`.
"""
import argparse
import functools
import os
import sys

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rms_norm import rms_norm as rms_norm_kernel  # noqa: E402  (the kernel of examples/rms_norm.py)

EPS = 1e-6


# --- RMS norm: ptxpy forward, jax.numpy backward --------------------------------------------

@jax.custom_vjp
def rms_norm(x, g):
    return rms_norm_kernel(x, g, EPS)


def _rms_norm_fwd(x, g):
    return rms_norm_kernel(x, g, EPS), (x, g)


def _rms_norm_bwd(res, dy):
    x, g = res
    r = jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + EPS)    # 1 / rms, per row
    dyg = dy * g
    dx = r * dyg - x * (r ** 3) * jnp.mean(dyg * x, axis=-1, keepdims=True)
    dg = jnp.sum(dy * x * r, axis=0)
    return dx, dg


rms_norm.defvjp(_rms_norm_fwd, _rms_norm_bwd)


def rms_norm_reference(x, g):
    return x * jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + EPS) * g


# --- the model ----------------------------------------------------------------------------

def block(params, x, norm):
    h = norm(x, params["g"])
    gate, up = jnp.split(h @ params["w_in"], 2, axis=-1)
    return x + (jax.nn.silu(gate) * up) @ params["w_out"]


def loss_fn(params, x, target, norm):
    return jnp.mean((block(params, x, norm) - target) ** 2)


@functools.partial(jax.jit, static_argnames=("norm", "lr"))
def train_step(params, x, target, norm=rms_norm, lr=1e-2):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, target, norm)
    params = jax.tree.map(lambda p, d: p - lr * d, params, grads)
    return params, loss


def init(key, dim, hidden):
    k1, k2, k3 = jax.random.split(key, 3)
    return {
        "g": 1.0 + 0.1 * jax.random.normal(k1, (dim,), jnp.float32),
        "w_in": jax.random.normal(k2, (dim, 2 * hidden), jnp.float32) / np.sqrt(dim),
        "w_out": jax.random.normal(k3, (hidden, dim), jnp.float32) / np.sqrt(hidden),
    }


def main(tokens: int | None = None, dim: int | None = None) -> None:
    on_gpu = jax.default_backend() == "gpu"
    tokens = tokens or (4096 if on_gpu else 64)
    dim = dim or (2048 if on_gpu else 256)
    kp, kx, kt = jax.random.split(jax.random.key(0), 3)
    params = init(kp, dim, 2 * dim)
    x = jax.random.normal(kx, (tokens, dim), jnp.float32)
    target = jax.random.normal(kt, (tokens, dim), jnp.float32)

    ours, ref = params, params
    for _ in range(3):
        ours, loss = train_step(ours, x, target)
        ref, ref_loss = train_step(ref, x, target, norm=rms_norm_reference)
        np.testing.assert_allclose(float(loss), float(ref_loss), rtol=1e-4)
    for name in params:
        np.testing.assert_allclose(np.asarray(ours[name]), np.asarray(ref[name]), rtol=1e-3, atol=1e-4)
    print(f"jax_model_step: 3 SGD steps on {tokens} tokens of width {dim} (loss {float(loss):.4f}): "
          "match the jax.numpy model")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=None)
    parser.add_argument("--dim", type=int, default=None)
    args = parser.parse_args()
    main(args.tokens, args.dim)
