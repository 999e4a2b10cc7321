// Hand-written CUDA C of the flagship matmul's two designs, as far as nvcc takes them: the reference points of
// scripts/bench_matmul.py for what numbakern's kernels and their translations could reach on the same GPU.
//
// Both use the thread tiles of numbakern/kernels/matmul_fast.py: a 128 x 128 block tile, k-tiles of 16, 8 x 8
// outputs per thread in groups of 4 x 4, a warp covering 4 x 8 threads, register fragments double-buffered.
//
//   sgemm_vec4   the design of matmul_flagship(vec=True): 16-byte global loads staged in registers, A stored
//                transposed into shared memory, two shared buffers, the k-loop fully unrolled by nvcc.
//   sgemm_async  the design of matmul_flagship_async: A given transposed (k x h), both tiles copied with cp.async
//                (16 bytes straight into shared memory, zero-filled outside the matrix), two stages.
//                ROLLED keeps the k-steps in a rolled loop of pairs, as Numba's NVVM leaves them; NUMBA_LOOP shapes
//                the tile loop the way the Numba kernel is written (from t = -1, so one body is also the prologue).
//
// Preconditions: sgemm_vec4 needs k % 4 == 0 and w % 4 == 0; sgemm_async needs h % 4 == 0 and w % 4 == 0. Every
// launcher takes (a, b, c, h, k, w, stream) with row-major float32 matrices (for sgemm_async, a is A^T).
#include <cuda_runtime.h>

// A thread's register fragments for one k-step: TM values of the A tile's row kk (groups of 4, GM apart) and TN
// of the B tile's row kk (groups of 4, GN apart), with 16-byte shared loads.
template <int TM, int TN, int GM, int GN>
__device__ __forceinline__ void load_fragments(float (&af)[TM], float (&bf)[TN], const float* a_row,
                                               const float* b_row) {
#pragma unroll
    for (int g = 0; g < TM / 4; ++g) {
        float4 v = *reinterpret_cast<const float4*>(a_row + g * GM);
        af[4 * g] = v.x; af[4 * g + 1] = v.y; af[4 * g + 2] = v.z; af[4 * g + 3] = v.w;
    }
#pragma unroll
    for (int g = 0; g < TN / 4; ++g) {
        float4 v = *reinterpret_cast<const float4*>(b_row + g * GN);
        bf[4 * g] = v.x; bf[4 * g + 1] = v.y; bf[4 * g + 2] = v.z; bf[4 * g + 3] = v.w;
    }
}

template <int TM, int TN>
__device__ __forceinline__ void outer_product(float (&acc)[TM][TN], const float (&af)[TM], const float (&bf)[TN]) {
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] += af[i] * bf[j];
}

// The thread's TM x TN outputs, rows from r0 (groups of 4, GM apart), columns from c0 (groups of 4, GN apart),
// as 16-byte stores (w % 4 == 0: a group is inside the matrix or outside it as a whole).
template <int TM, int TN, int GM, int GN>
__device__ __forceinline__ void store_tile(const float (&acc)[TM][TN], float* C, int r0, int c0, int h, int w) {
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        int r = r0 + (i / 4) * GM + i % 4;
        if (r >= h) continue;
#pragma unroll
        for (int g = 0; g < TN / 4; ++g) {
            int c = c0 + g * GN;
            if (c < w)
                *reinterpret_cast<float4*>(&C[(size_t)r * w + c]) =
                    make_float4(acc[i][4 * g], acc[i][4 * g + 1], acc[i][4 * g + 2], acc[i][4 * g + 3]);
        }
    }
}

template <int BM, int BN, int BK, int TM, int TN>
__global__ void __launch_bounds__((BM / TM) * (BN / TN), 2)
sgemm_vec4(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int h, int k, int w)
{
    constexpr int NT = (BM / TM) * (BN / TN);
    constexpr int TX = BN / TN;
    constexpr int WX = 8, WY = 4, WARPS_X = TX / WX;
    constexpr int GM = BM / (TM / 4), GN = BN / (TN / 4);
    constexpr int PA = BM + 4;  // padded rows of the transposed A tile: no bank conflicts on its stores
    constexpr int A_TPR = BK / 4, A_RSTEP = NT / A_TPR, LA = BM / A_RSTEP;
    constexpr int B_TPR = BN / 4, B_RSTEP = NT / B_TPR, LB = BK / B_RSTEP;
    __shared__ __align__(16) float a_s[2][BK][PA];
    __shared__ __align__(16) float b_s[2][BK][BN];
    const int tid = threadIdx.x, wq = tid / 32, lq = tid % 32;
    const int a_base = ((wq / WARPS_X) * WY + lq / WX) * 4;
    const int b_base = ((wq % WARPS_X) * WX + lq % WX) * 4;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const int ar = tid / A_TPR, ac = (tid % A_TPR) * 4;
    const int br = tid / B_TPR, bc = (tid % B_TPR) * 4;
    float a_ld[LA][4], b_ld[LB][4];
    float acc[TM][TN];
    float af[2][TM], bf[2][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

    auto gload = [&](int k0) {
#pragma unroll
        for (int i = 0; i < LA; ++i) {
            int gr = row0 + ar + i * A_RSTEP, gk = k0 + ac;
            float4 v = gr < h && gk < k ? *reinterpret_cast<const float4*>(&A[(size_t)gr * k + gk])
                                        : make_float4(0.f, 0.f, 0.f, 0.f);
            a_ld[i][0] = v.x; a_ld[i][1] = v.y; a_ld[i][2] = v.z; a_ld[i][3] = v.w;
        }
#pragma unroll
        for (int i = 0; i < LB; ++i) {
            int gk = k0 + br + i * B_RSTEP, gc = col0 + bc;
            float4 v = gk < k && gc < w ? *reinterpret_cast<const float4*>(&B[(size_t)gk * w + gc])
                                        : make_float4(0.f, 0.f, 0.f, 0.f);
            b_ld[i][0] = v.x; b_ld[i][1] = v.y; b_ld[i][2] = v.z; b_ld[i][3] = v.w;
        }
    };
    auto sstore = [&](int buf) {
#pragma unroll
        for (int i = 0; i < LA; ++i)
#pragma unroll
            for (int q = 0; q < 4; ++q) a_s[buf][ac + q][ar + i * A_RSTEP] = a_ld[i][q];
#pragma unroll
        for (int i = 0; i < LB; ++i)
            *reinterpret_cast<float4*>(&b_s[buf][br + i * B_RSTEP][bc]) =
                make_float4(b_ld[i][0], b_ld[i][1], b_ld[i][2], b_ld[i][3]);
    };
    auto frag = [&](int s, int buf, int kk) {
        load_fragments<TM, TN, GM, GN>(af[s], bf[s], &a_s[buf][kk][a_base], &b_s[buf][kk][b_base]);
    };

    const int ntiles = (k + BK - 1) / BK;
    gload(0);
    sstore(0);
    __syncthreads();
    for (int t = 0; t < ntiles; ++t) {
        const int cur = t & 1;
        const bool more = t + 1 < ntiles;
        if (more) gload((t + 1) * BK);  // the next tile's loads are in flight during this tile's math
        frag(0, cur, 0);
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
            if (kk + 1 < BK) frag((kk + 1) & 1, cur, kk + 1);
            outer_product(acc, af[kk & 1], bf[kk & 1]);
        }
        if (more) sstore(cur ^ 1);
        __syncthreads();
    }
    store_tile<TM, TN, GM, GN>(acc, C, row0 + a_base, col0 + b_base, h, w);
}

// 16 bytes global -> shared without registers; src_bytes = 0 fills the 16 bytes with zeros
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem, int src_bytes) {
    unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"(s), "l"(gmem), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_group 0;\n" ::: "memory"); }

template <int BM, int BN, int BK, int TM, int TN, bool ROLLED, bool NUMBA_LOOP>
__global__ void __launch_bounds__((BM / TM) * (BN / TN), 2)
sgemm_async(const float* __restrict__ At, const float* __restrict__ B, float* __restrict__ C, int h, int k, int w)
{
    constexpr int NT = (BM / TM) * (BN / TN);
    constexpr int TX = BN / TN;
    constexpr int WX = 8, WY = 4, WARPS_X = TX / WX;
    constexpr int GM = BM / (TM / 4), GN = BN / (TN / 4);
    constexpr int LA = BK * BM / 4 / NT, LB = BK * BN / 4 / NT;
    __shared__ __align__(16) float a_s[2][BK][BM];
    __shared__ __align__(16) float b_s[2][BK][BN];
    const int tid = threadIdx.x, wq = tid / 32, lq = tid % 32;
    const int a_base = ((wq / WARPS_X) * WY + lq / WX) * 4;
    const int b_base = ((wq % WARPS_X) * WX + lq % WX) * 4;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    auto issue = [&](int tile, int st) {
        const int k0 = tile * BK;
#pragma unroll
        for (int i = 0; i < LA; ++i) {
            int c = tid + i * NT, r = c / (BM / 4), col = (c % (BM / 4)) * 4;
            bool ok = k0 + r < k && row0 + col < h;
            cp_async16(&a_s[st][r][col], ok ? &At[(size_t)(k0 + r) * h + row0 + col] : At, ok ? 16 : 0);
        }
#pragma unroll
        for (int i = 0; i < LB; ++i) {
            int c = tid + i * NT, r = c / (BN / 4), col = (c % (BN / 4)) * 4;
            bool ok = k0 + r < k && col0 + col < w;
            cp_async16(&b_s[st][r][col], ok ? &B[(size_t)(k0 + r) * w + col0 + col] : B, ok ? 16 : 0);
        }
    };
    float acc[TM][TN];
    float af[2][TM], bf[2][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
    auto frag = [&](int s, int st, int kk) {
        load_fragments<TM, TN, GM, GN>(af[s], bf[s], &a_s[st][kk][a_base], &b_s[st][kk][b_base]);
    };
    auto compute = [&](int st) {
        frag(0, st, 0);
        if constexpr (ROLLED) {
#pragma unroll 1
            for (int kk = 0; kk < BK; kk += 2) {
                frag(1, st, kk + 1);
                outer_product(acc, af[0], bf[0]);
                if (kk + 2 < BK) frag(0, st, kk + 2);
                outer_product(acc, af[1], bf[1]);
            }
        } else {
#pragma unroll
            for (int kk = 0; kk < BK; ++kk) {
                if (kk + 1 < BK) frag((kk + 1) & 1, st, kk + 1);
                outer_product(acc, af[kk & 1], bf[kk & 1]);
            }
        }
    };
    const int ntiles = (k + BK - 1) / BK;
    if constexpr (NUMBA_LOOP) {
        for (int t = -1; t < ntiles; ++t) {
            if (t >= 0) {
                cp_async_wait_all();
                __syncthreads();
            }
            if (t + 1 < ntiles) {
                issue(t + 1, (t + 1) & 1);
                cp_async_commit();
            }
            if (t >= 0) compute(t & 1);
        }
    } else {
        if (ntiles > 0) issue(0, 0);
        cp_async_commit();
        for (int t = 0; t < ntiles; ++t) {
            cp_async_wait_all();
            __syncthreads();  // tile t landed for every thread, and every thread is done with tile t - 1's stage
            if (t + 1 < ntiles) issue(t + 1, (t + 1) & 1);
            cp_async_commit();
            compute(t & 1);
        }
    }
    store_tile<TM, TN, GM, GN>(acc, C, row0 + a_base, col0 + b_base, h, w);
}

// Launchers: one block of 256 threads per 128 x 128 output tile.
template <typename Kernel>
static cudaError_t launch_128x128(Kernel kernel, const float* a, const float* b, float* c, int h, int k, int w,
                                  cudaStream_t stream) {
    if (h == 0 || w == 0) return cudaSuccess;
    kernel<<<dim3((w + 127) / 128, (h + 127) / 128), 256, 0, stream>>>(a, b, c, h, k, w);
    return cudaGetLastError();
}

extern "C" cudaError_t launch_sgemm_vec4(const float* a, const float* b, float* c, int h, int k, int w,
                                         cudaStream_t stream) {
    return launch_128x128(sgemm_vec4<128, 128, 16, 8, 8>, a, b, c, h, k, w, stream);
}

extern "C" cudaError_t launch_sgemm_async(const float* at, const float* b, float* c, int h, int k, int w,
                                          cudaStream_t stream) {
    return launch_128x128(sgemm_async<128, 128, 16, 8, 8, false, false>, at, b, c, h, k, w, stream);
}

extern "C" cudaError_t launch_sgemm_async_rolled(const float* at, const float* b, float* c, int h, int k, int w,
                                                 cudaStream_t stream) {
    return launch_128x128(sgemm_async<128, 128, 16, 8, 8, true, false>, at, b, c, h, k, w, stream);
}

extern "C" cudaError_t launch_sgemm_async_numba_loop(const float* at, const float* b, float* c, int h, int k, int w,
                                                     cudaStream_t stream) {
    return launch_128x128(sgemm_async<128, 128, 16, 8, 8, false, true>, at, b, c, h, k, w, stream);
}
