// Generator: splitmix64 bits, uniform floats, Box–Muller normals.
//
// splitmix64 (Steele, Lea, Flood 2014) is one 64-bit state advanced by a
// constant and mixed: tiny, fast, and the same sequence on every machine.
// The advance is an atomic fetch_add, so threads may share a generator
// (generator.hpp).
#include <qkv/core/error.hpp>
#include <qkv/core/generator.hpp>

#include <cmath>
#include <numbers>

namespace qkv {

uint64_t Generator::next_u64() {
  uint64_t z = take(1) + kGamma;  // the state after this draw's advance
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// The top 24 bits fill a float's mantissa exactly: k / 2²⁴ for k < 2²⁴, so
// the result is never 1.
float Generator::uniform() { return static_cast<float>(next_u64() >> 40) * 0x1.0p-24f; }

// PyTorch's uniform_(from, to) refuses from > to and a range wider than the
// largest float; here NaN and infinite bounds too, which would fill a tensor
// with NaN or inf without a word.
float Generator::uniform(float low, float high) {
  if (!(std::isfinite(low) && std::isfinite(high) && low <= high && std::isfinite(high - low)))
    fail(
        "Generator::uniform: the range [low, high) must have finite low ≤ high and a finite width, got low {} and "
        "high {}",
        low, high);
  const float x = low + (high - low) * uniform();
  // NOTE: the sum can round up onto high itself (U[1, 2): 1 + (1 - 2⁻²⁴)
  // is halfway between 2 - 2⁻²³ and 2, and rounds to 2); the largest float
  // below high keeps the interval half-open, as the header promises.
  if (x < high) return x;
  return low < high ? std::nextafter(high, low) : low;
}

// Box–Muller: for u1, u2 ~ U(0, 1], sqrt(-2 ln u1)·cos(2π u2) ~ N(0, 1).
// Computed in double so the numbers do not depend on float rounding of libm.
float Generator::normal(float mean, float std) {
  // PyTorch: "normal expects std >= 0.0"; NaN and infinite arguments would
  // give NaN or inf draws without a word.
  if (!(std::isfinite(mean) && std::isfinite(std) && std >= 0))
    fail("Generator::normal: needs a finite mean and a finite std ≥ 0, got mean {} and std {}", mean, std);
  double u1 = (static_cast<double>(next_u64() >> 11) + 1.0) * 0x1.0p-53;  // (0, 1]
  double u2 = static_cast<double>(next_u64() >> 11) * 0x1.0p-53;          // [0, 1)
  double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  return mean + std * static_cast<float>(z);
}

int64_t Generator::randint(int64_t low, int64_t high) {
  if (high <= low) fail("randint: empty range [{}, {})", low, high);
  // high - low and low + r in unsigned arithmetic: high - low can exceed
  // INT64_MAX (randint(INT64_MIN, INT64_MAX)), where the signed difference is
  // undefined; modulo 2⁶⁴ both are exact, and the sum lands in [low, high).
  // NOTE: the modulo bias is at most (high - low) / 2⁶⁴: invisible at any size we use.
  const uint64_t span = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
  return static_cast<int64_t>(static_cast<uint64_t>(low) + next_u64() % span);
}

Generator& default_generator() {
  static Generator gen(0);
  return gen;
}

void manual_seed(uint64_t seed) { default_generator().manual_seed(seed); }

}  // namespace qkv
