// A hostile submission of exercise 02, kept for the tests: an endless loop.
// The tests grade it with --seconds 1.
// The flag is volatile: every read of it is a side effect the compiler must
// keep, so the loop stays endless under every optimiser. (A loop with no side
// effect may be assumed to end, and clang deletes it: the function then runs
// on into whatever code follows it.)
// grader says: took more than 1 s: an endless loop?
#include "02_masked_softmax.hpp"

namespace qkv::exercises {

Tensor masked_softmax(const Tensor& X, const IntTensor& /*valid_lens*/) {
  volatile bool done = false;
  while (!done) {
  }
  return X;
}

}  // namespace qkv::exercises
