// Tests for the functional ops (src/ops/functional.cpp): dropout, layer_norm,
// cross_entropy, fused_gru_cell, mse_loss, cosine_similarity, normalize.
//
// Expected values come from PyTorch (tests/reference/functional.txt, written by
// tools/reference/functional.py) or from mathematics, said in a comment at
// each check. dropout draws from qkv's generator, so its checks are all
// mathematical: which values can appear, how many, and that a seed repeats.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>

#include "ops/util.hpp"
#include "reference.hpp"

using namespace qkv;
using qkv::test::check_against_torch;
using qkv::test::check_close;
using qkv::test::RefCase;
using qkv::test::reference_cases;
using Inputs = std::vector<Tensor>;

namespace {

// Each case of tools/reference/functional.py holds the op's arguments besides
// its tensors (reduction, dim, eps, …); the tests read them from it.
int64_t int_arg(const RefCase& c, const std::string& key) { return c.ints_at(key).item(); }
float float_arg(const RefCase& c, const std::string& key) { return c.tensor(key).item(); }
Reduction reduction_arg(const RefCase& c) { return static_cast<Reduction>(int_arg(c, "reduction")); }

bool all_finite(const Tensor& t) {
  for (float v : t.to_vector())
    if (!std::isfinite(v)) return false;
  return true;
}

}  // namespace

// --- dropout -------------------------------------------------------------------

TEST_CASE("ops/dropout") {
  Generator gen(1);
  Tensor x = randn({40, 50}, gen);

  SUBCASE("identity when not training or p = 0") {
    Generator g(2);
    check_close(dropout(x, 0.5f, /*training=*/false, g), x, "eval");
    check_close(dropout(x, 0.0f, /*training=*/true, g), x, "p=0");
  }

  SUBCASE("p = 1 gives zeros, as PyTorch") {
    Generator g(3);
    check_close(dropout(x, 1.0f, true, g), zeros({40, 50}), "p=1");
  }

  SUBCASE("each element is 0 or x/(1-p); about p of them are 0") {
    // Mathematics: kept elements are scaled by 1/(1-p) = 1/0.7; the dropped
    // count is Binomial(2000, 0.3): mean 600, sd ≈ 20.5, so 500…700 is ±5 sd.
    Generator g(4);
    const float p = 0.3f;
    Tensor y = dropout(x, p, true, g);
    const float* xv = x.data();
    const float* yv = y.data();
    int dropped = 0;
    for (int64_t i = 0; i < x.numel(); ++i) {
      if (yv[i] == 0) {
        ++dropped;
      } else {
        REQUIRE(yv[i] == doctest::Approx(xv[i] / (1 - p)).epsilon(1e-6));
      }
    }
    CHECK(dropped > 500);
    CHECK(dropped < 700);
  }

  SUBCASE("the same seed gives the same mask, another seed another") {
    Generator a(5), b(5), c(6);
    Tensor ya = dropout(x, 0.5f, true, a);
    CHECK(ya.to_vector() == dropout(x, 0.5f, true, b).to_vector());
    CHECK(ya.to_vector() != dropout(x, 0.5f, true, c).to_vector());
  }

  SUBCASE("the mask is the one drawn with gen.uniform() element by element") {
    // The kernel draws many numbers at once; it must give the mask, bit for
    // bit, that this loop gives (and leave the generator where the loop does),
    // so that seeded runs, lessons included, keep their numbers.
    for (int64_t n : {1, 7, 37, 2000}) {
      for (float p : {0.1f, 0.5f, 0.75f}) {
        CAPTURE(n);
        CAPTURE(p);
        Generator a(9), b(9);
        Tensor xs = randn({n}, gen);
        Tensor y = dropout(xs, p, true, a);
        const float scale = 1 / (1 - p);
        std::vector<float> want(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) want[static_cast<size_t>(i)] = xs.data()[i] * (b.uniform() >= p ? scale : 0.0f);
        CHECK(y.to_vector() == want);
        CHECK(a.next_u64() == b.next_u64());
      }
    }
  }

  SUBCASE("gradient is the mask") {
    // Mathematics: y = x ⊙ mask, so dx = dy ⊙ mask; with x = 1 the output is the mask itself.
    Tensor ones_x = ones({7, 3}).requires_grad_();
    Generator g(7);
    Tensor y = dropout(ones_x, 0.4f, true, g);
    y.backward(ones({7, 3}));
    check_close(ones_x.grad(), y.detach(), "dx");
  }

  SUBCASE("gradcheck") {
    auto r = gradcheck(
        [](const Inputs& in) {
          Generator g(8);  // the same mask on every call
          return dropout(in[0], 0.25f, true, g);
        },
        {randn({3, 5}, gen)});
    CHECK_MESSAGE(r.ok, r.message);
  }

  SUBCASE("errors") {
    CHECK_THROWS_WITH_AS(dropout(x, -0.1f, true), doctest::Contains("dropout: probability has to be between 0 and 1"),
                         qkv::Error);
    CHECK_THROWS_WITH_AS(dropout(x, 1.5f, true), doctest::Contains("but got 1.5"), qkv::Error);
    CHECK_THROWS_WITH_AS(dropout(x, std::numeric_limits<float>::quiet_NaN(), true), doctest::Contains("dropout:"),
                         qkv::Error);
  }
}

// --- layer_norm ----------------------------------------------------------------

TEST_CASE("ops/layer_norm") {
  SUBCASE("d2l's check: [[1, 2], [2, 3]] -> [[-1, 1], [-1, 1]]") {
    // Mathematics: each row is μ ± 0.5 with σ² = 0.25, so ±0.5/sqrt(0.25 + 1e-5) = ±0.99998.
    Tensor y = layer_norm(tensor({1, 2, 2, 3}, {2, 2}), Shape{2});
    check_close(y, tensor({-1, 1, -1, 1}, {2, 2}), "y", 0, 1e-3f);
  }

  SUBCASE("against torch") {
    // x0 the input, then weight and bias when the case has them (x1, x2).
    for (const std::string& name : reference_cases("functional", "layer_norm/")) {
      SUBCASE(name.c_str()) {
        check_against_torch("functional", name, [](const Inputs& x, const RefCase& c) {
          Shape normalized_shape(c.ints_at("normalized_shape").to_vector());
          Tensor weight = x.size() > 1 ? x[1] : Tensor();
          Tensor bias = x.size() > 2 ? x[2] : Tensor();
          return layer_norm(x[0], normalized_shape, weight, bias, float_arg(c, "eps"));
        });
      }
    }
  }

  SUBCASE("equals the composition of mean, sub, mul, sqrt and div") {
    // The op: y = (x - μ)·rstd·w + b with rstd = 1/sqrt(σ² + eps), sums in SIMD
    // order; the composition divides by sqrt(σ² + eps) and sums with the
    // reduce kernel. Each sum of D terms differs by up to D·u relative to the
    // sum of magnitudes, and rstd·(…) against (…)/sqrt by 2u; the backward
    // subtracts two means from g, which can cancel: rtol 1e-5 (~100u, D ≤ 37)
    // and atol 1e-5 for gradients that cancel to near 0 (|g| ~ 3 here).
    Generator gen(23);
    struct Case {
      Shape x, normalized;
      bool affine;
    };
    const Case cases[] = {
        {{4, 5}, {5}, true}, {{3, 2, 37}, {37}, true}, {{2, 3, 7}, {3, 7}, false}, {{6, 32}, {32}, true}};
    for (const Case& c : cases) {
      SUBCASE(fmt::format("x {} over {} affine {}", c.x, c.normalized, c.affine).c_str()) {
        std::vector<Tensor> a, b;
        a.reserve(3);  // (growing from 1 trips g++ 12's false -Warray-bounds)
        a.push_back(randn(c.x, gen) * 2.0f + 0.5f);
        if (c.affine) {
          a.push_back(randn(c.normalized, gen));
          a.push_back(randn(c.normalized, gen));
        }
        for (Tensor& t : a) {
          t.requires_grad_();
          b.push_back(Tensor(t.to_vector(), t.shape()).requires_grad_());
        }
        Tensor w1 = c.affine ? a[1] : Tensor(), b1 = c.affine ? a[2] : Tensor();
        Tensor y1 = layer_norm(a[0], c.normalized, w1, b1);
        // The composition, on rows of D (as layer_norm was written before its kernel).
        const int64_t D = c.normalized.numel();
        Tensor xr = reshape(b[0], Shape{-1, D});           // (R, D)
        Tensor xc = xr - mean(xr, -1, /*keepdim=*/true);   // (R, D)
        Tensor var = mean(xc * xc, -1, /*keepdim=*/true);  // (R, 1)
        Tensor y2 = reshape(xc / sqrt(var + 1e-5f), c.x);  // x's shape
        if (c.affine) y2 = y2 * b[1] + b[2];
        check_close(y1, y2.detach(), "y", 1e-5f, 1e-5f);
        Tensor dy = randn(c.x, gen);
        y1.backward(dy);
        y2.backward(dy);
        for (size_t i = 0; i < a.size(); ++i)
          check_close(a[i].grad(), b[i].grad(), fmt::format("grad {}", i), 1e-5f, 1e-5f);
      }
    }
  }

  SUBCASE("bias without weight gets its gradient") {
    // Mathematics: y = x̂ + b, so db = Σ over the rows of dy.
    Tensor bias = zeros({2, 3}).requires_grad_();
    Tensor y = layer_norm(randn({4, 2, 3}), Shape{2, 3}, Tensor(), bias);
    y.backward(ones({4, 2, 3}));
    check_close(bias.grad(), full({2, 3}, 4.0f), "dbias");
  }

  SUBCASE("stable for a large mean: 1e4 + (1, 2, 3)") {
    // Mathematics: centred values -1, 0, 1 with σ² = 2/3, so y = ±sqrt(3/2)/sqrt(1 + 1.5e-5), 0.
    // (E[x²] - μ² would lose every digit here in float32.)
    Tensor x = tensor({10001, 10002, 10003, -10001, -10002, -10003}, {2, 3}).requires_grad_();
    Tensor y = layer_norm(x, Shape{3});
    const float a = std::sqrt(1.5f) / std::sqrt(1 + 1.5e-5f);
    check_close(y, tensor({-a, 0, a, a, 0, -a}, {2, 3}), "y", 1e-5f, 1e-5f);
    y.backward(tensor({1, -2, 0.5f, 3, 1, -1}, {2, 3}));
    CHECK(all_finite(x.grad()));
  }

  SUBCASE("stable for ±1e4 values") {
    // Mathematics: rows of ±1e4 have μ = 0 and σ = 1e4, so y = ±1 (eps is negligible);
    // the gradient of Σ y over a row is 0 (Σ y is always 0).
    Tensor x = tensor({1e4f, -1e4f, 1e4f, -1e4f}, {1, 4}).requires_grad_();
    Tensor y = layer_norm(x, Shape{4});
    check_close(y, tensor({1, -1, 1, -1}, {1, 4}), "y", 1e-5f, 1e-5f);
    sum(y).backward();
    CHECK(all_finite(x.grad()));
    check_close(x.grad(), zeros({1, 4}), "dx", 0, 1e-6f);
  }

  SUBCASE("gradcheck") {
    Generator gen(11);
    auto with_affine = [](Shape s) { return [s](const Inputs& in) { return layer_norm(in[0], s, in[1], in[2]); }; };
    auto r = gradcheck(with_affine(Shape{5}), {randn({3, 5}, gen), randn({5}, gen), randn({5}, gen)});
    CHECK_MESSAGE(r.ok, r.message);
    r = gradcheck(with_affine(Shape{3, 7}), {randn({2, 3, 7}, gen), randn({3, 7}, gen), randn({3, 7}, gen)});
    CHECK_MESSAGE(r.ok, r.message);
    r = gradcheck([](const Inputs& in) { return layer_norm(in[0], Shape{1, 5}); }, {randn({5, 1, 5}, gen)});
    CHECK_MESSAGE(r.ok, r.message);
  }

  SUBCASE("errors") {
    Tensor x = zeros({2, 3});
    CHECK_THROWS_WITH_AS(
        layer_norm(x, Shape{4}),
        doctest::Contains("layer_norm: normalized_shape (4) does not match the trailing dims of x (2, 3)"), qkv::Error);
    CHECK_THROWS_WITH_AS(layer_norm(x, Shape{1, 2, 3}), doctest::Contains("normalized_shape (1, 2, 3)"), qkv::Error);
    CHECK_THROWS_WITH_AS(layer_norm(x, Shape{}), doctest::Contains("layer_norm: normalized_shape is empty"),
                         qkv::Error);
    CHECK_THROWS_WITH_AS(layer_norm(x, Shape{3}, ones({2})),
                         doctest::Contains("layer_norm: weight shape (2) should be normalized_shape (3)"), qkv::Error);
    CHECK_THROWS_WITH_AS(layer_norm(x, Shape{3}, ones({3}), zeros({1, 3})),
                         doctest::Contains("layer_norm: bias shape (1, 3) should be normalized_shape (3)"), qkv::Error);
  }
}

// --- cross_entropy ---------------------------------------------------------------

namespace {

// cross_entropy composed from primitive ops, as PyTorch 1.13 defines it:
//   loss[n, …] = (1-ε)·(-w[t]·logp[n, t, …]) + ε/C·(-Σ_c w[c]·logp[n, c, …]),  logp = log_softmax(logits, 1)
// index_select picks each target's log-probability from the flattened logp;
// masked_fill zeroes the ignored targets. Its gradient comes from those ops.
Tensor cross_entropy_composed(const Tensor& logits, const IntTensor& target, const Tensor& weight, int64_t ignore_index,
                              Reduction reduction, float label_smoothing) {
  const int64_t C = logits.size(1);
  const detail::AxisView v = detail::axis_view(logits.shape(), 1);  // outer = N, n = C, inner = d1·d2·…
  IntTensor index = IntTensor::empty(Shape{target.numel()});        // where each target's log-probability sits
  IntTensor ignored = IntTensor::empty(target.shape());             // 1 where target == ignore_index
  Tensor w_target = zeros(target.shape());                          // w[t], 0 where ignored
  double total_weight = 0;
  const int64_t* t = target.data();
  for (int64_t n = 0; n < v.outer; ++n) {
    for (int64_t j = 0; j < v.inner; ++j) {
      const int64_t i = n * v.inner + j;
      const bool skip = t[i] == ignore_index;
      ignored.data()[i] = skip ? 1 : 0;
      index.data()[i] = (n * C + (skip ? 0 : t[i])) * v.inner + j;  // class 0 when ignored: filled with 0 below
      if (skip) continue;
      w_target.data()[i] = weight.defined() ? weight.data()[t[i]] : 1.0f;
      total_weight += w_target.data()[i];
    }
  }
  Tensor logp = log_softmax(logits, 1);                                                       // (N, C, d1, …)
  Tensor picked = reshape(index_select(reshape(logp, Shape{-1}), 0, index), target.shape());  // (N, d1, …)
  Tensor loss = masked_fill(-picked * w_target, ignored, 0.0f);
  if (label_smoothing > 0) {
    std::vector<int64_t> at_class(static_cast<size_t>(logits.dim()), 1);  // (1, C, 1, …)
    at_class[1] = C;
    Tensor weighted = weight.defined() ? logp * reshape(weight, Shape(at_class)) : logp;
    Tensor smooth = masked_fill(-sum(weighted, 1), ignored, 0.0f);  // (N, d1, …)
    loss = loss * (1 - label_smoothing) + smooth * (label_smoothing / static_cast<float>(C));
  }
  if (reduction == Reduction::None) return loss;
  if (reduction == Reduction::Sum) return sum(loss);
  return sum(loss) / static_cast<float>(total_weight);
}

}  // namespace

TEST_CASE("ops/cross_entropy") {
  SUBCASE("against torch") {
    // (N, C), (N, C, d1, …) and unbatched (C); ignore_index, per-class weight,
    // label_smoothing, logits of ±1e4. Each case holds PyTorch's arguments:
    // target, weight when there is one (torch's, not differentiated),
    // ignore_index, reduction and label_smoothing.
    for (const std::string& name : reference_cases("functional", "cross_entropy/")) {
      SUBCASE(name.c_str()) {
        check_against_torch("functional", name, [](const Inputs& x, const RefCase& c) {
          Tensor weight = c.has("weight") ? c.tensor("weight") : Tensor();
          return cross_entropy(x[0], c.ints_at("target"), weight, int_arg(c, "ignore_index"), reduction_arg(c),
                               float_arg(c, "label_smoothing"));
        });
      }
    }
  }

  SUBCASE("equals the composition of log_softmax, index_select, masked_fill and sum") {
    // Both take logp from the same log_softmax kernel code; they differ in the
    // order of the smoothing sum and of the reduction (a few u relative to the
    // sums of magnitudes, which are O(C·|logp|) here), and the gradient in
    // rounding a·p - (1-ε)·w[t] in one expression or in two ops. rtol 1e-5 is
    // ~100u: C·u for C ≤ 37 with room for the reduction; atol 1e-6 covers
    // gradients that cancel to 0.
    Generator gen(21);
    struct Case {
      Shape logits;
      IntTensor target;
      bool weighted;
      float smoothing;
    };
    const Case cases[] = {
        {{6, 5}, int_tensor({0, 4, -100, 2, 1, 3}), false, 0.0f},
        {{6, 37}, int_tensor({0, 36, 5, -100, 17, 1}), true, 0.0f},
        {{6, 37}, int_tensor({0, 36, 5, -100, 17, 1}), true, 0.2f},
        {{4, 5}, int_tensor({-100, -100, 1, 2}), false, 0.5f},
        {{2, 3, 4}, int_tensor({0, 2, -100, 1, 2, 0, -100, 1}, {2, 4}), true, 0.1f},
        {{2, 3, 2, 2}, int_tensor({0, 2, 1, 1, 2, 0, -100, 1}, {2, 2, 2}), false, 0.0f},
    };
    for (const Case& c : cases) {
      const int64_t C = c.logits[1];
      Tensor weight = c.weighted ? rand({C}, gen) + 0.5f : Tensor();
      for (Reduction r : {Reduction::None, Reduction::Mean, Reduction::Sum}) {
        SUBCASE(fmt::format("{} ε {} weighted {} reduction {}", c.logits, c.smoothing, c.weighted, static_cast<int>(r))
                    .c_str()) {
          Tensor x1 = randn(c.logits, gen).requires_grad_();
          Tensor x2 = Tensor(x1.to_vector(), c.logits).requires_grad_();
          Tensor y1 = cross_entropy(x1, c.target, weight, -100, r, c.smoothing);
          Tensor y2 = cross_entropy_composed(x2, c.target, weight, -100, r, c.smoothing);
          check_close(y1, y2.detach(), "loss", 1e-5f, 1e-6f);
          Tensor dy = randn(y1.shape(), gen);
          y1.backward(dy);
          y2.backward(dy);
          check_close(x1.grad(), x2.grad(), "dlogits", 1e-5f, 1e-6f);
        }
      }
    }
  }

  SUBCASE("label smoothing of uniform logits") {
    // Mathematics: logp = -log C everywhere, so both terms are log C (the
    // smoothing term averages -logp over C classes): loss = log C for any ε.
    Tensor loss = cross_entropy(zeros({2, 4}), int_tensor({0, 3}), Tensor(), -100, Reduction::None, 0.25f);
    check_close(loss, full({2}, std::log(4.0f)), "loss");
  }

  SUBCASE("a weight of ones changes nothing") {
    // Mathematics: w = 1 makes every term and the Mean's divisor what they are without weight.
    Generator gen(3);
    Tensor logits = randn({5, 3}, gen);
    IntTensor target = int_tensor({0, 2, -100, 1, 1});
    check_close(cross_entropy(logits, target, ones({3}), -100, Reduction::Mean, 0.2f),
                cross_entropy(logits, target, Tensor(), -100, Reduction::Mean, 0.2f), "mean");
  }

  SUBCASE("uniform logits give log C") {
    // Mathematics: softmax of equal logits is 1/C, so each loss is log C = log 5.
    Tensor loss = cross_entropy(zeros({3, 5}), int_tensor({0, 4, 2}), Tensor(), -100, Reduction::None);
    check_close(loss, full({3}, std::log(5.0f)), "loss");
  }

  SUBCASE("stable for logits of ±1e4") {
    // Mathematics: for a row (1e4, -1e4, 0), log_softmax = (0, -2e4, -1e4) up to
    // e^-1e4 (which is 0 in float), so targets 0, 1, 2 lose 0, 2e4, 1e4: mean 1e4.
    // The gradient of the mean is (softmax - onehot)/3 with softmax = (1, 0, 0).
    Tensor logits = tensor({1e4f, -1e4f, 0, 1e4f, -1e4f, 0, 1e4f, -1e4f, 0}, {3, 3}).requires_grad_();
    Tensor loss = cross_entropy(logits, int_tensor({0, 1, 2}));
    CHECK(loss.item() == doctest::Approx(1e4));
    loss.backward();
    const float t = 1.0f / 3;
    check_close(logits.grad(), tensor({0, 0, 0, t, -t, 0, t, 0, -t}, {3, 3}), "dlogits", 1e-5f, 1e-6f);
  }

  SUBCASE("every target ignored") {
    // As PyTorch: Mean divides 0 by 0 targets (NaN), Sum is 0, None is all zeros.
    Tensor logits = randn({2, 4});
    IntTensor target = int_tensor({-100, -100});
    CHECK(std::isnan(cross_entropy(logits, target).item()));
    CHECK(cross_entropy(logits, target, Tensor(), -100, Reduction::Sum).item() == 0);
    check_close(cross_entropy(logits, target, Tensor(), -100, Reduction::None), zeros({2}), "none");
    // With weight and smoothing too: ignored targets add to neither term.
    CHECK(cross_entropy(logits, target, ones({4}), -100, Reduction::Sum, 0.5f).item() == 0);
  }

  SUBCASE("gradcheck") {
    Generator gen(12);
    auto r = gradcheck(
        [](const Inputs& in) {
          return cross_entropy(in[0], int_tensor({2, 0, 4}));
        },
        {randn({3, 5}, gen)});
    CHECK_MESSAGE(r.ok, r.message);
    r = gradcheck(
        [](const Inputs& in) {
          return cross_entropy(in[0], int_tensor({1, -100, 0, 3}));
        },
        {randn({4, 5}, gen)});
    CHECK_MESSAGE(r.ok, r.message);
    r = gradcheck(
        [](const Inputs& in) {
          return cross_entropy(in[0], int_tensor({0, 2, 1, 1, 2, 0, 0, 1}, {2, 4}), Tensor(), -100, Reduction::Sum);
        },
        {randn({2, 3, 4}, gen)});
    CHECK_MESSAGE(r.ok, r.message);
    // weight, ignore_index and label_smoothing at once, on (N, C, d1).
    r = gradcheck(
        [](const Inputs& in) {
          return cross_entropy(in[0], int_tensor({0, 2, -100, 1, 2, 0, -100, 1}, {2, 4}), tensor({0.5f, 2.0f, 1.5f}),
                               -100, Reduction::Mean, 0.1f);
        },
        {randn({2, 3, 4}, gen)});
    CHECK_MESSAGE(r.ok, r.message);
  }

  SUBCASE("errors") {
    Tensor logits = zeros({4, 5});
    CHECK_THROWS_WITH_AS(
        cross_entropy(logits, int_tensor({0, 1, 2})),
        doctest::Contains("cross_entropy: target shape (3) does not match logits (4, 5): expected (4)"), qkv::Error);
    CHECK_THROWS_WITH_AS(cross_entropy(zeros({2, 3, 4}), int_tensor({0, 1, 2, 0, 1, 2}, {2, 3})),
                         doctest::Contains("target shape (2, 3) does not match logits (2, 3, 4): expected (2, 4)"),
                         qkv::Error);
    CHECK_THROWS_WITH_AS(cross_entropy(logits, int_tensor({0, 1, 5, 2})),
                         doctest::Contains("cross_entropy: target 5 out of range for 5 classes"), qkv::Error);
    CHECK_THROWS_WITH_AS(cross_entropy(logits, int_tensor({0, -1, 2, 2})),
                         doctest::Contains("cross_entropy: target -1 out of range for 5 classes"), qkv::Error);
    CHECK_THROWS_WITH_AS(cross_entropy(logits, int_tensor({0, -100, 2, 2}), Tensor(), 3),
                         doctest::Contains("target -100 out of range for 5 classes (at index 1 of target (4))"),
                         qkv::Error);
    CHECK_THROWS_WITH_AS(cross_entropy(logits, int_tensor({0, 1, 2, 3}), ones({4})),
                         doctest::Contains("cross_entropy: weight (4) should be (5), one per class of logits (4, 5)"),
                         qkv::Error);
    CHECK_THROWS_WITH_AS(cross_entropy(zeros({2, 3, 4}), int_tensor({0, 1, 2, 0, 1, 2, 0, 1}, {2, 4}), ones({1, 3})),
                         doctest::Contains("cross_entropy: weight (1, 3) should be (3)"), qkv::Error);
    CHECK_THROWS_WITH_AS(cross_entropy(logits, int_tensor({0, 1, 2, 3}), Tensor(), -100, Reduction::Mean, 1.5f),
                         doctest::Contains("cross_entropy: label_smoothing must be between 0.0 and 1.0, got 1.5"),
                         qkv::Error);
    CHECK_THROWS_WITH_AS(cross_entropy(logits, int_tensor({0, 1, 2, 3}), Tensor(), -100, Reduction::Mean, -0.1f),
                         doctest::Contains("label_smoothing must be between 0.0 and 1.0, got -0.1"), qkv::Error);
    CHECK_THROWS_WITH_AS(cross_entropy(zeros({5}), int_tensor({1})),
                         doctest::Contains("cross_entropy: target shape (1) does not match logits (5): expected ()"),
                         qkv::Error);
    CHECK_THROWS_WITH_AS(cross_entropy(scalar_tensor(1), int_tensor({1})), doctest::Contains("cross_entropy: logits"),
                         qkv::Error);
    CHECK_THROWS_WITH_AS(cross_entropy(Tensor(), int_tensor({1})),
                         doctest::Contains("cross_entropy: logits is an undefined tensor"), qkv::Error);
    CHECK_THROWS_WITH_AS(cross_entropy(logits, IntTensor()),
                         doctest::Contains("cross_entropy: target is an undefined tensor"), qkv::Error);
    CHECK_THROWS_WITH_AS(cross_entropy(zeros({4, 0}), int_tensor({0, 0, 0, 0})),
                         doctest::Contains("cross_entropy: logits (4, 0) have no classes (C = 0)"), qkv::Error);
    CHECK_THROWS_WITH_AS(cross_entropy(zeros({0}), IntTensor::empty(Shape{})),
                         doctest::Contains("cross_entropy: logits (0) have no classes (C = 0)"), qkv::Error);
    CHECK_THROWS_WITH_AS(cross_entropy(logits, int_tensor({0, 1, 2, 3}), Tensor(), -100, static_cast<Reduction>(7)),
                         doctest::Contains("cross_entropy: reduction 7 is not Reduction::None, Mean or Sum"),
                         qkv::Error);
  }
}

// --- fused_gru_cell -------------------------------------------------------------------
// (its gradcheck, errors and the comparison with the composed step are in tests/nn/test_rnn.cpp)

TEST_CASE("ops/fused_gru_cell against torch (torch.nn.GRUCell's equations)") {
  for (const std::string& name : reference_cases("functional", "fused_gru_cell/")) {
    SUBCASE(name.c_str()) {
      check_against_torch("functional", name,
                          [](const Inputs& x, const RefCase&) { return fused_gru_cell(x[0], x[1], x[2]); });
    }
  }
}

// --- mse_loss ----------------------------------------------------------------------

TEST_CASE("ops/mse_loss") {
  SUBCASE("against torch") {
    for (const std::string& name : reference_cases("functional", "mse_loss/")) {
      SUBCASE(name.c_str()) {
        check_against_torch("functional", name,
                            [](const Inputs& x, const RefCase& c) { return mse_loss(x[0], x[1], reduction_arg(c)); });
      }
    }
  }

  SUBCASE("gradcheck") {
    Generator gen(13);
    auto r =
        gradcheck([](const Inputs& in) { return mse_loss(in[0], in[1]); }, {randn({3, 7}, gen), randn({3, 7}, gen)});
    CHECK_MESSAGE(r.ok, r.message);
    r = gradcheck([](const Inputs& in) { return mse_loss(in[0], in[1], Reduction::None); },
                  {randn({5}, gen), randn({5}, gen)});
    CHECK_MESSAGE(r.ok, r.message);
  }

  SUBCASE("errors") {
    CHECK_THROWS_WITH_AS(mse_loss(zeros({2, 3}), zeros({3, 2})),
                         doctest::Contains("mse_loss: x (2, 3) and target (3, 2) have different shapes"), qkv::Error);
    CHECK_THROWS_WITH_AS(mse_loss(zeros({2, 3}), zeros({3})), doctest::Contains("mse_loss:"), qkv::Error);
  }
}

// --- cosine_similarity -------------------------------------------------------------

TEST_CASE("ops/cosine_similarity") {
  SUBCASE("against torch") {
    for (const std::string& name : reference_cases("functional", "cosine_similarity/")) {
      SUBCASE(name.c_str()) {
        const RefCase& c = qkv::test::reference("functional", name);
        if (!c.has("grad_out")) {
          // Values only (tiny_norm: a norm below eps is clamped on its own): qkv's
          // gradient there differs from PyTorch's on purpose (see functional.cpp).
          check_close(cosine_similarity(c.tensor("x0"), c.tensor("x1"), int_arg(c, "dim"), float_arg(c, "eps")),
                      c.tensor("out"), "out");
        } else {
          check_against_torch("functional", name, [](const Inputs& x, const RefCase& rc) {
            return cosine_similarity(x[0], x[1], int_arg(rc, "dim"), float_arg(rc, "eps"));
          });
        }
      }
    }
  }

  SUBCASE("parallel, opposite, orthogonal, zero") {
    // Mathematics: cos = 1, -1, 0, and 0 for a zero vector (0 / eps).
    Tensor a = tensor({1, 2, 1, 2, 1, 0, 0, 0}, {4, 2});
    Tensor b = tensor({2, 4, -3, -6, 0, 5, 1, 1}, {4, 2});
    check_close(cosine_similarity(a, b), tensor({1, -1, 0, 0}), "cos", 1e-6f, 1e-6f);
  }

  SUBCASE("a zero vector has a finite gradient") {
    // Mathematics: x1 / eps · x2/‖x2‖ summed: d/dx1 = x2 / (eps·‖x2‖) = (0.6, 0.8) / 1e-8.
    Tensor a = zeros({1, 2}).requires_grad_();
    Tensor b = tensor({3, 4}, {1, 2}).requires_grad_();
    cosine_similarity(a, b).backward(ones({1}));
    check_close(a.grad(), tensor({0.6e8f, 0.8e8f}, {1, 2}), "dx1", 1e-5f);
    check_close(b.grad(), zeros({1, 2}), "dx2");
  }

  SUBCASE("gradcheck") {
    Generator gen(14);
    auto f = [](int64_t dim) { return [dim](const Inputs& in) { return cosine_similarity(in[0], in[1], dim); }; };
    auto r = gradcheck(f(1), {randn({3, 5}, gen), randn({3, 5}, gen)});
    CHECK_MESSAGE(r.ok, r.message);
    r = gradcheck(f(-1), {randn({2, 1, 7}, gen), randn({3, 7}, gen)});
    CHECK_MESSAGE(r.ok, r.message);
    r = gradcheck(f(0), {randn({1, 3}, gen), randn({5, 3}, gen)});  // x1 repeated along dim
    CHECK_MESSAGE(r.ok, r.message);
  }

  SUBCASE("errors") {
    CHECK_THROWS_WITH_AS(cosine_similarity(zeros({2, 3}), zeros({4, 3})), doctest::Contains("cosine_similarity"),
                         qkv::Error);
    CHECK_THROWS_WITH_AS(cosine_similarity(zeros({2, 3}), zeros({2, 3}), 2), doctest::Contains("cosine_similarity"),
                         qkv::Error);
    CHECK_THROWS_WITH_AS(cosine_similarity(zeros({5}), zeros({5})), doctest::Contains("cosine_similarity"),
                         qkv::Error);  // dim 1 of a 1-D input, as in PyTorch
  }
}

// --- normalize -----------------------------------------------------------------------

TEST_CASE("ops/normalize") {
  SUBCASE("against torch") {
    // p = 1, 2, 3 and inf; zero_row has gradient dout / eps.
    for (const std::string& name : reference_cases("functional", "normalize/")) {
      SUBCASE(name.c_str()) {
        check_against_torch("functional", name, [](const Inputs& x, const RefCase& c) {
          return normalize(x[0], float_arg(c, "p"), int_arg(c, "dim"));
        });
      }
    }
  }

  SUBCASE("(3, 4) -> (0.6, 0.8)") {
    // Mathematics: ‖(3, 4)‖ = 5; p = 1: ‖(3, -1)‖₁ = 4.
    check_close(normalize(tensor({3, 4}, {1, 2})), tensor({0.6f, 0.8f}, {1, 2}), "p=2", 1e-6f, 1e-7f);
    check_close(normalize(tensor({3, -1}), 1, 0), tensor({0.75f, -0.25f}), "p=1", 1e-6f, 1e-7f);
  }

  SUBCASE("gradcheck") {
    Generator gen(15);
    auto f = [](float p, int64_t dim) { return [p, dim](const Inputs& in) { return normalize(in[0], p, dim); }; };
    auto r = gradcheck(f(2, 1), {randn({3, 5}, gen)});
    CHECK_MESSAGE(r.ok, r.message);
    r = gradcheck(f(2, -1), {randn({2, 3, 7}, gen)});
    CHECK_MESSAGE(r.ok, r.message);
    r = gradcheck(f(3, 0), {randn({5, 3}, gen)});
    CHECK_MESSAGE(r.ok, r.message);
  }

  SUBCASE("errors") {
    CHECK_THROWS_WITH_AS(normalize(ones({2, 3}), 0), doctest::Contains("normalize: p must be positive (or inf), got 0"),
                         qkv::Error);
    CHECK_THROWS_WITH_AS(normalize(ones({2, 3}), -2), doctest::Contains("got -2"), qkv::Error);
    CHECK_THROWS_WITH_AS(normalize(ones({2, 3}), std::numeric_limits<float>::quiet_NaN()),
                         doctest::Contains("normalize: p"), qkv::Error);
    CHECK_THROWS_WITH_AS(normalize(ones({2, 3}), 2, 2), doctest::Contains("normalize"), qkv::Error);
  }
}
