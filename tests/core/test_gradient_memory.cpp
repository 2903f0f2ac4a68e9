// What backward() holds in memory, and that holding less changes no
// gradient: the output gradient handed to each node (BackwardFn takes dout
// by value), sole_owner / reuse_or_empty, gradients written over dout,
// leaf gradients taken without a copy, retain_graph.
//
// The gradients themselves are checked against PyTorch (tests/reference, by the
// same helper the op tests use) and against mathematics; the memory against
// a count of the buffers that must be alive at the peak, read from the
// caching allocator's statistics (allocator.hpp).
#include <doctest/doctest.h>

#include <qkv/qkv.hpp>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "reference.hpp"

using namespace qkv;
using qkv::test::check_against_torch;
using qkv::test::check_close;
using qkv::test::RefCase;
using qkv::test::reference_cases;

namespace {

// Bytes the allocator takes for a tensor of `shape`: its size class.
int64_t block_bytes(const Shape& shape) {
  return static_cast<int64_t>(size_class(static_cast<size_t>(shape.numel()) * sizeof(float)));
}

// The allocator's peak during f(), above what was allocated when it began.
template <class F>
int64_t peak_growth(F&& f) {
  reset_peak_memory_stats();
  const int64_t before = memory_stats().allocated_bytes;
  f();
  return memory_stats().peak_allocated_bytes - before;
}

}  // namespace

// --- sole_owner and reuse_or_empty -----------------------------------------------------

TEST_CASE("core/gradient_memory: sole_owner is true only when nothing else sees the numbers") {
  Tensor t = ones({4});
  CHECK(sole_owner(t));
  CHECK_FALSE(sole_owner(Tensor()));
  SUBCASE("another handle") {
    Tensor other = t;
    CHECK_FALSE(sole_owner(t));
    CHECK_FALSE(sole_owner(other));
  }
  SUBCASE("a view or a detached tensor shares the storage") {
    Tensor view = reshape(t, {2, 2});
    CHECK_FALSE(sole_owner(t));
    CHECK_FALSE(sole_owner(view));
    Tensor detached = view.detach();
    view = Tensor();
    CHECK_FALSE(sole_owner(t));
    detached = Tensor();
    CHECK(sole_owner(t));  // the others are gone
  }
  SUBCASE("a leaf the graph keeps") {
    Tensor x = ones({4}).requires_grad_();
    Tensor y = exp(x);  // ExpBackward keeps y's numbers (y.detach()); the edge keeps x
    CHECK_FALSE(sole_owner(x));
    CHECK_FALSE(sole_owner(y));
  }
}

TEST_CASE("core/gradient_memory: reuse_or_empty gives dout's numbers only when it is their sole owner") {
  Tensor dout = ones({2, 3});
  const float* numbers = dout.data();
  Tensor dx = reuse_or_empty(dout);
  CHECK(dx.data() == numbers);
  CHECK(dx.shape() == dout.shape());
  Tensor shared = dx;  // now three handles: a new tensor
  Tensor fresh = reuse_or_empty(shared);
  CHECK(fresh.data() != numbers);
  CHECK(fresh.shape() == Shape{2, 3});
}

// --- attention: the peak, counted -----------------------------------------------------

TEST_CASE("core/gradient_memory: attention forward and backward hold three (B, H, T, T) buffers at the peak") {
  // bench's sdpa case, small: softmax(Q·Kᵀ/√d)·V and its backward with a
  // given dO, the scores kept in a variable (as bench.cpp and PyTorch's
  // bench_torch.py keep them). Write S for one (B, H, T, T) buffer, s for
  // one (B, H, T, d). What must be alive at the peak, in the backward of
  // the second product, which computes dP = dO·Vᵀ and dV = Pᵀ·dO:
  //   scores (S), P saved for the softmax's backward and this one (S),
  //   dP (S); O (s, still in scope) and dV (s).
  // Every other moment holds less: the forward at most QKᵀ and scores, or
  // scores, P and O; after the softmax (written over dP) and the division
  // (written over that), scores, dS, O, dV, dQ and dK: 2S + 4s.
  // So the bound is 3S + 2s, and one s of slack for the one-element tensors
  // and the allocator's rounding. Before gradients were written over dout
  // the peak was 4S + 2s: the softmax's backward wrote dS beside dP (as
  // PyTorch does); here S = 8s, so that is well past the bound.
  const int64_t B = 2, H = 2, T = 64, d = 8;
  const int64_t S = block_bytes({B, H, T, T}), s = block_bytes({B, H, T, d});
  REQUIRE(S == 8 * s);
  Generator gen(0);
  Tensor Q = randn({B, H, T, d}, gen).requires_grad_(), K = randn({B, H, T, d}, gen).requires_grad_(),
         V = randn({B, H, T, d}, gen).requires_grad_(), dO = randn({B, H, T, d}, gen);

  const int64_t peak = peak_growth([&] {
    Tensor scores = div(matmul(Q, K, {.transpose_b = true}), std::sqrt(static_cast<float>(d)));  // (B, H, T, T)
    Tensor O = matmul(softmax(scores, -1), V);                                                   // (B, H, T, d)
    O.backward(dO);
  });
  INFO("peak ", peak, " bytes; S = ", S, ", s = ", s);
  CHECK(peak <= 3 * S + 3 * s);
  CHECK(peak >= 3 * S);  // the count above is what it holds, not a loose bound
  REQUIRE(Q.grad().defined());
  REQUIRE(K.grad().defined());
  REQUIRE(V.grad().defined());
}

TEST_CASE("core/gradient_memory: attention's gradients agree with finite differences") {
  // The same composition, small enough for gradcheck, whose weighted sum
  // hands every backward its dout alone: each of them writes over it.
  Generator gen(1);
  constexpr int64_t B = 2, H = 2, T = 5, d = 3;
  auto attention = [](const std::vector<Tensor>& x) {
    Tensor scores = div(matmul(x[0], x[1], {.transpose_b = true}), std::sqrt(static_cast<float>(d)));
    return matmul(softmax(scores, -1), x[2]);
  };
  auto r = gradcheck(attention, {randn({B, H, T, d}, gen), randn({B, H, T, d}, gen), randn({B, H, T, d}, gen)});
  CHECK_MESSAGE(r.ok, r.message);
}

TEST_CASE("core/gradient_memory: a backward that holds dout alone allocates nothing") {
  // z = 2·eˣ, backward with a gradient the caller keeps. MulBackward cannot
  // write over the caller's gradient: it makes one buffer (b). ExpBackward
  // then holds that alone and writes dx over it, and x's .grad() becomes
  // that very buffer: the whole backward allocates b. Without the reuse it
  // would be three: MulBackward's, ExpBackward's and the copy for .grad().
  const Shape shape{64, 64};
  const int64_t b = block_bytes(shape);
  Tensor x = full(shape, 0.5f).requires_grad_();
  Tensor g = ones(shape);
  Tensor z = mul(exp(x), 2.0f);
  const int64_t peak = peak_growth([&] { z.backward(g); });
  CHECK(peak <= b + 256);  // one buffer, and the small change of the engine's bookkeeping
  check_close(x.grad(), full(shape, 2 * std::exp(0.5f)), "d(2eˣ)/dx");
  check_close(g, ones(shape), "the caller's gradient, untouched");
}

// --- the gradients do not change ---------------------------------------------------------

TEST_CASE("core/gradient_memory: backwards written over dout agree with PyTorch") {
  // Each op's torch case again, behind a multiplication by 1: torch's
  // grad_out is the caller's (never overwritten), but the 1·grad_out that
  // MulBackward hands on is the op's alone, so the op's backward writes its
  // gradient over it. Multiplying by 1 changes no float, so torch's values
  // still hold.
  using Op = std::function<Tensor(const std::vector<Tensor>&, const RefCase&)>;
  auto unary = [](Tensor (*f)(const Tensor&)) -> Op {
    return [f](const std::vector<Tensor>& x, const RefCase&) { return f(x[0]); };
  };
  const std::vector<std::pair<std::string, Op>> ops{
      // a group of cases ("exp/"), or one case
      {"neg/", unary([](const Tensor& x) { return neg(x); })},
      {"exp/", unary([](const Tensor& x) { return exp(x); })},
      {"log/", unary([](const Tensor& x) { return log(x); })},
      {"sqrt/", unary([](const Tensor& x) { return sqrt(x); })},
      {"abs/", unary([](const Tensor& x) { return abs(x); })},
      {"tanh/", unary([](const Tensor& x) { return tanh(x); })},
      {"sigmoid/", unary([](const Tensor& x) { return sigmoid(x); })},
      {"relu/", unary([](const Tensor& x) { return relu(x); })},
      {"gelu/", unary([](const Tensor& x) { return gelu(x); })},
      {"pow/cube", unary([](const Tensor& x) { return pow(x, 3.0f); })},
      {"pow/half", unary([](const Tensor& x) { return pow(x, 0.5f); })},
      {"mul/float", unary([](const Tensor& x) { return mul(x, -0.75f); })},
      {"div/float", unary([](const Tensor& x) { return div(x, 3.0f); })},
      {"div/float_first", unary([](const Tensor& x) { return div(2.0f, x); })},
      {"sub/float_first", unary([](const Tensor& x) { return sub(2.5f, x); })},
      {"masked_fill/",
       [](const std::vector<Tensor>& x, const RefCase& c) { return masked_fill(x[0], c.ints_at("mask"), -1e9f); }},
  };
  for (const auto& named : ops) {
    const std::string& prefix = named.first;
    const Op& op = named.second;
    // "exp/": every exp case; "div/float": that case only (not div/float_first).
    const bool all = prefix.back() == '/';
    for (const std::string& name : all ? reference_cases("elementwise", prefix) : std::vector{prefix}) {
      SUBCASE(name.c_str()) {
        check_against_torch("elementwise", name,
                            [&op](const std::vector<Tensor>& x, const RefCase& c) { return mul(op(x, c), 1.0f); });
      }
    }
  }
  for (const std::string& name : reference_cases("softmax", "")) {
    SUBCASE(name.c_str()) {
      check_against_torch("softmax", name, [&name](const std::vector<Tensor>& x, const RefCase& c) {
        Tensor y;
        if (name.rfind("masked_softmax/", 0) == 0)
          y = masked_softmax(x[0], c.has("valid_lens") ? c.ints_at("valid_lens") : IntTensor());
        else if (name.rfind("log_softmax/", 0) == 0)
          y = log_softmax(x[0], c.ints_at("dim").item());
        else
          y = softmax(x[0], c.ints_at("dim").item());
        return mul(y, 1.0f);
      });
    }
  }
}

TEST_CASE("core/gradient_memory: dropout's backward written over dout") {
  // Mathematics: y = x ⊙ m with m ∈ {0, 1/(1-p)}, so dx = g ⊙ m, which is
  // y / x wherever x ≠ 0 (x is all 2 here). z = 3y hands dropout 3g alone.
  Generator gen(7);
  const float p = 0.4f;
  Tensor x = full({50, 40}, 2.0f).requires_grad_();
  Tensor y = dropout(x, p, /*training=*/true, gen);
  mul(y, 3.0f).backward(ones({50, 40}));
  const float* yv = y.data();
  const float* dx = x.grad().data();
  for (int64_t i = 0; i < x.numel(); ++i) {
    const float m = yv[i] / 2.0f;
    REQUIRE(dx[i] == 3.0f * m);
  }
}

// --- a gradient that goes to two places --------------------------------------------------

TEST_CASE("core/gradient_memory: a gradient shared by two consumers is never written over") {
  // Gradients from mathematics, in double.
  Tensor x = tensor({-1.5f, 0.25f, 2.0f}).requires_grad_();
  const std::vector<double> xs{-1.5, 0.25, 2.0};
  auto expect = [&](auto derivative) {
    std::vector<float> want;
    for (double v : xs) want.push_back(static_cast<float>(derivative(v)));
    return tensor(want);
  };
  SUBCASE("x·x: one op reads x twice") {
    // d(exp(x²))/dx = 2x·exp(x²); MulBackward's two gradients for x are summed.
    sum(exp(mul(x, x))).backward();
    check_close(x.grad(), expect([](double v) { return 2 * v * std::exp(v * v); }), "d exp(x²)/dx");
  }
  SUBCASE("add hands one dout to both of its inputs") {
    // y = 2·(eˣ + tanh x): AddBackward gives the same tensor to ExpBackward
    // and TanhBackward; the first to run must not write over it.
    // dy/dx = 2·(eˣ + 1 - tanh²x).
    mul(add(exp(x), tanh(x)), 2.0f).backward(ones({3}));
    check_close(x.grad(), expect([](double v) { return 2 * (std::exp(v) + 1 - std::tanh(v) * std::tanh(v)); }),
                "d 2(eˣ + tanh x)/dx");
  }
  SUBCASE("h + h: both of add's inputs are one node") {
    // y = σ(2eˣ)·3: dy/dx = 3·σ'(2eˣ)·2eˣ, σ' = σ(1 - σ).
    Tensor h = exp(x);
    mul(sigmoid(add(h, h)), 3.0f).backward(ones({3}));
    check_close(x.grad(), expect([](double v) {
                  double u = 2 * std::exp(v), sg = 1 / (1 + std::exp(-u));
                  return 3 * sg * (1 - sg) * u;
                }),
                "d 3σ(2eˣ)/dx");
  }
  SUBCASE("one node read by two branches") {
    // h = eˣ read by relu(h)·2 and by -h: dy/dx = 2eˣ - eˣ = eˣ (eˣ > 0, so relu' = 1).
    Tensor h = exp(x);
    sum(add(mul(relu(h), 2.0f), neg(h))).backward();
    check_close(x.grad(), expect([](double v) { return std::exp(v); }), "d(2 relu(eˣ) - eˣ)/dx");
  }
  SUBCASE("a leaf read by two ops") {
    // y = 3x + x/2: two gradients for the leaf, each its op's own.
    sum(add(mul(x, 3.0f), div(x, 2.0f))).backward();
    check_close(x.grad(), full({3}, 3.5f), "d(3x + x/2)/dx");
  }
}

// --- a leaf's .grad() and the tensors the caller holds ----------------------------------

TEST_CASE("core/gradient_memory: .grad() is never a tensor the caller can still write") {
  // PyTorch's AccumulateGrad takes the incoming gradient without a copy only
  // when nothing else holds it, else clones it; the same here, with one
  // difference: PyTorch counts handles on the tensor, not on its storage,
  // so after y = x.reshape(…); y.backward(g) its x.grad is a view of g, and
  // writing g changes x.grad. qkv counts the storage's owners, and copies.
  Tensor x = tensor({1, 2, 3}).requires_grad_();
  SUBCASE("a seed passed through add") {  // torch: x.grad stays [1, 1, 1]
    Tensor g = ones({3});
    add(x, 0.0f).backward(g);
    g.data()[0] = 5;
    check_close(x.grad(), ones({3}), "x.grad after writing g");
  }
  SUBCASE("a seed passed through reshape") {  // torch: x.grad would be [1, 7, 1]
    Tensor g = ones({3, 1});
    reshape(x, {3, 1}).backward(g);
    g.data()[1] = 7;
    check_close(x.grad(), ones({3}), "x.grad after writing g");
  }
  SUBCASE("the seed of a leaf's own backward") {  // torch: x.grad stays [1, 1, 1]
    Tensor g = ones({3});
    x.backward(g);
    g.data()[2] = 9;
    check_close(x.grad(), ones({3}), "x.grad after writing g");
  }
  SUBCASE("the output given as its own gradient") {  // torch: y = x + 0; y.backward(y); x.grad stays [1, 2, 3]
    Tensor y = add(x, 0.0f);
    y.backward(y);
    y.data()[0] = 100;
    check_close(x.grad(), tensor({1, 2, 3}), "x.grad after writing y");
  }
  SUBCASE("a gradient taken without a copy is the leaf's from then on") {
    // The first backward's gradient becomes .grad() itself; the second adds
    // into it, and a handle taken in between sees the sum (as in PyTorch,
    // where x.grad stays the same tensor).
    sum(mul(x, 2.0f)).backward();
    Tensor first = x.grad();
    sum(mul(x, 3.0f)).backward();
    check_close(x.grad(), full({3}, 5.0f), "2 + 3");
    CHECK(first.data() == x.grad().data());
  }
}

// --- retain_graph -----------------------------------------------------------------------

TEST_CASE("core/gradient_memory: retain_graph with gradients written over dout") {
  // Mathematics: L = Σ softmax(2eˣ)·w. Each backward writes into its douts,
  // never into what the nodes saved: with retain_graph the second backward
  // sees the same saved tensors and gives the same gradient again.
  Tensor x = tensor({0.5f, -1.0f, 0.25f, 1.0f}).requires_grad_();
  Tensor w = tensor({1, -2, 3, 0.5f});
  Tensor loss = sum(mul(softmax(mul(exp(x), 2.0f), 0), w));
  loss.backward(Tensor(), /*retain_graph=*/true);
  Tensor once = tensor(x.grad().to_vector());
  loss.backward(Tensor(), /*retain_graph=*/true);
  check_close(x.grad(), mul(once, 2.0f), "two backwards, twice the gradient");

  // And the values, in double: u = 2eˣ, y = softmax(u), dL/du = y ⊙ (w - Σ w y), dL/dx = dL/du ⊙ u.
  std::vector<double> u, y(4);
  double z = 0, wy = 0;
  for (float v : x.to_vector()) u.push_back(2 * std::exp(static_cast<double>(v)));
  for (double v : u) z += std::exp(v);
  const std::vector<float> wv = w.to_vector();  // read, not through data(): that would count as a write into w
  for (size_t i = 0; i < 4; ++i) y[i] = std::exp(u[i]) / z, wy += wv[i] * y[i];
  std::vector<float> want;
  for (size_t i = 0; i < 4; ++i) want.push_back(static_cast<float>(y[i] * (wv[i] - wy) * u[i]));
  check_close(once, tensor(want), "dL/dx");

  // Without retain_graph the graph is freed as it runs: a further backward is an error.
  loss.backward();
  CHECK_THROWS_WITH_AS(loss.backward(), doctest::Contains("backward through the graph a second time"), Error);
}
