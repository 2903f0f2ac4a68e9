// The rest of the bad-input table: the public functions that
// tools/hardening_coverage.py found without a row in the other files (the
// operators on tensors, the core's checked arithmetic, init, Module's
// traversal on a member given a bad tensor, the Transformer's blocks and the
// checkpoint writer). Each row names the function it feeds.
#include <doctest/doctest.h>
#include <qkv/qkv.hpp>

#include <cstdint>
#include <limits>
#include <memory>
#include <string>

#include "hardening/bad_input.hpp"
#include "io/io_test_util.hpp"

using namespace qkv;
using qkv::test::BadInput;
using qkv::test::check_bad_inputs;
using qkv::test::check_bad_inputs_naming_op;
using namespace qkv::test::extremes;

TEST_CASE("hardening/core: checked arithmetic, indices, state dicts and printing") {
  check_bad_inputs({
      {"int_tensor: values do not fill the shape",
       [] {
         int_tensor({1, 2, 3}, {2, 2});
       },
       "3 values do not fill shape (2, 2)"},
      {"int_tensor: a negative size whose product matches",
       [] {
         int_tensor({1, 2, 3, 4}, {-2, -2});
       },
       "negative size"},
      {"Shape::numel: a product past int64",
       [] {
         (void)Shape{kMax, 2}.numel();
       },
       "shape (9223372036854775807, 2): the number of elements overflows int64"},
      {"checked_mul: INT64_MAX · 2", [] { checked_mul(kMax, 2, "op"); }, "op: 9223372036854775807 * 2 overflows int64"},
      {"checked_mul: INT64_MIN · -1", [] { checked_mul(kMin, -1, "op"); }, "overflows int64"},
      {"checked_numel: sizes whose product overflows int64",
       [] {
         checked_numel(Shape{kMax, 2}, "op");
       },
       "op: shape (9223372036854775807, 2): the number of elements overflows int64"},
      {"checked_add: INT64_MAX + 1", [] { checked_add(kMax, 1, "op"); }, "op: 9223372036854775807 + 1 overflows int64"},
      {"checked_add: INT64_MIN + -1", [] { checked_add(kMin, -1, "op"); }, "overflows int64"},
      {"normalize_dim: dim 2 of 2", [] { normalize_dim(2, 2, "op"); },
       "op: dim 2 out of range for a 2-d tensor (expected -2 … 1)"},
      {"normalize_dim: dim INT64_MIN", [] { normalize_dim(kMin, 3, "op"); },
       "op: dim -9223372036854775808 out of range"},
      {"normalize_dim: dim 1 of a 0-d tensor", [] { normalize_dim(1, 0, "op"); },
       "op: dim 1 out of range for a 0-d tensor (expected -1 … 0)"},
      {"flat_index: index past the end",
       [] {
         flat_index(Shape{2, 3}, {1, 3}, "op");
       },
       "op: index 3 out of range"},
      {"flat_index: too few indices",
       [] {
         flat_index(Shape{2, 3}, {1}, "op");
       },
       "op: 1 indices for a tensor"},
      {"validate_state_dict: a mis-shaped entry",
       [] {
         validate_state_dict({{"w", zeros({2})}}, {{"w", Shape{3}}}, true, "here", "model");
       },
       "here: 'w' has shape (2) in the state dict, (3) in the model"},
      {"validate_state_dict: a missing key (strict)",
       [] {
         validate_state_dict({}, {{"w", Shape{3}}}, true, "here", "model");
       },
       "here: missing keys [w], unexpected keys []"},
      {"validate_state_dict: an undefined entry",
       [] {
         validate_state_dict({{"w", Tensor()}}, {{"w", Shape{3}}}, false, "here", "model");
       },
       "'w' has shape undefined in the state dict"},
      {"broadcast_shapes: (2, 3) and (4)",
       [] {
         broadcast_shapes(Shape{2, 3}, Shape{4}, "op");
       },
       "op: shapes (2, 3) and (4) do not broadcast"},
  });
  SUBCASE("to_string prints an undefined tensor as such, as Python prints None, instead of failing") {
    CHECK(to_string(Tensor()) == "tensor(undefined)");
    CHECK(to_string(IntTensor()) == "tensor(undefined)");
  }
}

TEST_CASE("hardening/ops: the operators on tensors") {
  const Tensor a = ones({2, 3});
  const Tensor b = ones({4});
  check_bad_inputs({
      {"operator+: shapes that do not broadcast", [=] { (void)(a + b); },
       "add: shapes (2, 3) and (4) do not broadcast"},
      {"operator-: shapes that do not broadcast", [=] { (void)(a - b); }, "sub: shapes (2, 3) and (4)"},
      {"operator*: an undefined tensor", [=] { (void)(a * Tensor()); }, "undefined"},
      {"operator/: shapes that do not broadcast", [=] { (void)(a / b); }, "div: shapes (2, 3) and (4)"},
      {"operator-: unary of an undefined tensor", [] { (void)(-Tensor()); }, "undefined"},
      {"operator<: shapes that do not broadcast", [=] { (void)(a < b); }, "lt: shapes (2, 3) and (4)"},
      {"operator<=: shapes that do not broadcast", [=] { (void)(a <= b); }, "le: shapes (2, 3) and (4)"},
      {"operator>: an undefined tensor", [=] { (void)(Tensor() > 1.0f); }, "undefined"},
      {"operator>=: shapes that do not broadcast", [=] { (void)(a >= b); }, "ge: shapes (2, 3) and (4)"},
      {"operator==: shapes that do not broadcast", [=] { (void)(a == b); }, "eq: shapes (2, 3) and (4)"},
      {"operator!=: shapes that do not broadcast", [=] { (void)(a != b); }, "ne: shapes (2, 3) and (4)"},
  });
}

namespace {
// A Linear whose weight member was given a bad tensor after it was made.
std::shared_ptr<nn::Linear> broken(Tensor weight) {
  auto lin = std::make_shared<nn::Linear>(2, 3);
  lin->weight = std::move(weight);
  return lin;
}
}  // namespace

TEST_CASE("hardening/nn: init, Module's walks over a bad member, and the Transformer's blocks") {
  Generator gen(0);
  auto enc_blk = std::make_shared<nn::TransformerEncoderBlock>(8, 16, 2, 0.0f, false, gen);
  auto dec_blk = std::make_shared<nn::TransformerDecoderBlock>(8, 16, 2, 0.0f, 0, gen);
  auto decoder = std::make_shared<nn::TransformerDecoder>(10, 8, 16, 2, 1, 0.0f, gen);
  check_bad_inputs_naming_op({
      {"kaiming_uniform_: a 1-d tensor",
       [] {
         Tensor w = ones({3});
         nn::init::kaiming_uniform_(w);
       },
       "kaiming_uniform_: fan in and fan out need a tensor with at least 2 dims, got (3)"},
      {"ones_: an undefined tensor",
       [] {
         Tensor w;
         nn::init::ones_(w);
       },
       "ones_: w is an undefined tensor"},
      {"zeros_: an undefined tensor",
       [] {
         Tensor w;
         nn::init::zeros_(w);
       },
       "zeros_: w is an undefined tensor"},
      {"Linear::parameters: a weight set to an undefined tensor", [] { broken(Tensor())->parameters(); },
       "Linear: parameter 'weight' holds an undefined tensor; assign it a tensor of shape (3, 2)"},
      {"Linear::named_parameters: a weight of another shape",
       [] {
         broken(ones({2, 3}).requires_grad_())->named_parameters();
       },
       "Linear: parameter 'weight' was registered with shape (3, 2) but holds a tensor of shape (2, 3)"},
      {"Linear::num_parameters: a weight an op made",
       [] {
         Tensor w = ones({3, 2}).requires_grad_();
         broken(w * 2.0f)->num_parameters();
       },
       "Linear: parameter 'weight' holds the result of an op, not a parameter"},
      {"Linear::state_dict: a weight that does not require grad",
       [] {
         broken(ones({3, 2}))->state_dict();
       },
       "Linear: parameter 'weight' holds a tensor that does not require grad"},
      {"Linear::state_spec: an undefined weight", [] { broken(Tensor())->state_spec(); }, "holds an undefined tensor"},
      {"Linear::zero_grad: an undefined weight", [] { broken(Tensor())->zero_grad(); }, "holds an undefined tensor"},
      {"Linear in ModuleList::repr: an undefined weight in a submodule",
       [] {
         nn::ModuleList list;
         list.push_back(broken(Tensor()));
         list.repr();
       },
       "Linear: parameter '0.weight' holds an undefined tensor"},
      {"Linear::load_state_dict: an undefined weight", [] { broken(Tensor())->load_state_dict({}); },
       "holds an undefined tensor"},
      {"Module::load_state_dict: two names of a tied tensor with different values",
       [] {
         auto emb = std::make_shared<nn::Embedding>(3, 2);
         auto lin = std::make_shared<nn::Linear>(2, 3, false);
         lin->weight = emb->weight;
         nn::ModuleList list;
         list.push_back(emb);
         list.push_back(lin);
         list.load_state_dict({{"0.weight", zeros({3, 2})}, {"1.weight", ones({3, 2})}});
       },
       "'0.weight' and '1.weight' are one tied parameter of the model, but the state dict gives them different values"},
      {"MultiHeadAttention in TransformerEncoderBlock: num_heads 3 for 8 hiddens",
       [] { nn::TransformerEncoderBlock(8, 16, 3, 0.0f); },
       "MultiHeadAttention: num_hiddens 8 must be a positive multiple of num_heads 3"},
      {"PositionWiseFFN in TransformerEncoderBlock: ffn_num_hiddens 0",
       [] { nn::TransformerEncoderBlock(8, 0, 2, 0.0f); },
       "PositionWiseFFN: ffn_num_input 8, ffn_num_hiddens 0 and ffn_num_outputs 8 must be positive"},
      {"TransformerEncoderBlock: an undefined X", [=] { (*enc_blk)(Tensor()); }, "undefined"},
      {"TransformerEncoderBlock: X of 7 features for 8",
       [=] {
         enc_blk->forward(ones({1, 2, 7}));
       },
       "TransformerEncoderBlock: X (1, 2, 7): expected (B, T, 8)"},
      {"PositionWiseFFN: X of 3 features for 4",
       [] {
         nn::PositionWiseFFN(4, 8, 4)(ones({2, 3}));
       },
       "PositionWiseFFN: X (2, 3): expected last dim 4 (ffn_num_input)"},
      {"PositionWiseFFN: an undefined X", [] { nn::PositionWiseFFN(4, 8, 4).forward(Tensor()); },
       "PositionWiseFFN: X is an undefined tensor"},
      {"Dropout in TransformerDecoderBlock: dropout 1.5", [] { nn::TransformerDecoderBlock(8, 16, 2, 1.5f, 0); },
       "but got 1.5"},
      {"TransformerDecoderBlock: block index -1", [] { nn::TransformerDecoderBlock(8, 16, 2, 0.0f, -1); },
       "TransformerDecoderBlock: block index i -1 must be ≥ 0"},
      {"TransformerDecoderBlock: a state init_state did not make",
       [=] {
         nn::DecoderState state;
         dec_blk->forward(ones({1, 2, 8}), state);
       },
       "TransformerDecoderBlock 0: state.cache has 0 entries; make the state with TransformerDecoder::init_state"},
      {"TransformerDecoderBlock: 2-d X",
       [=] {
         nn::DecoderState state = decoder->init_state({ones({1, 3, 8}), Tensor()}, int_tensor({3}));
         (*dec_blk)(ones({2, 8}), state);
       },
       "TransformerDecoderBlock 0: X (2, 8): expected (B, S, H)"},
      {"TransformerDecoder::init_state: encoder outputs of 7 features",
       [=] {
         decoder->init_state({ones({1, 3, 7}), Tensor()}, int_tensor({3}));
       },
       "TransformerDecoder: encoder outputs (1, 3, 7): expected (B, T, 8)"},
      {"TransformerDecoder::init_state: 2 lengths for 1 source (refused at the first forward before, or never)",
       [=] {
         decoder->init_state({ones({1, 3, 8}), Tensor()}, int_tensor({3, 3}));
       },
       "TransformerDecoder: enc_valid_lens (2) must be (1), one length per source"},
      {"TransformerDecoder::init_state: (B, T) lengths",
       [=] {
         decoder->init_state({ones({1, 3, 8}), Tensor()}, int_tensor({3, 3, 3}, {1, 3}));
       },
       "enc_valid_lens (1, 3) must be (1)"},
      {"TransformerDecoder::init_state: undefined encoder outputs",
       [=] { decoder->init_state(nn::EncoderOutput{}, IntTensor()); }, "TransformerDecoder"},
      {"from_d2l_names: two names that become one",
       [] {
         nn::from_d2l_names({{"blks.0.w", ones({1})}, {"blks.block0.w", ones({1})}});
       },
       "from_d2l_names: 'blks.0.w' and 'blks.block0.w' both become 'blks.0.w'"},
  });
}

TEST_CASE("hardening/data and io: rows by index, checkpoint writing") {
  test::TempDir dir("hardening_entry_points");
  const auto folder = dir.path;
  const data::TensorDataset<Tensor, IntTensor> dataset(ones({3, 2}), int_tensor({0, 1, 2}));
  check_bad_inputs({
      {"TensorDataset::rows: index 3 of 3",
       [&] {
         dataset.rows({0, 3});
       },
       "example index 3 is out of range for 3 examples"},
      {"TensorDataset::rows: index INT64_MIN", [&] { dataset.rows({kMin}); }, "example index -9223372036854775808"},
      {"save_checkpoint: a path that is a folder",
       [=] {
         nn::Linear model(2, 1);
         io::save_checkpoint(folder.string() + "/", model);
       },
       "not a file name"},
      {"save_checkpoint: a model with a bad parameter",
       [=] { io::save_checkpoint(folder / "bad.safetensors", *broken(Tensor())); },
       "Linear: parameter 'weight' holds an undefined tensor"},
      {"save_checkpoint: a model parameter named like the optimizer's entries",
       [=] {
         auto inner = std::make_shared<nn::ModuleList>();
         inner->push_back(std::make_shared<nn::Linear>(1, 1));
         // register_module refuses dots, so the clash needs a list named "optimizer"
         struct Named : nn::Module {
           std::string type_name() const override { return "Named"; }
           explicit Named(std::shared_ptr<nn::Module> m) { register_module("optimizer", std::move(m)); }
         };
         Named named(inner);
         io::save_checkpoint(folder / "clash.safetensors", named);
       },
       "save_checkpoint: '" + (folder / "clash.safetensors").string() +
           "': the model's parameter 'optimizer.0.bias' collides with the optimizer's 'optimizer.' prefix"},
  });
}
