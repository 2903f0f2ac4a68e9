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
// Large products run on the kernels' threads (kernels/parallel.hpp), with
// the same result whatever their number.
//
// This layer knows nothing of Tensor: raw pointers, sizes and strides only.
#pragma once
#include <cstdint>

namespace qkv::kernels {

// The order of every C[i, j]'s sum, in gemm and its references alike: K in
// slices of GEMM_KC, each summed from 0 with k in order (a multiply-add per
// k, madd in simd.hpp), and the slices' sums added into C one after the other
// (the first written, unless accumulating). A size fixed here, not by the
// register width or the thread count. (The default native build adds C's
// last 1 or 2 columns as dot products along k, whose order does follow the
// width: gemm_edges.hpp's DOT_COLS; not in a QKV_SAME_NUMBERS build.)
constexpr int64_t GEMM_KC = 256;

// Packed, register-blocked, SIMD GEMM (gemm.cpp); in the scalar build, gemm_rows.
void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
          int64_t ldb, float* C, int64_t ldc, bool accumulate);

// C[i] (+)= op(A[i]) · op(B[i]) for i < batch: matrix i of A starts at
// A + a_offsets[i], of B at B + b_offsets[i] (offsets may repeat: a broadcast
// operand), of C at C + i·c_stride. All matrices share M, N, K, the
// transposes and the row strides. The same as one gemm call per matrix, bit
// for bit, but a batch of small products is spread over the threads a run of
// whole matrices at a time, and pays no per-matrix set-up beyond a call.
void gemm_batched(bool trans_a, bool trans_b, int64_t batch, int64_t M, int64_t N, int64_t K, const float* A,
                  const int64_t* a_offsets, int64_t lda, const float* B, const int64_t* b_offsets, int64_t ldb,
                  float* C, int64_t c_stride, int64_t ldc, bool accumulate);

// The plain loops that define what gemm computes (GEMM_KC above); tests hold
// the two equal.
void gemm_reference(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda,
                    const float* B, int64_t ldb, float* C, int64_t ldc, bool accumulate);

// gemm_reference's floats, bit for bit, with the loops turned so that memory
// is read along rows, in tiles of C: the scalar build's gemm, many times
// faster than the triple loop, whose inner loop strides down B. Both are in
// gemm_reference.cpp.
void gemm_rows(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
               int64_t ldb, float* C, int64_t ldc, bool accumulate);

}  // namespace qkv::kernels
