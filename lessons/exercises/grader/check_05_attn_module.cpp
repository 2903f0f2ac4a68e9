// The checks of exercise 05, the Attn module's forward (000 §3.3).
//   expected:  the three steps written with qkv's ops (lesson 06's forward), on the
//              module's own Linear layers; PyTorch's values and gradients of the
//              same forward (tools/reference/exercises.py)
//   cases:     lesson 06's sizes, small sizes, Dq ≠ Dk, one value row, PyTorch's
//              cases, and gradcheck
#include "05_attn_module.hpp"
#include "grader.hpp"

using namespace qkv;
using namespace qkv::exercises;

namespace {

// The forward with one known mistake switched on.
struct Variant {
  int64_t softmax_dim = 1;
  bool softmax = true, join_q = true, q_first = true;
};

AttnSteps variant(const Attn& m, const Tensor& Q, const Tensor& K, const Tensor& V, Variant how) {
  Tensor q = Q.squeeze(0), k = K.squeeze(0);  // (1, D)
  Tensor scores = (*m.attn)(cat({q, k}, 1));  // (1, V1)
  Tensor weights = how.softmax ? scores.softmax(how.softmax_dim) : scores;
  Tensor applied = weights.unsqueeze(0).bmm(V);  // (1, 1, Dv)
  Tensor first = how.join_q ? q : k;
  Tensor joined = how.q_first ? cat({first, applied.squeeze(0)}, 1) : cat({applied.squeeze(0), first}, 1);
  return {weights, applied, (*m.attn_combine)(joined).unsqueeze(0)};
}

void grade_case(Grader& g, const std::string& name, int64_t Dq, int64_t Dk, int64_t V1, int64_t Dv, int64_t out,
                Generator& gen) {
  Attn m(Dq, Dk, V1, Dv, out, gen);
  Tensor Q = randn({1, 1, Dq}, gen), K = randn({1, 1, Dk}, gen), V = randn({1, V1, Dv}, gen);
  g.begin_case(name, fmt::format("Attn({}, {}, {}, {}, {}); Q {}, K {}, V {}", Dq, Dk, V1, Dv, out, Q.shape(),
                                 K.shape(), V.shape()));
  AttnSteps got =
      g.call(with_parameters({{"Q", Q}, {"K", K}, {"V", V}}, m, "Attn"), [&] { return m.forward(Q, K, V); });
  AttnSteps want = variant(m, Q, K, V, {});
  auto mistakes = [&](Tensor AttnSteps::*step) {
    auto run = [&, step](Variant how) { return [=, &m] { return variant(m, Q, K, V, how).*step; }; };
    return std::vector<Mistake>{
        {"softmax over the wrong dimension",
         "the scores are (1, V1), one per value row: the softmax runs over dim 1 (over dim 0, a single row, every "
         "weight is 1)",
         run({.softmax_dim = 0})},
        {"no softmax", "rule 1's scores become weights through softmax(…, 1) before they are applied to V",
         run({.softmax = false})},
        {"step 2 joins in the wrong order", "§3.3 joins Q with step 1's result, Q first: cat({Q[0], applied[0]}, 1)",
         run({.q_first = false})},
        {"step 2 joins K instead of Q", "step 2 joins the query Q[0] (not K[0]) with step 1's result",
         run({.join_q = false})},
    };
  };
  auto explain_weight = [&](const std::vector<int64_t>& i) {
    return fmt::format("value row {}; Q[0] = {}, K[0] = {}", i[1], values(Q), values(K));
  };
  g.check({"weights", "softmax(attn(cat(Q[0], K[0])), dim 1), (1, V1)"}, got.weights, want.weights, explain_weight,
          mistakes(&AttnSteps::weights));
  auto explain_applied = [&](const std::vector<int64_t>& i) {
    return fmt::format("feature {}: the weights {}, column {} of V {}", i[2], values(want.weights), i[2],
                       values(at(V.transpose(1, 2), {0, i[2]})));
  };
  auto explain_output = [&](const std::vector<int64_t>& i) {
    return fmt::format("output feature {}: Q[0] = {}, applied[0] = {}", i[2], values(Q), values(want.applied));
  };
  g.check({"applied", "weights (1, 1, V1) bmm V (1, V1, Dv) -> (1, 1, Dv)"}, got.applied, want.applied, explain_applied,
          mistakes(&AttnSteps::applied));
  g.check({"output", "attn_combine(cat(Q[0], applied[0])) -> (1, 1, output_size)"}, got.output, want.output,
          explain_output, mistakes(&AttnSteps::output));
}

// The module's parameters from inputs x3 … x6: attn's weight and bias, attn_combine's.
void load(Attn& m, const std::vector<Tensor>& x) {
  m.attn->weight = x[3];
  m.attn->bias = x[4];
  m.attn_combine->weight = x[5];
  m.attn_combine->bias = x[6];
}

}  // namespace

int main(int argc, char** argv) {
  return grade(5, argc, argv, [](Grader& g) {
    g.forbid({{"qkv::nn::DotProductAttention::", "",
               "exercise 5 writes document 000's three steps: not through qkv's attention layers"},
              {"qkv::nn::AdditiveAttention::", "",
               "exercise 5 writes document 000's three steps: not through qkv's attention layers"}});
    Generator gen(g.seed());
    grade_case(g, "small sizes", 4, 4, 6, 3, 5, gen);
    grade_case(g, "lesson 06's sizes", 32, 32, 32, 64, 64, gen);
    grade_case(g, "Dq ≠ Dk", 3, 5, 4, 2, 2, gen);
    grade_case(g, "one value row", 2, 2, 1, 3, 2, gen);

    for (const TorchCase& c : g.torch_cases("05/")) {
      const std::string step = c.name.substr(3, c.name.find('/', 3) - 3);  // 05/<step>/<case>
      g.begin_case("PyTorch: " + c.name,
                   fmt::format("Q {}, K {}, V {}", c.f("x0").shape(), c.f("x1").shape(), c.f("x2").shape()));
      g.check_torch(
          {step, "against the same forward in PyTorch, float64"},
          [&](const std::vector<Tensor>& x) {
            Attn m(x[0].size(-1), x[1].size(-1), x[2].size(1), x[2].size(2), x[5].size(0), gen);
            load(m, x);
            AttnSteps s = m.forward(x[0], x[1], x[2]);
            return step == "weights" ? s.weights : s.output;
          },
          c);
    }

    g.begin_case("gradcheck", "Attn(3, 3, 4, 2, 3): Q (1, 1, 3), K (1, 1, 3), V (1, 4, 2) and the four parameters");
    Attn m(3, 3, 4, 2, 3, gen);
    g.check_gradients("of the output with respect to Q, K, V and the parameters",
                      [&](const std::vector<Tensor>& x) {
                        load(m, x);
                        return m.forward(x[0], x[1], x[2]).output;
                      },
                      {randn({1, 1, 3}, gen), randn({1, 1, 3}, gen), randn({1, 4, 2}, gen), m.attn->weight,
                       m.attn->bias, m.attn_combine->weight, m.attn_combine->bias});
  });
}
