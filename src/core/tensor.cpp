// Tensor and IntTensor: storage, shape, element access and the autograd
// fields. The graph itself is built and walked in autograd.cpp.
#include <qkv/core/autograd.hpp>
#include <qkv/core/error.hpp>
#include <qkv/core/tensor.hpp>

namespace qkv {

namespace {
void check_size(size_t values, const Shape& shape, const char* what) {
  for (int64_t d : shape)
    if (d < 0) fail("{}: negative size in shape {}", what, shape);
  if (static_cast<int64_t>(values) != shape.numel())
    fail("{}: {} values do not fill shape {} ({} elements)", what, values, shape, shape.numel());
}
}  // namespace

// --- Tensor -----------------------------------------------------------------

Tensor::Tensor(std::vector<float> values, Shape shape) {
  check_size(values.size(), shape, "tensor");
  impl_ = std::make_shared<TensorImpl>();
  impl_->storage = std::make_shared<std::vector<float>>(std::move(values));
  impl_->shape = std::move(shape);
}

Tensor Tensor::empty(Shape shape) {
  for (int64_t d : shape)
    if (d < 0) fail("empty: negative size in shape {}", shape);
  return Tensor(std::vector<float>(static_cast<size_t>(shape.numel())), shape);
}

namespace {
const TensorImpl& checked(const std::shared_ptr<TensorImpl>& impl) {
  if (!impl) fail("Tensor: use of an undefined tensor");
  return *impl;
}
}  // namespace

const Shape& Tensor::shape() const { return checked(impl_).shape; }
int64_t Tensor::size(int64_t dim) const { return shape()[normalize_dim(dim, this->dim(), "size")]; }
float* Tensor::data() { return const_cast<float*>(std::as_const(*this).data()); }
const float* Tensor::data() const { return checked(impl_).storage->data(); }
std::vector<float> Tensor::to_vector() const { return std::vector<float>(data(), data() + numel()); }

float Tensor::item() const {
  if (numel() != 1) fail("item: tensor of shape {} has {} elements, not 1", shape(), numel());
  return data()[0];
}

float Tensor::at(std::initializer_list<int64_t> index) const { return data()[flat_index(shape(), index, "at")]; }

bool Tensor::requires_grad() const { return checked(impl_).requires_grad; }
bool Tensor::is_leaf() const { return checked(impl_).grad_fn == nullptr; }
const std::shared_ptr<Node>& Tensor::grad_fn() const { return checked(impl_).grad_fn; }

Tensor& Tensor::requires_grad_(bool on) {
  if (!is_leaf())
    fail("requires_grad_: only leaf tensors can change requires_grad (this one came from {})", grad_fn()->name);
  impl_->requires_grad = on;
  return *this;
}

Tensor Tensor::grad() const { return checked(impl_).grad; }

void Tensor::set_grad(Tensor grad) {
  if (grad.defined() && grad.shape() != shape())
    fail("set_grad: gradient of shape {} for a tensor of shape {}", grad.shape(), shape());
  checked(impl_);
  impl_->grad = std::move(grad);
}

void Tensor::zero_grad() {
  checked(impl_);
  impl_->grad = Tensor();
}

void Tensor::backward(const Tensor& grad) const { qkv::backward(*this, grad); }

Tensor Tensor::detach() const {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = checked(impl_).storage;
  impl->shape = impl_->shape;
  return Tensor(impl);
}

// clone = identity with a fresh copy of the numbers; dx = dout.
Tensor Tensor::clone() const {
  Tensor out(to_vector(), shape());
  record(out, "CloneBackward", {*this}, [](const Tensor& dout) -> std::vector<Tensor> { return {dout}; });
  return out;
}

// --- IntTensor --------------------------------------------------------------

IntTensor::IntTensor(std::vector<int64_t> values, Shape shape) : shape_(std::move(shape)) {
  check_size(values.size(), shape_, "int_tensor");
  data_ = std::make_shared<std::vector<int64_t>>(std::move(values));
}

IntTensor IntTensor::empty(Shape shape) {
  for (int64_t d : shape)
    if (d < 0) fail("empty: negative size in shape {}", shape);
  return IntTensor(std::vector<int64_t>(static_cast<size_t>(shape.numel())), shape);
}

int64_t IntTensor::size(int64_t dim) const { return shape_[normalize_dim(dim, this->dim(), "size")]; }

int64_t IntTensor::item() const {
  if (numel() != 1) fail("item: tensor of shape {} has {} elements, not 1", shape_, numel());
  return data()[0];
}

int64_t IntTensor::at(std::initializer_list<int64_t> index) const { return data()[flat_index(shape_, index, "at")]; }

IntTensor IntTensor::reshape(Shape shape) const {
  if (shape.numel() != numel()) fail("reshape: cannot reshape {} ({} elements) to {}", shape_, numel(), shape);
  IntTensor out = *this;
  out.shape_ = std::move(shape);
  return out;
}

int64_t flat_index(const Shape& shape, std::initializer_list<int64_t> index, const char* op) {
  if (static_cast<int64_t>(index.size()) != shape.ndim())
    fail("{}: {} indices for a tensor of shape {}", op, index.size(), shape);
  int64_t offset = 0, d = 0;
  for (int64_t i : index) {
    int64_t size = shape[d];
    if (i < -size || i >= size) fail("{}: index {} out of range for dim {} of size {}", op, i, d, size);
    offset = offset * size + (i < 0 ? i + size : i);
    ++d;
  }
  return offset;
}

}  // namespace qkv
