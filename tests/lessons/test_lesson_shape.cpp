// Every lesson of the catalog tells its story the same way: after the header
// (title, the notes' sections, output folder, arithmetic) it says in a few
// lines what it will show, before its first section; after its last section
// comes "What to remember:", then the summary. Each lesson runs with small
// flags (few epochs, small sizes): the opening and closing do not depend on
// them.
#include <doctest/doctest.h>

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "catalog.hpp"
#include "run_lesson.hpp"

namespace {

// The transcript's lines.
std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

}  // namespace

TEST_CASE("lessons: each opens with what it will show and ends with what to remember") {
  // Flags that keep a run short; a lesson not listed runs at its defaults.
  const std::map<std::string, std::string> quick = {{"08_seq2seq_attention", "--epochs 1 --embed 8 --hidden 8"},
                                                    {"10_positional_encoding", "--reps 1"},
                                                    {"11_transformer", "--epochs 1 --blocks 1"},
                                                    {"12_attention_classifier", "--epochs 1"},
                                                    {"13_your_own_layer", "--steps 5 --hidden 8"},
                                                    {"14_attention_at_length", "--max-t 128 --reps 1"}};
  int checked = 0;
  for (const qkv::lesson::CatalogEntry& e : qkv::lesson::catalog) {
    if (!e.written) continue;
    const std::string program(e.program);
    CAPTURE(program);
    auto args = quick.find(program);
    qkv::lesson_test::LessonRun r(program, args == quick.end() ? "" : args->second);
    INFO(r.run.output);
    REQUIRE(r.run.status == 0);
    const std::vector<std::string> lines = lines_of(qkv::lesson_test::read_text(r.out / "transcript.txt"));
    // The header ends with the "Arithmetic:" line; the first section is the first "== " line.
    size_t header = lines.size(), summary = lines.size();
    std::vector<size_t> sections, remember;
    for (size_t i = 0; i < lines.size(); ++i) {
      if (header == lines.size() && starts_with(lines[i], "Arithmetic:")) header = i;
      if (starts_with(lines[i], "== Summary =="))
        summary = i;
      else if (starts_with(lines[i], "== "))
        sections.push_back(i);
      if (lines[i].find("What to remember:") != std::string::npos) remember.push_back(i);
    }
    REQUIRE(header < lines.size());
    REQUIRE(!sections.empty());
    const size_t first_section = sections.front();
    // The opening: prose between the header and the first section.
    size_t prose = 0;
    for (size_t i = header + 1; i < first_section; ++i) prose += !lines[i].empty();
    CHECK(prose >= 2);
    // The closing: one "What to remember:", after the last section, right before the summary.
    REQUIRE(summary < lines.size());
    REQUIRE(remember.size() == 1);
    CHECK(starts_with(lines[remember[0]], "What to remember:"));
    CHECK(remember[0] > sections.back());
    CHECK(remember[0] < summary);
    for (const std::string& line : lines) CHECK(line.find("To remember:") == std::string::npos);  // one heading
    ++checked;
  }
  CHECK(checked == 14);
}
