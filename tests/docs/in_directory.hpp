// Running a documented example as written, paths and all: the example's
// relative paths ("data/eng-fra/train.txt", "pictures") are read from the
// folder the guard moves into, and the old working folder is restored after.
#pragma once
#include <filesystem>

namespace qkv::test {

class InDirectory {
 public:
  explicit InDirectory(const std::filesystem::path& dir) : previous_(std::filesystem::current_path()) {
    std::filesystem::current_path(dir);
  }
  ~InDirectory() {
    std::error_code ignored;  // a destructor must not throw; the folder was ours to begin with
    std::filesystem::current_path(previous_, ignored);
  }
  InDirectory(const InDirectory&) = delete;
  InDirectory& operator=(const InDirectory&) = delete;

 private:
  std::filesystem::path previous_;
};

}  // namespace qkv::test
