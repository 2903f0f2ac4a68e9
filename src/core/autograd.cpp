// The autograd engine: recording an op's backward, and running backward().
#include <qkv/core/autograd.hpp>
#include <qkv/core/error.hpp>

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

// --- recording --------------------------------------------------------------

const Shape& Edge::shape() const {
  if (node) return node->shape;
  if (leaf) return leaf->shape;
  if (!constant) fail("Edge::shape: the input was undefined");
  return *constant;
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

void record_edges(Tensor& out, const char* name, const Tensor* inputs, size_t n, BackwardFn& backward) {
  if (!grad_enabled) return;
  bool any = false;
  for (size_t i = 0; i < n; ++i) any = any || (inputs[i].defined() && inputs[i].requires_grad());
  if (!any) return;
  auto node = std::make_shared<Node>();
  node->name = name;
  node->shape = out.shape();
  node->edges.reserve(n);
  for (size_t i = 0; i < n; ++i) node->edges.push_back(edge_to(inputs[i]));
  node->backward = std::move(backward);
  out.impl()->grad_fn = std::move(node);
  out.impl()->requires_grad = true;
}

}  // namespace

void record(Tensor& out, const char* name, std::initializer_list<Tensor> inputs, BackwardFn backward) {
  record_edges(out, name, inputs.begin(), inputs.size(), backward);
}

void record(Tensor& out, const char* name, const std::vector<Tensor>& inputs, BackwardFn backward) {
  record_edges(out, name, inputs.data(), inputs.size(), backward);
}

// NOTE: a graph is a chain of shared_ptrs (output -> Node -> its inputs'
// Nodes …). Letting the default destructor free it would recurse once per
// op, and a long training loop or a long RNN unroll would overflow the stack.
// So a dying Node hands the Nodes only it still keeps alive to a worklist
// and frees them in a loop.
Node::~Node() {
  std::vector<std::shared_ptr<Node>> pending;
  auto release = [&pending](Node& node) {
    // Drop the tensors it captured first: an input it captured also holds
    // that input's Node, and then the edge holds the last reference.
    node.backward = nullptr;
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

// Every Node reachable from root, ordered so that each comes after all the
// Nodes of the ops that read its output (reverse post-order of a depth-first
// search, done with an explicit stack: no recursion limit).
std::vector<Node*> topological_order(Node* root) {
  std::vector<Node*> post_order;
  std::unordered_map<Node*, bool> seen{{root, true}};
  std::vector<std::pair<Node*, size_t>> stack{{root, 0}};  // (node, next edge to visit)
  while (!stack.empty()) {
    auto& [n, next] = stack.back();
    if (next < n->edges.size()) {
      Node* child = n->edges[next++].node.get();
      if (child && seen.try_emplace(child, true).second) stack.emplace_back(child, 0);
    } else {
      post_order.push_back(n);
      stack.pop_back();
    }
  }
  return {post_order.rbegin(), post_order.rend()};
}

// a += b, in place (both contiguous, same shape).
void add_into(Tensor& a, const Tensor& b) { kernels::axpy(a.numel(), 1.0f, b.data(), a.data()); }

// A leaf's .grad() += g, or = a copy of g the first time (later += must not write into g).
void accumulate_leaf(TensorImpl& leaf, const Tensor& g) {
  if (!leaf.grad.defined())
    leaf.grad = Tensor(g.to_vector(), g.shape());
  else
    add_into(leaf.grad, g);
}

}  // namespace

void backward(const Tensor& root, const Tensor& grad, bool retain_graph) {
  if (!root.defined()) fail("backward: undefined tensor");
  if (!root.requires_grad())
    fail(
        "backward: tensor of shape {} does not require grad (no input had requires_grad, or it was made under "
        "NoGradGuard)",
        root.shape());
  Tensor seed = grad;
  if (!seed.defined()) {
    if (root.numel() != 1) fail("backward: a gradient must be given for a non-scalar output of shape {}", root.shape());
    seed = Tensor(std::vector<float>{1.0f}, root.shape());
  } else if (seed.shape() != root.shape()) {
    fail("backward: gradient of shape {} for an output of shape {}", seed.shape(), root.shape());
  }
  if (!root.impl()->grad_fn) {  // a leaf's own backward: its gradient is the seed
    accumulate_leaf(*root.impl(), seed);
    return;
  }

  NoGradGuard no_grad;  // backward functions use ops; they must not record
  // d(loss)/d(input) for the Nodes between root and the leaves, and for the
  // leaves, summed over every use. Keys are Node* or leaf TensorImpl*.
  // NOTE: a backward function may return a tensor that shares storage with
  // its dout (reshape does), so sums are made out of place.
  std::unordered_map<const void*, Tensor> grads{{root.impl()->grad_fn.get(), seed}};
  std::vector<TensorImpl*> leaves;  // in the order gradients first reached them
  for (Node* node_ptr : topological_order(root.impl()->grad_fn.get())) {
    auto found = grads.find(node_ptr);
    if (found == grads.end()) continue;  // nothing flowed here
    Tensor dout = std::move(found->second);
    grads.erase(found);

    Node& node = *node_ptr;
    if (!node.backward)
      fail(
          "backward: trying to backward through the graph a second time ({} has already run, and the tensors it "
          "saved are freed). Pass retain_graph=true to the first backward() to backpropagate through a graph twice",
          node.name);
    std::vector<Tensor> dinputs = node.backward(dout);
    // Done with this node: free what its backward function captured, as soon
    // as possible, so backward's peak memory holds only the nodes still to run.
    if (!retain_graph) node.backward = nullptr;
    if (dinputs.size() != node.edges.size())
      fail("backward: {} returned {} gradients for {} inputs", node.name, dinputs.size(), node.edges.size());
    for (size_t i = 0; i < dinputs.size(); ++i) {
      const Edge& e = node.edges[i];
      Tensor& dx = dinputs[i];
      if (!dx.defined() || !e.requires_grad() || (e.leaf && !e.leaf->requires_grad)) continue;
      if (dx.shape() != e.shape())
        fail("backward: {} gave a gradient of shape {} for input {} of shape {}", node.name, dx.shape(), i, e.shape());
      const void* key = e.node ? static_cast<const void*>(e.node.get()) : e.leaf.get();
      auto [slot, fresh] = grads.try_emplace(key, std::move(dx));
      if (fresh) {
        if (e.leaf) leaves.push_back(e.leaf.get());
      } else {
        Tensor sum(slot->second.to_vector(), e.shape());
        add_into(sum, dx);
        slot->second = sum;
      }
    }
  }
  for (TensorImpl* leaf : leaves) accumulate_leaf(*leaf, grads.at(leaf));
}

}  // namespace qkv
