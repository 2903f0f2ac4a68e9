// bench_gemm: the packed SIMD GEMM against its plain reference loop, in the
// same run, on square sizes. Prints the median time of several runs and the
// GFLOP/s (2·M·N·K flops per product). Run: build/release/bench_gemm
//
// Both run on one thread (the reference has no other), so the ratio is the
// kernel's alone; bench --threads N times the threaded GEMM.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/gemm.hpp"
#include "kernels/parallel.hpp"

namespace {

using GemmFn = void (*)(bool, bool, int64_t, int64_t, int64_t, const float*, int64_t, const float*, int64_t, float*,
                        int64_t, bool);

// Median wall time in seconds of `runs` products of size n³.
double median_seconds(GemmFn gemm, int64_t n, int runs) {
  std::vector<float> A(static_cast<size_t>(n * n)), B(A.size()), C(A.size());
  for (size_t i = 0; i < A.size(); ++i) A[i] = static_cast<float>(i % 7) - 3, B[i] = static_cast<float>(i % 5) - 2;
  std::vector<double> times;
  for (int r = 0; r < runs; ++r) {
    auto start = std::chrono::steady_clock::now();
    gemm(false, false, n, n, n, A.data(), n, B.data(), n, C.data(), n, false);
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace

int main() {
  qkv::kernels::set_num_threads(1);
  fmt::print("{:>6}  {:>12}  {:>10}  {:>12}  {:>10}  {:>7}\n", "n", "gemm ms", "GFLOP/s", "reference ms", "GFLOP/s",
             "ratio");
  for (int64_t n : {64, 128, 256, 512}) {
    double flops = 2.0 * std::pow(static_cast<double>(n), 3);
    double fast = median_seconds(qkv::kernels::gemm, n, 15);
    double slow = median_seconds(qkv::kernels::gemm_reference, n, n >= 512 ? 3 : 5);
    fmt::print("{:>6}  {:>12.3f}  {:>10.1f}  {:>12.3f}  {:>10.2f}  {:>6.0f}x\n", n, fast * 1e3, flops / fast / 1e9,
               slow * 1e3, flops / slow / 1e9, slow / fast);
  }
}
