// Machine translation for the course's two seq2seq lessons (08, the GRU
// with Bahdanau attention; 11, the Transformer), in the shape of d2l's code:
// the data (d2l 10.5), train_seq2seq (10.7.5), predict_seq2seq (10.7.6)
// and BLEU (10.7.6). Any nn::EncoderDecoder goes through them unchanged:
//
//   data::NMTData nmt = lesson::load_translation_data(lesson.data(), /*num_steps=*/10);
//   auto model = std::make_shared<nn::EncoderDecoder>(encoder, decoder);
//   std::vector<double> losses = lesson::train_seq2seq(*model, nmt, {.epochs = 30, .lr = 0.005f,
//                                                      .batch_size = 64}, gen, lesson);
//   lesson::Translation t = lesson::translate(*model, nmt, "I lost.", 10);
//   // t.tokens = {"j'ai", "perdu", "."}, t.source = {"i", "lost", ".", "<eos>"},
//   // t.attention (4, 4): one row per decoding step (the last said <eos>)
//   lesson::BleuScores s = lesson::bleu(*model, nmt, lesson::load_test_pairs(lesson.data()), 10);
//
// Letters: B batch, T = num_steps source steps, S = num_steps target steps,
// V the target vocabulary.
#pragma once
#include <qkv/qkv.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "lesson.hpp"

namespace qkv::lesson {

// <data>/eng-fra/train.txt read by data::load_data_nmt: every pair
// preprocessed, tokenised, both vocabularies (min_freq 2, <pad> <bos> <eos>
// reserved) and the (N, num_steps) arrays with their valid lengths.
data::NMTData load_translation_data(const std::filesystem::path& data_dir, int64_t num_steps);

// One English sentence and its French reference, preprocessed as the
// training data is (lowercase, a space before , . ! ?): "i lost ." / "j'ai perdu .".
struct TranslationPair {
  std::string source, target;
};
// The held-out pairs of <data>/eng-fra/test.txt, in file order. A file that
// cannot be read, a malformed line or a file with no pairs is a qkv::Error
// naming the file: a lesson calls this before it trains.
std::vector<TranslationPair> load_test_pairs(const std::filesystem::path& data_dir);

// The model drawn from one teacher-forced forward on the first `pairs`
// training pairs (X, dec_X = [bos, Y[:, :-1]], X_len), with Lesson::draw_model:
// the summary in the transcript and `file` among the pictures.
void draw_translation_model(Lesson& lesson, nn::EncoderDecoder& model, const data::NMTData& nmt,
                            const std::string& file, const viz::ModelPictureOptions& opt, int summary_depth = 100,
                            int64_t pairs = 4);

struct TrainOptions {
  int64_t epochs = 30;
  float lr = 0.005f;        // Adam's learning rate
  int64_t batch_size = 64;  // pairs per minibatch
  float grad_clip = 1;      // the gradients' total L2 norm is clipped to this
  // Two regularisers d2l's train_seq2seq does not use (0: d2l's training):
  float weight_decay = 0;     // AdamW's decoupled weight decay λ: p ← p·(1 − lr·λ) each step
  float label_smoothing = 0;  // ε: train against (1-ε)·onehot(y) + ε/V (cross_entropy's label_smoothing)
};

// d2l's train_seq2seq: re-initialise every weight matrix but the embeddings
// with xavier_uniform_ (d2l's xavier_init_weights), then per epoch, over a
// DataLoader shuffled with `gen`, for each minibatch (X, X_len, Y, Y_len):
//   dec_X = [bos, Y[:, :-1]]                       teacher forcing (B, S)
//   l     = masked_softmax_cross_entropy(model(X, dec_X, X_len), Y, Y_len)   (B)
//   sum(l).backward(); clip_grad_norm_(grad_clip); AdamW step
// (AdamW with weight_decay 0 is d2l's Adam, to the bit.) With label_smoothing
// ε > 0 the gradient comes from the same masked mean of the smoothed
// cross-entropy instead. The progress line shows each epoch's loss. Returns
// the loss of every epoch per target token: the cross-entropy (unsmoothed)
// summed over the real tokens (eos included, padding not) divided by their
// number. (d2l prints the same sum divided by num_steps once more, because
// its l is a mean over the S steps.)
// Training stops with a qkv::Error at the first batch whose loss is NaN or
// infinite (check_finite_loss), before that batch's step.
// The model is left in training mode.
std::vector<double> train_seq2seq(nn::EncoderDecoder& model, const data::NMTData& nmt, const TrainOptions& options,
                                  Generator& gen, Lesson& lesson);

// train_seq2seq as lessons 08 and 11 show it: timed; the first and the last
// epoch's loss printed with the time ("loss per target token 5.1234 -> 0.1234
// in 9.8 s"); the loss of every epoch drawn as loss.svg; and results.json
// given "losses" (as train_seq2seq returns them) and "train_seconds".
std::vector<double> train_seq2seq_and_plot(nn::EncoderDecoder& model, const data::NMTData& nmt,
                                           const TrainOptions& options, Generator& gen, Lesson& lesson);

// One sentence translated greedily (d2l's predict_seq2seq, through
// EncoderDecoder::predict).
struct Translation {
  std::vector<std::string> tokens;  // the output, without <eos>
  // What the encoder read: the tokens (unknown ones as <unk>), then <eos>, cut to num_steps.
  std::vector<std::string> source;
  // The sentence's words the source vocabulary does not hold, each once, in order: each reads as <unk>.
  std::vector<std::string> unknown_words;
  // The tokens past num_steps that the encoder never read (<eos> among them when cut), in order.
  std::vector<std::string> cut_tokens;
  // (output steps, source steps) = (tokens.size() + 1 when the last step said <eos>, source.size()):
  // row k is the decoder's attention over the source while it produced output token k (for a
  // Transformer: the cross-attention of its last block, averaged over the heads).
  Tensor attention;
  std::string text() const;  // the tokens joined by spaces: "j'ai perdu ."
};
// `sentence` is preprocessed first (so "I lost." and "i lost ." are the
// same); unknown words become <unk>. At most num_steps output tokens.
Translation translate(nn::EncoderDecoder& model, const data::NMTData& nmt, const std::string& sentence,
                      int64_t num_steps);
// The same with the two vocabularies alone (a model loaded from a file has no data).
Translation translate(nn::EncoderDecoder& model, const data::Vocab& src_vocab, const data::Vocab& tgt_vocab,
                      const std::string& sentence, int64_t num_steps);

// Every pair translated and scored with d2l's BLEU (data::bleu) against its
// reference.
struct ScoredPair {
  TranslationPair pair;
  std::string prediction;
  double bleu;
};
struct BleuScores {
  std::vector<ScoredPair> pairs;
  double mean = 0;  // the mean over the pairs
};
BleuScores bleu(nn::EncoderDecoder& model, const data::NMTData& nmt, const std::vector<TranslationPair>& pairs,
                int64_t num_steps, int64_t k = 2);

}  // namespace qkv::lesson
