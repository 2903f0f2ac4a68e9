// A hostile submission of exercise 02, kept for the tests: an endless loop.
// The tests grade it with --seconds 1.
// grader says: took more than 1 s: an endless loop?
#include <atomic>

#include "02_masked_softmax.hpp"

namespace qkv::exercises {

Tensor masked_softmax(const Tensor& X, const IntTensor& /*valid_lens*/) {
  std::atomic<bool> done{false};
  while (!done.load()) {
  }
  return X;
}

}  // namespace qkv::exercises
