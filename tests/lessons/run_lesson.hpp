// Running the built lesson programs from the tests: each run gets a fresh
// temporary folder, its output is captured, and its results.json is parsed.
#pragma once
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#ifndef QKV_LESSONS_DIR
#error "the build passes QKV_LESSONS_DIR, the folder of the lesson programs"
#endif

namespace qkv::lesson_test {

// A temporary folder, removed with everything in it when the object goes.
struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& tag) {
    std::string pattern = (std::filesystem::temp_directory_path() / ("qkv_" + tag + "_XXXXXX")).string();
    if (!mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed for " + pattern);
    path = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

inline std::string read_text(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

struct Run {
  int status;          // the program's exit status
  std::string output;  // what it printed (stdout and stderr)
};

// Run <lessons dir>/<program> <args> with its output captured in `dir`;
// `env` ("NAME=value", optional) is set for the program alone.
inline Run run_program(const std::string& program, const std::string& args, const std::filesystem::path& dir,
                       const std::string& env = "") {
  std::filesystem::path log = dir / (program + ".log");
  std::string command = fmt::format("{} '{}/{}' {} > '{}' 2>&1", env, QKV_LESSONS_DIR, program, args, log.string());
  int raw = std::system(command.c_str());
  int status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128;
  return {status, read_text(log)};
}

// A lesson run at its defaults into a fresh folder: its exit status, output and results.json.
struct LessonRun {
  TempDir dir;
  std::filesystem::path out;
  Run run;
  nlohmann::json json;
  explicit LessonRun(const std::string& program) : dir(program), out(dir.path / "out") {
    run = run_program(program, fmt::format("--out '{}'", out.string()), dir.path);
    std::ifstream in(out / "results.json");
    if (in) json = nlohmann::json::parse(in);
  }
  const nlohmann::json& results() const { return json.at("results"); }
  std::vector<float> values(const std::string& key) const {
    return results().at(key).at("values").get<std::vector<float>>();
  }
  std::vector<int64_t> shape(const std::string& key) const {
    const nlohmann::json& r = results().at(key);
    return (r.is_object() ? r.at("shape") : r).get<std::vector<int64_t>>();
  }
};

}  // namespace qkv::lesson_test
