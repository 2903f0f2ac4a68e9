// Tensor and IntTensor: storage, shape, element access and the autograd
// fields. The graph itself is built and walked in autograd.cpp.
#include <qkv/core/allocator.hpp>
#include <qkv/core/autograd.hpp>
#include <qkv/core/error.hpp>
#include <qkv/core/tensor.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <new>
#include <type_traits>

namespace qkv {

namespace {
void check_size(size_t values, const Shape& shape, const char* what) {
  for (int64_t d : shape)
    if (d < 0) fail("{}: negative size in shape {}", what, shape);
  const int64_t n = checked_numel(shape, what);
  if (static_cast<int64_t>(values) != n)
    fail("{}: {} values do not fill shape {} ({} elements)", what, values, shape, n);
}

// The most bytes one tensor may ask for: 2⁴⁸ (256 TiB), the virtual address
// space of a process on x86-64 and AArch64 (48-bit addresses). Nothing
// larger can ever be allocated there, so it is refused before asking.
constexpr uint64_t kMaxBytes = uint64_t{1} << 48;

// In Debug and sanitizer builds new storage is filled with NaN (floats) or
// kEmptyPoison (int64), so that an element an op forgot to write shows up
// in its result (allocator.hpp). Release builds leave it uninitialised.
#if !defined(NDEBUG) || defined(QKV_SANITIZE)
constexpr bool kFillEmpty = true;
#else
constexpr bool kFillEmpty = false;
#endif

template <class T>
constexpr T poison() {
  if constexpr (std::is_same_v<T, float>)
    return std::numeric_limits<float>::quiet_NaN();
  else
    return kEmptyPoison;
}

// Uninitialised storage for `shape` from the caching allocator, checked
// before anything is allocated: no negative size, an element count that
// fits in int64 (checked_numel), and at most kMaxBytes. A size within that
// which the machine still cannot provide is an Error naming the shape and
// the bytes, not a std::bad_alloc from deep inside the allocator. Every
// message begins with `op`, the op or layer the tensor is for.
template <class T>
std::shared_ptr<Storage<T>> allocate(const Shape& shape, const char* op) {
  for (int64_t d : shape)
    if (d < 0) fail("{}: negative size in shape {}", op, shape);
  const auto n = static_cast<uint64_t>(checked_numel(shape, op));
  if (n > kMaxBytes / sizeof(T))
    fail("{}: shape {} has {} elements of {} bytes, more than the {} bytes that can be addressed", op, shape, n,
         sizeof(T), kMaxBytes);
  auto storage = std::make_shared<Storage<T>>();
  try {
    storage->block = MemoryBlock(static_cast<size_t>(n * sizeof(T)));
  } catch (const Error&) {  // the allocator's out of memory, said again with the shape
    fail("{}: out of memory allocating shape {} ({} bytes)", op, shape, n * sizeof(T));
  }
  storage->data = static_cast<T*>(storage->block.data());
  if (kFillEmpty) std::fill_n(storage->data, n, poison<T>());
  return storage;
}

// Storage that keeps `values` itself (no copy). No values still get a block
// of their own, so data() is never null (memcpy and friends may not be given
// null, even for 0 bytes).
template <class T>
std::shared_ptr<Storage<T>> adopt(std::vector<T> values) {
  auto storage = std::make_shared<Storage<T>>();
  if (values.empty()) {
    storage->block = MemoryBlock(0);
    storage->data = static_cast<T*>(storage->block.data());
  } else {
    storage->values = std::move(values);
    storage->data = storage->values.data();
  }
  return storage;
}
}  // namespace

// --- Tensor -----------------------------------------------------------------

Tensor::Tensor(std::vector<float> values, Shape shape) {
  check_size(values.size(), shape, "tensor");
  impl_ = std::make_shared<TensorImpl>();
  impl_->storage = adopt(std::move(values));
  impl_->shape = std::move(shape);
}

Tensor Tensor::empty(Shape shape, const char* op) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = allocate<float>(shape, op);
  impl->shape = std::move(shape);
  return Tensor(std::move(impl));
}

namespace {
const TensorImpl& checked(const std::shared_ptr<TensorImpl>& impl) {
  if (!impl) fail("Tensor: use of an undefined tensor");
  return *impl;
}
}  // namespace

const Shape& Tensor::shape() const { return checked(impl_).shape; }

namespace {
// One dim's size; a 0-d tensor has no dims to ask about (PyTorch: "dimension
// specified as 0 but tensor has no dimensions"), so normalize_dim's
// allowance of dim 0 / -1 for reductions does not apply here.
int64_t size_of(const Shape& shape, int64_t dim) {
  if (shape.ndim() == 0) fail("size: dim {} out of range for a 0-d tensor (it has no dims)", dim);
  return shape[normalize_dim(dim, shape.ndim(), "size")];
}
}  // namespace

int64_t Tensor::size(int64_t dim) const { return size_of(shape(), dim); }
float* Tensor::data() {
  Storage<float>& storage = *checked(impl_).storage;
  storage.version.bump();  // the caller may write: see Version (tensor.hpp)
  return storage.data;
}
const float* Tensor::data() const { return checked(impl_).storage->data; }
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

void Tensor::backward(const Tensor& grad, bool retain_graph) const { qkv::backward(*this, grad, retain_graph); }

Tensor Tensor::detach() const {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = checked(impl_).storage;
  impl->shape = impl_->shape;
  return Tensor(impl);
}

// clone = identity with a fresh copy of the numbers; dx = dout.
Tensor Tensor::clone() const {
  Tensor out = empty(shape());
  std::copy_n(data(), numel(), out.data());
  record(out, "CloneBackward", {*this}, /*saved=*/{},
         [](const SavedTensors&, const Tensor& dout) -> std::vector<Tensor> { return {dout}; });
  return out;
}

// --- IntTensor --------------------------------------------------------------

IntTensor::IntTensor(std::vector<int64_t> values, Shape shape) : shape_(std::move(shape)) {
  check_size(values.size(), shape_, "int_tensor");
  data_ = adopt(std::move(values));
}

IntTensor IntTensor::empty(Shape shape, const char* op) {
  IntTensor out;
  out.data_ = allocate<int64_t>(shape, op);
  out.shape_ = std::move(shape);
  return out;
}

// A default-constructed IntTensor has no storage: every accessor says so
// rather than reading through a null pointer.
const Shape& IntTensor::shape() const {
  if (!data_) fail("IntTensor: use of an undefined tensor");
  return shape_;
}
int64_t IntTensor::size(int64_t dim) const { return size_of(shape(), dim); }
int64_t* IntTensor::data() {
  if (!data_) fail("IntTensor: use of an undefined tensor");
  data_->version.bump();  // as Tensor::data()
  return data_->data;
}
const int64_t* IntTensor::data() const {
  if (!data_) fail("IntTensor: use of an undefined tensor");
  return data_->data;
}
std::vector<int64_t> IntTensor::to_vector() const { return std::vector<int64_t>(data(), data() + numel()); }

int64_t IntTensor::item() const {
  if (numel() != 1) fail("item: tensor of shape {} has {} elements, not 1", shape(), numel());
  return data()[0];
}

int64_t IntTensor::at(std::initializer_list<int64_t> index) const { return data()[flat_index(shape(), index, "at")]; }

IntTensor IntTensor::reshape(Shape shape) const {
  for (int64_t d : shape)
    if (d < 0) fail("reshape: invalid size {} in {}", d, shape);
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
