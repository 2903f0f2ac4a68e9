// Lesson 05 · the three attention rules and BMM
//
// Walks through:
//   000 2.注意力计算规则
//     rule 1  Attention(Q,K,V) = Softmax[Linear(Q, K)] · V
//     rule 2  Attention(Q,K,V) = Softmax[sum(tanh(Linear(Q, K)))] · V
//     rule 3  Attention(Q,K,V) = softmax(Q·Kᵀ / √d_k) · V
//     BMM     (b, n, m) · (b, m, p) -> (b, n, p)
//
// The learner sees each rule built from ops on small tensors, with the shape
// of every step printed, the weights of each (rows summing to 1), and the
// notes' torch.bmm example: (10, 3, 4) · (10, 4, 5) -> (10, 3, 5), checked
// against ten separate matmuls.
//
// Letters: B batch, T key–value pairs, Dq / Dk / Dv the query / key / value sizes.
//
// Run: build/release/lessons/05_attention_rules [--seed S] [--out DIR]
#include <qkv/qkv.hpp>

#include <cmath>

#include "lesson.hpp"

using namespace qkv;

namespace {

const int64_t B = 2, T = 5, Dq = 4, Dk = 4, Dv = 3;

// One rule's result: its weights (B, 1, T) and output (B, 1, Dv).
struct Rule {
  Tensor weights, out;
};

// Rule 1: Q joined to one key, one Linear straight to a score per value position.
Rule rule1(lesson::Lesson& lesson, const Tensor& Q, const Tensor& K, const Tensor& V, Generator& gen) {
  lesson.section("Rule 1: Softmax[Linear(Q, K)] · V");
  lesson.print(
      "Q and K are joined (纵轴拼接: along the feature axis) and one Linear maps the pair straight to a\n"
      "score per value position. As in 000 §4's Attn, the key here is a single vector (the first key).\n");
  nn::Linear linear(Dq + Dk, T, /*bias=*/true, gen);
  Tensor qk = cat({Q, slice(K, 1, 0, 1)}, -1);  // (B, 1, Dq) ++ (B, 1, Dk) -> (B, 1, Dq+Dk)
  Tensor weights = softmax(linear(qk), -1);     // (B, 1, Dq+Dk) -> (B, 1, T)
  Tensor out = bmm(weights, V);                 // (B, 1, T) x (B, T, Dv) -> (B, 1, Dv)
  lesson.print("cat(Q, K[:, :1]) {} -> Linear({}, {}) -> softmax {} -> bmm with V -> {}\n", qk.shape(), Dq + Dk, T,
               weights.shape(), out.shape());
  lesson.print("weights\n{}\n", weights);
  return {weights, out};
}

// Rule 2: Q joined to every key, Linear, tanh, summed: additive attention with w_v = ones.
Rule rule2(lesson::Lesson& lesson, const Tensor& Q, const Tensor& K, const Tensor& V, Generator& gen) {
  lesson.section("Rule 2: Softmax[sum(tanh(Linear(Q, K)))] · V");
  lesson.print(
      "Q is joined to every key, a Linear maps each pair into H hidden features, tanh squashes them and\n"
      "their sum (内部求和) is the pair's score: additive attention with w_v fixed to ones.\n");
  const int64_t H = 8;
  nn::Linear linear(Dq + Dk, H, /*bias=*/true, gen);
  Tensor qk = cat({expand(Q, {B, T, Dq}), K}, -1);           // (B, T, Dq) ++ (B, T, Dk) -> (B, T, Dq+Dk)
  Tensor scores = sum(tanh(linear(qk)), -1);                 // (B, T, Dq+Dk) -> (B, T, H) -> (B, T)
  Tensor weights = softmax(reshape(scores, {B, 1, T}), -1);  // (B, 1, T)
  Tensor out = bmm(weights, V);                              // (B, 1, T) x (B, T, Dv) -> (B, 1, Dv)
  lesson.print("cat(Q repeated, K) {} -> Linear({}, {}) -> tanh -> sum {} -> softmax {} -> bmm with V -> {}\n",
               qk.shape(), Dq + Dk, H, scores.shape(), weights.shape(), out.shape());
  lesson.print("weights\n{}\n", weights);
  return {weights, out};
}

// Rule 3: the scaled dot product, no parameters.
Rule rule3(lesson::Lesson& lesson, const Tensor& Q, const Tensor& K, const Tensor& V) {
  lesson.section("Rule 3: softmax(Q·Kᵀ / √d_k) · V");
  // (B, 1, Dk) x (B, Dk, T) -> (B, 1, T), then scaled by 1/√Dk
  Tensor scores = Q.bmm(K.transpose(1, 2)) / std::sqrt(static_cast<float>(Dk));
  Tensor weights = scores.softmax(-1);  // (B, 1, T)
  Tensor out = bmm(weights, V);         // (B, 1, T) x (B, T, Dv) -> (B, 1, Dv)
  lesson.print("Q {} · Kᵀ {} / √{} -> {} -> softmax -> bmm with V -> {}\n", Q.shape(), transpose(K, 1, 2).shape(), Dk,
               scores.shape(), out.shape());
  lesson.print("weights\n{}\n", weights);
  lesson.print("No parameters: the query and key sizes must agree (Dq = Dk = {}).\n", Dk);
  return {weights, out};
}

// The notes' torch.bmm example, checked against ten separate matmuls.
struct BmmCheck {
  Shape input, mat2, res;
  double max_diff;  // from ten separate matmuls
};
BmmCheck bmm_section(lesson::Lesson& lesson, Generator& gen) {
  lesson.section("BMM: (b, n, m) · (b, m, p) -> (b, n, p)");
  Tensor input = randn({10, 3, 4}, gen);  // the notes' torch.randn(10, 3, 4)
  Tensor mat2 = randn({10, 4, 5}, gen);   // torch.randn(10, 4, 5)
  Tensor res = bmm(input, mat2);          // (10, 3, 4) x (10, 4, 5) -> (10, 3, 5)
  lesson.print("bmm(input {}, mat2 {}) -> res.size() = {}\n", input.shape(), mat2.shape(), res.shape());
  // bmm is a matmul per batch entry: compare with ten separate 2-D products.
  double max_diff = 0;
  for (int64_t b = 0; b < 10; ++b) {
    Tensor one = matmul(reshape(slice(input, 0, b, b + 1), {3, 4}), reshape(slice(mat2, 0, b, b + 1), {4, 5}));
    max_diff = std::max(max_diff, static_cast<double>(max(abs(one - reshape(slice(res, 0, b, b + 1), {3, 5}))).item()));
  }
  lesson.print("largest difference from ten separate (3, 4) x (4, 5) matmuls: {:.2e}\n", max_diff);
  return {input.shape(), mat2.shape(), res.shape(), max_diff};
}

}  // namespace

int main(int argc, char** argv) {
  lesson::Lesson lesson(argc, argv, 5);
  lesson.start();
  lesson.print(
      "This lesson builds the notes' three attention rules from ops, each a different way to score a\n"
      "query against keys followed by the same softmax and bmm with V, then checks torch.bmm's shapes.\n");
  Generator gen(lesson.seed());

  lesson.section("The inputs: Q, K, V");
  Tensor Q = randn({B, 1, Dq}, gen);  // (B, 1, Dq): one query per example, e.g. a decoder's state
  Tensor K = randn({B, T, Dk}, gen);  // (B, T, Dk)
  Tensor V = randn({B, T, Dv}, gen);  // (B, T, Dv)
  lesson.print("Q {}, K {}, V {}  (B = {} examples, T = {} key–value pairs)\n", Q.shape(), K.shape(), V.shape(), B, T);
  lesson.print("When Q = K = V this is self-attention (自注意力计算规则); here they differ.\n");

  Rule r1 = rule1(lesson, Q, K, V, gen), r2 = rule2(lesson, Q, K, V, gen), r3 = rule3(lesson, Q, K, V);

  lesson.section("The three rules' weights side by side");
  Tensor all_weights = reshape(cat({r1.weights, r2.weights, r3.weights}, 0), {3 * B, T});  // 3 × (B, 1, T) -> (3B, T)
  lesson.heatmap("attention_weights.svg", all_weights,
                 {.title = "Attention weights of the three rules",
                  .xlabel = "keys (value rows)",
                  .ylabel = "rule r, example ex",
                  .row_labels = {"r1 ex0", "r1 ex1", "r2 ex0", "r2 ex1", "r3 ex0", "r3 ex1"}});

  BmmCheck bmm_check = bmm_section(lesson, gen);

  lesson.result("rule1_output_shape", r1.out.shape());
  lesson.result("rule2_output_shape", r2.out.shape());
  lesson.result("rule3_output_shape", r3.out.shape());
  lesson.result("rule1_weights", r1.weights);
  lesson.result("rule2_weights", r2.weights);
  lesson.result("rule3_weights", r3.weights);
  lesson.result("bmm_shape", bmm_check.res);
  lesson.result("bmm_max_diff_from_matmul", bmm_check.max_diff);

  lesson.print(
      "\nWhat to remember: the three rules of 000 2.注意力计算规则 differ only in how a score is made (a Linear\n"
      "of the joined Q and K; a Linear, tanh and sum; a scaled dot product); each ends in softmax weights\n"
      "and a bmm with V. bmm multiplies matching matrices of two batches.\n");
  return lesson.finish(
      fmt::format("Each rule's weights and bmm with V give {}. bmm on matching matrices of two batches: {} · {} -> {}.",
                  r3.out.shape(), bmm_check.input, bmm_check.mat2, bmm_check.res));
}
