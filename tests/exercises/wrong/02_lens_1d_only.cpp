// A wrong solution of exercise 02, kept for the tests: 2-D valid lengths read as if they were 1-D (one
// per example), so the reshape fails.
// grader says: your code threw qkv::Error
// grader says: reshape: cannot reshape (2, 2)
// grader says: 2-D valid lengths
#include "02_masked_softmax.hpp"

namespace qkv::exercises {

Tensor masked_softmax(const Tensor& X, const IntTensor& valid_lens) {
  if (!valid_lens.defined()) return X.softmax(-1);
  const int64_t B = X.size(0), K = X.size(2);
  IntTensor lens = valid_lens.reshape({B, 1, 1});  // wrong for (B, Q) lengths
  IntTensor padding = arange_int(0, K).reshape({1, 1, K}).ge(lens);
  return X.masked_fill(padding, -1e6f).softmax(-1);
}

}  // namespace qkv::exercises
