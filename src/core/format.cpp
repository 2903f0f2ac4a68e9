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
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace qkv {

namespace {

constexpr int64_t kThreshold = 1000;  // summarise above this many elements
constexpr int64_t kEdgeItems = 3;
constexpr int64_t kLineWidth = 80;

// How many entries along a dim of `size` printing shows: all, or the
// kEdgeItems at each end when summarising.
int64_t shown_size(int64_t size, bool summarise) { return summarise && size > 2 * kEdgeItems ? 2 * kEdgeItems : size; }

// The flat offsets of the elements printing shows (all, or the edges of
// every dim), row-major. An odometer over the shown indices rather than a
// recursion over the dims, so a tensor of 100,000 size-1 dims does not run
// out of stack. Its work is the shown elements times the dims: the size of
// the printout, which repeats every dim's brackets around each element.
std::vector<int64_t> shown(const Shape& shape, bool summarise) {
  const int64_t nd = shape.ndim();
  const auto n = static_cast<size_t>(nd);
  std::vector<int64_t> stride(n, 1), index(n, 0), out;
  for (int64_t k = nd - 1; k > 0; --k) stride[k - 1] = stride[k] * shape[k];
  while (true) {
    int64_t offset = 0;
    for (int64_t k = 0; k < nd; ++k) {
      const int64_t size = shape[k], i = index[k];
      const bool cut = shown_size(size, summarise) < size;
      offset += (cut && i >= kEdgeItems ? size - 2 * kEdgeItems + i : i) * stride[k];
    }
    out.push_back(offset);
    int64_t k = nd;
    while (k-- > 0 && ++index[k] == shown_size(shape[k], summarise)) index[k] = 0;
    if (k < 0) return out;  // every digit wrapped: done
  }
}

// The nested [ … ] of a row-major array, laid out as PyTorch lays it out:
// the last dim's elements wrapped to the line width, inner blocks separated
// by one newline per remaining dim. `blocks` are the shown elements,
// formatted and padded to the common `width`. Built from the last dim out:
// each pass groups the blocks of dim d+1 into the blocks of dim d, whose
// contents start at column 7 + d + 1 (after "tensor(" and d + 1 brackets).
// A size-1 dim only adds a bracket around every block: the blocks of one
// pass all have as many, so they are counted once (`wraps`) and written
// when the blocks are next joined, not once per block and dim.
std::string layout(const Shape& shape, std::vector<std::string> blocks, int64_t width, bool summarise) {
  const int64_t nd = shape.ndim();
  int64_t wraps = 0;  // the brackets every block of this pass still needs around it
  auto wrapped = [&wraps](const std::string& block) {
    const auto n = static_cast<size_t>(wraps);
    return std::string(n, '[') + block + std::string(n, ']');
  };
  for (int64_t d = nd - 1; d >= 0; --d) {
    const int64_t size = shape[d];
    const auto count = static_cast<size_t>(shown_size(size, summarise));
    const bool cut = count < static_cast<size_t>(size);
    if (count == 1) {
      ++wraps;
      continue;
    }
    const auto indent = static_cast<size_t>(7 + d);
    std::vector<std::string> joined;
    for (size_t g = 0; g < blocks.size(); g += count) {
      std::vector<std::string> group;
      for (size_t i = g; i < g + count; ++i) group.push_back(wrapped(blocks[i]));
      if (cut) group.insert(group.begin() + kEdgeItems, d == nd - 1 ? " ..." : "...");
      std::string s;
      if (d == nd - 1) {
        auto per_line =
            static_cast<size_t>(std::max<int64_t>(1, (kLineWidth - static_cast<int64_t>(indent)) / (width + 2)));
        for (size_t i = 0; i < group.size(); ++i) {
          if (i > 0 && i % per_line == 0)
            s += ",\n" + std::string(indent + 1, ' ');
          else if (i > 0)
            s += ", ";
          s += group[i];
        }
      } else {
        std::string separator =
            fmt::format(",{}{}", std::string(static_cast<size_t>(nd - d - 1), '\n'), std::string(indent + 1, ' '));
        for (size_t i = 0; i < group.size(); ++i) s += (i > 0 ? separator : "") + group[i];
      }
      joined.push_back(std::move(s));
    }
    blocks = std::move(joined);
    wraps = 1;  // dim d's own bracket around each of its blocks
  }
  return wrapped(blocks.at(0));
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
  if (shape.ndim() == 0) return with_suffix(plain(v[0]), shape, suffix);
  std::vector<std::string> elements;
  elements.reserve(idx.size());
  for (int64_t i : idx) elements.push_back(fmt::format("{:>{}}", plain(v[i]), width));
  return with_suffix(layout(shape, std::move(elements), width, summarise), shape, suffix);
}

std::string to_string(const IntTensor& x) {
  if (!x.defined()) return "tensor(undefined)";
  const Shape& shape = x.shape();
  if (shape.numel() == 0) return with_suffix("[]", shape, "");
  if (shape.ndim() == 0) return with_suffix(std::to_string(x.data()[0]), shape, "");
  bool summarise = shape.numel() > kThreshold;
  const std::vector<int64_t> idx = shown(shape, summarise);
  int64_t width = 0;
  for (int64_t i : idx) width = std::max<int64_t>(width, static_cast<int64_t>(std::to_string(x.data()[i]).size()));
  std::vector<std::string> elements;
  elements.reserve(idx.size());
  for (int64_t i : idx) elements.push_back(fmt::format("{:>{}}", x.data()[i], width));
  return with_suffix(layout(shape, std::move(elements), width, summarise), shape, "");
}

}  // namespace qkv
