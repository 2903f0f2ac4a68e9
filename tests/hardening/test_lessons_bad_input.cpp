// The lesson programs given hostile input, run as processes (as a learner
// runs them, some under an address-space limit): data files whose labels or
// shapes the lesson does not expect, size flags past their bounds, memory
// that runs out. Each must end with exit status 1 (or refuse its flags) and
// a message naming what was wrong: the file, the line and the label; the
// flag and its bound; the flags and the size that did not fit. Never a crash,
// an abort, or a results.json.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <nlohmann/json.hpp>

#include "../lessons/run_lesson.hpp"
#include "lesson.hpp"

using qkv::lesson_test::read_text;
using qkv::lesson_test::run_program;
using qkv::lesson_test::TempDir;
namespace fs = std::filesystem;

namespace {

// `program args --color never --out <dir>/out`, optionally under `limit` ("ulimit -v …;").
qkv::lesson_test::Run run_into(const TempDir& dir, const std::string& program, const std::string& args,
                               const std::string& limit = "") {
  return run_program(program, fmt::format("{} --color never --out '{}'", args, (dir.path / "out").string()), dir.path,
                     limit);
}

// A --data folder: the repository's files, with `file` (e.g. "sentiment/test.txt") replaced by `text`.
fs::path data_with(const TempDir& dir, const std::string& file, const std::string& text) {
  fs::path data = dir.path / "data";
  for (const char* corpus : {"sentiment", "eng-fra"}) {
    fs::create_directories(data / corpus);
    for (const char* name : {"train.txt", "test.txt"})
      fs::copy_file(fs::path(QKV_DATA_DIR) / corpus / name, data / corpus / name);
  }
  std::ofstream(data / file, std::ios::binary | std::ios::trunc) << text;
  return data;
}

// The run failed as a lesson must: status 1, `message` printed, nothing trained, no results.json.
void check_failed(const TempDir& dir, const qkv::lesson_test::Run& r, const std::string& message) {
  CAPTURE(r.output);
  CHECK(r.status == 1);
  CHECK(r.output.find(message) != std::string::npos);
  CHECK_FALSE(fs::exists(dir.path / "out" / "results.json"));
}

}  // namespace

TEST_CASE("hardening/lessons: a label outside the lesson's classes names the file, the line and the label") {
  // Lesson 12's classes are 0 (negative) and 1 (positive). A label 7 in the
  // held-out file once indexed past the two logits; in the training file it
  // made a model of 8 classes that the held-out labels were never checked against.
  struct Row {
    std::string file, text;
    int64_t line, label;
  };
  for (const Row& row : {Row{"sentiment/test.txt", "1\tthe food was good\n7\tthe room was clean\n", 2, 7},
                         Row{"sentiment/train.txt", "7\tthe food was good\n1\tthe room was clean\n", 1, 7},
                         Row{"sentiment/test.txt", "\n0\tthe food was bad\n\n2\tthe room was clean\n", 4, 2}}) {
    CAPTURE(row.file);
    TempDir dir("hardening_lesson12_label");
    const fs::path data = data_with(dir, row.file, row.text);
    const qkv::lesson_test::Run r = run_into(dir, "12_attention_classifier", fmt::format("--data '{}'", data.string()));
    check_failed(
        dir, r,
        fmt::format("error: read_text_classification: '{}': line {}: label {} is not one of the 2 classes 0 … 1",
                    (data / row.file).string(), row.line, row.label));
    CHECK(read_text(dir.path / "out" / "transcript.txt").find("Training") == std::string::npos);  // before training
  }
}

TEST_CASE("hardening/lessons: data files the shipped corpora never are (one sentence, no sentence of a kind)") {
  // The lessons print examples of each kind of sentence and count one-word
  // sentences; a --data folder may have none of them, and must still run.
  struct Row {
    std::string program, file, text;
  };
  for (const Row& row :
       {Row{"12_attention_classifier", "sentiment/test.txt", "1\tthe food was good\n"},
        Row{"12_attention_classifier", "sentiment/test.txt", "0\txyzzy\n"},
        Row{"12_attention_classifier", "sentiment/train.txt", "1\tgood\n0\tbad\n"},
        Row{"11_transformer", "eng-fra/train.txt", "I lost the red car.\tJ'ai perdu la voiture rouge.\n"},
        Row{"08_seq2seq_attention", "eng-fra/train.txt", "I lost the red car.\tJ'ai perdu la voiture rouge.\n"},
        Row{"11_transformer", "eng-fra/test.txt", "Xyzzy plugh.\tFoo bar.\n"}}) {
    CAPTURE(row.program);
    CAPTURE(row.text);
    TempDir dir("hardening_lesson_small_data");
    const fs::path data = data_with(dir, row.file, row.text);
    const qkv::lesson_test::Run r = run_into(dir, row.program, fmt::format("--epochs 1 --data '{}'", data.string()));
    CAPTURE(r.output);
    CHECK(r.status == 0);
    CHECK(fs::exists(dir.path / "out" / "results.json"));
  }
}

TEST_CASE("hardening/lessons: every integer flag has an upper bound, which --help states and the parser holds") {
  for (const qkv::lesson::CatalogEntry& entry : qkv::lesson::catalog) {
    const std::string program(entry.program);
    CAPTURE(program);
    TempDir dir("hardening_lesson_bounds");
    const qkv::lesson_test::Run described = run_program(program, "--describe", dir.path);
    const qkv::lesson_test::Run help = run_program(program, "--help", dir.path);
    REQUIRE(described.status == 0);
    REQUIRE(help.status == 0);
    // Held in a variable: a range-for over a temporary's member would read freed memory.
    const nlohmann::json description = nlohmann::json::parse(described.output);
    for (const nlohmann::json& flag : description["flags"]) {
      if (flag["type"] != "int") continue;
      const std::string name = flag["flag"];
      const int64_t min = flag["min"], max = flag["max"];
      CAPTURE(name);
      // Far below what could be allocated: the largest bound is 100000 steps or points.
      CHECK(max <= 100'000);
      CHECK(help.output.find(fmt::format("(from {} to {})", min, max)) != std::string::npos);
      const qkv::lesson_test::Run over = run_into(dir, program, fmt::format("{} {}", name, max + 1));
      CHECK(over.status != 0);
      CHECK(over.output.find(fmt::format("{}: {} is too large: it must be at most {}", name, max + 1, max)) !=
            std::string::npos);
      CHECK_FALSE(fs::exists(dir.path / "out"));  // refused before anything ran
    }
  }
  // The sizes that once reached the allocator: a vector longer than max_size(), 3e9 points, 40 GB of GRU weights.
  struct Row {
    std::string program, args, message;
  };
  for (const Row& row :
       {Row{"01_average_pooling", "--n-train 9223372036854775807",
            "--n-train: 9223372036854775807 is too large: it must be at most 10000"},
        Row{"03_parametric_pooling", "--n-train 3000000000",
            "--n-train: 3000000000 is too large: it must be at most 2000"},
        Row{"08_seq2seq_attention", "--layers 100000", "--layers: 100000 is too large: it must be at most 16"},
        Row{"08_seq2seq_attention", "--num-steps 1099511627776",
            "--num-steps: 1099511627776 is too large: it must be at most 256"}}) {
    CAPTURE(row.args);
    TempDir dir("hardening_lesson_huge_flag");
    const qkv::lesson_test::Run r = run_into(dir, row.program, row.args);
    CAPTURE(r.output);
    CHECK(r.status != 0);
    CHECK(r.output.find(row.message) != std::string::npos);
    CHECK_FALSE(fs::exists(dir.path / "out"));
  }
}

// The sanitizers reserve far more address space than these limits leave,
// and abort on an allocation that fails instead of returning null.
#ifndef QKV_TEST_SANITIZE
TEST_CASE("hardening/lessons: memory that runs out names the flags and the size, and ends with status 1") {
  // 16 GRU layers of hidden size 1024, in the encoder and the decoder: about
  // 800 MB of weights, more than a 700 MB address space holds.
  TempDir dir("hardening_lesson_oom");
  const qkv::lesson_test::Run r =
      run_into(dir, "08_seq2seq_attention", "--layers 16 --hidden 1024", "ulimit -v 700000;");
  check_failed(dir, r, "out of memory allocating shape (3072, 1024) (12582912 bytes)");
  CHECK(r.output.find("with the flags --hidden 1024 --layers 16: smaller values need less memory") !=
        std::string::npos);
  CHECK(read_text(dir.path / "out" / "unfinished.txt").find("08_seq2seq_attention failed:\nerror: ") == 0);
}

TEST_CASE("hardening/lessons: the error is reported when not a byte more can be allocated") {
  // An uncaught exception does not unwind the stack: the model that took the
  // memory is still held while the lesson reports the error. Here every
  // byte malloc can give is taken before the error is thrown; a report that
  // allocated (a std::string, an fopen) would throw again inside the
  // terminate handler, and the process would abort (signal 6).
  TempDir dir("hardening_lesson_report");
  const fs::path out = dir.path / "out", log = dir.path / "stderr.txt";
  std::fflush(nullptr);  // the child must not write the parent's buffered output again
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || dup2(fd, STDERR_FILENO) < 0 || dup2(fd, STDOUT_FILENO) < 0) std::_Exit(3);
    std::vector<std::string> args = {"01_average_pooling", "--out", out.string(), "--n-train", "12"};
    std::vector<char*> argv;
    argv.reserve(args.size() + 1);
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    qkv::lesson::Lesson lesson(static_cast<int>(args.size()), argv.data(), 1);
    int64_t n_train = 50;
    lesson.option("--n-train", n_train, "training points", {.min = 2, .max = 100});
    lesson.start();
    // The error, made while there is memory.
    const std::exception_ptr error =
        std::make_exception_ptr(qkv::Error("GRU: out of memory allocating shape (288, 96) (110592 bytes)"));
    // The address space as it is, plus 64 MB, then every block malloc will give: large ones, then small.
    long pages = 0;
    if (std::FILE* statm = std::fopen("/proc/self/statm", "r")) {
      if (std::fscanf(statm, "%ld", &pages) != 1) pages = 0;
      std::fclose(statm);
    }
    const auto bytes = static_cast<rlim_t>(pages) * static_cast<rlim_t>(sysconf(_SC_PAGESIZE)) + (rlim_t{64} << 20);
    const rlimit limit = {bytes, bytes};
    if (pages == 0 || setrlimit(RLIMIT_AS, &limit) != 0) std::_Exit(4);
    void* taken = nullptr;  // a chain of blocks, each holding the address of the one before
    for (size_t size : {size_t{1} << 20, size_t{1} << 16, size_t{1} << 12, size_t{256}, size_t{32}})
      while (void* block = std::malloc(size)) {
        *static_cast<void**>(block) = taken;
        taken = block;
      }
    // As if uncaught: std::terminate with the error current (here inside a
    // catch, since the test runner around this function catches what it throws).
    try {
      std::rethrow_exception(error);
    } catch (...) {
      std::terminate();
    }
  }
  int raw = 0;
  REQUIRE(waitpid(child, &raw, 0) == child);
  const std::string printed = read_text(log);
  CAPTURE(printed);
  REQUIRE_FALSE(WIFSIGNALED(raw));  // not an abort
  REQUIRE(WIFEXITED(raw));
  CHECK(WEXITSTATUS(raw) == 1);
  CHECK(printed.find("error: GRU: out of memory allocating shape (288, 96) (110592 bytes)\n  with the flags "
                     "--n-train 12: smaller values need less memory\n") != std::string::npos);
  CHECK(read_text(out / "unfinished.txt") ==
        "01_average_pooling failed:\nerror: GRU: out of memory allocating shape (288, 96) (110592 bytes)\n  with the "
        "flags --n-train 12: smaller values need less memory\n");
}
#endif
