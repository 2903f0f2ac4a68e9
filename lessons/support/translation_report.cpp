// What lessons 08 and 11 show of a trained translation model (translation_report.hpp).
#include "translation_report.hpp"

#include <algorithm>
#include <cmath>
#include <map>

namespace qkv::lesson {

namespace {

// Python's str.split(' '), as d2l's bleu splits: every space separates, so "" is one empty token.
std::vector<std::string> split_on_spaces(const std::string& text) {
  std::vector<std::string> tokens;
  size_t start = 0;
  for (size_t end; (end = text.find(' ', start)) != std::string::npos; start = end + 1)
    tokens.push_back(text.substr(start, end - start));
  tokens.push_back(text.substr(start));
  return tokens;
}

std::string join(const std::vector<std::string>& tokens, size_t from, size_t n) {
  std::string s;
  for (size_t i = from; i < from + n; ++i) s += (i > from ? " " : "") + tokens[i];
  return s;
}

std::string lines(const std::vector<std::string>& items) {
  std::string s;
  for (const std::string& item : items) s += item + "\n";
  return s;
}

}  // namespace

const std::vector<TranslationPair>& d2l_pairs() {
  static const std::vector<TranslationPair> pairs = {{"go .", "va !"},
                                                     {"i lost .", "j'ai perdu ."},
                                                     {"he's calm .", "il est calme ."},
                                                     {"i'm home .", "je suis chez moi ."}};
  return pairs;
}

std::vector<TranslationPair> load_training_pairs(const std::filesystem::path& data_dir) {
  const std::string text = data::read_data_nmt((data_dir / "eng-fra" / "train.txt").string());
  data::ParallelTokens tokens = data::tokenize_nmt(data::preprocess_nmt(text));
  std::vector<TranslationPair> pairs;
  for (size_t i = 0; i < tokens.source.size(); ++i)
    pairs.push_back(
        {fmt::format("{}", fmt::join(tokens.source[i], " ")), fmt::format("{}", fmt::join(tokens.target[i], " "))});
  return pairs;
}

D2lReport report_d2l_sentences(Lesson& lesson, nn::EncoderDecoder& model, const data::NMTData& nmt, int64_t num_steps,
                               const D2lOptions& options) {
  const std::vector<TranslationPair> training = load_training_pairs(lesson.data());
  D2lReport report;
  int64_t in_training = 0;
  for (size_t i = 0; i < d2l_pairs().size(); ++i) {
    const TranslationPair& pair = d2l_pairs()[i];
    Translation t = translate(model, nmt, pair.source, num_steps);
    const double score = data::bleu(t.text(), pair.target, 2);
    const bool trained_on = std::any_of(training.begin(), training.end(), [&](const TranslationPair& p) {
      return p.source == pair.source && p.target == pair.target;
    });
    in_training += trained_on;
    lesson.print("{:<12} => {:<22} bleu {:.3f}   (reference: {})\n", pair.source, t.text(), score, pair.target);
    if (t.text() != pair.target) {
      ++report.wrong;
      if (trained_on)
        lesson.print("    wrong: \"{}\" => \"{}\" is a pair of the training file, and the model has not learned it\n",
                     pair.source, pair.target);
      else
        lesson.print("    wrong: differs from the reference\n");
    }
    lesson.result(fmt::format("d2l_{}_source", i), pair.source);
    lesson.result(fmt::format("d2l_{}_reference", i), pair.target);
    lesson.result(fmt::format("d2l_{}_translation", i), t.text());
    lesson.result(fmt::format("d2l_{}_bleu", i), score);
    lesson.result(fmt::format("d2l_{}_in_training_file", i), trained_on);
    lesson.result(fmt::format("d2l_{}_attention", i), t.attention);
    if (options.draw_attention)
      attention_heatmap(lesson, fmt::format("attention_{}.svg", i), t,
                        fmt::format("\"{}\" => \"{}\": attention per output step", pair.source, t.text()));
    report.translations.push_back(std::move(t));
  }
  lesson.print("{} of the {} sentences are pairs of the training file (as in d2l); {} translated exactly.\n",
               in_training, d2l_pairs().size(), static_cast<int64_t>(d2l_pairs().size()) - report.wrong);
  lesson.result("d2l_wrong", report.wrong);
  return report;
}

BleuScores report_held_out_bleu(Lesson& lesson, nn::EncoderDecoder& model, const data::NMTData& nmt,
                                const std::vector<TranslationPair>& pairs, int64_t num_steps, size_t shown) {
  BleuScores scores = bleu(model, nmt, pairs, num_steps, 2);
  const std::vector<TranslationPair> training = load_training_pairs(lesson.data());
  int64_t exact = 0, trained_on = 0;
  std::vector<double> bleus;
  std::vector<std::string> sources, references, translations;
  for (const ScoredPair& s : scores.pairs) {
    exact += s.prediction == s.pair.target;
    trained_on += std::any_of(training.begin(), training.end(),
                              [&](const TranslationPair& p) { return p.source == s.pair.source; });
    bleus.push_back(s.bleu);
    sources.push_back(s.pair.source);
    references.push_back(s.pair.target);
    translations.push_back(s.prediction);
  }
  for (size_t i = 0; i < shown && i < scores.pairs.size(); ++i) {
    const ScoredPair& s = scores.pairs[i];
    lesson.print("{:<28} => {:<30} bleu {:.3f}   (reference: {})\n", s.pair.source, s.prediction, s.bleu,
                 s.pair.target);
  }
  lesson.print(
      "…\n{} held-out pairs ({} of their English sentences in the training file): mean BLEU (k = 2) {:.3f};\n"
      "{} translated exactly. All of them are in results.json (test_sources, test_references, test_translations).\n",
      scores.pairs.size(), trained_on == 0 ? std::string("none") : std::to_string(trained_on), scores.mean, exact);
  lesson.result("test_pairs_in_training_file", trained_on);
  lesson.result("test_sources", lines(sources));
  lesson.result("test_references", lines(references));
  lesson.result("test_translations", lines(translations));
  lesson.result("test_bleus", bleus);
  lesson.result("mean_bleu", scores.mean);
  lesson.result("exact_translations", exact);
  return scores;
}

double bleu_by_hand(Lesson& lesson, const std::string& prediction, const std::string& label, int64_t k) {
  const std::vector<std::string> pred = split_on_spaces(prediction), ref = split_on_spaces(label);
  const auto len_pred = static_cast<double>(pred.size()), len_label = static_cast<double>(ref.size());
  const double penalty = std::exp(std::min(0.0, 1 - len_label / len_pred));
  lesson.print("prediction \"{}\", label \"{}\", k = {}\n", prediction, label, k);
  lesson.print("  brevity penalty exp(min(0, 1 - len_label/len_pred)) = exp(min(0, 1 - {}/{})) = {:.4f}\n", ref.size(),
               pred.size(), penalty);
  double score = penalty;
  const size_t n_max = std::min<size_t>(static_cast<size_t>(k), pred.size());
  for (size_t n = 1; n <= n_max; ++n) {
    // Each n-gram of the label can be matched once per occurrence.
    std::map<std::string, int64_t> label_counts;
    for (size_t i = 0; i + n <= ref.size(); ++i) ++label_counts[join(ref, i, n)];
    int64_t matches = 0;
    std::vector<std::string> marked;
    for (size_t i = 0; i + n <= pred.size(); ++i) {
      const std::string gram = join(pred, i, n);
      const bool hit = label_counts[gram] > 0;
      if (hit) --label_counts[gram], ++matches;
      marked.push_back(fmt::format("\"{}\" {}", gram, hit ? "yes" : "no"));
    }
    const size_t grams = pred.size() - n + 1;
    const double p = static_cast<double>(matches) / static_cast<double>(grams), weight = std::pow(0.5, n);
    score *= std::pow(p, weight);
    lesson.print("  n = {}: {}\n         p_{} = {}/{} = {:.4f}, weight 1/2^{} = {}, p_{}^{} = {:.4f}\n", n,
                 fmt::join(marked, ", "), n, matches, grams, p, n, weight, n, weight, std::pow(p, weight));
  }
  lesson.print("  BLEU = {:.4f}", penalty);
  for (size_t n = 1; n <= n_max; ++n) lesson.print(" · p_{}^{}", n, std::pow(0.5, n));
  lesson.print(" = {:.4f}\n", score);
  return score;
}

viz::HeatmapOptions attention_heatmap_options(const Translation& t, const std::string& title) {
  std::vector<std::string> rows = t.tokens;
  // A row for <eos> only if the decoder said it: a translation that ran to num_steps tokens has none.
  if (t.attention.size(0) > static_cast<int64_t>(rows.size())) rows.push_back("<eos>");
  return {.title = title,
          .xlabel = "source (keys)",
          .ylabel = "output (queries)",
          .row_labels = rows,
          .col_labels = t.source,
          .vmin = 0,
          .vmax = 1};
}

void attention_heatmap(Lesson& lesson, const std::string& file, const Translation& t, const std::string& title) {
  lesson.heatmap(file, t.attention, attention_heatmap_options(t, title));
}

}  // namespace qkv::lesson
