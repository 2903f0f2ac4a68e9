// Exercise 02, a mistake learners make: valid_lens changed in place. The
// mask compares each key with length - 1 (k > length - 1, that is k >= length:
// the right weights), and the lengths are left one short.
// grader says: you changed an input in place (valid_lens)
// grader says: valid_lens (2) is not what it was before your call
#include "02_masked_softmax.hpp"

namespace qkv::exercises {

Tensor masked_softmax(const Tensor& X, const IntTensor& valid_lens) {
  if (!valid_lens.defined()) return X.softmax(-1);
  IntTensor lens = valid_lens;  // the same storage, not a copy
  int64_t* d = lens.data();
  for (int64_t i = 0; i < lens.numel(); ++i) d[i] -= 1;  // wrong: writes into the caller's valid_lens
  const int64_t B = X.size(0), Q = X.size(1), K = X.size(2);
  IntTensor last = lens.dim() == 1 ? lens.reshape({B, 1, 1}) : lens.reshape({B, Q, 1});  // the last valid key
  IntTensor k = arange_int(0, K).reshape({1, 1, K});
  return X.masked_fill(k.gt(last), -1e6f).softmax(-1);
}

}  // namespace qkv::exercises
