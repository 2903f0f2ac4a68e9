// The checks of exercise 06, single-head self-attention (document 002).
//   expected:  the scores, probabilities and output of the module's own Linear
//              layers composed with qkv's ops (lesson 07's forward); PyTorch's
//              values and gradients of the same forward
//   cases:     lesson 07's sentences (B 2, T 3, D 4), T = D (where Q K has a
//              shape), one word, a batch of 1 with D = 1, PyTorch's cases, gradcheck
#include <cmath>

#include "06_self_attention.hpp"
#include "grader.hpp"

using namespace qkv;
using namespace qkv::exercises;

namespace {

struct Variant {
  bool transpose = true, scale = false, swap = false, use_v = true;
  int64_t dim = -1;
};

SelfAttentionSteps variant(const SelfAttention& m, const Tensor& X, Variant how) {
  Tensor Q = (*m.QueryW)(X), K = (*m.KeyW)(X), V = how.use_v ? (*m.ValueW)(X) : X;  // (B, T, D)
  if (how.swap) std::swap(Q, K);
  Tensor scores = Q.matmul(how.transpose ? K.transpose(1, 2) : K);  // (B, T, T)
  if (how.scale) scores = scores / std::sqrt(static_cast<float>(X.size(-1)));
  Tensor probs = scores.softmax(how.dim);
  return {scores, probs, probs.matmul(V)};
}

void grade_case(Grader& g, const std::string& name, int64_t B, int64_t T, int64_t D, Generator& gen) {
  SelfAttention m(D, gen);
  Tensor X = randn({B, T, D}, gen);
  g.begin_case(name, fmt::format("sents {} (B, T, D), SelfAttention({})", X.shape(), D));
  SelfAttentionSteps got = g.call(with_parameters({{"sents", X}}, m, "SelfAttention"), [&] { return m.forward(X); });
  SelfAttentionSteps want = variant(m, X, {});
  auto mistakes = [&](Tensor SelfAttentionSteps::*step) {
    auto run = [&, step](Variant how) { return [=, &m] { return variant(m, X, how).*step; }; };
    return std::vector<Mistake>{
        {"K not transposed", "the scores are Q Kᵀ: Q.matmul(K.transpose(1, 2)), (B, T, D) x (B, D, T)",
         run({.transpose = false})},
        {"scaled by 1/√D", "the notes' SelfAttention does not scale its scores (lesson 11's Transformer does)",
         run({.scale = true})},
        {"Q and K swapped", "the scores are Q Kᵀ, row i for query i; K Qᵀ is its transpose", run({.swap = true})},
        {"softmax over the wrong dimension", "each query's row sums to 1: softmax over the last dim, -1",
         run({.dim = 1})},
        {"the sentences used as V", "the output weighs V = ValueW(sents), not the sentences themselves",
         run({.use_v = false})},
    };
  };
  auto explain = [&](const std::vector<int64_t>& i) {
    return fmt::format("sentence {}, query word {}: its vector {}", i[0], i[1], values(at(X, {i[0], i[1]})));
  };
  g.check({"scores", "Q Kᵀ, (B, T, T)"}, got.scores, want.scores, explain, mistakes(&SelfAttentionSteps::scores));
  auto explain_probs = [&](const std::vector<int64_t>& i) {
    return fmt::format("sentence {}, query word {}: its row of scores {}", i[0], i[1],
                       values(at(want.scores, {i[0], i[1]})));
  };
  auto explain_output = [&](const std::vector<int64_t>& i) {
    NoGradGuard no_grad;
    const Tensor V = (*m.ValueW)(X).transpose(1, 2);  // (B, D, T): feature d of V, word by word
    return fmt::format("sentence {}, query word {}: its weights {}, feature {} of V over the words {}", i[0], i[1],
                       values(at(want.probs, {i[0], i[1]})), i[2], values(at(V, {i[0], i[2]})));
  };
  g.check({"probs", "softmax(scores, -1), (B, T, T)"}, got.probs, want.probs, explain_probs,
          mistakes(&SelfAttentionSteps::probs));
  g.check({"output", "probs V, (B, T, D)"}, got.output, want.output, explain_output,
          mistakes(&SelfAttentionSteps::output));
}

void load(SelfAttention& m, const std::vector<Tensor>& x) {  // x1 … x6: QueryW, KeyW, ValueW weights and biases
  m.QueryW->weight = x[1];
  m.QueryW->bias = x[2];
  m.KeyW->weight = x[3];
  m.KeyW->bias = x[4];
  m.ValueW->weight = x[5];
  m.ValueW->bias = x[6];
}

}  // namespace

int main(int argc, char** argv) {
  return grade(6, argc, argv, [](Grader& g) {
    g.forbid({{"qkv::nn::DotProductAttention::", "",
               "exercise 6 is single-head self-attention itself: not through qkv's attention layers"},
              {"qkv::nn::MultiHeadAttention::", "",
               "exercise 6 is single-head self-attention itself: not through qkv's attention layers"}});
    Generator gen(g.seed());
    grade_case(g, "T = D", 2, 4, 4, gen);
    grade_case(g, "lesson 07's shapes", 2, 3, 4, gen);
    grade_case(g, "one word", 2, 1, 3, gen);
    grade_case(g, "a batch of 1, D = 1", 1, 5, 1, gen);

    for (const TorchCase& c : g.torch_cases("06/")) {
      const std::string step = c.name.substr(3, c.name.find('/', 3) - 3);
      g.begin_case("PyTorch: " + c.name, fmt::format("sents {}", c.f("x0").shape()));
      g.check_torch(
          {step, "against the same forward in PyTorch, float64"},
          [&](const std::vector<Tensor>& x) {
            SelfAttention m(x[0].size(-1), gen);
            load(m, x);
            SelfAttentionSteps s = m.forward(x[0]);
            return step == "probs" ? s.probs : s.output;
          },
          c);
    }

    g.begin_case("gradcheck", "sents (2, 3, 2) and the six parameters");
    SelfAttention m(2, gen);
    g.check_gradients("of the output with respect to the sentences and the parameters",
                      [&](const std::vector<Tensor>& x) {
                        load(m, x);
                        return m.forward(x[0]).output;
                      },
                      {randn({2, 3, 2}, gen), m.QueryW->weight, m.QueryW->bias, m.KeyW->weight, m.KeyW->bias,
                       m.ValueW->weight, m.ValueW->bias});
  });
}
