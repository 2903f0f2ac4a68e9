// The lessons' support library: flags, transcript, results.json, progress.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "course_page.hpp"
#include "lesson.hpp"
#include "run_lesson.hpp"

using namespace qkv;
using qkv::lesson_test::read_text;
using qkv::lesson_test::TempDir;

namespace {

// Everything written so far into a tmpfile.
std::string contents(std::FILE* file) {
  std::fflush(file);
  std::rewind(file);
  std::string text;
  for (int c; (c = std::fgetc(file)) != EOF;) text += static_cast<char>(c);
  return text;
}

// The names in `folder`, sorted.
std::vector<std::string> names_in(const std::filesystem::path& folder) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(folder)) names.push_back(entry.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

TEST_CASE("lesson support/check_finite_loss stops training at a NaN or an infinity") {
  CHECK_NOTHROW(lesson::check_finite_loss(0.5, "epoch", 3));
  CHECK_NOTHROW(lesson::check_finite_loss(1e300, "epoch", 3));
  CHECK_THROWS_WITH_AS(lesson::check_finite_loss(std::nan(""), "epoch", 3, " (batch 7)"),
                       doctest::Contains("training stopped at epoch 3 (batch 7): the loss is nan, not a finite number"),
                       Error);
  CHECK_THROWS_WITH_AS(lesson::check_finite_loss(-INFINITY, "step", 1),
                       doctest::Contains("training stopped at step 1: the loss is -inf"), Error);
}

TEST_CASE("lesson support/strip_escape_codes keeps the text and drops colour codes") {
  CHECK(lesson::strip_escape_codes("plain") == "plain");
  CHECK(lesson::strip_escape_codes("\x1b[38;5;196m█\x1b[0m x") == "█ x");
  CHECK(lesson::strip_escape_codes("a\x1b[Kb") == "ab");
}

TEST_CASE("lesson support/transcript copies what is printed, without escape codes") {
  TempDir dir("transcript");
  std::FILE* terminal = std::tmpfile();
  {
    lesson::Transcript out(terminal, /*is_tty=*/false);
    out.open(dir.path / "transcript.txt");
    out.write("\x1b[1mbold\x1b[0m text\n");
  }
  CHECK(contents(terminal) == "\x1b[1mbold\x1b[0m text\n");  // the terminal gets the codes
  CHECK(read_text(dir.path / "transcript.txt") == "bold text\n");
  std::fclose(terminal);
}

TEST_CASE("lesson support/progress prints plain lines when not a terminal") {
  TempDir dir("progress_pipe");
  std::FILE* terminal = std::tmpfile();
  {
    lesson::Transcript out(terminal, /*is_tty=*/false);
    out.open(dir.path / "transcript.txt");
    lesson::Progress progress(out, "epoch", 3);
    for (int64_t e = 1; e <= 3; ++e) progress.update(e, {{"loss", 1.0 / static_cast<double>(e)}});
    progress.finish();
  }
  std::string printed = contents(terminal);
  CHECK(printed.find('\r') == std::string::npos);
  CHECK(printed.find('\x1b') == std::string::npos);
  CHECK(printed.find("epoch 1/3  loss 1") != std::string::npos);  // a whole number, without decimals
  CHECK(printed.find("loss 1.") == std::string::npos);
  CHECK(printed.find("epoch 2/3  loss 0.5000") != std::string::npos);
  CHECK(printed.find("epoch 3/3  loss 0.3333") != std::string::npos);
  CHECK(std::count(printed.begin(), printed.end(), '\n') == 3);  // one line per update
  CHECK(read_text(dir.path / "transcript.txt") == printed);
  std::fclose(terminal);
}

TEST_CASE("lesson support/progress prints a whole number without decimals") {
  std::FILE* terminal = std::tmpfile();
  {
    lesson::Transcript out(terminal, /*is_tty=*/false);
    lesson::Progress progress(out, "size", 2);
    progress.update(1, {{"n", 64.0}, {"loss", 0.25}});
    progress.update(2, {{"d", 512.0}, {"loss", 2.0}});
  }
  std::string printed = contents(terminal);
  CHECK(printed.find("size 1/2  n 64  loss 0.2500") != std::string::npos);
  CHECK(printed.find("size 2/2  d 512  loss 2") != std::string::npos);
  CHECK(printed.find("512.") == std::string::npos);
  CHECK(printed.find("loss 2.") == std::string::npos);
  std::fclose(terminal);
}

TEST_CASE("lesson support/progress updates one line in place on a terminal") {
  TempDir dir("progress_tty");
  std::FILE* terminal = std::tmpfile();
  {
    lesson::Transcript out(terminal, /*is_tty=*/true);
    out.open(dir.path / "transcript.txt");
    lesson::Progress progress(out, "epoch", 2);
    progress.update(1, {{"loss", 2.0}});
    progress.update(2, {{"loss", 1.0}});
    progress.finish();
    out.write("after\n");
  }
  std::string printed = contents(terminal);
  CHECK(std::count(printed.begin(), printed.end(), '\r') == 2);
  CHECK(std::count(printed.begin(), printed.end(), '\n') == 2);  // the finished progress line, then "after"
  // The transcript keeps only the last state of the line.
  std::string copy = read_text(dir.path / "transcript.txt");
  CHECK(copy.find("epoch 1/2") == std::string::npos);
  CHECK(copy.find("epoch 2/2  loss 1") == 0);
  CHECK(copy.find("loss 1.") == std::string::npos);
  CHECK(copy.find("\nafter\n") != std::string::npos);
  std::fclose(terminal);
}

TEST_CASE("lesson support/flags, transcript and results.json") {
  TempDir dir("lesson_flags");
  std::string out = (dir.path / "out").string();
  std::vector<std::string> args = {"01_average_pooling", "--out", out, "--seed", "7", "--n-train", "12"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  lesson::Lesson l(static_cast<int>(args.size()), argv.data(), 1);
  int64_t n_train = 50;
  l.option("--n-train", n_train, "training points", {.max = 100});
  l.start();
  CHECK(l.seed() == 7);
  CHECK(n_train == 12);
  CHECK(l.out() == dir.path / "out");
  l.section("A title");
  l.print("the answer is {}\n", 42);
  l.result("answer", int64_t{42});
  l.result("mse", 0.25);
  l.result("t", tensor({1, 2, 3, 4, 5, 6}, {2, 3}));
  CHECK(l.picture("p.svg", "a picture") == dir.path / "out" / "p.svg");
  CHECK(std::filesystem::exists(dir.path / "out" / "unfinished.txt"));  // until finish()
  CHECK(l.finish("done") == 0);
  CHECK_FALSE(std::filesystem::exists(dir.path / "out" / "unfinished.txt"));
  CHECK(names_in(dir.path / "out") == std::vector<std::string>{"results.json", "transcript.txt"});

  std::string transcript = read_text(dir.path / "out" / "transcript.txt");
  CHECK(transcript.find("Lesson 01") != std::string::npos);
  CHECK(transcript.find("== 1. A title ==") != std::string::npos);
  CHECK(transcript.find("the answer is 42") != std::string::npos);
  CHECK(transcript.find("p.svg") != std::string::npos);  // the summary lists the pictures

  std::ifstream in(dir.path / "out" / "results.json");
  nlohmann::json json = nlohmann::json::parse(in);
  CHECK(json.at("lesson") == 1);
  CHECK(json.at("program") == "01_average_pooling");
  CHECK(json.at("seed") == 7);
  CHECK(json.at("results").at("answer") == 42);
  CHECK(json.at("results").at("mse") == 0.25);
  CHECK(json.at("results").at("t").at("shape") == nlohmann::json({2, 3}));
  CHECK(json.at("results").at("t").at("values") == nlohmann::json({1, 2, 3, 4, 5, 6}));
  CHECK(json.at("pictures").at(0).at("file") == "p.svg");
  CHECK(json.at("sections").at(0) == "== 1. A title ==");
}

TEST_CASE("lesson support/--help lists the flags; a bad flag fails") {
  TempDir dir("lesson_help");
  qkv::lesson_test::Run help = qkv::lesson_test::run_program("03_parametric_pooling", "--help", dir.path);
  INFO(help.output);
  CHECK(help.status == 0);
  for (const char* flag : {"--out", "--seed", "--color", "--epochs", "--lr", "--n-train"})
    CHECK(help.output.find(flag) != std::string::npos);
  CHECK(!std::filesystem::exists(dir.path / "out"));

  qkv::lesson_test::Run bad = qkv::lesson_test::run_program("01_average_pooling", "--no-such-flag", dir.path);
  CHECK(bad.status != 0);
  qkv::lesson_test::Run bad_color = qkv::lesson_test::run_program("01_average_pooling", "--color sometimes", dir.path);
  CHECK(bad_color.status != 0);
  // Lesson 13 covers none of the notes' sections: its --help says so once, in one pair of brackets.
  qkv::lesson_test::Run help13 = qkv::lesson_test::run_program("13_your_own_layer", "--help", dir.path);
  CHECK(help13.status == 0);
  CHECK(help13.output.find("(none: qkv's own, how a reader extends the framework)") != std::string::npos);
  CHECK(help13.output.find("((") == std::string::npos);
}

TEST_CASE("lesson support/--color always colours the terminal, never the transcript") {
  TempDir dir("lesson_color");
  qkv::lesson_test::Run r = qkv::lesson_test::run_program(
      "02_nadaraya_watson", fmt::format("--color always --out '{}'", (dir.path / "out").string()), dir.path);
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK(r.output.find('\x1b') != std::string::npos);
  std::string transcript = read_text(dir.path / "out" / "transcript.txt");
  CHECK(transcript.find('\x1b') == std::string::npos);
  CHECK(transcript.find("Nadaraya–Watson attention weights") != std::string::npos);
}

TEST_CASE("lesson support/an error ends a lesson with its message and exit status 1") {
  TempDir dir("lesson_error");
  qkv::lesson_test::Run r = qkv::lesson_test::run_program(
      "08_seq2seq_attention",
      fmt::format("--data '{}' --out '{}'", (dir.path / "nowhere").string(), (dir.path / "out").string()), dir.path);
  CHECK(r.status == 1);
  CHECK(r.output.find(fmt::format("error: read_data_nmt: cannot open '{}'",
                                  (dir.path / "nowhere" / "eng-fra" / "train.txt").string())) != std::string::npos);
}

TEST_CASE("lesson support/a run completes its folder or leaves it marked unfinished, never an old results.json") {
  TempDir dir("lesson_unfinished");
  const std::filesystem::path course = dir.path / "course", out = course / "01_average_pooling";
  const auto run = [&](const std::string& args, const std::string& env = "",
                       const std::string& program = "01_average_pooling") {
    return qkv::lesson_test::run_program(
        program, fmt::format("{} --color never --out '{}'", args, (course / program).string()), dir.path, env);
  };
  const auto page = [&] {
    std::filesystem::create_directories(dir.path / "no_sources");
    return read_text(lesson::write_course_page(course, dir.path / "no_sources", {}));
  };
  // A run that finishes: results.json, and no mark.
  REQUIRE(run("").status == 0);
  const std::string results = read_text(out / "results.json");
  CHECK_FALSE(std::filesystem::exists(out / "unfinished.txt"));
  CHECK(page().find("<td class=\"state-finished\">from an earlier run</td>") != std::string::npos);

  SUBCASE("a run refused for its flags does not touch the folder") {
    CHECK(run("--seed ''").status != 0);
    CHECK(read_text(out / "results.json") == results);
    CHECK_FALSE(std::filesystem::exists(out / "unfinished.txt"));
  }
  SUBCASE("a run that fails: the old results are gone, the folder says why, the course page says failed") {
    // Lesson 12 read from a --data folder whose held-out file has a label of no class.
    const std::filesystem::path out12 = course / "12_attention_classifier", data = dir.path / "data";
    std::filesystem::create_directories(data / "sentiment");
    std::filesystem::copy_file(std::filesystem::path(QKV_DATA_DIR) / "sentiment" / "train.txt",
                               data / "sentiment" / "train.txt");
    std::ofstream(data / "sentiment" / "test.txt") << "1\tthe food was good\n7\tthe room was clean\n";
    REQUIRE(run("--epochs 1", "", "12_attention_classifier").status == 0);
    REQUIRE(std::filesystem::exists(out12 / "results.json"));
    qkv::lesson_test::Run r = run(fmt::format("--epochs 1 --data '{}'", data.string()), "", "12_attention_classifier");
    CHECK(r.status == 1);
    CHECK_FALSE(std::filesystem::exists(out12 / "results.json"));
    const std::string mark = read_text(out12 / "unfinished.txt");
    CHECK(mark.find("12_attention_classifier failed:\nerror: read_text_classification: ") == 0);
    CHECK(mark.find("line 2: label 7 is not one of the 2 classes") != std::string::npos);
    CHECK(mark.find("with the flags --epochs 1") != std::string::npos);
    const std::string transcript = read_text(out12 / "transcript.txt");  // this run's, cut short
    CHECK(transcript.find("Lesson 12") == 0);
    CHECK(transcript.find("== Summary ==") == std::string::npos);
    const std::string html = page();
    CHECK(html.find("<td class=\"state-failed\">failed (an earlier run)</td>") != std::string::npos);
    CHECK(html.find("label 7 is not one of the 2 classes") != std::string::npos);
    // The next run that finishes clears the mark.
    REQUIRE(run("--epochs 1", "", "12_attention_classifier").status == 0);
    CHECK_FALSE(std::filesystem::exists(out12 / "unfinished.txt"));
    CHECK(std::filesystem::exists(out12 / "results.json"));
  }
  SUBCASE("a run killed on the way: the mark it wrote at the start stays") {
    // Lesson 08 trains for longer than the second it is given.
    const std::filesystem::path out08 = course / "08_seq2seq_attention";
    qkv::lesson_test::Run r = run("", "timeout -s KILL 1", "08_seq2seq_attention");
    CHECK(r.status != 0);
    CHECK_FALSE(std::filesystem::exists(out08 / "results.json"));
    CHECK(read_text(out08 / "unfinished.txt").find("has not finished: it is still running, or it was stopped") !=
          std::string::npos);
    const std::string html = page();
    CHECK(html.find("<tr id=\"contents-08\">") != std::string::npos);
    CHECK(html.find("08_seq2seq_attention started at") != std::string::npos);
  }
}

TEST_CASE("lesson support/--data defaults to the repository's data/ folder") {
  TempDir dir("lesson_data");
  std::string out = (dir.path / "out").string();
  auto make_argv = [](std::vector<std::string>& args) {
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    return argv;
  };
  std::vector<std::string> plain = {"01_average_pooling", "--out", out};
  std::vector<char*> plain_argv = make_argv(plain);
  lesson::Lesson by_default(static_cast<int>(plain.size()), plain_argv.data(), 1);
  by_default.data_option();
  by_default.start();
  CHECK(by_default.data() == std::filesystem::path(QKV_DATA_DIR));

  std::vector<std::string> given = {"01_average_pooling", "--out", out, "--data", "/somewhere/else"};
  std::vector<char*> given_argv = make_argv(given);
  lesson::Lesson elsewhere(static_cast<int>(given.size()), given_argv.data(), 1);
  elsewhere.data_option();
  elsewhere.start();
  CHECK(elsewhere.data() == std::filesystem::path("/somewhere/else"));
}
