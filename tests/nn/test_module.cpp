// nn::Module (registration, names, modes, state dicts, printing), nn::init
// and nn::Linear.
#include <doctest/doctest.h>

#include <qkv/qkv.hpp>

#include <cmath>
#include <string>

#include "reference.hpp"

using namespace qkv;

namespace {

// A two-level model, to see names nest the way PyTorch nests them.
struct Block : nn::Module {
  std::shared_ptr<nn::Linear> W_q, W_o;
  Tensor scale;
  Block() {
    W_q = register_module("W_q", std::make_shared<nn::Linear>(4, 3));
    W_o = register_module("W_o", std::make_shared<nn::Linear>(3, 4, false));
    register_parameter("scale", scale, ones({1}));
  }
  std::string type_name() const override { return "Block"; }
};

struct Model : nn::Module {
  std::shared_ptr<nn::ModuleList> layers;
  Model() {
    layers = register_module("layers", std::make_shared<nn::ModuleList>());
    layers->push_back(std::make_shared<Block>());
    layers->push_back(std::make_shared<Block>());
  }
  std::string type_name() const override { return "Model"; }
};

std::vector<std::string> names(const nn::Module& m) {
  std::vector<std::string> out;
  for (auto& [name, p] : m.named_parameters()) out.push_back(name);
  return out;
}

}  // namespace

TEST_CASE("nn/module: names, counts and modes") {
  Model model;
  CHECK(names(model) == std::vector<std::string>{"layers.0.scale", "layers.0.W_q.weight", "layers.0.W_q.bias",
                                                 "layers.0.W_o.weight", "layers.1.scale", "layers.1.W_q.weight",
                                                 "layers.1.W_q.bias", "layers.1.W_o.weight"});
  CHECK(model.parameters().size() == 8);
  CHECK(model.num_parameters() == 2 * (1 + 12 + 3 + 12));
  for (const Tensor& p : model.parameters()) CHECK(p.requires_grad());

  CHECK(model.is_training());
  model.eval();
  CHECK_FALSE(model.layers->at<Block>(1)->W_q->is_training());
  model.train();
  CHECK(model.layers->at<Block>(1)->W_q->is_training());

  // The handle in the member, in parameters() and in the state dict is one tensor.
  Block& b = *model.layers->at<Block>(0);
  CHECK(b.W_q->weight.same(model.parameters()[1]));
}

TEST_CASE("nn/module: zero_grad") {
  nn::Linear lin(3, 2);
  sum(lin(ones({4, 3}))).backward();
  REQUIRE(lin.weight.grad().defined());
  lin.zero_grad();
  CHECK_FALSE(lin.weight.grad().defined());
  CHECK_FALSE(lin.bias.grad().defined());
}

TEST_CASE("nn/module: state_dict round trip and refusals") {
  Generator g1(1), g2(2);
  nn::Linear a(3, 2, true, g1), b(3, 2, true, g2);
  REQUIRE(a.weight.to_vector() != b.weight.to_vector());
  StateDict state = a.state_dict();
  CHECK(state.size() == 2);
  CHECK(state.count("weight") == 1);
  b.load_state_dict(state);
  CHECK(b.weight.to_vector() == a.weight.to_vector());
  CHECK(b.bias.to_vector() == a.bias.to_vector());

  SUBCASE("a refused state dict changes nothing") {
    nn::Linear c(3, 2, true, g2);
    std::vector<float> before = c.weight.to_vector();
    StateDict missing = state;
    missing.erase("bias");
    CHECK_THROWS_WITH_AS(c.load_state_dict(missing),
                         doctest::Contains("load_state_dict: Linear: missing keys [bias], unexpected keys []"), Error);
    StateDict extra = state;
    extra["W_q.weight"] = zeros({2});
    CHECK_THROWS_WITH_AS(c.load_state_dict(extra), doctest::Contains("unexpected keys [W_q.weight]"), Error);
    StateDict misshaped = state;
    misshaped["weight"] = zeros({3, 2});
    CHECK_THROWS_WITH_AS(
        c.load_state_dict(misshaped),
        doctest::Contains("load_state_dict: Linear: 'weight' has shape (3, 2) in the state dict, (2, 3) in the model"),
        Error);
    CHECK(c.weight.to_vector() == before);
    // Every mis-shaped entry is named in one message, an undefined one too.
    StateDict two_bad = state;
    two_bad["weight"] = zeros({3, 2});
    two_bad["bias"] = Tensor();
    CHECK_THROWS_WITH_AS(
        c.load_state_dict(two_bad),
        doctest::Contains("load_state_dict: Linear: 'weight' has shape (3, 2) in the state dict, (2, 3) "
                          "in the model; 'bias' has shape undefined in the state dict, (2) in the model"),
        Error);
    CHECK(c.weight.to_vector() == before);
  }
  SUBCASE("a state dict from another model") {
    Model m;
    CHECK_THROWS_WITH_AS(m.load_state_dict(state), doctest::Contains("missing keys [layers.0.scale"), Error);
  }
}

TEST_CASE("nn/module: load_state_dict(state, strict = false), as PyTorch") {
  Generator g1(1);
  Model source;
  for (Tensor& p : source.parameters()) nn::init::normal_(p, 0, 1, g1);
  StateDict state = source.state_dict();

  SUBCASE("loads what matches by name, returns the missing and unexpected keys") {
    Model target;
    const std::vector<float> scale_before = target.layers->at<Block>(1)->scale.to_vector();
    StateDict partial = state;
    partial.erase("layers.1.scale");
    partial.erase("layers.0.W_q.bias");
    partial["head.weight"] = zeros({2, 2});
    partial["layers.2.scale"] = ones({1});
    IncompatibleKeys keys = target.load_state_dict(partial, /*strict=*/false);
    // PyTorch: missing keys in the model's order, unexpected in the state dict's (sorted here).
    CHECK(keys.missing_keys == std::vector<std::string>{"layers.0.W_q.bias", "layers.1.scale"});
    CHECK(keys.unexpected_keys == std::vector<std::string>{"head.weight", "layers.2.scale"});
    CHECK(target.layers->at<Block>(0)->W_q->weight.to_vector() == source.layers->at<Block>(0)->W_q->weight.to_vector());
    CHECK(target.layers->at<Block>(1)->W_o->weight.to_vector() == source.layers->at<Block>(1)->W_o->weight.to_vector());
    CHECK(target.layers->at<Block>(1)->scale.to_vector() == scale_before);  // missing: kept
    // The same state dict, strict: refused, naming both lists.
    Model strict_target;
    CHECK_THROWS_WITH_AS(strict_target.load_state_dict(partial),
                         doctest::Contains("load_state_dict: Model: missing keys [layers.0.W_q.bias, layers.1.scale], "
                                           "unexpected keys [head.weight, layers.2.scale]"),
                         Error);
  }
  SUBCASE("a full state dict: nothing missing, nothing unexpected") {
    Model target;
    IncompatibleKeys keys = target.load_state_dict(state, false);
    CHECK(keys.empty());
    CHECK(target.layers->at<Block>(1)->scale.to_vector() == source.layers->at<Block>(1)->scale.to_vector());
  }
  SUBCASE("a wrong shape is still an error, and changes nothing") {
    Model target;
    const std::vector<float> before = target.layers->at<Block>(0)->W_q->weight.to_vector();
    StateDict bad = state;
    bad.erase("layers.1.scale");
    bad["layers.1.W_o.weight"] = zeros({3, 3});
    CHECK_THROWS_WITH_AS(target.load_state_dict(bad, false),
                         doctest::Contains("load_state_dict: Model: 'layers.1.W_o.weight' has shape (3, 3) in the "
                                           "state dict, (4, 3) in the model"),
                         Error);
    CHECK(target.layers->at<Block>(0)->W_q->weight.to_vector() == before);
  }
}

TEST_CASE("nn/module: from_d2l_names") {
  // d2l's nn.Sequential names the blocks block0, block1, …; qkv's ModuleList 0, 1, ….
  StateDict d2l{{"blks.block0.attention.W_q.weight", ones({2})},
                {"encoder.blks.block11.ffn.dense2.bias", ones({3})},
                {"embedding.weight", ones({4})},
                {"blks.blockade.x", ones({5})},  // not block<N>: kept
                {"block0.x", ones({6})},         // not after blks: kept
                {"blks.block.y", ones({7})}};
  StateDict qkv_names = nn::from_d2l_names(d2l);
  std::vector<std::string> keys;
  for (auto& [k, t] : qkv_names) keys.push_back(k);
  CHECK(keys == std::vector<std::string>{"blks.0.attention.W_q.weight", "blks.block.y", "blks.blockade.x", "block0.x",
                                         "embedding.weight", "encoder.blks.11.ffn.dense2.bias"});
  CHECK(qkv_names.at("encoder.blks.11.ffn.dense2.bias").same(d2l.at("encoder.blks.block11.ffn.dense2.bias")));
  CHECK_THROWS_WITH_AS(nn::from_d2l_names({{"blks.0.w", ones({1})}, {"blks.block0.w", ones({1})}}),
                       doctest::Contains("from_d2l_names: 'blks.0.w' and 'blks.block0.w' both become 'blks.0.w'"),
                       Error);
}

TEST_CASE("nn/module: d2l's own Transformer weights, saved by PyTorch, load and give torch's outputs") {
  // tests/reference/d2l_transformer.safetensors holds the state dict of d2l's
  // TransformerEncoder and TransformerDecoder (d2l's classes and names,
  // tools/reference/d2l.py) under encoder. and decoder., written by
  // tools/reference/io.py; the case io/d2l_transformer holds torch's outputs.
  const test::RefCase& c = test::reference("io", "d2l_transformer");
  const StateDict d2l_state = io::load_safetensors(std::string(QKV_REFERENCE_DIR) + "/d2l_transformer.safetensors");
  CHECK(d2l_state.count("encoder.blks.block1.attention.W_q.weight") == 1);

  auto encoder = std::make_shared<nn::TransformerEncoder>(20, 16, 24, 4, 2, 0.1f);
  auto decoder = std::make_shared<nn::TransformerDecoder>(18, 16, 24, 4, 2, 0.0f);  // training mode, no dropout
  nn::EncoderDecoder model(encoder, decoder);
  // As it is, d2l's names do not fit: every block is missing.
  CHECK_THROWS_WITH_AS(model.load_state_dict(d2l_state), doctest::Contains("missing keys [encoder.blks.0."), Error);
  model.load_state_dict(nn::from_d2l_names(d2l_state));  // strict: every name and shape matches

  encoder->eval();
  Tensor enc_out = encoder->forward(c.ints_at("src"), c.ints_at("src_valid_lens")).outputs;  // (2, 6, 16)
  test::check_close(enc_out, c.tensor("enc_out"), "encoder outputs");
  decoder->train();
  nn::DecoderState state = decoder->init_state({enc_out, Tensor()}, c.ints_at("src_valid_lens"));
  test::check_close(decoder->forward(c.ints_at("tgt"), state), c.tensor("logits"), "decoder logits");  // (2, 5, 18)
}

TEST_CASE("nn/module: ModuleList::at checks the type and the index") {
  Model model;
  CHECK(model.layers->at<Block>(1)->W_q->in_features == 4);
  CHECK(model.layers->at<nn::Module>(0) != nullptr);  // any base of the module's type
  CHECK_THROWS_WITH_AS(model.layers->at<nn::Linear>(1),
                       doctest::Contains("ModuleList::at: module 1 is a Block, not a qkv::nn::Linear"), Error);
  CHECK_THROWS_WITH_AS(model.layers->at<Block>(2),
                       doctest::Contains("ModuleList: index 2 is out of range for a list of 2 modules"), Error);
  CHECK_THROWS_WITH_AS((*model.layers)[5], doctest::Contains("index 5 is out of range for a list of 2 modules"), Error);
}

TEST_CASE("nn/module: printing") {
  Model model;
  std::string expected =
      "Model(\n"
      "  (layers): ModuleList(\n"
      "    (0): Block(\n"
      "      (W_q): Linear(in_features=4, out_features=3, bias=True)  # 15 parameters\n"
      "      (W_o): Linear(in_features=3, out_features=4, bias=False)  # 12 parameters\n"
      "    )  # 28 parameters\n"
      "    (1): Block(\n"
      "      (W_q): Linear(in_features=4, out_features=3, bias=True)  # 15 parameters\n"
      "      (W_o): Linear(in_features=3, out_features=4, bias=False)  # 12 parameters\n"
      "    )  # 28 parameters\n"
      "  )  # 56 parameters\n"
      ")\n"
      "Total parameters: 56";
  CHECK(model.repr() == expected);
}

TEST_CASE("nn/module: registration errors") {
  struct Bad : nn::Module {
    std::string type_name() const override { return "Bad"; }
    void twice() {
      register_parameter("w", ones({1}));
      register_parameter("w", ones({1}));
    }
    void dotted() { register_parameter("a.b", ones({1})); }
    void null_child() { register_module<nn::Linear>("lin", nullptr); }
    Tensor m;
    void one_member_two_names() {
      register_parameter("a", m, ones({1}));
      register_parameter("b", m, ones({1}));
    }
  } bad;
  CHECK_THROWS_WITH_AS(bad.one_member_two_names(),
                       doctest::Contains("register_parameter: Bad: the member given for 'b' is already parameter 'a'"),
                       Error);
  CHECK_THROWS_WITH_AS(bad.twice(), doctest::Contains("register_parameter: Bad already has a parameter 'w'"), Error);
  CHECK_THROWS_WITH_AS(bad.dotted(), doctest::Contains("register_parameter: bad name 'a.b'"), Error);
  CHECK_THROWS_WITH_AS(bad.null_child(), doctest::Contains("register_module: module 'lin' is null"), Error);
}

TEST_CASE("nn/init") {
  // Mathematics: U[-b, b] has variance b²/3; the sample of 20000 is within a few percent.
  auto variance = [](const Tensor& t) {
    double s = 0, s2 = 0;
    for (float v : t.to_vector()) s += v, s2 += static_cast<double>(v) * v;
    double n = static_cast<double>(t.numel());
    return s2 / n - (s / n) * (s / n);
  };
  auto max_abs = [](const Tensor& t) {
    float m = 0;
    for (float v : t.to_vector()) m = std::max(m, std::fabs(v));
    return m;
  };
  Generator gen(3);
  Tensor w = Tensor::empty({200, 100});
  CHECK(nn::init::fan_in_and_fan_out(w) == std::pair<int64_t, int64_t>{100, 200});

  nn::init::xavier_uniform_(w, 1, gen);  // b = sqrt(6 / 300)
  double b = std::sqrt(6.0 / 300);
  CHECK(max_abs(w) <= b);
  CHECK(variance(w) == doctest::Approx(b * b / 3).epsilon(0.05));
  nn::init::xavier_normal_(w, 2, gen);  // std = 2·sqrt(2 / 300)
  CHECK(variance(w) == doctest::Approx(4 * 2.0 / 300).epsilon(0.05));
  nn::init::kaiming_uniform_(w, 0, gen);  // b = sqrt(2)·sqrt(3 / 100)
  CHECK(max_abs(w) <= std::sqrt(6.0 / 100));
  CHECK(variance(w) == doctest::Approx(2.0 / 100).epsilon(0.05));
  nn::init::normal_(w, 1, 0.5f, gen);
  CHECK(variance(w) == doctest::Approx(0.25).epsilon(0.05));
  nn::init::zeros_(w);
  CHECK(max_abs(w) == 0);
  Tensor v = Tensor::empty({3});
  CHECK_THROWS_WITH_AS(
      nn::init::xavier_uniform_(v),
      doctest::Contains("xavier_uniform_: fan in and fan out need a tensor with at least 2 dims, got (3)"), Error);
}

TEST_CASE("nn/linear") {
  SUBCASE("PyTorch's default initialisation bound 1/sqrt(in_features)") {
    Generator gen(4);
    nn::Linear lin(400, 50, true, gen);
    float bound = 1.0f / 20;
    for (float v : lin.weight.to_vector()) REQUIRE(std::fabs(v) <= bound);
    for (float v : lin.bias.to_vector()) REQUIRE(std::fabs(v) <= bound);
    Generator again(4);
    CHECK(nn::Linear(400, 50, true, again).weight.to_vector() == lin.weight.to_vector());  // seeded
  }
  SUBCASE("against torch.nn.Linear") {
    // Sizes from the case's p.weight (out_features, in_features); a bias when it has p.bias.
    for (const std::string& name : test::reference_cases("nn_module", "linear/")) {
      CAPTURE(name);
      const test::RefCase& ref = test::reference("nn_module", name);
      const Shape weight = ref.tensor("p.weight").shape();
      nn::Linear lin(weight[1], weight[0], ref.has("p.bias"));
      test::check_module_against_torch("nn_module", name, lin, [&](const std::vector<Tensor>& x, const test::RefCase&) {
        return std::vector<Tensor>{lin(x[0])};
      });
    }
  }
  SUBCASE("errors") {
    nn::Linear lin(5, 3);
    CHECK_THROWS_WITH_AS(
        lin(zeros({2, 4})),
        doctest::Contains("linear: input (2, 4) x weight (3, 5): the input has 4 features, the weight expects 5"),
        Error);
    CHECK_THROWS_WITH_AS(nn::Linear(0, 3),
                         doctest::Contains("Linear: in_features 0 and out_features 3 must be positive"), Error);
  }
}
