// Generator: seeded random numbers that are the same on every machine.
//
// std::mt19937 is portable but std::normal_distribution is not (each standard
// library draws differently), so qkv draws its own: splitmix64 for raw bits,
// the top 24 bits for a uniform float, Box–Muller for a normal.
// Every random factory and dropout takes a Generator; the ones that do not
// are given the default generator, which manual_seed(s) resets.
#pragma once
#include <cstdint>

namespace qkv {

class Generator {
 public:
  explicit Generator(uint64_t seed = 0) : state_(seed) {}
  void manual_seed(uint64_t seed) { state_ = seed; }

  uint64_t next_u64();                   // 64 random bits (splitmix64)
  float uniform();                       // U[0, 1)
  float uniform(float low, float high);  // U[low, high)
  float normal(float mean = 0, float std = 1);
  int64_t randint(int64_t low, int64_t high);  // uniform in [low, high)

  // For kernels that draw the stream themselves (kernels::dropout): draw i
  // (i = 1, 2, …) after state s is mix(s + i·kGamma). state() is s; skip(n)
  // moves past n draws, as n calls of next_u64 would.
  static constexpr uint64_t kGamma = 0x9e3779b97f4a7c15ULL;
  uint64_t state() const { return state_; }
  void skip(uint64_t n) { state_ += n * kGamma; }

 private:
  uint64_t state_;
};

Generator& default_generator();
void manual_seed(uint64_t seed);  // reseed the default generator

}  // namespace qkv
