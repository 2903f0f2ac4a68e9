// The autograd engine: recording an op's backward, and running backward().
#include <qkv/core/autograd.hpp>
#include <qkv/core/error.hpp>

#include <unordered_map>
#include <unordered_set>
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

void record(Tensor& out, const char* name, std::vector<Tensor> inputs, BackwardFn backward) {
  if (!grad_enabled) return;
  bool any = false;
  for (const Tensor& x : inputs) any = any || (x.defined() && x.requires_grad());
  if (!any) return;
  auto node = std::make_shared<Node>();
  node->name = name;
  node->inputs = std::move(inputs);
  node->backward = std::move(backward);
  out.impl()->grad_fn = std::move(node);
  out.impl()->requires_grad = true;
}

// NOTE: a graph is a chain of shared_ptrs (output -> Node -> inputs -> their
// Nodes …). Letting the default destructor free it would recurse once per
// op, and a long training loop or a long RNN unroll would overflow the stack.
// So a dying Node hands the Nodes only it still keeps alive to a worklist
// and frees them in a loop.
Node::~Node() {
  std::vector<std::shared_ptr<Node>> pending;
  auto release = [&pending](Node& node) {
    node.backward = nullptr;  // drop the tensors it captured, so `inputs` hold the last references
    for (Tensor& x : node.inputs) {
      std::shared_ptr<TensorImpl> impl = std::move(x.impl_);
      if (impl && impl.use_count() == 1 && impl->grad_fn && impl->grad_fn.use_count() == 1)
        pending.push_back(std::move(impl->grad_fn));
    }
    node.inputs.clear();
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

// Every tensor reachable from root through grad_fn edges, ordered so that
// each comes after all the tensors made from it (reverse post-order of a
// depth-first search, done with an explicit stack: no recursion limit).
std::vector<TensorImpl*> topological_order(TensorImpl* root) {
  std::vector<TensorImpl*> post_order;
  std::unordered_set<TensorImpl*> seen{root};
  std::vector<std::pair<TensorImpl*, size_t>> stack{{root, 0}};  // (tensor, next input to visit)
  while (!stack.empty()) {
    static const std::vector<Tensor> no_inputs;
    auto& [t, next] = stack.back();
    const std::vector<Tensor>& inputs = t->grad_fn ? t->grad_fn->inputs : no_inputs;
    if (next < inputs.size()) {
      TensorImpl* child = inputs[next++].impl().get();
      if (child && child->requires_grad && seen.insert(child).second) stack.emplace_back(child, 0);
    } else {
      post_order.push_back(t);
      stack.pop_back();
    }
  }
  return {post_order.rbegin(), post_order.rend()};
}

// a += b, in place (both contiguous, same shape).
void add_into(Tensor& a, const Tensor& b) { kernels::axpy(a.numel(), 1.0f, b.data(), a.data()); }

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

  NoGradGuard no_grad;  // backward functions use ops; they must not record
  // d(loss)/d(t) for the tensors between root and the leaves, summed over
  // every use. NOTE: a backward function may return a tensor that shares
  // storage with its dout (reshape does), so sums are made out of place.
  std::unordered_map<TensorImpl*, Tensor> grads{{root.impl().get(), seed}};
  for (TensorImpl* t : topological_order(root.impl().get())) {
    auto found = grads.find(t);
    if (found == grads.end()) continue;  // nothing flowed here
    Tensor dout = std::move(found->second);
    grads.erase(found);

    if (!t->grad_fn) {  // a leaf: accumulate into .grad (+=)
      if (!t->grad.defined())
        t->grad = Tensor(dout.to_vector(), dout.shape());  // own copy: later += must not write into dout
      else
        add_into(t->grad, dout);
      continue;
    }
    Node& node = *t->grad_fn;
    if (!node.backward)
      fail(
          "backward: trying to backward through the graph a second time ({} has already run, and the tensors it "
          "saved are freed). Pass retain_graph=true to the first backward() to backpropagate through a graph twice",
          node.name);
    std::vector<Tensor> dinputs = node.backward(dout);
    // Done with this node: free what its backward function captured, as soon
    // as possible, so backward's peak memory holds only the nodes still to run.
    if (!retain_graph) node.backward = nullptr;
    if (dinputs.size() != node.inputs.size())
      fail("backward: {} returned {} gradients for {} inputs", node.name, dinputs.size(), node.inputs.size());
    for (size_t i = 0; i < dinputs.size(); ++i) {
      const Tensor& x = node.inputs[i];
      Tensor& dx = dinputs[i];
      if (!dx.defined() || !x.defined() || !x.requires_grad()) continue;
      if (dx.shape() != x.shape())
        fail("backward: {} gave a gradient of shape {} for input {} of shape {}", node.name, dx.shape(), i, x.shape());
      auto [slot, fresh] = grads.try_emplace(x.impl().get(), dx);
      if (!fresh) {
        Tensor sum(slot->second.to_vector(), x.shape());
        add_into(sum, dx);
        slot->second = sum;
      }
    }
  }
}

}  // namespace qkv
