// A hostile submission of exercise 12, kept for the tests: qkv's softmax,
// which the exercise asks the learner to write.
// grader says: rule broken: your file calls qkv::softmax(
#include "12_softmax_op.hpp"

namespace qkv::exercises {

Tensor my_softmax(const Tensor& x) { return qkv::softmax(x, -1); }

}  // namespace qkv::exercises
