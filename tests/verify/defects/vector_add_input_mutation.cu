// PLANTED DEFECT (input_mutation) in the vector_add translation: the sum is accumulated in place into the
// input a (the output is still right). Verification must reject this file; see docs/verification.md.
#include <cuda_runtime.h>
#include <stdint.h>

__global__ void vector_add_kernel(float* a, int64_t a_shape0, const float* b, int64_t b_shape0,
                                  float* out, int64_t out_shape0) {
    const int64_t start = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = start; i < out_shape0; i += stride) { a[i] += b[i]; out[i] = a[i]; }  // DEFECT: writes its input
}

extern "C" cudaError_t launch_vector_add(float* a, int64_t a_shape0, const float* b, int64_t b_shape0,
                                         float* out, int64_t out_shape0,
                                         unsigned grid_x, unsigned grid_y, unsigned grid_z,
                                         unsigned block_x, unsigned block_y, unsigned block_z,
                                         size_t shared_bytes, cudaStream_t stream) {
    vector_add_kernel<<<dim3(grid_x, grid_y, grid_z), dim3(block_x, block_y, block_z), shared_bytes, stream>>>(
        a, a_shape0, b, b_shape0, out, out_shape0);
    return cudaGetLastError();
}
