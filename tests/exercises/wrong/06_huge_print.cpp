// A hostile submission of exercise 06, kept for the tests: a debug print in
// an endless loop. What it prints is cut (and the cut said), and past the
// output limit the child is stopped.
// grader says: not shown: what your code prints is cut at 40 lines a call
// grader says: printed more than 8 MB
#include <cstdio>

#include "06_self_attention.hpp"

namespace qkv::exercises {

SelfAttentionSteps SelfAttention::forward(const Tensor& sents) const {
  for (long i = 0;; ++i) std::printf("debug: step %ld of the scores\n", i);
  return {sents, sents, sents};
}

}  // namespace qkv::exercises
