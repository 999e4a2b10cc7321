// PLANTED DEFECT (unwritten_output) in the matmul_tiled translation: the product is computed but never stored: the output keeps whatever the buffer held.
// Verification must reject this file; see docs/verification.md.
#include <cuda_runtime.h>
#include <stdint.h>

__global__ void matmul_tiled_kernel(const float* m, int64_t m_shape0, int64_t m_shape1,
                                    const float* n, int64_t n_shape0, int64_t n_shape1,
                                    float* out, int64_t out_shape0, int64_t out_shape1, int64_t tw) {
    extern __shared__ float shar[];
    float* ms = shar;
    float* ns = shar + tw * tw;
    const int64_t tc = threadIdx.x, tr = threadIdx.y;
    const int64_t r = (int64_t)blockIdx.y * blockDim.y + tr;
    const int64_t c = (int64_t)blockIdx.x * blockDim.x + tc;
    const int64_t h = m_shape0, k = m_shape1, w = n_shape1;
    float p = 0.0f;
    const int64_t phases = (k + tw - 1) / tw;
    for (int64_t ph = 0; ph < phases; ++ph) {
        const int64_t idx = ph * tw;
        ms[tr * tw + tc] = (r < h && idx + tc < k) ? m[r * k + tc + idx] : 0.0f;
        ns[tr * tw + tc] = (c < w && idx + tr < k) ? n[(tr + idx) * w + c] : 0.0f;
        __syncthreads();
        for (int64_t i = 0; i < tw; ++i) p += ms[tr * tw + i] * ns[tw * i + tc];
        __syncthreads();
    }
    (void)p;  // DEFECT: the store is missing
}

extern "C" cudaError_t launch_matmul_tiled(const float* m, int64_t m_shape0, int64_t m_shape1,
                                           const float* n, int64_t n_shape0, int64_t n_shape1,
                                           float* out, int64_t out_shape0, int64_t out_shape1, int64_t tw,
                                           unsigned grid_x, unsigned grid_y, unsigned grid_z,
                                           unsigned block_x, unsigned block_y, unsigned block_z,
                                           size_t shared_bytes, cudaStream_t stream) {
    matmul_tiled_kernel<<<dim3(grid_x, grid_y, grid_z), dim3(block_x, block_y, block_z), shared_bytes, stream>>>(
        m, m_shape0, m_shape1, n, n_shape0, n_shape1, out, out_shape0, out_shape1, tw);
    return cudaGetLastError();
}
