// A learner's progress through the exercises: <out>/progress.json, written
// by the grader after each run and by the `exercises` tool (hints, reset),
// and read here alone (the tool, the grader and the course page):
//
//   {"exercises": {"4": {"state": "failing", "detail": "case 2, step weights: wrong values",
//                        "graded": "2026-11-26 10:04:12", "hints": 1}}}
//
// state is "not started" (never graded, or only ever graded blank),
// "failing" or "passed"; hints is how many hints --hint has shown.
#pragma once
#include <filesystem>
#include <map>
#include <string>

namespace qkv::exercises {

struct ExerciseProgress {
  std::string state = "not started";
  std::string detail;  // what failed last, in one line
  std::string graded;  // local time of the last grading, "" if never
  int hints = 0;
};

using Progress = std::map<int, ExerciseProgress>;  // by exercise number

// The progress in <out>/progress.json; empty if there is no such file. A
// file that cannot be read is a qkv::Error naming it.
Progress read_progress(const std::filesystem::path& out);
// Writes it whole, atomically (a temporary file renamed over the old one),
// and <out>/progress.js beside it: `window.qkvExerciseStates = {"4": "passed", …};`,
// which the course page loads, so that it shows each grading without being rebuilt.
void write_progress(const std::filesystem::path& out, const Progress& progress);
// The local time now, "2026-11-26 10:04:12".
std::string now_text();

}  // namespace qkv::exercises
