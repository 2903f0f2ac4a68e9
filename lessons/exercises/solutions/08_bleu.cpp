// Exercise 08, a reference solution: d2l's BLEU with its brevity penalty.
#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include "08_bleu.hpp"

namespace qkv::exercises {

namespace {

std::vector<std::string> split(const std::string& text) {  // Python's text.split(' ')
  std::vector<std::string> tokens(1);
  for (char c : text) {
    if (c == ' ')
      tokens.emplace_back();
    else
      tokens.back().push_back(c);
  }
  return tokens;
}

std::string ngram(const std::vector<std::string>& tokens, size_t start, size_t n) {
  std::string text = tokens[start];
  for (size_t i = start + 1; i < start + n; ++i) text += " " + tokens[i];
  return text;
}

}  // namespace

double bleu(const std::string& pred_seq, const std::string& label_seq, int64_t k) {
  const std::vector<std::string> pred = split(pred_seq), label = split(label_seq);
  const double len_pred = static_cast<double>(pred.size()), len_label = static_cast<double>(label.size());
  double score = std::exp(std::min(0.0, 1.0 - len_label / len_pred));  // the brevity penalty
  for (size_t n = 1; n <= std::min(static_cast<size_t>(k), pred.size()); ++n) {
    std::map<std::string, int> label_counts;  // each label n-gram, as often as it occurs
    for (size_t i = 0; i + n <= label.size(); ++i) ++label_counts[ngram(label, i, n)];
    int matches = 0;
    for (size_t i = 0; i + n <= pred.size(); ++i) {
      int& left = label_counts[ngram(pred, i, n)];
      if (left > 0) {
        ++matches;
        --left;  // matched once more: clipped to the label's count
      }
    }
    const double p_n = matches / static_cast<double>(pred.size() - n + 1);
    score *= std::pow(p_n, std::pow(0.5, static_cast<double>(n)));
  }
  return score;
}

}  // namespace qkv::exercises
