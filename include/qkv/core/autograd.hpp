// Reverse-mode automatic differentiation over a graph built as ops run.
//
// Every op that reads a tensor with requires_grad leaves a Node on its output:
// an edge to each input it read, and a backward function that turns
// d(loss)/d(output) into d(loss)/d(input) for each input. backward() sorts
// the graph topologically (with an explicit stack, so depth is unlimited)
// and walks it from the loss back to the leaves.
//
// Gradients ADD: a tensor used twice gets both contributions, and a leaf's
// .grad() accumulates (+=) over backward() calls until zero_grad() clears it.
// zero_grad() is the only thing that clears a gradient.
//
// Memory: a graph keeps alive only what its backward functions need. An edge
// points at the input's Node (or, for a leaf, at the leaf), never at an
// intermediate tensor's numbers: an op whose backward needs an input's values
// captures that input itself (mul does; add does not, so a + b keeps neither
// alive). A backward function runs at most once: backward() frees what each
// node saved (the tensors its backward function captured) as soon as it has
// run, as PyTorch does by default. A second backward() through the same graph
// is then an Error, unless the first was given retain_graph = true.
// An output's gradient is handed to its node's backward function and freed
// when that has run; an elementwise backward writes its input's gradient over
// it when nothing else sees it (sole_owner, reuse_or_empty below). So
// attention's backward holds three (B, H, T, T) buffers at its peak (the
// scores, the softmax saved for the backward, and dP), PyTorch's four.
//
// NOTE (ownership): an output owns its Node, a Node owns its inputs' Nodes
// and what its backward function captured. A backward function must never
// capture its own output (that is a cycle, and the whole graph would leak):
// if it needs the output's values, it captures out.detach(), which shares
// the numbers but not the graph.
//
// Writes in place: a backward function reads the numbers it saved (mul's
// operands, exp's output) when backward() runs, so a write into them after
// the forward (through data(), an optimizer step, an initialiser) would
// make its gradients silently wrong. As PyTorch does, an op lists the
// tensors its backward function reads (record's `saved`); record() notes
// each one's version (tensor.hpp's Version: a count of writes in place, in
// the storage, bumped by every non-const data()); and backward() refuses to
// run a node whose saved tensors' versions moved, naming the op, the tensor
// and both versions. The op's own writes into its fresh output come before
// record(), so they are part of the version it notes.
#pragma once
#include <qkv/core/tensor.hpp>

#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace qkv {

// Given d(loss)/d(output), return d(loss)/d(input) for each input, in the
// order the op gave them to record(), each with that input's shape. An
// undefined Tensor means "no gradient for this input" (an op may skip inputs
// that do not require grad).
//
// `dout` is handed over (moved in): backward() keeps no reference of its
// own, so when nothing else sees its numbers (sole_owner(dout): not the
// caller's seed, not shared with another input's gradient) the function may
// write dx over them, as reuse_or_empty() does; an op of one input and one
// shape then allocates nothing. A function that only reads dout may take it
// as `const Tensor&`.
using BackwardFn = std::function<std::vector<Tensor>(Tensor dout)>;

// The other kind of backward, for an op with one input: it ADDS the op's
// d(loss)/d(input) into `dx` in place. `dx` is that input's gradient summed
// so far, of the input's shape (zeros before the first contribution), and
// belongs to backward() alone. For ops that read a small part of a big input
// (narrow, slice, split, index_select, embedding): each costs the size of its
// part, where returning a gradient would cost a zero tensor of the whole
// input per op (S pieces of one tensor: S whole-size tensors).
using AccumulateFn = std::function<void(const Tensor& dout, Tensor& dx)>;

// One tensor an op's backward function reads, and the version its storage
// had when the op saved it. Made in place from a Tensor or an IntTensor (a
// mask, the targets) in record()'s list: record(out, "MulBackward", {a, b},
// /*saved=*/{a, b}, …). An undefined tensor (an absent bias) is skipped.
struct Saved {
  Saved(const Tensor& t);     // NOLINT(google-explicit-constructor): written as a plain list of tensors
  Saved(const IntTensor& t);  // NOLINT(google-explicit-constructor)

  std::shared_ptr<const Version> version;  // the storage's (null for an undefined tensor); keeps it alive
  uint64_t saved_at = 0;                   // version->get() when saved
  Shape shape;                             // for the error
  int64_t role = -2;                       // for the error, set by record(): input i, -1 the output, -2 neither
};

// One input of an op, as the graph keeps it: where its gradient goes.
struct Edge {
  std::shared_ptr<Node> node;        // an op made the input: the gradient flows on into that op's Node
  std::shared_ptr<TensorImpl> leaf;  // a leaf that requires grad (a parameter): the gradient lands in its .grad()
  // Neither: the input needs no gradient (data, a target, a mask) or was
  // undefined. Only a defined input's shape is kept, for graph_dot.
  std::optional<Shape> constant;

  bool requires_grad() const { return node != nullptr || leaf != nullptr; }
  const Shape& shape() const;  // the input's shape (an Error for an undefined input)
};

struct Node {
  std::string name;          // "MulBackward": shown as grad_fn=<MulBackward>
  Shape shape;               // the output's shape: d(loss)/d(output) has it
  std::vector<Edge> edges;   // one per input the op read, in order: the graph's edges
  BackwardFn backward;       // the op's backward function: one of these two is set,
  AccumulateFn accumulate;   // and both are null once backward() has run the node (unless retain_graph)
  std::vector<Saved> saved;  // what the backward function reads, checked before it runs (freed with it)
  ~Node();                   // frees long chains without recursing (see autograd.cpp)
};

// Attach `backward` to `out` if grad mode is on and any input requires grad;
// otherwise do nothing. Every op calls this once, right after its forward.
// The inputs only say where gradients go: record() keeps none of their
// numbers alive, so `backward` captures whatever values it will need, and
// `saved` lists the tensors among those whose numbers it reads (inputs, the
// output, an IntTensor mask), so that backward() can refuse to run it after
// a write into one of them (see "Writes in place" above). A tensor the op
// made for itself and nobody else can reach (a dropout mask) need not be
// listed. `out` must be a new tensor: one of the inputs (a cycle) or a leaf
// that requires grad is an Error, as are an undefined out, a null name and
// an empty `backward`.
void record(Tensor& out, const char* name, std::initializer_list<Tensor> inputs, std::initializer_list<Saved> saved,
            BackwardFn backward);
void record(Tensor& out, const char* name, const std::vector<Tensor>& inputs, std::initializer_list<Saved> saved,
            BackwardFn backward);
// An op whose backward function reads none of its tensors' numbers (add, sum, reshape).
void record(Tensor& out, const char* name, std::initializer_list<Tensor> inputs, BackwardFn backward);
void record(Tensor& out, const char* name, const std::vector<Tensor>& inputs, BackwardFn backward);

// record() for an op of one input whose backward adds into the input's gradient.
void record_accumulate(Tensor& out, const char* name, const Tensor& input, std::initializer_list<Saved> saved,
                       AccumulateFn backward);
void record_accumulate(Tensor& out, const char* name, const Tensor& input, AccumulateFn backward);

// True when `t` is the only handle to its TensorImpl and that impl the only
// one on its storage (no view, no detach(), no saved copy, no second
// gradient shares it): nothing else can see its numbers, so they may be
// overwritten. An undefined tensor is never a sole owner.
// NOTE: the use counts are read without a lock; backward() and the backward
// functions run on one thread, and no other thread holds a handle.
bool sole_owner(const Tensor& t);

// Where a backward function writes a gradient of dout's shape computed
// elementwise from dout (dx = dout·f'(x), dx = dout / s, …): dout itself
// (another handle on the same numbers) when sole_owner(dout), else a new
// empty tensor. Each element of dout must be read before the same element of
// the result is written, as the elementwise and softmax kernels do.
Tensor reuse_or_empty(const Tensor& dout);

// Backpropagate d(root)/d(leaf) into every leaf's .grad() (+=). `grad` is
// d(loss)/d(root); it may be omitted when root has one element. Each node's
// saved tensors, and its output's gradient, are freed once its backward
// function has run, unless retain_graph is true (then the graph can be
// backpropagated again). A node whose saved tensors were written in place
// since its op ran is an Error naming the op, the tensor and the versions
// ("one of the variables needed for gradient computation has been modified
// by an inplace operation", as PyTorch says), raised before any leaf's
// .grad() has changed.
// A leaf's first gradient becomes its .grad() without a copy when nothing
// else sees it (as PyTorch's AccumulateGrad steals it); one the caller can
// see (the `grad` given here, passed on unchanged by add or reshape) is
// copied, so writing to it afterwards never changes .grad().
void backward(const Tensor& root, const Tensor& grad = Tensor(), bool retain_graph = false);

// Recording on or off (on by default, per thread).
bool is_grad_enabled();

// Inside its scope no op records a graph: for evaluation, optimizer steps,
// and backward functions themselves.
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

}  // namespace qkv
