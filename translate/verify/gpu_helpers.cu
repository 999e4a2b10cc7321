// Helpers the verification harness builds next to the candidate (never part of a deployed kernel).
//
// nk_poison_shared(bits): fills every SM's shared memory with a 32-bit pattern, so that a candidate kernel that
// reads shared memory it never wrote sees the pattern (NaN, or garbage) instead of the tile a previous kernel -- the
// Numba reference, say -- happened to leave there. compute-sanitizer's initcheck covers global memory only; this
// covers shared memory.
#include <cuda_runtime.h>
#include <stdint.h>

extern __shared__ uint32_t nk_smem[];

__global__ void nk_fill_shared(uint32_t bits, unsigned words) {
    volatile uint32_t* s = nk_smem;  // volatile: the stores are never read back, keep them anyway
    for (unsigned i = threadIdx.x; i < words; i += blockDim.x) s[i] = bits;
}

extern "C" cudaError_t nk_poison_shared(uint32_t bits) {
    int dev = 0, max_optin = 0, sms = 0;
    cudaError_t err = cudaGetDevice(&dev);
    if (err != cudaSuccess) return err;
    cudaDeviceGetAttribute(&max_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    err = cudaFuncSetAttribute(nk_fill_shared, cudaFuncAttributeMaxDynamicSharedMemorySize, max_optin);
    if (err != cudaSuccess) return err;
    nk_fill_shared<<<sms * 2, 1024, max_optin>>>(bits, (unsigned)(max_optin / 4));
    err = cudaGetLastError();
    if (err != cudaSuccess) return err;
    return cudaDeviceSynchronize();
}
