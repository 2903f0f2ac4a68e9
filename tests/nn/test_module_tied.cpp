// Weight tying: one layer's member assigned another's parameter (PyTorch's
// `out.weight = emb.weight`), one tensor registered under two names, one
// submodule under two names. As in PyTorch, parameters() and
// named_parameters() list each tensor once (so counts and optimizers see
// one parameter) and state_dict() keeps every name. And a member assigned
// something that cannot be its parameter is an error naming it.
#include <doctest/doctest.h>

#include <qkv/qkv.hpp>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "../io/io_test_util.hpp"

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
    register_parameter("out_weight", out_weight, tied ? emb->weight : emb->weight.detach().clone());
    register_parameter("out_bias", out_bias, zeros({V}));
  }
  Tensor forward(const IntTensor& ids) const { return linear((*proj)((*emb)(ids)), out_weight, out_bias); }
  std::string type_name() const override { return "LM"; }
};

Tensor loss_of(const LM& model) {
  IntTensor ids = int_tensor({0, 3, 4, 3, 1, 2}, {2, 3});
  IntTensor targets = int_tensor({3, 4, 0, 1, 2, 2}, {6});
  return cross_entropy(model.forward(ids).reshape({6, V}), targets);
}

// The same language model written as in PyTorch, its head an nn::Linear
// whose weight is the embedding's when tied (`out.weight = emb.weight`), a
// copy of it when not:
//   ids (B, T) -> emb (B, T, D) -> proj (B, T, D) -> out (B, T, V)
struct TiedLM : nn::Module {
  std::shared_ptr<nn::Embedding> emb;
  std::shared_ptr<nn::Linear> proj, out;
  TiedLM(bool tied, Generator& gen) {
    emb = register_module("emb", std::make_shared<nn::Embedding>(V, D, gen));
    proj = register_module("proj", std::make_shared<nn::Linear>(D, D, true, gen));
    out = register_module("out", std::make_shared<nn::Linear>(D, V, true, gen));
    if (tied)
      out->weight = emb->weight;
    else
      copy_into(out->weight, emb->weight);
  }
  Tensor forward(const IntTensor& ids) const { return (*out)((*proj)((*emb)(ids))); }
  std::string type_name() const override { return "TiedLM"; }
  static void copy_into(Tensor& dst, const Tensor& src) { std::copy(src.data(), src.data() + src.numel(), dst.data()); }
};

Tensor loss_of(const TiedLM& model) {
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

TEST_CASE("nn/module: out->weight = emb->weight ties the weights, as PyTorch's out.weight = emb.weight") {
  Generator gen(5);
  TiedLM model(/*tied=*/true, gen);
  // PyTorch's named_parameters() for the same module: out.weight is
  // emb.weight, reached first under that name.
  CHECK(names_of(model.named_parameters()) ==
        std::vector<std::string>{"emb.weight", "proj.weight", "proj.bias", "out.bias"});
  CHECK(model.num_parameters() == V * D + D * D + D + V);  // 32: the (V, D) matrix once
  StateDict state = model.state_dict();
  CHECK(state.size() == 5);
  REQUIRE(state.count("out.weight") == 1);
  CHECK(state.at("out.weight").data() == state.at("emb.weight").data());
  CHECK(model.repr().find("Total parameters: 32") != std::string::npos);
  // zero_grad reaches the shared tensor through the member.
  loss_of(model).backward();
  REQUIRE(model.emb->weight.grad().defined());
  model.zero_grad();
  CHECK(!model.emb->weight.grad().defined());

  SUBCASE("untying again is seen as well") {
    model.out->weight = model.emb->weight.detach().clone().requires_grad_();
    CHECK(model.parameters().size() == 5);
    CHECK(model.num_parameters() == 2 * V * D + D * D + D + V);
  }
}

TEST_CASE("nn/module: Adam on a model tied by assignment matches the untied model fed the summed gradients") {
  // The chain rule: the gradient of the one tied W is the sum of the
  // gradients of its two uses, which the untied model computes for its two
  // equal tensors. So the tied model's Adam steps are the untied model's
  // steps with emb.weight's gradient replaced by the sum, out.weight then
  // reset to the new emb.weight (keeping the two equal, as tying does).
  Generator gen_tied(6), gen_untied(6);
  TiedLM tied(true, gen_tied), untied(false, gen_untied);
  REQUIRE(tied.emb->weight.to_vector() == untied.out->weight.to_vector());
  optim::Adam opt_tied(tied.parameters(), 0.01f), opt_untied(untied.parameters(), 0.01f);
  for (int step = 0; step < 3; ++step) {
    opt_tied.zero_grad();
    opt_untied.zero_grad();
    loss_of(tied).backward();
    loss_of(untied).backward();
    float* g_emb = untied.emb->weight.grad().data();
    const float* g_out = untied.out->weight.grad().data();
    for (int64_t i = 0; i < V * D; ++i) g_emb[i] += g_out[i];
    opt_tied.step();
    opt_untied.step();
    TiedLM::copy_into(untied.out->weight, untied.emb->weight);
    CAPTURE(step);
    CHECK(tied.out->weight.same(tied.emb->weight));
    const std::vector<float> a = tied.emb->weight.to_vector(), b = untied.emb->weight.to_vector();
    for (size_t i = 0; i < a.size(); ++i) CHECK(a[i] == doctest::Approx(b[i]).epsilon(1e-6));
    const std::vector<float> pa = tied.proj->weight.to_vector(), pb = untied.proj->weight.to_vector();
    for (size_t i = 0; i < pa.size(); ++i) CHECK(pa[i] == doctest::Approx(pb[i]).epsilon(1e-6));
  }
  CHECK(opt_tied.params().size() == 4);
  CHECK(opt_tied.state(0).step == 3);  // emb.weight, updated once a step
}

TEST_CASE("nn/module: a model tied by assignment saves and loads") {
  test::TempDir dir("module_tied");
  const auto path = dir / "tied.safetensors";
  Generator gen(7), other(8);
  TiedLM model(true, gen), copy(true, other);
  optim::Adam opt(model.parameters(), 0.01f);
  loss_of(model).backward();
  opt.step();
  io::save_checkpoint(path, model, &opt);
  io::load_checkpoint(path, copy);
  CHECK(copy.emb->weight.to_vector() == model.emb->weight.to_vector());
  CHECK(copy.proj->weight.to_vector() == model.proj->weight.to_vector());
  CHECK(copy.out->bias.to_vector() == model.out->bias.to_vector());
  CHECK(copy.out->weight.same(copy.emb->weight));  // loaded in place: still tied
  CHECK(loss_of(copy).item() == loss_of(model).item());
}

TEST_CASE("nn/module: a member assigned something that cannot be its parameter is an error naming it") {
  Generator gen(9);
  TiedLM model(true, gen);
  SUBCASE("undefined") {
    model.out->weight = Tensor();
    CHECK_THROWS_WITH_AS(model.parameters(),
                         doctest::Contains("Linear: parameter 'out.weight' holds an undefined tensor; assign it a "
                                           "tensor of shape (5, 3)"),
                         Error);
    CHECK_THROWS_WITH_AS(model.state_dict(), doctest::Contains("'out.weight' holds an undefined tensor"), Error);
  }
  SUBCASE("another shape") {
    model.out->weight = zeros({V, D + 1}).requires_grad_();
    CHECK_THROWS_WITH_AS(model.state_dict(),
                         doctest::Contains("Linear: parameter 'out.weight' was registered with shape (5, 3) but "
                                           "holds a tensor of shape (5, 4)"),
                         Error);
    CHECK_THROWS_WITH_AS(model.load_state_dict(StateDict{}, false),
                         doctest::Contains("'out.weight' was registered with shape (5, 3)"), Error);
  }
  SUBCASE("the result of an op") {
    model.out->weight = model.emb->weight * 2.0f;
    CHECK_THROWS_WITH_AS(model.num_parameters(),
                         doctest::Contains("parameter 'out.weight' holds the result of an op, not a parameter"), Error);
  }
  SUBCASE("a tensor that does not require grad") {
    model.out->weight = model.emb->weight.detach();
    CHECK_THROWS_WITH_AS(model.parameters(),
                         doctest::Contains("parameter 'out.weight' holds a tensor that does not require grad"), Error);
  }
  SUBCASE("an element of an RNN's weight vector is a member too") {
    nn::GRU gru(2, 3, 1, true, false, 0.0f, gen);
    Tensor w = zeros({9, 3}).requires_grad_();
    gru.weight_hh[0] = w;
    CHECK(gru.state_dict().at("weight_hh_l0").data() == w.data());
    gru.weight_hh[0] = zeros({3, 3}).requires_grad_();
    CHECK_THROWS_WITH_AS(gru.parameters(),
                         doctest::Contains("GRU: parameter 'weight_hh_l0' was registered with shape (9, 3)"), Error);
  }
}

TEST_CASE("nn/module: a parameter registered absent (a Linear's bias = false) is listed once it is assigned") {
  // PyTorch: Linear(4, 3, bias=False) registers bias as None; after
  // lin.bias = nn.Parameter(torch.zeros(3)), named_parameters() gives
  // weight, bias, and setting it back to None removes it again.
  nn::Linear lin(4, 3, /*bias=*/false);
  CHECK(names_of(lin.named_parameters()) == std::vector<std::string>{"weight"});
  lin.bias = zeros({3}).requires_grad_();
  CHECK(names_of(lin.named_parameters()) == std::vector<std::string>{"weight", "bias"});
  CHECK(lin.num_parameters() == 15);
  CHECK(lin.state_dict().at("bias").data() == lin.bias.data());
  CHECK(lin.extra_repr() == "in_features=4, out_features=3, bias=True");
  lin.bias = Tensor();
  CHECK(lin.state_dict().size() == 1);
  lin.bias = ones({3});  // not a parameter: no requires_grad
  CHECK_THROWS_WITH_AS(lin.parameters(),
                       doctest::Contains("Linear: parameter 'bias' holds a tensor that does not require grad"), Error);
}
