// The tensor factories of factory.hpp.
#include <qkv/core/error.hpp>
#include <qkv/core/factory.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace qkv {

Tensor tensor(std::vector<float> values, Shape shape) { return Tensor(std::move(values), std::move(shape)); }
Tensor tensor(std::vector<float> values) {
  Shape shape{static_cast<int64_t>(values.size())};
  return Tensor(std::move(values), shape);
}
Tensor scalar_tensor(float value) { return Tensor({value}, Shape{}); }
IntTensor int_tensor(std::vector<int64_t> values, Shape shape) {
  return IntTensor(std::move(values), std::move(shape));
}
IntTensor int_tensor(std::vector<int64_t> values) {
  Shape shape{static_cast<int64_t>(values.size())};
  return IntTensor(std::move(values), shape);
}

namespace {
// empty, then written: a block from the cache holds the numbers of the tensor
// that had it before. `op` names the factory in the errors.
Tensor filled(Shape shape, float value, const char* op) {
  Tensor out = Tensor::empty(std::move(shape), op);
  std::fill_n(out.data(), out.numel(), value);
  return out;
}

const Shape& shape_of(const Tensor& x, const char* op) {
  if (!x.defined()) fail("{}: x is an undefined tensor", op);
  return x.shape();
}
}  // namespace

Tensor zeros(Shape shape) { return filled(std::move(shape), 0.0f, "zeros"); }
IntTensor zeros_int(Shape shape) {
  IntTensor out = IntTensor::empty(std::move(shape), "zeros_int");
  std::fill_n(out.data(), out.numel(), int64_t{0});
  return out;
}
Tensor ones(Shape shape) { return filled(std::move(shape), 1.0f, "ones"); }
Tensor full(Shape shape, float value) { return filled(std::move(shape), value, "full"); }

Tensor zeros_like(const Tensor& x) { return filled(shape_of(x, "zeros_like"), 0.0f, "zeros_like"); }
Tensor ones_like(const Tensor& x) { return filled(shape_of(x, "ones_like"), 1.0f, "ones_like"); }

Tensor arange(float end) { return arange(0, end, 1); }

Tensor arange(float start, float end, float step) {
  if (step == 0) fail("arange: step must be non-zero");
  if (!std::isfinite(start) || !std::isfinite(end) || !std::isfinite(step))
    fail("arange: start {}, end {} and step {} must be finite", start, end, step);
  // Like PyTorch: ceil((end - start) / step) elements, none if the range is empty.
  double count = std::ceil((static_cast<double>(end) - start) / step);
  // 2⁶² is far past what can be allocated, and converting a larger double to
  // int64 would be undefined: say so here instead.
  if (count > 0x1.0p62)
    fail("arange: start {}, end {} and step {} give {} elements, too many", start, end, step, count);
  int64_t n = count > 0 ? static_cast<int64_t>(count) : 0;
  Tensor out = Tensor::empty(Shape{n}, "arange");
  float* values = out.data();
  for (int64_t i = 0; i < n; ++i) values[i] = static_cast<float>(start + static_cast<double>(i) * step);
  return out;
}

IntTensor arange_int(int64_t start, int64_t end) {
  // end - start in unsigned arithmetic: exact for any end >= start, where the
  // signed difference could overflow.
  const uint64_t span = end > start ? static_cast<uint64_t>(end) - static_cast<uint64_t>(start) : 0;
  if (span > static_cast<uint64_t>(INT64_MAX)) fail("arange_int: [{}, {}) has too many elements", start, end);
  IntTensor out = IntTensor::empty(Shape{static_cast<int64_t>(span)}, "arange_int");
  int64_t* values = out.data();
  for (int64_t i = 0; i < static_cast<int64_t>(span); ++i) values[i] = start + i;
  return out;
}

Tensor eye(int64_t n) { return eye(n, n); }

Tensor eye(int64_t n, int64_t m) {
  if (n < 0 || m < 0) fail("eye: sizes {} and {} must not be negative", n, m);
  Tensor out = filled({n, m}, 0.0f, "eye");
  float* values = out.data();
  for (int64_t i = 0; i < std::min(n, m); ++i) values[i * m + i] = 1;
  return out;
}

Tensor rand(Shape shape, Generator& gen) {
  Tensor out = Tensor::empty(std::move(shape), "rand");
  float* values = out.data();
  for (int64_t i = 0; i < out.numel(); ++i) values[i] = gen.uniform();
  return out;
}

Tensor randn(Shape shape, Generator& gen) {
  Tensor out = Tensor::empty(std::move(shape), "randn");
  float* values = out.data();
  for (int64_t i = 0; i < out.numel(); ++i) values[i] = gen.normal();
  return out;
}

IntTensor randint(int64_t low, int64_t high, Shape shape, Generator& gen) {
  if (high <= low) fail("randint: empty range [{}, {})", low, high);
  IntTensor out = IntTensor::empty(std::move(shape), "randint");
  int64_t* values = out.data();
  for (int64_t i = 0; i < out.numel(); ++i) values[i] = gen.randint(low, high);
  return out;
}

}  // namespace qkv
