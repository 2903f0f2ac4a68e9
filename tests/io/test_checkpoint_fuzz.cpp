// A fuzz test of io::load_checkpoint: real checkpoints (a model and its Adam
// state), cut at every length, with bits flipped, and with their headers
// rewritten. Each damaged file must be either
//   refused with a qkv::Error, leaving model and optimizer as they were, or
//   loaded, and then the model and optimizer hold exactly the tensors the
//   file holds, as a second reader written here from the format sees them.
// safetensors has no checksum: a flipped bit in the data is a legal file
// with another number in it, and must load as exactly that number.
//
// The run is bounded (about a second); QKV_FUZZ_ITERATIONS=<n> sets the number
// of random flips and header rewrites (default 1500 each) for a longer run:
//   QKV_FUZZ_ITERATIONS=200000 build/release/qkv_tests -tc='io/checkpoint fuzz*'
#include <doctest/doctest.h>

#include <qkv/io/checkpoint.hpp>
#include <qkv/io/safetensors.hpp>
#include <qkv/optim/adam.hpp>
#include <qkv/qkv.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <typeinfo>
#include <vector>

#include "io_test_util.hpp"

using namespace qkv;
using json = nlohmann::ordered_json;

namespace {

// x (N, 4) -> relu(fc1) (N, 6) -> fc2 (N, 3)
struct MLP : nn::Module {
  std::shared_ptr<nn::Linear> fc1, fc2;
  explicit MLP(Generator& gen) {
    fc1 = register_module("fc1", std::make_shared<nn::Linear>(4, 6, true, gen));
    fc2 = register_module("fc2", std::make_shared<nn::Linear>(6, 3, true, gen));
  }
  Tensor forward(const Tensor& x) const { return (*fc2)(relu((*fc1)(x))); }
  std::string type_name() const override { return "MLP"; }
};

void train_step(MLP& model, optim::Optimizer& opt, uint64_t seed) {
  Generator gen(seed);
  Tensor x = randn({8, 4}, gen), y = randn({8, 3}, gen);
  opt.zero_grad();
  mse_loss(model.forward(x), y).backward();
  opt.step();
}

// --- the second reader, from the format alone -----------------------------------
// 8 bytes little-endian N, N bytes of JSON {name: {dtype, shape, data_offsets}},
// then the data; a tensor is the bytes [8 + N + begin, 8 + N + end).
struct FileTensor {
  std::vector<int64_t> shape;
  std::string bytes;
};

// The tensors the file holds, or nothing if it is not a readable safetensors
// file of F32 tensors. Looser than qkv's reader on purpose (no check of
// tiling or duplicates): it says what a file means, not whether it is valid.
std::optional<std::map<std::string, FileTensor>> second_reader(const std::string& file) {
  if (file.size() < 8) return std::nullopt;
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<uint8_t>(file[static_cast<size_t>(i)]);
  if (n > file.size() - 8) return std::nullopt;
  json header = json::parse(file.substr(8, n), nullptr, /*allow_exceptions=*/false);
  if (!header.is_object()) return std::nullopt;
  const uint64_t data_size = file.size() - 8 - n;
  std::map<std::string, FileTensor> out;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") continue;
    if (!entry.is_object() || entry.value("dtype", json()) != "F32") return std::nullopt;
    const json& shape = entry.value("shape", json());
    const json& offsets = entry.value("data_offsets", json());
    if (!shape.is_array() || !offsets.is_array() || offsets.size() != 2) return std::nullopt;
    FileTensor t;
    for (const json& d : shape) {
      if (!d.is_number_unsigned()) return std::nullopt;
      t.shape.push_back(d.get<int64_t>());
    }
    if (!offsets[0].is_number_unsigned() || !offsets[1].is_number_unsigned()) return std::nullopt;
    const uint64_t begin = offsets[0].get<uint64_t>(), end = offsets[1].get<uint64_t>();
    if (begin > end || end > data_size) return std::nullopt;
    t.bytes = file.substr(8 + n + begin, end - begin);
    out[name] = t;
  }
  return out;
}

std::string bytes_of(const Tensor& t) {
  return {reinterpret_cast<const char*>(t.data()), sizeof(float) * static_cast<size_t>(t.numel())};
}

// What the model and optimizer hold now, as name -> bytes (state_dict names,
// the optimizer's under "optimizer." as in the file).
std::map<std::string, std::pair<Shape, std::string>> held(const MLP& model, const optim::Optimizer& opt) {
  std::map<std::string, std::pair<Shape, std::string>> out;
  for (const auto& [name, t] : model.state_dict()) out[name] = {t.shape(), bytes_of(t)};
  for (const auto& [name, t] : opt.state_dict()) out["optimizer." + name] = {t.shape(), bytes_of(t)};
  return out;
}

// Empty if what the model and optimizer hold is what `file` holds; else why not.
std::string disagreement(const std::string& file, const MLP& model, const optim::Optimizer& opt) {
  auto tensors = second_reader(file);
  if (!tensors) return "qkv loaded a file the second reader cannot read";
  auto now = held(model, opt);
  for (const auto& [name, t] : *tensors) {
    auto it = now.find(name);
    if (it == now.end()) {
      // A step of 0 with no buffers is a state state_dict() leaves out.
      if (name.rfind("optimizer.state.", 0) == 0 && name.size() > 5 && name.substr(name.size() - 5) == ".step" &&
          t.bytes == std::string(4, '\0'))
        continue;
      return "the file's '" + name + "' is not in the model or optimizer";
    }
    if (it->second.first != Shape(t.shape)) return "'" + name + "' has another shape";
    if (it->second.second != t.bytes) return "'" + name + "' holds other numbers than the file";
  }
  for (const auto& [name, t] : now)
    if (tensors->count(name) == 0) return "'" + name + "' is not in the file";
  return "";
}

int64_t iterations() {
  const char* n = std::getenv("QKV_FUZZ_ITERATIONS");
  return n != nullptr ? std::max<int64_t>(1, std::atoll(n)) : 1500;
}

// The fixture: a good checkpoint (after one step), and the model and
// optimizer one step further, so that any write by a refused load shows.
struct Fuzz {
  test::TempDir dir{"checkpoint_fuzz"};
  std::filesystem::path good_path = dir / "good.safetensors", ahead_path = dir / "ahead.safetensors",
                        path = dir / "fuzzed.safetensors";
  Generator init{7};
  MLP model{init};
  optim::Adam opt{model.parameters(), 0.01f};
  std::string good;
  std::map<std::string, std::pair<Shape, std::string>> ahead;
  int64_t refused = 0, loaded = 0;
  std::vector<std::string> failures;

  Fuzz() {
    train_step(model, opt, 1);
    io::save_checkpoint(good_path, model, &opt);
    good = test::read_bytes(good_path);
    train_step(model, opt, 2);
    io::save_checkpoint(ahead_path, model, &opt);
    ahead = held(model, opt);
  }

  // Load `bytes` and check the outcome; `what` names the mutation.
  void check(const std::string& bytes, const std::string& what) {
    // NOTE: a new file each time: ext4 flushes a file truncated and rewritten
    // in place to disk on close, which would make the run wait on the disk.
    std::filesystem::remove(path);
    test::write_bytes(path, bytes);
    try {
      io::load_checkpoint(path, model, &opt);
    } catch (const Error&) {
      ++refused;
      if (held(model, opt) != ahead) failures.push_back(what + ": refused, but the model or optimizer changed");
      return;
    } catch (const std::exception& e) {
      failures.push_back(what + ": threw a " + typeid(e).name() + ", not a qkv::Error: " + e.what());
      return;
    }
    ++loaded;
    if (std::string why = disagreement(bytes, model, opt); !why.empty())
      failures.push_back(what + ": loaded, but " + why);
    io::load_checkpoint(ahead_path, model, &opt);  // back to the starting state
  }

  void report(const std::string& kind, bool expect_loads) {
    CAPTURE(kind);
    INFO(kind << ": " << refused << " refused, " << loaded << " loaded");
    std::string first;
    for (size_t i = 0; i < failures.size() && i < 5; ++i) first += failures[i] + "\n";
    CHECK_MESSAGE(failures.empty(), failures.size() << " failures, the first:\n" << first);
    CHECK(refused > 0);
    if (expect_loads) CHECK(loaded > 0);
  }

  uint64_t header_length() const {
    uint64_t n = 0;
    std::memcpy(&n, good.data(), 8);
    return n;
  }
};

// A header rewritten: the JSON text padded with spaces to a multiple of 8, its
// new length in front, the data as it was.
std::string with_header(const std::string& text, const std::string& data) {
  std::string padded = text;
  padded.append((8 - padded.size() % 8) % 8, ' ');
  return test::le64(padded.size()) + padded + data;
}

}  // namespace

TEST_CASE("io/checkpoint fuzz: cut at every length, or grown") {
  Fuzz f;
  for (size_t cut = 0; cut < f.good.size(); ++cut) f.check(f.good.substr(0, cut), "cut at " + std::to_string(cut));
  for (size_t extra : {1, 3, 4, 8, 64}) f.check(f.good + std::string(extra, '\0'), "grown by " + std::to_string(extra));
  f.check(f.good, "the good file itself");
  f.report("truncation", /*expect_loads=*/true);
}

TEST_CASE("io/checkpoint fuzz: flipped bits") {
  Fuzz f;
  std::mt19937_64 rng(2024);
  const size_t data_start = 8 + f.header_length();
  const int64_t n = iterations();
  for (int64_t k = 0; k < n; ++k) {
    // Half of the flips in the data (legal files, other numbers), half anywhere.
    const size_t at = k % 2 == 0 ? data_start + rng() % (f.good.size() - data_start) : rng() % f.good.size();
    const int bit = static_cast<int>(rng() % 8);
    std::string bytes = f.good;
    bytes[at] = static_cast<char>(bytes[at] ^ (1 << bit));
    f.check(bytes, "bit " + std::to_string(bit) + " of byte " + std::to_string(at));
  }
  f.report("bit flips", /*expect_loads=*/true);
}

TEST_CASE("io/checkpoint fuzz: rewritten headers") {
  Fuzz f;
  const uint64_t n = f.header_length();
  const json header = json::parse(f.good.substr(8, n));
  const std::string data = f.good.substr(8 + n);
  std::vector<std::string> names;
  for (const auto& [name, entry] : header.items())
    if (name != "__metadata__") names.push_back(name);

  // Values a field may be set to: wrong types, extremes, near misses.
  const std::vector<json> dtypes{"F16", "F64", "BF16", "I32", "f32", "F32 ", "", 32, nullptr, json::array()};
  const std::vector<json> numbers{0,
                                  1,
                                  4,
                                  -1,
                                  -4,
                                  1.5,
                                  "4",
                                  nullptr,
                                  uint64_t(1) << 32,
                                  uint64_t(1) << 62,
                                  uint64_t(1) << 63,
                                  ~uint64_t(0),
                                  int64_t(1) << 62};

  std::mt19937_64 rng(99);
  auto pick = [&](size_t size) { return static_cast<size_t>(rng() % size); };
  const int64_t count = iterations();
  for (int64_t k = 0; k < count; ++k) {
    json h = header;
    const std::string& name = names[pick(names.size())];
    json& entry = h[name];
    std::string what = name + ": ";
    switch (pick(10)) {
      case 0:
        entry["dtype"] = dtypes[pick(dtypes.size())];
        what += "dtype " + entry["dtype"].dump();
        break;
      case 1:  // a dim changed, or set to an extreme
        if (!entry["shape"].empty()) {
          json& d = entry["shape"][pick(entry["shape"].size())];
          d = pick(2) == 0 ? json(d.get<int64_t>() + (pick(2) == 0 ? 1 : -1)) : numbers[pick(numbers.size())];
        }
        what += "shape " + entry["shape"].dump();
        break;
      case 2:  // a dim added (1 keeps the byte count) or removed
        if (pick(2) == 0 || entry["shape"].empty())
          entry["shape"].insert(entry["shape"].begin() + static_cast<std::ptrdiff_t>(pick(entry["shape"].size() + 1)),
                                json(pick(3)));
        else
          entry["shape"].erase(entry["shape"].begin() + static_cast<std::ptrdiff_t>(pick(entry["shape"].size())));
        what += "shape " + entry["shape"].dump();
        break;
      case 3:  // an offset nudged or set to an extreme
      {
        json& o = entry["data_offsets"][pick(2)];
        o = pick(2) == 0 ? json(o.get<int64_t>() + (pick(2) == 0 ? 4 : -4)) : numbers[pick(numbers.size())];
        what += "data_offsets " + entry["data_offsets"].dump();
        break;
      }
      case 4:  // offsets traded with another tensor's: legal when the sizes agree
      {
        const std::string& other = names[pick(names.size())];
        std::swap(entry["data_offsets"], h[other]["data_offsets"]);
        what += "data_offsets swapped with " + other;
        break;
      }
      case 5:  // an entry gone
        h.erase(name);
        what += "removed";
        break;
      case 6:  // renamed to another tensor's name (a duplicate key) or a new one
      {
        std::string text = h.dump();
        const std::string other = pick(2) == 0 ? names[pick(names.size())] : "fc3.weight";
        const std::string from = "\"" + name + "\":";
        text.replace(text.find(from), from.size(), "\"" + other + "\":");
        f.check(with_header(text, data), what + "renamed " + other);
        continue;
      }
      case 7:  // a field missing, an extra one, the entry not an object
        switch (pick(3)) {
          case 0:
            entry.erase(pick(2) == 0 ? "shape" : "data_offsets");
            break;
          case 1:
            entry["extra"] = 1;
            break;
          default:
            entry = json::array({entry});
            break;
        }
        what += "entry " + entry.dump();
        break;
      case 8:  // the metadata
        switch (pick(3)) {
          case 0:
            h["__metadata__"] = 1;
            break;
          case 1:
            h["__metadata__"]["epoch"] = 3;
            break;
          default:
            h.erase("__metadata__");
            break;
        }
        what = "metadata " + (h.contains("__metadata__") ? h["__metadata__"].dump() : "removed");
        break;
      default:  // the data_offsets array malformed
        switch (pick(3)) {
          case 0:
            entry["data_offsets"].push_back(0);
            break;
          case 1:
            entry["data_offsets"] = entry["data_offsets"][0];
            break;
          default:
            entry["data_offsets"] = json::object();
            break;
        }
        what += "data_offsets " + entry["data_offsets"].dump();
        break;
    }
    f.check(with_header(h.dump(), data), what);
  }
  f.report("header rewrites", /*expect_loads=*/true);
}
