// The correct translation of numbakern.kernels.reduce:block_sum (hand-written to the launcher contract).
#include <cuda_runtime.h>
#include <stdint.h>

__global__ void block_sum_kernel(const float* x, int64_t x_shape0, float* out, int64_t out_shape0) {
    __shared__ float partial[256];
    const int64_t tid = threadIdx.x;
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    partial[tid] = i < x_shape0 ? x[i] : 0.0f;
    __syncthreads();
    for (int64_t stride = 128; stride > 0; stride /= 2) {
        if (tid < stride) partial[tid] += partial[tid + stride];
        __syncthreads();
    }
    if (tid == 0) atomicAdd(&out[0], partial[0]);
}

extern "C" cudaError_t launch_block_sum(const float* x, int64_t x_shape0, float* out, int64_t out_shape0,
                                        unsigned grid_x, unsigned grid_y, unsigned grid_z,
                                        unsigned block_x, unsigned block_y, unsigned block_z,
                                        size_t shared_bytes, cudaStream_t stream) {
    block_sum_kernel<<<dim3(grid_x, grid_y, grid_z), dim3(block_x, block_y, block_z), shared_bytes, stream>>>(
        x, x_shape0, out, out_shape0);
    return cudaGetLastError();
}
