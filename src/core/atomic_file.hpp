// Writing a file atomically: the bytes go to a fresh temporary file beside
// the target, are synced to disk, and the temporary is renamed over the
// target. rename() replaces a file in one step, so a reader (or another
// process saving to the same path) sees the old file or the new one, never a
// part; a failure before the rename removes the temporary and leaves the old
// file as it was. Core's, so that both writers above it share it: io's
// safetensors files and viz's pictures.
//
// The temporary is "<path>.<pid>-<k>.tmp" for the first k = 0, 1, 2, … whose
// name is free, created with O_CREAT | O_EXCL: an existing file or symlink
// of that name is never opened or followed. Its mode is 0666 less the
// umask, the mode fopen would give the file.
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
// (no such folder, permission denied, no space left, file too large); the
// file at `path`, if any, is then as it was.
void write_file_atomically(const std::filesystem::path& path, const std::vector<std::string_view>& parts,
                           const std::string& where);

}  // namespace qkv::core::detail
