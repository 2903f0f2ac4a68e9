// A hostile submission of exercise 04, kept for the tests: it ends the
// program with status 0 before returning.
// grader says: your code ended the program (exit status
#include <cstdlib>

#include "04_dot_product_attention.hpp"

namespace qkv::exercises {

Attention dot_product_attention(const Tensor& /*queries*/, const Tensor& /*keys*/, const Tensor& /*values*/,
                                const IntTensor& /*valid_lens*/) {
  std::exit(0);
}

}  // namespace qkv::exercises
