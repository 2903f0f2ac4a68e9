// Tensor: a dense, row-major, float32 N-d array that can remember how it was
// made, so gradients can flow back through it (see autograd.hpp).
//
// A Tensor is a handle: copying one copies a shared_ptr, not the numbers.
// Its numbers live in a storage that reshape/view share with their source: a
// block from the caching allocator (allocator.hpp), which goes back to the
// cache for the next tensor of its size when the last tensor using it dies.
// The storage also counts the writes made into it in place (its version),
// so that backward() can refuse a graph whose saved numbers were changed
// (autograd.hpp).
// qkv keeps every tensor contiguous (no strides): each kernel then walks plain
// arrays, and an op that rearranges elements (transpose, permute) copies.
//
// IntTensor holds integer data (token ids, class labels, valid lengths,
// masks): it has a shape but no gradient, and is never a float in disguise.
//
// What is left out on purpose: other dtypes, devices, strides, in-place ops
// on tensors that are part of a graph.
#pragma once
#include <qkv/core/allocator.hpp>  // the storage's blocks; empty_cache
#include <qkv/core/shape.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace qkv {

// How many times a storage's numbers have been written in place, as
// PyTorch's version counter: every non-const data() (the way to write into a
// tensor) bumps it, so do an optimizer's step and the initialisers, which
// write through data(). An op that saves a tensor for its backward notes
// the version then; backward() compares (autograd.hpp).
class Version {
 public:
  uint64_t get() const { return count_.load(std::memory_order_relaxed); }
  // NOTE: a load and a store, not an atomic add: no locked instruction on
  // the path of every write. Two threads writing into one storage at once
  // may lose an increment, but the count still moves away from what any
  // op saved, and that change is all a check looks for.
  void bump() { count_.store(count_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> count_{0};
};

// The numbers of a tensor and of its views (reshape, view, detach share
// them), in one allocation with their version.
template <class T>
struct Storage {
  T* data = nullptr;      // into block or values
  Version version;        //
  MemoryBlock block;      // the numbers, from the caching allocator,
  std::vector<T> values;  // or the vector a tensor was made from, kept as it was (no copy)
};

struct Node;        // autograd.hpp: the record an op leaves on its output
struct TensorImpl;  // below
class IntTensor;    // below

class Tensor {
 public:
  Tensor() = default;  // an undefined tensor (no storage); defined() is false
  // A tensor of `shape` holding `values` (row-major); sizes must agree.
  Tensor(std::vector<float> values, Shape shape);
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // A tensor of `shape` whose elements are not set (torch.empty): what an op
  // allocates for an output it then writes in full. Use zeros(shape)
  // (factory.hpp) when the code needs zeros: a block reused from the cache
  // holds whatever the tensor before it left there. In Debug and sanitizer
  // builds every element is NaN, so a read of one never written shows.
  // A shape that cannot be allocated (a negative size, more elements than
  // int64 counts or bytes than can be addressed, no memory left) is an
  // Error that begins with `op`: an op or layer gives its own name.
  static Tensor empty(Shape shape, const char* op = "empty");

  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const;
  int64_t dim() const { return shape().ndim(); }
  int64_t size(int64_t dim) const;  // size of one dim; negative dims count from the end
  int64_t numel() const { return shape().numel(); }

  // The numbers, row-major. NOTE: views share storage, so writing through
  // data() of a reshape writes the source too. The non-const data() counts
  // as a write (it bumps the storage's version, see Version above): to only
  // read, call it through a const Tensor& or on a const Tensor, or use
  // at(), item() or to_vector().
  float* data();
  const float* data() const;
  std::vector<float> to_vector() const;
  float item() const;                                    // the one value of a 1-element tensor
  float at(std::initializer_list<int64_t> index) const;  // x.at({i, j}); negative indices count from the end

  // --- autograd ---------------------------------------------------------------
  bool requires_grad() const;
  Tensor& requires_grad_(bool on = true);  // only on leaves (tensors no op made)
  bool is_leaf() const;                    // made by a factory, not by an op
  const std::shared_ptr<Node>& grad_fn() const;
  // d(loss)/d(this) after backward(); undefined until a backward reaches it.
  // Only leaves keep a grad, as in PyTorch.
  Tensor grad() const;
  void set_grad(Tensor grad);
  void zero_grad();  // forget the accumulated gradient
  // Backpropagate from this tensor; see autograd.hpp. `grad` defaults to 1
  // for a one-element tensor; the graph is freed as it is used unless
  // retain_graph is true.
  void backward(const Tensor& grad = Tensor(), bool retain_graph = false) const;

  Tensor detach() const;  // same storage, no history, requires_grad false
  Tensor clone() const;   // a copy of the numbers (with history: gradients flow back)

  const std::shared_ptr<TensorImpl>& impl() const { return impl_; }
  bool same(const Tensor& other) const { return impl_ == other.impl_; }  // the same tensor object

  // --- the ops as methods, PyTorch's way: q.matmul(k.transpose(1, 2)).softmax(-1)
  // Each is a one-line call of the free function of the same name (x.sum(d) is
  // sum(x, d)); see that function for the meaning, shapes and gradient.
  // NOTE: the one place where arrows point up: core declares these methods and
  // src/ops/ defines each one beside its free function, so an op has a single
  // implementation and core still knows nothing about how ops compute.
  // elementwise.hpp
  Tensor add(const Tensor& other) const;
  Tensor add(float other) const;
  Tensor sub(const Tensor& other) const;
  Tensor sub(float other) const;
  Tensor mul(const Tensor& other) const;
  Tensor mul(float other) const;
  Tensor div(const Tensor& other) const;
  Tensor div(float other) const;
  Tensor pow(float exponent) const;
  Tensor pow(const Tensor& exponent) const;
  Tensor neg() const;
  Tensor exp() const;
  Tensor log() const;
  Tensor sqrt() const;
  Tensor abs() const;
  Tensor tanh() const;
  Tensor sigmoid() const;
  Tensor relu() const;
  Tensor masked_fill(const IntTensor& mask, float value) const;
  // reduction.hpp
  Tensor sum() const;
  Tensor sum(int64_t dim, bool keepdim = false) const;
  Tensor mean() const;
  Tensor mean(int64_t dim, bool keepdim = false) const;
  Tensor max() const;
  Tensor max(int64_t dim, bool keepdim = false) const;
  Tensor min() const;
  Tensor min(int64_t dim, bool keepdim = false) const;
  IntTensor argmax() const;
  IntTensor argmax(int64_t dim, bool keepdim = false) const;
  IntTensor argmin() const;
  IntTensor argmin(int64_t dim, bool keepdim = false) const;
  // softmax.hpp
  Tensor softmax(int64_t dim) const;
  Tensor log_softmax(int64_t dim) const;
  // linalg.hpp
  Tensor matmul(const Tensor& other) const;
  Tensor bmm(const Tensor& other) const;
  // shape_ops.hpp
  Tensor reshape(Shape shape) const;
  Tensor view(Shape shape) const;
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  Tensor transpose(int64_t dim0, int64_t dim1) const;
  Tensor permute(const std::vector<int64_t>& dims) const;
  Tensor squeeze() const;
  Tensor squeeze(int64_t dim) const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor expand(Shape shape) const;
  Tensor repeat(const std::vector<int64_t>& repeats) const;
  Tensor repeat_interleave(int64_t repeats) const;
  Tensor repeat_interleave(int64_t repeats, int64_t dim) const;
  std::vector<Tensor> split(int64_t split_size, int64_t dim = 0) const;
  std::vector<Tensor> split(const std::vector<int64_t>& sizes, int64_t dim = 0) const;
  std::vector<Tensor> chunk(int64_t chunks, int64_t dim = 0) const;
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  Tensor slice(int64_t dim, int64_t start, int64_t end, int64_t step = 1) const;
  Tensor index_select(int64_t dim, const IntTensor& index) const;
  // compare.hpp: 0/1 masks, no gradient
  IntTensor lt(const Tensor& other) const;
  IntTensor lt(float other) const;
  IntTensor le(const Tensor& other) const;
  IntTensor le(float other) const;
  IntTensor gt(const Tensor& other) const;
  IntTensor gt(float other) const;
  IntTensor ge(const Tensor& other) const;
  IntTensor ge(float other) const;
  IntTensor eq(const Tensor& other) const;
  IntTensor eq(float other) const;
  IntTensor ne(const Tensor& other) const;
  IntTensor ne(float other) const;

 private:
  friend struct Node;
  std::shared_ptr<TensorImpl> impl_;
};

// What a Tensor handle points at.
struct TensorImpl {
  // The numbers: a block from the allocator (or the vector a tensor was made
  // from), shared by views; the shared_ptr gives it back when the last goes.
  std::shared_ptr<Storage<float>> storage;
  Shape shape;
  bool requires_grad = false;
  Tensor grad;                    // accumulated by backward() on leaves
  std::shared_ptr<Node> grad_fn;  // the op that made this tensor; null on leaves
};

class IntTensor {
 public:
  IntTensor() = default;
  IntTensor(std::vector<int64_t> values, Shape shape);
  // Elements not set, as Tensor::empty (kEmptyPoison in Debug and sanitizer
  // builds, and `op` in the errors); zeros_int(shape) (factory.hpp) for zeros.
  static IntTensor empty(Shape shape, const char* op = "empty");

  bool defined() const { return data_ != nullptr; }
  const Shape& shape() const;  // an Error on an undefined IntTensor, as every accessor below
  int64_t dim() const { return shape().ndim(); }
  int64_t size(int64_t dim) const;
  int64_t numel() const { return shape().numel(); }
  int64_t* data();  // bumps the version, as Tensor::data()
  const int64_t* data() const;
  std::vector<int64_t> to_vector() const;
  int64_t item() const;
  int64_t at(std::initializer_list<int64_t> index) const;
  IntTensor reshape(Shape shape) const;  // same storage, new shape
  // shape_ops.hpp's repeat_interleave as methods (defined in src/ops/shape_ops.cpp).
  IntTensor repeat_interleave(int64_t repeats) const;
  IntTensor repeat_interleave(int64_t repeats, int64_t dim) const;

  // The storage, shared with reshapes, and its version (see Tensor).
  const std::shared_ptr<Storage<int64_t>>& storage() const { return data_; }

  // The comparisons of compare.hpp as methods (defined in src/ops/compare.cpp).
  IntTensor lt(const IntTensor& other) const;
  IntTensor lt(int64_t other) const;
  IntTensor le(const IntTensor& other) const;
  IntTensor le(int64_t other) const;
  IntTensor gt(const IntTensor& other) const;
  IntTensor gt(int64_t other) const;
  IntTensor ge(const IntTensor& other) const;
  IntTensor ge(int64_t other) const;
  IntTensor eq(const IntTensor& other) const;
  IntTensor eq(int64_t other) const;
  IntTensor ne(const IntTensor& other) const;
  IntTensor ne(int64_t other) const;

 private:
  Shape shape_;
  std::shared_ptr<Storage<int64_t>> data_;  // as TensorImpl::storage
};

// Row-major offset of `index` in `shape`, checking each index (negative ones
// count from the end); `op` names the caller in the error.
int64_t flat_index(const Shape& shape, std::initializer_list<int64_t> index, const char* op);

}  // namespace qkv
