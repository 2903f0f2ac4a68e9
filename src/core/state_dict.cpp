// validate_state_dict: the one check of a state dict's names and shapes
// against what its owner (a model, an optimizer) expects.
#include <qkv/core/error.hpp>
#include <qkv/core/state_dict.hpp>

#include <fmt/format.h>

#include <set>

namespace qkv {

IncompatibleKeys validate_state_dict(const StateDict& state, const StateSpec& spec, bool strict,
                                     const std::string& where, const std::string& owner, const std::string& hint) {
  IncompatibleKeys keys;
  std::vector<std::string> misshaped;  // one line per offending key, all reported at once
  std::set<std::string> known;
  for (const StateKey& key : spec) {
    known.insert(key.name);
    auto it = state.find(key.name);
    if (it == state.end()) {
      if (key.required) keys.missing_keys.push_back(key.name);
      continue;
    }
    const Tensor& t = it->second;
    if (t.defined() && t.shape() == key.shape) continue;
    misshaped.push_back(fmt::format("'{}' has shape {} in the state dict, {} in the {}{}", key.name,
                                    t.defined() ? t.shape().str() : "undefined", key.shape, owner,
                                    key.note.empty() ? "" : " (" + key.note + ")"));
  }
  for (const auto& [name, t] : state)
    if (!known.contains(name)) keys.unexpected_keys.push_back(name);

  if (!misshaped.empty()) fail("{}: {}", where, fmt::join(misshaped, "; "));
  if (strict && !keys.empty())
    fail("{}: missing keys [{}], unexpected keys [{}]{}", where, fmt::join(keys.missing_keys, ", "),
         fmt::join(keys.unexpected_keys, ", "), hint.empty() ? "" : " (" + hint + ")");
  return keys;
}

}  // namespace qkv
