// The lecture's hand-written CUDA C (CUDA MODE lecture 5): the naive matmul and the tiled kernel with static
// shared memory, as reference points for the Numba kernels of numbakern/kernels/matmul.py.
//
// Used by scripts/bench_matmul.py: timed through the extern "C" launchers below (built with nvcc -shared, called
// with ctypes), and compiled to PTX for the code-generation table (--codegen). Row-major float32: m is h x k,
// n is k x w, out is h x w.
#include <cuda_runtime.h>

__global__ void matmul_naive_c(const float* m, const float* n, float* out, int h, int w, int k) {
    int r = blockIdx.y * blockDim.y + threadIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < h && c < w) {
        float o = 0;
        for (int i = 0; i < k; ++i) o += m[r * k + i] * n[i * w + c];
        out[r * w + c] = o;
    }
}

template <int tw>
__global__ void matmul_tiled_static_c(const float* m, const float* n, float* out, int h, int w, int k) {
    __shared__ float ms[tw][tw], ns[tw][tw];
    int ir = threadIdx.y, ic = threadIdx.x, r = blockIdx.y * blockDim.y + ir, c = blockIdx.x * blockDim.x + ic;
    float p = 0.0f;
    for (int ph = 0; ph < (k + tw - 1) / tw; ++ph) {
        int idx = ph * tw;
        ms[ir][ic] = r < h && idx + ic < k ? m[r * k + idx + ic] : 0.0f;
        ns[ir][ic] = c < w && idx + ir < k ? n[(ir + idx) * w + c] : 0.0f;
        __syncthreads();
        for (int i = 0; i < tw; ++i) p += ms[ir][i] * ns[i][ic];
        __syncthreads();
    }
    if (r < h && c < w) out[r * w + c] = p;
}

// Launchers: (m, n, out, h, k, w, stream), 16 x 16 threads per block, one thread per output element.
static dim3 grid_16x16(int h, int w) { return dim3((w + 15) / 16, (h + 15) / 16); }

extern "C" cudaError_t launch_matmul_naive_c(const float* m, const float* n, float* out, int h, int k, int w,
                                             cudaStream_t stream) {
    if (h == 0 || w == 0) return cudaSuccess;
    matmul_naive_c<<<grid_16x16(h, w), dim3(16, 16), 0, stream>>>(m, n, out, h, w, k);
    return cudaGetLastError();
}

extern "C" cudaError_t launch_matmul_tiled_static_c16(const float* m, const float* n, float* out, int h, int k, int w,
                                                      cudaStream_t stream) {
    if (h == 0 || w == 0) return cudaSuccess;
    matmul_tiled_static_c<16><<<grid_16x16(h, w), dim3(16, 16), 0, stream>>>(m, n, out, h, w, k);
    return cudaGetLastError();
}
