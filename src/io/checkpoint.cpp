// Checkpoints: one safetensors file holding a model's state dict and its
// optimizer's under "optimizer.".
#include <qkv/core/error.hpp>
#include <qkv/io/checkpoint.hpp>
#include <qkv/io/safetensors.hpp>

#include <fmt/format.h>

#include <cctype>
#include <set>
#include <string>

namespace qkv::io {

namespace {

const std::string kPrefix = "optimizer.";

bool is_optimizer_key(const std::string& key) { return key.rfind(kPrefix, 0) == 0; }

// The optimizer knows its parameters by index ("parameter 1", "state.1.step");
// a reader knows them by the model's dotted names. For each index an error
// message mentions, the name of the model parameter that is the same tensor:
// " (optimizer parameter 1 is the model's 'decoder.dense.bias')".
std::string name_parameters(const std::string& message, const nn::Module& model, const optim::Optimizer& optimizer) {
  // The indices: the digits after "parameter ", "parameters " or "state.".
  std::set<size_t> mentioned;
  for (const std::string lead : {"parameter ", "parameters ", "state."}) {
    for (size_t at = message.find(lead); at != std::string::npos; at = message.find(lead, at + 1)) {
      size_t begin = at + lead.size(), end = begin;
      while (end < message.size() && end - begin < 10 && std::isdigit(static_cast<unsigned char>(message[end]))) ++end;
      if (end > begin) mentioned.insert(std::stoul(message.substr(begin, end - begin)));
    }
  }
  const auto named = model.named_parameters();
  std::string names;
  for (size_t i : mentioned) {
    if (i >= optimizer.params().size()) continue;
    for (const auto& [name, p] : named) {
      if (!p.same(optimizer.params()[i])) continue;
      names += fmt::format("{}optimizer parameter {} is the model's '{}'", names.empty() ? "" : "; ", i, name);
      break;
    }
  }
  return names.empty() ? "" : " (" + names + ")";
}

}  // namespace

void save_checkpoint(const std::filesystem::path& path, const nn::Module& model, const optim::Optimizer* optimizer) {
  StateDict all = model.state_dict();
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
  const StateDict all = load_safetensors(path);  // 1. the file, checked whole

  StateDict model_state, optimizer_state;
  for (const auto& [name, t] : all) {
    if (is_optimizer_key(name))
      optimizer_state.emplace(name.substr(kPrefix.size()), t);
    else
      model_state.emplace(name, t);
  }

  // 2. Check both parts before writing either, so no failure leaves a half-loaded model.
  // The model's part gets load_state_dict's own check (core/state_dict.hpp).
  validate_state_dict(model_state, model.state_spec(), /*strict=*/true,
                      fmt::format("{}: not a checkpoint of this {}", where, model.type_name()), "model");
  if (optimizer != nullptr) {
    if (optimizer_state.empty()) fail("{}: the file holds no optimizer state (saved without an optimizer?)", where);
    try {
      optimizer->check_state_dict(optimizer_state);
    } catch (const Error& e) {
      fail("{}: optimizer: {}{}", where, e.what(), name_parameters(e.what(), model, *optimizer));
    }
  }

  // 3. Write: neither call can fail now.
  model.load_state_dict(model_state);
  if (optimizer != nullptr) optimizer->load_state_dict(optimizer_state);
}

}  // namespace qkv::io
