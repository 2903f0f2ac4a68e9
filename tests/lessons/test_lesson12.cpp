// Lesson 12 (an attention text classifier against average pooling), run at
// seeds 0, 1 and 2 and checked from its results.json alone: every accuracy
// it prints is recounted here from the saved predictions and labels of the
// 200 held-out sentences, each sentence's kind is found again from its
// words, and the attention shares are summed again from the saved weights,
// in plain loops that share no code with the lesson. What is expected comes
// from counting and from the mathematics (an average does not depend on the
// order of what it averages), as each check says.
#include <doctest/doctest.h>

#include <qkv/data/text_classification.hpp>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "run_lesson.hpp"

using qkv::lesson_test::LessonRun;

namespace {

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::vector<std::string> words(const std::string& sentence) {
  std::vector<std::string> out;
  std::istringstream in(sentence);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

bool contains(const std::vector<std::string>& ws, const std::string& w) {
  return std::find(ws.begin(), ws.end(), w) != ws.end();
}

// data/README.md's four kinds: "but" joins a contrast, "that" opens the clause of a far negation.
std::string kind(const std::vector<std::string>& ws) {
  if (contains(ws, "but")) return "contrast";
  if (contains(ws, "that")) return "far negation";
  if (contains(ws, "not") || contains(ws, "never") || contains(ws, "nobody")) return "negation";
  return "plain";
}

struct Saved {
  std::vector<std::string> sentences, kinds, kind_names;
  std::vector<int> labels;
  std::vector<int> predictions(const nlohmann::json& res, const std::string& key) const {
    std::vector<int> out;
    for (double p : res.at(key).get<std::vector<double>>()) out.push_back(static_cast<int>(p));
    return out;
  }
};

// The fraction of sentences of `which` kind ("" = all) whose prediction is the label, counted here.
double recount(const Saved& s, const std::vector<int>& predicted, const std::string& which) {
  int right = 0, n = 0;
  for (size_t i = 0; i < s.labels.size(); ++i) {
    if (!which.empty() && s.kinds[i] != which) continue;
    ++n;
    if (predicted[i] == s.labels[i]) ++right;
  }
  REQUIRE(n > 0);
  return static_cast<double>(right) / n;
}

// The summary's sentences follow from the numbers: which one was printed is decided here again, from
// the saved curves and predictions, by the rules the lesson states (fitted: a last training accuracy of
// at least fitted_threshold; near a coin: within near_coin of 0.5; attn + P below another model on a
// kind the words decide: a lower recounted accuracy there).
void check_summary(const LessonRun& r, const Saved& s) {
  const nlohmann::json& res = r.results();
  const size_t at = r.run.output.find("== Summary ==");
  REQUIRE(at != std::string::npos);
  const std::string summary = r.run.output.substr(at);
  INFO(summary);
  const double fitted = res.at("fitted_threshold").get<double>(), near_coin = res.at("near_coin").get<double>();
  bool all_fit = true;
  for (const char* key : {"average_train_accuracies", "unordered_train_accuracies", "train_accuracies"})
    all_fit = all_fit && res.at(key).get<std::vector<double>>().back() >= fitted;
  CHECK((summary.find("All three fit the training sentences") != std::string::npos) == all_fit);
  CHECK((summary.find("Not all of them fit") != std::string::npos) == !all_fit);
  // The training accuracies it quotes are the curves' last points.
  CHECK(summary.find(fmt::format("training accuracy: average {:.3f}, attn {:.3f}, attn + P {:.3f}",
                                 res.at("average_train_accuracies").get<std::vector<double>>().back(),
                                 res.at("unordered_train_accuracies").get<std::vector<double>>().back(),
                                 res.at("train_accuracies").get<std::vector<double>>().back())) != std::string::npos);

  const std::vector<int> average = s.predictions(res, "average_predictions"),
                         unordered = s.predictions(res, "unordered_predictions"),
                         attention = s.predictions(res, "attention_predictions");
  const double ca = recount(s, average, "contrast"), cu = recount(s, unordered, "contrast"),
               cp = recount(s, attention, "contrast");
  CHECK(summary.find(fmt::format("average gets {:.3f} and attn {:.3f}", ca, cu)) != std::string::npos);
  const bool near = std::abs(ca - 0.5) <= near_coin && std::abs(cu - 0.5) <= near_coin;
  CHECK((summary.find("of a coin's 0.5") != std::string::npos) == near);
  CHECK((summary.find("above the better of the two") != std::string::npos) == (cp > std::max(ca, cu)));

  bool below_somewhere = false;
  for (const char* kind : {"plain", "negation", "far negation"})
    for (const std::vector<int>* other : {&average, &unordered}) {
      const double o = recount(s, *other, kind), p = recount(s, attention, kind);
      if (o > p) {
        below_somewhere = true;
        CHECK(summary.find(fmt::format("on {} sentences {} gets {:.3f} and attn + P {:.3f}", kind,
                                       other == &average ? "average" : "attn", o, p)) != std::string::npos);
      }
    }
  CHECK((summary.find("attn + P is below another model on some kinds") != std::string::npos) == below_somewhere);
  CHECK((summary.find("at least as good as\neither other model") != std::string::npos) == !below_somewhere);
  // training.svg draws all three models' curves.
  const std::string svg = qkv::lesson_test::read_text(r.out / "training.svg");
  for (const char* series : {"attn + P: loss", "attn: loss", "average: loss", "attn: accuracy"}) {
    INFO(series);
    CHECK(svg.find(series) != std::string::npos);
  }
}

void check_run(const LessonRun& r, bool trained) {
  INFO(r.run.output);
  qkv::lesson_test::check_ran(r,
                              {"What this lesson shows", "1.简介", "3.1 概览", "3.2 模型实现", "对输入进行嵌入",
                               "Erratum: 004 3.2", "SENN", "LEARNING_RATE", "NUM_EPOCHS", "train_data_loader",
                               "(batch_size, num_heads, seq_len, seq_len)", "What to remember"},
                              {"training.svg"});
  const nlohmann::json& res = r.results();
  // The notes' Linear((10 + 5)·5, 10·5) on cat([embedded, embedded], -1), which has 2·5 features, is refused.
  std::string error = res.at("notes_model_error").get<std::string>();
  CHECK(error.find("10 features") != std::string::npos);
  CHECK(error.find("expects 75") != std::string::npos);

  Saved s;
  s.sentences = lines(res.at("test_sentences").get<std::string>());
  s.kinds = lines(res.at("test_kinds").get<std::string>());
  s.kind_names = lines(res.at("kinds").get<std::string>());
  for (double l : res.at("test_labels").get<std::vector<double>>()) s.labels.push_back(static_cast<int>(l));
  REQUIRE(s.sentences.size() == 200);
  REQUIRE(s.kinds.size() == 200);
  REQUIRE(s.labels.size() == 200);
  CHECK(s.kind_names == std::vector<std::string>{"plain", "negation", "far negation", "contrast"});

  // The saved sentences and labels are data/sentiment/test.txt's, in its order.
  qkv::data::LabeledText file = qkv::data::read_text_classification(std::string(QKV_DATA_DIR) + "/sentiment/test.txt");
  REQUIRE(file.tokens.size() == 200);
  std::vector<int64_t> file_labels = file.labels.to_vector();
  for (size_t i = 0; i < 200; ++i) {
    CHECK(words(s.sentences[i]) == file.tokens[i]);
    CHECK(s.labels[i] == file_labels[i]);
    CHECK(s.kinds[i] == kind(words(s.sentences[i])));  // each sentence's kind, found again from its words
  }

  // Every accuracy the lesson claims, recounted from the predictions: overall and kind by kind.
  for (const char* model : {"average", "unordered", "attention"}) {
    INFO(model);
    std::vector<int> predicted = s.predictions(res, std::string(model) + "_predictions");
    REQUIRE(predicted.size() == 200);
    const std::string overall =
        std::string(model) == "attention" ? "test_accuracy" : std::string(model) + "_test_accuracy";
    CHECK(res.at(overall).get<double>() == doctest::Approx(recount(s, predicted, "")).epsilon(1e-12));
    std::vector<double> by_kind = res.at(std::string(model) + "_kind_accuracies").get<std::vector<double>>();
    REQUIRE(by_kind.size() == 4);
    for (size_t k = 0; k < 4; ++k) CHECK(by_kind[k] == doctest::Approx(recount(s, predicted, s.kind_names[k])));
  }
  const std::vector<int> average = s.predictions(res, "average_predictions"),
                         attention = s.predictions(res, "attention_predictions");

  // The sentences drawn: averaging got them wrong and attention right.
  for (double e : res.at("examples").get<std::vector<double>>()) {
    const auto i = static_cast<size_t>(e);
    REQUIRE(i < 200);
    CHECK(average[i] != s.labels[i]);
    CHECK(attention[i] == s.labels[i]);
  }
  // A contrast and its clauses swapped hold the same words: an average of their vectors is the same
  // whatever their order, so averaging gives both the same P(positive) (up to float rounding).
  // So does attention whose keys see only the word: the softmax over the words and the weighted sum
  // are the same whatever order the words come in.
  std::vector<double> swapped_average = res.at("swapped_average").get<std::vector<double>>(),
                      swapped_unordered = res.at("swapped_unordered").get<std::vector<double>>(),
                      swapped_attention = res.at("swapped_attention").get<std::vector<double>>();
  REQUIRE(swapped_average.size() == swapped_attention.size());
  REQUIRE(swapped_unordered.size() == swapped_attention.size());
  REQUIRE(swapped_average.size() % 2 == 0);
  int64_t turned = 0;
  for (size_t k = 0; k < swapped_average.size(); k += 2) {
    CHECK(std::abs(swapped_average[k] - swapped_average[k + 1]) <= 1e-5);
    CHECK(std::abs(swapped_unordered[k] - swapped_unordered[k + 1]) <= 1e-5);
    turned += (swapped_attention[k] > 0.5) != (swapped_attention[k + 1] > 0.5);
  }
  CHECK(res.at("swaps_turned").get<int64_t>() == turned);

  // The attention weights (N, T): a softmax over each sentence's words, zero on the padding; the
  // shares on the negation words and on the clause after "but", summed again here.
  std::vector<int64_t> shape = res.at("test_weights").at("shape").get<std::vector<int64_t>>();
  REQUIRE(shape.size() == 2);
  REQUIRE(shape[0] == 200);
  const auto T = static_cast<size_t>(shape[1]);
  std::vector<float> w = res.at("test_weights").at("values").get<std::vector<float>>();
  double negation = 0, negation_uniform = 0, second = 0, second_uniform = 0;
  int negated = 0, contrasts = 0;
  for (size_t i = 0; i < 200; ++i) {
    std::vector<std::string> ws = words(s.sentences[i]);
    double row = 0, on_negation = 0, after_but = 0;
    int count = 0;
    bool seen_but = false;
    size_t but = 0;
    for (size_t t = 0; t < T; ++t) {
      const float p = w[i * T + t];
      row += p;
      if (t >= ws.size()) {
        CHECK(p == 0.0f);
        continue;
      }
      if (ws[t] == "not" || ws[t] == "never" || ws[t] == "nobody") {
        on_negation += p;
        ++count;
      }
      if (seen_but) after_but += p;
      if (ws[t] == "but") {
        seen_but = true;
        but = t;
      }
    }
    CHECK(row == doctest::Approx(1).epsilon(1e-5));
    const auto len = static_cast<double>(ws.size());
    if (count > 0) {
      negation += on_negation / count;
      negation_uniform += 1 / len;
      ++negated;
    }
    if (seen_but) {
      second += after_but;
      second_uniform += (len - static_cast<double>(but) - 1) / len;
      ++contrasts;
    }
  }
  REQUIRE(negated > 0);
  REQUIRE(contrasts > 0);
  CHECK(res.at("negated_sentences").get<int>() == negated);
  CHECK(res.at("contrast_sentences").get<int>() == contrasts);
  CHECK(res.at("negation_share").get<double>() == doctest::Approx(negation / negated).epsilon(1e-4));
  CHECK(res.at("uniform_share").get<double>() == doctest::Approx(negation_uniform / negated).epsilon(1e-6));
  CHECK(res.at("second_clause_share").get<double>() == doctest::Approx(second / contrasts).epsilon(1e-4));
  CHECK(res.at("second_clause_uniform_share").get<double>() ==
        doctest::Approx(second_uniform / contrasts).epsilon(1e-6));

  check_summary(r, s);
  if (!trained) return;
  // Trained: the loss falls, attention with positions gets at least 90% of the held-out sentences right,
  // and on contrasts, which the words alone cannot decide, it beats averaging by far.
  std::vector<double> losses = res.at("losses").get<std::vector<double>>();
  REQUIRE(losses.size() == 50);
  // All three fit the training sentences at the default budget (the comparison is fair).
  for (const char* key : {"average_train_accuracies", "unordered_train_accuracies", "train_accuracies"}) {
    INFO(key);
    CHECK(res.at(key).get<std::vector<double>>().back() >= 0.99);
  }
  CHECK(losses.back() < losses.front() / 4);
  CHECK(recount(s, attention, "") >= 0.9);
  CHECK(recount(s, attention, "contrast") >= recount(s, average, "contrast") + 0.2);
  CHECK(!res.at("examples").empty());
}

}  // namespace

#ifdef QKV_TEST_SANITIZE
// Under the sanitizers: two epochs; everything but what needs training long enough.
TEST_CASE("lessons/12_attention_classifier, briefly") {
  check_run(LessonRun("12_attention_classifier", "--epochs 2"), false);
}
#else
TEST_CASE("lessons/12_attention_classifier at seeds 0, 1 and 2") {
  for (int seed : {0, 1, 2}) {
    INFO("seed " << seed);
    check_run(LessonRun("12_attention_classifier", fmt::format("--seed {} --color never", seed)), true);
  }
}
#endif
