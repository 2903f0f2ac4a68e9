// set_num_threads / get_num_threads, and what they promise a user: a
// network's numbers, forward and backward, are the same on any thread count.
// (The kernels' own thread tests are in tests/kernels/test_parallel.cpp.)
#include <doctest/doctest.h>

#include <qkv/qkv.hpp>

#include <cstring>
#include <vector>

using namespace qkv;

namespace {

// Sets the thread count for one scope and puts the old one back.
struct ThreadsFor {
  int old = get_num_threads();
  explicit ThreadsFor(int n) { set_num_threads(n); }
  ~ThreadsFor() { set_num_threads(old); }
};

bool same_bits(const Tensor& a, const Tensor& b) {
  std::vector<float> x = a.to_vector(), y = b.to_vector();
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("core/threads: set_num_threads and get_num_threads") {
  CHECK(get_num_threads() >= 1);
  {
    ThreadsFor threads(3);
    CHECK(get_num_threads() == 3);
  }
  CHECK_THROWS_WITH_AS(set_num_threads(0), doctest::Contains("set_num_threads: 0 threads"), Error);
  CHECK_THROWS_WITH_AS(set_num_threads(-4), doctest::Contains("set_num_threads: -4 threads"), Error);
}

TEST_CASE("core/threads: matmul, bmm, softmax and sum, forward and backward, the same on 1 to 4 threads") {
  // Sizes large enough for every kernel under them to split its work, and
  // none a multiple of the SIMD width or the GEMM blocks.
  auto run = [] {
    Generator gen(0);
    Tensor x = randn({301, 263}, gen).requires_grad_();  // (R, K)
    Tensor w = randn({263, 157}, gen).requires_grad_();  // (K, N)
    Tensor q = randn({9, 70, 61}, gen).requires_grad_(), k = randn({9, 61, 83}, gen).requires_grad_();
    Tensor h = tanh(matmul(x, w));                           // (R, N)
    Tensor s = softmax(bmm(q, k), -1);                       // (9, 70, 83)
    Tensor loss = add(sum(mul(h, h)), sum(mul(s, exp(s))));  // ()
    loss.backward();
    return std::vector<Tensor>{loss, h, s, x.grad(), w.grad(), q.grad(), k.grad()};
  };
  std::vector<Tensor> one;
  {
    ThreadsFor threads(1);
    one = run();
  }
  for (int n : {2, 3, 4}) {
    CAPTURE(n);
    ThreadsFor threads(n);
    std::vector<Tensor> out = run();
    for (size_t i = 0; i < out.size(); ++i) {
      CAPTURE(i);
      CHECK(same_bits(out[i], one[i]));
    }
  }
}
