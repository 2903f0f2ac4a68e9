// The translation machinery of lessons 08 and 11 (lessons/support/translation.hpp):
// reading the held-out pairs, train_seq2seq, translate and the mean BLEU; and
// what both lessons report of a trained model (translation_report.hpp).
// Expected values come from d2l's preprocessing rules, from the softmax (each
// attention row sums to 1 over the valid source positions) and from BLEU's
// definition (a translation equal to its reference scores 1).
#include <doctest/doctest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "run_lesson.hpp"
#include "translation.hpp"
#include "translation_report.hpp"

using namespace qkv;
using qkv::lesson_test::TempDir;

namespace {

// A tiny corpus in <dir>/eng-fra/train.txt and test.txt: every word occurs
// at least twice (the vocabulary keeps words seen twice).
void write_corpus(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir / "eng-fra");
  std::ofstream train(dir / "eng-fra" / "train.txt");
  train << "Go.\tVa !\nGo.\tVa !\nI lost.\tJ'ai perdu.\nI lost.\tJ'ai perdu.\n"
           "He's calm.\tIl est calme.\nHe's calm.\tIl est calme.\nI'm home.\tJe suis chez moi.\n"
           "I'm home.\tJe suis chez moi.\n";
  std::ofstream test(dir / "eng-fra" / "test.txt");
  test << "I lost.\tJ'ai perdu.\nHe's calm.\tIl est calme.\n";
}

// A Lesson writing into <dir>/out, as a lesson program would make it.
struct TestLesson {
  std::vector<std::string> args;
  std::vector<char*> argv;
  std::unique_ptr<lesson::Lesson> lesson;
  // --data is `dir` too: the lesson reads <dir>/eng-fra/.
  explicit TestLesson(const std::filesystem::path& dir)
      : args{"08_seq2seq_attention", "--out", (dir / "out").string(), "--color", "never", "--data", dir.string()} {
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    lesson = std::make_unique<lesson::Lesson>(static_cast<int>(args.size()), argv.data(), 8);
    lesson->data_option();
    lesson->start();
  }
};

std::shared_ptr<nn::EncoderDecoder> make_model(const data::NMTData& nmt, Generator& gen) {
  auto encoder = std::make_shared<nn::Seq2SeqEncoder>(nmt.src_vocab.size(), 8, 16, 1, 0, gen);
  auto decoder = std::make_shared<nn::Seq2SeqAttentionDecoder>(nmt.tgt_vocab.size(), 8, 16, 1, 0, gen);
  return std::make_shared<nn::EncoderDecoder>(encoder, decoder);
}

}  // namespace

TEST_CASE("lesson support/translation: the held-out pairs are read as the training data is") {
  // The repository's test split: 100 pairs (data/README.md), preprocessed by d2l's rules.
  std::vector<lesson::TranslationPair> pairs = lesson::load_test_pairs(QKV_DATA_DIR);
  REQUIRE(pairs.size() == 100);
  CHECK(pairs[0].source == "i'm rich .");  // "I'm rich.\tJe suis riche."
  CHECK(pairs[0].target == "je suis riche .");
  CHECK(pairs[1].target == "ne mange pas !");  // "Ne mange pas !" with U+202F before "!"
  CHECK_THROWS_WITH_AS(lesson::load_test_pairs("/nonexistent"), doctest::Contains("/nonexistent"), Error);
}

TEST_CASE("lesson support/translation: translate's tokens and attention") {
  TempDir dir("translation");
  write_corpus(dir.path);
  data::NMTData nmt = lesson::load_translation_data(dir.path, 6);
  Generator gen(0);
  auto model = make_model(nmt, gen);
  // Untrained: whatever it says, the source is the preprocessed words and <eos>, and every
  // step's weights (one row per output token, plus the step that said <eos>) sum to 1 over it.
  lesson::Translation t = lesson::translate(*model, nmt, "I lost.", 6);
  CHECK(t.source == std::vector<std::string>{"i", "lost", ".", "<eos>"});
  REQUIRE(t.attention.dim() == 2);
  CHECK(t.attention.size(1) == 4);
  const int64_t steps = t.attention.size(0);
  CHECK((steps == static_cast<int64_t>(t.tokens.size()) || steps == static_cast<int64_t>(t.tokens.size()) + 1));
  CHECK(static_cast<int64_t>(t.tokens.size()) <= 6);
  for (int64_t k = 0; k < steps; ++k) {
    double s = 0;
    for (int64_t j = 0; j < 4; ++j) s += t.attention.at({k, j});
    CHECK(s == doctest::Approx(1).epsilon(1e-5));
  }
  // Unknown words become <unk>; a long sentence is cut to num_steps source steps.
  CHECK(lesson::translate(*model, nmt, "I zebra.", 6).source == std::vector<std::string>{"i", "<unk>", ".", "<eos>"});
  CHECK(lesson::translate(*model, nmt, "go go go go go go go go", 6).source.size() == 6);
  CHECK_THROWS_WITH_AS(lesson::translate(*model, nmt, "  ", 6), doctest::Contains("translate: the sentence"), Error);
  CHECK_THROWS_WITH_AS(lesson::translate(*model, nmt, "go .", 0), doctest::Contains("num_steps 0"), Error);
}

TEST_CASE("lesson support/translation: train_seq2seq learns a tiny corpus, and BLEU is 1 on what it learned") {
  TempDir dir("translation_train");
  write_corpus(dir.path);
  data::NMTData nmt = lesson::load_translation_data(dir.path, 6);
  Generator gen(0);
  auto model = make_model(nmt, gen);
  TestLesson l(dir.path);
  std::vector<double> losses =
      lesson::train_seq2seq(*model, nmt, {.epochs = 100, .lr = 0.01f, .batch_size = 4}, gen, *l.lesson);
  REQUIRE(losses.size() == 100);
  // The first epoch's loss per token is about ln V for a near-uniform prediction; it falls far below.
  CHECK(losses.front() > 1);
  CHECK(losses.back() < 0.05);
  CHECK(lesson::translate(*model, nmt, "I'm home.", 6).text() == "je suis chez moi .");
  // Both held-out pairs were training pairs: exact translations score 1 (BLEU's definition), and so
  // does their mean.
  lesson::BleuScores scores = lesson::bleu(*model, nmt, lesson::load_test_pairs(dir.path), 6);
  REQUIRE(scores.pairs.size() == 2);
  CHECK(scores.pairs[0].prediction == "j'ai perdu .");
  CHECK(scores.pairs[0].bleu == 1.0);
  CHECK(scores.pairs[1].bleu == 1.0);
  CHECK(scores.mean == 1.0);
  // The mean is the mean of data::bleu over the pairs, against a wrong reference too.
  std::vector<lesson::TranslationPair> wrong = {{"i lost .", "j'ai gagné ."}, {"go .", "va !"}};
  lesson::BleuScores mixed = lesson::bleu(*model, nmt, wrong, 6);
  const double expected =
      (data::bleu(mixed.pairs[0].prediction, "j'ai gagné .", 2) + data::bleu(mixed.pairs[1].prediction, "va !", 2)) / 2;
  CHECK(mixed.mean == doctest::Approx(expected));
  CHECK(mixed.pairs[0].bleu < 1);

  CHECK_THROWS_WITH_AS(lesson::train_seq2seq(*model, nmt, {.epochs = 0}, gen, *l.lesson),
                       doctest::Contains("train_seq2seq: epochs 0"), Error);
  CHECK_THROWS_WITH_AS(lesson::bleu(*model, nmt, {}, 6), doctest::Contains("bleu: no pairs"), Error);
}

TEST_CASE("lesson support/translation: train_seq2seq_and_plot is train_seq2seq, with the curve and the results") {
  TempDir dir("translation_plot");
  write_corpus(dir.path);
  data::NMTData nmt = lesson::load_translation_data(dir.path, 6);
  const lesson::TrainOptions options{.epochs = 3, .lr = 0.01f, .batch_size = 4};
  // The same seed, the same model and the same shuffles: the same losses, to the bit.
  Generator gen_a(0), gen_b(0);
  auto model_a = make_model(nmt, gen_a), model_b = make_model(nmt, gen_b);
  TestLesson l(dir.path);
  const std::vector<double> plain = lesson::train_seq2seq(*model_a, nmt, options, gen_a, *l.lesson);
  const std::vector<double> plotted = lesson::train_seq2seq_and_plot(*model_b, nmt, options, gen_b, *l.lesson);
  CHECK(plotted == plain);
  CHECK(std::filesystem::exists(dir.path / "out" / "loss.svg"));
  l.lesson->finish("done");
  std::ifstream in(dir.path / "out" / "results.json");
  const nlohmann::json results = nlohmann::json::parse(in).at("results");
  CHECK(results.at("losses").get<std::vector<double>>() == plain);
  CHECK(results.at("train_seconds").get<double>() >= 0);
}

TEST_CASE("lesson support/translation_report: BLEU by hand is d2l's BLEU") {
  TempDir dir("bleu_by_hand");
  TestLesson l(dir.path);
  // Against data::bleu (itself checked against d2l's values in tests/data): a wrong word, a short
  // prediction (brevity penalty), a prediction shorter than k, repeated n-grams (each label n-gram
  // matched once), no match at all, and an empty prediction.
  const std::vector<std::pair<std::string, std::string>> cases = {{"je suis chez toi .", "je suis chez moi ."},
                                                                  {"il est .", "il est calme ."},
                                                                  {"va", "va !"},
                                                                  {"le le le le", "le chat"},
                                                                  {"a b c", "x y z"},
                                                                  {"", "va !"},
                                                                  {"il est calme .", "il est calme ."}};
  for (const auto& pair : cases) {  // no structured binding: INFO's lambda cannot capture one in clang 14
    const auto& [prediction, label] = pair;
    INFO(pair.first << " / " << pair.second);
    for (int64_t k : {1, 2, 3})
      CHECK(lesson::bleu_by_hand(*l.lesson, prediction, label, k) == doctest::Approx(data::bleu(prediction, label, k)));
  }
  l.lesson->finish("");
  const std::string transcript = qkv::lesson_test::read_text(dir.path / "out" / "transcript.txt");
  CHECK(transcript.find("p_2 = 2/4 = 0.5000") != std::string::npos);  // "je suis", "suis chez" of four bigrams
  CHECK(transcript.find("exp(min(0, 1 - 4/3)) = 0.7165") != std::string::npos);
}

TEST_CASE("lesson support/translation_report: d2l's sentences and the held-out pairs, reported and saved") {
  TempDir dir("translation_report");
  write_corpus(dir.path);  // d2l's four pairs, twice each; two of them again as the held-out pairs
  data::NMTData nmt = lesson::load_translation_data(dir.path, 6);
  Generator gen(0);
  auto model = make_model(nmt, gen);
  TestLesson l(dir.path);
  CHECK(lesson::load_training_pairs(dir.path).size() == 8);
  // Untrained, every sentence comes out wrong, and each is called a training pair not learned.
  lesson::D2lReport untrained = lesson::report_d2l_sentences(*l.lesson, *model, nmt, 6, {.draw_attention = true});
  CHECK(untrained.wrong == 4);
  REQUIRE(untrained.translations.size() == 4);
  lesson::train_seq2seq(*model, nmt, {.epochs = 100, .lr = 0.01f, .batch_size = 4}, gen, *l.lesson);
  lesson::D2lReport trained = lesson::report_d2l_sentences(*l.lesson, *model, nmt, 6);
  CHECK(trained.wrong == 0);
  lesson::BleuScores scores =
      lesson::report_held_out_bleu(*l.lesson, *model, nmt, lesson::load_test_pairs(dir.path), 6);
  CHECK(scores.mean == 1.0);
  l.lesson->finish("");

  std::ifstream in(dir.path / "out" / "results.json");
  const nlohmann::json res = nlohmann::json::parse(in).at("results");
  CHECK(res.at("d2l_wrong").get<int64_t>() == 0);  // the last report's
  CHECK(res.at("d2l_0_source").get<std::string>() == "go .");
  CHECK(res.at("d2l_0_reference").get<std::string>() == "va !");
  CHECK(res.at("d2l_0_translation").get<std::string>() == "va !");
  CHECK(res.at("d2l_3_in_training_file").get<bool>());
  CHECK(res.at("test_sources").get<std::string>() == "i lost .\nhe's calm .\n");
  CHECK(res.at("test_references").get<std::string>() == "j'ai perdu .\nil est calme .\n");
  CHECK(res.at("test_translations").get<std::string>() == "j'ai perdu .\nil est calme .\n");
  CHECK(res.at("test_bleus").get<std::vector<double>>() == std::vector<double>{1.0, 1.0});
  CHECK(res.at("exact_translations").get<int64_t>() == 2);
  CHECK(res.at("test_pairs_in_training_file").get<int64_t>() == 2);  // this corpus's held-out pairs are not held out
  const std::string transcript = qkv::lesson_test::read_text(dir.path / "out" / "transcript.txt");
  CHECK(
      transcript.find("wrong: \"go .\" => \"va !\" is a pair of the training file, and the model has not learned it") !=
      std::string::npos);
  for (int i = 0; i < 4; ++i) CHECK(std::filesystem::exists(dir.path / "out" / fmt::format("attention_{}.svg", i)));
}

TEST_CASE("lesson support/translation: load_test_pairs names test.txt in every error, and refuses an empty one") {
  TempDir dir("translation_test_txt");
  write_corpus(dir.path);
  const std::string file = (dir.path / "eng-fra" / "test.txt").string();
  for (const std::string& text : {std::string(""), std::string("\n \n")}) {
    std::ofstream(file, std::ios::trunc) << text;
    CHECK_THROWS_WITH_AS(lesson::load_test_pairs(dir.path),
                         doctest::Contains(fmt::format("load_test_pairs: '{}' has no sentence pairs", file).c_str()),
                         Error);
  }
  std::ofstream(file, std::ios::trunc) << "Go.\tVa !\nGo. Va !\n";
  CHECK_THROWS_WITH_AS(
      lesson::load_test_pairs(dir.path),
      doctest::Contains(fmt::format("load_test_pairs: '{}': tokenize_nmt: line 2 has no tab", file).c_str()), Error);
  std::filesystem::remove(file);
  CHECK_THROWS_WITH_AS(lesson::load_test_pairs(dir.path),
                       doctest::Contains(fmt::format("cannot open '{}'", file).c_str()), Error);
}

TEST_CASE("lesson support/translation: train_seq2seq stops at the first batch whose loss is not finite") {
  TempDir dir("translation_nan");
  write_corpus(dir.path);
  data::NMTData nmt = lesson::load_translation_data(dir.path, 6);
  Generator gen(0);
  auto model = make_model(nmt, gen);
  TestLesson l(dir.path);
  // train_seq2seq re-initialises the weight matrices but not the embeddings: a NaN
  // there makes the first batch's loss NaN.
  for (auto& [name, p] : model->named_parameters())
    if (name.find("embedding") != std::string::npos) std::fill(p.data(), p.data() + p.numel(), std::nanf(""));
  CHECK_THROWS_WITH_AS(lesson::train_seq2seq(*model, nmt, {.epochs = 3, .lr = 0.01f, .batch_size = 2}, gen, *l.lesson),
                       doctest::Contains("training stopped at epoch 1 (batch 1): the loss is nan"), Error);
}
