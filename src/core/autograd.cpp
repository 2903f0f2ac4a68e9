// The autograd engine: recording an op's backward, and running backward().
#include <qkv/core/autograd.hpp>
#include <qkv/core/error.hpp>
#include <qkv/core/factory.hpp>

#include <string>
#include <unordered_map>
#include <utility>

#include "kernels/elementwise.hpp"

namespace qkv {

// --- grad mode --------------------------------------------------------------

namespace {
thread_local bool grad_enabled = true;
}

bool is_grad_enabled() { return grad_enabled; }
NoGradGuard::NoGradGuard() : previous_(grad_enabled) { grad_enabled = false; }
NoGradGuard::~NoGradGuard() { grad_enabled = previous_; }
EnableGradGuard::EnableGradGuard() : previous_(grad_enabled) { grad_enabled = true; }
EnableGradGuard::~EnableGradGuard() { grad_enabled = previous_; }

// --- recording --------------------------------------------------------------

const Shape& Edge::shape() const {
  if (node) return node->shape;
  if (leaf) return leaf->shape;
  if (!constant) fail("Edge::shape: the input was undefined");
  return *constant;
}

SavedTensor::SavedTensor(const Tensor& t) : tensor(t) {
  if (t.defined()) saved_at = t.impl()->storage->version.get();
}

SavedTensor::SavedTensor(const IntTensor& t) : int_tensor(t), is_int(true) {
  if (t.defined()) saved_at = t.storage()->version.get();
}

const Version* SavedTensor::version() const {
  if (is_int) return int_tensor.defined() ? &int_tensor.storage()->version : nullptr;
  return tensor.defined() ? &tensor.impl()->storage->version : nullptr;
}

const Tensor& SavedTensors::operator[](size_t i) const {
  if (i >= entries.size()) fail("saved[{}]: out of range for the {} tensor(s) the op saved", i, entries.size());
  if (entries[i].is_int) fail("saved[{}] is an IntTensor: read it with saved.int_tensor({})", i, i);
  return entries[i].tensor;
}

const IntTensor& SavedTensors::int_tensor(size_t i) const {
  if (i >= entries.size())
    fail("saved.int_tensor({}): out of range for the {} tensor(s) the op saved", i, entries.size());
  if (!entries[i].is_int) fail("saved.int_tensor({}): it is a Tensor: read it with saved[{}]", i, i);
  return entries[i].int_tensor;
}

namespace {

// Where x's gradient goes. Only a constant keeps a copy of something of x's
// (its shape); nothing keeps x's numbers.
Edge edge_to(const Tensor& x) {
  Edge e;
  if (!x.defined()) return e;
  const std::shared_ptr<TensorImpl>& impl = x.impl();
  if (impl->grad_fn)
    e.node = impl->grad_fn;
  else if (impl->requires_grad)
    e.leaf = impl;
  else
    e.constant = impl->shape;
  return e;
}

// The Node for `out`, or null when nothing is to be recorded (grad mode
// off, or no input requires grad). `has_backward`: the caller was given a
// backward function (checked here, so that a layer author's mistake is an
// Error at the op that made it, not a misleading one inside backward()).
Node* new_node(Tensor& out, const char* name, const Tensor* inputs, size_t n, std::initializer_list<SavedTensor> saved,
               bool has_backward) {
  if (name == nullptr) fail("record: the op's name is null");
  if (!has_backward) fail("record: {}: the backward function is empty", name);
  if (!out.defined()) fail("record: {}: the output is undefined", name);
  if (!grad_enabled) return nullptr;
  bool any = false;
  for (size_t i = 0; i < n; ++i) any = any || (inputs[i].defined() && inputs[i].requires_grad());
  if (!any) return nullptr;
  // The output must be a new tensor. Recording onto an input would make the
  // graph a cycle (the Node would own its own output's Node, and leak), and
  // recording onto a leaf that requires grad would silently turn a parameter
  // into an op's result, whose .grad() is never filled (PyTorch refuses an
  // in-place op on such a leaf for the same reason).
  for (size_t i = 0; i < n; ++i)
    if (inputs[i].defined() && inputs[i].impl() == out.impl())
      fail("record: {}: the output is also input {} (an op must return a new tensor)", name, i);
  if (out.impl()->requires_grad && !out.impl()->grad_fn)
    fail("record: {}: the output of shape {} is a leaf that requires grad (an op must return a new tensor)", name,
         out.shape());
  auto node = std::make_shared<Node>();
  node->name = name;
  node->shape = out.shape();
  node->edges.reserve(n);
  for (size_t i = 0; i < n; ++i) node->edges.push_back(edge_to(inputs[i]));
  node->saved.entries.assign(saved.begin(), saved.end());
  for (SavedTensor& kept : node->saved.entries) {
    const Version* v = kept.version();
    if (v == nullptr) continue;  // an undefined tensor: nothing to check
    // The output is kept detached: the Node would otherwise own its own output (a cycle).
    if (!kept.is_int && kept.tensor.same(out)) kept.tensor = out.detach();
    // Which tensor it is, for the error: the first input on its storage, or the output.
    if (v == &out.impl()->storage->version) kept.role = -1;
    for (size_t i = n; i-- > 0;)
      if (inputs[i].defined() && v == &inputs[i].impl()->storage->version) kept.role = static_cast<int64_t>(i);
  }
  out.impl()->grad_fn = std::move(node);
  out.impl()->requires_grad = true;
  return out.impl()->grad_fn.get();
}

}  // namespace

void record(Tensor& out, const char* name, std::initializer_list<Tensor> inputs,
            std::initializer_list<SavedTensor> saved, BackwardFn backward) {
  if (Node* node = new_node(out, name, inputs.begin(), inputs.size(), saved, backward != nullptr))
    node->backward = std::move(backward);
}

void record(Tensor& out, const char* name, const std::vector<Tensor>& inputs, std::initializer_list<SavedTensor> saved,
            BackwardFn backward) {
  if (Node* node = new_node(out, name, inputs.data(), inputs.size(), saved, backward != nullptr))
    node->backward = std::move(backward);
}

void record_accumulate(Tensor& out, const char* name, const Tensor& input, std::initializer_list<SavedTensor> saved,
                       AccumulateFn backward) {
  if (Node* node = new_node(out, name, &input, 1, saved, backward != nullptr)) node->accumulate = std::move(backward);
}

// NOTE: a graph is a chain of shared_ptrs (output -> Node -> its inputs'
// Nodes …). Letting the default destructor free it would recurse once per
// op, and a long training loop or a long RNN unroll would overflow the stack.
// So a dying Node hands the Nodes only it still keeps alive to a worklist
// and frees them in a loop.
Node::~Node() {
  std::vector<std::shared_ptr<Node>> pending;
  auto release = [&pending](Node& node) {
    // Drop the tensors it saved first: an input it saved also holds that
    // input's Node, and then the edge holds the last reference.
    node.backward = nullptr;
    node.accumulate = nullptr;
    node.saved.entries.clear();
    for (Edge& e : node.edges)
      if (e.node && e.node.use_count() == 1) pending.push_back(std::move(e.node));
    node.edges.clear();
  };
  release(*this);
  while (!pending.empty()) {
    std::shared_ptr<Node> node = std::move(pending.back());
    pending.pop_back();
    release(*node);
  }  // `node` is freed here with nothing left to recurse into
}

// --- backward ---------------------------------------------------------------

namespace {

// The graph below a root, numbered: each Node and each leaf reachable from
// it gets a slot number, the key of its gradient; `post_order` lists the
// (Node, slot) pairs so that, read backwards, each Node comes after all the
// Nodes of the ops that read its output (the reverse post-order of a
// depth-first search, done with an explicit stack: no recursion limit).
struct Graph {
  std::unordered_map<const void*, size_t> slot;  // Node* or leaf TensorImpl* -> slot number
  std::vector<std::pair<Node*, size_t>> post_order;
  std::vector<std::pair<TensorImpl*, size_t>> leaves;
};

Graph number_graph(Node* root) {
  Graph g;
  g.slot.emplace(root, 0);
  struct Visit {
    Node* node;
    size_t slot;
    size_t next = 0;  // the next edge to follow
  };
  std::vector<Visit> stack{{root, 0}};
  while (!stack.empty()) {
    Visit& v = stack.back();
    if (v.next < v.node->edges.size()) {
      const Edge& e = v.node->edges[v.next++];
      if (!e.requires_grad()) continue;
      const void* key = e.node ? static_cast<const void*>(e.node.get()) : e.leaf.get();
      auto [it, fresh] = g.slot.try_emplace(key, g.slot.size());
      if (!fresh) continue;
      if (e.node)
        stack.push_back({e.node.get(), it->second});  // NOTE: invalidates v
      else
        g.leaves.emplace_back(e.leaf.get(), it->second);
    } else {
      g.post_order.emplace_back(v.node, v.slot);
      stack.pop_back();
    }
  }
  return g;
}

// The error for a node whose saved tensor was written in place after its op
// ran (see "Writes in place", autograd.hpp), in PyTorch's words and then ours.
void check_saved(const Node& node) {
  for (const SavedTensor& s : node.saved.entries) {
    const Version* version = s.version();
    if (version == nullptr) continue;  // undefined: nothing was read
    const uint64_t now = version->get();
    if (now == s.saved_at) continue;
    const std::string which = s.role >= 0    ? fmt::format("its input {}", s.role)
                              : s.role == -1 ? std::string("its output")
                                             : std::string("a tensor");
    fail(
        "backward: one of the variables needed for gradient computation has been modified by an inplace operation: "
        "{} saved {} of shape {} at version {}, and it is now at version {}. It was written in place after the "
        "forward (through data(), an optimizer step, an initialiser or load_state_dict); run the forward again "
        "after the write, or write into a clone()",
        node.name, which, s.is_int ? s.int_tensor.shape() : s.tensor.shape(), s.saved_at, now);
  }
}

// a += b, in place (both contiguous, same shape).
void add_into(Tensor& a, const Tensor& b) { kernels::axpy(a.numel(), 1.0f, b.data(), a.data()); }

// `grad`, made backward()'s own to write in place: a copy unless nothing
// else sees it (sole_owner). A gradient a backward function returned may
// share storage with another tensor (add hands dout on as it is, to both
// inputs; reshape's is dout seen with another shape; the seed is the caller's).
Tensor& make_own(Tensor& grad) {
  if (!sole_owner(grad)) grad = grad.detach().clone();  // detached first: the copy records nothing
  return grad;
}

// sum += g: into whichever of the two nothing else sees, else into a new
// tensor. (a + b and b + a are the same floats, so which one is written
// does not change the result.)
void add_to(Tensor& sum, Tensor g) {
  if (sole_owner(sum)) {
    add_into(sum, g);
  } else if (sole_owner(g)) {
    add_into(g, sum);
    sum = std::move(g);
  } else {
    Tensor s = Tensor::empty(g.shape());  // every element is written below
    const Tensor& a = sum;                // both only read: a const Tensor's data() is not a write
    const Tensor& b = g;
    kernels::binary(kernels::Binary::Add, g.numel(), a.data(), 1, b.data(), 1, s.data());
    sum = std::move(s);
  }
}

// A leaf's .grad() += g. The first time, .grad() becomes g itself when
// nothing else sees it (no copy), else a copy: later += must not write into
// a tensor someone else holds, nor may writing to that tensor change .grad().
void accumulate_leaf(TensorImpl& leaf, Tensor g) {
  if (leaf.grad.defined())
    add_into(leaf.grad, g);
  else
    leaf.grad = std::move(make_own(g));
}

}  // namespace

bool sole_owner(const Tensor& t) {
  return t.defined() && t.impl().use_count() == 1 && t.impl()->storage.use_count() == 1;
}

Tensor reuse_or_empty(const Tensor& dout) { return sole_owner(dout) ? dout : Tensor::empty(dout.shape()); }

void backward(const Tensor& root, const Tensor& grad, bool retain_graph) {
  if (!root.defined()) fail("backward: undefined tensor");
  if (!root.requires_grad())
    fail(
        "backward: tensor of shape {} does not require grad (no input had requires_grad, or it was made under "
        "NoGradGuard)",
        root.shape());
  Tensor seed = grad;  // the caller's: sole_owner is false, so it is never written
  if (!grad.defined()) {
    if (root.numel() != 1) fail("backward: a gradient must be given for a non-scalar output of shape {}", root.shape());
    seed = Tensor(std::vector<float>{1.0f}, root.shape());
  } else if (grad.shape() != root.shape()) {
    fail("backward: gradient of shape {} for an output of shape {}", grad.shape(), root.shape());
  }
  if (!root.impl()->grad_fn) {  // a leaf's own backward: its gradient is the seed
    accumulate_leaf(*root.impl(), std::move(seed));
    return;
  }

  NoGradGuard no_grad;  // backward functions use ops; they must not record
  // grads[k]: d(loss)/d(output) of Node k, or d(loss)/d(leaf k), summed over
  // every use; undefined until a gradient reaches it.
  Graph graph = number_graph(root.impl()->grad_fn.get());
  std::vector<Tensor> grads(graph.slot.size());
  grads[0] = std::move(seed);
  auto grad_of = [&](const Edge& e) -> Tensor& {
    return grads[graph.slot.at(e.node ? static_cast<const void*>(e.node.get()) : e.leaf.get())];
  };
  for (size_t n = graph.post_order.size(); n-- > 0;) {  // the post-order backwards: the loss first
    auto [node_ptr, k] = graph.post_order[n];
    if (!grads[k].defined()) continue;  // nothing flowed here
    // NOTE: moved out, so that while the node's backward function reads it,
    // this is its only handle (sole_owner: the function may write over it),
    // and it is freed as soon as the function is done with it.
    Tensor dout = std::move(grads[k]);

    Node& node = *node_ptr;
    if (!node.backward && !node.accumulate)
      fail(
          "backward: trying to backward through the graph a second time ({} has already run, and the tensors it "
          "saved are freed). Pass retain_graph=true to the first backward() to backpropagate through a graph twice",
          node.name);
    check_saved(node);
    if (node.accumulate) {
      const Edge& e = node.edges[0];
      if (e.requires_grad() && !(e.leaf && !e.leaf->requires_grad)) {
        Tensor& dx = grad_of(e);
        if (!dx.defined()) dx = zeros(e.shape());
        node.accumulate(node.saved, dout, make_own(dx));
      }
      if (!retain_graph) {  // done with this node: free what it saved
        node.accumulate = nullptr;
        node.saved.entries.clear();
      }
      continue;
    }
    std::vector<Tensor> dinputs = node.backward(node.saved, dout);
    // Done with dout (a gradient written over it is now the sole owner of
    // its numbers) and with this node: free what it saved, as soon as
    // possible, so backward's peak memory holds only the nodes still to run.
    dout = Tensor();
    if (!retain_graph) {
      node.backward = nullptr;
      node.saved.entries.clear();
    }
    if (dinputs.size() != node.edges.size())
      fail("backward: {} returned {} gradients for {} inputs", node.name, dinputs.size(), node.edges.size());
    for (size_t i = 0; i < dinputs.size(); ++i) {
      const Edge& e = node.edges[i];
      Tensor& dx = dinputs[i];
      if (!dx.defined() || !e.requires_grad() || (e.leaf && !e.leaf->requires_grad)) continue;
      if (dx.shape() != e.shape())
        fail("backward: {} gave a gradient of shape {} for input {} of shape {}", node.name, dx.shape(), i, e.shape());
      Tensor& sum = grad_of(e);
      if (!sum.defined())
        sum = std::move(dx);
      else
        add_to(sum, std::move(dx));
    }
  }
  for (auto [leaf, k] : graph.leaves)
    if (grads[k].defined()) accumulate_leaf(*leaf, std::move(grads[k]));
}

}  // namespace qkv
