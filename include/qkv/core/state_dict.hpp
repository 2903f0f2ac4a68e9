// StateDict: a model's or an optimizer's state as named tensors, PyTorch's
// state_dict. nn::Module, optim::Optimizer and io's safetensors files all
// speak it:
//
//   "encoder.blks.0.attention.W_q.weight" -> (32, 32)      a model's parameter
//   "Adam.lr" -> (1),  "state.3.exp_avg" -> (32, 32)        an optimizer's state
//
// and one function checks a state dict against what its owner expects
// (validate_state_dict): the names it must hold or may hold, and each one's
// shape. Module::load_state_dict, Optimizer::load_state_dict and
// io::load_checkpoint all check through it, so they refuse the same things
// with the same words.
#pragma once
#include <qkv/core/shape.hpp>
#include <qkv/core/tensor.hpp>

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace qkv {

// Name -> tensor, sorted by name.
using StateDict = std::map<std::string, Tensor>;

// One key a state dict is checked against: the shape its tensor must have,
// whether it must be there, and (for the error message) where that shape
// comes from, e.g. "parameter 1's shape".
struct StateKey {
  std::string name;
  Shape shape;
  bool required = true;
  std::string note{};
};
// Every key the owner knows, in the owner's order (a model's registration
// order), which is the order missing keys are listed in.
using StateSpec = std::vector<StateKey>;

// The keys that did not match by name, as PyTorch's _IncompatibleKeys.
struct IncompatibleKeys {
  std::vector<std::string> missing_keys;     // required by the spec, absent from the state dict (spec order)
  std::vector<std::string> unexpected_keys;  // in the state dict, unknown to the spec (sorted)
  bool empty() const { return missing_keys.empty() && unexpected_keys.empty(); }
};

// Check `state` against `spec`, changing nothing, and return the keys that
// did not match by name. Throws qkv::Error, starting with `where`:
//   - for every key present in both with another shape (or an undefined
//     tensor), all of them in one message:
//       "<where>: 'weight' has shape (3, 2) in the state dict, (2, 3) in the <owner>"
//   - when `strict` and a key is missing or unexpected:
//       "<where>: missing keys [bias], unexpected keys [W_q.weight]"
//     followed by `hint` (what the owner keeps) when given.
// A wrong shape is an error even when not strict, as in PyTorch.
IncompatibleKeys validate_state_dict(const StateDict& state, const StateSpec& spec, bool strict,
                                     const std::string& where, const std::string& owner, const std::string& hint = "");

}  // namespace qkv
