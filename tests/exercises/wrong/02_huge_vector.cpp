// Exercise 02, hostile: a std::vector of 16 TB, far past the grader's memory
// limit for a call (and past what AddressSanitizer allows, in the tests'
// sanitizer build, where that limit is not set).
// grader says: FAILED at case 1 (d2l's example)
#include <cstddef>
#include <vector>

#include "02_masked_softmax.hpp"

namespace qkv::exercises {
Tensor masked_softmax(const Tensor& X, const IntTensor& valid_lens) {
  (void)valid_lens;
  std::vector<float> big(size_t{1} << 42, 1.0f);
  return X * big[7];
}
}  // namespace qkv::exercises
