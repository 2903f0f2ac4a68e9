// nn::Module: the base of every layer. It keeps a layer's named parameters
// and submodules, so that a model can list them (parameters(),
// named_parameters()), switch mode (train()/eval()), clear gradients
// (zero_grad()), save and load them (state_dict()/load_state_dict()) and
// print itself like PyTorch's print(model).
//
// A layer registers each parameter and submodule once, in its constructor,
// and keeps the handle in a named member:
//
//   Linear::Linear(int64_t in, int64_t out) {
//     weight = register_parameter("weight", …);        // Tensor weight;
//   }
//   Block::Block() {
//     W_q = register_module("W_q", std::make_shared<Linear>(24, 24));
//   }
//
// Names nest with dots as PyTorch gives them: encoder.layers.0.attention.W_q.weight.
//
// Weight tying (a language model's output layer reusing its embedding
// matrix, PyTorch's `out.weight = emb.weight`) is one tensor registered under
// two names, or one submodule under two names:
//
//   emb = register_module("emb", std::make_shared<Embedding>(V, D));
//   out_weight = register_parameter("out_weight", emb->weight);   // (V, D), the same tensor
//
// parameters() lists it once, state_dict() under both names.
// NOTE: a Tensor is a handle, so the module, the member and an optimizer all
// hold the same parameter. Everything that changes a parameter (optimizer
// steps, load_state_dict, init) writes its numbers in place; never assign a
// new tensor to a registered member.
//
// Each layer has its own forward(…) with its own arguments (there is no
// virtual forward: a Linear takes one tensor, attention takes four), so the
// only virtual functions are for printing.
#pragma once
#include <qkv/core/state_dict.hpp>
#include <qkv/core/tensor.hpp>

#include <memory>
#include <string>
#include <typeinfo>
#include <utility>
#include <vector>

namespace qkv::nn {

class Module {
 public:
  Module() = default;
  Module(const Module&) = delete;  // modules are shared, not copied: hold them in shared_ptr
  Module& operator=(const Module&) = delete;
  virtual ~Module() = default;

  // Every parameter of this module and its submodules, depth first in
  // registration order (the order PyTorch lists them in), each tensor once:
  // a tensor registered under two names (a tied weight) or reached through
  // a submodule registered twice is listed under the first name it is
  // reached by, as PyTorch's parameters() lists it. So num_parameters()
  // counts it once, and an optimizer gets it once.
  std::vector<Tensor> parameters() const;
  std::vector<std::pair<std::string, Tensor>> named_parameters() const;
  const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& named_children() const { return children_; }
  int64_t num_parameters() const;  // total number of elements

  // Training mode (dropout active) or evaluation mode, for the whole tree.
  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }

  void zero_grad();  // forget every parameter's gradient

  // The parameters by dotted name. The tensors share storage with the model.
  // A tied tensor is there under each of its names, as in PyTorch's state_dict.
  StateDict state_dict() const;
  // What load_state_dict expects: every name of state_dict() and its shape,
  // in registration order.
  StateSpec state_spec() const;
  // Copy every entry into the parameter of that name, as PyTorch's
  // load_state_dict(state_dict, strict):
  //   strict (the default): refuses (qkv::Error, changing nothing) a missing,
  //     unexpected or mis-shaped entry;
  //   not strict: loads the entries whose names match, leaves the other
  //     parameters as they are, and returns the missing and unexpected keys.
  // A matching name with another shape is an error either way, and changes
  // nothing (validate_state_dict, core/state_dict.hpp); so are two names of
  // one tied tensor given different values (PyTorch lets the last one win).
  IncompatibleKeys load_state_dict(const StateDict& state, bool strict = true);

  // PyTorch's print(model), with each module's parameter count.
  std::string repr() const;
  virtual std::string type_name() const = 0;             // "Linear"
  virtual std::string extra_repr() const { return ""; }  // "in_features=2, out_features=3, bias=True"

 protected:
  // Register `value` as parameter `name` (setting requires_grad) and return it.
  Tensor register_parameter(const std::string& name, Tensor value);
  // Register a submodule and return it, typed. Refuses a module that
  // contains this one (a cycle).
  template <class M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    add_child(name, module);
    return module;
  }

 private:
  void add_child(const std::string& name, std::shared_ptr<Module> module);
  bool contains(const Module* module) const;  // this module or any below it is `module`
  // Every (name, tensor) of the tree, a tied tensor under each of its names.
  std::vector<std::pair<std::string, Tensor>> all_named_parameters() const;
  void all_named_parameters(const std::string& prefix, std::vector<std::pair<std::string, Tensor>>& out) const;
  std::string repr(size_t indent) const;
  std::vector<std::pair<std::string, Tensor>> params_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  bool training_ = true;
};

// A list of submodules named 0, 1, 2, …: PyTorch's nn.ModuleList.
class ModuleList : public Module {
 public:
  void push_back(std::shared_ptr<Module> module);
  size_t size() const { return named_children().size(); }
  // Module i; throws qkv::Error past the end.
  const std::shared_ptr<Module>& operator[](size_t i) const;
  // Module i as the layer type it is: blks->at<TransformerEncoderBlock>(0).
  // Throws qkv::Error naming i, the module's type and M when it is not an M.
  template <class M>
  std::shared_ptr<M> at(size_t i) const {
    std::shared_ptr<M> m = std::dynamic_pointer_cast<M>((*this)[i]);
    if (!m) wrong_type(i, typeid(M));
    return m;
  }
  std::string type_name() const override { return "ModuleList"; }

 private:
  [[noreturn]] void wrong_type(size_t i, const std::type_info& requested) const;
};

}  // namespace qkv::nn
