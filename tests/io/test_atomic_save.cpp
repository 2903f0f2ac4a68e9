// io::save_safetensors writes through a fresh temporary file renamed into
// place: nothing already on the disk is written through (a symlink or a
// stranger's file at a temporary's name), two processes saving to one path
// never mix their bytes, a reader sees a whole old or new file, and a save
// that cannot finish (a read-only folder, a full disk, a file size limit)
// says why, or is ended by SIGXFSZ, and leaves the old file and no temporary.
// What a save does with what is at the path itself: test_save_targets.cpp.
#include <doctest/doctest.h>

#include <qkv/io/safetensors.hpp>
#include <qkv/qkv.hpp>

#include <sys/resource.h>
#include <sys/stat.h>
#include <csignal>
#include <filesystem>

#include "io_test_util.hpp"

using namespace qkv;

namespace {

// Two tensors whose every element is `value`: a file mixed from two saves
// would hold two values.
StateDict filled(float value) { return {{"a", full({300}, value)}, {"b", full({5, 40}, value)}}; }

// The one value every element of the file at `path` holds, or NaN if they differ.
float file_value(const std::filesystem::path& path) {
  StateDict state = io::load_safetensors(path);
  if (state.size() != 2 || state.at("a").numel() != 300 || state.at("b").numel() != 200) return NAN;
  const float v = state.at("a").data()[0];
  for (const auto& [name, t] : state)
    for (float x : t.to_vector())
      if (x != v) return NAN;
  return v;
}

// The temporary file names the save would try first (safetensors.hpp).
std::filesystem::path temporary_name(const std::filesystem::path& path, int k) {
  return path.string() + "." + std::to_string(getpid()) + "-" + std::to_string(k) + ".tmp";
}

}  // namespace

TEST_CASE("io/safetensors: saving never writes through an existing file or symlink") {
  test::TempDir dir("atomic_save_names");
  auto path = dir / "w.safetensors";
  auto victim = dir / "victim.txt";
  test::write_bytes(victim, "a user's file");

  SUBCASE("a symlink at the first temporary name, a file at the second") {
    std::filesystem::create_symlink(victim, temporary_name(path, 0));
    test::write_bytes(temporary_name(path, 1), "another file");
    io::save_safetensors(path, filled(1.0f));
    CHECK(file_value(path) == 1.0f);
    CHECK(test::read_bytes(victim) == "a user's file");
    CHECK(std::filesystem::read_symlink(temporary_name(path, 0)) == victim);
    CHECK(test::read_bytes(temporary_name(path, 1)) == "another file");
    // The save used the third name, and left nothing behind.
    CHECK(test::list_dir(dir.path) == std::vector<std::string>{"victim.txt", "w.safetensors",
                                                               temporary_name(path, 0).filename().string(),
                                                               temporary_name(path, 1).filename().string()});
  }
  SUBCASE("an existing '<path>.tmp', file or symlink, is left alone") {
    test::write_bytes(path.string() + ".tmp", "not a temporary of qkv's");
    io::save_safetensors(path, filled(2.0f));
    CHECK(test::read_bytes(path.string() + ".tmp") == "not a temporary of qkv's");
    std::filesystem::remove(path.string() + ".tmp");
    std::filesystem::create_symlink(victim, path.string() + ".tmp");
    io::save_safetensors(path, filled(3.0f));
    CHECK(file_value(path) == 3.0f);
    CHECK(test::read_bytes(victim) == "a user's file");
  }
  SUBCASE("the file gets a normal file's permissions (0666 less the umask)") {
    const mode_t mask = umask(0022);
    io::save_safetensors(path, filled(1.0f));
    umask(mask);
    CHECK((std::filesystem::status(path).permissions() & std::filesystem::perms::all) ==
          (std::filesystem::perms::owner_read | std::filesystem::perms::owner_write |
           std::filesystem::perms::group_read | std::filesystem::perms::others_read));
  }
}

TEST_CASE("io/safetensors: a folder that may be written but not read: the save succeeds") {
  // Syncing the folder needs it open for reading; without that the save is
  // still whole and in place, so it is no error (src/core/atomic_file.cpp).
  test::TempDir dir("atomic_save_write_only");
  auto path = dir / "w.safetensors";
  io::save_safetensors(path, filled(1.0f));
  if (geteuid() == 0) REQUIRE(::chown(path.c_str(), 65534, 65534) == 0);  // the child's, so it may replace it
  using std::filesystem::perms;
  std::filesystem::permissions(dir.path, perms::owner_all | perms::others_write | perms::others_exec);
  test::ChildResult child = test::run_in_child([&](std::string& out) {
    if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) {
      out = "cannot give up root";
      return 2;
    }
    if (geteuid() != 0 && ::access(dir.path.c_str(), R_OK) == 0) {
      out = "the folder is readable to this user";
      return 0;  // the owner, not "others": nothing to test
    }
    io::save_safetensors(path, filled(2.0f));
    return 0;
  });
  std::filesystem::permissions(dir.path, perms::owner_all);
  CAPTURE(child.output);
  CHECK(child.exit_code == 0);
  CHECK(file_value(path) == (child.output.empty() ? 2.0f : 1.0f));
}

TEST_CASE("io/safetensors: two processes saving to one path while a third reads") {
  test::TempDir dir("atomic_save_concurrent");
  auto path = dir / "shared.safetensors";
  io::save_safetensors(path, filled(0.0f));
  constexpr int kSaves = 60;

  // Writer w saves the values w·1000 + 1, …, w·1000 + kSaves; it exits 0 if every save succeeded.
  auto start_writer = [&](int w) {
    pid_t pid = fork();
    if (pid == 0) {
      int code = 0;
      try {
        for (int i = 1; i <= kSaves; ++i) io::save_safetensors(path, filled(static_cast<float>(w * 1000 + i)));
      } catch (...) {
        code = 1;
      }
      _exit(code);
    }
    return pid;
  };
  pid_t writers[2] = {start_writer(1), start_writer(2)};
  REQUIRE(writers[0] > 0);
  REQUIRE(writers[1] > 0);

  // Read until both writers are done: every read is a whole file that one save wrote.
  int reads = 0, bad_reads = 0, running = 2;
  int status[2] = {-1, -1};
  std::string first_bad;
  while (running > 0) {
    try {
      float v = file_value(path);
      const int w = static_cast<int>(v) / 1000, i = static_cast<int>(v) % 1000;
      if (!(v == 0.0f || ((w == 1 || w == 2) && i >= 1 && i <= kSaves))) throw Error(fmt::format("value {}", v));
    } catch (const Error& e) {
      if (bad_reads++ == 0) first_bad = e.what();
    }
    ++reads;
    for (int k = 0; k < 2; ++k)
      if (status[k] == -1 && waitpid(writers[k], &status[k], WNOHANG) == writers[k]) --running;
  }
  CAPTURE(first_bad);
  CHECK(bad_reads == 0);
  CHECK(reads > 0);
  for (int k = 0; k < 2; ++k) {
    CHECK(WIFEXITED(status[k]));
    CHECK(WEXITSTATUS(status[k]) == 0);  // no save failed
  }
  // The file is one writer's last save, and no temporary is left.
  const float last = file_value(path);
  CHECK((last == 1000.0f + kSaves || last == 2000.0f + kSaves));
  CHECK(test::list_dir(dir.path) == std::vector<std::string>{"shared.safetensors"});
}

TEST_CASE("io/safetensors: a save that cannot finish says why and leaves the old file") {
  test::TempDir dir("atomic_save_fails");
  auto path = dir / "w.safetensors";
  io::save_safetensors(path, filled(7.0f));
  const std::string before = test::read_bytes(path);

  SUBCASE("a read-only folder") {
    if (geteuid() == 0)
      REQUIRE(::chown(path.c_str(), 65534, 65534) == 0);  // the file the child's: only the folder says no
    std::filesystem::permissions(dir.path, std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec |
                                               std::filesystem::perms::group_read | std::filesystem::perms::group_exec |
                                               std::filesystem::perms::others_read |
                                               std::filesystem::perms::others_exec);
    // NOTE: root writes into a read-only folder anyway, so the child gives
    // root up (becomes "nobody") before it tries.
    test::ChildResult child = test::run_in_child([&](std::string& out) {
      if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) {
        out = "cannot give up root";
        return 2;
      }
      try {
        io::save_safetensors(path, filled(8.0f));
      } catch (const Error& e) {
        out = e.what();
        return 0;
      }
      out = "the save succeeded";
      return 3;
    });
    std::filesystem::permissions(dir.path, std::filesystem::perms::owner_all);
    CHECK(child.exit_code == 0);
    // The temporary's name holds the child's pid: check around it.
    CHECK(child.output.find(fmt::format("save_safetensors: '{}': cannot create a temporary file beside it ('{}.",
                                        path.string(), path.string())) == 0);
    CHECK(child.output.find(".tmp'): Permission denied") != std::string::npos);
  }
  SUBCASE("a full disk: the file size limit (RLIMIT_FSIZE) below the new file's size") {
    test::ChildResult child = test::run_in_child([&](std::string& out) {
      std::signal(SIGXFSZ, SIG_IGN);  // write() then fails with EFBIG instead of killing the process
      rlimit limit{4096, 4096};
      if (setrlimit(RLIMIT_FSIZE, &limit) != 0) {
        out = "setrlimit failed";
        return 2;
      }
      try {
        io::save_safetensors(path, {{"big", zeros({10000})}});
      } catch (const Error& e) {
        out = e.what();
        return 0;
      }
      out = "the save succeeded";
      return 3;
    });
    CHECK(child.exit_code == 0);
    CHECK(child.output.find(fmt::format("save_safetensors: '{}': writing '{}.", path.string(), path.string())) == 0);
    CHECK(child.output.find(".tmp' failed: File too large") != std::string::npos);
  }
  SUBCASE("the file size limit with SIGXFSZ as it comes (it ends the process): the temporary is removed first") {
    test::ChildResult child = test::run_in_child([&](std::string& out) {
      std::signal(SIGXFSZ, SIG_DFL);
      rlimit no_core{0, 0}, limit{4096, 4096};
      if (setrlimit(RLIMIT_CORE, &no_core) != 0 || setrlimit(RLIMIT_FSIZE, &limit) != 0) {
        out = "setrlimit failed";
        return 2;
      }
      io::save_safetensors(path, {{"big", zeros({10000})}});
      out = "the save returned";
      return 3;
    });
    CAPTURE(child.output);
    CHECK(child.signal == SIGXFSZ);  // the process asked for the default: the signal still ends it
  }
  CHECK(test::read_bytes(path) == before);
  CHECK(test::list_dir(dir.path) == std::vector<std::string>{"w.safetensors"});
}
