// ./qkv.sh on other systems: it names the system from uname and
// /etc/os-release, says what qkv needs there and how to install it, and on
// a system it does not know stops with a message that points to
// docs/building.md. QKV_UNAME and QKV_OS_RELEASE play the other systems.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace {

struct Run {
  int status;
  std::string output;  // stdout and stderr
};

// bash qkv.sh <args> with `env` set, run from a folder with no build in it.
Run qkv_sh(const std::string& env, const std::string& args) {
  const std::string command = fmt::format("cd /tmp && {} bash '{}/qkv.sh' {} 2>&1", env, QKV_SOURCE_DIR, args);
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string output;
  char chunk[4096];
  for (size_t n; (n = fread(chunk, 1, sizeof chunk, pipe)) > 0;) output.append(chunk, n);
  const int raw = pclose(pipe);
  return {WIFEXITED(raw) ? WEXITSTATUS(raw) : 128, output};
}

// An os-release file of the given lines, in the temporary folder.
std::string os_release(const std::string& name, const std::string& lines) {
  const std::filesystem::path file = std::filesystem::temp_directory_path() / ("qkv_os_release_" + name);
  std::ofstream(file) << lines;
  return file.string();
}

}  // namespace

TEST_CASE("qkv.sh/deps names the system and its install command") {
  struct System {
    std::string env, name, install;
  };
  const System systems[] = {
      {"QKV_UNAME=Linux QKV_OS_RELEASE=" + os_release("debian", "ID=debian\n"), "debian",
       "sudo apt-get install g++ cmake make libfmt-dev doctest-dev libxsimd-dev"},
      {"QKV_UNAME=Linux QKV_OS_RELEASE=" + os_release("ubuntu", "ID=ubuntu\nID_LIKE=debian\n"), "debian",
       "sudo apt-get install g++"},
      {"QKV_UNAME=Darwin", "macos", "brew install cmake fmt xsimd nlohmann-json cli11 doctest pugixml"},
      {"QKV_UNAME=Linux QKV_OS_RELEASE=" + os_release("fedora", "NAME=Fedora\nID=fedora\n"), "fedora",
       "sudo dnf install gcc-c++ cmake make fmt-devel xsimd-devel json-devel"},
      {"QKV_UNAME=Linux QKV_OS_RELEASE=" + os_release("arch", "ID=arch\n"), "arch",
       "sudo pacman -S --needed gcc cmake make fmt xsimd"},
  };
  for (const System& s : systems) {
    INFO(s.env);
    const Run r = qkv_sh(s.env, "deps");
    INFO(r.output);
    CHECK(r.status == 0);
    CHECK(r.output.find("this system: " + s.name + "\n") != std::string::npos);
    CHECK(r.output.find("install with: " + s.install) != std::string::npos);
  }
}

TEST_CASE("qkv.sh/a system it does not know stops before building, pointing to the manual build") {
  const std::string alpine = "QKV_UNAME=Linux QKV_OS_RELEASE=" + os_release("alpine", "ID=alpine\n");
  const Run deps = qkv_sh(alpine, "deps");
  INFO(deps.output);
  CHECK(deps.output.find("this system: unknown") != std::string::npos);
  CHECK(deps.output.find("docs/building.md") != std::string::npos);
  // test would install, then build: it stops at the first step.
  const Run test = qkv_sh(alpine, "test");
  INFO(test.output);
  CHECK(test.status == 1);
  CHECK(test.output.find("unknown system") != std::string::npos);
  CHECK(test.output.find("QKV_NO_INSTALL=1") != std::string::npos);
  CHECK(test.output.find("docs/building.md") != std::string::npos);
}

TEST_CASE("qkv.sh/on macOS it names what is missing and the brew command, and stops") {
  // No Homebrew here, so every package is missing.
  const Run r = qkv_sh("QKV_UNAME=Darwin PATH=/usr/bin:/bin", "lessons");
  INFO(r.output);
  CHECK(r.status == 1);
  CHECK(r.output.find("missing on this system (macos)") != std::string::npos);
  CHECK(r.output.find("install them with: brew install") != std::string::npos);
  CHECK(r.output.find("apt-get") == std::string::npos);
}
