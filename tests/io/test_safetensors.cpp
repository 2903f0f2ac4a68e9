// io::save_safetensors / load_safetensors: round trips, the exact layout of
// the reference writer, a file written from Python (tests/reference/tiny.safetensors,
// made by tools/reference/io.py), and every kind of damaged file.
#include <doctest/doctest.h>

#include <qkv/io/safetensors.hpp>
#include <qkv/qkv.hpp>

#include <array>
#include <cmath>
#include <cstring>
#include <limits>

#include "io_test_util.hpp"
#include "reference.hpp"

using namespace qkv;
using test::le64;
using test::safetensors_bytes;
using test::zero_floats;

namespace {

bool bit_identical(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape()) return false;
  return a.numel() == 0 || std::memcmp(a.data(), b.data(), sizeof(float) * a.numel()) == 0;
}

std::string float_bytes(const std::vector<float>& v) {
  std::string s(4 * v.size(), '\0');
  std::memcpy(s.data(), v.data(), s.size());
  return s;
}

}  // namespace

TEST_CASE("io/safetensors: round trip, bit for bit, with metadata") {
  test::TempDir dir("safetensors_round_trip");
  Generator gen(5);
  const float inf = std::numeric_limits<float>::infinity();
  StateDict tensors{
      {"encoder.layers.0.W_q.weight", randn({4, 6}, gen)},
      {"bias", randn({6}, gen)},
      {"scale", scalar_tensor(0.125f)},                         // 0-d: shape []
      {"empty", zeros({0, 3})},                                 // no bytes at all
      {"odd values", tensor({-0.0f, inf, -inf, NAN, 1e-45f})},  // signed zero, infinities, NaN, a denormal
      {"größe.ü", ones({2, 1, 2})},                             // UTF-8 names
  };
  io::Metadata metadata{{"format", "pt"}, {"epoch", "3"}, {"note", "ünïcode, \"quotes\" and \\ too"}};
  auto path = dir / "round_trip.safetensors";
  io::save_safetensors(path, tensors, metadata);

  io::Metadata meta_back;
  StateDict back = io::load_safetensors(path, &meta_back);
  CHECK(meta_back == metadata);
  REQUIRE(back.size() == tensors.size());
  for (const auto& named : tensors) {
    const std::string& name = named.first;
    const Tensor& t = named.second;
    REQUIRE_MESSAGE(back.count(name) == 1, name);
    CHECK_MESSAGE(bit_identical(back.at(name), t), name);
    CHECK_FALSE(back.at(name).requires_grad());
    CHECK_FALSE(back.at(name).same(t));  // fresh tensors, not the saved ones
  }
  CHECK(back.at("scale").shape() == Shape{});
  CHECK(back.at("empty").shape() == Shape{0, 3});

  // No metadata: none is written, and none comes back.
  io::save_safetensors(path, {{"x", ones({2})}});
  io::Metadata none{{"stale", "value"}};
  CHECK(io::load_safetensors(path, &none).size() == 1);
  CHECK(none.empty());
  CHECK_FALSE(std::filesystem::exists(path.string() + ".tmp"));  // the temporary file is gone
}

TEST_CASE("io/safetensors: the reference writer's exact bytes") {
  test::TempDir dir("safetensors_layout");
  auto path = dir / "layout.safetensors";

  SUBCASE("one tensor") {
    // The reference implementation writes {"attn.0": F32 (1, 2, 3) holding 0…5} as
    // exactly these bytes: a 64-byte header (a multiple of 8 already, so no
    // padding), then the 24 bytes of data.
    io::save_safetensors(path, {{"attn.0", tensor({0, 1, 2, 3, 4, 5}, {1, 2, 3})}});
    std::string header = R"({"attn.0":{"dtype":"F32","shape":[1,2,3],"data_offsets":[0,24]}})";
    CHECK(header.size() == 64);
    CHECK(test::read_bytes(path) == safetensors_bytes(header, float_bytes({0, 1, 2, 3, 4, 5})));
  }
  SUBCASE("nothing: '{}' padded with spaces to 8 bytes") {
    io::save_safetensors(path, {});
    CHECK(test::read_bytes(path) == le64(8) + "{}      ");
  }
  SUBCASE("metadata only: metadata first, padded to 40 bytes") {
    io::save_safetensors(path, {}, {{"framework", "pt"}});
    CHECK(test::read_bytes(path) == le64(40) + R"({"__metadata__":{"framework":"pt"}})" + "     ");
  }
  SUBCASE("tensors sorted by name, back to back, the data 8-byte aligned") {
    io::save_safetensors(path, {{"b", ones({2})}, {"a", full({3}, 2.0f)}}, {{"k", "v"}});
    std::string header = R"({"__metadata__":{"k":"v"},"a":{"dtype":"F32","shape":[3],"data_offsets":[0,12]},)"
                         R"("b":{"dtype":"F32","shape":[2],"data_offsets":[12,20]}})";
    header.append((8 - header.size() % 8) % 8, ' ');
    CHECK(test::read_bytes(path) == safetensors_bytes(header, float_bytes({2, 2, 2, 1, 1})));
  }
}

TEST_CASE("io/safetensors: reads a file laid out by Python (tools/reference/io.py)") {
  const std::string data = QKV_REFERENCE_DIR;
  io::Metadata metadata;
  StateDict got = io::load_safetensors(data + "/tiny.safetensors", &metadata);
  CHECK(metadata == io::Metadata{{"format", "pt"}, {"written_by", "tools/reference/io.py"}});

  const test::RefCase& want = test::reference("io", "tiny");
  REQUIRE(got.size() == want.floats.size());
  for (const auto& named : want.floats) {
    const std::string& name = named.first;
    const Tensor& t = named.second;
    REQUIRE_MESSAGE(got.count(name) == 1, name);
    CHECK_MESSAGE(bit_identical(got.at(name), t), name);  // 9 significant digits round-trip float32
  }
  // The same tool writes an F16 tensor, which qkv refuses by name.
  CHECK_THROWS_WITH_AS(io::load_safetensors(data + "/tiny_f16.safetensors"),
                       doctest::Contains("tensor 'half' has dtype F16: qkv reads only F32 (float32) tensors"), Error);
}

TEST_CASE("io/safetensors: a damaged file is refused with the values") {
  test::TempDir dir("safetensors_damaged");
  auto path = dir / "bad.safetensors";
  const std::string name = path.string();
  // Write `bytes`, load, and expect an Error whose message holds the path and `message`.
  auto refused = [&](const std::string& bytes, const std::string& message) {
    test::write_bytes(path, bytes);
    CHECK_THROWS_WITH_AS(io::load_safetensors(path),
                         doctest::Contains(("load_safetensors: '" + name + "': " + message).c_str()), Error);
  };
  // {"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},…} from (name, shape, offsets) triples.
  auto header = [](std::initializer_list<std::array<std::string, 3>> entries) {
    std::string h = "{";
    for (const auto& [tensor, shape, offsets] : entries) {
      if (h.size() > 1) h += ",";
      h += fmt::format(R"("{}":{{"dtype":"F32","shape":{},"data_offsets":{}}})", tensor, shape, offsets);
    }
    return h + "}";
  };

  SUBCASE("no file, a directory") {
    CHECK_THROWS_WITH_AS(io::load_safetensors(dir / "missing.safetensors"),
                         doctest::Contains("missing.safetensors': cannot open: No such file or directory"), Error);
    CHECK_THROWS_WITH_AS(io::load_safetensors(dir.path), doctest::Contains("is a directory"), Error);
  }
  SUBCASE("too short for the header length") {
    refused("", "the file is 0 bytes, shorter than the 8-byte header length");
    refused(std::string("\x08\x00\x00", 3), "the file is 3 bytes, shorter than the 8-byte header length");
  }
  SUBCASE("a header length past the end, or absurd") {
    refused(le64(1000) + "{}      ", "header length 1000 runs past the end of the file (16 bytes)");
    refused(le64(9) + "{}      ", "header length 9 runs past the end of the file (16 bytes)");
    refused(le64(uint64_t(1) << 63) + "{}      ", "header length 9223372036854775808 is over the 100 MB limit");
  }
  SUBCASE("a header that is not a JSON object") {
    refused(safetensors_bytes("", ""), "the header (length 0) does not start with '{'");
    refused(safetensors_bytes("[1, 2]  ", ""), "the header (length 8) does not start with '{'");
    refused(safetensors_bytes(R"({"a":    )", ""), "the header is not valid JSON");
    refused(safetensors_bytes(R"({}x     )", ""), "the header is not valid JSON");
    refused(safetensors_bytes(std::string("{}\0junk!", 8), ""), "the header holds a zero byte at 2");
    refused(safetensors_bytes(header({{"a", "[1]", "[0,4]"}, {"a", "[1]", "[4,8]"}}), zero_floats(2)),
            "the header names 'a' twice");
    refused(safetensors_bytes(R"({"a":{"dtype":"F32","shape":[[[1]]],"data_offsets":[0,4]}})", zero_floats(1)),
            "the header nests deeper than a safetensors header can");
  }
  SUBCASE("bad metadata or entries") {
    refused(safetensors_bytes(R"({"__metadata__":{"epoch":3}})", ""), "__metadata__['epoch'] must be a string, got 3");
    refused(safetensors_bytes(R"({"__metadata__":[1]})", ""), "__metadata__ must be an object, got [1]");
    refused(safetensors_bytes(R"({"w":[0,4]})", zero_floats(1)), "tensor 'w': expected an object, got [0,4]");
    refused(safetensors_bytes(R"({"w":{"dtype":"F32","shape":[1]}})", zero_floats(1)),
            "tensor 'w': needs dtype, shape and data_offsets");
    refused(safetensors_bytes(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":1}})", zero_floats(1)),
            "tensor 'w': unknown field 'x'");
    refused(safetensors_bytes(R"({"w":{"dtype":32,"shape":[1],"data_offsets":[0,4]}})", zero_floats(1)),
            "tensor 'w': dtype must be a string, got 32");
    refused(safetensors_bytes(R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", zero_floats(1)),
            "tensor 'w': shape [-1] must hold whole numbers ≥ 0");
    refused(safetensors_bytes(R"({"w":{"dtype":"F32","shape":[1.0],"data_offsets":[0,4]}})", zero_floats(1)),
            "tensor 'w': shape [1.0] must hold whole numbers ≥ 0");
    refused(safetensors_bytes(R"({"w":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,4]}})",
                              zero_floats(1)),
            "tensor 'w': shape [4611686018427387904,4] is too large");
    refused(safetensors_bytes(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", zero_floats(1)),
            "tensor 'w': data_offsets must be two whole numbers [begin, end], got [0]");
  }
  SUBCASE("a dtype other than F32") {
    refused(safetensors_bytes(R"({"w":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}})", zero_floats(2)),
            "tensor 'w' has dtype F64: qkv reads only F32 (float32) tensors");
    refused(safetensors_bytes(R"({"w":{"dtype":"Q4","shape":[1],"data_offsets":[0,4]}})", zero_floats(1)),
            "tensor 'w' has dtype Q4: qkv reads only F32");
  }
  SUBCASE("shape and offsets disagree") {
    refused(safetensors_bytes(header({{"w", "[2,3]", "[0,20]"}}), zero_floats(5)),
            "tensor 'w': shape [2,3] of F32 needs 24 bytes, but data_offsets [0, 20] hold 20");
    refused(safetensors_bytes(header({{"w", "[0]", "[8,4]"}}), zero_floats(2)),
            "tensor 'w': data_offsets [8, 4] end before they begin");
  }
  SUBCASE("offsets past the end, overlapping, with a gap, or trailing bytes") {
    refused(safetensors_bytes(header({{"w", "[4]", "[0,16]"}}), zero_floats(2)),
            "tensor 'w': data_offsets [0, 16] run past the end of the data (8 bytes after the header)");
    refused(safetensors_bytes(header({{"a", "[2]", "[0,8]"}, {"b", "[2]", "[4,12]"}}), zero_floats(3)),
            "tensors 'a' [0, 8] and 'b' [4, 12] overlap");
    refused(safetensors_bytes(header({{"a", "[1]", "[0,4]"}, {"b", "[1]", "[8,12]"}}), zero_floats(3)),
            "bytes [4, 8) of the data belong to no tensor (a gap before 'b')");
    refused(safetensors_bytes(header({{"a", "[1]", "[4,8]"}}), zero_floats(2)),
            "bytes [0, 4) of the data belong to no tensor (a gap before 'a')");
    refused(safetensors_bytes(header({{"a", "[1]", "[0,4]"}}), zero_floats(2)),
            "4 trailing bytes: the tensors end at 4, the data is 8 bytes");
    refused(safetensors_bytes("{}", "x"), "1 trailing bytes: the tensors end at 0, the data is 1 bytes");
  }
  SUBCASE("a good file, then cut or grown") {
    io::save_safetensors(path, {{"w", ones({2, 3})}, {"b", ones({3})}});
    const std::string good = test::read_bytes(path);
    for (size_t cut : {size_t(0), size_t(7), size_t(8), size_t(20), good.size() - 36, good.size() - 1}) {
      CAPTURE(cut);
      test::write_bytes(path, good.substr(0, cut));
      CHECK_THROWS_AS(io::load_safetensors(path), Error);
    }
    refused(good + "junk", "4 trailing bytes");
  }
}

TEST_CASE("io/safetensors: saving refuses bad input and never clobbers a file") {
  test::TempDir dir("safetensors_save");
  auto path = dir / "weights.safetensors";

  SUBCASE("into a directory that does not exist") {
    auto nowhere = dir / "no/such/dir/w.safetensors";
    CHECK_THROWS_WITH_AS(
        io::save_safetensors(nowhere, {{"w", ones({2})}}),
        doctest::Contains(fmt::format("save_safetensors: '{}': cannot open the folder '{}': No such file or directory",
                                      nowhere.string(), nowhere.parent_path().string())
                              .c_str()),
        Error);
    CHECK_FALSE(std::filesystem::exists(dir / "no"));
  }
  SUBCASE("bad names and tensors") {
    CHECK_THROWS_WITH_AS(io::save_safetensors(path, {{"__metadata__", ones({2})}}),
                         doctest::Contains("'__metadata__' is reserved for the metadata, not a tensor name"), Error);
    CHECK_THROWS_WITH_AS(io::save_safetensors(path, {{"w", Tensor()}}), doctest::Contains("tensor 'w' is undefined"),
                         Error);
    CHECK_THROWS_WITH_AS(io::save_safetensors(path, {{"\xff\xfe", ones({1})}}),
                         doctest::Contains("a tensor name or metadata string is not valid UTF-8"), Error);
    CHECK_FALSE(std::filesystem::exists(path));
  }
  SUBCASE("a failed save leaves the old file whole") {
    io::save_safetensors(path, {{"w", full({3}, 7.0f)}});
    const std::string before = test::read_bytes(path);
    // Failing before writing…
    CHECK_THROWS_AS(io::save_safetensors(path, {{"w", Tensor()}}), Error);
    CHECK(test::read_bytes(path) == before);
    // … and a directory squatting on the path: refused before anything is written.
    auto squatted = dir / "squatted.safetensors";
    std::filesystem::create_directory(squatted);
    CHECK_THROWS_WITH_AS(
        io::save_safetensors(squatted, {{"w", zeros({100})}}),
        doctest::Contains(fmt::format("'{}' is a folder, not a regular file", squatted.string()).c_str()), Error);
    CHECK(std::filesystem::is_directory(squatted));
    CHECK(test::list_dir(dir.path) == std::vector<std::string>{"squatted.safetensors", "weights.safetensors"});
    // (A read-only folder and a full disk: tests/io/test_atomic_save.cpp.)
    // A save that succeeds replaces it.
    io::save_safetensors(path, {{"w", zeros({100})}});
    CHECK(io::load_safetensors(path).at("w").shape() == Shape{100});
  }
}
