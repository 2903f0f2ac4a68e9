// The README and the pages under docs/ against the code they describe:
// - every ```cpp example is compiled and run: it appears, word for word, in a
//   source file of the project (a test that runs it, or the library file it
//   quotes). Whitespace is ignored, so clang-format may rewrap a test's copy;
//   anything else that differs (a name, an argument, a comment) fails. An
//   example's leading #include and `using namespace` lines sit at the top of
//   the test file, not in its TEST_CASE: each must be in the same file.
// - every relative link points at a file that exists, and every #anchor at a
//   heading of that file.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#ifndef QKV_SOURCE_DIR
#error "the build passes QKV_SOURCE_DIR, the repository's root"
#endif

namespace fs = std::filesystem;

namespace {

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in, "cannot read " << path.string());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The markdown files a reader is sent to: README.md and docs/*.md.
std::vector<fs::path> markdown_files() {
  const fs::path root = QKV_SOURCE_DIR;
  std::vector<fs::path> files{root / "README.md"};
  for (const auto& entry : fs::directory_iterator(root / "docs"))
    if (entry.path().extension() == ".md") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

struct CodeBlock {
  fs::path file;
  int line;  // of the opening fence, 1-based
  std::string code;
};

// The fenced blocks of one language (```cpp … ```) in a markdown text.
std::vector<CodeBlock> code_blocks(const fs::path& file, const std::string& text, const std::string& language) {
  std::vector<CodeBlock> blocks;
  std::istringstream in(text);
  std::string line;
  int number = 0;
  CodeBlock* open = nullptr;
  bool in_other_fence = false;
  while (std::getline(in, line)) {
    ++number;
    std::string trimmed = line.substr(std::min(line.find_first_not_of(' '), line.size()));
    if (open) {
      if (trimmed == "```") {
        open = nullptr;
      } else {
        open->code += line + "\n";
      }
    } else if (trimmed.rfind("```", 0) == 0) {
      if (in_other_fence) {
        in_other_fence = false;
      } else if (trimmed == "```" + language) {
        blocks.push_back({file, number, ""});
        open = &blocks.back();
      } else {
        in_other_fence = true;
      }
    }
  }
  return blocks;
}

std::string without_whitespace(const std::string& s) {
  std::string out;
  for (char c : s)
    if (!std::isspace(static_cast<unsigned char>(c))) out += c;
  return out;
}

// Every C++ file of the project that is compiled, whitespace removed.
std::vector<std::pair<fs::path, std::string>> compiled_sources() {
  const fs::path root = QKV_SOURCE_DIR;
  std::vector<std::pair<fs::path, std::string>> sources;
  for (const char* dir : {"tests", "src", "examples", "lessons"}) {
    for (const auto& entry : fs::recursive_directory_iterator(root / dir)) {
      const std::string ext = entry.path().extension().string();
      if (entry.is_regular_file() && (ext == ".cpp" || ext == ".hpp"))
        sources.emplace_back(entry.path(), without_whitespace(read_file(entry.path())));
    }
  }
  return sources;
}

// GitHub's anchor for a heading: lowercase, spaces to hyphens, punctuation
// other than '-' and '_' dropped; letters beyond ASCII are kept.
std::string anchor_of(const std::string& heading) {
  std::string out;
  for (char c : heading) {
    unsigned char u = static_cast<unsigned char>(c);
    if (u >= 0x80 || std::isalnum(u) || c == '-' || c == '_')
      out += static_cast<char>(std::tolower(u));
    else if (c == ' ')
      out += '-';
  }
  return out;
}

std::set<std::string> anchors_of(const std::string& text) {
  std::set<std::string> anchors;
  std::istringstream in(text);
  std::string line;
  bool in_fence = false;
  while (std::getline(in, line)) {
    if (line.rfind("```", 0) == 0) in_fence = !in_fence;
    if (in_fence || line.empty() || line[0] != '#') continue;
    size_t text_start = line.find_first_not_of('#');
    if (text_start == std::string::npos || line[text_start] != ' ') continue;
    anchors.insert(anchor_of(line.substr(text_start + 1)));
  }
  return anchors;
}

// The targets of inline links [text](target) outside code.
std::vector<std::pair<int, std::string>> link_targets(const std::string& text) {
  std::vector<std::pair<int, std::string>> targets;
  std::istringstream in(text);
  std::string line;
  int number = 0;
  bool in_fence = false;
  while (std::getline(in, line)) {
    ++number;
    if (line.find("```") != std::string::npos && line.find_first_not_of(' ') == line.find("```")) {
      in_fence = !in_fence;
      continue;
    }
    if (in_fence) continue;
    for (size_t at = line.find("]("); at != std::string::npos; at = line.find("](", at + 2)) {
      size_t end = line.find(')', at + 2);
      if (end == std::string::npos) break;
      targets.emplace_back(number, line.substr(at + 2, end - at - 2));
    }
  }
  return targets;
}

}  // namespace

TEST_CASE("docs/every C++ example is compiled and run") {
  const auto sources = compiled_sources();
  auto found_in = [&](const std::string& code) -> fs::path {
    // Split off the leading #include / using-namespace lines.
    std::vector<std::string> preamble;
    std::istringstream in(code);
    std::string line, body;
    bool in_body = false;
    while (std::getline(in, line)) {
      const bool top = line.rfind("#include", 0) == 0 || line.rfind("using namespace", 0) == 0;
      if (!in_body && top) {
        preamble.push_back(without_whitespace(line));
      } else if (in_body || !without_whitespace(line).empty()) {
        in_body = true;
        body += line + "\n";
      }
    }
    const std::string needle = without_whitespace(body);
    for (const auto& source : sources) {
      const std::string& text = source.second;
      if (text.find(needle) == std::string::npos) continue;
      if (std::all_of(preamble.begin(), preamble.end(),
                      [&](const std::string& p) { return text.find(p) != std::string::npos; }))
        return source.first;
    }
    return {};
  };
  int examples = 0;
  for (const fs::path& md : markdown_files()) {
    for (const CodeBlock& block : code_blocks(md, read_file(md), "cpp")) {
      ++examples;
      INFO(
          fmt::format("{}:{}: this ```cpp block appears in no file under tests/, src/, examples/ or lessons/; "
                      "keep it in step with the test that runs it:\n{}",
                      block.file.filename().string(), block.line, block.code));
      CHECK(!found_in(block.code).empty());
    }
  }
  // The README alone has five (attention on its first screen, a loss, multi-head attention, an op, its
  // gradcheck).
  CHECK(examples >= 10);

  // The check can fail: an example changed by one character is not found.
  CodeBlock first = code_blocks(QKV_SOURCE_DIR "/README.md", read_file(QKV_SOURCE_DIR "/README.md"), "cpp").at(0);
  REQUIRE(!found_in(first.code).empty());
  std::string changed = first.code;
  changed[changed.find("randn")] = 'R';
  CHECK(found_in(changed).empty());
}

TEST_CASE("docs/every relative link leads to a file and a heading that exist") {
  int links = 0;
  for (const fs::path& md : markdown_files()) {
    const std::string text = read_file(md);
    for (const auto& link : link_targets(text)) {
      const int line = link.first;
      const std::string& target = link.second;
      if (target.rfind("http://", 0) == 0 || target.rfind("https://", 0) == 0) continue;
      ++links;
      INFO(fmt::format("{}:{}: link ({})", md.filename().string(), line, target));
      const size_t hash = target.find('#');
      const std::string file_part = target.substr(0, hash);
      const fs::path file = file_part.empty() ? md : md.parent_path() / file_part;
      REQUIRE(fs::exists(file));
      if (hash != std::string::npos) {
        const std::string anchor = target.substr(hash + 1);
        CHECK(anchors_of(read_file(file)).count(anchor) == 1);
      }
    }
  }
  CHECK(links >= 20);
}

TEST_CASE("docs/anchors are GitHub's") {
  // GitHub's rule, worked by hand on headings these pages use.
  CHECK(anchor_of("A first look") == "a-first-look");
  CHECK(anchor_of("Sequence to sequence with Bahdanau attention") == "sequence-to-sequence-with-bahdanau-attention");
  CHECK(anchor_of("Pictures: qkv::viz") == "pictures-qkvviz");
  CHECK(anchor_of("Data: vocabularies, translation pairs, minibatches, BLEU") ==
        "data-vocabularies-translation-pairs-minibatches-bleu");
}
