// Helpers for the io tests: a scratch directory, files as bytes, and a
// function run in a child process.
#pragma once
#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

namespace qkv::test {

// A fresh directory under the system's temporary one, removed with everything in it.
struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& name)
      : path(std::filesystem::temp_directory_path() / ("qkv_" + name + "_" + std::to_string(getpid()))) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::filesystem::path operator/(const std::string& file) const { return path / file; }
};

inline std::string read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void write_bytes(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// The 8 little-endian bytes of n.
inline std::string le64(uint64_t n) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[static_cast<size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
  return s;
}

// A safetensors file from its parts: the header's length, the header, the data.
inline std::string safetensors_bytes(const std::string& header, const std::string& data) {
  return le64(header.size()) + header + data;
}

// n float32 zeros, as bytes.
inline std::string zero_floats(size_t n) { return std::string(4 * n, '\0'); }

// What a child process said and how it ended.
struct ChildResult {
  int exit_code = -1;  // -1 unless it exited normally
  int signal = 0;      // the signal that ended it, if one did
  std::string output;  // what it wrote to `out`
};

// Run `body(out)` in a forked child and wait for it. The child exits with
// body's return value (1 if it throws, with the message in `output`); it
// leaves through _exit, so nothing of the parent's (doctest, atexit) runs twice.
inline ChildResult run_in_child(const std::function<int(std::string& out)>& body) {
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) return {};
  pid_t pid = fork();
  if (pid == 0) {
    close(pipe_fds[0]);
    std::string out;
    int code = 1;
    try {
      code = body(out);
    } catch (const std::exception& e) {
      out += e.what();
    }
    for (size_t at = 0; at < out.size();) {
      ssize_t n = write(pipe_fds[1], out.data() + at, out.size() - at);
      if (n <= 0) break;
      at += static_cast<size_t>(n);
    }
    _exit(code);
  }
  close(pipe_fds[1]);
  ChildResult result;
  char buffer[4096];
  for (ssize_t n; (n = read(pipe_fds[0], buffer, sizeof buffer)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    result.output.append(buffer, static_cast<size_t>(n));
  }
  close(pipe_fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  return result;
}

// The names in `dir`, sorted.
inline std::vector<std::string> list_dir(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace qkv::test
