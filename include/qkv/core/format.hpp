// Printing tensors through fmt, in PyTorch's style:
//   fmt::print("{}\n", x);
//   tensor([[1.0000, 2.0000],
//           [3.0000, 4.0000]], requires_grad=True)
// Large tensors are summarised with "..." as PyTorch does (more than 1000
// elements: the first and last three along each dim).
#pragma once
#include <qkv/core/autograd.hpp>
#include <qkv/core/tensor.hpp>

#include <fmt/format.h>

#include <string>

namespace qkv {
std::string to_string(const Tensor& x);
std::string to_string(const IntTensor& x);
}  // namespace qkv

template <>
struct fmt::formatter<qkv::Tensor> : fmt::formatter<std::string_view> {
  auto format(const qkv::Tensor& x, format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(qkv::to_string(x), ctx);
  }
};
template <>
struct fmt::formatter<qkv::IntTensor> : fmt::formatter<std::string_view> {
  auto format(const qkv::IntTensor& x, format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(qkv::to_string(x), ctx);
  }
};
