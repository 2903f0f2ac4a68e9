// Shape: the sizes of a tensor's dims, printed as (2, 3).
//
// Dims may be given negative, counting from the end as PyTorch does
// (dim -1 is the last); normalize_dim turns them into 0 … ndim-1 and says
// which op got a dim out of range.
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
  int64_t numel() const;  // product of the sizes (1 for a scalar)
  int64_t operator[](int64_t i) const { return dims_[static_cast<size_t>(i)]; }
  int64_t& operator[](int64_t i) { return dims_[static_cast<size_t>(i)]; }
  const std::vector<int64_t>& dims() const { return dims_; }
  auto begin() const { return dims_.begin(); }
  auto end() const { return dims_.end(); }
  bool operator==(const Shape&) const = default;

  std::string str() const;  // "(2, 3)", "(5)", "()"

 private:
  std::vector<int64_t> dims_;
};

// dim in [-ndim, ndim) -> [0, ndim); otherwise an Error naming `op`.
int64_t normalize_dim(int64_t dim, int64_t ndim, const char* op);

}  // namespace qkv

template <>
struct fmt::formatter<qkv::Shape> : fmt::formatter<std::string_view> {
  auto format(const qkv::Shape& s, format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(s.str(), ctx);
  }
};
