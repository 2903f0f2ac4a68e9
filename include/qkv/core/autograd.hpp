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
// Saving: an op names, in record()'s `saved` list, each tensor whose
// numbers its backward function reads (an input, its output, an IntTensor
// mask, a buffer it made), as PyTorch's ctx.save_for_backward(...) does. The
// node keeps those tensors, and only those: an edge points at the input's
// Node (or, for a leaf, at the leaf), never at an input's numbers, so mul,
// which saves both operands, keeps them alive, and add, which saves nothing,
// keeps neither. The backward function receives them back as saved[0],
// saved[1], … (PyTorch's ctx.saved_tensors) and captures no tensor itself.
// A backward function runs at most once: backward() frees what each node
// saved as soon as it has run, as PyTorch does by default. A second
// backward() through the same graph is then an Error, unless the first was
// given retain_graph = true.
// An output's gradient is handed to its node's backward function (read-only:
// `const Tensor& dout`) and freed when that has run; an elementwise backward
// writes its input's gradient over it when nothing else sees it (sole_owner,
// reuse_or_empty below). So attention's backward holds three (B, H, T, T)
// buffers at its peak (the scores, the softmax saved for the backward, and
// dP), PyTorch's four.
//
// NOTE (ownership): an output owns its Node, a Node owns its inputs' Nodes
// and what its op saved. A Node must never own its own output (that is a
// cycle, and the whole graph would leak): when an op saves its output,
// record() keeps out.detach(), which shares the numbers but not the graph,
// as PyTorch keeps a saved output. So a backward function must never
// capture `out` either; it names it in `saved` instead.
//
// Writes in place: a backward function reads the numbers it saved (mul's
// operands, exp's output) when backward() runs, so a write into them after
// the forward (through data(), an optimizer step, an initialiser) would
// make its gradients silently wrong. As PyTorch does, record() notes each
// saved tensor's version (tensor.hpp's Version: a count of writes in place,
// in the storage, bumped by every non-const data()); and backward() refuses
// to run a node whose saved tensors' versions moved, naming the op, the
// tensor and both versions. Saving a tensor is what both keeps it and
// checks it: one list, so no tensor the backward reads escapes the check.
// The op's own writes into its fresh output come before record(), so they
// are part of the version it notes.
#pragma once
#include <qkv/core/tensor.hpp>

#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace qkv {

// One tensor an op saves for its backward: a Tensor, or an IntTensor (a
// mask, the targets), written in place in record()'s list: {a, b}, {out},
// {x, mask}. An undefined one (an absent bias) keeps its place in the list,
// and there is nothing of it to check.
struct SavedTensor {
  SavedTensor(const Tensor& t);     // NOLINT(google-explicit-constructor): written as a plain list of tensors
  SavedTensor(const IntTensor& t);  // NOLINT(google-explicit-constructor)

  Tensor tensor;                   // the Tensor saved (for the op's output: out.detach()), or
  IntTensor int_tensor;            // the IntTensor saved
  bool is_int = false;             // which of the two it is
  uint64_t saved_at = 0;           // its storage's version when it was saved
  int64_t role = -2;               // for the error, set by record(): input i, -1 the output, -2 neither
  const Version* version() const;  // its storage's version (null when undefined)
};

// What a backward function receives: the tensors its op saved, in the order
// the op listed them (PyTorch's ctx.saved_tensors).
//   saved[i]              the i-th, a Tensor
//   saved.int_tensor(i)   the i-th, an IntTensor
// Reading one of the other kind, or past the end, is an Error.
struct SavedTensors {
  std::vector<SavedTensor> entries;

  const Tensor& operator[](size_t i) const;
  const IntTensor& int_tensor(size_t i) const;
  size_t size() const { return entries.size(); }
};

// An op's backward: given the tensors its op saved and dout = d(loss)/d(output),
// return d(loss)/d(input) for each input, in the order the op gave them to
// record(), each with that input's shape. An undefined Tensor means "no
// gradient for this input" (an op may skip inputs that do not require grad).
//
// `dout` is only read. When nothing else sees its numbers (sole_owner(dout):
// not the caller's seed, not shared with another input's gradient), the
// function may write dx over them, as reuse_or_empty() does; an op of one
// input and one shape then allocates nothing.
using BackwardFn = std::function<std::vector<Tensor>(const SavedTensors& saved, const Tensor& dout)>;

// The same backward in the other form, for an op of one input that reads a
// small part of a big one (narrow, slice, split, index_select, embedding):
// it ADDS the op's d(loss)/d(input) into `dx` in place. `dx` is that input's
// gradient summed so far, of the input's shape (zeros before the first
// contribution), and belongs to backward() alone. Each such op then costs the
// size of its part, where returning a gradient would cost a zero tensor of
// the whole input per op (S pieces of one tensor: S whole-size tensors).
using AccumulateFn = std::function<void(const SavedTensors& saved, const Tensor& dout, Tensor& dx)>;

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
  std::string name;         // "MulBackward": shown as grad_fn=<MulBackward>
  Shape shape;              // the output's shape: d(loss)/d(output) has it
  std::vector<Edge> edges;  // one per input the op read, in order: the graph's edges
  SavedTensors saved;       // what the backward function reads: checked before it runs, freed after
  BackwardFn backward;      // the op's backward function: one of these two is set,
  AccumulateFn accumulate;  // and both are null once backward() has run the node (unless retain_graph)
  ~Node();                  // frees long chains without recursing (see autograd.cpp)
};

// Attach `backward` to `out` if grad mode is on and any input requires grad;
// otherwise do nothing. Every op calls this once, right after its forward:
//
//   // y = a·b (a and b of one shape)      da = dout·b    db = dout·a
//   Tensor out = mul(a.detach(), b.detach());  // forward, without recording
//   record(out, "MyMulBackward", /*inputs=*/{a, b}, /*saved=*/{a, b},
//          [](const SavedTensors& saved, const Tensor& dout) -> std::vector<Tensor> {
//            return {dout * saved[1], dout * saved[0]};
//          });
//
// (A name the lambda gives a saved tensor must differ from the forward's:
// qkv builds with -Wshadow=local, for which `const Tensor& a = saved[0]`
// hides the parameter a. Read saved[i] in place, or call it what the
// backward's formula does: y for the output out.)
//
// `inputs` say where gradients go: record() keeps none of their numbers.
// `saved` lists every tensor whose numbers the backward reads (inputs, the
// output, an IntTensor mask, a buffer the forward made for it), `{}` for
// none: the node keeps them, checks their versions before the backward runs
// (see "Writes in place" above), hands them to it, and frees them after.
// The lambda captures plain values only (shapes, flags, a scalar). `out`
// must be a new tensor: one of the inputs (a cycle) or a leaf that requires
// grad is an Error, as are an undefined out, a null name and an empty
// `backward`.
void record(Tensor& out, const char* name, std::initializer_list<Tensor> inputs,
            std::initializer_list<SavedTensor> saved, BackwardFn backward);
void record(Tensor& out, const char* name, const std::vector<Tensor>& inputs, std::initializer_list<SavedTensor> saved,
            BackwardFn backward);

// record() for an op of one input whose backward adds into the input's
// gradient (AccumulateFn): the same list of saved tensors, the same checks.
void record_accumulate(Tensor& out, const char* name, const Tensor& input, std::initializer_list<SavedTensor> saved,
                       AccumulateFn backward);

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

// The opposite, PyTorch's torch.enable_grad(): inside its scope ops record a
// graph even under a NoGradGuard. nn::trace uses it, since the graph is how
// it sees which module's output another module read through a reshape.
class EnableGradGuard {
 public:
  EnableGradGuard();
  ~EnableGradGuard();
  EnableGradGuard(const EnableGradGuard&) = delete;
  EnableGradGuard& operator=(const EnableGradGuard&) = delete;

 private:
  bool previous_;
};

}  // namespace qkv
