// Dropout's mask and output (see dropout.hpp).
//
// Why a kernel: the op drew one number at a time through Generator::uniform(),
// a call into another file per element, then multiplied by the mask in a
// second op. Here splitmix64's mix is inlined into one loop that writes the
// mask and y together.
//
// SIMD on AVX-512 (DQ): draw i mixes state + (i + 1)·γ alone, so sixteen
// draws run side by side in two registers of eight 64-bit lanes; DQ's
// 64-bit multiply (vpmullq) makes the mix 2 multiplies per eight draws.
// The 24-bit k = z >> 40 of the sixteen draws is narrowed into one register
// of 32-bit lanes and compared there: taking the lanes apart to compare them
// one by one costs more than the plain loop saves. Elsewhere (AVX2 has no
// 64-bit multiply), and for the last n mod 16 elements, the plain loop,
// which is also the reference the tests hold the SIMD one to.
// So, unlike the other kernel files (simd.hpp), the public kernel is one
// function for every build, below the two sections: each piece starts with
// the SIMD draws, of which a build without AVX-512 DQ makes none.
// Measurements, and what was tried: docs/kernel_notes.md.
//
// Threads: draw i depends on state and i alone, so a long array is cut into
// pieces, each starting its state at state + begin·γ: every piece draws
// exactly the numbers the one loop would, on any number of threads.
#include "kernels/dropout.hpp"

#include <cmath>

#include "kernels/parallel.hpp"
#include "kernels/simd.hpp"

namespace qkv::kernels {

// ==== reference: one draw at a time ==================================================

namespace {

constexpr uint64_t kGamma = 0x9e3779b97f4a7c15ULL;  // as Generator::kGamma

// splitmix64's output function (Steele, Lea, Flood 2014), as Generator::next_u64.
uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Draws begin … end - 1 one at a time; s is the state after draw begin.
void dropout_scalar(int64_t begin, int64_t end, uint64_t s, float p, float scale, const float* x, float* y,
                    float* mask) {
  for (int64_t i = begin; i < end; ++i) {
    s += kGamma;                                                    // Generator::next_u64,
    const float u = static_cast<float>(mix(s) >> 40) * 0x1.0p-24f;  // then uniform()
    mask[i] = u >= p ? scale : 0.0f;
    y[i] = x[i] * mask[i];
  }
}

}  // namespace

// ==== SIMD: sixteen draws at a time, on AVX-512 DQ ===================================
#if QKV_SIMD && defined(__AVX512F__) && defined(__AVX512DQ__)

namespace {

using u64s = xsimd::batch<uint64_t, xsimd::avx512bw>;  // eight 64-bit lanes

u64s mix(u64s z) {  // mix() above, lane by lane
  z = (z ^ (z >> 30)) * u64s(0xbf58476d1ce4e5b9ULL);
  z = (z ^ (z >> 27)) * u64s(0x94d049bb133111ebULL);
  return z ^ (z >> 31);
}

// Sixteen draws at a time from i = begin; returns where it stopped (a
// multiple of 16 past begin). u ≥ p is tested on the integers: u = k·2⁻²⁴
// exactly, with k = z >> 40 < 2²⁴, so u ≥ p ⇔ k ≥ ⌈p·2²⁴⌉ (p·2²⁴ is exact
// in float: a power-of-two scaling).
int64_t dropout_simd(int64_t begin, int64_t end, uint64_t s, float p, float scale, const float* x, float* y,
                     float* mask) {
  const int keep_from = static_cast<int>(std::ceil(p * 0x1.0p24f));  // p ∈ [0, 1]: at most 2²⁴
  // Lane j of `lo` holds the state of draw j + 1 (j = 0 … 7), of `hi` draw j + 9.
  const uint64_t draw[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  u64s lo = u64s(s) + u64s(kGamma) * u64s::load_unaligned(draw);
  u64s hi = lo + u64s(8 * kGamma);
  const u64s step(16 * kGamma);
  const __m512 scales = _mm512_set1_ps(scale);
  const __m512i threshold = _mm512_set1_epi32(keep_from);
  int64_t i = begin;
  for (; i + 16 <= end; i += 16) {
    // k of the sixteen draws, narrowed to 32-bit lanes in order (vpmovqd).
    const __m256i k_lo = _mm512_cvtepi64_epi32(mix(lo) >> 40), k_hi = _mm512_cvtepi64_epi32(mix(hi) >> 40);
    const __m512i k = _mm512_inserti64x4(_mm512_castsi256_si512(k_lo), k_hi, 1);
    const __mmask16 keep = _mm512_cmpge_epi32_mask(k, threshold);
    const __m512 m = _mm512_maskz_mov_ps(keep, scales);
    _mm512_storeu_ps(mask + i, m);
    _mm512_storeu_ps(y + i, _mm512_mul_ps(_mm512_loadu_ps(x + i), m));
    lo += step;
    hi += step;
  }
  return i;
}

}  // namespace

#else  // no 64-bit lane multiply (AVX2, SSE, NEON) or no SIMD: every draw is the reference's

namespace {

int64_t dropout_simd(int64_t begin, int64_t, uint64_t, float, float, const float*, float*, float*) { return begin; }

}  // namespace

#endif

// ==== the kernel: the SIMD draws from each piece's start, then the reference's =======

namespace {
constexpr int64_t GRAIN = 1 << 15;  // elements a task should take, at least
}  // namespace

void dropout(int64_t n, uint64_t state, float p, float scale, const float* x, float* y, float* mask) {
  parallel_ranges(n, GRAIN, 16, [&](int64_t begin, int64_t end) {
    const uint64_t s = state + static_cast<uint64_t>(begin) * kGamma;  // the state after draw begin (wrapping, as ever)
    const int64_t i = dropout_simd(begin, end, s, p, scale, x, y, mask);
    dropout_scalar(i, end, s + static_cast<uint64_t>(i - begin) * kGamma, p, scale, x, y, mask);
  });
}

}  // namespace qkv::kernels
