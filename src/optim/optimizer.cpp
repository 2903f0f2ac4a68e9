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

void Optimizer::check_state_dict(const StateDict& state) const {
  const std::string type = type_name();
  const std::string where = fmt::format("load_state_dict: {}", type);
  const std::vector<std::string> buffers = buffer_names();

  // Another optimizer's hyperparameters, e.g. "SGD.lr" given to Adam.
  for (const auto& [key, t] : state) {
    size_t dot = key.find('.');
    std::string head = key.substr(0, dot);
    if (dot != std::string::npos && head != "state" && head != type)
      fail("{}: the state dict is from another optimizer ('{}' is {}'s, not {}'s)", where, key, head, type);
  }

  // The hyperparameters, each one number, and then their ranges.
  std::map<std::string, float> h;
  for (const auto& [name, current] : hyperparameters()) {
    auto it = state.find(type + "." + name);
    if (it == state.end()) fail("{}: missing key '{}.{}'", where, type, name);
    if (!it->second.defined() || it->second.numel() != 1)
      fail("{}: '{}.{}' must hold one number, got shape {}", where, type, name,
           it->second.defined() ? it->second.shape().str() : "undefined");
    h[name] = it->second.data()[0];
  }
  check_hyperparameters(h);

  auto count = state.find(type + ".num_params");
  if (count == state.end()) fail("{}: missing key '{}.num_params'", where, type);
  if (!count->second.defined() || count->second.numel() != 1 ||
      count->second.data()[0] != static_cast<float>(params_.size()))
    fail("{}: the state dict is for {} parameters, this optimizer has {}", where,
         count->second.defined() && count->second.numel() == 1 ? fmt::format("{}", count->second.data()[0])
                                                               : std::string("an unreadable number of"),
         params_.size());

  // Every other key is state.<i>.<name>: a step, or a buffer of parameter i's shape.
  std::vector<bool> has_step(params_.size(), false), has_buffer(params_.size(), false);
  for (const auto& [key, t] : state) {
    if (key.rfind(type + ".", 0) == 0) {
      std::string name = key.substr(type.size() + 1);
      bool known = name == "num_params" || std::any_of(h.begin(), h.end(), [&](auto& kv) { return kv.first == name; });
      if (!known) fail("{}: unexpected key '{}'", where, key);
      continue;
    }
    size_t i = 0;
    std::string name;
    if (!parse_state_key(key, i, name)) fail("{}: unexpected key '{}'", where, key);
    if (i >= params_.size()) fail("{}: '{}' is for parameter {}, but there are {}", where, key, i, params_.size());
    if (!t.defined()) fail("{}: '{}' is undefined", where, key);
    if (name == "step") {
      float s = t.numel() == 1 ? t.data()[0] : -1;
      if (t.numel() != 1 || !(s >= 0) || !std::isfinite(s) || s != std::floor(s) || s > 1e15f)
        fail("{}: '{}' must be one whole number ≥ 0, got shape {} value {}", where, key, t.shape(),
             t.numel() == 1 ? fmt::format("{}", s) : std::string("-"));
      has_step[i] = true;
    } else if (std::find(buffers.begin(), buffers.end(), name) != buffers.end()) {
      if (t.shape() != params_[i].shape())
        fail("{}: '{}' has shape {}, but parameter {} has shape {}", where, key, t.shape(), i, params_[i].shape());
      has_buffer[i] = true;
    } else {
      fail("{}: unexpected key '{}' ({} keeps {} per parameter)", where, key, type, fmt::join(buffers, ", "));
    }
  }
  for (size_t i = 0; i < params_.size(); ++i)
    if (has_buffer[i] && !has_step[i]) fail("{}: parameter {} has buffers but no 'state.{}.step'", where, i, i);
}

void Optimizer::load_state_dict(const StateDict& state) {
  check_state_dict(state);  // throws before anything changes
  const std::string type = type_name();
  std::map<std::string, float> h;
  for (const auto& [name, current] : hyperparameters()) h[name] = state.at(type + "." + name).data()[0];

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
