// lessons: list the course and run its lesson programs.
//
//   lessons --list          every lesson: number, program, title, the notes' sections
//   lessons 3               run lesson 03
//   lessons 1-7             run lessons 01 … 07
//   lessons all             run every lesson written so far (the default)
//   lessons all --out DIR   each lesson writes into DIR/NN_name/ (default out/lessons/NN_name/)
//
// Each lesson is its own program, found in the folder this one is in; the
// runner prints each one's wall time and a final table, and exits non-zero if
// any lesson failed. After a run it writes the course page, DIR/index.html
// (course_page.hpp): every lesson of the course, with the transcript,
// pictures and source of each lesson in DIR — those of this run, failed ones
// with their error, and those an earlier run left there.
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "catalog.hpp"
#include "course_page.hpp"

#ifndef QKV_LESSON_SOURCES_DIR
#error "the build passes QKV_LESSON_SOURCES_DIR, the folder of the lessons' .cpp files"
#endif

namespace {

using qkv::lesson::catalog;
using qkv::lesson::CatalogEntry;

// The lessons `which` names ("3", "1-7", "all"), or an error message.
std::vector<CatalogEntry> select(const std::string& which, std::string& error) {
  std::vector<CatalogEntry> chosen;
  if (which == "all") {
    for (const CatalogEntry& e : catalog)
      if (e.written) chosen.push_back(e);
    return chosen;
  }
  int first = 0, last = 0;
  try {
    size_t dash = which.find('-');
    size_t used = 0;
    first = std::stoi(which.substr(0, dash), &used);
    if (used != which.substr(0, dash).size()) throw std::invalid_argument(which);
    last = first;
    if (dash != std::string::npos) {
      std::string rest = which.substr(dash + 1);
      last = std::stoi(rest, &used);
      if (used != rest.size()) throw std::invalid_argument(which);
    }
  } catch (const std::exception&) {
    error = fmt::format("lessons: '{}' is not a lesson number, a range like 1-7, or all", which);
    return {};
  }
  if (first > last) {
    error = fmt::format("lessons: '{}' is a backwards range: did you mean {}-{}?", which, last, first);
    return {};
  }
  if (first < 1 || last > static_cast<int>(catalog.size())) {
    error = fmt::format("lessons: '{}' is outside the course (lessons 1 to {})", which, catalog.size());
    return {};
  }
  for (const CatalogEntry& e : catalog) {
    if (e.number < first || e.number > last) continue;
    if (!e.written && first == last) {
      error = fmt::format("lessons: lesson {:02d} ({}) is not written yet", e.number, e.title);
      return {};
    }
    if (e.written) chosen.push_back(e);  // a range skips the lessons not yet written
  }
  return chosen;
}

// Run `program` with `args`, its output going straight to ours; its exit
// status. What it prints on stderr is also kept in `errors` (the last few
// kilobytes), for the course page to show when it fails.
int run(const std::filesystem::path& program, const std::vector<std::string>& args, std::string& errors) {
  std::vector<char*> argv;
  std::string path = program.string();
  argv.push_back(path.data());
  std::vector<std::string> copies = args;
  for (std::string& a : copies) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::fflush(stdout);
  std::fflush(stderr);
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) return 127;
  pid_t pid = fork();
  if (pid < 0) {
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    return 127;
  }
  if (pid == 0) {
    dup2(pipe_fds[1], STDERR_FILENO);
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    execv(path.c_str(), argv.data());
    fmt::print(stderr, "lessons: cannot run {}\n", path);
    _exit(127);
  }
  close(pipe_fds[1]);
  char buffer[4096];
  for (;;) {  // until the program ends and the pipe closes
    ssize_t n = read(pipe_fds[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    std::fwrite(buffer, 1, static_cast<size_t>(n), stderr);
    std::fflush(stderr);
    errors.append(buffer, static_cast<size_t>(n));
    constexpr size_t keep = 8192;
    if (errors.size() > keep) errors.erase(0, errors.size() - keep);
  }
  close(pipe_fds[0]);
  int status = 0;
  if (waitpid(pid, &status, 0) < 0) return 127;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

// The folder this program is in, where the lesson programs are built beside
// it: /proc/self/exe where there is a /proc (Linux), else argv[0] as the
// shell passed it, a path or a name found on PATH (macOS, a Linux without /proc).
std::filesystem::path program_folder(const std::string& argv0) {
  std::error_code no_proc;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", no_proc);
  if (!no_proc) return self.parent_path();
  if (argv0.find('/') == std::string::npos) {
    const char* path = std::getenv("PATH");
    std::string dirs = path != nullptr ? path : "";
    for (size_t begin = 0, end = 0; begin <= dirs.size(); begin = end + 1) {
      end = std::min(dirs.find(':', begin), dirs.size());
      const std::filesystem::path dir = dirs.substr(begin, end - begin);
      if (!dir.empty() && std::filesystem::exists(dir / argv0)) return std::filesystem::absolute(dir);
    }
  }
  return std::filesystem::absolute(argv0).parent_path();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("The qkv course: list the lessons, or run one (3), a range (1-7) or all of them.");
  app.name("lessons");
  bool list = false;
  std::string which = "all";
  std::string out;
  std::string color = "auto";
  app.add_flag("--list,-l", list, "list every lesson: number, program, title, the notes' sections");
  app.add_option("which", which, "a lesson number, a range like 1-7, or all")->capture_default_str();
  app.add_option("--out", out,
                 "each lesson writes into OUT/NN_name/ (default: the lesson's own, out/lessons/NN_name/)");
  app.add_option("--color", color, "colour in the terminal pictures")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  if (list) {
    fmt::print("{:>2}  {:<26} {:<40} {}\n", "#", "program", "title", "sections of the notes");
    for (const CatalogEntry& e : catalog)
      fmt::print("{:02d}  {:<26} {:<40} {}{}\n", e.number, e.program, e.title, e.sections,
                 e.written ? "" : "  (not yet written)");
    return 0;
  }

  std::string error;
  std::vector<CatalogEntry> chosen = select(which, error);
  if (!error.empty()) {
    fmt::print(stderr, "{}\n", error);
    return 2;
  }

  // The lesson programs are built beside this one.
  const std::filesystem::path here = program_folder(argv[0]);
  struct Outcome {
    CatalogEntry entry;
    int status;
    double seconds;
    std::string errors;  // what it printed on stderr
  };
  std::vector<Outcome> outcomes;
  for (const CatalogEntry& e : chosen) {
    std::vector<std::string> args = {"--color", color};
    if (!out.empty()) args.insert(args.end(), {"--out", (std::filesystem::path(out) / e.program).string()});
    fmt::print("\n######## lesson {:02d}: {} ({}) ########\n\n", e.number, e.title, e.program);
    auto start = std::chrono::steady_clock::now();
    std::string errors;
    int status = run(here / e.program, args, errors);
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    fmt::print("\n-- lesson {:02d} {} in {:.2f} s\n", e.number, status == 0 ? "finished" : "FAILED", seconds);
    outcomes.push_back({e, status, seconds, errors});
  }

  int failed = 0;
  fmt::print("\n{:>2}  {:<26} {:>8}  {}\n", "#", "program", "time", "outcome");
  for (const Outcome& o : outcomes) {
    fmt::print("{:02d}  {:<26} {:>6.2f} s  {}\n", o.entry.number, o.entry.program, o.seconds,
               o.status == 0 ? "ok" : fmt::format("FAILED (exit {})", o.status));
    failed += o.status != 0;
  }
  fmt::print("{} of {} lessons ran; {} failed\n", outcomes.size() - static_cast<size_t>(failed), outcomes.size(),
             failed);

  // The course page, beside the lessons' folders.
  std::vector<qkv::lesson::LessonOutcome> page_outcomes;
  for (const Outcome& o : outcomes) {
    std::string message;
    if (o.status != 0) {
      message =
          o.status > 128 ? fmt::format("ended by signal {}", o.status - 128) : fmt::format("exit status {}", o.status);
      if (!o.errors.empty()) message += "\n" + o.errors;
    }
    page_outcomes.push_back({o.entry.number, o.status == 0, message});
  }
  try {
    std::filesystem::path page =
        qkv::lesson::write_course_page(out.empty() ? std::filesystem::path("out/lessons") : std::filesystem::path(out),
                                       QKV_LESSON_SOURCES_DIR, page_outcomes);
    fmt::print("Course page: {}\n", page.string());
  } catch (const std::exception& e) {
    fmt::print(stderr, "lessons: {}\n", e.what());
    return 1;
  }
  return failed == 0 ? 0 : 1;
}
