// Exercise 02, hostile: a Tensor of 16 TB, far past the grader's memory
// limit for a call (and past what AddressSanitizer allows, in the tests'
// sanitizer build, where that limit is not set).
// grader says: FAILED at case 1 (d2l's example)
#include "02_masked_softmax.hpp"

namespace qkv::exercises {
Tensor masked_softmax(const Tensor& X, const IntTensor& valid_lens) {
  (void)valid_lens;
  Tensor big = zeros({int64_t{1} << 21, int64_t{1} << 21});
  return X + big.sum();
}
}  // namespace qkv::exercises
