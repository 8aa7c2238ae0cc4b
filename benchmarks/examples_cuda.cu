// CUDA C++ twins of the ptxpy kernels in examples/*.py, for benchmarks/registers.py.
//
// Each kernel is a line-by-line translation of its ptxpy source, specialised as the example
// runs it (the Const values are template arguments; the extern "C" wrappers fix them):
//
// - same algorithm, block size, tiling constants and loop structure: `ptxpy.static_range` is a
//   `#pragma unroll` loop, a Python `range`/`while` loop is a plain C loop (nvcc may unroll
//   it, as ptxas may unroll ptxpy's), a `ptxpy.local_array` is a local C array, a
//   `ptxpy.shared_array` a `__shared__` array, an `@ptxpy.func` a `__forceinline__` function;
// - int32 indices; `a[r, c]` of a 2-D array is `a[r * a_cols + c]`, with each array's
//   extents passed as int parameters, as ptxpy passes them (only those the kernel reads);
// - arrays the kernel only reads are `const T* __restrict__` (ptxpy reads them with
//   ld.global.nc); 128-bit slices `a[i:i + 4]` are float4/int4/uint4 accesses;
// - the same operations: `ptxpy.fma` is fmaf, `max` of floats fmaxf, `ptxpy.rsqrt` rsqrtf,
//   `ptxpy.fast_exp` __expf, swiglu's fast_math `/` and `math.exp` are __fdividef and __expf;
//   a scalar that the example passes as a traced JAX value (eps under jax.jit) is read through
//   a pointer, as ptxpy then reads it (a by-reference parameter);
// - Python's floor `//` and `%` are C's `/` and `%`: the same values for the non-negative
//   operands here, though nvcc must allow for negative ones where it cannot rule them out;
// - nothing else: no __launch_bounds__ (ptxpy emits no .maxntid), no extra qualifiers.
//
// nvcc contracts a * b + c into an FMA by default (-fmad=true) where ptxpy keeps the mul and
// the add (bit-identical to NumPy); registers.py compiles with nvcc's defaults.
#include <cuda_runtime.h>
#include <math_constants.h>

#define FULL_MASK 0xffffffffu

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {
        v = v + __shfl_xor_sync(FULL_MASK, v, offset);
    }
    return v;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {
        v = fmaxf(v, __shfl_xor_sync(FULL_MASK, v, offset));
    }
    return v;
}

// ---------------------------------------------------------------------------------------------
// examples/add_vectors.py: BLOCK = 256, VEC = 4
extern "C" __global__ void add_vectors(const float* __restrict__ x, const float* __restrict__ y,
                                       float* __restrict__ out, int n) {
    int i = (int)(blockIdx.x * blockDim.x + threadIdx.x) * 4;
    if (i + 4 <= n) {
        float4 xv = *reinterpret_cast<const float4*>(x + i);
        float4 yv = *reinterpret_cast<const float4*>(y + i);
        *reinterpret_cast<float4*>(out + i) =
            make_float4(xv.x + yv.x, xv.y + yv.y, xv.z + yv.z, xv.w + yv.w);
    } else {
        for (int j = i; j < n; j++) {
            out[j] = x[j] + y[j];
        }
    }
}

// ---------------------------------------------------------------------------------------------
// examples/iota.py: iota_per_program (size = 4096, unused by the body) and iota (BLOCK = 256,
// VEC = 4, size = 1 << 26 as a compile-time constant)
extern "C" __global__ void iota_per_program(int* __restrict__ o) {
    int i = blockIdx.x;
    o[i] = i;
}

template <int SIZE>
__device__ __forceinline__ void iota_body(int* __restrict__ o) {
    const int n = SIZE;
    int stride = (int)gridDim.x * 256 * 4;
    int i = (int)(blockIdx.x * blockDim.x + threadIdx.x) * 4;
    while (i + 4 <= n) {
        *reinterpret_cast<int4*>(o + i) = make_int4(i, i + 1, i + 2, i + 3);
        i += stride;
    }
    while (i < n) {
        o[i] = i;
        i += 1;
    }
}

extern "C" __global__ void iota(int* __restrict__ o) { iota_body<1 << 26>(o); }

// ---------------------------------------------------------------------------------------------
// examples/saxpy.py (a by value: the example's eager call)
extern "C" __global__ void saxpy(const float* __restrict__ x, int n, const float* __restrict__ y,
                                 float a, float* __restrict__ out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = a * x[i] + y[i];
    }
}

// ---------------------------------------------------------------------------------------------
// examples/matmul.py: BM = BN = 128, BK = 16, 256 threads, 8 x 8 micro-tile, PAD = 4
#define MM_BM 128
#define MM_BN 128
#define MM_BK 16
#define MM_HALF_M (MM_BM / 2)
#define MM_HALF_N (MM_BN / 2)
#define MM_PAD 4

extern "C" __global__ void matmul(const float* __restrict__ x, int x_cols,
                                  const float* __restrict__ y, int y_cols,
                                  float* __restrict__ z, int z_cols) {
    int k_total = x_cols;
    int m0 = blockIdx.y * MM_BM;
    int n0 = blockIdx.x * MM_BN;

    __shared__ __align__(16) float xs[MM_BK][MM_BM + MM_PAD];
    __shared__ __align__(16) float ys[MM_BK][MM_BN];
    float acc[8][8];
    float a[8];
    float b[8];
#pragma unroll
    for (int r = 0; r < 8; r++) {
#pragma unroll
        for (int c = 0; c < 8; c++) {
            acc[r][c] = 0.0f;
        }
    }

    int t = threadIdx.x;
    int tm = (t / 16) * 4;
    int tn = (t % 16) * 4;
    int tm2 = tm + MM_HALF_M;
    int tn2 = tn + MM_HALF_N;
    int xm = t / 2;
    int xk = (t % 2) * 4;
    int yk = t / 32;
    int yn = (t % 32) * 4;
    int kx = xk;
    int kx2 = xk + 8;
    int ny = n0 + yn;

    float4 p = *reinterpret_cast<const float4*>(x + (m0 + xm) * x_cols + kx);
    float4 p2 = *reinterpret_cast<const float4*>(x + (m0 + xm) * x_cols + kx2);
    float4 q = *reinterpret_cast<const float4*>(y + yk * y_cols + ny);
    float4 q2 = *reinterpret_cast<const float4*>(y + (yk + 8) * y_cols + ny);
    for (int k0 = 0; k0 < k_total; k0 += MM_BK) {
        xs[xk][xm] = p.x;
        xs[xk + 1][xm] = p.y;
        xs[xk + 2][xm] = p.z;
        xs[xk + 3][xm] = p.w;
        xs[xk + 8][xm] = p2.x;
        xs[xk + 9][xm] = p2.y;
        xs[xk + 10][xm] = p2.z;
        xs[xk + 11][xm] = p2.w;
        *reinterpret_cast<float4*>(&ys[yk][yn]) = q;
        *reinterpret_cast<float4*>(&ys[yk + 8][yn]) = q2;
        __syncthreads();
        if (k0 + MM_BK < k_total) {
            kx = k0 + MM_BK + xk;
            kx2 = kx + 8;
            p = *reinterpret_cast<const float4*>(x + (m0 + xm) * x_cols + kx);
            p2 = *reinterpret_cast<const float4*>(x + (m0 + xm) * x_cols + kx2);
            q = *reinterpret_cast<const float4*>(y + (k0 + MM_BK + yk) * y_cols + ny);
            q2 = *reinterpret_cast<const float4*>(y + (k0 + MM_BK + yk + 8) * y_cols + ny);
        }
#pragma unroll
        for (int k = 0; k < MM_BK; k++) {
            float4 a03 = *reinterpret_cast<const float4*>(&xs[k][tm]);
            float4 a47 = *reinterpret_cast<const float4*>(&xs[k][tm2]);
            float4 b03 = *reinterpret_cast<const float4*>(&ys[k][tn]);
            float4 b47 = *reinterpret_cast<const float4*>(&ys[k][tn2]);
            a[0] = a03.x;
            a[1] = a03.y;
            a[2] = a03.z;
            a[3] = a03.w;
            a[4] = a47.x;
            a[5] = a47.y;
            a[6] = a47.z;
            a[7] = a47.w;
            b[0] = b03.x;
            b[1] = b03.y;
            b[2] = b03.z;
            b[3] = b03.w;
            b[4] = b47.x;
            b[5] = b47.y;
            b[6] = b47.z;
            b[7] = b47.w;
#pragma unroll
            for (int r = 0; r < 8; r++) {
#pragma unroll
                for (int c = 0; c < 8; c++) {
                    acc[r][c] = fmaf(a[r], b[c], acc[r][c]);
                }
            }
        }
        __syncthreads();
    }

#pragma unroll
    for (int r = 0; r < 8; r++) {
        int row = m0 + tm + r % 4 + (r / 4) * MM_HALF_M;
        int col = n0 + tn;
        *reinterpret_cast<float4*>(z + row * z_cols + col) =
            make_float4(acc[r][0], acc[r][1], acc[r][2], acc[r][3]);
        int col2 = col + MM_HALF_N;
        *reinterpret_cast<float4*>(z + row * z_cols + col2) =
            make_float4(acc[r][4], acc[r][5], acc[r][6], acc[r][7]);
    }
}

// ---------------------------------------------------------------------------------------------
// examples/matmul_blocks.py: GRID = 2, SUB = 64, TK = 16, R = 4, 256 threads, PAD = 4
#define MB_GRID 2
#define MB_SUB 64
#define MB_TK 16
#define MB_R 4
#define MB_PAD 4

extern "C" __global__ void matmul_blocks(const float* __restrict__ x, int x_rows, int x_cols,
                                         const float* __restrict__ y, int y_cols,
                                         float* __restrict__ z, int z_cols) {
    int m_total = x_rows;
    int k_total = x_cols;
    int n_total = y_cols;
    int block_m = m_total / MB_GRID;
    int block_n = n_total / MB_GRID;
    int m_begin = blockIdx.x * block_m;
    int n_begin = blockIdx.y * block_n;

    __shared__ __align__(16) float xs[MB_TK][MB_SUB + MB_PAD];
    __shared__ __align__(16) float ys[MB_TK][MB_SUB];
    float acc[MB_R][MB_R];

    int t = threadIdx.x;
    int tm = (t / (MB_SUB / MB_R)) * MB_R;
    int tn = (t % (MB_SUB / MB_R)) * MB_R;
    int xm = t / (MB_TK / 4);
    int xk = (t % (MB_TK / 4)) * 4;
    int yk = t / (MB_SUB / 4);
    int yn = (t % (MB_SUB / 4)) * 4;

    for (int m0 = m_begin; m0 < m_begin + block_m; m0 += MB_SUB) {
        for (int n0 = n_begin; n0 < n_begin + block_n; n0 += MB_SUB) {
#pragma unroll
            for (int r = 0; r < MB_R; r++) {
#pragma unroll
                for (int c = 0; c < MB_R; c++) {
                    acc[r][c] = 0.0f;
                }
            }
            for (int k0 = 0; k0 < k_total; k0 += MB_TK) {
                int kx = k0 + xk;
                float4 av = *reinterpret_cast<const float4*>(x + (m0 + xm) * x_cols + kx);
                xs[xk][xm] = av.x;
                xs[xk + 1][xm] = av.y;
                xs[xk + 2][xm] = av.z;
                xs[xk + 3][xm] = av.w;
                int ny = n0 + yn;
                float4 bv = *reinterpret_cast<const float4*>(y + (k0 + yk) * y_cols + ny);
                *reinterpret_cast<float4*>(&ys[yk][yn]) = bv;
                __syncthreads();
#pragma unroll
                for (int k = 0; k < MB_TK; k++) {
                    float4 a4 = *reinterpret_cast<const float4*>(&xs[k][tm]);
                    float4 b4 = *reinterpret_cast<const float4*>(&ys[k][tn]);
                    acc[0][0] = fmaf(a4.x, b4.x, acc[0][0]);
                    acc[0][1] = fmaf(a4.x, b4.y, acc[0][1]);
                    acc[0][2] = fmaf(a4.x, b4.z, acc[0][2]);
                    acc[0][3] = fmaf(a4.x, b4.w, acc[0][3]);
                    acc[1][0] = fmaf(a4.y, b4.x, acc[1][0]);
                    acc[1][1] = fmaf(a4.y, b4.y, acc[1][1]);
                    acc[1][2] = fmaf(a4.y, b4.z, acc[1][2]);
                    acc[1][3] = fmaf(a4.y, b4.w, acc[1][3]);
                    acc[2][0] = fmaf(a4.z, b4.x, acc[2][0]);
                    acc[2][1] = fmaf(a4.z, b4.y, acc[2][1]);
                    acc[2][2] = fmaf(a4.z, b4.z, acc[2][2]);
                    acc[2][3] = fmaf(a4.z, b4.w, acc[2][3]);
                    acc[3][0] = fmaf(a4.w, b4.x, acc[3][0]);
                    acc[3][1] = fmaf(a4.w, b4.y, acc[3][1]);
                    acc[3][2] = fmaf(a4.w, b4.z, acc[3][2]);
                    acc[3][3] = fmaf(a4.w, b4.w, acc[3][3]);
                }
                __syncthreads();
            }
            int nz = n0 + tn;
#pragma unroll
            for (int r = 0; r < MB_R; r++) {
                *reinterpret_cast<float4*>(z + (m0 + tm + r) * z_cols + nz) =
                    make_float4(acc[r][0], acc[r][1], acc[r][2], acc[r][3]);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// examples/rms_norm.py: rms_norm_warp (one warp per row, N = 512, eps by value) and
// rms_norm_kernel (THREADS = 128, CACHE = 16 for the 2048 x 8192 run; THREADS = 256, CACHE = 0
// for rows read twice; eps by reference: the example passes it through jax.jit)
template <int N>
__device__ __forceinline__ void rms_norm_warp_body(const float* __restrict__ x, int x_cols,
                                                   const float* __restrict__ w, float eps,
                                                   float* __restrict__ out, int out_cols) {
    int row = blockIdx.x;
    int lane = threadIdx.x;
    float vals[N / 32];
    float ss = 0.0f;
#pragma unroll
    for (int k = 0; k < N / 128; k++) {
        int j = k * 128 + lane * 4;
        float4 v = *reinterpret_cast<const float4*>(x + row * x_cols + j);
        vals[4 * k] = v.x;
        vals[4 * k + 1] = v.y;
        vals[4 * k + 2] = v.z;
        vals[4 * k + 3] = v.w;
        ss = fmaf(v.x, v.x, ss);
        ss = fmaf(v.y, v.y, ss);
        ss = fmaf(v.z, v.z, ss);
        ss = fmaf(v.w, v.w, ss);
    }
    ss = warp_sum(ss);
    float scale = rsqrtf(ss * (1.0f / N) + eps);
#pragma unroll
    for (int k = 0; k < N / 128; k++) {
        int j = k * 128 + lane * 4;
        float4 wv = *reinterpret_cast<const float4*>(w + j);
        *reinterpret_cast<float4*>(out + row * out_cols + j) =
            make_float4(vals[4 * k] * scale * wv.x, vals[4 * k + 1] * scale * wv.y,
                        vals[4 * k + 2] * scale * wv.z, vals[4 * k + 3] * scale * wv.w);
    }
}

extern "C" __global__ void rms_norm_warp(const float* __restrict__ x, int x_cols,
                                         const float* __restrict__ w, float eps,
                                         float* __restrict__ out, int out_cols) {
    rms_norm_warp_body<512>(x, x_cols, w, eps, out, out_cols);
}

#define NORM_BLOCK 256
#define NORM_WARPS (NORM_BLOCK / 32)

template <int WARPS>
__device__ __forceinline__ float block_sum_of(float v) {
    __shared__ float partial[WARPS];
    int t = threadIdx.x;
    v = warp_sum(v);
    if (t % 32 == 0) {
        partial[t / 32] = v;
    }
    __syncthreads();
    int lane = t % 32;
    v = lane < WARPS ? partial[lane] : 0.0f;
    return warp_sum(v);
}

__device__ __forceinline__ float block_sum(float v) { return block_sum_of<NORM_WARPS>(v); }


template <int CACHE, int RMS_BLOCK>
__device__ __forceinline__ void rms_norm_body(const float* __restrict__ x, int x_cols,
                                              const float* __restrict__ w,
                                              const float* __restrict__ eps_ref,
                                              float* __restrict__ out, int out_cols) {
    const float eps = *eps_ref;
    int row = blockIdx.x;
    int cols = x_cols;
    int t = threadIdx.x;
    float ss = 0.0f;
    if constexpr (CACHE > 0) {
        float vals[4 * CACHE];
#pragma unroll
        for (int k = 0; k < CACHE; k++) {
            int j = (k * RMS_BLOCK + t) * 4;
            float a, b, c, d;
            if (j < cols) {
                float4 v = *reinterpret_cast<const float4*>(x + row * x_cols + j);
                a = v.x;
                b = v.y;
                c = v.z;
                d = v.w;
            } else {
                a = 0.0f;
                b = 0.0f;
                c = 0.0f;
                d = 0.0f;
            }
            vals[4 * k] = a;
            vals[4 * k + 1] = b;
            vals[4 * k + 2] = c;
            vals[4 * k + 3] = d;
        }
#pragma unroll
        for (int k = 0; k < 4 * CACHE; k++) {
            ss = fmaf(vals[k], vals[k], ss);
        }
        float scale = rsqrtf(block_sum_of<RMS_BLOCK / 32>(ss) / (float)cols + eps);
#pragma unroll
        for (int k = 0; k < CACHE; k++) {
            int j = (k * RMS_BLOCK + t) * 4;
            if (j < cols) {
                float4 wv = *reinterpret_cast<const float4*>(w + j);
                *reinterpret_cast<float4*>(out + row * out_cols + j) =
                    make_float4(vals[4 * k] * scale * wv.x, vals[4 * k + 1] * scale * wv.y,
                                vals[4 * k + 2] * scale * wv.z, vals[4 * k + 3] * scale * wv.w);
            }
        }
    } else if (cols % 4 == 0) {
        for (int j = t * 4; j < cols; j += RMS_BLOCK * 4) {
            float4 v = *reinterpret_cast<const float4*>(x + row * x_cols + j);
            ss = fmaf(v.x, v.x, fmaf(v.y, v.y, fmaf(v.z, v.z, fmaf(v.w, v.w, ss))));
        }
        float scale = rsqrtf(block_sum_of<RMS_BLOCK / 32>(ss) / (float)cols + eps);
        for (int j = t * 4; j < cols; j += RMS_BLOCK * 4) {
            float4 v = *reinterpret_cast<const float4*>(x + row * x_cols + j);
            float4 wv = *reinterpret_cast<const float4*>(w + j);
            *reinterpret_cast<float4*>(out + row * out_cols + j) =
                make_float4(v.x * scale * wv.x, v.y * scale * wv.y, v.z * scale * wv.z,
                            v.w * scale * wv.w);
        }
    } else {
        for (int j = t; j < cols; j += RMS_BLOCK) {
            float v = x[row * x_cols + j];
            ss = fmaf(v, v, ss);
        }
        float scale = rsqrtf(block_sum_of<RMS_BLOCK / 32>(ss) / (float)cols + eps);
        for (int j = t; j < cols; j += RMS_BLOCK) {
            out[row * out_cols + j] = x[row * x_cols + j] * scale * w[j];
        }
    }
}

extern "C" __global__ void rms_norm_kernel_cache16(const float* __restrict__ x, int x_cols,
                                                   const float* __restrict__ w,
                                                   const float* __restrict__ eps,
                                                   float* __restrict__ out, int out_cols) {
    rms_norm_body<16, 128>(x, x_cols, w, eps, out, out_cols);
}

extern "C" __global__ void rms_norm_kernel_cache0(const float* __restrict__ x, int x_cols,
                                                  const float* __restrict__ w,
                                                  const float* __restrict__ eps,
                                                  float* __restrict__ out, int out_cols) {
    rms_norm_body<0, 256>(x, x_cols, w, eps, out, out_cols);
}

// ---------------------------------------------------------------------------------------------
// examples/softmax.py: BLOCK = 256, CACHE = 4 for the 4096 x 4096 run and CACHE = 0 for the
// 4097- and 9000-column runs
__device__ __forceinline__ void sm_merge(float& m, float& s, float m2, float s2) {
    float mm = fmaxf(m, m2);
    if (mm == -CUDART_INF_F) {
        m = mm;
        s = 0.0f;
        return;
    }
    s = s * __expf(m - mm) + s2 * __expf(m2 - mm);
    m = mm;
}

__device__ __forceinline__ void sm_add4(float& m, float& s, float a, float b, float c, float d) {
    float mx = fmaxf(fmaxf(fmaxf(a, b), c), d);
    if (mx > m) {
        s = s * __expf(m - mx);
        m = mx;
    }
    s += __expf(a - m) + __expf(b - m) + __expf(c - m) + __expf(d - m);
}

__device__ __forceinline__ void sm_add1(float& m, float& s, float v) {
    if (v > m) {
        s = s * __expf(m - v);
        m = v;
    }
    s = s + __expf(v - m);
}

template <int CACHE>
__device__ __forceinline__ void softmax_body(const float* __restrict__ x, int x_cols,
                                             float* __restrict__ out, int out_cols) {
    int row = blockIdx.x;
    int cols = x_cols;
    int t = threadIdx.x;
    float m = -CUDART_INF_F;
    float s = 0.0f;
    float vals[CACHE > 0 ? 4 * CACHE : 1];
    if constexpr (CACHE > 0) {
#pragma unroll
        for (int k = 0; k < CACHE; k++) {
            int j = (k * NORM_BLOCK + t) * 4;
            float a, b, c, d;
            if (j < cols) {
                float4 v = *reinterpret_cast<const float4*>(x + row * x_cols + j);
                a = v.x;
                b = v.y;
                c = v.z;
                d = v.w;
            } else {
                a = -CUDART_INF_F;
                b = -CUDART_INF_F;
                c = -CUDART_INF_F;
                d = -CUDART_INF_F;
            }
            vals[4 * k] = a;
            vals[4 * k + 1] = b;
            vals[4 * k + 2] = c;
            vals[4 * k + 3] = d;
        }
#pragma unroll
        for (int k = 0; k < 4 * CACHE; k++) {
            m = fmaxf(m, vals[k]);
        }
#pragma unroll
        for (int k = 0; k < CACHE; k++) {
            if ((k * NORM_BLOCK + t) * 4 < cols) {
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    s += __expf(vals[4 * k + e] - m);
                }
            }
        }
    } else if (cols % 4 == 0) {
        for (int j = t * 4; j < cols; j += NORM_BLOCK * 4) {
            float4 v = *reinterpret_cast<const float4*>(x + row * x_cols + j);
            sm_add4(m, s, v.x, v.y, v.z, v.w);
        }
    } else {
        for (int j = t; j < cols; j += NORM_BLOCK) {
            sm_add1(m, s, x[row * x_cols + j]);
        }
    }

#pragma unroll
    for (int k = 0; k < 5; k++) {
        float m2 = __shfl_xor_sync(FULL_MASK, m, 16 >> k);
        float s2 = __shfl_xor_sync(FULL_MASK, s, 16 >> k);
        sm_merge(m, s, m2, s2);
    }
    __shared__ float wm[NORM_WARPS];
    __shared__ float ws[NORM_WARPS];
    if (t % 32 == 0) {
        wm[t / 32] = m;
        ws[t / 32] = s;
    }
    __syncthreads();
    m = wm[0];
    s = ws[0];
#pragma unroll
    for (int k = 1; k < NORM_WARPS; k++) {
        sm_merge(m, s, wm[k], ws[k]);
    }
    float inv = 1.0f / s;

    if constexpr (CACHE > 0) {
#pragma unroll
        for (int k = 0; k < CACHE; k++) {
            int j = (k * NORM_BLOCK + t) * 4;
            if (j < cols) {
                *reinterpret_cast<float4*>(out + row * out_cols + j) =
                    make_float4(__expf(vals[4 * k] - m) * inv, __expf(vals[4 * k + 1] - m) * inv,
                                __expf(vals[4 * k + 2] - m) * inv,
                                __expf(vals[4 * k + 3] - m) * inv);
            }
        }
    } else if (cols % 4 == 0) {
        for (int j = t * 4; j < cols; j += NORM_BLOCK * 4) {
            float4 v = *reinterpret_cast<const float4*>(x + row * x_cols + j);
            *reinterpret_cast<float4*>(out + row * out_cols + j) =
                make_float4(__expf(v.x - m) * inv, __expf(v.y - m) * inv, __expf(v.z - m) * inv,
                            __expf(v.w - m) * inv);
        }
    } else {
        for (int j = t; j < cols; j += NORM_BLOCK) {
            out[row * out_cols + j] = __expf(x[row * x_cols + j] - m) * inv;
        }
    }
}

extern "C" __global__ void softmax_kernel_cache4(const float* __restrict__ x, int x_cols,
                                                 float* __restrict__ out, int out_cols) {
    softmax_body<4>(x, x_cols, out, out_cols);
}

extern "C" __global__ void softmax_kernel_cache0(const float* __restrict__ x, int x_cols,
                                                 float* __restrict__ out, int out_cols) {
    softmax_body<0>(x, x_cols, out, out_cols);
}

// ---------------------------------------------------------------------------------------------
// examples/layer_norm.py: BLOCK = 256, CACHE = 4 for the 4096 x 4096 run and CACHE = 0 for the
// others; eps by reference (passed through jax.jit)
__device__ __forceinline__ void block_sum2(float& a, float& b) {
    __shared__ float part_a[NORM_WARPS];
    __shared__ float part_b[NORM_WARPS];
    int t = threadIdx.x;
    a = warp_sum(a);
    b = warp_sum(b);
    if (t % 32 == 0) {
        part_a[t / 32] = a;
        part_b[t / 32] = b;
    }
    __syncthreads();
    int lane = t % 32;
    a = lane < NORM_WARPS ? part_a[lane] : 0.0f;
    b = lane < NORM_WARPS ? part_b[lane] : 0.0f;
    a = warp_sum(a);
    b = warp_sum(b);
}

template <int CACHE>
__device__ __forceinline__ void layer_norm_body(const float* __restrict__ x, int x_cols,
                                                const float* __restrict__ gamma,
                                                const float* __restrict__ beta,
                                                const float* __restrict__ eps_ref,
                                                float* __restrict__ out, int out_cols) {
    const float eps = *eps_ref;
    int row = blockIdx.x;
    int cols = x_cols;
    int t = threadIdx.x;
    float inv_n = 1.0f / (float)cols;
    float shift = x[row * x_cols + 0];
    float s = 0.0f;
    float ss = 0.0f;
    if constexpr (CACHE > 0) {
        float vals[4 * CACHE];
        float4 gs[CACHE];
        float4 bs[CACHE];
#pragma unroll
        for (int k = 0; k < CACHE; k++) {
            int j = (k * NORM_BLOCK + t) * 4;
            float a, b, c, d;
            if (j < cols) {
                float4 v = *reinterpret_cast<const float4*>(x + row * x_cols + j);
                a = v.x;
                b = v.y;
                c = v.z;
                d = v.w;
                gs[k] = *reinterpret_cast<const float4*>(gamma + j);
                bs[k] = *reinterpret_cast<const float4*>(beta + j);
            } else {
                a = shift;
                b = shift;
                c = shift;
                d = shift;
                gs[k] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
                bs[k] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            }
            vals[4 * k] = a;
            vals[4 * k + 1] = b;
            vals[4 * k + 2] = c;
            vals[4 * k + 3] = d;
        }
#pragma unroll
        for (int k = 0; k < 4 * CACHE; k++) {
            float v = vals[k] - shift;
            s += v;
            ss = fmaf(v, v, ss);
        }
        block_sum2(s, ss);
        float mean_d = s * inv_n;
        float rstd = rsqrtf(fmaxf(ss * inv_n - mean_d * mean_d, 0.0f) + eps);
        float mean = shift + mean_d;
#pragma unroll
        for (int k = 0; k < CACHE; k++) {
            int j = (k * NORM_BLOCK + t) * 4;
            if (j < cols) {
                float4 g = gs[k];
                float4 bb = bs[k];
                *reinterpret_cast<float4*>(out + row * out_cols + j) =
                    make_float4(fmaf((vals[4 * k] - mean) * rstd, g.x, bb.x),
                                fmaf((vals[4 * k + 1] - mean) * rstd, g.y, bb.y),
                                fmaf((vals[4 * k + 2] - mean) * rstd, g.z, bb.z),
                                fmaf((vals[4 * k + 3] - mean) * rstd, g.w, bb.w));
            }
        }
    } else if (cols % 4 == 0) {
        for (int j = t * 4; j < cols; j += NORM_BLOCK * 4) {
            float4 v = *reinterpret_cast<const float4*>(x + row * x_cols + j);
            float a = v.x - shift;
            float b = v.y - shift;
            float c = v.z - shift;
            float d = v.w - shift;
            s += (a + b) + (c + d);
            ss = fmaf(a, a, fmaf(b, b, fmaf(c, c, fmaf(d, d, ss))));
        }
        block_sum2(s, ss);
        float mean_d = s * inv_n;
        float rstd = rsqrtf(fmaxf(ss * inv_n - mean_d * mean_d, 0.0f) + eps);
        float mean = shift + mean_d;
        for (int j = t * 4; j < cols; j += NORM_BLOCK * 4) {
            float4 v = *reinterpret_cast<const float4*>(x + row * x_cols + j);
            float4 g = *reinterpret_cast<const float4*>(gamma + j);
            float4 bb = *reinterpret_cast<const float4*>(beta + j);
            *reinterpret_cast<float4*>(out + row * out_cols + j) =
                make_float4(fmaf((v.x - mean) * rstd, g.x, bb.x), fmaf((v.y - mean) * rstd, g.y, bb.y),
                            fmaf((v.z - mean) * rstd, g.z, bb.z), fmaf((v.w - mean) * rstd, g.w, bb.w));
        }
    } else {
        for (int j = t; j < cols; j += NORM_BLOCK) {
            float a = x[row * x_cols + j] - shift;
            s += a;
            ss = fmaf(a, a, ss);
        }
        block_sum2(s, ss);
        float mean_d = s * inv_n;
        float rstd = rsqrtf(fmaxf(ss * inv_n - mean_d * mean_d, 0.0f) + eps);
        float mean = shift + mean_d;
        for (int j = t; j < cols; j += NORM_BLOCK) {
            out[row * out_cols + j] = fmaf((x[row * x_cols + j] - mean) * rstd, gamma[j], beta[j]);
        }
    }
}

extern "C" __global__ void layer_norm_kernel_cache4(const float* __restrict__ x, int x_cols,
                                                    const float* __restrict__ gamma,
                                                    const float* __restrict__ beta,
                                                    const float* __restrict__ eps,
                                                    float* __restrict__ out, int out_cols) {
    layer_norm_body<4>(x, x_cols, gamma, beta, eps, out, out_cols);
}

extern "C" __global__ void layer_norm_kernel_cache0(const float* __restrict__ x, int x_cols,
                                                    const float* __restrict__ gamma,
                                                    const float* __restrict__ beta,
                                                    const float* __restrict__ eps,
                                                    float* __restrict__ out, int out_cols) {
    layer_norm_body<0>(x, x_cols, gamma, beta, eps, out, out_cols);
}

// ---------------------------------------------------------------------------------------------
// examples/swiglu.py: BLOCK = 256, fast_math=True (`/` is div.approx, exp is ex2.approx)
__device__ __forceinline__ float silu(float a) {
    return __fdividef(a, 1.0f + __expf(-a));
}

extern "C" __global__ void swiglu(const float* __restrict__ x, int x_rows, int x_cols,
                                  float* __restrict__ out, int out_cols) {
    int rows = x_rows;
    int h = out_cols;
    if (h % 4 == 0) {
        int j = (int)(blockIdx.x * 256 + threadIdx.x) * 4;
        if (j < h) {
            int ju = h + j;
            int r = blockIdx.y;
            while (r < rows) {
                float4 g = *reinterpret_cast<const float4*>(x + r * x_cols + j);
                float4 u = *reinterpret_cast<const float4*>(x + r * x_cols + ju);
                *reinterpret_cast<float4*>(out + r * out_cols + j) =
                    make_float4(silu(g.x) * u.x, silu(g.y) * u.y, silu(g.z) * u.z, silu(g.w) * u.w);
                r += (int)gridDim.y;
            }
        }
    } else {
        int j = blockIdx.x * 256 + threadIdx.x;
        if (j < h) {
            int r = blockIdx.y;
            while (r < rows) {
                out[r * out_cols + j] = silu(x[r * x_cols + j]) * x[r * x_cols + (h + j)];
                r += (int)gridDim.y;
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// examples/reduction.py: BLOCK = 512, IS_MAX = false (sum) and true (max)
#define RED_BLOCK 512
#define RED_WARPS (RED_BLOCK / 32)

template <bool IS_MAX>
__device__ __forceinline__ void reduce_body(const float* __restrict__ x, int n,
                                            float* __restrict__ partial) {
    int t = threadIdx.x;
    int tid = blockIdx.x * RED_BLOCK + t;
    int stride = gridDim.x * RED_BLOCK;
    float acc = IS_MAX ? -CUDART_INF_F : 0.0f;
    int i = tid * 4;
    int step = stride * 4;
    while (i + 4 <= n - 3 * step) {
        float4 a = *reinterpret_cast<const float4*>(x + i);
        float4 b = *reinterpret_cast<const float4*>(x + i + step);
        float4 c = *reinterpret_cast<const float4*>(x + i + 2 * step);
        float4 d = *reinterpret_cast<const float4*>(x + i + 3 * step);
        if (IS_MAX) {
            acc = fmaxf(fmaxf(fmaxf(fmaxf(acc, fmaxf(fmaxf(fmaxf(a.x, a.y), a.z), a.w)),
                                    fmaxf(fmaxf(fmaxf(b.x, b.y), b.z), b.w)),
                              fmaxf(fmaxf(fmaxf(c.x, c.y), c.z), c.w)),
                        fmaxf(fmaxf(fmaxf(d.x, d.y), d.z), d.w));
        } else {
            acc += (((a.x + a.y) + (a.z + a.w)) + ((b.x + b.y) + (b.z + b.w))) +
                   (((c.x + c.y) + (c.z + c.w)) + ((d.x + d.y) + (d.z + d.w)));
        }
        i += 4 * step;
    }
    while (i + 4 <= n) {
        float4 v = *reinterpret_cast<const float4*>(x + i);
        if (IS_MAX) {
            acc = fmaxf(fmaxf(fmaxf(fmaxf(acc, v.x), v.y), v.z), v.w);
        } else {
            acc += (v.x + v.y) + (v.z + v.w);
        }
        i += step;
    }
    int tail = n - n % 4 + tid;
    if (tail < n) {
        acc = IS_MAX ? fmaxf(acc, x[tail]) : acc + x[tail];
    }

    acc = IS_MAX ? warp_max(acc) : warp_sum(acc);
    __shared__ float per_warp[RED_WARPS];
    if (t % 32 == 0) {
        per_warp[t / 32] = acc;
    }
    __syncthreads();
    if (t < 32) {
        float v = t < RED_WARPS ? per_warp[t] : (IS_MAX ? -CUDART_INF_F : 0.0f);
        v = IS_MAX ? warp_max(v) : warp_sum(v);
        if (t == 0) {
            partial[blockIdx.x] = v;
        }
    }
}

extern "C" __global__ void reduce_sum(const float* __restrict__ x, int n,
                                      float* __restrict__ partial) {
    reduce_body<false>(x, n, partial);
}

extern "C" __global__ void reduce_max(const float* __restrict__ x, int n,
                                      float* __restrict__ partial) {
    reduce_body<true>(x, n, partial);
}

// ---------------------------------------------------------------------------------------------
// examples/prefix_scan.py: BLOCK = 256, ITEMS = 4, TILE = 1024
#define SCAN_BLOCK 256
#define SCAN_ITEMS 4
#define SCAN_TILE (SCAN_BLOCK * SCAN_ITEMS)
#define SCAN_WARPS (SCAN_BLOCK / 32)

extern "C" __global__ void scan_tiles(const int* __restrict__ x, int n, int* __restrict__ y,
                                      int* __restrict__ tile_sums) {
    int t = threadIdx.x;
    int lane = t % 32;
    int warp = t / 32;
    int i = blockIdx.x * SCAN_TILE + t * SCAN_ITEMS;
    int a, b, c, d;
    if (i + 4 <= n) {
        int4 v = *reinterpret_cast<const int4*>(x + i);
        a = v.x;
        b = v.y;
        c = v.z;
        d = v.w;
    } else {
        a = i < n ? x[i] : 0;
        b = i + 1 < n ? x[i + 1] : 0;
        c = i + 2 < n ? x[i + 2] : 0;
        d = i + 3 < n ? x[i + 3] : 0;
    }
    b += a;
    c += b;
    d += c;
    int s = d;
#pragma unroll
    for (int k = 0; k < 5; k++) {
        int up = __shfl_up_sync(FULL_MASK, s, 1 << k);
        if (lane >= 1 << k) {
            s += up;
        }
    }
    __shared__ int warp_totals[SCAN_WARPS];
    if (lane == 31) {
        warp_totals[warp] = s;
    }
    __syncthreads();
    int before = s - d;
#pragma unroll
    for (int w = 0; w < SCAN_WARPS - 1; w++) {
        if (w < warp) {
            before += warp_totals[w];
        }
    }
    if (i + 4 <= n) {
        *reinterpret_cast<int4*>(y + i) = make_int4(before + a, before + b, before + c, before + d);
    } else {
        if (i < n) {
            y[i] = before + a;
        }
        if (i + 1 < n) {
            y[i + 1] = before + b;
        }
        if (i + 2 < n) {
            y[i + 2] = before + c;
        }
    }
    if (t == SCAN_BLOCK - 1) {
        tile_sums[blockIdx.x] = before + d;
    }
}

extern "C" __global__ void add_offsets(const int* __restrict__ y, int n,
                                       const int* __restrict__ offsets, int* __restrict__ out) {
    int tile = blockIdx.x;
    int i = tile * SCAN_TILE + threadIdx.x * SCAN_ITEMS;
    int add = tile > 0 ? offsets[tile - 1] : 0;
    if (i + 4 <= n) {
        int4 v = *reinterpret_cast<const int4*>(y + i);
        *reinterpret_cast<int4*>(out + i) = make_int4(v.x + add, v.y + add, v.z + add, v.w + add);
    } else {
        for (int j = i; j < n; j++) {
            out[j] = y[j] + add;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// examples/transpose.py: TILE = 64, ROWS = 8, block (64, 8)
#define TR_TILE 64
#define TR_ROWS 8

extern "C" __global__ void transpose(const float* __restrict__ x, int x_rows, int x_cols,
                                     float* __restrict__ out, int out_cols) {
    int m = x_rows;
    int n = x_cols;
    __shared__ float tile[TR_TILE][TR_TILE + 1];
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    int row0 = blockIdx.y * TR_TILE;
    int col0 = blockIdx.x * TR_TILE;

    int col = col0 + tx;
#pragma unroll
    for (int k = 0; k < TR_TILE; k += TR_ROWS) {
        int row = row0 + ty + k;
        if (row < m && col < n) {
            tile[ty + k][tx] = x[row * x_cols + col];
        }
    }
    __syncthreads();

    int out_col = row0 + tx;
#pragma unroll
    for (int k = 0; k < TR_TILE; k += TR_ROWS) {
        int out_row = col0 + ty + k;
        if (out_row < n && out_col < m) {
            out[out_row * out_cols + out_col] = tile[tx][ty + k];
        }
    }
}

// ---------------------------------------------------------------------------------------------
// examples/histogram.py: BINS = 256, BLOCK = 256; n by value (a Python int in the example)
#define HIST_BINS 256
#define HIST_BLOCK 256

__device__ __forceinline__ void count_word(int* hist, unsigned w, int first, int n) {
#pragma unroll
    for (int k = 0; k < 4; k++) {
        if (first + k < n) {
            atomicAdd(&hist[(int)((w >> (8 * k)) & 0xFFu)], 1);
        }
    }
}

extern "C" __global__ void histogram(const unsigned* __restrict__ words, int words_n, int n,
                                     int* __restrict__ counts) {
    __shared__ int hist[HIST_BINS];
    int t = threadIdx.x;
    for (int b = t; b < HIST_BINS; b += HIST_BLOCK) {
        hist[b] = 0;
    }
    __syncthreads();

    int i = (blockIdx.x * HIST_BLOCK + t) * 4;
    int stride = gridDim.x * HIST_BLOCK * 4;
    while (i < words_n) {
        uint4 v = *reinterpret_cast<const uint4*>(words + i);
        unsigned w0 = v.x, w1 = v.y, w2 = v.z, w3 = v.w;
        if (4 * i + 16 <= n) {
#pragma unroll
            for (int k = 0; k < 4; k++) {
                atomicAdd(&hist[(int)((w0 >> (8 * k)) & 0xFFu)], 1);
                atomicAdd(&hist[(int)((w1 >> (8 * k)) & 0xFFu)], 1);
                atomicAdd(&hist[(int)((w2 >> (8 * k)) & 0xFFu)], 1);
                atomicAdd(&hist[(int)((w3 >> (8 * k)) & 0xFFu)], 1);
            }
        } else {
            count_word(hist, w0, 4 * i, n);
            count_word(hist, w1, 4 * i + 4, n);
            count_word(hist, w2, 4 * i + 8, n);
            count_word(hist, w3, 4 * i + 12, n);
        }
        i += stride;
    }
    __syncthreads();

    for (int b = t; b < HIST_BINS; b += HIST_BLOCK) {
        int c = hist[b];
        if (c != 0) {
            atomicAdd(&counts[b], c);
        }
    }
}
