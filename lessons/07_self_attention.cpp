// Lesson 07 · single-head self-attention
//
// Walks through:
//   002 Attention核心思想      the SelfAttention(vec_size) module: Q, K, V projections,
//                              scores QKᵀ, softmax, ·V
//
// The learner sees the notes' module on 2 sentences of 4 unit-length random
// vectors of size 10: the scores (2, 4, 4), the probabilities whose rows sum
// to 1, the output [2, 4, 10]; then the same steps without projections
// (Q = K = V = X), where the scores X Xᵀ are symmetric with ones on the
// diagonal, as in the notes' printout. Both sets of weights are drawn.
//
// Letters: B sentences (batch_size), T vectors per sentence (seq_len), D vec_size.
//
// Run: build/release/lessons/07_self_attention [--seed S] [--out DIR]
#include <qkv/qkv.hpp>

#include <cmath>

#include "lesson.hpp"

using namespace qkv;

// The notes' SelfAttention: three Linear(D, D) make Q, K and V from the same
// sentences; the scores are Q Kᵀ (not scaled by 1/√D, as in the notes).
//   sents (B, T, D) -> output (B, T, D); the probabilities (B, T, T) are kept.
class SelfAttention : public nn::Module {
 public:
  SelfAttention(int64_t vec_size, Generator& gen) {
    QueryW = register_module("QueryW", std::make_shared<nn::Linear>(vec_size, vec_size, true, gen));
    KeyW = register_module("KeyW", std::make_shared<nn::Linear>(vec_size, vec_size, true, gen));
    ValueW = register_module("ValueW", std::make_shared<nn::Linear>(vec_size, vec_size, true, gen));
  }

  Tensor forward(const Tensor& sents) {
    Tensor Q = (*QueryW)(sents);             // (B, T, D)
    Tensor K = (*KeyW)(sents);               // (B, T, D)
    Tensor V = (*ValueW)(sents);             // (B, T, D)
    Tensor S = Q.matmul(K.transpose(1, 2));  // (B, T, D) x (B, D, T) -> (B, T, T)
    probs = S.softmax(-1);                   // (B, T, T): the notes' Score2Prob
    scores = S.detach();
    return probs.matmul(V);  // (B, T, T) x (B, T, D) -> (B, T, D)
  }

  std::string type_name() const override { return "SelfAttention"; }
  std::shared_ptr<nn::Linear> QueryW, KeyW, ValueW;
  Tensor scores, probs;  // of the last forward, for printing
};

int main(int argc, char** argv) {
  lesson::Lesson lesson(argc, argv, 7);
  lesson.start();
  Generator gen(lesson.seed());
  const int64_t B = 2, T = 4, D = 10;  // the notes' batch_size, seq_len, vec_size

  lesson.section("Attention核心思想: the input sentences");
  lesson.print("Compare q with k to get a similarity, then take v in those proportions: a new embedding.\n");
  Tensor sents = normalize(rand({B, T, D}, gen), 2, 2);  // (B, T, D), each vector of length 1 (f.normalize)
  lesson.print("sents {} (unit vectors: ‖x‖ of the first = {:.4f})\n{}\n", sents.shape(),
               std::sqrt(sum(slice(slice(sents, 0, 0, 1), 1, 0, 1) * slice(slice(sents, 0, 0, 1), 1, 0, 1)).item()),
               sents);

  lesson.section("SelfAttention(vec_size=10): scores, probabilities, output");
  SelfAttention model(D, gen);
  lesson.print("{}\n", model.repr());
  Tensor out = model.forward(sents);
  lesson.print("scores = Q Kᵀ {}\n{}\n", model.scores.shape(), model.scores);
  lesson.print("probabilities = softmax(scores, -1) {}\n{}\n", model.probs.shape(), model.probs);
  Tensor row_sums = model.probs.sum(-1);  // (B, T, T) -> (B, T): each 1
  lesson.print("row sums {}\n", row_sums);
  lesson.print("Out {}\n", out.shape());
  lesson.draw_model("model.svg", model, [&] { model.forward(sents); },
                    {.title = "SelfAttention(vec_size=10), drawn from one call on sents (2, 4, 10)"});

  lesson.section("Without projections: Q = K = V = X");
  Tensor free_scores = sents.matmul(sents.transpose(1, 2));  // (B, T, D) x (B, D, T) -> (B, T, T)
  Tensor free_probs = free_scores.softmax(-1);               // (B, T, T)
  Tensor free_out = matmul(free_probs, sents);               // (B, T, D)
  lesson.print("scores = X Xᵀ {}\n{}\n", free_scores.shape(), free_scores);
  lesson.print("probabilities\n{}\n", free_probs);
  double asymmetry = max(abs(free_scores - transpose(free_scores, 1, 2))).item();
  Tensor diagonal = sum(free_scores * eye(T), -1);  // (B, T, T) ⊙ (T, T) -> (B, T): the entries xᵢ·xᵢ
  lesson.print("largest |S - Sᵀ| = {:.2e} (symmetric: xᵢ·xⱼ = xⱼ·xᵢ)\n", asymmetry);
  lesson.print("diagonal xᵢ·xᵢ = ‖xᵢ‖² = 1, the cosine similarity of a unit vector with itself:\n{}\n", diagonal);
  std::vector<std::string> tokens = {"x0", "x1", "x2", "x3"};
  Tensor both = stack({model.probs.detach(), free_probs});  // 2 × (B, T, T) -> (2, B, T, T)
  // One colour scale for the four panels (in the terminal too), so that they compare by colour.
  lesson.print("The four panels below share one colour scale, from the smallest to the largest probability.\n");
  lesson.heatmap_grid("attention_weights.svg", both,
                      {.title = "Self-attention probabilities",
                       .row_titles = {"with QueryW, KeyW", "projection-free"},
                       .col_titles = {"sentence 0", "sentence 1"},
                       .cell = {.xlabel = "keys",
                                .ylabel = "queries",
                                .row_labels = tokens,
                                .col_labels = tokens,
                                .vmin = min(both).item(),
                                .vmax = max(both).item()}});
  lesson.erratum(
      "002 prints a symmetric score matrix with 1.0000 on the diagonal under its SelfAttention module,\n"
      "but with QueryW and KeyW in between, Q Kᵀ is neither symmetric nor 1 on the diagonal (see the\n"
      "scores above). The printed numbers are those of X Xᵀ: the projection-free case.");

  lesson.result("sents", sents);  // the input and the projections: the scores follow from them
  lesson.result("QueryW_weight", model.QueryW->weight);
  lesson.result("QueryW_bias", model.QueryW->bias);
  lesson.result("KeyW_weight", model.KeyW->weight);
  lesson.result("KeyW_bias", model.KeyW->bias);
  lesson.result("ValueW_weight", model.ValueW->weight);
  lesson.result("ValueW_bias", model.ValueW->bias);
  lesson.result("output", out);
  lesson.result("scores", model.scores);
  lesson.result("probs", model.probs);
  lesson.result("row_sums", row_sums);
  lesson.result("output_shape", out.shape());
  lesson.result("free_scores", free_scores);
  lesson.result("free_probs", free_probs);
  lesson.result("free_output_shape", free_out.shape());

  return lesson.finish(
      "The notes' single-head self-attention on 2 × 4 unit vectors: scores (2, 4, 4), probabilities whose\n"
      "rows sum to 1, output [2, 4, 10]. Without projections the scores X Xᵀ are symmetric with ones on\n"
      "the diagonal, which is what the notes printed.");
}
