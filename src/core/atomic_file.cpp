// Writing a file so that it is never seen half-written: a fresh temporary
// beside it, synced, then renamed over it (atomic_file.hpp).
#include "core/atomic_file.hpp"

#include <qkv/core/error.hpp>

#include <fmt/format.h>

#include <fcntl.h>   // open
#include <unistd.h>  // write, fsync, rename, unlink, getpid
#include <cerrno>
#include <cstring>

namespace qkv::core::detail {

namespace {

// A fresh file beside `path`, created exclusively: "<path>.<pid>-<k>.tmp" for
// the first k = 0, 1, 2, … whose name is free.
// NOTE: O_CREAT | O_EXCL creates the file or fails with EEXIST; it never opens
// what is already there, and never follows a symbolic link (POSIX), so a
// symlink or a stranger's file at that name is passed over, not written
// through. The pid keeps two processes saving to one path apart; two threads
// of one process meet at k = 0 and O_EXCL sends one on to k = 1. The mode
// 0666 goes through the umask, as fopen's does: the file gets a normal file's
// permissions (mkstemp's 0600 would need an fchmod).
struct Temporary {
  int fd = -1;
  std::filesystem::path path;
};

Temporary create_temporary(const std::filesystem::path& path, const std::string& where) {
  constexpr int kTries = 100;
  for (int k = 0; k < kTries; ++k) {
    std::filesystem::path tmp = path;
    tmp += fmt::format(".{}-{}.tmp", getpid(), k);
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) return {fd, tmp};
    if (errno == EINTR) {
      --k;
      continue;
    }
    if (errno != EEXIST)
      fail("{}: cannot create a temporary file beside it ('{}'): {}", where, tmp.string(), std::strerror(errno));
  }
  fail("{}: cannot create a temporary file beside it: {} names '{}.{}-*.tmp' are all taken", where, kTries,
       path.string(), getpid());
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

// Make a rename in `folder` survive a crash: the folder's entry is data too.
// Best effort where it cannot be done: a folder we may write but not read
// (mode 0300) cannot be opened, and some file systems cannot sync a folder
// (EINVAL); the file is in place either way. An I/O error is reported.
bool sync_folder(const std::filesystem::path& folder) {
  int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return true;
  bool ok = ::fsync(fd) == 0 || errno == EINVAL;
  int error = errno;
  ::close(fd);
  errno = error;
  return ok;
}

}  // namespace

void write_file_atomically(const std::filesystem::path& path, const std::vector<std::string_view>& parts,
                           const std::string& where) {
  // "" or "folder/" would put the temporary in the wrong folder, or rename it onto a folder.
  if (path.empty() || !path.has_filename()) fail("{}: not a file name", where);
  const Temporary tmp = create_temporary(path, where);
  auto give_up = [&](const std::string& what, int error) {
    ::close(tmp.fd);
    ::unlink(tmp.path.c_str());
    fail("{}: {} '{}' failed: {}", where, what, tmp.path.string(), std::strerror(error));
  };

  for (std::string_view part : parts)
    if (!write_all(tmp.fd, part.data(), part.size())) give_up("writing", errno);
  // NOTE: write() hands the bytes to the kernel; fsync makes the kernel put
  // them on the disk before the rename makes them the file at `path`.
  if (::fsync(tmp.fd) != 0) give_up("syncing", errno);
  if (::close(tmp.fd) != 0) {
    int error = errno;
    ::unlink(tmp.path.c_str());
    fail("{}: closing '{}' failed: {}", where, tmp.path.string(), std::strerror(error));
  }
  if (::rename(tmp.path.c_str(), path.c_str()) != 0) {
    int error = errno;
    ::unlink(tmp.path.c_str());
    fail("{}: cannot rename '{}' to '{}': {}", where, tmp.path.string(), path.string(), std::strerror(error));
  }
  const std::filesystem::path folder = path.has_parent_path() ? path.parent_path() : ".";
  if (!sync_folder(folder))
    fail("{}: the file is written, but syncing its folder '{}' failed: {}", where, folder.string(),
         std::strerror(errno));
}

}  // namespace qkv::core::detail
