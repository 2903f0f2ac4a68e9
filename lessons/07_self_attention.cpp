// Lesson 07 · single-head self-attention
//
// Walks through:
//   002 Attention核心思想      the SelfAttention(vec_size) module: Q, K, V projections,
//                              scores QKᵀ, softmax, ·V
//
// The learner runs 002's own input, the 2 sentences of 4 unit vectors of size
// 10 that the note printed (to 4 decimals), and sees:
//   1. the note's SelfAttention module on them: scores (2, 4, 4), probabilities
//      whose rows sum to 1, output [2, 4, 10];
//   2. the same steps without projections (Q = K = V = X): the scores X Xᵀ and
//      their softmax come out as the note printed them, to within the rounding
//      of its input, symmetric with ones on the diagonal, which shows that the
//      note's printout is the projection-free case;
//   3. the note's two other slips: no 1/√d in its scores, and a printout cut off.
// Both sets of probabilities are drawn.
//
// Letters: B sentences (batch_size), T vectors per sentence (seq_len), D vec_size.
//
// Run: build/release/lessons/07_self_attention [--seed S] [--out DIR]
#include <qkv/qkv.hpp>

#include <cmath>

#include "lesson.hpp"

using namespace qkv;

namespace {

const int64_t B = 2, T = 4, D = 10;  // the note's batch_size, seq_len, vec_size

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
    nn::TraceScope trace(*this, {sents});    // the picture draws SelfAttention with its own shapes
    Tensor Q = (*QueryW)(sents);             // (B, T, D)
    Tensor K = (*KeyW)(sents);               // (B, T, D)
    Tensor V = (*ValueW)(sents);             // (B, T, D)
    Tensor S = Q.matmul(K.transpose(1, 2));  // (B, T, D) x (B, D, T) -> (B, T, T)
    probs = S.softmax(-1);                   // (B, T, T): the notes' Score2Prob
    scores = S.detach();
    return trace.output(probs.matmul(V));  // (B, T, T) x (B, T, D) -> (B, T, D)
  }

  std::string type_name() const override { return "SelfAttention"; }
  std::shared_ptr<nn::Linear> QueryW, KeyW, ValueW;
  Tensor scores, probs;  // of the last forward, for printing
};

// 002's `sents`, as its notebook printed them after f.normalize: torch.rand
// drew them, so no seed gives them back; the printout does, to 4 decimals.
Tensor note_sents() {
  // One row per vector: sentence 0's four, then sentence 1's.
  return tensor({0.1696f, 0.0125f, 0.1379f, 0.3478f, 0.3790f, 0.2276f, 0.4528f, 0.2270f, 0.4609f, 0.4082f,  //
                 0.0771f, 0.2745f, 0.1747f, 0.4133f, 0.1001f, 0.1052f, 0.4344f, 0.0607f, 0.4888f, 0.5148f,  //
                 0.3007f, 0.0279f, 0.0811f, 0.3120f, 0.4506f, 0.3386f, 0.4638f, 0.2450f, 0.0686f, 0.4554f,  //
                 0.4082f, 0.3927f, 0.4035f, 0.1330f, 0.3023f, 0.3567f, 0.0814f, 0.0258f, 0.1728f, 0.4929f,  //
                 0.3552f, 0.3260f, 0.0076f, 0.2821f, 0.1292f, 0.4619f, 0.3386f, 0.4913f, 0.2997f, 0.1095f,  //
                 0.4076f, 0.1469f, 0.2115f, 0.5363f, 0.1666f, 0.5930f, 0.0947f, 0.2785f, 0.0444f, 0.1096f,  //
                 0.0576f, 0.4700f, 0.0063f, 0.1463f, 0.3560f, 0.2613f, 0.4805f, 0.0120f, 0.3639f, 0.4427f,  //
                 0.4564f, 0.5436f, 0.0129f, 0.1896f, 0.2353f, 0.3753f, 0.2794f, 0.4229f, 0.0830f, 0.0102f},
                {B, T, D});
}

// The scores and probabilities 002 printed under its module (its "tensor([[[1.0000, 0.8921, …").
Tensor note_scores() {
  return tensor({1.0000f, 0.8921f, 0.9020f, 0.6954f, 0.8921f, 1.0000f, 0.7390f, 0.7076f,  //
                 0.9020f, 0.7390f, 1.0000f, 0.7453f, 0.6954f, 0.7076f, 0.7453f, 1.0000f,  //
                 1.0000f, 0.8352f, 0.7078f, 0.9250f, 0.8352f, 1.0000f, 0.5001f, 0.7811f,  //
                 0.7078f, 0.5001f, 1.0000f, 0.6655f, 0.9250f, 0.7811f, 0.6655f, 1.0000f},
                {B, T, T});
}
Tensor note_probs() {
  return tensor({0.2823f, 0.2535f, 0.2560f, 0.2082f, 0.2629f, 0.2929f, 0.2256f, 0.2186f,  //
                 0.2626f, 0.2231f, 0.2897f, 0.2245f, 0.2263f, 0.2290f, 0.2378f, 0.3068f,  //
                 0.2839f, 0.2408f, 0.2120f, 0.2634f, 0.2603f, 0.3069f, 0.1862f, 0.2466f,  //
                 0.2433f, 0.1977f, 0.3259f, 0.2332f, 0.2692f, 0.2331f, 0.2076f, 0.2901f},
                {B, T, T});
}

// §1: the note's input, made unit length again (its printout is rounded to 4 decimals).
Tensor show_sentences(lesson::Lesson& lesson) {
  lesson.section("Attention核心思想: the note's input sentences");
  lesson.print("Compare q with k to get a similarity, then take v in those proportions: a new embedding.\n");
  Tensor printed = note_sents();                      // (B, T, D), 4 decimals
  Tensor lengths = sqrt(sum(printed * printed, -1));  // (B, T): ‖x‖ of each printed vector
  Tensor sents = normalize(printed, 2, 2);            // (B, T, D): f.normalize(sents, p=2, dim=2) again
  lesson.print("sents {}, 002's printout (4 decimals). Their lengths as printed, from {:.5f} to {:.5f}:\n",
               sents.shape(), min(lengths).item(), max(lengths).item());
  lesson.print("rounding moved them off 1, so they are normalised again, as the note did:\n{}\n", sents);
  lesson.result("printed_lengths", lengths);
  lesson.result("sents", sents);
  return sents;
}

// §2: the module with its projections (random: the note did not print its weights).
void run_module(lesson::Lesson& lesson, SelfAttention& model, const Tensor& sents) {
  lesson.section("SelfAttention(vec_size=10): scores, probabilities, output");
  lesson.print("{}\n", model.repr());
  Tensor out = model.forward(sents);
  lesson.print("scores = Q Kᵀ {}\n{}\n", model.scores.shape(), model.scores);
  lesson.print("probabilities = softmax(scores, -1) {}\n{}\n", model.probs.shape(), model.probs);
  Tensor row_sums = model.probs.sum(-1);  // (B, T, T) -> (B, T): each 1
  lesson.print("row sums {}\n", row_sums);
  lesson.print("Out {}\n", out.shape());
  lesson.draw_model("model.svg", model, [&] { model.forward(sents); },
                    {.title = "SelfAttention(vec_size=10), drawn from one call on sents (2, 4, 10)"});
  lesson.erratum(
      fmt::format("002's SelfAttention computes Q Kᵀ with no 1/√d: the scaled dot product divides by √d so that\n"
                  "the scores of d-dimensional vectors do not grow with d (lesson 04). And its printout is cut\n"
                  "off after \"torch.Size([2, 4,\": the output shape is {}, printed above as Out.",
                  out.shape()));
  lesson.result("QueryW_weight", model.QueryW->weight);  // the projections: the scores follow from them
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
}

// §3: Q = K = V = X gives the note's printed numbers back.
Tensor without_projections(lesson::Lesson& lesson, const Tensor& sents) {
  lesson.section("Without projections: Q = K = V = X gives the note's printout");
  Tensor free_scores = sents.matmul(sents.transpose(1, 2));  // (B, T, D) x (B, D, T) -> (B, T, T)
  Tensor free_probs = free_scores.softmax(-1);               // (B, T, T)
  Tensor free_out = matmul(free_probs, sents);               // (B, T, D)
  lesson.print("scores = X Xᵀ {}\n{}\n", free_scores.shape(), free_scores);
  lesson.print("probabilities = softmax(X Xᵀ, -1)\n{}\n", free_probs);
  double score_gap = max(abs(free_scores - note_scores())).item();
  double prob_gap = max(abs(free_probs - note_probs())).item();
  lesson.print("largest difference from 002's printed scores {:.1e}, from its printed probabilities {:.1e}\n",
               score_gap, prob_gap);
  lesson.print("(its input was rounded to 4 decimals, so they can agree only to about the 4th decimal).\n");
  double asymmetry = max(abs(free_scores - transpose(free_scores, 1, 2))).item();
  Tensor diagonal = sum(free_scores * eye(T), -1);  // (B, T, T) ⊙ (T, T) -> (B, T): the entries xᵢ·xᵢ
  lesson.print("largest |S - Sᵀ| = {:.2e} (symmetric: xᵢ·xⱼ = xⱼ·xᵢ)\n", asymmetry);
  lesson.print("diagonal xᵢ·xᵢ = ‖xᵢ‖² = 1, the cosine similarity of a unit vector with itself:\n{}\n", diagonal);
  lesson.erratum(
      "002 prints a symmetric score matrix with 1.0000 on the diagonal under its SelfAttention module,\n"
      "but with QueryW and KeyW in between, Q Kᵀ is neither symmetric nor 1 on the diagonal (§2).\n"
      "The printed numbers are those of X Xᵀ, the projection-free case, as the differences above show.");
  lesson.result("free_scores", free_scores);
  lesson.result("free_probs", free_probs);
  lesson.result("note_score_gap", score_gap);
  lesson.result("note_prob_gap", prob_gap);
  lesson.result("free_output_shape", free_out.shape());
  return free_probs;
}

// Both sets of probabilities, on one colour scale so that they compare by colour.
void draw_probabilities(lesson::Lesson& lesson, const Tensor& projected, const Tensor& free_probs) {
  std::vector<std::string> tokens = {"x0", "x1", "x2", "x3"};
  Tensor both = stack({projected, free_probs});  // 2 × (B, T, T) -> (2, B, T, T)
  lesson.print("The four panels below share one colour scale, from the smallest to the largest probability.\n");
  lesson.heatmap_grid("attention_weights.svg", both,
                      {.title = "Self-attention probabilities on 002's sentences",
                       .row_titles = {"with QueryW, KeyW", "projection-free (002's printout)"},
                       .col_titles = {"sentence 0", "sentence 1"},
                       .cell = {.xlabel = "keys",
                                .ylabel = "queries",
                                .row_labels = tokens,
                                .col_labels = tokens,
                                .vmin = min(both).item(),
                                .vmax = max(both).item()}});
}

}  // namespace

int main(int argc, char** argv) {
  lesson::Lesson lesson(argc, argv, 7);
  lesson.start();
  lesson.print(
      "This lesson runs 002's SelfAttention on the note's own printed sentences, then the same steps\n"
      "without projections, whose scores and softmax are the ones the note printed.\n");
  Generator gen(lesson.seed());
  Tensor sents = show_sentences(lesson);
  SelfAttention model(D, gen);
  run_module(lesson, model, sents);
  Tensor free_probs = without_projections(lesson, sents);
  draw_probabilities(lesson, model.probs.detach(), free_probs);

  lesson.print(
      "\nWhat to remember: self-attention compares every vector of a sentence with every other, turns each\n"
      "row of scores into probabilities that sum to 1, and mixes the values in those proportions. 002's\n"
      "printed matrix is X Xᵀ of its unit vectors: symmetric, ones on the diagonal; its module's Q Kᵀ is\n"
      "neither, and a Transformer would also divide by √d.\n");
  return lesson.finish(
      fmt::format("SelfAttention on 002's sentences: scores {}, output {}; 002's printed matrix reproduced from\n"
                  "its own input.",
                  model.scores.shape(), sents.shape()));
}
