// GEMM: the one kernel every matmul, bmm and Linear runs on.
//
//   C[M, N] = op(A)[M, K] · op(B)[K, N]        (or C += … when accumulate)
//
// All matrices are row-major float arrays. op(X) is X, or Xᵀ when trans_x is
// set: with trans_a, A is stored as (K, M) with row stride lda. Transposed
// operands cost nothing extra here because the kernel packs its operands into
// panels anyway; that is how matmul's backward (dA = dC·Bᵀ, dB = Aᵀ·dC) avoids
// materialising a transpose.
//
// This layer knows nothing of Tensor: raw pointers, sizes and strides only.
#pragma once
#include <cstdint>

namespace qkv::kernels {

// Packed, register-blocked, SIMD GEMM (xsimd).
void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
          int64_t ldb, float* C, int64_t ldc, bool accumulate);

// The plain triple loop that defines what gemm computes; tests hold the two equal.
void gemm_reference(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda,
                    const float* B, int64_t ldb, float* C, int64_t ldc, bool accumulate);

}  // namespace qkv::kernels
