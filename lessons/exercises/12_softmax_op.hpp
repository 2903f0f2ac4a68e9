// Exercise 12 · softmax as a new op with its hand-written backward: the
// declaration the learner's file, its solution and the grader share.
#pragma once
#include "exercise.hpp"

namespace qkv::exercises {

// x (any shape, at least 1-D) -> softmax over its last dim, same shape; its
// backward written by hand and attached with record().
Tensor my_softmax(const Tensor& x);

}  // namespace qkv::exercises
