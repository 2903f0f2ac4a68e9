// A wrong solution of exercise 02, kept for the tests: keys up to and including the valid length kept
// (k <= length).
// grader says: one key too many kept
#include "02_masked_softmax.hpp"

namespace qkv::exercises {

Tensor masked_softmax(const Tensor& X, const IntTensor& valid_lens) {
  if (!valid_lens.defined()) return X.softmax(-1);
  const int64_t B = X.size(0), Q = X.size(1), K = X.size(2);
  IntTensor lens = valid_lens.dim() == 1 ? valid_lens.reshape({B, 1, 1}) : valid_lens.reshape({B, Q, 1});
  IntTensor padding = arange_int(0, K).reshape({1, 1, K}).gt(lens);  // wrong: > instead of >=
  return X.masked_fill(padding, -1e6f).softmax(-1);
}

}  // namespace qkv::exercises
