// A wrong solution of exercise 02, kept for the tests: the scores halved in
// place, through data(), before the mask and the softmax.
// grader says: you changed an input in place (X)
#include "02_masked_softmax.hpp"

namespace qkv::exercises {

Tensor masked_softmax(const Tensor& X, const IntTensor& valid_lens) {
  Tensor scores = X;  // the same storage
  float* s = scores.data();
  for (int64_t i = 0; i < scores.numel(); ++i) s[i] *= 0.5f;
  if (!valid_lens.defined()) return scores.softmax(-1);
  const int64_t B = X.size(0), Q = X.size(1), K = X.size(2);
  IntTensor lens = valid_lens.dim() == 1 ? valid_lens.reshape({B, 1, 1}) : valid_lens.reshape({B, Q, 1});
  IntTensor padding = arange_int(0, K).reshape({1, 1, K}).ge(lens);
  return scores.masked_fill(padding, -1e6f).softmax(-1);
}

}  // namespace qkv::exercises
