// For layers that stack n copies of a part (RNN layers, Transformer blocks):
// the whole stack's size, checked before the parts are built (not public API).
#pragma once
#include <qkv/core/error.hpp>

#include <cstdint>

namespace qkv::nn::detail {

// Tensor::empty refuses one tensor of more than 2⁴⁸ bytes; a stack of n
// small parts passes that check part by part, and a huge n used to fill the
// machine's memory one part at a time (or end in std::bad_alloc). So the
// total, n · per_part floats, is held to the same cap, before anything of
// the stack is allocated.
inline void check_stack_size(const char* layer, const char* count_name, int64_t n, int64_t per_part) {
  constexpr int64_t kMaxFloats = (int64_t{1} << 48) / static_cast<int64_t>(sizeof(float));
  int64_t total = 0;
  if (__builtin_mul_overflow(n, per_part, &total) || total > kMaxFloats)
    fail("{}: {} {} of {} parameters each is more than the {} floats that can be addressed", layer, count_name, n,
         per_part, kMaxFloats);
}

}  // namespace qkv::nn::detail
