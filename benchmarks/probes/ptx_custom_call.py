"""Probe: XLA's `__gpu$xla.gpu.ptx` custom call (a native kernel thunk) against ptxpy's FFI
handler and Pallas, 100 chained tiny kernels in one jax.jit (needs a CUDA GPU)."""
import os
import sys
import traceback

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import launch as L  # noqa: E402

PTX = r"""
.version 8.0
.target sm_90
.address_size 64
.visible .entry add1p(.param .u64 px, .param .u64 pout)
{
  .reg .b32 %r<5>;
  .reg .b64 %rd<6>;
  .reg .f32 %f<3>;
  ld.param.u64 %rd1, [px];
  ld.param.u64 %rd2, [pout];
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ntid.x;
  mov.u32 %r3, %tid.x;
  mad.lo.s32 %r4, %r1, %r2, %r3;
  mul.wide.s32 %rd3, %r4, 4;
  add.s64 %rd4, %rd1, %rd3;
  ld.global.f32 %f1, [%rd4];
  add.rn.f32 %f2, %f1, 0f3F800000;
  add.s64 %rd5, %rd2, %rd3;
  st.global.f32 [%rd5], %f2;
  ret;
}
"""


def ptx_op(variant):
    out = jax.ShapeDtypeStruct((L.N,), jnp.float32)
    attrs = dict(name="add1p", kernel_type="ptx", kernel_data=PTX,
                 grid_x=np.int64(L.N // L.BLOCK), grid_y=np.int64(1), grid_z=np.int64(1),
                 block_x=np.int64(L.BLOCK), block_y=np.int64(1), block_z=np.int64(1),
                 shared_mem_bytes=np.int64(0))
    if variant == "output_indices":
        attrs["output_indices"] = np.array([1], np.int64)
    call = jax.ffi.ffi_call("__gpu$xla.gpu.ptx", out)
    return lambda x: call(x, **attrs)


def main():
    print("jax", jax.__version__, jax.devices())
    x = jnp.asarray(np.random.default_rng(0).standard_normal(L.N).astype(np.float32))
    ops = {"ptxpy FFI": L._ptxpy_add1(), "Pallas": L._pallas_add1()}
    for variant in ("plain", "output_indices"):
        try:
            op = ptx_op(variant)
            np.testing.assert_allclose(jax.jit(op)(x), np.asarray(x) + 1, rtol=1e-6)
            ops[f"xla.gpu.ptx ({variant})"] = op
        except Exception:
            print(f"variant {variant} failed:\n{traceback.format_exc()[-2500:]}")
    for name, op in ops.items():
        f = jax.jit(L._chain(op))
        np.testing.assert_allclose(f(x), np.asarray(x) + L.CHAIN, rtol=1e-5)
        ts = [L._median_time(lambda: f(x), reps=50) / L.CHAIN * 1e6 for _ in range(3)]
        print(f"chain/{name}: " + " ".join(f"{t:.2f}" for t in ts) + " us/kernel")
    if "xla.gpu.ptx (plain)" in ops:
        print(jax.jit(L._chain(ops["xla.gpu.ptx (plain)"])).lower(x).as_text()[:1500])


if __name__ == "__main__":
    main()
