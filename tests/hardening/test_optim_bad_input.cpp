// Bad and extreme input for the optimizers: hyperparameters out of range,
// NaN and infinite, parameter lists that are empty or hold undefined,
// non-leaf or repeated tensors, gradients of the wrong shape, and state dicts
// that would silently restart a parameter's moments.
//
// Expected behaviour comes from torch.optim where it has one ("Invalid
// learning rate: -1.0") and otherwise from the optimizers' contract
// (optim/optimizer.hpp).
#include <doctest/doctest.h>
#include <qkv/optim/adam.hpp>
#include <qkv/optim/clip_grad.hpp>
#include <qkv/optim/sgd.hpp>
#include <qkv/qkv.hpp>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "hardening/bad_input.hpp"

using namespace qkv;
using qkv::test::BadInput;
using qkv::test::check_bad_inputs;
using namespace qkv::test::extremes;

namespace {

std::vector<Tensor> params() { return {ones({3, 4}).requires_grad_(), ones({5}).requires_grad_()}; }
}  // namespace

TEST_CASE("hardening/optim: bad hyperparameters and parameter lists") {
  check_bad_inputs({
      {"SGD: lr -1", [] { optim::SGD(params(), -1.0f); }, "SGD: invalid learning rate lr=-1"},
      {"SGD: lr NaN", [] { optim::SGD(params(), kNaN); }, "lr=nan"},
      {"SGD: momentum -0.5", [] { optim::SGD(params(), 0.1f, -0.5f); }, "momentum=-0.5"},
      {"SGD: weight_decay NaN", [] { optim::SGD(params(), 0.1f, 0, 0, kNaN); }, "weight_decay=nan"},
      {"SGD: nesterov without momentum", [] { optim::SGD(params(), 0.1f, 0, 0, 0, true); },
       "SGD: nesterov momentum needs momentum > 0 and dampening = 0, got momentum=0 dampening=0"},
      {"SGD: nesterov with dampening", [] { optim::SGD(params(), 0.1f, 0.9f, 0.1f, 0, true); },
       "got momentum=0.9 dampening=0.1"},
      {"Adam: lr -1", [] { optim::Adam(params(), -1.0f); }, "Adam: invalid learning rate lr=-1 (must be ≥ 0)"},
      {"Adam: beta1 1",
       [] {
         optim::Adam(params(), 0.1f, {1.0f, 0.999f});
       },
       "Adam: invalid betas[0]=1 (must be in [0, 1))"},
      {"Adam: beta2 NaN",
       [] {
         optim::Adam(params(), 0.1f, {0.9f, kNaN});
       },
       "invalid betas[1]=nan"},
      {"Adam: eps -1",
       [] {
         optim::Adam(params(), 0.1f, {0.9f, 0.999f}, -1.0f);
       },
       "invalid eps=-1"},
      {"AdamW: weight_decay -inf",
       [] {
         optim::AdamW(params(), 0.1f, {0.9f, 0.999f}, 1e-8f, -kInf);
       },
       "AdamW: invalid weight_decay=-inf"},
      {"an empty parameter list", [] { optim::Adam(std::vector<Tensor>{}); }, "optimizer: got an empty parameter list"},
      {"an undefined parameter", [] { optim::SGD({Tensor()}, 0.1f); }, "optimizer: parameter 0 is undefined"},
      {"a non-leaf parameter",
       [] {
         Tensor w = ones({2}).requires_grad_();
         optim::SGD({w * 2.0f}, 0.1f);
       },
       "optimizer: parameter 0 of shape (2) is not a leaf"},
      {"a parameter given twice",
       [] {
         Tensor w = ones({2}).requires_grad_();
         optim::Adam({w, w});
       },
       "optimizer: parameters 0 and 1 are the same tensor"},
      {"Optimizer::state(i) past the end", [] { optim::Adam(params()).state(2); },
       "Adam: no parameter 2 (there are 2)"},
      {"step: lr set to NaN between steps",
       [] {
         optim::Adam opt(params());
         opt.lr = kNaN;
         opt.step();
       },
       "Adam: invalid learning rate lr=nan"},
      {"a gradient of another shape (refused when set, so step() never sees one)",
       [] { params()[1].set_grad(ones({4})); }, "set_grad: gradient of shape (4) for a tensor of shape (5)"},
      {"clip_grad_norm_: max_norm negative", [] { optim::clip_grad_norm_(params(), -1.0f); },
       "clip_grad_norm_: max_norm=-1 must be ≥ 0"},
      {"clip_grad_norm_: max_norm NaN", [] { optim::clip_grad_norm_(params(), kNaN); },
       "clip_grad_norm_: max_norm=nan must be ≥ 0"},
      {"clip_grad_norm_: an undefined parameter", [] { optim::clip_grad_norm_({Tensor()}, 1.0f); },
       "clip_grad_norm_: a parameter is undefined"},
  });
}

// A state dict with a step count but without the buffers the first update
// makes would restart them from zero: every later step would differ from the
// run that saved it. Refused, naming the parameter and what is missing.
TEST_CASE("hardening/optim: a state dict with a step but no moments is refused, naming the parameter") {
  auto p = params();
  for (Tensor& t : p) t.set_grad(ones(t.shape()));
  optim::Adam adam(p, 0.01f);
  adam.step();
  optim::AdamW adamw(p, 0.01f);
  adamw.step();
  const StateDict good_adam = adam.state_dict(), good_adamw = adamw.state_dict();

  auto without = [](StateDict state, std::vector<std::string> keys) {
    for (const std::string& k : keys) state.erase(k);
    return state;
  };
  check_bad_inputs({
      {"Adam: parameter 1 with a step and no moments",
       [&] {
         adam.load_state_dict(without(good_adam, {"state.1.exp_avg", "state.1.exp_avg_sq"}));
       },
       "load_state_dict: Adam: parameter 1 (shape (5)) has 'state.1.step' = 1 but no exp_avg or exp_avg_sq: its "
       "state is missing"},
      {"AdamW: parameter 0 with a step and no moments",
       [&] {
         adamw.load_state_dict(without(good_adamw, {"state.0.exp_avg", "state.0.exp_avg_sq"}));
       },
       "load_state_dict: AdamW: parameter 0 (shape (3, 4)) has 'state.0.step' = 1 but no exp_avg or exp_avg_sq"},
      {"Optimizer::load_state_dict (Adam): one moment of two",
       [&] { adam.load_state_dict(without(good_adam, {"state.0.exp_avg_sq"})); },
       "parameter 0 has exp_avg but not exp_avg_sq: a state holds all of its buffers or none"},
      {"Adam: exp_avg_sq of the wrong shape",
       [&] {
         StateDict bad = good_adam;
         bad["state.0.exp_avg_sq"] = zeros({4, 3});
         adam.load_state_dict(bad);
       },
       "'state.0.exp_avg_sq' has shape (4, 3) in the state dict, (3, 4) in the optimizer (parameter 0's shape)"},
      {"Adam: exp_avg 0-d",
       [&] {
         StateDict bad = good_adam;
         bad["state.1.exp_avg"] = scalar_tensor(0);
         adam.load_state_dict(bad);
       },
       "'state.1.exp_avg' has shape () in the state dict, (5) in the optimizer"},
      {"Optimizer::check_state_dict: a state dict of another optimizer",
       [&] {
         optim::SGD sgd(p, 0.1f);
         sgd.check_state_dict(good_adam);
       },
       "the state dict is from another optimizer"},
      {"Optimizer::load_state_dict (Adam): moments without a step",
       [&] { adam.load_state_dict(without(good_adam, {"state.1.step"})); },
       "parameter 1 has buffers but no 'state.1.step'"},
      {"SGD with momentum: a step and no momentum_buffer",
       [&] {
         optim::SGD sgd(p, 0.1f, 0.9f);
         sgd.step();
         sgd.load_state_dict(without(sgd.state_dict(), {"state.0.momentum_buffer"}));
       },
       "load_state_dict: SGD: parameter 0 (shape (3, 4)) has 'state.0.step' = 1 but no momentum_buffer"},
  });

  SUBCASE("what is not missing still loads: no state at all, a step of 0, SGD without momentum") {
    optim::Adam fresh(p, 0.01f);
    adam.load_state_dict(fresh.state_dict());  // never stepped: no state.<i> keys
    CHECK(adam.state(0).step == 0);
    StateDict zero_step = fresh.state_dict();
    zero_step["state.0.step"] = zeros({1});
    adam.load_state_dict(zero_step);
    optim::SGD plain(p, 0.1f);
    plain.step();
    optim::SGD other(p, 0.1f);
    other.load_state_dict(plain.state_dict());  // step 1, no buffer: SGD without momentum keeps none
    CHECK(other.state(0).step == 1);
  }
}
