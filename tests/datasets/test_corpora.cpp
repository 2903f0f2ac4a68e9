// The corpora qkv ships (data/, written by tools/make_corpora.py) have what
// the lessons need: the sizes the issue asks for, d2l's test sentences,
// fixed held-out splits that do not overlap training, and both labels.
#include <doctest/doctest.h>

#include <qkv/qkv.hpp>

#include <algorithm>
#include <set>
#include <string>

using namespace qkv;

namespace {
std::string path(const std::string& name) { return std::string(QKV_DATA_DIR) + "/" + name; }

std::set<std::string> joined(const data::TokenLines& lines) {
  std::set<std::string> out;
  for (const auto& line : lines) out.insert(fmt::format("{}", fmt::join(line, " ")));
  return out;
}
}  // namespace

TEST_CASE("data/corpus eng-fra") {
  data::ParallelTokens train = data::tokenize_nmt(data::preprocess_nmt(data::read_data_nmt(path("eng-fra/train.txt"))));
  data::ParallelTokens test = data::tokenize_nmt(data::preprocess_nmt(data::read_data_nmt(path("eng-fra/test.txt"))));
  CHECK(train.source.size() >= 1000);
  CHECK(test.source.size() >= 50);
  REQUIRE(train.source.size() == train.target.size());

  // d2l's four test sentences, with their translations, are in the training split.
  std::set<std::string> pairs;
  for (size_t i = 0; i < train.source.size(); ++i)
    pairs.insert(fmt::format("{}\t{}", fmt::join(train.source[i], " "), fmt::join(train.target[i], " ")));
  for (const char* pair :
       {"go .\tva !", "i lost .\tj'ai perdu .", "he's calm .\til est calme .", "i'm home .\tje suis chez moi ."})
    CHECK_MESSAGE(pairs.count(pair) == 1, pair);

  // The held-out split shares no source sentence with training.
  std::set<std::string> train_src = joined(train.source);
  for (const auto& s : joined(test.source)) CHECK_MESSAGE(train_src.count(s) == 0, s);

  // Word order that is not diagonal: ne … pas around the verb.
  auto negations = std::count_if(train.target.begin(), train.target.end(), [](const auto& line) {
    return std::find(line.begin(), line.end(), "pas") != line.end();
  });
  CHECK(negations >= 100);
}

TEST_CASE("data/corpus sentiment") {
  data::LabeledText train = data::read_text_classification(path("sentiment/train.txt"));
  data::LabeledText test = data::read_text_classification(path("sentiment/test.txt"));
  CHECK(train.tokens.size() >= 1000);
  CHECK(train.num_classes == 2);
  int64_t positive = 0;
  for (int64_t label : train.labels.to_vector()) positive += label;
  CHECK(positive * 3 > static_cast<int64_t>(train.tokens.size()));  // both classes well represented
  CHECK(positive * 3 < 2 * static_cast<int64_t>(train.tokens.size()));
  std::set<std::string> train_sentences = joined(train.tokens);
  for (const auto& s : joined(test.tokens)) CHECK_MESSAGE(train_sentences.count(s) == 0, s);
  auto negated = std::count_if(train.tokens.begin(), train.tokens.end(), [](const auto& line) {
    return std::find(line.begin(), line.end(), "not") != line.end();
  });
  CHECK(negated >= 100);
}
