"""What kind of value a call argument is, asked without importing the rest of the runtime."""
from __future__ import annotations


def is_tracer(value) -> bool:
    """Whether `value` is a JAX tracer: an argument of a function being traced (`jax.jit`,
    `jax.vmap`, `jax.grad`), whose value is not known."""
    import jax

    return isinstance(value, jax.core.Tracer)
