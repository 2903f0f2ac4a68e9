// data::Vocab: id order (<unk>, reserved, by frequency, ties first-seen),
// unknown tokens, min_freq, both directions, errors; and d2l's Vocab on the
// fixture corpus (tools/reference/data_d2l.py).
#include <doctest/doctest.h>

#include <qkv/data/nmt.hpp>
#include <qkv/data/vocab.hpp>

#include "datasets/fixtures.hpp"
#include "reference.hpp"

using namespace qkv;
using data::Vocab;
using Tokens = std::vector<std::string>;

TEST_CASE("data/vocab: ids by frequency, ties in first-seen order") {
  // Counts b 3, a 2, c 2, d 1, e 1; a is seen before c, and d before e.
  Tokens tokens = {"b", "a", "d", "b", "c", "a", "e", "c", "b"};
  Vocab vocab(tokens, 0, {"<pad>", "<bos>", "<eos>"});
  CHECK(vocab.idx_to_token() == Tokens{"<unk>", "<pad>", "<bos>", "<eos>", "b", "a", "c", "d", "e"});
  CHECK(vocab.size() == 9);
  CHECK(vocab.unk() == 0);
  CHECK(vocab["<pad>"] == 1);
  CHECK(vocab["<eos>"] == 3);
  CHECK(vocab["b"] == 4);
  CHECK(vocab["e"] == 8);
  CHECK(vocab.token_freqs() ==
        std::vector<std::pair<std::string, int64_t>>{{"b", 3}, {"a", 2}, {"c", 2}, {"d", 1}, {"e", 1}});
}

TEST_CASE("data/vocab: unknown tokens, lists both ways, to_token") {
  Tokens tokens = {"go", ".", "go", "now", "."};
  Vocab vocab(tokens);
  CHECK(vocab["zebra"] == vocab.unk());
  CHECK(vocab[""] == 0);
  CHECK(vocab.contains("go"));
  CHECK_FALSE(vocab.contains("zebra"));
  CHECK(vocab[Tokens{"go", "zebra", "now"}] == std::vector<int64_t>{1, 0, 3});
  CHECK(vocab.to_tokens({1, 0, 3}) == Tokens{"go", "<unk>", "now"});
  CHECK(vocab.to_token(2) == ".");
  // Round trip for every id.
  for (int64_t i = 0; i < vocab.size(); ++i) CHECK(vocab[vocab.to_token(i)] == i);
}

TEST_CASE("data/vocab: min_freq, lines, reserved tokens met in the corpus") {
  std::vector<Tokens> lines = {{"a", "b", "<pad>"}, {"b", "c", "a"}, {"b", "<unk>"}};
  SUBCASE("min_freq 2 keeps b (3) and a (2)") {
    Vocab vocab(lines, 2, {"<pad>"});
    CHECK(vocab.idx_to_token() == Tokens{"<unk>", "<pad>", "b", "a"});
    CHECK(vocab["c"] == vocab.unk());
  }
  SUBCASE("min_freq 0 and 1 keep everything; <unk> and <pad> keep their ids") {
    for (int64_t min_freq : {0, 1}) {
      Vocab vocab(lines, min_freq, {"<pad>"});
      CHECK(vocab.idx_to_token() == Tokens{"<unk>", "<pad>", "b", "a", "c"});
    }
  }
  SUBCASE("min_freq above every count leaves only <unk> and the reserved tokens") {
    Vocab vocab(lines, 4, {"<pad>", "<bos>"});
    CHECK(vocab.idx_to_token() == Tokens{"<unk>", "<pad>", "<bos>"});
  }
  SUBCASE("an empty corpus, and the default vocabulary") {
    CHECK(Vocab(std::vector<Tokens>{}, 0, {"<pad>"}).size() == 2);
    CHECK(Vocab().idx_to_token() == Tokens{"<unk>"});
  }
}

TEST_CASE("data/vocab: errors") {
  Tokens tokens = {"a", "b"};
  Vocab vocab(tokens);
  CHECK_THROWS_WITH_AS(vocab.to_token(3), "Vocab: index 3 is out of range for a vocabulary of size 3", Error);
  CHECK_THROWS_WITH_AS(vocab.to_token(-1), "Vocab: index -1 is out of range for a vocabulary of size 3", Error);
  CHECK_THROWS_WITH_AS(vocab.to_tokens({0, 7}), "Vocab: index 7 is out of range for a vocabulary of size 3", Error);
  CHECK_THROWS_WITH_AS(Vocab(tokens, -1), "Vocab: min_freq -1 must be >= 0", Error);
  CHECK_THROWS_WITH_AS(Vocab(tokens, 0, {"<pad>", "<pad>"}),
                       "Vocab: reserved token '<pad>' is given twice (or is <unk>, which is always id 0)", Error);
  CHECK_THROWS_AS(Vocab(tokens, 0, {"<unk>"}), Error);
}

namespace {
// Every id's token, the size and the counts equal d2l's Vocab on the same tokens.
void check_vocab(const Vocab& vocab, const std::string& case_name) {
  const auto& ref = test::reference("data_d2l", case_name);
  REQUIRE(vocab.size() == ref.ints_at("size").item());
  for (int64_t i = 0; i < vocab.size(); ++i)
    CHECK_MESSAGE(vocab.to_token(i) == test::utf8_bytes(ref.ints_at(fmt::format("token{}", i))), "id ", i);
  std::vector<int64_t> freqs;
  for (const auto& [token, freq] : vocab.token_freqs()) freqs.push_back(freq);
  CHECK(freqs == ref.ints_at("freqs").to_vector());
}
}  // namespace

TEST_CASE("data/vocab: d2l's Vocab on the fixture corpus") {
  auto tokens = data::tokenize_nmt(data::preprocess_nmt(data::read_data_nmt(test::fixture("eng-fra.txt"))));
  const Tokens reserved = {"<pad>", "<bos>", "<eos>"};
  for (int64_t min_freq : {1, 2}) {
    CAPTURE(min_freq);
    check_vocab(Vocab(tokens.source, min_freq, reserved), fmt::format("vocab/source-min_freq={}", min_freq));
    check_vocab(Vocab(tokens.target, min_freq, reserved), fmt::format("vocab/target-min_freq={}", min_freq));
  }
  Tokens flat;
  for (const auto& line : tokens.target) flat.insert(flat.end(), line.begin(), line.end());
  check_vocab(Vocab(flat), "vocab/flat");
}
