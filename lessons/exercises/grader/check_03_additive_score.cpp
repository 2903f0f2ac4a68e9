// The checks of exercise 03, the additive attention score.
//   expected:  the formula w_vᵀ tanh(W_q q + W_k k) written with qkv's ops; the
//              softmax of the learner's scores against qkv's nn::AdditiveAttention
//              given the same weights; PyTorch's values and gradients
//   cases:     d2l's example, Dq = Dk = H, one query and one key in a batch of 1,
//              H = 1, PyTorch's cases, and gradcheck
#include "03_additive_score.hpp"
#include "grader.hpp"

using namespace qkv;
using namespace qkv::exercises;

namespace {

// The score with the mistakes a learner makes, one switch each.
struct Variant {
  bool transpose_W = true, tanh = true, swap = false, tanh_last = false, sum = false;
};

Tensor variant(const Tensor& queries, const Tensor& keys, const Tensor& W_q, const Tensor& W_k, const Tensor& w_v,
               Variant how) {
  Tensor q = queries.matmul(how.transpose_W ? W_q.transpose(0, 1) : W_q);                     // (B, Q, H)
  Tensor k = keys.matmul(how.transpose_W ? W_k.transpose(0, 1) : W_k);                        // (B, K, H)
  Tensor sum = how.swap ? q.unsqueeze(1) + k.unsqueeze(2) : q.unsqueeze(2) + k.unsqueeze(1);  // (B, Q, K, H)
  if (how.tanh_last) return sum.matmul(w_v.transpose(0, 1)).squeeze(-1).tanh();
  Tensor features = how.tanh ? sum.tanh() : sum;
  if (how.sum) return features.sum(-1);
  return features.matmul(w_v.transpose(0, 1)).squeeze(-1);  // (B, Q, K)
}

void grade_case(Grader& g, const std::string& name, const Tensor& queries, const Tensor& keys, int64_t H,
                Generator& gen) {
  const int64_t Dq = queries.size(-1), Dk = keys.size(-1);
  nn::AdditiveAttention layer(Dk, Dq, H, 0.0f, gen);
  layer.eval();
  const Tensor W_q = layer.W_q->weight.detach(), W_k = layer.W_k->weight.detach(), w_v = layer.w_v->weight.detach();
  g.begin_case(name, fmt::format("queries {}, keys {}, W_q {}, W_k {}, w_v {}", queries.shape(), keys.shape(),
                                 W_q.shape(), W_k.shape(), w_v.shape()));
  Tensor got = g.call({{"queries", queries}, {"keys", keys}, {"W_q", W_q}, {"W_k", W_k}, {"w_v", w_v}},
                      [&] { return additive_score(queries, keys, W_q, W_k, w_v); });
  auto explain = [&](const std::vector<int64_t>& i) {
    return fmt::format("query {} of example {} = {}, key {} = {}, H = {}", i[1], i[0],
                       values(at(queries, {i[0], i[1]})), i[2], values(at(keys, {i[0], i[2]})), H);
  };
  auto mistake = [&](Variant how) { return [=] { return variant(queries, keys, W_q, W_k, w_v, how); }; };
  g.check({"scores", "w_vᵀ tanh(W_q q + W_k k) for every query and key, (B, Q, K)"}, got,
          variant(queries, keys, W_q, W_k, w_v, {}), explain,
          {{"W_q and W_k not transposed",
            "a Linear's weight is (out, in) = (H, Dq): queries (B, Q, Dq) times W_qᵀ (Dq, H), so W_q.transpose(0, 1)",
            mistake({.transpose_W = false})},
           {"no tanh", "the sum W_q q + W_k k goes through tanh before w_v", mistake({.tanh = false})},
           {"queries and keys swapped in the broadcast",
            "the queries run along dim 1 and the keys along dim 2: q.unsqueeze(2) + k.unsqueeze(1) -> (B, Q, K, H)",
            mistake({.swap = true})},
           {"tanh after w_v", "w_vᵀ tanh(…): tanh first, on the H features, then w_v", mistake({.tanh_last = true})},
           {"the features summed instead of weighted by w_v",
            "w_v is a learned (1, H) weight vector: features.matmul(w_v.transpose(0, 1)), not features.sum(-1)",
            mistake({.sum = true})}});
  // The library's layer computes the same scores inside its forward; its weights are their softmax.
  layer(queries, keys, zeros({keys.size(0), keys.size(1), 1}));
  g.check({"softmax(scores)", "your scores' softmax against nn::AdditiveAttention's attention_weights"},
          got.softmax(-1), layer.attention_weights);
}

}  // namespace

int main(int argc, char** argv) {
  return grade(3, argc, argv, [](Grader& g) {
    g.forbid({{"qkv::nn::AdditiveAttention::", "",
               "exercise 3 is the additive score itself: not through nn::AdditiveAttention"}});
    Generator gen(g.seed());
    // Dq = Dk = H first: there even W not transposed has a shape, and can be named.
    grade_case(g, "Dq = Dk = H", randn({2, 3, 4}, gen), randn({2, 5, 4}, gen), 4, gen);
    // d2l 11.3.3: queries (2, 1, 20), keys (2, 10, 2), 8 hidden units.
    grade_case(g, "d2l's example", randn({2, 1, 20}, gen), ones({2, 10, 2}).add(randn({2, 10, 2}, gen)), 8, gen);
    grade_case(g, "a batch of 1, one query, one key", randn({1, 1, 3}, gen), randn({1, 1, 2}, gen), 5, gen);
    grade_case(g, "H = 1", randn({2, 2, 3}, gen), randn({2, 4, 3}, gen), 1, gen);

    for (const TorchCase& c : g.torch_cases("03/")) {
      g.begin_case("PyTorch: " + c.name,
                   fmt::format("queries {}, keys {}, W_q {}", c.f("x0").shape(), c.f("x1").shape(), c.f("x2").shape()));
      g.check_torch(
          {"scores", "against w_vᵀ tanh(W_q q + W_k k) in PyTorch, float64"},
          [](const std::vector<Tensor>& x) { return additive_score(x[0], x[1], x[2], x[3], x[4]); }, c);
    }

    g.begin_case("gradcheck", "queries (2, 2, 3), keys (2, 3, 2), H = 4");
    g.check_gradients(
        "of the scores with respect to queries, keys, W_q, W_k and w_v",
        [](const std::vector<Tensor>& x) { return additive_score(x[0], x[1], x[2], x[3], x[4]); },
        {randn({2, 2, 3}, gen), randn({2, 3, 2}, gen), randn({4, 3}, gen), randn({4, 2}, gen), randn({1, 4}, gen)});
  });
}
