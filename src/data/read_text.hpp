// Reading a whole UTF-8 text file, for the corpus readers (not public API).
#pragma once
#include <qkv/core/error.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <new>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace qkv::data::detail {

// The length of the well-formed UTF-8 character at text[i], or 0 if the
// bytes there are not one (RFC 3629: no overlong forms, no surrogates
// U+D800–DFFF, nothing above U+10FFFF).
inline size_t utf8_char_length(std::string_view text, size_t i) {
  auto byte = [&](size_t k) { return i + k < text.size() ? static_cast<unsigned char>(text[i + k]) : 0u; };
  auto continuation = [&](size_t k) { return (byte(k) & 0xC0u) == 0x80u; };
  const unsigned c = byte(0);
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return continuation(1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    const unsigned lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;  // no overlong, no surrogate
    return byte(1) >= lo && byte(1) <= hi && continuation(2) ? 3 : 0;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    const unsigned lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;  // no overlong, ≤ U+10FFFF
    return byte(1) >= lo && byte(1) <= hi && continuation(2) && continuation(3) ? 4 : 0;
  }
  return 0;  // a continuation byte, C0/C1 or F5–FF where a character should start
}

// An Error naming `op`, the path, the line and the byte if `text` is not UTF-8:
// the readers split and lowercase UTF-8, and would turn other bytes into tokens
// no one can read back.
inline void check_utf8(std::string_view text, const std::string& path, const char* op) {
  int64_t line = 1, column = 1;
  for (size_t i = 0; i < text.size();) {
    const size_t n = utf8_char_length(text, i);
    if (n == 0)
      fail("{}: '{}': line {}, byte {} of the line: 0x{:02X} is not valid UTF-8", op, path, line, column,
           static_cast<unsigned char>(text[i]));
    if (text[i] == '\n') {
      line += 1;
      column = 1;
    } else {
      column += static_cast<int64_t>(n);
    }
    i += n;
  }
}

// The file's bytes, without a UTF-8 byte-order mark; an Error naming `op`
// and the path if it cannot be read or is not UTF-8.
// NOTE: only a regular file, as load_safetensors: a device such as
// /dev/zero never ends, and reading it whole exhausted the machine's memory.
inline std::string read_text_file(const std::string& path, const char* op) {
  if (std::filesystem::is_directory(path)) fail("{}: '{}' is a directory, not a text file", op, path);
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("{}: cannot open '{}'", op, path);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    fail("{}: '{}': not a regular file (a device, pipe or socket)", op, path);
  std::string s;
  try {
    std::stringstream text;
    text << in.rdbuf();
    s = text.str();
  } catch (const std::bad_alloc&) {
    fail("{}: '{}': the file's {} bytes do not fit in memory", op, path, std::filesystem::file_size(path, ec));
  } catch (const std::length_error&) {
    fail("{}: '{}': the file's {} bytes do not fit in memory", op, path, std::filesystem::file_size(path, ec));
  }
  if (s.starts_with("\xEF\xBB\xBF")) s.erase(0, 3);  // a byte-order mark is not text
  check_utf8(s, path, op);
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

// At most the first 60 bytes of a line, to quote it in an error, cut before
// a UTF-8 continuation byte (10xxxxxx) so no character is split in half.
inline std::string_view shorten(std::string_view line) {
  if (line.size() <= 60) return line;
  size_t cut = 60;
  while (cut > 0 && (static_cast<unsigned char>(line[cut]) & 0xC0u) == 0x80u) --cut;
  return line.substr(0, cut);
}

}  // namespace qkv::data::detail
