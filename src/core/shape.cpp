// Shape: sizes, element counts, printing, and negative dims.
#include <qkv/core/error.hpp>
#include <qkv/core/shape.hpp>

#include <algorithm>
#include <optional>

namespace qkv {

Shape::Shape(const int64_t* first, const int64_t* last) : ndim_(last - first) {
  if (ndim_ <= kInlineDims)
    std::copy(first, last, inline_.begin());
  else
    heap_.assign(first, last);
}

bool Shape::operator==(const Shape& other) const { return std::equal(begin(), end(), other.begin(), other.end()); }

namespace {
// The product of the sizes, or nothing when it overflows int64. Zeros are
// skipped while multiplying, so (0, 2⁶², 4) overflows too: its strides
// (2⁶²·4 for dim 0) would, even though it has no elements.
std::optional<int64_t> product(const Shape& shape) {
  int64_t n = 1;
  bool empty = false;
  for (int64_t d : shape) {
    if (d == 0)
      empty = true;
    else if (__builtin_mul_overflow(n, d, &n))
      return std::nullopt;
  }
  return empty ? 0 : n;
}
}  // namespace

int64_t Shape::numel() const {
  const std::optional<int64_t> n = product(*this);
  if (!n) fail("shape {}: the number of elements overflows int64", *this);
  return *n;
}

int64_t checked_numel(const Shape& shape, const char* op) {
  const std::optional<int64_t> n = product(shape);
  if (!n) fail("{}: shape {}: the number of elements overflows int64", op, shape);
  return *n;
}

void Shape::out_of_range(int64_t i) const { fail("shape {}: no dim {} in a {}-d shape", *this, i, ndim()); }

int64_t checked_mul(int64_t a, int64_t b, const char* op) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) fail("{}: {} * {} overflows int64", op, a, b);
  return r;
}

int64_t checked_add(int64_t a, int64_t b, const char* op) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) fail("{}: {} + {} overflows int64", op, a, b);
  return r;
}

std::string Shape::str() const {
  std::string s = "(";
  for (int64_t i = 0; i < ndim_; ++i) s += (i ? ", " : "") + std::to_string((*this)[i]);
  return s + ")";
}

int64_t normalize_dim(int64_t dim, int64_t ndim, const char* op) {
  // A 0-d tensor still accepts dim 0 and -1, as PyTorch's reductions do.
  int64_t n = ndim == 0 ? 1 : ndim;
  if (dim < -n || dim >= n)
    fail("{}: dim {} out of range for a {}-d tensor (expected {} … {})", op, dim, ndim, -n, n - 1);
  return dim < 0 ? dim + n : dim;
}

}  // namespace qkv
