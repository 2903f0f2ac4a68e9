// set_num_threads / get_num_threads: the public face of the kernels' thread
// pool (src/kernels/parallel.*), with its errors as qkv::Error.
#include <qkv/core/error.hpp>
#include <qkv/core/threads.hpp>

#include "kernels/parallel.hpp"

namespace qkv {

void set_num_threads(int n) {
  if (n < 1 || n > 1024) fail("set_num_threads: {} threads: expected a count from 1 to 1024", n);
#if !QKV_THREADS
  if (n != 1) fail("set_num_threads: {} threads: this build of qkv has no threads (QKV_THREADS=OFF), only 1", n);
#endif
  kernels::set_num_threads(n);
}

int get_num_threads() { return kernels::num_threads(); }

}  // namespace qkv
