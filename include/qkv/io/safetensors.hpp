// Reading and writing safetensors files: the format Hugging Face's tools and
// PyTorch users share weights in (safetensors.torch.save_file / load_file),
// and the format of qkv's checkpoints (io/checkpoint.hpp).
//
// A file is three parts:
//
//   8 bytes    N, the length of the header: an unsigned 64-bit little-endian integer
//   N bytes    the header: a JSON object, padded with spaces to a multiple of 8
//                {"__metadata__": {"format": "pt"},
//                 "fc.bias":   {"dtype": "F32", "shape": [3],    "data_offsets": [0, 12]},
//                 "fc.weight": {"dtype": "F32", "shape": [3, 2], "data_offsets": [12, 36]}}
//   the rest   the tensors' numbers, row-major and little-endian; data_offsets
//              are [begin, end) in bytes from the start of this part.
//
// The tensors' byte ranges must tile the data exactly: sorted by offset, the
// first begins at 0, each begins where the one before ends, and the last ends
// at the end of the file. So there is no gap, no overlap and nothing trailing,
// and a reader never trusts a number it has not checked (the reason the format
// exists: loading a pickle runs code, loading this only copies bytes).
// "__metadata__" is optional and maps strings to strings.
//
// qkv's tensors are float32, so qkv writes and reads only dtype F32; a file
// holding F16, BF16, F64 or integers is refused with the tensor's name.
// NOTE: the numbers are copied as they lie in memory, so this assumes a
// little-endian machine (x86, ARM); the build refuses any other.
#pragma once
#include <qkv/core/state_dict.hpp>
#include <qkv/core/tensor.hpp>

#include <filesystem>
#include <map>
#include <string>

namespace qkv::io {

using Metadata = std::map<std::string, std::string>;  // the header's "__metadata__"

// Write `tensors` (and `metadata`, when not empty) to `path`, laid out as the
// reference implementation lays it out: tensors sorted by name, the header
// compact JSON padded with spaces to a multiple of 8.
// The write is atomic: the bytes go to a fresh temporary file beside `path`
// ("<path>.<pid>-<k>.tmp", created exclusively: an existing file or symlink
// of that name is never opened), which is synced to disk and then renamed
// over `path`. So a reader (or another process saving to the same path) sees
// the old file or the new one, never a part, and a failed or interrupted save
// leaves any file already at `path` as it was and removes its temporary.
// Throws qkv::Error (naming the path and the system's reason) for an
// undefined tensor, the reserved name "__metadata__", a name or value that
// is not UTF-8, or a file that cannot be written (no such folder, no
// permission, a full disk).
void save_safetensors(const std::filesystem::path& path, const StateDict& tensors, const Metadata& metadata = {});

// Read every tensor of `path` (fresh tensors, requires_grad false) and, if
// `metadata` is given, the header's "__metadata__" into it. Everything is
// checked before anything is returned: a file shorter than 8 bytes, a header
// length past the end of the file (or over 100 MB), a header that is not a
// JSON object, a malformed or duplicate entry, a dtype other than F32, shape
// and offsets that disagree (end − begin ≠ numel·4), offsets past the end,
// overlapping, leaving a gap, or followed by trailing bytes — each throws
// qkv::Error naming the path and the offending values.
// NOTE: the whole file is read into memory first, then copied into tensors.
StateDict load_safetensors(const std::filesystem::path& path, Metadata* metadata = nullptr);

}  // namespace qkv::io
