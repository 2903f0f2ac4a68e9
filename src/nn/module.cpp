// nn::Module: registration, traversal, mode, state dicts and printing.
#include <qkv/core/autograd.hpp>
#include <qkv/core/error.hpp>
#include <qkv/nn/module.hpp>

#include <fmt/format.h>

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <unordered_map>
#include <unordered_set>

namespace qkv::nn {

Tensor& Module::register_parameter(const std::string& name, Tensor& member, Tensor value) {
  if (name.empty() || name.find('.') != std::string::npos) fail("register_parameter: bad name '{}'", name);
  for (const auto& [n, m] : children_)
    if (n == name) fail("register_parameter: {} already has a submodule '{}'", type_name(), name);
  for (const Param& p : params_) {
    if (p.name == name) fail("register_parameter: {} already has a parameter '{}'", type_name(), name);
    if (p.member == &member)
      fail("register_parameter: {}: the member given for '{}' is already parameter '{}'", type_name(), name, p.name);
  }
  if (!value.defined()) {  // absent, as PyTorch's register_parameter(name, None)
    member = Tensor();
    params_.push_back({name, &member, Shape{}, true});
    return member;
  }
  if (!value.is_leaf()) value = value.detach();  // a parameter is a leaf of every graph
  value.requires_grad_();
  member = std::move(value);
  params_.push_back({name, &member, member.shape(), false});
  return member;
}

Tensor Module::register_parameter(const std::string& name, Tensor value) {
  auto slot = std::make_unique<Tensor>();
  Tensor& p = register_parameter(name, *slot, std::move(value));
  owned_.push_back(std::move(slot));
  return p;
}

// A member may have been assigned anything since it was registered; this is
// where a wrong one is caught, before a list, a count, a save or a load uses it.
// `shape` is null for a parameter registered absent, which may take any shape.
Tensor Module::checked(const std::string& full_name, const Tensor& member, const Shape* shape) const {
  if (!member.defined())
    fail("{}: parameter '{}' holds an undefined tensor; assign it a tensor{}", type_name(), full_name,
         shape ? fmt::format(" of shape {}", *shape) : std::string());
  if (shape && member.shape() != *shape)
    fail("{}: parameter '{}' was registered with shape {} but holds a tensor of shape {}", type_name(), full_name,
         *shape, member.shape());
  if (!member.is_leaf())
    fail(
        "{}: parameter '{}' holds the result of an op, not a parameter; assign another module's parameter or "
        "x.detach().requires_grad_()",
        type_name(), full_name);
  if (!member.requires_grad())
    fail(
        "{}: parameter '{}' holds a tensor that does not require grad; call requires_grad_() on it first (PyTorch's "
        "nn.Parameter)",
        type_name(), full_name);
  return member;
}

bool Module::contains(const Module* module) const {
  if (module == this) return true;
  for (const auto& [name, child] : children_)
    if (child->contains(module)) return true;
  return false;
}

void Module::add_child(const std::string& name, std::shared_ptr<Module> module) {
  if (!module) fail("register_module: module '{}' is null", name);
  if (name.empty() || name.find('.') != std::string::npos) fail("register_module: bad name '{}'", name);
  for (const auto& [n, m] : children_)
    if (n == name) fail("register_module: {} already has a submodule '{}'", type_name(), name);
  for (const Param& p : params_)
    if (p.name == name) fail("register_module: {} already has a parameter '{}'", type_name(), name);
  // A module inside itself would make every walk below endless.
  if (module->contains(this))
    fail("register_module: '{}' ({}) contains this {}: a module cannot be its own submodule", name, module->type_name(),
         type_name());
  children_.emplace_back(name, std::move(module));
}

void Module::all_named_parameters(const std::string& prefix, std::vector<std::pair<std::string, Tensor>>& out) const {
  for (const Param& p : params_) {
    if (p.absent && !p.member->defined()) continue;  // PyTorch's None: not a parameter
    std::string name = prefix + p.name;
    Tensor t = checked(name, *p.member, p.absent ? nullptr : &p.shape);
    out.emplace_back(std::move(name), std::move(t));
  }
  for (const auto& [name, child] : children_) child->all_named_parameters(prefix + name + ".", out);
}

std::vector<std::pair<std::string, Tensor>> Module::all_named_parameters() const {
  std::vector<std::pair<std::string, Tensor>> out;
  all_named_parameters("", out);
  return out;
}

// Each tensor once, under the first name it is reached by (PyTorch's
// named_parameters(remove_duplicate=True)): a tied weight is one parameter,
// to count, to clear and to update.
std::vector<std::pair<std::string, Tensor>> Module::named_parameters() const {
  std::vector<std::pair<std::string, Tensor>> out;
  for (auto& named : all_named_parameters()) {
    const Tensor& p = named.second;
    bool seen = std::any_of(out.begin(), out.end(), [&](const auto& kept) { return kept.second.same(p); });
    if (!seen) out.push_back(std::move(named));
  }
  return out;
}

std::vector<Tensor> Module::parameters() const {
  std::vector<Tensor> out;
  for (auto& [name, p] : named_parameters()) out.push_back(p);
  return out;
}

int64_t Module::num_parameters() const {
  int64_t n = 0;
  for (const Tensor& p : parameters()) n += p.numel();
  return n;
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [name, child] : children_) child->train(on);
}

void Module::zero_grad() {
  for (Tensor& p : parameters()) p.zero_grad();
}

// Every name, a tied tensor under each of its names (as PyTorch's state_dict).
StateDict Module::state_dict() const {
  StateDict state;
  for (auto& [name, p] : all_named_parameters()) state.emplace(name, p.detach());
  return state;
}

StateSpec Module::state_spec() const {
  StateSpec spec;
  for (auto& [name, p] : all_named_parameters()) spec.push_back({name, p.shape()});
  return spec;
}

IncompatibleKeys Module::load_state_dict(const StateDict& state, bool strict) {
  // Check everything first, so a bad state dict changes nothing.
  const std::string where = "load_state_dict: " + type_name();
  IncompatibleKeys keys = validate_state_dict(state, state_spec(), strict, where, "model");
  // A tied tensor is loaded once per name: its entries must agree, bit for
  // bit, or one would silently win over the other.
  auto all = all_named_parameters();
  for (size_t i = 0; i < all.size(); ++i) {
    auto a = state.find(all[i].first);
    if (a == state.end()) continue;
    for (size_t j = i + 1; j < all.size(); ++j) {
      if (!all[j].second.same(all[i].second)) continue;
      auto b = state.find(all[j].first);
      if (b == state.end()) continue;
      if (std::memcmp(a->second.data(), b->second.data(), sizeof(float) * static_cast<size_t>(a->second.numel())) != 0)
        fail("{}: '{}' and '{}' are one tied parameter of the model, but the state dict gives them different values",
             where, all[i].first, all[j].first);
    }
  }
  for (auto& [name, p] : all) {
    auto it = state.find(name);
    if (it == state.end()) continue;  // missing, allowed when not strict: the parameter keeps its values
    const Tensor& src = it->second;   // validated above: p's shape
    std::copy(src.data(), src.data() + src.numel(), p.data());  // in place: every holder sees it
  }
  return keys;
}

// The count first, in a statement of its own (the operands of + are
// evaluated in no fixed order): it checks every parameter and names a broken
// one by its full name ('0.weight'), where a submodule's repr knows 'weight'.
std::string Module::repr() const {
  const int64_t total = num_parameters();
  return repr(0) + fmt::format("\nTotal parameters: {}", total);
}

// Linear(in_features=2, out_features=3, bias=True)
// TransformerEncoder(
//   (embedding): Embedding(200, 24)                     # 4800
//   ...
// )
std::string Module::repr(size_t indent) const {
  std::string head = type_name() + "(" + extra_repr();
  if (children_.empty()) return head + ")";
  std::string s = head + "\n";
  std::string pad(indent + 2, ' ');
  for (const auto& [name, child] : children_) {
    std::string line = pad + "(" + name + "): " + child->repr(indent + 2);
    s += line + fmt::format("  # {} parameters\n", child->num_parameters());
  }
  return s + std::string(indent, ' ') + ")";
}

void ModuleList::push_back(std::shared_ptr<Module> module) {
  if (!module) fail("ModuleList::push_back: module {} is null", size());
  register_module(std::to_string(size()), std::move(module));
}

std::shared_ptr<Module> ModuleList::operator[](size_t i) const {
  if (i >= size()) fail("ModuleList: index {} is out of range for a list of {} modules", i, size());
  return children()[i].second;
}

// "qkv::nn::Linear" for typeid(nn::Linear), where typeid's own name is "N3qkv2nn6LinearE".
void ModuleList::wrong_type(size_t i, const std::type_info& requested) const {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> readable(abi::__cxa_demangle(requested.name(), nullptr, nullptr, &status),
                                                  std::free);
  fail("ModuleList::at: module {} is a {}, not a {}", i, (*this)[i]->type_name(),
       status == 0 && readable ? readable.get() : requested.name());
}

}  // namespace qkv::nn

// --- tracing ------------------------------------------------------------------------
namespace qkv::nn {
namespace detail {

// One trace under way: the record, the open calls (innermost last), and
// where each module of the model sits, to name it and to place a module
// whose forward opens no scope between its traced parent and child.
class Tracer {
 public:
  // NOTE: the model's inputs that follow() lent requires_grad to get it back here, also when the
  // forward threw.
  ~Tracer() {
    for (Tensor& t : followed_) t.requires_grad_(false);
  }
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  explicit Tracer(const Module& model) : model_(&model) {
    index(model, "", nullptr);
    viz::ModuleCall root{"", model.type_name(), model.extra_repr(), -1, 0, {}, {}, model.num_parameters(), false};
    trace_.calls.push_back(std::move(root));
    modules_.push_back(&model);
    open_.push_back({0, false});
  }

  int open(const Module& module, std::initializer_list<TraceArg> inputs) {
    // The model's own forward: its scope fills calls[0].
    if (&module == model_ && open_.size() == 1 && !trace_.calls[0].traced) {
      trace_.calls[0].traced = true;
      follow(inputs);
      trace_.calls[0].inputs = tensors(inputs);
      open_.push_back({0, false});
      return 0;
    }
    leave_stand_ins(module);
    // Submodules of the model that ran no scope of their own, between the
    // innermost open call and this module: opened as stand-ins.
    std::vector<const Module*> missing;
    for (const Module* up = parent_of(&module); up && !is_open(up); up = parent_of(up)) missing.push_back(up);
    std::reverse(missing.begin(), missing.end());  // outermost first
    for (const Module* m : missing) push(*m, {}, false);
    return push(module, tensors(inputs), true);
  }

  void close(int call) {
    while (open_.back().call != call && open_.back().stand_in) pop();
    pop();
  }

  void note(const Module& module, std::string_view text) {
    for (size_t i = modules_.size(); i-- > 0;)
      if (modules_[i] == &module) {
        trace_.calls[i].note = std::string(text);
        return;
      }
    fail("nn::trace_note: {} has not run in this trace: no call to note \"{}\" on", module.type_name(), text);
  }

  void outputs(int call, std::initializer_list<TraceArg> ys) {
    trace_.calls[static_cast<size_t>(call)].outputs = tensors(ys);
  }

  viz::ModelTrace finish() {
    while (open_.size() > 1) pop();  // stand-ins still open under the model
    viz::ModuleCall& root = trace_.calls[0];
    if (!root.traced) fill_from_children(0);
    return std::move(trace_);
  }

 private:
  struct Open {
    int call;
    bool stand_in;  // opened for a module without a scope of its own; closed by what encloses it
  };
  struct Place {
    std::string name;
    const Module* parent;
  };

  void index(const Module& m, const std::string& name, const Module* parent) {
    if (places_.contains(&m)) return;  // a module registered twice is named where it is first reached
    places_[&m] = {name, parent};
    for (const auto& [child_name, child] : m.named_children())
      index(*child, name.empty() ? child_name : name + "." + child_name, &m);
  }
  const Module* parent_of(const Module* m) const {
    auto it = places_.find(m);
    return it == places_.end() ? nullptr : it->second.parent;
  }
  bool is_open(const Module* m) const {
    return std::any_of(open_.begin(), open_.end(),
                       [&](const Open& o) { return modules_[static_cast<size_t>(o.call)] == m; });
  }
  // Close the stand-ins that do not enclose `module`.
  void leave_stand_ins(const Module& module) {
    while (open_.back().stand_in) {
      const Module* stand_in = modules_[static_cast<size_t>(open_.back().call)];
      bool encloses = false;
      for (const Module* up = parent_of(&module); up; up = parent_of(up)) encloses = encloses || up == stand_in;
      if (encloses) return;
      pop();
    }
  }

  int push(const Module& module, std::vector<viz::TracedTensor> inputs, bool traced) {
    const int parent = open_.back().call;
    auto place = places_.find(&module);
    viz::ModuleCall call{place == places_.end() ? module.type_name() : place->second.name,
                         module.type_name(),
                         module.extra_repr(),
                         parent,
                         trace_.calls[static_cast<size_t>(parent)].depth + 1,
                         std::move(inputs),
                         {},
                         module.num_parameters(),
                         traced};
    trace_.calls.push_back(std::move(call));
    modules_.push_back(&module);
    const int index = static_cast<int>(trace_.calls.size()) - 1;
    open_.push_back({index, !traced});
    return index;
  }
  void pop() {
    const int call = open_.back().call;
    if (open_.back().stand_in) fill_from_children(call);
    open_.pop_back();
  }
  // A module that opened no scope: the inputs of its first traced call and
  // the outputs of its last.
  void fill_from_children(int call) {
    viz::ModuleCall& c = trace_.calls[static_cast<size_t>(call)];
    bool first = true;
    for (size_t i = static_cast<size_t>(call) + 1; i < trace_.calls.size(); ++i) {
      const viz::ModuleCall& child = trace_.calls[i];
      if (child.parent != call) continue;
      if (first) c.inputs = child.inputs;
      first = false;
      c.outputs = child.outputs;
    }
  }

  // The ops between two modules are followed through the autograd graph (sources()), which records
  // only what reads a tensor that requires grad. The model's own inputs are data, so an op on one
  // (a slice of Q, a cat of Q and K) would hide where the next module's input came from: each input
  // that is a leaf without requires_grad gets it for the trace. No number changes, and no backward runs.
  void follow(std::initializer_list<TraceArg> inputs) {
    for (const TraceArg& a : inputs)
      if (a.tensor && a.tensor->defined() && a.tensor->is_leaf() && !a.tensor->requires_grad()) {
        Tensor lent = *a.tensor;  // the same tensor: one flag, given back by ~Tracer
        followed_.push_back(lent.requires_grad_(true));
      }
  }

  // Each tensor object gets one id for the whole trace; the trace keeps it
  // alive, so that no later tensor can reuse its address.
  int id_of(const void* address, std::shared_ptr<const void> keep) {
    auto [it, added] = ids_.try_emplace(address, static_cast<int>(ids_.size()));
    if (added) {
      alive_.push_back(std::move(keep));
      from_.emplace_back();
    }
    return it->second;
  }
  std::vector<viz::TracedTensor> tensors(std::initializer_list<TraceArg> args) {
    std::vector<viz::TracedTensor> out;
    for (const TraceArg& a : args) {
      if (a.tensor && a.tensor->defined())
        out.push_back(traced(*a.tensor));
      else if (a.ints && a.ints->defined())
        out.push_back({id_of(a.ints->storage().get(), a.ints->storage()), a.ints->shape(), true});
    }
    return out;
  }
  viz::TracedTensor traced(const Tensor& t) {
    const size_t before = ids_.size();
    const int id = id_of(t.impl().get(), t.impl());
    const Node* node = t.impl()->grad_fn.get();
    if (ids_.size() > before && node) {  // first seen: where it came from, then known by its node
      auto known = node_ids_.find(node);
      from_[static_cast<size_t>(id)] = known != node_ids_.end() ? std::vector<int>{known->second} : sources(*node);
      node_ids_.try_emplace(node, id);
    }
    return {id, t.shape(), false, from_[static_cast<size_t>(id)]};
  }
  // The traced tensors nearest to `node` on each path back through the
  // graph: what the ops between two modules were computed from.
  std::vector<int> sources(const Node& node) const {
    std::vector<int> found;
    std::vector<const Node*> stack{&node};
    std::unordered_set<const Node*> seen{&node};
    auto reach = [&](int id) {
      if (std::find(found.begin(), found.end(), id) == found.end()) found.push_back(id);
    };
    while (!stack.empty()) {
      const Node* n = stack.back();
      stack.pop_back();
      for (const Edge& e : n->edges) {
        if (e.leaf) {  // a traced input that requires grad; a parameter is no module's output
          auto it = ids_.find(e.leaf.get());
          if (it != ids_.end()) reach(it->second);
          continue;
        }
        if (!e.node || !seen.insert(e.node.get()).second) continue;
        auto it = node_ids_.find(e.node.get());
        if (it != node_ids_.end())
          reach(it->second);
        else
          stack.push_back(e.node.get());
      }
    }
    std::sort(found.begin(), found.end());  // in the order they were first traced
    return found;
  }

  const Module* model_;
  viz::ModelTrace trace_;
  std::vector<const Module*> modules_;  // the module of each call
  std::vector<Open> open_;
  std::unordered_map<const Module*, Place> places_;
  std::unordered_map<const void*, int> ids_;
  std::vector<std::shared_ptr<const void>> alive_;
  std::vector<std::vector<int>> from_;             // each id's TracedTensor::from ({} for an IntTensor)
  std::unordered_map<const Node*, int> node_ids_;  // the node that made a traced tensor -> its id
  std::vector<Tensor> followed_;                   // the model's inputs lent requires_grad by follow()
};

}  // namespace detail

void TraceScope::open(const Module& module, std::initializer_list<TraceArg> inputs) {
  call_ = detail::active_tracer->open(module, inputs);
}
void TraceScope::close() {
  // A scope opened before the trace ended is closed after: nothing to record.
  if (detail::active_tracer) detail::active_tracer->close(call_);
}
void TraceScope::record_outputs(std::initializer_list<TraceArg> ys) {
  if (detail::active_tracer) detail::active_tracer->outputs(call_, ys);
}

void trace_note(const Module& module, std::string_view note) {
  if (note.empty()) fail("nn::trace_note: an empty note for {}", module.type_name());
  if (detail::active_tracer) detail::active_tracer->note(module, note);
}

viz::ModelTrace trace(const Module& model, const std::function<void()>& forward) {
  if (detail::active_tracer) fail("nn::trace: a trace of this thread is already running; traces do not nest");
  if (!forward) fail("nn::trace: no forward to run for {}", model.type_name());
  // The graph links a module's output to the next module's input through
  // the ops between them; it is built even when the caller asked for none,
  // and freed with the trace (no number of the forward changes).
  EnableGradGuard graph;
  detail::Tracer tracer(model);
  detail::active_tracer = &tracer;
  try {
    forward();
  } catch (...) {
    detail::active_tracer = nullptr;
    throw;
  }
  detail::active_tracer = nullptr;
  return tracer.finish();
}

}  // namespace qkv::nn
