// The exercises and their grader, run as a learner runs them: as programs,
// each into a fresh folder, judged by exit status, output and files left.
//
//   every shipped blank (lessons/exercises/blanks/) grades as "not written yet", status 3;
//   every reference solution (lessons/exercises/solutions/) passes, status 0, on
//   fresh random cases too;
//   every wrong solution (tests/exercises/wrong/NN_what.cpp, at least four per
//   exercise) fails, status 1, and the output says each of its `// grader says:`
//   lines; among them the hostile ones (a throw of the grader's StopGrading,
//   exit(0), an endless loop, a segfault, a throw of an int, an endless print,
//   the library's own op, a table of expected values, an input changed in place,
//   a definition of the library's own function);
//   seeds, flags, and the `exercises` tool's list, hint, solution and reset on a
//   scratch copy of the tree.
//
// The expected verdicts come from the mathematics of each mistake (a fixture
// is written wrong on purpose), not from the grader's own output.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "course_page.hpp"
#include "exercises/catalog.hpp"
#include "exercises/grader/status.hpp"
#include "lessons/run_lesson.hpp"

#ifndef QKV_EXERCISES_DIR
#error "the build passes QKV_EXERCISES_DIR, the folder of the exercise programs"
#endif

namespace fs = std::filesystem;
using qkv::exercises::Status;
using qkv::lesson_test::read_text;
using qkv::lesson_test::TempDir;

namespace {

const fs::path source = QKV_SOURCE_DIR;
const fs::path programs = QKV_EXERCISES_DIR;

struct Run {
  int status;
  std::string output;
};

// A grader's exit status, as a process reports it.
constexpr int status(Status s) { return static_cast<int>(s); }

// The `exercises` tool's exit statuses (lessons/exercises/tool.cpp): not a Status.
constexpr int tool_done = 0;
constexpr int tool_refused = 2;  // a bad command, number or flag, or a file it cannot read or write

// `program` (a path) with `args`, its stdout and stderr captured in `dir`.
Run run(const fs::path& program, const std::string& args, const fs::path& dir) {
  const fs::path log = dir / "run.log";
  const std::string command = fmt::format("'{}' {} > '{}' 2>&1", program.string(), args, log.string());
  const int raw = std::system(command.c_str());
  return {WIFEXITED(raw) ? WEXITSTATUS(raw) : 128, read_text(log)};
}

// A graded program of the tests (graded/exercise_NN_<kind>) run into dir/out,
// with `flags` (a fixed seed unless they say otherwise).
Run grade(const std::string& program, const fs::path& dir, const std::string& flags = "--seed 1") {
  return run(programs / "graded" / program, fmt::format("--out '{}' --color never {}", (dir / "out").string(), flags),
             dir);
}

// The lines of `text` that start with `mark`, without it.
std::vector<std::string> marked(const std::string& text, const std::string& mark) {
  std::vector<std::string> lines;
  for (size_t at = text.find(mark); at != std::string::npos; at = text.find(mark, at + 1))
    lines.push_back(text.substr(at + mark.size(), text.find('\n', at) - at - mark.size()));
  return lines;
}

// The stems of the files in `folder` ending .cpp, sorted: "04_dot_product_attention", …
std::vector<std::string> stems(const fs::path& folder) {
  std::vector<std::string> names;
  for (const fs::directory_entry& e : fs::directory_iterator(folder))
    if (e.path().extension() == ".cpp") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

nlohmann::json progress(const fs::path& out) {
  std::ifstream in(out / "progress.json");
  REQUIRE_MESSAGE(in, "no progress.json in " << out.string());
  return nlohmann::json::parse(in);
}

// The function a blank leaves unwritten: the name in its not_written_yet("…", …).
// (Plain string searches, not <regex>: GCC 12 warns inside std::regex in the sanitizer build.)
std::string unwritten_function(const fs::path& blank) {
  const std::string text = read_text(blank), call = "not_written_yet(\"";
  const size_t start = text.find(call);
  const size_t end = start == std::string::npos ? start : text.find('"', start + call.size());
  REQUIRE_MESSAGE(end != std::string::npos, blank.string() << " does not call not_written_yet(\"name\", …)");
  return text.substr(start + call.size(), end - start - call.size());
}

// The folder and the step of "pictures: <folder>/<step>_{expected,yours,difference}.svg" in a grader's output.
std::pair<fs::path, std::string> pictures_of(const std::string& output) {
  const std::string head = "pictures: ", tail = "_{expected,yours,difference}.svg";
  const size_t start = output.find(head);
  const size_t end = start == std::string::npos ? start : output.find(tail, start);
  REQUIRE_MESSAGE(end != std::string::npos, "no pictures line in the output");
  const fs::path path = output.substr(start + head.size(), end - start - head.size());
  return {path.parent_path(), path.filename().string()};
}

}  // namespace

TEST_CASE("exercises/blanks: every shipped blank compiles and grades as not written yet") {
  const std::vector<std::string> blanks = stems(source / "lessons/exercises/blanks");
  REQUIRE(blanks.size() >= 3);
  for (const std::string& name : blanks) {
    CAPTURE(name);
    TempDir dir("exercise_blank");
    Run r = grade(fmt::format("exercise_{}_blank", name.substr(0, 2)), dir.path);
    CAPTURE(r.output);
    CHECK(r.status == status(Status::not_written));
    CHECK(r.output.find(unwritten_function(source / "lessons/exercises/blanks" / (name + ".cpp")) +
                        " is not written yet") != std::string::npos);
    CHECK(r.output.find("NOT WRITTEN YET: open lessons/exercises/" + name + ".cpp") != std::string::npos);
    const int number = std::stoi(name.substr(0, 2));
    CHECK(progress(dir.path / "out")["exercises"][std::to_string(number)]["state"] == "not started");
  }
}

// The catalogue and the blanks agree: each blank's header names its exercise, title and
// lesson as catalog.hpp does, and each exercise has two or three hints.
TEST_CASE("exercises/catalogue: every blank's header and hints match catalog.hpp") {
  for (const qkv::exercises::ExerciseEntry& e : qkv::exercises::catalog) {
    CAPTURE(e.program);
    const fs::path blank = source / "lessons/exercises/blanks" / (std::string(e.program) + ".cpp");
    REQUIRE(fs::exists(blank));
    const std::string text = read_text(blank);
    CHECK(text.rfind(fmt::format("// Exercise {:02d} · {}\n", e.number, e.title), 0) == 0);
    CHECK(text.find(fmt::format("// Lesson {:02d} (lessons/", e.lesson)) != std::string::npos);
    CHECK(text.find(fmt::format("./qkv.sh exercise {} ", e.number)) != std::string::npos);
    int hints = 0;
    for (std::string_view h : e.hints) hints += h.empty() ? 0 : 1;
    CHECK(hints >= 2);
  }
}

TEST_CASE("exercises/solutions: every reference solution passes its grader") {
  const std::vector<std::string> blanks = stems(source / "lessons/exercises/blanks");
  CHECK(stems(source / "lessons/exercises/solutions") == blanks);
  for (const std::string& name : blanks) {
    CAPTURE(name);
    TempDir dir("exercise_solution");
    Run r = grade(fmt::format("exercise_{}_solution", name.substr(0, 2)), dir.path);
    CAPTURE(r.output);
    const int number = std::stoi(name.substr(0, 2));
    CHECK(r.status == status(Status::passed));
    CHECK(r.output.find(fmt::format("PASSED: exercise {},", number)) != std::string::npos);
    // The stored cases of tools/reference/exercises.py ran (BLEU's are d2l's Python, without torch).
    CHECK((r.output.find("PyTorch: ") != std::string::npos || r.output.find("Python: ") != std::string::npos));
    CHECK(r.output.find("✗") == std::string::npos);
    CHECK(progress(dir.path / "out")["exercises"][std::to_string(number)]["state"] == "passed");
  }
}

TEST_CASE("exercises/wrong: every wrong solution fails, and its mistake is named") {
  const fs::path folder = source / "tests/exercises/wrong";
  std::map<std::string, int> per_exercise;
  for (const std::string& name : stems(folder)) {
    CAPTURE(name);
    const std::string text = read_text(folder / (name + ".cpp"));
    const std::vector<std::string> says = marked(text, "// grader says: ");
    REQUIRE_MESSAGE(!says.empty(), name << ".cpp has no `// grader says:` line");
    TempDir dir("exercise_wrong");
    Run r = grade(fmt::format("exercise_{}_wrong_{}", name.substr(0, 2), name.substr(3)), dir.path,
                  name.find("endless_loop") != std::string::npos ? "--seed 1 --seconds 1" : "--seed 1");
    CAPTURE(r.output);
    CHECK(r.status == status(Status::failing));
    CHECK(r.output.find("\nFAILED ") != std::string::npos);
    CHECK(r.output.find("PASSED") == std::string::npos);
    // Expected values are shown for the failing case alone: none before its line.
    const size_t failing = r.output.rfind("\ncase ");
    CHECK(r.output.substr(0, failing).find("expected") == std::string::npos);
    for (const std::string& s : says) CHECK_MESSAGE(r.output.find(s) != std::string::npos, "missing: " << s);
    const int number = std::stoi(name.substr(0, 2));
    CHECK(progress(dir.path / "out")["exercises"][std::to_string(number)]["state"] == "failing");
    // Wrong values come with the three pictures of the step that went wrong.
    if (r.output.find("wrong values at step ") != std::string::npos) {
      const auto [pictures, step] = pictures_of(r.output);
      for (const char* kind : {"expected", "yours", "difference"}) {
        const fs::path svg = pictures / (step + "_" + kind + ".svg");
        CHECK_MESSAGE(read_text(svg).find("<svg") != std::string::npos, svg.string());
      }
      CHECK(pictures == dir.path / "out" / name.substr(0, 2));
    }
    ++per_exercise[name.substr(0, 2)];
  }
  for (const std::string& blank : stems(source / "lessons/exercises/blanks")) {
    CAPTURE(blank);
    CHECK(per_exercise[blank.substr(0, 2)] >= 4);
  }
}

// The submissions of the hostile learner: each is a fixture of the test above
// (which grades it, expects status 1 and the verdict its `grader says:` lines
// name); this test keeps the list whole.
TEST_CASE("exercises/hostile: every hostile submission has its fixture") {
  const fs::path folder = source / "tests/exercises/wrong";
  for (const char* name : {"10_stop_grading",
                           "04_exit_zero",
                           "02_endless_loop",
                           "09_segfault",
                           "01_throw_int",
                           "06_huge_print",
                           "02_library_op",
                           "12_library_softmax",
                           "13_library_softmax",
                           "12_plain_autograd",
                           "08_lookup_table",
                           "02_halved_in_place",
                           "08_defines_library_bleu",
                           "08_defines_strtof",
                           "02_valid_lens_in_place",
                           "10_seventeen_dims",
                           "10_writes_progress",
                           "02_abort",
                           "02_huge_vector",
                           "02_huge_tensor"}) {
    CAPTURE(name);
    CHECK(fs::exists(folder / (std::string(name) + ".cpp")));
  }
}

TEST_CASE("exercises/hostile: the verdict names the case, and the process ends with status 1") {
  TempDir dir("exercise_hostile");
  SUBCASE("an endless loop: stopped after the time limit, on case 1") {
    Run r = grade("exercise_02_wrong_endless_loop", dir.path, "--seconds 1");
    CHECK(r.status == status(Status::failing));
    CHECK(r.output.find("your code took more than 1 s on case 1 (") != std::string::npos);
  }
  SUBCASE("exit(0): a failure, not a silent status 0") {
    Run r = grade("exercise_04_wrong_exit_zero", dir.path);
    CHECK(r.status == status(Status::failing));
    CHECK(r.output.find("your code ended the program (exit status ") != std::string::npos);
    CHECK(r.output.find("on case 1 (") != std::string::npos);
    CHECK(progress(dir.path / "out")["exercises"]["4"]["state"] == "failing");
  }
  SUBCASE("a segfault: the signal named") {
    Run r = grade("exercise_09_wrong_segfault", dir.path);
    CHECK(r.status == status(Status::failing));
    CHECK(r.output.find("your code crashed on case 1 (") != std::string::npos);
    CHECK(r.output.find("SIGSEGV, a segmentation fault") != std::string::npos);
  }
  SUBCASE("the grader's own StopGrading, thrown with a pass: one more exception") {
    Run r = grade("exercise_10_wrong_stop_grading", dir.path);
    CHECK(r.status == status(Status::failing));
    CHECK(progress(dir.path / "out")["exercises"]["10"]["state"] == "failing");
  }
  SUBCASE("abort(): the signal named") {
    Run r = grade("exercise_02_wrong_abort", dir.path);
    CHECK(r.status == status(Status::failing));
    CHECK(r.output.find("your code crashed on case 1 (") != std::string::npos);
    CHECK(r.output.find("SIGABRT: abort() was called") != std::string::npos);
  }
#ifndef QKV_TEST_SANITIZE  // AddressSanitizer ends the child itself, and the memory limit is not set
  SUBCASE("16 TB in a std::vector or a Tensor: out of memory, under the grader's limit") {
    for (const char* program : {"exercise_02_wrong_huge_vector", "exercise_02_wrong_huge_tensor"}) {
      CAPTURE(program);
      Run r = grade(program, dir.path);
      CHECK(r.status == status(Status::failing));
      CHECK(r.output.find("your code ran out of memory on case 1 (") != std::string::npos);
      CHECK(r.output.find("FAILED at case 1 (d2l's example): your code ran out of memory") != std::string::npos);
    }
  }
#endif
  SUBCASE("a result the grader cannot read back: a failure of the case, not of the grader") {
    Run r = grade("exercise_10_wrong_seventeen_dims", dir.path);
    CHECK(r.status == status(Status::failing));
    CHECK(r.output.find("the grader failed") == std::string::npos);
    CHECK(progress(dir.path / "out")["exercises"]["10"]["state"] == "failing");
  }
  SUBCASE("progress.json written by the learner's code: only the exercise's own verdict is kept") {
    fs::create_directories(dir.path / "out");
    std::ofstream(dir.path / "out/progress.json") << R"({"exercises": {"4": {"state": "failing", "hints": 2}}})";
    Run r = grade("exercise_10_wrong_writes_progress", dir.path);
    CHECK(r.status == status(Status::failing));
    const nlohmann::json p = progress(dir.path / "out");
    CHECK_FALSE(p["exercises"].contains("13"));
    CHECK(p["exercises"]["4"]["hints"] == 2);
    CHECK(p["exercises"]["10"]["state"] == "failing");
  }
  SUBCASE("an integer input changed in place in the gradient check's child") {
    Run r = grade("exercise_04_wrong_lens_in_place_in_gradcheck", dir.path);
    CHECK(r.status == status(Status::failing));
    CHECK(r.output.find("FAILED at case 15 (gradcheck): you changed an input in place (valid_lens)") !=
          std::string::npos);
  }
  SUBCASE("an endless print: cut at 40 lines, the cut said, stopped past 8 MB") {
    Run r = grade("exercise_06_wrong_huge_print", dir.path);
    CHECK(r.status == status(Status::failing));
    CHECK(r.output.find("│ debug: step 39 of the scores") != std::string::npos);
    CHECK(r.output.find("│ debug: step 40 of the scores") == std::string::npos);
    CHECK(r.output.find("more lines) not shown") != std::string::npos);
    CHECK(r.output.size() < 20000);
  }
}

// Fresh random cases at every grading, the seed printed, --seed S to replay.
TEST_CASE("exercises/seeds: each grading draws its own cases, and --seed replays them") {
  TempDir dir("exercise_seeds");
  auto seed_of = [](const std::string& output) {
    const std::string head = "random cases from seed ";
    const size_t at = output.find(head);
    REQUIRE(at != std::string::npos);
    return output.substr(at + head.size(), output.find(' ', at + head.size()) - at - head.size());
  };
  // The reference solutions pass on fresh cases (two gradings each, seeds as drawn).
  for (const std::string& name : stems(source / "lessons/exercises/solutions")) {
    std::set<std::string> seeds;
    for (int i = 0; i < 2; ++i) {
      CAPTURE(name);
      Run r = grade(fmt::format("exercise_{}_solution", name.substr(0, 2)), dir.path, "");
      CAPTURE(r.output);
      CHECK(r.status == status(Status::passed));
      seeds.insert(seed_of(r.output));
    }
    CHECK(seeds.size() >= 2);
  }
  // A wrong solution: the same seed, the same grading; another seed, other numbers.
  Run first = grade("exercise_02_wrong_fill_zero", dir.path, "--seed 5");
  Run again = grade("exercise_02_wrong_fill_zero", dir.path, "--seed 5");
  Run other = grade("exercise_02_wrong_fill_zero", dir.path, "--seed 6");
  CHECK(first.output == again.output);
  auto wrong_element = [](const std::string& output) { return output.substr(output.find("first wrong element"), 80); };
  CHECK(wrong_element(first.output) != wrong_element(other.output));
  CHECK(first.output.find("--seed 5 grades the same cases again") != std::string::npos);
  // Exercise 10 too: its random tables differ from one seed to another.
  auto random_tables = [](const std::string& output) {
    std::string lines;
    for (const std::string& line : marked(output, ": a random table ")) lines += line + "\n";
    return lines;
  };
  const std::string tables5 = random_tables(grade("exercise_10_solution", dir.path, "--seed 5").output);
  CHECK(tables5.find("max_len ") != std::string::npos);
  CHECK(tables5 != random_tables(grade("exercise_10_solution", dir.path, "--seed 6").output));
}

TEST_CASE("exercises/grader: a bad flag is refused by name, and nothing is graded") {
  TempDir dir("exercise_flags");
  Run r = run(programs / "graded/exercise_04_solution", "--colour never", dir.path);
  CHECK(r.status == status(Status::bad_flag));
  CHECK(r.output.find("unknown flag '--colour'") != std::string::npos);
  r = run(programs / "graded/exercise_04_solution", "--color purple", dir.path);
  CHECK(r.status == status(Status::bad_flag));
  CHECK(r.output.find("--color takes auto, always or never, not 'purple'") != std::string::npos);
  r = run(programs / "graded/exercise_04_solution", "--seed 12x", dir.path);
  CHECK(r.status == status(Status::bad_flag));
  CHECK(r.output.find("--seed takes a whole number (the one a grading printed), not '12x'") != std::string::npos);
  r = run(programs / "graded/exercise_04_solution", "--seconds 0", dir.path);
  CHECK(r.status == status(Status::bad_flag));
  CHECK(r.output.find("--seconds takes a time limit per call in seconds, above 0, not '0'") != std::string::npos);
  CHECK(r.output.find("case 1") == std::string::npos);
}

TEST_CASE("exercises/grader: an unreadable progress.json is named, and the verdict still stands") {
  TempDir dir("exercise_progress");
  fs::create_directories(dir.path / "out");
  std::ofstream(dir.path / "out/progress.json") << "{ not json";
  Run r = grade("exercise_02_solution", dir.path);
  CHECK(r.status == status(Status::passed));
  CHECK(r.output.find("PASSED: exercise 2,") != std::string::npos);
  CHECK(r.output.find("the progress was not saved") != std::string::npos);
  CHECK(r.output.find((dir.path / "out/progress.json").string()) != std::string::npos);
  CHECK(read_text(dir.path / "out/progress.json") == "{ not json");  // left as it was
}

// The `exercises` tool on a scratch copy of lessons/exercises/: a learner's tree.
TEST_CASE("exercises/tool: list, hint, solution and reset on a scratch copy") {
  TempDir dir("exercise_tool");
  const fs::path root = dir.path / "tree", out = dir.path / "out";
  fs::create_directories(root / "lessons");
  fs::copy(source / "lessons/exercises", root / "lessons/exercises", fs::copy_options::recursive);
  const std::string flags = fmt::format("--root '{}' --out '{}'", root.string(), out.string());
  const fs::path tool = programs / "exercises";
  const fs::path mine = root / "lessons/exercises/04_dot_product_attention.cpp";
  const std::string blank = read_text(root / "lessons/exercises/blanks/04_dot_product_attention.cpp");

  SUBCASE("the list: every exercise of the course, the shipped ones not started") {
    Run r = run(tool, flags, dir.path);
    CHECK(r.status == tool_done);
    CHECK(r.output.find("Nadaraya–Watson weights and prediction") != std::string::npos);
    CHECK(r.output.find("softmax as a new op with its hand-written backward") != std::string::npos);
    CHECK(r.output.find(" 4  04      scaled dot-product attention with a mask") != std::string::npos);
    CHECK(r.output.find("13  14      the online softmax of a row read in blocks") != std::string::npos);
    CHECK(r.output.find("not started") != std::string::npos);
    CHECK(r.output.find("0 of ") != std::string::npos);
    CHECK_FALSE(fs::exists(out / "progress.json"));  // listing writes nothing
  }
  SUBCASE("the list shows what progress.json holds") {
    fs::create_directories(out);
    std::ofstream(out / "progress.json") << R"json({"exercises": {"1": {"state": "passed", "hints": 0},
      "4": {"state": "failing", "detail": "case 2 (2-D valid lengths): step weights: wrong values (no 1/√d)", "hints": 2}}})json";
    Run r = run(tool, flags, dir.path);
    CHECK(r.status == tool_done);
    CHECK(r.output.find("failing: case 2 (2-D valid lengths): step weights: wrong values (no 1/√d) (2 hints)") !=
          std::string::npos);
    CHECK(r.output.find("1 of ") != std::string::npos);
  }
  SUBCASE("hints one at a time, counted in progress.json, then all of them") {
    for (int i = 1; i <= 3; ++i) {
      Run r = run(tool, "hint 4 " + flags, dir.path);
      CHECK(r.status == tool_done);
      CHECK(r.output.find(fmt::format("Exercise 4, hint {} of 3:", i)) != std::string::npos);
      CHECK(progress(out)["exercises"]["4"]["hints"] == i);
    }
    Run r = run(tool, "hint 4 " + flags, dir.path);
    CHECK(r.status == tool_done);
    CHECK(r.output.find("you have seen all 3 hints") != std::string::npos);
    CHECK(r.output.find("--solution") != std::string::npos);
    CHECK(progress(out)["exercises"]["4"]["hints"] == 3);
  }
  SUBCASE("the solution: a spoiler, shown only at the second step, --yes") {
    const std::string text = read_text(root / "lessons/exercises/solutions/04_dot_product_attention.cpp");
    Run r = run(tool, "solution 4 " + flags, dir.path);
    CHECK(r.status == tool_done);
    CHECK(r.output.find("spoiler") != std::string::npos);
    CHECK(r.output.find("./qkv.sh exercise 4 --solution --yes") != std::string::npos);
    CHECK(r.output.find(text) == std::string::npos);
    r = run(tool, "solution 4 --yes " + flags, dir.path);
    CHECK(r.status == tool_done);
    CHECK(r.output.find("// SPOILER: the reference solution of exercise 4") != std::string::npos);
    CHECK(r.output.find(text) != std::string::npos);
  }
  SUBCASE("reset puts the blank back, keeps every version in a new numbered copy and forgets the progress") {
    const fs::path kept = out / "04/kept";
    std::ofstream(mine) << "// my first attempt\n";
    run(tool, "hint 4 " + flags, dir.path);
    Run r = run(tool, "reset 4 " + flags, dir.path);
    CHECK(r.status == tool_done);
    CHECK(read_text(mine) == blank);
    CHECK(read_text(kept / "04_dot_product_attention.1.cpp") == "// my first attempt\n");
    CHECK(r.output.find("your version is kept in " + (kept / "04_dot_product_attention.1.cpp").string()) !=
          std::string::npos);
    CHECK_FALSE(progress(out)["exercises"].contains("4"));
    r = run(tool, "reset 4 " + flags, dir.path);  // the blank: nothing to keep
    CHECK(r.status == tool_done);
    CHECK(r.output.find("already the blank") != std::string::npos);
    std::ofstream(mine) << "// my second attempt, which passed\n";
    r = run(tool, "reset 4 " + flags, dir.path);  // a second version: a second copy, the first one kept
    CHECK(r.status == tool_done);
    CHECK(read_text(kept / "04_dot_product_attention.1.cpp") == "// my first attempt\n");
    CHECK(read_text(kept / "04_dot_product_attention.2.cpp") == "// my second attempt, which passed\n");
    CHECK(r.output.find((kept / "04_dot_product_attention.2.cpp").string()) != std::string::npos);
  }
  SUBCASE("reset makes a missing file") {
    fs::remove(mine);
    CHECK(run(tool, "reset 4 " + flags, dir.path).status == tool_done);
    CHECK(read_text(mine) == blank);
  }
  SUBCASE("bad input: named, status 2, nothing written") {
    const std::vector<std::pair<std::string, std::string>> bad = {
        {"hint 99", "no exercise '99': the exercises are 1 … 13"},
        {"solution four", "no exercise 'four'"},
        {"reset 4x", "no exercise '4x'"},
        {"hint", "hint takes one exercise number"},
        {"grade 4", "unknown command 'grade'"},
        {"--verbose", "unknown flag '--verbose'"},
    };
    for (const auto& [arguments, message] : bad) {
      const std::string& args = arguments;  // CAPTURE's lambda cannot capture a structured binding in clang 14
      CAPTURE(args);
      Run r = run(tool, args + " " + flags, dir.path);
      CHECK(r.status == tool_refused);
      CHECK(r.output.find(message) != std::string::npos);
    }
    CHECK(run(tool, "--root", dir.path).output.find("--root needs a folder") != std::string::npos);
    fs::remove(root / "lessons/exercises/blanks/04_dot_product_attention.cpp");
    Run r = run(tool, "reset 4 " + flags, dir.path);
    CHECK(r.status == tool_refused);
    CHECK(r.output.find("blanks/04_dot_product_attention.cpp is missing") != std::string::npos);
    CHECK_FALSE(fs::exists(out));
  }
  SUBCASE("an unreadable progress.json is named") {
    fs::create_directories(out);
    std::ofstream(out / "progress.json") << "[1, 2";
    Run r = run(tool, "hint 4 " + flags, dir.path);
    CHECK(r.status == tool_refused);
    CHECK(r.output.find((out / "progress.json").string() + " cannot be read") != std::string::npos);
    CHECK(read_text(out / "progress.json") == "[1, 2");
  }
}

// The course page: each lesson's exercises, linked to the learner's file, with
// their state from <sources>/../out/exercises/progress.json.
TEST_CASE("exercises/course page: each lesson links its exercises with their state") {
  TempDir dir("exercise_course_page");
  const fs::path sources = dir.path / "lessons", out = dir.path / "out/lessons";
  fs::create_directories(sources / "exercises/blanks");
  for (const char* name : {"02_masked_softmax", "03_additive_score", "04_dot_product_attention"})
    std::ofstream(sources / "exercises/blanks" / (std::string(name) + ".cpp")) << "// blank\n";
  std::ofstream(sources / "exercises/04_dot_product_attention.cpp") << "// mine\n";
  fs::create_directories(dir.path / "out/exercises");
  std::ofstream(dir.path / "out/exercises/progress.json")
      << R"json({"exercises": {"2": {"state": "passed"}, "4": {"state": "failing"}}})json";
  for (const char* program : {"04_scoring_functions", "06_attn_module"}) {
    fs::create_directories(out / program);
    std::ofstream(out / program / "results.json") << R"({"pictures": []})";
  }
  const std::string page = read_text(qkv::lesson::write_course_page(out, sources, {{4, true, ""}, {6, true, ""}}));
  // Lesson 04 teaches exercises 2, 3 and 4: each linked (the learner's file where it exists, else the blank).
  CHECK(page.find(R"(<a href="../../lessons/exercises/blanks/02_masked_softmax.cpp">exercise 2 · masked softmax)") !=
        std::string::npos);
  CHECK(page.find(R"(<a href="../../lessons/exercises/04_dot_product_attention.cpp">exercise 4 · scaled)") !=
        std::string::npos);
  CHECK(page.find(R"(<span class="exercise-passed" data-exercise="2">passed</span>)") != std::string::npos);
  CHECK(page.find(R"(exercise 3 · the additive attention score, batched</a>: <span class="exercise-open" )"
                  R"(data-exercise="3">not started)") != std::string::npos);
  CHECK(page.find(R"(<span class="exercise-open" data-exercise="4">failing</span>)") != std::string::npos);
  // The page loads the states the grader writes beside progress.json, so a grading shows without a rebuild.
  CHECK(page.find(R"(<script src="../exercises/progress.js"></script>)") != std::string::npos);
  CHECK(page.find("./qkv.sh exercise N</code> grades it") != std::string::npos);  // in lesson 04's section
  // Exercise 5 (lesson 06) has no blank in this tree: not listed.
  CHECK(page.find("exercise 5 ·") == std::string::npos);
}

// A grading writes progress.js beside progress.json, the states the course page's script shows.
TEST_CASE("exercises/course page: a grading updates the states the page loads") {
  TempDir dir("exercise_progress_script");
  Run r = grade("exercise_02_solution", dir.path);
  REQUIRE(r.status == status(Status::passed));
  const std::string script = read_text(dir.path / "out/progress.js");
  CHECK(script.find(R"(window.qkvExerciseStates = {"2":"passed"};)") != std::string::npos);
  r = grade("exercise_04_wrong_no_scaling", dir.path);
  CHECK(read_text(dir.path / "out/progress.js").find(R"({"2":"passed","4":"failing"})") != std::string::npos);
}

// ./qkv.sh exercise, copied into a scratch tree with stand-ins for cmake
// (on PATH: it records what it is asked, and "compiles" exercise 4 with a
// warning about the learner's file and one about another), for the
// `exercises` tool and for exercise 4's grader (each prints its arguments).
TEST_CASE("exercises/qkv.sh: the hint in either order, the learner's warnings shown, the flags passed on") {
  TempDir dir("exercise_qkv_sh");
  const fs::path root = dir.path / "tree", bin = dir.path / "bin",
                 programs_dir = root / "build/release/lessons/exercises";
  fs::create_directories(root / "lessons/exercises/blanks");
  fs::create_directories(programs_dir);
  fs::create_directories(bin);
  fs::copy_file(source / "qkv.sh", root / "qkv.sh");
  std::ofstream(root / "lessons/exercises/blanks/04_dot_product_attention.cpp") << "// the blank\n";
  auto script = [](const fs::path& path, const std::string& body) {
    std::ofstream(path) << "#!/bin/sh\n" << body;
    fs::permissions(path, fs::perms::owner_all, fs::perm_options::add);
  };
  script(bin / "cmake",
         "case \"$*\" in *exercise_04*)\n"
         "  echo '[ 50%] Building CXX object lessons/exercises/CMakeFiles/exercise_04_code.dir/04_dot.cpp.o'\n"
         "  echo 'lessons/exercises/04_dot_product_attention.cpp:12:50: warning: unused parameter valid_lens "
         "[-Wunused-parameter]'\n"
         "  echo 'src/ops/other.cpp:3:1: warning: a warning about the library';;\n"
         "esac\n");
  script(programs_dir / "exercises", "echo \"tool: $*\"\n");
  script(programs_dir / "exercise_04", "echo \"grader of exercise 4: $*\"\n");
  auto qkv_sh = [&](const std::string& args) {
    return run("/bin/bash",
               fmt::format("-c \"PATH='{}':$PATH QKV_NO_INSTALL=1 bash '{}' exercise {}\"", bin.string(),
                           (root / "qkv.sh").string(), args),
               dir.path);
  };
  for (const char* args : {"--hint 4", "4 --hint"}) {
    CAPTURE(args);
    Run r = qkv_sh(args);
    CHECK(r.status == 0);
    CHECK(r.output.find("tool: hint 4") != std::string::npos);
  }
  Run r = qkv_sh("4 --seed 7");
  CAPTURE(r.output);
  CHECK(r.status == 0);
  CHECK(r.output.find("the compiler warns about your file") != std::string::npos);
  CHECK(r.output.find("04_dot_product_attention.cpp:12:50: warning: unused parameter valid_lens") != std::string::npos);
  CHECK(r.output.find("a warning about the library") == std::string::npos);
  CHECK(r.output.find("[ 50%]") == std::string::npos);
  CHECK(r.output.find("grader of exercise 4: --seed 7") != std::string::npos);
}
