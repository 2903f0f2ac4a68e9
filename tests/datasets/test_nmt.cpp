// The translation data pipeline (d2l §10.5): preprocess_nmt, tokenize_nmt,
// truncate_pad, build_array(_nmt), load_data_nmt; expected values by hand
// and from d2l's Python on tests/reference/fixtures/eng-fra.txt.
#include <doctest/doctest.h>

#include <qkv/data/nmt.hpp>

#include "datasets/fixtures.hpp"
#include "reference.hpp"

using namespace qkv;
using Tokens = std::vector<std::string>;

TEST_CASE("data/preprocess_nmt: by hand") {
  CHECK(data::preprocess_nmt("Go.\tVa !") == "go .\tva !");
  CHECK(data::preprocess_nmt("Hi, Tom!") == "hi , tom !");
  CHECK(data::preprocess_nmt("Who?") == "who ?");
  CHECK(data::preprocess_nmt("Wait...") == "wait . . .");  // d2l looks at the input's previous char
  CHECK(data::preprocess_nmt("!Hey") == "!hey");           // nothing before the first char
  CHECK(data::preprocess_nmt("Va\u202f!") == "va !");      // narrow no-break space
  CHECK(data::preprocess_nmt("Qui\u00a0?") == "qui ?");    // no-break space
  CHECK(data::preprocess_nmt("ÇA, ÉTÉ À ŒUVRE Ÿ") == "ça , été à œuvre ÿ");
  CHECK(data::preprocess_nmt("2 × 3") == "2 × 3");  // U+00D7 is not a capital
  CHECK(data::preprocess_nmt("") == "");
}

TEST_CASE("data/preprocess_nmt: d2l's on the fixture corpus") {
  std::string text = data::preprocess_nmt(data::read_data_nmt(test::fixture("eng-fra.txt")));
  CHECK(text == test::utf8_bytes(test::reference("data_d2l", "nmt/preprocess").ints_at("text")));
}

TEST_CASE("data/tokenize_nmt") {
  auto tokens = data::tokenize_nmt("go .\tva !\n\nhi  .\tsalut !\r\n  \n");
  CHECK(tokens.source == std::vector<Tokens>{{"go", "."}, {"hi", "."}});
  CHECK(tokens.target == std::vector<Tokens>{{"va", "!"}, {"salut", "!"}});
  SUBCASE("num_examples keeps that many pairs") {
    CHECK(data::tokenize_nmt("a\tb\nc\td\ne\tf", 2).source == std::vector<Tokens>{{"a"}, {"c"}});
    CHECK(data::tokenize_nmt("a\tb\nc\td", 0).source.empty());
  }
  SUBCASE("errors name the line") {
    CHECK_THROWS_WITH_AS(data::tokenize_nmt("a\tb\n\nno tab here\n"),
                         "tokenize_nmt: line 3 has no tab; expected 'source<TAB>target': 'no tab here'", Error);
    CHECK_THROWS_WITH_AS(data::tokenize_nmt("a\tb\tc"),
                         "tokenize_nmt: line 1 has more than one tab; expected 'source<TAB>target': 'a\tb\tc'", Error);
    CHECK_THROWS_WITH_AS(data::tokenize_nmt("a\tb\n \tb"), "tokenize_nmt: line 2 has an empty source side: ' \tb'",
                         Error);
    CHECK_THROWS_WITH_AS(data::tokenize_nmt("a\t"), "tokenize_nmt: line 1 has an empty target side: 'a\t'", Error);
    CHECK_THROWS_WITH_AS(data::tokenize_nmt("a\tb", -1), "tokenize_nmt: num_examples -1 must be >= 0", Error);
  }
}

TEST_CASE("data/truncate_pad") {
  // d2l: truncate_pad(src_vocab[source[0]], 10, src_vocab['<pad>']) pads a 2-token line with 8 pads.
  CHECK(data::truncate_pad({47, 4}, 4, 1) == std::vector<int64_t>{47, 4, 1, 1});
  CHECK(data::truncate_pad({5, 6, 7, 8, 9}, 3, 1) == std::vector<int64_t>{5, 6, 7});
  CHECK(data::truncate_pad({5, 6, 7}, 3, 1) == std::vector<int64_t>{5, 6, 7});
  CHECK(data::truncate_pad({}, 2, 0) == std::vector<int64_t>{0, 0});
  CHECK(data::truncate_pad(Tokens{"go", "."}, 3, "<pad>") == Tokens{"go", ".", "<pad>"});
  CHECK_THROWS_WITH_AS(data::truncate_pad({1}, 0, 1), "truncate_pad: num_steps 0 must be positive", Error);
}

TEST_CASE("data/build_array_nmt and build_array") {
  std::vector<Tokens> lines = {{"go", "."}, {"i", "lost", "."}, {"zebra"}};
  data::Vocab vocab(lines, 0, {"<pad>", "<bos>", "<eos>"});  // <unk> <pad> <bos> <eos> . go i lost
  REQUIRE(vocab.idx_to_token() == Tokens{"<unk>", "<pad>", "<bos>", "<eos>", ".", "go", "i", "lost", "zebra"});
  data::Vocab small(std::vector<Tokens>{{"go", "."}, {"go"}}, 2, {"<pad>", "<bos>", "<eos>"});  // zebra, i … -> <unk>

  SUBCASE("<eos> appended, then padded") {
    auto [array, valid_len] = data::build_array_nmt(lines, vocab, 4);
    CHECK(array.shape() == Shape{3, 4});
    CHECK(array.to_vector() == std::vector<int64_t>{5, 4, 3, 1, 6, 7, 4, 3, 8, 3, 1, 1});
    CHECK(valid_len.shape() == Shape{3});
    CHECK(valid_len.to_vector() == std::vector<int64_t>{3, 4, 2});
  }
  SUBCASE("truncated: <eos> is cut off too") {
    auto [array, valid_len] = data::build_array_nmt(lines, vocab, 2);
    CHECK(array.to_vector() == std::vector<int64_t>{5, 4, 6, 7, 8, 3});
    CHECK(valid_len.to_vector() == std::vector<int64_t>{2, 2, 2});
  }
  SUBCASE("unknown tokens are <unk> (0), and count as valid") {
    auto [array, valid_len] = data::build_array_nmt(lines, small, 3);
    CHECK(small["go"] == 4);
    CHECK(array.to_vector() == std::vector<int64_t>{4, 0, 3, 0, 0, 0, 0, 3, 1});
    CHECK(valid_len.to_vector() == std::vector<int64_t>{3, 3, 2});
  }
  SUBCASE("build_array: no <eos>") {
    auto [array, valid_len] = data::build_array(lines, vocab, 3);
    CHECK(array.to_vector() == std::vector<int64_t>{5, 4, 1, 6, 7, 4, 8, 1, 1});
    CHECK(valid_len.to_vector() == std::vector<int64_t>{2, 3, 1});
  }
  SUBCASE("no lines") {
    auto [array, valid_len] = data::build_array_nmt({}, vocab, 3);
    CHECK(array.shape() == Shape{0, 3});
    CHECK(valid_len.shape() == Shape{0});
  }
  SUBCASE("errors") {
    CHECK_THROWS_WITH_AS(data::build_array_nmt(lines, vocab, 0), "build_array_nmt: num_steps 0 must be positive",
                         Error);
    CHECK_THROWS_WITH_AS(data::build_array(lines, vocab, -2), "build_array: num_steps -2 must be positive", Error);
    data::Vocab no_pad(lines);
    CHECK_THROWS_WITH_AS(data::build_array(lines, no_pad, 3),
                         "build_array: the vocabulary has no '<pad>' token to pad with", Error);
    data::Vocab no_eos(lines, 0, {"<pad>"});
    CHECK_THROWS_WITH_AS(data::build_array_nmt(lines, no_eos, 3),
                         "build_array_nmt: the vocabulary has no '<eos>' token to end lines with", Error);
    CHECK_NOTHROW(data::build_array(lines, no_eos, 3));
  }
}

TEST_CASE("data/load_data_nmt: d2l's arrays on the fixture corpus") {
  for (int64_t min_freq : {1, 2}) {
    for (int64_t num_steps : {3, 8}) {
      CAPTURE(min_freq);
      CAPTURE(num_steps);
      auto nmt = data::load_data_nmt(test::fixture("eng-fra.txt"), num_steps, min_freq);
      const auto& ref =
          test::reference("data_d2l", fmt::format("nmt/load-num_steps={}-min_freq={}", num_steps, min_freq));
      CHECK(nmt.src_array.shape() == Shape{15, num_steps});
      CHECK(nmt.src_array.to_vector() == ref.ints_at("src_array").to_vector());
      CHECK(nmt.src_valid_len.to_vector() == ref.ints_at("src_valid_len").to_vector());
      CHECK(nmt.tgt_array.to_vector() == ref.ints_at("tgt_array").to_vector());
      CHECK(nmt.tgt_valid_len.to_vector() == ref.ints_at("tgt_valid_len").to_vector());
      // The vocabularies themselves are checked token by token in test_vocab.cpp.
      auto vocab_size = [&](const char* side) {
        return test::reference("data_d2l", fmt::format("vocab/{}-min_freq={}", side, min_freq)).ints_at("size").item();
      };
      CHECK(nmt.src_vocab.size() == vocab_size("source"));
      CHECK(nmt.tgt_vocab.size() == vocab_size("target"));
    }
  }
}

TEST_CASE("data/load_data_nmt: by hand, num_examples, dataset()") {
  std::string path = test::temp_file("load_data_nmt_small.txt", "Go.\tVa !\nGo now.\tVa maintenant !\nHi.\tSalut.\n");
  auto nmt = data::load_data_nmt(path, 4, 2);
  // source go: 2, .: 3, now: 1, hi: 1  -> <unk> <pad> <bos> <eos> . go
  CHECK(nmt.src_vocab.idx_to_token() == Tokens{"<unk>", "<pad>", "<bos>", "<eos>", ".", "go"});
  // target va: 2, !: 2, maintenant: 1, salut: 1, .: 1 -> … va !
  CHECK(nmt.tgt_vocab.idx_to_token() == Tokens{"<unk>", "<pad>", "<bos>", "<eos>", "va", "!"});
  CHECK(nmt.src_array.to_vector() == std::vector<int64_t>{5, 4, 3, 1, 5, 0, 4, 3, 0, 4, 3, 1});
  CHECK(nmt.src_valid_len.to_vector() == std::vector<int64_t>{3, 4, 3});
  CHECK(nmt.tgt_array.to_vector() == std::vector<int64_t>{4, 5, 3, 1, 4, 0, 5, 3, 0, 0, 3, 1});
  CHECK(nmt.tgt_valid_len.to_vector() == std::vector<int64_t>{3, 4, 3});

  auto first_two = data::load_data_nmt(path, 4, 1, 2);
  CHECK(first_two.src_array.shape() == Shape{2, 4});

  auto dataset = nmt.dataset();
  CHECK(dataset.size() == 3);
  CHECK(std::get<0>(dataset.tensors()).to_vector() == nmt.src_array.to_vector());
  CHECK(std::get<3>(dataset.tensors()).to_vector() == nmt.tgt_valid_len.to_vector());
}

TEST_CASE("data/load_data_nmt: errors") {
  CHECK_THROWS_WITH_AS(data::load_data_nmt("/no/such/corpus.txt", 8),
                       "read_data_nmt: cannot open '/no/such/corpus.txt'", Error);
  CHECK_THROWS_WITH_AS(data::read_data_nmt(QKV_REFERENCE_DIR),
                       fmt::format("read_data_nmt: '{}' is a directory, not a text file", QKV_REFERENCE_DIR).c_str(),
                       Error);
  std::string bad = test::temp_file("load_data_nmt_bad.txt", "Go.\tVa !\nHi.\tSalut !\nRun!\n");
  CHECK_THROWS_WITH_AS(
      data::load_data_nmt(bad, 8),
      fmt::format("load_data_nmt: '{}': tokenize_nmt: line 3 has no tab; expected 'source<TAB>target': 'run !'", bad)
          .c_str(),
      Error);
  std::string good = test::fixture("eng-fra.txt");
  CHECK_THROWS_WITH_AS(data::load_data_nmt(good, 0), "load_data_nmt: num_steps 0 must be positive", Error);
  CHECK_THROWS_WITH_AS(data::load_data_nmt(good, 8, -1), "load_data_nmt: min_freq -1 must be >= 0", Error);
}
