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

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace qkv {

class Shape {
 public:
  Shape() = default;  // a scalar: no dims, one element
  Shape(std::initializer_list<int64_t> dims) : Shape(dims.begin(), dims.end()) {}
  explicit Shape(const std::vector<int64_t>& dims) : Shape(dims.data(), dims.data() + dims.size()) {}
  Shape(const int64_t* first, const int64_t* last);

  int64_t ndim() const { return ndim_; }
  // Product of the sizes (1 for a scalar). An Error naming the shape if the
  // product of the non-zero sizes overflows int64: then every stride and
  // every offset below numel() fits too, even when a size-0 dim makes the
  // tensor empty.
  int64_t numel() const;
  int64_t operator[](int64_t i) const { return data()[checked(i)]; }
  int64_t& operator[](int64_t i) { return data()[checked(i)]; }
  std::vector<int64_t> dims() const { return {begin(), end()}; }  // a copy of the sizes
  const int64_t* begin() const { return data(); }
  const int64_t* end() const { return data() + ndim_; }
  bool operator==(const Shape& other) const;

  std::string str() const;  // "(2, 3)", "(5)", "()"

 private:
  // NOTE: up to kInlineDims sizes live inside the Shape; only a shape with
  // more dims keeps them on the heap. An op makes several Shapes (its
  // output's, its graph node's, the ones its backward keeps), and with a
  // std::vector each was a malloc and a free: on small tensors, where an
  // op's arithmetic is a few nanoseconds, that was a third of its time.
  static constexpr int64_t kInlineDims = 6;
  int64_t* data() { return ndim_ <= kInlineDims ? inline_.data() : heap_.data(); }
  const int64_t* data() const { return ndim_ <= kInlineDims ? inline_.data() : heap_.data(); }
  size_t checked(int64_t i) const {
    if (i < 0 || i >= ndim()) out_of_range(i);
    return static_cast<size_t>(i);
  }
  [[noreturn]] void out_of_range(int64_t i) const;

  int64_t ndim_ = 0;
  std::array<int64_t, kInlineDims> inline_{};  // the sizes when ndim_ ≤ kInlineDims
  std::vector<int64_t> heap_;                  // the sizes when there are more (else empty)
};

// dim in [-ndim, ndim) -> [0, ndim); otherwise an Error naming `op`.
int64_t normalize_dim(int64_t dim, int64_t ndim, const char* op);

// a·b and a+b, or an Error naming `op` and both values when the result does
// not fit in int64: the index arithmetic of the ops (offsets, ends of ranges)
// goes through these where its operands come from the caller.
int64_t checked_mul(int64_t a, int64_t b, const char* op);
int64_t checked_add(int64_t a, int64_t b, const char* op);

// shape.numel(), with `op` named in the Error when the sizes multiply past
// int64 (shape.numel()'s own names only the shape).
int64_t checked_numel(const Shape& shape, const char* op);

}  // namespace qkv

template <>
struct fmt::formatter<qkv::Shape> : fmt::formatter<std::string_view> {
  auto format(const qkv::Shape& s, format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(s.str(), ctx);
  }
};
