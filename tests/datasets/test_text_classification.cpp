// data::read_text_classification on tests/reference/fixtures/sentiment.txt, and
// its errors.
#include <doctest/doctest.h>

#include <qkv/data/text_classification.hpp>

#include "datasets/fixtures.hpp"

using namespace qkv;
using Tokens = std::vector<std::string>;

TEST_CASE("data/read_text_classification: the fixture corpus") {
  auto data = data::read_text_classification(test::fixture("sentiment.txt"));
  CHECK(data.tokens == std::vector<Tokens>{{"what", "a", "lovely", "film", "!"},
                                           {"boring", ",", "too", "long", "."},
                                           {"it", "was", "ok", "."},
                                           {"lovely", "!"}});
  CHECK(data.labels.shape() == Shape{4});
  CHECK(data.labels.to_vector() == std::vector<int64_t>{1, 0, 2, 1});
  CHECK(data.num_classes == 3);

  // On to padded ids with valid lengths, as lesson 12 does.
  data::Vocab vocab(data.tokens, 2, {"<pad>"});  // lovely, ! and . are seen twice, in that order
  REQUIRE(vocab.idx_to_token() == Tokens{"<unk>", "<pad>", "lovely", "!", "."});
  auto [X, valid_len] = data::build_array(data.tokens, vocab, 4);
  CHECK(X.shape() == Shape{4, 4});
  CHECK(X.to_vector() == std::vector<int64_t>{0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 4, 2, 3, 1, 1});
  CHECK(valid_len.to_vector() == std::vector<int64_t>{4, 4, 4, 2});
}

TEST_CASE("data/read_text_classification: errors name the file and line") {
  CHECK_THROWS_WITH_AS(data::read_text_classification("/no/such/file.txt"),
                       "read_text_classification: cannot open '/no/such/file.txt'", Error);
  auto check_bad = [](const std::string& name, const std::string& content, const std::string& what) {
    std::string path = test::temp_file(name, content);
    CHECK_THROWS_WITH_AS(data::read_text_classification(path),
                         fmt::format("read_text_classification: '{}': {}", path, what).c_str(), Error);
  };
  check_bad("tc_no_tab.txt", "1\tgood\n\n0 bad\n", "line 3 has no tab; expected 'label<TAB>sentence': '0 bad'");
  check_bad("tc_two_tabs.txt", "1\tgood\tbad\n",
            "line 1 has more than one tab; expected 'label<TAB>sentence': '1\tgood\tbad'");
  check_bad("tc_negative.txt", "1\tgood\n-1\tbad\n", "line 2: label '-1' is not a class id (an integer >= 0)");
  check_bad("tc_word.txt", "pos\tgood\n", "line 1: label 'pos' is not a class id (an integer >= 0)");
  check_bad("tc_partial.txt", "1x\tgood\n", "line 1: label '1x' is not a class id (an integer >= 0)");
  check_bad("tc_empty_label.txt", "\tgood\n", "line 1: label '' is not a class id (an integer >= 0)");
  check_bad("tc_empty_sentence.txt", "1\tgood\n0\t  \n", "line 2 has an empty sentence");
}

TEST_CASE("data/read_text_classification: the classes given, and a label outside them") {
  // The fixture's labels are 1, 0, 2, 1: within 3 or 4 classes, not within 2.
  const std::string path = test::fixture("sentiment.txt");
  CHECK(data::read_text_classification(path, 3).num_classes == 3);
  CHECK(data::read_text_classification(path, 4).num_classes == 4);  // a class no line has is still a class
  CHECK(data::read_text_classification(path, 4).labels.to_vector() == std::vector<int64_t>{1, 0, 2, 1});
  CHECK_THROWS_WITH_AS(
      data::read_text_classification(path, 2),
      fmt::format("read_text_classification: '{}': line 4: label 2 is not one of the 2 classes 0 … 1", path).c_str(),
      Error);
}

TEST_CASE("data/read_text_classification: an empty or blank file is an error, as in load_data_nmt") {
  for (const char* text : {"", "\n\n", "  \r\n \n"}) {
    const std::string path = test::temp_file("tc_empty.txt", text);
    CHECK_THROWS_WITH_AS(
        data::read_text_classification(path),
        ("read_text_classification: '" + path + "' has no examples (the file is empty or blank)").c_str(), Error);
  }
}
