// Machine translation for lessons 08 and 11: d2l's train_seq2seq (and the
// loss curve both lessons draw of it), predict_seq2seq and BLEU over held-out
// pairs (see translation.hpp).
//
// Letters: B batch, T source steps, S target steps, V target vocabulary.
#include "translation.hpp"

#include <algorithm>
#include <chrono>

namespace qkv::lesson {

data::NMTData load_translation_data(const std::filesystem::path& data_dir, int64_t num_steps) {
  return data::load_data_nmt((data_dir / "eng-fra" / "train.txt").string(), num_steps);
}

std::vector<TranslationPair> load_test_pairs(const std::filesystem::path& data_dir) {
  // The same reading as the training file's: preprocess, split each side on spaces.
  const std::string file = (data_dir / "eng-fra" / "test.txt").string();
  const std::string text = data::read_data_nmt(file);  // its errors name the file
  data::ParallelTokens tokens;
  try {
    tokens = data::tokenize_nmt(data::preprocess_nmt(text));
  } catch (const Error& e) {
    fail("load_test_pairs: '{}': {}", file, e.what());  // say which file the line is in
  }
  // Checked here, before any training: the BLEU at the end needs at least one pair.
  if (tokens.source.empty())
    fail("load_test_pairs: '{}' has no sentence pairs (the file is empty or blank): there is nothing to score", file);
  std::vector<TranslationPair> pairs;
  for (size_t i = 0; i < tokens.source.size(); ++i)
    pairs.push_back(
        {fmt::format("{}", fmt::join(tokens.source[i], " ")), fmt::format("{}", fmt::join(tokens.target[i], " "))});
  return pairs;
}

std::vector<double> train_seq2seq(nn::EncoderDecoder& model, const data::NMTData& nmt, const TrainOptions& options,
                                  Generator& gen, Lesson& lesson) {
  if (options.epochs < 1 || options.batch_size < 1 || !(options.lr > 0) || !(options.grad_clip > 0))
    fail("train_seq2seq: epochs {} and batch_size {} must be at least 1, lr {} and grad_clip {} positive",
         options.epochs, options.batch_size, options.lr, options.grad_clip);
  if (!(options.weight_decay >= 0) || !(options.label_smoothing >= 0 && options.label_smoothing < 1))
    fail("train_seq2seq: weight_decay {} must be ≥ 0 and label_smoothing {} in [0, 1)", options.weight_decay,
         options.label_smoothing);
  // d2l's xavier_init_weights: Glorot-uniform for the Linear and GRU weight
  // matrices (every 2-D parameter but the embeddings); biases stay as they are.
  for (auto& [name, p] : model.named_parameters())
    if (p.dim() == 2 && name.find("embedding") == std::string::npos) nn::init::xavier_uniform_(p, 1, gen);
  model.train();
  optim::AdamW optimizer(model.parameters(), options.lr, {0.9f, 0.999f}, 1e-8f, options.weight_decay);
  data::DataLoader loader(nmt.dataset(), {.batch_size = options.batch_size, .shuffle = true}, gen);
  const int64_t bos = nmt.tgt_vocab["<bos>"];
  std::vector<double> losses;
  Progress progress = lesson.progress("epoch", options.epochs);
  for (int64_t epoch = 0; epoch < options.epochs; ++epoch) {
    double loss_sum = 0;
    int64_t tokens = 0, batch = 0;
    for (auto& [X, X_valid_len, Y, Y_valid_len] : loader) {  // (B, T), (B), (B, S), (B)
      const int64_t B = Y.size(0), S = Y.size(1);
      // Teacher forcing: the decoder reads bos, y_1, …, y_{S-1} and predicts y_1, …, y_S.
      std::vector<int64_t> dec(static_cast<size_t>(B * S));
      for (int64_t b = 0; b < B; ++b) {
        dec[static_cast<size_t>(b * S)] = bos;
        std::copy(Y.data() + b * S, Y.data() + b * S + S - 1, dec.begin() + b * S + 1);
      }
      IntTensor dec_X = int_tensor(std::move(dec), {B, S});  // (B, S)
      optimizer.zero_grad();
      Tensor Y_hat = model.forward(X, dec_X, X_valid_len);                 // (B, S, V)
      Tensor l = nn::masked_softmax_cross_entropy(Y_hat, Y, Y_valid_len);  // (B): each a mean over S
      if (options.label_smoothing > 0) {
        // The same masked mean over S, of the cross-entropy against (1-ε)·onehot(y) + ε/V.
        const int64_t V = Y_hat.size(2);
        Tensor smoothed = cross_entropy(reshape(Y_hat, {B * S, V}), Y.reshape({B * S}), /*weight=*/Tensor(),
                                        /*ignore_index=*/-100, Reduction::None, options.label_smoothing);  // (B·S)
        Tensor weights = sequence_mask(ones({B, S}), Y_valid_len);                                         // (B, S)
        sum(mean(reshape(smoothed, {B, S}) * weights, 1)).backward();                                      // (B) -> ()
      } else {
        sum(l).backward();
      }
      // l[b] = (the cross-entropy summed over b's real tokens) / S: undo the 1/S.
      const double batch_loss = static_cast<double>(sum(l).item()) * static_cast<double>(S);
      check_finite_loss(batch_loss, "epoch", epoch + 1, fmt::format(" (batch {})", batch + 1));  // before the step
      optim::clip_grad_norm_(model.parameters(), options.grad_clip);
      optimizer.step();
      ++batch;
      loss_sum += batch_loss;
      for (int64_t b = 0; b < B; ++b) tokens += Y_valid_len.data()[b];
    }
    losses.push_back(loss_sum / static_cast<double>(tokens));
    progress.update(epoch + 1, {{"loss", losses.back()}});
  }
  progress.finish();
  return losses;
}

std::vector<double> train_seq2seq_and_plot(nn::EncoderDecoder& model, const data::NMTData& nmt,
                                           const TrainOptions& options, Generator& gen, Lesson& lesson) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<double> losses = train_seq2seq(model, nmt, options, gen, lesson);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  lesson.print("loss per target token {:.4f} -> {:.4f} in {:.1f} s\n", losses.front(), losses.back(), seconds);
  std::vector<float> epochs;  // 1, 2, …, the x of the plot
  for (int64_t e = 1; e <= options.epochs; ++e) epochs.push_back(static_cast<float>(e));
  lesson.line_plot("loss.svg", {{"loss", epochs, std::vector<float>(losses.begin(), losses.end())}},
                   {.title = "Training loss per target token", .xlabel = "epoch", .ylabel = "cross-entropy"});
  lesson.result("losses", losses);
  lesson.result("train_seconds", seconds);
  return losses;
}

std::string Translation::text() const { return fmt::format("{}", fmt::join(tokens, " ")); }

Translation translate(nn::EncoderDecoder& model, const data::NMTData& nmt, const std::string& sentence,
                      int64_t num_steps) {
  return translate(model, nmt.src_vocab, nmt.tgt_vocab, sentence, num_steps);
}

Translation translate(nn::EncoderDecoder& model, const data::Vocab& src_vocab, const data::Vocab& tgt_vocab,
                      const std::string& sentence, int64_t num_steps) {
  if (num_steps < 1) fail("translate: num_steps {} must be at least 1", num_steps);
  // The sentence as the training data was read: preprocessed, split on spaces, <eos> appended.
  std::vector<std::string> words;
  const std::string text = data::preprocess_nmt(sentence);
  for (size_t start = 0; start < text.size();) {
    size_t end = std::min(text.find(' ', start), text.size());
    if (end > start) words.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  if (words.empty()) fail("translate: the sentence \"{}\" has no words", sentence);
  words.push_back("<eos>");
  std::vector<int64_t> src = src_vocab[words];
  const data::Vocab& tgt = tgt_vocab;
  nn::EncoderDecoder::Prediction p =
      model.predict(src, num_steps, src_vocab["<pad>"], tgt["<bos>"], tgt["<eos>"], num_steps);

  Translation t;
  t.tokens = tgt.to_tokens(p.tokens);
  const int64_t T = std::min<int64_t>(static_cast<int64_t>(words.size()), num_steps);
  t.source = src_vocab.to_tokens(std::vector<int64_t>(src.begin(), src.begin() + T));  // unknown words: <unk>
  for (const std::string& word : words)
    if (word != "<eos>" && !src_vocab.contains(word) &&
        std::find(t.unknown_words.begin(), t.unknown_words.end(), word) == t.unknown_words.end())
      t.unknown_words.push_back(word);
  t.cut_tokens.assign(words.begin() + T, words.end());
  // Step k's weights are (1, 1, num_steps) (the Bahdanau decoder) or, per
  // block, (1, heads, 1, num_steps) (a Transformer's cross-attention): the
  // step's row is the mean of the last tensor's rows (one row, or the heads
  // of the last block), cut to the source's valid columns. The padded
  // columns carry zero weight.
  const int64_t steps = static_cast<int64_t>(p.attention.size());
  std::vector<float> rows;
  for (const std::vector<Tensor>& step : p.attention) {
    if (step.empty()) fail("translate: the decoder gave no attention weights");
    const Tensor& w = step.back();
    if (w.size(-1) != num_steps)
      fail("translate: attention weights {} do not end in {} source steps", w.shape(), num_steps);
    const int64_t n = w.numel() / num_steps;  // rows to average
    for (int64_t j = 0; j < T; ++j) {
      double s = 0;
      for (int64_t r = 0; r < n; ++r) s += w.data()[r * num_steps + j];
      rows.push_back(static_cast<float>(s / static_cast<double>(n)));
    }
  }
  t.attention = tensor(std::move(rows), {steps, T});  // (output steps, source steps)
  return t;
}

BleuScores bleu(nn::EncoderDecoder& model, const data::NMTData& nmt, const std::vector<TranslationPair>& pairs,
                int64_t num_steps, int64_t k) {
  if (pairs.empty()) fail("bleu: no pairs to score");
  BleuScores scores;
  double total = 0;
  for (const TranslationPair& pair : pairs) {
    std::string prediction = translate(model, nmt, pair.source, num_steps).text();
    const double b = data::bleu(prediction, pair.target, k);
    total += b;
    scores.pairs.push_back({pair, std::move(prediction), b});
  }
  scores.mean = total / static_cast<double>(pairs.size());
  return scores;
}

void draw_translation_model(Lesson& lesson, nn::EncoderDecoder& model, const data::NMTData& nmt,
                            const std::string& file, const viz::ModelPictureOptions& opt, int summary_depth,
                            int64_t pairs) {
  const int64_t B = std::min(pairs, nmt.src_array.size(0)), T = nmt.src_array.size(1), S = nmt.tgt_array.size(1);
  const int64_t bos = nmt.tgt_vocab["<bos>"];
  const int64_t* src = nmt.src_array.data();
  const int64_t* tgt = nmt.tgt_array.data();
  std::vector<int64_t> x(src, src + B * T), dec(static_cast<size_t>(B * S)), lens;
  for (int64_t b = 0; b < B; ++b) {
    dec[static_cast<size_t>(b * S)] = bos;  // [bos, y_1, …, y_{S-1}]: teacher forcing, as in training
    for (int64_t s = 1; s < S; ++s) dec[static_cast<size_t>(b * S + s)] = tgt[b * S + s - 1];
    lens.push_back(nmt.src_valid_len.at({b}));
  }
  IntTensor X = int_tensor(std::move(x), {B, T});        // (B, T)
  IntTensor dec_X = int_tensor(std::move(dec), {B, S});  // (B, S)
  IntTensor X_len = int_tensor(std::move(lens), {B});    // (B)
  lesson.draw_model(
      file, model, [&] { model.forward(X, dec_X, X_len); }, opt, summary_depth);
}

}  // namespace qkv::lesson
