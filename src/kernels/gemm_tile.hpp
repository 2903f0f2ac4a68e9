// GEMM's register tile, the MR × NR block of C its micro-kernel keeps in
// registers, chosen for the CPU the build targets; and the ways a
// micro-kernel reads A. Private to gemm.cpp and gemm_edges.cpp.
//
// For each k the micro-kernel loads NR/W batches of B's row, broadcasts MR
// values of A, and does MR·NR/W fused multiply-adds (FMAs) into MR·NR/W
// accumulators. The tile must fit the register file (the accumulators, the
// B batches and the broadcast), and its accumulators must outnumber the FMAs
// in flight (latency × FMA units), or each FMA waits for the last one into
// the same accumulator. Within that, the larger the tile, the fewer loads
// per FMA:
//
//   AVX2 (and SSE): 16 registers, 4 × 2 = 8 FMAs in flight: 6 × 2W, 12 accumulators
//   AVX-512, Intel: 32 registers, two 512-bit FMA units, 8 in flight: 8 × 2W, 16 accumulators
//   AVX-512, AMD Zen 4: one 512-bit FMA a cycle, 4 in flight: 4 × 4W, 16 accumulators,
//     8 loads per 16 FMAs rather than 10 (GCC 12's -march=native calls Zen 4 znver3)
//
// docs/gemm.md has the tiles measured against these.
#pragma once
#include <cstdint>

#include "kernels/simd.hpp"

namespace qkv::kernels::gemm_detail {

#if defined(__znver3__) || defined(__znver4__) || defined(__znver5__)
constexpr int64_t MR = W >= 16 ? 4 : 6, NR = (W >= 16 ? 4 : 2) * W;
#else
constexpr int64_t MR = W >= 16 ? 8 : 6, NR = 2 * W;
#endif
constexpr int64_t NB = NR / W;  // SIMD batches in a row of the tile

// Where the micro-kernel finds A(r, k), the element of its A panel in row r
// (of C's block) and at depth k:
//   packed:  a packed panel, a[k·MR + r]: the MR values of one k side by side
//   rows:    A as stored, read in place, a[r·lda + k]: one row of A per row of C
//   columns: Aᵀ as stored, read in place, a[r + k·lda]: one row of Aᵀ per k
// Each layout gets a micro-kernel of its own, so that the unit stride (and
// MR) are constants in the k loop: one loop serving all three would keep
// both strides and their multiples in general registers, more than there
// are to spare beside 8 rows.
enum class ALayout { packed, rows, columns };

}  // namespace qkv::kernels::gemm_detail
