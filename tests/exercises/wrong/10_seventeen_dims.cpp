// Exercise 10, hostile: the table returned as a tensor of 17 dimensions,
// more than the grader reads back. A failure of the case, not of the grader.
// grader says: could not be read back: a tensor of 17 dimensions
// grader says: FAILED at case 1 (lesson 10's table): the result of your code could not be read back
#include "10_positional_encoding.hpp"

namespace qkv::exercises {
Tensor positional_encoding(int64_t max_len, int64_t num_hiddens) {
  return zeros({max_len, num_hiddens}).reshape({max_len, num_hiddens, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1});
}
}  // namespace qkv::exercises
