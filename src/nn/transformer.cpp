// The Transformer's layers (d2l 11.6.3 and 11.7), each a few calls to the
// layers and ops below it: no hand-written backward.
//
// Letters: B batch, T source steps, S target steps, c target steps cached
// before this call, H num_hiddens, F ffn_num_hiddens, V vocabulary, h heads.
#include <qkv/core/error.hpp>
#include <qkv/core/factory.hpp>
#include <qkv/nn/transformer.hpp>
#include <qkv/ops/elementwise.hpp>
#include <qkv/ops/shape_ops.hpp>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "stack.hpp"

namespace qkv::nn {

// --- positional encoding ------------------------------------------------------------

PositionalEncoding::PositionalEncoding(int64_t num_hiddens, float dropout, int64_t max_len, Generator& gen)
    : num_hiddens(num_hiddens), max_len(max_len) {
  if (num_hiddens <= 0 || max_len <= 0)
    fail("PositionalEncoding: num_hiddens {} and max_len {} must be positive", num_hiddens, max_len);
  this->dropout = register_module("dropout", std::make_shared<Dropout>(dropout, gen));
  // P[i, 2j] = sin(i / 10000^(2j/H)), P[i, 2j+1] = cos(i / 10000^(2j/H)),
  // computed in double and rounded once. (An odd H ends on a sine column;
  // d2l's code needs H even.)
  P = Tensor::empty({1, max_len, num_hiddens}, "PositionalEncoding");
  float* p = P.data();
  for (int64_t i = 0; i < max_len; ++i) {
    for (int64_t col = 0; col < num_hiddens; col += 2) {  // col = 2j
      double angle =
          static_cast<double>(i) / std::pow(10000.0, static_cast<double>(col) / static_cast<double>(num_hiddens));
      p[i * num_hiddens + col] = static_cast<float>(std::sin(angle));
      if (col + 1 < num_hiddens) p[i * num_hiddens + col + 1] = static_cast<float>(std::cos(angle));
    }
  }
}

Tensor PositionalEncoding::forward(const Tensor& X, int64_t offset) const {
  TraceScope trace(*this, {X});
  if (!X.defined()) fail("PositionalEncoding: X is an undefined tensor");
  if (X.dim() != 3 || X.size(2) != num_hiddens)
    fail("PositionalEncoding: X {}: expected (B, T, {})", X.shape(), num_hiddens);
  const int64_t T = X.size(1);
  // Positions offset … offset + T - 1 must be < max_len. offset + T could
  // overflow int64 for a huge offset, so offset is compared with max_len - T
  // (0 < max_len and 0 ≤ T, so that difference cannot overflow).
  if (offset < 0 || offset > max_len - T) {
    if (offset < 0) fail("PositionalEncoding: offset {} must be ≥ 0", offset);
    if (offset > max_len) fail("PositionalEncoding: offset {} is past max_len {}", offset, max_len);
    fail("PositionalEncoding: positions {} to {} do not fit max_len {}", offset, offset + T - 1, max_len);
  }
  return trace.output((*dropout)(X + P.narrow(1, offset, T)));  // (B, T, H) + (1, T, H) -> (B, T, H)
}

// --- position-wise FFN and add & norm ---------------------------------------------

PositionWiseFFN::PositionWiseFFN(int64_t ffn_num_input, int64_t ffn_num_hiddens, int64_t ffn_num_outputs,
                                 Generator& gen) {
  if (ffn_num_input <= 0 || ffn_num_hiddens <= 0 || ffn_num_outputs <= 0)
    fail("PositionWiseFFN: ffn_num_input {}, ffn_num_hiddens {} and ffn_num_outputs {} must be positive", ffn_num_input,
         ffn_num_hiddens, ffn_num_outputs);
  dense1 = register_module("dense1", std::make_shared<Linear>(ffn_num_input, ffn_num_hiddens, true, gen));
  dense2 = register_module("dense2", std::make_shared<Linear>(ffn_num_hiddens, ffn_num_outputs, true, gen));
}

Tensor PositionWiseFFN::forward(const Tensor& X) const {
  TraceScope trace(*this, {X});
  if (!X.defined()) fail("PositionWiseFFN: X is an undefined tensor");
  if (X.dim() == 0 || X.size(-1) != dense1->in_features)
    fail("PositionWiseFFN: X {}: expected last dim {} (ffn_num_input)", X.shape(), dense1->in_features);
  return trace.output((*dense2)(relu((*dense1)(X))));  // (B, T, D) -> (B, T, F) -> (B, T, Dout)
}

AddNorm::AddNorm(Shape norm_shape, float dropout, Generator& gen) {
  this->dropout = register_module("dropout", std::make_shared<Dropout>(dropout, gen));
  ln = register_module("ln", std::make_shared<LayerNorm>(std::move(norm_shape)));
}

Tensor AddNorm::forward(const Tensor& X, const Tensor& Y) const {
  TraceScope trace(*this, {X, Y});
  if (X.shape() != Y.shape()) fail("AddNorm: X {} and Y {}: expected the same shape", X.shape(), Y.shape());
  return trace.output((*ln)((*dropout)(Y) + X));  // (…, H)
}

// --- the encoder --------------------------------------------------------------------

TransformerEncoderBlock::TransformerEncoderBlock(int64_t num_hiddens, int64_t ffn_num_hiddens, int64_t num_heads,
                                                 float dropout, bool use_bias, Generator& gen) {
  attention = register_module("attention",
                              std::make_shared<MultiHeadAttention>(num_hiddens, num_heads, dropout, use_bias, gen));
  addnorm1 = register_module("addnorm1", std::make_shared<AddNorm>(Shape{num_hiddens}, dropout, gen));
  ffn = register_module("ffn", std::make_shared<PositionWiseFFN>(num_hiddens, ffn_num_hiddens, num_hiddens, gen));
  addnorm2 = register_module("addnorm2", std::make_shared<AddNorm>(Shape{num_hiddens}, dropout, gen));
}

Tensor TransformerEncoderBlock::forward(const Tensor& X, const IntTensor& valid_lens) {
  TraceScope trace(*this, {X, valid_lens});
  if (!X.defined()) fail("TransformerEncoderBlock: X is an undefined tensor");
  if (X.dim() != 3 || X.size(2) != attention->num_hiddens)
    fail("TransformerEncoderBlock: X {}: expected (B, T, {})", X.shape(), attention->num_hiddens);
  Tensor Y = (*addnorm1)(X, (*attention)(X, X, X, valid_lens));  // (B, T, H)
  return trace.output((*addnorm2)(Y, (*ffn)(Y)));                // (B, T, H)
}

TransformerEncoder::TransformerEncoder(int64_t vocab_size, int64_t num_hiddens, int64_t ffn_num_hiddens,
                                       int64_t num_heads, int64_t num_blks, float dropout, bool use_bias,
                                       Generator& gen)
    : num_hiddens(num_hiddens) {
  // As TransformerDecoder: a Transformer of no blocks would be an embedding
  // and nothing else. (PyTorch 1.13 builds nn.TransformerEncoder(layer, 0)
  // but its forward then fails with "index 0 is out of range"; refusing it
  // here says why, before anything is allocated.)
  if (num_blks <= 0) fail("TransformerEncoder: num_blks {} must be positive", num_blks);
  embedding = register_module("embedding", std::make_shared<Embedding>(vocab_size, num_hiddens, gen));
  pos_encoding = register_module("pos_encoding", std::make_shared<PositionalEncoding>(num_hiddens, dropout, 1000, gen));
  blks = register_module("blks", std::make_shared<ModuleList>());
  for (int64_t i = 0; i < num_blks; ++i) {
    blks->push_back(
        std::make_shared<TransformerEncoderBlock>(num_hiddens, ffn_num_hiddens, num_heads, dropout, use_bias, gen));
    if (i == 0) detail::check_stack_size("TransformerEncoder", "num_blks", num_blks, (*blks)[0]->num_parameters());
  }
}

EncoderOutput TransformerEncoder::forward(const IntTensor& X, const IntTensor& valid_lens) {
  TraceScope trace(*this, {X, valid_lens});
  if (X.dim() != 2) fail("TransformerEncoder: X {}: expected token ids (B, T)", X.shape());
  const float scale = std::sqrt(static_cast<float>(num_hiddens));
  Tensor Y = (*pos_encoding)((*embedding)(X)*scale);  // (B, T) -> (B, T, H), + P
  for (size_t i = 0; i < blks->size(); ++i) Y = (*blks->at<TransformerEncoderBlock>(i))(Y, valid_lens);  // (B, T, H)
  return {trace.output(Y), Tensor()};
}

namespace {
// One block's attention weights per head, (B, h, Q, K); before the first
// forward an Error that names the model asked, `layer`.
Tensor weights_per_head(const MultiHeadAttention& attention, const char* layer) {
  if (!attention.attention->attention_weights.defined())
    fail("{}: no attention weights yet: call forward first", layer);
  return attention.attention_weights_per_head();
}
}  // namespace

std::vector<Tensor> TransformerEncoder::attention_weights() const {
  std::vector<Tensor> weights;
  for (size_t i = 0; i < blks->size(); ++i)  // (B, h, T, T)
    weights.push_back(weights_per_head(*blks->at<TransformerEncoderBlock>(i)->attention, "TransformerEncoder"));
  return weights;
}

// --- the decoder --------------------------------------------------------------------

namespace {

// The causal mask as 2-D valid lens (B, S): query s of this call may see the
// c cached keys and its own S-step prefix up to itself, c + s + 1 keys. This
// is d2l's arange(1, S + 1).repeat(B, 1), shifted by c; masked_softmax turns
// it into the mask key < c + s + 1 with a comparison.
IntTensor causal_valid_lens(int64_t B, int64_t S, int64_t c) {
  std::vector<int64_t> row = arange_int(c + 1, c + S + 1).to_vector();  // (S): c+1, …, c+S
  std::vector<int64_t> lens;
  for (int64_t b = 0; b < B; ++b) lens.insert(lens.end(), row.begin(), row.end());  // .repeat(B, 1)
  return int_tensor(std::move(lens), {B, S});
}

}  // namespace

TransformerDecoderBlock::TransformerDecoderBlock(int64_t num_hiddens, int64_t ffn_num_hiddens, int64_t num_heads,
                                                 float dropout, int64_t i, Generator& gen)
    : i(i) {
  // i is where the block keeps its cache in a DecoderState (d2l's state[2][i]).
  if (i < 0) fail("TransformerDecoderBlock: block index i {} must be ≥ 0", i);
  attention1 =
      register_module("attention1", std::make_shared<MultiHeadAttention>(num_hiddens, num_heads, dropout, false, gen));
  addnorm1 = register_module("addnorm1", std::make_shared<AddNorm>(Shape{num_hiddens}, dropout, gen));
  attention2 =
      register_module("attention2", std::make_shared<MultiHeadAttention>(num_hiddens, num_heads, dropout, false, gen));
  addnorm2 = register_module("addnorm2", std::make_shared<AddNorm>(Shape{num_hiddens}, dropout, gen));
  ffn = register_module("ffn", std::make_shared<PositionWiseFFN>(num_hiddens, ffn_num_hiddens, num_hiddens, gen));
  addnorm3 = register_module("addnorm3", std::make_shared<AddNorm>(Shape{num_hiddens}, dropout, gen));
}

// The state's encoder outputs are not listed as an input: the trace then
// shows them reaching the cross-attention straight from the encoder.
Tensor TransformerDecoderBlock::forward(const Tensor& X, DecoderState& state) {
  TraceScope trace(*this, {X});
  if (i < 0 || i >= static_cast<int64_t>(state.cache.size()))
    fail("TransformerDecoderBlock {}: state.cache has {} entries; make the state with TransformerDecoder::init_state",
         i, state.cache.size());
  if (X.dim() != 3) fail("TransformerDecoderBlock {}: X {}: expected (B, S, H)", i, X.shape());
  Tensor& cache = state.cache[i];  // (B, c, H): this block's inputs at the earlier steps
  if (cache.defined() && cache.size(0) != X.size(0))
    fail("TransformerDecoderBlock {}: X {} does not continue the cached steps {}", i, X.shape(), cache.shape());
  const int64_t B = X.size(0), S = X.size(1), c = cache.defined() ? cache.size(1) : 0;
  Tensor key_values = cache.defined() ? cat({cache, X}, 1) : X;  // (B, c + S, H)
  cache = key_values;
  IntTensor dec_valid_lens = causal_valid_lens(B, S, c);  // (B, S): rows [c+1, …, c+S]

  Tensor attended = (*attention1)(X, key_values, key_values, dec_valid_lens);  // (B, S, H)
  trace_note(*attention1, "causal mask");  // step s sees steps 0 … s: the picture says so
  Tensor Y = (*addnorm1)(X, attended);     // (B, S, H)
  const Tensor& enc = state.enc_outputs;   // (B, T, H)
  Tensor Z = (*addnorm2)(Y, (*attention2)(Y, enc, enc, state.enc_valid_lens));  // (B, S, H)
  return trace.output((*addnorm3)(Z, (*ffn)(Z)));                               // (B, S, H)
}

TransformerDecoder::TransformerDecoder(int64_t vocab_size, int64_t num_hiddens, int64_t ffn_num_hiddens,
                                       int64_t num_heads, int64_t num_blks, float dropout, Generator& gen)
    : num_hiddens(num_hiddens), num_blks(num_blks) {
  if (num_blks <= 0) fail("TransformerDecoder: num_blks {} must be positive", num_blks);
  embedding = register_module("embedding", std::make_shared<Embedding>(vocab_size, num_hiddens, gen));
  pos_encoding = register_module("pos_encoding", std::make_shared<PositionalEncoding>(num_hiddens, dropout, 1000, gen));
  blks = register_module("blks", std::make_shared<ModuleList>());
  for (int64_t i = 0; i < num_blks; ++i) {
    blks->push_back(
        std::make_shared<TransformerDecoderBlock>(num_hiddens, ffn_num_hiddens, num_heads, dropout, i, gen));
    if (i == 0) detail::check_stack_size("TransformerDecoder", "num_blks", num_blks, (*blks)[0]->num_parameters());
  }
  dense = register_module("dense", std::make_shared<Linear>(num_hiddens, vocab_size, true, gen));
}

DecoderState TransformerDecoder::init_state(const EncoderOutput& enc, const IntTensor& enc_valid_lens) {
  if (!enc.outputs.defined() || enc.outputs.dim() != 3 || enc.outputs.size(2) != num_hiddens)
    fail("TransformerDecoder: encoder outputs {}: expected (B, T, {})",
         enc.outputs.defined() ? enc.outputs.shape().str() : "undefined", num_hiddens);
  // Checked here, where the lengths are given, not at the first forward:
  // one length per source, as d2l's decoder reads them (the cross-attention
  // masks every step's query alike).
  const int64_t B = enc.outputs.size(0);
  if (enc_valid_lens.defined() && enc_valid_lens.shape() != Shape{B})
    fail("TransformerDecoder: enc_valid_lens {} must be ({}), one length per source", enc_valid_lens.shape(), B);
  DecoderState state;
  state.enc_outputs = enc.outputs;
  state.enc_valid_lens = enc_valid_lens;
  state.cache.resize(static_cast<size_t>(num_blks));  // d2l's [None] * num_blks
  return state;
}

Tensor TransformerDecoder::forward(const IntTensor& X, DecoderState& state) {
  TraceScope trace(*this, {X});
  if (X.dim() != 2) fail("TransformerDecoder: X {}: expected token ids (B, S)", X.shape());
  if (static_cast<int64_t>(state.cache.size()) != num_blks)
    fail("TransformerDecoder: state.cache has {} entries, expected {} (one per block): make the state with init_state",
         state.cache.size(), num_blks);
  // The steps decoded before this call: X's positions start there.
  const int64_t offset = state.cache[0].defined() ? state.cache[0].size(1) : 0;
  const float scale = std::sqrt(static_cast<float>(num_hiddens));
  Tensor Y = (*pos_encoding)((*embedding)(X)*scale, offset);  // (B, S) -> (B, S, H), + P[offset …]
  for (size_t i = 0; i < blks->size(); ++i) Y = (*blks->at<TransformerDecoderBlock>(i))(Y, state);  // (B, S, H)
  return trace.output((*dense)(Y));  // (B, S, H) -> (B, S, V)
}

std::vector<Tensor> TransformerDecoder::attention_weights() const {
  std::vector<Tensor> weights;
  for (size_t i = 0; i < blks->size(); ++i)  // (B, h, S, T)
    weights.push_back(weights_per_head(*blks->at<TransformerDecoderBlock>(i)->attention2, "TransformerDecoder"));
  return weights;
}

std::vector<Tensor> TransformerDecoder::self_attention_weights() const {
  std::vector<Tensor> weights;
  for (size_t i = 0; i < blks->size(); ++i)  // (B, h, S, c+S)
    weights.push_back(weights_per_head(*blks->at<TransformerDecoderBlock>(i)->attention1, "TransformerDecoder"));
  return weights;
}

// --- loading d2l's weights ---------------------------------------------------------

namespace {

// "block12" -> "12"; "" when `part` is not "block" followed by digits only.
std::string d2l_block_index(const std::string& part) {
  const std::string prefix = "block";
  if (part.size() <= prefix.size() || part.compare(0, prefix.size(), prefix) != 0) return "";
  for (size_t k = prefix.size(); k < part.size(); ++k)
    if (part[k] < '0' || part[k] > '9') return "";
  return part.substr(prefix.size());
}

}  // namespace

StateDict from_d2l_names(const StateDict& state) {
  StateDict out;
  std::map<std::string, std::string> source;  // qkv name -> the d2l name it came from
  for (const auto& [name, t] : state) {
    // Split on dots, rename "block<N>" after "blks", join again.
    std::vector<std::string> parts;
    for (size_t begin = 0;;) {
      const size_t dot = name.find('.', begin);
      parts.push_back(name.substr(begin, dot == std::string::npos ? std::string::npos : dot - begin));
      if (dot == std::string::npos) break;
      begin = dot + 1;
    }
    std::string renamed;
    for (size_t k = 0; k < parts.size(); ++k) {
      const std::string index = k > 0 && parts[k - 1] == "blks" ? d2l_block_index(parts[k]) : "";
      renamed += (k > 0 ? "." : "") + (index.empty() ? parts[k] : index);
    }
    auto [it, fresh] = source.emplace(renamed, name);
    if (!fresh) fail("from_d2l_names: '{}' and '{}' both become '{}'", it->second, name, renamed);
    out.emplace(renamed, t);
  }
  return out;
}

}  // namespace qkv::nn
