// optim::Optimizer: the parameter list, step() and the state dict.
#include <qkv/core/autograd.hpp>
#include <qkv/core/error.hpp>
#include <qkv/optim/optimizer.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>

namespace qkv::optim {

Optimizer::Optimizer(std::vector<Tensor> params) : params_(std::move(params)), state_(params_.size()) {
  if (params_.empty()) fail("optimizer: got an empty parameter list");
  for (size_t i = 0; i < params_.size(); ++i) {
    const Tensor& p = params_[i];
    if (!p.defined()) fail("optimizer: parameter {} is undefined", i);
    if (!p.is_leaf()) fail("optimizer: parameter {} of shape {} is not a leaf (an op made it)", i, p.shape());
    for (size_t j = 0; j < i; ++j)
      if (params_[j].same(p)) fail("optimizer: parameters {} and {} are the same tensor", j, i);
  }
}

const ParamState& Optimizer::state(size_t i) const {
  if (i >= state_.size()) fail("{}: no parameter {} (there are {})", type_name(), i, state_.size());
  return state_[i];
}

void Optimizer::zero_grad() {
  for (Tensor& p : params_) p.zero_grad();
}

namespace {

std::map<std::string, float> as_map(const Hyperparameters& h) { return {h.begin(), h.end()}; }

}  // namespace

void Optimizer::step() {
  check_hyperparameters(as_map(hyperparameters()));
  NoGradGuard no_grad;  // an update is not part of any graph
  for (size_t i = 0; i < params_.size(); ++i) {
    Tensor grad = params_[i].grad();
    if (!grad.defined()) continue;  // no gradient reached this parameter: leave it, and its state, alone
    if (grad.shape() != params_[i].shape())
      fail("{}: parameter {} has shape {} but its gradient has shape {}", type_name(), i, params_[i].shape(),
           grad.shape());
    state_[i].step += 1;
    update(params_[i], grad, state_[i]);
  }
}

// --- state dicts ---------------------------------------------------------------

namespace {

Tensor one(float value) { return Tensor({value}, Shape{1}); }
Tensor copy_of(const Tensor& t) { return Tensor(t.to_vector(), t.shape()); }

// "state.12.exp_avg" -> (12, "exp_avg"); false if the key does not have that form.
bool parse_state_key(const std::string& key, size_t& index, std::string& name) {
  const std::string prefix = "state.";
  if (key.rfind(prefix, 0) != 0) return false;
  size_t dot = key.find('.', prefix.size());
  if (dot == std::string::npos || dot == prefix.size()) return false;
  const char* first = key.data() + prefix.size();
  const char* last = key.data() + dot;
  auto [end, error] = std::from_chars(first, last, index);
  if (error != std::errc() || end != last) return false;
  name = key.substr(dot + 1);
  return true;
}

}  // namespace

StateDict Optimizer::state_dict() const {
  StateDict out;
  const std::string type = type_name();
  for (const auto& [name, value] : hyperparameters()) out.emplace(type + "." + name, one(value));
  out.emplace(type + ".num_params", one(static_cast<float>(params_.size())));
  for (size_t i = 0; i < state_.size(); ++i) {
    const ParamState& s = state_[i];
    if (s.step == 0 && s.buffers.empty()) continue;  // never updated: nothing to save
    // NOTE: a float holds every whole number up to 2^24 (16.7 million steps);
    // past that the count is rounded, which Adam's 1 − βᵗ (then 1) cannot notice.
    out.emplace(fmt::format("state.{}.step", i), one(static_cast<float>(s.step)));
    for (const auto& [name, buffer] : s.buffers) out.emplace(fmt::format("state.{}.{}", i, name), copy_of(buffer));
  }
  return out;
}

StateSpec Optimizer::state_spec() const {
  const std::string type = type_name();
  StateSpec spec;
  for (const auto& [name, value] : hyperparameters()) spec.push_back({type + "." + name, Shape{1}, true, "one number"});
  spec.push_back({type + ".num_params", Shape{1}, true, "one number"});
  for (size_t i = 0; i < params_.size(); ++i) {
    spec.push_back({fmt::format("state.{}.step", i), Shape{1}, false, "one number"});
    for (const std::string& buffer : buffer_names())
      spec.push_back(
          {fmt::format("state.{}.{}", i, buffer), params_[i].shape(), false, fmt::format("parameter {}'s shape", i)});
  }
  return spec;
}

std::map<std::string, float> Optimizer::checked_hyperparameters(const StateDict& state) const {
  const std::string type = type_name();
  const std::string where = fmt::format("load_state_dict: {}", type);

  // Two refusals that say more than a list of keys: another optimizer's
  // state (e.g. "SGD.lr" given to Adam), and a state for another number of parameters.
  for (const auto& [key, t] : state) {
    size_t dot = key.find('.');
    std::string head = key.substr(0, dot);
    if (dot != std::string::npos && head != "state" && head != type)
      fail("{}: the state dict is from another optimizer ('{}' is {}'s, not {}'s)", where, key, head, type);
  }
  auto count = state.find(type + ".num_params");
  if (count != state.end() && count->second.defined() && count->second.numel() == 1 &&
      count->second.data()[0] != static_cast<float>(params_.size()))
    fail("{}: the state dict is for {} parameters, this optimizer has {}", where, count->second.data()[0],
         params_.size());

  // Names and shapes: every hyperparameter, and nothing this optimizer does not keep.
  const std::vector<std::string> buffers = buffer_names();
  std::vector<std::string> hyper_keys, per_parameter{"state.<i>.step"};
  for (const auto& [name, value] : hyperparameters()) hyper_keys.push_back(type + "." + name);
  hyper_keys.push_back(type + ".num_params");
  for (const std::string& buffer : buffers) per_parameter.push_back("state.<i>." + buffer);
  const std::string hint = fmt::format("{} keeps {}, and for each parameter i in 0 … {}: {}", type,
                                       fmt::join(hyper_keys, ", "), params_.size() - 1, fmt::join(per_parameter, ", "));
  validate_state_dict(state, state_spec(), /*strict=*/true, where, "optimizer", hint);

  // Values: the hyperparameters' ranges, whole steps, and whole states.
  std::map<std::string, float> h;
  for (const auto& [name, current] : hyperparameters()) h[name] = state.find(type + "." + name)->second.data()[0];
  check_hyperparameters(h);
  for (size_t i = 0; i < params_.size(); ++i) {
    const std::string step_key = fmt::format("state.{}.step", i);
    auto step = state.find(step_key);
    if (step != state.end()) {
      const float s = step->second.data()[0];
      if (!(s >= 0) || !std::isfinite(s) || s != std::floor(s) || s > 1e15f)
        fail("{}: '{}' must be a whole number ≥ 0, got {}", where, step_key, s);
    }
    std::vector<std::string> present, absent;
    for (const std::string& buffer : buffers)
      (state.contains(fmt::format("state.{}.{}", i, buffer)) ? present : absent).push_back(buffer);
    // A parameter's first update makes its buffers, so a step count ≥ 1
    // without them is a damaged state: loading it would restart the moments
    // (or momentum) from zero and change every later step, silently.
    // NOTE: SGD without momentum keeps no buffer (momentum_buffer is made
    // only when momentum ≠ 0, as PyTorch's is None).
    const bool keeps_buffers = !buffers.empty() && !(h.contains("momentum") && h.at("momentum") == 0);
    if (present.empty() && step != state.end() && step->second.data()[0] >= 1 && keeps_buffers)
      fail(
          "{}: parameter {} (shape {}) has '{}' = {} but no {}: its state is missing (a state dict of an "
          "updated parameter holds all of {})",
          where, i, params_[i].shape(), step_key, step->second.data()[0], fmt::join(absent, " or "),
          fmt::join(buffers, ", "));
    if (present.empty()) continue;
    if (step == state.end()) fail("{}: parameter {} has buffers but no '{}'", where, i, step_key);
    if (!absent.empty())
      fail("{}: parameter {} has {} but not {}: a state holds all of its buffers or none", where, i,
           fmt::join(present, ", "), fmt::join(absent, ", "));
  }
  return h;
}

void Optimizer::check_state_dict(const StateDict& state) const { checked_hyperparameters(state); }

void Optimizer::load_state_dict(const StateDict& state) {
  const std::map<std::string, float> h = checked_hyperparameters(state);  // throws before anything changes
  std::vector<ParamState> loaded(params_.size());
  for (const auto& [key, t] : state) {
    size_t i = 0;
    std::string name;
    if (!parse_state_key(key, i, name)) continue;  // a hyperparameter
    if (name == "step")
      loaded[i].step = static_cast<int64_t>(t.data()[0]);
    else
      loaded[i].buffers[name] = copy_of(t);  // our own copy: the caller's dict stays theirs
  }
  set_hyperparameters(h);
  state_ = std::move(loaded);
}

}  // namespace qkv::optim
