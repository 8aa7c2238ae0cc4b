"""ptxpy.runtime: loading PTX, the JAX binding, caches, the PTX simulator."""
