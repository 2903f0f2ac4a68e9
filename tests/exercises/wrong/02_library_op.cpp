// A hostile submission of exercise 02, kept for the tests: the library's own
// masked_softmax, which the exercise asks the learner to write.
// grader says: rule broken: your file calls qkv::masked_softmax(
#include "02_masked_softmax.hpp"

namespace qkv::exercises {

Tensor masked_softmax(const Tensor& X, const IntTensor& valid_lens) { return qkv::masked_softmax(X, valid_lens); }

}  // namespace qkv::exercises
