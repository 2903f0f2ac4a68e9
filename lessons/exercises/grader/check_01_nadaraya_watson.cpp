// The checks of exercise 01, Nadaraya–Watson weights and prediction.
//   expected:  weights = softmax(-(x - xᵢ)²/2, over the keys), prediction = weights · values
//   cases:     lesson 02's shapes, one key, one query, a query far from every key
//              (exp underflows there: only a max-subtracted softmax stays finite),
//              PyTorch's values and gradients, and gradcheck
#include "01_nadaraya_watson.hpp"
#include "grader.hpp"

#include <algorithm>
#include <cmath>

using namespace qkv;
using namespace qkv::exercises;

namespace {

// -(x - xᵢ)²/2 for every query and key: (Q, K). `sign` and `half` make the mistakes.
Tensor kernel_logits(const Tensor& queries, const Tensor& keys, float scale = -0.5f) {
  Tensor diff = queries.reshape({queries.size(0), 1}) - keys.reshape({1, keys.size(0)});  // (Q, K)
  return diff * diff * scale;
}

void grade_case(Grader& g, const std::string& name, const Tensor& q, const Tensor& k, const Tensor& v) {
  g.begin_case(name, fmt::format("queries {}, keys {}, values {}", q.shape(), k.shape(), v.shape()));
  NadarayaWatson got = g.call({{"queries", q}, {"keys", k}, {"values", v}}, [&] { return nadaraya_watson(q, k, v); });
  Tensor weights = kernel_logits(q, k).softmax(-1);  // (Q, K)
  auto explain_weight = [&](const std::vector<int64_t>& i) {
    const float x = q.at({i[0]}), xi = k.at({i[1]});
    return fmt::format("query x = {:.4f}, key xᵢ = {:.4f} (x - xᵢ = {:.4f}); all keys {}", x, xi, x - xi, values(k));
  };
  g.check(
      {"weights", "softmax(-(x - xᵢ)²/2) over the keys, (Q, K)"}, got.weights, weights, explain_weight,
      {{"softmax over the wrong dimension",
        "each query's weights run along the keys, so each row must sum to 1: softmax(…, -1), not over dim 0",
        [&] { return kernel_logits(q, k).softmax(0); }},
       {"no 1/2 in the Gaussian kernel", "K(u) = exp(-u²/2): the exponent is -(x - xᵢ)²/2, not -(x - xᵢ)²",
        [&] { return kernel_logits(q, k, -1.0f).softmax(-1); }},
       {"the sign of the exponent flipped",
        "a key close to the query must weigh more: softmax(-(x - xᵢ)²/2), with the minus",
        [&] { return kernel_logits(q, k, 0.5f).softmax(-1); }},
       {"queries and keys swapped", "the rows are the queries (Q, K): queries.reshape({Q, 1}) - keys.reshape({1, K})",
        [&] { return kernel_logits(k, q).softmax(-1); }},
       {"exp divided by its sum without subtracting the max",
        "for a query far from every key all exp(-(x - xᵢ)²/2) underflow to 0, and 0/0 is NaN; softmax subtracts "
        "the row's max first",
        [&] {
          Tensor e = kernel_logits(q, k).exp();
          return e / e.sum(-1, true);
        }}});
  auto explain_prediction = [&](const std::vector<int64_t>& i) {
    return fmt::format("query x = {:.4f}, its weights {}, the values {}", q.at({i[0]}), values(at(weights, {i[0]})),
                       values(v));
  };
  g.check({"prediction", "weights · values, (Q)"}, got.prediction, weights.matmul(v), explain_prediction,
          {{"average pooling (lesson 01)", "the prediction weighs each value by its weight: weights.matmul(values)",
            [&] { return v.mean().expand({q.size(0)}); }}});
}

}  // namespace

int main(int argc, char** argv) {
  return grade(1, argc, argv, [](Grader& g) {
    g.forbid({{"qkv::nn::", "",
               "exercise 1 is the Nadaraya–Watson pooling itself: write it with qkv's ops, not a layer of qkv::nn"}});
    Generator gen(g.seed());
    // Lesson 02's shapes: 50 sorted keys in [0, 5), values y = 2 sin(x) + x^0.8 + noise, queries 0, 0.1, …, 4.9.
    std::vector<float> train_x = rand({50}, gen).mul(5.0f).to_vector(), train_y;
    std::sort(train_x.begin(), train_x.end());
    for (float xi : train_x) train_y.push_back(2 * std::sin(xi) + std::pow(xi, 0.8f) + gen.normal(0, 0.5f));
    grade_case(g, "lesson 02's shapes", arange(50.0f).mul(0.1f), tensor(train_x), tensor(train_y));
    grade_case(g, "one key", randn({4}, gen), randn({1}, gen), randn({1}, gen));
    grade_case(g, "one query", randn({1}, gen), randn({6}, gen), randn({6}, gen));
    grade_case(g, "a query far from every key", tensor({0.5f, 40.0f}), rand({5}, gen).mul(5.0f), randn({5}, gen));

    for (const TorchCase& c : g.torch_cases("01/")) {
      g.begin_case("PyTorch: " + c.name, fmt::format("queries {}, keys {}", c.f("x0").shape(), c.f("x1").shape()));
      const bool prediction = c.name.find("/prediction/") != std::string::npos;
      g.check_torch(
          {prediction ? "prediction" : "weights", "against PyTorch, in float64"},
          [prediction](const std::vector<Tensor>& x) {
            NadarayaWatson r = nadaraya_watson(x[0], x[1], x[2]);
            return prediction ? r.prediction : r.weights;
          },
          c);
    }

    g.begin_case("gradcheck", "queries (3), keys (4), values (4)");
    g.check_gradients("of the prediction with respect to queries, keys and values",
                      [](const std::vector<Tensor>& x) { return nadaraya_watson(x[0], x[1], x[2]).prediction; },
                      {randn({3}, gen), randn({4}, gen), randn({4}, gen)});
  });
}
