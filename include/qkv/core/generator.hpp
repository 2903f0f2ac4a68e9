// Generator: seeded random numbers that are the same on every machine.
//
// std::mt19937 is portable but std::normal_distribution is not (each standard
// library draws differently), so qkv draws its own: splitmix64 for raw bits,
// the top 24 bits for a uniform float, Box–Muller for a normal.
// Every random factory and dropout takes a Generator; the ones that do not
// are given the default generator, which manual_seed(s) resets.
//
// Threads: a Generator may be shared by threads (the default one is, by
// every layer built without a generator). splitmix64's state is a counter,
// draw i being mix(s + i·kGamma), so a draw is one atomic fetch_add on the
// state and a mix of what it returned: no lock, and no two draws, on any
// threads, ever get the same counter. Which thread gets which draw is left
// to chance, so threads that share a generator get a different split of the
// stream from run to run (give each thread a generator of its own to repeat
// a run). See docs/threads.md.
#pragma once
#include <atomic>
#include <cstdint>

namespace qkv {

class Generator {
 public:
  explicit Generator(uint64_t seed = 0) : state_(seed) {}
  // A copy continues the stream from where the original is now, on its own.
  Generator(const Generator& other) : state_(other.state()) {}
  Generator& operator=(const Generator& other) {
    manual_seed(other.state());
    return *this;
  }
  void manual_seed(uint64_t seed) { state_.store(seed, std::memory_order_relaxed); }

  uint64_t next_u64();                   // 64 random bits (splitmix64)
  float uniform();                       // U[0, 1)
  float uniform(float low, float high);  // U[low, high)
  float normal(float mean = 0, float std = 1);
  int64_t randint(int64_t low, int64_t high);  // uniform in [low, high)

  // For kernels that draw the stream themselves (kernels::dropout): draw i
  // (i = 1, 2, …) after state s is mix(s + i·kGamma). state() is s; skip(n)
  // moves past n draws, as n calls of next_u64 would; take(n) does both in
  // one atomic step, returning the s its n draws start after, so that a
  // thread drawing at the same time cannot get any of them.
  static constexpr uint64_t kGamma = 0x9e3779b97f4a7c15ULL;
  uint64_t state() const { return state_.load(std::memory_order_relaxed); }
  void skip(uint64_t n) { take(n); }
  uint64_t take(uint64_t n) { return state_.fetch_add(n * kGamma, std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> state_;
};

Generator& default_generator();
void manual_seed(uint64_t seed);  // reseed the default generator

}  // namespace qkv
