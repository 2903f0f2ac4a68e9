// optim::SGD, Adam, AdamW against torch.optim (tests/reference/optim.txt, written
// by tools/reference/optim.py), their state dicts, their errors, and
// clip_grad_norm_ against the mathematics.
#include <doctest/doctest.h>

#include <qkv/optim/adam.hpp>
#include <qkv/optim/clip_grad.hpp>
#include <qkv/optim/sgd.hpp>
#include <qkv/qkv.hpp>

#include <cmath>
#include <memory>
#include <string>

#include "reference.hpp"

using namespace qkv;

namespace {

constexpr int kSteps = 5;  // tools/reference/optim.py's STEPS

float hp(const test::RefCase& c, const std::string& name) { return c.tensor("hp." + name).item(); }

using MakeOptimizer = std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>, const test::RefCase&)>;

// Run a case of optim.txt: the same starting parameters and the same
// gradient at each step as torch (none where torch had none), and compare
// the parameters after every step.
void check_against_torch(const std::string& name, const MakeOptimizer& make) {
  const test::RefCase& c = test::reference("optim", name);
  std::vector<Tensor> params = {c.tensor("p0").requires_grad_(), c.tensor("p1").requires_grad_()};
  std::unique_ptr<optim::Optimizer> opt = make(params, c);
  for (int k = 0; k < kSteps; ++k) {
    if (c.has(fmt::format("lr.{}", k))) opt->lr = c.tensor(fmt::format("lr.{}", k)).item();
    for (size_t i = 0; i < params.size(); ++i) {
      std::string key = fmt::format("grad.{}.{}", k, i);
      if (c.has(key))
        params[i].set_grad(c.tensor(key));
      else
        params[i].zero_grad();  // no gradient: the optimizer must skip this parameter
    }
    opt->step();
    for (size_t i = 0; i < params.size(); ++i)
      test::check_close(params[i], c.tensor(fmt::format("param.{}.{}", k, i)),
                        fmt::format("{}: parameter {} after step {}", name, i, k), 2e-6f, 1e-6f);
  }
}

std::unique_ptr<optim::Optimizer> make_sgd(std::vector<Tensor> params, const test::RefCase& c) {
  auto get = [&](const char* key) { return c.has(std::string("hp.") + key) ? hp(c, key) : 0.0f; };
  return std::make_unique<optim::SGD>(params, hp(c, "lr"), get("momentum"), get("dampening"), get("weight_decay"),
                                      get("nesterov") == 1);
}

std::unique_ptr<optim::Optimizer> make_adam(std::vector<Tensor> params, const test::RefCase& c) {
  return std::make_unique<optim::Adam>(params, hp(c, "lr"), std::pair{hp(c, "beta1"), hp(c, "beta2")}, hp(c, "eps"),
                                       hp(c, "weight_decay"));
}

std::unique_ptr<optim::Optimizer> make_adamw(std::vector<Tensor> params, const test::RefCase& c) {
  return std::make_unique<optim::AdamW>(params, hp(c, "lr"), std::pair{hp(c, "beta1"), hp(c, "beta2")}, hp(c, "eps"),
                                        hp(c, "weight_decay"));
}

std::vector<Tensor> two_params() { return {randn({3, 4}).requires_grad_(), randn({5}).requires_grad_()}; }

void set_grads(std::vector<Tensor>& params, Generator& gen) {
  for (Tensor& p : params) p.set_grad(randn(p.shape(), gen));
}

void check_same(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) CHECK(a[i].to_vector() == b[i].to_vector());  // bit for bit
}

}  // namespace

// --- against torch.optim ------------------------------------------------------------

TEST_CASE("optim/sgd: against torch.optim.SGD") {
  for (const std::string& name : test::reference_cases("optim", "sgd/")) {
    SUBCASE(name.c_str()) { check_against_torch(name, make_sgd); }
  }
}

TEST_CASE("optim/adam: against torch.optim.Adam") {
  for (const std::string& name : test::reference_cases("optim", "adam/")) {
    SUBCASE(name.c_str()) { check_against_torch(name, make_adam); }
  }
}

TEST_CASE("optim/adamw: against torch.optim.AdamW") {
  for (const std::string& name : test::reference_cases("optim", "adamw/")) {
    SUBCASE(name.c_str()) { check_against_torch(name, make_adamw); }
  }
}

// --- behaviour ------------------------------------------------------------------

TEST_CASE("optim/optimizer: zero_grad, skipping, in-place updates, defaults") {
  nn::Linear model(3, 2);
  optim::SGD opt(model.parameters(), 0.5f);
  Tensor w_before = Tensor(model.weight.to_vector(), model.weight.shape());
  sum(model(ones({4, 3}))).backward();
  REQUIRE(model.weight.grad().defined());

  model.bias.zero_grad();  // the bias has no gradient this step: skipped
  std::vector<float> b_before = model.bias.to_vector();
  opt.step();
  // In place: the model's own member sees the update (w ← w − lr·g, g = 4 for every weight).
  for (int64_t i = 0; i < w_before.numel(); ++i) CHECK(model.weight.data()[i] == w_before.data()[i] - 0.5f * 4.0f);
  CHECK(model.bias.to_vector() == b_before);
  CHECK(opt.state(0).step == 1);
  CHECK(opt.state(1).step == 0);

  opt.zero_grad();
  CHECK_FALSE(model.weight.grad().defined());
  CHECK_FALSE(model.bias.grad().defined());
  opt.step();  // nothing has a gradient: nothing moves
  CHECK(opt.state(0).step == 1);

  // PyTorch's defaults.
  optim::Adam adam(model.parameters());
  CHECK(adam.lr == doctest::Approx(1e-3));
  CHECK(adam.betas.first == 0.9f);
  CHECK(adam.betas.second == 0.999f);
  CHECK(adam.eps == 1e-8f);
  CHECK(adam.weight_decay == 0);
  optim::AdamW adamw(model.parameters());
  CHECK(adamw.weight_decay == 1e-2f);
}

TEST_CASE("optim/optimizer: errors name the values") {
  SUBCASE("parameters") {
    CHECK_THROWS_WITH_AS(optim::SGD({}, 0.1f), doctest::Contains("empty parameter list"), Error);
    CHECK_THROWS_WITH_AS(optim::SGD({Tensor()}, 0.1f), doctest::Contains("parameter 0 is undefined"), Error);
    Tensor w = ones({2}).requires_grad_();
    CHECK_THROWS_WITH_AS(optim::SGD({w, w}, 0.1f), doctest::Contains("parameters 0 and 1 are the same tensor"), Error);
    CHECK_THROWS_WITH_AS(optim::SGD({mul(w, 2.0f)}, 0.1f), doctest::Contains("parameter 0 of shape (2) is not a leaf"),
                         Error);
  }
  SUBCASE("SGD") {
    auto p = two_params();
    CHECK_THROWS_WITH_AS(optim::SGD(p, -0.1f), doctest::Contains("SGD: invalid learning rate lr=-0.1"), Error);
    CHECK_THROWS_WITH_AS(optim::SGD(p, 0.1f, -0.9f), doctest::Contains("invalid momentum=-0.9"), Error);
    CHECK_THROWS_WITH_AS(optim::SGD(p, 0.1f, 0.9f, -1), doctest::Contains("invalid dampening=-1"), Error);
    CHECK_THROWS_WITH_AS(optim::SGD(p, 0.1f, 0.9f, 0, -0.5f), doctest::Contains("invalid weight_decay=-0.5"), Error);
    CHECK_THROWS_WITH_AS(optim::SGD(p, 0.1f, 0, 0, 0, true),
                         doctest::Contains("nesterov momentum needs momentum > 0 and dampening = 0, got momentum=0"),
                         Error);
    CHECK_THROWS_WITH_AS(optim::SGD(p, 0.1f, 0.9f, 0.1f, 0, true), doctest::Contains("dampening=0.1"), Error);
    CHECK_THROWS_WITH_AS(optim::SGD(p, NAN), doctest::Contains("lr=nan"), Error);
  }
  SUBCASE("Adam and AdamW") {
    auto p = two_params();
    CHECK_THROWS_WITH_AS(optim::Adam(p, -1e-3f), doctest::Contains("Adam: invalid learning rate lr=-0.001"), Error);
    CHECK_THROWS_WITH_AS(optim::Adam(p, 1e-3f, {1.0f, 0.999f}),
                         doctest::Contains("invalid betas[0]=1 (must be in [0, 1))"), Error);
    CHECK_THROWS_WITH_AS(optim::Adam(p, 1e-3f, {0.9f, -0.1f}), doctest::Contains("invalid betas[1]=-0.1"), Error);
    CHECK_THROWS_WITH_AS(optim::Adam(p, 1e-3f, {0.9f, 0.999f}, -1e-8f), doctest::Contains("invalid eps=-1e-08"), Error);
    CHECK_THROWS_WITH_AS(optim::Adam(p, 1e-3f, {0.9f, 0.999f}, 1e-8f, -1), doctest::Contains("invalid weight_decay=-1"),
                         Error);
    CHECK_THROWS_WITH_AS(optim::AdamW(p, 1e-3f, {0.9f, 1.5f}), doctest::Contains("AdamW: invalid betas[1]=1.5"), Error);
    CHECK_THROWS_WITH_AS(optim::AdamW(p, 1e-3f, {0.9f, 0.999f}, 1e-8f, -0.01f),
                         doctest::Contains("AdamW: invalid weight_decay=-0.01"), Error);
  }
  SUBCASE("a bad hyperparameter set after construction fails at step()") {
    auto p = two_params();
    optim::Adam opt(p);
    opt.lr = -1;
    CHECK_THROWS_WITH_AS(opt.step(), doctest::Contains("Adam: invalid learning rate lr=-1"), Error);
  }
  SUBCASE("a gradient of the wrong shape") {
    // set_grad refuses one; step() checks again for one put in behind its back.
    auto p = two_params();
    CHECK_THROWS_AS(p[0].set_grad(ones({4, 3})), Error);
    p[0].impl()->grad = ones({4, 3});
    optim::SGD opt(p, 0.1f);
    CHECK_THROWS_WITH_AS(
        opt.step(), doctest::Contains("SGD: parameter 0 has shape (3, 4) but its gradient has shape (4, 3)"), Error);
  }
}

// --- state dicts ------------------------------------------------------------------

TEST_CASE("optim/state_dict: names, and resuming gives the same numbers bit for bit") {
  auto check_resume = [](auto make) {
    Generator gen(7);
    std::vector<Tensor> a = {randn({3, 4}, gen).requires_grad_(), randn({5}, gen).requires_grad_()};
    std::vector<Tensor> b = {zeros({3, 4}).requires_grad_(), zeros({5}).requires_grad_()};
    auto opt_a = make(a);
    Generator grads(11);
    for (int k = 0; k < 3; ++k) {
      set_grads(a, grads);
      if (k == 1) a[1].zero_grad();  // p1 lags one step behind p0
      opt_a->step();
    }
    // A fresh optimizer on other parameters takes over a's state and numbers.
    auto opt_b = make(b);
    opt_b->load_state_dict(opt_a->state_dict());
    for (size_t i = 0; i < a.size(); ++i) std::copy(a[i].data(), a[i].data() + a[i].numel(), b[i].data());
    CHECK(opt_b->state(0).step == 3);
    CHECK(opt_b->state(1).step == 2);
    for (int k = 0; k < 3; ++k) {
      Generator g1(100 + k), g2(100 + k);
      set_grads(a, g1);
      set_grads(b, g2);
      opt_a->step();
      opt_b->step();
    }
    check_same(a, b);
  };
  SUBCASE("SGD") {
    check_resume([](std::vector<Tensor> p) { return std::make_unique<optim::SGD>(p, 0.1f, 0.9f, 0.1f, 0.01f); });
  }
  SUBCASE("Adam") {
    check_resume([](std::vector<Tensor> p) { return std::make_unique<optim::Adam>(p, 0.01f); });
  }
  SUBCASE("AdamW") {
    check_resume([](std::vector<Tensor> p) { return std::make_unique<optim::AdamW>(p, 0.01f); });
  }

  SUBCASE("the keys") {
    auto p = two_params();
    optim::Adam opt(p, 0.01f, {0.8f, 0.99f}, 1e-6f);
    p[0].set_grad(ones({3, 4}));
    opt.step();
    StateDict s = opt.state_dict();
    std::vector<std::string> keys;
    for (auto& [k, t] : s) keys.push_back(k);
    CHECK(keys == std::vector<std::string>{"Adam.beta1", "Adam.beta2", "Adam.eps", "Adam.lr", "Adam.num_params",
                                           "Adam.weight_decay", "state.0.exp_avg", "state.0.exp_avg_sq",
                                           "state.0.step"});
    CHECK(s.at("Adam.beta1").item() == 0.8f);
    CHECK(s.at("Adam.num_params").item() == 2);
    CHECK(s.at("state.0.step").shape() == Shape{1});
    CHECK(s.at("state.0.step").item() == 1);
    CHECK(s.at("state.0.exp_avg").shape() == Shape{3, 4});
    // m after one step from 0: (1 − β1)·g = 0.2 (in float: 1 − 0.8f).
    CHECK(s.at("state.0.exp_avg").at({1, 2}) == 1 - 0.8f);
    // A copy: stepping on does not change a state dict already taken.
    opt.step();
    CHECK(s.at("state.0.step").item() == 1);
  }
}

TEST_CASE("optim/state_dict: refusals change nothing") {
  auto p = two_params();
  optim::Adam opt(p, 0.01f);
  Generator gen(3);
  set_grads(p, gen);
  opt.step();
  const StateDict good = opt.state_dict();

  auto check_refused = [&](const StateDict& bad, const std::string& message) {
    CHECK_THROWS_WITH_AS(opt.load_state_dict(bad), doctest::Contains(message.c_str()), Error);
    // Unchanged: the same state dict as before, value for value.
    StateDict now = opt.state_dict();
    REQUIRE(now.size() == good.size());
    for (auto& [k, t] : good) CHECK(now.at(k).to_vector() == t.to_vector());
  };

  SUBCASE("another optimizer type") {
    auto q = two_params();
    optim::SGD sgd(q, 0.1f, 0.9f);
    check_refused(sgd.state_dict(),
                  "load_state_dict: Adam: the state dict is from another optimizer ('SGD.dampening' is SGD's");
    optim::AdamW adamw(q);
    check_refused(adamw.state_dict(), "('AdamW.beta1' is AdamW's, not Adam's)");
    CHECK_THROWS_WITH_AS(adamw.load_state_dict(good),
                         doctest::Contains("AdamW: the state dict is from another optimizer"), Error);
  }
  SUBCASE("another number of parameters") {
    optim::Adam other({ones({3, 4}).requires_grad_()});
    check_refused(other.state_dict(), "the state dict is for 1 parameters, this optimizer has 2");
  }
  SUBCASE("a buffer of the wrong shape") {
    StateDict bad = good;
    bad["state.1.exp_avg"] = zeros({4});
    check_refused(bad, "'state.1.exp_avg' has shape (4) in the state dict, (5) in the optimizer (parameter 1's shape)");
  }
  SUBCASE("a state for a parameter that does not exist") {
    StateDict bad = good;
    bad["state.2.step"] = ones({1});
    check_refused(bad,
                  "unexpected keys [state.2.step] (Adam keeps Adam.lr, Adam.beta1, Adam.beta2, Adam.eps, "
                  "Adam.weight_decay, Adam.num_params, and for each parameter i in 0 … 1: state.<i>.step, "
                  "state.<i>.exp_avg, state.<i>.exp_avg_sq)");
  }
  SUBCASE("unknown keys, a bad step, a missing step, a missing or bad hyperparameter") {
    StateDict bad = good;
    bad["state.0.momentum_buffer"] = zeros({3, 4});
    check_refused(bad, "load_state_dict: Adam: missing keys [], unexpected keys [state.0.momentum_buffer] (Adam keeps");
    bad = good;
    bad["Adam.amsgrad"] = zeros({1});
    check_refused(bad, "unexpected keys [Adam.amsgrad]");
    bad = good;
    bad["junk"] = zeros({1});
    check_refused(bad, "unexpected keys [junk]");
    bad = good;
    bad["state.0.step"] = full({1}, 2.5f);
    check_refused(bad, "'state.0.step' must be a whole number ≥ 0, got 2.5");
    bad = good;
    bad.erase("state.0.step");
    check_refused(bad, "parameter 0 has buffers but no 'state.0.step'");
    bad = good;
    bad.erase("Adam.eps");
    check_refused(bad, "missing keys [Adam.eps], unexpected keys []");
    bad = good;
    bad["Adam.beta2"] = full({1}, 1.0f);
    check_refused(bad, "Adam: invalid betas[1]=1");
    bad = good;
    bad["Adam.lr"] = zeros({2});
    check_refused(bad, "'Adam.lr' has shape (2) in the state dict, (1) in the optimizer (one number)");
    bad = good;
    bad.erase("state.0.exp_avg_sq");
    check_refused(bad, "parameter 0 has exp_avg but not exp_avg_sq: a state holds all of its buffers or none");
    bad = good;
    bad["state.0.exp_avg"] = zeros({4, 3});
    bad["state.0.step"] = scalar_tensor(1);
    check_refused(bad,
                  "'state.0.step' has shape () in the state dict, (1) in the optimizer (one number); "
                  "'state.0.exp_avg' has shape (4, 3) in the state dict, (3, 4) in the optimizer");
  }
  SUBCASE("malformed state dicts are a qkv::Error, never another exception") {
    // Whatever is wrong, the refusal is a qkv::Error: CHECK_THROWS_AS fails on
    // any other exception (a std::out_of_range from a map::at, say).
    std::vector<std::pair<std::string, StateDict>> cases;
    cases.emplace_back("empty", StateDict{});
    cases.emplace_back("only the count", StateDict{{"Adam.num_params", full({1}, 2.0f)}});
    StateDict bad = good;
    for (auto& [k, t] : bad) t = Tensor();
    cases.emplace_back("every tensor undefined", bad);
    bad = good;
    bad["Adam.num_params"] = Tensor();
    cases.emplace_back("an undefined count", bad);
    for (const char* key : {"state..step", "state.x.step", "state.0.", "state.-1.step",
                            "state.99999999999999999999.step", "Adam.", ".lr", "state"}) {
      bad = good;
      bad[key] = ones({1});
      cases.emplace_back(key, bad);
    }
    for (const auto& named : cases) {
      const std::string& what = named.first;
      const StateDict& state = named.second;
      CAPTURE(what);
      CHECK_THROWS_AS(opt.check_state_dict(state), Error);
      CHECK_THROWS_AS(opt.load_state_dict(state), Error);
    }
    StateDict now = opt.state_dict();
    for (auto& [k, t] : good) CHECK(now.at(k).to_vector() == t.to_vector());
  }
}

TEST_CASE("optim/state_dict: hyperparameters are restored, as PyTorch does") {
  auto p = two_params();
  optim::SGD a(p, 0.25f, 0.5f, 0.125f, 0.0625f);
  optim::SGD b(p, 1.0f, 0.9f, 0.0f, 0.0f, true);
  b.load_state_dict(a.state_dict());
  CHECK(b.lr == 0.25f);
  CHECK(b.momentum == 0.5f);
  CHECK(b.dampening == 0.125f);
  CHECK(b.weight_decay == 0.0625f);
  CHECK_FALSE(b.nesterov);
}

// --- clip_grad_norm_ --------------------------------------------------------------

TEST_CASE("optim/clip_grad_norm_: against the mathematics") {
  Tensor a = zeros({2, 2}).requires_grad_(), b = zeros({3}).requires_grad_(), c = zeros({2}).requires_grad_();
  SUBCASE("clipped: every gradient scaled by max_norm / (norm + 1e-6)") {
    a.set_grad(tensor({3, 0, 0, 4}, {2, 2}));              // ‖a‖ = 5
    b.set_grad(tensor({0, 12, 0}));                        // ‖b‖ = 12;  total √(25 + 144) = 13
    float norm = optim::clip_grad_norm_({a, b, c}, 1.3f);  // c has no gradient: skipped
    CHECK(norm == doctest::Approx(13.0).epsilon(1e-7));
    const float coef = 1.3f / (13.0f + 1e-6f);
    CHECK(a.grad().to_vector() == std::vector<float>{3 * coef, 0, 0, 4 * coef});
    CHECK(b.grad().to_vector() == std::vector<float>{0, 12 * coef, 0});
    CHECK_FALSE(c.grad().defined());
    // The new total norm is max_norm (up to the 1e-6).
    CHECK(optim::clip_grad_norm_({a, b, c}, 100.0f) == doctest::Approx(1.3).epsilon(1e-6));
  }
  SUBCASE("under the limit: unchanged") {
    a.set_grad(tensor({1, 2, 2, 0}, {2, 2}));  // norm 3
    CHECK(optim::clip_grad_norm_({a}, 3.5f) == 3.0f);
    CHECK(a.grad().to_vector() == std::vector<float>{1, 2, 2, 0});
  }
  SUBCASE("no gradients at all: norm 0") { CHECK(optim::clip_grad_norm_({a, b}, 1.0f) == 0.0f); }
  SUBCASE("errors") {
    CHECK_THROWS_WITH_AS(optim::clip_grad_norm_({a}, -1.0f),
                         doctest::Contains("clip_grad_norm_: max_norm=-1 must be ≥ 0"), Error);
  }
}
