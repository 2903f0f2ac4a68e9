// A hostile submission of exercise 09, kept for the tests: a write into a
// page the process may not touch (mapped PROT_NONE), which ends it with
// SIGSEGV. (Not a null pointer: UBSan would stop that one before the write.)
// grader says: your code crashed: SIGSEGV
#include <sys/mman.h>

#include "09_transpose_qkv.hpp"

namespace qkv::exercises {

Tensor transpose_qkv(const Tensor& X, int64_t /*num_heads*/) {
  void* page = mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  volatile int* forbidden = static_cast<int*>(page);
  *forbidden = 1;
  return X;
}

Tensor transpose_output(const Tensor& X, int64_t /*num_heads*/) { return X; }

}  // namespace qkv::exercises
