// Exercise 02, hostile: abort() in the learner's function.
// grader says: your code crashed on case 1 (d2l's example): SIGABRT
#include <cstdlib>

#include "02_masked_softmax.hpp"

namespace qkv::exercises {
Tensor masked_softmax(const Tensor& X, const IntTensor& valid_lens) {
  (void)X, (void)valid_lens;
  std::abort();
}
}  // namespace qkv::exercises
