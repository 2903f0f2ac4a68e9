// Bad and extreme input for the nn layers and modules: sizes of 0, negative
// and at the end of int64 in constructors (which must fail before allocating
// anything), probabilities outside [0, 1] or NaN, and forward calls with
// undefined, 0-d, empty and mis-shaped tensors and out-of-range ids.
//
// Expected behaviour comes from PyTorch where it has one (nn.Dropout(1.5):
// "dropout probability has to be between 0 and 1") and otherwise from the
// layer's own contract (shapes in its header comment).
#include <doctest/doctest.h>
#include <qkv/qkv.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include "hardening/bad_input.hpp"

using namespace qkv;
using qkv::test::BadInput;
using qkv::test::check_bad_inputs_naming_op;
using namespace qkv::test::extremes;

namespace {
constexpr int64_t k2to31 = int64_t{1} << 31;
}  // namespace

TEST_CASE("hardening/nn: bad sizes in the layers' constructors fail before allocating") {
  check_bad_inputs_naming_op({
      {"Linear: in_features 0", [] { nn::Linear(0, 3); }, "Linear: in_features 0 and out_features 3 must be positive"},
      {"Linear: out_features negative", [] { nn::Linear(3, -1); }, "must be positive"},
      {"Linear: in_features · out_features overflows int64", [] { nn::Linear(kMax, kMax); },
       "shape (9223372036854775807, 9223372036854775807): the number of elements overflows int64"},
      {"Linear: 2³¹ × 2³¹ weights (16 EiB)", [] { nn::Linear(k2to31, k2to31); },
       "shape (2147483648, 2147483648) has 4611686018427387904 elements of 4 bytes, more than"},
      {"Conv1d: kernel_size 0", [] { nn::Conv1d(2, 3, 0); }, "Conv1d: in_channels 2, out_channels 3 and kernel_size 0"},
      {"Conv1d: stride 0", [] { nn::Conv1d(2, 3, 2, 0); }, "Conv1d: stride 0 and dilation 1 must be ≥ 1"},
      {"Conv1d: negative padding", [] { nn::Conv1d(2, 3, 2, 1, -1); }, "padding -1 ≥ 0"},
      {"Conv1d: dilation INT64_MIN", [] { nn::Conv1d(2, 3, 2, 1, 0, std::numeric_limits<int64_t>::min()); },
       "must be ≥ 1"},
      {"Conv1d: weights overflow int64", [] { nn::Conv1d(kMax, kMax, 2); }, "overflows int64"},
      {"Dropout: p = -0.1", [] { nn::Dropout(-0.1f); }, "Dropout: probability has to be between 0 and 1, but got -0.1"},
      {"Dropout: p = 1.5", [] { nn::Dropout(1.5f); }, "but got 1.5"},
      {"Dropout: p = NaN", [] { nn::Dropout{kNaN}; }, "but got nan"},
      {"Embedding: 0 embeddings", [] { nn::Embedding(0, 4); }, "Embedding: num_embeddings 0 and embedding_dim 4"},
      {"Embedding: dim negative", [] { nn::Embedding(4, -2); }, "must be positive"},
      {"Embedding: table overflows int64", [] { nn::Embedding(kMax, 2); }, "overflows int64"},
      {"LayerNorm: empty shape", [] { nn::LayerNorm(Shape{}); }, "LayerNorm: normalized_shape is empty"},
      {"LayerNorm: a size 0",
       [] {
         nn::LayerNorm(Shape{3, 0});
       },
       "LayerNorm: normalized_shape (3, 0) must have"},
      {"LayerNorm: eps negative", [] { nn::LayerNorm(4, -1e-5f); },
       "LayerNorm: eps must be finite and ≥ 0, got -1e-05"},
      {"LayerNorm: eps NaN", [] { nn::LayerNorm(4, kNaN); }, "eps must be finite and ≥ 0, got nan"},
      {"LayerNorm: eps inf (every output 0)", [] { nn::LayerNorm(4, kInf); }, "eps must be finite and ≥ 0, got inf"},
      {"LayerNorm: shape overflows int64",
       [] {
         nn::LayerNorm(Shape{kMax, 2});
       },
       "overflows int64"},
      {"RNN: input_size 0", [] { nn::RNN(0, 3); }, "RNN: input_size must be positive, got 0"},
      {"GRU: hidden_size 0", [] { nn::GRU(3, 0); }, "GRU: hidden_size must be positive, got 0"},
      {"LSTM: num_layers 0", [] { nn::LSTM(3, 3, 0); }, "LSTM: num_layers must be positive, got 0"},
      {"LSTM: dropout 1", [] { nn::LSTM(3, 3, 2, true, false, 1.0f); }, "LSTM: dropout must be in [0, 1), got 1"},
      {"GRU: dropout NaN", [] { nn::GRU(3, 3, 2, true, false, kNaN); }, "dropout must be in [0, 1), got nan"},
      {"LSTM: (4·hidden_size, input_size) weights overflow int64", [] { nn::LSTM(k2to31, k2to31); },
       "shape (8589934592, 2147483648): the number of elements overflows int64"},
      {"RNN: num_layers INT64_MAX (std::length_error from the layer vectors)", [] { nn::RNN(2, 2, kMax); },
       "RNN: num_layers 9223372036854775807 of 4 parameters each is more than the 70368744177664 floats that can be "
       "addressed"},
      {"GRU: num_layers 2⁴⁴ of 3·H·H weights", [] { nn::GRU(2, 4, int64_t{1} << 44); },
       "GRU: num_layers 17592186044416 of 48 parameters each is more than"},
      {"TransformerEncoder: 2⁴⁰ blocks (std::bad_alloc, or memory filled block by block)",
       [] { nn::TransformerEncoder(10, 8, 16, 2, int64_t{1} << 40, 0.0f); },
       "TransformerEncoder: num_blks 1099511627776 of 568 parameters each is more than"},
      {"TransformerDecoder: INT64_MAX blocks", [] { nn::TransformerDecoder(10, 8, 16, 2, kMax, 0.0f); },
       "TransformerDecoder: num_blks 9223372036854775807 of"},
      {"MultiHeadAttention: num_hiddens not a multiple of num_heads", [] { nn::MultiHeadAttention(10, 3, 0.0f); },
       "MultiHeadAttention: num_hiddens 10 must be a positive multiple of num_heads 3"},
      {"MultiHeadAttention: 0 heads", [] { nn::MultiHeadAttention(8, 0, 0.0f); }, "multiple of num_heads 0"},
      {"MultiHeadAttention: negative heads", [] { nn::MultiHeadAttention(8, -2, 0.0f); }, "multiple of num_heads -2"},
      {"MultiHeadAttention: key_size 0", [] { nn::MultiHeadAttention(0, 4, 4, 8, 2, 0.0f); },
       "MultiHeadAttention: key_size 0, query_size 4, value_size 4 must be positive"},
      {"Dropout in MultiHeadAttention: dropout 2", [] { nn::MultiHeadAttention(8, 2, 2.0f); }, "but got 2"},
      {"Dropout in DotProductAttention: dropout -1", [] { nn::DotProductAttention(-1.0f); }, "but got -1"},
      {"Linear in AdditiveAttention: num_hiddens 0", [] { nn::AdditiveAttention(2, 2, 0, 0.0f); },
       "Linear: in_features 2 and out_features 0 must be positive"},
      {"PositionalEncoding: max_len 0", [] { nn::PositionalEncoding(4, 0.0f, 0); },
       "PositionalEncoding: num_hiddens 4 and max_len 0 must be positive"},
      {"PositionalEncoding: table overflows int64", [] { nn::PositionalEncoding(kMax, 0.0f, kMax); },
       "the number of elements overflows int64"},
      {"PositionWiseFFN: 0 hiddens", [] { nn::PositionWiseFFN(4, 0, 4); },
       "PositionWiseFFN: ffn_num_input 4, ffn_num_hiddens 0 and ffn_num_outputs 4 must be positive"},
      {"TransformerEncoder: 0 blocks", [] { nn::TransformerEncoder(10, 8, 16, 2, 0, 0.0f); },
       "TransformerEncoder: num_blks 0 must be positive"},
      {"TransformerEncoder: -1 blocks", [] { nn::TransformerEncoder(10, 8, 16, 2, -1, 0.0f); },
       "TransformerEncoder: num_blks -1 must be positive"},
      {"TransformerDecoder: 0 blocks", [] { nn::TransformerDecoder(10, 8, 16, 2, 0, 0.0f); },
       "TransformerDecoder: num_blks 0 must be positive"},
      {"Seq2SeqEncoder: vocab 0", [] { nn::Seq2SeqEncoder(0, 4, 4, 1); },
       "Seq2SeqEncoder: vocab_size 0, embed_size 4, num_hiddens 4 and num_layers 1 must be positive"},
      {"Seq2SeqAttentionDecoder: dropout 1", [] { nn::Seq2SeqAttentionDecoder(5, 4, 4, 1, 1.0f); },
       "dropout 1 must be in [0, 1)"},
      {"EncoderDecoder: null parts", [] { nn::EncoderDecoder(nullptr, nullptr); },
       "EncoderDecoder: the encoder and the decoder must not be null"},
  });
}

TEST_CASE("hardening/nn: a stack of layers the machine cannot hold is a qkv::Error, not std::bad_alloc") {
  // 2⁴⁰ layers of 16 weights pass the address-space check (2⁴⁴ floats), and
  // the 16 TiB of layer handles is really asked for: see bad_input.hpp.
  if (!qkv::test::huge_allocations_fail()) return;
  check_bad_inputs_naming_op({
      {"LSTM: num_layers 2⁴⁰ (std::bad_alloc from the layer vectors)", [] { nn::LSTM(2, 2, int64_t{1} << 40); },
       "LSTM: out of memory making room for num_layers 1099511627776"},
  });
}

TEST_CASE("hardening/nn: bad input to the layers' forward") {
  Generator gen(0);
  auto linear = std::make_shared<nn::Linear>(4, 3, true, gen);
  auto conv = std::make_shared<nn::Conv1d>(2, 3, 3, 1, 0, 1, true, gen);
  auto dropout = std::make_shared<nn::Dropout>(0.5f, gen);
  auto embedding = std::make_shared<nn::Embedding>(5, 4, gen);
  auto norm = std::make_shared<nn::LayerNorm>(4);
  auto gru = std::make_shared<nn::GRU>(4, 3, 2, true, false, 0.0f, gen);
  auto lstm = std::make_shared<nn::LSTM>(4, 3, 1, true, false, 0.0f, gen);
  auto rnn = std::make_shared<nn::RNN>(4, 3, 1, true, false, 0.0f, gen);
  auto dot = std::make_shared<nn::DotProductAttention>(0.0f, gen);
  auto mha = std::make_shared<nn::MultiHeadAttention>(8, 2, 0.0f, false, gen);
  auto additive = std::make_shared<nn::AdditiveAttention>(4, 4, 6, 0.0f, gen);
  auto pos = std::make_shared<nn::PositionalEncoding>(4, 0.0f, 10, gen);
  auto addnorm = std::make_shared<nn::AddNorm>(Shape{4}, 0.0f, gen);
  auto encoder = std::make_shared<nn::TransformerEncoder>(10, 8, 16, 2, 1, 0.0f, false, gen);

  check_bad_inputs_naming_op({
      // Linear: x (…, in)
      {"Linear: undefined x", [=] { (*linear)(Tensor()); }, "linear: x is an undefined tensor"},
      {"Linear: 0-d x", [=] { (*linear)(scalar_tensor(1)); },
       "linear: input () and weight (3, 4): need an input with ≥ 1 dim"},
      {"Linear: last dim 5 for in_features 4",
       [=] {
         (*linear)(ones({2, 5}));
       },
       "linear: input (2, 5) x weight (3, 4): the input has 5 features, the weight expects 4"},
      // Conv1d: x (B, C, L)
      {"Conv1d: undefined x", [=] { (*conv)(Tensor()); }, "Conv1d: x is an undefined tensor"},
      {"conv1d: undefined input", [=] { conv1d(Tensor(), conv->weight); }, "conv1d: input is an undefined tensor"},
      {"im2col1d: undefined input", [] { im2col1d(Tensor(), 3); }, "im2col1d: input is an undefined tensor"},
      {"conv1d: undefined weight",
       [=] {
         conv1d(ones({1, 2, 5}), Tensor());
       },
       "conv1d: weight is an undefined tensor"},
      {"Conv1d: 2-d x",
       [=] {
         (*conv)(ones({2, 5}));
       },
       "conv1d: input (2, 5) must be 3-D (N, C_in, L)"},
      {"Conv1d: dilation INT64_MAX (the span wrapped to a positive size: a (1, 3, 6) result)",
       [] {
         nn::Conv1d(2, 3, 3, 1, 0, kMax)(ones({1, 2, 4}));
       },
       "conv1d: kernel size 3 with dilation 9223372036854775807: the span d·(K − 1) + 1 overflows int64"},
      {"Conv1d: dilation 2⁶² (the span wrapped negative)",
       [] {
         nn::Conv1d(2, 3, 3, 1, 0, k2to62)(ones({1, 2, 4}));
       },
       "the span d·(K − 1) + 1 overflows int64"},
      {"Conv1d: padding INT64_MAX",
       [] {
         nn::Conv1d(2, 3, 3, 1, kMax)(ones({1, 2, 4}));
       },
       "conv1d: input (1, 2, 4) padded by 9223372036854775807 on each side: the padded length overflows int64"},
      {"im2col1d: dilation INT64_MAX",
       [] {
         im2col1d(ones({1, 2, 4}), 3, 1, 0, kMax);
       },
       "im2col1d: kernel size 3 with dilation 9223372036854775807: the span"},
      {"Conv1d: stride INT64_MAX and a kernel longer than the input",
       [] {
         nn::Conv1d(2, 3, 6, kMax)(ones({1, 2, 4}));
       },
       "spans 6 positions, so L_out = 0 < 1"},
      {"Conv1d: 3 channels for 2",
       [=] {
         (*conv)(ones({1, 3, 5}));
       },
       "conv1d: input (1, 3, 5) has 3 channels, but weight (3, 2, 3) expects 2"},
      {"Conv1d: length 2 shorter than the kernel 3",
       [=] {
         (*conv)(ones({1, 2, 2}));
       },
       "conv1d: input (1, 2, 2) is too short"},
      // Dropout
      {"Dropout: undefined x", [=] { (*dropout)(Tensor()); }, "dropout: x is an undefined tensor"},
      // Embedding: ids (…) in [0, V)
      {"Embedding: undefined ids", [=] { (*embedding)(IntTensor()); }, "Embedding: ids is an undefined IntTensor"},
      {"Embedding: id V",
       [=] {
         (*embedding)(int_tensor({1, 5}));
       },
       "embedding: index 5 out of range for a weight of 5 rows (5, 4)"},
      {"Embedding: id -1", [=] { (*embedding)(int_tensor({-1})); }, "embedding: index -1 out of range"},
      {"Embedding: id INT64_MIN", [=] { (*embedding)(int_tensor({std::numeric_limits<int64_t>::min()})); },
       "embedding: index -9223372036854775808 out of range"},
      // LayerNorm: x (…, 4)
      {"LayerNorm: undefined x", [=] { (*norm)(Tensor()); }, "layer_norm: x is an undefined tensor"},
      {"LayerNorm: last dim 3 for (4)",
       [=] {
         (*norm)(ones({2, 3}));
       },
       "layer_norm: normalized_shape (4) does not match the trailing dims of x (2, 3)"},
      {"LayerNorm: 0-d x", [=] { (*norm)(scalar_tensor(1)); }, "does not match the trailing dims of x ()"},
      // RNNs: x (T, B, I) or (T, I)
      {"GRU: undefined x", [=] { (*gru)(Tensor()); }, "GRU: input is an undefined tensor"},
      {"LSTM: undefined x", [=] { (*lstm)(Tensor()); }, "LSTM: input is an undefined tensor"},
      {"RNN: undefined x", [=] { (*rnn)(Tensor()); }, "RNN: input is an undefined tensor"},
      {"GRU: 1-d x", [=] { (*gru)(ones({4})); }, "GRU: input (4): expected 3 dims"},
      {"GRU: input size 5 for 4",
       [=] {
         (*gru)(ones({2, 1, 5}));
       },
       "GRU: input (2, 1, 5): expected last dim input_size 4"},
      {"GRU: no time steps",
       [=] {
         (*gru)(ones({0, 1, 4}));
       },
       "GRU: input (0, 1, 4) has no time steps"},
      {"GRU: h0 of the wrong layers",
       [=] {
         (*gru)(ones({2, 1, 4}), zeros({1, 1, 3}));
       },
       "GRU: h0 (1, 1, 3): expected (2, 1, 3) (num_layers, batch, hidden_size)"},
      {"LSTM: h0 without c0",
       [=] {
         (*lstm)(ones({2, 1, 4}), zeros({1, 1, 3}));
       },
       "LSTM: give both h0 and c0, or neither"},
      // Attention: queries (B, Q, D), keys (B, K, D), values (B, K, Dv)
      {"DotProductAttention: undefined queries",
       [=] {
         (*dot)(Tensor(), ones({1, 3, 4}), ones({1, 3, 4}));
       },
       "DotProductAttention: queries is an undefined tensor"},
      {"DotProductAttention: undefined keys",
       [=] {
         (*dot)(ones({1, 2, 4}), Tensor(), ones({1, 3, 4}));
       },
       "DotProductAttention: keys is an undefined tensor"},
      {"DotProductAttention: undefined values",
       [=] {
         (*dot)(ones({1, 2, 4}), ones({1, 3, 4}), Tensor());
       },
       "DotProductAttention: values is an undefined tensor"},
      {"AdditiveAttention: undefined keys",
       [=] {
         (*additive)(ones({1, 2, 4}), Tensor(), ones({1, 2, 4}));
       },
       "AdditiveAttention: keys is an undefined tensor"},
      {"MultiHeadAttention: undefined queries",
       [=] {
         (*mha)(Tensor(), ones({1, 2, 8}), ones({1, 2, 8}));
       },
       "MultiHeadAttention: queries is an undefined tensor"},
      {"MultiHeadAttention: undefined values",
       [=] {
         (*mha)(ones({1, 2, 8}), ones({1, 2, 8}), Tensor());
       },
       "MultiHeadAttention: values is an undefined tensor"},
      {"DotProductAttention: 2-d queries",
       [=] {
         (*dot)(ones({2, 4}), ones({1, 3, 4}), ones({1, 3, 4}));
       },
       "expected 3-D (B, Q, D), (B, K, D), (B, K, Dv)"},
      {"DotProductAttention: batch sizes differ",
       [=] {
         (*dot)(ones({2, 2, 4}), ones({1, 3, 4}), ones({1, 3, 4}));
       },
       "batch sizes differ"},
      {"DotProductAttention: more keys than values",
       [=] {
         (*dot)(ones({1, 2, 4}), ones({1, 3, 4}), ones({1, 2, 4}));
       },
       "expected one value per key"},
      {"DotProductAttention: valid_lens of the wrong size",
       [=] {
         (*dot)(ones({2, 2, 4}), ones({2, 3, 4}), ones({2, 3, 4}), int_tensor({1, 2, 3}));
       },
       "valid_lens (3) does not fit queries (2, 2, 4)"},
      {"MultiHeadAttention: query size 7 for 8",
       [=] {
         (*mha)(ones({1, 2, 7}), ones({1, 2, 8}), ones({1, 2, 8}));
       },
       "expected last dim 8"},
      {"AdditiveAttention: key size 5 for 4",
       [=] {
         (*additive)(ones({1, 2, 4}), ones({1, 2, 5}), ones({1, 2, 4}));
       },
       "expected last dim 4"},
      {"transpose_qkv: 0 heads",
       [] {
         nn::transpose_qkv(ones({1, 2, 4}), 0);
       },
       "transpose_qkv: X (1, 2, 4) with 0 heads"},
      {"transpose_qkv: heads not dividing H",
       [] {
         nn::transpose_qkv(ones({1, 2, 4}), 3);
       },
       "with 3 heads"},
      {"transpose_output: heads not dividing the batch",
       [] {
         nn::transpose_output(ones({3, 2, 4}), 2);
       },
       "transpose_output: X (3, 2, 4) with 2 heads"},
      // Transformer parts
      {"PositionalEncoding: H 3 for 4",
       [=] {
         (*pos)(ones({1, 2, 3}));
       },
       "PositionalEncoding: X (1, 2, 3): expected (B, T, 4)"},
      {"PositionalEncoding: 11 steps for max_len 10",
       [=] {
         (*pos)(ones({1, 11, 4}));
       },
       "PositionalEncoding: positions 0 to 10 do not fit max_len 10"},
      {"PositionalEncoding: undefined X", [=] { (*pos)(Tensor()); }, "PositionalEncoding: X is an undefined tensor"},
      {"PositionalEncoding: offset INT64_MAX (offset + T overflows int64)",
       [=] {
         (*pos)(ones({1, 2, 4}), kMax);
       },
       "PositionalEncoding: offset 9223372036854775807 is past max_len 10"},
      {"PositionalEncoding: offset max_len - 1 for 2 steps",
       [=] {
         (*pos)(ones({1, 2, 4}), 9);
       },
       "PositionalEncoding: positions 9 to 10 do not fit max_len 10"},
      {"PositionalEncoding: offset INT64_MIN",
       [=] {
         (*pos)(ones({1, 2, 4}), std::numeric_limits<int64_t>::min());
       },
       "PositionalEncoding: offset -9223372036854775808 must be ≥ 0"},
      {"PositionalEncoding: offset -1",
       [=] {
         (*pos)(ones({1, 2, 4}), -1);
       },
       "PositionalEncoding: offset -1 must be ≥ 0"},
      {"AddNorm: shapes differ",
       [=] {
         (*addnorm)(ones({2, 4}), ones({1, 4}));
       },
       "AddNorm: X (2, 4) and Y (1, 4)"},
      {"TransformerEncoder: 1-d ids",
       [=] {
         (*encoder)(int_tensor({1, 2}), int_tensor({2}));
       },
       "TransformerEncoder: X (2): expected token ids (B, T)"},
      {"embedding in TransformerEncoder: id 10 for vocabulary 10",
       [=] {
         (*encoder)(int_tensor({1, 10}, {1, 2}), int_tensor({2}));
       },
       "embedding: index 10 out of range for a weight of 10 rows (10, 8)"},
      // Losses
      {"masked_softmax_cross_entropy: 2-d pred",
       [] {
         nn::masked_softmax_cross_entropy(ones({2, 3}), int_tensor({0, 1}), int_tensor({1, 1}));
       },
       "masked_softmax_cross_entropy: pred (2, 3) must be (B, S, V)"},
      {"masked_softmax_cross_entropy: label id V",
       [] {
         nn::masked_softmax_cross_entropy(ones({1, 2, 3}), int_tensor({0, 3}, {1, 2}), int_tensor({2}));
       },
       "label[0, 1] = 3 is not a token id in [0, 3)"},
      {"masked_softmax_cross_entropy: valid_len of the wrong size",
       [] {
         nn::masked_softmax_cross_entropy(ones({1, 2, 3}), int_tensor({0, 1}, {1, 2}), int_tensor({2, 2}));
       },
       "valid_len (2) does not fit pred (1, 2, 3)"},
  });
}

TEST_CASE("hardening/nn: bad input to EncoderDecoder") {
  Generator gen(0);
  nn::EncoderDecoder model(std::make_shared<nn::Seq2SeqEncoder>(10, 4, 4, 1, 0.0f, gen),
                           std::make_shared<nn::Seq2SeqAttentionDecoder>(10, 4, 4, 1, 0.0f, gen));
  nn::EncoderDecoder* m = &model;
  check_bad_inputs_naming_op({
      {"EncoderDecoder: 1-d enc_X",
       [=] {
         m->forward(int_tensor({1, 2}), int_tensor({1, 2}, {1, 2}), int_tensor({2}));
       },
       "EncoderDecoder: enc_X (2) and dec_X (1, 2) must be (batch, steps) with the same batch"},
      {"EncoderDecoder: batches differ",
       [=] {
         m->forward(int_tensor({1, 2}, {1, 2}), int_tensor({1, 2}, {2, 1}), int_tensor({2}));
       },
       "with the same batch"},
      {"embedding in EncoderDecoder: an id past the vocabulary",
       [=] {
         m->forward(int_tensor({1, 10}, {1, 2}), int_tensor({1, 2}, {1, 2}), int_tensor({2}));
       },
       "embedding: index 10 out of range for a weight of 10 rows (10, 4)"},
      {"EncoderDecoder::predict: an empty source", [=] { m->predict({}, 4, 0, 1, 2, 5); },
       "EncoderDecoder::predict: the source is empty"},
      {"EncoderDecoder::predict: num_steps 0",
       [=] {
         m->predict({3, 2}, 0, 0, 1, 2, 5);
       },
       "EncoderDecoder::predict: num_steps 0 must be positive and max_len 5 not negative"},
      {"EncoderDecoder::predict: max_len -1",
       [=] {
         m->predict({3, 2}, 4, 0, 1, 2, -1);
       },
       "max_len -1 not negative"},
      {"EncoderDecoder::predict: num_steps INT64_MAX",
       [=] {
         m->predict({3, 2}, kMax, 0, 1, 2, 5);
       },
       "EncoderDecoder::predict: num_steps 9223372036854775807 is too large to allocate"},
      {"EncoderDecoder::predict: a negative source id",
       [=] {
         m->predict({3, -2}, 4, 0, 1, 2, 5);
       },
       "EncoderDecoder::predict: src[1] = -2 is not a token id"},
      {"EncoderDecoder::predict: a negative bos",
       [=] {
         m->predict({3, 2}, 4, 0, -1, 2, 5);
       },
       "EncoderDecoder::predict: pad 0, bos -1 and eos 2 must be token ids"},
      {"embedding in EncoderDecoder::predict: a source id past the vocabulary",
       [=] {
         m->predict({3, 10}, 4, 0, 1, 2, 5);
       },
       "embedding: index 10 out of range"},
      {"EncoderDecoder::predict: eos past the decoder's vocabulary (it would never stop before max_len)",
       [=] {
         m->predict({3, 2}, 4, 0, 1, 10, 5);
       },
       "EncoderDecoder::predict: eos 10 is not one of the decoder's 10 output tokens"},
      {"embedding in EncoderDecoder::predict: bos past the vocabulary",
       [=] {
         m->predict({3, 2}, 4, 0, 10, 2, 5);
       },
       "embedding: index 10 out of range"},
  });
  CHECK(model.is_training());  // a failed predict puts the mode back

  // The parts on their own: an encoder (B, T) -> (B, T, 4), a decoder whose
  // state comes from init_state for one batch.
  auto encoder = std::make_shared<nn::Seq2SeqEncoder>(10, 4, 4, 1, 0.0f, gen);
  auto decoder = std::make_shared<nn::Seq2SeqAttentionDecoder>(10, 4, 4, 1, 0.0f, gen);
  const nn::EncoderOutput enc = encoder->forward(int_tensor({1, 2, 3}, {1, 3}));  // batch 1
  check_bad_inputs_naming_op({
      {"Seq2SeqEncoder: 1-d X",
       [=] {
         encoder->forward(int_tensor({1, 2}));
       },
       "Seq2SeqEncoder: X (2) must be (batch, steps) token ids"},
      {"GRU in Seq2SeqEncoder: no steps",
       [=] {
         encoder->forward(IntTensor::empty({1, 0}));
       },
       "has no time steps"},
      {"Seq2SeqAttentionDecoder: init_state of an empty EncoderOutput",
       [=] { decoder->init_state(nn::EncoderOutput{}, IntTensor()); },
       "Seq2SeqAttentionDecoder: init_state needs an RNN encoder's outputs and final state"},
      {"Seq2SeqAttentionDecoder: init_state with 2 lengths for 1 source",
       [=] {
         decoder->init_state(enc, int_tensor({3, 3}));
       },
       "Seq2SeqAttentionDecoder: enc_valid_lens (2) must be (1), one length per source"},
      {"Seq2SeqAttentionDecoder: forward without init_state",
       [=] {
         nn::DecoderState state;
         decoder->forward(int_tensor({1}, {1, 1}), state);
       },
       "X (1, 1) does not fit the state (hidden undefined, enc_outputs undefined): call init_state first"},
      {"Seq2SeqAttentionDecoder: forward of a batch of 2 on a state for 1",
       [=] {
         nn::DecoderState state = decoder->init_state(enc, int_tensor({3}));
         decoder->forward(int_tensor({1, 1}, {2, 1}), state);
       },
       "X (2, 1) does not fit the state (hidden (1, 1, 4), enc_outputs (1, 3, 4))"},
      {"Seq2SeqAttentionDecoder: forward of no steps",
       [=] {
         nn::DecoderState state = decoder->init_state(enc, int_tensor({3}));
         decoder->forward(IntTensor::empty({1, 0}), state);
       },
       "Seq2SeqAttentionDecoder: X (1, 0) has no steps"},
  });
}

TEST_CASE("hardening/nn: bad input to init, Module and ModuleList") {
  check_bad_inputs_naming_op({
      {"fan_in_and_fan_out: a 1-d tensor", [] { nn::init::fan_in_and_fan_out(ones({3})); },
       "fan_in_and_fan_out: fan in and fan out need a tensor with at least 2 dims, got (3)"},
      {"xavier_uniform_: a 0-d tensor",
       [] {
         Tensor w = scalar_tensor(1);
         nn::init::xavier_uniform_(w);
       },
       "at least 2 dims, got ()"},
      {"uniform_: an undefined tensor",
       [] {
         Tensor w;
         nn::init::uniform_(w, 0, 1);
       },
       "uniform_: w is an undefined tensor"},
      {"uniform_: low > high",
       [] {
         Tensor w = zeros({2});
         nn::init::uniform_(w, 1, 0);
       },
       "uniform_: the range [low, high) must have finite low ≤ high, got low 1 and high 0"},
      {"uniform_: an infinite bound",
       [] {
         Tensor w = zeros({2});
         nn::init::uniform_(w, 0, kInf);
       },
       "got low 0 and high inf"},
      {"normal_: std < 0",
       [] {
         Tensor w = zeros({2});
         nn::init::normal_(w, 0, -1);
       },
       "normal_: needs a finite mean and a finite std ≥ 0, got mean 0 and std -1"},
      {"normal_: NaN mean",
       [] {
         Tensor w = zeros({2});
         nn::init::normal_(w, kNaN, 1);
       },
       "got mean nan and std 1"},
      {"xavier_normal_: gain NaN",
       [] {
         Tensor w = zeros({2, 2});
         nn::init::xavier_normal_(w, kNaN);
       },
       "xavier_normal_: needs a finite mean and a finite std ≥ 0, got mean 0 and std nan"},
      {"uniform_: into an op's result (it changed numbers backward reads)",
       [] {
         Tensor p = ones({2, 2}).requires_grad_();
         Tensor w = p * p;  // MulBackward keeps p, and w's storage is its own: still a graph node
         nn::init::uniform_(w, 0, 1);
       },
       "uniform_: w (2, 2) is the result of an op (MulBackward), not a parameter"},
      {"xavier_uniform_: into an op's result",
       [] {
         Tensor w = ones({2, 2}).requires_grad_() * 2.0f;
         nn::init::xavier_uniform_(w);
       },
       "xavier_uniform_: w (2, 2) is the result of an op"},
      {"constant_: into an op's result",
       [] {
         Tensor w = ones({2}).requires_grad_() + 1.0f;
         nn::init::constant_(w, 0);
       },
       "constant_: w (2) is the result of an op"},
      {"constant_: an undefined tensor",
       [] {
         Tensor w;
         nn::init::constant_(w, 1);
       },
       "constant_: w is an undefined tensor"},
      {"ModuleList::operator[]: index past the end",
       [] {
         nn::ModuleList list;
         list.push_back(std::make_shared<nn::Linear>(1, 1));
         list[1];
       },
       "ModuleList: index 1 is out of range for a list of 1 modules"},
      {"ModuleList::at: index SIZE_MAX", [] { nn::ModuleList().at<nn::Linear>(SIZE_MAX); }, "out of range"},
      {"ModuleList::push_back: a null module", [] { nn::ModuleList().push_back(nullptr); },
       "ModuleList::push_back: module 0 is null"},
      {"zeros_: into an op's result",
       [] {
         Tensor w = ones({2}).requires_grad_() + 1.0f;
         nn::init::zeros_(w);
       },
       "zeros_: w (2) is the result of an op"},

      {"Module::load_state_dict: an undefined tensor",
       [] {
         nn::Linear(2, 1).load_state_dict({{"weight", Tensor()}, {"bias", zeros({1})}});
       },
       "'weight' has shape undefined in the state dict, (1, 2) in the model"},
      {"Module::load_state_dict: a 0-d tensor for a (1) bias",
       [] {
         nn::Linear(2, 1).load_state_dict({{"weight", zeros({1, 2})}, {"bias", scalar_tensor(0)}});
       },
       "'bias' has shape () in the state dict, (1) in the model"},
  });
}

TEST_CASE("hardening/nn: the extremes that are not errors") {
  SUBCASE("init of a tensor with no elements is a no-op, as PyTorch's (its fans may be 0)") {
    for (Shape shape : {Shape{0, 3}, Shape{3, 0}, Shape{0, 0}, Shape{2, 0, 4}}) {
      CAPTURE(shape);
      Tensor w = zeros(shape);
      nn::init::xavier_uniform_(w);
      nn::init::xavier_normal_(w);
      nn::init::kaiming_uniform_(w);
      nn::init::uniform_(w, -1, 1);
      CHECK(w.shape() == shape);
    }
  }
  SUBCASE("uniform_ over an empty range [a, a] gives a") {
    Tensor w = zeros({3});
    nn::init::uniform_(w, 2, 2);
    CHECK(w.to_vector() == std::vector<float>{2, 2, 2});
  }
}

namespace {
// A module that registers what a test tells it to, as a layer's constructor would.
struct Probe : nn::Module {
  Tensor w, v;
  std::string type_name() const override { return "Probe"; }
  void param(const std::string& name, Tensor& member) { register_parameter(name, member, ones({2})); }
  void child(const std::string& name, std::shared_ptr<nn::Module> m) { register_module(name, std::move(m)); }
};
}  // namespace

// PyTorch's register_parameter / add_module refuse an empty or dotted name
// ("parameter name can't contain \".\""), a name already taken by a
// parameter or a submodule ("attribute 'w' already exists"), and a
// non-Module submodule; qkv names the module and the name.
TEST_CASE("hardening/nn: registering parameters and submodules") {
  auto probe = [](auto&& body) {
    return [body] {
      auto p = std::make_shared<Probe>();
      body(*p);
    };
  };
  check_bad_inputs_naming_op({
      {"Module::register_parameter: an empty name", probe([](Probe& p) { p.param("", p.w); }),
       "register_parameter: bad name ''"},
      {"Module::register_parameter: a dotted name", probe([](Probe& p) { p.param("a.b", p.w); }),
       "register_parameter: bad name 'a.b'"},
      {"Module::register_parameter: a name twice", probe([](Probe& p) {
         p.param("w", p.w);
         p.param("w", p.v);
       }),
       "register_parameter: Probe already has a parameter 'w'"},
      {"Module::register_parameter: one member under two names", probe([](Probe& p) {
         p.param("w", p.w);
         p.param("v", p.w);
       }),
       "register_parameter: Probe: the member given for 'v' is already parameter 'w'"},
      {"Module::register_parameter: the name of a submodule", probe([](Probe& p) {
         p.child("w", std::make_shared<nn::Linear>(1, 1));
         p.param("w", p.w);
       }),
       "register_parameter: Probe already has a submodule 'w'"},
      {"Module::register_module: a null module", probe([](Probe& p) { p.child("m", nullptr); }),
       "register_module: module 'm' is null"},
      {"Module::register_module: an empty name",
       probe([](Probe& p) { p.child("", std::make_shared<nn::Linear>(1, 1)); }), "register_module: bad name ''"},
      {"Module::register_module: a dotted name",
       probe([](Probe& p) { p.child("a.b", std::make_shared<nn::Linear>(1, 1)); }), "register_module: bad name 'a.b'"},
      {"Module::register_module: a name twice", probe([](Probe& p) {
         p.child("m", std::make_shared<nn::Linear>(1, 1));
         p.child("m", std::make_shared<nn::Linear>(1, 1));
       }),
       "register_module: Probe already has a submodule 'm'"},
      {"Module::register_module: the name of a parameter", probe([](Probe& p) {
         p.param("w", p.w);
         p.child("w", std::make_shared<nn::Linear>(1, 1));
       }),
       "register_module: Probe already has a parameter 'w'"},
      {"Module::register_module: itself",
       [] {
         auto p = std::make_shared<Probe>();
         p->child("self", p);
       },
       "register_module: 'self' (Probe) contains this Probe: a module cannot be its own submodule"},
  });

  SUBCASE("named_children and ModuleList[i] hand out handles, not references that dangle") {
    // A reference into the module would dangle once a temporary module dies
    // or a list reallocates as it grows.
    nn::ModuleList list;
    static_assert(!std::is_reference_v<decltype(list[0])>);
    static_assert(!std::is_reference_v<decltype(list.named_children())>);
    list.push_back(std::make_shared<nn::Linear>(1, 2));
    const auto& first = list[0];  // the handle lives as long as `first`
    for (int i = 0; i < 100; ++i) list.push_back(std::make_shared<nn::Dropout>(0.0f));
    CHECK(first->type_name() == "Linear");
    const auto& children = std::make_shared<nn::Linear>(1, 2)->named_children();
    CHECK(children.empty());
  }
  SUBCASE("a tied weight is listed once") {
    auto emb = std::make_shared<nn::Embedding>(5, 3);
    auto out = std::make_shared<nn::Linear>(3, 5, false);
    out->weight = emb->weight;
    Probe model;
    model.child("emb", emb);
    model.child("out", out);
    CHECK(model.parameters().size() == 1);
    CHECK(model.num_parameters() == 15);
    CHECK(model.state_dict().size() == 2);  // under both names, as PyTorch's state_dict
  }
}

// PyTorch registers weight and bias as None: no parameters, repr
// "LayerNorm((4,), eps=1e-05, elementwise_affine=False)", and a weight
// assigned later (ln.weight = nn.Parameter(…)) becomes a parameter.
TEST_CASE("hardening/nn: LayerNorm without elementwise affine") {
  nn::LayerNorm ln(4, 1e-5f, false);
  CHECK(ln.parameters().empty());
  CHECK(ln.state_dict().empty());
  CHECK(ln.repr().find("LayerNorm((4,), eps=1e-05, elementwise_affine=False)") == 0);
  ln.weight = ones({4}).requires_grad_();
  CHECK(ln.parameters().size() == 1);                                      // listed, so an optimizer trains it
  CHECK(ln.repr().find("elementwise_affine=False") != std::string::npos);  // the constructor's flag
  nn::LayerNorm affine(4);
  affine.bias = Tensor();
  CHECK_THROWS_WITH_AS(affine.parameters(), doctest::Contains("LayerNorm: parameter 'bias' holds an undefined tensor"),
                       Error);
}

// d2l reads the weights after a forward; before one there are none, and an
// undefined tensor handed out would only fail later, far from the cause.
TEST_CASE("hardening/nn: attention weights asked for before any forward") {
  auto mha = std::make_shared<nn::MultiHeadAttention>(8, 2, 0.0f);
  auto seq2seq = std::make_shared<nn::Seq2SeqAttentionDecoder>(10, 4, 4, 1);
  auto encoder = std::make_shared<nn::TransformerEncoder>(10, 8, 16, 2, 1, 0.0f);
  auto decoder = std::make_shared<nn::TransformerDecoder>(10, 8, 16, 2, 1, 0.0f);
  check_bad_inputs_naming_op({
      {"MultiHeadAttention::attention_weights before forward", [=] { mha->attention_weights(); },
       "MultiHeadAttention: no attention weights yet: call forward first"},
      {"MultiHeadAttention::attention_weights_per_head before forward", [=] { mha->attention_weights_per_head(); },
       "MultiHeadAttention: no attention weights yet"},
      {"Seq2SeqAttentionDecoder::attention_weights before forward", [=] { seq2seq->attention_weights(); },
       "Seq2SeqAttentionDecoder: no attention weights yet: call forward first"},
      {"Seq2SeqAttentionDecoder: attention_weights through Decoder (virtual) before forward",
       [=] { std::static_pointer_cast<nn::Decoder>(seq2seq)->attention_weights(); }, "no attention weights yet"},
      {"TransformerEncoder::attention_weights before forward", [=] { encoder->attention_weights(); },
       "no attention weights yet"},
      {"TransformerDecoder::attention_weights before forward", [=] { decoder->attention_weights(); },
       "no attention weights yet"},
      {"TransformerDecoder::self_attention_weights before forward", [=] { decoder->self_attention_weights(); },
       "no attention weights yet"},
  });
}
