// `exercises`: the exercises' list, hints, solutions and reset, behind
// ./qkv.sh exercise (which builds and runs the grader itself):
//
//   exercises                 every exercise, its lesson and its state (progress.json)
//   exercises hint N          the next of exercise N's hints, one more each time
//   exercises solution N      says the solution is a spoiler and how to see it:
//   exercises solution N --yes   prints exercise N's reference solution
//   exercises reset N         puts the blank back in lessons/exercises/NN_name.cpp; the
//                             learner's version is kept, each reset in a new numbered copy
//                             (<out>/NN/kept/NN_name.1.cpp, .2.cpp, …), never overwritten
//   --root DIR                the source tree (default: the one this was built from)
//   --out DIR                 where progress.json lives (default: <root>/out/exercises)
//
// Exit status 0, or 2 for a bad command, number or flag, or a file it cannot
// read or write (named in the message).
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "catalog.hpp"
#include "progress.hpp"

#ifndef QKV_SOURCE_DIR
#error "the build passes QKV_SOURCE_DIR, the repository the exercises live in"
#endif

namespace fs = std::filesystem;
using namespace qkv::exercises;

namespace {

// The exit status (the top of the file says when). Not the grader's Status:
// the tool grades nothing, and it refuses a file it cannot read or write as
// it refuses a bad flag, with 2, the grader's bad_flag.
constexpr int kDone = 0;
constexpr int kRefused = 2;  // a bad command, number or flag, or a file it cannot read or write

constexpr const char* usage =
    "usage: exercises [hint N | solution N [--yes] | reset N] [--root DIR] [--out DIR]\n"
    "  (./qkv.sh exercise runs it: ./qkv.sh exercise, ./qkv.sh exercise N --hint, N --solution, N --reset)\n";

struct Paths {
  fs::path root, out;
  fs::path blank(const ExerciseEntry& e) const {
    return root / "lessons/exercises/blanks" / (std::string(e.program) + ".cpp");
  }
  fs::path mine(const ExerciseEntry& e) const { return root / "lessons/exercises" / (std::string(e.program) + ".cpp"); }
  fs::path solution(const ExerciseEntry& e) const {
    return root / "lessons/exercises/solutions" / (std::string(e.program) + ".cpp");
  }
};

struct Failure {
  std::string message;
};

std::string read_text(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw Failure{fmt::format("cannot read {}", file.string())};
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The exercise numbered by `word`, which must be one the course has and whose blank is shipped.
ExerciseEntry exercise(const std::string& word, const Paths& paths) {
  size_t used = 0;
  int number = 0;
  try {
    number = std::stoi(word, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  std::optional<ExerciseEntry> e;
  if (used == word.size()) e = find_exercise(number);
  if (!e)
    throw Failure{
        fmt::format("no exercise '{}': the exercises are 1 … {} (./qkv.sh exercise lists them)", word, catalog.size())};
  if (!fs::exists(paths.blank(*e)))
    throw Failure{fmt::format("exercise {} ({}) is not written yet: {} is missing", e->number, e->title,
                              paths.blank(*e).string())};
  return *e;
}

void list(const Paths& paths) {
  Progress progress = read_progress(paths.out);
  fmt::print("{:>2}  {:<6}  {:<58}  {}\n", "#", "lesson", "exercise", "state");
  int passed = 0, shipped = 0;
  for (const ExerciseEntry& e : catalog) {
    std::string state = "not started";
    if (!fs::exists(paths.blank(e))) {
      state = "(not in the course yet)";
    } else {
      ++shipped;
      auto it = progress.find(e.number);
      if (it != progress.end()) {
        const ExerciseProgress& p = it->second;
        state = p.state;
        if (p.state == "passed") ++passed;
        if (p.state == "failing" && !p.detail.empty()) state += ": " + p.detail;
        if (p.hints > 0) state += fmt::format(" ({} hint{})", p.hints, p.hints == 1 ? "" : "s");
      }
    }
    fmt::print("{:>2}  {:<6}  {:<58}  {}\n", e.number, fmt::format("{:02d}", e.lesson), e.title, state);
  }
  fmt::print(
      "\n{} of {} passed. Your files: lessons/exercises/NN_name.cpp. Grade one: ./qkv.sh exercise N;\n"
      "a hint: ./qkv.sh exercise N --hint; the solution (a spoiler): N --solution; start again: N --reset\n",
      passed, shipped);
}

void hint(const ExerciseEntry& e, const Paths& paths) {
  Progress progress = read_progress(paths.out);
  ExerciseProgress& p = progress[e.number];
  int count = 0;
  while (count < static_cast<int>(e.hints.size()) && !e.hints[static_cast<size_t>(count)].empty()) ++count;
  if (p.hints >= count) {
    fmt::print("Exercise {}: you have seen all {} hints:\n", e.number, count);
    for (int i = 0; i < count; ++i) fmt::print("  {}. {}\n", i + 1, e.hints[static_cast<size_t>(i)]);
    fmt::print("The solution: ./qkv.sh exercise {} --solution\n", e.number);
    return;
  }
  fmt::print("Exercise {}, hint {} of {}:\n  {}\n", e.number, p.hints + 1, count,
             e.hints[static_cast<size_t>(p.hints)]);
  ++p.hints;
  if (p.hints < count) fmt::print("(./qkv.sh exercise {} --hint again gives the next one.)\n", e.number);
  write_progress(paths.out, progress);
}

// The solution is a spoiler: shown only when asked for a second time, with --yes.
void solution(const ExerciseEntry& e, const Paths& paths, bool yes) {
  if (!yes) {
    fmt::print(
        "Exercise {}: the reference solution is a spoiler: it shows the whole answer, and the exercise teaches\n"
        "most when you find it yourself. ./qkv.sh exercise {} --hint gives the next hint instead.\n"
        "To see the solution: ./qkv.sh exercise {} --solution --yes\n",
        e.number, e.number, e.number);
    return;
  }
  fmt::print("// SPOILER: the reference solution of exercise {}, {}\n{}", e.number, paths.solution(e).string(),
             read_text(paths.solution(e)));
}

void reset(const ExerciseEntry& e, const Paths& paths) {
  const fs::path mine = paths.mine(e);
  const std::string blank = read_text(paths.blank(e));
  if (fs::exists(mine)) {
    std::string yours = read_text(mine);
    if (yours == blank) {
      fmt::print("Exercise {}: {} is already the blank.\n", e.number, mine.string());
    } else {
      // A new numbered copy each time: an earlier copy is never overwritten.
      const fs::path folder = paths.out / fmt::format("{:02d}", e.number) / "kept";
      std::error_code ec;
      fs::create_directories(folder, ec);
      fs::path keep;
      for (int n = 1;; ++n) {
        keep = folder / fmt::format("{}.{}.cpp", e.program, n);
        if (!fs::exists(keep, ec)) break;
      }
      fs::copy_file(mine, keep, fs::copy_options::none, ec);
      if (ec || read_text(keep) != yours)
        throw Failure{fmt::format("cannot keep your version in {}: {}; nothing reset", keep.string(),
                                  ec ? ec.message() : "the copy differs")};
      fmt::print("Exercise {}: your version is kept in {}\n", e.number, keep.string());
    }
  }
  {
    std::ofstream out(mine, std::ios::binary | std::ios::trunc);
    out << blank;
    if (!out) throw Failure{fmt::format("cannot write {}", mine.string())};
  }
  Progress progress = read_progress(paths.out);
  progress.erase(e.number);
  write_progress(paths.out, progress);
  fmt::print("Exercise {}: {} is the blank again, and its progress (state, hints) starts afresh.\n", e.number,
             mine.string());
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> words;
  Paths paths{QKV_SOURCE_DIR, {}};
  bool yes = false;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string arg = argv[i];
      if (arg == "--root" || arg == "--out") {
        if (i + 1 >= argc) throw Failure{fmt::format("{} needs a folder", arg)};
        (arg == "--root" ? paths.root : paths.out) = argv[++i];
      } else if (arg == "--yes") {
        yes = true;
      } else if (arg == "-h" || arg == "--help") {
        fmt::print("{}", usage);
        return kDone;
      } else if (arg.rfind("--", 0) == 0) {
        throw Failure{fmt::format("unknown flag '{}'", arg)};
      } else {
        words.push_back(arg);
      }
    }
    if (paths.out.empty()) paths.out = paths.root / "out/exercises";
    if (words.empty() || (words.size() == 1 && words[0] == "list")) {
      list(paths);
      return kDone;
    }
    const std::string& command = words[0];
    if (command != "hint" && command != "solution" && command != "reset")
      throw Failure{fmt::format("unknown command '{}'", command)};
    if (words.size() != 2) throw Failure{fmt::format("{} takes one exercise number", command)};
    const ExerciseEntry e = exercise(words[1], paths);
    if (command == "hint") hint(e, paths);
    if (command == "solution") solution(e, paths, yes);
    if (command == "reset") reset(e, paths);
  } catch (const Failure& f) {
    fmt::print(stderr, "exercises: {}\n{}", f.message, usage);
    return kRefused;
  } catch (const std::exception& error) {  // progress.json unreadable or unwritable
    fmt::print(stderr, "exercises: {}\n", error.what());
    return kRefused;
  }
  return kDone;
}
