// Writing a file so that it is never seen half-written: a fresh temporary
// beside it, synced, then renamed over it (atomic_file.hpp says what happens
// to each kind of thing found at the path).
#include "core/atomic_file.hpp"

#include <qkv/core/error.hpp>

#include <fmt/format.h>

#include <fcntl.h>  // open, openat
#include <sys/stat.h>
#include <unistd.h>  // write, fsync, fchown, getpid
#include <cerrno>
#include <climits>  // NAME_MAX
#include <csignal>  // pthread_sigmask, sigset_t
#include <cstring>

namespace qkv::core::detail {

namespace {

namespace fs = std::filesystem;

std::string reason(int error) { return std::strerror(error); }

// A file descriptor, closed when it goes.
struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// What a thing that is not a regular file is, for an error message.
const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// --- what is at the path ---------------------------------------------------------

// The file a save writes: the path itself, or the end of its chain of
// symbolic links; and, when it exists, what it is.
struct Target {
  fs::path path;
  bool exists = false;
  struct stat st {};
};

constexpr int kMaxLinks = 40;  // the kernel's limit on symbolic links followed in one lookup

Target resolve(const fs::path& path, const std::string& where) {
  fs::path p = path;
  for (int links = 0; links <= kMaxLinks; ++links) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0) {
      // Nothing there: a new file (a missing folder is reported when it is opened).
      if (errno == ENOENT) return {p, false, {}};
      fail("{}: cannot look at '{}': {}", where, p.string(), reason(errno));
    }
    if (S_ISREG(st.st_mode)) return {p, true, st};
    // NOTE: rename() would replace a device or a FIFO with a regular file (as
    // root, even /dev/null), and a reader waiting on a FIFO would never get
    // the bytes: a save writes only regular files, as sed -i does.
    if (!S_ISLNK(st.st_mode))
      fail("{}: '{}' is {}, not a regular file: nothing was written", where, p.string(), kind_of(st.st_mode));
    // A link planted in /tmp by another user must not steer our save onto
    // one of our own files: Linux's fs.protected_symlinks rule.
    const fs::path folder = p.has_parent_path() ? p.parent_path() : fs::path(".");
    struct stat dir {};
    if (::stat(folder.c_str(), &dir) == 0 && (dir.st_mode & S_ISVTX) != 0 && (dir.st_mode & S_IWOTH) != 0 &&
        st.st_uid != ::geteuid() && st.st_uid != dir.st_uid)
      fail(
          "{}: '{}' is a symbolic link owned by another user (uid {}) in the shared folder '{}': not followed "
          "(the rule of fs.protected_symlinks)",
          where, p.string(), st.st_uid, folder.string());
    std::error_code ec;
    const fs::path to = fs::read_symlink(p, ec);
    if (ec) fail("{}: cannot read the symbolic link '{}': {}", where, p.string(), ec.message());
    p = to.is_absolute() ? to : p.parent_path() / to;  // a relative link is relative to its own folder
  }
  fail("{}: more than {} symbolic links in a row from '{}' (a loop?)", where, kMaxLinks, path.string());
}

// --- the temporary -----------------------------------------------------------------

// `name` cut to at most `room` bytes, never inside a UTF-8 character.
std::string cut(const std::string& name, size_t room) {
  if (name.size() <= room) return name;
  size_t n = room;
  while (n > 0 && (static_cast<unsigned char>(name[n]) & 0xC0) == 0x80) --n;  // name[n] continues a character
  return name.substr(0, n);
}

// A fresh file in the folder `dir`: "<name>.<pid>-<k>.tmp" for the first
// k = 0, 1, 2, … whose name is free, <name> cut so that the whole fits the
// folder's NAME_MAX. Created relative to `dir`, so the length of the
// folder's path does not count against PATH_MAX twice.
// NOTE: O_CREAT | O_EXCL creates the file or fails with EEXIST; it never opens
// what is already there, and never follows a symbolic link (POSIX), so a
// symlink or a stranger's file at that name is passed over, not written
// through. The pid keeps two processes saving to one path apart; two threads
// of one process meet at k = 0 and O_EXCL sends one on to k = 1.
struct Temporary {
  int fd = -1;
  std::string name;  // in the folder
};

Temporary create_temporary(int dir, const std::string& name, mode_t mode, const fs::path& folder,
                           const std::string& where) {
  long name_max = ::fpathconf(dir, _PC_NAME_MAX);
  if (name_max <= 0) name_max = NAME_MAX;
  constexpr int kTries = 100;
  std::string tmp;
  for (int k = 0; k < kTries; ++k) {
    const std::string suffix = fmt::format(".{}-{}.tmp", ::getpid(), k);
    const size_t room =
        static_cast<size_t>(name_max) > suffix.size() ? static_cast<size_t>(name_max) - suffix.size() : 0;
    tmp = cut(name, room) + suffix;
    int fd = ::openat(dir, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd >= 0) return {fd, tmp};
    if (errno == EINTR) {
      --k;
      continue;
    }
    if (errno != EEXIST)
      fail("{}: cannot create a temporary file beside it ('{}'): {}", where, (folder / tmp).string(), reason(errno));
  }
  fail("{}: cannot create a temporary file beside it: {} names up to '{}' are all taken", where, kTries,
       (folder / tmp).string());
}

// All of `size` bytes, or false with errno set (a short write of a full disk
// comes back as ENOSPC or EFBIG on the next call).
bool write_all(int fd, const void* bytes, size_t size) {
  const char* at = static_cast<const char*>(bytes);
  while (size > 0) {
    ssize_t n = ::write(fd, at, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    at += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// SIGXFSZ held back in this thread while it lives. A write past RLIMIT_FSIZE
// then fails with EFBIG instead of ending the process on the spot, so the
// temporary can be removed; when the hold ends, a SIGXFSZ still pending is
// delivered and does what the process asked of it (by default, end it).
class HoldFileSizeSignal {
 public:
  HoldFileSizeSignal() {
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGXFSZ);
    pthread_sigmask(SIG_BLOCK, &signals, &old_);
  }
  ~HoldFileSizeSignal() { pthread_sigmask(SIG_SETMASK, &old_, nullptr); }
  HoldFileSizeSignal(const HoldFileSizeSignal&) = delete;
  HoldFileSizeSignal& operator=(const HoldFileSizeSignal&) = delete;

 private:
  sigset_t old_{};
};

}  // namespace

void write_file_atomically(const fs::path& path, const std::vector<std::string_view>& parts, const std::string& where) {
  // "" or "folder/" would put the temporary in the wrong folder, or rename it onto a folder.
  if (path.empty() || !path.has_filename()) fail("{}: not a file name", where);
  const Target target = resolve(path, where);
  const fs::path folder = target.path.parent_path();  // empty for a name in the working folder
  const std::string name = target.path.filename().string();
  // The temporary goes beside the file it replaces: a link's target is named in the messages.
  const std::string at = target.path == path ? where : fmt::format("{} (a link to '{}')", where, target.path.string());

  // A file made read-only is kept, as cp or an editor would keep it.
  if (target.exists && ::faccessat(AT_FDCWD, target.path.c_str(), W_OK, AT_EACCESS) != 0 && errno == EACCES)
    fail("{}: '{}' is read-only to this user (mode {:04o}): not replaced", at, target.path.string(),
         target.st.st_mode & 07777);

  Fd dir(::open(folder.empty() ? "." : folder.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (dir.fd < 0)
    fail("{}: cannot open the folder '{}': {}", at, folder.empty() ? "." : folder.string(), reason(errno));
  // A new file gets 0666 less the umask, as fopen's; a replaced file's own
  // mode is set below, so until then the temporary is private (0600).
  const Temporary tmp = create_temporary(dir.fd, name, target.exists ? 0600 : 0666, folder, at);
  const std::string tmp_path = (folder / tmp.name).string();

  int error = 0;
  std::string failed;  // what failed: "writing", "syncing", …
  auto note = [&](const char* what) {
    error = errno;
    failed = what;
  };
  {
    HoldFileSizeSignal hold;
    if (target.exists) {
      // The replaced file's owner and group where we may (root may; a user may
      // give a file to a group of theirs), as sed -i does; then its
      // permission bits (after fchown, which may clear some).
      if (::fchown(tmp.fd, target.st.st_uid, target.st.st_gid) != 0)
        (void)::fchown(tmp.fd, static_cast<uid_t>(-1), target.st.st_gid);
      if (::fchmod(tmp.fd, target.st.st_mode & 0777) != 0) note("setting the mode of");
    }
    for (std::string_view part : parts)
      if (error == 0 && !write_all(tmp.fd, part.data(), part.size())) note("writing");
    // NOTE: write() hands the bytes to the kernel; fsync makes the kernel put
    // them on the disk before the rename makes them the file at `path`.
    if (error == 0 && ::fsync(tmp.fd) != 0) note("syncing");
    if (::close(tmp.fd) != 0 && error == 0) note("closing");
    if (error != 0) ::unlinkat(dir.fd, tmp.name.c_str(), 0);
  }  // a SIGXFSZ held back is delivered here, with the temporary gone
  if (error != 0) fail("{}: {} '{}' failed: {}", at, failed, tmp_path, reason(error));

  if (::renameat(dir.fd, tmp.name.c_str(), dir.fd, name.c_str()) != 0) {
    error = errno;
    ::unlinkat(dir.fd, tmp.name.c_str(), 0);
    fail("{}: cannot rename '{}' to '{}': {}", at, tmp_path, target.path.string(), reason(error));
  }
  // Make the rename survive a crash: the folder's entry is data too. Best
  // effort where it cannot be done: a folder we may write but not read (mode
  // 0300) cannot be opened, and some file systems cannot sync a folder
  // (EINVAL); the file is in place either way. An I/O error is reported.
  Fd readable(::openat(dir.fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (readable.fd >= 0 && ::fsync(readable.fd) != 0 && errno != EINVAL)
    fail("{}: the file is written, but syncing its folder '{}' failed: {}", at, folder.empty() ? "." : folder.string(),
         reason(errno));
}

}  // namespace qkv::core::detail
