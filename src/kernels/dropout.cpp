// Dropout's mask and output (see dropout.hpp).
//
// Why a kernel: the op drew one number at a time through Generator::uniform(),
// a call into another file per element, then multiplied by the mask in a
// second op. Here splitmix64's mix is inlined into one loop that writes the
// mask and y together: about 1.4 ns an element against 7 on this project's
// test machine.
//
// Left out on purpose: SIMD. The draws are independent given the state (draw
// i mixes state + i·γ), so 64-bit lanes could mix several at once; but an
// xsimd version of this loop (vpmullq, then the lanes compared one by one)
// measured 6 ns an element, slower than the plain loop, so the plain loop it is.
//
// Threads: draw i depends on state and i alone, so a long array is cut into
// pieces, each starting its state at state + begin·γ: every piece draws
// exactly the numbers the one loop would, on any number of threads.
#include "kernels/dropout.hpp"

#include "kernels/parallel.hpp"

namespace qkv::kernels {

namespace {

constexpr uint64_t kGamma = 0x9e3779b97f4a7c15ULL;  // as Generator::kGamma

// splitmix64's output function (Steele, Lea, Flood 2014), as Generator::next_u64.
uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Elements a task should take, at least: ~10 µs at 1.4 ns each.
constexpr int64_t GRAIN = 1 << 13;

}  // namespace

void dropout(int64_t n, uint64_t state, float p, float scale, const float* x, float* y, float* mask) {
  parallel_ranges(n, GRAIN, 1, [&](int64_t begin, int64_t end) {
    uint64_t s = state + static_cast<uint64_t>(begin) * kGamma;  // the state after draw begin (wrapping, as ever)
    for (int64_t i = begin; i < end; ++i) {
      s += kGamma;                                                    // Generator::next_u64,
      const float u = static_cast<float>(mix(s) >> 40) * 0x1.0p-24f;  // then uniform()
      mask[i] = u >= p ? scale : 0.0f;
      y[i] = x[i] * mask[i];
    }
  });
}

}  // namespace qkv::kernels
