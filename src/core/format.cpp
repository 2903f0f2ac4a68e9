// Printing tensors in PyTorch's style:
//   tensor([[ 1.0000, -2.0000],
//           [ 3.0000,  4.0000]], grad_fn=<MulBackward>)
// Every element gets the same width; four decimals, or scientific notation
// when the magnitudes span too much (PyTorch's rule: largest/smallest
// non-zero > 1000, or largest > 1e8, or smallest < 1e-4); more than 1000
// elements print only the first and last three along each dim.
#include <qkv/core/autograd.hpp>
#include <qkv/core/format.hpp>

#include <algorithm>
#include <cmath>
#include <functional>

namespace qkv {

namespace {

constexpr int64_t kThreshold = 1000;  // summarise above this many elements
constexpr int64_t kEdgeItems = 3;
constexpr int64_t kLineWidth = 80;

// The nested [ … ] of a row-major array, laid out as PyTorch lays it out:
// the last dim's elements wrapped to the line width, inner blocks separated
// by one newline per remaining dim. `element(i)` formats element i, padded
// to the common `width`; `indent` is the column the block starts after.
std::string block(const Shape& shape, int64_t d, int64_t offset, size_t indent,
                  const std::function<std::string(int64_t)>& element, int64_t width, bool summarise) {
  int64_t size = shape[d], stride = 1;
  for (int64_t k = d + 1; k < shape.ndim(); ++k) stride *= shape[k];
  std::vector<std::string> items;  // the elements (last dim) or sub-blocks
  for (int64_t i = 0; i < size; ++i) {
    if (summarise && size > 2 * kEdgeItems && i == kEdgeItems) {
      items.emplace_back(d == shape.ndim() - 1 ? " ..." : "...");
      i = size - kEdgeItems;
    }
    items.push_back(d == shape.ndim() - 1
                        ? element(offset + i)
                        : block(shape, d + 1, offset + i * stride, indent + 1, element, width, summarise));
  }
  std::string s = "[";
  if (d == shape.ndim() - 1) {
    auto per_line =
        static_cast<size_t>(std::max<int64_t>(1, (kLineWidth - static_cast<int64_t>(indent)) / (width + 2)));
    for (size_t i = 0; i < items.size(); ++i) {
      if (i > 0 && i % per_line == 0)
        s += ",\n" + std::string(indent + 1, ' ');
      else if (i > 0)
        s += ", ";
      s += items[i];
    }
  } else {
    std::string separator = fmt::format(",{}{}", std::string(static_cast<size_t>(shape.ndim() - d - 1), '\n'),
                                        std::string(indent + 1, ' '));
    for (size_t i = 0; i < items.size(); ++i) s += (i > 0 ? separator : "") + items[i];
  }
  return s + "]";
}

// The indices printing will show (all, or the edges of every dim).
std::vector<int64_t> shown(const Shape& shape, bool summarise) {
  std::vector<int64_t> out;
  std::function<void(int64_t, int64_t)> walk = [&](int64_t d, int64_t offset) {
    if (d == shape.ndim()) {
      out.push_back(offset);
      return;
    }
    int64_t stride = 1;
    for (int64_t k = d + 1; k < shape.ndim(); ++k) stride *= shape[k];
    for (int64_t i = 0; i < shape[d]; ++i) {
      if (summarise && shape[d] > 2 * kEdgeItems && i == kEdgeItems) i = shape[d] - kEdgeItems;
      walk(d + 1, offset + i * stride);
    }
  };
  walk(0, 0);
  return out;
}

std::string with_suffix(const std::string& body, const Shape& shape, const std::string& suffix) {
  std::string s = "tensor(" + body;
  if (shape.numel() == 0 && shape.ndim() != 1) s += ", size=" + shape.str();
  return s + suffix + ")";
}

}  // namespace

std::string to_string(const Tensor& x) {
  if (!x.defined()) return "tensor(undefined)";
  const Shape& shape = x.shape();
  std::string suffix;
  if (x.grad_fn())
    suffix = ", grad_fn=<" + x.grad_fn()->name + ">";
  else if (x.requires_grad())
    suffix = ", requires_grad=True";
  if (shape.numel() == 0) return with_suffix("[]", shape, suffix);

  bool summarise = shape.numel() > kThreshold;
  std::vector<int64_t> idx = shown(shape, summarise);
  const float* v = x.data();
  double lo = INFINITY, hi = 0;
  for (int64_t i : idx) {
    double a = std::fabs(v[i]);
    if (std::isfinite(a) && a > 0) lo = std::min(lo, a), hi = std::max(hi, a);
  }
  bool sci = hi > 0 && (hi / lo > 1000 || hi > 1e8 || lo < 1e-4);
  auto plain = [sci](float f) {
    if (std::isnan(f)) return std::string("nan");
    if (std::isinf(f)) return std::string(f > 0 ? "inf" : "-inf");
    return sci ? fmt::format("{:.4e}", f) : fmt::format("{:.4f}", f);
  };
  int64_t width = 0;
  for (int64_t i : idx) width = std::max<int64_t>(width, static_cast<int64_t>(plain(v[i]).size()));
  auto element = [&](int64_t i) { return fmt::format("{:>{}}", plain(v[i]), width); };
  if (shape.ndim() == 0) return with_suffix(plain(v[0]), shape, suffix);
  return with_suffix(block(shape, 0, 0, 7, element, width, summarise), shape, suffix);
}

std::string to_string(const IntTensor& x) {
  if (!x.defined()) return "tensor(undefined)";
  const Shape& shape = x.shape();
  if (shape.numel() == 0) return with_suffix("[]", shape, "");
  if (shape.ndim() == 0) return with_suffix(std::to_string(x.data()[0]), shape, "");
  bool summarise = shape.numel() > kThreshold;
  int64_t width = 0;
  for (int64_t i : shown(shape, summarise))
    width = std::max<int64_t>(width, static_cast<int64_t>(std::to_string(x.data()[i]).size()));
  auto element = [&](int64_t i) { return fmt::format("{:>{}}", x.data()[i], width); };
  return with_suffix(block(shape, 0, 0, 7, element, width, summarise), shape, "");
}

}  // namespace qkv
