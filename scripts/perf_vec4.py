"""What 16-byte global loads, a fully unrolled k-loop and grouped block order buy the flagship matmul (issue 7,
round 4).

Times, side by side with cuBLAS (TF32 off), at 2048³, 4096³ and 8192³:

- ``numba flagship``: ``numbakern.kernels.matmul_fast.matmul_flagship``, scalar global loads and ``vec=True``
  (``numbakern.vector_io`` for the global loads, the B tile's shared store and the output; needs ``k % 4 == 0``
  and ``w % 4 == 0``), with and without grouped block order (``group``);
- ``translated C``: the translator's CUDA C of the ``vec=True`` kernel for the same configs (``translate
  matmul_flagship_vec --const ...`` into a scratch directory, built with nvcc -O3);
- ``C sgemm_v<…, VEC, MINB, SWZ>``: a hand CUDA C kernel of the same algorithm with the k-loop fully unrolled
  (``#pragma unroll``), scalar (VEC=0) or float4 (VEC=1) global loads, and optional grouped block order (SWZ rows
  of blocks per group, for L2 reuse): the ceiling of this algorithm in C;
- ``C sgemm_async<…, S>``: the same thread tiles fed by an S-stage ``cp.async`` pipeline (16-byte copies straight
  into shared memory, no register staging) from A^T, timed with the transpose of A included and without it;
- ``C warptile``: a public-domain style warp-tiled SGEMM (the structure of siboehm's "kernel 10": float4 loads, a
  transposed A tile, warp sub-tiles), with its published tile sizes, as a reference point for SIMT C on this GPU.

Every variant is first checked against a float64 product on shapes it supports (non-multiples of its tiles where it
allows them). Run on the GPU machine: ``python scripts/perf_vec4.py --out $OUT``; the table is printed last.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys

import numpy as np
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

CUDA_C = r"""
template <int BM, int BN, int BK, int TM, int TN, bool VEC, int MINB, int SWZ>
__global__ void __launch_bounds__((BM / TM) * (BN / TN), MINB)
sgemm_v(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int h, int k, int w)
{
    constexpr int NT = (BM / TM) * (BN / TN);
    constexpr int TX = BN / TN;
    constexpr int WX = 8, WY = 4, WARPS_X = TX / WX;
    constexpr int GM = BM / (TM / 4), GN = BN / (TN / 4);
    constexpr int PA = BM + 4;
    constexpr int V = VEC ? 4 : 1;
    constexpr int A_TPR = BK / V, A_RSTEP = NT / A_TPR, LA = BM / A_RSTEP;
    constexpr int B_TPR = BN / V, B_RSTEP = NT / B_TPR, LB = BK / B_RSTEP;
    __shared__ __align__(16) float a_s[2][BK][PA];
    __shared__ __align__(16) float b_s[2][BK][BN];
    const int tid = threadIdx.x, wq = tid / 32, lq = tid % 32;
    const int a_base = ((wq / WARPS_X) * WY + lq / WX) * 4;
    const int b_base = ((wq % WARPS_X) * WX + lq % WX) * 4;
    int bx = blockIdx.x, by = blockIdx.y;
    if (SWZ > 1) {
        int lin = blockIdx.y * gridDim.x + blockIdx.x, per_group = SWZ * gridDim.x;
        int first = (lin / per_group) * SWZ, rows = min((int)gridDim.y - first, SWZ);
        by = first + (lin % per_group) % rows;
        bx = (lin % per_group) / rows;
    }
    const int row0 = by * BM, col0 = bx * BN;
    const int ar = tid / A_TPR, ac = (tid % A_TPR) * V;
    const int br = tid / B_TPR, bc = (tid % B_TPR) * V;
    float a_ld[LA][V], b_ld[LB][V];
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
            bool ok = gr < h && gk < k;
            if constexpr (VEC) {
                float4 v = ok ? *reinterpret_cast<const float4*>(&A[(size_t)gr * k + gk]) : make_float4(0.f, 0.f, 0.f, 0.f);
                a_ld[i][0] = v.x; a_ld[i][1] = v.y; a_ld[i][2] = v.z; a_ld[i][3] = v.w;
            } else {
                a_ld[i][0] = ok ? A[(size_t)gr * k + gk] : 0.0f;
            }
        }
#pragma unroll
        for (int i = 0; i < LB; ++i) {
            int gk = k0 + br + i * B_RSTEP, gc = col0 + bc;
            bool ok = gk < k && gc < w;
            if constexpr (VEC) {
                float4 v = ok ? *reinterpret_cast<const float4*>(&B[(size_t)gk * w + gc]) : make_float4(0.f, 0.f, 0.f, 0.f);
                b_ld[i][0] = v.x; b_ld[i][1] = v.y; b_ld[i][2] = v.z; b_ld[i][3] = v.w;
            } else {
                b_ld[i][0] = ok ? B[(size_t)gk * w + gc] : 0.0f;
            }
        }
    };
    auto sstore = [&](int buf) {
#pragma unroll
        for (int i = 0; i < LA; ++i)
#pragma unroll
            for (int q = 0; q < V; ++q) a_s[buf][ac + q][ar + i * A_RSTEP] = a_ld[i][q];
#pragma unroll
        for (int i = 0; i < LB; ++i) {
            if constexpr (VEC) {
                *reinterpret_cast<float4*>(&b_s[buf][br + i * B_RSTEP][bc]) = make_float4(b_ld[i][0], b_ld[i][1], b_ld[i][2], b_ld[i][3]);
            } else {
                b_s[buf][br + i * B_RSTEP][bc] = b_ld[i][0];
            }
        }
    };
    auto frag = [&](int s, int buf, int kk) {
#pragma unroll
        for (int g = 0; g < TM / 4; ++g) {
            float4 v = *reinterpret_cast<const float4*>(&a_s[buf][kk][a_base + g * GM]);
            af[s][4 * g] = v.x; af[s][4 * g + 1] = v.y; af[s][4 * g + 2] = v.z; af[s][4 * g + 3] = v.w;
        }
#pragma unroll
        for (int g = 0; g < TN / 4; ++g) {
            float4 v = *reinterpret_cast<const float4*>(&b_s[buf][kk][b_base + g * GN]);
            bf[s][4 * g] = v.x; bf[s][4 * g + 1] = v.y; bf[s][4 * g + 2] = v.z; bf[s][4 * g + 3] = v.w;
        }
    };

    const int ntiles = (k + BK - 1) / BK;
    gload(0);
    sstore(0);
    __syncthreads();
    for (int t = 0; t < ntiles; ++t) {
        const int cur = t & 1;
        const bool more = t + 1 < ntiles;
        if (more) gload((t + 1) * BK);
        frag(0, cur, 0);
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
            if (kk + 1 < BK) frag((kk + 1) & 1, cur, kk + 1);
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] += af[kk & 1][i] * bf[kk & 1][j];
        }
        if (more) sstore(cur ^ 1);
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        int r = row0 + a_base + (i / 4) * GM + i % 4;
        if (r >= h) continue;
#pragma unroll
        for (int g = 0; g < TN / 4; ++g) {
            int c = col0 + b_base + g * GN;
            if constexpr (VEC) {
                if (c < w) *reinterpret_cast<float4*>(&C[(size_t)r * w + c]) = make_float4(acc[i][4 * g], acc[i][4 * g + 1], acc[i][4 * g + 2], acc[i][4 * g + 3]);
            } else {
#pragma unroll
                for (int q = 0; q < 4; ++q) if (c + q < w) C[(size_t)r * w + c + q] = acc[i][4 * g + q];
            }
        }
    }
}

// Warp-tiled SGEMM in the structure of siboehm's "kernel 10" (float4 loads, transposed A tile, each warp a
// WM x WN sub-tile computed as WMITER x WNITER thread tiles of TM x TN). Needs h % BM == k % BK == w % BN == 0.
template <int BM, int BN, int BK, int WM, int WN, int WNITER, int TM, int TN, int NT>
__global__ void __launch_bounds__(NT) warptile(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int h, int k, int w)
{
    constexpr int WMITER = (WM * WN) / (32 * TM * TN * WNITER);
    constexpr int WSUBM = WM / WMITER, WSUBN = WN / WNITER;
    constexpr int ROW_STRIDE_A = (NT * 4) / BK, ROW_STRIDE_B = NT / (BN / 4);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int warp_col = warp % (BN / WN), warp_row = warp / (BN / WN);
    const int t_col = lane % (WSUBN / TN), t_row = lane / (WSUBN / TN);
    __shared__ __align__(16) float As[BK * BM];
    __shared__ __align__(16) float Bs[BK * BN];
    A += blockIdx.y * BM * k;
    B += blockIdx.x * BN;
    C += (blockIdx.y * BM + warp_row * WM) * w + blockIdx.x * BN + warp_col * WN;
    const int a_row = threadIdx.x / (BK / 4), a_col = threadIdx.x % (BK / 4);
    const int b_row = threadIdx.x / (BN / 4), b_col = threadIdx.x % (BN / 4);
    float acc[WMITER * TM * WNITER * TN] = {0.0f};
    float reg_m[WMITER * TM], reg_n[WNITER * TN];
    for (int k0 = 0; k0 < k; k0 += BK) {
#pragma unroll
        for (int off = 0; off + ROW_STRIDE_A <= BM; off += ROW_STRIDE_A) {
            const float4 t = *reinterpret_cast<const float4*>(&A[(a_row + off) * k + a_col * 4]);
            As[(a_col * 4 + 0) * BM + a_row + off] = t.x;
            As[(a_col * 4 + 1) * BM + a_row + off] = t.y;
            As[(a_col * 4 + 2) * BM + a_row + off] = t.z;
            As[(a_col * 4 + 3) * BM + a_row + off] = t.w;
        }
#pragma unroll
        for (int off = 0; off + ROW_STRIDE_B <= BK; off += ROW_STRIDE_B)
            *reinterpret_cast<float4*>(&Bs[(b_row + off) * BN + b_col * 4]) =
                *reinterpret_cast<const float4*>(&B[(b_row + off) * w + b_col * 4]);
        __syncthreads();
#pragma unroll
        for (int d = 0; d < BK; ++d) {
#pragma unroll
            for (int ws = 0; ws < WMITER; ++ws)
#pragma unroll
                for (int i = 0; i < TM; ++i)
                    reg_m[ws * TM + i] = As[d * BM + warp_row * WM + ws * WSUBM + t_row * TM + i];
#pragma unroll
            for (int ws = 0; ws < WNITER; ++ws)
#pragma unroll
                for (int i = 0; i < TN; ++i)
                    reg_n[ws * TN + i] = Bs[d * BN + warp_col * WN + ws * WSUBN + t_col * TN + i];
#pragma unroll
            for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
                for (int wn = 0; wn < WNITER; ++wn)
#pragma unroll
                    for (int i = 0; i < TM; ++i)
#pragma unroll
                        for (int j = 0; j < TN; ++j)
                            acc[(wm * TM + i) * (WNITER * TN) + wn * TN + j] += reg_m[wm * TM + i] * reg_n[wn * TN + j];
        }
        A += BK;
        B += BK * w;
        __syncthreads();
    }
#pragma unroll
    for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
        for (int wn = 0; wn < WNITER; ++wn) {
            float* c = C + (wm * WSUBM) * w + wn * WSUBN;
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; j += 4) {
                    const int ai = (wm * TM + i) * (WNITER * TN) + wn * TN + j;
                    *reinterpret_cast<float4*>(&c[(t_row * TM + i) * w + t_col * TN + j]) =
                        make_float4(acc[ai], acc[ai + 1], acc[ai + 2], acc[ai + 3]);
                }
        }
}
// A multi-stage cp.async pipeline (S shared-memory stages in flight) on A^T: with A transposed in global memory
// (k x h, a separate transpose kernel), both tiles are k-major rows that 16-byte cp.async copies land directly in
// the layout the 16-byte fragment reads want; no register staging. Needs h % 4 == 0 and w % 4 == 0 (any k).
template <bool CLOBBER>
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem, int src_bytes) {
    unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    if (CLOBBER) asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"(s), "l"(gmem), "r"(src_bytes) : "memory");
    else asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"(s), "l"(gmem), "r"(src_bytes));
}
template <bool CLOBBER> __device__ __forceinline__ void cp_async_commit() {
    if (CLOBBER) asm volatile("cp.async.commit_group;\n" ::: "memory"); else asm volatile("cp.async.commit_group;\n" ::);
}
template <int N, bool CLOBBER> __device__ __forceinline__ void cp_async_wait() {
    if (CLOBBER) asm volatile("cp.async.wait_group %0;\n" :: "n"(N) : "memory"); else asm volatile("cp.async.wait_group %0;\n" :: "n"(N));
}

// CLOBBER: "memory" clobbers on the cp.async asm (as translate's helpers have); ROLLED: the k-steps in a rolled loop
// of pairs, as in the Numba kernel (otherwise fully unrolled); NUMBA_LOOP: the tile loop shaped as in the Numba
// kernel (from t = -1, the copies and the math under `if`s)
template <int BM, int BN, int BK, int TM, int TN, int S, bool CLOBBER = false, bool ROLLED = false,
          bool NUMBA_LOOP = false>
__global__ void __launch_bounds__((BM / TM) * (BN / TN), 2)
sgemm_async(const float* __restrict__ At, const float* __restrict__ B, float* __restrict__ C, int h, int k, int w)
{
    constexpr int NT = (BM / TM) * (BN / TN);
    constexpr int TX = BN / TN;
    constexpr int WX = 8, WY = 4, WARPS_X = TX / WX;
    constexpr int GM = BM / (TM / 4), GN = BN / (TN / 4);
    constexpr int LA = BK * BM / 4 / NT, LB = BK * BN / 4 / NT;
    __shared__ __align__(16) float a_s[S][BK][BM];
    __shared__ __align__(16) float b_s[S][BK][BN];
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
            cp_async16<CLOBBER>(&a_s[st][r][col], ok ? &At[(size_t)(k0 + r) * h + row0 + col] : At, ok ? 16 : 0);
        }
#pragma unroll
        for (int i = 0; i < LB; ++i) {
            int c = tid + i * NT, r = c / (BN / 4), col = (c % (BN / 4)) * 4;
            bool ok = k0 + r < k && col0 + col < w;
            cp_async16<CLOBBER>(&b_s[st][r][col], ok ? &B[(size_t)(k0 + r) * w + col0 + col] : B, ok ? 16 : 0);
        }
    };
    float acc[TM][TN];
    float af[2][TM], bf[2][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
    auto frag = [&](int s, int st, int kk) {
#pragma unroll
        for (int g = 0; g < TM / 4; ++g) {
            float4 v = *reinterpret_cast<const float4*>(&a_s[st][kk][a_base + g * GM]);
            af[s][4 * g] = v.x; af[s][4 * g + 1] = v.y; af[s][4 * g + 2] = v.z; af[s][4 * g + 3] = v.w;
        }
#pragma unroll
        for (int g = 0; g < TN / 4; ++g) {
            float4 v = *reinterpret_cast<const float4*>(&b_s[st][kk][b_base + g * GN]);
            bf[s][4 * g] = v.x; bf[s][4 * g + 1] = v.y; bf[s][4 * g + 2] = v.z; bf[s][4 * g + 3] = v.w;
        }
    };
    auto compute = [&](int st) {
        frag(0, st, 0);
        if constexpr (ROLLED) {
#pragma unroll 1
            for (int kk = 0; kk < BK; kk += 2) {
                frag(1, st, kk + 1);
#pragma unroll
                for (int i = 0; i < TM; ++i)
#pragma unroll
                    for (int j = 0; j < TN; ++j) acc[i][j] += af[0][i] * bf[0][j];
                if (kk + 2 < BK) frag(0, st, kk + 2);
#pragma unroll
                for (int i = 0; i < TM; ++i)
#pragma unroll
                    for (int j = 0; j < TN; ++j) acc[i][j] += af[1][i] * bf[1][j];
            }
        } else {
#pragma unroll
            for (int kk = 0; kk < BK; ++kk) {
                if (kk + 1 < BK) frag((kk + 1) & 1, st, kk + 1);
#pragma unroll
                for (int i = 0; i < TM; ++i)
#pragma unroll
                    for (int j = 0; j < TN; ++j) acc[i][j] += af[kk & 1][i] * bf[kk & 1][j];
            }
        }
    };
    const int ntiles = (k + BK - 1) / BK;
    if constexpr (NUMBA_LOOP) {  // the Numba kernel's shape: iteration -1 only starts tile 0 (2 stages)
        for (int t = -1; t < ntiles; ++t) {
            if (t >= 0) {
                cp_async_wait<0, CLOBBER>();
                __syncthreads();
            }
            if (t + 1 < ntiles) {
                issue(t + 1, (t + 1) & 1);
                cp_async_commit<CLOBBER>();
            }
            if (t >= 0) compute(t & 1);
        }
    } else {
#pragma unroll
        for (int s = 0; s < S - 1; ++s) {
            if (s < ntiles) issue(s, s);
            cp_async_commit<CLOBBER>();
        }
        for (int t = 0; t < ntiles; ++t) {
            cp_async_wait<S - 2, CLOBBER>();
            __syncthreads();
            if (t + S - 1 < ntiles) issue(t + S - 1, (t + S - 1) % S);
            cp_async_commit<CLOBBER>();
            compute(t % S);
        }
    }
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        int r = row0 + a_base + (i / 4) * GM + i % 4;
        if (r >= h) continue;
#pragma unroll
        for (int g = 0; g < TN / 4; ++g) {
            int c = col0 + b_base + g * GN;
            if (c < w) *reinterpret_cast<float4*>(&C[(size_t)r * w + c]) = make_float4(acc[i][4 * g], acc[i][4 * g + 1], acc[i][4 * g + 2], acc[i][4 * g + 3]);
        }
    }
}

// out (w x h) = in (h x w)^T, 32x32 tiles through padded shared memory; launch (32, 8) threads
extern "C" __global__ void transpose32(const float* __restrict__ in, float* __restrict__ out, int h, int w) {
    __shared__ float tile[32][33];
    int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
    for (int j = 0; j < 32; j += 8)
        if (x < w && y + j < h) tile[threadIdx.y + j][threadIdx.x] = in[(size_t)(y + j) * w + x];
    __syncthreads();
    x = blockIdx.y * 32 + threadIdx.x; y = blockIdx.x * 32 + threadIdx.y;
    for (int j = 0; j < 32; j += 8)
        if (x < h && y + j < w) out[(size_t)(y + j) * h + x] = tile[threadIdx.x][threadIdx.y + j];
}
"""

# (name, template args, threads, bm, bn, needs_vec, needs_exact)
C_VARIANTS = [
    ("C sgemm_v 128x128x8/8x8 scalar", "sgemm_v<128,128,8,8,8,false,2,1>", 256, 128, 128, False, False),
    ("C sgemm_v 128x128x8/8x8 vec4", "sgemm_v<128,128,8,8,8,true,2,1>", 256, 128, 128, True, False),
    ("C sgemm_v 128x128x16/8x8 vec4", "sgemm_v<128,128,16,8,8,true,2,1>", 256, 128, 128, True, False),
    ("C sgemm_v 128x128x16/8x8 vec4 swz4", "sgemm_v<128,128,16,8,8,true,2,4>", 256, 128, 128, True, False),
    ("C sgemm_v 128x128x16/8x8 vec4 swz8", "sgemm_v<128,128,16,8,8,true,2,8>", 256, 128, 128, True, False),
    ("C sgemm_v 128x128x16/8x8 vec4 1 block/SM", "sgemm_v<128,128,16,8,8,true,1,1>", 256, 128, 128, True, False),
    ("C sgemm_v 256x128x8/16x8 vec4", "sgemm_v<256,128,8,16,8,true,1,1>", 256, 256, 128, True, False),
    ("C warptile 128x128x16 (k10 params)", "warptile<128,128,16,64,64,4,8,4,128>", 128, 128, 128, True, True),
    ("C warptile 128x128x8 256thr", "warptile<128,128,8,64,32,2,8,4,256>", 256, 128, 128, True, True),
]

#: the cp.async pipeline on A^T: (name, template args, threads, bm, bn)
ASYNC_VARIANTS = [
    ("C sgemm_async 128x128x16/8x8, 3 stages", "sgemm_async<128,128,16,8,8,3>", 256, 128, 128),
    ("C sgemm_async 128x128x16/8x8, 2 stages", "sgemm_async<128,128,16,8,8,2>", 256, 128, 128),
    ("C sgemm_async 128x128x16/8x8, 2 stages, memory clobbers",
     "sgemm_async<128,128,16,8,8,2,true,false>", 256, 128, 128),
    ("C sgemm_async 128x128x16/8x8, 2 stages, rolled k-pairs",
     "sgemm_async<128,128,16,8,8,2,false,true>", 256, 128, 128),
    ("C sgemm_async 128x128x16/8x8, 2 stages, clobbers + rolled",
     "sgemm_async<128,128,16,8,8,2,true,true>", 256, 128, 128),
    ("C sgemm_async 128x128x16/8x8, 2 stages, Numba's loop shape",
     "sgemm_async<128,128,16,8,8,2,false,false,true>", 256, 128, 128),
    ("C sgemm_async 128x128x8/8x8, 3 stages", "sgemm_async<128,128,8,8,8,3>", 256, 128, 128),
]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "vec4_out"))
    ap.add_argument("--budget-s", type=float, default=0.3)
    ap.add_argument("--sizes", default="4096x4096x4096,2048x2048x2048,8192x8192x8192")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    sizes = [tuple(int(x) for x in s.split("x")) for s in args.sizes.split(",")]

    import cupy as cp
    import torch

    import bench_matmul as bm
    from numbakern.kernels import matmul_fast as mf

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    log = bm.log
    log(f"device: {torch.cuda.get_device_name(0)}  date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC}")

    module = cp.RawModule(code=CUDA_C, options=("-std=c++17", "--use_fast_math"),
                          name_expressions=[v[1] for v in C_VARIANTS] + [v[1] for v in ASYNC_VARIANTS])
    from numba import cuda

    def c_variant(fn, threads, tbm, tbn):
        def make(a, b, o, h, k, w):
            grid = ((w + tbn - 1) // tbn, (h + tbm - 1) // tbm, 1)
            argt = (np.uint64(a.data_ptr()), np.uint64(b.data_ptr()), np.uint64(o.data_ptr()),
                    np.int32(h), np.int32(k), np.int32(w))
            return lambda: fn(grid, (threads, 1, 1), argt)
        return make

    def numba_variant(config):
        def make(a, b, o, h, k, w):
            A, B, O = (cuda.as_cuda_array(x) for x in (a, b, o))
            cfg = mf.flagship_launch(config, h, w)
            kern = mf.matmul_flagship(**config)
            return lambda: kern[cfg.grid, cfg.block](A, B, O)
        return make

    v128 = {"bm": 128, "bn": 128, "bk": 16, "tm": 8, "tn": 8, "vec": True}
    numba_configs = [mf.DEFAULT_CONFIG, {**mf.DEFAULT_CONFIG, "vec": True}, v128, {**v128, "group": 4},
                     {**v128, "group": 8}, {**v128, "group": 16}]
    def vec_shapes(h, k, w):  # 16-byte groups along k (A) and w (B, out)
        return k % 4 == 0 and w % 4 == 0

    def any_shape(h, k, w):
        return True

    def exact_tiles(h, k, w):
        return vec_shapes(h, k, w) and h % 128 == 0 and w % 128 == 0 and k % 16 == 0

    def async_shapes(h, k, w):  # 16-byte groups along h (A^T) and w
        return h % 4 == 0 and w % 4 == 0

    def async_variant(fn, threads, tbm, tbn, with_transpose):
        def make(a, b, o, h, k, w):
            at = a.t().contiguous() if not with_transpose else torch.empty(k, h, device="cuda")
            grid = ((w + tbn - 1) // tbn, (h + tbm - 1) // tbm, 1)
            argt = (np.uint64(at.data_ptr()), np.uint64(b.data_ptr()), np.uint64(o.data_ptr()),
                    np.int32(h), np.int32(k), np.int32(w))
            t_grid = ((k + 31) // 32, (h + 31) // 32, 1)
            t_args = (np.uint64(a.data_ptr()), np.uint64(at.data_ptr()), np.int32(h), np.int32(k))

            def run():
                if with_transpose:
                    transpose(t_grid, (32, 8, 1), t_args)
                fn(grid, (threads, 1, 1), argt)
            return run
        return make

    variants = []  # (name, make, accepts(h, k, w))
    for c in numba_configs:
        variants.append((f"numba flagship {bm.config_label(c)}", numba_variant(c),
                         vec_shapes if c.get("vec", False) else any_shape))
    gen_dir = os.path.join(args.out, "translated")
    r = subprocess.run([sys.executable, "-m", "translate.cli", "matmul_flagship_vec", "--const", "group=4,8,16",
                        "--out", gen_dir], capture_output=True, text=True)
    log(r.stdout[-1500:] + r.stderr[-1500:])
    gen_path = os.path.join(gen_dir, "matmul_flagship_vec.cu")
    if os.path.exists(gen_path):
        for sym, config, make in bm.generated_launchers(gen_path, "matmul_flagship_vec"):
            variants.append((f"translated C {bm.config_label(config)}", make, vec_shapes))
    for name, expr, threads, tbm, tbn, needs_vec, exact in C_VARIANTS:
        accepts = exact_tiles if exact else vec_shapes if needs_vec else any_shape
        variants.append((name, c_variant(module.get_function(expr), threads, tbm, tbn), accepts))
    from numbakern.kernels import matmul_async as ma

    def numba_async_variant(config, with_transpose):
        def make(a, b, o, h, k, w):
            if with_transpose:  # what matmul_fast runs: numbakern's transpose kernel, then the product
                A, B, O = (cuda.as_cuda_array(x) for x in (a, b, o))
                return lambda: ma.matmul_via_async(A, B, O, config)
            at = a.t().contiguous()
            At, B, O = (cuda.as_cuda_array(x) for x in (at, b, o))
            cfg = mf.flagship_launch(config, h, w)
            kern = ma.matmul_flagship_async(**config)
            return lambda: kern[cfg.grid, cfg.block](At, B, O)
        return make

    for with_t in (True, False):
        tag = " + A transpose" if with_t else ", A^T given"
        variants.append((f"numba flagship_async {bm.config_label(ma.ASYNC_CONFIG)}{tag}",
                         numba_async_variant(ma.ASYNC_CONFIG, with_t), async_shapes))
    gen_async = os.path.join(args.out, "translated_async")
    r = subprocess.run([sys.executable, "-m", "translate.cli", "matmul_flagship_async", "--out", gen_async],
                       capture_output=True, text=True)
    log(r.stdout[-800:] + r.stderr[-1500:])
    gen_file = os.path.join(gen_async, "matmul_flagship_async.cu")
    if os.path.exists(gen_file):
        # the same file with the helpers' "memory" clobbers taken out: do they cost the translated C its speed?
        unclobbered = os.path.join(gen_async, "unclobbered", "matmul_flagship_async.cu")
        os.makedirs(os.path.dirname(unclobbered), exist_ok=True)
        with open(gen_file) as f, open(unclobbered, "w") as g:
            g.write(f.read().replace('\n                 : "memory");', ');').replace('::: "memory"', '::'))
        restricted = os.path.join(gen_async, "restrict", "matmul_flagship_async.cu")  # __restrict__ pointers
        os.makedirs(os.path.dirname(restricted), exist_ok=True)
        with open(gen_file) as f, open(restricted, "w") as g:
            g.write(f.read().replace("const float* mt,", "const float* __restrict__ mt,")
                    .replace("const float* n,", "const float* __restrict__ n,").replace("float* out,", "float* __restrict__ out,"))
        int_stage = os.path.join(gen_async, "int_stage", "matmul_flagship_async.cu")  # a 32-bit stage index
        os.makedirs(os.path.dirname(int_stage), exist_ok=True)
        with open(gen_file) as f, open(int_stage, "w") as g:
            g.write(f.read().replace("int64_t cur = t & 1;", "int cur = (int)(t & 1);"))
        for path, tag in ((gen_file, ""), (unclobbered, ", no memory clobbers"), (restricted, ", __restrict__"),
                          (int_stage, ", int stage index")):
            for sym, config, make_c in bm.generated_launchers(path, "matmul_flagship_async"):
                def make(a, b, o, h, k, w, make_c=make_c):
                    at = a.t().contiguous()
                    return make_c(at, b, o, h, k, w)
                variants.append((f"translated C flagship_async {bm.config_label(config)}, A^T given{tag}", make,
                                 async_shapes))
    transpose = module.get_function("transpose32")
    for name, expr, threads, tbm, tbn in ASYNC_VARIANTS:
        fn = module.get_function(expr)
        variants.append((name + " + A transpose", async_variant(fn, threads, tbm, tbn, True), async_shapes))
        variants.append((name + ", A^T given", async_variant(fn, threads, tbm, tbn, False), async_shapes))

    # correctness first
    check_shapes = [(1, 1, 1), (33, 70, 45), (129, 9, 131), (509, 263, 383), (1028, 516, 1020), (4, 4, 4),
                    (7, 1020, 4), (256, 256, 256), (1024, 1024, 1024), (1028, 517, 1020), (36, 5, 132)]
    bad = set()
    g = torch.Generator(device="cuda").manual_seed(7)
    for name, make, accepts in variants:
        for h, k, w in check_shapes:
            if not accepts(h, k, w):
                continue
            a = torch.randn(h, k, device="cuda", generator=g)
            b = torch.randn(k, w, device="cuda", generator=g)
            o = torch.full((h, w), float("nan"), device="cuda")
            make(a, b, o, h, k, w)()
            torch.cuda.synchronize()
            ref = a.double() @ b.double()
            err = float((o.double() - ref).norm() / ref.norm())
            if not err < 1e-5:
                bad.add(name)
                log(f"FAIL {name} {h}x{k}x{w}: rel err {err:.3g}")
    log(f"correctness: {len(variants) - len(bad)}/{len(variants)} variants pass every checked shape")

    rows = []
    for h, k, w in sizes:
        a = torch.randn(h, k, device="cuda")
        b = torch.randn(k, w, device="cuda")
        o = torch.empty(h, w, device="cuda")
        t_cublas = bm.time_it(lambda: torch.matmul(a, b, out=o), args.budget_s)
        rows.append(("cuBLAS (torch.matmul)", h, k, w, t_cublas, 100.0))
        log(f"{h}x{k}x{w} cuBLAS {t_cublas:.3f} ms")
        for name, make, accepts in variants:
            if name in bad:
                continue
            t = bm.time_it(make(a, b, o, h, k, w), args.budget_s)
            rows.append((name, h, k, w, t, 100.0 * t_cublas / t))
            log(f"{h}x{k}x{w} {name} {t:.3f} ms ({100.0 * t_cublas / t:.0f}% of cuBLAS)")
        t_cublas2 = bm.time_it(lambda: torch.matmul(a, b, out=o), args.budget_s)
        log(f"{h}x{k}x{w} cuBLAS again {t_cublas2:.3f} ms")

    with open(os.path.join(args.out, "vec4.json"), "w") as f:
        json.dump([dict(zip(("variant", "h", "k", "w", "ms", "pct_cublas"), r)) for r in rows], f, indent=1)
    names = list(dict.fromkeys(r[0] for r in rows))
    log("\n| variant | " + " | ".join(f"{h}x{k}x{w}" for h, k, w in sizes) + " |")
    log("|---|" + "---|" * len(sizes))
    for nm in names:
        cells = []
        for h, k, w in sizes:
            r = next((r for r in rows if r[0] == nm and r[1:4] == (h, k, w)), None)
            cells.append("—" if r is None else f"{r[4]:.3f} ms ({r[5]:.0f}%)")
        log(f"| {nm} | " + " | ".join(cells) + " |")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
