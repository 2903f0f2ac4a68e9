// safetensors: writing (the header, then the numbers, through
// core/atomic_file.hpp) and reading (every check first, then the copies).
#include <qkv/core/error.hpp>
#include <qkv/io/safetensors.hpp>

#include "core/atomic_file.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <new>
#include <set>
#include <string_view>
#include <vector>

static_assert(std::endian::native == std::endian::little,
              "qkv's safetensors code copies floats as they lie in memory: it needs a little-endian machine");

namespace qkv::io {

namespace {

using json = nlohmann::json;
using ordered_json = nlohmann::ordered_json;  // keeps keys in insertion order, as the reference writer

constexpr uint64_t kMaxHeader = 100'000'000;  // the reference implementation's limit, 100 MB
constexpr const char* kMetadataKey = "__metadata__";

// --- writing -------------------------------------------------------------------

// {"__metadata__":{…},"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},…}
// padded with spaces to a multiple of 8, so the data that follows starts
// 8-byte aligned (any tensor can then be used straight from a memory map).
std::string make_header(const StateDict& tensors, const Metadata& metadata, const std::string& where) {
  ordered_json header = ordered_json::object();
  if (!metadata.empty()) header[kMetadataKey] = metadata;
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {  // std::map: sorted by name, as the reference writer sorts
    if (name == kMetadataKey) fail("{}: '{}' is reserved for the metadata, not a tensor name", where, name);
    if (!t.defined()) fail("{}: tensor '{}' is undefined", where, name);
    const uint64_t bytes = static_cast<uint64_t>(t.numel()) * sizeof(float);
    header[name] = {{"dtype", "F32"}, {"shape", t.shape().dims()}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text;
  try {
    text = header.dump();  // compact: no spaces, as the reference writer
  } catch (const json::type_error& e) {
    fail("{}: a tensor name or metadata string is not valid UTF-8 ({})", where, e.what());
  }
  text.append((8 - text.size() % 8) % 8, ' ');
  return text;
}

// The file as parts written back to back: the header's length, the header,
// then each tensor's numbers (no copy of them is made).
void write_file(const std::filesystem::path& path, const std::string& header, const StateDict& tensors,
                const std::string& where) {
  uint64_t length = header.size();
  char n[8];
  std::memcpy(n, &length, 8);  // little-endian (the static_assert above)
  std::vector<std::string_view> parts{std::string_view(n, 8), header};
  for (const auto& [name, t] : tensors)
    parts.emplace_back(reinterpret_cast<const char*>(t.data()), sizeof(float) * static_cast<size_t>(t.numel()));
  core::detail::write_file_atomically(path, parts, where);
}

// --- reading -------------------------------------------------------------------

// The whole file. Only a regular file: a device (/dev/zero) or a pipe could
// stream without end, or block. The size is the open file's, so a save that
// renames a new file over `path` meanwhile cannot change it under the read.
std::string read_file(const std::filesystem::path& path, const std::string& where) {
  std::error_code ec;
  const std::filesystem::file_status status = std::filesystem::status(path, ec);
  if (std::filesystem::is_directory(status)) fail("{}: is a directory", where);
  if (std::filesystem::exists(status) && !std::filesystem::is_regular_file(status))
    fail("{}: not a regular file (a device, pipe or socket)", where);
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("{}: cannot open: {}", where, std::strerror(errno));
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  in.seekg(0, std::ios::beg);
  if (size < 0 || !in) fail("{}: cannot find the file's size", where);
  std::string bytes;
  try {
    bytes.resize(static_cast<size_t>(size));
  } catch (const std::bad_alloc&) {
    fail("{}: the file's {} bytes do not fit in memory", where, size);
  }
  in.read(bytes.data(), size);
  if (in.gcount() != size) fail("{}: reading failed after {} of {} bytes", where, in.gcount(), size);
  return bytes;
}

// One tensor's entry in the header, checked on its own.
struct Entry {
  std::string name;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;
};

uint64_t unsigned_at(const json& array, size_t i) { return array.at(i).get<uint64_t>(); }

Entry parse_entry(const std::string& name, const json& info, const std::string& where) {
  if (!info.is_object()) fail("{}: tensor '{}': expected an object, got {}", where, name, info.dump());
  for (const auto& [key, value] : info.items())
    if (key != "dtype" && key != "shape" && key != "data_offsets")
      fail("{}: tensor '{}': unknown field '{}'", where, name, key);
  if (!info.contains("dtype") || !info.contains("shape") || !info.contains("data_offsets"))
    fail("{}: tensor '{}': needs dtype, shape and data_offsets, got {}", where, name, info.dump());

  const json& dtype = info["dtype"];
  if (!dtype.is_string()) fail("{}: tensor '{}': dtype must be a string, got {}", where, name, dtype.dump());
  if (dtype != "F32")
    fail("{}: tensor '{}' has dtype {}: qkv reads only F32 (float32) tensors", where, name, dtype.get<std::string>());

  Entry e{name, {}, 0, 0};
  const json& shape = info["shape"];
  if (!shape.is_array()) fail("{}: tensor '{}': shape must be a list, got {}", where, name, shape.dump());
  // numel·4 in the order the dims come, refusing overflow (as the reference reader does).
  uint64_t bytes = sizeof(float);
  constexpr uint64_t kLimit = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  for (const json& d : shape) {
    if (!d.is_number_unsigned())
      fail("{}: tensor '{}': shape {} must hold whole numbers ≥ 0", where, name, shape.dump());
    uint64_t size = d.get<uint64_t>();
    if (size != 0 && bytes > kLimit / size) fail("{}: tensor '{}': shape {} is too large", where, name, shape.dump());
    bytes *= size;
    e.shape.push_back(static_cast<int64_t>(size));
  }

  const json& offsets = info["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
      !offsets[1].is_number_unsigned())
    fail("{}: tensor '{}': data_offsets must be two whole numbers [begin, end], got {}", where, name, offsets.dump());
  e.begin = unsigned_at(offsets, 0);
  e.end = unsigned_at(offsets, 1);
  if (e.end < e.begin)
    fail("{}: tensor '{}': data_offsets [{}, {}] end before they begin", where, name, e.begin, e.end);
  if (e.end - e.begin != bytes)
    fail("{}: tensor '{}': shape {} of F32 needs {} bytes, but data_offsets [{}, {}] hold {}", where, name,
         shape.dump(), bytes, e.begin, e.end, e.end - e.begin);
  return e;
}

// The header as JSON. The callback refuses a name given twice (JSON keeps
// the last one silently) and nesting deeper than a header has (a shape is
// at depth 3), so a hostile header cannot make the parser build much.
json parse_header(std::string_view text, const std::string& where) {
  std::set<std::string> names;
  json::parser_callback_t check = [&](int depth, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::key && depth == 1 && !names.insert(parsed.get<std::string>()).second)
      fail("{}: the header names '{}' twice", where, parsed.get<std::string>());
    if ((event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) && depth >= 3)
      fail("{}: the header nests deeper than a safetensors header can", where);
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), check);
  } catch (const json::exception& e) {
    fail("{}: the header is not valid JSON: {}", where, e.what());
  }
}

}  // namespace

void save_safetensors(const std::filesystem::path& path, const StateDict& tensors, const Metadata& metadata) {
  const std::string where = fmt::format("save_safetensors: '{}'", path.string());
  write_file(path, make_header(tensors, metadata, where), tensors, where);
}

StateDict load_safetensors(const std::filesystem::path& path, Metadata* metadata) {
  const std::string where = fmt::format("load_safetensors: '{}'", path.string());
  const std::string bytes = read_file(path, where);
  const uint64_t size = bytes.size();

  // 1. The header's length, then the header.
  if (size < 8) fail("{}: the file is {} bytes, shorter than the 8-byte header length", where, size);
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);  // little-endian
  if (n > kMaxHeader) fail("{}: header length {} is over the 100 MB limit (file of {} bytes)", where, n, size);
  if (n > size - 8) fail("{}: header length {} runs past the end of the file ({} bytes)", where, n, size);
  std::string_view text(bytes.data() + 8, n);
  if (n == 0 || text[0] != '{') fail("{}: the header (length {}) does not start with '{{'", where, n);
  // NOTE: the JSON parser stops at a zero byte as at the end of a C string,
  // so "{}\0<anything>" would pass; JSON text never holds one (padding is spaces).
  if (size_t zero = text.find('\0'); zero != std::string_view::npos)
    fail("{}: the header holds a zero byte at {} (JSON has none; padding is spaces)", where, zero);
  const json header = parse_header(text, where);
  if (!header.is_object()) fail("{}: the header is not a JSON object", where);

  // 2. Each entry on its own: metadata strings, tensors' dtype, shape and size.
  Metadata meta;
  std::vector<Entry> entries;
  for (const auto& [key, value] : header.items()) {
    if (key == kMetadataKey) {
      if (!value.is_object()) fail("{}: __metadata__ must be an object, got {}", where, value.dump());
      for (const auto& [k, v] : value.items()) {
        if (!v.is_string()) fail("{}: __metadata__['{}'] must be a string, got {}", where, k, v.dump());
        meta[k] = v.get<std::string>();
      }
    } else {
      entries.push_back(parse_entry(key, value, where));
    }
  }

  // 3. Together: the byte ranges must tile the data, in offset order.
  const uint64_t data_size = size - 8 - n;
  for (const Entry& e : entries)
    if (e.end > data_size)
      fail("{}: tensor '{}': data_offsets [{}, {}] run past the end of the data ({} bytes after the header)", where,
           e.name, e.begin, e.end, data_size);
  std::vector<const Entry*> order;
  order.reserve(entries.size());
  for (const Entry& e : entries) order.push_back(&e);
  std::sort(order.begin(), order.end(),
            [](const Entry* a, const Entry* b) { return std::tie(a->begin, a->end) < std::tie(b->begin, b->end); });
  uint64_t at = 0;  // where the next tensor must begin
  const Entry* previous = nullptr;
  for (const Entry* e : order) {
    if (e->begin < at)
      fail("{}: tensors '{}' [{}, {}] and '{}' [{}, {}] overlap", where, previous->name, previous->begin, previous->end,
           e->name, e->begin, e->end);
    if (e->begin > at)
      fail("{}: bytes [{}, {}) of the data belong to no tensor (a gap before '{}')", where, at, e->begin, e->name);
    at = e->end;
    previous = e;
  }
  if (at != data_size)
    fail("{}: {} trailing bytes: the tensors end at {}, the data is {} bytes", where, data_size - at, at, data_size);

  // 4. Everything checked: copy the numbers out.
  StateDict out;
  const char* data = bytes.data() + 8 + n;
  for (const Entry& e : entries) {
    Tensor t = Tensor::empty(Shape(e.shape));
    if (e.end > e.begin) std::memcpy(t.data(), data + e.begin, e.end - e.begin);
    out.emplace(e.name, std::move(t));
  }
  if (metadata != nullptr) *metadata = std::move(meta);
  return out;
}

}  // namespace qkv::io
