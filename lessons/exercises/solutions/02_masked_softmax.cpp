// Exercise 02, a reference solution: masked softmax from the simpler ops.
#include "02_masked_softmax.hpp"

namespace qkv::exercises {

Tensor masked_softmax(const Tensor& X, const IntTensor& valid_lens) {
  if (!valid_lens.defined()) return X.softmax(-1);
  const int64_t B = X.size(0), Q = X.size(1), K = X.size(2);
  // One valid length per query row: (B) -> (B, 1) broadcasts over the rows; (B, Q) is one per row already.
  IntTensor lens = valid_lens.dim() == 1 ? valid_lens.reshape({B, 1, 1}) : valid_lens.reshape({B, Q, 1});
  IntTensor padding = arange_int(0, K).reshape({1, 1, K}).ge(lens);  // (B, Q or 1, K): 1 where k >= valid length
  return X.masked_fill(padding, -1e6f).softmax(-1);                  // masked before the softmax, (B, Q, K)
}

}  // namespace qkv::exercises
