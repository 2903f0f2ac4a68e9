// Lesson 08 · seq2seq with Bahdanau attention
//
// Walks through:
//   003 带有注意力机制的seq2seq模型   the encoder–decoder with attention: what initialises the
//                                      decoder's state (编码器在所有时间步的最终层输出, 编码器在最后一个
//                                      时间步的全层隐状态, 编码器有效长度), the decoder's forward (each
//                                      step's query is the decoder's last-layer hidden state, keys =
//                                      values = the encoder's outputs; the context is concatenated with
//                                      the input and fed to the RNN), and a model trained with it
//
// The learner sees the decoder's state, built from a batch of real
// sentences, with its shapes; one decoding step's attention worked by hand,
// the padding masked out, and the same weights from the library's decoder
// loop (Seq2SeqAttentionDecoder::forward, src/nn/seq2seq.cpp); then d2l's
// model (a GRU encoder, nn::Seq2SeqEncoder, and the Bahdanau decoder,
// nn::Seq2SeqAttentionDecoder) trained with d2l's train_seq2seq on qkv's
// English–French corpus, with two regularisers d2l leaves out (label
// smoothing 0.1, AdamW's weight decay 0.1); the loss curve; BLEU, d2l's
// formula worked by hand on two sentences; d2l's four test sentences
// translated, scored, checked against their references (a wrong one is
// called wrong) and their attention drawn; BLEU over the 100 held-out pairs,
// every pair saved; for a held-out sentence whose French puts the adjective
// after the noun, which English word each French word attended to most, and
// whether the alignment crosses where the word orders do (`chien` looking at
// `dog`, `noir` at `black`); and beam search (d2l 10.8, lessons/support/
// beam_search.hpp): the held-out pairs decoded with beams of 1 (greedy), 2
// and 4, one sentence's beam step by step, and what each beam changes in BLEU.
// Every number the lesson states is computed by the run (tests/lessons/
// test_lesson08.cpp checks them at seeds 0-2).
//
// The trained model is saved with its vocabularies as <out>/model.safetensors
// (lessons/support/translation_model.hpp); lessons/translate.cpp loads it and
// translates the learner's own sentences.
//
// Letters: B batch, T = num_steps source steps, S target steps, E embed size,
// H hidden size, L GRU layers, V target vocabulary.
//
// Run: build/release/lessons/08_seq2seq_attention [--seed S] [--epochs E] [--lr LR] [--label-smoothing EPS]
//          [--weight-decay W] [--data DIR] [--out DIR]
#include <qkv/qkv.hpp>

#include <algorithm>
#include <chrono>
#include <numeric>

#include "beam_search.hpp"
#include "lesson.hpp"
#include "translation.hpp"
#include "translation_model.hpp"
#include "translation_report.hpp"

using namespace qkv;

namespace {

struct Sizes {
  // d2l trains 2 layers with dropout 0.1 for 250 epochs; on this corpus, in seconds, one layer without
  // dropout learns faster and attends more sharply (dropout on the attention weights spreads them).
  // Two regularisers d2l does not use keep it from learning the training pairs by heart (see the
  // training section): label smoothing 0.1 and AdamW's weight decay 0.1; --label-smoothing 0
  // --weight-decay 0 trains as d2l does, for a learner to compare the held-out BLEU.
  // 30 epochs: with 28, the same-numbers arithmetic (docs/building.md) answered `go .` with <unk> at seed 0.
  int64_t epochs = 30, batch_size = 64, embed = 48, hidden = 96, layers = 1, num_steps = 10;
  float lr = 0.01f, dropout = 0.0f, label_smoothing = 0.1f, weight_decay = 0.1f;
};

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// d2l 10.8's length penalty exponent: a beam's candidates are scored by log P / L^α.
constexpr double kAlpha = 0.75;

// "i lost ." -> {"i", "lost", "."}.
std::vector<std::string> split_words(const std::string& sentence) {
  std::vector<std::string> words;
  std::string word;
  for (char c : sentence) {
    if (c != ' ') {
      word.push_back(c);
    } else if (!word.empty()) {
      words.push_back(word);
      word.clear();
    }
  }
  if (!word.empty()) words.push_back(word);
  return words;
}

// One line per string, as results.json keeps lists of sentences.
std::string lines(const std::vector<std::string>& each) {
  std::string out;
  for (const std::string& s : each) out += s + "\n";
  return out;
}

// Row r of the (N, T) array a.
std::vector<int64_t> row_of(const IntTensor& a, int64_t r) {
  const std::vector<int64_t> all = a.to_vector();
  const int64_t T = a.size(1);
  return {all.begin() + r * T, all.begin() + (r + 1) * T};
}

// The position of `token` in `tokens`, or -1.
int64_t position(const std::vector<std::string>& tokens, const std::string& token) {
  auto it = std::find(tokens.begin(), tokens.end(), token);
  return it == tokens.end() ? -1 : static_cast<int64_t>(it - tokens.begin());
}

// The column of row r's largest entry in the 2-D m.
int64_t argmax_column(const Tensor& m, int64_t r) { return argmax(narrow(m, 0, r, 1)).item(); }

void the_data(lesson::Lesson& lesson, const data::NMTData& nmt, size_t test_pairs) {
  lesson.section("The data: English–French pairs");
  const int64_t n_train = nmt.src_array.size(0), T = nmt.src_array.size(1);
  lesson.print("{} training pairs from eng-fra/train.txt, {} held-out pairs from eng-fra/test.txt\n", n_train,
               test_pairs);
  lesson.print("vocabularies (tokens seen at least twice, with <unk> <pad> <bos> <eos>): English {}, French {}\n",
               nmt.src_vocab.size(), nmt.tgt_vocab.size());
  lesson.print("every sentence + <eos>, padded with <pad> to T = {} ids: src {}, tgt {}, valid lengths {}\n", T,
               nmt.src_array.shape(), nmt.tgt_array.shape(), nmt.src_valid_len.shape());
  const int64_t row = n_train / 2;  // a pair from the middle of the file (it is sorted by length)
  const std::vector<int64_t> src = row_of(nmt.src_array, row), tgt = row_of(nmt.tgt_array, row);
  lesson.print("pair {}: [{}] -> [{}]\n", row, fmt::join(nmt.src_vocab.to_tokens(src), " "),
               fmt::join(nmt.tgt_vocab.to_tokens(tgt), " "));
  lesson.print("         ids [{}] -> [{}], valid lengths {} and {}\n", fmt::join(src, ", "), fmt::join(tgt, ", "),
               nmt.src_valid_len.at({row}), nmt.tgt_valid_len.at({row}));
}

// 003's forward, one step of it by hand on a batch of four sentences before training, then the same
// step from the library's decoder loop.
void decoder_state(lesson::Lesson& lesson, nn::EncoderDecoder& model, nn::Seq2SeqEncoder& encoder,
                   nn::Seq2SeqAttentionDecoder& decoder, const data::NMTData& nmt, int64_t layers, int64_t hidden) {
  lesson.section("带有注意力机制的seq2seq模型: the decoder's state");
  lesson.print("{}\n", model.repr());
  lesson::draw_translation_model(lesson, model, nmt, "model.svg",
                                 {.title = "seq2seq with Bahdanau attention, drawn from one forward", .depth = 2});
  // Four pairs of different lengths, as a batch: (4, T).
  const int64_t n_train = nmt.src_array.size(0), T = nmt.src_array.size(1);
  std::vector<int64_t> ids, lens;
  for (int64_t r : {int64_t{0}, n_train / 3, 2 * n_train / 3, n_train - 1}) {
    const std::vector<int64_t> src = row_of(nmt.src_array, r);
    ids.insert(ids.end(), src.begin(), src.end());
    lens.push_back(nmt.src_valid_len.at({r}));
  }
  IntTensor X = int_tensor(ids, {4, T});    // (4, T)
  IntTensor X_len = int_tensor(lens, {4});  // (4)
  model.eval();
  NoGradGuard no_grad;
  nn::EncoderOutput enc = encoder(X, X_len);
  nn::DecoderState state = decoder.init_state(enc, X_len);
  lesson.print(
      "初始化解码器的状态, from a batch of 4 source sentences X {}, valid lengths [{}]:\n"
      "  编码器在所有时间步的最终层输出   enc_outputs {} (B, T, H): attention's keys and values\n"
      "  编码器在最后一个时间步的全层隐状态 hidden {} (L, B, H): the decoder's initial hidden state\n"
      "  编码器有效长度                   enc_valid_lens {} (B): the source positions attention may look at\n",
      X.shape(), fmt::join(lens, ", "), state.enc_outputs.shape(), state.hidden.shape(), state.enc_valid_lens.shape());
  // One decoding step, by hand: the query is the last layer's hidden state.
  Tensor query = reshape(narrow(state.hidden, 0, layers - 1, 1), {4, 1, hidden});  // (1, B, H) -> (B, 1, H)
  Tensor context = (*decoder.attention)(query, state.enc_outputs, state.enc_outputs, state.enc_valid_lens);
  Tensor weights = reshape(decoder.attention->attention_weights, {4, T});  // (B, 1, T) -> (B, T)
  lesson.print(
      "one step of the forward in 003: query = hidden_state[-1].unsqueeze(1) {} (B, 1, H);\n"
      "context = attention(query, enc_outputs, enc_outputs, enc_valid_lens) {} (B, 1, H); weights {} (B, 1, T),\n"
      "each row a softmax over the valid source positions (before training):\n{}\n",
      query.shape(), context.shape(), decoder.attention->attention_weights.shape(), weights);
  double on_padding = 0;
  for (int64_t b = 0; b < 4; ++b) {
    const int64_t len = X_len.at({b});
    if (len < T)
      on_padding = std::max<double>(on_padding, max(narrow(narrow(weights, 0, b, 1), 1, len, T - len)).item());
  }
  lesson.print("largest weight on a padded position: {} (masked scores underflow to 0 in exp)\n", on_padding);
  lesson.print(
      "Then, as the note under 003's code says, the context is concatenated with the step's embedded input,\n"
      "x = cat(context, embed(y)) (B, 1, H + E), and fed to the GRU; the GRU's new hidden state is the next\n"
      "step's query, which is why the decoder runs one step at a time, and dense(h) gives the logits (B, 1, V).\n");
  // The library's loop over the steps is that code: its first step must give the same weights.
  IntTensor bos = int_tensor(std::vector<int64_t>(4, nmt.tgt_vocab["<bos>"]), {4, 1});  // (B, 1)
  Tensor logits = decoder(bos, state);                                                  // (B, 1, V)
  const double step_diff = max(abs(reshape(decoder.attention_weights().front(), {4, T}) - weights)).item();
  lesson.print(
      "003's loop is Seq2SeqAttentionDecoder::forward in src/nn/seq2seq.cpp (`for (int64_t s = 0; s < S; ++s)`).\n"
      "Run on <bos> for this batch it gives logits {} and, at its step 0, the weights above: largest\n"
      "difference {}.\n",
      logits.shape(), step_diff);
  lesson.result("max_weight_on_padding", on_padding);
  lesson.result("decoder_step_max_diff", step_diff);
}

std::vector<double> training(lesson::Lesson& lesson, nn::EncoderDecoder& model, const data::NMTData& nmt,
                             const Sizes& z, Generator& gen) {
  lesson.section("Training: d2l's train_seq2seq");
  lesson.print(
      "E = {}, H = {}, L = {}, dropout {}; AdamW lr {}, batches of {}, {} epochs, gradients clipped to norm 1;\n"
      "teacher forcing (the decoder reads <bos> y_1 … y_(S-1)), loss = masked softmax cross-entropy\n",
      z.embed, z.hidden, z.layers, z.dropout, z.lr, z.batch_size, z.epochs);
  lesson.print(
      "Two changes to d2l's training, against learning the {} pairs by heart (run with --label-smoothing 0\n"
      "--weight-decay 0 to train as d2l does and compare the held-out BLEU below):\n"
      "  label smoothing ε = {}: the target of each step is 1-ε on the right token and ε/V spread over all V,\n"
      "    so the model gains nothing by growing its logits without end on pairs it already knows;\n"
      "  weight decay λ = {} (AdamW): every weight shrinks by lr·λ each step, so only weights the data\n"
      "    keeps asking for stay large.\n"
      "The printed loss is the plain cross-entropy; with smoothing it cannot reach 0.\n",
      nmt.src_array.size(0), z.label_smoothing, z.weight_decay);
  return lesson::train_seq2seq_and_plot(model, nmt,
                                        {.epochs = z.epochs,
                                         .lr = z.lr,
                                         .batch_size = z.batch_size,
                                         .weight_decay = z.weight_decay,
                                         .label_smoothing = z.label_smoothing},
                                        gen, lesson);
}

// d2l 10.7.6's BLEU, before the lesson reports it: the formula, then two sentences worked step by step
// and held against data::bleu, which the rest of the lesson uses.
void bleu_explained(lesson::Lesson& lesson) {
  lesson.section("BLEU: how a translation is scored (d2l 10.7.6)");
  lesson.print(
      "BLEU = exp(min(0, 1 - len_label / len_pred)) · Π_(n=1..k) p_n^(1/2ⁿ)\n"
      "p_n, the n-gram precision: of the prediction's n-grams, the fraction found in the label (each of the\n"
      "label's n-grams matched at most as often as it occurs there). The first factor, the brevity penalty,\n"
      "is 1 for a prediction at least as long as the label and below 1 for a shorter one, which would\n"
      "otherwise score high precisions by saying little. The exponent 1/2ⁿ halves with each n, so the same\n"
      "precision costs less at a longer n: 0.5^(1/2) = {:.3f} at n = 1, 0.5^(1/4) = {:.3f} at n = 2 (d2l:\n"
      "longer matching n-grams weigh more). These lessons use k = 2; a perfect translation scores 1.\n\n",
      std::pow(0.5, 0.5), std::pow(0.5, 0.25));
  const std::vector<lesson::TranslationPair> worked = {{"je suis chez toi .", "je suis chez moi ."},
                                                       {"il est .", "il est calme ."}};
  double largest_diff = 0;
  for (size_t i = 0; i < worked.size(); ++i) {
    const double by_hand = lesson::bleu_by_hand(lesson, worked[i].source, worked[i].target, 2);
    const double library = data::bleu(worked[i].source, worked[i].target, 2);
    lesson.print("  data::bleu gives {:.4f}\n\n", library);
    largest_diff = std::max(largest_diff, std::abs(by_hand - library));
    lesson.result(fmt::format("bleu_worked_{}_prediction", i), worked[i].source);
    lesson.result(fmt::format("bleu_worked_{}_label", i), worked[i].target);
    lesson.result(fmt::format("bleu_worked_{}", i), by_hand);
  }
  lesson.result("bleu_worked_max_diff", largest_diff);
}

// "The black dog swims." has the adjective before the noun; "le chien noir nage ." after it.
// Returns a line for the summary.
std::string word_orders_cross(lesson::Lesson& lesson, nn::EncoderDecoder& model, const data::NMTData& nmt, int64_t T) {
  lesson.section("Where the word orders cross");
  const std::string sentence = "The black dog swims.";
  lesson::Translation t = lesson::translate(model, nmt, sentence, T);
  lesson.print("{} => {}   (held out; reference: le chien noir nage .)\n", sentence, t.text());
  lesson.print("the source position each output token attends to most:\n");
  for (size_t k = 0; k < t.tokens.size(); ++k) {
    const int64_t j = argmax_column(t.attention, static_cast<int64_t>(k));
    lesson.print("  {:>8} -> {} ({:.2f})\n", t.tokens[k], t.source[static_cast<size_t>(j)],
                 t.attention.at({static_cast<int64_t>(k), j}));
  }
  const int64_t noir = position(t.tokens, "noir"), chien = position(t.tokens, "chien");
  const int64_t black = position(t.source, "black"), dog = position(t.source, "dog");
  const int64_t noir_looks = noir >= 0 ? argmax_column(t.attention, noir) : -1;
  const int64_t chien_looks = chien >= 0 ? argmax_column(t.attention, chien) : -1;
  // Crossing: chien comes before noir in the output, and looks at a later source word.
  const bool crossing =
      noir >= 0 && chien >= 0 && noir_looks == black && chien_looks == dog && (chien < noir) == (dog > black);
  if (crossing)
    lesson.print(
        "`chien` (output {}) looks at `dog` (source {}) and `noir` (output {}) at `black` (source {}): the French\n"
        "puts the adjective after the noun, and the attention follows the words, not the positions.\n",
        chien, dog, noir, black);
  else if (noir < 0 || chien < 0)
    lesson.print("no crossing to see: the translation lacks `{}`\n", chien < 0 ? "chien" : "noir");
  else
    lesson.print(
        "no crossing here: `chien` (output {}) looks most at `{}`, `noir` (output {}) at `{}`. The GRU reads the\n"
        "source left to right, so its output at `dog` has read `black` too: the model can find `black` there.\n",
        chien, t.source[static_cast<size_t>(chien_looks)], noir, t.source[static_cast<size_t>(noir_looks)]);
  lesson::attention_heatmap(lesson, "attention_crossing.svg", t,
                            fmt::format("\"{}\" => \"{}\": {}", sentence, t.text(),
                                        crossing ? "noir looks at black, chien at dog" : "attention per output step"));
  lesson.result("crossing_translation", t.text());
  lesson.result("crossing_source_black", black);
  lesson.result("crossing_source_dog", dog);
  lesson.result("crossing_output_noir", noir);
  lesson.result("crossing_output_chien", chien);
  lesson.result("crossing_noir_argmax", noir_looks);
  lesson.result("crossing_chien_argmax", chien_looks);
  lesson.result("crossing", crossing);
  return fmt::format("`{}` => `{}`{}", sentence, t.text(),
                     crossing ? ", its attention crossing where the word orders do" : "");
}

// --- beam search (d2l 10.8) -------------------------------------------------------------------------

// A preprocessed sentence ("i lost .") as the encoder reads it: its ids, then <eos>.
std::vector<int64_t> source_ids(const data::NMTData& nmt, const std::string& sentence) {
  std::vector<std::string> words = split_words(sentence);
  words.push_back("<eos>");
  return nmt.src_vocab[words];
}

// One beam size over the held-out pairs: each translation, its BLEU and its log-probability under the model.
struct BeamRun {
  int64_t k;
  std::vector<std::string> translations;
  std::vector<double> bleus, log_probs;
  double mean_bleu = 0;
};
BeamRun decode_held_out(nn::EncoderDecoder& model, const data::NMTData& nmt,
                        const std::vector<lesson::TranslationPair>& pairs, int64_t num_steps, int64_t k) {
  BeamRun run{k, {}, {}, {}, 0};
  for (const lesson::TranslationPair& pair : pairs) {
    lesson::BeamSearch b = lesson::beam_search(model, source_ids(nmt, pair.source),
                                               {.beam_size = k,
                                                .num_steps = num_steps,
                                                .pad = nmt.src_vocab["<pad>"],
                                                .bos = nmt.tgt_vocab["<bos>"],
                                                .eos = nmt.tgt_vocab["<eos>"],
                                                .max_len = num_steps,
                                                .alpha = kAlpha});
    run.translations.push_back(fmt::format("{}", fmt::join(nmt.tgt_vocab.to_tokens(b.tokens), " ")));
    run.bleus.push_back(data::bleu(run.translations.back(), pair.target, 2));
    run.log_probs.push_back(b.best.log_prob);
    run.mean_bleu += run.bleus.back() / static_cast<double>(pairs.size());
  }
  return run;
}

// What beam k changed against beam 1 (greedy), counted pair by pair: one line for the transcript.
struct BeamChange {
  int64_t changed = 0, better = 0, worse = 0;
};
BeamChange compare(const BeamRun& greedy, const BeamRun& beam) {
  BeamChange c;
  for (size_t i = 0; i < greedy.translations.size(); ++i) {
    if (beam.translations[i] == greedy.translations[i]) continue;
    ++c.changed;
    c.better += beam.bleus[i] > greedy.bleus[i];
    c.worse += beam.bleus[i] < greedy.bleus[i];
  }
  return c;
}

std::string change_sentence(const BeamRun& greedy, const BeamRun& beam) {
  const BeamChange c = compare(greedy, beam);
  if (c.changed == 0)
    return fmt::format("beam {} gives every held-out translation greedy gives: BLEU stays {:.3f}", beam.k,
                       beam.mean_bleu);
  const std::string direction = beam.mean_bleu > greedy.mean_bleu   ? "raises"
                                : beam.mean_bleu < greedy.mean_bleu ? "lowers"
                                                                    : "leaves";
  return fmt::format(
      "beam {} changes {} of {} translations ({} score higher BLEU, {} lower) and {} the mean BLEU {} {:.3f}", beam.k,
      c.changed, greedy.translations.size(), c.better, c.worse, direction,
      direction == "leaves" ? "at" : fmt::format("from {:.3f} to", greedy.mean_bleu), beam.mean_bleu);
}

// One sentence's beam, step by step: every hypothesis kept after each step, with its log-probability.
void show_beam(lesson::Lesson& lesson, nn::EncoderDecoder& model, const data::NMTData& nmt,
               const lesson::TranslationPair& pair, int64_t num_steps, int64_t k) {
  lesson::BeamSearch b = lesson::beam_search(model, source_ids(nmt, pair.source),
                                             {.beam_size = k,
                                              .num_steps = num_steps,
                                              .pad = nmt.src_vocab["<pad>"],
                                              .bos = nmt.tgt_vocab["<bos>"],
                                              .eos = nmt.tgt_vocab["<eos>"],
                                              .max_len = num_steps,
                                              .alpha = kAlpha});
  lesson.print("\"{}\" (reference: {}), beam {}, step by step (log P, natural log; * = ended with <eos>):\n",
               pair.source, pair.target, k);
  std::string trace;
  for (size_t t = 0; t < b.steps.size(); ++t) {
    for (const lesson::Hypothesis& h : b.steps[t]) {
      const std::string words = fmt::format("{}", fmt::join(nmt.tgt_vocab.to_tokens(h.tokens), " "));
      const std::string line =
          fmt::format("  step {:<2}  {:<40} {:8.4f}{}\n", t + 1, words, h.log_prob, h.finished ? " *" : "");
      lesson.print("{}", line);
      trace += line;
    }
  }
  lesson.print(
      "A beam runs until every hypothesis in it has finished, or for max_len = {} steps: hypotheses go on\n"
      "after the first <eos>, and the answer is the best-scored of all the finished ones (*) and of those\n"
      "still live at the end.\n",
      num_steps);
  lesson.print("chosen: \"{}\", log P {:.4f}, score log P / L^{} = {:.4f} (L = {} tokens)\n",
               fmt::join(nmt.tgt_vocab.to_tokens(b.tokens), " "), b.best.log_prob, kAlpha, b.score,
               b.best.tokens.size());
  lesson.result("beam_trace_source", pair.source);
  lesson.result("beam_trace_size", k);
  lesson.result("beam_trace", trace);
  lesson.result("beam_trace_chosen", fmt::format("{}", fmt::join(nmt.tgt_vocab.to_tokens(b.tokens), " ")));
  lesson.result("beam_trace_log_prob", b.best.log_prob);
}

// Greedy decoding, then beams of 2 and 4, over the held-out pairs; one sentence's beam shown. Returns
// the summary's line.
std::string beam_search_section(lesson::Lesson& lesson, nn::EncoderDecoder& model, const data::NMTData& nmt,
                                const std::vector<lesson::TranslationPair>& pairs, int64_t num_steps) {
  lesson.section("Beam search (d2l 10.8): beams of 1, 2 and 4");
  lesson.print(
      "Greedy decoding keeps the one most likely token at each step. Beam search keeps the k most likely\n"
      "partial translations: at each step every one of them is extended by every token, log P adds up, and\n"
      "the k best of the k·V extensions stay; one that says <eos> is finished. The answer is the finished\n"
      "sequence of largest log P / L^α (α = {}, d2l's; L counts the <eos>). k = 1 is greedy decoding.\n",
      kAlpha);
  std::vector<BeamRun> runs;
  for (int64_t k : {1, 2, 4}) runs.push_back(decode_held_out(model, nmt, pairs, num_steps, k));
  // The first pair where beam 2 or 4 differs from greedy shows best what a beam does; else the first pair.
  size_t shown = 0;
  for (size_t i = 0; i < pairs.size(); ++i)
    if (runs[1].translations[i] != runs[0].translations[i] || runs[2].translations[i] != runs[0].translations[i]) {
      shown = i;
      break;
    }
  show_beam(lesson, model, nmt, pairs[shown], num_steps,
            runs[1].translations[shown] != runs[0].translations[shown] ? 2 : 4);

  lesson.print("\n{:<6} {:>10} {:>28} {:>22}\n", "beam", "mean BLEU", "translations unlike greedy's",
               "mean log P of output");
  for (const BeamRun& r : runs) {
    const double mean_log_prob =
        std::accumulate(r.log_probs.begin(), r.log_probs.end(), 0.0) / static_cast<double>(r.log_probs.size());
    lesson.print("{:<6} {:>10.3f} {:>28} {:>22.4f}\n", r.k, r.mean_bleu, compare(runs[0], r).changed, mean_log_prob);
    lesson.result(fmt::format("beam_{}_translations", r.k), lines(r.translations));
    lesson.result(fmt::format("beam_{}_bleus", r.k), r.bleus);
    lesson.result(fmt::format("beam_{}_log_probs", r.k), r.log_probs);
    lesson.result(fmt::format("beam_{}_mean_bleu", r.k), r.mean_bleu);
  }
  const std::string said = fmt::format("{};\n{}", change_sentence(runs[0], runs[1]), change_sentence(runs[0], runs[2]));
  lesson.print("{}.\n", said);
  // Does the model's own probability of what it outputs rise with the beam? (The beam picks by
  // log P / L^α, so it need not.)
  std::vector<double> mean_log_probs;
  for (const BeamRun& r : runs)
    mean_log_probs.push_back(std::accumulate(r.log_probs.begin(), r.log_probs.end(), 0.0) /
                             static_cast<double>(r.log_probs.size()));
  const bool rises = mean_log_probs[1] >= mean_log_probs[0] && mean_log_probs[2] >= mean_log_probs[1];
  lesson.print(
      "The mean log P of the output {} with the beam ({:.4f}, {:.4f}, {:.4f}){}.\n"
      "BLEU measures agreement with one reference, which is another thing than the model's probability.\n",
      rises ? "rises" : "does not rise steadily", mean_log_probs[0], mean_log_probs[1], mean_log_probs[2],
      rises ? ":\nthe wider beams find translations the model itself finds likelier" : "");
  lesson.result("beam_log_prob_rises", rises);
  return said;
}

}  // namespace

// The lesson's flags, read and checked (a value out of range stops the lesson, naming it).
Sizes read_flags(lesson::Lesson& lesson) {
  Sizes z;
  lesson.option("--epochs", z.epochs, "passes over the training pairs", {.max = 10'000});
  lesson.option("--batch-size", z.batch_size, "pairs per minibatch", {.max = 4096});
  lesson.option("--embed", z.embed, "embedding size E (both sides)", {.max = 1024});
  lesson.option("--hidden", z.hidden, "GRU hidden size H (encoder, decoder and attention)", {.max = 1024});
  lesson.option("--layers", z.layers, "GRU layers L", {.max = 16});
  lesson.option("--num-steps", z.num_steps, "tokens per padded sentence T (and the longest translation)",
                {.min = 2, .max = 256});
  lesson.option("--lr", z.lr, "AdamW learning rate");
  lesson.option("--dropout", z.dropout, "dropout between GRU layers and on the attention weights");
  lesson.option("--label-smoothing", z.label_smoothing, "ε: train against (1-ε)·onehot + ε/V (0: d2l's loss)");
  lesson.option("--weight-decay", z.weight_decay, "AdamW's decoupled weight decay λ (0: d2l's Adam)");
  lesson.data_option();
  lesson.start();
  if (z.epochs < 1 || z.batch_size < 1 || z.embed < 1 || z.hidden < 1 || z.layers < 1 || z.num_steps < 2)
    fail(
        "08_seq2seq_attention: --epochs {}, --batch-size {}, --embed {}, --hidden {}, --layers {} must be at least 1 "
        "and --num-steps {} at least 2",
        z.epochs, z.batch_size, z.embed, z.hidden, z.layers, z.num_steps);
  if (!(z.label_smoothing >= 0 && z.label_smoothing < 1) || !(z.weight_decay >= 0))
    fail("08_seq2seq_attention: --label-smoothing {} must be in [0, 1) and --weight-decay {} at least 0",
         z.label_smoothing, z.weight_decay);
  return z;
}

// What the lesson will show, printed before its first section.
void what_you_will_see(lesson::Lesson& lesson) {
  lesson.print(
      "What this lesson shows: note 003's encoder–decoder with Bahdanau attention, its decoder's state and\n"
      "one decoding step worked by hand; the model trained on English–French pairs; BLEU explained, then\n"
      "measured on held-out pairs; which English word each French word looks at; and beam search against\n"
      "greedy decoding.\n");
}

// What to keep from it, printed before the summary.
void what_to_remember(lesson::Lesson& lesson) {
  lesson.print(
      "\nWhat to remember: at every step the decoder's last hidden state is the query, the encoder's outputs\n"
      "are keys and values, and the valid lengths mask the padding; the context is fed to the GRU with the\n"
      "step's input, so the decoder runs one step at a time. The weights align each output word with the\n"
      "source words it needs, wherever they stand. A beam keeps several partial translations; it finds what\n"
      "the model scores higher, which is not always what BLEU scores higher.\n");
}

int main(int argc, char** argv) {
  lesson::Lesson lesson(argc, argv, 8);
  const Sizes z = read_flags(lesson);
  Generator gen(lesson.seed());
  what_you_will_see(lesson);

  data::NMTData nmt = lesson::load_translation_data(lesson.data(), z.num_steps);
  std::vector<lesson::TranslationPair> test_pairs = lesson::load_test_pairs(lesson.data());
  the_data(lesson, nmt, test_pairs.size());

  auto encoder =
      std::make_shared<nn::Seq2SeqEncoder>(nmt.src_vocab.size(), z.embed, z.hidden, z.layers, z.dropout, gen);
  auto decoder =
      std::make_shared<nn::Seq2SeqAttentionDecoder>(nmt.tgt_vocab.size(), z.embed, z.hidden, z.layers, z.dropout, gen);
  nn::EncoderDecoder model(encoder, decoder);
  decoder_state(lesson, model, *encoder, *decoder, nmt, z.layers, z.hidden);

  std::vector<double> losses = training(lesson, model, nmt, z, gen);
  lesson::save_lesson_model(lesson, model,
                            {.architecture = "seq2seq_attention",
                             .trained_by = "08_seq2seq_attention",
                             .num_steps = z.num_steps,
                             .num_hiddens = z.hidden,
                             .dropout = z.dropout,
                             .embed_size = z.embed,
                             .num_layers = z.layers},
                            nmt);

  bleu_explained(lesson);

  lesson.section("d2l's four sentences, translated");
  lesson::report_d2l_sentences(lesson, model, nmt, z.num_steps, {.draw_attention = true});

  lesson.section("BLEU on the held-out pairs");
  const auto bleu_start = std::chrono::steady_clock::now();
  lesson::BleuScores scores = lesson::report_held_out_bleu(lesson, model, nmt, test_pairs, z.num_steps);
  lesson.result("bleu_seconds", seconds_since(bleu_start));

  const std::string crossing = word_orders_cross(lesson, model, nmt, z.num_steps);
  const std::string beams = beam_search_section(lesson, model, nmt, test_pairs, z.num_steps);
  what_to_remember(lesson);

  return lesson.finish(fmt::format(
      "003's seq2seq with attention: the decoder's state is the encoder's outputs (keys and values), its last\n"
      "hidden state (the decoder's first) and the source lengths (the mask); each step's query is the decoder's\n"
      "last hidden state. Trained for {} epochs, loss {:.4f} -> {:.4f}; mean BLEU {:.3f} on {} held-out pairs;\n"
      "{}.\nBeam search: {}.",
      z.epochs, losses.front(), losses.back(), scores.mean, scores.pairs.size(), crossing, beams));
}
