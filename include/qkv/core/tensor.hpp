// Tensor: a dense, row-major, float32 N-d array that can remember how it was
// made, so gradients can flow back through it (see autograd.hpp).
//
// A Tensor is a handle: copying one copies a shared_ptr, not the numbers.
// Its numbers live in a storage that reshape/view share with their source.
// qkv keeps every tensor contiguous (no strides): each kernel then walks plain
// arrays, and an op that rearranges elements (transpose, permute) copies.
//
// IntTensor holds integer data (token ids, class labels, valid lengths,
// masks): it has a shape but no gradient, and is never a float in disguise.
//
// What is left out on purpose: other dtypes, devices, strides, in-place ops
// on tensors that are part of a graph.
#pragma once
#include <qkv/core/shape.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace qkv {

struct Node;        // autograd.hpp: the record an op leaves on its output
struct TensorImpl;  // below

class Tensor {
 public:
  Tensor() = default;  // an undefined tensor (no storage); defined() is false
  // A tensor of `shape` holding `values` (row-major); sizes must agree.
  Tensor(std::vector<float> values, Shape shape);
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // A tensor of `shape` with every element 0: what each op allocates for its output.
  static Tensor empty(Shape shape);

  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const;
  int64_t dim() const { return shape().ndim(); }
  int64_t size(int64_t dim) const;  // size of one dim; negative dims count from the end
  int64_t numel() const { return shape().numel(); }

  // The numbers, row-major. NOTE: views share storage, so writing through
  // data() of a reshape writes the source too.
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
  // for a one-element tensor.
  void backward(const Tensor& grad = Tensor()) const;

  Tensor detach() const;  // same storage, no history, requires_grad false
  Tensor clone() const;   // a copy of the numbers (with history: gradients flow back)

  const std::shared_ptr<TensorImpl>& impl() const { return impl_; }
  bool same(const Tensor& other) const { return impl_ == other.impl_; }  // the same tensor object

 private:
  friend struct Node;
  std::shared_ptr<TensorImpl> impl_;
};

// What a Tensor handle points at.
struct TensorImpl {
  std::shared_ptr<std::vector<float>> storage;  // shared by views
  Shape shape;
  bool requires_grad = false;
  Tensor grad;                    // accumulated by backward() on leaves
  std::shared_ptr<Node> grad_fn;  // the op that made this tensor; null on leaves
};

class IntTensor {
 public:
  IntTensor() = default;
  IntTensor(std::vector<int64_t> values, Shape shape);
  static IntTensor empty(Shape shape);  // all zeros

  bool defined() const { return data_ != nullptr; }
  const Shape& shape() const { return shape_; }
  int64_t dim() const { return shape_.ndim(); }
  int64_t size(int64_t dim) const;
  int64_t numel() const { return shape_.numel(); }
  int64_t* data() { return data_->data(); }
  const int64_t* data() const { return data_->data(); }
  std::vector<int64_t> to_vector() const { return *data_; }
  int64_t item() const;
  int64_t at(std::initializer_list<int64_t> index) const;
  IntTensor reshape(Shape shape) const;  // same storage, new shape

 private:
  Shape shape_;
  std::shared_ptr<std::vector<int64_t>> data_;
};

// Row-major offset of `index` in `shape`, checking each index (negative ones
// count from the end); `op` names the caller in the error.
int64_t flat_index(const Shape& shape, std::initializer_list<int64_t> index, const char* op);

}  // namespace qkv
