// The `lessons` program: its list names the whole course, and it runs a
// single lesson, a range, and refuses what is not a lesson.
#include <doctest/doctest.h>

#include <algorithm>

#include <cctype>

#include "catalog.hpp"
#include "run_lesson.hpp"

using qkv::lesson_test::run_program;
using qkv::lesson_test::TempDir;

TEST_CASE("lessons runner/the catalogue and the built programs agree") {
  // A lesson marked written is built beside the runner; one not yet written is not.
  for (const auto& e : qkv::lesson::catalog) {
    INFO(e.program);
    CHECK(std::filesystem::exists(std::filesystem::path(QKV_LESSONS_DIR) / std::string(e.program)) == e.written);
  }
  // Every lesson program in the folder is in the catalogue.
  for (const auto& file : std::filesystem::directory_iterator(QKV_LESSONS_DIR)) {
    std::string name = file.path().filename().string();
    if (name.size() < 3 || !std::isdigit(static_cast<unsigned char>(name[0])) || name[2] != '_') continue;
    if (!file.is_regular_file()) continue;
    INFO(name);
    bool listed = false;
    for (const auto& e : qkv::lesson::catalog) listed = listed || e.program == name;
    CHECK(listed);
  }
}

TEST_CASE("lessons runner/--list names every lesson of the catalogue") {
  TempDir dir("runner_list");
  qkv::lesson_test::Run r = run_program("lessons", "--list", dir.path);
  INFO(r.output);
  REQUIRE(r.status == 0);
  for (const auto& e : qkv::lesson::catalog) {
    CHECK(r.output.find(std::string(e.program)) != std::string::npos);
    CHECK(r.output.find(std::string(e.title)) != std::string::npos);
  }
  const bool all_written =
      std::all_of(qkv::lesson::catalog.begin(), qkv::lesson::catalog.end(), [](const auto& e) { return e.written; });
  CHECK((r.output.find("not yet written") != std::string::npos) == !all_written);
}

TEST_CASE("lessons runner/a range runs those lessons and no others") {
  TempDir dir("runner_range");
  qkv::lesson_test::Run r =
      run_program("lessons", fmt::format("1-2 --out '{}'", (dir.path / "out").string()), dir.path);
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK(std::filesystem::exists(dir.path / "out" / "01_average_pooling" / "results.json"));
  CHECK(std::filesystem::exists(dir.path / "out" / "02_nadaraya_watson" / "results.json"));
  CHECK(!std::filesystem::exists(dir.path / "out" / "03_parametric_pooling"));
  CHECK(r.output.find("2 of 2 lessons ran; 0 failed") != std::string::npos);
  // The course page is written after a range too (test_course_page.cpp checks what it holds).
  CHECK(std::filesystem::exists(dir.path / "out" / "index.html"));
}

TEST_CASE("lessons runner/one lesson, and what is not a lesson") {
  TempDir dir("runner_one");
  qkv::lesson_test::Run one =
      run_program("lessons", fmt::format("4 --out '{}'", (dir.path / "out").string()), dir.path);
  INFO(one.output);
  CHECK(one.status == 0);
  CHECK(std::filesystem::exists(dir.path / "out" / "04_scoring_functions" / "results.json"));
  CHECK(one.output.find("1 of 1 lessons ran") != std::string::npos);

  // The first lesson of the catalogue not written yet, if one is left.
  for (const auto& e : qkv::lesson::catalog) {
    if (e.written) continue;
    qkv::lesson_test::Run unwritten = run_program("lessons", std::to_string(e.number), dir.path);
    CHECK(unwritten.status != 0);
    CHECK(unwritten.output.find("not written yet") != std::string::npos);
    break;
  }
  qkv::lesson_test::Run outside = run_program("lessons", "0-20", dir.path);
  CHECK(outside.status != 0);
  CHECK(outside.output.find("outside the course") != std::string::npos);
  qkv::lesson_test::Run backwards = run_program("lessons", "5-3", dir.path);
  CHECK(backwards.status != 0);
  CHECK(backwards.output.find("'5-3' is a backwards range: did you mean 3-5?") != std::string::npos);
  qkv::lesson_test::Run junk = run_program("lessons", "three", dir.path);
  CHECK(junk.status != 0);
  CHECK(junk.output.find("not a lesson number") != std::string::npos);
}

TEST_CASE("lessons runner/finds the lessons beside it where there is no /proc") {
  // Without /proc (macOS, say) the runner finds its folder from argv[0]: a
  // path, or a name it was found by on PATH. A mount namespace with an empty
  // /proc plays such a system; it needs root, which CI has.
#ifdef QKV_TEST_SANITIZE
  // NOTE: a sanitized program cannot run without /proc: the sanitizers read
  // their options from /proc/self/environ and stop its threads through
  // /proc (LeakSanitizer fails the program at exit). The other builds run it.
  MESSAGE("skipped: a sanitized program needs /proc");
  return;
#endif
  TempDir dir("runner_no_proc");
  if (std::system("unshare -m sh -c 'mount -t tmpfs tmpfs /proc' >/dev/null 2>&1") != 0) {
    MESSAGE("skipped: unshare -m cannot mount over /proc here (not root)");
    return;
  }
  const std::string hide_proc =
      "unshare -m sh -c 'mount -t tmpfs tmpfs /proc && test ! -e /proc/self/exe && exec \"$0\" \"$@\"'";
  const std::filesystem::path lessons = std::filesystem::path(QKV_LESSONS_DIR) / "lessons";
  for (const std::string& how : {fmt::format("{} '{}'", hide_proc, lessons.string()),
                                 fmt::format("PATH='{}':\"$PATH\" {} lessons", QKV_LESSONS_DIR, hide_proc)}) {
    INFO(how);
    const std::filesystem::path out = dir.path / std::to_string(how.size());
    const std::string command =
        fmt::format("cd '{}' && {} 1 --out '{}' > runner.log 2>&1", dir.path.string(), how, out.string());
    const int status = std::system(command.c_str());
    INFO(qkv::lesson_test::read_text(dir.path / "runner.log"));
    CHECK(status == 0);
    CHECK(std::filesystem::exists(out / "01_average_pooling" / "results.json"));
  }
}
