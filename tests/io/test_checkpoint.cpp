// io::save_checkpoint / load_checkpoint: resuming training bit for bit, and
// all-or-nothing loading (a damaged or mismatched file changes nothing).
#include <doctest/doctest.h>

#include <qkv/io/checkpoint.hpp>
#include <qkv/io/safetensors.hpp>
#include <qkv/optim/adam.hpp>
#include <qkv/optim/sgd.hpp>
#include <qkv/qkv.hpp>

#include "io_test_util.hpp"

using namespace qkv;

namespace {

// A small model of Linear layers: x (N, 4) -> relu(fc1) (N, hidden) -> fc2 (N, 3).
struct MLP : nn::Module {
  std::shared_ptr<nn::Linear> fc1, fc2;
  MLP(int64_t hidden, Generator& gen) {
    fc1 = register_module("fc1", std::make_shared<nn::Linear>(4, hidden, true, gen));
    fc2 = register_module("fc2", std::make_shared<nn::Linear>(hidden, 3, true, gen));
  }
  Tensor forward(const Tensor& x) const { return (*fc2)(relu((*fc1)(x))); }
  std::string type_name() const override { return "MLP"; }
};

// One step of regression on fixed data: the same data for every model, so
// two models in the same state stay in the same state.
void train_step(MLP& model, optim::Optimizer& opt, int k) {
  Generator gen(1000 + static_cast<uint64_t>(k));
  Tensor x = randn({8, 4}, gen), y = randn({8, 3}, gen);
  opt.zero_grad();
  mse_loss(model.forward(x), y).backward();
  opt.step();
}

Tensor probe() {
  Generator gen(99);
  return randn({5, 4}, gen);
}

std::vector<std::vector<float>> snapshot(const nn::Module& model) {
  std::vector<std::vector<float>> out;
  for (const Tensor& p : model.parameters()) out.push_back(p.to_vector());
  return out;
}

std::map<std::string, std::vector<float>> snapshot(const optim::Optimizer& opt) {
  std::map<std::string, std::vector<float>> out;
  for (auto& [k, t] : opt.state_dict()) out[k] = t.to_vector();
  return out;
}

}  // namespace

TEST_CASE("io/checkpoint: resuming mid-training is bit for bit") {
  test::TempDir dir("checkpoint_resume");
  auto path = dir / "ckpt.safetensors";

  Generator init_a(1);
  MLP a(6, init_a);
  optim::Adam opt_a(a.parameters(), 0.01f, {0.9f, 0.99f}, 1e-8f, 0.01f);
  for (int k = 0; k < 4; ++k) train_step(a, opt_a, k);
  io::save_checkpoint(path, a, &opt_a);
  const std::vector<float> out_saved = a.forward(probe()).to_vector();

  // A fresh process, in effect: another initialisation, a fresh optimizer.
  Generator init_b(2);
  MLP b(6, init_b);
  optim::Adam opt_b(b.parameters());  // other hyperparameters too: the checkpoint restores them
  REQUIRE(snapshot(b) != snapshot(a));
  io::load_checkpoint(path, b, &opt_b);
  CHECK(b.forward(probe()).to_vector() == out_saved);
  CHECK(snapshot(b) == snapshot(a));
  CHECK(opt_b.lr == 0.01f);
  CHECK(opt_b.betas.second == 0.99f);
  CHECK(opt_b.weight_decay == 0.01f);

  // And the same training from there gives the same numbers.
  for (int k = 4; k < 8; ++k) {
    train_step(a, opt_a, k);
    train_step(b, opt_b, k);
  }
  CHECK(snapshot(b) == snapshot(a));
  CHECK(b.forward(probe()).to_vector() == a.forward(probe()).to_vector());

  // The file is a plain safetensors file: the model's names as they are, the optimizer's under "optimizer.".
  io::Metadata metadata;
  StateDict file = io::load_safetensors(path, &metadata);
  CHECK(metadata == io::Metadata{{"format", "pt"}, {"optimizer", "Adam"}});
  CHECK(file.count("fc1.weight") == 1);
  CHECK(file.count("fc2.bias") == 1);
  CHECK(file.count("optimizer.Adam.lr") == 1);
  CHECK(file.at("optimizer.state.3.step").item() == 4);
  CHECK(file.size() == 4 + 6 + 4 * 3);  // 4 parameters; 6 hyperparameter keys; step, exp_avg, exp_avg_sq each

  // Weights only: a model without an optimizer reads the same file, and writes one without "optimizer.".
  Generator init_c(3);
  MLP c(6, init_c);
  io::load_checkpoint(path, c);
  CHECK(c.forward(probe()).to_vector() == out_saved);
  io::save_checkpoint(dir / "weights.safetensors", c);
  CHECK(io::load_safetensors(dir / "weights.safetensors").size() == 4);
}

TEST_CASE("io/checkpoint: a damaged or mismatched file changes nothing") {
  test::TempDir dir("checkpoint_damaged");
  auto good_path = dir / "good.safetensors";
  auto path = dir / "bad.safetensors";

  Generator init(1);
  MLP model(6, init);
  optim::Adam opt(model.parameters(), 0.01f);
  train_step(model, opt, 0);
  io::save_checkpoint(good_path, model, &opt);
  const std::string good = test::read_bytes(good_path);

  // Move on, so that loading the good file would change things.
  train_step(model, opt, 1);
  const auto model_before = snapshot(model);
  const auto opt_before = snapshot(opt);
  auto check_refused = [&](const std::string& what) {
    CAPTURE(what);
    CHECK_THROWS_AS(io::load_checkpoint(path, model, &opt), Error);
    CHECK(snapshot(model) == model_before);
    CHECK(snapshot(opt) == opt_before);
  };
  auto refuse_bytes = [&](const std::string& bytes, const std::string& what) {
    test::write_bytes(path, bytes);
    check_refused(what);
  };
  auto refuse_map = [&](const StateDict& tensors, const std::string& what) {
    io::save_safetensors(path, tensors);
    check_refused(what);
  };

  uint64_t n = 0;
  std::memcpy(&n, good.data(), 8);
  const std::string header = good.substr(8, n);
  auto with_header = [&](std::string h) {
    h.resize(n, ' ');  // same length, so the data stays where it was
    return good.substr(0, 8) + h + good.substr(8 + n);
  };
  auto replace = [&](std::string h, const std::string& from, const std::string& to) {
    auto at = h.find(from);
    REQUIRE(at != std::string::npos);
    return h.replace(at, from.size(), to);
  };

  SUBCASE("truncated at several offsets") {
    for (size_t cut :
         {size_t(0), size_t(5), size_t(8), size_t(8 + n / 2), size_t(8 + n), good.size() - 4, good.size() - 1})
      refuse_bytes(good.substr(0, cut), fmt::format("cut at {}", cut));
  }
  SUBCASE("a flipped header length") {
    for (uint64_t bad : {n ^ 1, n ^ 0x100, n ^ (uint64_t(1) << 40), uint64_t(0)})
      refuse_bytes(test::le64(bad) + good.substr(8), fmt::format("length {}", bad));
  }
  SUBCASE("corrupt JSON, wrong dtype, bad offsets, trailing bytes") {
    refuse_bytes(with_header(replace(header, "{", "[")), "not an object");
    refuse_bytes(with_header(replace(header, "\"dtype\"", "\"dtype ")), "broken string");
    refuse_bytes(with_header(replace(header, "F32", "F16")), "dtype F16");
    refuse_bytes(with_header(replace(header, "\"data_offsets\":[0,", "\"data_offsets\":[4,")), "offset moved");
    refuse_bytes(with_header(replace(header, "\"shape\":[6]", "\"shape\":[5]")), "shape shrunk");
    refuse_bytes(good + std::string(8, '\0'), "trailing bytes");
    std::string flipped = good;
    flipped[8 + n / 3] ^= 0x20;  // one bit somewhere in the header
    refuse_bytes(flipped, "a flipped bit");
  }
  SUBCASE("another model") {
    Generator g(5);
    MLP wider(7, g);
    optim::Adam o(wider.parameters());
    io::save_checkpoint(path, wider, &o);
    check_refused("another hidden size");
    nn::Linear linear(4, 3);
    io::save_checkpoint(path, linear);
    CHECK_THROWS_WITH_AS(
        io::load_checkpoint(path, model),
        doctest::Contains("not a checkpoint of this MLP: missing keys [fc1.weight, fc1.bias, fc2.weight, "
                          "fc2.bias], unexpected keys [bias, weight]"),
        Error);
    CHECK(snapshot(model) == model_before);
  }
  SUBCASE("a good model with a bad optimizer part: the model is not touched either") {
    StateDict all = io::load_safetensors(good_path);
    StateDict bad = all;
    bad["optimizer.state.1.exp_avg"] = zeros({5});
    refuse_map(bad, "an exp_avg of the wrong shape");
    bad = all;
    bad["optimizer.Adam.lr"] = full({1}, -1.0f);
    refuse_map(bad, "a negative lr");
    bad = all;
    bad.erase("optimizer.Adam.num_params");
    refuse_map(bad, "no parameter count");

    // Another optimizer's state.
    optim::SGD sgd(model.parameters(), 0.1f, 0.9f);
    io::save_checkpoint(path, model, &sgd);
    CHECK_THROWS_WITH_AS(
        io::load_checkpoint(path, model, &opt),
        doctest::Contains("optimizer: load_state_dict: Adam: the state dict is from another optimizer"), Error);
    // No optimizer state at all.
    io::save_checkpoint(path, model);
    CHECK_THROWS_WITH_AS(io::load_checkpoint(path, model, &opt), doctest::Contains("the file holds no optimizer state"),
                         Error);
    CHECK(snapshot(model) == model_before);
    CHECK(snapshot(opt) == opt_before);
  }
  SUBCASE("and the good file still loads") {
    test::write_bytes(path, good);
    io::load_checkpoint(path, model, &opt);
    CHECK(snapshot(model) != model_before);
  }
}

TEST_CASE("io/checkpoint: errors name the file") {
  test::TempDir dir("checkpoint_errors");
  Generator init(1);
  MLP model(6, init);
  auto nowhere = dir / "missing/ckpt.safetensors";
  CHECK_THROWS_WITH_AS(io::save_checkpoint(nowhere, model),
                       doctest::Contains(fmt::format("'{}': cannot open the folder", nowhere.string()).c_str()), Error);
  CHECK_THROWS_WITH_AS(io::load_checkpoint(nowhere, model),
                       doctest::Contains(("load_safetensors: '" + nowhere.string() + "': cannot open").c_str()), Error);
}
