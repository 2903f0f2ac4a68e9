// Checkpoints: one safetensors file holding a model's state dict and its
// optimizer's under "optimizer.".
#include <qkv/core/error.hpp>
#include <qkv/io/checkpoint.hpp>
#include <qkv/io/safetensors.hpp>

#include <fmt/format.h>

#include <string>
#include <vector>

namespace qkv::io {

namespace {

const std::string kPrefix = "optimizer.";

bool is_optimizer_key(const std::string& key) { return key.rfind(kPrefix, 0) == 0; }

// Module::load_state_dict's checks, without its writes: the file's model
// keys must be the model's names, with the model's shapes.
void check_model_state(const nn::Module& model, const TensorMap& state, const std::string& where) {
  auto params = model.named_parameters();
  std::vector<std::string> missing, unexpected;
  std::map<std::string, Shape> shapes;
  for (const auto& [name, p] : params) shapes.emplace(name, p.shape());
  for (const auto& [name, shape] : shapes) {
    auto it = state.find(name);
    if (it == state.end())
      missing.push_back(name);
    else if (it->second.shape() != shape)
      fail("{}: '{}' has shape {} in the file, {} in the {}", where, name, it->second.shape(), shape,
           model.type_name());
  }
  for (const auto& [name, t] : state)
    if (!shapes.contains(name)) unexpected.push_back(name);
  if (!missing.empty() || !unexpected.empty())
    fail("{}: not a checkpoint of this {}: missing keys [{}], unexpected keys [{}]", where, model.type_name(),
         fmt::join(missing, ", "), fmt::join(unexpected, ", "));
}

}  // namespace

void save_checkpoint(const std::filesystem::path& path, const nn::Module& model, const optim::Optimizer* optimizer) {
  TensorMap all = model.state_dict();
  Metadata metadata{{"format", "pt"}};
  for (const auto& [name, t] : all)
    if (is_optimizer_key(name))
      fail("save_checkpoint: '{}': the model's parameter '{}' collides with the optimizer's '{}' prefix", path.string(),
           name, kPrefix);
  if (optimizer != nullptr) {
    for (auto& [name, t] : optimizer->state_dict()) all.emplace(kPrefix + name, t);
    metadata["optimizer"] = optimizer->type_name();
  }
  save_safetensors(path, all, metadata);
}

void load_checkpoint(const std::filesystem::path& path, nn::Module& model, optim::Optimizer* optimizer) {
  const std::string where = fmt::format("load_checkpoint: '{}'", path.string());
  const TensorMap all = load_safetensors(path);  // 1. the file, checked whole

  TensorMap model_state, optimizer_state;
  for (const auto& [name, t] : all) {
    if (is_optimizer_key(name))
      optimizer_state.emplace(name.substr(kPrefix.size()), t);
    else
      model_state.emplace(name, t);
  }

  // 2. Check both parts before writing either, so no failure leaves a half-loaded model.
  check_model_state(model, model_state, where);
  if (optimizer != nullptr) {
    if (optimizer_state.empty()) fail("{}: the file holds no optimizer state (saved without an optimizer?)", where);
    try {
      optimizer->check_state_dict(optimizer_state);
    } catch (const Error& e) {
      fail("{}: optimizer: {}", where, e.what());
    }
  }

  // 3. Write: neither call can fail now.
  model.load_state_dict(model_state);
  if (optimizer != nullptr) optimizer->load_state_dict(optimizer_state);
}

}  // namespace qkv::io
