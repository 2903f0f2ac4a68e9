// progress.json (progress.hpp), read and written with nlohmann-json.
#include "progress.hpp"

#include <qkv/core/error.hpp>

#include <chrono>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace qkv::exercises {

namespace fs = std::filesystem;

Progress read_progress(const fs::path& out) {
  const fs::path file = out / "progress.json";
  std::error_code ec;
  if (!fs::exists(file, ec)) return {};
  std::ifstream in(file);
  Progress progress;
  try {
    nlohmann::json doc = nlohmann::json::parse(in);
    for (const auto& [key, value] : doc.at("exercises").items()) {
      ExerciseProgress p;
      p.state = value.value("state", p.state);
      p.detail = value.value("detail", p.detail);
      p.graded = value.value("graded", p.graded);
      p.hints = value.value("hints", 0);
      progress[std::stoi(key)] = p;
    }
  } catch (const std::exception& e) {
    fail("exercises: {} cannot be read ({}); delete it to start the record afresh", file.string(), e.what());
  }
  return progress;
}

void write_progress(const fs::path& out, const Progress& progress) {
  nlohmann::json exercises = nlohmann::json::object();
  for (const auto& [number, p] : progress)
    exercises[std::to_string(number)] = {
        {"state", p.state}, {"detail", p.detail}, {"graded", p.graded}, {"hints", p.hints}};
  std::error_code ec;
  fs::create_directories(out, ec);
  const fs::path file = out / "progress.json", temporary = out / "progress.json.tmp";
  {
    std::ofstream stream(temporary, std::ios::binary);
    stream << nlohmann::json{{"exercises", exercises}}.dump(2) << "\n";
    if (!stream) fail("exercises: cannot write {}", temporary.string());
  }
  fs::rename(temporary, file, ec);
  if (ec) fail("exercises: cannot replace {}: {}", file.string(), ec.message());
  // The same states for the course page, as a script it loads: a page opened
  // from file:// may load a script beside it, but not read a JSON file.
  nlohmann::json states = nlohmann::json::object();
  for (const auto& [number, p] : progress) states[std::to_string(number)] = p.state;
  const fs::path script = out / "progress.js", script_temporary = out / "progress.js.tmp";
  {
    std::ofstream stream(script_temporary, std::ios::binary);
    stream << "// Written by the exercises' grader with progress.json: each exercise's state, for the course page.\n"
           << "window.qkvExerciseStates = " << states.dump() << ";\n";
    if (!stream) fail("exercises: cannot write {}", script_temporary.string());
  }
  fs::rename(script_temporary, script, ec);
  if (ec) fail("exercises: cannot replace {}: {}", script.string(), ec.message());
}

std::string now_text() {
  std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm local{};
  localtime_r(&t, &local);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", &local);
  return text;
}

}  // namespace qkv::exercises
