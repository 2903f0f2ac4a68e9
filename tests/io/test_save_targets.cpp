// What a save does with what is already at its path (src/core/atomic_file.hpp,
// docs/checkpoints.md): a regular file is replaced keeping its mode and owner,
// a symbolic link is followed to its target, a device, FIFO, socket or folder
// is refused and left as it was, other hard links keep the old content whole,
// a read-only file is kept. And any name that fits the file system fits its
// temporary: NAME_MAX and PATH_MAX.
#include <doctest/doctest.h>

#include <qkv/io/safetensors.hpp>
#include <qkv/qkv.hpp>

#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>  // makedev
#include <sys/un.h>
#include <climits>
#include <csignal>
#include <cstring>
#include <filesystem>

#include "io_test_util.hpp"

using namespace qkv;
namespace fs = std::filesystem;

namespace {

StateDict filled(float value) { return {{"w", full({4, 5}, value)}}; }

// The value every element of the file holds (the tests write constant tensors).
float value_in(const fs::path& path) { return io::load_safetensors(path).at("w").data()[0]; }

struct stat stat_of(const fs::path& path) {
  struct stat st {};
  REQUIRE(::lstat(path.c_str(), &st) == 0);
  return st;
}

// The save's error message, or "" if it succeeded.
std::string save_error(const fs::path& path, float value) {
  try {
    io::save_safetensors(path, filled(value));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

constexpr uid_t kNobody = 65534;  // Debian's "nobody" and "nogroup"

}  // namespace

TEST_CASE("io/save: a replaced file keeps its permission bits and owner; a new one follows the umask") {
  test::TempDir dir("save_mode");
  auto path = dir / "w.safetensors";
  SUBCASE("a new file: 0666 less the umask") {
    const mode_t mask = umask(0077);
    io::save_safetensors(path, filled(1));
    umask(mask);
    CHECK((stat_of(path).st_mode & 07777) == 0600);
  }
  SUBCASE("0600 stays 0600, 0640 stays 0640, whatever the umask") {
    for (mode_t mode : {mode_t{0600}, mode_t{0640}, mode_t{0604}}) {
      CAPTURE(mode);
      io::save_safetensors(path, filled(1));
      REQUIRE(::chmod(path.c_str(), mode) == 0);
      const mode_t mask = umask(0022);
      io::save_safetensors(path, filled(2));
      umask(mask);
      CHECK((stat_of(path).st_mode & 07777) == mode);
      CHECK(value_in(path) == 2);
    }
  }
  SUBCASE("the owner and group, where the system permits (root)") {
    io::save_safetensors(path, filled(1));
    if (::geteuid() != 0) {
      MESSAGE("not root: a file cannot be given to another owner, so only the mode is tested");
      return;
    }
    REQUIRE(::chown(path.c_str(), kNobody, kNobody) == 0);
    REQUIRE(::chmod(path.c_str(), 0640) == 0);
    io::save_safetensors(path, filled(2));
    const struct stat st = stat_of(path);
    CHECK(st.st_uid == kNobody);
    CHECK(st.st_gid == kNobody);
    CHECK((st.st_mode & 07777) == 0640);
    CHECK(value_in(path) == 2);
  }
  CHECK(test::list_dir(dir.path) == std::vector<std::string>{"w.safetensors"});
}

TEST_CASE("io/save: a file this user may not write is refused and kept") {
  test::TempDir dir("save_read_only");
  auto path = dir / "w.safetensors";
  io::save_safetensors(path, filled(1));
  REQUIRE(::chmod(path.c_str(), 0444) == 0);
  REQUIRE(::chmod(dir.path.c_str(), 0777) == 0);  // the folder stays writable: only the file says no
  // Root may write any file, so the child becomes "nobody", who owns the file.
  if (::geteuid() == 0) REQUIRE(::chown(path.c_str(), kNobody, kNobody) == 0);
  test::ChildResult child = test::run_in_child([&](std::string& out) {
    if (::geteuid() == 0 && (setgid(kNobody) != 0 || setuid(kNobody) != 0)) {
      out = "cannot give up root";
      return 2;
    }
    out = save_error(path, 2);
    return 0;
  });
  CHECK(child.exit_code == 0);
  CHECK(child.output == fmt::format("save_safetensors: '{}': '{}' is read-only to this user (mode 0444): not replaced",
                                    path.string(), path.string()));
  CHECK(value_in(path) == 1);
  CHECK(test::list_dir(dir.path) == std::vector<std::string>{"w.safetensors"});
}

TEST_CASE("io/save: a device, a FIFO, a socket or a folder at the path is refused and left as it is") {
  test::TempDir dir("save_kinds");
  SUBCASE("a character device") {
    // As root, a save used to turn a device node (and so /dev/null) into a
    // regular file: make one here rather than risk the real one.
    fs::path device = "/dev/null";
    if (::geteuid() == 0) {
      device = dir / "null";
      REQUIRE(::mknod(device.c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0);
    }
    CHECK(save_error(device, 1) == fmt::format("save_safetensors: '{}': '{}' is a character device, not a regular "
                                               "file: nothing was written",
                                               device.string(), device.string()));
    CHECK(S_ISCHR(stat_of(device).st_mode));
  }
  SUBCASE("a FIFO: a reader waiting on it must not be left with a file it never sees") {
    auto fifo = dir / "pipe";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    CHECK(save_error(fifo, 1).find(fmt::format("'{}' is a FIFO (named pipe), not a regular file", fifo.string())) !=
          std::string::npos);
    CHECK(S_ISFIFO(stat_of(fifo).st_mode));
  }
  SUBCASE("a socket") {
    auto socket_path = dir / "socket";
    int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    REQUIRE(fd >= 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    REQUIRE(socket_path.string().size() < sizeof address.sun_path);
    std::strcpy(address.sun_path, socket_path.c_str());
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    CHECK(save_error(socket_path, 1).find("is a socket, not a regular file") != std::string::npos);
    CHECK(S_ISSOCK(stat_of(socket_path).st_mode));
    ::close(fd);
  }
  SUBCASE("a folder") {
    fs::create_directories(dir / "folder");
    CHECK(save_error(dir / "folder", 1).find("is a folder, not a regular file") != std::string::npos);
    CHECK(fs::is_directory(dir / "folder"));
  }
  // No temporary was made for any of them.
  for (const std::string& name : test::list_dir(dir.path)) CHECK(name.find(".tmp") == std::string::npos);
}

TEST_CASE("io/save: a symbolic link is followed: its target is replaced, the link stays") {
  test::TempDir dir("save_links");
  auto target = dir / "real.safetensors", link = dir / "link.safetensors";
  SUBCASE("to a file: the file gets the new content and keeps its mode") {
    io::save_safetensors(target, filled(1));
    REQUIRE(::chmod(target.c_str(), 0640) == 0);
    fs::create_symlink(target, link);
    io::save_safetensors(link, filled(2));
    CHECK(fs::is_symlink(link));
    CHECK(fs::read_symlink(link) == target);
    CHECK(value_in(target) == 2);
    CHECK((stat_of(target).st_mode & 07777) == 0640);
  }
  SUBCASE("a dangling link: its target is created") {
    fs::create_symlink(target, link);
    io::save_safetensors(link, filled(3));
    CHECK(fs::is_symlink(link));
    CHECK(value_in(target) == 3);
  }
  SUBCASE("a relative link into another folder, through a second link") {
    fs::create_directories(dir / "a");
    fs::create_directories(dir / "b");
    io::save_safetensors(dir / "b/real.safetensors", filled(1));
    fs::create_symlink("../b/real.safetensors", dir / "a/middle");
    fs::create_symlink("middle", dir / "a/link");
    io::save_safetensors(dir / "a/link", filled(4));
    CHECK(value_in(dir / "b/real.safetensors") == 4);
    CHECK(test::list_dir(dir / "a") == std::vector<std::string>{"link", "middle"});
    CHECK(test::list_dir(dir / "b") == std::vector<std::string>{"real.safetensors"});  // the temporary went here
  }
  SUBCASE("a loop of links is refused") {
    fs::create_symlink("two", dir / "one");
    fs::create_symlink("one", dir / "two");
    CHECK(save_error(dir / "one", 1).find("more than 40 symbolic links in a row") != std::string::npos);
    CHECK(fs::is_symlink(dir / "one"));
  }
  SUBCASE("a link to a device is refused: the device is what is at the path") {
    fs::path device = "/dev/null";
    if (::geteuid() == 0) {
      device = dir / "null";
      REQUIRE(::mknod(device.c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0);
    }
    fs::create_symlink(device, link);
    CHECK(save_error(link, 1).find(fmt::format("'{}' is a character device", device.string())) != std::string::npos);
    CHECK(S_ISCHR(stat_of(device).st_mode));
  }
  SUBCASE("a link another user planted in a shared sticky folder (/tmp) is not followed") {
    if (::geteuid() != 0) {
      MESSAGE("not root: a link owned by another user cannot be made, so this rule is not tested");
      return;
    }
    auto shared = dir / "shared";
    fs::create_directories(shared);
    REQUIRE(::chmod(shared.c_str(), 01777) == 0);
    io::save_safetensors(target, filled(1));
    fs::create_symlink(target, shared / "w.safetensors");
    REQUIRE(::lchown((shared / "w.safetensors").c_str(), kNobody, kNobody) == 0);
    const std::string refused = save_error(shared / "w.safetensors", 5);
    CHECK(refused.find("is a symbolic link owned by another user (uid 65534) in the shared folder") !=
          std::string::npos);
    CHECK(value_in(target) == 1);
    // The folder's owner's own links, and our own, are followed as usual.
    REQUIRE(::lchown((shared / "w.safetensors").c_str(), 0, 0) == 0);
    io::save_safetensors(shared / "w.safetensors", filled(6));
    CHECK(value_in(target) == 6);
  }
}

TEST_CASE("io/save: other hard links to a replaced file keep its old content, whole") {
  test::TempDir dir("save_hard_links");
  auto path = dir / "w.safetensors", other = dir / "other_name.safetensors";
  io::save_safetensors(path, filled(1));
  fs::create_hard_link(path, other);
  const std::string old_bytes = test::read_bytes(other);
  io::save_safetensors(path, filled(2));
  CHECK(value_in(path) == 2);
  CHECK(test::read_bytes(other) == old_bytes);
  CHECK(stat_of(path).st_ino != stat_of(other).st_ino);
  CHECK(stat_of(other).st_nlink == 1);
}

TEST_CASE("io/save: any name that fits the file system fits its temporary (NAME_MAX, PATH_MAX)") {
  test::TempDir dir("save_long_names");
  SUBCASE("names of 250 and 255 bytes") {
    for (size_t length : {size_t{250}, size_t{NAME_MAX}}) {
      CAPTURE(length);
      auto path = dir / std::string(length, 'n');
      io::save_safetensors(path, filled(static_cast<float>(length)));
      CHECK(value_in(path) == static_cast<float>(length));
    }
    CHECK(test::list_dir(dir.path) == std::vector<std::string>{std::string(250, 'n'), std::string(NAME_MAX, 'n')});
  }
  SUBCASE("a 255-byte name of two-byte characters: the temporary is cut between characters") {
    // The temporary's name is seen in the message of a save that fails: here,
    // past a file size limit of 16 bytes.
    std::string name;
    while (name.size() + 2 <= NAME_MAX) name += "é";
    name += "x";  // 255 bytes
    auto path = dir / name;
    test::ChildResult child = test::run_in_child([&](std::string& out) {
      std::signal(SIGXFSZ, SIG_IGN);
      rlimit limit{16, 16};
      if (setrlimit(RLIMIT_FSIZE, &limit) != 0) return 2;
      out = save_error(path, 1);
      return 0;
    });
    REQUIRE(child.exit_code == 0);
    const std::string lead = "writing '" + dir.path.string() + "/";
    const size_t begin = child.output.find(lead);
    REQUIRE(begin != std::string::npos);
    const size_t end = child.output.find("' failed", begin);
    REQUIRE(end != std::string::npos);
    const std::string tmp = child.output.substr(begin + lead.size(), end - begin - lead.size());
    CAPTURE(tmp);
    CHECK(tmp.size() <= NAME_MAX);
    CHECK(tmp.ends_with(".tmp"));
    CHECK(tmp.find("ééé") == 0);
    const size_t dot = tmp.find('.');
    REQUIRE(dot != std::string::npos);
    CHECK(dot % 2 == 0);  // whole two-byte characters before the suffix
    CHECK(test::list_dir(dir.path).empty());
  }
  SUBCASE("a path of PATH_MAX - 1 bytes") {
    // Folders of 200 bytes, then one that brings the whole path to 4095 bytes with the file's name.
    const std::string file = "w.safetensors";
    fs::path folder = dir.path;
    while (folder.string().size() + 1 + 200 + 1 + file.size() < PATH_MAX - 1) folder /= std::string(200, 'd');
    const size_t last = PATH_MAX - 1 - folder.string().size() - 2 - file.size();
    folder /= std::string(last, 'e');
    fs::path path = folder / file;
    REQUIRE(path.string().size() == PATH_MAX - 1);
    fs::create_directories(folder);
    io::save_safetensors(path, filled(7));
    CHECK(value_in(path) == 7);
    CHECK(test::list_dir(folder) == std::vector<std::string>{file});
  }
}
