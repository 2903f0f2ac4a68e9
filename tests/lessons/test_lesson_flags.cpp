// The lesson programs given bad input, run as a learner runs them: flags
// that are empty, not numbers, out of range or not finite; a broken
// eng-fra/test.txt; a learning rate that makes the loss blow up. (Sizes past
// a flag's bound, memory that runs out and data files the lesson does not
// expect: tests/hardening/test_lessons_bad_input.cpp.) Each must end with a non-zero status and a message naming what
// was wrong (the flag, the file), and never leave results.json behind.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "run_lesson.hpp"

using qkv::lesson_test::read_text;
using qkv::lesson_test::run_program;
using qkv::lesson_test::TempDir;
namespace fs = std::filesystem;

namespace {

struct Refused {
  std::string program, args, message;
};

// `program args --out <dir>/out`: a run of a lesson into a fresh folder.
qkv::lesson_test::Run run_into(const TempDir& dir, const std::string& program, const std::string& args) {
  return run_program(program, fmt::format("{} --color never --out '{}'", args, (dir.path / "out").string()), dir.path);
}

// A data folder holding the repository's eng-fra/train.txt and `test` as eng-fra/test.txt.
void write_data(const fs::path& data, const std::string& test) {
  fs::create_directories(data / "eng-fra");
  fs::copy_file(fs::path(QKV_DATA_DIR) / "eng-fra" / "train.txt", data / "eng-fra" / "train.txt");
  std::ofstream(data / "eng-fra" / "test.txt", std::ios::binary) << test;
}

}  // namespace

TEST_CASE("lesson flags/bad values are refused with the flag's name, before the folder is touched") {
  const std::vector<Refused> rows = {
      {"01_average_pooling", "--seed ''", "--seed: '' is not a whole number"},
      {"01_average_pooling", "--seed 18446744073709551616",
       "--seed: 18446744073709551616 is too large: it must be at most 18446744073709551615"},
      {"01_average_pooling", "--seed -9223372036854775809",
       "--seed: -9223372036854775809 is too small: it must be at least 0"},
      {"01_average_pooling", "--seed -1", "--seed: -1 is too small: it must be at least 0"},
      {"01_average_pooling", "--seed 0x10", "--seed: '0x10' is not a whole number"},
      {"01_average_pooling", "--n-train ''", "--n-train: '' is not a whole number"},
      {"01_average_pooling", "--n-train 1", "--n-train: 1 is too small: it must be at least 2"},
      {"01_average_pooling", "--n-train -3", "--n-train: -3 is too small: it must be at least 2"},
      {"01_average_pooling", "--n-train 9223372036854775808",
       "--n-train: 9223372036854775808 is too large: it must be at most 10000"},
      {"01_average_pooling", "--n-train 1e11", "--n-train: '1e11' is not a whole number"},
      {"10_positional_encoding", "--reps 0", "--reps: 0 is too small: it must be at least 1"},
      {"10_positional_encoding", "--reps -3", "--reps: -3 is too small: it must be at least 1"},
      {"03_parametric_pooling", "--epochs 0", "--epochs: 0 is too small: it must be at least 1"},
      {"03_parametric_pooling", "--lr inf", "--lr: inf is not a finite number"},
      {"03_parametric_pooling", "--lr nan", "--lr: nan is not a finite number"},
      {"03_parametric_pooling", "--lr ''", "--lr: '' is not a number"},
      {"03_parametric_pooling", "--lr 0.1x", "--lr: '0.1x' is not a number"},
      {"03_parametric_pooling", "--lr 1e39", "--lr: 1e39 is out of a float's range"},
      {"03_parametric_pooling", "--lr 1e-50", "--lr: 1e-50 is out of a float's range"},
      {"03_parametric_pooling", "--lr ' 0.5'", "--lr: ' 0.5' is not a number"},
      {"03_parametric_pooling", "--lr +0.5", "--lr: '+0.5' is not a number"},
      {"08_seq2seq_attention", "--lr -inf", "--lr: -inf is not a finite number"},
      {"08_seq2seq_attention", "--data ''", "--data: an empty path"},
      {"11_transformer", "--num-steps 99999999999999999999",
       "--num-steps: 99999999999999999999 is too large: it must be at most 256"},
  };
  for (const Refused& row : rows) {
    CAPTURE(row.program);
    CAPTURE(row.args);
    TempDir dir("lesson_flags_refused");
    qkv::lesson_test::Run r = run_into(dir, row.program, row.args);
    CAPTURE(r.output);
    CHECK(r.status != 0);
    CHECK(r.output.find(row.message) != std::string::npos);
    CHECK_FALSE(fs::exists(dir.path / "out"));  // refused before anything ran
  }
  SUBCASE("an empty --out") {
    TempDir dir("lesson_flags_empty_out");
    qkv::lesson_test::Run r = run_program("01_average_pooling", "--out ''", dir.path);
    CHECK(r.status != 0);
    CHECK(r.output.find("--out: an empty path") != std::string::npos);
  }
}

TEST_CASE("lesson flags/the largest seed and a decimal with a leading zero are taken as written") {
  qkv::lesson_test::LessonRun r("01_average_pooling", "--seed 18446744073709551615 --n-train 010");
  INFO(r.run.output);
  REQUIRE(r.run.status == 0);
  CHECK(r.json.at("seed").get<uint64_t>() == 18446744073709551615u);
  CHECK(r.results().at("n_train") == 10);  // decimal, not octal 8
}

// Sizes past a flag's bound, and memory that runs out within the bounds: tests/hardening/test_lessons_bad_input.cpp.

TEST_CASE("lesson flags/lessons 08 and 11 check eng-fra/test.txt before they train") {
  struct Case {
    std::string test, message;
  };
  for (const std::string program : {"08_seq2seq_attention", "11_transformer"}) {
    for (const Case& c : {Case{"", "' has no sentence pairs (the file is empty or blank): there is nothing to score"},
                          Case{"\n  \n", "' has no sentence pairs (the file is empty or blank)"},
                          Case{"Go.\tVa !\nno tab here\n", "': tokenize_nmt: line 2 has no tab"}}) {
      CAPTURE(program);
      CAPTURE(c.test);
      TempDir dir("lesson_flags_test_txt");
      write_data(dir.path / "data", c.test);
      qkv::lesson_test::Run r = run_into(dir, program, fmt::format("--data '{}'", (dir.path / "data").string()));
      CAPTURE(r.output);
      CHECK(r.status == 1);
      const std::string file = (dir.path / "data" / "eng-fra" / "test.txt").string();
      CHECK(r.output.find("error: load_test_pairs: '" + file + c.message) != std::string::npos);
      CHECK(read_text(dir.path / "out" / "transcript.txt").find("Training") == std::string::npos);  // not reached
      CHECK_FALSE(fs::exists(dir.path / "out" / "results.json"));
    }
    CAPTURE(program);
    TempDir dir("lesson_flags_no_test_txt");
    write_data(dir.path / "data", "");
    fs::remove(dir.path / "data" / "eng-fra" / "test.txt");
    qkv::lesson_test::Run r = run_into(dir, program, fmt::format("--data '{}'", (dir.path / "data").string()));
    CHECK(r.status == 1);
    CHECK(r.output.find("cannot open '" + (dir.path / "data" / "eng-fra" / "test.txt").string() + "'") !=
          std::string::npos);
  }
}

TEST_CASE("lesson flags/training stops at the first loss that is not finite") {
  // A learning rate of 1e30 makes the first steps' weights about 1e30, and the
  // loss overflows to inf or NaN within a few steps in every training lesson.
  const std::vector<std::pair<std::string, std::string>> runs = {
      {"03_parametric_pooling", "--lr 1e30"},
      {"12_attention_classifier", "--lr 1e30"},
      {"13_your_own_layer", "--lr 1e30"},
      {"08_seq2seq_attention", "--lr 1e30 --epochs 1 --embed 8 --hidden 8"},
      {"11_transformer", "--lr 1e30 --epochs 1 --num-hiddens 8 --heads 2 --ffn 8 --blocks 1"},
  };
  for (const auto& [lesson_program, args] : runs) {
    const std::string& program = lesson_program;  // CAPTURE's lambda cannot capture a structured binding in clang 14
    CAPTURE(program);
    TempDir dir("lesson_flags_nan");
    qkv::lesson_test::Run r = run_into(dir, program, args);
    CAPTURE(r.output);
    CHECK(r.status == 1);
    CHECK(r.output.find("error: training stopped at ") != std::string::npos);
    CHECK(r.output.find("not a finite number") != std::string::npos);
    CHECK(r.output.find("\n  with the flags ") != std::string::npos);
    CHECK(r.output.find("--lr 1e30") != std::string::npos);
    CHECK_FALSE(fs::exists(dir.path / "out" / "results.json"));
    CHECK(read_text(dir.path / "out" / "unfinished.txt").find("error: training stopped at ") != std::string::npos);
  }
}

TEST_CASE("lesson flags/--describe lists the lesson and every number flag --help lists, with its default") {
  TempDir dir("lesson_flags_describe");
  const qkv::lesson_test::Run described = run_into(dir, "03_parametric_pooling", "--describe");
  const qkv::lesson_test::Run help = run_program("03_parametric_pooling", "--help", dir.path);
  CAPTURE(described.output);
  REQUIRE(described.status == 0);
  CHECK_FALSE(fs::exists(dir.path / "out"));  // it runs nothing
  const nlohmann::json lesson = nlohmann::json::parse(described.output);
  CHECK(lesson["number"] == 3);
  CHECK(lesson["program"] == "03_parametric_pooling");
  CHECK(lesson["title"] == "parametric attention pooling");
  // --help is CLI11's own listing: "--epochs INT=5", "--lr FLOAT=0.5", "--seed UINT=0".
  std::vector<std::string> flags;
  for (const nlohmann::json& flag : lesson["flags"]) {
    const std::string name = flag["flag"], type = flag["type"];
    flags.push_back(name);
    const std::string shown = type == "seed" ? "UINT" : type == "int" ? "INT" : "FLOAT";
    const std::string value = type == "float" ? fmt::format("{}", flag["default"].get<float>())
                                              : std::to_string(flag["default"].get<int64_t>());
    CAPTURE(name);
    CHECK(help.output.find(fmt::format("{} {}={}", name, shown, value)) != std::string::npos);
    CHECK(help.output.find(flag["help"].get<std::string>()) != std::string::npos);
  }
  CHECK(flags == std::vector<std::string>{"--seed", "--n-train", "--epochs", "--lr"});
}
