// data::bleu: d2l's BLEU, by hand, against d2l's printed outputs, and
// against d2l's Python on tests/reference/fixtures/bleu_pairs.txt.
#include <doctest/doctest.h>

#include <qkv/data/bleu.hpp>

#include <cmath>
#include <fstream>

#include "datasets/fixtures.hpp"
#include "reference.hpp"

using namespace qkv;
using data::bleu;

TEST_CASE("data/bleu: by hand") {
  CHECK(bleu("il est calme .", "il est calme .", 2) == 1.0);
  CHECK(bleu("je suis chez moi .", "je suis chez moi .", 4) == 1.0);
  // Shorter than the label: brevity penalty exp(1 - 4/3); p1 = 3/3, p2 = 1/2 ("il est" only).
  CHECK(bleu("il est .", "il est calme .", 2) == doctest::Approx(std::exp(1.0 - 4.0 / 3.0) * std::pow(0.5, 0.25)));
  // Longer than the label: no penalty. Clipping: "a" matches once only, p1 = 1/4.
  CHECK(bleu("a a a a", "a b", 1) == doctest::Approx(0.5));
  // No shared token: p1 = 0.
  CHECK(bleu("x y", "a b", 2) == 0.0);
}

TEST_CASE("data/bleu: d2l's printed outputs (§10.7, PyTorch)") {
  // go . => va !, bleu 1.000          he's calm . => il est riche ., bleu 0.658
  // i lost . => j'ai perdu ., bleu 1.000   i'm home . => je suis en retard ?, bleu 0.447
  CHECK(bleu("va !", "va !", 2) == 1.0);
  CHECK(bleu("j'ai perdu .", "j'ai perdu .", 2) == 1.0);
  CHECK(bleu("il est riche .", "il est calme .", 2) ==
        doctest::Approx(std::sqrt(3.0 / 4.0) * std::pow(1.0 / 3.0, 0.25)));
  CHECK(std::round(bleu("il est riche .", "il est calme .", 2) * 1000) == 658);
  CHECK(std::round(bleu("je suis en retard ?", "je suis chez moi .", 2) * 1000) == 447);
}

TEST_CASE("data/bleu: edge cases as d2l") {
  // An empty prediction is one empty token (Python: ''.split(' ') == ['']).
  CHECK(bleu("", "il est calme .", 2) == 0.0);
  CHECK(bleu("", "", 4) == 1.0);
  // n stops at len_pred: a one-token prediction has only p1.
  CHECK(bleu("x", "x", 4) == 1.0);
  CHECK(bleu("calme", "il est calme .", 4) == doctest::Approx(std::exp(1.0 - 4.0)));
  // Two spaces make an empty token between them, as split(' ') does.
  CHECK(bleu("a  b", "a b", 1) == doctest::Approx(std::sqrt(2.0 / 3.0)));
}

TEST_CASE("data/bleu: d2l's Python on bleu_pairs.txt") {
  Tensor want = test::reference("data_d2l", "bleu/pairs").tensor("scores");
  std::ifstream in(test::fixture("bleu_pairs.txt"));
  REQUIRE(in);
  std::string line;
  int64_t i = 0;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    size_t tab1 = line.find('\t'), tab2 = line.rfind('\t');
    REQUIRE(tab1 != tab2);
    std::string pred = line.substr(0, tab1), label = line.substr(tab1 + 1, tab2 - tab1 - 1);
    int64_t k = std::stoll(line.substr(tab2 + 1));
    CAPTURE(line);
    REQUIRE(i < want.numel());
    CHECK(bleu(pred, label, k) == doctest::Approx(want.data()[i]).epsilon(1e-6));
    ++i;
  }
  CHECK(i == want.numel());
}

TEST_CASE("data/bleu: errors") {
  CHECK_THROWS_WITH_AS(bleu("a", "a", 0), "bleu: k 0 must be >= 1 (the longest n-gram to compare)", Error);
}
