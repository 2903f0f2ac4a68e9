// Weight tying: one tensor registered under two names, one submodule under
// two names. As in PyTorch, parameters() and named_parameters() list each
// tensor once (so counts and optimizers see one parameter) and state_dict()
// keeps every name.
#include <doctest/doctest.h>

#include <qkv/qkv.hpp>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

using namespace qkv;

namespace {

constexpr int64_t V = 5, D = 3;  // vocabulary, features

// A language model's head reusing the embedding matrix (Press & Wolf 2017):
//   ids (B, T) -> emb (B, T, D) -> proj (B, T, D) -> · out_weightᵀ + out_bias (B, T, V)
// with out_weight the embedding's weight when tied, a copy of it when not.
struct LM : nn::Module {
  std::shared_ptr<nn::Embedding> emb;
  std::shared_ptr<nn::Linear> proj;
  Tensor out_weight, out_bias;  // (V, D), (V)
  LM(bool tied, Generator& gen) {
    emb = register_module("emb", std::make_shared<nn::Embedding>(V, D, gen));
    proj = register_module("proj", std::make_shared<nn::Linear>(D, D, true, gen));
    out_weight = register_parameter("out_weight", tied ? emb->weight : emb->weight.detach().clone());
    out_bias = register_parameter("out_bias", zeros({V}));
  }
  Tensor forward(const IntTensor& ids) const { return linear((*proj)((*emb)(ids)), out_weight, out_bias); }
  std::string type_name() const override { return "LM"; }
};

Tensor loss_of(const LM& model) {
  IntTensor ids = int_tensor({0, 3, 4, 3, 1, 2}, {2, 3});
  IntTensor targets = int_tensor({3, 4, 0, 1, 2, 2}, {6});
  return cross_entropy(model.forward(ids).reshape({6, V}), targets);
}

// A module that shares one Linear as two of its submodules.
struct Shared : nn::Module {
  std::shared_ptr<nn::Linear> enc, dec;
  Shared() {
    auto layer = std::make_shared<nn::Linear>(2, 2);
    enc = register_module("enc", layer);
    dec = register_module("dec", layer);
  }
  std::string type_name() const override { return "Shared"; }
};

// A module that takes submodules from outside.
struct Holder : nn::Module {
  void add(const std::string& name, std::shared_ptr<nn::Module> m) { register_module(name, std::move(m)); }
  std::string type_name() const override { return "Holder"; }
};

std::vector<std::string> names_of(const std::vector<std::pair<std::string, Tensor>>& named) {
  std::vector<std::string> names;
  for (const auto& [name, p] : named) names.push_back(name);
  return names;
}

}  // namespace

TEST_CASE("nn/module: a tied weight is one parameter, with every name in the state dict") {
  Generator gen(0);
  LM model(/*tied=*/true, gen);
  // PyTorch's named_parameters() for the same module: its own parameters,
  // then its submodules' (named_modules() order), each tensor under the
  // first name it is reached by.
  CHECK(names_of(model.named_parameters()) ==
        std::vector<std::string>{"out_weight", "out_bias", "proj.weight", "proj.bias"});
  CHECK(model.parameters().size() == 4);
  CHECK(model.num_parameters() == V * D + V + D * D + D);  // 32, the tied (V, D) matrix once
  // state_dict(): every name, sharing the one storage.
  StateDict state = model.state_dict();
  CHECK(state.size() == 5);
  REQUIRE(state.count("out_weight") == 1);
  CHECK(state.at("out_weight").data() == state.at("emb.weight").data());
  // The printed count agrees.
  CHECK(model.repr().find("Total parameters: 32") != std::string::npos);

  SUBCASE("a submodule registered twice is listed once, and saved under both names") {
    Shared shared;
    CHECK(names_of(shared.named_parameters()) == std::vector<std::string>{"enc.weight", "enc.bias"});
    CHECK(shared.num_parameters() == 6);
    CHECK(shared.state_dict().size() == 4);
    optim::SGD opt(shared.parameters(), 0.1f);  // one tensor, given once
    CHECK(opt.params().size() == 2);
  }
}

TEST_CASE("nn/module: an optimizer step on a tied model uses the sum of both uses' gradients") {
  // The chain rule: when W is used twice, dL/dW is the sum of the gradients
  // of its two uses, which are what an untied copy of the model computes
  // for its two tensors (emb.weight and out_weight, equal in value).
  Generator gen_tied(1), gen_untied(1);
  LM tied(true, gen_tied), untied(false, gen_untied);
  loss_of(untied).backward();
  const std::vector<float> w0 = tied.emb->weight.to_vector();
  std::vector<float> g(w0.size());
  for (size_t i = 0; i < g.size(); ++i) g[i] = untied.emb->weight.grad().data()[i] + untied.out_weight.grad().data()[i];

  SUBCASE("SGD: W ← W − lr·(g_emb + g_out), one update, not two") {
    optim::SGD opt(tied.parameters(), 0.1f);
    loss_of(tied).backward();
    opt.step();
    std::vector<float> w1 = tied.emb->weight.to_vector();
    for (size_t i = 0; i < w1.size(); ++i) CHECK(w1[i] == doctest::Approx(w0[i] - 0.1f * g[i]).epsilon(1e-5));
    CHECK(tied.out_weight.same(tied.emb->weight));
  }
  SUBCASE("Adam's first step: W ← W − lr·g/(|g| + ε) (m̂ = g, v̂ = g²)") {
    optim::Adam opt(tied.parameters(), 0.01f);
    loss_of(tied).backward();
    opt.step();
    CHECK(opt.state(0).step == 1);  // the tied weight is parameter 0 (out_weight), updated once
    std::vector<float> w1 = tied.emb->weight.to_vector();
    for (size_t i = 0; i < w1.size(); ++i) {
      const float expected = w0[i] - 0.01f * g[i] / (std::fabs(g[i]) + 1e-8f);
      CHECK(w1[i] == doctest::Approx(expected).epsilon(1e-5));
    }
  }
}

TEST_CASE("nn/module: loading a tied model's state dict") {
  Generator gen(2), other(3);
  LM model(true, gen), source(true, other);

  SUBCASE("its own state dict, under both names, loads") {
    model.load_state_dict(source.state_dict());
    CHECK(model.emb->weight.to_vector() == source.emb->weight.to_vector());
    CHECK(model.out_weight.same(model.emb->weight));
  }
  SUBCASE("the two names with different values are refused, changing nothing") {
    StateDict bad = source.state_dict();
    bad["out_weight"] = zeros({V, D});
    const std::vector<float> before = model.emb->weight.to_vector();
    CHECK_THROWS_WITH_AS(model.load_state_dict(bad),
                         doctest::Contains("load_state_dict: LM: 'out_weight' and 'emb.weight' are one tied parameter "
                                           "of the model, but the state dict gives them different values"),
                         Error);
    CHECK(model.emb->weight.to_vector() == before);
  }
  SUBCASE("an untied model's state dict fills a tied one only when the copies agree") {
    Generator g(4);
    LM untied(false, g);  // out_weight starts as a copy of emb.weight
    model.load_state_dict(untied.state_dict());
    CHECK(model.emb->weight.to_vector() == untied.emb->weight.to_vector());
  }
  SUBCASE("not strict, one name is enough") {
    StateDict one = source.state_dict();
    one.erase("out_weight");
    auto keys = model.load_state_dict(one, /*strict=*/false);
    CHECK(keys.missing_keys == std::vector<std::string>{"out_weight"});
    CHECK(model.out_weight.to_vector() == source.emb->weight.to_vector());
  }
}

TEST_CASE("nn/module: a module cannot contain itself") {
  auto a = std::make_shared<Holder>(), b = std::make_shared<Holder>();
  a->add("b", b);
  CHECK_THROWS_WITH_AS(b->add("a", a),
                       doctest::Contains("register_module: 'a' (Holder) contains this Holder: a module cannot be its "
                                         "own submodule"),
                       Error);
  CHECK_THROWS_WITH_AS(a->add("self", a), doctest::Contains("a module cannot be its own submodule"), Error);
  CHECK(b->named_children().empty());
  CHECK(a->named_children().size() == 1);
}
