// optim::Optimizer: the base of SGD, Adam and AdamW, as PyTorch's
// torch.optim.Optimizer. It holds the parameters it updates, clears their
// gradients (zero_grad) and, on step(), updates every parameter that has a
// gradient:
//
//   optim::AdamW opt(model.parameters(), 1e-3f);
//   for (…) {
//     opt.zero_grad();
//     Tensor loss = …;
//     loss.backward();
//     opt.step();
//   }
//
// NOTE: parameters are shared handles (nn/module.hpp): step() writes their
// numbers in place, so the model, its named members and the optimizer all see
// the new values. Nothing here assigns a new tensor to a parameter.
//
// Each parameter has its own state, PyTorch's optimizer.state[p]: how many
// updates it has had, and buffers of its shape (SGD's momentum_buffer, Adam's
// exp_avg and exp_avg_sq), made on its first update. A parameter with no
// gradient is skipped: its state does not move.
//
// state_dict() flattens the hyperparameters and every state into named
// tensors, so a checkpoint (io/checkpoint.hpp) can carry them:
//
//   Adam.lr  Adam.beta1  Adam.beta2  Adam.eps  Adam.weight_decay   1 element each
//   Adam.num_params                                                1 element: P
//   state.3.step                                                   1 element: updates of parameter 3
//   state.3.exp_avg  state.3.exp_avg_sq                            parameter 3's shape
//
// The hyperparameters' names carry the optimizer's type, so SGD refuses
// Adam's state, and Adam refuses AdamW's. Parameter i is the i-th of the
// list given to the constructor (model.parameters() order).
//
// Left out on purpose: parameter groups (one set of hyperparameters for
// every parameter), closures, sparse gradients, maximize, amsgrad and fused
// multi-tensor kernels.
#pragma once
#include <qkv/core/state_dict.hpp>
#include <qkv/core/tensor.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace qkv::optim {

// Hyperparameters by name, in a fixed order: {{"lr", 0.1}, {"momentum", 0.9}, …}.
// Booleans (SGD's nesterov) are 0 or 1.
using Hyperparameters = std::vector<std::pair<std::string, float>>;

// One parameter's state: PyTorch's optimizer.state[p].
struct ParamState {
  int64_t step = 0;                       // updates applied to this parameter so far
  std::map<std::string, Tensor> buffers;  // "exp_avg", …: each of the parameter's shape
};

class Optimizer {
 public:
  // Refuses an empty list, an undefined or non-leaf tensor, or a parameter
  // given twice.
  explicit Optimizer(std::vector<Tensor> params);
  Optimizer(const Optimizer&) = delete;  // it owns state: share it, do not copy it
  Optimizer& operator=(const Optimizer&) = delete;
  virtual ~Optimizer() = default;

  void zero_grad();  // forget every parameter's gradient
  // One update of every parameter that has a gradient (with recording off).
  // Checks the hyperparameters first, so `opt.lr = -1` fails here, loudly.
  void step();

  // The learning rate, shared by every optimizer; a schedule sets it between steps.
  float lr = 0;

  const std::vector<Tensor>& params() const { return params_; }
  const ParamState& state(size_t i) const;  // parameter i's state

  // Hyperparameters and states as flat named tensors (see the top of this
  // file). NOTE: the tensors are copies: stepping on does not change a
  // state dict already taken.
  StateDict state_dict() const;
  // What a state dict of this optimizer may hold: every hyperparameter and
  // num_params (required, one number each), and for each parameter i an
  // optional state.<i>.step (one number) and state.<i>.<buffer> (parameter
  // i's shape).
  StateSpec state_spec() const;
  // Throw what load_state_dict would throw for `state`, changing nothing:
  // a state from another optimizer type, another number of parameters, a
  // missing or unknown key or a shape not in state_spec()
  // (validate_state_dict, core/state_dict.hpp), a step that is not a whole
  // number ≥ 0, a parameter with some of its buffers but not all or with no
  // step, a parameter with a step ≥ 1 but none of its buffers (Adam's
  // moments, SGD's momentum buffer when momentum ≠ 0), an out-of-range
  // hyperparameter.
  void check_state_dict(const StateDict& state) const;
  // Replace the hyperparameters and every parameter's state with `state`'s,
  // as PyTorch does. All or nothing: a bad state dict changes nothing.
  void load_state_dict(const StateDict& state);

  virtual std::string type_name() const = 0;  // "Adam"
  virtual Hyperparameters hyperparameters() const = 0;

 protected:
  // Update parameter p from its gradient; `state` is p's own (empty before
  // p's first update; step() has already counted this update in state.step).
  virtual void update(Tensor& p, const Tensor& grad, ParamState& state) = 0;
  // The buffers a parameter's state may hold: {"exp_avg", "exp_avg_sq"}.
  virtual std::vector<std::string> buffer_names() const = 0;
  // Throw a qkv::Error naming any value out of range (the constructor's checks).
  virtual void check_hyperparameters(const std::map<std::string, float>& h) const = 0;
  // Take every value of `h` (already checked).
  virtual void set_hyperparameters(const std::map<std::string, float>& h) = 0;

 private:
  // check_state_dict's work: check `state` and return its hyperparameters by name.
  std::map<std::string, float> checked_hyperparameters(const StateDict& state) const;

  std::vector<Tensor> params_;
  std::vector<ParamState> state_;  // state_[i] belongs to params_[i]
};

}  // namespace qkv::optim
