// Shape: sizes, element counts, printing, and negative dims.
#include <qkv/core/error.hpp>
#include <qkv/core/shape.hpp>

namespace qkv {

int64_t Shape::numel() const {
  int64_t n = 1;
  for (int64_t d : dims_) n *= d;
  return n;
}

std::string Shape::str() const {
  std::string s = "(";
  for (size_t i = 0; i < dims_.size(); ++i) s += (i ? ", " : "") + std::to_string(dims_[i]);
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
