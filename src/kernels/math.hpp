// qkv's exp, log, tanh and sigmoid of a float: one polynomial each, written
// once as a template over V, a float or a batch of floats (simd.hpp), so
// that a SIMD kernel and its scalar twin compute the same float in every
// lane. The C library's expf and xsimd's exp are other polynomials (another
// on each system); the kernels call these alone. Private to src/kernels/.
//
// Each function uses only what IEEE 754 rounds the same everywhere: +, −, ×,
// correctly rounded division, madd (fused exactly where the build fuses,
// simd.hpp), comparisons, integer operations on a float's bits, and on
// AVX-512 scaleB (x·2ⁿ rounded once, vscalefps: times_two_to below). The
// polynomials are Cephes' (S. Moshier), the ones xsimd and many SIMD
// libraries adapt; tests/kernels/test_same_numbers.cpp measures their error
// against the double-precision C library: at most 2 ulp for exp and log, 3
// for tanh.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

#include "kernels/simd.hpp"

namespace qkv::kernels::math {

// ---- the few operations the functions need, for a float and for a batch -------------
//
// NOTE: the functions call each other qualified (math::exp): unqualified, a
// call with a batch would find xsimd's exp by argument-dependent lookup,
// and prefer it.

inline float select(bool c, float a, float b) { return c ? a : b; }
inline bool is_nan(float x) { return std::isnan(x); }
// NOTE: __builtin_bit_cast, std::bit_cast's own builtin: emscripten 3.1.6's
// C++ library (the web build's) has no std::bit_cast.
inline int32_t bits(float x) { return __builtin_bit_cast(int32_t, x); }
inline float from_bits(int32_t i) { return __builtin_bit_cast(float, i); }
inline float quotient(float a, float b) { return a / b; }
inline float fused(float a, float b, float c) { return madd(a, b, c); }

#if QKV_SIMD
using int_batch = xsimd::batch<int32_t>;
inline batch select(const xsimd::batch_bool<float>& c, const batch& a, const batch& b) {
  return xsimd::select(c, a, b);
}
// A batch's bits as integers and back (xsimd changed bitwise_cast's template argument in 10).
inline int_batch bits(const batch& x) {
#if XSIMD_VERSION_MAJOR >= 10
  return xsimd::bitwise_cast<int32_t>(x);
#else
  return xsimd::bitwise_cast<int_batch>(x);
#endif
}
inline batch from_bits(const int_batch& i) {
#if XSIMD_VERSION_MAJOR >= 10
  return xsimd::bitwise_cast<float>(i);
#else
  return xsimd::bitwise_cast<batch>(i);
#endif
}
// NOTE: not x != x, which xsimd 8.1 compares ordered on AVX-512 (false for a NaN).
inline xsimd::batch_bool<float> is_nan(const batch& x) { return xsimd::isnan(x); }
inline batch quotient(const batch& a, const batch& b) { return divide(a, b); }
inline batch fused(const batch& a, const batch& b, const batch& c) { return fmadd(a, b, c); }
#endif

// 1.5·2²³: adding it to a float of magnitude below 2²² rounds that float to
// an integer n, and leaves n in the low bits (the float's bits are those of
// 1.5·2²³ plus n). Subtracting it again gives n as a float, exactly.
constexpr float kRound = 12582912.0f;
constexpr int32_t kRoundBits = 0x4B400000;

// 2ᵏ from k as an integer, for -126 ≤ k ≤ 127: the exponent field alone.
template <class I>
auto two_to(const I& k) {
  return from_bits((k + 127) << 23);
}

// e · 2ⁿ for e in [½, 2) and n an integer in -150 … 128 (t = 1.5·2²³ + n,
// whose low bits hold n), rounded once: to a subnormal, or to ∞, where the
// exact product is one. 2ⁿ is applied as 2^⌊n/2⌋ · 2^(n−⌊n/2⌋), two factors
// that are normal floats, so the first product is exact and the second
// rounds. AVX-512 does it in one instruction, vscalefps (IEEE 754's scaleB:
// e · 2ⁿ rounded once), and so gives the same float.
template <class V>
[[gnu::always_inline]] inline V times_two_to(const V& e, [[maybe_unused]] const V& n, const V& t) {
#if defined(__AVX512F__)
  if constexpr (!std::is_same_v<V, float>) {
    if constexpr (V::size == 16) return _mm512_scalef_ps(e, n);
  }
#endif
  const auto k = bits(t) - kRoundBits;  // n as an integer
  const auto k1 = k >> 1;
  return e * two_to(k1) * two_to(k - k1);
}

// ---- exp ------------------------------------------------------------------------------
//
// eˣ = 2ⁿ · eʳ with n = round(x / ln 2) and r = x − n·ln 2 in [−ln2/2, ln2/2]:
// n·ln 2 is subtracted in two parts (Cody and Waite), the first with few
// enough bits that n·C1 and x − n·C1 are exact; eʳ is 1 + r + r²·P(r), P of
// degree 5, and 2ⁿ is applied by times_two_to. Below −104 eˣ rounds to 0:
// such a lane computes e⁰ instead and gives 0 at the end, since a product
// that underflows costs an x86 core a microcode assist of about a hundred
// cycles, and attention's masked keys (−∞, or d2l's −10⁶) are all such
// lanes. A NaN passes through every step.
//
// exp_below_overflow is eˣ for x ≤ 88.8 (n ≤ 128); exp holds a larger x to
// 88.8 first (above 88.72 eˣ rounds to +∞, and so does e^88.8), and is
// otherwise the same float. A softmax's x − max(x) is at most 0, so it may
// skip that step (a compare and a select a register).
template <class V>
[[gnu::always_inline]] inline V exp_below_overflow(V x) {
  const auto zero = x < V(-104.0f);
  x = select(zero, V(0.0f), x);
  const V t = x * V(1.44269504088896341f) + V(kRound);  // 1.5·2²³ + round(x / ln 2)
  const V n = t - V(kRound);
  V r = x - n * V(0.693359375f);   // C1 = 355/512
  r = r - n * V(-2.12194440e-4f);  // C2 = ln 2 − C1
  V p(1.9875691500e-4f);
  p = fused(p, r, V(1.3981999507e-3f));
  p = fused(p, r, V(8.3334519073e-3f));
  p = fused(p, r, V(4.1665795894e-2f));
  p = fused(p, r, V(1.6666665459e-1f));
  p = fused(p, r, V(5.0000001201e-1f));
  const V e_r = fused(p, r * r, r) + V(1.0f);
  return select(zero, V(0.0f), times_two_to(e_r, n, t));
}

template <class V>
[[gnu::always_inline]] inline V exp(V x) {
  const V hi(88.8f);
  return math::exp_below_overflow(select(x > hi, hi, x));
}

// ---- log ------------------------------------------------------------------------------
//
// x = m · 2ᵉ with m in [√½, √2), read from the float's bits; ln x = e·ln 2 +
// ln m, with ln(1 + z) = z − z²/2 + z³·P(z) for z = m − 1, P of degree 8,
// and e·ln 2 added in two parts as in exp. A subnormal x is first scaled by
// 2²³. ln 0 = −∞, ln +∞ = +∞, and a negative x or a NaN gives NaN.
template <class V>
V log(V x) {
  const V tiny(1.17549435e-38f);  // the smallest normal float
  const auto subnormal = x < tiny;
  const V scaled = select(subnormal, x * V(8388608.0f), x);  // ·2²³
  const auto b = bits(scaled);
  // m in [½, 1) from the mantissa; e + 1 the exponent, less 23 if scaled
  V m = from_bits((b & 0x007FFFFF) | 0x3F000000);
  const auto e_int = ((b >> 23) & 0xFF) - 126;
  V e = from_bits(e_int + kRoundBits) - V(kRound);  // as a float, exactly
  e = select(subnormal, e - V(23.0f), e);
  const auto low = m < V(0.707106781186547524f);
  e = select(low, e - V(1.0f), e);
  const V z = select(low, m + m, m) - V(1.0f);
  const V z2 = z * z;
  V p(7.0376836292e-2f);
  p = fused(p, z, V(-1.1514610310e-1f));
  p = fused(p, z, V(1.1676998740e-1f));
  p = fused(p, z, V(-1.2420140846e-1f));
  p = fused(p, z, V(1.4249322787e-1f));
  p = fused(p, z, V(-1.6668057665e-1f));
  p = fused(p, z, V(2.0000714765e-1f));
  p = fused(p, z, V(-2.4999993993e-1f));
  p = fused(p, z, V(3.3333331174e-1f));
  V y = p * z * z2;
  y = fused(e, V(-2.12194440e-4f), y);
  y = fused(z2, V(-0.5f), y);
  V result = fused(e, V(0.693359375f), z + y);
  const V inf(std::numeric_limits<float>::infinity()), nan(std::numeric_limits<float>::quiet_NaN());
  result = select(x == inf, inf, result);
  result = select(x == V(0.0f), -inf, result);
  result = select(x < V(0.0f), nan, result);
  return select(is_nan(x), nan, result);
}

// ---- tanh -----------------------------------------------------------------------------
//
// For |x| < 0.625, tanh x = x + x³·P(x²), P of degree 4; above, from exp:
// tanh |x| = 1 − 2 / (e^(2|x|) + 1), with the sign of x (1 once e^(2|x|)
// is +∞). A NaN passes through.
template <class V>
V tanh(V x) {
  const V a = from_bits(bits(x) & 0x7FFFFFFF);  // |x|
  const V z = x * x;
  V p(-5.70498872745e-3f);
  p = fused(p, z, V(2.06390887954e-2f));
  p = fused(p, z, V(-5.37397155531e-2f));
  p = fused(p, z, V(1.33314422036e-1f));
  p = fused(p, z, V(-3.33332819422e-1f));
  const V small = fused(p * z, x, x);
  const V large = V(1.0f) - quotient(V(2.0f), math::exp(a + a) + V(1.0f));
  return select(a < V(0.625f), small, select(x < V(0.0f), -large, large));
}

// σ(x) = 1 / (1 + e⁻ˣ)
template <class V>
V sigmoid(V x) {
  return quotient(V(1.0f), V(1.0f) + math::exp(-x));
}

}  // namespace qkv::kernels::math
