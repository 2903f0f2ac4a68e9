// Reading a whole UTF-8 text file, for the corpus readers (not public API).
#pragma once
#include <qkv/core/error.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace qkv::data::detail {

// The file's bytes, without a UTF-8 byte-order mark; an Error naming `op`
// and the path if it cannot be read.
inline std::string read_text_file(const std::string& path, const char* op) {
  if (std::filesystem::is_directory(path)) fail("{}: '{}' is a directory, not a text file", op, path);
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("{}: cannot open '{}'", op, path);
  std::stringstream text;
  text << in.rdbuf();
  std::string s = text.str();
  if (s.starts_with("\xEF\xBB\xBF")) s.erase(0, 3);  // a byte-order mark is not text
  return s;
}

// The non-blank lines of a text, each with its number (from 1, as an editor
// counts) for error messages; a trailing '\r' (Windows) is dropped.
struct NumberedLine {
  int64_t number;
  std::string_view line;
};
inline std::vector<NumberedLine> numbered_lines(std::string_view text) {
  std::vector<NumberedLine> lines;
  int64_t number = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t stop = text.find('\n', start);
    if (stop == std::string_view::npos) stop = text.size();
    std::string_view line = text.substr(start, stop - start);
    start = stop + 1;
    ++number;
    if (line.ends_with('\r')) line.remove_suffix(1);
    if (line.find_first_not_of(' ') != std::string_view::npos) lines.push_back({number, line});
  }
  return lines;
}

// Tokens separated by spaces; runs of spaces make no empty tokens.
inline std::vector<std::string> split_spaces(std::string_view s) {
  std::vector<std::string> tokens;
  size_t i = 0;
  while (i < s.size()) {
    if (s[i] == ' ') {
      ++i;
      continue;
    }
    size_t j = s.find(' ', i);
    if (j == std::string_view::npos) j = s.size();
    tokens.emplace_back(s.substr(i, j - i));
    i = j;
  }
  return tokens;
}

// At most the first 60 bytes of a line, to quote it in an error.
inline std::string_view shorten(std::string_view line) { return line.size() <= 60 ? line : line.substr(0, 60); }

}  // namespace qkv::data::detail
