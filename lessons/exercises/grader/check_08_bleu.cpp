// The checks of exercise 08, BLEU with its brevity penalty.
//   expected:  qkv::data::bleu (the library's), and d2l's bleu in Python
//              (tools/reference/exercises.py stores the pairs and the scores)
//   cases:     a perfect match, lesson 08's translations, a short prediction, a long
//              one, repeated n-grams, k longer than the prediction, one token, an
//              empty prediction
#include <algorithm>
#include <cmath>
#include <map>

#include "08_bleu.hpp"
#include "grader.hpp"

using namespace qkv;
using namespace qkv::exercises;

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

// d2l's BLEU with one mistake switched on.
struct Variant {
  bool penalty = true, inverted_penalty = false, clip = true, over_n = false;
};

double variant(const std::string& pred_seq, const std::string& label_seq, int64_t k, Variant how) {
  const std::vector<std::string> pred = split(pred_seq), label = split(label_seq);
  const double lp = static_cast<double>(pred.size()), ll = static_cast<double>(label.size());
  double score = !how.penalty ? 1.0 : std::exp(std::min(0.0, how.inverted_penalty ? 1.0 - lp / ll : 1.0 - ll / lp));
  auto gram = [](const std::vector<std::string>& t, size_t i, size_t n) {
    std::string s = t[i];
    for (size_t j = i + 1; j < i + n; ++j) s += " " + t[j];
    return s;
  };
  for (size_t n = 1; n <= std::min(static_cast<size_t>(k), pred.size()); ++n) {
    std::map<std::string, int> counts;
    for (size_t i = 0; i + n <= label.size(); ++i) ++counts[gram(label, i, n)];
    int matches = 0;
    for (size_t i = 0; i + n <= pred.size(); ++i) {
      int& left = counts[gram(pred, i, n)];
      if (left > 0) {
        ++matches;
        if (how.clip) --left;
      }
    }
    const double weight = how.over_n ? 1.0 / static_cast<double>(n) : std::pow(0.5, static_cast<double>(n));
    score *= std::pow(matches / static_cast<double>(pred.size() - n + 1), weight);
  }
  return score;
}

void grade_case(Grader& g, const std::string& name, const std::string& pred, const std::string& label, int64_t k,
                double want) {
  g.begin_case(name, fmt::format("pred_seq \"{}\", label_seq \"{}\", k = {}", pred, label, k));
  double got = g.call({}, [&] { return bleu(pred, label, k); });
  auto mistake = [&](Variant how) { return [=] { return variant(pred, label, k, how); }; };
  g.check_scalar({"bleu", "exp(min(0, 1 - len_label/len_pred)) · Π p_n^(1/2^n)"}, got, want,
                 {{"no brevity penalty",
                   "multiply by exp(min(0, 1 - len_label / len_pred)): a prediction shorter than its label loses score",
                   mistake({.penalty = false})},
                  {"the brevity penalty's ratio upside down",
                   "the penalty is exp(min(0, 1 - len_label / len_pred)): label length over prediction length",
                   mistake({.inverted_penalty = true})},
                  {"n-gram matches not clipped",
                   "each label n-gram can be matched at most as often as it occurs in the label: count them in a map "
                   "and decrement on each match",
                   mistake({.clip = false})},
                  {"p_n raised to 1/n instead of 1/2^n", "d2l weighs the n-gram precision p_n by the exponent 1/2^n",
                   mistake({.over_n = true})}});
}

std::string text_of(const IntTensor& bytes) {  // a UTF-8 string stored as its bytes
  std::string text;
  for (int64_t b : bytes.to_vector()) text.push_back(static_cast<char>(b));
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  return grade(8, argc, argv, [](Grader& g) {
    g.forbid({{"qkv::data::bleu(", "", "exercise 8 is BLEU itself: write your own, not qkv::data::bleu"}});
    // The library's own BLEU gives the expected score of each case.
    // A long prediction first: it has no brevity penalty, so only a penalty upside down shows there.
    const std::vector<std::tuple<std::string, std::string, std::string, int64_t>> cases = {
        {"a long prediction", "il est très très calme .", "il est calme .", 2},
        {"a short prediction", "il est .", "il est calme .", 2},
        {"repeated n-grams", "le le le chat", "le chat est là", 2},
        {"a perfect match", "je suis chez moi .", "je suis chez moi .", 2},
        {"k longer than the prediction", "va !", "va !", 4},
        {"one token", "bonjour", "bonjour !", 2},
        {"no match at all", "non", "oui merci", 2},
        {"an empty prediction", "", "je vais bien .", 2},
    };
    for (const auto& [name, pred, label, k] : cases) grade_case(g, name, pred, label, k, data::bleu(pred, label, k));
    // Random sentences from a small vocabulary, fresh at every grading: repeated
    // words, every length from 1 to 7, k from 1 to 4.
    Generator gen(g.seed());
    const std::vector<std::string> words = {"le", "chat", "est", "là", "il", "calme", "."};
    auto sentence = [&](int64_t min_length) {
      const int64_t length = min_length + randint(0, 7 - min_length + 1, {1}, gen).at({0});
      std::string text;
      for (int64_t i = 0; i < length; ++i)
        text += (i ? " " : "") + words[static_cast<size_t>(randint(0, 7, {1}, gen).at({0}))];
      return text;
    };
    for (int i = 1; i <= 4; ++i) {
      const std::string pred = sentence(1), label = sentence(1);
      const int64_t k = 1 + randint(0, 4, {1}, gen).at({0});
      grade_case(g, fmt::format("random sentences {}", i), pred, label, k, data::bleu(pred, label, k));
    }
    for (const TorchCase& c : g.torch_cases("08/")) {
      grade_case(g, "Python: " + c.name, text_of(c.i("pred")), text_of(c.i("label")), c.i("k").at({0}),
                 static_cast<double>(c.f("bleu").at({0})));
    }
  });
}
