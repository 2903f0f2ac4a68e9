// Running the built lesson programs from the tests: each run gets a fresh
// temporary folder, its output is captured, and its results.json is parsed;
// check_ran holds what every lesson run must show.
#pragma once
#include <sys/wait.h>
#include <unistd.h>

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <pugixml.hpp>
#include <sstream>
#include <string>
#include <vector>

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

// A lesson run into a fresh folder, at its defaults or with `args` (besides
// --out): its exit status, output and results.json.
struct LessonRun {
  TempDir dir;
  std::filesystem::path out;
  Run run;
  nlohmann::json json;
  explicit LessonRun(const std::string& program, const std::string& args = "") : dir(program), out(dir.path / "out") {
    run = run_program(program, fmt::format("{} --out '{}'", args, out.string()), dir.path);
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

// The run finished, and its transcript and results exist; the transcript is
// plain text holding every section title the lesson printed and `titles`;
// every picture it lists exists (each SVG parses as XML with an <svg> root),
// and `pictures` are among them.
inline void check_ran(const LessonRun& r, const std::vector<std::string>& titles,
                      const std::vector<std::string>& pictures) {
  INFO(r.run.output);
  REQUIRE(r.run.status == 0);
  REQUIRE(r.json.is_object());
  std::string transcript = qkv::lesson_test::read_text(r.out / "transcript.txt");
  CHECK(transcript.find('\x1b') == std::string::npos);  // no escape codes in the copy
  for (const auto& section : r.json.at("sections"))
    CHECK(transcript.find(section.get<std::string>()) != std::string::npos);
  for (const std::string& t : titles) {
    INFO(t);
    CHECK(transcript.find(t) != std::string::npos);
  }
  CHECK(transcript.find("== Summary ==") != std::string::npos);
  std::vector<std::string> listed;
  for (const auto& p : r.json.at("pictures")) listed.push_back(p.at("file").get<std::string>());
  for (const std::string& file : listed) {
    INFO(file);
    REQUIRE(std::filesystem::exists(r.out / file));
    if (file.ends_with(".svg")) {
      pugi::xml_document svg;
      pugi::xml_parse_result parsed = svg.load_file((r.out / file).c_str());
      INFO(parsed.description());
      CHECK(parsed);
      CHECK(std::string(svg.document_element().name()) == "svg");
    }
  }
  for (const std::string& file : pictures) {
    INFO(file);
    CHECK(std::find(listed.begin(), listed.end(), file) != listed.end());
  }
}

}  // namespace qkv::lesson_test
