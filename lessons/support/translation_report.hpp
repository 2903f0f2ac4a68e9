// What lessons 08 and 11 both show of a trained translation model, written
// once: d2l's four sentences translated, each checked against its reference
// and against the training file; BLEU over the held-out pairs, with every
// pair saved; BLEU worked by hand on one sentence; and a translation's
// attention drawn.
//
//   lesson::D2lReport d2l = lesson::report_d2l_sentences(lesson, model, nmt, num_steps, {.draw_attention = true});
//   lesson::BleuScores scores = lesson::report_held_out_bleu(lesson, model, nmt, test_pairs, num_steps);
//
// results.json gets, for d2l's sentence i: d2l_<i>_source, d2l_<i>_reference,
// d2l_<i>_translation, d2l_<i>_bleu, d2l_<i>_in_training_file,
// d2l_<i>_attention (translate's attention, output steps × source steps), and d2l_wrong
// (how many of the four differ from their reference); for the held-out pairs:
// test_sources, test_references, test_translations (one line per pair, in
// file order), test_bleus, mean_bleu, exact_translations.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include "lesson.hpp"
#include "translation.hpp"

namespace qkv::lesson {

// d2l's four sentences and their French references (d2l 10.7.6, 11.7.6),
// preprocessed: "go ." / "va !", "i lost ." / "j'ai perdu .", "he's calm ." /
// "il est calme .", "i'm home ." / "je suis chez moi .".
const std::vector<TranslationPair>& d2l_pairs();

// The pairs of <data>/eng-fra/train.txt, preprocessed as the test pairs are.
std::vector<TranslationPair> load_training_pairs(const std::filesystem::path& data_dir);

struct D2lOptions {
  bool draw_attention = false;  // one heatmap per sentence, attention_<i>.svg
};
struct D2lReport {
  std::vector<Translation> translations;
  int64_t wrong = 0;  // translations that differ from their reference
};
// Translates d2l's four sentences and prints each with its BLEU (k = 2).
// A sentence that is a training pair and comes out different from its
// reference is called what it is: a training pair the model has not learned.
D2lReport report_d2l_sentences(Lesson& lesson, nn::EncoderDecoder& model, const data::NMTData& nmt, int64_t num_steps,
                               const D2lOptions& options = {});

// Every held-out pair translated and scored (lesson::bleu, k = 2); prints the
// first `shown` and the mean, saves them all.
BleuScores report_held_out_bleu(Lesson& lesson, nn::EncoderDecoder& model, const data::NMTData& nmt,
                                const std::vector<TranslationPair>& pairs, int64_t num_steps, size_t shown = 8);

// d2l's BLEU computed step by step for one prediction and its label, each
// step printed: the lengths and the brevity penalty exp(min(0, 1 - len_label
// / len_pred)), for each n ≤ k the matched n-grams over the prediction's
// n-grams and the weight 1/2ⁿ, and the product. Returns the score (which the
// caller can hold against data::bleu).
double bleu_by_hand(Lesson& lesson, const std::string& prediction, const std::string& label, int64_t k);

// The heatmap of t.attention (output steps, source steps): rows labelled with
// the output tokens, and <eos> when the decoder's last step said it; columns
// with the source tokens; one colour scale from 0 to 1.
void attention_heatmap(Lesson& lesson, const std::string& file, const Translation& t, const std::string& title);
// Its options, for a program that draws without a Lesson (translate.cpp).
viz::HeatmapOptions attention_heatmap_options(const Translation& t, const std::string& title);

}  // namespace qkv::lesson
