// The checks of exercise 11, a Transformer encoder block.
//   expected:  each step from the block's own sublayers, and the output against
//              qkv's nn::TransformerEncoderBlock::forward; PyTorch's values and
//              gradients (d2l's block, its parameters loaded into qkv's)
//   cases:     dropout on (training mode, its generator rewound before each run, so
//              that add & norm's argument order shows: AddNorm(X, Y) drops out Y
//              alone), lesson 11's sizes, a valid length of 1 and of the full
//              length, one head, a batch of 1 with one position, no valid
//              lengths, PyTorch's cases, gradcheck
//   mistakes:  among them add & norm's layer norm written out over the wrong
//              axis (the batch, the sequence, or (T, H) together)
#include "11_encoder_block.hpp"
#include "grader.hpp"

using namespace qkv;
using namespace qkv::exercises;

namespace {

// The dims an add & norm takes its mean and variance over: each position's
// features alone is right (the block's LayerNorm(H)); the others are the
// wrong axes a learner who writes the norm out can pick: the batch (batch
// norm's axis, dim 0), the sequence (dim 1, the features' dim of a 2-D
// (N, D) input), or the sequence and the features together (a norm_shape of
// (T, H), as in d2l's first editions).
enum class NormOver { features, batch, sequence, sequence_and_features };

struct Variant {
  bool mask = true, residual = true, ffn_reads_Y = true, second_residual_Y = true, swapped = false,
       second_residual = true;
  NormOver norm1 = NormOver::features, norm2 = NormOver::features;
};

// an(X, Y) = LayerNorm(dropout(Y) + X), with the mean and the (biased)
// variance taken over `over`, then the layer's weight and bias per feature.
Tensor add_norm(const nn::AddNorm& an, const Tensor& X, const Tensor& Y, NormOver over) {
  if (over == NormOver::features) return an(X, Y);
  Tensor Z = (*an.dropout)(Y) + X;  // (B, T, H); the dropout draws its mask as an(X, Y) does
  Tensor normed;
  if (over == NormOver::sequence_and_features) {
    normed = layer_norm(Z, {Z.size(1), Z.size(2)}, Tensor(), Tensor(), an.ln->eps);
  } else {
    const int64_t dim = over == NormOver::batch ? 0 : 1;
    Tensor centred = Z - Z.mean(dim, true);
    normed = centred / ((centred * centred).mean(dim, true) + an.ln->eps).sqrt();
  }
  return normed * an.ln->weight + an.ln->bias;  // weight, bias (H)
}

EncoderBlockSteps variant(nn::TransformerEncoderBlock& blk, const Tensor& X, const IntTensor& lens, Variant how) {
  Tensor attended = (*blk.attention)(X, X, X, how.mask ? lens : IntTensor());
  Tensor Y = !how.residual ? blk.addnorm1->ln->forward(attended)
             : how.swapped ? (*blk.addnorm1)(attended, X)
                           : add_norm(*blk.addnorm1, X, attended, how.norm1);
  Tensor residual = how.second_residual_Y ? Y : X, sublayer = (*blk.ffn)(how.ffn_reads_Y ? Y : X);
  Tensor out = !how.second_residual ? blk.addnorm2->ln->forward(sublayer)
               : how.swapped        ? (*blk.addnorm2)(sublayer, residual)
                                    : add_norm(*blk.addnorm2, residual, sublayer, how.norm2);
  return {attended, Y, out};
}

// `rewind` puts the dropout's generator back where it was before the
// learner's call (a no-op in eval mode), so that every run draws the same masks.
void grade_block(
    Grader& g, nn::TransformerEncoderBlock& blk, const Tensor& X, const IntTensor& lens,
    const std::function<void()>& rewind = [] {}) {
  EncoderBlockSteps got = g.call(with_parameters({{"X", X}, {"valid_lens", lens}}, blk, "blk"),
                                 [&] { return encoder_block(blk, X, lens); });
  rewind();
  EncoderBlockSteps want = variant(blk, X, lens, {});
  auto mistakes = [&](Tensor EncoderBlockSteps::*step) {
    auto run = [&, step](Variant how) {
      return [=, &blk] {
        rewind();
        return variant(blk, X, lens, how).*step;
      };
    };
    std::vector<Mistake> list = {
        {"no residual connection", "add & norm adds the sublayer's input back: addnorm1(X, attended), not a norm alone",
         run({.residual = false})},
        {"the FFN reads X instead of Y", "the second sublayer works on the first one's result: ffn(Y)",
         run({.ffn_reads_Y = false})},
        {"the second residual is X instead of Y", "the second add & norm adds Y, the FFN's input: addnorm2(Y, ffn(Y))",
         run({.second_residual_Y = false})},
        {"the second residual missing",
         "the second add & norm adds the FFN's input back too: addnorm2(Y, ffn(Y)), not a norm of ffn(Y) alone",
         run({.second_residual = false})},
        {"add & norm's arguments swapped",
         "AddNorm(X, Y) is layer_norm(dropout(Y) + X): the residual comes first, the sublayer's output second "
         "(dropout acts on the second alone): addnorm1(X, attended), addnorm2(Y, ffn(Y))",
         run({.swapped = true})}};
    // A norm written out over the wrong axis, in both add & norms (one helper
    // for both) or in the second alone.
    for (auto [over, axis] : {std::pair{NormOver::batch, "the batch (dim 0: that is batch norm)"},
                              std::pair{NormOver::sequence, "the sequence (dim 1)"},
                              std::pair{NormOver::sequence_and_features, "the sequence and the features together"}}) {
      const std::string fix = fmt::format(
          "yours normalises over {}; layer norm takes each position's mean and variance over its H features alone, "
          "the last dim: Z.mean(-1, true); or call the block's own add & norms, whose LayerNorm(H) does it",
          axis);
      list.push_back({"layer norm over the wrong axis", fix, run({.norm1 = over, .norm2 = over})});
      list.push_back({"layer norm over the wrong axis", fix, run({.norm2 = over})});
    }
    if (lens.defined())
      list.push_back({"the padded positions attended to",
                      "pass valid_lens to the self-attention, so no position attends to the padding",
                      run({.mask = false})});
    return list;
  };
  // Each step's inputs at position (example, position): what that row of the step is made from.
  auto position = [&](const std::vector<int64_t>& i) {
    return fmt::format("example {}, position {}{}", i[0], i[1],
                       lens.defined() ? fmt::format(" (valid length {})", lens.at({i[0]})) : "");
  };
  auto explain_attended = [&](const std::vector<int64_t>& i) {
    return fmt::format("{}: X there {}", position(i), values(at(X, {i[0], i[1]})));
  };
  auto explain_Y = [&](const std::vector<int64_t>& i) {
    return fmt::format("{}: X there {}, attended there {}", position(i), values(at(X, {i[0], i[1]})),
                       values(at(want.attended, {i[0], i[1]})));
  };
  auto explain_output = [&](const std::vector<int64_t>& i) {
    NoGradGuard no_grad;
    return fmt::format("{}: Y there {}, ffn(Y) there {}", position(i), values(at(want.Y, {i[0], i[1]})),
                       values(at((*blk.ffn)(want.Y), {i[0], i[1]})));
  };
  g.check({"attended", "attention(X, X, X, valid_lens), (B, T, H)"}, got.attended, want.attended, explain_attended,
          mistakes(&EncoderBlockSteps::attended));
  g.check({"Y", "addnorm1(X, attended), (B, T, H)"}, got.Y, want.Y, explain_Y, mistakes(&EncoderBlockSteps::Y));
  rewind();
  g.check({"output", "addnorm2(Y, ffn(Y)), (B, T, H)"}, got.output, blk.forward(X, lens), explain_output,
          mistakes(&EncoderBlockSteps::output));
}

void grade_case(Grader& g, const std::string& name, int64_t B, int64_t T, int64_t H, int64_t F, int64_t heads,
                const IntTensor& lens, Generator& gen) {
  nn::TransformerEncoderBlock blk(H, F, heads, 0.0f, false, gen);
  blk.eval();
  Tensor X = randn({B, T, H}, gen);
  g.begin_case(name, fmt::format("X {}, valid_lens {}; TransformerEncoderBlock(H {}, F {}, heads {})", X.shape(),
                                 lens.defined() ? values(lens) : "undefined", H, F, heads));
  grade_block(g, blk, X, lens);
}

// A block with the parameters of a PyTorch case (p.attention.W_q.weight, …).
std::shared_ptr<nn::TransformerEncoderBlock> block_of(const TorchCase& c, const std::vector<Tensor>& params,
                                                      Generator& gen) {
  const int64_t F = c.f("p.ffn.dense1.weight").size(0), H = c.f("p.ffn.dense1.weight").size(1);
  auto blk = std::make_shared<nn::TransformerEncoderBlock>(H, F, c.i("num_heads").at({0}), 0.0f, false, gen);
  blk->eval();
  StateDict state;
  size_t i = 0;
  for (const auto& [key, value] : c.floats)
    if (key.rfind("p.", 0) == 0) state[key.substr(2)] = params[i++];
  blk->load_state_dict(state);
  return blk;
}

}  // namespace

int main(int argc, char** argv) {
  return grade(11, argc, argv, [](Grader& g) {
    g.forbid({{"qkv::nn::TransformerEncoderBlock::forward(", "",
               "exercise 11 writes the block's forward: not blk.forward"}});
    Generator gen(g.seed());
    {
      // Training mode: dropout 0.5 from its own generator, rewound before each run.
      Generator dropout_gen(g.seed() + 1);
      nn::TransformerEncoderBlock blk(6, 8, 2, 0.5f, false, dropout_gen);
      blk.train();
      Tensor X = randn({2, 4, 6}, gen);
      IntTensor lens = int_tensor({3, 4});
      g.begin_case("add & norm's order: dropout on, in training mode",
                   fmt::format("X {}, valid_lens {}; TransformerEncoderBlock(H 6, F 8, heads 2, dropout 0.5), train()",
                               X.shape(), values(lens)));
      const Generator start = dropout_gen;
      grade_block(g, blk, X, lens, [&] { dropout_gen = start; });
    }
    grade_case(g, "lesson 11's sizes", 2, 4, 8, 16, 2, int_tensor({3, 4}), gen);
    grade_case(g, "a valid length of 1 and of the full length", 2, 5, 6, 8, 3, int_tensor({1, 5}), gen);
    grade_case(g, "one head", 2, 3, 4, 6, 1, int_tensor({2, 3}), gen);
    grade_case(g, "a batch of 1, one position", 1, 1, 4, 8, 2, int_tensor({1}), gen);
    grade_case(g, "no valid lengths", 2, 3, 4, 8, 2, IntTensor(), gen);

    for (const TorchCase& c : g.torch_cases("11/")) {
      IntTensor lens = c.i("valid_lens");
      g.begin_case("PyTorch: " + c.name, fmt::format("X {}, valid_lens {}", c.f("x0").shape(), values(lens)));
      std::vector<Tensor> params;
      for (const auto& [key, value] : c.floats)
        if (key.rfind("p.", 0) == 0) params.push_back(c.f(key));
      auto blk = block_of(c, params, gen);
      g.check_torch(
          {"output", "against d2l's encoder block in PyTorch, float64"},
          [&](const std::vector<Tensor>& x) { return encoder_block(*blk, x[0], lens).output; }, c);
    }

    g.begin_case("gradcheck", "X (2, 3, 4), valid_lens [2, 3], one head");
    nn::TransformerEncoderBlock blk(4, 6, 1, 0.0f, false, gen);
    blk.eval();
    IntTensor lens = int_tensor({2, 3});
    g.check_gradients(
        "of the output with respect to X",
        [&](const std::vector<Tensor>& x) { return encoder_block(blk, x[0], lens).output; }, {randn({2, 3, 4}, gen)},
        with_parameters({{"valid_lens", lens}}, blk, "blk"));
  });
}
