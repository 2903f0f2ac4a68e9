// Shape: the sizes of a tensor's dims, printed as (2, 3).
//
// Dims may be given negative, counting from the end as PyTorch does
// (dim -1 is the last); normalize_dim turns them into 0 … ndim-1 and says
// which op got a dim out of range.
//
// Sizes are int64 and checked where they are combined: numel() is an Error,
// not a wrapped number, when the sizes multiply past int64, and indexing a
// dim the shape does not have is an Error, not a read past the end.
#pragma once
#include <fmt/format.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace qkv {

class Shape {
 public:
  Shape() = default;  // a scalar: no dims, one element
  Shape(std::initializer_list<int64_t> dims) : dims_(dims) {}
  explicit Shape(std::vector<int64_t> dims) : dims_(std::move(dims)) {}

  int64_t ndim() const { return static_cast<int64_t>(dims_.size()); }
  // Product of the sizes (1 for a scalar). An Error naming the shape if the
  // product of the non-zero sizes overflows int64: then every stride and
  // every offset below numel() fits too, even when a size-0 dim makes the
  // tensor empty.
  int64_t numel() const;
  int64_t operator[](int64_t i) const { return dims_[checked(i)]; }
  int64_t& operator[](int64_t i) { return dims_[checked(i)]; }
  const std::vector<int64_t>& dims() const { return dims_; }
  auto begin() const { return dims_.begin(); }
  auto end() const { return dims_.end(); }
  bool operator==(const Shape&) const = default;

  std::string str() const;  // "(2, 3)", "(5)", "()"

 private:
  size_t checked(int64_t i) const {
    if (i < 0 || i >= ndim()) out_of_range(i);
    return static_cast<size_t>(i);
  }
  [[noreturn]] void out_of_range(int64_t i) const;
  std::vector<int64_t> dims_;
};

// dim in [-ndim, ndim) -> [0, ndim); otherwise an Error naming `op`.
int64_t normalize_dim(int64_t dim, int64_t ndim, const char* op);

// a·b and a+b, or an Error naming `op` and both values when the result does
// not fit in int64: the index arithmetic of the ops (offsets, ends of ranges)
// goes through these where its operands come from the caller.
int64_t checked_mul(int64_t a, int64_t b, const char* op);
int64_t checked_add(int64_t a, int64_t b, const char* op);

}  // namespace qkv

template <>
struct fmt::formatter<qkv::Shape> : fmt::formatter<std::string_view> {
  auto format(const qkv::Shape& s, format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(s.str(), ctx);
  }
};
