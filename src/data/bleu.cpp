// d2l's bleu: the brevity penalty times the weighted n-gram precisions.
#include <qkv/core/error.hpp>
#include <qkv/data/bleu.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

namespace qkv::data {

namespace {
// Python's s.split(' '): every single space separates, so "" -> [""] and
// "a  b" -> ["a", "", "b"].
std::vector<std::string_view> split_on_space(std::string_view s) {
  std::vector<std::string_view> tokens;
  size_t start = 0;
  while (true) {
    size_t stop = s.find(' ', start);
    if (stop == std::string_view::npos) {
      tokens.push_back(s.substr(start));
      return tokens;
    }
    tokens.push_back(s.substr(start, stop - start));
    start = stop + 1;
  }
}

using NGram = std::vector<std::string_view>;
NGram ngram(const std::vector<std::string_view>& tokens, int64_t i, int64_t n) {
  return NGram(tokens.begin() + i, tokens.begin() + i + n);
}
}  // namespace

double bleu(std::string_view pred_seq, std::string_view label_seq, int64_t k) {
  if (k < 1) fail("bleu: k {} must be >= 1 (the longest n-gram to compare)", k);
  std::vector<std::string_view> pred = split_on_space(pred_seq), label = split_on_space(label_seq);
  const auto len_pred = static_cast<int64_t>(pred.size()), len_label = static_cast<int64_t>(label.size());

  double score = std::exp(std::min(0.0, 1.0 - static_cast<double>(len_label) / static_cast<double>(len_pred)));
  for (int64_t n = 1; n <= std::min(k, len_pred); ++n) {
    // How often each n-gram occurs in the label; a match uses one occurrence up.
    std::map<NGram, int64_t> label_subs;
    for (int64_t i = 0; i + n <= len_label; ++i) label_subs[ngram(label, i, n)] += 1;
    int64_t num_matches = 0;
    for (int64_t i = 0; i + n <= len_pred; ++i) {
      auto it = label_subs.find(ngram(pred, i, n));
      if (it != label_subs.end() && it->second > 0) {
        num_matches += 1;
        it->second -= 1;
      }
    }
    double p_n = static_cast<double>(num_matches) / static_cast<double>(len_pred - n + 1);
    score *= std::pow(p_n, std::pow(0.5, static_cast<double>(n)));  // p_n^(1/2^n)
  }
  return score;
}

}  // namespace qkv::data
