// What qkv promises a program with threads of its own (docs/threads.md):
// a Generator, the default one too, shared by threads; one attention layer
// used for inference by several threads at once; models trained on threads
// of their own, side by side; grad mode kept per thread. Each test checks
// the numbers against a run on one thread, and the `tsan` preset runs them
// (names "threads/…") under ThreadSanitizer, which fails a test on any
// data race even when its numbers come out right.
#include <doctest/doctest.h>

#include <qkv/qkv.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <latch>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

using namespace qkv;

namespace {

bool same_bits(const Tensor& a, const Tensor& b) {
  std::vector<float> x = a.to_vector(), y = b.to_vector();
  return a.shape() == b.shape() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

// f(0) and f(1) on two threads started together.
template <class F>
void on_two_threads(const F& f) {
  std::latch start(2);
  auto run = [&](int t) {
    start.arrive_and_wait();
    f(t);
  };
  std::thread other(run, 1);
  run(0);
  other.join();
}

}  // namespace

TEST_CASE("threads/generator: two threads drawing from one generator get the stream's draws, each once") {
  // splitmix64's draw i is mix(seed + i·kGamma) (generator.hpp), so however
  // the threads interleave, their draws together are the first 2n draws of
  // the stream, none twice and none lost.
  constexpr int n = 20000;
  Generator shared(5);
  std::vector<uint64_t> got[2];
  on_two_threads([&](int t) {
    for (int i = 0; i < n; ++i) got[t].push_back(shared.next_u64());
  });
  Generator alone(5);
  std::vector<uint64_t> want;
  for (int i = 0; i < 2 * n; ++i) want.push_back(alone.next_u64());
  std::vector<uint64_t> all = got[0];
  all.insert(all.end(), got[1].begin(), got[1].end());
  std::sort(all.begin(), all.end());
  std::sort(want.begin(), want.end());
  CHECK(all == want);
  CHECK(shared.state() == alone.state());
}

TEST_CASE("threads/generator: two threads building layers without a generator share the default one") {
  // Each layer draws its parameters from default_generator(); two threads
  // building 40 layers move it on by as many draws as one thread building
  // the 80 from a generator of the same seed.
  manual_seed(3);
  std::vector<std::shared_ptr<nn::Linear>> layers[2];
  on_two_threads([&](int t) {
    for (int i = 0; i < 40; ++i) layers[t].push_back(std::make_shared<nn::Linear>(16, 16));
  });
  Generator alone(3);
  for (int i = 0; i < 80; ++i) nn::Linear layer(16, 16, true, alone);
  CHECK(default_generator().state() == alone.state());
  manual_seed(0);
}

TEST_CASE("threads/dropout: two threads sharing a generator get the masks one thread draws, each once") {
  // Each mask takes its own stretch of the stream (Generator::take), so the
  // two threads' masks together are the 2·k masks one thread draws from the
  // same seed, in some order.
  constexpr int k = 10;
  const Tensor x = ones({1000});
  Generator shared(11);
  std::vector<std::vector<float>> got[2];
  on_two_threads([&](int t) {
    for (int i = 0; i < k; ++i) got[t].push_back(dropout(x, 0.5f, true, shared).to_vector());
  });
  Generator alone(11);
  std::vector<std::vector<float>> want;
  for (int i = 0; i < 2 * k; ++i) want.push_back(dropout(x, 0.5f, true, alone).to_vector());
  std::vector<std::vector<float>> all = got[0];
  all.insert(all.end(), got[1].begin(), got[1].end());
  std::sort(all.begin(), all.end());
  std::sort(want.begin(), want.end());
  CHECK(all == want);
}

TEST_CASE("threads/attention: one layer used for inference by two threads at once") {
  // Each thread's outputs are those of the layer run alone; the stored
  // weights afterwards are one forward's, whole (attention.hpp).
  Generator gen(0);
  const Tensor inputs[2] = {randn({2, 5, 32}, gen), randn({2, 5, 32}, gen)};  // (B, T, H)
  const IntTensor valid_lens = int_tensor({3, 5});

  SUBCASE("MultiHeadAttention, recording a graph and under NoGradGuard") {
    nn::MultiHeadAttention attention(32, 4, 0.2f, false, gen);
    attention.eval();
    Tensor want[2], want_weights[2];
    for (int t = 0; t < 2; ++t) {
      want[t] = attention(inputs[t], inputs[t], inputs[t], valid_lens);
      want_weights[t] = attention.attention_weights().clone();
    }
    bool same[2] = {true, true};
    on_two_threads([&](int t) {
      for (int i = 0; i < 20; ++i) {
        std::optional<NoGradGuard> no_grad;
        if (i % 2 == 1) no_grad.emplace();
        same[t] = same_bits(attention(inputs[t], inputs[t], inputs[t], valid_lens), want[t]) && same[t];
      }
    });
    CHECK(same[0]);
    CHECK(same[1]);
    const Tensor& stored = attention.attention_weights();
    CHECK((same_bits(stored, want_weights[0]) || same_bits(stored, want_weights[1])));
  }

  SUBCASE("AdditiveAttention") {
    nn::AdditiveAttention attention(32, 32, 8, 0.0f, gen);
    Tensor want[2];
    for (int t = 0; t < 2; ++t) want[t] = attention(inputs[t], inputs[t], inputs[t], valid_lens);
    bool same[2] = {true, true};
    on_two_threads([&](int t) {
      for (int i = 0; i < 20; ++i)
        same[t] = same_bits(attention(inputs[t], inputs[t], inputs[t], valid_lens), want[t]) && same[t];
    });
    CHECK(same[0]);
    CHECK(same[1]);
    CHECK(attention.attention_weights.shape() == Shape{2, 5, 5});
  }
}

TEST_CASE("threads/training: two models trained side by side, each on its own thread") {
  // The caching allocator, the kernels' pool (one thread's loops run inline
  // while the other has it) and the graph are shared machinery; the numbers
  // are those of each model trained alone.
  auto train = [](uint64_t seed) {
    Generator gen(seed);
    nn::Linear first(24, 48, true, gen), second(48, 4, true, gen);
    optim::Adam opt([&] {
      std::vector<Tensor> p = first.parameters(), q = second.parameters();
      p.insert(p.end(), q.begin(), q.end());
      return p;
    }());
    const Tensor x = randn({64, 24}, gen);         // (B, D)
    const IntTensor y = randint(0, 4, {64}, gen);  // (B)
    Tensor loss;
    for (int step = 0; step < 5; ++step) {
      opt.zero_grad();
      loss = cross_entropy(second(relu(first(x))), y);
      loss.backward();
      opt.step();
    }
    return std::vector<Tensor>{loss.detach(), first.weight.detach().clone(), second.weight.detach().clone()};
  };
  const std::vector<Tensor> want[2] = {train(1), train(2)};
  std::vector<Tensor> got[2];
  on_two_threads([&](int t) { got[t] = train(static_cast<uint64_t>(t) + 1); });
  for (int t = 0; t < 2; ++t)
    for (size_t i = 0; i < want[t].size(); ++i) {
      CAPTURE(t);
      CAPTURE(i);
      CHECK(same_bits(got[t][i], want[t][i]));
    }
}

TEST_CASE("threads/grad_mode: NoGradGuard on one thread leaves the other recording") {
  Tensor w = ones({3}).requires_grad_();
  std::latch guarded(2), done(2);
  bool recorded[2] = {false, false};
  on_two_threads([&](int t) {
    std::optional<NoGradGuard> no_grad;
    if (t == 0) no_grad.emplace();
    guarded.arrive_and_wait();  // thread 0's guard is up while thread 1 records
    recorded[t] = mul(w, 2.0f).requires_grad();
    done.arrive_and_wait();
  });
  CHECK_FALSE(recorded[0]);
  CHECK(recorded[1]);
}
