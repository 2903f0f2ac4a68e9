// A hostile submission of exercise 09, kept for the tests: a write through a
// null pointer, which ends the process with SIGSEGV.
// grader says: your code crashed: SIGSEGV
#include "09_transpose_qkv.hpp"

namespace qkv::exercises {

Tensor transpose_qkv(const Tensor& X, int64_t /*num_heads*/) {
  volatile int* nowhere = nullptr;
  *nowhere = 1;
  return X;
}

Tensor transpose_output(const Tensor& X, int64_t /*num_heads*/) { return X; }

}  // namespace qkv::exercises
