// The examples of docs/nn.md and docs/checkpoints.md (and the README's attention example), compiled and run as written
// there (only the CHECKs are added). Keep the two in step.
#include <doctest/doctest.h>

#include <qkv/qkv.hpp>

#include <filesystem>

using namespace qkv;

namespace {

// docs/nn.md, "Modules", as written there.
struct Block : nn::Module {
  std::shared_ptr<nn::Linear> W_q;
  Tensor scale;
  Block() {
    W_q = register_module("W_q", std::make_shared<nn::Linear>(4, 3));
    register_parameter("scale", scale, ones({1}));
  }
  std::string type_name() const override { return "Block"; }
};

}  // namespace

TEST_CASE("docs/nn: a module") {
  Block block;
  std::vector<std::string> names;
  for (const auto& [name, p] : block.named_parameters()) names.push_back(name);
  // PyTorch's order: a module's own parameters first, then its submodules'.
  CHECK(names == std::vector<std::string>{"scale", "W_q.weight", "W_q.bias"});
  CHECK(block.W_q->weight.shape() == Shape{3, 4});
  CHECK(block.scale.item() == 1.0f);
}

TEST_CASE("docs/nn: layers") {
  nn::Embedding embed(28, 32);  // a vocabulary of 28 ids, each a learned vector of 32
  nn::GRU gru(32, 64, /*num_layers=*/2, /*bias=*/true, /*batch_first=*/true, /*dropout=*/0.1f);
  nn::LayerNorm norm(64);
  nn::Dropout drop(0.1f);

  IntTensor ids = randint(0, 28, {4, 10});  // (B, T) = (4, 10)
  auto [output, h_n] = gru(embed(ids));  // (4, 10, 64): the top layer at every step; (2, 4, 64): every layer's last h
  Tensor y = drop(norm(output));         // (4, 10, 64)

  nn::LSTM lstm(32, 64);                        // time-major: (T, B, I)
  auto [out, h, c] = lstm(randn({10, 4, 32}));  // (10, 4, 64), (1, 4, 64), (1, 4, 64)
  auto next = lstm(randn({1, 4, 32}), h, c);    // carry the state on for one more step
  gru.eval();                                   // no dropout between layers when evaluating

  CHECK(y.shape() == Shape{4, 10, 64});
  CHECK(h_n.shape() == Shape{2, 4, 64});
  CHECK(out.shape() == Shape{10, 4, 64});
  CHECK(c.shape() == Shape{1, 4, 64});
  CHECK(next.output.shape() == Shape{1, 4, 64});
}

TEST_CASE("docs/checkpoints: d2l state dict") {
  const std::string path = std::string(QKV_REFERENCE_DIR) + "/d2l_transformer.safetensors";  // tools/reference/io.py
  // In Python: safetensors.torch.save_file(net.state_dict(), path), net being d2l's
  // EncoderDecoder(TransformerEncoder(…), TransformerDecoder(…)) with these sizes.
  nn::EncoderDecoder model(std::make_shared<nn::TransformerEncoder>(/*vocab*/ 20, 16, 24, 4, /*blocks*/ 2, 0.1f),
                           std::make_shared<nn::TransformerDecoder>(/*vocab*/ 18, 16, 24, 4, /*blocks*/ 2, 0.1f));
  model.load_state_dict(nn::from_d2l_names(io::load_safetensors(path)));  // strict: every name and shape

  CHECK(model.state_dict().at("encoder.blks.1.attention.W_q.weight").to_vector() ==
        io::load_safetensors(path).at("encoder.blks.block1.attention.W_q.weight").to_vector());
}

TEST_CASE("docs/nn: attention and the Transformer") {
  // Multi-head attention with d2l's shapes: 5 heads over 100 features;
  // example 0 may look at its first 3 keys, example 1 at its first 2.
  nn::MultiHeadAttention attention(100, 5, /*dropout=*/0.5f);
  attention.eval();
  Tensor X = ones({2, 4, 100}), Y = ones({2, 6, 100});
  Tensor out = attention(X, Y, Y, int_tensor({3, 2}));  // (2, 4, 100)
  Tensor w = attention.attention_weights_per_head();    // (2, 5, 4, 6): one heatmap per head

  // A Transformer for translation (d2l 11.7): encoder and decoder plug into EncoderDecoder.
  auto encoder = std::make_shared<nn::TransformerEncoder>(/*vocab*/ 200, 32, 64, 4, /*blocks*/ 2, 0.2f);
  auto decoder = std::make_shared<nn::TransformerDecoder>(/*vocab*/ 180, 32, 64, 4, /*blocks*/ 2, 0.2f);
  nn::EncoderDecoder model(encoder, decoder);
  IntTensor src = randint(0, 200, {8, 10}), tgt = randint(0, 180, {8, 12});
  Tensor logits = model.forward(src, tgt, int_tensor(std::vector<int64_t>(8, 10)));  // (8, 12, 180)

  CHECK(out.shape() == Shape{2, 4, 100});
  CHECK(w.shape() == Shape{2, 5, 4, 6});
  CHECK(logits.shape() == Shape{8, 12, 180});
  // Mathematics: example 1 may see only its first 2 keys, so keys 2..5 get no weight.
  CHECK(w.at({1, 0, 0, 2}) == doctest::Approx(0.0));
}

TEST_CASE("docs/nn: seq2seq") {
  // Lesson 08's model: a GRU encoder and a decoder with Bahdanau attention.
  auto model = std::make_shared<nn::EncoderDecoder>(
      std::make_shared<nn::Seq2SeqEncoder>(/*vocab*/ 10, /*embed*/ 8, /*hiddens*/ 16, /*layers*/ 2),
      std::make_shared<nn::Seq2SeqAttentionDecoder>(10, 8, 16, 2));
  optim::Adam opt(model->parameters(), 0.005f);

  // One batch: sources (B, T) with their lengths, targets (B, S) with theirs;
  // ids: pad 0, bos 1, eos 2. The decoder reads the target shifted right (teacher forcing).
  IntTensor X = int_tensor({3, 4, 2, 0, 5, 2, 0, 0}, {2, 4}), X_len = int_tensor({3, 2});
  IntTensor Y = int_tensor({6, 7, 2, 0, 8, 2, 0, 0}, {2, 4}), Y_len = int_tensor({3, 2});
  IntTensor dec_X = int_tensor({1, 6, 7, 2, 1, 8, 2, 0}, {2, 4});
  for (int step = 0; step < 100; ++step) {
    opt.zero_grad();
    Tensor loss =
        sum(nn::masked_softmax_cross_entropy(model->forward(X, dec_X, X_len), Y, Y_len));  // padding adds nothing
    loss.backward();
    opt.step();
  }
  // Greedy decoding of one sentence (ids with eos), padded to 4 steps, at most 10 tokens.
  auto p = model->predict({3, 4, 2}, /*num_steps*/ 4, /*pad*/ 0, /*bos*/ 1, /*eos*/ 2, /*max_len*/ 10);
  // p.tokens == {6, 7}; p.attention[k][0] is step k's attention over the source, (1, 1, 4).

  CHECK(p.tokens == std::vector<int64_t>{6, 7});
  REQUIRE(p.attention.size() == 3);  // two tokens and the eos step
  CHECK(p.attention[0][0].shape() == Shape{1, 1, 4});
}

TEST_CASE("docs/checkpoints: a model and its optimizer") {
  std::filesystem::path path = std::filesystem::temp_directory_path() / "qkv_readme_checkpoint.safetensors";
  nn::Linear model(4, 2);
  optim::AdamW opt(model.parameters(), 1e-3f);
  Tensor loss = mse_loss(model(ones({3, 4})), zeros({3, 2}));
  loss.backward();
  opt.step();
  io::save_checkpoint(path, model, &opt);  // model.state_dict() and the optimizer's, as safetensors

  nn::Linear fresh(4, 2);
  optim::AdamW fresh_opt(fresh.parameters(), 1e-3f);
  io::load_checkpoint(path, fresh, &fresh_opt);  // all or nothing: a damaged file changes nothing

  CHECK(fresh.weight.to_vector() == model.weight.to_vector());
  std::filesystem::remove(path);
}
