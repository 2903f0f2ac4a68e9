// bench_elementwise: the SIMD map kernels against their scalar reference
// twins, and the copy kernels against theirs, on 1M floats. Prints the
// median time of several runs and the throughput in floats per nanosecond.
// Run: build/release/bench_elementwise
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <vector>

#include "kernels/copy.hpp"
#include "kernels/elementwise.hpp"
#include "kernels/parallel.hpp"

namespace {

using qkv::kernels::Binary;
using qkv::kernels::Unary;

constexpr int64_t kN = 1 << 20;

// Median wall time in seconds of `runs` calls of f.
double median_seconds(const std::function<void()>& f, int runs) {
  std::vector<double> times;
  for (int r = 0; r < runs; ++r) {
    auto start = std::chrono::steady_clock::now();
    f();
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

void report(const char* name, double fast, double slow) {
  double n = static_cast<double>(kN);
  fmt::print("{:>10}  {:>10.3f}  {:>10.2f}  {:>12.3f}  {:>10.2f}  {:>6.1f}x\n", name, fast * 1e3, n / fast / 1e9,
             slow * 1e3, n / slow / 1e9, slow / fast);
}

}  // namespace

int main() {
  // One thread: the ratio is the SIMD kernel's over the scalar loop's alone.
  qkv::kernels::set_num_threads(1);
  std::vector<float> a(kN), b(kN), out(kN);
  for (int64_t i = 0; i < kN; ++i) {
    a[static_cast<size_t>(i)] = static_cast<float>(i % 17) * 0.25f - 2.0f;
    b[static_cast<size_t>(i)] = static_cast<float>(i % 13) * 0.5f + 0.5f;
  }
  const int runs = 31;
  fmt::print("{:>10}  {:>10}  {:>10}  {:>12}  {:>10}  {:>7}\n", "op (1M)", "simd ms", "floats/ns", "reference ms",
             "floats/ns", "ratio");
  for (auto [name, op] :
       {std::pair{"exp", Unary::Exp}, std::pair{"tanh", Unary::Tanh}, std::pair{"gelu", Unary::Gelu}}) {
    report(name, median_seconds([&, op = op] { qkv::kernels::unary(op, kN, a.data(), out.data()); }, runs),
           median_seconds([&, op = op] { qkv::kernels::unary_reference(op, kN, a.data(), out.data()); }, runs));
  }
  for (auto [name, op] : {std::pair{"add", Binary::Add}, std::pair{"mul", Binary::Mul}}) {
    report(name,
           median_seconds([&, op = op] { qkv::kernels::binary(op, kN, a.data(), 1, b.data(), 1, out.data()); }, runs),
           median_seconds(
               [&, op = op] { qkv::kernels::binary_reference(op, kN, a.data(), 1, b.data(), 1, out.data()); }, runs));
  }

  // Copies of 1M floats: a (1024, 1024) transpose; attention's heads,
  // (B, T, H, D) -> (B, H, T, D) = (8, 128, 4, 256); 1024 rows of 1024 taken
  // at scattered positions (index_select) and added back (its gradient).
  namespace k = qkv::kernels;
  const std::vector<int64_t> t_sizes{1024, 1024}, t_strides{1, 1024};
  const std::vector<int64_t> h_sizes{8, 4, 128, 256}, h_strides{131072, 256, 1024, 1};
  std::vector<int64_t> pos(1024);
  for (size_t j = 0; j < pos.size(); ++j) pos[j] = static_cast<int64_t>((j * 617) % 1024);
  report("transpose", median_seconds([&] { k::strided_copy(t_sizes, t_strides, a.data(), out.data()); }, runs),
         median_seconds([&] { k::strided_copy_reference(t_sizes, t_strides, a.data(), out.data()); }, runs));
  report("heads", median_seconds([&] { k::strided_copy(h_sizes, h_strides, a.data(), out.data()); }, runs),
         median_seconds([&] { k::strided_copy_reference(h_sizes, h_strides, a.data(), out.data()); }, runs));
  report("gather", median_seconds([&] { k::gather(1, 1024, 1024, 1024, pos.data(), a.data(), out.data()); }, runs),
         median_seconds([&] { k::gather_reference(1, 1024, 1024, 1024, pos.data(), a.data(), out.data()); }, runs));
  report(
      "scatter", median_seconds([&] { k::scatter_add(1, 1024, 1024, 1024, pos.data(), a.data(), out.data()); }, runs),
      median_seconds([&] { k::scatter_add_reference(1, 1024, 1024, 1024, pos.data(), a.data(), out.data()); }, runs));
}
