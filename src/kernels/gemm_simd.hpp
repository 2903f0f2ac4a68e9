// The SIMD operations GEMM needs that xsimd 8.1 does not have: every raw
// intrinsic of the GEMM is in one of these helpers, a branch for each
// instruction set and a portable one. Private to gemm.cpp and gemm_edges.cpp.
//
//   half_batch, low_half     half a register, for the last few columns of C
//   load_first, store_first  the first n floats of a register (masked loads and stores)
//   sums_of                  W horizontal sums at once
#pragma once
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "kernels/simd.hpp"

namespace qkv::kernels::gemm_detail {

// Half a register of floats: 8 with AVX-512, 4 with AVX2. An SSE build (4
// floats) has none; half_batch is then a whole batch, which nothing uses.
constexpr bool HAS_HALF_BATCH = W >= 8;
using half_batch = std::conditional_t<HAS_HALF_BATCH, xsimd::make_sized_batch_t<float, W / 2>, batch>;

// The low half of a batch: the same register, read narrower (no
// instruction). xsimd 8.1 cannot split a batch. (A template, so that the
// branch for the other register width is not compiled.)
template <class V = batch>
half_batch low_half(V x) {
#if defined(__AVX512F__)
  if constexpr (V::size == 16) return half_batch(_mm512_castps512_ps256(x));
#endif
#if defined(__AVX__)
  if constexpr (V::size == 8) return half_batch(_mm256_castps256_ps128(x));
#endif
  return half_batch(x.get(0));  // not reached: a build without half batches runs no kernel that asks
}

// The first n < V::size floats at p, and zeros in the lanes after them,
// reading nothing past p[n - 1] (the end of a row may be the end of its
// memory). xsimd 8.1 has no masked load. AVX-512 and AVX2 load under a mask
// of the first n lanes; other builds copy the n floats into a zeroed buffer.
template <class V = batch>
V load_first(const float* p, int64_t n) {
#if defined(__AVX512F__)
  if constexpr (V::size == 16) return _mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << n) - 1), p);
#endif
#if defined(__AVX512VL__)
  if constexpr (V::size == 8) return _mm256_maskz_loadu_ps(static_cast<__mmask8>((1u << n) - 1), p);
#elif defined(__AVX2__)
  if constexpr (V::size == 8) {
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_maskload_ps(p, _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), lane));
  }
#endif
  alignas(64) float lanes[V::size] = {};
  std::copy(p, p + n, lanes);
  return V::load_aligned(lanes);
}

// p[0:n] = the first n < V::size lanes of v, writing nothing past p[n - 1].
// xsimd 8.1 has no masked store. AVX-512 stores under a mask of the first
// n lanes; other builds go through a buffer.
template <class V>
void store_first(float* p, V v, int64_t n) {
#if defined(__AVX512F__)
  if constexpr (V::size == 16) return _mm512_mask_storeu_ps(p, static_cast<__mmask16>((1u << n) - 1), v);
#endif
#if defined(__AVX512VL__)
  if constexpr (V::size == 8) return _mm256_mask_storeu_ps(p, static_cast<__mmask8>((1u << n) - 1), v);
#endif
  alignas(64) float lanes[V::size];
  v.store_aligned(lanes);
  std::copy(lanes, lanes + n, p);
}

// Lane i of the result = the sum of v[i]'s lanes, for i < W: a tree of
// adds that folds every register in half, and pairs the halves, until one
// lane is left of each. xsimd::haddp does this, but for AVX-512 xsimd 8.1's
// returns the sums out of order (lanes 4-7 and 8-11 swapped), so AVX-512
// has its own tree here.
[[gnu::always_inline]] inline batch sums_of(const batch* v) {
#if defined(__AVX512F__)
  if constexpr (W == 16) {
    // t[i] = [v[i] folded to 8 lanes, v[i + 4] folded], t[i + 4] the same of v[i + 8] and v[i + 12]
    __m512 t[8], u[4];
    for (int i = 0; i < 4; ++i) {
      for (int h = 0; h < 2; ++h) {
        const __m512 x = v[i + 8 * h], y = v[i + 4 + 8 * h];
        t[i + 4 * h] = _mm512_add_ps(_mm512_shuffle_f32x4(x, y, _MM_SHUFFLE(1, 0, 1, 0)),
                                     _mm512_shuffle_f32x4(x, y, _MM_SHUFFLE(3, 2, 3, 2)));
      }
    }
    // u[i] = [v[i], v[i + 4], v[i + 8], v[i + 12]], each folded to 4 lanes
    for (int i = 0; i < 4; ++i)
      u[i] = _mm512_add_ps(_mm512_shuffle_f32x4(t[i], t[i + 4], _MM_SHUFFLE(2, 0, 2, 0)),
                           _mm512_shuffle_f32x4(t[i], t[i + 4], _MM_SHUFFLE(3, 1, 3, 1)));
    // In each 4 lanes, pairs of u folded twice: lane 4b + i is all of v[4b + i]
    const __m512d p01 = _mm512_castps_pd(_mm512_add_ps(_mm512_unpacklo_ps(u[0], u[1]), _mm512_unpackhi_ps(u[0], u[1])));
    const __m512d p23 = _mm512_castps_pd(_mm512_add_ps(_mm512_unpacklo_ps(u[2], u[3]), _mm512_unpackhi_ps(u[2], u[3])));
    return _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(p01, p23)),
                         _mm512_castpd_ps(_mm512_unpackhi_pd(p01, p23)));
  }
#endif
  return xsimd::haddp(v);
}

}  // namespace qkv::kernels::gemm_detail
