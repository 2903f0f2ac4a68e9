// Writing a file atomically: the bytes go to a fresh temporary file beside
// the target, are synced to disk, and the temporary is renamed over the
// target. rename() replaces a file in one step, so a reader (or another
// process saving to the same path) sees the old file or the new one, never a
// part; a failure before the rename removes the temporary and leaves the old
// file as it was. Core's, so that both writers above it share it: io's
// safetensors files and viz's pictures.
//
// What is at the path decides what a save does (the rules of careful tools:
// GNU sed -i, editors, cp):
//   nothing               a new file, mode 0666 less the umask
//   a regular file        replaced; the new file keeps its permission bits
//                         (rwx of owner, group, others) and, where the
//                         system permits, its owner and group. A file this
//                         user may not write (chmod a-w) is refused. Other
//                         hard links to it keep the old content, whole.
//   a symbolic link       followed: its target is saved as above, in the
//                         target's folder, and the link stays a link. A link
//                         in a sticky world-writable folder (/tmp) owned by
//                         another user than us and the folder's owner is
//                         refused, the rule of Linux's fs.protected_symlinks.
//   a folder, a device, a FIFO or a socket      refused: nothing is written.
//
// The temporary is "<name>.<pid>-<k>.tmp" in the target's folder for the
// first k = 0, 1, 2, … whose name is free, created with O_CREAT | O_EXCL (an
// existing file or symlink of that name is never opened or followed). <name>
// is cut short when needed so that the temporary's name is no longer than
// the folder allows (NAME_MAX), and it is created relative to the folder, so
// any name that fits, fits its temporary too.
// NOTE: a process killed during a save (SIGKILL, a power cut) leaves its
// temporary behind; nothing reads it, and it may be deleted. A write past
// RLIMIT_FSIZE removes the temporary first and then lets SIGXFSZ do what the
// process asked (by default, end it).
//
// Not public API: qkv's own writers call it.
#pragma once
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace qkv::core::detail {

// Write `parts`, one after another, as the new file at `path`. Throws
// qkv::Error, starting with `where`, naming the file and the system's reason
// (no such folder, permission denied, no space left, file too large, not a
// regular file); the file at `path`, if any, is then as it was.
void write_file_atomically(const std::filesystem::path& path, const std::vector<std::string_view>& parts,
                           const std::string& where);

}  // namespace qkv::core::detail
