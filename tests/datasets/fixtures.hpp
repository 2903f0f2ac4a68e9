// Helpers for the qkv::data tests: where the fixture files are, temporary
// files for malformed input, and strings stored as UTF-8 bytes in
// tests/reference/data_d2l.txt (written by tools/reference/data_d2l.py).
#pragma once
#include <qkv/qkv.hpp>

#include <filesystem>
#include <fstream>
#include <string>

namespace qkv::test {

inline std::string fixture(const std::string& name) { return std::string(QKV_REFERENCE_DIR) + "/fixtures/" + name; }

// A file with `content` in the temp directory; `name` must be unique to the
// test (ctest may run tests at the same time).
inline std::string temp_file(const std::string& name, const std::string& content) {
  auto path = std::filesystem::temp_directory_path() / ("qkv_test_" + name);
  std::ofstream(path, std::ios::binary) << content;
  return path.string();
}

inline std::string utf8_bytes(const IntTensor& bytes) {
  std::string s;
  for (int64_t b : bytes.to_vector()) s += static_cast<char>(b);
  return s;
}

}  // namespace qkv::test
