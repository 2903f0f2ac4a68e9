// nn::Module: the base of every layer. It keeps a layer's named parameters
// and submodules, so that a model can list them (parameters(),
// named_parameters()), switch mode (train()/eval()), clear gradients
// (zero_grad()), save and load them (state_dict()/load_state_dict()) and
// print itself like PyTorch's print(model).
//
// A layer registers each parameter and submodule once, in its constructor.
// A parameter lives in a named Tensor member, which register_parameter binds
// to the name; a submodule in a shared_ptr member:
//
//   Linear::Linear(int64_t in, int64_t out) {
//     register_parameter("weight", weight, …);          // Tensor weight;
//   }
//   Block::Block() {
//     W_q = register_module("W_q", std::make_shared<Linear>(24, 24));
//   }
//
// Names nest with dots as PyTorch gives them: encoder.layers.0.attention.W_q.weight.
//
// The module keeps the member's address, not a copy of its handle, so
// everything (parameters(), state_dict(), load_state_dict(), zero_grad(),
// repr()) reads the member as it is now. Weight tying (a language model's
// output layer reusing its embedding matrix) is therefore PyTorch's
// `out.weight = emb.weight`:
//
//   out->weight = emb->weight;   // (V, D): one tensor, two names
//
// parameters() lists it once, state_dict() under both names. (Registering
// one tensor, or one submodule, under two names ties them too.) A parameter
// registered undefined is absent, PyTorch's register_parameter(name, None),
// as a Linear's bias when bias = false: it is listed once the member is
// given a parameter (lin->bias = zeros({out}).requires_grad_()). (Modules are
// not copied or moved, they live in shared_ptr, so a member's address stays
// valid.) A member given an undefined tensor, a tensor of another shape
// than the one registered, or one that is not a parameter (a result of an
// op, or a tensor without requires_grad) is a qkv::Error naming the
// parameter the next time the module lists its parameters.
// NOTE: a Tensor is a handle, so the member and an optimizer hold the same
// parameter. Tie weights before making the optimizer (as in PyTorch): it
// keeps the handles it was given. Optimizer steps, load_state_dict and the
// initialisers write the numbers in place, so every holder sees them.
//
// Each layer has its own forward(…) with its own arguments (there is no
// virtual forward: a Linear takes one tensor, attention takes four), so the
// only virtual functions are for printing.
//
// Tracing (the end of this file): a layer's forward opens a TraceScope, so
// that nn::trace can record which module ran inside which, with its shapes,
// for viz::model_summary and viz::model_svg to draw the model from itself.
#pragma once
#include <qkv/core/state_dict.hpp>
#include <qkv/core/tensor.hpp>
#include <qkv/viz/model_trace.hpp>

#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
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
  // The direct submodules, by name. A copy: a reference into the module
  // would dangle once the module (a temporary, or a list that grows) moves on.
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_children() const { return children_; }
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
  // Bind the Tensor member `member` (of this module, or an element of a
  // vector member that is not resized afterwards) to parameter `name`, set
  // it to `value` (detached if it has a history, then requires_grad) and
  // return it. `name`'s shape is value's shape from now on. An undefined
  // value registers the name as absent (PyTorch's register_parameter(name,
  // None)): skipped while the member is undefined, listed, of any shape,
  // once it holds a parameter.
  Tensor& register_parameter(const std::string& name, Tensor& member, Tensor value);
  // A parameter held by the module alone, with no member: returns a handle
  // to it. Assigning a new tensor to a copy of that handle does not change
  // the parameter; a layer that keeps the handle in a member binds the
  // member with the overload above.
  Tensor register_parameter(const std::string& name, Tensor value);
  // Register a submodule and return it, typed. Refuses a module that
  // contains this one (a cycle).
  template <class M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    add_child(name, module);
    return module;
  }
  const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& children() const { return children_; }

 private:
  void add_child(const std::string& name, std::shared_ptr<Module> module);
  bool contains(const Module* module) const;  // this module or any below it is `module`
  // Every (name, tensor) of the tree, a tied tensor under each of its names.
  std::vector<std::pair<std::string, Tensor>> all_named_parameters() const;
  void all_named_parameters(const std::string& prefix, std::vector<std::pair<std::string, Tensor>>& out) const;
  std::string repr(size_t indent) const;
  // The member's tensor, after checking that it is still a parameter of the
  // registered shape; `full_name` is its dotted name, for the error.
  Tensor checked(const std::string& full_name, const Tensor& member, const Shape* shape) const;
  struct Param {
    std::string name;
    Tensor* member;  // where the layer keeps it: a member, or an element of owned_
    Shape shape;     // its shape when registered
    bool absent;     // registered undefined: any shape, and skipped while undefined
  };
  std::vector<Param> params_;
  std::vector<std::unique_ptr<Tensor>> owned_;  // parameters with no member (stable addresses)
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  bool training_ = true;
};

// A list of submodules named 0, 1, 2, …: PyTorch's nn.ModuleList.
class ModuleList : public Module {
 public:
  void push_back(std::shared_ptr<Module> module);
  size_t size() const { return children().size(); }
  // Module i; throws qkv::Error past the end. A handle, not a reference into
  // the list, so it stays valid when the list grows.
  std::shared_ptr<Module> operator[](size_t i) const;
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

// --- tracing: the model drawn from one of its own forwards ------------------------
//
// Every layer's forward starts with a TraceScope naming the layer and its
// inputs, and hands its result through output():
//
//   Tensor Linear::forward(const Tensor& x) const {
//     TraceScope trace(*this, {x});
//     …
//     return trace.output(y);
//   }
//
// That is PyTorch's module __call__ hook, written out, since qkv's layers
// have no common forward to hook. A learner's own layer does the same to
// appear in the picture with its own shapes; without it, it still appears
// (see viz::ModuleCall::traced).
//
// nn::trace(model, forward) runs `forward` (a call of the model) with
// tracing on and returns what ran:
//
//   viz::ModelTrace t = nn::trace(model, [&] { model.forward(X, Y, lens); });
//   fmt::print("{}", viz::model_summary(t));
//
// Off (no trace running), a TraceScope costs a list of its inputs' addresses
// on the stack, one read of a thread_local pointer and a branch: nothing is
// allocated or recorded. A trace records the forward
// of the thread that runs nn::trace and nothing of other threads, whose
// layers see no trace; one thread runs one trace at a time (nn::trace inside
// `forward` is a qkv::Error).

namespace detail {
class Tracer;
inline thread_local Tracer* active_tracer = nullptr;  // the trace this thread is running, if any
}  // namespace detail

// An input or output of a traced call: a Tensor or an IntTensor, kept by
// address (the scope lives inside the forward, while its arguments do).
struct TraceArg {
  TraceArg(const Tensor& t) : tensor(&t) {}   // NOLINT(google-explicit-constructor): {x, y} lists read as PyTorch's
  TraceArg(const IntTensor& t) : ints(&t) {}  // NOLINT(google-explicit-constructor)
  const Tensor* tensor = nullptr;
  const IntTensor* ints = nullptr;
};

class TraceScope {
 public:
  // Undefined inputs (an optional valid_lens not given) are left out.
  TraceScope(const Module& module, std::initializer_list<TraceArg> inputs) {
    if (detail::active_tracer) open(module, inputs);
  }
  ~TraceScope() {
    if (call_ >= 0) close();
  }
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;

  // Record `y` as what the call returned, and return it.
  Tensor output(Tensor y) {
    if (call_ >= 0) record_outputs({y});
    return y;
  }
  // The same for a forward that returns several tensors (an RNN's output and h_n).
  void outputs(std::initializer_list<TraceArg> ys) {
    if (call_ >= 0) record_outputs(ys);
  }

 private:
  void open(const Module& module, std::initializer_list<TraceArg> inputs);
  void close();
  void record_outputs(std::initializer_list<TraceArg> ys);
  int call_ = -1;  // this call's index in the trace; -1 when nothing is traced
};

// Say something of the last call of `module` in the running trace that its
// own forward cannot know, shown beside its type in the pictures: a
// decoder block marks its self-attention "causal mask", since the block
// builds that mask and the attention only reads it. Does nothing when no
// trace runs; an empty note, or a module that has not run in this trace, is a
// qkv::Error.
void trace_note(const Module& module, std::string_view note);

// Run `forward` with tracing on for this thread and return every module call
// it made. `model` is the root: names are dotted from it, and calls[0] is
// the model itself (traced or not).
viz::ModelTrace trace(const Module& model, const std::function<void()>& forward);

}  // namespace qkv::nn
