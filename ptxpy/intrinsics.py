"""Names usable inside kernels (SPEC 2.3-2.5).

Kernels are compiled from their source and never run by Python, so these objects exist for
imports, editors and documentation. Calling one outside a kernel raises a clear error; the host
helpers `cdiv` and `static_range` also work on the host.
"""
from __future__ import annotations

from ptxpy.types import cdiv  # noqa: F401  (host and device)

WARP_SIZE = 32


class KernelOnlyError(RuntimeError):
    pass


def _kernel_only(name: str):
    def stub(*args, **kwargs):
        raise KernelOnlyError(f"ptxpy.{name} can only be used inside a @ptxpy.jit or @ptxpy.func function")
    stub.__name__ = name
    stub.__qualname__ = name
    return stub


class _Dim3:
    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, axis: str):
        if axis in ("x", "y", "z"):
            raise KernelOnlyError(f"ptxpy.{self._name}.{axis} can only be used inside a kernel")
        raise AttributeError(axis)

    def __repr__(self) -> str:
        return f"ptxpy.{self._name}"


thread_idx = _Dim3("thread_idx")
block_idx = _Dim3("block_idx")
block_dim = _Dim3("block_dim")
grid_dim = _Dim3("grid_dim")
cluster_idx = _Dim3("cluster_idx")
cluster_dim = _Dim3("cluster_dim")
cluster_block_idx = _Dim3("cluster_block_idx")


def static_range(*args):
    """A compile-time `range`: the loop is unrolled. On the host it is `range`."""
    return range(*args)


KERNEL_ONLY = (
    "program_id num_programs global_id lane_id warp_id syncthreads syncthreads_count "
    "syncthreads_and syncthreads_or shared_array local_array "
    "rsqrt fma fast_exp fast_log fast_sin fast_cos bitcast "
    "atomic_add atomic_sub atomic_min atomic_max atomic_and atomic_or atomic_xor atomic_exch "
    "atomic_cas shfl_sync shfl_up_sync shfl_down_sync shfl_xor_sync ballot_sync any_sync "
    "all_sync warp_sum warp_cumsum warp_max warp_min warp_and warp_or warp_xor syncwarp threadfence threadfence_block threadfence_system "
    "popc clz brev ffs mulhi maximum minimum activemask mma_sync cp_async cp_async_commit cp_async_wait ldmatrix "
    "wgmma wgmma_desc wgmma_fence wgmma_commit wgmma_wait fence_proxy_async to_fp8 from_fp8 "
    "mbarrier_init mbarrier_arrive mbarrier_arrive_expect_tx mbarrier_wait cp_async_bulk "
    "cp_async_bulk_commit cp_async_bulk_wait tma_load tma_store setmaxnreg_inc setmaxnreg_dec "
    "match_any_sync match_all_sync nanosleep dp4a "
    "cluster_rank cluster_size cluster_sync cluster_arrive cluster_wait map_shared_rank "
    "lanemask_lt lanemask_le lanemask_eq lanemask_ge lanemask_gt "
    "fence_mbarrier_init elect_one load_acquire load_relaxed store_release store_relaxed"
).split()

globals().update({name: _kernel_only(name) for name in KERNEL_ONLY})

__all__ = ["WARP_SIZE", "cdiv", "static_range", "thread_idx", "block_idx", "block_dim",
           "grid_dim", "cluster_idx", "cluster_dim", "cluster_block_idx", "KernelOnlyError",
           *KERNEL_ONLY]
