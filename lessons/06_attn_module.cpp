// Lesson 06 · the Attn module
//
// Walks through:
//   000 3.注意力机制: 3.1.注意力机制, 3.2.注意力机制的作用, 3.3.注意力机制的实现步骤
//   000 4.注意力机制的代码分析      the Attn class, whose forward the notes cut off
//
// The learner sees the notes' Attn class written as a qkv module, its forward
// completed as 3.3 describes it, in three labelled steps; its printed
// structure; and one call: Q (1,1,32), K (1,1,32), V (1,32,64) -> output
// (1,1,64) and attention weights (1,32), with the weights drawn. Then 3.3's
// other branch: with the transposed dot product (self-attention, Q = K = V)
// step 2 has nothing to join, and step 3's Linear reads the attention's
// output alone.
//
// Run: build/release/lessons/06_attn_module [--seed S] [--out DIR]
#include <qkv/qkv.hpp>

#include "lesson.hpp"

using namespace qkv;

// The notes' Attn (000 §4), a module with two Linear layers:
//   attn          Linear(query_size + key_size, value_size1): rule 1's scores, one per value
//   attn_combine  Linear(query_size + value_size2, output_size): the final projection
// Q (1, 1, query_size), K (1, 1, key_size), V (1, value_size1, value_size2)
//   -> output (1, 1, output_size), weights (1, value_size1)
// In the shape comments: Dq, Dk, Dv = query_size, key_size, value_size2; V1 = value_size1.
class Attn : public nn::Module {
 public:
  Attn(int64_t query_size, int64_t key_size, int64_t value_size1, int64_t value_size2, int64_t output_size,
       Generator& gen)
      : query_size(query_size),
        key_size(key_size),
        value_size1(value_size1),
        value_size2(value_size2),
        output_size(output_size) {
    attn = register_module("attn", std::make_shared<nn::Linear>(query_size + key_size, value_size1, true, gen));
    attn_combine =
        register_module("attn_combine", std::make_shared<nn::Linear>(query_size + value_size2, output_size, true, gen));
  }

  std::pair<Tensor, Tensor> forward(const Tensor& Q, const Tensor& K, const Tensor& V) const {
    nn::TraceScope trace(*this, {Q, K, V});  // the picture draws Attn with its own inputs and outputs
    // Step 1 (3.3 第一步): apply a rule of 2.注意力计算规则 to Q, K, V. Here rule 1: join Q and K,
    // a Linear gives one score per value row, softmax makes them weights, bmm applies them to V.
    Tensor q = select0(Q), k = select0(K);                     // (1, 1, D) -> (1, D): PyTorch's Q[0]
    Tensor attn_weights = (*attn)(cat({q, k}, 1)).softmax(1);  // (1, Dq+Dk) -> (1, V1)
    Tensor attn_applied = attn_weights.unsqueeze(0).bmm(V);    // (1, 1, V1) x (1, V1, Dv) -> (1, 1, Dv)
    // Step 2 (第二步): rule 1 joined Q and K, so join Q to step 1's result as well.
    Tensor output = cat({q, select0(attn_applied)}, 1);  // (1, Dq) ++ (1, Dv) -> (1, Dq+Dv)
    // Step 3 (第三步): a Linear gives the output the size asked for: the attention representation of Q.
    output = unsqueeze((*attn_combine)(output), 0);  // (1, Dq+Dv) -> (1, output_size) -> (1, 1, output_size)
    trace.outputs({output, attn_weights});
    return {output, attn_weights};
  }

  std::string type_name() const override { return "Attn"; }
  int64_t query_size, key_size, value_size1, value_size2, output_size;
  std::shared_ptr<nn::Linear> attn, attn_combine;

 private:
  static Tensor select0(const Tensor& x) { return squeeze(slice(x, 0, 0, 1), 0); }  // x[0]: drop the batch dim
};

// 3.3 第二步's other branch: "如果是转置点积，一般是自注意力，Q与V相同，则不需要进行与Q的拼接".
// Rule 3 on X (1, n, D) as Q = K = V:
//   step 1  softmax(X Xᵀ/√D) X               (1, n, n) x (1, n, D) -> (1, n, D)
//   step 2  nothing to join: row i of step 1 already is query i's representation (Q = V)
//   step 3  Linear(D, output_size)          (1, n, D) -> (1, n, output_size)
void dot_product_branch(lesson::Lesson& lesson, const Attn& attn, Generator& gen) {
  lesson.section("3.3 第二步, the other branch: transposed dot product, no concatenation");
  const int64_t n = 5, D = attn.query_size;
  Tensor X = randn({1, n, D}, gen);                                                        // (1, n, D)
  Tensor w = X.bmm(transpose(X, 1, 2)).div(std::sqrt(static_cast<float>(D))).softmax(-1);  // (1, n, n)
  Tensor step1 = w.bmm(X);                                                                 // (1, n, D)
  nn::Linear combine(D, attn.output_size, /*bias=*/true, gen);                             // step 3
  Tensor out = combine(step1);                                                             // (1, n, output_size)
  lesson.print(
      "Step 1 with rule 3 on X {} as Q = K = V: weights softmax(XXᵀ/√{}) {}, times X -> {}.\n"
      "Step 2: the weights mix rows of X = Q, so row i is already query i's representation; nothing is\n"
      "joined. Step 3: Linear({}, {}) -> {}.\n",
      X.shape(), D, w.shape(), step1.shape(), D, attn.output_size, out.shape());
  const int64_t joined = attn.attn_combine->weight.size(1), alone = combine.weight.size(1);
  lesson.print(
      "The final Linear reads {} features per query in Attn (Q joined to the attention's output: {} + {})\n"
      "and {} here: {} parameters against {}.\n",
      joined, attn.query_size, attn.value_size2, alone, attn.attn_combine->num_parameters(), combine.num_parameters());
  lesson.result("dot_branch_output_shape", out.shape());
  lesson.result("dot_branch_combine_in_features", alone);
  lesson.result("attn_combine_in_features", joined);
}

// One call on the notes' shapes: Q (1,1,32), K (1,1,32), V (1,32,64) -> output (1,1,64), weights (1,32).
struct OneCall {
  Tensor Q, K, V, output, weights;
};
OneCall one_call(lesson::Lesson& lesson, Attn& attn, Generator& gen) {
  lesson.section("One call: Q (1,1,32), K (1,1,32), V (1,32,64)");
  Tensor Q = randn({1, 1, 32}, gen);
  Tensor K = randn({1, 1, 32}, gen);
  Tensor V = randn({1, 32, 64}, gen);
  auto [output, weights] = attn.forward(Q, K, V);  // (1, 1, 64), (1, 32)
  lesson.print("Q {}, K {}, V {} -> output {}, attention weights {}\n", Q.shape(), K.shape(), V.shape(), output.shape(),
               weights.shape());
  lesson.print("weights sum to {:.4f}; the largest is {:.4f} (on value row {})\n", sum(weights).item(),
               max(weights).item(), argmax(weights).item());
  lesson.heatmap("attention_weights.svg", weights,
                 {.title = "Attn: rule 1's weights over the 32 value rows",
                  .xlabel = "value rows",
                  .row_labels = {"the query Q"}});  // one row: a label beside it, where an axis title would not fit
  lesson.print("output[0, 0, :8] = {}\n", slice(reshape(output, {64}), 0, 0, 8));
  lesson.draw_model("model.svg", attn, [&] { attn.forward(Q, K, V); },
                    {.title = "The notes' Attn, drawn from one call on Q (1,1,32), K (1,1,32), V (1,32,64)"});

  lesson.result("output_shape", output.shape());
  lesson.result("weights_shape", weights.shape());
  lesson.result("weights", weights);
  lesson.result("num_parameters", attn.num_parameters());
  // The inputs and every parameter, so that the output can be recomputed from this file alone.
  lesson.result("Q", Q);
  lesson.result("K", K);
  lesson.result("V", V);
  lesson.result("attn_weight", attn.attn->weight);                  // (32, 64)
  lesson.result("attn_bias", attn.attn->bias);                      // (32)
  lesson.result("attn_combine_weight", attn.attn_combine->weight);  // (64, 96)
  lesson.result("attn_combine_bias", attn.attn_combine->bias);      // (64)
  lesson.result("output", output);
  return {Q, K, V, output, weights};
}

// What to keep from it, printed before the summary.
void what_to_remember(lesson::Lesson& lesson) {
  lesson.print(
      "\nWhat to remember: a mechanism is a rule inside a network: a rule's weights applied to V, joined to Q\n"
      "when the rule joined Q and K, and a Linear to the size asked for. With the transposed dot product and\n"
      "Q = K = V, step 2 joins nothing and step 3 reads the attention's output alone.\n");
}

int main(int argc, char** argv) {
  lesson::Lesson lesson(argc, argv, 6);
  lesson.start();
  lesson.print(
      "This lesson completes the notes' Attn module (its forward is cut off in 000 §4) in the three\n"
      "steps of 3.3, runs it once on the notes' shapes, and shows 3.3's other branch, self-attention.\n");
  Generator gen(lesson.seed());

  lesson.section("3.1.注意力机制 and 3.2.注意力机制的作用");
  lesson.print(
      "A rule of 000 §2 becomes a mechanism once it sits in a network with the Linear layers and tensor\n"
      "reshaping around it. In seq2seq it works on two sides: on the decoder side it lets each output step\n"
      "focus on the encoder's outputs (instead of one fixed-length vector); on the encoder side it is\n"
      "self-attention, a way to extract features of the input.\n");
  lesson.erratum(
      "000 3.2 writes \"在加码器端\" (a typo: 加码器 is no such thing). The sentence describes the\n"
      "decoder side, 解码器端: attention over the encoder's outputs, used as the decoder's input.");

  lesson.section("3.3.注意力机制的实现步骤 and 4.注意力机制的代码分析: the Attn module");
  lesson.print(
      "The notes' forward is cut off after `def forward(self, Q, K, V):`. Written as 3.3 says:\n"
      "  1. apply a rule to Q, K, V (rule 1: softmax(Linear(cat(Q, K))) then bmm with V)\n"
      "  2. rule 1 joins, so join Q with step 1's result\n"
      "  3. a Linear maps that to output_size\n");
  Attn attn(/*query_size=*/32, /*key_size=*/32, /*value_size1=*/32, /*value_size2=*/64, /*output_size=*/64, gen);
  lesson.print("{}\n", attn.repr());

  const OneCall call = one_call(lesson, attn, gen);
  dot_product_branch(lesson, attn, gen);

  what_to_remember(lesson);
  return lesson.finish(fmt::format(
      "The notes' Attn, completed: rule 1's weights {} over the {} value rows, their bmm with V, Q\n"
      "joined to it, and attn_combine to the output size: Q {}, K {}, V {} -> {}.",
      call.weights.shape(), call.V.size(1), call.Q.shape(), call.K.shape(), call.V.shape(), call.output.shape()));
}
