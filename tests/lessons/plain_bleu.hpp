// d2l's BLEU (d2l 10.7.6) written again for the lesson tests, as d2l's
// Python reads, so that a lesson's scores can be recomputed from its
// results.json without qkv::data::bleu:
//
//   def bleu(pred_seq, label_seq, k):
//       pred_tokens, label_tokens = pred_seq.split(' '), label_seq.split(' ')
//       len_pred, len_label = len(pred_tokens), len(label_tokens)
//       score = math.exp(min(0, 1 - len_label / len_pred))
//       for n in range(1, min(k, len_pred) + 1):
//           num_matches, label_subs = 0, collections.defaultdict(int)
//           for i in range(len_label - n + 1):
//               label_subs[' '.join(label_tokens[i: i + n])] += 1
//           for i in range(len_pred - n + 1):
//               if label_subs[' '.join(pred_tokens[i: i + n])] > 0:
//                   num_matches += 1
//                   label_subs[' '.join(pred_tokens[i: i + n])] -= 1
//           score *= math.pow(num_matches / (len_pred - n + 1), math.pow(0.5, n))
//       return score
#pragma once
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

namespace qkv::lesson_test {

// str.split(' ')
inline std::vector<std::string> split_spaces(const std::string& s) {
  std::vector<std::string> out(1);
  for (char c : s) {
    if (c == ' ')
      out.emplace_back();
    else
      out.back() += c;
  }
  return out;
}

// The lines of text, without their "\n": "a\nb\n" -> {"a", "b"}.
inline std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> out;
  std::string line;
  for (char c : text) {
    if (c == '\n') {
      out.push_back(line);
      line.clear();
    } else {
      line += c;
    }
  }
  if (!line.empty()) out.push_back(line);
  return out;
}

inline double plain_bleu(const std::string& pred_seq, const std::string& label_seq, int k) {
  const std::vector<std::string> pred = split_spaces(pred_seq), label = split_spaces(label_seq);
  const int len_pred = static_cast<int>(pred.size()), len_label = static_cast<int>(label.size());
  double score = std::exp(std::min(0.0, 1.0 - static_cast<double>(len_label) / len_pred));
  auto gram = [](const std::vector<std::string>& tokens, int i, int n) {
    std::string s;
    for (int j = i; j < i + n; ++j) s += (j > i ? " " : "") + tokens[static_cast<size_t>(j)];
    return s;
  };
  for (int n = 1; n <= std::min(k, len_pred); ++n) {
    int matches = 0;
    std::map<std::string, int> label_subs;
    for (int i = 0; i < len_label - n + 1; ++i) ++label_subs[gram(label, i, n)];
    for (int i = 0; i < len_pred - n + 1; ++i) {
      int& count = label_subs[gram(pred, i, n)];
      if (count > 0) {
        ++matches;
        --count;
      }
    }
    score *= std::pow(static_cast<double>(matches) / (len_pred - n + 1), std::pow(0.5, n));
  }
  return score;
}

}  // namespace qkv::lesson_test
