// CUDA C++ equivalents of the ptxpy kernels in benchmarks/compile_kernels.py, for
// benchmarks/registers.py: float32 data, int32 indices, row-major 2-D arrays, array shapes
// passed as separate int parameters.
#include <cuda_runtime.h>

extern "C" __global__ void saxpy(const float* __restrict__ x, const float* __restrict__ y,
                                 float a, float* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = a * x[i] + y[i];
    }
}

extern "C" __global__ void row_sum(const float* __restrict__ x, int rows, int cols,
                                   float* __restrict__ out) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < rows) {
        float acc = 0.0f;
        for (int j = 0; j < cols; j++) {
            acc += x[row * cols + j];
        }
        out[row] = acc;
    }
}

extern "C" __global__ void rms_norm(const float* __restrict__ x, int rows, int cols,
                                    const float* __restrict__ w, float* __restrict__ out,
                                    float eps) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) {
        return;
    }
    int n = cols;
    float ss = 0.0f;
    for (int j = 0; j < n; j++) {
        ss += x[row * cols + j] * x[row * cols + j];
    }
    float scale = 1.0f / sqrtf(ss / n + eps);
    for (int j = 0; j < n; j++) {
        out[row * cols + j] = x[row * cols + j] * scale * w[j];
    }
}

__device__ __forceinline__ float clamp_f(float v, float lo, float hi) {
    if (v < lo) return lo;
    if (v > hi) return hi;
    return v;
}

__device__ __forceinline__ float gelu(float v) {
    float inner = 0.7978845608f * (v + 0.044715f * v * v * v);
    float e = expf(-2.0f * fabsf(inner));
    float t = (1.0f - e) / (1.0f + e);
    if (inner < 0.0f) t = -t;
    return 0.5f * v * (1.0f + t);
}

__device__ __forceinline__ int hash_index(int i, int n) {
    // int32 wrap-around arithmetic (done in unsigned to avoid C++ signed-overflow UB),
    // arithmetic right shifts on the signed value.
    int h = (int)((unsigned)i * 1103515245u + 12345u);
    h = h ^ (h >> 16);
    h = (int)((unsigned)h * 73244475u);
    h = h ^ (h >> 16);
    return (h & 0x7FFFFFFF) % n;
}

extern "C" __global__ void epilogue(const float* __restrict__ x, int rows, int cols,
                                    const float* __restrict__ bias,
                                    const float* __restrict__ gamma,
                                    const float* __restrict__ beta,
                                    float scale, float drop, int seed,
                                    float* __restrict__ out, float* __restrict__ stats,
                                    int stats_cols) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) {
        return;
    }
    // row_stats
    int n = cols;
    float mean = 0.0f;
    for (int j = 0; j < n; j++) mean += x[row * cols + j];
    mean = mean / n;
    float var = 0.0f;
    for (int j = 0; j < n; j++) {
        float d = x[row * cols + j] - mean;
        var += d * d;
    }
    var = var / n;

    float inv = 1.0f / sqrtf(var + 1e-5f);
    float* srow = stats + row * stats_cols;
    srow[0] = mean;
    srow[1] = inv;
    int kept = 0;
    float total = 0.0f;
    float peak = -3.0e38f;
    for (int j = 0; j < cols; j++) {
        float v = (x[row * cols + j] - mean) * inv;
        v = v * gamma[j] + beta[j];
        v = v + bias[j];
        v = gelu(v) * scale;
        int r = hash_index(row * cols + j + seed, 1000);
        if ((float)r < drop * 1000.0f) {
            v = 0.0f;
        } else {
            v = v / (1.0f - drop);
            kept += 1;
        }
        v = clamp_f(v, -8.0f, 8.0f);
        if (v > peak) peak = v;
        total += v;
        out[row * cols + j] = v;
    }
    srow[2] = total;
    srow[3] = peak;
    if (kept > 0) {
        float shift = total / kept;
        int j = 0;
        while (j < cols) {
            if (j % 2 == 0) out[row * cols + j] = out[row * cols + j] - shift;
            j += 1;
        }
    }
    float head = 0.0f;
#pragma unroll
    for (int k = 0; k < 8; k++) {
        if (k < cols) head += out[row * cols + k] * (float)(k + 1);
    }
    srow[4] = head;
    int signs = 0;
    for (int j = 0; j < cols; j++) {
        float o = out[row * cols + j];
        if (o > 0.0f) signs = signs * 3 + 1;
        else if (o < 0.0f) signs = signs * 3 + 2;
        else signs = signs * 3;
        signs = signs % 1000003;
    }
    srow[5] = (float)signs;
    float lo = fminf(fminf(srow[0], srow[1]), srow[2]);
    float hi = fmaxf(fmaxf(srow[0], srow[1]), srow[2]);
    srow[6] = lo;
    srow[7] = hi;
}
