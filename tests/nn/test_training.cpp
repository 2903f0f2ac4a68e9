// End to end: the two seq2seq models of lessons 08 and 11 learn a handful of
// sentence pairs by heart, as d2l's train_seq2seq trains them (teacher
// forcing, masked softmax cross-entropy, Adam, gradient clipping at 1), then
// greedy decoding gives back every training target; and a checkpoint taken
// halfway resumes training bit for bit.
//
// The models are tiny so the whole file runs in a few seconds.
#include <doctest/doctest.h>

#include <qkv/io/checkpoint.hpp>
#include <qkv/nn/encoder_decoder.hpp>
#include <qkv/nn/loss.hpp>
#include <qkv/nn/seq2seq.hpp>
#include <qkv/nn/transformer.hpp>
#include <qkv/optim/adam.hpp>
#include <qkv/optim/clip_grad.hpp>
#include <qkv/qkv.hpp>

#include <filesystem>
#include <functional>

#include <unistd.h>

using namespace qkv;

namespace {

// Ids: pad 0, bos 1, eos 2, words 3 … 9, in both vocabularies.
constexpr int64_t kPad = 0, kBos = 1, kEos = 2, kVocab = 10, kNumSteps = 5;

struct Pair {
  std::vector<int64_t> src, tgt;  // without eos
};
const std::vector<Pair> kPairs = {
    {{3, 4}, {5, 6}}, {{5}, {7}}, {{6, 7, 8}, {3, 4, 9}}, {{9, 3}, {8, 8}}, {{4, 5, 6}, {6, 5}}, {{7, 9}, {9, 3, 4}},
};

// d2l's truncate_pad of a sentence with eos appended; returns the valid length.
int64_t append_eos_and_pad(std::vector<int64_t> ids, std::vector<int64_t>& out) {
  ids.push_back(kEos);
  const auto len = static_cast<int64_t>(ids.size());
  ids.resize(kNumSteps, kPad);
  out.insert(out.end(), ids.begin(), ids.end());
  return len;
}

// The whole data set as one batch, as d2l's load_data_nmt gives a batch:
// X, X_valid_len, Y, Y_valid_len, and the teacher-forced decoder input
// dec_X = [bos, Y[:, :-1]].
struct Batch {
  IntTensor X, X_valid_len, Y, Y_valid_len, dec_X;
  int64_t num_tokens = 0;
};

Batch make_batch() {
  const auto B = static_cast<int64_t>(kPairs.size());
  std::vector<int64_t> X, Y, X_len, Y_len, dec;
  for (const Pair& p : kPairs) {
    X_len.push_back(append_eos_and_pad(p.src, X));
    Y_len.push_back(append_eos_and_pad(p.tgt, Y));
  }
  for (int64_t b = 0; b < B; ++b) {
    dec.push_back(kBos);
    for (int64_t s = 0; s + 1 < kNumSteps; ++s) dec.push_back(Y[b * kNumSteps + s]);
  }
  Batch batch{int_tensor(X, {B, kNumSteps}), int_tensor(X_len), int_tensor(Y, {B, kNumSteps}), int_tensor(Y_len),
              int_tensor(dec, {B, kNumSteps})};
  for (int64_t n : Y_len) batch.num_tokens += n;
  return batch;
}

// One step of d2l's train_seq2seq; returns the mean cross-entropy per target token.
float train_step(nn::EncoderDecoder& model, optim::Adam& opt, const Batch& batch) {
  opt.zero_grad();
  Tensor Y_hat = model.forward(batch.X, batch.dec_X, batch.X_valid_len);           // (B, S, V)
  Tensor l = nn::masked_softmax_cross_entropy(Y_hat, batch.Y, batch.Y_valid_len);  // (B)
  sum(l).backward();
  optim::clip_grad_norm_(model.parameters(), 1);
  opt.step();
  // l[b] is the sum over b's tokens divided by S: undo the 1/S, divide by the tokens.
  return sum(l).item() * static_cast<float>(kNumSteps) / static_cast<float>(batch.num_tokens);
}

// d2l's xavier_init_weights: Glorot-uniform for every Linear and GRU weight
// matrix (the embeddings and LayerNorms keep their init).
void xavier_init(nn::Module& model, Generator& gen) {
  for (auto& [name, p] : model.named_parameters())
    if (p.dim() == 2 && name.find("embedding") == std::string::npos) nn::init::xavier_uniform_(p, 1, gen);
}

// embed_size 8, num_hiddens 16, 2 layers, no dropout.
std::shared_ptr<nn::EncoderDecoder> make_bahdanau(Generator& gen) {
  auto encoder = std::make_shared<nn::Seq2SeqEncoder>(kVocab, 8, 16, 2, 0, gen);
  auto decoder = std::make_shared<nn::Seq2SeqAttentionDecoder>(kVocab, 8, 16, 2, 0, gen);
  auto model = std::make_shared<nn::EncoderDecoder>(encoder, decoder);
  xavier_init(*model, gen);
  return model;
}

// num_hiddens 16, ffn_num_hiddens 32, 2 heads, 2 blocks, no dropout.
std::shared_ptr<nn::EncoderDecoder> make_transformer(Generator& gen) {
  auto encoder = std::make_shared<nn::TransformerEncoder>(kVocab, 16, 32, 2, 2, 0, false, gen);
  auto decoder = std::make_shared<nn::TransformerDecoder>(kVocab, 16, 32, 2, 2, 0, gen);
  auto model = std::make_shared<nn::EncoderDecoder>(encoder, decoder);
  xavier_init(*model, gen);
  return model;
}

using MakeModel = std::function<std::shared_ptr<nn::EncoderDecoder>(Generator&)>;

// The mean cross-entropy per target token, measured without training.
float evaluate(nn::EncoderDecoder& model, const Batch& batch) {
  NoGradGuard no_grad;
  Tensor l = nn::masked_softmax_cross_entropy(model.forward(batch.X, batch.dec_X, batch.X_valid_len), batch.Y,
                                              batch.Y_valid_len);
  return sum(l).item() * static_cast<float>(kNumSteps) / static_cast<float>(batch.num_tokens);
}

void check_overfits(const MakeModel& make, float lr, int num_steps) {
  Generator gen(0);
  auto model = make(gen);
  optim::Adam opt(model->parameters(), lr);
  const Batch batch = make_batch();
  const float first = evaluate(*model, batch);
  for (int step = 0; step < num_steps; ++step) train_step(*model, opt, batch);
  const float loss = evaluate(*model, batch);
  INFO("loss " << first << " -> " << loss << " after " << num_steps << " steps");
  CHECK(loss < 0.05f);

  // Greedy decoding gives back every target, and one attention entry per
  // step (the tokens and the step that said eos).
  for (const Pair& p : kPairs) {
    std::vector<int64_t> src = p.src;
    src.push_back(kEos);
    auto prediction = model->predict(src, kNumSteps, kPad, kBos, kEos, kNumSteps + 2);
    CHECK(prediction.tokens == p.tgt);
    CHECK(prediction.attention.size() == p.tgt.size() + 1);
  }
  CHECK(model->is_training());
}

// Save at step `half` with the optimizer, train on; a fresh model and
// optimizer loaded from the file must then match the original exactly, now
// and after the same further steps.
void check_checkpoint_resumes(const MakeModel& make, float lr, const std::string& tag) {
  const Batch batch = make_batch();
  const auto path =
      std::filesystem::temp_directory_path() / fmt::format("qkv_test_training_{}_{}.safetensors", tag, ::getpid());
  Generator gen(1);
  auto model = make(gen);
  optim::Adam opt(model->parameters(), lr);
  for (int i = 0; i < 10; ++i) train_step(*model, opt, batch);
  io::save_checkpoint(path, *model, &opt);
  Tensor at_save = model->forward(batch.X, batch.dec_X, batch.X_valid_len).detach();
  for (int i = 0; i < 5; ++i) train_step(*model, opt, batch);
  Tensor after = model->forward(batch.X, batch.dec_X, batch.X_valid_len).detach();

  Generator other(2);
  auto fresh = make(other);
  optim::Adam fresh_opt(fresh->parameters(), lr);
  REQUIRE(fresh->forward(batch.X, batch.dec_X, batch.X_valid_len).to_vector() != at_save.to_vector());
  io::load_checkpoint(path, *fresh, &fresh_opt);
  std::filesystem::remove(path);
  CHECK(fresh->forward(batch.X, batch.dec_X, batch.X_valid_len).to_vector() == at_save.to_vector());
  for (int i = 0; i < 5; ++i) train_step(*fresh, fresh_opt, batch);
  CHECK(fresh->forward(batch.X, batch.dec_X, batch.X_valid_len).to_vector() == after.to_vector());
}

}  // namespace

TEST_CASE("nn/training: the Bahdanau seq2seq model learns a handful of pairs by heart") {
  check_overfits(make_bahdanau, 0.01f, 150);
}

TEST_CASE("nn/training: the Transformer learns a handful of pairs by heart") {
  check_overfits(make_transformer, 0.01f, 150);
}

TEST_CASE("nn/training: a checkpoint taken mid-training resumes bit for bit") {
  SUBCASE("Bahdanau") { check_checkpoint_resumes(make_bahdanau, 0.02f, "bahdanau"); }
  SUBCASE("Transformer") { check_checkpoint_resumes(make_transformer, 0.01f, "transformer"); }
}
