"""What kind of value a call argument is, asked without importing the rest of the runtime."""
from __future__ import annotations

_tracer_class = None    # jax.core.Tracer, looked up once: every eager call asks


def is_tracer(value) -> bool:
    """Whether `value` is a JAX tracer: an argument of a function being traced (`jax.jit`,
    `jax.vmap`, `jax.grad`), whose value is not known."""
    global _tracer_class
    if _tracer_class is None:
        import jax

        _tracer_class = jax.core.Tracer
    return isinstance(value, _tracer_class)
